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
 * unsharded on device 0: collectives and transfers become copies.
 *
 * With M microbatches (microbatch.c) g is the microbatch-sized graph and
 * every device runs it M times in the pipelined order of
 * ppcc_pipeline_segments, on separate slots per microbatch (params are
 * shared: they are loaded once, into microbatch 0's slots). */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ppcc/test_inject.h"
#include "ppcc/predict.h"
#include "ppcc/quant.h"
#include "exec.h"
#include "../comm/comm.h"
#include "../io/io.h"
#include "../kernels/kernels.h"

typedef struct rt_slot {
  void *data;
  bool owned;   /* heap bytes to free (false: arena bytes, or aliasing another
                   slot: in-place update, view) */
  bool counted; /* its bytes are in the --check-plan accounting (x->mem) */
} rt_slot;

/* How a value is laid out in this execution. */
typedef struct rt_view {
  ppcc_layout layout;
  const int *devices;
} rt_view;

/* Each device thread works on its own copy (mb, op_index differ). */
typedef struct rt_exec {
  const ppcc_graph *g;    /* the graph run (microbatch-sized when M > 1) */
  const ppcc_graph *full; /* the caller's graph: output shapes */
  const ppcc_run_data *data;
  const ppcc_exec_options *opts;
  int n_devices;
  int microbatches;       /* M >= 1 */
  int mb;                 /* microbatch this device is working on */
  int op_index;           /* op this device is running (flow ids) */
  int *slot_base;         /* per value: index of its shard 0 in a microbatch's slots */
  int slots_per_mb;
  rt_slot *slots;         /* [microbatch][slot] */
  int n_segments;
  int *segment_begin;     /* ppcc_pipeline_segments */
  int *last_use;          /* per value: the last op reading it (or its
                             in-place aliases and views); -1: none; n_ops: keep */
  bool *view_op;          /* per op: its result is a view of operand 0 */
  bool *swapped;          /* per value: a folded transpose, stored untransposed */
  bool *written;          /* per value: an in-place op writes its bytes (or
                             those of a value it views); such a param is
                             copied per call, not bound resident */
  bool *arena_fresh;      /* per device: the arena's pages were never touched */
  int64_t *plan_off;      /* [microbatch][slot]: offset of the slot's buffer
                             in its device's arena; -1: not planned */
  char **arena;           /* per device: planned results, then scratch */
  int64_t *arena_planned; /* per device: bytes of planned results */
  int64_t *arena_total;   /* per device: planned + scratch */
  int64_t *scratch_used;  /* per device: scratch used in the current step */
  ppcc_rt_comm *comm;
  bool dist;              /* an MPI run: this rank holds only some devices */
  rt_timeline *timeline;  /* NULL: nothing recorded */
  double t0;
  bool inject;            /* TEST-ONLY: a wrong-kernel injection is asked */
  rt_mem_accounting mem;  /* bytes of value buffers per device (--check-plan) */
} rt_exec;

static const int device_zero[1] = {0};

static const ppcc_value *val(const rt_exec *x, int v) { return &x->g->values[v]; }

static rt_view view_of(const rt_exec *x, int v) {
  if (x->opts->reference) return (rt_view){ppcc_layout_unsharded(), device_zero};
  return (rt_view){val(x, v)->layout, val(x, v)->devices};
}

static rt_slot *slot(const rt_exec *x, int v, int shard) {
  int mb = val(x, v)->kind == PPCC_VALUE_PARAM ? 0 : x->mb;
  return &x->slots[(size_t)mb * (size_t)x->slots_per_mb + (size_t)(x->slot_base[v] + shard)];
}

static void local_shape(const rt_exec *x, int v, int64_t *shape) {
  const ppcc_value *p = val(x, v);
  memcpy(shape, p->shape, sizeof p->shape);
  rt_view w = view_of(x, v);
  if (w.layout.kind == PPCC_LAYOUT_SPLIT) shape[w.layout.dim] /= w.layout.count;
}

static int64_t local_bytes(const rt_exec *x, int v) {
  int64_t shape[PPCC_MAX_RANK];
  local_shape(x, v, shape);
  return rt_tensor_bytes(val(x, v)->dtype, val(x, v)->rank, shape);
}

/* Bytes of one storage unit: an element, or a quantized param's block. */
static int es_of(const rt_exec *x, int v) {
  int64_t units[PPCC_MAX_RANK];
  return rt_storage_units(val(x, v)->dtype, val(x, v)->rank, val(x, v)->shape, units);
}

static rt_split_geom geom_of(const rt_exec *x, int v, ppcc_layout l) {
  int64_t units[PPCC_MAX_RANK];
  rt_storage_units(val(x, v)->dtype, val(x, v)->rank, val(x, v)->shape, units);
  return rt_split_geometry(val(x, v)->rank, units, l.dim, l.count);
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

/* ---------------- buffers: the arena, or the heap ---------------- */

static bool in_arena(const rt_exec *x, int dev, const void *p) {
  const char *a = x->arena ? x->arena[dev] : NULL;
  return a && (const char *)p >= a && (const char *)p < a + x->arena_total[dev];
}

/* The buffer of shard i of result v on dev: its planned place in the
 * arena, else (not planned: an MPI run, a view that could not be one)
 * the heap. owned: freed with the slot. */
static rt_slot result_buffer(const rt_exec *x, int dev, int v, int i) {
  size_t k = (size_t)x->mb * (size_t)x->slots_per_mb + (size_t)(x->slot_base[v] + i);
  if (x->plan_off && x->plan_off[k] >= 0 && x->arena && x->arena[dev])
    return (rt_slot){x->arena[dev] + x->plan_off[k], false, false};
  return (rt_slot){rt_alloc(local_bytes(x, v)), true, false};
}

/* A temporary of the current step: bump-allocated from the device's
 * scratch (reset every step), the heap when it does not fit. */
static void *scratch(rt_exec *x, int dev, int64_t bytes) {
  int64_t size = rt_arena_round(bytes > 0 ? bytes : 1), at = x->arena ? x->arena_planned[dev] + x->scratch_used[dev] : 0;
  if (x->arena && x->arena[dev] && at + size <= x->arena_total[dev]) {
    x->scratch_used[dev] += size;
    return x->arena[dev] + at;
  }
  return rt_alloc(bytes);
}

static void buffer_free(const rt_exec *x, int dev, void *p) {
  if (!in_arena(x, dev, p)) rt_free(p);
}

/* A slot holding p (a result buffer or a scratch-less temporary). */
static rt_slot slot_of(const rt_exec *x, int dev, void *p) { return (rt_slot){p, !in_arena(x, dev, p), false}; }

/* Where shard i of op's result is produced on dev: its own buffer when it
 * stays on dev, else a temporary that is sent away. */
static void *produce_buffer(rt_exec *x, int dev, const ppcc_op *op, int i) {
  int res = op->out[0];
  if (view_of(x, res).devices[i] == dev) {
    rt_slot s = result_buffer(x, dev, res, i);
    return s.data;
  }
  return scratch(x, dev, local_bytes(x, res));
}

static void *produce_copy(rt_exec *x, int dev, const ppcc_op *op, int i, const void *src, int64_t bytes) {
  void *p = produce_buffer(x, dev, op, i);
  if (p && bytes > 0) memcpy(p, src, (size_t)bytes);
  return p;
}

/* The slot's bytes join the device's --check-plan accounting; release_value
 * takes them out again (views and in-place aliases are never counted). */
static void count_slot(rt_exec *x, int dev, rt_slot *s, int64_t bytes) {
  rt_mem_account(&x->mem, dev, bytes);
  s->counted = true;
}

/* ---------------- leaves: params and inputs ---------------- */

static bool mapped_param(const rt_exec *x, int v) {
  return val(x, v)->kind == PPCC_VALUE_PARAM && rt_param_mapped(x->data, v, x->dist);
}

/* A state input (ppcc_run_data_bind_state): its device shards are bound,
 * written in place, and the output feeding it is copied into them. */
static bool is_state(const rt_exec *x, int v) {
  return val(x, v)->kind == PPCC_VALUE_INPUT && x->data->state_of && x->data->state_of[v] >= 0;
}

/* A param's resident shard (resident.c), bound as it is: not when an
 * in-place op would write into it. */
static const void *bound_param(const rt_exec *x, int v, ppcc_layout l, int i) {
  if (val(x, v)->kind != PPCC_VALUE_PARAM || x->written[v]) return NULL;
  return rt_resident_shard(x->data, v, val(x, v), l, i, mapped_param(x, v));
}

/* A copy of a shard read from a sharded archive (an in-place op writes it). */
static void *copy_stored(const rt_exec *x, int v, const void *stored) {
  rt_count_param_copy(local_bytes(x, v));
  return dup_bytes(stored, local_bytes(x, v));
}

/* Shard `i` of a full tensor under layout l (an unreduced leaf puts the
 * whole value in shard 0 and zeros elsewhere: the sum is the value). */
static void *cut_shard(const rt_exec *x, int v, ppcc_layout l, int i, const void *full) {
  int64_t bytes = local_bytes(x, v);
  if (val(x, v)->kind == PPCC_VALUE_PARAM) rt_count_param_copy(bytes);
  if (mapped_param(x, v)) return rt_copy_mapped_shard(full, val(x, v), i); /* MPI: see mapped_shard.c */
  if (l.kind == PPCC_LAYOUT_SPLIT) {
    void *p = rt_alloc(bytes);
    if (p) rt_copy_shard_out(full, p, geom_of(x, v, l), l.count, i, es_of(x, v));
    return p;
  }
  if (l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) return rt_calloc(bytes);
  return dup_bytes(full, bytes);
}

/* The data of leaf v for the current microbatch: params whole, inputs
 * the mb-th slice along dim 0 (contiguous: dim 0 is outermost). */
static const void *leaf_data(const rt_exec *x, int v) {
  const char *full = x->data->values[v].data;
  if (!full || val(x, v)->kind == PPCC_VALUE_PARAM) return full;
  return full + (size_t)x->mb * (size_t)ppcc_value_bytes(val(x, v));
}

/* Params once (microbatch 0), inputs for microbatch x->mb. */
static ppcc_status load_leaves(rt_exec *x, int dev, ppcc_diag *d) {
  for (int v = 0; v < x->g->n_values; v++) {
    if (val(x, v)->kind == PPCC_VALUE_RESULT || (val(x, v)->kind == PPCC_VALUE_PARAM && x->mb > 0)) continue;
    const void *full = leaf_data(x, v);
    rt_view w = view_of(x, v);
    bool own_layout = w.layout.count == val(x, v)->layout.count; /* not the unsharded reference */
    for (int i = 0; i < w.layout.count; i++) {
      if (w.devices[i] != dev) continue;
      const void *stored = own_layout ? ppcc_run_data_shard(x->data, v, i) : NULL; /* from a sharded archive */
      if (!full && !stored) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no data for '%s'", val(x, v)->name);
      /* a state's shard, or a param's resident one (a stored shard itself when it can be bound) */
      const void *resident = is_state(x, v) ? rt_state_shard(x->data, v, val(x, v), w.layout, i, x->mb, false)
                                            : bound_param(x, v, w.layout, i);
      /* never cut from a whole tensor given back after load */
      ppcc_status st = !resident && !stored ? rt_refuse_released(x->data, v, val(x, v), i, d) : PPCC_OK;
      if (st) return st;
      *slot(x, v, i) = resident ? (rt_slot){(void *)resident, false, false}
                       : stored ? (rt_slot){copy_stored(x, v, stored), true, false}
                                : (rt_slot){cut_shard(x, v, w.layout, i, full), true, false};
      if (!slot(x, v, i)->data) return oom(d);
      if (x->opts->capture && !ppcc_capture_store(x->opts->capture, v, i, slot(x, v, i)->data, local_bytes(x, v)))
        return oom(d);
      count_slot(x, dev, slot(x, v, i), local_bytes(x, v));
    }
  }
  return PPCC_OK;
}

/* ---------------- point-to-point delivery ---------------- */

/* Both ends of the transfer of shard `shard` in the current op and
 * microbatch get the same id: the trace draws an arrow between them. */
static void trace_flow(const rt_exec *x, int dev, int shard, bool is_send) {
  if (!x->timeline) return;
  int64_t id = ((int64_t)x->mb * x->g->n_ops + x->op_index) * PPCC_MAX_DEVICES + shard;
  rt_timeline_flow(x->timeline, dev, id, is_send, omp_get_wtime() - x->t0);
}

/* Moves one shard from device `home` (data valid there) to `target`.
 * Called twice per op, sends first, so an op never waits on a send that
 * a later shard of another device would do. `temp`: data is a temporary
 * owned by home, handed over or freed. */
typedef enum { PHASE_SEND, PHASE_RECV } rt_phase;

static ppcc_status deliver(rt_exec *x, int dev, rt_phase phase, int shard, int home, int target, void *data,
                           bool temp, int64_t bytes, int res, ppcc_diag *d) {
  rt_slot *out = slot(x, res, shard);
  if (home == target) {
    if (dev != home || phase != PHASE_SEND) return PPCC_OK;
    if (temp) {
      *out = slot_of(x, dev, data); /* produced in place (produce_buffer) */
    } else {
      *out = result_buffer(x, dev, res, shard);
      if (out->data && bytes > 0) memcpy(out->data, data, (size_t)bytes);
    }
    if (!out->data) return oom(d);
    count_slot(x, dev, out, bytes);
    return PPCC_OK;
  }
  if (dev == home && phase == PHASE_SEND) {
    trace_flow(x, dev, shard, true);
    int rc = ppcc_rt_send(x->comm, dev, target, data, bytes);
    if (temp) buffer_free(x, dev, data);
    return rc ? comm_failed(x, d) : PPCC_OK;
  }
  if (dev == target && phase == PHASE_RECV) {
    *out = result_buffer(x, dev, res, shard);
    if (!out->data) return oom(d);
    count_slot(x, dev, out, bytes);
    if (ppcc_rt_recv(x->comm, dev, home, out->data, bytes)) return comm_failed(x, d);
    trace_flow(x, dev, shard, false);
  }
  return PPCC_OK;
}

/* ---------------- COMPUTE ---------------- */

static int operand_shard(rt_view in, rt_view out, int i) { return in.layout.count == out.layout.count ? i : 0; }

/* Records that t, holding `local` indices along dim, is shard i of n. */
static void set_split_position(ppcc_tensor *t, int dim, int64_t local, int i, int n) {
  t->split_dim = dim;
  t->split_offset = local * i;
  t->split_full = local * n;
}

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
  t->split_dim = 0;
  t->split_offset = t->split_full = 0;
  t->last_two_swapped = x->swapped[v];
  if (iv.layout.kind == PPCC_LAYOUT_SPLIT)
    set_split_position(t, iv.layout.dim, t->shape[iv.layout.dim], s, iv.layout.count);
  *temp = NULL;
  int sd = rt_local_slice_dim(op, k, val(x, v), iv.layout, val(x, res), ov.layout);
  if (sd < 0 && k < 2 && op->n_in >= 2)
    sd = rt_contract_slice_dim(op, k, val(x, v), iv.layout, view_of(x, op->in[1 - k]).layout, ov.layout);
  if (sd < 0) return PPCC_OK;
  if (t->last_two_swapped) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "a folded transpose cannot be sliced");
  /* A replicated operand next to a split one: this shard's slice only. */
  int n = ov.layout.count;
  const ppcc_block_format *f = ppcc_dtype_blocks(t->dtype);
  if (f && sd == t->rank - 1 && (t->shape[sd] / n) % f->block != 0)
    return ppcc_error(d, "%s: operand '%s' is %s: a slice of %lld of its %lld columns cuts its blocks of %d",
                      op->info->name, val(x, v)->name, ppcc_dtype_name(t->dtype), (long long)(t->shape[sd] / n),
                      (long long)t->shape[sd], f->block);
  set_split_position(t, sd, t->shape[sd] / n, i, n);
  int64_t units[PPCC_MAX_RANK]; /* elements, or blocks of a quantized param */
  int es = rt_storage_units(t->dtype, t->rank, t->shape, units);
  rt_split_geom geom = rt_split_geometry(t->rank, units, sd, n);
  t->shape[sd] /= n;
  *temp = scratch(x, dev, rt_tensor_bytes(t->dtype, t->rank, t->shape));
  if (!*temp) return oom(d);
  rt_copy_shard_out(t->data, *temp, geom, n, i, es);
  t->data = *temp;
  return PPCC_OK;
}

/* TEST-ONLY wrong kernel (ppcc/test_inject.h): the shard becomes twice
 * its value. */
static ppcc_status double_shard(ppcc_tensor *t, ppcc_diag *d) {
  int64_t n = ppcc_num_elements(t->rank, t->shape);
  float *f = rt_alloc(n * 4);
  if (!f) return oom(d);
  rt_to_f32(t->dtype, t->data, f, n);
  for (int64_t j = 0; j < n; j++) f[j] *= 2;
  rt_from_f32(t->dtype, f, t->data, n);
  rt_free(f);
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
  /* a reshape of a whole local shard is that shard's bytes: a view */
  bool view = !st && x->view_op[op - x->g->ops] && !temps[0] && local_bytes(x, res) == local_bytes(x, op->in[0]);
  if (!st && x->swapped[res] && !view) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "a folded transpose needs its operand whole");
  rt_slot rs = {0};
  if (!st) {
    out = (ppcc_tensor){0};
    out.dtype = val(x, res)->dtype;
    out.rank = val(x, res)->rank;
    local_shape(x, res, out.shape);
    rs = in_place || view ? (rt_slot){in[0].data, false, false} : result_buffer(x, dev, res, i);
    out.data = rs.data;
    if (!out.data) st = oom(d);
    else if (!in_place && !view) count_slot(x, dev, &rs, local_bytes(x, res));
  }
  if (!st) {
    *slot(x, res, i) = rs;
    ppcc_op no_bias = *op; /* partial sums: the bias counts once, on shard 0 */
    no_bias.n_in--;
    if (!view) /* a view (reshape, folded transpose) has its bytes already */
      st = ppcc_rt_run_kernel(rt_drops_bias(op, view_of(x, res).layout, i) ? &no_bias : op, in, &out, d);
    if (!st && x->inject && ppcc_test_inject_wrong_kernel(val(x, res)->name, i, false))
      st = double_shard(&out, d); /* TEST-ONLY (ppcc/test_inject.h) */
  }
  for (int k = 0; k < op->n_in; k++) buffer_free(x, dev, temps[k]);
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
  bool replicates = iv.layout.count == 1 && ov.layout.count > 1; /* P8: one whole value onto n devices */
  if (iv.layout.count != ov.layout.count && !replicates)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "transfer changes the shard count");
  int64_t bytes = local_bytes(x, v);
  for (rt_phase ph = PHASE_SEND; ph <= PHASE_RECV; ph++)
    for (int i = 0; i < ov.layout.count; i++) {
      int s = replicates ? 0 : i;
      ppcc_status st = deliver(x, dev, ph, i, iv.devices[s], ov.devices[i], slot(x, v, s)->data, false, bytes,
                               res, d);
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
      ppcc_status st = deliver(x, dev, ph, i, homes[i], ov.devices[i], data, true, bytes, res, d);
      if (st) return st;
    }
  return PPCC_OK;
}

/* Source of an unsharded operand: its only shard. */
static ppcc_status produce_copy_of_whole(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  *data = produce_copy(x, dev, op, i, slot(x, op->in[0], 0)->data, local_bytes(x, op->in[0]));
  return *data ? PPCC_OK : oom(d);
}

/* Shard i cut from a whole tensor (unsharded operand, or this device's
 * replica), for a split result. */
static ppcc_status produce_cut(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  int s = iv.layout.count == 1 ? 0 : i;
  *data = produce_buffer(x, dev, op, i);
  if (!*data) return oom(d);
  rt_copy_shard_out(slot(x, v, s)->data, *data, geom_of(x, res, ov.layout), ov.layout.count, i, es_of(x, v));
  return PPCC_OK;
}

static ppcc_status produce_copy_of_shard(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  *data = produce_copy(x, dev, op, i, slot(x, op->in[0], i)->data, local_bytes(x, op->in[0]));
  return *data ? PPCC_OK : oom(d);
}

static ppcc_status produce_all_gather(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0];
  rt_view iv = view_of(x, v);
  rt_split_geom geom = geom_of(x, v, iv.layout);
  *data = produce_buffer(x, dev, op, i);
  if (!*data) return oom(d);
  int rc = ppcc_rt_all_gather(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, slot(x, v, i)->data, *data,
                              geom.outer, geom.inner);
  if (rc) buffer_free(x, dev, *data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

static ppcc_status produce_all_reduce(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0];
  rt_view iv = view_of(x, v);
  int64_t bytes = local_bytes(x, v);
  *data = produce_copy(x, dev, op, i, slot(x, v, i)->data, bytes);
  if (!*data) return oom(d);
  int rc = ppcc_rt_all_reduce(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, *data,
                              bytes / es_of(x, v));
  if (rc) buffer_free(x, dev, *data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

static ppcc_status produce_reduce_scatter(rt_exec *x, int dev, const ppcc_op *op, int i, void **data, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v), ov = view_of(x, res);
  rt_split_geom geom = geom_of(x, res, ov.layout);
  *data = produce_buffer(x, dev, op, i);
  if (!*data) return oom(d);
  int rc = ppcc_rt_reduce_scatter(x->comm, iv.devices, iv.layout.count, i, val(x, v)->dtype, slot(x, v, i)->data,
                                  *data, geom.outer, geom.inner);
  if (rc) buffer_free(x, dev, *data);
  return rc ? comm_failed(x, d) : PPCC_OK;
}

/* Gathers (split) or sums in shard order (unreduced) every shard onto
 * the one device of an unsharded result. */
static ppcc_status collect_to_root(rt_exec *x, int dev, const ppcc_op *op, ppcc_diag *d) {
  int v = op->in[0], res = op->out[0];
  rt_view iv = view_of(x, v);
  int root = view_of(x, res).devices[0], n = iv.layout.count, es = es_of(x, v);
  int64_t bytes = local_bytes(x, v), count = bytes / es;
  for (int i = 0; i < n; i++) { /* sends first */
    if (iv.devices[i] != dev || dev == root) continue;
    trace_flow(x, dev, i, true);
    if (ppcc_rt_send(x->comm, dev, root, slot(x, v, i)->data, bytes)) return comm_failed(x, d);
  }
  if (dev != root) return PPCC_OK;
  bool sum = iv.layout.kind == PPCC_LAYOUT_UNREDUCED, fl = ppcc_dtype_is_float(val(x, v)->dtype);
  rt_slot fs = result_buffer(x, dev, res, 0);
  void *full = fs.data, *tmp = scratch(x, dev, bytes);
  float *acc = sum && fl ? scratch(x, dev, count * 4) : NULL;
  if (full) memset(full, 0, (size_t)local_bytes(x, res));
  if (acc) memset(acc, 0, (size_t)count * 4);
  ppcc_status st = full && tmp && (!sum || !fl || acc) ? PPCC_OK : oom(d);
  for (int i = 0; i < n && !st; i++) {
    const void *part = slot(x, v, i)->data;
    if (iv.devices[i] != root) {
      if (ppcc_rt_recv(x->comm, dev, iv.devices[i], tmp, bytes)) st = comm_failed(x, d);
      else trace_flow(x, dev, i, false);
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
  buffer_free(x, dev, tmp);
  buffer_free(x, dev, acc);
  if (st) {
    buffer_free(x, dev, full);
    return st;
  }
  *slot(x, res, 0) = fs;
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
  /* one shard is a whole value, whatever its layout (count-1 = unsharded) */
  ppcc_layout_kind ik = iv.layout.count == 1 ? PPCC_LAYOUT_UNSHARDED : iv.layout.kind, ok = ov.layout.kind;
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

/* Copies this device's shards of params and of every microbatch's inputs
 * into its buffers. */
static void device_load(const rt_exec *shared, int dev) {
  rt_exec x = *shared;
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  if (x.arena && x.arena[dev] && x.arena_fresh[dev]) /* first touch here, not in the timed run */
    memset(x.arena[dev], 0, (size_t)x.arena_total[dev]);
  for (x.mb = 0; x.mb < x.microbatches; x.mb++)
    if (load_leaves(&x, dev, &d)) {
      fail_device(&x, dev, NULL, &d);
      return;
    }
}

/* A value's buffers go back to the allocator once its last reader ran,
 * so the next op's buffers reuse them (warm pages, a small working set)
 * instead of growing the footprint by every op's result. */
static void release_value(rt_exec *x, int dev, int v, int j) {
  if (x->last_use[v] != j || val(x, v)->kind == PPCC_VALUE_PARAM) return;
  rt_view w = view_of(x, v);
  for (int i = 0; i < w.layout.count; i++) {
    rt_slot *s = slot(x, v, i);
    if (w.devices[i] != dev) continue;
    if (s->owned) rt_free(s->data);
    if (s->counted) rt_mem_account(&x->mem, dev, -local_bytes(x, v));
    *s = (rt_slot){NULL, false, false}; /* arena bytes: reused as planned */
  }
}

static void release_dead(rt_exec *x, int dev, const ppcc_op *op, int j) {
  for (int k = 0; k < op->n_in; k++) release_value(x, dev, op->in[k], j);
  for (int k = 0; k < op->n_out; k++)
    if (x->last_use[op->out[k]] < 0) {
      x->last_use[op->out[k]] = j; /* never read: free it now */
      release_value(x, dev, op->out[k], j);
      x->last_use[op->out[k]] = -1;
    }
}

/* Copies this device's shards of op's results, as computed now (a later
 * in-place op may overwrite the buffer). */
static bool capture_results(rt_exec *x, int dev, const ppcc_op *op) {
  for (int k = 0; k < op->n_out; k++) {
    int v = op->out[k];
    rt_view w = view_of(x, v);
    for (int i = 0; i < w.layout.count; i++)
      if (w.devices[i] == dev && slot(x, v, i)->data &&
          !ppcc_capture_store(x->opts->capture, v, i, slot(x, v, i)->data, local_bytes(x, v)))
        return false;
  }
  return true;
}

/* Runs op j of microbatch x->mb; false once this device failed. */
static bool run_step(rt_exec *x, int dev, int j, ppcc_diag *d) {
  const ppcc_op *op = &x->g->ops[j];
  x->op_index = j;
  if (x->scratch_used) x->scratch_used[dev] = 0; /* the last step's temporaries are dead */
  bool traced = x->timeline && ppcc_op_involves(x->g, op, dev);
  double t = traced ? omp_get_wtime() : 0;
  bool inject = x->opts->inject_fault && dev == x->opts->fault_device && j == x->opts->fault_op;
  const char *kill_how = inject ? getenv("PPCC_INJECT_KILL") : NULL; /* test hook: a rank dies or hangs */
  if (kill_how && strncmp(kill_how, "mark:", 5) == 0) {
    /* mark:FILE: the run is under way; FILE tells the test, which then
     * cuts this rank's link during the pause, and the op runs normally */
    FILE *f = fopen(kill_how + 5, "w");
    if (f) fclose(f);
    nanosleep(&(struct timespec){2, 0}, NULL);
    inject = false;
  } else if (kill_how) {
    raise(strcmp(kill_how, "stop") == 0 ? SIGSTOP : SIGKILL);
  }
  ppcc_status st = inject ? ppcc_error(d, "injected failure") : run_op(x, dev, op, d);
  if (st) {
    fail_device(x, dev, op, d);
    return false;
  }
  if (traced) rt_timeline_span(x->timeline, dev, j, x->mb, t - x->t0, omp_get_wtime() - x->t0);
  if (x->opts->capture && !capture_results(x, dev, op)) {
    ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    fail_device(x, dev, op, d);
    return false;
  }
  release_dead(x, dev, op, j);
  return true;
}

/* MPI runs: rank 0 writes the outputs, so every output shard of another
 * rank goes to rank 0's collector device, in the same (microbatch, output,
 * shard) order on both sides. */
static ppcc_status forward_outputs(rt_exec *x, int dev, ppcc_diag *d) {
  int collector = rt_dist_collector();
  for (x->mb = 0; x->mb < x->microbatches; x->mb++)
    for (int k = 0; k < x->g->n_outputs; k++) {
      int v = x->g->outputs[k];
      bool repeated = (val(x, v)->kind == PPCC_VALUE_PARAM && x->mb > 0) || rt_state_input(x->g, x->data, k) >= 0;
      for (int j = 0; j < k; j++) repeated = repeated || x->g->outputs[j] == v;
      rt_view w = view_of(x, v);
      int64_t bytes = local_bytes(x, v);
      for (int i = 0; i < w.layout.count && !repeated; i++) {
        int home = w.devices[i];
        if (rt_dist_rank_of(home) == 0 || (dev != home && dev != collector)) continue;
        if (dev == home && ppcc_rt_send(x->comm, dev, collector, slot(x, v, i)->data, bytes)) return comm_failed(x, d);
        if (dev != collector) continue;
        rt_slot *s = slot(x, v, i);
        *s = (rt_slot){rt_alloc(bytes), true, false};
        if (!s->data) return oom(d);
        if (ppcc_rt_recv(x->comm, dev, home, s->data, bytes)) return comm_failed(x, d);
      }
    }
  return PPCC_OK;
}

/* Each state output's shards on dev become its state input's (a copy on
 * the device unless the update was in place). */
static ppcc_status keep_states(rt_exec *x, int dev, ppcc_diag *d) {
  for (x->mb = 0; x->mb < x->microbatches; x->mb++)
    for (int k = 0; k < x->g->n_outputs; k++) {
      int v = rt_state_input(x->g, x->data, k), w = x->g->outputs[k];
      rt_view vw = view_of(x, w);
      for (int i = 0; v >= 0 && i < vw.layout.count; i++) {
        if (vw.devices[i] != dev) continue;
        void *dst = rt_state_shard(x->data, v, val(x, v), view_of(x, v).layout, i, x->mb, false);
        const void *src = slot(x, w, i)->data;
        if (!dst || !src) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "state '%s' has no buffer", val(x, v)->name);
        if (dst != src) memcpy(dst, src, (size_t)local_bytes(x, w));
      }
    }
  return PPCC_OK;
}

/* Per segment, the segment's ops for microbatch 0, 1, ... in turn (the
 * order ppcc_pipeline_segments explains). */
static void device_program(const rt_exec *shared, int dev) {
  rt_exec x = *shared;
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  for (int s = 0; s < x.n_segments; s++)
    for (x.mb = 0; x.mb < x.microbatches; x.mb++)
      for (int j = x.segment_begin[s]; j < x.segment_begin[s + 1]; j++) {
        if (ppcc_rt_aborted(x.comm) || !run_step(&x, dev, j, &d)) return;
      }
  if (keep_states(&x, dev, &d) || (x.dist && forward_outputs(&x, dev, &d))) fail_device(&x, dev, NULL, &d);
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

/* A transpose of the last two dims whose every reader takes the swapped
 * bytes as they are (matmul's right operand: the GEMM's trans flag), all
 * of it whole on one device (no shard slicing of swapped bytes), and not
 * an output: no copy is made, the readers see the operand's buffer. */
static bool foldable_transpose(const rt_exec *x, int j) {
  const ppcc_graph *g = x->g;
  const ppcc_op *op = &g->ops[j];
  if (op->n_in != 1 || op->n_out != 1 || !rt_kernel_swaps_last_two(op, val(x, op->in[0])->rank)) return false;
  int v = op->out[0];
  if (view_of(x, v).layout.count != 1 || view_of(x, op->in[0]).layout.count != 1 ||
      view_of(x, v).devices[0] != view_of(x, op->in[0]).devices[0])
    return false;
  for (int k = 0; k < g->n_outputs; k++)
    if (g->outputs[k] == v) return false;
  int readers = 0;
  for (int r = j + 1; r < g->n_ops; r++) {
    const ppcc_op *c = &g->ops[r];
    for (int k = 0; k < c->n_in; k++) {
      if (c->in[k] != v) continue;
      if (!rt_kernel_reads_swapped(c, k) || c->n_out != 1 || view_of(x, c->out[0]).layout.count != 1) return false;
      for (int m = 0; m < c->n_in; m++)
        if (view_of(x, c->in[m]).layout.count != 1) return false;
      readers++;
    }
  }
  return readers > 0;
}

/* Which reshapes become views of their operand: not when the operand's
 * bytes are ever written in place (index_copy into it or into anything
 * sharing its buffer), since the view would see the write. */
static bool plan_views(rt_exec *x) {
  const ppcc_graph *g = x->g;
  x->view_op = calloc((size_t)g->n_ops + 1, sizeof *x->view_op);
  int *root = malloc(sizeof(int) * (size_t)(g->n_values + 1));
  bool *written = calloc((size_t)g->n_values + 1, sizeof *written);
  x->swapped = calloc((size_t)g->n_values + 1, sizeof *x->swapped);
  bool ok = x->view_op && root && written && x->swapped;
  for (int v = 0; ok && v < g->n_values; v++) root[v] = v;
  for (int j = 0; ok && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool aliases = rt_kernel_is_view(op) || foldable_transpose(x, j) ||
                   (op->info->pin_rule == PPCC_PIN_INPLACE && op->n_in >= 1);
    if (aliases && op->n_out == 1) root[op->out[0]] = root[op->in[0]];
    if (op->info->pin_rule == PPCC_PIN_INPLACE && op->n_in >= 1) written[root[op->in[0]]] = true;
  }
  for (int j = 0; ok && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool fold = foldable_transpose(x, j);
    x->view_op[j] = (rt_kernel_is_view(op) || fold) && !written[root[op->in[0]]] &&
                    val(x, op->in[0])->dtype == val(x, op->out[0])->dtype;
    if (fold && x->view_op[j]) x->swapped[op->out[0]] = true;
  }
  for (int v = 0; ok && v < g->n_values; v++) written[v] = written[root[v]];
  free(root);
  x->written = written;
  return ok;
}

bool *ppcc_rt_view_ops(const ppcc_graph *g) {
  ppcc_exec_options opts = {0};
  rt_exec x = {.g = g, .opts = &opts};
  bool ok = plan_views(&x);
  free(x.swapped);
  free(x.written);
  if (!ok) {
    free(x.view_op);
    return NULL;
  }
  return x.view_op;
}

bool *ppcc_rt_jit_view_ops(const ppcc_graph *g) {
  bool *view = calloc((size_t)g->n_ops + 1, sizeof *view);
  for (int j = 0; view && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    view[j] = rt_kernel_is_view(op) && op->n_in >= 1 && op->n_out == 1 &&
              g->values[op->in[0]].dtype == g->values[op->out[0]].dtype;
  }
  return view;
}

/* Op j's result holds no bytes of its own: an in-place update (P7) or a
 * view (plan_views) of operand 0. */
static bool result_aliases_operand(const rt_exec *x, int j) {
  const ppcc_op *op = &x->g->ops[j];
  return x->view_op[j] || (op->info->pin_rule == PPCC_PIN_INPLACE && op->n_in >= 1);
}

/* last_use: the last op reading each value; an in-place result aliases
 * its destination and a view its operand, so those live as long as the
 * result; graph outputs (and what they alias) are kept. */
static bool plan_lifetimes(rt_exec *x) {
  const ppcc_graph *g = x->g;
  x->last_use = malloc(sizeof(int) * (size_t)(g->n_values + 1));
  if (!x->last_use || !plan_views(x)) return false;
  for (int v = 0; v < g->n_values; v++) x->last_use[v] = -1;
  for (int j = 0; j < g->n_ops; j++)
    for (int k = 0; k < g->ops[j].n_in; k++) x->last_use[g->ops[j].in[k]] = j;
  for (int k = 0; k < g->n_outputs; k++) x->last_use[g->outputs[k]] = g->n_ops;
  for (int j = g->n_ops - 1; j >= 0; j--) {
    const ppcc_op *op = &g->ops[j];
    if (!result_aliases_operand(x, j)) continue;
    int dst = op->in[0], res = op->out[0];
    if (x->last_use[res] > x->last_use[dst]) x->last_use[dst] = x->last_use[res];
    if (x->last_use[res] < 0 && x->last_use[dst] < j) x->last_use[dst] = j;
  }
  return true;
}

/* Step of op j of microbatch mb in the device programs' order (per
 * segment, every microbatch in turn: device_program). */
static int step_of(const rt_exec *x, const int *segment_of, int mb, int j) {
  int s = segment_of[j], b = x->segment_begin[s], len = x->segment_begin[s + 1] - b;
  return b * x->microbatches + mb * len + (j - b);
}

/* Scratch one step of op may take on dev: the slices of replicated
 * operands, the shards it sends away, a root's receive buffer and sum. */
static int64_t step_scratch(const rt_exec *x, const ppcc_op *op) {
  int64_t in = 0, out = 0, sliced = 0;
  for (int k = 0; k < op->n_in; k++) in += rt_arena_round(local_bytes(x, op->in[k]));
  for (int k = 0; k < op->n_out; k++)
    out += rt_arena_round(local_bytes(x, op->out[k])) * view_of(x, op->out[k]).layout.count;
  if (op->info->family == PPCC_FAMILY_COMPUTE) { /* the operands operand_tensor slices, for one shard */
    int res = op->out[0];
    rt_view ov = view_of(x, res);
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k];
      rt_view iv = view_of(x, v);
      int sd = rt_local_slice_dim(op, k, val(x, v), iv.layout, val(x, res), ov.layout);
      if (sd < 0 && k < 2 && op->n_in >= 2)
        sd = rt_contract_slice_dim(op, k, val(x, v), iv.layout, view_of(x, op->in[1 - k]).layout, ov.layout);
      if (sd >= 0) sliced += rt_arena_round(local_bytes(x, v) / ov.layout.count);
    }
    return sliced;
  }
  if (op->n_in < 1) return out;
  int64_t f32 = rt_arena_round(local_bytes(x, op->in[0]) / es_of(x, op->in[0]) * 4);
  return out + in + f32;
}

/* Offsets of every result shard of every microbatch in its device's
 * arena (rt_arena_plan: by lifetime, best fit), then the arenas: planned
 * bytes plus the largest step's scratch, taken from the pool. MPI runs
 * keep heap buffers (their devices live in several processes). */
static bool plan_arenas(rt_exec *x) {
  const ppcc_graph *g = x->g;
  int n = x->n_devices, M = x->microbatches, end = g->n_ops * M;
  size_t n_slots = (size_t)x->slots_per_mb * (size_t)M;
  x->plan_off = malloc(sizeof(int64_t) * (n_slots > 0 ? n_slots : 1));
  x->arena = calloc((size_t)n, sizeof *x->arena);
  x->arena_planned = calloc((size_t)n, sizeof(int64_t));
  x->arena_total = calloc((size_t)n, sizeof(int64_t));
  x->scratch_used = calloc((size_t)n, sizeof(int64_t));
  int *segment_of = malloc(sizeof(int) * (size_t)(g->n_ops + 1));
  int *count = calloc((size_t)n, sizeof(int));
  rt_arena_buf **bufs = calloc((size_t)n, sizeof *bufs);
  int64_t *scratch_max = calloc((size_t)n, sizeof(int64_t));
  bool ok = x->plan_off && x->arena && x->arena_planned && x->arena_total && x->scratch_used && segment_of && count &&
            bufs && scratch_max;
  for (size_t k = 0; ok && k < n_slots; k++) x->plan_off[k] = -1;
  for (int s = 0; ok && s < x->n_segments; s++)
    for (int j = x->segment_begin[s]; j < x->segment_begin[s + 1]; j++) segment_of[j] = s;
  /* pass 0 counts the buffers per device, pass 1 records them */
  for (int pass = 0; ok && pass < 2; pass++) {
    for (int dev = 0; pass == 1 && dev < n && ok; dev++) {
      bufs[dev] = malloc(sizeof **bufs * (size_t)(count[dev] > 0 ? count[dev] : 1));
      ok = bufs[dev] != NULL;
      count[dev] = 0;
    }
    for (int j = 0; ok && j < g->n_ops; j++) {
      const ppcc_op *op = &g->ops[j];
      bool alias = result_aliases_operand(x, j);
      for (int k = 0; k < op->n_out; k++) {
        int v = op->out[k];
        rt_view w = view_of(x, v);
        for (int i = 0; i < w.layout.count && !alias; i++) {
          int dev = w.devices[i];
          if (pass == 0) {
            count[dev] += M;
            continue;
          }
          for (int mb = 0; mb < M; mb++) {
            int birth = step_of(x, segment_of, mb, j), lu = x->last_use[v];
            int death = lu >= g->n_ops ? end : lu < 0 ? birth : step_of(x, segment_of, mb, lu);
            bufs[dev][count[dev]++] = (rt_arena_buf){local_bytes(x, v), birth, death > birth ? death : birth, 0};
          }
        }
      }
      if (pass == 1) {
        int64_t sc = step_scratch(x, op);
        for (int dev = 0; dev < n; dev++)
          if ((x->opts->reference ? dev == 0 : ppcc_op_involves(g, op, dev)) && sc > scratch_max[dev])
            scratch_max[dev] = sc;
      }
    }
  }
  for (int dev = 0; ok && dev < n; dev++) {
    int64_t planned = rt_arena_plan(bufs[dev], count[dev]);
    ok = planned >= 0;
    x->arena_planned[dev] = planned;
    x->arena_total[dev] = planned + scratch_max[dev];
    rt_arena_record(dev, planned, scratch_max[dev]);
  }
  /* the offsets into the slots, in the same order as recorded */
  for (int dev = 0; dev < n; dev++) count[dev] = 0;
  for (int j = 0; ok && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (result_aliases_operand(x, j)) continue;
    for (int k = 0; k < op->n_out; k++) {
      int v = op->out[k];
      rt_view w = view_of(x, v);
      for (int i = 0; i < w.layout.count; i++)
        for (int mb = 0, dev = w.devices[i]; mb < M; mb++)
          x->plan_off[(size_t)mb * (size_t)x->slots_per_mb + (size_t)(x->slot_base[v] + i)] =
              bufs[dev][count[dev]++].offset;
    }
  }
  for (int dev = 0; bufs && dev < n; dev++) free(bufs[dev]);
  free(bufs);
  free(count);
  free(segment_of);
  free(scratch_max);
  return ok;
}

/* Each device's arena block (device_load touches a fresh one's pages on
 * the device's own thread, before the clock starts). */
static bool take_arenas(rt_exec *x) {
  x->arena_fresh = calloc((size_t)x->n_devices, sizeof *x->arena_fresh);
  if (!x->arena_fresh) return false;
  for (int dev = 0; dev < x->n_devices; dev++) {
    x->arena[dev] = rt_arena_take(dev, x->arena_total[dev], &x->arena_fresh[dev]);
    if (!x->arena[dev]) return false;
  }
  return true;
}

static ppcc_status setup(rt_exec *x, ppcc_diag *d) {
  x->dist = !x->opts->reference && rt_dist_active();
  x->inject = !x->opts->reference && ppcc_test_inject("wrong-kernel", NULL, 0);
  x->n_devices = x->opts->reference ? 1 : x->g->n_devices;
  if (x->n_devices < 1) return ppcc_error(d, "the model has no devices");
  ppcc_status st = check_placements(x, d);
  if (st) return st;
  x->slot_base = malloc(sizeof(int) * (size_t)(x->g->n_values + 1));
  x->segment_begin = malloc(sizeof(int) * (size_t)(x->g->n_ops + 2));
  if (!x->slot_base || !x->segment_begin || !plan_lifetimes(x)) return oom(d);
  int total = 0;
  for (int v = 0; v < x->g->n_values; v++) {
    x->slot_base[v] = total;
    total += view_of(x, v).layout.count;
  }
  x->slots_per_mb = total;
  x->slots = calloc((size_t)(total > 0 ? total : 1) * (size_t)x->microbatches, sizeof *x->slots);
  x->comm = ppcc_rt_comm_new(x->n_devices);
  if (x->dist) rt_comm_attach_dist(x->comm);
  x->n_segments = ppcc_pipeline_segments(x->g, x->segment_begin);
  if (!x->slots || !x->comm) return oom(d);
  if (!x->opts->reference && !rt_mem_accounting_init(&x->mem, x->n_devices)) return oom(d);
  bool arenas = !x->dist && !getenv("PPCC_NO_ARENA"); /* bench/: heap buffers, for a before/after */
  if (arenas && (!plan_arenas(x) || !take_arenas(x))) return oom(d);
  if (x->opts->trace_path || x->opts->stats || x->opts->measure) {
    x->timeline = calloc(1, sizeof *x->timeline);
    if (!x->timeline || !rt_timeline_init(x->timeline, x->n_devices)) return oom(d);
  }
  return PPCC_OK;
}

static void teardown(rt_exec *x) {
  for (x->mb = 0; x->slots && x->mb < x->microbatches; x->mb++)
    for (int v = 0; v < x->g->n_values; v++) {
      if (val(x, v)->kind == PPCC_VALUE_PARAM && x->mb > 0) continue; /* shared with microbatch 0 */
      for (int i = 0; i < view_of(x, v).layout.count; i++)
        if (slot(x, v, i)->owned) rt_free(slot(x, v, i)->data);
    }
  for (int dev = 0; x->arena && x->arena_total && dev < x->n_devices; dev++) rt_arena_give(dev, x->arena[dev], x->arena_total[dev]);
  free(x->arena);
  free(x->arena_fresh);
  free(x->arena_planned);
  free(x->arena_total);
  free(x->scratch_used);
  free(x->plan_off);
  free(x->view_op);
  free(x->swapped);
  free(x->written);
  free(x->slots);
  free(x->slot_base);
  free(x->segment_begin);
  free(x->last_use);
  if (x->timeline) rt_timeline_free(x->timeline);
  free(x->timeline);
  rt_mem_accounting_free(&x->mem);
  ppcc_rt_comm_free(x->comm);
}

/* The value of v in microbatch x->mb from its shards (after the devices
 * joined), written to dst: that microbatch's slice of the full output. */
static ppcc_status assemble_microbatch(const rt_exec *x, int v, void *dst, ppcc_diag *d) {
  const ppcc_value *p = val(x, v);
  rt_view w = view_of(x, v);
  ppcc_host_tensor slice = {.data = dst, .bytes = ppcc_value_bytes(p)}, *t = &slice;
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

/* The full value of v: its microbatches concatenated along dim 0. */
static ppcc_status assemble(rt_exec *x, int v, ppcc_host_tensor *t, ppcc_diag *d) {
  const ppcc_value *p = &x->full->values[v];
  if (!ppcc_host_tensor_alloc(t, p->dtype, p->rank, p->shape)) return oom(d);
  int64_t slice_bytes = ppcc_value_bytes(val(x, v));
  ppcc_status st = PPCC_OK;
  for (x->mb = 0; x->mb < x->microbatches && !st; x->mb++)
    st = assemble_microbatch(x, v, (char *)t->data + (size_t)x->mb * (size_t)slice_bytes, d);
  return st;
}

static int total_threads(const ppcc_exec_options *o) { return o->threads > 0 ? o->threads : omp_get_num_procs(); }

/* One OpenMP thread per device; kernels share the cores among the devices
 * that can compute at the same time. */
static ppcc_status run_devices(rt_exec *x, double *elapsed_ms, ppcc_diag *d) {
  int n = x->n_devices, cores = total_threads(x->opts);
  int local = x->dist ? rt_dist_local_devices() : n; /* MPI: only this rank's devices run here */
  if (x->dist && x->opts->threads <= 0) cores = rt_dist_rank_cores(); /* ranks on one host share it */
  rt_run_thread_budget(x->g, x->microbatches, cores, local);
  int started = 0;
  rt_finish_gate done = RT_FINISH_GATE_INIT;
#pragma omp parallel num_threads(n)
  {
#pragma omp single
    started = done.left = omp_get_num_threads();
    /* implicit barrier: every thread sees `started` */
    bool mine = rt_dist_local(omp_get_thread_num()) || !x->dist; /* MPI: other ranks run the rest */
    if (started == n && mine) device_load(x, omp_get_thread_num());
    rt_device_thread_enter(omp_get_thread_num()); /* before the barrier: see rt_device_thread_enter */
#pragma omp barrier
#pragma omp single
    {
      x->t0 = omp_get_wtime(); /* the clock starts when every device is loaded */
      if (x->dist) rt_dist_sync(&x->t0); /* every rank loaded: one clock for all */
    }
    if (started == n && mine) device_program(x, omp_get_thread_num());
    rt_device_thread_leave();
    rt_finish_gate_wait(&done);
  }
  if (elapsed_ms) *elapsed_ms = (omp_get_wtime() - x->t0) * 1e3;
  ppcc_rt_set_kernel_threads(1);
  if (started != n) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "could only start %d of %d device threads", started, n);
  const char *msg;
  if (ppcc_rt_comm_error(x->comm, &msg) >= 0) return ppcc_error(d, "%s", msg);
  return PPCC_OK;
}

/* --check-plan: each device's high-water mark and, per stage, the time
 * each device spent in compute ops (all microbatches). Over several
 * forwards (--repeat) the peak is the largest and each busy time and the
 * wall the median of the warm ones: the first forward is cold (first
 * touch of every buffer, BLAS start-up). */
static void fill_measure(const rt_exec *x, double wall_ms, ppcc_plan_measure *m) {
  int n = x->n_devices;
  size_t cells = (size_t)m->n_stages * (size_t)n;
  double *busy = x->mem.peak ? calloc(cells + 1, sizeof *busy) : NULL; /* no accounting in reference runs */
  if (!busy) return; /* not filled: --check-plan says so */
  for (int dev = 0; dev < n; dev++)
    if (!m->filled || x->mem.peak[dev] > m->peak_bytes[dev]) m->peak_bytes[dev] = x->mem.peak[dev];
  for (int dev = 0; dev < n; dev++) {
    const rt_device_timeline *dt = &x->timeline->dev[dev];
    for (int i = 0; i < dt->n_spans; i++) {
      const rt_span *sp = &dt->spans[i];
      int stage = m->op_stage ? m->op_stage[sp->op] : 0;
      if (x->g->ops[sp->op].info->family != PPCC_FAMILY_COMPUTE || stage < 0 || stage >= m->n_stages) continue;
      busy[(size_t)stage * (size_t)n + (size_t)dev] += (sp->end - sp->start) * 1e3;
    }
  }
  double *per_op = m->op_busy_ms ? calloc((size_t)x->g->n_ops + 1, sizeof *per_op) : NULL; /* ppcc calibrate */
  for (int dev = 0; per_op && dev < n; dev++)
    for (int i = 0; i < x->timeline->dev[dev].n_spans; i++) {
      const rt_span *sp = &x->timeline->dev[dev].spans[i];
      if (x->g->ops[sp->op].info->family == PPCC_FAMILY_COMPUTE) per_op[sp->op] += (sp->end - sp->start) * 1e3;
    }
  if (per_op || !m->op_busy_ms) rt_plan_measure_add_forward(m, busy, cells, wall_ms, per_op);
  free(per_op);
  free(busy);
}

/* The trace file and the statistics, from the recorded timeline. */
static ppcc_status report_timeline(const rt_exec *x, double wall_ms, ppcc_diag *d) {
  for (int dev = 0; dev < x->n_devices; dev++)
    if (x->timeline->dev[dev].oom) return oom(d);
  if (x->dist) { /* rank 0 reports every rank's tracks */
    ppcc_status st = rt_dist_merge_timeline(x->timeline, d);
    if (st || rt_dist_rank() != 0) return st;
  }
  ppcc_status st = PPCC_OK;
  if (x->opts->trace_file) st = rt_timeline_write_to(x->timeline, x->g, x->opts->trace_file, d);
  else if (x->opts->trace_path) st = rt_timeline_write(x->timeline, x->g, x->opts->trace_path, d);
  if (!st && x->opts->stats) st = rt_timeline_stats(x->timeline, x->g, x->microbatches, wall_ms, x->opts->stats, d);
  if (!st && x->opts->measure) fill_measure(x, wall_ms, x->opts->measure);
  return st;
}

static ppcc_status execute_graph(rt_exec *x, ppcc_host_tensor *outputs, double *elapsed_ms, ppcc_diag *d) {
  double wall_ms = 0;
  ppcc_status st = setup(x, d);
  if (!st) st = run_devices(x, &wall_ms, d);
  else if (x->dist) rt_dist_sync(NULL); /* as run_devices would have */
  if (x->dist) st = rt_dist_agree(st, d); /* every rank fails if one did */
  bool collects = !x->dist || rt_dist_rank() == 0; /* MPI: rank 0 got every output shard */
  for (int k = 0; k < x->g->n_outputs && !st && collects; k++)
    if (rt_state_input(x->g, x->data, k) < 0) st = assemble(x, x->g->outputs[k], &outputs[k], d); /* states stay */
  if (!st && x->timeline) st = report_timeline(x, wall_ms, d);
  if (elapsed_ms) *elapsed_ms = wall_ms;
  teardown(x);
  return st;
}

ppcc_status ppcc_execute(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_exec_options *opts,
                         ppcc_host_tensor *outputs, double *elapsed_ms, ppcc_diag *d) {
  rt_exec x = {.g = g, .full = g, .data = data, .opts = opts, .microbatches = 1};
  ppcc_graph micro;
  for (int k = 0; k < g->n_outputs; k++) memset(&outputs[k], 0, sizeof outputs[k]);
  if (opts->stats) memset(opts->stats, 0, sizeof *opts->stats);
  bool split = opts->microbatches > 1;
  ppcc_status st = split ? rt_microbatch_graph(g, opts->microbatches, &micro, d) : PPCC_OK;
  if (st && !opts->reference && rt_dist_active()) rt_dist_sync(NULL);
  if (st) return opts->reference ? st : rt_dist_agree(st, d);
  if (split) x.g = &micro, x.microbatches = opts->microbatches;
  st = execute_graph(&x, outputs, elapsed_ms, d);
  if (split) rt_microbatch_graph_free(&micro);
  if (st)
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&outputs[k]);
  if (st && opts->stats) ppcc_pipeline_stats_free(opts->stats);
  return st;
}
