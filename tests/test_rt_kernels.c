/* Reference kernels against straightforward loops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/runtime.h"
#include "test_support.h"

static ppcc_tensor tensor(ppcc_dtype t, int rank, const int64_t *shape, void *data) {
  ppcc_tensor x = {.dtype = t, .rank = rank, .data = data};
  memcpy(x.shape, shape, sizeof(int64_t) * (size_t)rank);
  return x;
}

/* An op with the given attrs, enough for a kernel call. */
static ppcc_op op_of(const char *name, int n_in, ppcc_attr *attrs, int n_attrs) {
  static int ins[8], outs[1];
  return (ppcc_op){.info = ppcc_op_lookup(name), .n_in = n_in, .n_out = 1, .in = ins, .out = outs,
                   .attrs = attrs, .n_attrs = n_attrs};
}

static void run(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_msg(ppcc_rt_run_kernel(op, in, out, &d) == PPCC_OK, "%s", d.first);
}

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

START_TEST(sgemm_matches_naive) {
  const int64_t sizes[][3] = {{1, 1, 1}, {5, 7, 3}, {67, 129, 33}, {130, 65, 257}};
  unsigned seed = 1;
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    int64_t M = sizes[t][0], N = sizes[t][1], K = sizes[t][2];
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N)), *P = malloc(sizeof(float) * (size_t)(M * N));
    float *Bt = malloc(sizeof(float) * (size_t)(K * N));
    for (int64_t j = 0; j < M * K; j++) A[j] = frand(&seed);
    for (int64_t j = 0; j < K * N; j++) B[j] = frand(&seed);
    for (int64_t k = 0; k < K; k++)
      for (int64_t n = 0; n < N; n++) Bt[n * K + k] = B[k * N + n];
    for (int transposed = 0; transposed < 2; transposed++) {
      ppcc_rt_sgemm(M, N, K, A, transposed ? Bt : B, transposed, C);
      ppcc_rt_sgemm_portable(M, N, K, A, transposed ? Bt : B, transposed, P);
      for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) {
          double want = 0;
          for (int64_t k = 0; k < K; k++) want += (double)A[i * K + k] * B[k * N + n];
          ck_assert_double_eq_tol(C[i * N + n], want, 1e-4 * (1 + K));
          ck_assert_double_eq_tol(P[i * N + n], want, 1e-4 * (1 + K));
        }
    }
    free(A), free(B), free(C), free(P), free(Bt);
  }
}
END_TEST

/* --deterministic's GEMM: each row's bits are those of the same row
 * computed alone, with 1 or 2 kernel threads, B transposed or not (K not
 * a multiple of the 8 lanes, M not of the 4-row block), and close to the
 * exact product. */
START_TEST(row_invariant_sgemm_fixed_order) {
  const int64_t M = 7, N = 113, K = 45; /* M N K > PAR_MIN: 2 threads split it */
  unsigned seed = 7;
  float A[7 * 45], B[45 * 113], Bt[113 * 45], C[7 * 113], C2[7 * 113], row[113];
  for (int64_t j = 0; j < M * K; j++) A[j] = frand(&seed);
  for (int64_t j = 0; j < K * N; j++) B[j] = frand(&seed);
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) Bt[n * K + k] = B[k * N + n];
  ppcc_rt_set_row_invariant_matmul(true);
  for (int transposed = 0; transposed < 2; transposed++) {
    const float *b = transposed ? Bt : B;
    ppcc_rt_set_kernel_threads(1);
    ppcc_rt_sgemm(M, N, K, A, b, transposed, C);
    ppcc_rt_set_kernel_threads(2);
    ppcc_rt_sgemm(M, N, K, A, b, transposed, C2);
    ck_assert_mem_eq(C, C2, sizeof C);
    for (int64_t i = 0; i < M; i++) {
      ppcc_rt_sgemm(1, N, K, A + i * K, b, transposed, row);
      ck_assert_mem_eq(row, C + i * N, sizeof row);
      for (int64_t n = 0; n < N; n++) {
        double want = 0;
        for (int64_t k = 0; k < K; k++) want += (double)A[i * K + k] * B[k * N + n];
        ck_assert_double_eq_tol(C[i * N + n], want, 1e-5 * K);
      }
    }
  }
  ppcc_rt_set_kernel_threads(1);
  ppcc_rt_set_row_invariant_matmul(false);
}
END_TEST

START_TEST(batched_matmul_and_linear_with_bias) {
  /* a[2,2,3] x b[2,3,2] */
  float a[12], b[12], y[8];
  for (int j = 0; j < 12; j++) a[j] = (float)j, b[j] = (float)(j % 5) - 2;
  int64_t sa[] = {2, 2, 3}, sb[] = {2, 3, 2}, sy[] = {2, 2, 2};
  ppcc_tensor in[3] = {tensor(PPCC_F32, 3, sa, a), tensor(PPCC_F32, 3, sb, b)};
  ppcc_tensor out = tensor(PPCC_F32, 3, sy, y);
  ppcc_op op = op_of("matmul", 2, NULL, 0);
  run(&op, in, &out);
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < 2; i++)
      for (int n = 0; n < 2; n++) {
        float want = 0;
        for (int k = 0; k < 3; k++) want += a[p * 6 + i * 3 + k] * b[p * 6 + k * 2 + n];
        ck_assert_float_eq(y[p * 4 + i * 2 + n], want);
      }
  /* linear: x[4,3] . w[2,3]^T + bias[2] */
  float w[6] = {1, 0, -1, 2, 1, 0}, bias[2] = {0.5f, -1};
  int64_t sx[] = {4, 3}, sw[] = {2, 3}, sbias[] = {2}, so[] = {4, 2};
  in[0] = tensor(PPCC_F32, 2, sx, a);
  in[1] = tensor(PPCC_F32, 2, sw, w);
  in[2] = tensor(PPCC_F32, 1, sbias, bias);
  out = tensor(PPCC_F32, 2, so, y);
  op = op_of("linear", 3, NULL, 0);
  run(&op, in, &out);
  for (int i = 0; i < 4; i++)
    for (int n = 0; n < 2; n++) {
      float want = bias[n];
      for (int k = 0; k < 3; k++) want += a[i * 3 + k] * w[n * 3 + k];
      ck_assert_float_eq_tol(y[i * 2 + n], want, 1e-5);
    }
}
END_TEST

START_TEST(unary_ops) {
  float x[5] = {-2, -0.5f, 0, 0.5f, 3}, y[5];
  int64_t s[] = {5};
  ppcc_tensor in = tensor(PPCC_F32, 1, s, x), out = tensor(PPCC_F32, 1, s, y);
  struct { const char *name; double (*f)(double); } cases[] = {{"tanh", tanh}, {"exp", exp}};
  for (size_t c = 0; c < 2; c++) {
    ppcc_op op = op_of(cases[c].name, 1, NULL, 0);
    run(&op, &in, &out);
    for (int j = 0; j < 5; j++) ck_assert_double_eq_tol(y[j], cases[c].f(x[j]), 1e-5 * (1 + fabs(y[j])));
  }
  ppcc_op op = op_of("gelu", 1, NULL, 0);
  run(&op, &in, &out);
  for (int j = 0; j < 5; j++) ck_assert_double_eq_tol(y[j], 0.5 * x[j] * (1 + erf(x[j] / sqrt(2.0))), 1e-6);
  op = op_of("silu", 1, NULL, 0);
  run(&op, &in, &out);
  for (int j = 0; j < 5; j++) ck_assert_double_eq_tol(y[j], x[j] / (1 + exp(-x[j])), 1e-6);
  ppcc_attr v = {.name = "value", .type = PPCC_ATTR_FLOAT, .f = -3};
  op = op_of("scale", 1, &v, 1);
  run(&op, &in, &out);
  for (int j = 0; j < 5; j++) ck_assert_float_eq(y[j], -3 * x[j]);
}
END_TEST

START_TEST(binary_broadcasting) {
  /* a[2,1,3] - b[4,1] -> [2,4,3] */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {10, 20, 30, 40}, y[24];
  int64_t sa[] = {2, 1, 3}, sb[] = {4, 1}, sy[] = {2, 4, 3};
  ppcc_tensor in[2] = {tensor(PPCC_F32, 3, sa, a), tensor(PPCC_F32, 2, sb, b)};
  ppcc_tensor out = tensor(PPCC_F32, 3, sy, y);
  ppcc_op op = op_of("sub", 2, NULL, 0);
  run(&op, in, &out);
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < 3; k++) ck_assert_float_eq(y[p * 12 + i * 3 + k], a[p * 3 + k] - b[i]);
}
END_TEST

START_TEST(transpose_with_perm) {
  int64_t x[24], y[24];
  for (int j = 0; j < 24; j++) x[j] = j;
  int64_t sx[] = {2, 3, 4}, sy[] = {4, 2, 3}, perm[] = {2, 0, 1};
  ppcc_attr a = {.name = "perm", .type = PPCC_ATTR_INTS, .n = 3, .ints = perm};
  ppcc_tensor in = tensor(PPCC_I64, 3, sx, x), out = tensor(PPCC_I64, 3, sy, y);
  ppcc_op op = op_of("permute", 1, &a, 1);
  run(&op, &in, &out);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) ck_assert_int_eq(y[i * 6 + j * 3 + k], x[j * 12 + k * 4 + i]);
}
END_TEST

/* [0, 2, 1, 3] (heads <-> sequence) copies whole rows of the last dim. */
START_TEST(permute_keeping_the_last_dims_in_place) {
  float x[2 * 3 * 4 * 5], y[2 * 3 * 4 * 5];
  for (int j = 0; j < 120; j++) x[j] = (float)j;
  int64_t sx[] = {2, 3, 4, 5}, sy[] = {2, 4, 3, 5}, perm[] = {0, 2, 1, 3};
  ppcc_attr a = {.name = "perm", .type = PPCC_ATTR_INTS, .n = 4, .ints = perm};
  ppcc_tensor in = tensor(PPCC_F32, 4, sx, x), out = tensor(PPCC_F32, 4, sy, y);
  ppcc_op op = op_of("permute", 1, &a, 1);
  run(&op, &in, &out);
  for (int b = 0; b < 2; b++)
    for (int s = 0; s < 4; s++)
      for (int h = 0; h < 3; h++)
        for (int e = 0; e < 5; e++)
          ck_assert_float_eq(y[((b * 4 + s) * 3 + h) * 5 + e], x[((b * 3 + h) * 4 + s) * 5 + e]);
  int64_t identity[] = {0, 1, 2, 3};
  a.ints = identity;
  memset(y, 0, sizeof y);
  out = tensor(PPCC_F32, 4, sx, y);
  run(&op, &in, &out);
  ck_assert(memcmp(x, y, sizeof x) == 0);
}
END_TEST

START_TEST(index_copy_in_place_and_out_of_range) {
  float cache[12] = {0}, src[6] = {1, 2, 3, 4, 5, 6};
  int32_t pos[2] = {2, 0};
  int64_t sc[] = {4, 3}, si[] = {2}, ss[] = {2, 3};
  ppcc_attr dim = {.name = "dim", .type = PPCC_ATTR_INT, .i = 0};
  ppcc_tensor in[3] = {tensor(PPCC_F32, 2, sc, cache), tensor(PPCC_I32, 1, si, pos), tensor(PPCC_F32, 2, ss, src)};
  ppcc_tensor out = tensor(PPCC_F32, 2, sc, cache); /* aliases the destination */
  ppcc_op op = op_of("index_copy", 3, &dim, 1);
  run(&op, in, &out);
  float want[12] = {4, 5, 6, 0, 0, 0, 1, 2, 3, 0, 0, 0};
  ck_assert(memcmp(cache, want, sizeof want) == 0);
  pos[1] = 4;
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_int_eq(ppcc_rt_run_kernel(&op, in, &out, &d), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(d.first, "out of range"));
}
END_TEST

START_TEST(f16_and_bf16_compute_in_f32) {
  uint16_t a[4], b[4], y[4];
  for (int j = 0; j < 4; j++) a[j] = ppcc_f32_to_f16(0.5f * (float)j), b[j] = ppcc_f32_to_f16(1.25f);
  int64_t s[] = {4};
  ppcc_tensor in[2] = {tensor(PPCC_F16, 1, s, a), tensor(PPCC_F16, 1, s, b)};
  ppcc_tensor out = tensor(PPCC_F16, 1, s, y);
  ppcc_op op = op_of("mul", 2, NULL, 0);
  run(&op, in, &out);
  for (int j = 0; j < 4; j++) ck_assert_float_eq(ppcc_f16_to_f32(y[j]), 0.625f * (float)j);
  for (int j = 0; j < 4; j++) a[j] = ppcc_f32_to_bf16(-(float)j);
  in[0] = tensor(PPCC_BF16, 1, s, a);
  out = tensor(PPCC_BF16, 1, s, y);
  op = op_of("neg", 1, NULL, 0);
  run(&op, in, &out);
  for (int j = 0; j < 4; j++) ck_assert_float_eq(ppcc_bf16_to_f32(y[j]), (float)j);
  /* conversions: exact values, rounding, subnormals, overflow */
  ck_assert_float_eq(ppcc_f16_to_f32(ppcc_f32_to_f16(65504.0f)), 65504.0f);
  ck_assert(isinf(ppcc_f16_to_f32(ppcc_f32_to_f16(70000.0f))));
  ck_assert_float_eq(ppcc_f16_to_f32(ppcc_f32_to_f16(5.9604645e-8f)), 5.9604645e-8f);
  ck_assert_float_eq(ppcc_f16_to_f32(ppcc_f32_to_f16(1.0f + 1.0f / 4096)), 1.0f); /* ties to even */
}
END_TEST

START_TEST(kernel_table) {
  ck_assert_ptr_null(ppcc_rt_kernel(PPCC_OP_all_reduce));
  ck_assert_ptr_null(ppcc_rt_kernel(PPCC_OP_transfer));
  ck_assert_ptr_nonnull(ppcc_rt_kernel(PPCC_OP_matmul));
  const char *with_kernels[] = {"matmul", "linear", "gelu", "silu", "relu", "sigmoid", "tanh", "exp", "neg",
                                "scale", "add", "sub", "mul", "div", "maximum", "transpose", "permute",
                                "reshape", "index_copy", "index_put"};
  for (size_t i = 0; i < sizeof with_kernels / sizeof with_kernels[0]; i++)
    ck_assert_msg(ppcc_rt_kernel(ppcc_op_lookup(with_kernels[i])->id) != NULL, "'%s' has no kernel", with_kernels[i]);
}
END_TEST


/* The kernels split among the kernel threads (layer_norm and rms_norm by
 * rows, linear's bias by rows, same-shape add and gelu by elements,
 * permute by blocks): the same bits with 1 and 2 threads, on sizes big
 * enough to be split and not multiples of the split's alignment, and the
 * right values. */
static void run_threads(int threads, const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out) {
  ppcc_rt_set_kernel_threads(threads);
  run(op, in, out);
  ppcc_rt_set_kernel_threads(1);
}

START_TEST(split_kernels_same_bits_on_two_threads) {
  enum { ROWS = 601, H = 64, M = 131, K = 16, N = 300, E = 70001 };
  unsigned seed = 3;
  float *x = malloc(sizeof(float) * E), *z = malloc(sizeof(float) * E), *w = malloc(sizeof(float) * N);
  float *b = malloc(sizeof(float) * N), *y1 = malloc(sizeof(float) * E), *y2 = malloc(sizeof(float) * E);
  float *wt = malloc(sizeof(float) * N * K);
  ck_assert_msg(x && z && w && b && y1 && y2 && wt, "out of memory");
  for (int j = 0; j < E; j++) x[j] = 4 * frand(&seed), z[j] = frand(&seed);
  for (int j = 0; j < N; j++) w[j] = 1 + frand(&seed), b[j] = frand(&seed);
  for (int j = 0; j < N * K; j++) wt[j] = frand(&seed);

  /* layer_norm and rms_norm over [ROWS, H] */
  ppcc_attr eps = {.name = "eps", .type = PPCC_ATTR_FLOAT, .f = 1e-5};
  int64_t sx[] = {ROWS, H}, sh[] = {H};
  const char *norms[] = {"layer_norm", "rms_norm"};
  for (int k = 0; k < 2; k++) {
    ppcc_tensor in[3] = {tensor(PPCC_F32, 2, sx, x), tensor(PPCC_F32, 1, sh, w), tensor(PPCC_F32, 1, sh, b)};
    ppcc_tensor o1 = tensor(PPCC_F32, 2, sx, y1), o2 = tensor(PPCC_F32, 2, sx, y2);
    ppcc_op op = op_of(norms[k], k == 0 ? 3 : 2, &eps, 1);
    run_threads(1, &op, in, &o1);
    run_threads(2, &op, in, &o2);
    ck_assert_mem_eq(y1, y2, sizeof(float) * ROWS * H);
    for (int r = 0; r < ROWS; r += 97) { /* a few rows against double */
      double mean = 0, sq = 0;
      for (int j = 0; j < H; j++) mean += x[r * H + j];
      mean = k == 0 ? mean / H : 0;
      for (int j = 0; j < H; j++) sq += (x[r * H + j] - mean) * (x[r * H + j] - mean);
      for (int j = 0; j < H; j++) {
        double want = (x[r * H + j] - mean) / sqrt(sq / H + 1e-5) * w[j] + (k == 0 ? b[j] : 0);
        ck_assert_double_eq_tol(y2[r * H + j], want, 1e-5 * (1 + fabs(want)));
      }
    }
  }

  /* linear with bias: x [M, K] . wt [N, K]^T + b. Its bias is split by
   * rows; the product here is --deterministic's fixed-order one, the same
   * whatever the split: OpenBLAS's, split by columns, is not on every CPU
   * (an AMD EPYC's: the columns either side of the split differ by an ulp) */
  int64_t sa[] = {M, K}, sw[] = {N, K}, sb[] = {N}, sy[] = {M, N};
  ppcc_tensor lin[3] = {tensor(PPCC_F32, 2, sa, x), tensor(PPCC_F32, 2, sw, wt), tensor(PPCC_F32, 1, sb, b)};
  ppcc_tensor l1 = tensor(PPCC_F32, 2, sy, y1), l2 = tensor(PPCC_F32, 2, sy, y2);
  ppcc_op linear = op_of("linear", 3, NULL, 0);
  ppcc_rt_set_row_invariant_matmul(true);
  run_threads(1, &linear, lin, &l1);
  run_threads(2, &linear, lin, &l2);
  ppcc_rt_set_row_invariant_matmul(false);
  ck_assert_mem_eq(y1, y2, sizeof(float) * M * N);
  for (int i = 0; i < M; i += 13)
    for (int n = 0; n < N; n += 7) {
      double want = b[n];
      for (int k = 0; k < K; k++) want += (double)x[i * K + k] * wt[n * K + k];
      ck_assert_double_eq_tol(y2[i * N + n], want, 1e-4);
    }

  /* add of two [E] arrays and gelu of one */
  int64_t se[] = {E};
  ppcc_tensor two[2] = {tensor(PPCC_F32, 1, se, x), tensor(PPCC_F32, 1, se, z)};
  ppcc_tensor e1 = tensor(PPCC_F32, 1, se, y1), e2 = tensor(PPCC_F32, 1, se, y2);
  ppcc_op add = op_of("add", 2, NULL, 0), gelu = op_of("gelu", 1, NULL, 0);
  run_threads(2, &add, two, &e2);
  for (int j = 0; j < E; j++) ck_assert_float_eq(y2[j], x[j] + z[j]);
  run_threads(1, &gelu, two, &e1);
  run_threads(2, &gelu, two, &e2);
  ck_assert_mem_eq(y1, y2, sizeof(float) * E);
  for (int j = 0; j < E; j += 101) {
    double want = 0.5 * x[j] * erfc(-x[j] / sqrt(2.0));
    ck_assert_double_eq_tol(y2[j], want, 1e-6 * (1 + fabs(want)));
  }

  /* permute [0, 2, 1, 3] of [2, 100, 7, 50] (blocks of 50 elements) */
  int64_t sp[] = {2, 100, 7, 50}, spo[] = {2, 7, 100, 50}, perm[] = {0, 2, 1, 3};
  ppcc_attr pa = {.name = "perm", .type = PPCC_ATTR_INTS, .n = 4, .ints = perm};
  ppcc_op permute = op_of("permute", 1, &pa, 1);
  ppcc_tensor px = tensor(PPCC_F32, 4, sp, x), p1 = tensor(PPCC_F32, 4, spo, y1), p2 = tensor(PPCC_F32, 4, spo, y2);
  run_threads(1, &permute, &px, &p1);
  run_threads(2, &permute, &px, &p2);
  ck_assert_mem_eq(y1, y2, sizeof(float) * 2 * 100 * 7 * 50);
  for (int a = 0; a < 2; a++)
    for (int h = 0; h < 7; h++)
      for (int t = 0; t < 100; t++)
        for (int e = 0; e < 50; e += 7)
          ck_assert_float_eq(y2[((a * 7 + h) * 100 + t) * 50 + e], x[((a * 100 + t) * 7 + h) * 50 + e]);
  free(x), free(z), free(w), free(b), free(y1), free(y2), free(wt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_kernels");
  TCase *tc = t_add_tcase(s, "kernels", 0);
  tcase_add_test(tc, sgemm_matches_naive);
  tcase_add_test(tc, row_invariant_sgemm_fixed_order);
  tcase_add_test(tc, batched_matmul_and_linear_with_bias);
  tcase_add_test(tc, unary_ops);
  tcase_add_test(tc, binary_broadcasting);
  tcase_add_test(tc, transpose_with_perm);
  tcase_add_test(tc, permute_keeping_the_last_dims_in_place);
  tcase_add_test(tc, index_copy_in_place_and_out_of_range);
  tcase_add_test(tc, f16_and_bf16_compute_in_f32);
  tcase_add_test(tc, kernel_table);
  tcase_add_test(tc, split_kernels_same_bits_on_two_threads);
  return t_run_suite(s);
}
