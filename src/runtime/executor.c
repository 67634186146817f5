/* The executor (DESIGN §7): one OpenMP thread per logical device walks the
 * op list in program order and does its part of every op:
 *   COMPUTE     the op-table kernel on each local shard it holds;
 *   TRANSFER    per shard, send from the operand's device / receive on the
 *               result's device (a local copy when they are the same);
 *   COLLECTIVE  a layout conversion (all_reduce, all_gather, reduce_scatter,
 *               scatter, broadcast, gather to one device ...) over the
 *               ppcc_rt_* ABI.
 * Each device only touches its own shard buffers; devices talk only through
 * ppcc_rt_send/recv, so all ops in program order on every device cannot
 * deadlock (sends never block). A failing device aborts the communicator,
 * which wakes every waiting device.
 *
 * The reference executor is the same code with every value viewed as
 * unsharded on device 0: collectives and transfers become copies. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt_internal.h"

typedef struct rt_slot {
  void *data;
  bool owned; /* false when aliasing another slot (in-place update) */
} rt_slot;

/* How a value is laid out in this execution. */
typedef struct rt_view {
  ppcc_layout layout;
  const int *devices;
} rt_view;

typedef struct rt_trace_event {
  double start, end;
} rt_trace_event;

typedef struct rt_exec {
  const ppcc_graph *g;
  const ppcc_run_data *data;
  const ppcc_exec_options *opts;
  int n_devices;
  int *slot_base; /* per value: index of its shard 0 in slots */
  rt_slot *slots;
  ppcc_rt_comm *comm;
  rt_trace_event *trace; /* [device][op], or NULL */
  double t0;
} rt_exec;

static const int device_zero[1] = {0};

static const ppcc_value *val(const rt_exec *x, int v) { return &x->g->values[v]; }

static rt_view view_of(const rt_exec *x, int v) {
  if (x->opts->reference) return (rt_view){ppcc_layout_unsharded(), device_zero};
  return (rt_view){val(x, v)->layout, val(x, v)->devices};
}

static rt_slot *slot(const rt_exec *x, int v, int shard) { return &x->slots[x->slot_base[v] + shard]; }

static void local_shape(const rt_exec *x, int v, int64_t *shape) {
  const ppcc_value *p = val(x, v);
  memcpy(shape, p->shape, sizeof p->shape);
  rt_view w = view_of(x, v);
  if (w.layout.kind == PPCC_LAYOUT_SPLIT) shape[w.layout.dim] /= w.layout.count;
}

static int64_t local_bytes(const rt_exec *x, int v) {
  int64_t shape[PPCC_MAX_RANK];
  local_shape(x, v, shape);
  return ppcc_num_elements(val(x, v)->rank, shape) * ppcc_dtype_size(val(x, v)->dtype);
}

static int es_of(const rt_exec *x, int v) { return ppcc_dtype_size(val(x, v)->dtype); }

static rt_split_geom geom_of(const rt_exec *x, int v, ppcc_layout l) {
  return rt_split_geometry(val(x, v)->rank, val(x, v)->shape, l.dim, l.count);
}

static ppcc_status oom(ppcc_diag *d) { return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"); }

static ppcc_status comm_failed(const rt_exec *x, ppcc_diag *d) {
  return ppcc_error(d, "communication aborted");
}

static void *dup_bytes(const void *src, int64_t bytes) {
  void *p = rt_alloc(bytes);
  if (p && bytes > 0) memcpy(p, src, (size_t)bytes);
  return p;
}

/* ---------------- leaves: params and inputs ---------------- */

/* Shard `i` of a full tensor under layout l (an unreduced leaf puts the
 * whole value in shard 0 and zeros elsewhere: the sum is the value). */
static void *cut_shard(const rt_exec *x, int v, ppcc_layout l, int i, const void *full) {
  int64_t bytes = local_bytes(x, v);
  if (l.kind == PPCC_LAYOUT_SPLIT) {
    void *p = rt_alloc(bytes);
    if (p) rt_copy_shard_out(full, p, geom_of(x, v, l), l.count, i, es_of(x, v));
    return p;
  }
  if (l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) return rt_calloc(bytes);
  return dup_bytes(full, bytes);
}

static ppcc_status load_leaves(rt_exec *x, int dev, ppcc_diag *d) {
  for (int v = 0; v < x->g->n_values; v++) {
    if (val(x, v)->kind == PPCC_VALUE_RESULT) continue;
    const void *full = x->data->values[v].data;
    rt_view w = view_of(x, v);
    for (int i = 0; i < w.layout.count; i++) {
      if (w.devices[i] != dev) continue;
      if (!full) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no data for '%s'", val(x, v)->name);
      *slot(x, v, i) = (rt_slot){cut_shard(x, v, w.layout, i, full), true};
      if (!slot(x, v, i)->data) return oom(d);
    }
  }
  return PPCC_OK;
}

/* ---------------- point-to-point delivery ---------------- */

/* Moves one shard from device `home` (data valid there) to `target`.
 * Called twice per op, sends first, so an op never waits on a send that
 * a later shard of another device would do. `temp`: data is a temporary
 * owned by home, handed over or freed. */
typedef enum { PHASE_SEND, PHASE_RECV } rt_phase;

static ppcc_status deliver(rt_exec *x, int dev, rt_phase phase, int home, int target, void *data, bool temp,
                           int64_t bytes, rt_slot *out, ppcc_diag *d) {
  if (home == target) {
    if (dev != home || phase != PHASE_SEND) return PPCC_OK;
    *out = (rt_slot){temp ? data : dup_bytes(data, bytes), true};
    return out->data ? PPCC_OK : oom(d);
  }
  if (dev == home && phase == PHASE_SEND) {
    int rc = ppcc_rt_send(x->comm, dev, target, data, bytes);
    if (temp) rt_free(data);
    return rc ? comm_failed(x, d) : PPCC_OK;
  }
  if (dev == target && phase == PHASE_RECV) {
    *out = (rt_slot){rt_alloc(bytes), true};
    if (!out->data) return oom(d);
    return ppcc_rt_recv(x->comm, dev, home, out->data, bytes) ? comm_failed(x, d) : PPCC_OK;
  }
  return PPCC_OK;
}

/* ---------------- COMPUTE ---------------- */

static int operand_shard(rt_view in, rt_view out, int i) { return in.layout.count == out.layout.count ? i : 0; }

/* The local tensor operand k of op shows to shard i of the result. */
static ppcc_status operand_tensor(rt_exec *x, int dev, const ppcc_op *op, int k, int i, ppcc_tensor *t,
                                  void **temp, ppcc_diag *d) {
  int v = op->in[k], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  int s = operand_shard(iv, ov, i);
  if (s >= iv.layout.count || iv.devices[s] != dev || !slot(x, v, s)->data)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "operand '%s' shard %d is not on device %d", val(x, v)->name, s, dev);
  t->dtype = val(x, v)->dtype;
  t->rank = val(x, v)->rank;
  local_shape(x, v, t->shape);
  t->data = slot(x, v, s)->data;
  *temp = NULL;
  int sd = rt_local_slice_dim(op, k, val(x, v), iv.layout, val(x, res), ov.layout);
  if (sd < 0) return PPCC_OK;
  /* A replicated operand next to a split one: this shard's slice only. */
  int n = ov.layout.count;
  rt_split_geom geom = rt_split_geometry(t->rank, t->shape, sd, n);
  t->shape[sd] /= n;
  *temp = rt_alloc(ppcc_num_elements(t->rank, t->shape) * ppcc_dtype_size(t->dtype));
  if (!*temp) return oom(d);
  rt_copy_shard_out(t->data, *temp, geom, n, i, ppcc_dtype_size(t->dtype));
  t->data = *temp;
  return PPCC_OK;
}

static ppcc_status compute_shard(rt_exec *x, int dev, const ppcc_op *op, int i, ppcc_diag *d) {
  ppcc_tensor in[8], out;
  void *temps[8] = {NULL};
  int res = op->out[0];
  ppcc_status st = op->n_in <= 8 && op->n_out == 1
                       ? PPCC_OK
                       : ppcc_error_status(d, PPCC_ERR_INTERNAL, "unsupported arity");
  for (int k = 0; k < op->n_in && !st; k++) st = operand_tensor(x, dev, op, k, i, &in[k], &temps[k], d);
  bool in_place = op->info->pin_rule == PPCC_PIN_INPLACE; /* P7: result aliases the destination */
  if (!st) {
    out.dtype = val(x, res)->dtype;
    out.rank = val(x, res)->rank;
    local_shape(x, res, out.shape);
    out.data = in_place ? in[0].data : rt_alloc(local_bytes(x, res));
    if (!out.data) st = oom(d);
  }
  if (!st) {
    *slot(x, res, i) = (rt_slot){out.data, !in_place};
    st = ppcc_rt_run_kernel(op, in, &out, d);
  }
  for (int k = 0; k < op->n_in; k++) rt_free(temps[k]);
  return st;
}

static ppcc_status run_compute(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  rt_view ov = view_of(x, op->out[0]);
  for (int i = 0; i < ov.layout.count; i++) {
    if (ov.devices[i] != dev) continue;
    ppcc_status st = compute_shard(x, dev, op, i, d);
    if (st) return st;
  }
  return PPCC_OK;
}

/* ---------------- TRANSFER ---------------- */

static ppcc_status run_transfer(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  if (iv.layout.count != ov.layout.count)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "transfer changes the shard count");
  int64_t bytes = local_bytes(x, v);
  for (rt_phase ph = PHASE_SEND; ph <= PHASE_RECV; ph++)
    for (int i = 0; i < iv.layout.count; i++) {
      ppcc_status st = deliver(x, dev, ph, iv.devices[i], ov.devices[i], slot(x, v, i)->data, false, bytes,
                               slot(x, res, i), d);
      if (st) return st;
    }
  return PPCC_OK;
}

/* ---------------- COLLECTIVE ---------------- */

/* A collective group plays one rank per device: refuse repeated devices. */
static ppcc_status check_group(const rt_exec *x, int v, rt_view w, ppcc_diag *d) {
  for (int i = 0; i < w.layout.count; i++)
    for (int j = 0; j < i; j++)
      if (w.devices[i] == w.devices[j])
        return ppcc_error(d, "'%s' has shards %d and %d on device %d; collectives need distinct devices",
                          val(x, v)->name, j, i, w.devices[i]);
  return PPCC_OK;
}

/* Phase-separated loop over the shards of the result: produce(i) gives
 * the shard's data on its home device (a temporary), deliver moves it. */
typedef ppcc_status (*produce_fn)(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d);

static ppcc_status produce_and_deliver(rt_exec *x, int dev, const ppcc_op *op, const int *homes, produce_fn produce,
                                       ppcc_diag *d) {
  int res = op->out[0];
  rt_view ov = view_of(x, res);
  int64_t bytes = local_bytes(x, res);
  for (rt_phase ph = PHASE_SEND; ph <= PHASE_RECV; ph++)
    for (int i = 0; i < ov.layout.count; i++) {
      void *data = NULL;
      if (ph == PHASE_SEND && homes[i] == dev) {
        ppcc_status st = produce(x, dev, op, i, &data, d);
        if (st) return st;
      }
      ppcc_status st = deliver(x, dev, ph, homes[i], ov.devices[i], data, true, bytes, slot(x, res, i), d);
      if (st) return st;
    }
  return PPCC_OK;
}

/* Source of an unsharded operand: its only shard. */
static ppcc_status produce_copy_of_whole(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  *data = dup_bytes(slot(x, op->in[0], 0)->data, local_bytes(x, op->in[0]));
  return *data ? PPCC_OK : oom(d);
}

/* Shard i cut from a whole tensor (unsharded operand, or this device's
 * replica), for a split result. */
static ppcc_status produce_cut(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  int s = iv.layout.count == 1 ? 0 : i;
  *data = rt_alloc(local_bytes(x, res));
  if (!*data) return oom(d);
  rt_copy_shard_out(slot(x, v, s)->data, *data, geom_of(x, res, ov.layout), ov.layout.count, i, es_of(x, v));
  return PPCC_OK;
}

static ppcc_status produce_copy_of_shard(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  *data = dup_bytes(slot(x, op->in[0], i)->data, local_bytes(x, op->in[0]));
  return *data ? PPCC_OK : oom(d);
}

static ppcc_status produce_all_gather(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0];
  rt_view iv = view_of(x, v);
  rt_split_geom geom = geom_of(x, v, iv.layout);
  *data = rt_alloc(local_bytes(x, op->out[0]));
  if (!*data) return oom(d);
  int rc = ppcc_rt_all_gather(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, slot(x, v, i)->data, *data,
                              geom.outer, geom.inner);
  if (rc) rt_free(*data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

static ppcc_status produce_all_reduce(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0];
  rt_view iv = view_of(x, v);
  int64_t bytes = local_bytes(x, v);
  *data = dup_bytes(slot(x, v, i)->data, bytes);
  if (!*data) return oom(d);
  int rc = ppcc_rt_all_reduce(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, *data,
                              bytes / es_of(x, v));
  if (rc) rt_free(*data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

static ppcc_status produce_reduce_scatter(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  rt_split_geom geom = geom_of(x, res, ov.layout);
  *data = rt_alloc(local_bytes(x, res));
  if (!*data) return oom(d);
  int rc = ppcc_rt_reduce_scatter(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, slot(x, v, i)->data,
                                  *data, geom.outer, geom.inner);
  if (rc) rt_free(*data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

/* Gathers (split) or sums in shard order (unreduced) every shard onto
 * the one device of an unsharded result. */
static ppcc_status collect_to_root(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v);
  int root = view_of(x, res).devices[0], n = iv.layout.count, es = es_of(x, v);
  int64_t bytes = local_bytes(x, v), count = bytes / es;
  for (int i = 0; i < n; i++) /* sends first */
    if (iv.devices[i] == dev && dev != root && ppcc_rt_send(x->comm, dev, root, slot(x, v, i)->data, bytes))
      return comm_failed(x, d);
  if (dev != root) return PPCC_OK;
  bool sum = iv.layout.kind == PPCC_LAYOUT_UNREDUCED, fl = ppcc_dtype_is_float(val(x, v)->dtype);
  void *full = rt_calloc(local_bytes(x, res)), *tmp = rt_alloc(bytes);
  float *acc = sum && fl ? rt_calloc(count * 4) : NULL;
  ppcc_status st = full && tmp && (!sum || !fl || acc) ? PPCC_OK : oom(d);
  for (int i = 0; i < n && !st; i++) {
    const void *part = slot(x, v, i)->data;
    if (iv.devices[i] != root) {
      if (ppcc_rt_recv(x->comm, dev, iv.devices[i], tmp, bytes)) st = comm_failed(x, d);
      part = tmp;
    }
    if (st) break;
    if (!sum)
      rt_copy_shard_in(full, part, geom_of(x, v, iv.layout), n, i, es);
    else if (fl)
      rt_acc_f32(val(x, v)->dtype, part, acc, count);
    else
      rt_add_int(val(x, v)->dtype, part, full, count);
  }
  if (!st && acc) rt_from_f32(val(x, v)->dtype, acc, full, count);
  rt_free(tmp);
  rt_free(acc);
  if (st) {
    rt_free(full);
    return st;
  }
  *slot(x, res, 0) = (rt_slot){full, true};
  return PPCC_OK;
}

static ppcc_status unsupported_collective(const rt_exec *x, const ppcc_op *op, rt_view iv, rt_view ov, ppcc_diag *d) {
  char a[64], b[64];
  ppcc_layout_str(iv.layout, a, sizeof a);
  ppcc_layout_str(ov.layout, b, sizeof b);
  return ppcc_error(d, "no runtime conversion from %s to %s", a, b);
}

/* Which device produces shard i of the result before it is delivered. */
static void homes_of(rt_view iv, rt_view ov, int *homes) {
  for (int i = 0; i < ov.layout.count; i++) homes[i] = iv.layout.count == 1 ? iv.devices[0] : iv.devices[i];
}

/* Every collective op is a conversion between the operand's and the
 * result's layouts; the op's name only chose the result layout. */
static ppcc_status run_collective(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  int v = op->in[0];
  rt_view iv = view_of(x, v), ov = view_of(x, op->out[0]);
  ppcc_layout_kind ik = iv.layout.kind, ok = ov.layout.kind;
  if (ik != PPCC_LAYOUT_UNSHARDED && ok != PPCC_LAYOUT_UNSHARDED && iv.layout.count != ov.layout.count)
    return unsupported_collective(x, op, iv, ov, d);
  if (ok == PPCC_LAYOUT_UNSHARDED && (ik == PPCC_LAYOUT_SPLIT || ik == PPCC_LAYOUT_UNREDUCED))
    return collect_to_root(x, dev, op, d);
  int *homes = malloc(sizeof(int) * (size_t)ov.layout.count);
  if (!homes) return oom(d);
  homes_of(iv, ov, homes);
  produce_fn produce = NULL;
  bool group = false;
  if (ik == PPCC_LAYOUT_UNSHARDED)
    produce = ok == PPCC_LAYOUT_SPLIT ? produce_cut : ok == PPCC_LAYOUT_UNREDUCED ? NULL : produce_copy_of_whole;
  else if (ik == PPCC_LAYOUT_REPLICATED)
    produce = ok == PPCC_LAYOUT_SPLIT ? produce_cut : ok == PPCC_LAYOUT_UNREDUCED ? NULL : produce_copy_of_shard;
  else if (ik == PPCC_LAYOUT_SPLIT && ok == PPCC_LAYOUT_REPLICATED)
    produce = produce_all_gather, group = true;
  else if (ik == PPCC_LAYOUT_SPLIT && ok == PPCC_LAYOUT_SPLIT && iv.layout.dim == ov.layout.dim)
    produce = produce_copy_of_shard;
  else if (ik == PPCC_LAYOUT_UNREDUCED && ok == PPCC_LAYOUT_REPLICATED)
    produce = produce_all_reduce, group = true;
  else if (ik == PPCC_LAYOUT_UNREDUCED && ok == PPCC_LAYOUT_SPLIT)
    produce = produce_reduce_scatter, group = true;
  if (ik == PPCC_LAYOUT_REPLICATED && ok == PPCC_LAYOUT_UNSHARDED) homes[0] = iv.devices[0]; /* copy of shard 0 */
  ppcc_status st = produce ? PPCC_OK : unsupported_collective(x, op, iv, ov, d);
  if (!st && group) st = check_group(x, v, iv, d);
  if (!st) st = produce_and_deliver(x, dev, op, homes, produce, d);
  free(homes);
  return st;
}

/* ---------------- device programs ---------------- */

static ppcc_status run_op(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  switch (op->info->family) {
  case PPCC_FAMILY_COMPUTE: return run_compute(x, dev, op, d);
  case PPCC_FAMILY_TRANSFER: return run_transfer(x, dev, op, d);
  case PPCC_FAMILY_COLLECTIVE: return run_collective(x, dev, op, d);
  }
  return ppcc_error_status(d, PPCC_ERR_INTERNAL, "unknown op family");
}

static void fail_device(rt_exec *x, int dev, const ppcc_op *op, const ppcc_diag *d) {
  char msg[1536], ref[PPCC_MAX_NAME * 2 + 64];
  if (op)
    snprintf(msg, sizeof msg, "device %d: %s: %s", dev, ppcc_op_ref(x->g, op, ref, sizeof ref), d->first);
  else
    snprintf(msg, sizeof msg, "device %d: %s", dev, d->first);
  ppcc_rt_abort(x->comm, dev, msg);
}

/* Copies this device's shards of params and inputs into its buffers. */
static void device_load(rt_exec *x, int dev) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  if (load_leaves(x, dev, &d)) fail_device(x, dev, NULL, &d);
}

static void device_program(rt_exec *x, int dev) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  for (int k = 0; k < x->g->n_ops; k++) {
    const ppcc_op *op = &x->g->ops[k];
    if (ppcc_rt_aborted(x->comm)) return;
    double t = x->trace ? omp_get_wtime() : 0;
    ppcc_status st = x->opts->inject_fault && dev == x->opts->fault_device && k == x->opts->fault_op
                         ? ppcc_error(&d, "injected failure")
                         : run_op(x, dev, op, &d);
    if (st) {
      fail_device(x, dev, op, &d);
      return;
    }
    if (x->trace) x->trace[(size_t)dev * (size_t)x->g->n_ops + (size_t)k] = (rt_trace_event){t - x->t0, omp_get_wtime() - x->t0};
  }
}

/* ---------------- setup, outputs, teardown ---------------- */

static ppcc_status check_placements(const rt_exec *x, ppcc_diag *d) {
  for (int v = 0; v < x->g->n_values; v++) {
    const ppcc_value *p = val(x, v);
    if (x->opts->reference) continue;
    if (!p->devices || p->layout.count < 1)
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "value '%s' has no placement (run the passes first)", p->name);
    for (int i = 0; i < p->layout.count; i++)
      if (p->devices[i] < 0 || p->devices[i] >= x->n_devices)
        return ppcc_error(d, "value '%s' shard %d is on device %d, outside the model's %d devices", p->name, i,
                          p->devices[i], x->n_devices);
  }
  for (int k = 0; k < x->g->n_ops; k++) {
    const ppcc_op *op = &x->g->ops[k];
    if (op->info->family == PPCC_FAMILY_COMPUTE && !ppcc_rt_kernel(op->info->id))
      return ppcc_error(d, "op '%s' has no runtime kernel", op->info->name);
  }
  return PPCC_OK;
}

static ppcc_status setup(rt_exec *x, ppcc_diag *d) {
  x->n_devices = x->opts->reference ? 1 : x->g->n_devices;
  if (x->n_devices < 1) return ppcc_error(d, "the model has no devices");
  ppcc_status st = check_placements(x, d);
  if (st) return st;
  x->slot_base = malloc(sizeof(int) * (size_t)(x->g->n_values + 1));
  if (!x->slot_base) return oom(d);
  int total = 0;
  for (int v = 0; v < x->g->n_values; v++) {
    x->slot_base[v] = total;
    total += view_of(x, v).layout.count;
  }
  x->slots = calloc((size_t)(total > 0 ? total : 1), sizeof *x->slots);
  x->comm = ppcc_rt_comm_new(x->n_devices);
  if (x->opts->trace_path)
    x->trace = calloc((size_t)x->n_devices * (size_t)(x->g->n_ops > 0 ? x->g->n_ops : 1), sizeof *x->trace);
  if (!x->slots || !x->comm || (x->opts->trace_path && !x->trace)) return oom(d);
  return PPCC_OK;
}

static void teardown(rt_exec *x) {
  if (x->slots)
    for (int v = 0; v < x->g->n_values; v++)
      for (int i = 0; i < view_of(x, v).layout.count; i++)
        if (slot(x, v, i)->owned) rt_free(slot(x, v, i)->data);
  free(x->slots);
  free(x->slot_base);
  free(x->trace);
  ppcc_rt_comm_free(x->comm);
}

/* The full value of v from its shards (after the devices joined). */
static ppcc_status assemble(const rt_exec *x, int v, ppcc_host_tensor *t, ppcc_diag *d) {
  const ppcc_value *p = val(x, v);
  rt_view w = view_of(x, v);
  if (!ppcc_host_tensor_alloc(t, p->dtype, p->rank, p->shape)) return oom(d);
  int n = w.layout.count, es = es_of(x, v);
  int64_t count = local_bytes(x, v) / es;
  for (int i = 0; i < n; i++)
    if (!slot(x, v, i)->data) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "output '%s' was not computed", p->name);
  if (w.layout.kind == PPCC_LAYOUT_SPLIT) {
    for (int i = 0; i < n; i++) rt_copy_shard_in(t->data, slot(x, v, i)->data, geom_of(x, v, w.layout), n, i, es);
  } else if (w.layout.kind == PPCC_LAYOUT_UNREDUCED && ppcc_dtype_is_float(p->dtype)) {
    float *acc = rt_calloc(count * 4);
    if (!acc) return oom(d);
    for (int i = 0; i < n; i++) rt_acc_f32(p->dtype, slot(x, v, i)->data, acc, count);
    rt_from_f32(p->dtype, acc, t->data, count);
    rt_free(acc);
  } else if (w.layout.kind == PPCC_LAYOUT_UNREDUCED) {
    for (int i = 0; i < n; i++) rt_add_int(p->dtype, slot(x, v, i)->data, t->data, count);
  } else if (t->bytes > 0) {
    memcpy(t->data, slot(x, v, 0)->data, (size_t)t->bytes);
  }
  return PPCC_OK;
}

static ppcc_status write_trace(const rt_exec *x, const char *path, ppcc_diag *d) {
  char *tmp;
  size_t n = strlen(path) + 16;
  if (!(tmp = malloc(n))) return oom(d);
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    free(tmp);
    return ppcc_error(d, "%s: cannot write trace", path);
  }
  fprintf(f, "{\"traceEvents\": [\n");
  bool first = true;
  for (int dev = 0; dev < x->n_devices; dev++)
    for (int k = 0; k < x->g->n_ops; k++) {
      rt_trace_event e = x->trace[(size_t)dev * (size_t)x->g->n_ops + (size_t)k];
      if (e.end <= 0) continue;
      const ppcc_op *op = &x->g->ops[k];
      fprintf(f, "%s{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f}",
              first ? "" : ",\n", op->info->name, op->n_out ? val(x, op->out[0])->name : "", dev, e.start * 1e6,
              (e.end - e.start) * 1e6);
      first = false;
    }
  fprintf(f, "\n]}\n");
  bool ok = fclose(f) == 0 && rename(tmp, path) == 0;
  if (!ok) remove(tmp);
  free(tmp);
  return ok ? PPCC_OK : ppcc_error(d, "%s: cannot write trace", path);
}

static int total_threads(const ppcc_exec_options *o) { return o->threads > 0 ? o->threads : omp_get_num_procs(); }

/* One OpenMP thread per device; kernels get the cores left over. */
static ppcc_status run_devices(rt_exec *x, double *elapsed_ms, ppcc_diag *d) {
  int n = x->n_devices, cores = total_threads(x->opts);
  int per_device = cores / n > 1 ? cores / n : 1;
  ppcc_rt_set_kernel_threads(per_device);
  omp_set_dynamic(0);
  if (per_device > 1) omp_set_max_active_levels(2);
  int started = 0;
#pragma omp parallel num_threads(n)
  {
#pragma omp single
    started = omp_get_num_threads();
    /* implicit barrier: every thread sees `started` */
    if (started == n) device_load(x, omp_get_thread_num());
#pragma omp barrier
#pragma omp single
    x->t0 = omp_get_wtime(); /* the clock starts when every device is loaded */
    if (started == n) device_program(x, omp_get_thread_num());
  }
  if (elapsed_ms) *elapsed_ms = (omp_get_wtime() - x->t0) * 1e3;
  ppcc_rt_set_kernel_threads(1);
  if (started != n) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "could only start %d of %d device threads", started, n);
  const char *msg;
  if (ppcc_rt_comm_error(x->comm, &msg) >= 0) return ppcc_error(d, "%s", msg);
  return PPCC_OK;
}

ppcc_status ppcc_execute(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_exec_options *opts,
                         ppcc_host_tensor *outputs, double *elapsed_ms, ppcc_diag *d) {
  rt_exec x = {.g = g, .data = data, .opts = opts};
  for (int k = 0; k < g->n_outputs; k++) memset(&outputs[k], 0, sizeof outputs[k]);
  ppcc_status st = setup(&x, d);
  if (!st) st = run_devices(&x, elapsed_ms, d);
  for (int k = 0; k < g->n_outputs && !st; k++) st = assemble(&x, g->outputs[k], &outputs[k], d);
  if (!st && opts->trace_path) st = write_trace(&x, opts->trace_path, d);
  if (st)
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&outputs[k]);
  teardown(&x);
  return st;
}
