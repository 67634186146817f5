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
 *   op_overhead_us        the fixed cost of one compute step (overhead_us).
 * Each figure is the best of several runs (the machine may be shared). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "ppcc/predict.h"
#include "rt_internal.h"

#define REPEATS 10

/* GFLOP/s of an M x n x n sgemm, B transposed as a linear layer's weight,
 * with `threads` kernel threads. */
static double best_gemm_gflops(int threads, int64_t m, int64_t n) {
  float *a = rt_alloc(m * n * 4), *b = rt_alloc(n * n * 4), *c = rt_alloc(m * n * 4);
  double best = 0;
  if (a && b && c) {
    for (int64_t i = 0; i < m * n; i++) a[i] = (float)(i % 7) * 0.125f;
    for (int64_t i = 0; i < n * n; i++) b[i] = (float)(i % 5) * 0.125f;
    rt_thread_budget(1, threads);
    ppcc_rt_sgemm(m, n, n, a, b, true, c); /* warm up: threads, pages */
    for (int r = 0; r < REPEATS * 4; r++) {
      double t = omp_get_wtime();
      ppcc_rt_sgemm(m, n, n, a, b, true, c);
      t = omp_get_wtime() - t;
      double rate = 2.0 * m * n * n / t / 1e9;
      if (rate > best) best = rate;
    }
    ppcc_rt_set_kernel_threads(1);
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
 * executor (one device) runs a chain of STEPS adds of 8 floats and its
 * busy time (the --check-plan measurement) is divided by the steps; the
 * smallest over several runs. Falls back to a bare kernel call. */
#define STEPS 256

static char *chain_model(void) {
  size_t cap = 128 + (size_t)STEPS * 96, off = 0;
  char *m = malloc(cap);
  if (!m) return NULL;
  off += (size_t)snprintf(m + off, cap - off,
                          "{\"ppcc\": 1, \"name\": \"calibrate\", \"devices\": 1, \"params\": [], \"inputs\": "
                          "[{\"name\": \"t0\", \"dtype\": \"f32\", \"shape\": [8], \"devices\": [0]}], \"ops\": [");
  for (int i = 0; i < STEPS; i++)
    off += (size_t)snprintf(m + off, cap - off, "%s{\"op\": \"add\", \"in\": [\"t%d\", \"t%d\"], \"out\": [\"t%d\"]}",
                            i ? ", " : "", i, i, i + 1);
  snprintf(m + off, cap - off, "], \"outputs\": [\"t%d\"]}", STEPS);
  return m;
}

static double overhead_us(void) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  char *text = chain_model();
  ppcc_graph *g = text ? ppcc_load_model_string(text, strlen(text), &d) : NULL;
  free(text);
  double best = 1e9;
  ppcc_run_options ro = {.have_random_seed = true, .random_seed = 1};
  ppcc_run_data data;
  bool loaded = g && !ppcc_run_passes(g, NULL, NULL, &d) && !ppcc_run_data_load(g, &ro, &data, &d);
  for (int r = 0; loaded && r < REPEATS * 2; r++) {
    int64_t peak = 0;
    double busy = 0;
    int *stage = calloc((size_t)g->n_ops, sizeof *stage);
    ppcc_plan_measure m = {.op_stage = stage, .n_stages = 1, .peak_bytes = &peak, .stage_busy_ms = &busy};
    ppcc_exec_options eo = {.threads = 1, .measure = &m};
    ppcc_host_tensor out = {0};
    if (stage && !ppcc_execute(g, &data, &eo, &out, NULL, &d) && m.filled && busy * 1e3 / STEPS < best)
      best = busy * 1e3 / STEPS;
    ppcc_host_tensor_free(&out);
    free(stage);
  }
  if (loaded) ppcc_run_data_free(&data);
  ppcc_graph_free(g);
  return best < 1e9 ? best : 2.0;
}

ppcc_status ppcc_calibrate(ppcc_calibration *c, int max_threads, FILE *log, ppcc_diag *d) {
  ppcc_calibration_defaults(c);
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
    fprintf(log, "compute step overhead %.3f us, GEMM call %.3f us more (%d cores)\n", c->op_overhead_us,
            c->gemm_call_us, cores);
  c->calibrated = true;
  return PPCC_OK;
}
