/* LLM ops and Llama-style models: the reference kernels on known values,
 * the LLM ops sharded against the unsharded reference, generated Llama
 * graphs for TP x PP in {1,2,4}^2, and a prefill + decode pair where the
 * decode step reads the KV cache the prefill wrote; attention's prefill
 * path on the AVX-512 tiles against a double-precision reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/ops.h"
#include "ppcc/report.h"
#include "../src/runtime/kernels/kernels.h"
#include "ppcc/runtime.h"
#include "test_support.h"

/* ---------------- kernels on known values ---------------- */

static ppcc_op make_op(const char *name, int n_in, ppcc_attr *attrs, int n_attrs) {
  ppcc_op op = {0};
  op.info = ppcc_op_lookup(name);
  ck_assert_ptr_nonnull(op.info);
  op.n_in = n_in;
  op.n_out = 1;
  op.attrs = attrs;
  op.n_attrs = n_attrs;
  op.src_index = 0;
  return op;
}

static ppcc_tensor tensor(ppcc_dtype t, void *data, int rank, const int64_t *shape) {
  ppcc_tensor x = {.dtype = t, .rank = rank, .data = data};
  memcpy(x.shape, shape, sizeof(int64_t) * (size_t)rank);
  return x;
}

static void run_kernel(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_msg(ppcc_rt_run_kernel(op, in, out, &d) == PPCC_OK, "%s: %s", op->info->name, d.first);
}

#define NEAR(a, b) ck_assert_msg(fabs((double)(a) - (double)(b)) < 1e-5, "%g != %g", (double)(a), (double)(b))

START_TEST(rms_norm_known_values) {
  float x[2] = {3, 4}, w[2] = {1, 2}, y[2];
  int64_t s2[1] = {2};
  ppcc_attr eps = {.name = "eps", .type = PPCC_ATTR_FLOAT, .f = 0.0};
  ppcc_op op = make_op("rms_norm", 2, &eps, 1);
  ppcc_tensor in[2] = {tensor(PPCC_F32, x, 1, s2), tensor(PPCC_F32, w, 1, s2)}, out = tensor(PPCC_F32, y, 1, s2);
  run_kernel(&op, in, &out);
  double rms = sqrt(12.5);
  NEAR(y[0], 3 / rms);
  NEAR(y[1], 8 / rms);
}
END_TEST

START_TEST(softmax_over_first_dim) {
  float x[4] = {0, 1, (float)log(3.0), 1}, y[4]; /* [[0, 1], [ln 3, 1]] over dim 0 */
  int64_t s[2] = {2, 2};
  ppcc_attr dim = {.name = "dim", .type = PPCC_ATTR_INT, .i = 0};
  ppcc_op op = make_op("softmax", 1, &dim, 1);
  ppcc_tensor in = tensor(PPCC_F32, x, 2, s), out = tensor(PPCC_F32, y, 2, s);
  run_kernel(&op, &in, &out);
  NEAR(y[0], 0.25);
  NEAR(y[2], 0.75);
  NEAR(y[1], 0.5);
  NEAR(y[3], 0.5);
}
END_TEST

/* Causal prefill: query 0 sees only key 0, so it returns v[0]; a decode
 * row (S = 1) sees every key. Two query heads share one kv head. */
START_TEST(attention_causal_and_grouped) {
  float q[2 * 2 * 2] = {1, 0, 0, 1, 1, 0, 0, 1}, k[2 * 2] = {1, 0, 0, 1}, v[2 * 2] = {10, 20, 30, 40};
  float o[2 * 2 * 2];
  int64_t sq[4] = {1, 2, 2, 2}, skv[4] = {1, 1, 2, 2};
  ppcc_attr attrs[2] = {{.name = "causal", .type = PPCC_ATTR_BOOL, .i = 1},
                        {.name = "scale", .type = PPCC_ATTR_FLOAT, .f = 1.0}};
  ppcc_op op = make_op("attention", 3, attrs, 2);
  ppcc_tensor in[3] = {tensor(PPCC_F32, q, 4, sq), tensor(PPCC_F32, k, 4, skv), tensor(PPCC_F32, v, 4, skv)};
  ppcc_tensor out = tensor(PPCC_F32, o, 4, sq);
  run_kernel(&op, in, &out);
  for (int h = 0; h < 2; h++) { /* row 0 of each head: v[0] */
    NEAR(o[h * 4 + 0], 10);
    NEAR(o[h * 4 + 1], 20);
  }
  double e = exp(1.0), p0 = 1 / (1 + e); /* row 1: q = [0, 1] scores [0, 1] */
  NEAR(o[2], p0 * 10 + (1 - p0) * 30);
  int64_t s1[4] = {1, 1, 1, 2};
  float q1[2] = {1, 0}, o1[2];
  ppcc_tensor in1[3] = {tensor(PPCC_F32, q1, 4, s1), in[1], in[2]};
  ppcc_tensor out1 = tensor(PPCC_F32, o1, 4, s1);
  run_kernel(&op, in1, &out1);
  NEAR(o1[0], (e * 10 + 30) / (e + 1)); /* sees both keys */
}
END_TEST

/* ---------------- attention against a double-precision reference ---------------- */

typedef struct attn_case {
  int64_t B, Hq, Hkv, S, T, D, Dv, window;
  bool causal, positions;
  double softcap;
} attn_case;

/* out[b, h, s, :] as the kernel's contract says, in double (NaN where the
 * query sees no key). */
static void attention_reference(const attn_case *c, const float *q, const float *k, const float *v,
                                const int64_t *pos, double scale, double *out) {
  int64_t group = c->Hq / c->Hkv;
  double *w = malloc(sizeof(double) * (size_t)c->T);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->Hq; h++)
      for (int64_t s = 0; s < c->S; s++) {
        const float *qr = q + ((b * c->Hq + h) * c->S + s) * c->D;
        const float *kh = k + (b * c->Hkv + h / group) * c->T * c->D, *vh = v + (b * c->Hkv + h / group) * c->T * c->Dv;
        int64_t last = c->positions ? pos[b * c->S + s] : c->causal ? c->T - c->S + s : c->T - 1;
        int64_t valid = last < -1 ? 0 : last + 1 > c->T ? c->T : last + 1;
        int64_t first = c->window > 0 && last >= c->window ? last - c->window + 1 : 0;
        double mx = -INFINITY, sum = 0;
        for (int64_t t = first; t < valid; t++) {
          double x = 0;
          for (int64_t e = 0; e < c->D; e++) x += (double)qr[e] * kh[t * c->D + e];
          x *= scale;
          if (c->softcap > 0) x = tanh(x / c->softcap) * c->softcap;
          w[t] = x;
          mx = x > mx ? x : mx;
        }
        for (int64_t t = first; t < valid; t++) sum += (w[t] = exp(w[t] - mx));
        double *o = out + ((b * c->Hq + h) * c->S + s) * c->Dv;
        for (int64_t e = 0; e < c->Dv; e++) {
          double acc = 0;
          for (int64_t t = first; t < valid; t++) acc += w[t] * vh[t * c->Dv + e];
          o[e] = first < valid ? acc / sum : NAN;
        }
      }
  free(w);
}

/* y[b, j, i, :] = x[b, i, j, :] for x [n0, n1, n2, n3]: between [B, H, S, D]
 * and [B, S, H, D]. */
static float *swap12(const float *x, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
  float *y = malloc(sizeof(float) * (size_t)(n0 * n1 * n2 * n3));
  for (int64_t b = 0; b < n0; b++)
    for (int64_t i = 0; i < n1; i++)
      for (int64_t j = 0; j < n2; j++)
        memcpy(y + ((b * n2 + j) * n1 + i) * n3, x + ((b * n1 + i) * n2 + j) * n3, sizeof(float) * (size_t)n3);
  return y;
}

/* Odd sizes (row blocks of 6 with tails, key ranges ending mid-vector,
 * D and Dv not multiples of 16), GQA, a prefill below a longer cache,
 * windows, softcap, per-row positions with a row that sees nothing; every
 * instruction set the CPU has (AVX-512: the tiles' prefill path), 1 and 2
 * threads. */
START_TEST(attention_prefill_matches_reference) {
  static const attn_case cases[] = {
      {2, 4, 2, 13, 13, 20, 24, 0, true, false, 0},  {1, 6, 2, 7, 15, 64, 64, 0, true, false, 0},
      {1, 4, 1, 19, 19, 33, 17, 5, true, false, 3},  {2, 2, 2, 8, 9, 16, 80, 0, false, false, 0},
      {2, 4, 2, 7, 16, 64, 64, 0, false, true, 0},   {1, 16, 4, 128, 128, 64, 64, 0, true, false, 0},
      {2, 8, 2, 1, 37, 64, 64, 0, true, true, 0},    {2, 4, 4, 3, 11, 20, 24, 3, true, false, 0},
  };
  unsigned seed = 11;
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    const attn_case *c = &cases[ci];
    int64_t nq = c->B * c->Hq * c->S * c->D, nk = c->B * c->Hkv * c->T * c->D, nv = c->B * c->Hkv * c->T * c->Dv;
    int64_t no = c->B * c->Hq * c->S * c->Dv;
    float *q = malloc(sizeof(float) * (size_t)nq), *k = malloc(sizeof(float) * (size_t)nk);
    float *v = malloc(sizeof(float) * (size_t)nv), *o = malloc(sizeof(float) * (size_t)no);
    double *want = malloc(sizeof(double) * (size_t)no);
    int64_t pos[2 * 7];
    for (int64_t j = 0; j < nq; j++) q[j] = 2.0f * ((float)((seed = seed * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f);
    for (int64_t j = 0; j < nk; j++) k[j] = 2.0f * ((float)((seed = seed * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f);
    for (int64_t j = 0; j < nv; j++) v[j] = (float)((seed = seed * 1103515245u + 12345u) >> 9) / 8388608.0f - 1.0f;
    for (int64_t j = 0; j < 2 * 7; j++) pos[j] = j == 3 ? -2 : (j * 5) % 16; /* row 3 of batch 0 sees no key */
    double scale = 1.0 / sqrt((double)c->D);
    attention_reference(c, q, k, v, pos, scale, want);
    /* seq_major: the same operands as [B, S, H, D] (K and V read in place,
     * their rows H * D apart), plain and --deterministic */
    float *qt = swap12(q, c->B, c->Hq, c->S, c->D), *kt = swap12(k, c->B, c->Hkv, c->T, c->D);
    float *vt = swap12(v, c->B, c->Hkv, c->T, c->Dv), *ot = malloc(sizeof(float) * (size_t)no);
    for (int level = best; level >= RT_SIMD_AVX2; level--)
      for (int threads = 1; threads <= 2; threads++)
        for (int mode = 0; mode < 3; mode++) {
          bool seq_major = mode > 0;
          rt_set_simd_level(level);
          ppcc_rt_set_kernel_threads(threads);
          ppcc_rt_set_row_invariant_matmul(mode == 2);
          for (int64_t j = 0; j < no; j++) o[j] = ot[j] = -12345.0f; /* every element must be written */
          ck_assert_int_eq(ppcc_rt_attention_f32(c->B, c->Hq, c->S, c->D, c->Hkv, c->T, c->Dv, scale, c->causal,
                                                 c->window, c->softcap, c->positions ? pos : NULL, c->positions,
                                                 seq_major, seq_major ? qt : q, seq_major ? kt : k, seq_major ? vt : v,
                                                 seq_major ? ot : o),
                           0);
          if (seq_major) {
            float *back = swap12(ot, c->B, c->S, c->Hq, c->Dv);
            memcpy(o, back, sizeof(float) * (size_t)no);
            free(back);
          }
          for (int64_t j = 0; j < no; j++)
            ck_assert_msg(isnan(want[j]) ? isnan(o[j]) : fabs(o[j] - want[j]) <= 2e-6 + 2e-6 * fabs(want[j]),
                          "case %zu level %d threads %d mode %d: out[%lld] %.9g, reference %.9g", ci, level, threads,
                          mode, (long long)j, o[j], want[j]);
        }
    ppcc_rt_set_row_invariant_matmul(false);
    free(q), free(k), free(v), free(o), free(want), free(qt), free(kt), free(vt), free(ot);
  }
  ppcc_rt_set_kernel_threads(1);
  rt_set_simd_level(was);
}
END_TEST

START_TEST(rotary_identity_at_zero_and_norm_preserving) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
  int64_t pos[2] = {0, 5}, sx[4] = {1, 2, 1, 4}, sp[1] = {2};
  ppcc_op op = make_op("rotary", 2, NULL, 0);
  ppcc_tensor in[2] = {tensor(PPCC_F32, x, 4, sx), tensor(PPCC_I64, pos, 1, sp)}, out = tensor(PPCC_F32, y, 4, sx);
  run_kernel(&op, in, &out);
  for (int j = 0; j < 4; j++) NEAR(y[j], x[j]);
  for (int j = 0; j < 2; j++) /* pairs (j, j + 2) keep their length */
    NEAR(y[4 + j] * y[4 + j] + y[6 + j] * y[6 + j], x[4 + j] * x[4 + j] + x[6 + j] * x[6 + j]);
  NEAR(y[4], 5 * cos(5.0) - 7 * sin(5.0)); /* j = 0: angle = pos */
}
END_TEST

START_TEST(argmax_first_max_and_nan) {
  float x[6] = {1, 5, 5, 2, NAN, 9};
  int64_t y[2], s[2] = {2, 3}, so[1] = {2};
  ppcc_op op = make_op("argmax", 1, NULL, 0);
  ppcc_tensor in = tensor(PPCC_F32, x, 2, s), out = tensor(PPCC_I64, y, 1, so);
  run_kernel(&op, &in, &out);
  ck_assert_int_eq(y[0], 1);
  ck_assert_int_eq(y[1], 1);
}
END_TEST

START_TEST(concat_slice_sum_mean) {
  int64_t a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, c[6], sa[2] = {2, 2}, sb[2] = {2, 1}, sc[2] = {2, 3};
  ppcc_attr dim1 = {.name = "dim", .type = PPCC_ATTR_INT, .i = 1};
  ppcc_op cat = make_op("concat", 2, &dim1, 1);
  ppcc_tensor in[2] = {tensor(PPCC_I64, a, 2, sa), tensor(PPCC_I64, b, 2, sb)}, out = tensor(PPCC_I64, c, 2, sc);
  run_kernel(&cat, in, &out);
  int64_t want[6] = {1, 2, 5, 3, 4, 6};
  for (int i = 0; i < 6; i++) ck_assert_int_eq(c[i], want[i]);
  ppcc_attr sl[3] = {{.name = "dim", .type = PPCC_ATTR_INT, .i = 1},
                     {.name = "start", .type = PPCC_ATTR_INT, .i = -2},
                     {.name = "end", .type = PPCC_ATTR_INT, .i = 3}};
  ppcc_op slice = make_op("slice", 1, sl, 3);
  int64_t s[4], ss[2] = {2, 2};
  ppcc_tensor sin = out, sout = tensor(PPCC_I64, s, 2, ss);
  run_kernel(&slice, &sin, &sout);
  ck_assert(s[0] == 2 && s[1] == 5 && s[2] == 4 && s[3] == 6);

  float x[6] = {1, 2, 3, 4, 5, 6}, r[2];
  int64_t dims[1] = {1}, sx[2] = {2, 3}, sr[2] = {2, 1};
  ppcc_attr red[2] = {{.name = "dim", .type = PPCC_ATTR_INTS, .n = 1, .ints = dims},
                      {.name = "keepdim", .type = PPCC_ATTR_BOOL, .i = 1}};
  ppcc_op sum = make_op("sum", 1, red, 2), mean = make_op("mean", 1, red, 2);
  ppcc_tensor xin = tensor(PPCC_F32, x, 2, sx), rout = tensor(PPCC_F32, r, 2, sr);
  run_kernel(&sum, &xin, &rout);
  NEAR(r[0], 6);
  NEAR(r[1], 15);
  run_kernel(&mean, &xin, &rout);
  NEAR(r[1], 5);
}
END_TEST

START_TEST(embedding_rejects_bad_ids) {
  float table[4] = {1, 2, 3, 4}, y[2];
  int64_t ids[1] = {7}, si[1] = {1}, st[2] = {2, 2}, sy[2] = {1, 2};
  ppcc_op op = make_op("embedding", 2, NULL, 0);
  ppcc_tensor in[2] = {tensor(PPCC_I64, ids, 1, si), tensor(PPCC_F32, table, 2, st)}, out = tensor(PPCC_F32, y, 2, sy);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_int_eq(ppcc_rt_run_kernel(&op, in, &out, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "token id 7") != NULL, "%s", d.first);
  ids[0] = 1;
  run_kernel(&op, in, &out);
  NEAR(y[1], 4);
}
END_TEST

/* ---------------- sharded graphs against the reference ---------------- */

/* Runs g sharded and unsharded on the same data; outputs must agree.
 * got (if not NULL) receives the sharded outputs (caller frees). */
static void check_matches_reference(const ppcc_graph *g, const ppcc_run_options *ro, ppcc_host_tensor *got) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, ro, &data, &d) == PPCC_OK, "load: %s", d.first);
  ppcc_host_tensor out[16], ref[16];
  ck_assert_int_le(g->n_outputs, 16);
  ppcc_exec_options sharded = {0}, reference = {.reference = true};
  ck_assert_msg(ppcc_execute(g, &data, &sharded, out, NULL, &d) == PPCC_OK, "%s sharded: %s", g->name, d.first);
  ck_assert_msg(ppcc_execute(g, &data, &reference, ref, NULL, &d) == PPCC_OK, "%s reference: %s", g->name, d.first);
  for (int k = 0; k < g->n_outputs; k++) {
    ppcc_compare_result r = ppcc_compare(&out[k], &ref[k]);
    ck_assert_msg(r.ok, "%s output '%s': max abs error %g", g->name, g->values[g->outputs[k]].name, r.max_abs);
    if (got) got[k] = out[k];
    else ppcc_host_tensor_free(&out[k]);
    ppcc_host_tensor_free(&ref[k]);
  }
  ppcc_run_data_free(&data);
}

static ppcc_run_options seeded(uint64_t seed) {
  return (ppcc_run_options){.random_seed = seed, .have_random_seed = true};
}

/* Every LLM op on sharded operands, in the layouts its rule allows. */
static const char *llm_op_models[] = {
  /* norms and softmax over an unsplit dim of a row-split input */
  "{\"ppcc\":1,\"name\":\"norms\",\"devices\":2,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[8],\"shard\":{\"kind\":\"replicated\",\"count\":2}},"
  "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[8],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,8],\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":2}}],"
  "\"ops\":[{\"op\":\"layer_norm\",\"in\":[\"x\",\"w\",\"b\"],\"out\":[\"ln\"],\"attrs\":{\"eps\":1e-6}},"
  "{\"op\":\"rms_norm\",\"in\":[\"ln\",\"w\"],\"out\":[\"rn\"]},"
  "{\"op\":\"softmax\",\"in\":[\"rn\"],\"out\":[\"sm\"]},"
  "{\"op\":\"mean\",\"in\":[\"sm\"],\"out\":[\"m\"],\"attrs\":{\"dim\":[1],\"keepdim\":true}}],"
  "\"outputs\":[\"sm\",\"m\"]}",
  /* sum over the split dim leaves partial sums; concat/slice off it */
  "{\"ppcc\":1,\"name\":\"reduce\",\"devices\":4,"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[8,6],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2},\"devices\":[3,1]},"
  "{\"name\":\"y\",\"dtype\":\"f32\",\"shape\":[4,6],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2},\"devices\":[3,1]}],"
  "\"ops\":[{\"op\":\"concat\",\"in\":[\"x\",\"y\"],\"out\":[\"c\"],\"attrs\":{\"dim\":0}},"
  "{\"op\":\"slice\",\"in\":[\"c\"],\"out\":[\"s\"],\"attrs\":{\"dim\":0,\"start\":2,\"end\":-1}},"
  "{\"op\":\"sum\",\"in\":[\"s\"],\"out\":[\"p\"],\"attrs\":{\"dim\":[1]}},"
  "{\"op\":\"all_reduce\",\"in\":[\"p\"],\"out\":[\"r\"]},"
  "{\"op\":\"argmax\",\"in\":[\"s\"],\"out\":[\"a\"],\"attrs\":{\"dim\":0}}],"
  "\"outputs\":[\"r\",\"p\",\"a\"]}",
  /* embedding from a hidden-split table, rotary split over heads */
  "{\"ppcc\":1,\"name\":\"embed\",\"devices\":2,"
  "\"params\":[{\"name\":\"t\",\"dtype\":\"f32\",\"shape\":[16,8],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2}}],"
  "\"inputs\":[{\"name\":\"ids\",\"dtype\":\"i64\",\"shape\":[6],\"shard\":{\"kind\":\"replicated\",\"count\":2}},"
  "{\"name\":\"pos\",\"dtype\":\"i64\",\"shape\":[3],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"ops\":[{\"op\":\"embedding\",\"in\":[\"ids\",\"t\"],\"out\":[\"e\"]},"
  "{\"op\":\"reshape\",\"in\":[\"e\"],\"out\":[\"h\"],\"attrs\":{\"shape\":[2,3,2,4]}},"
  "{\"op\":\"rotary\",\"in\":[\"h\",\"pos\"],\"out\":[\"r\"],\"attrs\":{\"theta\":500.0}}],"
  "\"outputs\":[\"r\"]}",
  /* vocab-parallel embedding: each shard looks up its own rows, zeros
   * elsewhere, and all_reduce sums them (random ids cover the vocab) */
  "{\"ppcc\":1,\"name\":\"vocab\",\"devices\":2,"
  "\"params\":[{\"name\":\"t\",\"dtype\":\"f32\",\"shape\":[16,8],\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":2}}],"
  "\"inputs\":[{\"name\":\"ids\",\"dtype\":\"i64\",\"shape\":[16],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"ops\":[{\"op\":\"embedding\",\"in\":[\"ids\",\"t\"],\"out\":[\"p\"]},"
  "{\"op\":\"all_reduce\",\"in\":[\"p\"],\"out\":[\"e\"]}],"
  "\"outputs\":[\"e\"]}",
};

START_TEST(llm_ops_sharded_match_reference) {
  for (size_t i = 0; i < sizeof llm_op_models / sizeof llm_op_models[0]; i++) {
    ppcc_diag d;
    ppcc_graph *g = t_compile(llm_op_models[i], &d);
    ck_assert_msg(g != NULL, "model %zu: %s", i, d.first);
    ppcc_run_options ro = seeded(11);
    check_matches_reference(g, &ro, NULL);
    ppcc_graph_free(g);
  }
}
END_TEST

/* ---------------- generated Llama graphs ---------------- */

static char *tmp_dir;

static const char *tmp_file(const char *name) { return t_path_in(tmp_dir, name); }

static void make_tmp_dir(void) { tmp_dir = t_make_temp_dir("llm"); }

static void remove_tmp_dir(void) {
  t_remove_tree(tmp_dir);
  ck_assert_msg(access(tmp_dir, F_OK) != 0, "cannot remove %s", tmp_dir);
  free(tmp_dir);
  tmp_dir = NULL;
}

static ppcc_graph *generate_llama(const char *args, const char *file) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s -o '%s'", t_tool_path("gen_llama"), args, file);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
  char *json = t_read_file(file, NULL);
  ck_assert_ptr_nonnull(json);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  free(json);
  ck_assert_msg(g != NULL, "%s: %s", args, d.first);
  return g;
}

START_TEST(llama_tp_pp_grid_matches_reference) {
  make_tmp_dir();
  int sizes[3] = {1, 2, 4};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      char args[256];
      snprintf(args, sizeof args, "--layers 4 --hidden 64 --heads 8 --kv-heads 4 --ffn 64 --vocab 64 --seq 4 --tp %d --pp %d",
               sizes[i], sizes[j]);
      ppcc_graph *g = generate_llama(args, tmp_file("grid.json"));
      ck_assert_int_eq(g->n_devices, sizes[i] * sizes[j]);
      ppcc_run_options ro = seeded(100 + (uint64_t)(i * 3 + j));
      check_matches_reference(g, &ro, NULL);
      ppcc_graph_free(g);
    }
  remove_tmp_dir();
}
END_TEST

/* The text report of the shipped tiny model counts each stage's cache. */
START_TEST(tiny_llama_report_has_kv_cache) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/tiny_llama.json", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_int_eq(ppcc_report_text(g, f, &d), PPCC_OK);
  fclose(f);
  /* [1, 16, 2, 16] f32 per cache, K and V per block, one block per stage */
  ck_assert_msg(strstr(text, "stage 0: 2 values, 4.0 KiB (4096)") && strstr(text, "stage 1: 2 values, 4.0 KiB (4096)"),
                "%s", text);
  free(text);
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- prefill + decode through the KV cache ---------------- */

static void write_i64(const char *path, int rank, const int64_t *shape, const int64_t *v) {
  ppcc_host_tensor t;
  ck_assert(ppcc_host_tensor_alloc(&t, PPCC_I64, rank, shape));
  memcpy(t.data, v, (size_t)t.bytes);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_msg(ppcc_npy_write(path, &t, &d) == PPCC_OK, "%s", d.first);
  ppcc_host_tensor_free(&t);
}

static int output_index(const ppcc_graph *g, const char *name) {
  for (int k = 0; k < g->n_outputs; k++)
    if (strcmp(g->values[g->outputs[k]].name, name) == 0) return k;
  ck_abort_msg("no output '%s'", name);
  return -1;
}

#define LAYERS 2
static const char *const llama_dims = "--layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 256 --tp 2 --pp 2";
static const int64_t tokens9[9] = {17, 3, 250, 42, 42, 7, 128, 99, 5};
static const int64_t positions9[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

/* Runs a graph for n tokens at positions start.. (inputs tokens/positions
 * and, if given, the caches from earlier outputs); returns its outputs. */
static ppcc_graph *run_step(const char *args, const char *model, const char *weights, int start, int n,
                            ppcc_host_tensor *caches_in, ppcc_host_tensor *out) {
  ppcc_graph *g = generate_llama(args, tmp_file(model));
  int64_t s[2] = {1, n};
  write_i64(tmp_file("tokens.npy"), 2, s, tokens9 + start);
  write_i64(tmp_file("positions.npy"), 1, &s[1], positions9 + start);
  ppcc_input_arg inputs[2 + 2 * LAYERS] = {{"tokens", tmp_file("tokens.npy")}, {"positions", tmp_file("positions.npy")}};
  static char names[2 * LAYERS][64], paths[2 * LAYERS][256];
  int n_in = 2;
  for (int c = 0; caches_in && c < 2 * LAYERS; c++, n_in++) {
    snprintf(names[c], sizeof names[c], "blk.%d.%c_cache", c / 2, c % 2 ? 'v' : 'k');
    snprintf(paths[c], sizeof paths[c], "%s/%s.npy", tmp_dir, names[c]);
    ppcc_diag d;
    ppcc_diag_init(&d, "test", NULL);
    ck_assert_msg(ppcc_npy_write(paths[c], &caches_in[c], &d) == PPCC_OK, "%s", d.first);
    inputs[n_in] = (ppcc_input_arg){names[c], paths[c]};
  }
  /* the seed fills the cache positions a prefill has not written yet */
  ppcc_run_options ro = {.weights_path = weights, .random_seed = 1, .have_random_seed = true, .inputs = inputs, .n_inputs = n_in};
  check_matches_reference(g, &ro, out);
  return g;
}

/* Prefill 8 tokens into a 9-position cache, then decode token 9 reading
 * that cache; the decode logits must equal those of a 9-token prefill. */
START_TEST(prefill_then_decode_reads_the_cache) {
  make_tmp_dir();
  char args[512], cmd[8192];
  snprintf(args, sizeof args, "%s --seq 8 --cache 9", llama_dims);
  ppcc_graph *prefill = generate_llama(args, tmp_file("prefill.json"));
  char weights[256];
  snprintf(weights, sizeof weights, "%s", tmp_file("weights.safetensors"));
  snprintf(cmd, sizeof cmd, "'%s' '%s' 42 '%s'", t_tool_path("gen_safetensors"), tmp_file("prefill.json"), weights);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
  ppcc_graph_free(prefill);

  ppcc_host_tensor pre[16], dec[16], full[16], caches[2 * LAYERS];
  prefill = run_step(args, "prefill.json", weights, 0, 8, NULL, pre);
  for (int c = 0; c < 2 * LAYERS; c++) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%c_cache_new", c / 2, c % 2 ? 'v' : 'k');
    caches[c] = pre[output_index(prefill, name)];
  }
  snprintf(args, sizeof args, "%s --seq 1 --start 8 --cache 9", llama_dims);
  ppcc_graph *decode = run_step(args, "decode.json", weights, 8, 1, caches, dec);
  snprintf(args, sizeof args, "%s --seq 9", llama_dims);
  ppcc_graph *whole = run_step(args, "whole.json", weights, 0, 9, NULL, full);

  int dl = output_index(decode, "logits"), fl = output_index(whole, "logits");
  ppcc_compare_result r = ppcc_compare(&dec[dl], &full[fl]);
  ck_assert_msg(r.ok, "decode logits differ from the 9-token prefill: max abs error %g", r.max_abs);
  int dt = output_index(decode, "next_token"), ft = output_index(whole, "next_token");
  ck_assert_int_eq(*(int64_t *)dec[dt].data, *(int64_t *)full[ft].data);
  /* and the decode step's caches are the 9-token prefill's */
  for (int c = 0; c < 2 * LAYERS; c++) {
    const char *name = decode->values[decode->outputs[2 + c]].name;
    r = ppcc_compare(&dec[2 + c], &full[output_index(whole, name)]);
    ck_assert_msg(r.ok, "%s differs: %g", name, r.max_abs);
  }
  for (int k = 0; k < prefill->n_outputs; k++) ppcc_host_tensor_free(&pre[k]);
  for (int k = 0; k < decode->n_outputs; k++) ppcc_host_tensor_free(&dec[k]);
  for (int k = 0; k < whole->n_outputs; k++) ppcc_host_tensor_free(&full[k]);
  ppcc_graph_free(prefill);
  ppcc_graph_free(decode);
  ppcc_graph_free(whole);
  remove_tmp_dir();
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_llm");
  TCase *k = t_add_tcase(s, "kernels", 0);
  tcase_add_test(k, rms_norm_known_values);
  tcase_add_test(k, softmax_over_first_dim);
  tcase_add_test(k, attention_causal_and_grouped);
  tcase_add_test(k, attention_prefill_matches_reference);
  tcase_add_test(k, rotary_identity_at_zero_and_norm_preserving);
  tcase_add_test(k, argmax_first_max_and_nan);
  tcase_add_test(k, concat_slice_sum_mean);
  tcase_add_test(k, embedding_rejects_bad_ids);
  TCase *m = t_add_tcase(s, "models", 300);
  tcase_add_test(m, llm_ops_sharded_match_reference);
  tcase_add_test(m, llama_tp_pp_grid_matches_reference);
  tcase_add_test(m, tiny_llama_report_has_kv_cache);
  tcase_add_test(m, prefill_then_decode_reads_the_cache);
  return t_run_suite(s);
}
