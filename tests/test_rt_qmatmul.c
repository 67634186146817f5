/* Quantized linear kernels (src/runtime/kernels/quant_matmul.c) on odd
 * shapes (M = 1 decode, 3 and 7 prefill rows; N odd; K several blocks):
 * - every format against a double-precision reference that dequantizes
 *   the weights with the block table and the activations with the same
 *   8-bit rounding (q8_0 / q8_K): only float summation order differs;
 * - the same within the activation-rounding error of the f32 product;
 * - each instruction set this CPU has (c, avx2, avx2-vnni, avx512-vnni)
 *   against the plain C one;
 * - every format's bits do not depend on the threads or on how many rows
 *   are computed together (the four-row prefill kernels);
 * - quantized embedding rows equal the block decoder's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/quant.h"
#include "ppcc/runtime.h"
#include "test_support.h"

static const ppcc_dtype formats[] = {PPCC_Q8_0, PPCC_Q4_0, PPCC_Q4_1, PPCC_Q5_0, PPCC_Q5_1,
                                     PPCC_Q2_K, PPCC_Q3_K, PPCC_Q4_K, PPCC_Q5_K, PPCC_Q6_K};
#define N_FORMATS (int)(sizeof formats / sizeof *formats)
static const char *const isas[] = {"c", "avx2", "avx2-vnni", "avx512-vnni"};
#define N_ISAS (int)(sizeof isas / sizeof *isas)

static uint32_t rng = 12345;
static uint32_t next_u32(void) {
  rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
  return rng;
}
static float uniform(void) { return (float)(next_u32() >> 8) / 16777216.0f * 2.0f - 1.0f; }

/* Random blocks with finite f16 scales of a sane size. */
static unsigned char *random_weights(const ppcc_block_format *f, int64_t N, int64_t K) {
  int64_t nb = N * K / f->block;
  unsigned char *w = malloc((size_t)(nb * f->bytes));
  for (int64_t i = 0; i < nb * f->bytes; i++) w[i] = (unsigned char)next_u32();
  for (int64_t i = 0; i < nb; i++)
    for (int s = 0; s < 3 && f->scale_at[s] >= 0; s++) {
      uint16_t h = ppcc_f32_to_f16(0.001f + 0.01f * (uniform() + 1.0f));
      memcpy(w + i * f->bytes + f->scale_at[s], &h, 2);
    }
  return w;
}

/* The activations as the kernel rounds them, in floats. */
static void round_activations(const float *x, int64_t K, int block, float *out) {
  for (int64_t b = 0; b < K / block; b++) {
    const float *v = x + b * block;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < block; j++)
      if (fabsf(v[j]) > amax) amax = fabsf(v[j]), max = v[j];
    for (int j = 0; j < block; j++) {
      if (block == 32) {
        float d = ppcc_f16_to_f32(ppcc_f32_to_f16(amax / 127.0f)), id = amax ? 127.0f / amax : 0.0f;
        out[b * block + j] = (float)lrintf(v[j] * id) * d;
      } else {
        float iscale = amax ? -127.0f / max : 0.0f;
        long q = lrintf(iscale * v[j]);
        out[b * block + j] = amax ? (float)(q < 127 ? q : 127) * (1.0f / iscale) : 0.0f;
      }
    }
  }
}

static void check_format(ppcc_dtype t, int64_t M, int64_t N, int64_t K) {
  const ppcc_block_format *f = ppcc_dtype_blocks(t);
  ck_assert_ptr_nonnull(f);
  unsigned char *w = random_weights(f, N, K);
  float *x = malloc(sizeof(float) * (size_t)(M * K)), *xr = malloc(sizeof(float) * (size_t)(M * K));
  float *wf = malloc(sizeof(float) * (size_t)(N * K)), *y = malloc(sizeof(float) * (size_t)(M * N));
  float *yc = malloc(sizeof(float) * (size_t)(M * N));
  for (int64_t i = 0; i < M * K; i++) x[i] = uniform() * (i % 7 == 0 ? 4.0f : 1.0f);
  for (int64_t m = 0; m < M; m++) round_activations(x + m * K, K, f->block, xr + m * K);
  ck_assert(ppcc_block_decode(f, w, N * K / f->block, wf) < 0);
  ck_assert(ppcc_rt_quant_set_isa("c"));
  ck_assert(ppcc_rt_qlinear_f32(t, M, N, K, x, w, yc));
  for (int s = 0; s < N_ISAS; s++) {
    if (!ppcc_rt_quant_set_isa(isas[s])) continue;
    ck_assert_str_eq(ppcc_rt_quant_isa(), isas[s]);
    ck_assert(ppcc_rt_qlinear_f32(t, M, N, K, x, w, y));
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double ref = 0, exact = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          ref += (double)wf[n * K + k] * xr[m * K + k];
          exact += (double)wf[n * K + k] * x[m * K + k];
          mag += fabs((double)wf[n * K + k] * x[m * K + k]);
        }
        float got = y[m * N + n];
        ck_assert_msg(fabs(got - ref) <= 1e-5 * mag + 1e-6, "%s %s [%lld,%lld] of %lldx%lldx%lld: %.7g, reference %.7g",
                      f->name, isas[s], (long long)m, (long long)n, (long long)M, (long long)N, (long long)K, got, ref);
        /* 8-bit activations: at most half a step (amax/254) per value */
        ck_assert_msg(fabs(got - exact) <= 0.02 * mag + 1e-6, "%s: %.7g vs f32 %.7g", f->name, got, exact);
        ck_assert_msg(fabsf(got - yc[m * N + n]) <= 1e-5 * mag + 1e-6, "%s %s vs c: %.7g vs %.7g", f->name, isas[s],
                      got, yc[m * N + n]);
      }
  }
  free(w), free(x), free(xr), free(wf), free(y), free(yc);
}

START_TEST(every_format_matches_the_dequantized_product) {
  static const int64_t shapes[][3] = {{1, 5, 1}, {3, 7, 2}, {7, 3, 3}, {1, 1, 4}, {9, 11, 5}, {19, 9, 2}};
  for (int i = 0; i < N_FORMATS; i++) {
    int block = ppcc_dtype_blocks(formats[i])->block;
    for (int s = 0; s < 6; s++) check_format(formats[i], shapes[s][0], shapes[s][1], shapes[s][2] * block);
  }
}
END_TEST

/* Threads take chunks of output rows (big ones first, 4 or 16 at last),
 * after quantizing (and packing) the activations 16 rows at a time: the
 * same bits as one thread, for every format, prefill (two whole tiles of
 * 16 rows and 5 more) and decode shapes. */
START_TEST(threads_give_the_same_bits) {
  for (int i = 0; i < N_FORMATS; i++) {
    const ppcc_block_format *f = ppcc_dtype_blocks(formats[i]);
    int64_t M = 37, N = 131, K = 1024; /* enough work for threads even at one row */
    unsigned char *w = random_weights(f, N, K);
    float *x = malloc(sizeof(float) * (size_t)(M * K)), *y1 = malloc(sizeof(float) * (size_t)(M * N));
    float *y3 = malloc(sizeof(float) * (size_t)(M * N));
    for (int64_t j = 0; j < M * K; j++) x[j] = uniform();
    for (int64_t m = 1; m <= M; m += M - 1) {
      ppcc_rt_set_kernel_threads(1);
      ck_assert(ppcc_rt_qlinear_f32(formats[i], m, N, K, x, w, y1));
      ppcc_rt_set_kernel_threads(3);
      for (int rep = 0; rep < 3; rep++) {
        ck_assert(ppcc_rt_qlinear_f32(formats[i], m, N, K, x, w, y3));
        ck_assert_msg(memcmp(y1, y3, sizeof(float) * (size_t)(m * N)) == 0, "%s, %lld rows", f->name, (long long)m);
      }
    }
    ppcc_rt_set_kernel_threads(1);
    free(w), free(x), free(y1), free(y3);
  }
}
END_TEST

/* Under --deterministic (row-invariant matmuls) a row's bits do not
 * depend on how many rows are computed with it (the prefill kernels take
 * four or eight at a time; the GEMM is off): microbatches. */
START_TEST(rows_do_not_depend_on_the_row_count) {
  ppcc_rt_set_row_invariant_matmul(true);
  for (int t = 0; t < N_FORMATS; t++)
    for (int s = 0; s < N_ISAS; s++) {
      if (!ppcc_rt_quant_set_isa(isas[s])) continue;
      const ppcc_block_format *f = ppcc_dtype_blocks(formats[t]);
      int64_t M = 27, N = 11, K = 2 * f->block; /* tiles of 8 or 4, then single rows */
      unsigned char *w = random_weights(f, N, K);
      float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N)), y1[11];
      for (int64_t i = 0; i < M * K; i++) x[i] = uniform();
      ck_assert(ppcc_rt_qlinear_f32(formats[t], M, N, K, x, w, y));
      for (int64_t m = 0; m < M; m++) {
        ck_assert(ppcc_rt_qlinear_f32(formats[t], 1, N, K, x + m * K, w, y1));
        ck_assert_msg(memcmp(y1, y + m * N, sizeof y1) == 0, "%s %s row %lld", f->name, isas[s], (long long)m);
      }
      free(w), free(x), free(y);
    }
  ppcc_rt_set_row_invariant_matmul(false);
}
END_TEST

/* avx512-vnni's prefill GEMM (tiles of 8 weight rows by 16 activation
 * rows, ragged at both edges here) has the one-row kernel's integer sums,
 * its float sums in another order: within rounding of it, and off under
 * --deterministic (row-invariant matmuls), where every row gets the
 * one-row kernel's bits (where the CPU has the set). */
START_TEST(the_gemm_agrees_with_the_one_row_kernel) {
  if (!ppcc_rt_quant_set_isa("avx512-vnni")) return;
  for (int t = 0; t < N_FORMATS; t++) {
    const ppcc_block_format *f = ppcc_dtype_blocks(formats[t]);
    int64_t M = 37, N = 13, K = 3 * f->block;
    unsigned char *w = random_weights(f, N, K);
    float *x = malloc(sizeof(float) * (size_t)(M * K)), *y = malloc(sizeof(float) * (size_t)(M * N)), y1[13];
    float *wf = malloc(sizeof(float) * (size_t)(N * K));
    ck_assert(ppcc_block_decode(f, w, N * K / f->block, wf) < 0);
    for (int64_t i = 0; i < M * K; i++) x[i] = uniform() * (i % 5 == 0 ? 3.0f : 1.0f);
    for (int det = 0; det < 2; det++) {
      ppcc_rt_set_row_invariant_matmul(det);
      ck_assert(ppcc_rt_qlinear_f32(formats[t], M, N, K, x, w, y));
      for (int64_t m = 0; m < M; m++) {
        ck_assert(ppcc_rt_qlinear_f32(formats[t], 1, N, K, x + m * K, w, y1));
        if (det) ck_assert_msg(memcmp(y1, y + m * N, sizeof y1) == 0, "%s row %lld", f->name, (long long)m);
        for (int64_t n = 0; n < N; n++) {
          double mag = 0;
          for (int64_t k = 0; k < K; k++) mag += fabs((double)wf[n * K + k] * x[m * K + k]);
          ck_assert_msg(fabs(y1[n] - y[m * N + n]) <= 1e-5 * mag + 1e-6, "%s [%lld,%lld]: %.7g vs one row %.7g", f->name,
                        (long long)m, (long long)n, y[m * N + n], y1[n]);
        }
      }
    }
    ppcc_rt_set_row_invariant_matmul(false);
    free(w), free(x), free(y), free(wf);
  }
}
END_TEST

START_TEST(zero_rows_and_bad_shapes) {
  float x[64] = {0}, y[4] = {1, 1, 1, 1};
  unsigned char w[2 * 34] = {0};
  ck_assert(ppcc_rt_qlinear_f32(PPCC_Q8_0, 2, 2, 32, x, w, y)); /* zero activations: zero scale */
  for (int i = 0; i < 4; i++) ck_assert(y[i] == 0.0f);
  ck_assert(!ppcc_rt_qlinear_f32(PPCC_Q8_0, 1, 1, 31, x, w, y));  /* not whole blocks */
  ck_assert(!ppcc_rt_qlinear_f32(PPCC_F32, 1, 1, 32, x, w, y));   /* not a block format */
  ck_assert(!ppcc_rt_quant_set_isa("sse9"));
}
END_TEST

START_TEST(embedding_rows_decode_like_the_table) {
  for (int i = 0; i < N_FORMATS; i++) {
    const ppcc_block_format *f = ppcc_dtype_blocks(formats[i]);
    int64_t rows = 3, cols = 2 * f->block;
    unsigned char *w = random_weights(f, rows, cols);
    float *all = malloc(sizeof(float) * (size_t)(rows * cols)), *row = malloc(sizeof(float) * (size_t)cols);
    ck_assert(ppcc_block_decode(f, w, rows * cols / f->block, all) < 0);
    for (int64_t r = 0; r < rows; r++) {
      ck_assert(ppcc_rt_qrows_f32(formats[i], w, r, cols, row));
      ck_assert(memcmp(row, all + r * cols, sizeof(float) * (size_t)cols) == 0);
    }
    free(w), free(all), free(row);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("qmatmul");
  TCase *tc = t_add_tcase(s, "kernels", 0);
  tcase_add_test(tc, every_format_matches_the_dequantized_product);
  tcase_add_test(tc, threads_give_the_same_bits);
  tcase_add_test(tc, rows_do_not_depend_on_the_row_count);
  tcase_add_test(tc, the_gemm_agrees_with_the_one_row_kernel);
  tcase_add_test(tc, zero_rows_and_bad_shapes);
  tcase_add_test(tc, embedding_rows_decode_like_the_table);
  return t_run_suite(s);
}
