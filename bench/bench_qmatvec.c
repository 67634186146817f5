/* The one-row (decode) matvec with block-quantized weights (issue 24), not
 * a test: ppcc_rt_qlinear_f32 with M = 1 on an N x K weight of FORMAT
 * (q8_0, q4_k, q6_k ...), cycling through COPIES distinct weights: 1
 * keeps the weight in L2 (the kernel's compute), 40 of a few MiB each
 * streams them from L3 or memory as decoding does. THREADS kernel
 * threads, ISA forces an instruction set (ppcc_rt_quant_set_isa: c, avx2,
 * avx2-vnni, avx512-vnni). M activation rows (default 1; more: the
 * prefill path). Prints microseconds per call, min and median of ROUNDS
 * rounds, the weight bytes per second and the multiply-adds per second
 * at the median. FORMAT f16 or bf16: ppcc_rt_hlinear_f32 on a weight of
 * that dtype (half_matmul.c; ISA c, avx2 or avx512 caps the kernels'
 * level, rt_set_simd_level).
 *   bench_qmatvec FORMAT [N] [K] [COPIES] [THREADS] [ROUNDS] [ISA] [M]
 * (defaults 2816 1024 40 1 7 best 1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ppcc/graph.h"
#include "ppcc/quant.h"
#include "ppcc/runtime.h"
#include "../src/runtime/kernels/kernels.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "q4_k";
  long long N = argc > 2 ? atoll(argv[2]) : 2816, K = argc > 3 ? atoll(argv[3]) : 1024;
  int copies = argc > 4 ? atoi(argv[4]) : 40, threads = argc > 5 ? atoi(argv[5]) : 1;
  int rounds = argc > 6 ? atoi(argv[6]) : 7;
  long long M = argc > 8 ? atoll(argv[8]) : 1;
  ppcc_dtype dt;
  const ppcc_block_format *f = ppcc_block_format_named(name);
  bool is_half = strcmp(name, "f16") == 0 || strcmp(name, "bf16") == 0;
  if (!f || !ppcc_dtype_from_name(name, &dt) || N < 1 || K < 1 || K % f->block || copies < 1 || rounds < 1 ||
      rounds > 99 || M < 1 || M > 4096) {
    fprintf(stderr, "usage: bench_qmatvec FORMAT [N] [K] [COPIES] [THREADS] [ROUNDS] [ISA] [M]\n");
    return 2;
  }
  static const char *const levels[] = {[RT_SIMD_NONE] = "c", [RT_SIMD_AVX2] = "avx2", [RT_SIMD_AVX512] = "avx512"};
  if (argc > 7 && is_half)
    for (int l = RT_SIMD_NONE; l <= RT_SIMD_AVX512; l++)
      if (strcmp(argv[7], levels[l]) == 0) rt_set_simd_level(l);
  if (argc > 7 && !is_half && strcmp(argv[7], "best") != 0 && !ppcc_rt_quant_set_isa(argv[7])) {
    fprintf(stderr, "bench_qmatvec: no instruction set '%s' here\n", argv[7]);
    return 1;
  }
  ppcc_rt_set_kernel_threads(threads);
  size_t blocks = (size_t)(N * (K / f->block)), bytes = blocks * (size_t)f->bytes;
  unsigned char *w = malloc(bytes * (size_t)copies);
  float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N));
  if (!w || !x || !y) return 1;
  unsigned seed = 1;
  for (size_t i = 0; i < bytes * (size_t)copies; i++) w[i] = (unsigned char)((seed = seed * 1103515245u + 12345u) >> 16);
  for (size_t b = 0; b < blocks * (size_t)copies; b++) /* finite, normal scales: 2^-7 in f16 */
    for (int s = 0; s < 3 && f->scale_at[s] >= 0; s++) memcpy(w + b * (size_t)f->bytes + f->scale_at[s], "\x00\x20", 2);
  if (is_half) /* finite: the exponent bits of f16 (and bf16) below all ones */
    for (size_t b = 1; b < bytes * (size_t)copies; b += 2) w[b] &= 0x3f;
  for (long long i = 0; i < M * K; i++) x[i] = (float)((seed = seed * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
  int calls = copies * (copies < 200 ? 200 / copies : 1);
  if (M > 1) calls = copies < 20 ? 20 / copies * copies : copies; /* a prefill call takes ~100x longer */
  double t[99];
  for (int r = 0; r < rounds; r++) {
    double t0 = now_s();
    for (int c = 0; c < calls; c++)
      if (!(is_half ? ppcc_rt_hlinear_f32 : ppcc_rt_qlinear_f32)(dt, M, N, K, x, w + bytes * (size_t)(c % copies), y))
        return 1;
    t[r] = (now_s() - t0) / calls;
  }
  qsort(t, (size_t)rounds, sizeof t[0], cmp_double);
  double med = t[rounds / 2];
  printf("%s %lld x %lld, %lld rows, %d copies, %d threads, %s: us/call min %.1f median %.1f, %.2f GB/s, %.1f GMAC/s\n",
         name, N, K, M, copies, threads, is_half ? levels[rt_simd_level()] : ppcc_rt_quant_isa(), t[0] * 1e6, med * 1e6, (double)bytes / med * 1e-9,
         (double)(M * N * K) / med * 1e-9);
  free(w);
  free(x);
  free(y);
  return 0;
}
