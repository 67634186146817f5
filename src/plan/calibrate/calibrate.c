/* `ppcc calibrate`: this machine's speeds for the time model of
 * include/ppcc/predict.h, measured on the paths the runtime uses:
 *   gemm_gflops[t-1]      one ppcc_rt_sgemm (OpenBLAS when built with it)
 *                         of 32 x 256 x 256 with B transposed (a linear
 *                         layer's projection of 32 tokens) with t kernel
 *                         threads, as a device gets t threads from
 *                         rt_thread_budget; big square GEMMs run faster;
 *   gemm_call_us          an 8x32x32 sgemm's time beyond its FLOPs at the
 *                         1-thread rate: the fixed cost of a small GEMM;
 *   elementwise_gbps[t-1] the runtime's add kernel over 16 Ki floats
 *                         (in cache), t threads at once (t
 *                         single-threaded devices), bytes read + written
 *                         per thread;
 *   elementwise_gflops[t-1] op-table FLOPs per second of the runtime's
 *                         gelu kernel, t threads at once;
 *   copy_gbps[t-1]        memcpy of 16 MiB per thread, t threads at once
 *                         (transfers; not used by the stage times);
 *   op_overhead_us        the fixed cost of one compute step (overhead_us);
 * and, ppcc_calibrate_ops, the interpreter's own costs (what the
 * prediction of an interpreter run uses; the above is the roofline's):
 *   op_costs              per op kind, fitted on workload models run
 *                         through the executor (see "per-op costs" below);
 *   hop_us                a [8,64]x[64,64] matmul ping-ponged between two
 *                         devices: the wall per step less its busy time;
 *   pool_wake_us          a device's first split linear after a wait
 *                         against its next (calibrate_pool_wake);
 *   concurrent_slowdown   FFN copies on t devices at once against one;
 *   resume_us, start_us   (and their *_spread_us, the JIT's jit_*) the
 *                         model's residual on small pipelines, per
 *                         placement of the device threads (calibrate_waits);
 *   operand_cut           a row-parallel matmul's span less its own cost.
 * GEMM ops are keyed by their kernel (ppcc_op_cost_key: one row, 2 to 16
 * rows, more), each fitted on its own samples.
 * The roofline's rates are the best of several runs (the machine may be
 * shared); the interpreter's and the JIT's costs are medians over
 * forwards, the statistic --check-plan measures (the fastest forward, or
 * the sum of each op's fastest, is systematically below a typical one),
 * the slowdown the median of paired runs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ppcc/frontend.h"
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "ppcc/predict.h"
#include "../../runtime/exec/exec.h"
#include "../../runtime/kernels/kernels.h"

#define REPEATS 10
_Static_assert(PPCC_COST_SMALL_ROWS == RT_SMALL_M, "the time model's small-GEMM rows are the runtime's");
_Static_assert(PPCC_COST_SPLIT_SMALL_WORK == RT_SPLIT_SMALL_WORK && PPCC_COST_SPLIT_TILES_WORK == RT_SPLIT_TILES_WORK &&
                   PPCC_COST_SPLIT_BATCHED_WORK == RT_SPLIT_ATTENTION_WORK,
               "the time model's kernel splits are the runtime's");

/* GFLOP/s of an M x n x n sgemm, B transposed as a linear layer's weight,
 * with `threads` kernel threads. */
static double best_gemm_gflops(int threads, int64_t m, int64_t n) {
  float *a = rt_alloc(m * n * 4), *b = rt_alloc(n * n * 4), *c = rt_alloc(m * n * 4);
  double best = 0;
  if (a && b && c) {
    for (int64_t i = 0; i < m * n; i++) a[i] = (float)(i % 7) * 0.125f;
    for (int64_t i = 0; i < n * n; i++) b[i] = (float)(i % 5) * 0.125f;
    /* placed as a run of one device places them: left to the scheduler,
     * the worker woke on the caller's core in 6 of 8 calibrations and the
     * halves took turns (7.6 GFLOP/s with 2 threads against 185) */
    rt_thread_budget(1, threads, threads > 1 ? RT_PLACE_LONE_DEVICE : RT_PLACE_ANYWHERE, threads);
    rt_device_thread_enter(0);
    ppcc_rt_sgemm(m, n, n, a, b, true, c); /* warm up: threads, pages */
    for (int r = 0; r < REPEATS * 4; r++) {
      double t = omp_get_wtime();
      ppcc_rt_sgemm(m, n, n, a, b, true, c);
      t = omp_get_wtime() - t;
      double rate = 2.0 * m * n * n / t / 1e9;
      if (rate > best) best = rate;
    }
    rt_device_thread_leave();
    /* one thread, sharing off: the shared worker sleeps now, not spinning
     * 2 ms through the next measurements' threads (the two-thread
     * elementwise rate read 47 against 115 GB/s in one calibration of 6) */
    rt_thread_budget(1, 1, RT_PLACE_ANYWHERE, threads);
  }
  rt_free(a);
  rt_free(b);
  rt_free(c);
  return best;
}

/* Per-thread GB/s with `threads` threads at once: copy, memcpy of 16 MiB;
 * else the runtime's add kernel (the interpreter's elementwise path, with
 * its indexing) over 16 Ki floats, bytes read + written. */
static double best_stream_gbps(int threads, bool copy) {
  const int64_t n = copy ? 4 << 20 : 1 << 14;
  const int calls = copy ? 1 : 16;
  const ppcc_op_info *add = ppcc_op_lookup("add");
  int ins[2] = {0, 1}, outs[1] = {2};
  ppcc_op op = {.info = add, .n_in = 2, .n_out = 1, .in = ins, .out = outs};
  double best = 0;
  bool ok = copy || add;
#pragma omp parallel num_threads(threads) reduction(&& : ok)
  {
    float *a = rt_alloc(n * 4), *b = rt_alloc(n * 4), *c = rt_alloc(n * 4);
    ok = ok && a && b && c;
    if (ok) {
      for (int64_t i = 0; i < n; i++) a[i] = b[i] = c[i] = (float)(i % 100);
    }
    ppcc_tensor in[2] = {{.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = a},
                         {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = b}};
    ppcc_tensor out = {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = c};
    ppcc_diag d;
    ppcc_diag_init(&d, NULL, NULL);
#pragma omp barrier
    for (int r = 0; r < REPEATS; r++) {
      double t = omp_get_wtime();
      for (int k = 0; ok && k < calls; k++) {
        if (copy) memcpy(c, a, (size_t)n * 4);
        else ppcc_rt_run_kernel(&op, in, &out, &d);
      }
      t = (omp_get_wtime() - t) / calls;
      double rate = (copy ? 2.0 : 3.0) * (double)n * 4 / t / 1e9;
#pragma omp barrier
#pragma omp critical
      if (omp_get_thread_num() == 0 && rate > best) best = rate;
    }
    rt_free(a);
    rt_free(b);
    rt_free(c);
  }
  return ok ? best : 0;
}

/* GFLOP/s (op-table FLOPs) of the runtime's gelu kernel over 4 Ki floats
 * in [-2, 2) (activation-sized and -valued: erff's cost depends on |x|),
 * per thread, `threads` threads at once: the arithmetic of elementwise ops. */
static double best_elementwise_gflops(int threads) {
  const ppcc_op_info *gelu = ppcc_op_lookup("gelu");
  const int64_t n = 1 << 12, calls = 64;
  if (!gelu || !gelu->flops) return 1.0;
  ppcc_value vals[2] = {{.name = "x", .kind = PPCC_VALUE_INPUT, .dtype = PPCC_F32, .rank = 1, .shape = {n}},
                        {.name = "y", .kind = PPCC_VALUE_RESULT, .dtype = PPCC_F32, .rank = 1, .shape = {n}}};
  for (int i = 0; i < 2; i++) vals[i].layout = ppcc_layout_unsharded();
  int ins[1] = {0}, outs[1] = {1};
  ppcc_op op = {.info = gelu, .n_in = 1, .n_out = 1, .in = ins, .out = outs};
  ppcc_graph g = {.name = "calibrate", .n_devices = 1, .n_values = 2, .values = vals, .n_ops = 1, .ops = &op};
  double flops = gelu->flops(&g, &op), best = 0;
  bool ok = true;
#pragma omp parallel num_threads(threads) reduction(&& : ok)
  {
    float *x = rt_alloc(n * 4), *y = rt_alloc(n * 4);
    ok = x && y;
    for (int64_t i = 0; ok && i < n; i++) x[i] = (float)(i % 1000) * 0.004f - 2;
    ppcc_tensor in = {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = x};
    ppcc_tensor out = {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = y};
    ppcc_diag d;
    ppcc_diag_init(&d, NULL, NULL);
#pragma omp barrier
    for (int r = 0; r < REPEATS; r++) {
      double t = omp_get_wtime();
      for (int k = 0; ok && k < calls; k++) ppcc_rt_run_kernel(&op, &in, &out, &d);
      t = (omp_get_wtime() - t) / calls;
#pragma omp barrier
#pragma omp critical
      if (omp_get_thread_num() == 0 && flops / t / 1e9 > best) best = flops / t / 1e9;
    }
    rt_free(x);
    rt_free(y);
  }
  return ok && best > 0 ? best : 0;
}

/* The fixed cost of one compute step as the interpreter takes it: the
 * executor runs a chain of STEPS adds of 8 floats and its busy time (the
 * --check-plan measurement) is divided by the steps; the median over
 * several forwards (overhead_us). With `gemm`, the steps are [8, 64] x
 * [64, 64] matmuls instead, and with `ping_pong` they alternate between
 * two devices, a transfer after each (the pipeline's hand-over: each step
 * then runs right after its device waited, and the wall per step less the
 * step's busy time is the hand-over). Falls back to 2 us. */
#define STEPS 256

static char *chain_model(bool ping_pong, bool gemm) {
  size_t cap = 512 + (size_t)STEPS * 200, off = 0;
  char *m = malloc(cap);
  if (!m) return NULL;
  off += (size_t)snprintf(m + off, cap - off, "{\"ppcc\": 1, \"name\": \"calibrate\", \"devices\": %d, \"params\": [",
                          ping_pong ? 2 : 1);
  for (int dev = 0; gemm && dev < (ping_pong ? 2 : 1); dev++)
    off += (size_t)snprintf(m + off, cap - off, "%s{\"name\": \"w%d\", \"dtype\": \"f32\", \"shape\": [64, 64], \"devices\": [%d]}",
                            dev ? ", " : "", dev, dev);
  off += (size_t)snprintf(m + off, cap - off,
                          "], \"inputs\": [{\"name\": \"t0\", \"dtype\": \"f32\", \"shape\": [%s], \"devices\": [0]}], \"ops\": [",
                          gemm ? "8, 64" : "8");
  for (int i = 0; i < STEPS; i++) {
    int dev = ping_pong ? i % 2 : 0;
    char second[16];
    snprintf(second, sizeof second, gemm ? "w%d" : "t%d", gemm ? dev : i);
    off += (size_t)snprintf(m + off, cap - off, "%s{\"op\": \"%s\", \"in\": [\"t%d\", \"%s\"], \"out\": [\"%c%d\"]}",
                            i ? ", " : "", gemm ? "matmul" : "add", i, second, ping_pong ? 'u' : 't', ping_pong ? i : i + 1);
    if (ping_pong)
      off += (size_t)snprintf(m + off, cap - off,
                              ", {\"op\": \"transfer\", \"in\": [\"u%d\"], \"out\": [\"t%d\"], \"attrs\": {\"devices\": [%d]}}",
                              i, i + 1, (i + 1) % 2);
  }
  snprintf(m + off, cap - off, "], \"outputs\": [\"t%d\"]}", STEPS);
  return m;
}

/* A pipeline of `devices` stages, one device each: a [8,64]x[64,64]
 * matmul and a gelu, then a transfer to the next stage (the fixed costs
 * around waits of device threads sharing a core, calibrate_waits). */
static char *start_model(int devices) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0;
  if (!(f = open_memstream(&buf, &len))) return NULL;
  fprintf(f, "{\"ppcc\": 1, \"name\": \"calibrate_start\", \"devices\": %d, \"params\": [", devices);
  for (int dev = 0; dev < devices; dev++)
    fprintf(f, "%s{\"name\": \"w%d\", \"dtype\": \"f32\", \"shape\": [64, 64], \"devices\": [%d]}", dev ? ", " : "", dev,
            dev);
  fputs("], \"inputs\": [{\"name\": \"t0\", \"dtype\": \"f32\", \"shape\": [8, 64], \"devices\": [0]}], \"ops\": [", f);
  for (int dev = 0; dev < devices; dev++) {
    fprintf(f, "%s{\"op\": \"matmul\", \"in\": [\"t%d\", \"w%d\"], \"out\": [\"h%d\"]}", dev ? ", " : "", dev, dev, dev);
    fprintf(f, ", {\"op\": \"gelu\", \"in\": [\"h%d\"], \"out\": [\"u%d\"]}", dev, dev);
    if (dev + 1 < devices)
      fprintf(f, ", {\"op\": \"transfer\", \"in\": [\"u%d\"], \"out\": [\"t%d\"], \"attrs\": {\"devices\": [%d]}}", dev,
              dev + 1, dev + 1);
  }
  fprintf(f, "], \"outputs\": [\"u%d\"]}", devices - 1);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Devices of the start_us workload: twice the cores, so that threads
 * that will wait share the first stage's core, as on the shipped models. */
static int start_devices(int cores) { return cores < 1 ? 2 : 2 * cores > 16 ? 16 : 2 * cores; }

/* `stages` (1, 2 or 4) pipeline stages of `blocks` tensor-parallel FFN
 * blocks, each stage on two devices (0-1, 2-3: a shipped TP pipeline's,
 * ppffn's; one stage: tp_ffn's; four: ppffn_sharktank's): x [8,64]
 * replicated, a [64,64] up projection split on its columns, gelu, the
 * down projection split on its rows, all_reduce; each later stage's input
 * moves there (calibrate_waits). */
static char *tp_chain_model(int blocks, int stages) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0;
  if (!(f = open_memstream(&buf, &len))) return NULL;
  fprintf(f, "{\"ppcc\": 1, \"name\": \"calibrate_tp_chain\", \"devices\": %d, \"params\": [", 2 * stages);
  for (int b = 0; b < stages * blocks; b++) {
    int dev = 2 * (b / blocks);
    fprintf(f, "%s{\"name\": \"up%d\", \"dtype\": \"f32\", \"shape\": [64, 64], \"shard\": {\"kind\": \"split\", \"dim\": 1, "
               "\"count\": 2}, \"devices\": [%d, %d]}, {\"name\": \"down%d\", \"dtype\": \"f32\", \"shape\": [64, 64], "
               "\"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}, \"devices\": [%d, %d]}",
            b ? ", " : "", b, dev, dev + 1, b, dev, dev + 1);
  }
  fputs("], \"inputs\": [{\"name\": \"x0\", \"dtype\": \"f32\", \"shape\": [8, 64], \"shard\": {\"kind\": \"replicated\", "
        "\"count\": 2}, \"devices\": [0, 1]}], \"ops\": [", f);
  for (int b = 0; b < stages * blocks; b++)
    fprintf(f, "%s{\"op\": \"matmul\", \"in\": [\"x%d\", \"up%d\"], \"out\": [\"h%d\"]}, "
               "{\"op\": \"gelu\", \"in\": [\"h%d\"], \"out\": [\"a%d\"]}, "
               "{\"op\": \"matmul\", \"in\": [\"a%d\", \"down%d\"], \"out\": [\"p%d\"]}, "
               "{\"op\": \"all_reduce\", \"in\": [\"p%d\"], \"out\": [\"x%d\"]}",
            b ? ", " : "", b, b, b, b, b, b, b, b, b, b + 1);
  fprintf(f, "], \"outputs\": [\"x%d\"]}", stages * blocks);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static bool chain_us(bool ping_pong, bool gemm, double *step_us, double *wall_us);
static void calibrate_waits(ppcc_calibration *c, const ppcc_calib_jit *jit, FILE *log);
static char *cut_model(int tokens, int h);
static double cut_bytes(const ppcc_graph *g, const ppcc_op *op);
static const int cut_sizes[][2] = {{8, 64}, {16, 64}, {8, 256}, {64, 256}};
static double overhead_us(void) {
  double add, wall;
  chain_us(false, false, &add, &wall);
  return add;
}

/* The cache of one core that keeps weights between forwards: its L2 (the
 * C library's figure, else the kernel's), 1 MiB when neither says. */
static double core_cache_bytes(void) {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return (double)l2;
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index2/size", "r");
  long kib = 0;
  char unit = 0;
  if (f && fscanf(f, "%ld%c", &kib, &unit) >= 1 && kib > 0) l2 = unit == 'M' ? kib << 20 : kib << 10;
  if (f) fclose(f);
  return l2 > 0 ? (double)l2 : 1 << 20;
}

ppcc_status ppcc_calibrate(ppcc_calibration *c, int max_threads, FILE *log, ppcc_diag *d) {
  ppcc_calibration_defaults(c);
  c->cache_bytes = core_cache_bytes();
  int cores = omp_get_num_procs();
  int n = max_threads > 0 && max_threads < cores ? max_threads : cores;
  if (n > PPCC_CALIB_MAX_THREADS) n = PPCC_CALIB_MAX_THREADS;
  c->cores = cores;
  c->n_threads = n;
  for (int t = 1; t <= n; t++) {
    c->gemm_gflops[t - 1] = best_gemm_gflops(t, 32, 256);
    c->elementwise_gbps[t - 1] = best_stream_gbps(t, false);
    c->copy_gbps[t - 1] = best_stream_gbps(t, true);
    c->elementwise_gflops[t - 1] = best_elementwise_gflops(t);
    if (c->gemm_gflops[t - 1] <= 0 || c->elementwise_gbps[t - 1] <= 0 || c->copy_gbps[t - 1] <= 0 ||
        c->elementwise_gflops[t - 1] <= 0)
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory measuring the machine");
    if (log)
      fprintf(log,
              "threads %d: gemm %.2f GFLOP/s, per thread: elementwise %.2f GB/s and %.2f GFLOP/s (gelu), copy %.2f GB/s\n",
              t, c->gemm_gflops[t - 1], c->elementwise_gbps[t - 1], c->elementwise_gflops[t - 1], c->copy_gbps[t - 1]);
  }
  c->op_overhead_us = overhead_us();
  /* an 8x32x32 GEMM's time beyond its FLOPs at the measured rate */
  double small = best_gemm_gflops(1, 8, 32), flops = 2.0 * 8 * 32 * 32;
  c->gemm_call_us = small > 0 ? (flops / (small * 1e9) - flops / (c->gemm_gflops[0] * 1e9)) * 1e6 : 2.0;
  if (c->gemm_call_us < 0) c->gemm_call_us = 0;
  if (log)
    fprintf(log, "compute step overhead %.3f us, GEMM call %.3f us more (%d cores, %.0f KiB of cache each)\n",
            c->op_overhead_us, c->gemm_call_us, cores, c->cache_bytes / 1024);
  c->calibrated = true;
  return PPCC_OK;
}

/* ---------------- per-op costs (op_costs) ----------------
 * The time model's blind spots are the interpreter's own: rotary computes
 * sin/cos per element in double, silu and gelu call expf/erff, attention
 * is many small per-head GEMMs plus a softmax, each linear reads a weight
 * that the previous linears pushed out of cache. So each op kind's cost
 * is measured where it runs: workload models (the driver's generated
 * Llamas, and the FFN blocks below) on one device with one kernel thread
 * through the interpreter executor, every op's compute span recorded
 * (ppcc_plan_measure.op_busy_ms, the median of several forwards after a
 * warm-up, as --check-plan measures). Per op
 * kind, the samples (FLOPs, bytes, microseconds) are fitted by
 * call_us + ns_per_flop * FLOPs + ns_per_byte * bytes + ns_per_weight_byte
 * * weight bytes + ns_per_cold_weight_byte * cold weight bytes (params:
 * each read once per forward, from farther away than the activations just
 * written; cold: the share ppcc_predict_cold_share puts beyond the caches
 * of the cores that ran them, the params of both models run in turn),
 * least relative squared error over the non-negative fits of every subset
 * of the five terms (FLOPs and bytes of an elementwise op are
 * proportional: one of them carries it). */

typedef struct op_sample {
  double calls;   /* op calls the sample sums (1 for one op's span) */
  double f, b, w; /* FLOPs, bytes, weight bytes the caches hold */
  double cw;      /* weight bytes from beyond the caches (ppcc_predict_cold_share) */
  double t;       /* us */
} op_sample;

typedef struct op_samples {
  char name[32];
  int n, cap;
  op_sample *at;
} op_samples;

typedef struct sample_set {
  op_samples *ops;
  int n, cap;
} sample_set;

static op_samples *samples_for(sample_set *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->ops[i].name, name) == 0) return &s->ops[i];
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    op_samples *ops = realloc(s->ops, sizeof *ops * (size_t)cap);
    if (!ops) return NULL;
    s->ops = ops, s->cap = cap;
  }
  op_samples *o = &s->ops[s->n++];
  memset(o, 0, sizeof *o);
  snprintf(o->name, sizeof o->name, "%s", name);
  return o;
}

static bool push_sample(op_samples *o, op_sample x) {
  if (o->n == o->cap) {
    int cap = o->cap ? 2 * o->cap : 16;
    op_sample *at = realloc(o->at, sizeof *at * (size_t)cap);
    if (!at) return false;
    o->at = at, o->cap = cap;
  }
  o->at[o->n++] = x;
  return true;
}

static bool add_sample_of(op_samples *o, double calls, double f, double b, double w, double cold, double t) {
  return push_sample(o, (op_sample){.calls = calls, .f = f, .b = b, .w = w * (1 - cold), .cw = w * cold, .t = t});
}

static bool add_sample(op_samples *o, double f, double b, double w, double cold, double t) {
  return add_sample_of(o, 1, f, b, w, cold, t);
}

static void samples_free(sample_set *s) {
  for (int i = 0; i < s->n; i++) free(s->ops[i].at);
  free(s->ops);
}

#define OP_PASSES 5 /* over all workloads; each sample's median counts (merge_passes) */

/* The same workloads sampled in n <= OP_PASSES passes (the same ops in
 * the same order each time): into out, each sample with its median time
 * over the passes.
 * One pass's samples of a workload come from a fraction of a second, and
 * the machine's speed drifts over seconds (the one-token linears of a
 * calibration read their weights at 0.019 or at 0.027 ns a byte, as the
 * few seconds of that workload fell); the passes spread them out. */
static bool merge_passes(const sample_set *passes, int n, sample_set *out) {
  for (int k = 0; k < passes[0].n; k++) {
    const op_samples *first = &passes[0].ops[k];
    op_samples *o = samples_for(out, first->name);
    if (!o) return false;
    for (int i = 0; i < first->n; i++) {
      double t[OP_PASSES];
      int m = 0;
      for (int p = 0; p < n && p < OP_PASSES; p++) /* a pass that differs (it cannot: same texts) is left out */
        if (k < passes[p].n && strcmp(passes[p].ops[k].name, first->name) == 0 && passes[p].ops[k].n == first->n)
          t[m++] = passes[p].ops[k].at[i].t;
      op_sample x = first->at[i];
      x.t = rt_median(t, m);
      if (!push_sample(o, x)) return false;
    }
  }
  return true;
}

/* Solves the k x k system a x = y (k <= TERMS) by Gaussian elimination
 * with partial pivoting; false when (nearly) singular. */
#define TERMS 5
static bool solve(int k, double a[TERMS][TERMS], double y[TERMS], double x[TERMS]) {
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
    if (fabs(a[piv][c]) < 1e-12 * (fabs(a[c][c]) + 1e-300) || a[piv][c] == 0) return false;
    for (int j = 0; j < k; j++) {
      double tmp = a[c][j];
      a[c][j] = a[piv][j], a[piv][j] = tmp;
    }
    double tmp = y[c];
    y[c] = y[piv], y[piv] = tmp;
    for (int r = c + 1; r < k; r++) {
      double f = a[r][c] / a[c][c];
      for (int j = c; j < k; j++) a[r][j] -= f * a[c][j];
      y[r] -= f * y[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    double v = y[c];
    for (int j = c + 1; j < k; j++) v -= a[c][j] * x[j];
    x[c] = v / a[c][c];
    if (!isfinite(x[c])) return false;
  }
  return true;
}

/* Term c of sample i: calls, FLOPs, bytes, weight bytes in cache, and beyond. */
static double term(const op_samples *o, int c, int i) {
  const op_sample *x = &o->at[i];
  return c == 0 ? x->calls : c == 1 ? x->f : c == 2 ? x->b : c == 3 ? x->w : x->cw;
}

/* The fit of one op kind (see above); false without samples. */
static bool fit_op(const op_samples *o, ppcc_op_cost *out) {
  double best_err = INFINITY;
  bool any_cold = false;
  for (int i = 0; i < o->n; i++) any_cold = any_cold || o->at[i].cw > 0;
  for (int mask = 1; mask < 1 << TERMS; mask++) {
    int cols[TERMS], k = 0;
    for (int c = 0; c < TERMS; c++)
      if (mask >> c & 1) cols[k++] = c;
    /* relative residuals: each row scaled by 1 / t; columns scaled to ~1 */
    double scale[TERMS] = {1, 1, 1, 1, 1};
    for (int c = 0; c < k; c++) {
      double mx = 0;
      for (int i = 0; i < o->n; i++)
        if (term(o, cols[c], i) / o->at[i].t > mx) mx = term(o, cols[c], i) / o->at[i].t;
      scale[c] = mx > 0 ? 1 / mx : 0;
    }
    double a[TERMS][TERMS] = {{0}}, y[TERMS] = {0}, x[TERMS] = {0};
    for (int i = 0; i < o->n; i++) {
      double row[TERMS];
      for (int c = 0; c < k; c++) row[c] = term(o, cols[c], i) * scale[c] / o->at[i].t;
      for (int r = 0; r < k; r++) {
        for (int c = 0; c < k; c++) a[r][c] += row[r] * row[c];
        y[r] += row[r];
      }
    }
    if (!solve(k, a, y, x)) continue;
    double coef[TERMS] = {0, 0, 0, 0, 0};
    bool nonneg = true;
    for (int c = 0; c < k; c++) {
      coef[cols[c]] = x[c] * scale[c];
      nonneg = nonneg && coef[cols[c]] >= 0;
    }
    /* where the samples read weights from both near and far, a byte from
     * far never costs less than one from near: in workloads whose cold
     * share is one fraction the two columns are proportional, and a fit
     * putting the whole cost on the cached bytes would charge it to every
     * weight byte of a model that fits in the caches */
    if (!nonneg || (any_cold && coef[3] > coef[4])) continue;
    double err = 0;
    for (int i = 0; i < o->n; i++) {
      double fitted = 0;
      for (int c = 0; c < TERMS; c++) fitted += coef[c] * term(o, c, i);
      double e = fitted / o->at[i].t - 1;
      err += e * e;
    }
    if (err < best_err * (1 - 1e-9)) { /* fewer terms win ties */
      best_err = err;
      out->call_us = coef[0], out->ns_per_flop = coef[1] * 1e3, out->ns_per_byte = coef[2] * 1e3;
      out->ns_per_weight_byte = coef[3] * 1e3;
      out->ns_per_cold_weight_byte = coef[4] * 1e3;
    }
  }
  /* no sample read weights from beyond the caches, or the fit found them
   * cheaper than cached ones (they never are): the cached bytes' cost */
  if (out->ns_per_cold_weight_byte < out->ns_per_weight_byte) out->ns_per_cold_weight_byte = out->ns_per_weight_byte;
  snprintf(out->name, sizeof out->name, "%s", o->name);
  return isfinite(best_err);
}

bool ppcc_calibrate_fit_op_cost(const char *name, const ppcc_op_sample *samples, int n, ppcc_op_cost *out) {
  op_samples o = {0};
  snprintf(o.name, sizeof o.name, "%s", name);
  bool ok = n > 0;
  for (int i = 0; ok && i < n; i++) {
    const ppcc_op_sample *x = &samples[i];
    double w = x->weight_bytes + x->cold_weight_bytes, cold = w > 0 ? x->cold_weight_bytes / w : 0;
    ok = x->us > 0 && add_sample(&o, x->flops, x->bytes, w, cold, x->us);
  }
  *out = (ppcc_op_cost){0};
  ok = ok && fit_op(&o, out);
  free(o.at);
  return ok;
}

#define OP_FORWARDS 8

/* Warm-ups before measuring (the log says how many forwards each took). */
typedef struct warm_stats {
  int n;      /* workloads (or pairs) warmed up */
  int lo, hi; /* fewest and most forwards of one warm-up */
} warm_stats;

static void warm_note(warm_stats *w, int forwards) {
  if (!w) return;
  if (!w->n || forwards < w->lo) w->lo = forwards;
  if (!w->n || forwards > w->hi) w->hi = forwards;
  w->n++;
}

static void warm_log(FILE *log, const char *what, const warm_stats *w) {
  if (log && w->n)
    fprintf(log, "%s: %d, each measured after %d ms of unmeasured forwards (%d to %d), the steady state --check-plan measures\n",
            what, w->n, PPCC_CHECK_PLAN_WARMUP_MS, w->lo, w->hi);
}

/* One workload model loaded, placed and measured as --check-plan does:
 * per device busy (ms) and, when op_ms is wanted, every op's busy time. */
typedef struct workload {
  ppcc_graph *g;
  ppcc_run_data data;
  bool loaded;
  int *stage;
  int64_t *peak;
  double *busy, *op_ms;
  ppcc_host_tensor *out;
  ppcc_plan_measure m;
} workload;

static void workload_close(workload *w) {
  ppcc_plan_measure_release(&w->m);
  free(w->out);
  free(w->stage);
  free(w->op_ms);
  free(w->peak);
  free(w->busy);
  if (w->loaded) ppcc_run_data_free(&w->data);
  ppcc_graph_free(w->g);
}

static ppcc_status workload_open(workload *w, const char *text, bool per_op, ppcc_diag *d) {
  memset(w, 0, sizeof *w);
  w->g = ppcc_load_model_string(text, strlen(text), d);
  if (!w->g) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "calibration workload does not load");
  const ppcc_graph *g = w->g;
  ppcc_status st = ppcc_run_passes(w->g, NULL, NULL, d);
  ppcc_run_options ro = {.have_random_seed = true, .random_seed = 1};
  w->loaded = !st && !(st = ppcc_run_data_load(g, &ro, &w->data, d));
  w->stage = calloc((size_t)g->n_ops + 1, sizeof *w->stage);
  w->op_ms = per_op ? calloc((size_t)g->n_ops + 1, sizeof *w->op_ms) : NULL;
  w->peak = calloc((size_t)g->n_devices + 1, sizeof *w->peak);
  w->busy = calloc((size_t)g->n_devices + 1, sizeof *w->busy);
  w->out = calloc((size_t)g->n_outputs + 1, sizeof *w->out);
  w->m = (ppcc_plan_measure){.op_stage = w->stage, .n_stages = 1, .peak_bytes = w->peak, .stage_busy_ms = w->busy,
                             .op_busy_ms = w->op_ms, .n_ops = g->n_ops};
  if (!st && !(w->stage && (w->op_ms || !per_op) && w->peak && w->busy && w->out))
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  return st;
}

/* One forward with `threads` threads for the workload's devices (on one
 * device: its kernel threads, rt_thread_budget). */
static ppcc_status workload_forward_on(workload *w, int threads, ppcc_diag *d) {
  ppcc_exec_options eo = {.threads = threads, .measure = &w->m};
  ppcc_status st = ppcc_execute(w->g, &w->data, &eo, w->out, NULL, d);
  for (int k = 0; k < w->g->n_outputs; k++) ppcc_host_tensor_free(&w->out[k]);
  return st;
}

/* One forward on the workload's devices (one kernel thread each). */
static ppcc_status workload_forward(workload *w, ppcc_diag *d) {
  return workload_forward_on(w, w->g->n_devices, d);
}

/* Forwards with `threads` threads for PPCC_CHECK_PLAN_WARMUP_MS, then
 * none of them counted, as --check-plan warms up before it measures
 * (any_warm_up: either backend). */
static bool workload_warm_up(workload *w, int threads, ppcc_diag *d) {
  double t0 = omp_get_wtime();
  bool ok;
  do ok = !workload_forward_on(w, threads, d) && w->m.filled;
  while (ok && (omp_get_wtime() - t0) * 1e3 < PPCC_CHECK_PLAN_WARMUP_MS);
  w->m.forwards = 0;
  return ok;
}

/* Per step of the chain: the step's busy time (both devices) and the
 * wall, in us; the median of 2 * REPEATS warm forwards. */
static bool chain_us(bool ping_pong, bool gemm, double *step_us, double *wall_us) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  char *text = chain_model(ping_pong, gemm);
  workload w = {0};
  bool ok = text && !workload_open(&w, text, false, &d);
  free(text);
  for (int r = 0; ok && r <= REPEATS * 2; r++) ok = !workload_forward(&w, &d) && w.m.filled;
  if (ok) {
    ppcc_plan_measure_summarize(&w.m);
    *step_us = (w.busy[0] + (w.g->n_devices > 1 ? w.busy[1] : 0)) * 1e3 / STEPS;
    *wall_us = w.m.wall_ms * 1e3 / STEPS;
  } else {
    *step_us = *wall_us = 2.0;
  }
  workload_close(&w);
  return ok;
}

/* Adds every compute op's (FLOPs, bytes, us) of an opened and measured
 * workload to the samples s; with more than one kernel thread, but the
 * first op split across them (its time has their wake, pool_wake_us). */
static ppcc_status add_samples(const workload *w, sample_set *s, double cold, int threads, ppcc_diag *d) {
  const ppcc_graph *g = w->g;
  /* the forward's first split kernel woke the parked threads: no sample
   * (the wake varies, from a few us on a busy machine to tens on an idle
   * one: taking pool_wake_us off left it at up to twice the op's cost) */
  bool parked = threads > 1;
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1) continue;
    double f, b, wb;
    ppcc_predict_op_work(g, op, &f, &b, &wb);
    char key[48];
    ppcc_op_cost_key(g, op, key, sizeof key); /* a GEMM of few rows: its kernel's own samples */
    op_samples *o = samples_for(s, key);
    int shards = op->n_devices > 0 ? op->n_devices : 1; /* the span sum covers every shard */
    if (parked && ppcc_predict_op_splits(g, op, threads)) {
      parked = false;
      continue;
    }
    if (!o || !add_sample(o, f, b, wb, cold, w->op_ms[j] * 1e3 / shards))
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  return PPCC_OK;
}

/* A forward of `one` with one kernel thread, then (both) of `more` with
 * `many`: sample_workload's warm-up and measured forwards alike. */
static ppcc_status forward_pair(workload *one, workload *more, bool both, int many, ppcc_diag *d) {
  ppcc_status st = workload_forward_on(one, 1, d);
  rt_pool_park(); /* its kernel threads wake in every forward, alike (add_samples leaves it out) */
  if (!st && both) st = workload_forward_on(more, many, d);
  return st;
}

/* Runs one workload model on its device with one kernel thread, and (when
 * many > 1 and s_many) with `many` threads, a forward of each in turn (the
 * machine's load changes), after a warm-up (counted in warm), and adds
 * every op's median time to s_one and s_many. Both read their weights in
 * turn: the caches of one core (`many` cores) of cache_bytes hold a part
 * of both models' params. */
static ppcc_status sample_workload(const char *text, sample_set *s_one, int many, sample_set *s_many,
                                   double cache_bytes, warm_stats *warm, ppcc_diag *d) {
  bool both = many > 1 && s_many;
  workload one, more;
  memset(&more, 0, sizeof more);
  ppcc_status st = workload_open(&one, text, true, d);
  if (!st && both) st = workload_open(&more, text, true, d);
  /* the steady state, as --check-plan measures it after its warm-up: in
   * the first forwards after loading, a one-token linear read its weights
   * at 0.025-0.047 ns a byte, 0.017-0.020 once warm (the same model under
   * `ppcc run --check-plan`: 0.017), which put decode stages at +50 % */
  double t0 = omp_get_wtime();
  int n_warm = 0;
  for (; !st && (omp_get_wtime() - t0) * 1e3 < PPCC_CHECK_PLAN_WARMUP_MS; n_warm++)
    st = forward_pair(&one, &more, both, many, d);
  if (!st) warm_note(warm, n_warm);
  one.m.forwards = 0;
  more.m.forwards = 0;
  for (int r = 0; !st && r <= OP_FORWARDS; r++) st = forward_pair(&one, &more, both, many, d);
  if (!st && (!one.m.filled || (both && !more.m.filled)))
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "calibration workload recorded no spans");
  if (!st) ppcc_plan_measure_summarize(&one.m);
  if (!st && both) ppcc_plan_measure_summarize(&more.m);
  double params = st ? 0 : ppcc_predict_param_bytes(one.g) * (both ? 2 : 1);
  if (!st) st = add_samples(&one, s_one, ppcc_predict_cold_share(params, cache_bytes), 1, d);
  if (!st && both) st = add_samples(&more, s_many, ppcc_predict_cold_share(params, cache_bytes * many), many, d);
  workload_close(&one);
  workload_close(&more);
  return st;
}

/* The slowest device's compute time of two workload models, in us, as
 * `ppcc run --check-plan` measures a stage by default (each device's
 * median of its warm forwards after a cold one), their forwards taken in
 * turn: the machine's speed drifts over seconds, and a ratio of the two
 * must not compare one phase with another. */
static double slowest_us(workload *w) {
  ppcc_plan_measure_summarize(&w->m);
  double us = 0;
  for (int dev = 0; dev < w->g->n_devices; dev++)
    if (w->busy[dev] * 1e3 > us) us = w->busy[dev] * 1e3;
  return us;
}

static ppcc_status paired_busy_us(const char *text_a, const char *text_b, double *a_us, double *b_us, ppcc_diag *d) {
  workload a, b;
  memset(&b, 0, sizeof b);
  ppcc_status st = workload_open(&a, text_a, false, d);
  if (!st) st = workload_open(&b, text_b, false, d);
  for (int r = 0; !st && r <= PPCC_CHECK_PLAN_FORWARDS; r++) {
    st = workload_forward(&a, d);
    if (!st) st = workload_forward(&b, d);
  }
  *a_us = st ? 0 : slowest_us(&a);
  *b_us = st ? 0 : slowest_us(&b);
  workload_close(&a);
  workload_close(&b);
  return st;
}

/* FFN blocks of `tokens` rows (hidden h, ffn ff, distinct weights):
 * matmul, gelu, matmul, add, layer_norm, softmax, then relu, mul, sub. */
static char *ffn_model(int tokens, int h, int ff, int copies, int blocks) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0;
  if (!(f = open_memstream(&buf, &len))) return NULL;
  fprintf(f, "{\"ppcc\": 1, \"name\": \"calibrate_ffn\", \"devices\": %d, \"params\": [", copies);
  for (int c = 0; c < copies; c++)
    for (int b = 0; b < blocks; b++)
      fprintf(f, "%s{\"name\": \"c%d_up%d\", \"dtype\": \"f32\", \"shape\": [%d, %d], \"devices\": [%d]}, "
                 "{\"name\": \"c%d_down%d\", \"dtype\": \"f32\", \"shape\": [%d, %d], \"devices\": [%d]}, "
                 "{\"name\": \"c%d_ln%d\", \"dtype\": \"f32\", \"shape\": [%d], \"devices\": [%d]}",
              b || c ? ", " : "", c, b, h, ff, c, c, b, ff, h, c, c, b, h, c);
  fputs("], \"inputs\": [", f);
  for (int c = 0; c < copies; c++)
    fprintf(f, "%s{\"name\": \"c%d_x0\", \"dtype\": \"f32\", \"shape\": [%d, %d], \"devices\": [%d]}", c ? ", " : "", c,
            tokens, h, c);
  fputs("], \"ops\": [", f);
  for (int c = 0; c < copies; c++)
    for (int b = 0; b < blocks; b++) {
      fprintf(f, "%s{\"op\": \"matmul\", \"in\": [\"c%d_x%d\", \"c%d_up%d\"], \"out\": [\"c%d_h%d\"]}, ", b || c ? ", " : "",
              c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"gelu\", \"in\": [\"c%d_h%d\"], \"out\": [\"c%d_a%d\"]}, ", c, b, c, b);
      fprintf(f, "{\"op\": \"relu\", \"in\": [\"c%d_a%d\"], \"out\": [\"c%d_r%d\"]}, ", c, b, c, b);
      fprintf(f, "{\"op\": \"mul\", \"in\": [\"c%d_r%d\", \"c%d_h%d\"], \"out\": [\"c%d_g%d\"]}, ", c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"matmul\", \"in\": [\"c%d_g%d\", \"c%d_down%d\"], \"out\": [\"c%d_o%d\"]}, ", c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"add\", \"in\": [\"c%d_o%d\", \"c%d_x%d\"], \"out\": [\"c%d_s%d\"]}, ", c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"sub\", \"in\": [\"c%d_s%d\", \"c%d_o%d\"], \"out\": [\"c%d_u%d\"]}, ", c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"layer_norm\", \"in\": [\"c%d_u%d\", \"c%d_ln%d\"], \"out\": [\"c%d_n%d\"]}, ", c, b, c, b, c, b);
      fprintf(f, "{\"op\": \"softmax\", \"in\": [\"c%d_n%d\"], \"out\": [\"c%d_x%d\"]}", c, b, c, b + 1);
    }
  fputs("], \"outputs\": [", f);
  for (int c = 0; c < copies; c++) fprintf(f, "%s\"c%d_x%d\"", c ? ", " : "", c, blocks);
  fputs("]}", f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* How a device's compute time changes while t devices compute at once
 * (ppcc_calibration.concurrent_slowdown): FFN
 * workloads on t devices, each its own copy with no communication,
 * against one copy alone, in pairs (alone, together, alone, together: the
 * machine may be shared and its load changes). The slowest copy's
 * compute time together (paired_busy_us: what --check-plan measures)
 * against alone: the slowdown is the median ratio over the pairs and
 * sizes (at least 1). */
#define PAIRS 9
static ppcc_status concurrency(ppcc_calibration *c, FILE *log, ppcc_diag *d) {
  static const int sizes[][4] = {{8, 256, 1024, 3}, {32, 128, 512, 3}, {2, 64, 128, 3},
                                 {8, 64, 128, 3},   {8, 64, 128, 1},   {2, 64, 128, 1}};
  enum { N = sizeof sizes / sizeof *sizes };
  int most = c->cores < PPCC_CALIB_MAX_THREADS ? c->cores : PPCC_CALIB_MAX_THREADS;
  if (most > c->n_threads) most = c->n_threads; /* --threads N: at most N at once */
  c->n_slowdown = 1;
  c->concurrent_slowdown[0] = 1;
  ppcc_status st = PPCC_OK;
  for (int t = 2; t <= most && !st; t++) {
    double ratio[N * PAIRS];
    int n = 0;
    for (int i = 0; i < N && !st; i++) {
      char *a = ffn_model(sizes[i][0], sizes[i][1], sizes[i][2], 1, sizes[i][3]);
      char *b = ffn_model(sizes[i][0], sizes[i][1], sizes[i][2], t, sizes[i][3]);
      if (!a || !b) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
      for (int r = 0; r < PAIRS && !st; r++) {
        double x = 0, y = 0; /* alone, together */
        st = paired_busy_us(a, b, &x, &y, d);
        if (st || x <= 0 || y <= 0) continue;
        ratio[n++] = y / x;
      }
      free(a);
      free(b);
    }
    rt_sort_doubles(ratio, n); /* the median: one preempted run must not count */
    c->concurrent_slowdown[t - 1] = n && ratio[n / 2] > 1 ? ratio[n / 2] : 1;
    c->n_slowdown = t;
    if (log && !st) fprintf(log, "%d devices computing at once: each %.3fx as slow\n", t, c->concurrent_slowdown[t - 1]);
  }
  return st;
}

/* operand_cut: the interpreter's row-parallel matmul of cut_model on its
 * two devices, each shard's span less the matmul's own cost (op_costs,
 * its kernel's), fitted over the sizes as an op's. The spans are the
 * median over CUT_COPIES copies of the matmul that follow the model's own
 * (with_copies: weights of their own), after a warm-up, as --check-plan
 * measures: the model's own matmul is its forward's first op, which also
 * pays the start (start_spread_us ..., measured apart). Measured on 2
 * cores, when the first op was the sample: a call cost of 0.17 to 1.52 us
 * between calibrations, 2 of them per stage of ppffn_sharktank. */
#define CUT_COPIES 3
static char *with_copies(const char *text, const char *key, int copies);
static void first_op_key(const char *text, char key[48]);
static void calibrate_interp_cut(ppcc_calibration *c, FILE *log) {
  ppcc_diag q; /* optional: without it no operand_cut */
  ppcc_diag_init(&q, NULL, NULL);
  op_samples o = {.name = "cut"};
  for (int i = 0; i < (int)(sizeof cut_sizes / sizeof *cut_sizes); i++) {
    char *base = cut_model(cut_sizes[i][0], cut_sizes[i][1]), key[48] = "";
    first_op_key(base, key);
    char *text = key[0] ? with_copies(base, key, CUT_COPIES) : NULL;
    workload w = {0};
    bool ok = text && !workload_open(&w, text, true, &q) && workload_warm_up(&w, w.g->n_devices, &q);
    for (int r = 0; ok && r <= REPEATS * 2; r++) ok = !workload_forward(&w, &q) && w.m.filled;
    double span[CUT_COPIES];
    int n = 0;
    const ppcc_op *op = NULL;
    if (ok) {
      ppcc_plan_measure_summarize(&w.m);
      char op_key[48];
      for (int j = 0; j < w.g->n_ops && n < CUT_COPIES; j++) {
        ppcc_op_cost_key(w.g, &w.g->ops[j], op_key, sizeof op_key);
        if (strcmp(op_key, key) != 0) continue;
        if (op) span[n++] = w.op_ms[j]; /* a copy: not the forward's first op */
        else op = &w.g->ops[j];
      }
    }
    if (n == CUT_COPIES) {
      const ppcc_op_cost *mm = ppcc_calibration_op_cost(c, key);
      if (!mm) mm = ppcc_calibration_op_cost(c, "matmul");
      double f, b, wb, shards = op->n_devices > 0 ? op->n_devices : 1;
      ppcc_predict_op_work(w.g, op, &f, &b, &wb);
      double own = mm ? ppcc_op_cost_us(mm, f, b, wb, 0) : 0;
      double t = rt_median(span, n) * 1e3 / shards - own, bytes = cut_bytes(w.g, op);
      if (mm && t > 0 && bytes > 0) add_sample_of(&o, 1, 0, bytes, 0, 0, t);
    }
    workload_close(&w);
    free(text);
    free(base);
  }
  ppcc_op_cost k = {0};
  if (o.n > 0 && fit_op(&o, &k)) {
    c->cut = k;
    c->have_cut = true;
    if (log) fprintf(log, "cut of a replicated operand %d samples: %.3f us + %.4f ns/byte\n", o.n, k.call_us, k.ns_per_byte);
  }
  free(o.at);
}

/* pool_wake_us: in each of two lanes, two devices hand a [32, 256]
 * activation to each other WAKE_HOPS times, each running linears of
 * [256, 256] weights on it (each split across its kernel threads,
 * gemm_tiles.c) before the next transfer: two, then WAKE_FILL more, so
 * that the other device's threads sleep about as long as a pipeline
 * stage's do while the others compute (a short sleep is a faster wake: 25
 * us against 35 in a 4-stage Llama). The lanes compute at once, as the
 * runs that pay the wake do: devices taking turns share one pool that no
 * wait parks (thread_pool.c); with too few cores for two devices of
 * several kernel threads each no run pays one, and it is 0. While a
 * device waits its kernel threads park, so its first linear after the
 * wait wakes them and the second finds them awake: the median over the
 * hops of the first's span less the second's, with the run's kernel
 * threads (calibrate_waits, later, fits resume_us to what the model
 * still misses after a wait, this included). */
#define WAKE_HOPS 8
#define WAKE_FILL 24
#define WAKE_LANES 2
static char *wake_model(void) {
  FILE *f;
  char *buf = NULL;
  size_t len = 0;
  if (!(f = open_memstream(&buf, &len))) return NULL;
  fprintf(f, "{\"ppcc\": 1, \"name\": \"calibrate_wake\", \"devices\": %d, \"params\": [", 2 * WAKE_LANES);
  for (int i = 0; i < 4 * WAKE_LANES; i++)
    fprintf(f, "%s{\"name\": \"w%d\", \"dtype\": \"f32\", \"shape\": [256, 256], \"devices\": [%d]}", i ? ", " : "", i,
            i / 2);
  fputs("], \"inputs\": [", f);
  for (int l = 0; l < WAKE_LANES; l++)
    fprintf(f, "%s{\"name\": \"x%d_0\", \"dtype\": \"f32\", \"shape\": [32, 256], \"devices\": [%d]}", l ? ", " : "", l,
            2 * l);
  fputs("], \"ops\": [", f);
  for (int i = 0; i < WAKE_HOPS; i++)
    for (int l = 0; l < WAKE_LANES; l++) {
      int dev = 2 * l + i % 2;
      fprintf(f, "%s{\"op\": \"linear\", \"in\": [\"x%d_%d\", \"w%d\"], \"out\": [\"h%d_%d_0\"]}", i || l ? ", " : "", l, i,
              2 * dev, l, i);
      for (int k = 1; k < 2 + WAKE_FILL; k++)
        fprintf(f, ", {\"op\": \"linear\", \"in\": [\"h%d_%d_%d\", \"w%d\"], \"out\": [\"h%d_%d_%d\"]}", l, i, k - 1,
                2 * dev + 1, l, i, k);
      fprintf(f, ", {\"op\": \"transfer\", \"in\": [\"h%d_%d_%d\"], \"out\": [\"x%d_%d\"], \"attrs\": {\"devices\": [%d]}}",
              l, i, 1 + WAKE_FILL, l, i + 1, 2 * l + 1 - i % 2);
    }
  fputs("], \"outputs\": [", f);
  for (int l = 0; l < WAKE_LANES; l++) fprintf(f, "%s\"x%d_%d\"", l ? ", " : "", l, WAKE_HOPS);
  fputs("]}", f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static void calibrate_pool_wake(ppcc_calibration *c, FILE *log) {
  ppcc_diag q; /* optional: without it pool_wake_us stays 0 */
  ppcc_diag_init(&q, NULL, NULL);
  if (ppcc_kernel_threads_per_device(c->n_threads, WAKE_LANES) < 2) { /* no run splits where a device waits: none paid */
    c->pool_wake_us = 0;
    if (log)
      fprintf(log, "a split kernel after its device waited: none on %d cores (devices taking turns share awake workers)\n",
              c->n_threads);
    return;
  }
  char *text = wake_model();
  workload w = {0};
  bool ok = text && !workload_open(&w, text, true, &q);
  free(text);
  for (int r = 0; ok && r <= REPEATS * 4; r++) ok = !workload_forward_on(&w, c->n_threads, &q) && w.m.filled;
  double diff[WAKE_HOPS * WAKE_LANES];
  int n = 0;
  if (ok) {
    ppcc_plan_measure_summarize(&w.m);
    for (int j = 0; j + 1 < w.g->n_ops; j++) { /* a linear right after a transfer, and the next */
      const ppcc_op *op = &w.g->ops[j], *next = &w.g->ops[j + 1];
      bool first = j == 0 || w.g->ops[j - 1].info->family != PPCC_FAMILY_COMPUTE;
      if (first && op->info->family == PPCC_FAMILY_COMPUTE && next->info->family == PPCC_FAMILY_COMPUTE &&
          n < WAKE_HOPS * WAKE_LANES)
        diff[n++] = (w.op_ms[j] - w.op_ms[j + 1]) * 1e3;
    }
  }
  workload_close(&w);
  if (!n) return;
  double wake = rt_median(diff, n);
  c->pool_wake_us = wake > 0 ? wake : 0;
  if (log) fprintf(log, "a split kernel after its device waited (its kernel threads woken): %.3f us more\n", c->pool_wake_us);
}

ppcc_status ppcc_calibrate_ops(ppcc_calibration *c, const char *const *workloads, int n_workloads, FILE *log,
                               ppcc_diag *d) {
  sample_set s = {0};
  ppcc_status st = PPCC_OK;
  /* as ppcc_run: a linear of 64 tokens' result is 128 KiB; mapped afresh
   * each forward, it cost more here than in a run */
  rt_keep_freed_memory();
  double step, wall;
  if (chain_us(true, true, &step, &wall)) {
    c->hop_us = wall > step ? wall - step : 0;
    if (log) fprintf(log, "a hand-over between devices: %.3f us\n", c->hop_us);
  }
  static const int ffn[][3] = {{2, 256, 1024}, {8, 256, 1024}, {32, 256, 1024}, {64, 256, 1024}, {4, 128, 512},
                               {32, 128, 512}, {16, 512, 1024}, {8, 64, 128},   {2, 64, 128},    {1, 256, 1024},
                               {1, 64, 128},   {16, 64, 128}};
  enum { N_FFN = sizeof ffn / sizeof *ffn };
  int n_texts = N_FFN + n_workloads;
  const char **texts = calloc((size_t)n_texts, sizeof *texts);
  char *ffn_texts[N_FFN] = {0};
  if (!texts) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; !st && i < N_FFN; i++)
    if (!(texts[i] = ffn_texts[i] = ffn_model(ffn[i][0], ffn[i][1], ffn[i][2], 1, 3)))
      st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; !st && i < n_workloads; i++) texts[N_FFN + i] = workloads[i];
  /* with the most threads too: a linear of 32 rows gains far less from
   * a second thread than the hot sgemm loop of gemm_gflops suggests */
  sample_set many = {0};
  if (!st && c->n_threads > 1) calibrate_pool_wake(c, log);
  warm_stats warm = {0};
  sample_set pass_one[OP_PASSES] = {0}, pass_many[OP_PASSES] = {0};
  double t0 = omp_get_wtime();
  for (int p = 0; p < OP_PASSES; p++)
    for (int i = 0; !st && i < n_texts; i++)
      st = sample_workload(texts[i], &pass_one[p], c->n_threads, &pass_many[p], c->cache_bytes, &warm, d);
  if (!st && !(merge_passes(pass_one, OP_PASSES, &s) && merge_passes(pass_many, OP_PASSES, &many)))
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int p = 0; p < OP_PASSES; p++) samples_free(&pass_one[p]), samples_free(&pass_many[p]);
  warm_log(log, "per-op workloads", &warm);
  if (log && !st)
    fprintf(log, "per-op samples: the median of %d passes over the workloads (%.1f s)\n", OP_PASSES, omp_get_wtime() - t0);
  if (!st) st = concurrency(c, log, d);
  for (int i = 0; !st && i < s.n; i++) {
    ppcc_op_cost k = {0};
    if (!fit_op(&s.ops[i], &k)) continue;
    if (!ppcc_calibration_set_op_cost(c, &k)) break; /* the table is full: the rest use the roofline */
    if (log)
      fprintf(log, "op %-12s %3d samples: %.3f us + %.4f ns/FLOP + %.4f ns/byte + %.4f ns/weight byte (%.4f beyond the cache)\n", k.name,
              s.ops[i].n, k.call_us, k.ns_per_flop, k.ns_per_byte, k.ns_per_weight_byte,
              k.ns_per_cold_weight_byte);
  }
  for (int i = 0; !st && i < many.n; i++) {
    ppcc_op_cost k = {0};
    if (!ppcc_calibration_op_cost(c, many.ops[i].name) || !fit_op(&many.ops[i], &k)) continue;
    if (!ppcc_calibration_set_op_cost_many(c, &k)) break;
    c->many_threads = c->n_threads;
    if (log)
      fprintf(log, "op %-12s with %d threads: %.3f us + %.4f ns/FLOP + %.4f ns/byte + %.4f ns/weight byte (%.4f beyond the cache)\n", k.name,
              c->n_threads, k.call_us, k.ns_per_flop, k.ns_per_byte, k.ns_per_weight_byte,
              k.ns_per_cold_weight_byte);
  }
  if (!st) calibrate_interp_cut(c, log);
  if (!st) calibrate_waits(c, NULL, log);
  for (int i = 0; i < N_FFN; i++) free(ffn_texts[i]);
  free(texts);
  samples_free(&s);
  samples_free(&many);
  return st;
}

/* ---------------- the JIT's per-op costs (jit_op_costs) ----------------
 * The JIT runs each op as a call from the compiled device function into
 * its outlined kernel (or the runtime's sgemm), with an arena allocation
 * and free around it, and keeps no per-op timestamps: only the device
 * function's busy time is measured (src/runtime/jit/jit_exec.c). So an op
 * kind's cost is measured by difference: the workload (one device, one
 * kernel thread) against the same workload with every op of that kind
 * run JIT_COPIES more times (a cheap kind more: JIT_CHEAP_SHARE), each
 * copy reading its own copies of the
 * op's params (a copy must not find the weights in cache that the op
 * just read) and writing a result nobody reads (freed at once, as an op's
 * result is after its last reader). Each model is compiled once; the
 * busy times are the median of JIT_ROUNDS paired rounds (workload,
 * variant, workload, ...). The difference over the copies, with the
 * copies' FLOPs, bytes and weight bytes summed, is one sample of the op
 * kind, fitted as the interpreter's (fit_op, call_us per op call). */
#include <cjson/cJSON.h>

#define JIT_COPIES 2
/* Copies of a cheap kind (no GEMM): as many as its ops' interpreter costs
 * take JIT_CHEAP_SHARE of the workload's time, JIT_CHEAP_MIN_COPIES to
 * JIT_MAX_COPIES. With two, an rms_norm or a silu of a Llama layer (under
 * a microsecond, in workloads of 20 to 800) was below the rounds' noise and
 * the code layout's shifts (paired differences of -2 to +1 us): fitted at
 * 0.05 and 0.01 us on gen_llama h128's rows, where their copies cost 0.7
 * and 1.2 us each (now fitted 0.7 to 0.8 and 0.9 to 1.2 over three
 * calibrations). */
#define JIT_CHEAP_SHARE 0.25
#define JIT_CHEAP_MIN_COPIES 4
#define JIT_MAX_COPIES 24
#define JIT_ROUNDS 7
#define JIT_FORWARDS 3 /* per round: the median of the warm ones counts, as --check-plan measures */

/* The workload text with every op whose cost key (ppcc_op_cost_key) is
 * `key` followed by `copies` copies of it (see above); NULL when it has
 * none or out of memory. */
static char *with_copies(const char *text, const char *key, int copies) {
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  ppcc_graph *g = ppcc_load_model_string(text, strlen(text), &q); /* the ops' keys, in the text's order */
  if (g && ppcc_pass_verify(g, &q)) { /* shapes inferred: the keys need them */
    ppcc_graph_free(g);
    g = NULL;
  }
  cJSON *root = g ? cJSON_Parse(text) : NULL;
  cJSON *params = root ? cJSON_GetObjectItemCaseSensitive(root, "params") : NULL;
  cJSON *ops = root ? cJSON_GetObjectItemCaseSensitive(root, "ops") : NULL;
  cJSON *new_ops = cJSON_CreateArray();
  bool ok = cJSON_IsArray(ops) && cJSON_IsArray(params) && new_ops && cJSON_GetArraySize(ops) == g->n_ops, found = false;
  char name[512], op_key[48];
  int j = 0;
  for (cJSON *op = ok ? ops->child : NULL; op && ok; op = op->next, j++) {
    ok = cJSON_AddItemToArray(new_ops, cJSON_Duplicate(op, true));
    ppcc_op_cost_key(g, &g->ops[j], op_key, sizeof op_key);
    if (strcmp(op_key, key) != 0) continue;
    found = true;
    for (int k = 1; ok && k <= copies; k++) {
      cJSON *copy = cJSON_Duplicate(op, true);
      cJSON *ins = copy ? cJSON_GetObjectItemCaseSensitive(copy, "in") : NULL;
      cJSON *outs = copy ? cJSON_GetObjectItemCaseSensitive(copy, "out") : NULL;
      ok = copy && cJSON_IsArray(ins) && cJSON_IsArray(outs) && cJSON_AddItemToArray(new_ops, copy);
      for (cJSON *o = ok ? outs->child : NULL; o && ok; o = o->next) {
        snprintf(name, sizeof name, "%s__jitcopy%d", cJSON_IsString(o) ? o->valuestring : "", k);
        ok = cJSON_IsString(o) && cJSON_SetValuestring(o, name);
      }
      for (cJSON *in = ok ? ins->child : NULL; in && ok; in = in->next) {
        const cJSON *param = NULL;
        for (const cJSON *p = params->child; p && cJSON_IsString(in) && !param; p = p->next) {
          const cJSON *pn = cJSON_GetObjectItemCaseSensitive(p, "name");
          if (cJSON_IsString(pn) && strcmp(pn->valuestring, in->valuestring) == 0) param = p;
        }
        if (!param) continue; /* an activation: shared with the op */
        snprintf(name, sizeof name, "%s__jitcopy%d", in->valuestring, k);
        bool have = false;
        for (const cJSON *p = params->child; p && !have; p = p->next) {
          const cJSON *pn = cJSON_GetObjectItemCaseSensitive(p, "name");
          have = cJSON_IsString(pn) && strcmp(pn->valuestring, name) == 0;
        }
        cJSON *np = have ? NULL : cJSON_Duplicate(param, true);
        if (np) ok = cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(np, "name"), name) && cJSON_AddItemToArray(params, np);
        else ok = have;
        ok = ok && cJSON_SetValuestring(in, name);
      }
    }
  }
  char *out = NULL;
  if (ok && found && cJSON_ReplaceItemInObjectCaseSensitive(root, "ops", new_ops)) {
    new_ops = NULL;
    out = cJSON_PrintUnformatted(root);
  }
  cJSON_Delete(new_ops);
  cJSON_Delete(root);
  ppcc_graph_free(g);
  return out;
}

/* A workload compiled by the JIT, ready to run. */
typedef struct jit_workload {
  ppcc_graph *g;
  ppcc_run_data data;
  bool loaded;
  void *ctx;
  /* its forwards' measure, as --check-plan takes it (one stage) */
  int *stage;
  int64_t *peak;
  double *busy;
  ppcc_host_tensor *out;
  ppcc_plan_measure m;
} jit_workload;

static void jit_workload_close(jit_workload *w, const ppcc_calib_jit *jit) {
  if (w->ctx) jit->release(w->ctx);
  if (w->loaded) ppcc_run_data_free(&w->data);
  ppcc_graph_free(w->g);
  ppcc_plan_measure_release(&w->m);
  free(w->stage);
  free(w->peak);
  free(w->busy);
  free(w->out);
  memset(w, 0, sizeof *w);
}

/* Loads, places and compiles `text`; false (quietly) when any step fails:
 * that variant then gives no sample. */
static bool jit_workload_open(jit_workload *w, const char *text, const ppcc_calib_jit *jit) {
  memset(w, 0, sizeof *w);
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  ppcc_run_options ro = {.have_random_seed = true, .random_seed = 1};
  w->g = ppcc_load_model_string(text, strlen(text), &q);
  bool ok = w->g && w->g->n_devices <= PPCC_CALIB_MAX_THREADS && !ppcc_run_passes(w->g, NULL, NULL, &q);
  ok = ok && !ppcc_run_data_load(w->g, &ro, &w->data, &q);
  w->loaded = ok;
  ok = ok && !jit->compile(w->g, &w->ctx, &q) && w->ctx;
  if (ok) {
    w->stage = calloc((size_t)w->g->n_ops + 1, sizeof *w->stage);
    w->peak = calloc((size_t)w->g->n_devices + 1, sizeof *w->peak);
    w->busy = calloc((size_t)w->g->n_devices + 1, sizeof *w->busy);
    w->out = calloc((size_t)w->g->n_outputs + 1, sizeof *w->out);
    w->m = (ppcc_plan_measure){.op_stage = w->stage, .n_stages = 1, .peak_bytes = w->peak, .stage_busy_ms = w->busy};
    ok = w->stage && w->peak && w->busy && w->out;
  }
  if (!ok) jit_workload_close(w, jit);
  return ok;
}

/* One forward with `threads` threads (0: one kernel thread per device),
 * measured into w->m. */
static bool jit_workload_forward(jit_workload *w, const ppcc_calib_jit *jit, int threads, ppcc_diag *d) {
  ppcc_exec_options eo = {.threads = threads > 0 ? threads : w->g->n_devices, .measure = &w->m};
  double elapsed = 0;
  bool ok = !jit->execute(w->ctx, w->g, &w->data, &eo, w->out, &elapsed, d) && w->m.filled;
  for (int k = 0; k < w->g->n_outputs; k++) ppcc_host_tensor_free(&w->out[k]);
  return ok;
}

/* Runs `forwards` forwards with `threads` threads (0: one kernel thread
 * per device); *us the slowest device's median busy time (of the warm
 * ones, when there are several: see ppcc_plan_measure); false when a run
 * fails. */
static bool jit_workload_run_on(jit_workload *w, const ppcc_calib_jit *jit, int threads, int forwards, double *us,
                                ppcc_diag *d) {
  w->m.forwards = 0; /* this call's forwards only */
  w->m.filled = false;
  bool ok = true;
  for (int r = 0; ok && r < forwards; r++) ok = jit_workload_forward(w, jit, threads, d);
  if (ok) ppcc_plan_measure_summarize(&w->m);
  *us = 0;
  for (int dev = 0; ok && dev < w->g->n_devices; dev++)
    if (w->busy[dev] * 1e3 > *us) *us = w->busy[dev] * 1e3;
  return ok;
}

static bool jit_workload_run(jit_workload *w, const ppcc_calib_jit *jit, int forwards, double *us, ppcc_diag *d) {
  return jit_workload_run_on(w, jit, 0, forwards, us, d);
}

/* A workload and its variant in turn for PPCC_CHECK_PLAN_WARMUP_MS,
 * unmeasured: their differences are taken in the steady state that
 * --check-plan measures (sample_workload: the first forwards after
 * loading are far slower). */
static bool jit_pair_warm_up(jit_workload *a, jit_workload *b, const ppcc_calib_jit *jit, warm_stats *warm,
                             ppcc_diag *d) {
  double t0 = omp_get_wtime();
  bool ok = true;
  int n = 0;
  do ok = jit_workload_forward(a, jit, 0, d) && jit_workload_forward(b, jit, 0, d), n++;
  while (ok && (omp_get_wtime() - t0) * 1e3 < PPCC_CHECK_PLAN_WARMUP_MS);
  a->m.forwards = b->m.forwards = 0; /* unmeasured (jit_workload_run counts its own forwards only, too) */
  if (ok) warm_note(warm, n);
  return ok;
}

/* The cost keys of g's compute ops (ppcc_op_cost_key), each once. */
typedef char cost_key[48];
static int op_kinds(const ppcc_graph *g, cost_key *kinds, int cap) {
  int n = 0;
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1) continue;
    cost_key key;
    ppcc_op_cost_key(g, op, key, sizeof key);
    bool seen = false;
    for (int i = 0; i < n && !seen; i++) seen = strcmp(kinds[i], key) == 0;
    if (!seen && n < cap) memcpy(kinds[n++], key, sizeof key);
  }
  return n;
}

/* One workload's samples: every compute op kind's difference (above),
 * the median over JIT_ROUNDS paired rounds (workload, variant) of the
 * variant's time less the workload's, each the median of JIT_FORWARDS
 * forwards (the statistic --check-plan measures; pairs: the machine's
 * load changes). The copies cost somewhat more than the ops they copy
 * (cold code and weights: +25 % on the smallest Llama), so the kinds'
 * differences, each over its copies, are scaled to add up to the
 * workload's own busy time (the median of its rounds; at most by a factor
 * 2 either way): they say how the time divides between the kinds. */
typedef struct kind_sample {
  double delta, f, b, w, calls; /* the copies' extra time; their work */
  int copies;                   /* of each op of the kind (JIT_COPIES, more for cheap kinds) */
  bool ok;
} kind_sample;

/* The interpreter's cost of op (op_costs: its kernel's, else its kind's),
 * in us; -1 when the file has none. */
static double interp_cost_us(const ppcc_calibration *c, const ppcc_graph *g, const ppcc_op *op, double cold) {
  cost_key key;
  ppcc_op_cost_key(g, op, key, sizeof key);
  const ppcc_op_cost *k = ppcc_calibration_op_cost(c, key);
  if (!k) k = ppcc_calibration_op_cost(c, op->info->name);
  if (!k) return -1;
  double f, b, w;
  ppcc_predict_op_work(g, op, &f, &b, &w);
  return ppcc_op_cost_us(k, f, b, w, cold);
}

/* GEMMs (ppcc_predict_is_contraction) are calls from the compiled code
 * into the runtime's own kernels (ppcc_rt_sgemm, src/runtime/jit/jit_abi.c),
 * which the interpreter calls too and measures op by op: their keys take
 * the interpreter's costs (gemm_keys collects them) plus the JIT's own
 * cost of a call (argument descriptors, the arena's allocation and free):
 * per GEMM kind, its copies' scaled difference less their interpreter
 * costs, over the calls (one sample each in *extra; their median counts). */
static ppcc_status sample_jit_workload(const char *text, const ppcc_calibration *c, const ppcc_calib_jit *jit,
                                       sample_set *s, cost_key *gemm_keys, int *n_gemm, double *extra,
                                       int *n_extra, warm_stats *warm, ppcc_diag *d) {
  jit_workload base;
  if (!jit_workload_open(&base, text, jit)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT calibration workload does not compile");
  cost_key kinds[PPCC_CALIB_MAX_OPS];
  kind_sample ks[PPCC_CALIB_MAX_OPS];
  int n = op_kinds(base.g, kinds, PPCC_CALIB_MAX_OPS), nb = 0;
  double *base_us = malloc(sizeof(double) * (size_t)((n + 1) * JIT_ROUNDS + 1)), diff[JIT_ROUNDS], b_us, v_us;
  ppcc_status st = !base_us ? ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory")
                   : jit_workload_run(&base, jit, 2, &b_us, d) ? PPCC_OK
                                                               : ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT calibration workload failed");
  double *gemm = calloc((size_t)n + 1, sizeof *gemm); /* per kind: its ops at the interpreter's costs, us */
  if (!gemm && !st) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int j = 0; !st && j < base.g->n_ops; j++) {
    const ppcc_op *op = &base.g->ops[j];
    if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1 || !ppcc_predict_is_contraction(base.g, op))
      continue;
    double us = interp_cost_us(c, base.g, op, ppcc_predict_cold_share(2 * ppcc_predict_param_bytes(base.g), c->cache_bytes));
    if (us < 0) continue; /* no interpreter cost: fitted as the others */
    cost_key key;
    ppcc_op_cost_key(base.g, op, key, sizeof key);
    for (int i = 0; i < n; i++)
      if (strcmp(kinds[i], key) == 0) gemm[i] += us;
    bool seen = false;
    for (int i = 0; i < *n_gemm && !seen; i++) seen = strcmp(gemm_keys[i], key) == 0;
    if (!seen && *n_gemm < PPCC_CALIB_MAX_OPS) memcpy(gemm_keys[(*n_gemm)++], key, sizeof key);
  }
  double kind_us[PPCC_CALIB_MAX_OPS] = {0}; /* per kind: its ops at the interpreter's costs */
  for (int j = 0; !st && j < base.g->n_ops; j++) {
    const ppcc_op *op = &base.g->ops[j];
    if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1) continue;
    double us = interp_cost_us(c, base.g, op, 0);
    cost_key key;
    ppcc_op_cost_key(base.g, op, key, sizeof key);
    for (int i = 0; i < n && us > 0; i++)
      if (strcmp(kinds[i], key) == 0) kind_us[i] += us;
  }
  for (int i = 0; i < n && !st; i++) {
    memset(&ks[i], 0, sizeof ks[i]);
    int copies = JIT_COPIES;
    if (gemm[i] <= 0 && kind_us[i] > 0 && b_us > 0) {
      double want = JIT_CHEAP_SHARE * b_us / kind_us[i];
      copies = want > JIT_MAX_COPIES ? JIT_MAX_COPIES : want > JIT_CHEAP_MIN_COPIES ? (int)want : JIT_CHEAP_MIN_COPIES;
    }
    ks[i].copies = copies;
    char *variant = with_copies(text, kinds[i], copies);
    jit_workload v;
    bool ok = variant && jit_workload_open(&v, variant, jit);
    free(variant);
    if (!ok) continue; /* e.g. an in-place op whose copies the passes refuse: no sample */
    ok = jit_pair_warm_up(&base, &v, jit, warm, d);
    int nd = 0;
    for (int r = 0; ok && r < JIT_ROUNDS; r++) {
      ok = jit_workload_run(&base, jit, JIT_FORWARDS, &b_us, d) && jit_workload_run(&v, jit, JIT_FORWARDS, &v_us, d);
      if (ok) base_us[nb++] = b_us, diff[nd++] = v_us - b_us;
    }
    for (int j = 0; ok && j < base.g->n_ops; j++) {
      const ppcc_op *op = &base.g->ops[j];
      cost_key key;
      if (!op->info || op->info->family != PPCC_FAMILY_COMPUTE || op->n_out < 1) continue;
      ppcc_op_cost_key(base.g, op, key, sizeof key);
      if (strcmp(key, kinds[i]) != 0) continue;
      double of, ob, ow;
      ppcc_predict_op_work(base.g, op, &of, &ob, &ow);
      ks[i].f += of * copies, ks[i].b += ob * copies, ks[i].w += ow * copies, ks[i].calls += copies;
    }
    ks[i].delta = ok ? rt_median(diff, nd) : 0;
    /* copies that cost nothing measurable (a loaded machine's noise): a
     * floor sample, not none, so that the kind keeps a cost of its own */
    if (ks[i].delta < 0.01 * ks[i].calls) ks[i].delta = 0.01 * ks[i].calls;
    ks[i].ok = ok && ks[i].calls > 0;
    jit_workload_close(&v, jit);
  }
  double sum = 0, total = st || !nb ? 0 : rt_median(base_us, nb); /* the kinds' differences, one run of each op */
  for (int i = 0; i < n && !st; i++)
    if (ks[i].ok) sum += ks[i].delta / ks[i].copies;
  double scale = sum > 0 && total > 0 ? total / sum : 1;
  scale = scale < 0.5 ? 0.5 : scale > 2 ? 2 : scale;
  for (int i = 0; i < n && !st; i++) {
    if (!ks[i].ok) continue;
    if (gemm[i] > 0) { /* the copies' extra over the interpreter's cost, per call */
      if (*n_extra < 256) extra[(*n_extra)++] = (ks[i].delta * scale - gemm[i] * JIT_COPIES) / ks[i].calls;
      continue;
    }
    /* the JIT's own kernels (no GEMM) read their params by row (a norm's
     * [H], an embedding's rows), not streamed whole: the share of the
     * workload's weights beyond the cache says nothing of their time (as
     * a term, it took an rms_norm's whole cost in one calibration in
     * three: 0.36 ns a cold weight byte, 0.04 ns/FLOP, where the others
     * fitted 0.17 ns/FLOP) */
    op_samples *o = samples_for(s, kinds[i]);
    if (!o || !add_sample_of(o, ks[i].calls, ks[i].f, ks[i].b, ks[i].w, 0, ks[i].delta * scale))
      st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  free(base_us);
  free(gemm);
  jit_workload_close(&base, jit);
  return st;
}

/* The JIT's cut of a replicated operand (jit_operand_cut): two devices,
 * x [tokens, h] replicated times w [h, h] split on its rows (a
 * row-parallel matmul: the kernel first copies x's columns of its part),
 * then an all_reduce; the difference of its copies less the matmul's own
 * cost (jit_op_costs) is the cut's, fitted over sizes as an op's. */
static char *cut_model(int tokens, int h) {
  char *m = malloc(1024);
  if (m)
    snprintf(m, 1024,
             "{\"ppcc\": 1, \"name\": \"calibrate_cut\", \"devices\": 2, \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", "
             "\"shape\": [%d, %d], \"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}, \"devices\": [0, 1]}], "
             "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [%d, %d], \"shard\": {\"kind\": "
             "\"replicated\", \"count\": 2}, \"devices\": [0, 1]}], \"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], "
             "\"out\": [\"p\"]}, {\"op\": \"all_reduce\", \"in\": [\"p\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}",
             h, h, tokens, h);
  return m;
}

/* The cost key of the first op of a workload text ("" when it does not load). */
static void first_op_key(const char *text, cost_key key) {
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  ppcc_graph *g = text ? ppcc_load_model_string(text, strlen(text), &q) : NULL;
  key[0] = 0;
  if (g && !ppcc_pass_verify(g, &q) && g->n_ops > 0) ppcc_op_cost_key(g, &g->ops[0], key, sizeof(cost_key));
  ppcc_graph_free(g);
}

/* The bytes the cut of cut_model's matmul moves: the replicated operand
 * and its part. */
static double cut_bytes(const ppcc_graph *g, const ppcc_op *op) {
  double bytes = 0;
  for (int k = 0; k < op->n_in; k++)
    if (g->values[op->in[k]].layout.kind == PPCC_LAYOUT_REPLICATED) {
      int64_t shape[PPCC_MAX_RANK];
      ppcc_value_shard_shape(&g->values[op->in[k]], shape);
      bytes += 1.5 * (double)ppcc_num_elements(g->values[op->in[k]].rank, shape) * 4;
    }
  return bytes;
}

/* The base workload `text` and its variant with `copies` more of every op
 * of cost key `key` (with_copies), compiled; a warm-up forward of each,
 * then `rounds` rounds of JIT_FORWARDS forwards of each in turn (the
 * machine's load changes): *diff_us the median over the rounds of the
 * variant's busy time less the base's, per copy. The base stays open for
 * the caller (its graph: the op's work), which closes it; false (nothing
 * open) when either does not compile or run. */
static bool jit_copies_diff(const char *text, const char *key, int copies, int rounds, const ppcc_calib_jit *jit,
                            jit_workload *base, double *diff_us, ppcc_diag *d) {
  char *variant = text ? with_copies(text, key, copies) : NULL;
  jit_workload v;
  double *diff = malloc(sizeof(double) * (size_t)(rounds + 1)), b_us, v_us;
  bool ok = diff && variant && jit_workload_open(base, text, jit);
  if (ok && !jit_workload_open(&v, variant, jit)) {
    jit_workload_close(base, jit);
    ok = false;
  }
  free(variant);
  if (!ok) {
    free(diff);
    return false;
  }
  int nd = 0;
  ok = jit_pair_warm_up(base, &v, jit, NULL, d);
  for (int r = 0; ok && r < rounds; r++) {
    ok = jit_workload_run(base, jit, JIT_FORWARDS, &b_us, d) && jit_workload_run(&v, jit, JIT_FORWARDS, &v_us, d);
    if (ok) diff[nd++] = (v_us - b_us) / copies;
  }
  *diff_us = ok && nd ? rt_median(diff, nd) : 0;
  free(diff);
  jit_workload_close(&v, jit);
  if (!ok || !nd) jit_workload_close(base, jit);
  return ok && nd;
}

/* Copies of the cut's matmul in its variant: each compile places its code
 * anew and may run a few tenths of a microsecond slower as a whole (2
 * cores: 3 or 4 of 7 compiles of one small model), which the difference
 * of two compiles divides among the copies (with 2 copies the call cost
 * ranged 0 to 0.71 us, the byte cost 0.25 to 0.58 ns, between
 * calibrations). */
#define JIT_CUT_COPIES 8

static void calibrate_cut(ppcc_calibration *c, const ppcc_calib_jit *jit, FILE *log, ppcc_diag *d) {
  enum { ROUNDS = 3 * JIT_ROUNDS }; /* small models: more rounds, a steadier median */
  op_samples o = {.name = "cut"};
  for (int i = 0; i < (int)(sizeof cut_sizes / sizeof *cut_sizes); i++) {
    cost_key key;
    char *text = cut_model(cut_sizes[i][0], cut_sizes[i][1]);
    first_op_key(text, key);
    const ppcc_op_cost *mm = ppcc_calibration_jit_op_cost(c, key); /* the matmul's own kernel */
    if (!mm) mm = ppcc_calibration_jit_op_cost(c, "matmul");
    jit_workload base;
    double diff;
    bool ok = mm && jit_copies_diff(text, key, JIT_CUT_COPIES, ROUNDS, jit, &base, &diff, d);
    free(text);
    if (!ok) continue;
    const ppcc_op *op = &base.g->ops[0];
    double f, b, w, cut_b = cut_bytes(base.g, op);
    ppcc_predict_op_work(base.g, op, &f, &b, &w);
    double t = diff - ppcc_op_cost_us(mm, f, b, w, 0);
    if (t > 0 && cut_b > 0) add_sample_of(&o, 1, 0, cut_b, 0, 0, t);
    jit_workload_close(&base, jit);
  }
  ppcc_op_cost k = {0};
  if (o.n > 0 && fit_op(&o, &k)) {
    c->jit_cut = k;
    c->have_jit_cut = true;
    if (log) fprintf(log, "jit cut of a replicated operand %d samples: %.3f us + %.4f ns/byte\n", o.n, k.call_us, k.ns_per_byte);
  }
  free(o.at);
}

/* The JIT's own cost of a collective or transfer (jit_op_costs under the
 * op's name): the compiled device function allocates its result and
 * copies shards in and out around the communication call, and that counts
 * as busy time (the call itself does not: rt_jit_comm_ms). Two devices:
 * x [tokens, h] times a weight, then an all_reduce of the row-parallel
 * products, an all_gather of the column-parallel ones, or a transfer of
 * one device's product to the other; each op's copies' difference (as
 * sample_jit_workload's), over the bytes its shard reads and writes,
 * fitted as an op's. */
static char *comm_model(const char *op, int tokens, int h) {
  char *m = malloc(2048);
  if (!m) return NULL;
  bool moves = strcmp(op, "transfer") == 0;
  const char *w_shard = moves ? ""
                        : strcmp(op, "all_gather") == 0 ? "\"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}, "
                                                        : "\"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}, ";
  snprintf(m, 2048,
           "{\"ppcc\": 1, \"name\": \"calibrate_comm\", \"devices\": 2, \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", "
           "\"shape\": [%d, %d], %s\"devices\": %s}], \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [%d, %d], "
           "%s\"devices\": %s}], \"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": [\"p\"]}, "
           "{\"op\": \"%s\", \"in\": [\"p\"], \"out\": [\"y\"]%s}], \"outputs\": [\"y\"]}",
           h, h, w_shard, moves ? "[0]" : "[0, 1]", tokens, h,
           moves ? "" : "\"shard\": {\"kind\": \"replicated\", \"count\": 2}, ", moves ? "[0]" : "[0, 1]", op,
           moves ? ", \"attrs\": {\"devices\": [1]}" : "");
  return m;
}

#define JIT_COMM_COPIES 8 /* a move's own cost is a fraction of a microsecond: more copies lift it above the noise */
static void calibrate_jit_comm(ppcc_calibration *c, const ppcc_calib_jit *jit, FILE *log, ppcc_diag *d) {
  static const char *const ops[] = {"all_reduce", "all_gather", "transfer"};
  enum { ROUNDS = 3 * JIT_ROUNDS };
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
    op_samples o = {0};
    snprintf(o.name, sizeof o.name, "%s", ops[k]);
    for (int i = 0; i < (int)(sizeof cut_sizes / sizeof *cut_sizes); i++) {
      char *text = comm_model(ops[k], cut_sizes[i][0], cut_sizes[i][1]);
      jit_workload base;
      double t;
      bool ok = jit_copies_diff(text, ops[k], JIT_COMM_COPIES, ROUNDS, jit, &base, &t, d);
      free(text);
      if (!ok) continue;
      const ppcc_op *op = &base.g->ops[base.g->n_ops - 1]; /* the move (the passes add none after it) */
      /* a difference at or below 0: the move costs next to nothing (a
       * floor, not a dropped sample: dropping them would bias the fit up) */
      if (strcmp(op->info->name, ops[k]) == 0) add_sample_of(&o, 1, 0, ppcc_predict_move_bytes(base.g, op), 0, 0, t > 0.01 ? t : 0.01);
      jit_workload_close(&base, jit);
    }
    ppcc_op_cost cost = {0};
    if (o.n > 0 && fit_op(&o, &cost) && ppcc_calibration_set_jit_op_cost(c, &cost) && log)
      fprintf(log, "jit %-12s %d samples: %.3f us + %.4f ns/byte of its own (besides the communication)\n", cost.name, o.n,
              cost.call_us, cost.ns_per_byte);
    free(o.at);
  }
}

/* How the JIT's busy time changes with more devices computing at once,
 * where the interpreter's figures do not say it (the compiled code around
 * the runtime's kernels is one thread, and its calls and allocations
 * contend differently):
 *   jit_concurrent_slowdown  FFN copies on t devices at once against one,
 *                            compiled by the JIT (as concurrency()).
 * No jit_threads_factor(s) any more (predict.h still reads and applies a
 * file's): they were the one-device Llama workloads' busy time with many
 * kernel threads over the prediction, 0.67 to 2.5 from one calibration to
 * the next, and did not carry over to pipeline stages (0.73 for
 * linear.rows16 put gen_llama pp4 h128's JIT stages at -29 %, -17 %
 * without). The JIT's GEMMs are the runtime's kernels, whose thread
 * scaling the interpreter measures op by op (op_costs_multithreaded);
 * its compiled kernels (no GEMM) do not split. */
#define JIT_SCALE_ROUNDS 5
static void calibrate_jit_scaling(ppcc_calibration *c, const ppcc_calib_jit *jit, FILE *log, ppcc_diag *d) {
  c->jit_threads_factor = 0;
  c->n_jit_threads_factors = 0;
  static const int sizes[][4] = {{8, 256, 1024, 1}, {32, 128, 512, 1}, {8, 64, 128, 3}};
  enum { N = sizeof sizes / sizeof *sizes };
  int most = c->cores < c->n_threads ? c->cores : c->n_threads;
  c->n_jit_slowdown = 0;
  for (int t = 2; t <= most && t <= PPCC_CALIB_MAX_THREADS; t++) {
    double ratio[N * JIT_SCALE_ROUNDS];
    int n = 0;
    for (int i = 0; i < N; i++) {
      char *a = ffn_model(sizes[i][0], sizes[i][1], sizes[i][2], 1, sizes[i][3]);
      char *b = ffn_model(sizes[i][0], sizes[i][1], sizes[i][2], t, sizes[i][3]);
      jit_workload alone, together;
      bool ok = a && b && jit_workload_open(&alone, a, jit);
      if (ok && !jit_workload_open(&together, b, jit)) {
        jit_workload_close(&alone, jit);
        ok = false;
      }
      free(a);
      free(b);
      if (!ok) continue;
      double x, y;
      ok = jit_workload_run(&alone, jit, 1, &x, d) && jit_workload_run(&together, jit, 1, &y, d);
      for (int r = 0; ok && r < JIT_SCALE_ROUNDS; r++) {
        ok = jit_workload_run(&alone, jit, JIT_FORWARDS, &x, d) && jit_workload_run(&together, jit, JIT_FORWARDS, &y, d);
        if (ok && x > 0 && y > 0) ratio[n++] = y / x;
      }
      jit_workload_close(&alone, jit);
      jit_workload_close(&together, jit);
    }
    if (!n) break;
    rt_sort_doubles(ratio, n);
    if (c->n_jit_slowdown == 0) c->jit_concurrent_slowdown[0] = 1, c->n_jit_slowdown = 1;
    c->jit_concurrent_slowdown[t - 1] = ratio[n / 2] > 1 ? ratio[n / 2] : 1;
    c->n_jit_slowdown = t;
    if (log) fprintf(log, "jit: %d devices computing at once: each %.3fx as slow\n", t, c->jit_concurrent_slowdown[t - 1]);
  }
}

/* ---------------- fixed costs around waits ----------------
 * What a device pays beyond its ops' own costs when it resumes after a
 * wait (resume: cold caches, a woken thread whose core idled; on the JIT
 * also the device function's own work around the waits, which its busy
 * time counts) and, once per forward, when it starts computing without
 * waiting (start). Both depend on how the runtime places the device
 * threads, so each is measured where it applies, as the time model's
 * residual: a workload's measured stage busy time (the median over its
 * forwards) less its prediction without these costs:
 *   threads sharing a core (resume_us, start_us; the JIT's jit_*):
 *     start_model, a pipeline of start_devices(cores) one-device stages
 *     on the cores (one computes at a time: the runtime puts every device
 *     thread on one core, RT_PLACE_LONE_DEVICE, as a shipped pipeline's);
 *     resume is the median over the later stages (each starts after a
 *     receive), start what the first stage pays beyond it;
 *   threads spread over the cores (the *_spread_us): tp_chain_model of 1
 *     and 2 blocks a stage on two cores (RT_PLACE_SPREAD, two devices a
 *     core, as the shipped TP pipelines run); a stage of B blocks pays B
 *     resumes (its first op and each op after an all_reduce), the first
 *     stage also start: resume is the least-squares fit of the second
 *     stages' residuals (B * resume), start the first stages' mean
 *     residual beyond their resumes;
 *   threads spread over the cores, no more than them (start_own_core_us,
 *     jit_start_own_core_us): tp_chain_model of 1 block in one stage on
 *     two devices (each device thread alone on its core, as tp_ffn and a
 *     TP decode on 2 cores run): its residual beyond the spread resume;
 *   threads spread, four to each of two cores (the *_wide_us):
 *     tp_chain_model of 1 block in 4 stages (8 devices, as
 *     ppffn_sharktank): resume the median of the later stages'
 *     residuals, start what the first stage pays beyond it.
 * Each term is the median of several such fits, each on fresh workloads
 * measured after a warm-up, as --check-plan measures (calibrate_waits).
 * A resume may come out negative (the per-op costs, fitted on workloads
 * of many ops, overstate a lone small stage's: the JIT's); a start below
 * 0 counts as 0. */
#define WAIT_FORWARDS 41

/* A workload of either backend, measured as --check-plan measures it. */
typedef struct any_workload {
  const ppcc_calib_jit *jit; /* NULL: the interpreter */
  workload iw;
  jit_workload jw;
  bool open;
} any_workload;

static void any_close(any_workload *w) {
  if (!w->jit) workload_close(&w->iw);
  else if (w->open) jit_workload_close(&w->jw, w->jit);
  memset(w, 0, sizeof *w);
}

static bool any_open(any_workload *w, const char *text, const ppcc_calib_jit *jit) {
  memset(w, 0, sizeof *w);
  w->jit = jit;
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  if (!text) return false;
  if (!jit) return w->open = !workload_open(&w->iw, text, false, &q);
  return w->open = jit_workload_open(&w->jw, text, jit);
}

static const ppcc_graph *any_graph(const any_workload *w) { return w->jit ? w->jw.g : w->iw.g; }

static bool any_forward(any_workload *w, int threads, ppcc_diag *d) {
  if (!w->jit) return !workload_forward_on(&w->iw, threads, d) && w->iw.m.filled;
  return jit_workload_forward(&w->jw, w->jit, threads, d);
}

/* The warm-up (workload_warm_up) on either backend. */
static bool any_warm_up(any_workload *w, int threads, ppcc_diag *d) {
  if (!w->jit) return workload_warm_up(&w->iw, threads, d);
  double t0 = omp_get_wtime();
  bool ok;
  do ok = any_forward(w, threads, d);
  while (ok && (omp_get_wtime() - t0) * 1e3 < PPCC_CHECK_PLAN_WARMUP_MS);
  w->jw.m.forwards = 0;
  return ok;
}

/* Per stage of the prediction: the measured busy time (its slowest
 * device's median) less the predicted one without the wait costs, us;
 * false when a forward fails. */
static bool wait_residuals(const ppcc_calibration *c, const ppcc_calib_jit *jit, const char *const *texts, int n,
                           int threads, double res[][16], ppcc_diag *d) {
  any_workload w[2];
  ppcc_calibration *z = malloc(sizeof *z);
  bool ok = z && n <= 2;
  for (int i = 0; i < n; i++) ok = any_open(&w[i], ok ? texts[i] : NULL, jit) && ok;
  for (int i = 0; i < n; i++) { /* each on its own, as --check-plan runs a model (in turn, each other's code and data would cool the caches) */
    ok = ok && any_warm_up(&w[i], threads, d);
    for (int r = 0; ok && r < WAIT_FORWARDS; r++) ok = any_forward(&w[i], threads, d);
  }
  if (ok) {
    *z = *c;
    z->version = PPCC_CALIBRATION_VERSION;
    z->resume_us = z->start_us = z->resume_spread_us = z->start_spread_us = 0;
    z->jit_resume_us = z->jit_start_us = z->jit_resume_spread_us = z->jit_start_spread_us = 0;
    z->start_own_core_us = z->jit_start_own_core_us = 0;
    z->resume_wide_us = z->start_wide_us = z->jit_resume_wide_us = z->jit_start_wide_us = 0;
  }
  for (int i = 0; ok && i < n; i++) {
    ppcc_plan_measure_summarize(jit ? &w[i].jw.m : &w[i].iw.m);
    const double *busy = jit ? w[i].jw.busy : w[i].iw.busy;
    ppcc_predict_options o = {.calib = z, .threads = threads, .jit = jit != NULL};
    ppcc_prediction p;
    ppcc_diag q;
    ppcc_diag_init(&q, NULL, NULL);
    bool predicted = !ppcc_predict(any_graph(&w[i]), &o, &p, &q);
    ok = predicted && p.n_stages <= 16;
    for (int k = 0; ok && k < p.n_stages; k++) {
      double meas = 0;
      for (int j = 0; j < p.stages[k].n_devices; j++)
        if (busy[p.stages[k].devices[j]] > meas) meas = busy[p.stages[k].devices[j]];
      res[i][k] = (meas - p.stages[k].time_ms) * 1e3;
    }
    if (predicted) ppcc_prediction_free(&p);
  }
  for (int i = 0; i < n; i++) any_close(&w[i]);
  free(z);
  return ok;
}

/* Sets the backend's wait costs (above), each the median of WAIT_FITS
 * fits on fresh workloads (one fit's start ranged 0.03 to 1.7 us between
 * calibrations, a stage's median forward being a few microseconds); each
 * stays 0 when its workload fails (optional). */
#define WAIT_FITS 7

/* Stores the medians of n fits (none: the costs stay 0) as the backend's
 * costs for one placement of the device threads, a start below 0 as 0
 * unless it is a residual (format 7: the interpreter's where the device
 * threads spread); resume_us NULL: a start alone (the own-core one, which
 * takes the spread resume). */
static void store_wait_fits(double *resume_us, double *start_us, double *resume, double *start, int n, FILE *log,
                            bool jit, bool start_residual, const char *placement, const char *first_op) {
  if (n <= 0) return;
  if (log) { /* each fit, in the order measured: the spread says how far the medians can be trusted */
    fprintf(log, "%s%s: %d fits (%s, us):", jit ? "jit: " : "", placement, n, resume ? "resume/start" : "start");
    for (int i = 0; i < n; i++)
      if (resume) fprintf(log, " %.3f/%.3f", resume[i], start[i]);
      else fprintf(log, " %.3f", start[i]);
    fputc('\n', log);
  }
  double st = rt_median(start, n);
  if (resume_us) *resume_us = rt_median(resume, n); /* NULL: a start alone */
  *start_us = st > 0 || start_residual ? st : 0;
  if (log && resume_us)
    fprintf(log, "%s%s: an op after its device waited %.3f us more, %s %.3f us more\n", jit ? "jit: " : "", placement,
            *resume_us, first_op, *start_us);
  else if (log)
    fprintf(log, "%s%s: %s %.3f us more\n", jit ? "jit: " : "", placement, first_op, *start_us);
}

/* A pipeline of one-block stages, each after a wait: the resume the
 * median of the later stages' residuals, the start what the first pays
 * beyond it (sorts the later residuals). */
static void pipeline_fit(double *stage_res, int stages, double fit[2]) {
  rt_sort_doubles(stage_res + 1, stages - 1);
  fit[0] = stage_res[1 + (stages - 1) / 2];
  fit[1] = stage_res[0] - fit[0];
}

bool ppcc_calibrate_wait_fit(const ppcc_calibration *c, const ppcc_calib_jit *jit, int placement, double fit[2]) {
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  int np = start_devices(c->n_threads); /* the threads `ppcc calibrate --threads` allows */
  double res[2][16];
  char *text[2] = {NULL, NULL};
  bool ok = false;
  rt_keep_freed_memory(); /* as ppcc_run */
  if (placement == PPCC_WAITS_SHARING_A_CORE) {
    text[0] = start_model(np);
    ok = np <= 16 && wait_residuals(c, jit, (const char *const *)text, 1, c->n_threads, res, &q);
    if (ok) pipeline_fit(res[0], np, fit);
  } else if (placement == PPCC_WAITS_SPREAD && c->n_threads >= 2) {
    text[0] = tp_chain_model(1, 2);
    text[1] = tp_chain_model(2, 2);
    ok = wait_residuals(c, jit, (const char *const *)text, 2, 2, res, &q);
    if (ok) {
      fit[0] = (res[0][1] + 2 * res[1][1]) / 5; /* res[B-1][1] = B * resume */
      fit[1] = (res[0][0] - fit[0] + res[1][0] - 2 * fit[0]) / 2;
    }
  } else if (placement == PPCC_WAITS_OWN_CORE && c->n_threads >= 2) {
    text[0] = tp_chain_model(1, 1);
    ok = wait_residuals(c, jit, (const char *const *)text, 1, 2, res, &q);
    if (ok) fit[0] = 0, fit[1] = res[0][0]; /* start + resume: the caller takes the spread resume off */
  } else if (placement == PPCC_WAITS_WIDE && c->n_threads >= 2) {
    text[0] = tp_chain_model(1, 4);
    ok = wait_residuals(c, jit, (const char *const *)text, 1, 2, res, &q);
    if (ok) pipeline_fit(res[0], 4, fit);
  }
  free(text[0]);
  free(text[1]);
  return ok && isfinite(fit[0]) && isfinite(fit[1]);
}

/* The executable that measures each wait fit in a process of its own
 * (ppcc_calibrate_set_wait_fit_exe); NULL: in this one. */
static const char *wait_fit_exe;
extern char **environ;
void ppcc_calibrate_set_wait_fit_exe(const char *exe) { wait_fit_exe = exe; }

/* One fit in a fresh process: `EXE calibrate --wait-fit B,P,FILE`, which
 * prints the fit (ppcc_calibrate_wait_fit); false when it cannot start or
 * fails. */
static bool wait_fit_in_child(const char *cal_path, bool jit, int placement, double fit[2]) {
  char spec[PATH_MAX + 32];
  snprintf(spec, sizeof spec, "%s,%d,%s", jit ? "jit" : "interp", placement, cal_path);
  char *argv[] = {"ppcc", "calibrate", "--wait-fit", spec, NULL};
  int out[2];
  if (pipe(out) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, out[1]);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  bool spawned = posix_spawn(&pid, wait_fit_exe, &fa, NULL, argv, environ) == 0;
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  char line[128] = {0};
  size_t got = 0;
  ssize_t r;
  while (spawned && got + 1 < sizeof line && ((r = read(out[0], line + got, sizeof line - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) got += (size_t)r;
  close(out[0]);
  int status = 0;
  while (spawned && waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return spawned && WIFEXITED(status) && WEXITSTATUS(status) == 0 && sscanf(line, "%lf %lf", &fit[0], &fit[1]) == 2 &&
         isfinite(fit[0]) && isfinite(fit[1]);
}

/* Each fit in a process of its own where it can; else here. Fitted in
 * one process, 7 in a row, the interpreter's first 3 matched a fresh
 * `ppcc run` and the later 4 paid 0.5-1.5 us more at a first stage's
 * start; all 7 of the JIT's paid 0.3-0.4 us more after every wait, where
 * single fits in fresh processes paid 0.05-0.12. */
static void calibrate_waits(ppcc_calibration *c, const ppcc_calib_jit *jit, FILE *log) {
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX], path[PATH_MAX + 16] = "";
  if (snprintf(dir, sizeof dir, "%s/ppcc-calibrate-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)sizeof dir) dir[0] = 0;
  char *made = wait_fit_exe && dir[0] ? mkdtemp(dir) : NULL;
  if (made) snprintf(path, sizeof path, "%s/c.json", made);
  ppcc_diag q;
  ppcc_diag_init(&q, NULL, NULL);
  bool children = made && path[0] && !ppcc_calibration_write(path, c, &q);
  double resume[WAIT_FITS], start[WAIT_FITS], fit[2];
  bool child_fitted = false;
  /* per placement (PPCC_WAITS_*): its log names and this backend's costs
   * (the own core's has no resume of its own) */
  bool j = jit != NULL;
  const struct {
    const char *name, *first_op;
    double *resume_us, *start_us;
  } placements[] = {
      {"device threads sharing a core", "a first stage's first op", j ? &c->jit_resume_us : &c->resume_us,
       j ? &c->jit_start_us : &c->start_us},
      {"device threads spread over the cores", "a first op", j ? &c->jit_resume_spread_us : &c->resume_spread_us,
       j ? &c->jit_start_spread_us : &c->start_spread_us},
      {"device threads on cores of their own", "a first op", NULL, j ? &c->jit_start_own_core_us : &c->start_own_core_us},
      {"device threads spread, four a core", "a first op", j ? &c->jit_resume_wide_us : &c->resume_wide_us,
       j ? &c->jit_start_wide_us : &c->start_wide_us},
  };
  _Static_assert(sizeof placements / sizeof *placements == PPCC_WAITS_WIDE + 1, "a row per PPCC_WAITS_*");
  for (int placement = 0; placement < (int)(sizeof placements / sizeof *placements); placement++) {
    int n = 0;
    /* every placement but the shared core's spreads 2 device threads a core or more */
    for (int r = 0; r < WAIT_FITS && (placement == PPCC_WAITS_SHARING_A_CORE || c->n_threads >= 2); r++) {
      bool ok = children && wait_fit_in_child(path, j, placement, fit);
      if (!ok && children && !child_fitted) children = false; /* none starts here: the fits run in this process */
      if (!ok && !children) ok = ppcc_calibrate_wait_fit(c, jit, placement, fit);
      child_fitted = child_fitted || (ok && children);
      if (!ok) continue;
      if (placement == PPCC_WAITS_OWN_CORE) fit[1] -= jit ? c->jit_resume_spread_us : c->resume_spread_us;
      resume[n] = fit[0], start[n] = fit[1];
      n++;
    }
    /* the interpreter's spread first ops: 40 of the 42 fits of two
     * calibrations below 0, the medians -0.3 to -0.8 us, where the model
     * charged the program's start a resume of 0.27 to 1.05 (a forward's
     * first op finds its weights where the last forward left them); the
     * JIT's (medians -0.8 to -1.0) left at 0: its first stages already
     * read short on the shipped models */
    bool residual = !j && placement != PPCC_WAITS_SHARING_A_CORE;
    store_wait_fits(placements[placement].resume_us, placements[placement].start_us, resume, start, n, log, j, residual,
                    placements[placement].name, placements[placement].first_op);
  }
  if (log) fprintf(log, "%swait costs: each fit %s\n", jit ? "jit: " : "", children ? "in a process of its own" : "in this process");
  if (path[0]) unlink(path);
  if (made) rmdir(made);
}

ppcc_status ppcc_calibrate_jit_ops(ppcc_calibration *c, const char *const *workloads, int n_workloads,
                                   const ppcc_calib_jit *jit, FILE *log, ppcc_diag *d) {
  sample_set s = {0};
  ppcc_status st = PPCC_OK;
  rt_keep_freed_memory(); /* as ppcc_run */
  static const int ffn[][3] = {{2, 64, 128}, {8, 256, 1024}, {32, 128, 512}, {1, 256, 1024}, {64, 256, 1024},
                               {1, 64, 128},  {24, 64, 128}}; /* one block each */
  cost_key gemm_keys[PPCC_CALIB_MAX_OPS];
  int n_gemm = 0, n_extra = 0;
  double extra[256];
  warm_stats warm = {0};
  for (int i = 0; !st && i < (int)(sizeof ffn / sizeof *ffn); i++) {
    char *text = ffn_model(ffn[i][0], ffn[i][1], ffn[i][2], 1, 1);
    st = text ? sample_jit_workload(text, c, jit, &s, gemm_keys, &n_gemm, extra, &n_extra, &warm, d)
              : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    free(text);
  }
  for (int i = 0; !st && i < n_workloads; i++)
    st = sample_jit_workload(workloads[i], c, jit, &s, gemm_keys, &n_gemm, extra, &n_extra, &warm, d);
  warm_log(log, "JIT workloads and their variants (pairs)", &warm);
  for (int i = 0; !st && i < s.n; i++) {
    ppcc_op_cost k = {0};
    if (!fit_op(&s.ops[i], &k)) continue;
    if (!ppcc_calibration_set_jit_op_cost(c, &k)) break;
    if (log)
      fprintf(log, "jit op %-12s %3d samples: %.3f us + %.4f ns/FLOP + %.4f ns/byte + %.4f ns/weight byte (%.4f beyond the cache)\n", k.name,
              s.ops[i].n, k.call_us, k.ns_per_flop, k.ns_per_byte, k.ns_per_weight_byte,
              k.ns_per_cold_weight_byte);
  }
  rt_sort_doubles(extra, n_extra);
  double call_us = n_extra && extra[n_extra / 2] > 0 ? extra[n_extra / 2] : 0;
  for (int i = 0; !st && i < n_gemm; i++) { /* the runtime's GEMM kernels: the interpreter's costs + the call
                                                 (replacing a fit of the same kernel at shapes that are no GEMM) */
    const ppcc_op_cost *k = ppcc_calibration_op_cost(c, gemm_keys[i]);
    if (!k) continue;
    ppcc_op_cost jk = *k;
    jk.call_us += call_us;
    if (!ppcc_calibration_set_jit_op_cost(c, &jk)) break;
    if (log) fprintf(log, "jit op %-12s the runtime's kernel: the interpreter's cost + %.3f us a call\n", k->name, call_us);
  }
  samples_free(&s);
  if (!st) calibrate_cut(c, jit, log, d);
  if (!st) calibrate_jit_comm(c, jit, log, d);
  if (!st) calibrate_jit_scaling(c, jit, log, d);
  if (!st) calibrate_waits(c, jit, log);
  return st;
}
