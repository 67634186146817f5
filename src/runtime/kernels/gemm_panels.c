/* Products of many rows with a linear weight B [N, K] (a BERT layer's or
 * a prefill's GEMMs), as outer products that still read B where it lies:
 * C^T = B . A^T. A (the activation, small next to B) is copied once per
 * call into K-major panels of 64 rows, P[k][64] (the copy ONNX Runtime
 * makes of B once at load, made here of A on every call, split over the
 * threads: M x K floats, ~3 % of a 128 x 768 x 768 call's time, freed
 * before the return, so a weight mapped from a file stays zero-copy and
 * no second copy of it is ever resident). A tile of 6 B rows x 64 A rows holds 384 outputs in 24
 * registers: per k, 4 vector loads of the panel and 6 broadcasts of B
 * feed 24 FMAs; the dot-product tiles (gemm_tiles.c) hold 24 outputs and
 * end every one in a horizontal sum, and peak about a quarter lower.
 *
 * Every C[i, n] is one FMA chain over k in order from zero (c = fma(A[i,
 * k], B[n, k], c)), whatever M, the tile, the panel, the thread or the
 * column range: a row's bits depend on none of them, though they differ
 * from the few-row kernels' 16-lane sums (gemm_small.c), which serve a
 * decode step's rows. AVX-512 (rt_sgemm_panels_pay says no below it,
 * where the pieces compute the same chains in plain C for the tests). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#define PW 64 /* A rows of a panel (4 vectors) */
#define TR 6  /* B rows of a tile */
#define NT 8  /* tiles of B rows that meet the panels per K block */
/* The panels' part a block of tiles walks (mc rows x kc of K) stays in L2. */
#define PANEL_BYTES_L2 (1 << 20)
#define KC_MIN 256
#define MC_MAX 512

#ifdef HAVE_X86
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

AVX512 static inline __mmask16 tail16(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

/* r[0..16) = its transpose (16 x 16 floats). */
AVX512 static inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int j = 0; j < 8; j++) {
    t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
    t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
  }
  for (int j = 0; j < 4; j++) {
    __m512d a = _mm512_castps_pd(t[4 * j]), b = _mm512_castps_pd(t[4 * j + 1]);
    __m512d c = _mm512_castps_pd(t[4 * j + 2]), d = _mm512_castps_pd(t[4 * j + 3]);
    r[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 4; j++) {
      t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
      t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

/* P[p][k][0..64) = A[64 p + l, k] for the panels' rows i0..i1 (i0 a
 * multiple of 16), 0 past M. */
AVX512 static void pack_panels(int64_t M, int64_t i_begin, int64_t i_end, int64_t K, const float *A, float *P) {
  for (int64_t i0 = i_begin; i0 < i_end; i0 += 16) {
    float *panel = P + (i0 / PW) * K * PW + i0 % PW;
    int64_t rows = M - i0 < 16 ? M - i0 : 16;
    for (int64_t k = 0; k < K; k += 16) {
      __mmask16 m = tail16(K - k);
      __m512 r[16];
      for (int l = 0; l < 16; l++) r[l] = l < rows ? _mm512_maskz_loadu_ps(m, A + (i0 + l) * K + k) : _mm512_setzero_ps();
      transpose16(r);
      int64_t ks = K - k < 16 ? K - k : 16;
      for (int t = 0; t < ks; t++) _mm512_store_ps(panel + (k + t) * PW, r[t]);
    }
  }
}

/* C's rows i < rows, columns j < R, from the accumulators (lane l of
 * c[j * NV + v] is row 16 v + l), plus bias[j] unless NULL: transposed
 * in registers, one masked store a row (through a buffer, one scalar
 * load and store an element: ~3 % of a 768-long tile's time). */
AVX512 static inline __attribute__((always_inline)) void store_rows(const __m512 *c, int R, int NV, float *C,
                                                                    int64_t ldc, int64_t rows, const float *bias) {
  __mmask16 m = (__mmask16)((1u << R) - 1);
  __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias) : _mm512_setzero_ps();
  _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
    if (16 * v >= rows) break;
    __m512 r[16];
    _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++) r[j] = j < R ? c[j * NV + v] : _mm512_setzero_ps();
    transpose16(r);
    int64_t n = rows - 16 * v < 16 ? rows - 16 * v : 16;
    if (bias)
      for (int64_t l = 0; l < n; l++) _mm512_mask_storeu_ps(C + (16 * v + l) * ldc, m, _mm512_add_ps(r[l], b));
    else
      for (int64_t l = 0; l < n; l++) _mm512_mask_storeu_ps(C + (16 * v + l) * ldc, m, r[l]);
  }
}

/* R B rows (from B, row stride K) x NV vectors of a panel, k from k0 to
 * k1: the accumulators start at zero (k0 == 0) or from `save`, and end in
 * C's columns n..n+R of the panel's first `rows` rows, plus bias[0..R)
 * unless NULL (k1 == K), or in `save` (the chains go on exactly as
 * without blocking). Unless NULL, pf is the next tile's 6 B rows: one
 * line of each is prefetched per 16 k, so a weight streamed from memory
 * is in cache when its tile starts (a tile's rows are a few KiB each,
 * too short for the hardware's prefetch to ramp up: BERT 4 layers ~8 %
 * faster by the median of 5 paired runs). The k loop unrolled by 4: one
 * k a trip left ~14 cycles a k for the 12 of the FMAs (BERT 4 layers,
 * 0.92x the time by the median of 7 paired runs). */
#define PANEL_TILE(R, NV)                                                                                      \
  AVX512 static void panel_tile_##R##_##NV(int64_t k0, int64_t k1, int64_t K, const float *B, const float *P,  \
                                           float *C, int64_t ldc, int64_t rows, float *save,                  \
                                           const float *bias, const float *pf) {                              \
    __m512 c[R][NV];                                                                                           \
    _Pragma("GCC unroll 8") for (int j = 0; j < R; j++)                                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                     \
        c[j][v] = k0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(save + (j * NV + v) * 16);                    \
    for (int64_t kb = k0; kb < k1; kb += 16) {                                                                 \
      if (pf)                                                                                                  \
        _Pragma("GCC unroll 8") for (int j = 0; j < TR; j++) _mm_prefetch((const char *)(pf + j * K + kb), _MM_HINT_T0); \
      int64_t ke = kb + 16 < k1 ? kb + 16 : k1;                                                                \
      _Pragma("GCC unroll 4") for (int64_t k = kb; k < ke; k++) {                                              \
        __m512 a[NV];                                                                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) a[v] = _mm512_load_ps(P + k * PW + 16 * v);       \
        _Pragma("GCC unroll 8") for (int j = 0; j < R; j++) {                                                  \
          __m512 b = _mm512_set1_ps(B[j * K + k]);                                                             \
          _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[j][v] = _mm512_fmadd_ps(a[v], b, c[j][v]);    \
        }                                                                                                      \
      }                                                                                                        \
    }                                                                                                          \
    if (k1 != K) {                                                                                             \
      _Pragma("GCC unroll 8") for (int j = 0; j < R; j++)                                                      \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) _mm512_store_ps(save + (j * NV + v) * 16, c[j][v]); \
      return;                                                                                                  \
    }                                                                                                          \
    store_rows(&c[0][0], R, NV, C, ldc, rows, bias);                                                           \
  }
#define PANEL_ROW(R) PANEL_TILE(R, 1) PANEL_TILE(R, 2) PANEL_TILE(R, 3) PANEL_TILE(R, 4)
PANEL_ROW(1)
PANEL_ROW(2)
PANEL_ROW(3)
PANEL_ROW(4)
PANEL_ROW(5)
PANEL_ROW(6)

typedef void (*panel_tile_fn)(int64_t, int64_t, int64_t, const float *, const float *, float *, int64_t, int64_t,
                              float *, const float *, const float *);
#define PANEL_FNS(R) {NULL, panel_tile_##R##_1, panel_tile_##R##_2, panel_tile_##R##_3, panel_tile_##R##_4}
static const panel_tile_fn panel_tiles[TR + 1][PW / 16 + 1] = {{NULL},        PANEL_FNS(1), PANEL_FNS(2),
                                                               PANEL_FNS(3), PANEL_FNS(4), PANEL_FNS(5),
                                                               PANEL_FNS(6)};

/* Columns n0..n1 of C [M, N] from the packed panels of A. Blocks of K
 * (kc) and of A rows (mc) whose panels fit in L2 together; within them a
 * block of NT tiles of B rows (in L1, KC of K at a time) meets every panel
 * before the next K block, the accumulators kept in `save` between. */
static void panel_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *P, const float *B,
                       const float *bias, float *C) {
  int64_t padded = (M + PW - 1) / PW * PW;
  int64_t kc = PANEL_BYTES_L2 / (padded * 4) / 16 * 16;
  kc = kc < KC_MIN ? KC_MIN : kc > K ? K : kc;
  int64_t mc = PANEL_BYTES_L2 / (kc * 4) / PW * PW;
  mc = mc < PW ? PW : mc > MC_MAX ? MC_MAX : mc;
  /* the accumulators between K blocks: 1.5 KiB a tile and panel */
  int64_t save_one = TR * PW, save_tile = mc / PW * save_one;
  float *save = kc < K ? rt_alloc(NT * save_tile * 4 + 64) : NULL, *saved = save;
  if (kc < K && !save) kc = K; /* no memory: one K block (the same chains) */
  if (save) saved = (float *)(((uintptr_t)save + 63) & ~(uintptr_t)63);
  for (int64_t m0 = 0; m0 < M; m0 += mc) {
    int64_t m1 = m0 + mc < M ? m0 + mc : M;
    for (int64_t nb = n0; nb < n1; nb += NT * TR) {
      int64_t nb1 = nb + NT * TR < n1 ? nb + NT * TR : n1;
      for (int64_t k0 = 0; k0 < K; k0 += kc) {
        int64_t k1 = k0 + kc < K ? k0 + kc : K;
        for (int64_t n = nb; n < nb1; n += TR) {
          int r = nb1 - n < TR ? (int)(nb1 - n) : TR;
          for (int64_t i = m0; i < m1; i += PW) {
            int64_t rows = m1 - i < PW ? m1 - i : PW;
            panel_tiles[r][(rows + 15) / 16](k0, k1, K, B + n * K, P + (i / PW) * K * PW, C + i * N + n, N, rows,
                                             saved + (n - nb) / TR * save_tile + (i - m0) / PW * save_one,
                                             bias ? bias + n : NULL,
                                             i == m0 && n + 2 * TR <= n1 ? B + (n + TR) * K : NULL);
          }
        }
      }
    }
  }
  rt_free(save);
}
#endif

int64_t rt_sgemm_panels_bytes(int64_t M, int64_t K) { return (M + PW - 1) / PW * PW * K * 4; }

bool rt_sgemm_panels_pay(int64_t M, int64_t N, int64_t K) {
#ifdef HAVE_X86
  /* bench/gemm_gflops, one core, BERT's shapes: 1.15-1.3x the dot-product
   * tiles from 64 rows (fewer: the copy of A weighs more), and ahead of
   * OpenBLAS's packed sgemm up to 256 rows (at 512 it is ~10 % ahead);
   * the copy of A stays at most 256 x K floats */
  return rt_simd_level() >= RT_SIMD_AVX512 && M >= 64 && M <= 256 && N >= 64 && K >= 64;
#else
  (void)M, (void)N, (void)K;
  return false;
#endif
}

/* The panels' rows i0..i1 (a multiple of 16 apart). */
static void pack_rows(int64_t M, int64_t i0, int64_t i1, int64_t K, const float *A, float *P) {
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    pack_panels(M, i0, i1, K, A, P);
    return;
  }
#endif
  for (int64_t i = i0; i < i1; i++)
    for (int64_t k = 0; k < K; k++) P[(i / PW) * K * PW + k * PW + i % PW] = i < M ? A[i * K + k] : 0.0f;
}

void rt_sgemm_panels_pack(int64_t M, int64_t K, const float *A, float *P) {
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    pack_panels(M, 0, M, K, A, P);
    return;
  }
#endif
  int64_t padded = (M + PW - 1) / PW * PW;
  for (int64_t i = 0; i < padded; i++)
    for (int64_t k = 0; k < K; k++) P[(i / PW) * K * PW + k * PW + i % PW] = i < M ? A[i * K + k] : 0.0f;
}

void rt_sgemm_panels_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *P, const float *B,
                          const float *bias, float *C) {
  if (n1 <= n0 || M <= 0) return;
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512 && K > 0) {
    panel_cols(M, n0, n1, N, K, P, B, bias, C);
    return;
  }
#endif
  for (int64_t i = 0; i < M; i++) /* the same chains in plain C (fmaf: one rounding) */
    for (int64_t n = n0; n < n1; n++) {
      float c = 0.0f;
      for (int64_t k = 0; k < K; k++) c = fmaf(P[(i / PW) * K * PW + k * PW + i % PW], B[n * K + k], c);
      C[i * N + n] = bias ? c + bias[n] : c;
    }
}

typedef struct panels_job {
  int64_t M, N, K;
  const float *A, *P, *B, *bias;
  float *C;
} panels_job;

static void pack_part(void *arg, int part, int parts) {
  const panels_job *j = arg;
  int64_t i0, i1;
  rt_part_range(j->M, 16, part, parts, &i0, &i1);
  pack_rows(j->M, i0, i1, j->K, j->A, (float *)j->P);
}

static void panels_part(void *arg, int part, int parts) {
  const panels_job *j = arg;
  int64_t n0, n1;
  rt_part_range(j->N, TR, part, parts, &n0, &n1);
  rt_sgemm_panels_cols(j->M, n0, n1, j->N, j->K, j->P, j->B, j->bias, j->C);
}

/* Whole panels a part: it packs its own rows and multiplies them by all
 * of B, so one fork-join instead of two and the panels stay in the cache
 * of the core that packed them (split by columns, half of each part's
 * panels come from the other core's); B is read once a part, from L3. */
static void rows_part(void *arg, int part, int parts) {
  const panels_job *j = arg;
  int64_t i0, i1;
  rt_part_range(j->M, PW, part, parts, &i0, &i1);
  if (i1 <= i0) return;
  float *P = (float *)j->P + i0 / PW * j->K * PW;
  pack_rows(i1 - i0, 0, i1 - i0, j->K, j->A + i0 * j->K, P);
  rt_sgemm_panels_cols(i1 - i0, 0, j->N, j->N, j->K, P, j->B, j->bias, j->C + i0 * j->N);
}

bool rt_sgemm_panels(int64_t M, int64_t N, int64_t K, const float *A, const float *B, const float *bias, float *C,
                     int threads) {
  if (M <= 0 || N <= 0) return true;
  float *P = rt_alloc(rt_sgemm_panels_bytes(M, K) + 64);
  if (!P) return false;
  float *panels = (float *)(((uintptr_t)P + 63) & ~(uintptr_t)63); /* aligned vector loads */
  panels_job j = {M, N, K, A, panels, B, bias, C};
  /* enough work a part (a part packs whole groups of 16 rows) */
  int64_t max_pack = M * K / (16 * 1024) < (M + 15) / 16 ? M * K / (16 * 1024) : (M + 15) / 16;
  int64_t max_parts = M * N * K / (256 * 1024);
  /* only where the panels split evenly (BERT's 128 tokens on 2 threads:
   * BERT 4 layers 0.95x (interp) and 0.93x (jit) the time by the median
   * of 9 paired runs, 8 of 9 faster each) */
  if (threads > 1 && threads <= max_parts && M % (PW * threads) == 0) {
    rt_parallel_parts(threads, rows_part, &j);
    rt_free(P);
    return true;
  }
  rt_parallel_parts(threads < max_pack ? threads : (int)(max_pack > 1 ? max_pack : 1), pack_part, &j);
  rt_parallel_parts(threads < max_parts ? threads : (int)(max_parts > 1 ? max_parts : 1), panels_part, &j);
  rt_free(P);
  return true;
}
