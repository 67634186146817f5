/* `ppcc calibrate`: this machine's speeds for the time model of
 * include/ppcc/predict.h, measured on the paths the runtime uses:
 *   gemm_gflops[t-1]      one ppcc_rt_sgemm (OpenBLAS when built with it)
 *                         of 256x256x256 with t kernel threads, as a device
 *                         gets t threads from rt_thread_budget;
 *   elementwise_gbps[t-1] c = a + b over 16 MiB per thread, t threads at
 *                         once (t single-threaded devices streaming
 *                         together), bytes read + written per thread;
 *   copy_gbps[t-1]        memcpy of 16 MiB per thread, t threads at once;
 *   op_overhead_us        one 1x1x1 ppcc_rt_sgemm with a fresh 64-byte
 *                         result buffer: the fixed cost of a kernel call.
 * Each figure is the best of several runs (the machine may be shared). */
#include <omp.h>
#include <string.h>
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

static double overhead_us(void) {
  float a = 1, b = 2;
  double best = 1e9;
  for (int r = 0; r < 2000; r++) {
    double t = omp_get_wtime();
    float *c = rt_alloc(64);
    if (c) ppcc_rt_sgemm(1, 1, 1, &a, &b, false, c);
    rt_free(c);
    t = omp_get_wtime() - t;
    if (t < best) best = t;
  }
  return best * 1e6;
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
    if (c->gemm_gflops[t - 1] <= 0 || c->elementwise_gbps[t - 1] <= 0 || c->copy_gbps[t - 1] <= 0)
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory measuring the machine");
    if (log)
      fprintf(log, "threads %d: gemm %.2f GFLOP/s, elementwise %.2f GB/s per thread, copy %.2f GB/s per thread\n", t,
              c->gemm_gflops[t - 1], c->elementwise_gbps[t - 1], c->copy_gbps[t - 1]);
  }
  c->op_overhead_us = overhead_us();
  if (log) fprintf(log, "kernel call overhead %.3f us (%d cores)\n", c->op_overhead_us, cores);
  c->calibrated = true;
  return PPCC_OK;
}
