/* Products of a few rows (M <= RT_SMALL_M: a decode step, a small batch)
 * that read the weight once, as it lies. OpenBLAS's sgemm repacks all of
 * B on every call (18.8 % of decode samples against 2.9 % in the multiply)
 * and sgemv reads B once per row. Two layouts of B:
 *   [N, K] (linear weights): C[i, n] is the dot product of A row i and B
 *     row n: tiles of 3 A rows x 4 B rows, eight lanes per accumulator, the
 *     last K % 8 through masked loads; the four B rows stream at once.
 *   [K, N]: C row i is the sum over k of A[i, k] * B row k: tiles of 6 A
 *     rows x 16 columns, K walked in blocks of KB rows (KB rows of B stream
 *     at once, C's tile is reloaded per block).
 * Every C element is summed in the same order whatever M, its tile, its
 * thread or the column range, so a row's bits never depend on the batch
 * (the row-invariant mode computes every product here). AVX-512 or
 * AVX2+FMA as the CPU has them (checked once; the AVX-512 tiles are twice
 * as wide: 4 x 4 dot tiles of 16 lanes, 8 rows x 32 columns), else plain C
 * with the same structure. */
#include <string.h>
#include "kernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#include "simd_x86.h"
#define HAVE_X86 1
#endif

#define KB 16

static int simd_state = -1; /* -1 unknown, else an RT_SIMD_* level */

static int cpu_simd_level(void) {
#ifdef HAVE_X86
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return RT_SIMD_NONE;
  return __builtin_cpu_supports("avx512f") ? RT_SIMD_AVX512 : RT_SIMD_AVX2;
#else
  return RT_SIMD_NONE;
#endif
}

int rt_simd_level(void) {
  if (simd_state < 0) simd_state = cpu_simd_level();
  return simd_state;
}

bool rt_simd_enabled(void) { return rt_simd_level() >= RT_SIMD_AVX2; }

int rt_set_simd_level(int level) {
  int was = rt_simd_level(), best = cpu_simd_level();
  simd_state = level < best ? (level > 0 ? level : 0) : best;
  return was;
}

bool rt_set_simd(bool on) {
  bool was = rt_simd_enabled();
  rt_set_simd_level(on ? RT_SIMD_AVX512 : RT_SIMD_NONE);
  return was;
}

/* ---------------- plain C ---------------- */

/* C[i, n] for i in [0, M), n in [n0, n1): B is [N, K]. */
static void nt_plain(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                     float *C, int64_t ldc) {
  for (int64_t n = n0; n < n1; n++) {
    const float *b = B + n * ldb;
    for (int64_t i = 0; i < M; i++) {
      const float *a = A + i * K;
      float s[8] = {0};
      int64_t k = 0;
      for (; k + 8 <= K; k += 8)
        for (int l = 0; l < 8; l++) s[l] += a[k + l] * b[k + l];
      for (int l = 0; k + l < K; l++) s[l] += a[k + l] * b[k + l];
      C[i * ldc + n] = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
    }
  }
}

/* B is [K, N]. */
static void nn_plain(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                     float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; i++) memset(C + i * ldc + n0, 0, (size_t)(n1 - n0) * 4);
  for (int64_t k = 0; k < K; k++) {
    const float *b = B + k * ldb;
    for (int64_t i = 0; i < M; i++) {
      float a = A[i * K + k], *c = C + i * ldc;
      for (int64_t n = n0; n < n1; n++) c[n] += a * b[n];
    }
  }
}

/* ---------------- AVX2 + FMA ---------------- */
#ifdef HAVE_X86
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256i tail_mask(int64_t left) {
  static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256((const __m256i *)(m + 8 - (left < 0 ? 0 : left < 8 ? left : 8)));
}

/* R A rows x NB B rows of C (R <= 3, NB <= 4), full K. */
#define NT_TILE(R, NB)                                                                                         \
  AVX2 static void nt_tile_##R##_##NB(int64_t K, const float *A, const float *B, int64_t ldb, float *C,      \
                                       int64_t ldc) {                                                          \
    __m256 acc[R][NB];                                                                                         \
    _Pragma("GCC unroll 8")                                                                                    \
    for (int i = 0; i < R; i++)                                                                                \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int j = 0; j < NB; j++) acc[i][j] = _mm256_setzero_ps();                                            \
    int64_t k = 0;                                                                                             \
    for (; k + 8 <= K; k += 8) {                                                                               \
      __m256 b[NB];                                                                                            \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int j = 0; j < NB; j++) b[j] = _mm256_loadu_ps(B + j * ldb + k);                                      \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int i = 0; i < R; i++) {                                                                            \
        __m256 a = _mm256_loadu_ps(A + i * K + k);                                                             \
        _Pragma("GCC unroll 8")                                                                                \
        for (int j = 0; j < NB; j++) acc[i][j] = _mm256_fmadd_ps(a, b[j], acc[i][j]);                          \
      }                                                                                                        \
    }                                                                                                          \
    if (k < K) {                                                                                               \
      __m256i m = tail_mask(K - k);                                                                            \
      __m256 b[NB];                                                                                            \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int j = 0; j < NB; j++) b[j] = _mm256_maskload_ps(B + j * ldb + k, m);                                \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int i = 0; i < R; i++) {                                                                            \
        __m256 a = _mm256_maskload_ps(A + i * K + k, m);                                                       \
        _Pragma("GCC unroll 8")                                                                                \
        for (int j = 0; j < NB; j++) acc[i][j] = _mm256_fmadd_ps(a, b[j], acc[i][j]);                          \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 8")                                                                                    \
    for (int i = 0; i < R; i++)                                                                                \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int j = 0; j < NB; j++) C[i * ldc + j] = hsum8(acc[i][j]);                                          \
  }
NT_TILE(1, 4)
NT_TILE(2, 4)
NT_TILE(3, 4)
NT_TILE(1, 1)
NT_TILE(2, 1)
NT_TILE(3, 1)

typedef void (*nt_tile_fn)(int64_t, const float *, const float *, int64_t, float *, int64_t);
static const nt_tile_fn nt4[4] = {NULL, nt_tile_1_4, nt_tile_2_4, nt_tile_3_4};
static const nt_tile_fn nt1[4] = {NULL, nt_tile_1_1, nt_tile_2_1, nt_tile_3_1};

/* Columns n0..n1 of an [N,K] weight: 4 columns at a time, then one, each
 * over row blocks of `rows` (the tile tables indexed by the block's rows). */
static void nt_drive(int rows, const nt_tile_fn *t4, const nt_tile_fn *t1, int64_t M, int64_t n0, int64_t n1,
                     int64_t K, const float *A, const float *B, int64_t ldb, float *C, int64_t ldc) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4)
    for (int64_t i = 0; i < M; i += rows) {
      int r = M - i < rows ? (int)(M - i) : rows;
      t4[r](K, A + i * K, B + n * ldb, ldb, C + i * ldc + n, ldc);
    }
  for (; n < n1; n++)
    for (int64_t i = 0; i < M; i += rows) {
      int r = M - i < rows ? (int)(M - i) : rows;
      t1[r](K, A + i * K, B + n * ldb, ldb, C + i * ldc + n, ldc);
    }
}

static void nt_avx2(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                    float *C, int64_t ldc) {
  nt_drive(3, nt4, nt1, M, n0, n1, K, A, B, ldb, C, ldc);
}

/* R A rows x 16 columns (the last `cols` < 16 masked), K rows k0..k1. */
#define NN_TILE(R)                                                                                             \
  AVX2 static void nn_tile_##R(int64_t k0, int64_t k1, int64_t K, const float *A, const float *B, int64_t ldb, \
                               float *C, int64_t ldc, int64_t cols) {                                         \
    __m256i m0 = tail_mask(cols), m1 = tail_mask(cols - 8);                                                   \
    bool full = cols >= 16;                                                                                    \
    __m256 c0[R], c1[R];                                                                                       \
    _Pragma("GCC unroll 8")                                                                                    \
    for (int i = 0; i < R; i++) {                                                                              \
      if (k0 == 0) c0[i] = c1[i] = _mm256_setzero_ps();                                                        \
      else if (full) {                                                                                         \
        c0[i] = _mm256_loadu_ps(C + i * ldc);                                                                  \
        c1[i] = _mm256_loadu_ps(C + i * ldc + 8);                                                              \
      } else {                                                                                                 \
        c0[i] = _mm256_maskload_ps(C + i * ldc, m0);                                                           \
        c1[i] = _mm256_maskload_ps(C + i * ldc + 8, m1);                                                       \
      }                                                                                                        \
    }                                                                                                          \
    for (int64_t k = k0; k < k1; k++) {                                                                        \
      const float *b = B + k * ldb;                                                                            \
      __m256 b0 = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, m0);                                       \
      __m256 b1 = full ? _mm256_loadu_ps(b + 8) : _mm256_maskload_ps(b + 8, m1);                               \
      _Pragma("GCC unroll 8")                                                                                  \
      for (int i = 0; i < R; i++) {                                                                            \
        __m256 a = _mm256_broadcast_ss(A + i * K + k);                                                         \
        c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);                                                                 \
        c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);                                                                 \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 8")                                                                                    \
    for (int i = 0; i < R; i++) {                                                                              \
      if (full) {                                                                                              \
        _mm256_storeu_ps(C + i * ldc, c0[i]);                                                                  \
        _mm256_storeu_ps(C + i * ldc + 8, c1[i]);                                                              \
      } else {                                                                                                 \
        _mm256_maskstore_ps(C + i * ldc, m0, c0[i]);                                                           \
        _mm256_maskstore_ps(C + i * ldc + 8, m1, c1[i]);                                                       \
      }                                                                                                        \
    }                                                                                                          \
  }
NN_TILE(1)
NN_TILE(2)
NN_TILE(3)
NN_TILE(4)
NN_TILE(5)
NN_TILE(6)

typedef void (*nn_tile_fn)(int64_t, int64_t, int64_t, const float *, const float *, int64_t, float *, int64_t,
                           int64_t);
static const nn_tile_fn nn[7] = {NULL, nn_tile_1, nn_tile_2, nn_tile_3, nn_tile_4, nn_tile_5, nn_tile_6};

static void nn_avx2(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                    float *C, int64_t ldc) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++) memset(C + i * ldc + n0, 0, (size_t)(n1 - n0) * 4);
    return;
  }
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    int64_t k1 = k0 + KB < K ? k0 + KB : K;
    for (int64_t n = n0; n < n1; n += 16)
      for (int64_t i = 0; i < M; i += 6) {
        int r = M - i < 6 ? (int)(M - i) : 6;
        nn[r](k0, k1, K, A + i * K, B + n, ldb, C + i * ldc + n, ldc, n1 - n);
      }
  }
}
#endif

/* ---------------- AVX-512 (the same structure, 16 lanes) ---------------- */
#ifdef HAVE_X86
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

AVX512 static inline __mmask16 tail16(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

#define NT16_TILE(R, NB)                                                                                       \
  AVX512 static void nt16_tile_##R##_##NB(int64_t K, const float *A, const float *B, int64_t ldb, float *C,  \
                                           int64_t ldc) {                                                      \
    __m512 acc[R][NB];                                                                                         \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                       \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) acc[i][j] = _mm512_setzero_ps();                   \
    for (int64_t k = 0; k < K; k += 16) {                                                                      \
      __mmask16 m = tail16(K - k);                                                                             \
      __m512 b[NB];                                                                                            \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) b[j] = _mm512_maskz_loadu_ps(m, B + j * ldb + k);    \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                    \
        __m512 a = _mm512_maskz_loadu_ps(m, A + i * K + k);                                                    \
        _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);  \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                       \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) C[i * ldc + j] = _mm512_reduce_add_ps(acc[i][j]);  \
  }
NT16_TILE(1, 4)
NT16_TILE(2, 4)
NT16_TILE(3, 4)
NT16_TILE(4, 4)
NT16_TILE(1, 1)
NT16_TILE(2, 1)
NT16_TILE(3, 1)
NT16_TILE(4, 1)

static const nt_tile_fn nt16_4[5] = {NULL, nt16_tile_1_4, nt16_tile_2_4, nt16_tile_3_4, nt16_tile_4_4};
static const nt_tile_fn nt16_1[5] = {NULL, nt16_tile_1_1, nt16_tile_2_1, nt16_tile_3_1, nt16_tile_4_1};

/* One A row x 8 B rows (a decode step's matvec): eight weight rows stream
 * at once, the full 16-lane steps unmasked, the tail masked. The sums are
 * nt16_tile_1_4's (lane-wise over k in order, the masked tail last, then
 * _mm512_reduce_add_ps), so a row's bits do not depend on M. */
AVX512 static void nt16_row_8(int64_t K, const float *a, const float *B, int64_t ldb, float *C) {
  __m512 acc[8];
  _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 x = _mm512_loadu_ps(a + k);
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) acc[j] = _mm512_fmadd_ps(x, _mm512_loadu_ps(B + j * ldb + k), acc[j]);
  }
  if (k < K) {
    __mmask16 m = tail16(K - k);
    __m512 x = _mm512_maskz_loadu_ps(m, a + k);
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++)
      acc[j] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, B + j * ldb + k), acc[j]);
  }
  _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) C[j] = _mm512_reduce_add_ps(acc[j]);
}

static void nt_avx512(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                      float *C, int64_t ldc) {
  if (M == 1)
    for (; n0 + 8 <= n1; n0 += 8) nt16_row_8(K, A, B + n0 * ldb, ldb, C + n0);
  nt_drive(4, nt16_4, nt16_1, M, n0, n1, K, A, B, ldb, C, ldc);
}

/* R A rows x 32 columns (the last `cols` < 32 masked), K rows k0..k1. */
#define NN16_TILE(R)                                                                                           \
  AVX512 static void nn16_tile_##R(int64_t k0, int64_t k1, int64_t K, const float *A, const float *B,         \
                                   int64_t ldb, float *C, int64_t ldc, int64_t cols) {                        \
    __mmask16 m0 = tail16(cols), m1 = tail16(cols - 16);                                                       \
    __m512 c0[R], c1[R];                                                                                       \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                      \
      if (k0 == 0) c0[i] = c1[i] = _mm512_setzero_ps();                                                        \
      else {                                                                                                   \
        c0[i] = _mm512_maskz_loadu_ps(m0, C + i * ldc);                                                        \
        c1[i] = _mm512_maskz_loadu_ps(m1, C + i * ldc + 16);                                                   \
      }                                                                                                        \
    }                                                                                                          \
    for (int64_t k = k0; k < k1; k++) {                                                                        \
      const float *b = B + k * ldb;                                                                            \
      __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);                        \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                    \
        __m512 a = _mm512_set1_ps(A[i * K + k]);                                                               \
        c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);                                                                 \
        c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);                                                                 \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                      \
      _mm512_mask_storeu_ps(C + i * ldc, m0, c0[i]);                                                           \
      _mm512_mask_storeu_ps(C + i * ldc + 16, m1, c1[i]);                                                      \
    }                                                                                                          \
  }
NN16_TILE(1)
NN16_TILE(2)
NN16_TILE(3)
NN16_TILE(4)
NN16_TILE(5)
NN16_TILE(6)
NN16_TILE(7)
NN16_TILE(8)

static const nn_tile_fn nn16[9] = {NULL, nn16_tile_1, nn16_tile_2, nn16_tile_3, nn16_tile_4,
                                   nn16_tile_5, nn16_tile_6, nn16_tile_7, nn16_tile_8};

static void nn_avx512(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, int64_t ldb,
                      float *C, int64_t ldc) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++) memset(C + i * ldc + n0, 0, (size_t)(n1 - n0) * 4);
    return;
  }
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    int64_t k1 = k0 + KB < K ? k0 + KB : K;
    for (int64_t n = n0; n < n1; n += 32)
      for (int64_t i = 0; i < M; i += 8) {
        int r = M - i < 8 ? (int)(M - i) : 8;
        nn16[r](k0, k1, K, A + i * K, B + n, ldb, C + i * ldc + n, ldc, n1 - n);
      }
  }
}
#endif

/* ---------------- entry ---------------- */

/* Columns [n0, n1) of C (rows ldc apart), B's rows ldb apart. */
static void small_cols(int64_t M, int64_t n0, int64_t n1, int64_t ldc, int64_t K, const float *A, const float *B,
                       int64_t ldb, bool b_transposed, float *C) {
  if (n1 <= n0 || M <= 0) return;
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    if (b_transposed) nt_avx512(M, n0, n1, K, A, B, ldb, C, ldc);
    else nn_avx512(M, n0, n1, K, A, B, ldb, C, ldc);
    return;
  }
  if (rt_simd_enabled()) {
    if (b_transposed) nt_avx2(M, n0, n1, K, A, B, ldb, C, ldc);
    else nn_avx2(M, n0, n1, K, A, B, ldb, C, ldc);
    return;
  }
#endif
  if (b_transposed) nt_plain(M, n0, n1, K, A, B, ldb, C, ldc);
  else nn_plain(M, n0, n1, K, A, B, ldb, C, ldc);
}

void rt_sgemm_small_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *A, const float *B,
                         bool b_transposed, float *C) {
  small_cols(M, n0, n1, N, K, A, B, b_transposed ? K : N, b_transposed, C);
}

typedef struct small_job {
  int64_t M, N, K, ldb;
  const float *A, *B;
  bool bt;
  float *C;
} small_job;

static void small_range(void *arg, int64_t n0, int64_t n1) {
  const small_job *j = arg;
  small_cols(j->M, n0, n1, j->N, j->K, j->A, j->B, j->ldb, j->bt, j->C);
}

void rt_sgemm_small_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb,
                        bool b_transposed, float *C, int threads) {
  small_job j = {M, N, K, ldb, A, B, b_transposed, C};
  /* a part must stream enough of B to pay for waking a worker */
  int64_t max_parts = N * K / RT_SPLIT_SMALL_WORK;
  int parts = threads < max_parts ? threads : (int)(max_parts > 1 ? max_parts : 1);
  int64_t align = b_transposed ? 8 : 32;
  rt_parallel_guided(parts, N, align, 4 * align, small_range, &j);
}

void rt_sgemm_small(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                    int threads) {
  rt_sgemm_small_ldb(M, N, K, A, B, b_transposed ? K : N, b_transposed, C, threads);
}
