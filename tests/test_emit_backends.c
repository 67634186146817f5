/* The two backends of `ppcc run` (JIT, interpreter) against each other
 * and against known answers (issue 11):
 *   - out-of-range and negative indices of index_copy / index_put /
 *     embedding are a run-time error on both, with the same message,
 *     never an out-of-bounds write (also run under ASan by ci_sanitize);
 *   - f16/bf16 reductions accumulate in f32 and round once;
 *   - norms stay finite and right for |x| ~ 1e19 and beyond;
 *   - every op of the op table, in every dtype it takes, on random and on
 *     edge values (+-0, subnormals, +-Inf, NaN, +-1e30, +-dtype max): the
 *     backends agree within the --check tolerance (ppcc_compare) or fail
 *     alike; an op added to the table without a case here fails the test.
 * Models are written with single quotes for readability. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/jit.h"
#include "ppcc/runtime.h"
#include "emit_support.h"

static ppcc_diag diag;

typedef enum { INTERP, JIT } backend;
static const char *backend_name(backend b) { return b == JIT ? "jit" : "interp"; }

/* Input values given by a test (others: random, seed 5). */
typedef struct given {
  const char *name;
  const void *data; /* the value's dtype and element count */
} given;

/* Runs g sharded on backend b; outputs into out (g->n_outputs tensors).
 * Returns the status; the diagnostic is in diag. */
static ppcc_status run_compiled(const ppcc_graph *g, backend b, ppcc_jit *compiled, int n_given, const given *gv,
                                ppcc_host_tensor *out) {
  ppcc_run_options ro = {.random_seed = 5, .have_random_seed = true};
  ppcc_run_data data;
  ppcc_diag_init(&diag, "test.json", NULL);
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &diag) == PPCC_OK, "%s", diag.first);
  for (int i = 0; i < n_given; i++) {
    int v = ppcc_find_value(g, gv[i].name);
    ck_assert_msg(v >= 0 && data.values[v].data, "no input '%s'", gv[i].name);
    memcpy(data.values[v].data, gv[i].data, (size_t)data.values[v].bytes);
  }
  ppcc_exec_options eo = {.threads = 2};
  ppcc_status st;
  if (b == JIT) {
    ppcc_jit *jit = compiled;
    st = jit ? PPCC_OK : ppcc_jit_compile(g, NULL, &jit, NULL, &diag);
    if (!st) st = ppcc_jit_execute(jit, g, &data, &eo, out, NULL, &diag);
    if (jit != compiled) ppcc_jit_free(jit);
  } else {
    st = ppcc_execute(g, &data, &eo, out, NULL, &diag);
  }
  ppcc_run_data_free(&data);
  return st;
}

static ppcc_status run_on(const ppcc_graph *g, backend b, int n_given, const given *gv, ppcc_host_tensor *out) {
  return run_compiled(g, b, NULL, n_given, gv, out);
}

static ppcc_graph *model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs) {
  ppcc_graph *g = t_model(devices, params, inputs, ops, outputs, &diag);
  ck_assert_msg(g != NULL, "model does not compile: %s", diag.first);
  return g;
}

static void free_outputs(const ppcc_graph *g, ppcc_host_tensor *out) {
  for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
}

/* Both backends fail with a diagnostic containing want. */
static void expect_both_fail(const ppcc_graph *g, int n_given, const given *gv, const char *want) {
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[4] = {0};
    ppcc_status st = run_on(g, b, n_given, gv, out);
    ck_assert_msg(st == PPCC_ERR_USER, "%s: status %d (want a user error with '%s')", backend_name(b), st, want);
    ck_assert_msg(strstr(diag.first, want), "%s: got '%s', want '%s'", backend_name(b), diag.first, want);
    free_outputs(g, out);
  }
}

/* ---------------- item 1: index bounds ---------------- */

/* cache[8, 4] (split over its columns on 2 devices when split) gets rows
 * row[2, 4] at pos[2]. */
static ppcc_graph *index_model(const char *op, const char *dtype, bool split) {
  const char *col = split ? ", 'shard': {'kind': 'split', 'dim': 1, 'count': 2}" : "";
  const char *rep = split ? ", 'shard': {'kind': 'replicated', 'count': 2}" : "";
  char inputs[512], ops[256];
  snprintf(inputs, sizeof inputs,
           "{'name': 'cache', 'dtype': 'f32', 'shape': [8, 4]%s}, {'name': 'pos', 'dtype': '%s', 'shape': [2]%s},"
           " {'name': 'row', 'dtype': 'f32', 'shape': [2, 4]%s}",
           col, dtype, rep, col);
  snprintf(ops, sizeof ops, "{'op': '%s', 'in': ['cache', 'pos', 'row'], 'out': ['y']%s}", op,
           strcmp(op, "index_copy") == 0 ? ", 'attrs': {'dim': 0}" : "");
  return model(split ? 2 : 1, "", inputs, ops, "'y'");
}

START_TEST(index_copy_out_of_range_fails_on_both_backends) {
  const char *ops[] = {"index_copy", "index_put"};
  for (int o = 0; o < 2; o++)
    for (int s = 0; s < 2; s++) {
      ppcc_graph *g = index_model(ops[o], "i64", s);
      int64_t huge[2] = {1, 1000000}, neg[2] = {-1, 3}, edge[2] = {7, 8}, ok[2] = {0, 7};
      expect_both_fail(g, 1, (given[]){{"pos", huge}}, "index 1000000 at position 1 is out of range [0, 8)");
      expect_both_fail(g, 1, (given[]){{"pos", neg}}, "index -1 at position 0 is out of range [0, 8)");
      expect_both_fail(g, 1, (given[]){{"pos", edge}}, "index 8 at position 1 is out of range [0, 8)");
      float row[8] = {1, 2, 3, 4, 5, 6, 7, 8};
      for (backend b = INTERP; b <= JIT; b++) {
        ppcc_host_tensor out[1] = {0};
        ck_assert_msg(run_on(g, b, 2, (given[]){{"pos", ok}, {"row", row}}, out) == PPCC_OK, "%s: %s",
                      backend_name(b), diag.first);
        const float *y = out[0].data;
        ck_assert(y[0] == 1 && y[3] == 4 && y[28] == 5 && y[31] == 8);
        free_outputs(g, out);
      }
      ppcc_graph_free(g);
    }
  ppcc_graph *g = index_model("index_copy", "i32", false);
  int32_t huge32[2] = {2, 1 << 30};
  expect_both_fail(g, 1, (given[]){{"pos", huge32}}, "index 1073741824 at position 1 is out of range [0, 8)");
  ppcc_graph_free(g);
}
END_TEST

/* Two identical index_copy shards share one JIT kernel (exec_kernel.c),
 * which takes the op index as an argument: a bad index in the second one
 * is reported against the second op on both backends, and a good run
 * writes both. */
START_TEST(shared_index_kernel_names_the_failing_op) {
  ppcc_graph *g = model(1, "",
                        "{'name': 'cache', 'dtype': 'f32', 'shape': [8, 4]}, {'name': 'p1', 'dtype': 'i64', 'shape': [2]},"
                        " {'name': 'p2', 'dtype': 'i64', 'shape': [2]}, {'name': 'row', 'dtype': 'f32', 'shape': [2, 4]}",
                        "{'op': 'index_copy', 'in': ['cache', 'p1', 'row'], 'out': ['first'], 'attrs': {'dim': 0}},"
                        " {'op': 'index_copy', 'in': ['cache', 'p2', 'row'], 'out': ['second'], 'attrs': {'dim': 0}}",
                        "'first', 'second'");
  int64_t ok[2] = {0, 7}, bad[2] = {1, 9};
  expect_both_fail(g, 2, (given[]){{"p1", ok}, {"p2", bad}}, "ops[1] 'index_copy' (-> 'second')");
  expect_both_fail(g, 2, (given[]){{"p1", ok}, {"p2", bad}}, "index 9 at position 1 is out of range [0, 8)");
  expect_both_fail(g, 2, (given[]){{"p1", bad}, {"p2", ok}}, "ops[0] 'index_copy' (-> 'first')");
  float row[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int64_t other[2] = {2, 3};
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[2] = {0};
    ck_assert_msg(run_on(g, b, 3, (given[]){{"p1", ok}, {"p2", other}, {"row", row}}, out) == PPCC_OK, "%s: %s",
                  backend_name(b), diag.first);
    const float *y1 = out[0].data, *y2 = out[1].data;
    ck_assert(y1[0] == 1 && y1[31] == 8 && y2[8] == 1 && y2[15] == 8);
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
}
END_TEST

START_TEST(embedding_out_of_range_fails_on_both_backends) {
  const char *tables[] = {"", ", 'shard': {'kind': 'split', 'dim': 0, 'count': 2}",
                          ", 'shard': {'kind': 'split', 'dim': 1, 'count': 2}"};
  for (int t = 0; t < 3; t++) {
    char params[256];
    snprintf(params, sizeof params, "{'name': 'tab', 'dtype': 'f32', 'shape': [10, 4]%s}", tables[t]);
    ppcc_graph *g = model(t ? 2 : 1, params,
                          t ? "{'name': 'ids', 'dtype': 'i64', 'shape': [3], 'shard': {'kind': 'replicated', 'count': 2}}"
                            : "{'name': 'ids', 'dtype': 'i64', 'shape': [3]}",
                          "{'op': 'embedding', 'in': ['ids', 'tab'], 'out': ['e']},"
                          " {'op': 'unshard', 'in': ['e'], 'out': ['y']}",
                          "'y'");
    int64_t past[3] = {1, 10, 2}, neg[3] = {0, 1, -3}, ok[3] = {9, 0, 5};
    expect_both_fail(g, 1, (given[]){{"ids", past}}, "token id 10 at position 1 is out of range [0, 10)");
    expect_both_fail(g, 1, (given[]){{"ids", neg}}, "token id -3 at position 2 is out of range [0, 10)");
    ppcc_host_tensor ref[1] = {0}, got[1] = {0};
    ck_assert_msg(run_on(g, INTERP, 1, (given[]){{"ids", ok}}, ref) == PPCC_OK, "%s", diag.first);
    ck_assert_msg(run_on(g, JIT, 1, (given[]){{"ids", ok}}, got) == PPCC_OK, "%s", diag.first);
    ck_assert(memcmp(ref[0].data, got[0].data, (size_t)ref[0].bytes) == 0);
    free_outputs(g, ref);
    free_outputs(g, got);
    ppcc_graph_free(g);
  }
}
END_TEST

/* An index gather op on x = [[1, 2, 3], [4, 5, 6]] along dim 1 with an
 * index outside [-3, 3): the same one-line failure on both backends; good
 * indices (negative ones too) give the same bits, `want`. */
static void check_index_bounds(const char *op, const char *index_shape, const int64_t *past, const int64_t *neg,
                               const char *past_msg, const char *neg_msg, const int64_t *ok, const float *want,
                               size_t want_bytes) {
  char inputs[256], ops[256];
  snprintf(inputs, sizeof inputs, "{'name': 'x', 'dtype': 'f32', 'shape': [2, 3]}, {'name': 'ix', 'dtype': 'i64', 'shape': %s}",
           index_shape);
  snprintf(ops, sizeof ops, "{'op': '%s', 'in': ['x', 'ix'], 'out': ['y'], 'attrs': {'dim': 1}}", op);
  ppcc_graph *g = model(1, "", inputs, ops, "'y'");
  float x[6] = {1, 2, 3, 4, 5, 6};
  expect_both_fail(g, 2, (given[]){{"x", x}, {"ix", past}}, past_msg);
  expect_both_fail(g, 2, (given[]){{"x", x}, {"ix", neg}}, neg_msg);
  ppcc_host_tensor ref[1] = {0}, got[1] = {0};
  ck_assert_msg(run_on(g, INTERP, 2, (given[]){{"x", x}, {"ix", ok}}, ref) == PPCC_OK, "%s", diag.first);
  ck_assert_msg(run_on(g, JIT, 2, (given[]){{"x", x}, {"ix", ok}}, got) == PPCC_OK, "%s", diag.first);
  ck_assert(memcmp(ref[0].data, want, want_bytes) == 0);
  ck_assert(memcmp(got[0].data, want, want_bytes) == 0);
  free_outputs(g, ref);
  free_outputs(g, got);
  ppcc_graph_free(g);
}

/* ONNX: a negative index counts from the end, [-D, D) is valid */
START_TEST(gather_elements_out_of_range_fails_on_both_backends) {
  const int64_t past[4] = {0, 1, 3, 2}, neg[4] = {0, -4, 2, 2}, ok[4] = {2, 0, -2, -3};
  const float want[4] = {3, 1, 5, 4};
  check_index_bounds("gather_elements", "[2, 2]", past, neg, "index 3 at position 2 is out of range [-3, 3)",
                     "index -4 at position 1 is out of range [-3, 3)", ok, want, sizeof want);
}
END_TEST

START_TEST(gather_out_of_range_fails_on_both_backends) {
  const int64_t past[2] = {0, 3}, neg[2] = {-4, 2}, ok[2] = {-1, 0};
  const float want[4] = {3, 1, 6, 4};
  check_index_bounds("gather", "[2]", past, neg, "index 3 at position 1 is out of range [-3, 3)",
                     "index -4 at position 0 is out of range [-3, 3)", ok, want, sizeof want);
}
END_TEST

/* The reported case: tiny_llama's KV-cache write with positions 9..16 on
 * its 16-position cache, through the real binary. */
START_TEST(tiny_llama_positions_past_the_cache) {
  char *dir = t_make_temp_dir("backends");
  ppcc_host_tensor pos;
  int64_t shape[1] = {8};
  ck_assert(ppcc_host_tensor_alloc(&pos, PPCC_I64, 1, shape));
  for (int i = 0; i < 8; i++) ((int64_t *)pos.data)[i] = 9 + i;
  const char *path = t_path_in(dir, "pos.npy");
  ppcc_diag_init(&diag, "test", NULL);
  ck_assert(ppcc_npy_write(path, &pos, &diag) == PPCC_OK);
  ppcc_host_tensor_free(&pos);
  char input[512];
  snprintf(input, sizeof input, "positions=%s", path);
  const char *err = t_path_in(dir, "stderr");
  for (backend b = INTERP; b <= JIT; b++) {
    char be[32];
    snprintf(be, sizeof be, "--backend=%s", backend_name(b));
    const char *argv[] = {"ppcc", "run", t_src_path("testdata/models/tiny_llama.json"), be, "--input", input, NULL};
    int ws = t_run_ppcc(argv, err);
    char *text = t_read_text(err);
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 1, "%s: exit %d: %s", be, ws, text);
    ck_assert_msg(strstr(text, "index 16 at position 7 is out of range [0, 16)"), "%s: %s", be, text);
    free(text);
  }
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ---------------- item 10: small disagreements ---------------- */

START_TEST(relu_keeps_nan) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'f32', 'shape': [4]}",
                        "{'op': 'relu', 'in': ['x'], 'out': ['y']}", "'y'");
  float x[4] = {NAN, -0.0f, -1.0f, 2.0f};
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[1] = {0};
    ck_assert_msg(run_on(g, b, 1, (given[]){{"x", x}}, out) == PPCC_OK, "%s", diag.first);
    const float *y = out[0].data;
    ck_assert_msg(isnan(y[0]), "%s: relu(NaN) = %g", backend_name(b), y[0]);
    ck_assert_msg(y[1] == 0 && y[2] == 0 && y[3] == 2, "%s", backend_name(b));
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
}
END_TEST

/* A per-row index [B, L] (dim 1, a KV-cache write where each batch row sits
 * at its own positions): row b writes at index[b, :]; an index out of range
 * fails alike on both backends; mismatched per-row shapes are refused. */
START_TEST(per_row_index_copy_on_both_backends) {
  const char *inputs = "{'name': 'cache', 'dtype': 'f32', 'shape': [2, 8, 2]}, {'name': 'pos', 'dtype': 'i64', 'shape': [2, 2]},"
                       " {'name': 'row', 'dtype': 'f32', 'shape': [2, 2, 2]}";
  ppcc_graph *g = model(1, "", inputs, "{'op': 'index_copy', 'in': ['cache', 'pos', 'row'], 'out': ['y'], 'attrs': {'dim': 1}}",
                        "'y'");
  int64_t bad[4] = {0, 1, 2, 8}, ok[4] = {0, 7, 3, 1};
  expect_both_fail(g, 1, (given[]){{"pos", bad}}, "index 8 at position 3 is out of range [0, 8)");
  float row[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[1] = {0};
    ck_assert_msg(run_on(g, b, 2, (given[]){{"pos", ok}, {"row", row}}, out) == PPCC_OK, "%s: %s", backend_name(b),
                  diag.first);
    const float *y = out[0].data;
    ck_assert_msg(y[0] == 1 && y[1] == 2 && y[14] == 3 && y[15] == 4 && y[22] == 5 && y[23] == 6 && y[18] == 7 &&
                      y[19] == 8,
                  "%s: per-row index_copy wrote the wrong slots", backend_name(b));
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
  struct {
    const char *inputs, *op, *want;
  } refused[] = {
      {"{'name': 'x', 'dtype': 'f32', 'shape': [2, 2, 1, 4]}, {'name': 'p', 'dtype': 'i64', 'shape': [3, 2]}",
       "{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y']}", "positions [seq] or [batch, seq]"},
      {"{'name': 'q', 'dtype': 'f32', 'shape': [2, 1, 1, 4]}, {'name': 'k', 'dtype': 'f32', 'shape': [2, 1, 4, 4]},"
       " {'name': 'p', 'dtype': 'i64', 'shape': [1, 1]}",
       "{'op': 'attention', 'in': ['q', 'k', 'k', 'p'], 'out': ['y']}", "must be i64 [S] or [B, S]"},
      {"{'name': 'c', 'dtype': 'f32', 'shape': [2, 8]}, {'name': 'p', 'dtype': 'i64', 'shape': [2, 1]},"
       " {'name': 'r', 'dtype': 'f32', 'shape': [1, 8]}",
       "{'op': 'index_copy', 'in': ['c', 'p', 'r'], 'out': ['y'], 'attrs': {'dim': 0}}", "or [batch, L] with dim 1"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    ppcc_graph *r = t_model(1, "", refused[i].inputs, refused[i].op, "'y'", &diag);
    ck_assert_msg(r == NULL, "compiled: %s", refused[i].op);
    ck_assert_msg(strstr(diag.first, refused[i].want), "%s", diag.first);
  }
  /* per-row positions index whole batch rows: a batch split is refused */
  ppcc_graph *r = t_model(2, "",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [2, 2, 1, 4], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}},"
                          " {'name': 'p', 'dtype': 'i64', 'shape': [2, 2], 'shard': {'kind': 'replicated', 'count': 2}}",
                          "{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y']}", "'y'", &diag);
  ck_assert_msg(r == NULL && strstr(diag.first, "need whole batch rows"), "%s", r ? "compiled" : diag.first);
}
END_TEST

START_TEST(bad_rotary_theta_and_norm_eps_refused_at_compile) {
  const char *x = "{'name': 'x', 'dtype': 'f32', 'shape': [1, 2, 1, 4]}, {'name': 'p', 'dtype': 'i64', 'shape': [2]},"
                  " {'name': 'w', 'dtype': 'f32', 'shape': [4]}";
  struct {
    const char *op, *want;
  } cases[] = {
      {"{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y'], 'attrs': {'theta': 0}}", "'rotary'"},
      {"{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y'], 'attrs': {'theta': -2}}", "attrs.theta must be"},
      {"{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'eps': -1}}", "'rms_norm'"},
      {"{'op': 'layer_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'eps': -1e-6}}", "attrs.eps must be"},
      {"{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'weight_offset': 1e300}}", "attrs.weight_offset must be"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ppcc_graph *g = t_model(1, "", x, cases[i].op, "'y'", &diag);
    ck_assert_msg(g == NULL, "compiled: %s", cases[i].op);
    ck_assert_msg(strstr(diag.first, cases[i].want) && strstr(diag.first, "must be a finite number"), "%s", diag.first);
  }
}
END_TEST

/* The interpreter's f64 angles: pos * theta^(-2j/D). */
static void rotary_expected(const float *x, float *y, int D, double pos, double theta) {
  for (int j = 0; j < D / 2; j++) {
    double a = pos * pow(theta, -2.0 * j / D);
    y[j] = (float)(x[j] * cos(a) - x[j + D / 2] * sin(a));
    y[j + D / 2] = (float)(x[j + D / 2] * cos(a) + x[j] * sin(a));
  }
}

START_TEST(rotary_angles_accurate_at_position_500k) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'f32', 'shape': [1, 2, 1, 16]}, {'name': 'p', 'dtype': 'i64', 'shape': [2]}",
                        "{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y'], 'attrs': {'theta': 500000}}", "'y'");
  float x[32], want[32];
  for (int i = 0; i < 32; i++) x[i] = (float)(i % 7) * 0.25f - 0.75f;
  int64_t pos[2] = {499999, 500000};
  for (int s = 0; s < 2; s++) rotary_expected(x + 16 * s, want + 16 * s, 16, (double)pos[s], 500000.0);
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[1] = {0};
    ck_assert_msg(run_on(g, b, 2, (given[]){{"x", x}, {"p", pos}}, out) == PPCC_OK, "%s", diag.first);
    const float *y = out[0].data;
    double worst = 0;
    for (int i = 0; i < 32; i++) worst = fmax(worst, fabs(y[i] - want[i]));
    ck_assert_msg(worst < 1e-5, "%s: rotary at position 500k off by %g", backend_name(b), worst);
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
}
END_TEST

/* i64 arithmetic on both backends, wrapping like two's complement. */
START_TEST(i64_arithmetic_on_both_backends) {
  ppcc_graph *g = model(1, "", "{'name': 'a', 'dtype': 'i64', 'shape': [2, 3]}, {'name': 'b', 'dtype': 'i64', 'shape': [3]}",
                        "{'op': 'add', 'in': ['a', 'b'], 'out': ['s']}, {'op': 'sub', 'in': ['a', 'b'], 'out': ['d']},"
                        " {'op': 'mul', 'in': ['a', 'b'], 'out': ['m']}, {'op': 'maximum', 'in': ['a', 'b'], 'out': ['x']},"
                        " {'op': 'neg', 'in': ['a'], 'out': ['n']}, {'op': 'sum', 'in': ['a'], 'out': ['t'], 'attrs': {'dim': [0]}}",
                        "'s', 'd', 'm', 'x', 'n', 't'");
  int64_t a[6] = {INT64_MAX, -5, 7, INT64_MIN, 0, 3}, b[3] = {1, -2, 1000000000000};
  int64_t want_s[6] = {INT64_MIN, -7, 1000000000007, INT64_MIN + 1, -2, 1000000000003};
  int64_t want_t[3] = {-1, -5, 10};
  for (backend k = INTERP; k <= JIT; k++) {
    ppcc_host_tensor out[6] = {0};
    ck_assert_msg(run_on(g, k, 2, (given[]){{"a", a}, {"b", b}}, out) == PPCC_OK, "%s: %s", backend_name(k), diag.first);
    ck_assert_msg(memcmp(out[0].data, want_s, sizeof want_s) == 0, "%s: add", backend_name(k));
    ck_assert_msg(memcmp(out[5].data, want_t, sizeof want_t) == 0, "%s: sum", backend_name(k));
    const int64_t *m = out[2].data, *x = out[3].data, *n = out[4].data;
    ck_assert(m[1] == 10 && x[0] == INT64_MAX && x[1] == -2 && n[0] == INT64_MIN + 1 && n[3] == INT64_MIN);
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
  /* integer div: refused by both (at compile time) */
  ck_assert(t_model(1, "", "{'name': 'a', 'dtype': 'i64', 'shape': [2]}",
                    "{'op': 'div', 'in': ['a', 'a'], 'out': ['y']}", "'y'", &diag) == NULL);
  ck_assert_msg(strstr(diag.first, "'div'") && strstr(diag.first, "must be a float tensor"), "%s", diag.first);
}
END_TEST

/* ---------------- item 7: half floats accumulate in f32 ---------------- */

static uint64_t rng_state = 88172645463325252ull;
static double uniform(void) { /* xorshift64: [0, 1) */
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

static uint16_t *bf16_values(int n, double lo, double hi, double *as_double) {
  uint16_t *v = malloc(sizeof *v * (size_t)n);
  for (int i = 0; i < n; i++) {
    v[i] = ppcc_f32_to_bf16((float)(lo + (hi - lo) * uniform()));
    if (as_double) as_double[i] = ppcc_bf16_to_f32(v[i]);
  }
  return v;
}

START_TEST(bf16_softmax_of_4096_zeros_is_1_over_4096) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'bf16', 'shape': [2, 4096]}",
                        "{'op': 'softmax', 'in': ['x'], 'out': ['y']}", "'y'");
  uint16_t *zeros = calloc(8192, sizeof *zeros);
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[1] = {0};
    ck_assert_msg(run_on(g, b, 1, (given[]){{"x", zeros}}, out) == PPCC_OK, "%s", diag.first);
    const uint16_t *y = out[0].data;
    for (int i = 0; i < 8192; i++)
      ck_assert_msg(ppcc_bf16_to_f32(y[i]) == 1.0f / 4096, "%s: y[%d] = %g, want 1/4096", backend_name(b), i,
                    ppcc_bf16_to_f32(y[i]));
    free_outputs(g, out);
  }
  free(zeros);
  ppcc_graph_free(g);
}
END_TEST

/* linear, rms_norm and sum over K = 4096 in bf16 against f64 sums of the
 * same bf16 inputs: within one bf16 rounding of the result plus f32
 * summation error (bf16 accumulation was 11-80 % of max|ref| off). */
START_TEST(bf16_long_reductions_accumulate_in_f32) {
  enum { K = 4096, N = 8 };
  ppcc_graph *g = model(1, "{'name': 'w', 'dtype': 'bf16', 'shape': [8, 4096]}, {'name': 'nw', 'dtype': 'bf16', 'shape': [4096]}",
                        "{'name': 'x', 'dtype': 'bf16', 'shape': [1, 4096]}",
                        "{'op': 'linear', 'in': ['x', 'w'], 'out': ['l']},"
                        " {'op': 'rms_norm', 'in': ['x', 'nw'], 'out': ['r']},"
                        " {'op': 'sum', 'in': ['x'], 'out': ['s']}",
                        "'l', 'r', 's'");
  static double x[K], w[N * K], nw[K];
  uint16_t *xb = bf16_values(K, 0, 1, x), *wb = bf16_values(N * K, -1, 1, w), *nwb = bf16_values(K, 0.5, 1.5, nw);
  double want_l[N], scale_l[N], ss = 0, want_s = 0;
  for (int n = 0; n < N; n++) {
    want_l[n] = scale_l[n] = 0;
    for (int k = 0; k < K; k++) {
      want_l[n] += x[k] * w[n * K + k];
      scale_l[n] += fabs(x[k] * w[n * K + k]);
    }
  }
  for (int k = 0; k < K; k++) {
    ss += x[k] * x[k];
    want_s += x[k];
  }
  double inv = 1.0 / sqrt(ss / K + (double)1e-5f);
  for (backend b = INTERP; b <= JIT; b++) {
    ppcc_host_tensor out[3] = {0};
    ck_assert_msg(run_on(g, b, 3, (given[]){{"x", xb}, {"w", wb}, {"nw", nwb}}, out) == PPCC_OK, "%s", diag.first);
    const uint16_t *l = out[0].data, *r = out[1].data, *s = out[2].data;
    for (int n = 0; n < N; n++) {
      double got = ppcc_bf16_to_f32(l[n]);
      ck_assert_msg(fabs(got - want_l[n]) <= 0x1p-8 * fabs(want_l[n]) + 1e-5 * scale_l[n], "%s: linear[%d] = %g, want %g",
                    backend_name(b), n, got, want_l[n]);
    }
    for (int k = 0; k < K; k++) {
      double want = x[k] * inv * nw[k], got = ppcc_bf16_to_f32(r[k]);
      ck_assert_msg(fabs(got - want) <= 0x1p-7 * fabs(want), "%s: rms_norm[%d] = %g, want %g", backend_name(b), k, got,
                    want);
    }
    double got_s = ppcc_bf16_to_f32(s[0]);
    ck_assert_msg(fabs(got_s - want_s) <= 0x1p-8 * want_s, "%s: sum = %g, want %g", backend_name(b), got_s, want_s);
    free_outputs(g, out);
  }
  free(xb);
  free(wb);
  free(nwb);
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- item 9: norms of huge values ---------------- */

START_TEST(norms_of_huge_values_on_both_backends) {
  ppcc_graph *g = model(1, "{'name': 'w', 'dtype': 'f32', 'shape': [4]}, {'name': 'b', 'dtype': 'f32', 'shape': [4]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [4, 4]}",
                        "{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['r']},"
                        " {'op': 'layer_norm', 'in': ['x', 'w', 'b'], 'out': ['n']}",
                        "'r', 'n'");
  float x[16] = {1.8e19f, -2e19f, 3e19f, 1e19f, 1e30f, 2e30f, -1e30f, 5e29f,
                 3e38f,   -3e38f, 1e38f, 2e38f, 1e-30f, -2e-30f, 3e-30f, 1e-30f};
  float w[4] = {1, 2, 0.5f, -1}, bias[4] = {0.25f, 0, -1, 2};
  for (backend k = INTERP; k <= JIT; k++) {
    ppcc_host_tensor out[2] = {0};
    ck_assert_msg(run_on(g, k, 3, (given[]){{"x", x}, {"w", w}, {"b", bias}}, out) == PPCC_OK, "%s", diag.first);
    const float *r = out[0].data, *n = out[1].data;
    for (int row = 0; row < 4; row++) {
      const float *xr = x + 4 * row;
      double ss = 0, sum = 0, sq = 0;
      for (int j = 0; j < 4; j++) {
        ss += (double)xr[j] * xr[j];
        sum += xr[j];
      }
      double mean = sum / 4;
      for (int j = 0; j < 4; j++) sq += (xr[j] - mean) * (xr[j] - mean);
      for (int j = 0; j < 4; j++) {
        double want_r = xr[j] / sqrt(ss / 4 + 1e-5) * w[j];
        double want_n = (xr[j] - mean) / sqrt(sq / 4 + 1e-5) * w[j] + bias[j];
        ck_assert_msg(fabs(r[4 * row + j] - want_r) <= 1e-5 * fabs(want_r) + 1e-6, "%s: rms_norm[%d][%d] = %g, want %g",
                      backend_name(k), row, j, r[4 * row + j], want_r);
        ck_assert_msg(fabs(n[4 * row + j] - want_n) <= 1e-5 * fabs(want_n) + 1e-5, "%s: layer_norm[%d][%d] = %g, want %g",
                      backend_name(k), row, j, n[4 * row + j], want_n);
      }
    }
    free_outputs(g, out);
  }
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- item 8: the --check criterion ---------------- */

static ppcc_host_tensor tensor_of(ppcc_dtype t, int64_t n, const double *v) {
  ppcc_host_tensor h;
  ck_assert(ppcc_host_tensor_alloc(&h, t, 1, &n));
  for (int64_t i = 0; i < n; i++) {
    if (t == PPCC_F32) ((float *)h.data)[i] = (float)v[i];
    if (t == PPCC_BF16) ((uint16_t *)h.data)[i] = ppcc_f32_to_bf16((float)v[i]);
    if (t == PPCC_F16) ((uint16_t *)h.data)[i] = ppcc_f32_to_f16((float)v[i]);
    if (t == PPCC_I64) ((int64_t *)h.data)[i] = (int64_t)v[i];
  }
  return h;
}

static ppcc_compare_result compare_values(ppcc_dtype t, int64_t n, const double *got, const double *ref) {
  ppcc_host_tensor a = tensor_of(t, n, got), b = tensor_of(t, n, ref);
  ppcc_compare_result r = ppcc_compare(&a, &b);
  ppcc_host_tensor_free(&a);
  ppcc_host_tensor_free(&b);
  return r;
}

START_TEST(check_criterion_is_assert_close) {
  ppcc_tolerance t = ppcc_check_tolerance(PPCC_F32);
  ck_assert(t.rtol == 1.3e-6 && t.atol == 1e-5);
  t = ppcc_check_tolerance(PPCC_F16);
  ck_assert(t.rtol == 1e-3 && t.atol == 1e-5);
  t = ppcc_check_tolerance(PPCC_BF16);
  ck_assert(t.rtol == 1.6e-2 && t.atol == 1e-5);
  /* the reported case: bf16 softmax over 4096 zeros giving 1/256 */
  static double got[4096], ref[4096];
  for (int i = 0; i < 4096; i++) {
    got[i] = 1.0 / 256;
    ref[i] = 1.0 / 4096;
  }
  ppcc_compare_result r = compare_values(PPCC_BF16, 4096, got, ref);
  ck_assert_msg(!r.ok && r.n_bad == 4096 && r.worst == 0, "a 16x error passed");
  /* one bad element is found and located */
  for (int i = 0; i < 4096; i++) got[i] = ref[i] = sin(i) * 3;
  got[1234] += 1e-3;
  r = compare_values(PPCC_F32, 4096, got, ref);
  ck_assert_msg(!r.ok && r.n_bad == 1 && r.worst == 1234 && r.n_nan == 0, "worst %lld", (long long)r.worst);
  /* within rtol + atol scaled by max|ref| (3): passes */
  got[1234] = ref[1234] + 2e-5;
  r = compare_values(PPCC_F32, 4096, got, ref);
  ck_assert_msg(r.ok && r.worst == 1234, "2e-5 at max|ref| 3 failed");
  got[1234] = ref[1234] + 4e-5;
  ck_assert(!compare_values(PPCC_F32, 4096, got, ref).ok);
  /* NaN where the reference is finite fails and is counted as NaN */
  got[1234] = NAN;
  got[7] = ref[7] + 1;
  r = compare_values(PPCC_F32, 4096, got, ref);
  ck_assert(!r.ok && r.n_nan == 1 && r.worst == 1234 && r.n_bad == 2);
  /* NaN against NaN and equal infinities agree; an infinity against a number does not */
  double a[3] = {NAN, INFINITY, -INFINITY}, b[3] = {NAN, INFINITY, -INFINITY}, c[3] = {NAN, INFINITY, 1e30};
  ck_assert(compare_values(PPCC_F32, 3, a, b).ok);
  ck_assert(!compare_values(PPCC_F32, 3, a, c).ok);
  /* integers: exact */
  double j1[2] = {5, 6}, j2[2] = {5, 7};
  r = compare_values(PPCC_I64, 2, j1, j2);
  ck_assert(!r.ok && r.worst == 1);
  ppcc_host_tensor x = tensor_of(PPCC_I64, 2, j1), y = tensor_of(PPCC_I64, 2, j1);
  ((int64_t *)x.data)[1] = (1ll << 53) + 1; /* equal as doubles */
  ((int64_t *)y.data)[1] = 1ll << 53;
  ck_assert(!ppcc_compare(&x, &y).ok);
  ppcc_host_tensor_free(&x);
  ppcc_host_tensor_free(&y);
}
END_TEST

/* ---------------- every op on both backends ---------------- */

/* One graph per op; "DT" in inputs stands for the dtype under test.
 * Inputs named ids / pos / p are indices, filled in range. */
typedef struct op_case {
  const char *op;
  int devices;
  const char *inputs, *ops, *outputs;
  const char *dtypes; /* space-separated dtypes the op must accept; the others
                         must be refused alike (compile, or both backends) */
} op_case;

#define X34 "{'name': 'x', 'dtype': 'DT', 'shape': [4, 8]}"
#define UNARY(name, dts) {name, 1, X34, "{'op': '" name "', 'in': ['x'], 'out': ['y']}", "'y'", dts}
#define BINARY(name, dts)                                                                                  \
  {name, 1, X34 ", {'name': 'b', 'dtype': 'DT', 'shape': [8]}", "{'op': '" name "', 'in': ['x', 'b'], 'out': ['y']}", \
   "'y'", dts}
static const op_case op_cases[] = {
    {"matmul", 1, "{'name': 'a', 'dtype': 'DT', 'shape': [3, 5]}, {'name': 'b', 'dtype': 'DT', 'shape': [5, 4]}",
     "{'op': 'matmul', 'in': ['a', 'b'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"linear", 1,
     "{'name': 'a', 'dtype': 'DT', 'shape': [3, 5]}, {'name': 'w', 'dtype': 'DT', 'shape': [4, 5]},"
     " {'name': 'b', 'dtype': 'DT', 'shape': [4]}",
     "{'op': 'linear', 'in': ['a', 'w', 'b'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    UNARY("gelu", "f32 f16 bf16"),
    UNARY("silu", "f32 f16 bf16"),
    UNARY("relu", "f32 f16 bf16 i64"),
    UNARY("sigmoid", "f32 f16 bf16"),
    UNARY("tanh", "f32 f16 bf16"),
    UNARY("exp", "f32 f16 bf16"),
    UNARY("neg", "f32 f16 bf16 i64"),
    {"scale", 1, X34, "{'op': 'scale', 'in': ['x'], 'out': ['y'], 'attrs': {'value': 3.37}}", "'y'", "f32 f16 bf16 i64"},
    BINARY("add", "f32 f16 bf16 i64"),
    BINARY("sub", "f32 f16 bf16 i64"),
    BINARY("mul", "f32 f16 bf16 i64"),
    BINARY("div", "f32 f16 bf16"),
    BINARY("maximum", "f32 f16 bf16 i64"),
    {"transpose", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 5]}", "{'op': 'transpose', 'in': ['x'], 'out': ['y']}",
     "'y'", "f32 f16 bf16 i64"},
    {"permute", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 4]}",
     "{'op': 'permute', 'in': ['x'], 'out': ['y'], 'attrs': {'perm': [2, 0, 1]}}", "'y'", "f32 f16 bf16 i64"},
    {"reshape", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]}",
     "{'op': 'reshape', 'in': ['x'], 'out': ['y'], 'attrs': {'shape': [2, 12]}}", "'y'", "f32 f16 bf16 i64"},
    {"all_reduce", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6], 'shard': {'kind': 'unreduced', 'count': 2}}",
     "{'op': 'all_reduce', 'in': ['x'], 'out': ['y']}", "'y'", "f32 f16 bf16 i64"},
    {"all_gather", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
     "{'op': 'all_gather', 'in': ['x'], 'out': ['y']}", "'y'", "f32 f16 bf16 i64"},
    {"reduce_scatter", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6], 'shard': {'kind': 'unreduced', 'count': 2}}",
     "{'op': 'reduce_scatter', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64"},
    {"replicate", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]}",
     "{'op': 'replicate', 'in': ['x'], 'out': ['y'], 'attrs': {'count': 2}}", "'y'", "f32 f16 bf16 i64"},
    {"reshard_split", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]}",
     "{'op': 'reshard_split', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': 1, 'count': 2}}", "'y'", "f32 f16 bf16 i64"},
    {"unshard", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}",
     "{'op': 'unshard', 'in': ['x'], 'out': ['y']}", "'y'", "f32 f16 bf16 i64"},
    {"transfer", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]}",
     "{'op': 'transfer', 'in': ['x'], 'out': ['y'], 'attrs': {'devices': [1]}}", "'y'", "f32 f16 bf16 i64"},
    {"index_copy", 1,
     "{'name': 'x', 'dtype': 'DT', 'shape': [8, 4]}, {'name': 'pos', 'dtype': 'i64', 'shape': [3]},"
     " {'name': 'r', 'dtype': 'DT', 'shape': [3, 4]}",
     "{'op': 'index_copy', 'in': ['x', 'pos', 'r'], 'out': ['y'], 'attrs': {'dim': 0}}", "'y'", "f32 f16 bf16 i64"},
    {"index_put", 1,
     "{'name': 'x', 'dtype': 'DT', 'shape': [8, 4]}, {'name': 'pos', 'dtype': 'i64', 'shape': [3]},"
     " {'name': 'r', 'dtype': 'DT', 'shape': [3, 4]}",
     "{'op': 'index_put', 'in': ['x', 'pos', 'r'], 'out': ['y']}", "'y'", "f32 f16 bf16 i64"},
    {"embedding", 1, "{'name': 'ids', 'dtype': 'i64', 'shape': [2, 3]}, {'name': 't', 'dtype': 'DT', 'shape': [10, 4]}",
     "{'op': 'embedding', 'in': ['ids', 't'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"rms_norm", 1, X34 ", {'name': 'w', 'dtype': 'DT', 'shape': [8]}",
     "{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'eps': 1e-6}}", "'y'", "f32 f16 bf16"},
    {"layer_norm", 1, X34 ", {'name': 'w', 'dtype': 'DT', 'shape': [8]}, {'name': 'b', 'dtype': 'DT', 'shape': [8]}",
     "{'op': 'layer_norm', 'in': ['x', 'w', 'b'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"softmax", 1, X34,
     "{'op': 'softmax', 'in': ['x'], 'out': ['y']}, {'op': 'softmax', 'in': ['x'], 'out': ['z'], 'attrs': {'dim': 0}}",
     "'y', 'z'", "f32 f16 bf16"},
    {"rotary", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [1, 3, 2, 8]}, {'name': 'p', 'dtype': 'i64', 'shape': [3]}",
     "{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"attention", 1,
     "{'name': 'q', 'dtype': 'DT', 'shape': [1, 2, 3, 4]}, {'name': 'k', 'dtype': 'DT', 'shape': [1, 1, 5, 4]},"
     " {'name': 'v', 'dtype': 'DT', 'shape': [1, 1, 5, 4]}",
     "{'op': 'attention', 'in': ['q', 'k', 'v'], 'out': ['y'], 'attrs': {'causal': true}}", "'y'", "f32 f16 bf16"},
    /* positions: [S], and per row [B, S] (each batch row at its own positions) */
    {"rotary", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 2, 8]}, {'name': 'p', 'dtype': 'i64', 'shape': [2, 3]}",
     "{'op': 'rotary', 'in': ['x', 'p'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"attention", 1,
     "{'name': 'q', 'dtype': 'DT', 'shape': [1, 2, 3, 4]}, {'name': 'k', 'dtype': 'DT', 'shape': [1, 1, 8, 4]},"
     " {'name': 'v', 'dtype': 'DT', 'shape': [1, 1, 8, 4]}, {'name': 'pos', 'dtype': 'i64', 'shape': [3]}",
     "{'op': 'attention', 'in': ['q', 'k', 'v', 'pos'], 'out': ['y'], 'attrs': {'causal': true}}", "'y'", "f32 f16 bf16"},
    {"attention", 1,
     "{'name': 'q', 'dtype': 'DT', 'shape': [2, 2, 3, 4]}, {'name': 'k', 'dtype': 'DT', 'shape': [2, 1, 8, 4]},"
     " {'name': 'v', 'dtype': 'DT', 'shape': [2, 1, 8, 4]}, {'name': 'pos', 'dtype': 'i64', 'shape': [2, 3]}",
     "{'op': 'attention', 'in': ['q', 'k', 'v', 'pos'], 'out': ['y'], 'attrs': {'causal': true}}", "'y'", "f32 f16 bf16"},
    {"index_copy", 1,
     "{'name': 'x', 'dtype': 'DT', 'shape': [2, 8, 3]}, {'name': 'pos', 'dtype': 'i64', 'shape': [2, 3]},"
     " {'name': 'r', 'dtype': 'DT', 'shape': [2, 3, 3]}",
     "{'op': 'index_copy', 'in': ['x', 'pos', 'r'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64"},
    {"concat", 1, "{'name': 'a', 'dtype': 'DT', 'shape': [2, 3]}, {'name': 'b', 'dtype': 'DT', 'shape': [2, 5]}",
     "{'op': 'concat', 'in': ['a', 'b'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64"},
    {"slice", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]}",
     "{'op': 'slice', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': 1, 'start': 1, 'end': 5}}", "'y'", "f32 f16 bf16 i64"},
    {"sum", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 4, 5]}",
     "{'op': 'sum', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': [1]}}, {'op': 'sum', 'in': ['x'], 'out': ['z']}",
     "'y', 'z'", "f32 f16 bf16 i64"},
    {"mean", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 4, 5]}",
     "{'op': 'mean', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': [0, 2], 'keepdim': true}}", "'y'", "f32 f16 bf16"},
    {"argmax", 1, X34, "{'op': 'argmax', 'in': ['x'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    UNARY("sqrt", "f32 f16 bf16"),
    UNARY("reciprocal", "f32 f16 bf16"),
    UNARY("erf", "f32 f16 bf16"),
    UNARY("log", "f32 f16 bf16"),
    BINARY("pow", "f32 f16 bf16"),
    BINARY("equal", "f32 f16 bf16 i64 i32 i8 bool"),
    BINARY("less", "f32 f16 bf16 i64 i32 i8 bool"),
    BINARY("greater", "f32 f16 bf16 i64 i32 i8 bool"),
    {"where", 1,
     "{'name': 'c', 'dtype': 'bool', 'shape': [4, 8]}, {'name': 'x', 'dtype': 'DT', 'shape': [4, 8]},"
     " {'name': 'y', 'dtype': 'DT', 'shape': [8]}",
     "{'op': 'where', 'in': ['c', 'x', 'y'], 'out': ['w']}", "'w'", "f32 f16 bf16 i64 i32 i8 bool"},
#define CAST2(a, b)                                                                                         \
  {"cast", 1, X34,                                                                                          \
   "{'op': 'cast', 'in': ['x'], 'out': ['a'], 'attrs': {'dtype': '" a "'}},"                               \
   " {'op': 'cast', 'in': ['x'], 'out': ['b'], 'attrs': {'dtype': '" b "'}}",                               \
   "'a', 'b'", "f32 f16 bf16 i64 i32 i8 bool"}
    CAST2("f32", "f16"),
    CAST2("bf16", "i64"),
    CAST2("i32", "i8"),
    CAST2("bool", "f32"),
    {"reduce_max", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 4, 5]}",
     "{'op': 'reduce_max', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': [0, 2], 'keepdim': true}},"
     " {'op': 'reduce_max', 'in': ['x'], 'out': ['z'], 'attrs': {'dim': [-1]}}",
     "'y', 'z'", "f32 f16 bf16"},
    {"reduce_max", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 4]}", "{'op': 'reduce_max', 'in': ['x'], 'out': ['y']}",
     "'y'", "f32 f16 bf16"},
    {"gather_elements", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 8]}, {'name': 'pos', 'dtype': 'i64', 'shape': [3, 4]}",
     "{'op': 'gather_elements', 'in': ['x', 'pos'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    /* the new rows on 2 devices: split operands next to replicated ones */
#define S0 ", 'shard': {'kind': 'split', 'dim': 0, 'count': 2}"
#define R2 ", 'shard': {'kind': 'replicated', 'count': 2}"
    {"where", 2,
     "{'name': 'c', 'dtype': 'bool', 'shape': [4, 8]" S0 "}, {'name': 'x', 'dtype': 'DT', 'shape': [4, 8]" S0 "},"
     " {'name': 'y', 'dtype': 'DT', 'shape': [4, 1]" R2 "}",
     "{'op': 'where', 'in': ['c', 'x', 'y'], 'out': ['w']}", "'w'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"less", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 8]" S0 "}, {'name': 'b', 'dtype': 'DT', 'shape': [4, 8]" R2 "}",
     "{'op': 'less', 'in': ['x', 'b'], 'out': ['y']}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"pow", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 8]" S0 "}, {'name': 'b', 'dtype': 'DT', 'shape': [4, 8]" R2 "}",
     "{'op': 'pow', 'in': ['x', 'b'], 'out': ['y']}", "'y'", "f32 f16 bf16"},
    {"expand", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 1]" S0 "}",
     "{'op': 'expand', 'in': ['x'], 'out': ['y'], 'attrs': {'shape': [3, 4, 5]}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"reduce_max", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]" S0 "}",
     "{'op': 'reduce_max', 'in': ['x'], 'out': ['y'], 'attrs': {'dim': [1]}}", "'y'", "f32 f16 bf16"},
    {"cast", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 6]" S0 "}",
     "{'op': 'cast', 'in': ['x'], 'out': ['y'], 'attrs': {'dtype': 'i32'}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"gather_elements", 2,
     "{'name': 'x', 'dtype': 'DT', 'shape': [3, 8]" R2 "}, {'name': 'pos', 'dtype': 'i64', 'shape': [3, 4]" R2 "}",
     "{'op': 'gather_elements', 'in': ['x', 'pos'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"expand", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 1]}",
     "{'op': 'expand', 'in': ['x'], 'out': ['y'], 'attrs': {'shape': [3, 4, 5]}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    /* conv: groups, strides, asymmetric pads and dilations; 1-D and 2-D */
    {"conv", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 4, 7, 6]}, {'name': 'w', 'dtype': 'DT', 'shape': [6, 2, 3, 2]}",
     "{'op': 'conv', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'group': 2, 'strides': [2, 1], 'pads': [1, 0, 1, 1],"
     " 'dilations': [1, 2]}}", "'y'", "f32 f16 bf16"},
    {"conv", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 9]}, {'name': 'w', 'dtype': 'DT', 'shape': [4, 3, 3]}",
     "{'op': 'conv', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'strides': [2], 'pads': [1, 2]}}", "'y'", "f32 f16 bf16"},
    {"conv", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 3, 5, 5]" S0 "}, {'name': 'w', 'dtype': 'DT', 'shape': [4, 3, 3, 3]" R2 "}",
     "{'op': 'conv', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'pads': [1, 1, 1, 1]}}", "'y'", "f32 f16 bf16"},
    {"conv", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 5, 5]" R2 "}, {'name': 'w', 'dtype': 'DT', 'shape': [4, 3, 3, 3]" S0 "}",
     "{'op': 'conv', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'strides': [2, 2]}}", "'y'", "f32 f16 bf16"},
    {"max_pool", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 7, 7]}",
     "{'op': 'max_pool', 'in': ['x'], 'out': ['y'], 'attrs': {'kernel': [3, 3], 'strides': [2, 2], 'pads': [1, 1, 1, 1]}}",
     "'y'", "f32 f16 bf16"},
    {"max_pool", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [2, 3, 9]}",
     "{'op': 'max_pool', 'in': ['x'], 'out': ['y'], 'attrs': {'kernel': [3], 'strides': [2], 'dilations': [2]}}", "'y'",
     "f32 f16 bf16"},
    {"max_pool", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 3, 6, 6]" S0 "}",
     "{'op': 'max_pool', 'in': ['x'], 'out': ['y'], 'attrs': {'kernel': [2, 2], 'strides': [2, 2]}}", "'y'", "f32 f16 bf16"},
    /* issue 25 (appended: earlier cases keep their random values) */
    UNARY("gelu_tanh", "f32 f16 bf16"),
    {"rms_norm", 1, X34 ", {'name': 'w', 'dtype': 'DT', 'shape': [8]}",
     "{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'eps': 1e-6, 'weight_offset': 1.0}}", "'y'",
     "f32 f16 bf16"},
    /* a sliding window and soft-capped scores, with positions and bottom-right causal */
    {"attention", 1,
     "{'name': 'q', 'dtype': 'DT', 'shape': [2, 2, 3, 4]}, {'name': 'k', 'dtype': 'DT', 'shape': [2, 1, 8, 4]},"
     " {'name': 'v', 'dtype': 'DT', 'shape': [2, 1, 8, 4]}, {'name': 'pos', 'dtype': 'i64', 'shape': [2, 3]}",
     "{'op': 'attention', 'in': ['q', 'k', 'v', 'pos'], 'out': ['y'], 'attrs': {'causal': true, 'window': 2, 'softcap': 0.5}}",
     "'y'", "f32 f16 bf16"},
    {"attention", 1,
     "{'name': 'q', 'dtype': 'DT', 'shape': [1, 2, 3, 4]}, {'name': 'k', 'dtype': 'DT', 'shape': [1, 1, 5, 4]},"
     " {'name': 'v', 'dtype': 'DT', 'shape': [1, 1, 5, 4]}",
     "{'op': 'attention', 'in': ['q', 'k', 'v'], 'out': ['y'], 'attrs': {'causal': true, 'window': 3, 'softcap': 2.0}}",
     "'y'", "f32 f16 bf16"},
    /* issue 26: gather (numpy take) by a matrix, a scalar and, on 2 devices,
     * data split off the gathered dim with a replicated index */
    {"gather", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 8, 2]}, {'name': 'pos', 'dtype': 'i64', 'shape': [2, 2]}",
     "{'op': 'gather', 'in': ['x', 'pos'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
    {"gather", 1, "{'name': 'x', 'dtype': 'DT', 'shape': [3, 8]}, {'name': 'pos', 'dtype': 'i64', 'shape': []}",
     "{'op': 'gather', 'in': ['x', 'pos'], 'out': ['y'], 'attrs': {'dim': -1}}", "'y'", "f32 f16 bf16 i64"},
    {"gather", 2, "{'name': 'x', 'dtype': 'DT', 'shape': [4, 8]" S0 "}, {'name': 'pos', 'dtype': 'i64', 'shape': [3]" R2 "}",
     "{'op': 'gather', 'in': ['x', 'pos'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", "f32 f16 bf16 i64 i32 i8 bool"},
};

/* s with every "DT" replaced by dt, in buf. */
static const char *with_dtype(const char *s, const char *dt, char *buf, size_t n) {
  size_t o = 0;
  for (; *s && o + 8 < n; s++) {
    if (s[0] == 'D' && s[1] == 'T') {
      o += (size_t)snprintf(buf + o, n - o, "%s", dt);
      s++;
    } else {
      buf[o++] = *s;
    }
  }
  buf[o] = 0;
  return buf;
}

/* Random in [-3, 3]; with edges, every third element one of the edge
 * values: +-0, subnormals, +-Inf, NaN, +-1e30, +-dtype max, +-1. */
static double float_value(ppcc_dtype t, bool edges, int64_t i) {
  double max = t == PPCC_F16 ? 65504.0 : t == PPCC_BF16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
  double sub = t == PPCC_F16 ? 3e-6 : 1e-40;
  double list[] = {0.0, -0.0, sub, -sub, INFINITY, -INFINITY, NAN, 1e30, -1e30, max, -max, 1, -1};
  if (edges && i % 3 == 1) return list[(i / 3) % (sizeof list / sizeof list[0])];
  return -3 + 6 * uniform();
}

static int64_t int_value(bool edges, int64_t i) {
  int64_t list[] = {INT64_MAX, INT64_MIN, 0, -1, 1};
  if (edges && i % 3 == 1) return list[(i / 3) % 5];
  return (int64_t)(uniform() * 2001) - 1000;
}

/* Fills every input of g; index inputs in range. Returns malloc'd buffers
 * in bufs (freed by the caller) and the given list. */
static int fill_inputs(const ppcc_graph *g, bool edges, given *gv, void **bufs) {
  int n = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_INPUT) continue;
    int64_t count = ppcc_num_elements(p->rank, p->shape);
    void *buf = calloc((size_t)(count > 0 ? count : 1), 8);
    for (int64_t i = 0; i < count; i++) {
      if (strcmp(p->name, "ids") == 0) ((int64_t *)buf)[i] = (int64_t)(uniform() * 10);
      else if (strcmp(p->name, "pos") == 0) ((int64_t *)buf)[i] = (i * 3 + 1) % 8; /* distinct rows */
      else if (strcmp(p->name, "p") == 0) ((int64_t *)buf)[i] = edges ? 600000 - i : i;
      else if (p->dtype == PPCC_I64) ((int64_t *)buf)[i] = int_value(edges, i);
      else if (p->dtype == PPCC_I32) ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)int_value(edges, i);
      else if (p->dtype == PPCC_I8) ((int8_t *)buf)[i] = (int8_t)(uint8_t)(uint64_t)int_value(edges, i);
      else if (p->dtype == PPCC_BOOL) ((uint8_t *)buf)[i] = (uint8_t)(int_value(edges, i) & 1);
      else if (p->dtype == PPCC_F32) ((float *)buf)[i] = (float)float_value(p->dtype, edges, i);
      else if (p->dtype == PPCC_F16) ((uint16_t *)buf)[i] = ppcc_f32_to_f16((float)float_value(p->dtype, edges, i));
      else ((uint16_t *)buf)[i] = ppcc_f32_to_bf16((float)float_value(p->dtype, edges, i));
    }
    bufs[n] = buf;
    gv[n] = (given){p->name, buf};
    n++;
  }
  return n;
}

/* Runs one case on both backends; returns a description of the first
 * disagreement (static buffer) or NULL. */
static const char *compare_backends(const op_case *k, const char *dt, bool edges, bool must_compile, ppcc_jit **jit) {
  static char why[4096];
  char inputs[1024], ops[1024];
  ppcc_graph *g = t_model(k->devices, "", with_dtype(k->inputs, dt, inputs, sizeof inputs), with_dtype(k->ops, dt, ops, sizeof ops),
                          k->outputs, &diag);
  if (!g && !must_compile) return NULL; /* refused at compile time: by both backends */
  if (!g) {
    snprintf(why, sizeof why, "does not compile: %s", diag.first);
    return why;
  }
  given gv[8];
  void *bufs[8];
  int n = fill_inputs(g, edges, gv, bufs);
  ppcc_host_tensor got[2] = {0}, ref[2] = {0};
  ppcc_status st_ref = run_on(g, INTERP, n, gv, ref);
  char ref_msg[1100];
  snprintf(ref_msg, sizeof ref_msg, "%s", diag.first);
  ppcc_status st_got = PPCC_OK;
  ppcc_diag_init(&diag, "test.json", NULL);
  if (!*jit) st_got = ppcc_jit_compile(g, NULL, jit, NULL, &diag); /* once per graph */
  if (!st_got) st_got = run_compiled(g, JIT, *jit, n, gv, got);
  const char *result = NULL;
  if (st_ref != st_got) {
    snprintf(why, sizeof why, "interp status %d (%s), jit status %d (%s)", st_ref, ref_msg, st_got, diag.first);
    result = why;
  }
  for (int o = 0; !result && !st_ref && o < g->n_outputs; o++) {
    ppcc_compare_result r = ppcc_compare(&got[o], &ref[o]);
    if (r.ok) continue;
    snprintf(why, sizeof why, "output %d: %lld bad, worst element %lld: jit %.9g, interp %.9g", o, (long long)r.n_bad,
             (long long)r.worst, r.worst_got, r.worst_ref);
    result = why;
  }
  free_outputs(g, got);
  free_outputs(g, ref);
  for (int i = 0; i < n; i++) free(bufs[i]);
  ppcc_graph_free(g);
  return result;
}

START_TEST(every_op_agrees_on_both_backends) {
  int n_ops;
  const ppcc_op_info *table = ppcc_op_table(&n_ops);
  int n_cases = (int)(sizeof op_cases / sizeof op_cases[0]), failures = 0;
  for (int i = 0; i < n_ops; i++) { /* a new op needs a case here */
    bool covered = false;
    for (int k = 0; k < n_cases; k++) covered = covered || strcmp(op_cases[k].op, table[i].name) == 0;
    ck_assert_msg(covered, "op '%s' has no differential case", table[i].name);
  }
  for (int k = 0; k < n_cases; k++) {
    char dts[128];
    snprintf(dts, sizeof dts, "f32 f16 bf16 i64 i32 i8 bool");
    for (char *dt = strtok(dts, " "); dt; dt = strtok(NULL, " ")) {
      ppcc_jit *jit = NULL;
      for (int edges = 0; edges < 2; edges++) {
        char padded[80];
        snprintf(padded, sizeof padded, " %s ", op_cases[k].dtypes);
        char word[16];
        snprintf(word, sizeof word, " %s ", dt);
        const char *why = compare_backends(&op_cases[k], dt, edges, strstr(padded, word) != NULL, &jit);
        if (!why) continue;
        fprintf(stderr, "DISAGREE %s %s %s: %s\n", op_cases[k].op, dt, edges ? "edge" : "random", why);
        failures++;
      }
      ppcc_jit_free(jit);
    }
  }
  ck_assert_msg(failures == 0, "%d op/dtype/value-set combinations disagree (see DISAGREE lines)", failures);
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit_backends");
  TCase *tc = t_add_tcase(s, "index_bounds", 300);
  tcase_add_test(tc, index_copy_out_of_range_fails_on_both_backends);
  tcase_add_test(tc, shared_index_kernel_names_the_failing_op);
  tcase_add_test(tc, embedding_out_of_range_fails_on_both_backends);
  tcase_add_test(tc, gather_elements_out_of_range_fails_on_both_backends);
  tcase_add_test(tc, gather_out_of_range_fails_on_both_backends);
  tcase_add_test(tc, tiny_llama_positions_past_the_cache);
  tc = t_add_tcase(s, "agreement", 300);
  tcase_add_test(tc, relu_keeps_nan);
  tcase_add_test(tc, per_row_index_copy_on_both_backends);
  tcase_add_test(tc, bad_rotary_theta_and_norm_eps_refused_at_compile);
  tcase_add_test(tc, rotary_angles_accurate_at_position_500k);
  tcase_add_test(tc, i64_arithmetic_on_both_backends);
  tc = t_add_tcase(s, "numerics", 300);
  tcase_add_test(tc, bf16_softmax_of_4096_zeros_is_1_over_4096);
  tcase_add_test(tc, bf16_long_reductions_accumulate_in_f32);
  tcase_add_test(tc, norms_of_huge_values_on_both_backends);
  tcase_add_test(tc, check_criterion_is_assert_close);
  tc = t_add_tcase(s, "differential", 900);
  tcase_add_test(tc, every_op_agrees_on_both_backends);
  return t_run_suite(s);
}
