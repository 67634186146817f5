/* Products of many rows with a linear weight B [N, K] (a BERT layer's or
 * a prefill's GEMMs), as outer products that still read B where it lies:
 * C^T = B . A^T. A (the activation, small next to B) is copied once per
 * call into K-major panels of 64 rows, P[k][64] (the copy ONNX Runtime
 * makes of B once at load, made here of A on every call: M x K floats,
 * ~0.3 % of a 128-row call's time, and nothing kept between calls, so a
 * weight mapped from a file stays zero-copy and no second copy of it is
 * ever resident). A tile of 6 B rows x 64 A rows holds 384 outputs in 24
 * registers: per k, 4 vector loads of the panel and 6 broadcasts of B
 * feed 24 FMAs; the dot-product tiles (gemm_tiles.c) hold 24 outputs and
 * end every one in a horizontal sum, and peak about a quarter lower.
 *
 * Every C[i, n] is one FMA chain over k in order from zero (c = fma(A[i,
 * k], B[n, k], c)), whatever M, the tile, the panel, the thread or the
 * column range: a row's bits depend on none of them, though they differ
 * from the few-row kernels' 16-lane sums (gemm_small.c), which serve a
 * decode step's rows. AVX-512 only (rt_sgemm_panels_pay says no below). */
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
/* Panels a tile row walks before the next tile row: their bytes (M x K x
 * 4 at most this) stay in L2 while every B row of the columns meets them. */
#define PANEL_BYTES_L2 (1 << 20)

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

/* P[p][k][0..64) = A[64 p + l, k] for the panel's rows, 0 past M. */
AVX512 static void pack_panels(int64_t M, int64_t K, const float *A, float *P) {
  for (int64_t i0 = 0; i0 < M; i0 += 16) {
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

/* R B rows (from B, row stride K) x NV vectors of a panel, all of K: the
 * sums into C's columns n..n+R of the panel's first `rows` rows. */
#define PANEL_TILE(R, NV)                                                                                      \
  AVX512 static void panel_tile_##R##_##NV(int64_t K, const float *B, const float *P, float *C, int64_t ldc,    \
                                           int64_t rows) {                                                     \
    __m512 c[R][NV];                                                                                           \
    _Pragma("GCC unroll 8") for (int j = 0; j < R; j++)                                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[j][v] = _mm512_setzero_ps();                      \
    for (int64_t k = 0; k < K; k++) {                                                                          \
      __m512 a[NV];                                                                                            \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) a[v] = _mm512_load_ps(P + k * PW + 16 * v);         \
      _Pragma("GCC unroll 8") for (int j = 0; j < R; j++) {                                                    \
        __m512 b = _mm512_set1_ps(B[j * K + k]);                                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[j][v] = _mm512_fmadd_ps(a[v], b, c[j][v]);      \
      }                                                                                                        \
    }                                                                                                          \
    float t[R][NV * 16] __attribute__((aligned(64)));                                                          \
    _Pragma("GCC unroll 8") for (int j = 0; j < R; j++)                                                        \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) _mm512_store_ps(t[j] + 16 * v, c[j][v]);            \
    for (int64_t i = 0; i < rows; i++)                                                                         \
      _Pragma("GCC unroll 8") for (int j = 0; j < R; j++) C[i * ldc + j] = t[j][i];                            \
  }
#define PANEL_ROW(R) PANEL_TILE(R, 1) PANEL_TILE(R, 2) PANEL_TILE(R, 3) PANEL_TILE(R, 4)
PANEL_ROW(1)
PANEL_ROW(2)
PANEL_ROW(3)
PANEL_ROW(4)
PANEL_ROW(5)
PANEL_ROW(6)

typedef void (*panel_tile_fn)(int64_t, const float *, const float *, float *, int64_t, int64_t);
#define PANEL_FNS(R) {NULL, panel_tile_##R##_1, panel_tile_##R##_2, panel_tile_##R##_3, panel_tile_##R##_4}
static const panel_tile_fn panel_tiles[TR + 1][PW / 16 + 1] = {{NULL},        PANEL_FNS(1), PANEL_FNS(2),
                                                               PANEL_FNS(3), PANEL_FNS(4), PANEL_FNS(5),
                                                               PANEL_FNS(6)};

/* Columns n0..n1 of C [M, N] from the packed panels of A. */
static void panel_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *P, const float *B,
                       float *C) {
  if (K == 0) {
    for (int64_t i = 0; i < M; i++) memset(C + i * N + n0, 0, (size_t)(n1 - n0) * 4);
    return;
  }
  int64_t block = PANEL_BYTES_L2 / (K * PW * 4) * PW; /* A rows whose panels stay in L2 */
  if (block < PW) block = PW;
  for (int64_t m0 = 0; m0 < M; m0 += block) {
    int64_t m1 = m0 + block < M ? m0 + block : M;
    for (int64_t n = n0; n < n1; n += TR) {
      int r = n1 - n < TR ? (int)(n1 - n) : TR;
      for (int64_t i = m0; i < m1; i += PW) {
        int64_t rows = m1 - i < PW ? m1 - i : PW;
        panel_tiles[r][(rows + 15) / 16](K, B + n * K, P + (i / PW) * K * PW, C + i * N + n, N, rows);
      }
    }
  }
}
#endif

int64_t rt_sgemm_panels_bytes(int64_t M, int64_t K) { return (M + PW - 1) / PW * PW * K * 4; }

bool rt_sgemm_panels_pay(int64_t M, int64_t N, int64_t K) {
#ifdef HAVE_X86
  /* from 64 rows the packed copy of A is a few per mille of the call, and
   * the panels are faster than the dot-product tiles and OpenBLAS
   * (bench/gemm_gflops) */
  return rt_simd_level() >= RT_SIMD_AVX512 && M >= 64 && N >= 64 && K >= 64;
#else
  (void)M, (void)N, (void)K;
  return false;
#endif
}

void rt_sgemm_panels_pack(int64_t M, int64_t K, const float *A, float *P) {
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    pack_panels(M, K, A, P);
    return;
  }
#endif
  int64_t padded = (M + PW - 1) / PW * PW;
  for (int64_t i = 0; i < padded; i++)
    for (int64_t k = 0; k < K; k++) P[(i / PW) * K * PW + k * PW + i % PW] = i < M ? A[i * K + k] : 0.0f;
}

void rt_sgemm_panels_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *P, const float *B,
                          float *C) {
  if (n1 <= n0 || M <= 0) return;
#ifdef HAVE_X86
  if (rt_simd_level() >= RT_SIMD_AVX512) {
    panel_cols(M, n0, n1, N, K, P, B, C);
    return;
  }
#endif
  for (int64_t i = 0; i < M; i++) /* the same chains in plain C (fmaf: one rounding) */
    for (int64_t n = n0; n < n1; n++) {
      float c = 0.0f;
      for (int64_t k = 0; k < K; k++) c = fmaf(P[(i / PW) * K * PW + k * PW + i % PW], B[n * K + k], c);
      C[i * N + n] = c;
    }
}

typedef struct panels_job {
  int64_t M, N, K;
  const float *P, *B;
  float *C;
} panels_job;

static void panels_part(void *arg, int part, int parts) {
  const panels_job *j = arg;
  int64_t n0, n1;
  rt_part_range(j->N, TR, part, parts, &n0, &n1);
  rt_sgemm_panels_cols(j->M, n0, n1, j->N, j->K, j->P, j->B, j->C);
}

bool rt_sgemm_panels(int64_t M, int64_t N, int64_t K, const float *A, const float *B, float *C, int threads) {
  if (M <= 0 || N <= 0) return true;
  float *P = rt_alloc(rt_sgemm_panels_bytes(M, K) + 64);
  if (!P) return false;
  float *panels = (float *)(((uintptr_t)P + 63) & ~(uintptr_t)63); /* aligned vector loads */
  rt_sgemm_panels_pack(M, K, A, panels);
  panels_job j = {M, N, K, panels, B, C};
  int64_t max_parts = M * N * K / (256 * 1024); /* enough work a part */
  int parts = threads < max_parts ? threads : (int)(max_parts > 1 ? max_parts : 1);
  rt_parallel_parts(parts, panels_part, &j);
  rt_free(P);
  return true;
}
