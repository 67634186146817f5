/* x86 SIMD pieces the kernels share (include after <immintrin.h>, on x86
 * only). */
#ifndef PPCC_RT_SIMD_X86_H
#define PPCC_RT_SIMD_X86_H

/* The sum of v's 8 lanes: (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then
 * 0+1. Every kernel's row sums take this order (gemm_small.c's nt_plain),
 * so that a row's bits do not depend on which kernel computed it. */
__attribute__((target("avx2"))) static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#endif
