/* Products of many rows (prefill, a BERT or MLP batch) that read the
 * weight where it lies, as gemm_small.c does for a few rows: OpenBLAS's
 * sgemm copies ("packs") its part of B on every call (about a third of a
 * BERT layer's time), onnxruntime packs once at load; these tiles never
 * copy B, so a mapped weight stays zero-copy. Two layouts of B:
 *   [N, K] (linear weights): tiles of 4 A rows x 6 B rows of dot
 *     products, 16 lanes per accumulator; a block of 6 B rows (KC of K at
 *     a time, in L1) meets every 4-row tile of a block of MC A rows (in
 *     L2). Where K > KC the 16-lane accumulators are kept in a scratch
 *     between K blocks, so the sums go on exactly as without blocking.
 *     A batch of exactly 8 rows takes tiles of 8 A rows x 3 B rows
 *     instead (each B row read once, from memory, while it is used).
 *   [K, N]: tiles of 6 A rows x 64 columns of outer products; a panel of
 *     KCN B rows x 64 columns meets every row tile; C's tile is reloaded
 *     per K block.
 * Every C element gets the very operations of gemm_small.c's AVX-512
 * tiles (lane l of the [N, K] dot product sums k = l mod 16 in order and
 * ends in the same horizontal sum; the [K, N] one is one FMA per k in
 * order), so a row's bits depend neither on M nor on the tile, the
 * thread, the column split or the blocking. AVX-512 only: at other levels
 * the small kernels serve every M (same bits as their few-row calls). */
#include <stdint.h>
#include <string.h>
#include "kernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define TM 4     /* A rows of a dot-product tile */
#define TN 6     /* B rows of a dot-product tile */
#define KC 1024  /* K of a dot-product block: 6 B rows of it fill half of L1 */
#define MC 128   /* A rows a B block meets before the next block */
#define NN_R 6   /* A rows of an outer-product tile */
#define NN_W 64  /* its columns (4 vectors) */
#define KCN 128  /* B rows of an outer-product panel (32 KiB) */
#define PF_MIN_TILES 8 /* row tiles of a block for the next block's prefetch to pay */

#ifdef HAVE_X86
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

AVX512 static inline __mmask16 tail16(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

/* The horizontal sums of 16 accumulators at once, each exactly
 * _mm512_reduce_add_ps's: lanes l + l+8, then + l+4, then + l+2, then
 * + l+1 (float addition commutes, so the shuffled operands give the same
 * bits). Lane 4q + t of the result is the sum of v[4t + q]. */
AVX512 static inline __m512 pair_halves(__m512 a, __m512 b) { /* [a lanes l + l+8 | b's] */
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
}
AVX512 static inline __m512 pair_quarters(__m512 a, __m512 b) { /* [a lanes l + l+4 | b's | c's | d's] */
  return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xdd));
}
AVX512 static inline __m512 pair_twos(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xee));
}
AVX512 static inline __m512 pair_ones(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xdd));
}
AVX512 static inline __m512 sum16(const __m512 *v) {
  __m512 w[8], x[4];
  for (int p = 0; p < 8; p++) w[p] = pair_halves(v[2 * p], v[2 * p + 1]);
  for (int p = 0; p < 4; p++) x[p] = pair_quarters(w[2 * p], w[2 * p + 1]);
  return pair_ones(pair_twos(x[0], x[1]), pair_twos(x[2], x[3]));
}
/* The same for 8: lane 4q + t (t < 2) is the sum of v[4t + q]. */
AVX512 static inline __m512 sum8(const __m512 *v) {
  __m512 w[4], x[2];
  for (int p = 0; p < 4; p++) w[p] = pair_halves(v[2 * p], v[2 * p + 1]);
  for (int p = 0; p < 2; p++) x[p] = pair_quarters(w[2 * p], w[2 * p + 1]);
  __m512 y = pair_twos(x[0], x[1]);
  return pair_ones(y, y);
}

/* The 4 x 6 tile's sums into C: columns 0-3 of the 4 rows as one sum16,
 * columns 4-5 as one sum8. */
AVX512 static inline void store_sums_4_6(__m512 acc[4][6], float *C, int64_t ldc) {
  __m512 v[16];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) v[4 * j + i] = acc[i][j];
  __m512 s = sum16(v);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++) v[4 * j + i] = acc[i][4 + j];
  __m512 t = sum8(v);
#define STORE_ROW(i)                                                                                           \
  _mm_storeu_ps(C + i * ldc, _mm512_extractf32x4_ps(s, i));                                                    \
  _mm_storel_pi((__m64 *)(C + i * ldc + 4), _mm512_extractf32x4_ps(t, i))
  STORE_ROW(0);
  STORE_ROW(1);
  STORE_ROW(2);
  STORE_ROW(3);
#undef STORE_ROW
}

/* R A rows x NB B rows, K from k0 to k1 (k0 a multiple of 16). The
 * accumulators start at zero (k0 == 0) or from `save`, and end summed
 * into C (k1 == K) or in `save`. */
#define DOT_TILE(R, NB)                                                                                        \
  AVX512 static void dot_tile_##R##_##NB(int64_t k0, int64_t k1, int64_t K, const float *A, const float *B,   \
                                         float *C, int64_t ldc, float *save) {                                \
    __m512 acc[R][NB];                                                                                         \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                       \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++)                                                     \
        acc[i][j] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(save + (i * NB + j) * 16);                \
    int64_t k = k0;                                                                                            \
    for (; k + 16 <= k1; k += 16) {                                                                            \
      __m512 b[NB];                                                                                            \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) b[j] = _mm512_loadu_ps(B + j * K + k);              \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                    \
        __m512 a = _mm512_loadu_ps(A + i * K + k);                                                             \
        if (R == 8) __asm__("" : "+v"(a)); /* one load of a, not one per FMA: the loads would bound the loop */ \
        _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);  \
      }                                                                                                        \
    }                                                                                                          \
    if (k < k1) {                                                                                              \
      __mmask16 m = tail16(k1 - k);                                                                            \
      __m512 b[NB];                                                                                            \
      _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) b[j] = _mm512_maskz_loadu_ps(m, B + j * K + k);    \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                    \
        __m512 a = _mm512_maskz_loadu_ps(m, A + i * K + k);                                                    \
        _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);  \
      }                                                                                                        \
    }                                                                                                          \
    if (k1 != K) {                                                                                             \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                     \
        _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) _mm512_storeu_ps(save + (i * NB + j) * 16, acc[i][j]); \
    } else if (R == 4 && NB == 6) {                                                                            \
      store_sums_4_6((__m512(*)[6])acc, C, ldc);                                                               \
    } else {                                                                                                   \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                     \
        _Pragma("GCC unroll 8") for (int j = 0; j < NB; j++) C[i * ldc + j] = _mm512_reduce_add_ps(acc[i][j]); \
    }                                                                                                          \
  }
#define DOT_ROW(R) DOT_TILE(R, 1) DOT_TILE(R, 2) DOT_TILE(R, 3) DOT_TILE(R, 4) DOT_TILE(R, 5) DOT_TILE(R, 6)
DOT_ROW(1)
DOT_ROW(2)
DOT_ROW(3)
DOT_ROW(4)

/* Eight A rows x 3 B rows (24 accumulators): a batch of 8 reads each B
 * row once, 11 loads for 24 FMAs, A (8 rows of K) staying in L1; two 4 x 6
 * tiles read each B block twice, the second time past L1 (8 x 1024 A and
 * a 6 x 1024 block overflow its 48 KiB). The MLP bench (8 x 1024 x 1024
 * four times) on one core: 0.77 -> 0.585 ms. */
DOT_TILE(8, 1)
DOT_TILE(8, 2)
DOT_TILE(8, 3)

typedef void (*dot_tile_fn)(int64_t, int64_t, int64_t, const float *, const float *, float *, int64_t, float *);
#define DOT_FNS(R) {NULL, dot_tile_##R##_1, dot_tile_##R##_2, dot_tile_##R##_3, dot_tile_##R##_4, dot_tile_##R##_5, dot_tile_##R##_6}
static const dot_tile_fn dot_tiles[TM + 1][TN + 1] = {{NULL}, DOT_FNS(1), DOT_FNS(2), DOT_FNS(3), DOT_FNS(4)};
static const dot_tile_fn dot_tiles_8[4] = {NULL, dot_tile_8_1, dot_tile_8_2, dot_tile_8_3};

/* The cache lines of B's next block (rows n..n+nb, K from k0 to k1),
 * handed out a few at a time (pf_next) while the current block meets its
 * row tiles: a weight streamed from memory arrives in L2 before its block
 * starts, instead of stalling that block's first tile (about a tenth of a
 * BERT linear's time when the weights are not cached). */
typedef struct prefetcher {
  const float *row; /* the next line's row of B, at the block's k0 */
  int64_t K, lines_per_row, col, left, per_tile;
} prefetcher;

static void pf_start(prefetcher *p, const float *B, int64_t K, int64_t n, int64_t nb, int64_t k0, int64_t k1,
                     int64_t tiles) {
  p->row = B + n * K + k0;
  p->K = K;
  p->lines_per_row = (k1 - k0 + 15) / 16;
  p->col = 0;
  /* a few row tiles (M of a small batch) stream B faster than software
   * prefetches could hand it out: the hardware's prefetch serves them */
  p->left = nb > 0 && tiles >= PF_MIN_TILES ? nb * p->lines_per_row : 0;
  p->per_tile = tiles > 0 ? (p->left + tiles - 1) / tiles : p->left;
}

static inline void pf_next(prefetcher *p) {
  for (int64_t e = p->per_tile < p->left ? p->per_tile : p->left; e > 0; e--, p->left--) {
    __builtin_prefetch(p->row + 16 * p->col, 0, 2);
    if (++p->col == p->lines_per_row) p->col = 0, p->row += p->K;
  }
}

/* Columns n0..n1 of C = A . B^T, B [N, K]. */
static void dot_cols(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, const float *B, float *C,
                     int64_t ldc) {
  float save[MC / TM][TM * TN * 16] __attribute__((aligned(64))); /* 48 KiB: the accumulators between K blocks */
  if (M == 8) {
    for (int64_t n = n0; n < n1; n += 3) {
      int nb = n1 - n < 3 ? (int)(n1 - n) : 3;
      int64_t k0 = 0;
      do {
        int64_t k1 = k0 + KC < K ? k0 + KC : K;
        dot_tiles_8[nb](k0, k1, K, A, B + n * K, C + n, ldc, save[0]);
        k0 = k1;
      } while (k0 < K);
    }
    return;
  }
  for (int64_t m0 = 0; m0 < M; m0 += MC) {
    int64_t m1 = m0 + MC < M ? m0 + MC : M, tiles = (m1 - m0 + TM - 1) / TM;
    for (int64_t n = n0; n < n1; n += TN) {
      int nb = n1 - n < TN ? (int)(n1 - n) : TN;
      int64_t k0 = 0;
      do { /* once even for K == 0: the tiles then write zeros */
        int64_t k1 = k0 + KC < K ? k0 + KC : K;
        /* the block after this one: the next K block, else the next rows */
        int64_t next_n = k1 < K ? n : n + TN, next_k0 = k1 < K ? k1 : 0;
        int64_t next_nb = n1 - next_n < TN ? n1 - next_n : TN;
        prefetcher pf;
        pf_start(&pf, B, K, next_n, next_nb, next_k0, next_k0 + KC < K ? next_k0 + KC : K, tiles);
        for (int64_t i = m0; i < m1; i += TM) {
          int r = m1 - i < TM ? (int)(m1 - i) : TM;
          pf_next(&pf);
          dot_tiles[r][nb](k0, k1, K, A + i * K, B + n * K, C + i * ldc + n, ldc, save[(i - m0) / TM]);
        }
        k0 = k1;
      } while (k0 < K);
    }
  }
}

/* R A rows (row stride lda) x NV vectors of 16 columns (the last `cols` <
 * 16 NV masked), B rows k0..k1: C's tile starts at zero (k0 == 0) or from
 * C. A tile narrower than 64 columns ends a row's last panel (attention's
 * causal scores end anywhere) without FMAs on wholly masked vectors. Only
 * the last vector can be partial (NV = ceil(cols / 16) up to 4), so the
 * others load whole: with a mask each, GCC spilled the masks and reloaded
 * them every k. The k loop unrolled by 4 as gemm_panels.c's (the same
 * FMAs in the same order: the same bits). */
#define OUTER_TILE(R, NV)                                                                                      \
  AVX512 static void outer_tile_##R##_##NV(int64_t k0, int64_t k1, int64_t lda, const float *A, const float *B, \
                                           int64_t ldb, float *C, int64_t ldc, int64_t cols) {                \
    __mmask16 m = tail16(cols - 16 * (NV - 1));                                                                \
    __m512 c[R][NV];                                                                                           \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                     \
        c[i][v] = k0 == 0 ? _mm512_setzero_ps()                                                                \
                  : v < NV - 1 ? _mm512_loadu_ps(C + i * ldc + 16 * v)                                         \
                               : _mm512_maskz_loadu_ps(m, C + i * ldc + 16 * v);                               \
    _Pragma("GCC unroll 4") for (int64_t k = k0; k < k1; k++) {                                                \
      const float *b = B + k * ldb;                                                                            \
      __m512 bv[NV];                                                                                           \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                     \
        bv[v] = v < NV - 1 ? _mm512_loadu_ps(b + 16 * v) : _mm512_maskz_loadu_ps(m, b + 16 * v);               \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                                                    \
        __m512 a = _mm512_set1_ps(A[i * lda + k]);                                                             \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[i][v] = _mm512_fmadd_ps(a, bv[v], c[i][v]);     \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                                   \
        if (v < NV - 1) _mm512_storeu_ps(C + i * ldc + 16 * v, c[i][v]);                                       \
        else _mm512_mask_storeu_ps(C + i * ldc + 16 * v, m, c[i][v]);                                          \
      }                                                                                                        \
  }
#define OUTER_ROW(R) OUTER_TILE(R, 1) OUTER_TILE(R, 2) OUTER_TILE(R, 3) OUTER_TILE(R, 4)
OUTER_ROW(1)
OUTER_ROW(2)
OUTER_ROW(3)
OUTER_ROW(4)
OUTER_ROW(5)
OUTER_ROW(6)

typedef void (*outer_tile_fn)(int64_t, int64_t, int64_t, const float *, const float *, int64_t, float *, int64_t,
                              int64_t);
#define OUTER_FNS(R) {NULL, outer_tile_##R##_1, outer_tile_##R##_2, outer_tile_##R##_3, outer_tile_##R##_4}
static const outer_tile_fn outer_tiles[NN_R + 1][NN_W / 16 + 1] = {{NULL},        OUTER_FNS(1), OUTER_FNS(2),
                                                                   OUTER_FNS(3),  OUTER_FNS(4), OUTER_FNS(5),
                                                                   OUTER_FNS(6)};

/* Columns n0..n1 of C = A . B, A [M, K] with row stride lda, B [K, N]. */
static void outer_cols(int64_t M, int64_t n0, int64_t n1, int64_t K, const float *A, int64_t lda, const float *B,
                       int64_t ldb, float *C, int64_t ldc) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++) memset(C + i * ldc + n0, 0, (size_t)(n1 - n0) * 4);
    return;
  }
  for (int64_t n = n0; n < n1; n += NN_W) {
    int nv = n1 - n >= NN_W ? NN_W / 16 : (int)((n1 - n + 15) / 16);
    for (int64_t k0 = 0; k0 < K; k0 += KCN) {
      int64_t k1 = k0 + KCN < K ? k0 + KCN : K;
      for (int64_t i = 0; i < M; i += NN_R) {
        int r = M - i < NN_R ? (int)(M - i) : NN_R;
        outer_tiles[r][nv](k0, k1, lda, A + i * lda, B + n, ldb, C + i * ldc + n, ldc, n1 - n);
      }
    }
  }
}

/* dst[c, r] = src[r, c] * scale: 16 rows of a column gathered at a time
 * (src's columns are short rows apart: a kv head's K sits in L1). */
AVX512 static void transpose_scaled_avx512(int64_t rows, int64_t cols, const float *src, int64_t ld, float scale,
                                           float *dst, int64_t ldd) {
  __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                   _mm512_set1_epi32((int)ld));
  __m512 s = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < rows; r += 16) {
    __mmask16 m = tail16(rows - r);
    for (int64_t c = 0; c < cols; c++) {
      __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, src + r * ld + c, 4);
      _mm512_mask_storeu_ps(dst + c * ldd + r, m, _mm512_mul_ps(v, s));
    }
  }
}

AVX512 static void scale_avx512(float *x, int64_t n, float scale) {
  __m512 s = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 m = tail16(n - j);
    _mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), s));
  }
}
#endif

bool rt_sgemm_tiles_in_use(void) {
#ifdef HAVE_X86
  return rt_simd_level() >= RT_SIMD_AVX512;
#else
  return false;
#endif
}

void rt_sgemm_tiles_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *A, const float *B,
                         bool b_transposed, float *C) {
  if (n1 <= n0 || M <= 0) return;
#ifdef HAVE_X86
  if (rt_sgemm_tiles_in_use()) {
    if (b_transposed) dot_cols(M, n0, n1, K, A, B, C, N);
    else outer_cols(M, n0, n1, K, A, K, B, N, C, N);
    return;
  }
#endif
  rt_sgemm_small_cols(M, n0, n1, N, K, A, B, b_transposed, C);
}

typedef struct tiles_job {
  int64_t M, N, K;
  const float *A, *B;
  bool bt;
  float *C;
} tiles_job;

static void tiles_range(void *arg, int64_t n0, int64_t n1) {
  const tiles_job *j = arg;
  rt_sgemm_tiles_cols(j->M, n0, n1, j->N, j->K, j->A, j->B, j->bt, j->C);
}

void rt_sgemm_tiles(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                    int threads) {
  if (M <= 0 || N <= 0) return;
  tiles_job j = {M, N, K, A, B, b_transposed, C};
  /* a part must have enough work to pay for waking a worker */
  int64_t max_parts = M * N * K / RT_SPLIT_TILES_WORK;
  int parts = threads < max_parts ? threads : (int)(max_parts > 1 ? max_parts : 1);
  int64_t align = b_transposed ? TN : NN_W;
  /* a few rows: a chunk of 4 x 6 columns takes ~5 us a core to stream, the
   * others' wait at the end of each product; chunks of 6 end it sooner */
  rt_parallel_guided(parts, N, align, (M <= 16 ? 1 : 4) * align, tiles_range, &j);
}

bool rt_sgemm_tiles_strided(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                            int64_t ldb, float *C, int64_t ldc) {
#ifdef HAVE_X86
  if (rt_sgemm_tiles_in_use()) {
    if (M > 0 && N > 0) outer_cols(M, 0, N, K, A, lda, B, ldb, C, ldc);
    return true;
  }
#endif
  (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
  return false;
}

void rt_tiles_transpose_scaled(int64_t rows, int64_t cols, const float *src, int64_t ld, float scale, float *dst,
                               int64_t ldd) {
#ifdef HAVE_X86
  if (rt_sgemm_tiles_in_use() && 16 * ld <= INT32_MAX) { /* the gather's offsets: 16 rows at a time */
    transpose_scaled_avx512(rows, cols, src, ld, scale, dst, ldd);
    return;
  }
#endif
  for (int64_t c = 0; c < cols; c++)
    for (int64_t r = 0; r < rows; r++) dst[c * ldd + r] = src[r * ld + c] * scale;
}

void rt_tiles_scale(float *x, int64_t n, float scale) {
#ifdef HAVE_X86
  if (rt_sgemm_tiles_in_use()) {
    scale_avx512(x, n, scale);
    return;
  }
#endif
  for (int64_t j = 0; j < n; j++) x[j] *= scale;
}

bool rt_sgemm_tiles_pay(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed) {
  if (!rt_sgemm_tiles_in_use()) return false;
  /* every vector load within one cache line: A and B at 64 bytes, rows of
   * whole lines (a weight mapped from a file lies where the file put it) */
  bool lines = (uintptr_t)A % 64 == 0 && (uintptr_t)B % 64 == 0 && K % 16 == 0 && (b_transposed || N % 16 == 0);
  if (b_transposed) /* short dot products are mostly horizontal sums */
    return M >= 8 && K >= 256 && M <= (lines && K >= 512 ? 128 : 48);
  return M > RT_SMALL_M && N >= 512 && M <= (lines ? 64 : 32);
}
