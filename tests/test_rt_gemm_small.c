/* The small-row product kernels (src/runtime/kernels/gemm_small.c), the
 * tiles for any M (gemm_tiles.c), the many-row panels (gemm_panels.c), and the
 * kernels' thread pool (thread_pool.c): against a double-precision
 * reference on odd sizes and tails, both the AVX2 and the plain C paths,
 * and the promise that a row's bits depend neither on M, nor on the
 * column split, nor on the threads. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../src/runtime/kernels/kernels.h"
#include "ppcc/runtime.h"
#include "test_support.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static const int64_t Ms[] = {1, 2, 3, 4, 5, 7, 16};
static const int64_t Ns[] = {1, 3, 4, 5, 15, 16, 17, 33, 70};
static const int64_t Ks[] = {1, 7, 8, 9, 16, 17, 31, 64, 100};

/* Every size, both layouts, 1 and 3 threads, against the reference; and
 * row i of the M-row product is the bits of the one-row product of row i. */
static void check_all_sizes(void) {
  unsigned seed = 7;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        int64_t M = Ms[mi], N = Ns[ni], K = Ks[ki];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *Bt = malloc(sizeof(float) * (size_t)(K * N)), *C = malloc(sizeof(float) * (size_t)(M * N));
        float *row = malloc(sizeof(float) * (size_t)N);
        for (int64_t j = 0; j < M * K; j++) A[j] = frand(&seed);
        for (int64_t j = 0; j < K * N; j++) B[j] = frand(&seed);
        for (int64_t k = 0; k < K; k++)
          for (int64_t n = 0; n < N; n++) Bt[n * K + k] = B[k * N + n];
        for (int bt = 0; bt < 2; bt++)
          for (int threads = 1; threads <= 3; threads += 2) {
            for (int64_t j = 0; j < M * N; j++) C[j] = NAN; /* every element must be written */
            rt_sgemm_small(M, N, K, A, bt ? Bt : B, bt, C, threads);
            for (int64_t i = 0; i < M; i++) {
              for (int64_t n = 0; n < N; n++) {
                double want = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                  want += (double)A[i * K + k] * B[k * N + n];
                  mag += fabs((double)A[i * K + k] * B[k * N + n]);
                }
                ck_assert_msg(fabs(C[i * N + n] - want) <= 1.2e-7 * (double)(K + 4) * mag, "M %lld N %lld K %lld bt %d: %g vs %g",
                              (long long)M, (long long)N, (long long)K, bt, C[i * N + n], want);
              }
              rt_sgemm_small(1, N, K, A + i * K, bt ? Bt : B, bt, row, 1);
              ck_assert_msg(memcmp(row, C + i * N, sizeof(float) * (size_t)N) == 0, "row %lld of M %lld differs",
                            (long long)i, (long long)M);
            }
          }
        free(A), free(B), free(Bt), free(C), free(row);
      }
}

/* Every instruction set the CPU has: AVX-512, AVX2, plain C. */
START_TEST(small_products_match_reference_each_level) {
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  for (int level = best; level >= RT_SIMD_NONE; level--) {
    rt_set_simd_level(level);
    ck_assert_int_eq(rt_simd_level(), level);
    check_all_sizes();
  }
  rt_set_simd_level(was);
}
END_TEST

/* Columns computed in pieces (as threads do) are the bits of the whole. */
START_TEST(column_ranges_give_same_bits) {
  enum { M = 5, N = 37, K = 45 };
  unsigned seed = 3;
  float A[M * K], B[N * K], whole[M * N], parts[M * N];
  for (int j = 0; j < M * K; j++) A[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) B[j] = frand(&seed);
  for (int bt = 0; bt < 2; bt++) {
    rt_sgemm_small_cols(M, 0, N, N, K, A, B, bt, whole);
    int64_t cut[] = {0, bt ? 4 : 32, bt ? 12 : 32, N};
    for (int p = 0; p < 3; p++) rt_sgemm_small_cols(M, cut[p], cut[p + 1], N, K, A, B, bt, parts);
    ck_assert_int_eq(memcmp(whole, parts, sizeof whole), 0);
  }
}
END_TEST

/* ppcc_rt_sgemm: a few rows go through the small kernels, and the
 * row-invariant mode gives the M-row product the bits of one-row calls. */
START_TEST(sgemm_row_invariant_mode) {
  enum { M = 37, N = 65, K = 70 };
  unsigned seed = 11;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K), *C = malloc(sizeof(float) * M * N);
  float row[N];
  for (int j = 0; j < M * K; j++) A[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) B[j] = frand(&seed);
  ppcc_rt_set_kernel_threads(2);
  ppcc_rt_set_row_invariant_matmul(true);
  for (int bt = 0; bt < 2; bt++) {
    ppcc_rt_sgemm(M, N, K, A, B, bt, C);
    for (int i = 0; i < M; i++) {
      ppcc_rt_sgemm(1, N, K, A + i * K, B, bt, row);
      ck_assert_int_eq(memcmp(row, C + i * N, sizeof row), 0);
    }
  }
  ppcc_rt_set_row_invariant_matmul(false);
  for (int bt = 0; bt < 2; bt++) { /* the BLAS path, split over 2 threads */
    ppcc_rt_sgemm(M, N, K, A, B, bt, C);
    for (int i = 0; i < M; i++)
      for (int n = 0; n < N; n++) {
        double want = 0;
        for (int k = 0; k < K; k++) want += (double)A[i * K + k] * (bt ? B[n * K + k] : B[k * N + n]);
        ck_assert_double_eq_tol(C[i * N + n], want, 1e-4);
      }
  }
  ppcc_rt_set_kernel_threads(1);
  free(A), free(B), free(C);
}
END_TEST

/* A decode step's product (one row, a linear weight [N, K]) through
 * ppcc_rt_sgemm, at each level: near the reference, split over 2 threads,
 * and (AVX-512: the 8-row matvec) the bits of that row in a 4-row product. */
START_TEST(one_row_linear_product_each_level) {
  enum { N = 1003, K = 1041 }; /* a tail of 3 columns, of 1 lane */
  unsigned seed = 13;
  float *A = malloc(sizeof(float) * 4 * K), *B = malloc(sizeof(float) * N * K);
  float *C4 = malloc(sizeof(float) * 4 * N), *row = malloc(sizeof(float) * N);
  for (int j = 0; j < 4 * K; j++) A[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) B[j] = frand(&seed);
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  ppcc_rt_set_kernel_threads(2);
  for (int level = best; level >= RT_SIMD_NONE; level--) {
    rt_set_simd_level(level);
    for (int i = 0; i < 4; i++) {
      for (int n = 0; n < N; n++) row[n] = NAN;
      ppcc_rt_sgemm(1, N, K, A + i * K, B, true, row);
      for (int n = 0; n < N; n++) {
        double want = 0, mag = 0;
        for (int k = 0; k < K; k++) {
          want += (double)A[i * K + k] * B[n * K + k];
          mag += fabs((double)A[i * K + k] * B[n * K + k]);
        }
        ck_assert_msg(fabs(row[n] - want) <= 1.2e-7 * (double)(K + 4) * mag, "level %d row %d col %d: %g vs %g", level,
                      i, n, row[n], want);
      }
      if (level < RT_SIMD_AVX512) continue;
      rt_sgemm_small(4, N, K, A, B, true, C4, 1);
      ck_assert_msg(memcmp(row, C4 + i * N, sizeof(float) * N) == 0, "row %d: one-row bits differ from the 4-row product", i);
    }
  }
  ppcc_rt_set_kernel_threads(1);
  rt_set_simd_level(was);
  free(A), free(B), free(C4), free(row);
}
END_TEST

/* ---- the tiles (gemm_tiles.c): any M, the small kernels' bits ---- */

static const int64_t tile_Ms[] = {1, 8, 9, 17, 33, 130}; /* 8: the 8-row tiles; 130: two blocks of MC rows */
static const int64_t tile_Ns[] = {1, 7, 70};
static const int64_t tile_Ks[] = {1, 17, 100, 1041}; /* 1041: two K blocks of the [N, K] tiles, a tail */

static void check_tiles_sizes(void) {
  unsigned seed = 5;
  for (size_t mi = 0; mi < sizeof tile_Ms / sizeof *tile_Ms; mi++)
    for (size_t ni = 0; ni < sizeof tile_Ns / sizeof *tile_Ns; ni++)
      for (size_t ki = 0; ki < sizeof tile_Ks / sizeof *tile_Ks; ki++) {
        int64_t M = tile_Ms[mi], N = tile_Ns[ni], K = tile_Ks[ki];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *Bt = malloc(sizeof(float) * (size_t)(K * N)), *C = malloc(sizeof(float) * (size_t)(M * N));
        float *C3 = malloc(sizeof(float) * (size_t)(M * N)), *row = malloc(sizeof(float) * (size_t)N);
        for (int64_t j = 0; j < M * K; j++) A[j] = frand(&seed);
        for (int64_t j = 0; j < K * N; j++) B[j] = frand(&seed);
        for (int64_t k = 0; k < K; k++)
          for (int64_t n = 0; n < N; n++) Bt[n * K + k] = B[k * N + n];
        for (int bt = 0; bt < 2; bt++) {
          for (int64_t j = 0; j < M * N; j++) C[j] = C3[j] = NAN; /* every element must be written */
          rt_sgemm_tiles(M, N, K, A, bt ? Bt : B, bt, C, 1);
          rt_sgemm_tiles(M, N, K, A, bt ? Bt : B, bt, C3, 3);
          ck_assert_msg(memcmp(C, C3, sizeof(float) * (size_t)(M * N)) == 0, "threads change bits: M %lld N %lld K %lld bt %d",
                        (long long)M, (long long)N, (long long)K, bt);
          for (int64_t i = 0; i < M; i++) {
            for (int64_t n = 0; n < N; n++) {
              double want = 0, mag = 0;
              for (int64_t k = 0; k < K; k++) {
                want += (double)A[i * K + k] * B[k * N + n];
                mag += fabs((double)A[i * K + k] * B[k * N + n]);
              }
              ck_assert_msg(fabs(C[i * N + n] - want) <= 1.2e-7 * (double)(K + 4) * mag,
                            "M %lld N %lld K %lld bt %d: %g vs %g", (long long)M, (long long)N, (long long)K, bt,
                            C[i * N + n], want);
            }
            rt_sgemm_small(1, N, K, A + i * K, bt ? Bt : B, bt, row, 1); /* a decode step's row */
            ck_assert_msg(memcmp(row, C + i * N, sizeof(float) * (size_t)N) == 0,
                          "row %lld of M %lld (N %lld K %lld bt %d) differs from the one-row product", (long long)i,
                          (long long)M, (long long)N, (long long)K, bt);
          }
        }
        free(A), free(B), free(Bt), free(C), free(C3), free(row);
      }
}

/* Every level: AVX-512 tiles, and below it the small kernels for all M. */
START_TEST(tiles_match_reference_and_one_row_bits) {
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  for (int level = best; level >= RT_SIMD_NONE; level--) {
    rt_set_simd_level(level);
    ck_assert_int_eq(rt_sgemm_tiles_in_use(), level >= RT_SIMD_AVX512);
    check_tiles_sizes();
  }
  rt_set_simd_level(was);
}
END_TEST

/* Column pieces (as threads take them, at any cut) give the bits of the
 * whole; so does ppcc_rt_sgemm where it takes the tiles. */
static void check_tiles_column_ranges(int M) {
  enum { N = 600, K = 1100 }; /* sizes ppcc_rt_sgemm gives the tiles */
  unsigned seed = 9;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K);
  float *whole = malloc(sizeof(float) * M * N), *parts = malloc(sizeof(float) * M * N);
  for (int j = 0; j < M * K; j++) A[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) B[j] = frand(&seed);
  for (int bt = 0; bt < 2; bt++) {
    rt_sgemm_tiles_cols(M, 0, N, N, K, A, B, bt, whole);
    int64_t cut[] = {0, 5, 6, 31, 300, N};
    for (int p = 0; p < 5; p++) rt_sgemm_tiles_cols(M, cut[p], cut[p + 1], N, K, A, B, bt, parts);
    ck_assert_int_eq(memcmp(whole, parts, sizeof(float) * M * N), 0);
    if (bt || M > RT_SMALL_M) /* [K, N] with a few rows: the small kernels */
      ck_assert(rt_sgemm_tiles_pay(M, N, K, A, B, bt) == rt_sgemm_tiles_in_use());
    ck_assert(!rt_sgemm_tiles_pay(512, N, K, A, B, bt));
    ppcc_rt_set_kernel_threads(2);
    ppcc_rt_sgemm(M, N, K, A, B, bt, parts);
    ppcc_rt_set_kernel_threads(1);
    if (rt_sgemm_tiles_in_use()) ck_assert_int_eq(memcmp(whole, parts, sizeof(float) * M * N), 0);
  }
  free(A), free(B), free(whole), free(parts);
}

START_TEST(tiles_column_ranges_and_dispatch) {
  check_tiles_column_ranges(24);
  check_tiles_column_ranges(8); /* the 8-row tiles (a batch of 8) */
}
END_TEST

/* ---- the panels (gemm_panels.c): many rows, one FMA chain per element ---- */

static const int64_t panel_Ms[] = {1, 17, 64, 65, 128, 130}; /* 65, 130: a panel's tail of 1 and 2 rows; 128: a
                                                                 panel a part on 2 threads */
static const int64_t panel_Ns[] = {1, 7, 70};            /* tiles of 6 B rows and a tail */
static const int64_t panel_Ks[] = {1, 17, 100, 2100}; /* 2100: two K blocks of 130 rows' panels, a tail */

/* C from the panels on 1, 2 and 3 threads (C3 the 3-thread product
 * once it matched the 2-thread one), and from column pieces. */
static void panels_product(int64_t M, int64_t N, int64_t K, const float *A, const float *Bt, float *C, float *C3,
                           float *parts) {
  for (int64_t j = 0; j < M * N; j++) C[j] = C3[j] = parts[j] = NAN; /* every element must be written */
  ck_assert(rt_sgemm_panels(M, N, K, A, Bt, NULL, C, 1));
  ck_assert(rt_sgemm_panels(M, N, K, A, Bt, NULL, C3, 2));
  ck_assert_msg(memcmp(C, C3, sizeof(float) * (size_t)(M * N)) == 0, "2 threads change bits: M %lld N %lld K %lld",
                (long long)M, (long long)N, (long long)K);
  for (int64_t j = 0; j < M * N; j++) C3[j] = NAN;
  ck_assert(rt_sgemm_panels(M, N, K, A, Bt, NULL, C3, 3));
  float *P = aligned_alloc(64, (size_t)rt_sgemm_panels_bytes(M, K) + 64);
  rt_sgemm_panels_pack(M, K, A, P);
  int64_t cut[] = {0, N / 3, N / 3 + 1, N};
  for (int p = 0; p < 3; p++) rt_sgemm_panels_cols(M, cut[p], cut[p + 1], N, K, P, Bt, NULL, parts);
  free(P);
}

/* Every level (AVX-512 tiles; below it the same chains in plain C): near
 * the double reference; the bits of the AVX-512 level at every level;
 * threads and column pieces change no bits; row i of the M-row product is
 * the bits of the one-row product of row i. */
START_TEST(panels_match_reference_and_levels) {
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  unsigned seed = 21;
  for (size_t mi = 0; mi < sizeof panel_Ms / sizeof *panel_Ms; mi++)
    for (size_t ni = 0; ni < sizeof panel_Ns / sizeof *panel_Ns; ni++)
      for (size_t ki = 0; ki < sizeof panel_Ks / sizeof *panel_Ks; ki++) {
        int64_t M = panel_Ms[mi], N = panel_Ns[ni], K = panel_Ks[ki];
        size_t mn = (size_t)(M * N);
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *Bt = malloc(sizeof(float) * (size_t)(K * N));
        float *C = malloc(sizeof(float) * mn), *C3 = malloc(sizeof(float) * mn);
        float *parts = malloc(sizeof(float) * mn), *first = malloc(sizeof(float) * mn);
        float *row = malloc(sizeof(float) * (size_t)N);
        for (int64_t j = 0; j < M * K; j++) A[j] = frand(&seed);
        for (int64_t j = 0; j < K * N; j++) Bt[j] = frand(&seed);
        for (int level = best; level >= RT_SIMD_NONE; level--) {
          rt_set_simd_level(level);
          panels_product(M, N, K, A, Bt, C, C3, parts);
          ck_assert_msg(memcmp(C, C3, sizeof(float) * mn) == 0 && memcmp(C, parts, sizeof(float) * mn) == 0,
                        "threads or columns change bits: M %lld N %lld K %lld level %d", (long long)M, (long long)N,
                        (long long)K, level);
          if (level == best) memcpy(first, C, sizeof(float) * mn);
          ck_assert_msg(memcmp(C, first, sizeof(float) * mn) == 0, "level %d differs from level %d: M %lld N %lld K %lld",
                        level, best, (long long)M, (long long)N, (long long)K);
          for (int64_t i = 0; i < M; i++) {
            for (int64_t n = 0; n < N; n++) {
              double want = 0, mag = 0;
              for (int64_t k = 0; k < K; k++) {
                want += (double)A[i * K + k] * Bt[n * K + k];
                mag += fabs((double)A[i * K + k] * Bt[n * K + k]);
              }
              ck_assert_msg(fabs(C[i * N + n] - want) <= 1.2e-7 * (double)(K + 4) * mag,
                            "M %lld N %lld K %lld level %d: %g vs %g", (long long)M, (long long)N, (long long)K, level,
                            C[i * N + n], want);
            }
            if (level != best && i % 16 != 1) continue; /* the plain C chains are slow: a few rows */
            ck_assert(rt_sgemm_panels(1, N, K, A + i * K, Bt, NULL, row, 1));
            ck_assert_msg(memcmp(row, C + i * N, sizeof(float) * (size_t)N) == 0,
                          "row %lld of M %lld (N %lld K %lld) differs from the one-row product", (long long)i,
                          (long long)M, (long long)N, (long long)K);
          }
        }
        free(A), free(Bt), free(C), free(C3), free(parts), free(first), free(row);
      }
  rt_set_simd_level(was);
}
END_TEST

/* ppcc_rt_sgemm takes the panels for many rows with a linear weight (the
 * bits of rt_sgemm_panels), and never for a few rows or very many; the
 * bias the panels add as they store (rt_linear_f32's) gives the bits of
 * the product and rt_add_bias after it. */
START_TEST(panels_dispatch_and_bias) {
  enum { M = 100, N = 70, K = 300 };
  unsigned seed = 23;
  float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K), bias[N];
  float *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
  for (int j = 0; j < M * K; j++) A[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) B[j] = frand(&seed);
  for (int n = 0; n < N; n++) bias[n] = frand(&seed);
  bias[3] = 0.0f, bias[4] = -0.0f;
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  for (int level = best; level >= RT_SIMD_NONE; level--) {
    rt_set_simd_level(level);
    bool avx512 = level >= RT_SIMD_AVX512;
    ck_assert(rt_sgemm_panels_pay(M, N, K) == avx512);
    ck_assert(!rt_sgemm_panels_pay(RT_SMALL_M, N, K));
    ck_assert(!rt_sgemm_panels_pay(512, N, K)); /* OpenBLAS's from 512 rows */
    ck_assert(rt_sgemm_panels(M, N, K, A, B, NULL, want, 1));
    ppcc_rt_set_kernel_threads(2);
    ppcc_rt_sgemm(M, N, K, A, B, true, got);
    if (avx512) ck_assert_int_eq(memcmp(want, got, sizeof(float) * M * N), 0);
    rt_add_bias(want, bias, M, N);
    ck_assert(rt_sgemm_panels(M, N, K, A, B, bias, got, 1));
    ck_assert_int_eq(memcmp(want, got, sizeof(float) * M * N), 0);
    ppcc_rt_sgemm(M, N, K, A, B, true, want); /* the kernel ppcc_rt_sgemm picks at this level */
    rt_add_bias(want, bias, M, N);
    rt_linear_f32(M, N, K, A, B, bias, got);
    ck_assert_int_eq(memcmp(want, got, sizeof(float) * M * N), 0);
    ppcc_rt_set_kernel_threads(1);
  }
  rt_set_simd_level(was);
  free(A), free(B), free(want), free(got);
}
END_TEST

/* ---- the pool ---- */

typedef struct count_job {
  atomic_int runs[8];
  atomic_int nested_inline, outside;
} count_job;

static void inner_part(void *arg, int part, int parts) {
  count_job *j = arg;
  if (part == 0 && parts == 1) atomic_fetch_add(&j->nested_inline, 1);
}

static void count_part(void *arg, int part, int parts) {
  count_job *j = arg;
  atomic_fetch_add(&j->runs[part], 1);
  (void)parts;
  if (!rt_in_pool_part()) atomic_fetch_add(&j->outside, 1);
  rt_parallel_parts(4, inner_part, j); /* inside a part: runs inline, whole */
}

START_TEST(pool_runs_each_part_once) {
  for (int round = 0; round < 200; round++) { /* workers park and wake again */
    count_job j = {0};
    int parts = 1 + round % 4;
    rt_parallel_parts(parts, count_part, &j);
    for (int p = 0; p < 8; p++) ck_assert_int_eq(atomic_load(&j.runs[p]), p < parts ? 1 : 0);
    ck_assert_int_eq(atomic_load(&j.nested_inline), parts);
    ck_assert_int_eq(atomic_load(&j.outside), 0);
    ck_assert(!rt_in_pool_part());
  }
}
END_TEST

/* rt_pool_park (a device about to wait) sends the workers to sleep at
 * once; the next call wakes them and still runs every part once. Parking
 * inside a part, or with no pool yet on this thread, does nothing. */
static void park_part(void *arg, int part, int parts) {
  rt_pool_park();
  count_part(arg, part, parts);
}

START_TEST(pool_parked_workers_wake_for_the_next_call) {
  rt_pool_park();
  for (int round = 0; round < 200; round++) {
    count_job j = {0};
    int parts = 2 + round % 3;
    rt_parallel_parts(parts, round % 2 ? park_part : count_part, &j);
    rt_pool_park();
    for (int p = 0; p < 8; p++) ck_assert_int_eq(atomic_load(&j.runs[p]), p < parts ? 1 : 0);
    ck_assert_int_eq(atomic_load(&j.nested_inline), parts);
  }
}
END_TEST

/* A forked child (workers gone) starts its own and still gets every part. */
START_TEST(pool_works_after_fork) {
  count_job j = {0};
  rt_parallel_parts(3, count_part, &j); /* workers exist in the parent */
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    count_job k = {0};
    rt_parallel_parts(3, count_part, &k);
    _exit(atomic_load(&k.runs[0]) == 1 && atomic_load(&k.runs[1]) == 1 && atomic_load(&k.runs[2]) == 1 ? 0 : 1);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/* rt_parallel_guided: every item exactly once, in chunks that start on
 * `align` and hold at least min_chunk (but the last), inside pool parts,
 * whatever n and parts, also when the taker of the first chunk stalls
 * (the others take the rest; no timing is asserted). */
typedef struct guided_count {
  atomic_int seen[1000];
  atomic_int bad_chunks, chunks;
  int64_t n, align, min_chunk;
} guided_count;

static void guided_mark(void *arg, int64_t b, int64_t e) {
  guided_count *g = arg;
  atomic_fetch_add(&g->chunks, 1);
  if (b % g->align != 0 || e <= b || (e - b < g->min_chunk && e != g->n)) atomic_fetch_add(&g->bad_chunks, 1);
  if (!rt_in_pool_part()) atomic_fetch_add(&g->bad_chunks, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&g->seen[i], 1);
}

static void guided_mark_slowly(void *arg, int64_t b, int64_t e) {
  if (b == 0) /* the first chunk's taker stalls: the other parts go on */
    for (volatile int spin = 0; spin < 2000000; spin++) {
    }
  guided_mark(arg, b, e);
}

START_TEST(guided_chunks_cover_once) {
  for (int64_t n = 0; n <= 1000; n += 37)
    for (int parts = 1; parts <= 4; parts++)
      for (int slow = 0; slow < 2; slow++) {
        guided_count *g = calloc(1, sizeof *g);
        ck_assert_ptr_nonnull(g);
        g->n = n, g->align = 6, g->min_chunk = 24;
        rt_parallel_guided(parts, n, g->align, g->min_chunk, slow ? guided_mark_slowly : guided_mark, g);
        for (int64_t i = 0; i < 1000; i++) ck_assert_int_eq(atomic_load(&g->seen[i]), i < n ? 1 : 0);
        ck_assert_int_eq(atomic_load(&g->bad_chunks), 0);
        if (n > 0) ck_assert_int_ge(atomic_load(&g->chunks), n >= 24 * 2 * parts ? parts : 1);
        free(g);
      }
}
END_TEST

START_TEST(part_ranges_cover_once) {
  for (int64_t n = 0; n < 100; n += 7)
    for (int parts = 1; parts <= 5; parts++) {
      int64_t next = 0;
      for (int p = 0; p < parts; p++) {
        int64_t b, e;
        rt_part_range(n, 4, p, parts, &b, &e);
        ck_assert_int_eq(b, next);
        ck_assert(b % 4 == 0 || b == n);
        next = e > b ? e : b;
      }
      ck_assert_int_eq(next, n);
    }
}
END_TEST

int main(void) {
  Suite *s = suite_create("gemm_small");
  TCase *tc = t_add_tcase(s, "kernels", 120);
  tcase_add_test(tc, small_products_match_reference_each_level);
  tcase_add_test(tc, column_ranges_give_same_bits);
  tcase_add_test(tc, sgemm_row_invariant_mode);
  tcase_add_test(tc, one_row_linear_product_each_level);
  tcase_add_test(tc, tiles_match_reference_and_one_row_bits);
  tcase_add_test(tc, tiles_column_ranges_and_dispatch);
  tcase_add_test(tc, panels_match_reference_and_levels);
  tcase_add_test(tc, panels_dispatch_and_bias);
  tc = t_add_tcase(s, "pool", 0);
  tcase_add_test(tc, pool_runs_each_part_once);
  tcase_add_test(tc, pool_parked_workers_wake_for_the_next_call);
  tcase_add_test(tc, part_ranges_cover_once);
  tcase_add_test(tc, guided_chunks_cover_once);
  tcase_add_test(tc, pool_works_after_fork);
  return t_run_suite(s);
}
