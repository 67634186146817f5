/* `ppcc calibrate`: this machine's speeds for the time model of
 * include/ppcc/predict.h, measured on the paths the runtime uses:
 *   gemm_gflops[t-1]      one ppcc_rt_sgemm (OpenBLAS when built with it)
 *                         of 256x256x256 with t kernel threads, as a device
 *                         gets t threads from rt_thread_budget;
 *   elementwise_gbps[t-1] c = a + b over 16 MiB per thread, t threads at
 *                         once (t single-threaded devices streaming
 *                         together), bytes read + written per thread;
 *   elementwise_gflops[t-1] op-table FLOPs per second of the runtime's
 *                         gelu kernel, t threads at once;
 *   copy_gbps[t-1]        memcpy of 16 MiB per thread, t threads at once;
 *   op_overhead_us        the fixed cost of one compute step (overhead_us).
 * Each figure is the best of several runs (the machine may be shared). */
#include <omp.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/predict.h"
#include "rt_internal.h"

#define REPEATS 5

static double best_gemm_gflops(int threads) {
  const int64_t n = 256;
  float *a = rt_alloc(n * n * 4), *b = rt_alloc(n * n * 4), *c = rt_alloc(n * n * 4);
  double best = 0;
  if (a && b && c) {
    for (int64_t i = 0; i < n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.125f;
    rt_thread_budget(1, threads);
    ppcc_rt_sgemm(n, n, n, a, b, false, c); /* warm up: threads, pages */
    for (int r = 0; r < REPEATS; r++) {
      double t = omp_get_wtime();
      ppcc_rt_sgemm(n, n, n, a, b, false, c);
      t = omp_get_wtime() - t;
      double rate = 2.0 * n * n * n / t / 1e9;
      if (rate > best) best = rate;
    }
    ppcc_rt_set_kernel_threads(1);
  }
  rt_free(a);
  rt_free(b);
  rt_free(c);
  return best;
}

/* Per-thread GB/s with `threads` threads streaming at once. */
static double best_stream_gbps(int threads, bool copy) {
  const int64_t n = 4 << 20; /* floats per thread: 16 MiB */
  double best = 0;
  bool ok = true;
#pragma omp parallel num_threads(threads) reduction(&& : ok)
  {
    float *a = rt_alloc(n * 4), *b = rt_alloc(n * 4), *c = rt_alloc(n * 4);
    ok = a && b && c;
    if (ok) {
      for (int64_t i = 0; i < n; i++) a[i] = b[i] = c[i] = (float)i;
    }
#pragma omp barrier
    for (int r = 0; r < REPEATS; r++) {
      double t = omp_get_wtime();
      if (ok && copy) memcpy(c, a, (size_t)n * 4);
      else if (ok)
        for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
      t = omp_get_wtime() - t;
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

/* The fixed cost of one compute step as the interpreter takes it: a fresh
 * result buffer, the kernel dispatch (an elementwise add of 8 floats)
 * and the two clock reads of its timeline span; the mean over many
 * calls (a step's real cost, not its luckiest). */
/* GFLOP/s (op-table FLOPs) of the runtime's gelu kernel over 64 Ki floats
 * per thread, `threads` threads at once: the arithmetic of elementwise ops. */
static double best_elementwise_gflops(int threads) {
  const ppcc_op_info *gelu = ppcc_op_lookup("gelu");
  const int64_t n = 1 << 16; /* in cache, as the activations of a step */
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
    for (int64_t i = 0; ok && i < n; i++) x[i] = (float)(i % 1000) * 0.01f - 5;
    ppcc_tensor in = {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = x};
    ppcc_tensor out = {.dtype = PPCC_F32, .rank = 1, .shape = {n}, .data = y};
    ppcc_diag d;
    ppcc_diag_init(&d, NULL, NULL);
#pragma omp barrier
    for (int r = 0; r < REPEATS; r++) {
      double t = omp_get_wtime();
      if (ok) ppcc_rt_run_kernel(&op, &in, &out, &d);
      t = omp_get_wtime() - t;
#pragma omp barrier
#pragma omp critical
      if (omp_get_thread_num() == 0 && flops / t / 1e9 > best) best = flops / t / 1e9;
    }
    rt_free(x);
    rt_free(y);
  }
  return ok && best > 0 ? best : 0;
}

static double overhead_us(void) {
  const ppcc_op_info *add = ppcc_op_lookup("add");
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {0};
  int ins[2] = {0, 1}, outs[1] = {2};
  ppcc_op op = {.info = add, .n_in = 2, .n_out = 1, .in = ins, .out = outs};
  ppcc_tensor in[2] = {{.dtype = PPCC_F32, .rank = 1, .shape = {8}, .data = a},
                       {.dtype = PPCC_F32, .rank = 1, .shape = {8}, .data = b}};
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  const int calls = 20000;
  double best = 1e9;
  for (int r = 0; add && r < REPEATS; r++) {
    double t = omp_get_wtime();
    for (int i = 0; i < calls; i++) {
      ppcc_tensor out = {.dtype = PPCC_F32, .rank = 1, .shape = {8}, .data = rt_alloc(32)};
      double t0 = omp_get_wtime();
      if (out.data) ppcc_rt_run_kernel(&op, in, &out, &d);
      rt_free(out.data);
      (void)(omp_get_wtime() - t0);
    }
    t = (omp_get_wtime() - t) / calls;
    if (t < best) best = t;
  }
  return add ? best * 1e6 : 2.0;
}

ppcc_status ppcc_calibrate(ppcc_calibration *c, int max_threads, FILE *log, ppcc_diag *d) {
  ppcc_calibration_defaults(c);
  int cores = omp_get_num_procs();
  int n = max_threads > 0 && max_threads < cores ? max_threads : cores;
  if (n > PPCC_CALIB_MAX_THREADS) n = PPCC_CALIB_MAX_THREADS;
  c->cores = cores;
  c->n_threads = n;
  for (int t = 1; t <= n; t++) {
    c->gemm_gflops[t - 1] = best_gemm_gflops(t);
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
  if (log) fprintf(log, "kernel call overhead %.3f us (%d cores)\n", c->op_overhead_us, cores);
  c->calibrated = true;
  return PPCC_OK;
}
