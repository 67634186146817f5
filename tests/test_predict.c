/* The time model of the prediction (include/ppcc/predict.h, issue 17):
 * the calibration file's per-op costs and the other fields `ppcc
 * calibrate` measures round-trip through the file, older files without
 * them still read, bad ones are refused naming the field, and each field
 * changes the predicted stage time, wall and bubble by the amount the
 * model says. Hand-made calibrations only: nothing here is timed. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/devices_spec.h"
#include "ppcc/io.h"
#include "ppcc/predict.h"
#include "test_support.h"

/* A calibration with round numbers (exact in the file's %.6g). */
static ppcc_calibration hand_calibration(int cores) {
  ppcc_calibration c;
  ppcc_calibration_defaults(&c);
  c.calibrated = true;
  c.cores = cores;
  c.n_threads = 2;
  for (int t = 0; t < 2; t++) {
    c.gemm_gflops[t] = 50 * (t + 1);
    c.elementwise_gbps[t] = 10;
    c.elementwise_gflops[t] = 1;
    c.copy_gbps[t] = 8;
  }
  c.op_overhead_us = 1;
  c.gemm_call_us = 0.5;
  return c;
}

static char *write_calibration(const ppcc_calibration *c, char **dir) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  *dir = t_make_temp_dir("predict");
  char *path = t_path_join(*dir, "calib.json");
  ck_assert_int_eq(ppcc_calibration_write(path, c, &d), PPCC_OK);
  return path;
}

START_TEST(calibration_round_trips_op_costs) {
  ppcc_calibration c = hand_calibration(2), back;
  ppcc_op_cost rotary = {"rotary", 0.25, 4.5, 0, 0, 0}, linear = {"linear", 0.125, 0.0125, 0.0625, 0.5, 0.5};
  ck_assert(ppcc_calibration_set_op_cost(&c, &rotary));
  ck_assert(ppcc_calibration_set_op_cost(&c, &linear));
  linear.call_us = 0.5; /* setting an op again replaces it */
  ck_assert(ppcc_calibration_set_op_cost(&c, &linear));
  ck_assert_int_eq(c.n_op_costs, 2);
  ppcc_op_cost jit_linear = {"linear", 1.5, 0.25, 0.125, 0.75, 0.75}, linear2 = {"linear", 0.25, 0.00625, 0.0625, 0.5, 0.5};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jit_linear));
  ck_assert(ppcc_calibration_set_op_cost_many(&c, &linear2));
  c.many_threads = 2;
  ck_assert_int_eq(c.n_jit_op_costs, 1);
  ck_assert_int_eq(c.n_op_costs, 2); /* the JIT's table is its own */
  c.have_jit_cut = true;
  c.jit_cut.call_us = 2.5, c.jit_cut.ns_per_byte = 0.375;
  c.hop_us = 12.5;
  c.resume_us = 0.75;
  c.start_us = 1.25, c.jit_start_us = 1.5;
  c.resume_spread_us = 1.75, c.start_spread_us = 0.5, c.jit_resume_us = -0.25, c.jit_resume_spread_us = 2.25;
  c.jit_start_spread_us = 0.375;
  c.have_cut = true;
  c.cut.call_us = 0.5, c.cut.ns_per_byte = 0.125;
  c.n_slowdown = 2;
  c.concurrent_slowdown[0] = 1;
  c.concurrent_slowdown[1] = 1.25;
  char *dir, *path = write_calibration(&c, &dir);
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ck_assert_int_eq(ppcc_calibration_read(path, &back, &d), PPCC_OK);
  ck_assert(back.calibrated);
  ck_assert_int_eq(back.n_op_costs, 2);
  const ppcc_op_cost *r = ppcc_calibration_op_cost(&back, "rotary"), *l = ppcc_calibration_op_cost(&back, "linear");
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_nonnull(l);
  ck_assert_double_eq(r->call_us, 0.25);
  ck_assert_double_eq(r->ns_per_flop, 4.5);
  ck_assert_double_eq(r->ns_per_byte, 0);
  ck_assert_double_eq(l->call_us, 0.5);
  ck_assert_double_eq(l->ns_per_flop, 0.0125);
  ck_assert_double_eq(l->ns_per_byte, 0.0625);
  ck_assert_double_eq(l->ns_per_weight_byte, 0.5);
  ck_assert_int_eq(back.many_threads, 2);
  ck_assert_int_eq(back.n_op_costs_many, 1);
  ck_assert_double_eq(ppcc_calibration_op_cost_many(&back, "linear")->ns_per_flop, 0.00625);
  ck_assert_ptr_null(ppcc_calibration_op_cost_many(&back, "rotary"));
  ck_assert_ptr_null(ppcc_calibration_op_cost(&back, "gelu"));
  ck_assert_int_eq(back.n_jit_op_costs, 1);
  const ppcc_op_cost *jl = ppcc_calibration_jit_op_cost(&back, "linear");
  ck_assert_ptr_nonnull(jl);
  ck_assert_double_eq(jl->call_us, 1.5);
  ck_assert_double_eq(jl->ns_per_flop, 0.25);
  ck_assert_double_eq(jl->ns_per_byte, 0.125);
  ck_assert_double_eq(jl->ns_per_weight_byte, 0.75);
  ck_assert_ptr_null(ppcc_calibration_jit_op_cost(&back, "rotary"));
  ck_assert(back.have_jit_cut);
  ck_assert_double_eq(back.jit_cut.call_us, 2.5);
  ck_assert_double_eq(back.jit_cut.ns_per_byte, 0.375);
  ck_assert_double_eq(back.hop_us, 12.5);
  ck_assert_double_eq(back.resume_us, 0.75);
  ck_assert_double_eq(back.start_us, 1.25);
  ck_assert_double_eq(back.jit_start_us, 1.5);
  ck_assert_double_eq(back.resume_spread_us, 1.75);
  ck_assert_double_eq(back.start_spread_us, 0.5);
  ck_assert_double_eq(back.jit_resume_us, -0.25); /* a residual: may be negative */
  ck_assert_double_eq(back.jit_resume_spread_us, 2.25);
  ck_assert_double_eq(back.jit_start_spread_us, 0.375);
  ck_assert(back.have_cut);
  ck_assert_double_eq(back.cut.call_us, 0.5);
  ck_assert_double_eq(back.cut.ns_per_byte, 0.125);
  ck_assert_int_eq(back.n_slowdown, 2);
  ck_assert_double_eq(back.concurrent_slowdown[1], 1.25);
  ck_assert_int_eq(back.n_threads, 2);
  ck_assert_double_eq(back.gemm_gflops[1], 100);
  t_remove_tree(dir);
  free(path);
  free(dir);
}
END_TEST

static ppcc_status read_text(const char *text, ppcc_calibration *c, ppcc_diag *d, char **msg) {
  char *dir = t_make_temp_dir("predict");
  char *path = t_path_join(dir, "c.json");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  ppcc_diag_init(d, NULL, NULL);
  ppcc_status st = ppcc_calibration_read(path, c, d);
  *msg = strdup(d->first);
  t_remove_tree(dir);
  free(path);
  free(dir);
  return st;
}

#define BASE                                                                                                          \
  "{\"ppcc_calibration\": 1, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE2                                                                                                         \
  "{\"ppcc_calibration\": 2, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE3                                                                                                         \
  "{\"ppcc_calibration\": 3, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE4                                                                                                         \
  "{\"ppcc_calibration\": 4, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE5                                                                                                         \
  "{\"ppcc_calibration\": 5, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE6                                                                                                         \
  "{\"ppcc_calibration\": 6, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

#define BASE7                                                                                                         \
  "{\"ppcc_calibration\": 7, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "                      \
  "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1"

START_TEST(calibration_old_file_and_bad_fields) {
  ppcc_calibration c;
  ppcc_diag d;
  char *msg;
  /* a file of ppcc calibrate before per-op costs: the roofline for every op */
  ck_assert_int_eq(read_text(BASE "}", &c, &d, &msg), PPCC_OK);
  ck_assert_int_eq(c.n_op_costs, 0);
  ck_assert_int_eq(c.n_jit_op_costs, 0);
  ck_assert(!c.have_jit_cut);
  ck_assert_int_eq(c.n_slowdown, 0);
  ck_assert_double_eq(c.hop_us, 0);
  free(msg);
  /* an op cost without ns_per_weight_byte: 0 */
  ck_assert_int_eq(read_text(BASE ", \"op_costs\": {\"silu\": {\"call_us\": 1, \"ns_per_flop\": 2, \"ns_per_byte\": 3}}}",
                             &c, &d, &msg), PPCC_OK);
  ck_assert_double_eq(ppcc_calibration_op_cost(&c, "silu")->ns_per_byte, 3);
  ck_assert_double_eq(ppcc_calibration_op_cost(&c, "silu")->ns_per_weight_byte, 0);
  free(msg);
  static const struct {
    const char *tail, *field;
  } bad[] = {
    {", \"op_costs\": {\"nosuchop\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}", "op_costs.nosuchop"},
    {", \"op_costs\": {\"rotary\": {\"call_us\": -1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}", "op_costs.rotary"},
    {", \"op_costs\": {\"rotary\": {\"call_us\": 1}}}", "op_costs.rotary"},
    {", \"op_costs\": {\"rotary\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0, \"ns_per_weight_byte\": -1}}}",
     "op_costs.rotary"},
    {", \"op_costs\": [1]}", "op_costs"},
    {", \"op_costs_multithreaded\": {\"linear\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "op_costs_threads"}, /* whose threads? */
    {", \"op_costs_threads\": 1, \"op_costs_multithreaded\": {\"linear\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "op_costs_threads"},
    {", \"op_costs_threads\": 2, \"op_costs_multithreaded\": {\"linear\": {\"call_us\": -1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "op_costs_multithreaded.linear"},
    {", \"jit_op_costs\": {\"nosuchop\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "jit_op_costs.nosuchop"},
    {", \"jit_op_costs\": {\"linear\": {\"call_us\": 1}}}", "jit_op_costs.linear"},
    {", \"jit_op_costs\": 3}", "jit_op_costs"},
    {", \"jit_operand_cut\": {\"call_us\": 1}}", "jit_operand_cut"},
    {", \"jit_operand_cut\": {\"call_us\": 1, \"ns_per_byte\": -2}}", "jit_operand_cut"},
    {", \"hop_us\": \"x\"}", "hop_us"},
    {", \"resume_us\": -2}", "resume_us"},
    {", \"concurrent_slowdown\": [1, 2]}", "concurrent_slowdown"}, /* another length than gemm_gflops */
    {", \"concurrent_slowdown\": [0]}", "concurrent_slowdown"},
    /* ppcc's own format: a repeated key is refused naming it (cJSON kept the first) */
    {", \"hop_us\": 1, \"hop_us\": 2}", "key 'hop_us' appears twice"},
    {", \"op_costs\": {\"silu\": {\"call_us\": 1, \"call_us\": 2, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "key 'call_us' appears twice"},
    {", \"op_costs\": {\"si\\u0000lu\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "escaped NUL"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s", BASE, bad[i].tail);
    ck_assert_int_eq(read_text(text, &c, &d, &msg), PPCC_ERR_USER);
    ck_assert_msg(strstr(msg, bad[i].field), "%s: message '%s' does not name '%s'", bad[i].tail, msg, bad[i].field);
    ck_assert(!c.calibrated); /* a refused file leaves the defaults */
    free(msg);
  }
}
END_TEST

/* One matmul [4, 32] x [32, 8] on device 0: 2048 FLOPs, 64 per result
 * element (a contraction for the roofline). */
static ppcc_graph *one_matmul(void) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(1, "{'name': 'w', 'dtype': 'f32', 'shape': [32, 8], 'devices': [0]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [4, 32], 'devices': [0]}",
                          "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &d);
  ck_assert_ptr_nonnull(g);
  return g;
}

static ppcc_prediction predict(const ppcc_graph *g, const ppcc_calibration *c, int m, int threads, bool jit) {
  ppcc_predict_options o = {.microbatches = m, .calib = c, .threads = threads, .jit = jit};
  ppcc_prediction p;
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ck_assert_int_eq(ppcc_predict(g, &o, &p, &d), PPCC_OK);
  return p;
}

START_TEST(op_cost_changes_prediction) {
  ppcc_graph *g = one_matmul();
  double flops, bytes, weights;
  ppcc_predict_op_work(g, &g->ops[0], &flops, &bytes, &weights);
  ck_assert_double_eq(flops, 2.0 * 4 * 8 * 32);
  ck_assert_double_eq(bytes, (4 * 32 + 4 * 8) * 4.0); /* x and y */
  ck_assert_double_eq(weights, 32 * 8 * 4.0);         /* w, a param */
  ppcc_calibration c = hand_calibration(1);
  ppcc_prediction roof = predict(g, &c, 1, 1, false);
  /* the roofline: overhead + GEMM call + max(FLOPs / rate, bytes / bandwidth) */
  double expect_roof = (1 + 0.5) * 1e-3 + fmax(flops / 50e9, (bytes + weights) / 10e9) * 1e3;
  ck_assert_double_eq_tol(roof.stages[0].time_ms, expect_roof, 1e-12);
  ppcc_op_cost k = {"matmul", 1000, 2, 0.5, 0.25, 0.25};
  ck_assert(ppcc_calibration_set_op_cost(&c, &k));
  ppcc_prediction costed = predict(g, &c, 1, 1, false);
  double expect = (1000 + flops * 2e-3 + bytes * 0.5e-3 + weights * 0.25e-3) * 1e-3;
  ck_assert_double_eq_tol(costed.stages[0].time_ms, expect, 1e-12);
  ck_assert_double_eq_tol(costed.devices[0].compute_ms, expect, 1e-12);
  ck_assert_double_eq_tol(costed.wall_ms, expect, 1e-12);
  /* an op after its device waited (here: the program's first) pays resume_us */
  c.resume_us = 250;
  ppcc_prediction resumed = predict(g, &c, 1, 1, false);
  ck_assert_double_eq_tol(resumed.stages[0].time_ms, expect + 0.25, 1e-12);
  /* the JIT's compiled kernels are not the interpreter's: the roofline */
  ppcc_prediction jit = predict(g, &c, 1, 1, true);
  ck_assert_double_eq_tol(jit.stages[0].time_ms, expect_roof, 1e-12);
  /* ... until the file has the JIT's own costs: then those, without
   * resume_us; the interpreter's prediction ignores them */
  ppcc_op_cost jk = {"matmul", 3000, 0.5, 0.25, 2, 2};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  ppcc_prediction jit_costed = predict(g, &c, 1, 1, true);
  double expect_jit = (3000 + flops * 0.5e-3 + bytes * 0.25e-3 + weights * 2e-3) * 1e-3;
  ck_assert_double_eq_tol(jit_costed.stages[0].time_ms, expect_jit, 1e-12);
  ck_assert_double_eq_tol(jit_costed.wall_ms, expect_jit, 1e-12);
  ppcc_prediction interp = predict(g, &c, 1, 1, false);
  ck_assert_double_eq_tol(interp.stages[0].time_ms, expect + 0.25, 1e-12);
  /* an op kind the JIT table lacks (here: all of them) keeps the roofline */
  c.n_jit_op_costs = 0;
  ppcc_op_cost other = {"gelu", 3000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &other));
  ppcc_prediction jit_other = predict(g, &c, 1, 1, true);
  ck_assert_double_eq_tol(jit_other.stages[0].time_ms, expect_roof, 1e-12);
  ppcc_prediction_free(&jit_costed);
  ppcc_prediction_free(&interp);
  ppcc_prediction_free(&jit_other);
  ppcc_prediction_free(&roof);
  ppcc_prediction_free(&costed);
  ppcc_prediction_free(&resumed);
  ppcc_prediction_free(&jit);
  ppcc_graph_free(g);
}
END_TEST

/* One contraction of op kind `op` on device 0: x times w. */
static ppcc_graph *one_gemm(const char *op, const char *x_shape, const char *w_shape) {
  char params[160], inputs[160], ops[160];
  snprintf(params, sizeof params, "{'name': 'w', 'dtype': 'f32', 'shape': %s, 'devices': [0]}", w_shape);
  snprintf(inputs, sizeof inputs, "{'name': 'x', 'dtype': 'f32', 'shape': %s, 'devices': [0]}", x_shape);
  snprintf(ops, sizeof ops, "{'op': '%s', 'in': ['x', 'w'], 'out': ['y']}", op);
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(1, params, inputs, ops, "'y'", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  return g;
}

/* A GEMM of one row or of a few (the runtime's GEMV and small-GEMM
 * kernels) takes its kernel's cost (OP.rows1, OP.rows16) when the file
 * has it, else the op's; each backend's table alike. */
START_TEST(gemm_kernels_have_their_own_costs) {
  static const struct {
    const char *op, *x, *w, *key;
  } cases[] = {
    {"matmul", "[1, 32]", "[32, 8]", "matmul.rows1"},
    {"matmul", "[4, 32]", "[32, 8]", "matmul.rows16"},
    {"matmul", "[16, 32]", "[32, 8]", "matmul.rows16"},
    {"matmul", "[17, 32]", "[32, 8]", "matmul"},
    {"linear", "[2, 8, 32]", "[8, 32]", "linear.rows16"},  /* x's leading dims are rows */
    {"linear", "[4, 8, 32]", "[8, 32]", "linear"},
    {"matmul", "[64, 4, 32]", "[64, 32, 8]", "matmul.rows16"}, /* batched: 4 rows per GEMM */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ppcc_graph *g = one_gemm(cases[i].op, cases[i].x, cases[i].w);
    char key[48];
    ppcc_op_cost_key(g, &g->ops[0], key, sizeof key);
    ck_assert_str_eq(key, cases[i].key);
    double f, b, w;
    ppcc_predict_op_work(g, &g->ops[0], &f, &b, &w);
    ppcc_calibration c = hand_calibration(1);
    ppcc_op_cost op = {"", 1000, 2, 0.5, 0.25, 0.25}, kernel = {"", 3000, 4, 1, 0.5, 0.5};
    snprintf(op.name, sizeof op.name, "%s", cases[i].op);
    snprintf(kernel.name, sizeof kernel.name, "%s", cases[i].key);
    ck_assert(ppcc_calibration_set_op_cost(&c, &op));
    ck_assert(ppcc_calibration_set_jit_op_cost(&c, &op));
    double op_ms = (1000 + f * 2e-3 + b * 0.5e-3 + w * 0.25e-3) * 1e-3;
    double kernel_ms = (3000 + f * 4e-3 + b * 1e-3 + w * 0.5e-3) * 1e-3;
    for (int jit = 0; jit < 2; jit++) {
      ppcc_prediction only_op = predict(g, &c, 1, 1, jit);
      ck_assert_double_eq_tol(only_op.stages[0].time_ms, op_ms, 1e-12);
      ppcc_prediction_free(&only_op);
    }
    ck_assert(ppcc_calibration_set_op_cost(&c, &kernel));
    ppcc_prediction interp = predict(g, &c, 1, 1, false), jit = predict(g, &c, 1, 1, true);
    /* the kernel's own entry (or, a plain key, the op's entry replaced) */
    ck_assert_double_eq_tol(interp.stages[0].time_ms, kernel_ms, 1e-12);
    ck_assert_double_eq_tol(jit.stages[0].time_ms, op_ms, 1e-12); /* the JIT's table has no kernel entry */
    ck_assert(ppcc_calibration_set_jit_op_cost(&c, &kernel));
    ppcc_prediction jit_kernel = predict(g, &c, 1, 1, true);
    ck_assert_double_eq_tol(jit_kernel.stages[0].time_ms, kernel_ms, 1e-12);
    ppcc_prediction_free(&interp);
    ppcc_prediction_free(&jit);
    ppcc_prediction_free(&jit_kernel);
    ppcc_graph_free(g);
  }
}
END_TEST

/* Format 4 writes and reads the wake of parked kernel threads; format 3
 * the kernels' keys, the cache and the cost of
 * weight bytes beyond it; a format 2 file reads (its weight bytes all
 * cost ns_per_weight_byte) but has no cold costs or cache; a format 1
 * file reads (its costs cover every row count) but has no kernel keys;
 * other formats are refused. */
START_TEST(calibration_format_versions) {
  ppcc_calibration c = hand_calibration(2), back;
  c.cache_bytes = 2097152;
  c.pool_wake_us = 12.5;
  c.jit_threads_factor = 1.25;
  c.n_jit_threads_factors = 1;
  c.jit_threads_factors[0] = (ppcc_key_factor){"linear.rows1", 1.75};
  c.n_jit_slowdown = 2;
  c.jit_concurrent_slowdown[0] = 1, c.jit_concurrent_slowdown[1] = 1.5;
  ppcc_op_cost small = {"linear.rows16", 0.5, 0.25, 0.125, 0.0625, 0.375}, gemv = {"matmul.rows1", 1.5, 0.5, 0.25, 0, 0.75};
  ck_assert(ppcc_calibration_set_op_cost(&c, &small));
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &gemv));
  ck_assert(ppcc_calibration_set_op_cost_many(&c, &small));
  c.many_threads = 2;
  char *dir, *path = write_calibration(&c, &dir);
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ck_assert_int_eq(ppcc_calibration_read(path, &back, &d), PPCC_OK);
  ck_assert_int_eq(back.version, PPCC_CALIBRATION_VERSION);
  ck_assert_int_eq(PPCC_CALIBRATION_VERSION, 7);
  ck_assert_double_eq(back.pool_wake_us, 12.5);
  ck_assert_double_eq(back.cache_bytes, 2097152);
  ck_assert_double_eq(back.jit_threads_factor, 1.25);
  ck_assert_int_eq(back.n_jit_threads_factors, 1);
  ck_assert_str_eq(back.jit_threads_factors[0].name, "linear.rows1");
  ck_assert_double_eq(back.jit_threads_factors[0].factor, 1.75);
  ck_assert_int_eq(back.n_jit_slowdown, 2);
  ck_assert_double_eq(back.jit_concurrent_slowdown[1], 1.5);
  ck_assert_double_eq(ppcc_calibration_op_cost(&back, "linear.rows16")->ns_per_weight_byte, 0.0625);
  ck_assert_double_eq(ppcc_calibration_op_cost(&back, "linear.rows16")->ns_per_cold_weight_byte, 0.375);
  ck_assert_double_eq(ppcc_calibration_op_cost_many(&back, "linear.rows16")->ns_per_cold_weight_byte, 0.375);
  ck_assert_double_eq(ppcc_calibration_jit_op_cost(&back, "matmul.rows1")->ns_per_cold_weight_byte, 0.75);
  ck_assert_double_eq(ppcc_calibration_op_cost_many(&back, "linear.rows16")->call_us, 0.5);
  ck_assert_double_eq(ppcc_calibration_jit_op_cost(&back, "matmul.rows1")->call_us, 1.5);
  ck_assert_ptr_null(ppcc_calibration_op_cost(&back, "linear"));
  t_remove_tree(dir);
  free(path);
  free(dir);
  char *msg;
  ck_assert_int_eq(read_text(BASE ", \"op_costs\": {\"silu\": {\"call_us\": 1, \"ns_per_flop\": 2, \"ns_per_byte\": 3}}}", &c, &d, &msg),
                   PPCC_OK);
  ck_assert_int_eq(c.version, 1);
  free(msg);
  static const struct {
    const char *text, *field;
  } bad[] = {
    {BASE ", \"op_costs\": {\"linear.rows16\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "op_costs.linear.rows16"}, /* format 1 has no kernel keys */
    {BASE2 ", \"op_costs\": {\"linear.rows8\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "op_costs.linear.rows8"},
    {BASE2 ", \"jit_op_costs\": {\"nosuchop.rows1\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0}}}",
     "jit_op_costs.nosuchop.rows1"},
    {"{\"ppcc_calibration\": 8}", "ppcc_calibration"},
    {BASE3 ", \"pool_wake_us\": 20}", "pool_wake_us"}, /* format 3 has no wake of parked threads */
    {BASE2 ", \"op_costs\": {\"linear\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0, \"ns_per_cold_weight_byte\": 1}}}",
     "op_costs.linear"}, /* format 2 has no cold costs */
    {BASE2 ", \"cache_bytes\": 1048576}", "cache_bytes"}, /* nor a cache */
    {BASE2 ", \"jit_threads_factor\": 1.5}", "jit_threads_factor"}, /* nor the JIT's scaling */
    {BASE2 ", \"jit_concurrent_slowdown\": [1]}", "jit_concurrent_slowdown"},
    {BASE2 ", \"jit_threads_factors\": {\"linear\": 1}}", "jit_threads_factors"},
    {BASE3 ", \"jit_threads_factors\": {\"linear.rows8\": 1}}", "jit_threads_factors.linear.rows8"},
    {BASE3 ", \"resume_spread_us\": 1}", "resume_spread_us"}, /* format 3 has no costs per placement */
    {BASE3 ", \"jit_resume_us\": 1}", "jit_resume_us"},
    {BASE3 ", \"resume_us\": -1}", "resume_us"}, /* nor negative residuals */
    {BASE4 ", \"start_spread_us\": -1}", "start_spread_us"}, /* a start is a cost */
    {BASE4 ", \"jit_resume_spread_us\": 1e7}", "jit_resume_spread_us"},
    {BASE4 ", \"start_own_core_us\": 1}", "start_own_core_us"}, /* format 4 has no own-core start */
    {BASE5 ", \"start_wide_us\": 1}", "start_wide_us"}, /* format 5 has no costs at four threads a core */
    {BASE5 ", \"jit_resume_wide_us\": -1}", "jit_resume_wide_us"},
    {BASE6 ", \"start_wide_us\": -1}", "start_wide_us"}, /* before format 7 the interpreter's starts are costs */
    {BASE7 ", \"jit_start_spread_us\": -1}", "jit_start_spread_us"}, /* the JIT's still are */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(read_text(bad[i].text, &c, &d, &msg), PPCC_ERR_USER);
    ck_assert_msg(strstr(msg, bad[i].field), "%s: message '%s' does not name '%s'", bad[i].text, msg, bad[i].field);
    free(msg);
  }
  ck_assert_int_eq(read_text(BASE2 ", \"op_costs\": {\"linear.rows1\": {\"call_us\": 1, \"ns_per_flop\": 0, \"ns_per_byte\": 0, "
                                   "\"ns_per_weight_byte\": 0.5}}}",
                             &c, &d, &msg), PPCC_OK);
  ck_assert_double_eq(ppcc_calibration_op_cost(&c, "linear.rows1")->call_us, 1);
  ck_assert_double_eq(ppcc_calibration_op_cost(&c, "linear.rows1")->ns_per_cold_weight_byte, 0.5);
  ck_assert_double_eq(c.cache_bytes, 0);
  free(msg);
  ck_assert_int_eq(read_text(BASE4 ", \"resume_us\": -0.5, \"jit_resume_spread_us\": 3}", &c, &d, &msg), PPCC_OK);
  ck_assert_double_eq(c.resume_us, -0.5);
  ck_assert_double_eq(c.jit_resume_spread_us, 3);
  free(msg);
  ck_assert_int_eq(read_text(BASE7 ", \"start_spread_us\": -0.75, \"start_own_core_us\": -0.5, \"start_wide_us\": -0.25}", &c,
                             &d, &msg),
                   PPCC_OK);
  ck_assert_double_eq(c.start_spread_us, -0.75);
  ck_assert_double_eq(c.start_own_core_us, -0.5);
  ck_assert_double_eq(c.start_wide_us, -0.25);
  free(msg);
}
END_TEST

/* The file's optional scalar fields, each alone: written only when set
 * (a cost above 0, a residual of either sign), read back to the same
 * value, and written again byte for byte; a file of a format before the
 * field's is refused naming the field and the format. */
START_TEST(calibration_optional_fields_round_trip) {
  static const struct {
    const char *key;
    size_t at;
    int since;
    bool residual; /* may be negative (from format 4 on; the interpreter's spread starts from 7) */
    double value;  /* exact in %.6g (cache_bytes: %.17g) */
  } fields[] = {
    {"hop_us", offsetof(ppcc_calibration, hop_us), 1, false, 12.5},
    {"resume_us", offsetof(ppcc_calibration, resume_us), 1, true, -0.75}, /* before format 4 a cost */
    {"start_us", offsetof(ppcc_calibration, start_us), 1, false, 1.25},
    {"jit_start_us", offsetof(ppcc_calibration, jit_start_us), 1, false, 1.5},
    {"resume_spread_us", offsetof(ppcc_calibration, resume_spread_us), 4, true, -1.75},
    {"start_spread_us", offsetof(ppcc_calibration, start_spread_us), 4, true, 0.5},
    {"jit_resume_us", offsetof(ppcc_calibration, jit_resume_us), 4, true, -0.25},
    {"jit_resume_spread_us", offsetof(ppcc_calibration, jit_resume_spread_us), 4, true, 2.25},
    {"jit_start_spread_us", offsetof(ppcc_calibration, jit_start_spread_us), 4, false, 0.375},
    {"pool_wake_us", offsetof(ppcc_calibration, pool_wake_us), 4, false, 3.125},
    {"start_own_core_us", offsetof(ppcc_calibration, start_own_core_us), 5, true, 0.625},
    {"jit_start_own_core_us", offsetof(ppcc_calibration, jit_start_own_core_us), 5, false, 0.875},
    {"resume_wide_us", offsetof(ppcc_calibration, resume_wide_us), 6, true, -0.5},
    {"start_wide_us", offsetof(ppcc_calibration, start_wide_us), 6, true, 1.125},
    {"jit_resume_wide_us", offsetof(ppcc_calibration, jit_resume_wide_us), 6, true, 0.3125},
    {"jit_start_wide_us", offsetof(ppcc_calibration, jit_start_wide_us), 6, false, 2.5},
    {"cache_bytes", offsetof(ppcc_calibration, cache_bytes), 3, false, 2097152.5},
    {"jit_threads_factor", offsetof(ppcc_calibration, jit_threads_factor), 3, false, 1.75},
  };
  ppcc_diag d;
  char *msg, key[64];
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    ppcc_calibration c = hand_calibration(2), back;
    *(double *)((char *)&c + fields[i].at) = fields[i].value;
    char *dir, *path = write_calibration(&c, &dir), *text = t_read_text(path);
    snprintf(key, sizeof key, "\"%s\":", fields[i].key);
    ck_assert_msg(strstr(text, key) && !strstr(strstr(text, key) + 1, key), "%s not written once", fields[i].key);
    ppcc_diag_init(&d, NULL, NULL);
    ck_assert_int_eq(ppcc_calibration_read(path, &back, &d), PPCC_OK);
    ck_assert_double_eq(*(double *)((char *)&back + fields[i].at), fields[i].value);
    for (size_t j = 0; j < sizeof fields / sizeof *fields; j++) /* the others stay unset */
      if (j != i) ck_assert_double_eq(*(double *)((char *)&back + fields[j].at), 0);
    char *again = t_path_join(dir, "again.json"), *again_text;
    ppcc_outfile f;
    ck_assert_int_eq(ppcc_outfile_open(&f, again, &d), PPCC_OK);
    ck_assert_int_eq(ppcc_calibration_write_to(&f, &back, &d), PPCC_OK);
    again_text = t_read_text(again);
    ck_assert_str_eq(again_text, text);
    /* unset (0), it is not written at all */
    *(double *)((char *)&c + fields[i].at) = 0;
    ck_assert_int_eq(ppcc_calibration_write(path, &c, &d), PPCC_OK);
    free(text);
    text = t_read_text(path);
    ck_assert_ptr_null(strstr(text, key));
    /* a cost below 0 is not measured either (the reader refuses it) */
    *(double *)((char *)&c + fields[i].at) = -1;
    ck_assert_int_eq(ppcc_calibration_write(path, &c, &d), PPCC_OK);
    ppcc_diag_init(&d, NULL, NULL);
    ck_assert_int_eq(ppcc_calibration_read(path, &back, &d), PPCC_OK);
    ck_assert_double_eq(*(double *)((char *)&back + fields[i].at), (fields[i].residual ? -1 : 0));
    free(text);
    free(again_text);
    free(again);
    t_remove_tree(dir);
    free(path);
    free(dir);
    /* from its format on the file may have it, not before */
    for (int v = 1; v <= PPCC_CALIBRATION_VERSION; v++) {
      char in[512];
      snprintf(in, sizeof in,
               "{\"ppcc_calibration\": %d, \"cores\": 2, \"gemm_gflops\": [50], \"elementwise_gbps\": [10], "
               "\"elementwise_gflops\": [1], \"copy_gbps\": [10], \"op_overhead_us\": 1, \"gemm_call_us\": 1, \"%s\": 1}",
               v, fields[i].key);
      ck_assert_int_eq(read_text(in, &c, &d, &msg), v >= fields[i].since ? PPCC_OK : PPCC_ERR_USER);
      if (v < fields[i].since) {
        char expect[96];
        snprintf(expect, sizeof expect, "'%s' is not in formats before %d", fields[i].key, fields[i].since);
        ck_assert_msg(strstr(msg, expect), "format %d, %s: message '%s'", v, fields[i].key, msg);
      } else {
        ck_assert_double_eq(*(double *)((char *)&c + fields[i].at), 1);
      }
      free(msg);
    }
  }
  /* the labels and the JIT's slowdowns the same way */
  ppcc_calibration c = hand_calibration(2), back;
  snprintf(c.cpu, sizeof c.cpu, "Some \"CPU\" @ 3 GHz");
  snprintf(c.ppcc_version, sizeof c.ppcc_version, "0.27");
  c.n_jit_slowdown = 2;
  c.jit_concurrent_slowdown[0] = 1, c.jit_concurrent_slowdown[1] = 1.5;
  char *dir, *path = write_calibration(&c, &dir), *text = t_read_text(path);
  ppcc_diag_init(&d, NULL, NULL);
  ck_assert_int_eq(ppcc_calibration_read(path, &back, &d), PPCC_OK);
  ck_assert_str_eq(back.cpu, c.cpu);
  ck_assert_str_eq(back.ppcc_version, "0.27");
  ck_assert_int_eq(back.n_jit_slowdown, 2);
  ck_assert_double_eq(back.jit_concurrent_slowdown[1], 1.5);
  ck_assert_int_eq(back.n_slowdown, 0);
  ck_assert_int_eq(ppcc_calibration_write(path, &back, &d), PPCC_OK);
  char *again = t_read_text(path);
  ck_assert_str_eq(again, text);
  free(again);
  free(text);
  t_remove_tree(dir);
  free(path);
  free(dir);
  ck_assert_int_eq(read_text(BASE2 ", \"jit_concurrent_slowdown\": [1]}", &c, &d, &msg), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(msg, "'jit_concurrent_slowdown' is not in formats before 3"));
  free(msg);
  ck_assert_int_eq(read_text(BASE ", \"cpu\": 3}", &c, &d, &msg), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(msg, "'cpu' is not a string of at most 127 bytes"));
  free(msg);
}
END_TEST

/* Weight bytes beyond the caches: the graph's params (1 KiB) against the
 * cache of the cores the run uses (cache_bytes x min(cores, devices x
 * kernel threads)); the share beyond costs ns_per_cold_weight_byte. */
START_TEST(cold_weights_cost_their_own) {
  ck_assert_double_eq(ppcc_predict_cold_share(1000, 0), 0);
  ck_assert_double_eq(ppcc_predict_cold_share(1000, 1000), 0);
  ck_assert_double_eq(ppcc_predict_cold_share(1000, 250), 0.75);
  ppcc_graph *g = one_matmul();
  ck_assert_double_eq(ppcc_predict_param_bytes(g), 32 * 8 * 4);
  double flops, bytes, weights;
  ppcc_predict_op_work(g, &g->ops[0], &flops, &bytes, &weights);
  ppcc_calibration c = hand_calibration(2);
  ppcc_op_cost k = {"matmul", 1000, 2, 0.5, 0.25, 4};
  ck_assert(ppcc_calibration_set_op_cost(&c, &k));
  double hot = (1000 + flops * 2e-3 + bytes * 0.5e-3 + weights * 0.25e-3) * 1e-3;
  ppcc_prediction all_hot = predict(g, &c, 1, 1, false);
  ck_assert_double_eq_tol(all_hot.stages[0].time_ms, hot, 1e-12); /* no cache known: none cold */
  c.cache_bytes = 256; /* one core: a quarter of the 1 KiB cached */
  ppcc_prediction quarter = predict(g, &c, 1, 1, false);
  double cold = (1000 + flops * 2e-3 + bytes * 0.5e-3 + weights * (0.25 * 0.25e-3 + 0.75 * 4e-3)) * 1e-3;
  ck_assert_double_eq_tol(quarter.stages[0].time_ms, cold, 1e-12);
  ck_assert_double_eq_tol(ppcc_op_cost_us(&k, flops, bytes, weights, 0.75) * 1e-3, cold, 1e-12);
  c.cache_bytes = 512; /* two cores' caches with 2 kernel threads: all of it (the FLOPs at the 2-thread sgemm rate) */
  ppcc_prediction two = predict(g, &c, 1, 2, false);
  ck_assert_double_eq_tol(two.stages[0].time_ms, hot - flops * 1e-3 * 1e-3, 1e-12);
  ppcc_prediction *all[] = {&all_hot, &quarter, &two};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ppcc_prediction_free(all[i]);
  ppcc_graph_free(g);
}
END_TEST

/* The JIT's own figures: its collectives cost busy time on each result
 * device (call_us + ns_per_byte * (operand + result shard bytes)), and
 * with more kernel threads it takes jit_threads_factor times what the
 * interpreter's scaling gives it (linear in the threads from 1). */
START_TEST(jit_moves_and_threads_factor) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *tp = t_model(2, "{'name': 'w', 'dtype': 'f32', 'shape': [32, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [0, 1]}",
                           "{'name': 'x', 'dtype': 'f32', 'shape': [4, 32], 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [0, 1]}",
                           "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, {'op': 'all_reduce', 'in': ['p'], 'out': ['y']}", "'y'", &d);
  ck_assert_ptr_nonnull(tp);
  ppcc_calibration c = hand_calibration(4);
  ppcc_op_cost jk = {"matmul", 3000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  ppcc_prediction plain = predict(tp, &c, 1, 2, true);
  ppcc_op_cost move = {"all_reduce", 2000, 0, 500, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &move));
  ck_assert_double_eq(ppcc_predict_move_bytes(tp, &tp->ops[tp->n_ops - 1]), 4 * 8 * 4 * 2);
  ppcc_prediction moved = predict(tp, &c, 1, 2, true), interp = predict(tp, &c, 1, 2, false);
  ck_assert_double_eq_tol(moved.stages[0].time_ms, plain.stages[0].time_ms + (2000 + 500 * 256e-3) * 1e-3, 1e-12);
  ppcc_prediction interp_plain = predict(tp, &c, 1, 2, false);
  ck_assert_double_eq_tol(interp.stages[0].time_ms, interp_plain.stages[0].time_ms, 1e-15); /* the interpreter: not busy */
  ppcc_graph *g = one_matmul();
  ppcc_calibration one = hand_calibration(2);
  ck_assert(ppcc_calibration_set_jit_op_cost(&one, &jk));
  ppcc_prediction t1 = predict(g, &one, 1, 1, true), t2 = predict(g, &one, 1, 2, true);
  one.jit_threads_factor = 1.5;
  ppcc_prediction f1 = predict(g, &one, 1, 1, true), f2 = predict(g, &one, 1, 2, true), i2 = predict(g, &one, 1, 2, false);
  ck_assert_double_eq_tol(f1.stages[0].time_ms, t1.stages[0].time_ms, 1e-15);
  ck_assert_double_eq_tol(f2.stages[0].time_ms, t2.stages[0].time_ms * 1.5, 1e-12);
  /* its cost key's own factor first (matmul.rows16: 4 rows), then its name's */
  one.n_jit_threads_factors = 2;
  one.jit_threads_factors[0] = (ppcc_key_factor){"matmul", 3};
  one.jit_threads_factors[1] = (ppcc_key_factor){"matmul.rows16", 2};
  ppcc_prediction k2 = predict(g, &one, 1, 2, true);
  ck_assert_double_eq_tol(k2.stages[0].time_ms, t2.stages[0].time_ms * 2, 1e-12);
  one.n_jit_threads_factors = 1;
  ppcc_prediction n2 = predict(g, &one, 1, 2, true);
  ck_assert_double_eq_tol(n2.stages[0].time_ms, t2.stages[0].time_ms * 3, 1e-12);
  one.n_jit_threads_factors = 0;
  ppcc_prediction_free(&k2);
  ppcc_prediction_free(&n2);
  one.jit_threads_factor = 0;
  ppcc_prediction i2_plain = predict(g, &one, 1, 2, false);
  ck_assert_double_eq_tol(i2.stages[0].time_ms, i2_plain.stages[0].time_ms, 1e-15);
  ppcc_prediction *all[] = {&plain, &moved, &interp, &interp_plain, &t1, &t2, &f1, &f2, &i2, &i2_plain};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ppcc_prediction_free(all[i]);
  ppcc_graph_free(g);
  ppcc_graph_free(tp);
}
END_TEST

/* A row-parallel matmul on 2 devices: x replicated, w split on its rows,
 * so each device's kernel (JIT) first cuts x to its columns. */
/* Costs measured with the calibration's most kernel threads replace the
 * sgemm-rate rule: with t threads the op takes the time linear in t
 * between the two fits, no less beyond; the JIT's own cost scales by the
 * interpreter's ratio for the op's work. */
START_TEST(multithreaded_costs_change_prediction) {
  ppcc_graph *g = one_matmul();
  double flops, bytes, weights;
  ppcc_predict_op_work(g, &g->ops[0], &flops, &bytes, &weights);
  ppcc_calibration c = hand_calibration(4);
  c.n_threads = 3;
  c.gemm_gflops[2] = 150;
  ppcc_op_cost k = {"matmul", 1000, 2, 0.5, 0.25, 0.25};
  ck_assert(ppcc_calibration_set_op_cost(&c, &k));
  double one = (1000 + flops * 2e-3 + bytes * 0.5e-3 + weights * 0.25e-3) * 1e-3;
  /* none: the FLOPs speed up as the sgemm rate (50 -> 100 GFLOP/s) */
  ppcc_prediction rule = predict(g, &c, 1, 2, false);
  ck_assert_double_eq_tol(rule.stages[0].time_ms, one - flops * 2e-3 * 1e-3 / 2, 1e-12);
  ppcc_op_cost k3 = {"matmul", 400, 1, 0.5, 0.25, 0.25}; /* with 3 threads */
  ck_assert(ppcc_calibration_set_op_cost_many(&c, &k3));
  c.many_threads = 3;
  double three = (400 + flops * 1e-3 + bytes * 0.5e-3 + weights * 0.25e-3) * 1e-3;
  ppcc_prediction at1 = predict(g, &c, 1, 1, false), at2 = predict(g, &c, 1, 2, false), at3 = predict(g, &c, 1, 3, false),
                  at4 = predict(g, &c, 1, 4, false);
  ck_assert_double_eq_tol(at1.stages[0].time_ms, one, 1e-12);
  ck_assert_double_eq_tol(at2.stages[0].time_ms, (one + three) / 2, 1e-12);
  ck_assert_double_eq_tol(at3.stages[0].time_ms, three, 1e-12);
  ck_assert_double_eq_tol(at4.stages[0].time_ms, three, 1e-12);
  /* the JIT's cost, scaled as the interpreter's */
  ppcc_op_cost jk = {"matmul", 3000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  ppcc_prediction jit1 = predict(g, &c, 1, 1, true), jit3 = predict(g, &c, 1, 3, true);
  ck_assert_double_eq_tol(jit1.stages[0].time_ms, 3.0, 1e-12);
  ck_assert_double_eq_tol(jit3.stages[0].time_ms, 3.0 * three / one, 1e-12);
  ppcc_prediction *all[] = {&rule, &at1, &at2, &at3, &at4, &jit1, &jit3};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ppcc_prediction_free(all[i]);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(jit_cut_of_replicated_operand) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(2, "{'name': 'w', 'dtype': 'f32', 'shape': [32, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [0, 1]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [4, 32], 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [0, 1]}",
                          "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, {'op': 'all_reduce', 'in': ['p'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_calibration c = hand_calibration(2);
  ppcc_op_cost k = {"matmul", 3, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &k));
  ppcc_prediction plain = predict(g, &c, 1, 2, true);
  /* the cut: x's 512 bytes read, its 256-byte half written */
  c.have_jit_cut = true;
  c.jit_cut.call_us = 5, c.jit_cut.ns_per_byte = 1;
  ppcc_prediction cut = predict(g, &c, 1, 2, true);
  ck_assert_double_eq_tol(cut.stages[0].time_ms - plain.stages[0].time_ms, (5 + 768 * 1e-3) * 1e-3, 1e-12);
  /* without jit_operand_cut: the JIT's slice cost */
  c.have_jit_cut = false;
  ppcc_op_cost slice = {"slice", 7, 0, 2, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &slice));
  ppcc_prediction sliced = predict(g, &c, 1, 2, true);
  ck_assert_double_eq_tol(sliced.stages[0].time_ms - plain.stages[0].time_ms, (7 + 768 * 2e-3) * 1e-3, 1e-12);
  /* the interpreter cuts nothing inside its kernel: no such cost */
  c.have_jit_cut = true;
  ppcc_prediction interp = predict(g, &c, 1, 2, false);
  ppcc_calibration no_cut = c;
  no_cut.have_jit_cut = false, no_cut.n_jit_op_costs = 0;
  ppcc_prediction interp_plain = predict(g, &no_cut, 1, 2, false);
  ck_assert_double_eq_tol(interp.stages[0].time_ms, interp_plain.stages[0].time_ms, 1e-15);
  ppcc_prediction_free(&plain);
  ppcc_prediction_free(&cut);
  ppcc_prediction_free(&sliced);
  ppcc_prediction_free(&interp);
  ppcc_prediction_free(&interp_plain);
  ppcc_graph_free(g);
}
END_TEST

/* 4 stages of one matmul each (devices 0..3), transfers between them. */
static ppcc_graph *four_stages(void) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(4,
                          "{'name': 'w0', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}, "
                          "{'name': 'w1', 'dtype': 'f32', 'shape': [8, 8], 'devices': [1]}, "
                          "{'name': 'w2', 'dtype': 'f32', 'shape': [8, 8], 'devices': [2]}, "
                          "{'name': 'w3', 'dtype': 'f32', 'shape': [8, 8], 'devices': [3]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}",
                          "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, "
                          "{'op': 'transfer', 'in': ['h0'], 'out': ['t1'], 'attrs': {'devices': [1]}}, "
                          "{'op': 'matmul', 'in': ['t1', 'w1'], 'out': ['h1']}, "
                          "{'op': 'transfer', 'in': ['h1'], 'out': ['t2'], 'attrs': {'devices': [2]}}, "
                          "{'op': 'matmul', 'in': ['t2', 'w2'], 'out': ['h2']}, "
                          "{'op': 'transfer', 'in': ['h2'], 'out': ['t3'], 'attrs': {'devices': [3]}}, "
                          "{'op': 'matmul', 'in': ['t3', 'w3'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_ptr_nonnull(g);
  return g;
}

/* 2 cores; every matmul takes 1 ms. */
static ppcc_calibration matmul_takes_1ms(void) {
  ppcc_calibration c = hand_calibration(2);
  ppcc_op_cost k = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_op_cost(&c, &k));
  return c;
}

/* A first stage's first op pays start_us (the JIT: jit_start_us), once
 * per forward; a file of format 3 only when the run has more devices than
 * cores. */
START_TEST(start_cost_with_more_devices_than_cores) {
  ppcc_graph *g = four_stages();
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.start_us = 250, c.jit_start_us = 500;
  for (int version = 3; version <= 4; version++)
    for (int jit = 0; jit < 2; jit++) {
      c.version = version;
      ppcc_prediction shared = predict(g, &c, 1, 2, jit), own = predict(g, &c, 1, 4, jit);
      ck_assert_double_eq_tol(shared.stages[0].time_ms, jit ? 1.5 : 1.25, 1e-9); /* 4 devices on 2 cores */
      ck_assert_double_eq_tol(own.stages[0].time_ms, version < 4 ? 1 : jit ? 1.5 : 1.25, 1e-9); /* a core each */
      for (int s = 1; s < 4; s++) ck_assert_double_eq_tol(shared.stages[s].time_ms, 1, 1e-9); /* they waited first */
      ppcc_prediction_free(&shared);
      ppcc_prediction_free(&own);
    }
  c.start_spread_us = 250; /* M = 2: two stages compute at once, a core each (spread) */
  ppcc_prediction two = predict(g, &c, 2, 2, false); /* once per forward, not per microbatch */
  ck_assert_double_eq_tol(two.stages[0].time_ms, 2.25, 1e-9);
  ppcc_prediction_free(&two);
  ppcc_graph_free(g);
}
END_TEST

/* Two TP devices (2 cores: spread), x split on its columns and two [8, 8]
 * weights split on their rows, w and w2; ops ending in y. */
static ppcc_graph *tp_two_weights(const char *ops, ppcc_diag *d) {
  return t_model(2,
                 "{'name': 'w', 'dtype': 'f32', 'shape': [8, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, "
                 "'devices': [0, 1]}, {'name': 'w2', 'dtype': 'f32', 'shape': [8, 8], 'shard': {'kind': 'split', "
                 "'dim': 0, 'count': 2}, 'devices': [0, 1]}",
                 "{'name': 'x', 'dtype': 'f32', 'shape': [8, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, "
                 "'devices': [0, 1]}",
                 ops, "'y'", d);
}

/* Format 4: the costs around waits follow the runtime's placement of the
 * device threads. One device a stage, 2 cores: one computes at a time, its
 * threads share a core (resume_us, start_us; the JIT's jit_resume_us, which
 * format 3 lacks); two TP devices on 2 cores, a kernel thread each, are
 * spread over the cores (resume_spread_us; start_spread_us before format
 * 5, from 5 on, each alone on its core, start_own_core_us). A negative
 * resume (a residual) takes back at most the op's own time. */
START_TEST(wait_costs_follow_placement) {
  ppcc_graph *pipe = four_stages();
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *tp = tp_two_weights("{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, "
                                  "{'op': 'all_reduce', 'in': ['p'], 'out': ['s']}, "
                                  "{'op': 'matmul', 'in': ['s', 'w2'], 'out': ['y']}",
                                  &d);
  ck_assert_ptr_nonnull(tp);
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.resume_us = 100, c.start_us = 10, c.resume_spread_us = 200, c.start_spread_us = 20;
  c.jit_resume_us = 300, c.jit_start_us = 30, c.jit_resume_spread_us = 400, c.jit_start_spread_us = 40;
  c.start_own_core_us = 50, c.jit_start_own_core_us = 70;
  for (int jit = 0; jit < 2; jit++) {
    ppcc_prediction p = predict(pipe, &c, 1, 2, jit), t = predict(tp, &c, 1, 2, jit);
    /* stage 0 starts (start + resume), the later ones resume after a receive */
    ck_assert_double_eq_tol(p.stages[0].time_ms, jit ? 1.33 : 1.11, 1e-9);
    ck_assert_double_eq_tol(p.stages[1].time_ms, jit ? 1.3 : 1.1, 1e-9);
    /* two matmuls, each after a wait (the start, the all_reduce); a
     * device thread a core: their own start */
    ck_assert_double_eq_tol(t.stages[0].time_ms, jit ? 2.87 : 2.45, 1e-9);
    ppcc_prediction_free(&p);
    ppcc_prediction_free(&t);
    c.version = 4; /* before format 5: the spread start */
    t = predict(tp, &c, 1, 2, jit);
    ck_assert_double_eq_tol(t.stages[0].time_ms, jit ? 2.84 : 2.42, 1e-9);
    ppcc_prediction_free(&t);
    c.version = PPCC_CALIBRATION_VERSION;
  }
  c.version = 3; /* the JIT then pays no resume, nor start with a core a device */
  ppcc_prediction old = predict(pipe, &c, 1, 2, true);
  ck_assert_double_eq_tol(old.stages[1].time_ms, 1, 1e-9);
  ppcc_prediction_free(&old);
  c.version = 4;
  c.resume_us = -1500; /* more than the op's 1 ms: all of it, not more */
  ppcc_prediction neg = predict(pipe, &c, 1, 2, false);
  ck_assert_double_eq_tol(neg.stages[1].time_ms, 0, 1e-9);
  ppcc_prediction_free(&neg);
  ppcc_graph_free(pipe);
  ppcc_graph_free(tp);
}
END_TEST

/* A TP group of n devices, one stage: x split on its columns, w on its
 * rows, a matmul and an all_reduce. */
static ppcc_graph *tp_group(int n) {
  char params[256], inputs[256];
  snprintf(params, sizeof params,
           "{'name': 'w', 'dtype': 'f32', 'shape': [120, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': %d}}", n);
  snprintf(inputs, sizeof inputs,
           "{'name': 'x', 'dtype': 'f32', 'shape': [8, 120], 'shard': {'kind': 'split', 'dim': 1, 'count': %d}}", n);
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(n, params, inputs,
                          "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, {'op': 'all_reduce', 'in': ['p'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  return g;
}

/* Format 5, spread over 2 cores: a forward's first op pays the own-core
 * start with no other device thread on its core (2 devices), the spread
 * one with one (4), and as much more per further one (6: device d on core
 * d mod 2, 2 others; never below 0); a format 4 file the spread start
 * whatever the devices. The n devices take turns on the 2 cores: the
 * stage takes n / 2 times as long. */
START_TEST(start_grows_with_device_threads_sharing_the_core) {
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.resume_spread_us = 200, c.jit_resume_spread_us = 400;
  c.start_own_core_us = 10, c.start_spread_us = 30, c.jit_start_own_core_us = 20, c.jit_start_spread_us = 60;
  static const int devices[] = {2, 4, 6};
  static const double start_us[2][3] = {{10, 30, 50}, {20, 60, 100}}, v4_us[2] = {30, 60};
  for (int k = 0; k < 3; k++) {
    ppcc_graph *g = tp_group(devices[k]);
    for (int jit = 0; jit < 2; jit++) {
      c.version = PPCC_CALIBRATION_VERSION;
      ppcc_prediction p = predict(g, &c, 1, 2, jit);
      double turns = devices[k] / 2;
      ck_assert_double_eq_tol(p.stages[0].time_ms, turns * (1 + (jit ? 0.4 : 0.2) + start_us[jit][k] * 1e-3), 1e-9);
      ppcc_prediction_free(&p);
      c.version = 4;
      p = predict(g, &c, 1, 2, jit);
      ck_assert_double_eq_tol(p.stages[0].time_ms, turns * (1 + (jit ? 0.4 : 0.2) + v4_us[jit] * 1e-3), 1e-9);
      ppcc_prediction_free(&p);
    }
    ppcc_graph_free(g);
  }
  c.version = 6; /* before format 7 a start is a cost: */
  c.start_own_core_us = 50; /* above the spread start: 6 devices, 50 - 2 * 20 = 10; 8 devices would be below 0 */
  ppcc_graph *g = tp_group(8);
  ppcc_prediction p = predict(g, &c, 1, 2, false);
  ck_assert_double_eq_tol(p.stages[0].time_ms, 4 * 1.2, 1e-9);
  ppcc_prediction_free(&p);
  ppcc_graph_free(g);
}
END_TEST

/* Format 7: the interpreter's starts where the device threads spread are
 * residuals: a forward's first op costs that much less (measured: -0.3 to
 * -0.9 us, about the resume the program's start is charged), never more
 * than its own time with that resume; a format 6 file's, and the JIT's,
 * stay at 0. Two TP devices on 2 cores: each alone on its core. */
START_TEST(interpreter_start_below_zero_is_a_residual) {
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.resume_spread_us = 200, c.jit_resume_spread_us = 400;
  c.start_own_core_us = -150, c.jit_start_own_core_us = -150;
  ppcc_graph *g = tp_group(2);
  static const struct {
    int version;
    bool jit;
    double start_us, stage_ms;
  } cases[] = {
      {PPCC_CALIBRATION_VERSION, false, -150, 1.05}, /* 1 ms + 0.2 resume - 0.15 */
      {PPCC_CALIBRATION_VERSION, false, -5000, 0},   /* all of the op's 1.2 ms, not more */
      {6, false, -150, 1.2},
      {PPCC_CALIBRATION_VERSION, true, -150, 1.4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    c.version = cases[i].version;
    c.start_own_core_us = c.jit_start_own_core_us = cases[i].start_us;
    ppcc_prediction p = predict(g, &c, 1, 2, cases[i].jit);
    ck_assert_msg(fabs(p.stages[0].time_ms - cases[i].stage_ms) < 1e-9, "case %zu: %.6f ms", i, p.stages[0].time_ms);
    ppcc_prediction_free(&p);
  }
  ppcc_graph_free(g);
}
END_TEST

/* Format 6 measures the costs where each core has four spread device
 * threads (start_wide_us, resume_wide_us): with k others on a device's
 * core, a line through the own-core start (k = 0), the spread one (1) and
 * the wide one (3), the last segment's beyond (4); the resume the spread
 * one up to k = 1, then toward the wide one likewise. A format 5 file, or
 * one without the wide costs, keeps the line through k = 0 and 1 (above).
 * The n devices take turns on the 2 cores: the stage takes n / 2 times
 * as long. */
START_TEST(wait_costs_toward_four_threads_a_core) {
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.resume_spread_us = 200, c.resume_wide_us = 500, c.jit_resume_spread_us = 400, c.jit_resume_wide_us = 600;
  c.start_own_core_us = 10, c.start_spread_us = 30, c.start_wide_us = 90;
  c.jit_start_own_core_us = 20, c.jit_start_spread_us = 60, c.jit_start_wide_us = 100;
  static const int devices[] = {2, 4, 6, 8, 10}; /* k = 0 .. 4 others on each device's core */
  static const double resume_us[2][5] = {{200, 200, 350, 500, 650}, {400, 400, 500, 600, 700}},
                      start_us[2][5] = {{10, 30, 60, 90, 120}, {20, 60, 80, 100, 120}},
                      v5_start_us[2][5] = {{10, 30, 50, 70, 90}, {20, 60, 100, 140, 180}};
  for (int k = 0; k < 5; k++) {
    ppcc_graph *g = tp_group(devices[k]);
    for (int jit = 0; jit < 2; jit++) {
      double turns = devices[k] / 2, spread_resume = jit ? 0.4 : 0.2;
      c.version = PPCC_CALIBRATION_VERSION;
      ppcc_prediction p = predict(g, &c, 1, 2, jit);
      ck_assert_double_eq_tol(p.stages[0].time_ms, turns * (1 + (resume_us[jit][k] + start_us[jit][k]) * 1e-3), 1e-9);
      ppcc_prediction_free(&p);
      c.version = 5;
      p = predict(g, &c, 1, 2, jit);
      ck_assert_double_eq_tol(p.stages[0].time_ms, turns * (1 + spread_resume + v5_start_us[jit][k] * 1e-3), 1e-9);
      ppcc_prediction_free(&p);
    }
    ppcc_graph_free(g);
  }
  c.version = PPCC_CALIBRATION_VERSION; /* not measured: the line through k = 0 and 1 */
  c.resume_wide_us = c.start_wide_us = 0;
  ppcc_graph *g = tp_group(8);
  ppcc_prediction p = predict(g, &c, 1, 2, false);
  ck_assert_double_eq_tol(p.stages[0].time_ms, 4 * (1 + 0.2 + 0.07), 1e-9);
  ppcc_prediction_free(&p);
  ppcc_graph_free(g);
}
END_TEST

/* The resume after a wait is paid by the first op after it that reads
 * weights (a param operand, or a contraction's matrix, here a gathered
 * one); what the collective just wrote is hot: a gelu on it pays nothing
 * and passes the resume on, and a wait that no such op follows costs
 * nothing (both backends). */
START_TEST(resume_paid_by_first_op_reading_weights) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(2,
                          "{'name': 'w', 'dtype': 'f32', 'shape': [32, 32], 'shard': {'kind': 'split', 'dim': 0, "
                          "'count': 2}, 'devices': [0, 1]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [8, 32], 'shard': {'kind': 'split', 'dim': 1, "
                          "'count': 2}, 'devices': [0, 1]}, "
                          "{'name': 'u', 'dtype': 'f32', 'shape': [8, 32], 'shard': {'kind': 'split', 'dim': 0, "
                          "'count': 2}, 'devices': [0, 1]}",
                          "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, {'op': 'all_reduce', 'in': ['p'], 'out': ['s']}, "
                          "{'op': 'gelu', 'in': ['s'], 'out': ['a']}, {'op': 'all_gather', 'in': ['w'], 'out': ['wg']}, "
                          "{'op': 'matmul', 'in': ['a', 'wg'], 'out': ['h']}, {'op': 'all_gather', 'in': ['u'], 'out': ['ug']}, "
                          "{'op': 'add', 'in': ['h', 'ug'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_calibration c = matmul_takes_1ms();
  for (int jit = 0; jit < 2; jit++)
    for (int k = 0; k < 3; k++) {
      ppcc_op_cost ms = {"", 1000, 0, 0, 0, 0};
      snprintf(ms.name, sizeof ms.name, "%s", k == 0 ? "matmul" : k == 1 ? "gelu" : "add");
      ck_assert(jit ? ppcc_calibration_set_jit_op_cost(&c, &ms) : ppcc_calibration_set_op_cost(&c, &ms));
    }
  c.resume_spread_us = 200, c.jit_resume_spread_us = 400;
  for (int jit = 0; jit < 2; jit++) {
    ppcc_prediction p = predict(g, &c, 1, 2, jit);
    ck_assert_int_eq(p.n_stages, 1);
    /* 4 ops of 1 ms; resumes: the first matmul (the start), the second
     * (after the all_reduce, the gelu and the all_gather: once), not the
     * add after the last all_gather (the JIT's collectives have no cost
     * of their own here) */
    ck_assert_double_eq_tol(p.stages[0].time_ms, 4 + 2 * (jit ? 0.4 : 0.2), 1e-9);
    ppcc_prediction_free(&p);
  }
  ppcc_graph_free(g);
}
END_TEST

/* The interpreter's op after a wait pays no resume when its device read
 * all of its weights earlier in the forward (they stay in the core's
 * caches): the second matmul of the same weight after an all_reduce; a
 * new weight after the next all_reduce does. The JIT's resume, its device
 * function's own work after a wait too, stays with every first op reading
 * weights after a wait. */
START_TEST(resume_not_paid_for_weights_read_before) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = tp_two_weights("{'op': 'matmul', 'in': ['x', 'w'], 'out': ['p']}, "
                                 "{'op': 'all_reduce', 'in': ['p'], 'out': ['s']}, "
                                 "{'op': 'matmul', 'in': ['s', 'w'], 'out': ['q']}, "
                                 "{'op': 'all_reduce', 'in': ['q'], 'out': ['r']}, "
                                 "{'op': 'matmul', 'in': ['r', 'w2'], 'out': ['y']}",
                                 &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_op_cost jk = {"matmul", 1000, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_jit_op_cost(&c, &jk));
  c.resume_spread_us = 200, c.jit_resume_spread_us = 400;
  for (int jit = 0; jit < 2; jit++) {
    ppcc_prediction p = predict(g, &c, 1, 2, jit);
    ck_assert_int_eq(p.n_stages, 1);
    /* 3 matmuls of 1 ms; the interpreter resumes at the start and before
     * w2's matmul, the JIT after every wait */
    ck_assert_double_eq_tol(p.stages[0].time_ms, 3 + (jit ? 3 * 0.4 : 2 * 0.2), 1e-9);
    ppcc_prediction_free(&p);
  }
  ppcc_graph_free(g);
}
END_TEST

/* A device's kernel threads park while it waits (the start of a forward
 * of several devices, a transfer): its first kernel split across them
 * (ppcc_predict_op_splits: a [32, 256] x [256, 256] product, not an
 * [8, 8] one) pays pool_wake_us, once per wait, on both backends, with
 * more than one kernel thread only, and only where devices compute at
 * once (2 microbatches): devices that take turns (one microbatch) share
 * one pool that no wait parks (rt_pool_share), so none pays it. */
START_TEST(pool_wake_on_first_split_kernel) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(2,
                          "{'name': 'w0', 'dtype': 'f32', 'shape': [256, 256], 'devices': [0]}, "
                          "{'name': 'w1', 'dtype': 'f32', 'shape': [256, 256], 'devices': [0]}, "
                          "{'name': 's1', 'dtype': 'f32', 'shape': [256, 256], 'devices': [1]}, "
                          "{'name': 'w2', 'dtype': 'f32', 'shape': [256, 256], 'devices': [1]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [32, 256], 'devices': [0]}",
                          "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, "
                          "{'op': 'matmul', 'in': ['h0', 'w1'], 'out': ['h1']}, "
                          "{'op': 'transfer', 'in': ['h1'], 'out': ['t1'], 'attrs': {'devices': [1]}}, "
                          "{'op': 'slice', 'in': ['t1'], 'out': ['u'], 'attrs': {'dim': 0, 'start': 0, 'end': 1}}, "
                          "{'op': 'matmul', 'in': ['u', 's1'], 'out': ['v']}, "
                          "{'op': 'matmul', 'in': ['t1', 'w2'], 'out': ['y']}",
                          "'y', 'v'", &d);
  ck_assert_ptr_nonnull(g);
  ck_assert(ppcc_predict_op_splits(g, &g->ops[0], 2));
  ck_assert(!ppcc_predict_op_splits(g, &g->ops[0], 1));
  ck_assert(!ppcc_predict_op_splits(g, &g->ops[3], 2)); /* one row of 64 Ki weights: gemm_small.c's one part */
  ppcc_calibration c = hand_calibration(4);
  ppcc_op_cost k = {"matmul", 1000, 0, 0, 0, 0}, ks = {"slice", 0, 0, 0, 0, 0};
  ck_assert(ppcc_calibration_set_op_cost(&c, &k) && ppcc_calibration_set_jit_op_cost(&c, &k));
  ck_assert(ppcc_calibration_set_op_cost(&c, &ks) && ppcc_calibration_set_jit_op_cost(&c, &ks));
  c.pool_wake_us = 100;
  for (int jit = 0; jit < 2; jit++) {
    ppcc_prediction many = predict(g, &c, 2, 4, jit), one = predict(g, &c, 2, 1, jit);
    ppcc_prediction turns = predict(g, &c, 1, 4, jit);
    /* per microbatch: the first of two; after the transfer, the one that splits */
    for (int s = 0; s < 2; s++) ck_assert_double_eq_tol(many.stages[s].time_ms, 2 * 2.1, 1e-9);
    for (int s = 0; s < 2; s++) ck_assert_double_eq_tol(one.stages[s].time_ms, 2 * 2, 1e-9);
    for (int s = 0; s < 2; s++) ck_assert_double_eq_tol(turns.stages[s].time_ms, 2, 1e-9);
    ppcc_prediction_free(&many);
    ppcc_prediction_free(&one);
    ppcc_prediction_free(&turns);
  }
  ppcc_graph_free(g);
}
END_TEST

/* Several devices computing at once, a kernel thread each, are pinned to
 * core d mod cores (src/runtime/exec/affinity.c): stages on devices [0], [2],
 * [1] on 2 cores put the first two on core 0, so the second waits for the
 * first although core 1 idles. 2 microbatches of 1 ms: stage 0 runs 0-2,
 * stage 1 2-4, stage 2 3-5 (unpinned, stage 1 would run 1-3 on core 1 and
 * the wall be 4). */
START_TEST(pinned_stages_wait_for_their_core) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = t_model(3,
                          "{'name': 'w0', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}, "
                          "{'name': 'w1', 'dtype': 'f32', 'shape': [8, 8], 'devices': [2]}, "
                          "{'name': 'w2', 'dtype': 'f32', 'shape': [8, 8], 'devices': [1]}",
                          "{'name': 'x', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}",
                          "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, "
                          "{'op': 'transfer', 'in': ['h0'], 'out': ['t1'], 'attrs': {'devices': [2]}}, "
                          "{'op': 'matmul', 'in': ['t1', 'w1'], 'out': ['h1']}, "
                          "{'op': 'transfer', 'in': ['h1'], 'out': ['t2'], 'attrs': {'devices': [1]}}, "
                          "{'op': 'matmul', 'in': ['t2', 'w2'], 'out': ['y']}",
                          "'y'", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_calibration c = matmul_takes_1ms();
  ppcc_prediction p = predict(g, &c, 2, 2, false);
  ck_assert_int_eq(p.n_stages, 3);
  ck_assert_int_eq(p.stages[1].devices[0], 2);
  ck_assert_double_eq_tol(p.wall_ms, 5, 1e-9);
  ppcc_prediction_free(&p);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(pipeline_shares_cores) {
  ppcc_graph *g = four_stages();
  ppcc_calibration c = matmul_takes_1ms(); /* 1 ms per microbatch and stage */
  /* M = 1: one stage at a time, 4 ms; a hand-over of 0.5 ms each adds 1.5 */
  ppcc_prediction p1 = predict(g, &c, 1, 2, false);
  ck_assert_int_eq(p1.n_stages, 4);
  ck_assert_double_eq_tol(p1.wall_ms, 4, 1e-9);
  ck_assert_double_eq_tol(p1.bubble, 0.75, 1e-9);
  c.hop_us = 500;
  ppcc_prediction hop = predict(g, &c, 1, 2, false);
  ck_assert_double_eq_tol(hop.wall_ms, 5.5, 1e-9);
  c.hop_us = 0;
  /* M = 4 on 4 cores: fill, steady state, drain: (p + M - 1) ms */
  ppcc_prediction p4 = predict(g, &c, 4, 4, false);
  for (int s = 0; s < 4; s++) ck_assert_double_eq_tol(p4.stages[s].time_ms, 4, 1e-9);
  ck_assert_double_eq_tol(p4.wall_ms, 7, 1e-9);
  ck_assert_double_eq_tol(p4.bubble, 1 - 16.0 / 28, 1e-9);
  /* on 2 cores a stage waits for a core: stage 0 runs 0-4, stage 1 1-5,
   * stage 2 4-8 (every microbatch there by then), stage 3 5-9 */
  ppcc_prediction p2 = predict(g, &c, 4, 2, false);
  ck_assert_double_eq_tol(p2.wall_ms, 9, 1e-9);
  ck_assert_double_eq_tol(p2.bubble, 1 - 16.0 / 36, 1e-9);
  /* two devices computing at once, each 1.5 times as slow: stage 0 runs
   * alone for 1 ms, then with stage 1 (3 ms of work left: 4.5 ms), so it
   * computes 5.5 ms */
  c.n_slowdown = 2;
  c.concurrent_slowdown[0] = 1, c.concurrent_slowdown[1] = 1.5;
  ppcc_prediction slow = predict(g, &c, 4, 2, false);
  ck_assert_double_eq_tol(slow.stages[0].time_ms, 5.5, 1e-9);
  ck_assert(slow.wall_ms > 9 + 1e-6);
  /* only what lasts beyond a hand-over after a transfer can overlap:
   * with a 0.5 ms hand-over half of each stage's work slows down */
  c.hop_us = 500;
  ppcc_prediction half = predict(g, &c, 4, 2, false);
  ck_assert(half.stages[1].time_ms < slow.stages[1].time_ms - 1e-6);
  ppcc_prediction_free(&half);
  ppcc_prediction_free(&p1);
  ppcc_prediction_free(&hop);
  ppcc_prediction_free(&p4);
  ppcc_prediction_free(&p2);
  ppcc_prediction_free(&slow);
  ppcc_graph_free(g);
}
END_TEST


/* Links between hosts (devices spec "links"): four_stages with each device
 * on a host of its own, 256000 B/s and 0.5 ms between any two hosts, 4
 * cores (no sharing), 1 ms per matmul and microbatch. Each transfer moves
 * 256 B per batch (1 ms on the wire), and the output y goes from host 3 to
 * device 0's host after the run (1 ms + 0.5 ms). */
START_TEST(links_compose_with_the_pipeline) {
  ppcc_diag d;
  ppcc_diag_init(&d, NULL, NULL);
  ppcc_graph *g = four_stages();
  ppcc_calibration c = matmul_takes_1ms();
  static const char spec_text[] = "{\"devices\": [{\"host\": 0}, {\"host\": 1}, {\"host\": 2}, {\"host\": 3}],"
                                  " \"links\": [{\"bandwidth\": \"2048Kbit\", \"latency\": \"500us\"}]}";
  ppcc_devices_spec spec;
  ck_assert_int_eq(ppcc_devices_spec_parse("links.json", spec_text, strlen(spec_text), &spec, &d), PPCC_OK);
  ck_assert_double_eq_tol(spec.links[0].bytes_per_s, 256000, 1e-9);
  g->partition.devices_spec = &spec;
  /* M = 1: nothing overlaps: 4 x 1 ms compute + 3 x 1.5 ms hand-overs + 1.5 ms outputs */
  ppcc_prediction p1 = predict(g, &c, 1, 4, false);
  ck_assert_int_eq(p1.n_transfers, 3);
  ck_assert_int_eq(p1.transfers[1].from_host, 1);
  ck_assert_int_eq(p1.transfers[1].to_host, 2);
  ck_assert_int_eq(p1.transfers[1].bytes, 256);
  ck_assert_double_eq_tol(p1.transfers[1].ms, 1.5, 1e-9);
  ck_assert_double_eq_tol(p1.outputs_ms, 1.5, 1e-9);
  ck_assert_double_eq_tol(p1.wall_ms, 10, 1e-9);
  ck_assert_double_eq_tol(p1.unoverlapped_ms, 10, 1e-9);
  /* M = 4: 64 B per microbatch (0.25 ms + 0.5 ms); a stage computes the
   * next microbatch while one is on the wire: stage 3 gets microbatch 0 at
   * 3 x (1 + 0.75) = 5.25 ms and ends at 9.25, then the outputs */
  ppcc_prediction p4 = predict(g, &c, 4, 4, false);
  ck_assert_int_eq(p4.transfers[0].bytes, 64);
  ck_assert_double_eq_tol(p4.transfers[0].ms, 0.75, 1e-9);
  ck_assert_double_eq_tol(p4.wall_ms, 9.25 + 1.5, 1e-9);
  ck_assert_double_eq_tol(p4.unoverlapped_ms, 16 + 3 * 4 * 0.75 + 1.5, 1e-9);
  /* a slow link (2 ms per microbatch, no latency) carries one microbatch
   * at a time: each stage gets one every 2 ms, stage 3 its last at 15 ms */
  spec.links[0].bytes_per_s = 32000, spec.links[0].latency_s = 0;
  ppcc_prediction slow = predict(g, &c, 4, 4, false);
  ck_assert_double_eq_tol(slow.wall_ms, 16 + 8, 1e-9);
  /* devices 0-1 and 2-3 on two hosts (a distributed run's ranks): one
   * transfer crosses, and y is on the other host */
  spec.links[0].bytes_per_s = 256000, spec.links[0].latency_s = 0.0005;
  int ranks[4] = {0, 0, 1, 1};
  ppcc_predict_options o = {.microbatches = 1, .calib = &c, .threads = 4, .device_host = ranks};
  ppcc_prediction two;
  ck_assert_int_eq(ppcc_predict(g, &o, &two, &d), PPCC_OK);
  ck_assert_int_eq(two.n_transfers, 1);
  ck_assert_int_eq(two.transfers[0].from_device, 1);
  ck_assert_double_eq_tol(two.wall_ms, 4 + 1.5 + 1.5, 1e-9);
  /* no link for the pair of hosts: free, as without links */
  spec.links[0] = (ppcc_link_spec){.a = 5, .b = 6, .bytes_per_s = 1, .latency_s = 1};
  ppcc_prediction none = predict(g, &c, 1, 4, false);
  ck_assert_int_eq(none.n_transfers, 0);
  ck_assert_double_eq_tol(none.wall_ms, 4, 1e-9);
  /* y gathered back onto device 0 (a later pipeline segment): its 4
   * microbatches cross host 3 -> 0 once stage 3 ended them all at 9.25 ms */
  spec.links[0] = (ppcc_link_spec){.a = -1, .b = -1, .bytes_per_s = 256000, .latency_s = 0.0005};
  ppcc_graph *back = t_model(4,
                             "{'name': 'w0', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}, "
                             "{'name': 'w1', 'dtype': 'f32', 'shape': [8, 8], 'devices': [1]}, "
                             "{'name': 'w2', 'dtype': 'f32', 'shape': [8, 8], 'devices': [2]}, "
                             "{'name': 'w3', 'dtype': 'f32', 'shape': [8, 8], 'devices': [3]}",
                             "{'name': 'x', 'dtype': 'f32', 'shape': [8, 8], 'devices': [0]}",
                             "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, "
                             "{'op': 'transfer', 'in': ['h0'], 'out': ['t1'], 'attrs': {'devices': [1]}}, "
                             "{'op': 'matmul', 'in': ['t1', 'w1'], 'out': ['h1']}, "
                             "{'op': 'transfer', 'in': ['h1'], 'out': ['t2'], 'attrs': {'devices': [2]}}, "
                             "{'op': 'matmul', 'in': ['t2', 'w2'], 'out': ['h2']}, "
                             "{'op': 'transfer', 'in': ['h2'], 'out': ['t3'], 'attrs': {'devices': [3]}}, "
                             "{'op': 'matmul', 'in': ['t3', 'w3'], 'out': ['y']}, "
                             "{'op': 'unshard', 'in': ['y'], 'out': ['out'], 'attrs': {'device': 0}}",
                             "'out'", &d);
  ck_assert_ptr_nonnull(back);
  back->partition.devices_spec = &spec;
  ppcc_prediction gather = predict(back, &c, 4, 4, false);
  ck_assert_int_eq(gather.n_transfers, 4);
  ck_assert_int_eq(gather.transfers[3].from_device, 3);
  ck_assert_int_eq(gather.transfers[3].to_device, 0);
  ck_assert_double_eq_tol(gather.outputs_ms, 0, 1e-12);
  ck_assert_double_eq_tol(gather.wall_ms, 9.25 + 4 * 0.25 + 0.5, 1e-9);
  back->partition.devices_spec = NULL;
  ppcc_prediction_free(&gather);
  ppcc_graph_free(back);
  ppcc_prediction_free(&p1);
  ppcc_prediction_free(&p4);
  ppcc_prediction_free(&slow);
  ppcc_prediction_free(&two);
  ppcc_prediction_free(&none);
  g->partition.devices_spec = NULL;
  ppcc_devices_spec_free(&spec);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("predict");
  TCase *tc = t_add_tcase(s, "predict", 0);
  tcase_add_test(tc, calibration_round_trips_op_costs);
  tcase_add_test(tc, calibration_old_file_and_bad_fields);
  tcase_add_test(tc, op_cost_changes_prediction);
  tcase_add_test(tc, gemm_kernels_have_their_own_costs);
  tcase_add_test(tc, calibration_format_versions);
  tcase_add_test(tc, calibration_optional_fields_round_trip);
  tcase_add_test(tc, wait_costs_follow_placement);
  tcase_add_test(tc, start_grows_with_device_threads_sharing_the_core);
  tcase_add_test(tc, interpreter_start_below_zero_is_a_residual);
  tcase_add_test(tc, wait_costs_toward_four_threads_a_core);
  tcase_add_test(tc, resume_paid_by_first_op_reading_weights);
  tcase_add_test(tc, resume_not_paid_for_weights_read_before);
  tcase_add_test(tc, cold_weights_cost_their_own);
  tcase_add_test(tc, jit_moves_and_threads_factor);
  tcase_add_test(tc, multithreaded_costs_change_prediction);
  tcase_add_test(tc, jit_cut_of_replicated_operand);
  tcase_add_test(tc, pipeline_shares_cores);
  tcase_add_test(tc, start_cost_with_more_devices_than_cores);
  tcase_add_test(tc, pinned_stages_wait_for_their_core);
  tcase_add_test(tc, links_compose_with_the_pipeline);
  tcase_add_test(tc, pool_wake_on_first_split_kernel);
  return t_run_suite(s);
}
