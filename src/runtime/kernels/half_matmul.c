/* Linear with f16 or bf16 weights kept as stored and f32 activations
 * (issue 24): y[M, N] = x[M, K] . w[N, K]^T. The weight is read once, as
 * it lies in the mapped file: each thread takes a range of output rows
 * and converts a block of them to f32 in a small buffer of its own (a few
 * rows, sized to stay in L2), then the f32 [N, K] tile kernel of
 * gemm_small.c multiplies every activation row by that block. Many rows
 * (prefill) share each conversion, so its cost is paid once per weight
 * row whatever M is. One row (decode) with AVX-512 or AVX2 skips the
 * buffer: rows_avx512 / rows_avx2 convert as they multiply, with the tile
 * kernel's sums.
 *
 * The conversion is exact (f16 and bf16 are subsets of f32): F16C's
 * vcvtph2ps and a 16-bit shift for bf16, 16 lanes with AVX-512 and 8 with
 * AVX2 (chosen by CPUID, as the tile kernel), else ppcc_f16_to_f32 /
 * ppcc_bf16_to_f32. So y equals the f32 product of the converted weight
 * bit for bit, and a row's bits depend neither on M nor on the threads
 * (the tile kernel's promise, kept by the one-row kernels). */
#include <stdatomic.h>
#include <string.h>
#include "ppcc/quant.h"
#include "kernels.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include "simd_x86.h"
#define HM_X86 1
#endif

/* f32 bytes of one thread's block of converted rows (L2-sized). */
#define BLOCK_BYTES (96 * 1024)

#ifdef HM_X86
/* F16C (CPUID leaf 1, ECX bit 29): every AVX2 CPU ppcc meets has it, but
 * it is a separate feature bit. */
static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
}

__attribute__((target("avx512f"))) static void to_f32_avx512(bool bf16, const uint16_t *src, float *dst, int64_t n) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(src + j));
    __m512 f = bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
    _mm512_storeu_ps(dst + j, f);
  }
  for (; j < n; j++) dst[j] = bf16 ? ppcc_bf16_to_f32(src[j]) : ppcc_f16_to_f32(src[j]);
}

__attribute__((target("avx2,f16c"))) static void to_f32_avx2(bool bf16, const uint16_t *src, float *dst, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + j));
    __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(dst + j, f);
  }
  for (; j < n; j++) dst[j] = bf16 ? ppcc_bf16_to_f32(src[j]) : ppcc_f16_to_f32(src[j]);
}
#endif

#ifdef HM_X86
#define HM_AVX512 __attribute__((target("avx512f,avx2,fma")))

/* The n < 16 weights of a row's tail as f32 (exact), for the one-row kernels. */
static inline void half_tail(bool bf16, const uint16_t *src, int64_t n, float *dst) {
  for (int64_t j = 0; j < n; j++) dst[j] = bf16 ? ppcc_bf16_to_f32(src[j]) : ppcc_f16_to_f32(src[j]);
}

/* 16 weights at src as f32 (exact). */
HM_AVX512 static inline __m512 half16(bool bf16, const uint16_t *src) {
  __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)src);
  return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

/* Decode (M = 1) with AVX-512: y[r] = x . weight row r for R rows (K
 * apart), read straight from the f16/bf16 weight: the block path wrote
 * each row to the f32 buffer and read it back, four bytes through L2 for
 * each weight byte streamed in. The sums are nt16_row_8's and
 * nt16_tile_1_*'s of gemm_small.c (lane-wise fma over k in order, the
 * masked tail last, its lanes past K zero, then _mm512_reduce_add_ps), so
 * a row's bits are the block path's whatever M. R rows interleaved keep R fma chains in
 * flight. Each step prefetches (into L2) the lines the next R rows will
 * read at the same k: the weight streams from L3 or memory, where the
 * hardware prefetcher alone kept a core at 7-8 GB/s (bench_qmatvec f16
 * 2816 1024, 40 copies); with this 4 rows at a time 12-14 GB/s (fixed
 * distances of 1-4 KiB 11, 8-16 KiB 12-13, into L1 about 5 % slower; 2 or
 * 8 rows no faster). */
HM_AVX512 static inline __attribute__((always_inline)) void rows_avx512(int R, bool bf16, int64_t K, const float *x,
                                                                        const uint16_t *w, float *y) {
  __m512 acc[4];
  for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) { /* 32 weights: one 64-byte line per row */
    for (int r = 0; r < R; r++) _mm_prefetch((const char *)(w + (R + r) * K + k), _MM_HINT_T1);
    __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
    for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(x0, half16(bf16, w + r * K + k), acc[r]);
    for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(x1, half16(bf16, w + r * K + k + 16), acc[r]);
  }
  if (k + 16 <= K) {
    __m512 x0 = _mm512_loadu_ps(x + k);
    for (int r = 0; r < R; r++) acc[r] = _mm512_fmadd_ps(x0, half16(bf16, w + r * K + k), acc[r]);
    k += 16;
  }
  if (k < K) {
    __m512 x0 = _mm512_maskz_loadu_ps((__mmask16)((1u << (K - k)) - 1), x + k);
    for (int r = 0; r < R; r++) {
      float t[16] = {0};
      half_tail(bf16, w + r * K + k, K - k, t);
      acc[r] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(t), acc[r]);
    }
  }
  for (int r = 0; r < R; r++) y[r] = _mm512_reduce_add_ps(acc[r]);
}

HM_AVX512 static void row4_avx512(bool bf16, int64_t K, const float *x, const uint16_t *w, float *y) {
  rows_avx512(4, bf16, K, x, w, y);
}
HM_AVX512 static void row1_avx512(bool bf16, int64_t K, const float *x, const uint16_t *w, float *y) {
  rows_avx512(1, bf16, K, x, w, y);
}

#define HM_AVX2 __attribute__((target("avx2,fma,f16c")))

/* 8 weights at src as f32 (exact). */
HM_AVX2 static inline __m256 half8(bool bf16, const uint16_t *src) {
  __m128i h = _mm_loadu_si128((const __m128i *)(const void *)src);
  return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

/* rows_avx512 with AVX2 and F16C: the sums of nt_tile_1_4 and
 * nt_tile_1_1 (8 lanes over k in order, the tail's lanes past K zero,
 * then hsum8), the same prefetch. */
HM_AVX2 static inline __attribute__((always_inline)) void rows_avx2(int R, bool bf16, int64_t K, const float *x,
                                                                    const uint16_t *w, float *y) {
  __m256 acc[4];
  for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    for (int r = 0; r < R; r++) _mm_prefetch((const char *)(w + (R + r) * K + k), _MM_HINT_T1);
    for (int q = 0; q < 32; q += 8) {
      __m256 xq = _mm256_loadu_ps(x + k + q);
      for (int r = 0; r < R; r++) acc[r] = _mm256_fmadd_ps(xq, half8(bf16, w + r * K + k + q), acc[r]);
    }
  }
  for (; k + 8 <= K; k += 8) {
    __m256 xq = _mm256_loadu_ps(x + k);
    for (int r = 0; r < R; r++) acc[r] = _mm256_fmadd_ps(xq, half8(bf16, w + r * K + k), acc[r]);
  }
  if (k < K) {
    float xt[8] = {0};
    memcpy(xt, x + k, (size_t)(K - k) * sizeof *xt);
    __m256 xq = _mm256_loadu_ps(xt);
    for (int r = 0; r < R; r++) {
      float t[8] = {0};
      half_tail(bf16, w + r * K + k, K - k, t);
      acc[r] = _mm256_fmadd_ps(xq, _mm256_loadu_ps(t), acc[r]);
    }
  }
  for (int r = 0; r < R; r++) y[r] = hsum8(acc[r]);
}

HM_AVX2 static void row4_avx2(bool bf16, int64_t K, const float *x, const uint16_t *w, float *y) {
  rows_avx2(4, bf16, K, x, w, y);
}
HM_AVX2 static void row1_avx2(bool bf16, int64_t K, const float *x, const uint16_t *w, float *y) {
  rows_avx2(1, bf16, K, x, w, y);
}
#endif

/* y[0..R) for R weight rows (4, or 1) K apart. */
typedef void (*rows_fn)(bool bf16, int64_t K, const float *x, const uint16_t *w, float *y);

static void to_f32_c(bool bf16, const uint16_t *src, float *dst, int64_t n) {
  for (int64_t j = 0; j < n; j++) dst[j] = bf16 ? ppcc_bf16_to_f32(src[j]) : ppcc_f16_to_f32(src[j]);
}

typedef void (*convert_fn)(bool bf16, const uint16_t *src, float *dst, int64_t n);

/* The converter for the kernels' instruction set (rt_simd_level), and
 * its one-row kernels of 4 and 1 rows (NULL: one row takes the block
 * path). */
static convert_fn converter(rows_fn *row4, rows_fn *row1) {
  *row4 = *row1 = NULL;
#ifdef HM_X86
  static int f16c = -1;
  if (f16c < 0) f16c = cpu_has_f16c();
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    *row4 = row4_avx512, *row1 = row1_avx512;
    return to_f32_avx512;
  }
  if (rt_simd_level() >= RT_SIMD_AVX2 && f16c) {
    *row4 = row4_avx2, *row1 = row1_avx2;
    return to_f32_avx2;
  }
#endif
  return to_f32_c;
}

typedef struct half_job {
  bool bf16;
  convert_fn convert;
  rows_fn row4, row1; /* one activation row's kernels, or NULL */
  int64_t M, N, K, rows; /* rows: weight rows per converted block */
  const float *x;
  const uint16_t *w;
  float *y;
  atomic_bool failed; /* a part had no buffer */
} half_job;

static void half_part(void *arg, int part, int parts) {
  half_job *j = arg;
  int64_t n0, n1;
  rt_part_range(j->N, 4, part, parts, &n0, &n1);
  if (n1 <= n0) return;
  if (j->M == 1 && j->row4) {
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) j->row4(j->bf16, j->K, j->x, j->w + n * j->K, j->y + n);
    for (; n < n1; n++) j->row1(j->bf16, j->K, j->x, j->w + n * j->K, j->y + n);
    return;
  }
  float *block = rt_reuse_alloc(j->rows * j->K * 4);
  if (!block) {
    atomic_store(&j->failed, true);
    return;
  }
  for (int64_t n = n0; n < n1; n += j->rows) {
    int64_t r = n1 - n < j->rows ? n1 - n : j->rows;
    j->convert(j->bf16, j->w + n * j->K, block, r * j->K);
    rt_sgemm_small_cols(j->M, 0, r, j->N, j->K, j->x, block, true, j->y + n);
  }
  rt_reuse_free(block);
}

bool ppcc_rt_hlinear_f32(ppcc_dtype wt, int64_t M, int64_t N, int64_t K, const float *x, const void *w, float *y) {
  if ((wt != PPCC_F16 && wt != PPCC_BF16) || M < 0 || N < 0 || K < 0) return false;
  if (M == 0 || N == 0) return true;
  if (K == 0) {
    memset(y, 0, (size_t)(M * N) * sizeof *y);
    return true;
  }
  int64_t rows = BLOCK_BYTES / (K * 4) / 4 * 4;
  half_job j = {.bf16 = wt == PPCC_BF16, .M = M, .N = N, .K = K, .rows = rows < 4 ? 4 : rows, .x = x, .w = w, .y = y,
               .failed = false};
  j.convert = converter(&j.row4, &j.row1);
  int threads = rt_in_pool_part() ? 1 : rt_kernel_threads();
  int64_t max_parts = N * K / (64 * 1024); /* a part must stream enough weight to pay for waking a worker */
  int parts = threads < max_parts ? threads : (int)(max_parts > 1 ? max_parts : 1);
  rt_parallel_parts(parts, half_part, &j);
  return !atomic_load(&j.failed);
}
