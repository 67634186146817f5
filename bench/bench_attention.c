/* Attention at prefill against the linear layers' GEMMs (issue 23: "attention
 * as GEMMs with a fused softmax at >= 50 % of the GEMM rate"), not a test.
 * The model (hidden 1024, 16 query / 4 kv heads of 64, ffn 2816) at
 * a prefill of S tokens: ppcc_rt_attention_f32 (causal, both backends'
 * kernel: per kv head two GEMMs with scale, mask and softmax fused between)
 * against ppcc_rt_sgemm on the q/o ([S,1024].[1024,1024]^T) and gate/up
 * ([S,1024].[2816,1024]^T) shapes. Rounds alternate the three; each prints
 * its best time's GFLOP/s. Attention FLOPs count only the products a
 * causal prefill needs, 2 (D + Dv) S (S + 1) / 2 per query head (the
 * scores of visible keys and their weighted values; the masked upper
 * triangle is not work, and the kernel skips most of it), so its rate and
 * the GEMMs' count useful multiply-adds alike; the rate were the whole
 * square counted (llama.cpp's test-backend-ops convention) is printed
 * beside.
 *   bench_attention [S] [THREADS] [ROUNDS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "ppcc/runtime.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static float *filled(int64_t n, unsigned seed) {
  float *p = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; p && i < n; i++) p[i] = (float)((seed = seed * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { CALLS = 5 };

int main(int argc, char **argv) {
  ppcc_rt_tame_threads(argv);
  int64_t S = argc > 1 ? atol(argv[1]) : 128, H = 1024, F = 2816, Hq = 16, Hkv = 4, D = 64;
  int threads = argc > 2 ? atoi(argv[2]) : 2, rounds = argc > 3 ? atoi(argv[3]) : 9;
  if (S < 1 || threads < 1 || rounds < 1) {
    fprintf(stderr, "usage: bench_attention [S >= 1] [THREADS >= 1] [ROUNDS >= 1]\n");
    return 2;
  }
  ppcc_rt_set_kernel_threads(threads);
  float *q = filled(Hq * S * D, 1), *k = filled(Hkv * S * D, 2), *v = filled(Hkv * S * D, 3), *o = filled(Hq * S * D, 4);
  float *x = filled(S * H, 5), *wq = filled(H * H, 6), *wf = filled(F * H, 7), *y = filled(S * F, 8);
  if (!q || !k || !v || !o || !x || !wq || !wf || !y) return 1;
  double square = 2.0 * (double)(Hq * S * S * 2 * D), causal = 2.0 * (double)(Hq * 2 * D) * (double)(S * (S + 1) / 2);
  double flops[3] = {causal, 2.0 * (double)(S * H * H), 2.0 * (double)(S * F * H)};
  double *times[3];
  for (int c = 0; c < 3; c++) times[c] = calloc((size_t)rounds, sizeof(double));
  for (int r = -1; r < rounds; r++) /* round -1 warms up */
    for (int c = 0; c < 3; c++) {
      double t0 = now_s();
      for (int i = 0; i < CALLS; i++) {
        if (c == 0 && ppcc_rt_attention_f32(1, Hq, S, D, Hkv, S, D, 1.0 / sqrt((double)D), true, 0, 0, NULL, false, false, q, k, v, o))
          return 1;
        if (c == 1) ppcc_rt_sgemm(S, H, H, x, wq, true, y);
        if (c == 2) ppcc_rt_sgemm(S, F, H, x, wf, true, y);
      }
      if (r >= 0) times[c][r] = (now_s() - t0) / CALLS;
    }
  const char *names[3] = {"attention (causal FLOPs, GQA 16/4 x 64)", "linear q/o [S,1024].[1024,1024]^T", "linear gate/up [S,1024].[2816,1024]^T"};
  double best[3], median[3];
  for (int c = 0; c < 3; c++) {
    qsort(times[c], (size_t)rounds, sizeof(double), cmp_double);
    best[c] = flops[c] / times[c][0] * 1e-9, median[c] = flops[c] / times[c][rounds / 2] * 1e-9;
    printf("%-40s S=%lld threads %d: best %.1f GFLOP/s (%.3f ms), median %.1f GFLOP/s\n", names[c], (long long)S,
           threads, best[c], times[c][0] * 1e3, median[c]);
  }
  double gemm_best = best[1] > best[2] ? best[1] : best[2], gemm_median = median[1] > median[2] ? median[1] : median[2];
  printf("attention / linear GEMM rate (causal FLOPs): best %.2f, median %.2f (whole square counted: %.2f, %.2f)\n",
         best[0] / gemm_best, median[0] / gemm_median, best[0] / gemm_best * square / causal,
         median[0] / gemm_median * square / causal);
  return 0;
}
