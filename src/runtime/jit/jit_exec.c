/* The JIT executor: prepares every device's shard buffers as memref
 * descriptors in the order of the device-function ABI (include/ppcc/jit.h),
 * runs the JIT-compiled device functions with one OpenMP thread per device
 * (as the interpreter in executor.c does), and assembles the outputs. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/quant.h"
#include "../comm/comm.h"
#include "../exec/exec.h"
#include "../io/io.h"
#include "../kernels/kernels.h"
#include "jit_abi.h"
#include "ppcc/predict.h"

/* One memref argument: its buffer and descriptor. */
typedef struct jit_arg {
  int value, shard;
  bool output;
  int output_index;   /* k of g->outputs[k] for outputs */
  bool state_in_place; /* a state output written into the state's own buffer
                          (ppcc_state_update_output): nothing to flip */
  void *data;         /* rt_alloc'ed and owned, or a resident param shard */
  bool borrowed;      /* data is a resident param shard (resident.c) */
  int64_t *desc;      /* {allocated, aligned, offset, sizes[rank], strides[rank]} */
  void *desc_ptr;     /* what the packed array points to */
} jit_arg;

typedef struct jit_device {
  int n_args;
  jit_arg *args;
  void **packed;
  int failed_op;
  int64_t arg_bytes;   /* --check-plan: leaf and output shards held for the run */
  int64_t alloc_peak;  /* high-water mark of what the compiled code allocated */
  double busy_ms;      /* device function time outside communication calls */
} jit_device;

typedef struct jit_exec {
  const ppcc_graph *g;
  const ppcc_run_data *data;
  const ppcc_exec_options *opts;
  jit_device *devs;
  ppcc_rt_comm *comm;
  bool dist; /* an MPI run: this rank runs only some devices */
} jit_exec;

static ppcc_status oom(ppcc_diag *d) { return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"); }

static bool is_leaf(const ppcc_value *v) { return v->kind == PPCC_VALUE_PARAM || v->kind == PPCC_VALUE_INPUT; }

static int64_t shard_bytes(const ppcc_value *v) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(v, local);
  return rt_tensor_bytes(v->dtype, v->rank, local);
}

/* Shard i of a leaf, cut from its full tensor (an unreduced leaf holds the
 * value in shard 0 and zeros elsewhere, as in the interpreter). */
static void *leaf_shard(const jit_exec *x, int v, int i) {
  const ppcc_value *p = &x->g->values[v];
  const void *full = x->data->values[v].data;
  int64_t bytes = shard_bytes(p);
  if (p->kind == PPCC_VALUE_PARAM) rt_count_param_copy(bytes);
  const void *stored = ppcc_run_data_shard(x->data, v, i); /* from a sharded archive: never whole */
  if (stored) {
    void *s = rt_alloc(bytes);
    if (s && bytes > 0) memcpy(s, stored, (size_t)bytes);
    return s;
  }
  if (x->dist && p->kind == PPCC_VALUE_PARAM && !x->data->owned[v]) /* MPI: file pages released while copied */
    return rt_copy_mapped_shard(full, p, i);
  if (p->layout.kind == PPCC_LAYOUT_SPLIT) {
    void *s = rt_alloc(bytes);
    int64_t units[PPCC_MAX_RANK]; /* elements, or blocks of a quantized param */
    int es = rt_storage_units(p->dtype, p->rank, p->shape, units);
    rt_split_geom geom = rt_split_geometry(p->rank, units, p->layout.dim, p->layout.count);
    if (s) rt_copy_shard_out(full, s, geom, p->layout.count, i, es);
    return s;
  }
  if (p->layout.kind == PPCC_LAYOUT_UNREDUCED && i > 0) return rt_calloc(bytes);
  void *s = rt_alloc(bytes);
  if (s && bytes > 0) memcpy(s, full, (size_t)bytes);
  return s;
}

static ppcc_status init_arg(jit_exec *x, jit_arg *a, ppcc_diag *d) {
  const ppcc_value *p = &x->g->values[a->value];
  if (!a->output && !x->data->values[a->value].data && !ppcc_run_data_shard(x->data, a->value, a->shard))
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no data for '%s'", p->name);
  /* params: the device's resident shard (the compiled code never writes
   * into a leaf: its buffers are non-writable tensors, copied on write) */
  const void *resident = !a->output && p->kind == PPCC_VALUE_PARAM
                             ? rt_resident_shard(x->data, a->value, p, p->layout, a->shard,
                                                 rt_param_mapped(x->data, a->value, x->dist))
                             : NULL;
  int state = a->output ? rt_state_input(x->g, x->data, a->output_index)
                        : p->kind == PPCC_VALUE_INPUT && x->data->state_of[a->value] >= 0 ? a->value : -1;
  /* a state: its input shard is read, the output written into the next
   * buffer, or into the same one when only the op writing the output
   * reads the input (a KV cache's index_copy: updated in place, no copy) */
  a->state_in_place = a->output && state >= 0 && ppcc_state_update_output(x->g, state) == a->output_index;
  if (state >= 0)
    resident = rt_state_shard(x->data, state, &x->g->values[state], p->layout, a->shard, 0,
                              a->output && !a->state_in_place);
  a->borrowed = resident != NULL;
  /* never cut from a whole tensor given back after load */
  ppcc_status st = !resident && !a->output && p->kind == PPCC_VALUE_PARAM
                       ? rt_refuse_released(x->data, a->value, p, a->shard, d)
                       : PPCC_OK;
  if (st) return st;
  a->data = resident ? (void *)resident : a->output ? rt_calloc(shard_bytes(p)) : leaf_shard(x, a->value, a->shard);
  a->desc = calloc((size_t)(3 + 2 * p->rank), sizeof *a->desc);
  if (!a->data || !a->desc) return oom(d);
  int64_t local[PPCC_MAX_RANK], stride = 1;
  ppcc_value_shard_shape(p, local);
  const ppcc_block_format *f = ppcc_dtype_blocks(p->dtype);
  if (f && p->rank > 0) local[p->rank - 1] = local[p->rank - 1] / f->block * f->bytes; /* i8 bytes of blocks */
  a->desc[0] = a->desc[1] = (int64_t)(intptr_t)a->data;
  for (int r = p->rank - 1; r >= 0; r--) {
    a->desc[3 + r] = local[r];
    a->desc[3 + p->rank + r] = stride;
    stride *= local[r];
  }
  a->desc_ptr = a->desc;
  return PPCC_OK;
}

/* The arguments of device dev in ABI order; with args NULL, only counts.
 * outputs_only: just the output shards but states (MPI: rank 0 receives
 * those of other ranks' devices; a state stays on its device's rank). */
static int list_args(const ppcc_graph *g, const ppcc_run_data *data, int dev, bool outputs_only, jit_arg *args) {
  int n = 0;
  for (int v = 0; v < g->n_values && !outputs_only; v++)
    for (int i = 0; is_leaf(&g->values[v]) && i < g->values[v].layout.count; i++)
      if (g->values[v].devices[i] == dev) {
        if (args) args[n] = (jit_arg){.value = v, .shard = i, .output = false};
        n++;
      }
  for (int k = 0; k < g->n_outputs; k++)
    for (int i = 0; (!outputs_only || rt_state_input(g, data, k) < 0) && i < g->values[g->outputs[k]].layout.count; i++)
      if (g->values[g->outputs[k]].devices[i] == dev) {
        if (args) args[n] = (jit_arg){.value = g->outputs[k], .shard = i, .output = true, .output_index = k};
        n++;
      }
  return n;
}

static ppcc_status setup_device(jit_exec *x, int dev, ppcc_diag *d) {
  jit_device *jd = &x->devs[dev];
  jd->failed_op = -1;
  bool remote = !rt_dist_local(dev); /* MPI: another rank runs it */
  if (remote && rt_dist_rank() != 0) return PPCC_OK;
  jd->n_args = list_args(x->g, x->data, dev, remote, NULL);
  size_t n = (size_t)(jd->n_args > 0 ? jd->n_args : 1);
  jd->args = calloc(n, sizeof *jd->args);
  jd->packed = calloc(n, sizeof *jd->packed);
  if (!jd->args || !jd->packed) return oom(d);
  list_args(x->g, x->data, dev, remote, jd->args);
  for (int k = 0; k < jd->n_args; k++) {
    ppcc_status st = init_arg(x, &jd->args[k], d);
    if (st) return st;
    const jit_arg *a = &jd->args[k]; /* --check's capture: leaves as cut, before anything runs */
    if (x->opts->capture && !a->output && !remote &&
        !ppcc_capture_store(x->opts->capture, a->value, a->shard, a->data, shard_bytes(&x->g->values[a->value])))
      return oom(d);
    jd->packed[k] = &jd->args[k].desc_ptr;
    jd->arg_bytes += shard_bytes(&x->g->values[a->value]);
  }
  return PPCC_OK;
}

static ppcc_status check_graph(const jit_exec *x, ppcc_diag *d) {
  if (x->opts->reference) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "the JIT runs sharded graphs only");
  if (x->opts->trace_path) return ppcc_error(d, "--trace is not supported by the JIT backend (use --backend=interp)");
  if (x->opts->microbatches > 1)
    return ppcc_error(d, "--microbatches is not supported by the JIT backend (use --backend=interp)");
  if (x->g->n_devices < 1) return ppcc_error(d, "the model has no devices");
  for (int v = 0; v < x->g->n_values; v++) {
    const ppcc_value *p = &x->g->values[v];
    if (!p->devices || p->layout.count < 1)
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "value '%s' has no placement (run the passes first)", p->name);
    for (int i = 0; i < p->layout.count; i++)
      if (p->devices[i] < 0 || p->devices[i] >= x->g->n_devices)
        return ppcc_error(d, "value '%s' shard %d is on device %d, outside the model's %d devices", p->name, i,
                          p->devices[i], x->g->n_devices);
  }
  return PPCC_OK;
}

static void teardown(jit_exec *x) {
  for (int dev = 0; x->devs && dev < x->g->n_devices; dev++) {
    jit_device *jd = &x->devs[dev];
    for (int k = 0; jd->args && k < jd->n_args; k++) {
      if (!jd->args[k].borrowed) rt_free(jd->args[k].data);
      free(jd->args[k].desc);
    }
    free(jd->args);
    free(jd->packed);
  }
  free(x->devs);
  ppcc_rt_comm_free(x->comm);
}

/* ---------------- running ---------------- */

/* MPI: rank 0 writes the outputs, so every device of another rank sends its
 * output shards to rank 0's collector device, in argument order. */
static void forward_outputs(jit_exec *x, int dev) {
  int collector = rt_dist_collector();
  if (rt_dist_rank() != 0) {
    const jit_device *jd = &x->devs[dev];
    for (int a = 0; a < jd->n_args; a++)
      if (jd->args[a].output && rt_state_input(x->g, x->data, jd->args[a].output_index) < 0 &&
          ppcc_rt_send(x->comm, dev, collector, jd->args[a].data, shard_bytes(&x->g->values[jd->args[a].value])))
        return;
    return;
  }
  if (dev != collector) return;
  for (int src = 0; src < x->g->n_devices; src++) {
    const jit_device *jd = &x->devs[src];
    for (int a = 0; !rt_dist_local(src) && a < jd->n_args; a++)
      if (rt_state_input(x->g, x->data, jd->args[a].output_index) < 0 && ppcc_rt_recv(x->comm, dev, src, jd->args[a].data, shard_bytes(&x->g->values[jd->args[a].value]))) return;
  }
}

static void run_device(jit_exec *x, ppcc_jit_entry entry, int dev) {
  const ppcc_exec_options *o = x->opts;
  if (!rt_dist_local(dev)) return; /* MPI: another rank runs it */
  if (o->inject_fault && dev == o->fault_device) { /* the JIT has no per-op hook: fail at the start */
    char msg[128];
    snprintf(msg, sizeof msg, "device %d: injected failure", dev);
    ppcc_rt_abort(x->comm, dev, msg);
    return;
  }
  rt_jit_bind(x->comm, dev);
  rt_jit_arena_begin(dev, (const void *)entry);
  double t0 = omp_get_wtime();
  entry(x->devs[dev].packed);
  x->devs[dev].busy_ms = (omp_get_wtime() - t0) * 1e3 - rt_jit_comm_ms();
  x->devs[dev].alloc_peak = rt_jit_arena_peak();
  x->devs[dev].failed_op = rt_jit_failed_op();
  rt_jit_arena_end(!ppcc_rt_aborted(x->comm));
  rt_jit_bind(NULL, -1);
  if (x->dist && !ppcc_rt_aborted(x->comm)) forward_outputs(x, dev);
}

static ppcc_status run_error(const jit_exec *x, ppcc_diag *d) {
  const char *msg;
  int dev = ppcc_rt_comm_error(x->comm, &msg);
  if (dev < 0) return PPCC_OK;
  int op = dev < x->g->n_devices ? x->devs[dev].failed_op : -1;
  if (op < 0 || op >= x->g->n_ops) return ppcc_error(d, "%s", msg);
  char ref[PPCC_MAX_NAME * 2 + 64];
  return ppcc_error(d, "device %d: %s: %s", dev, ppcc_op_ref(x->g, &x->g->ops[op], ref, sizeof ref), msg);
}

static ppcc_status run_all(jit_exec *x, const ppcc_jit_entry *entries, double *elapsed_ms, ppcc_diag *d) {
  int n = x->g->n_devices;
  int cores = x->opts->threads > 0 ? x->opts->threads : x->dist ? rt_dist_rank_cores() : omp_get_num_procs();
  int local = x->dist ? rt_dist_local_devices() : n; /* MPI: only this rank's devices run here */
  rt_run_thread_budget(x->g, 1, cores, local); /* the JIT runs one microbatch */
  int started = 0;
  double t0 = 0;
  rt_finish_gate done = RT_FINISH_GATE_INIT;
#pragma omp parallel num_threads(n)
  {
#pragma omp single
    {
      started = done.left = omp_get_num_threads();
      t0 = omp_get_wtime();
      if (x->dist) rt_dist_sync(&t0); /* every rank compiled and loaded: one clock for all */
    }
    /* implicit barrier: every thread sees `started` */
    rt_device_thread_enter(omp_get_thread_num());
    if (started == n) run_device(x, entries[omp_get_thread_num()], omp_get_thread_num());
    rt_device_thread_leave();
    rt_finish_gate_wait(&done);
  }
  if (elapsed_ms) *elapsed_ms = (omp_get_wtime() - t0) * 1e3;
  ppcc_rt_set_kernel_threads(1);
  if (started != n) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "could only start %d of %d device threads", started, n);
  return run_error(x, d);
}

/* ---------------- outputs ---------------- */

/* Output k's shard i as the device wrote it. */
static const void *output_shard(const jit_exec *x, int k, int i) {
  const jit_device *jd = &x->devs[x->g->values[x->g->outputs[k]].devices[i]];
  for (int a = 0; a < jd->n_args; a++)
    if (jd->args[a].output && jd->args[a].output_index == k && jd->args[a].shard == i) return jd->args[a].data;
  return NULL;
}

static ppcc_status assemble(const jit_exec *x, int k, ppcc_host_tensor *t, ppcc_diag *d) {
  const ppcc_value *p = &x->g->values[x->g->outputs[k]];
  if (!ppcc_host_tensor_alloc(t, p->dtype, p->rank, p->shape)) return oom(d);
  int n = p->layout.count, es = ppcc_dtype_size(p->dtype);
  int64_t count = shard_bytes(p) / (es > 0 ? es : 1);
  for (int i = 0; i < n; i++) {
    const void *s = output_shard(x, k, i);
    if (!s) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "output '%s' shard %d has no buffer", p->name, i);
    if (p->layout.kind == PPCC_LAYOUT_SPLIT)
      rt_copy_shard_in(t->data, s, rt_split_geometry(p->rank, p->shape, p->layout.dim, n), n, i, es);
    else if (p->layout.kind != PPCC_LAYOUT_UNREDUCED && i == 0 && t->bytes > 0)
      memcpy(t->data, s, (size_t)t->bytes);
  }
  if (p->layout.kind != PPCC_LAYOUT_UNREDUCED) return PPCC_OK;
  if (!ppcc_dtype_is_float(p->dtype)) {
    for (int i = 0; i < n; i++) rt_add_int(p->dtype, output_shard(x, k, i), t->data, count);
    return PPCC_OK;
  }
  float *acc = rt_calloc(count * 4); /* sum in shard order, in f32 */
  if (!acc) return oom(d);
  for (int i = 0; i < n; i++) rt_acc_f32(p->dtype, output_shard(x, k, i), acc, count);
  rt_from_f32(p->dtype, acc, t->data, count);
  rt_free(acc);
  return PPCC_OK;
}

/* --check's divergence search compiles every result as an output: each
 * output shard goes to the capture. */
static ppcc_status capture_outputs(const jit_exec *x, ppcc_diag *d) {
  for (int dev = 0; dev < x->g->n_devices; dev++)
    for (int a = 0; a < x->devs[dev].n_args; a++) {
      const jit_arg *arg = &x->devs[dev].args[a];
      int64_t bytes = shard_bytes(&x->g->values[arg->value]);
      if (arg->output && !ppcc_capture_store(x->opts->capture, arg->value, arg->shard, arg->data, bytes)) return oom(d);
    }
  return PPCC_OK;
}

/* --check-plan on the JIT. A device's peak is the bytes of the leaf
 * shards (params, inputs) and output shards the executor hands it, held
 * for the whole run, plus the high-water mark of the buffers its compiled
 * code allocated (results, transfer destinations, kernel temporaries and
 * the results later copied into the output shards). Its busy time is the
 * device function's time outside communication calls, counted for the
 * stage of the device's first compute op. Over several forwards the peak
 * is the largest, busy times and the wall the median (as executor.c). */
static void fill_measure(const jit_exec *x, double wall_ms, ppcc_plan_measure *m) {
  int n = x->g->n_devices;
  size_t cells = (size_t)m->n_stages * (size_t)n;
  double *busy = calloc(cells + 1, sizeof *busy);
  if (!busy) return; /* not filled: --check-plan says so */
  for (int dev = 0; dev < n; dev++) {
    int64_t peak = x->devs[dev].arg_bytes + x->devs[dev].alloc_peak;
    if (!m->filled || peak > m->peak_bytes[dev]) m->peak_bytes[dev] = peak;
    int stage = -1;
    for (int o = 0; o < x->g->n_ops && stage < 0; o++) {
      const ppcc_op *op = &x->g->ops[o];
      if (op->info->family != PPCC_FAMILY_COMPUTE) continue;
      for (int i = 0; i < op->n_devices; i++)
        if (op->devices[i] == dev) stage = m->op_stage ? m->op_stage[o] : 0;
    }
    if (stage >= 0 && stage < m->n_stages) busy[(size_t)stage * (size_t)n + (size_t)dev] = x->devs[dev].busy_ms;
  }
  rt_plan_measure_add_forward(m, busy, cells, wall_ms, NULL);
  free(busy);
}

/* The state outputs this process wrote become the current state shards
 * (those updated in place already are). */
static void flip_states(const jit_exec *x) {
  for (int dev = 0; dev < x->g->n_devices; dev++) {
    if (!rt_dist_local(dev)) continue;
    for (int a = 0; a < x->devs[dev].n_args; a++) {
      const jit_arg *arg = &x->devs[dev].args[a];
      int v = arg->output ? rt_state_input(x->g, x->data, arg->output_index) : -1;
      if (v >= 0 && !arg->state_in_place) rt_state_flip(x->data, &x->g->values[v], x->g->values[v].layout, arg->shard, 0);
    }
  }
}

ppcc_status ppcc_jit_run_devices(const ppcc_graph *g, const ppcc_jit_entry *entries, const ppcc_run_data *data,
                                 const ppcc_exec_options *opts, ppcc_host_tensor *outputs, double *elapsed_ms,
                                 ppcc_diag *d) {
  jit_exec x = {.g = g, .data = data, .opts = opts, .dist = !opts->reference && rt_dist_active()};
  for (int k = 0; k < g->n_outputs; k++) memset(&outputs[k], 0, sizeof outputs[k]);
  ppcc_status st = check_graph(&x, d);
  if (!st) {
    x.devs = calloc((size_t)g->n_devices, sizeof *x.devs);
    x.comm = ppcc_rt_comm_new(g->n_devices);
    if (!x.devs || !x.comm) st = oom(d);
    if (x.dist) rt_comm_attach_dist(x.comm);
  }
  for (int dev = 0; dev < g->n_devices && !st; dev++) st = setup_device(&x, dev, d);
  if (!st) st = run_all(&x, entries, elapsed_ms, d);
  else if (x.dist) rt_dist_sync(NULL); /* as run_all would have */
  if (!st && opts->capture && !x.dist) st = capture_outputs(&x, d);
  if (!st && opts->measure && !x.dist) fill_measure(&x, elapsed_ms ? *elapsed_ms : 0, opts->measure);
  if (x.dist) st = rt_dist_agree(st, d); /* every rank fails if one did */
  bool collects = !x.dist || rt_dist_rank() == 0; /* MPI: rank 0 got every output shard */
  for (int k = 0; k < g->n_outputs && !st && collects; k++)
    if (rt_state_input(g, data, k) < 0) st = assemble(&x, k, &outputs[k], d); /* states stay on their devices */
  if (!st) flip_states(&x);
  if (st)
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&outputs[k]);
  teardown(&x);
  return st;
}
