/* End to end: graphs run sharded on their devices and match the unsharded
 * reference; weights from files equal --random-weights; failures abort
 * cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/runtime.h"
#include "test_support.h"

static const char *models[] = {"tp_ffn", "ppffn", "pp_chain", "explicit_transfer"};

/* Runs g sharded and unsharded on the same data; both must agree. */
static void check_matches_reference(const ppcc_graph *g, const ppcc_run_options *ro) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, ro, &data, &d) == PPCC_OK, "load: %s", d.first);
  ppcc_host_tensor got[8], ref[8];
  ck_assert_int_le(g->n_outputs, 8);
  ppcc_exec_options sharded = {0}, reference = {.reference = true};
  ck_assert_msg(ppcc_execute(g, &data, &sharded, got, NULL, &d) == PPCC_OK, "sharded: %s", d.first);
  ck_assert_msg(ppcc_execute(g, &data, &reference, ref, NULL, &d) == PPCC_OK, "reference: %s", d.first);
  for (int k = 0; k < g->n_outputs; k++) {
    ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
    ck_assert_msg(r.ok, "output %d: max abs error %g", k, r.max_abs);
    ppcc_host_tensor_free(&got[k]);
    ppcc_host_tensor_free(&ref[k]);
  }
  ppcc_run_data_free(&data);
}

static ppcc_run_options seeded(uint64_t seed) {
  return (ppcc_run_options){.random_seed = seed, .have_random_seed = true};
}

START_TEST(every_model_matches_reference) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, "testdata/models/%s.json", models[i]);
    ppcc_diag d;
    ppcc_graph *g = t_compile_file(path, &d);
    ck_assert_msg(g != NULL, "%s: %s", path, d.first);
    ppcc_input_arg x = {"x", t_src_path("testdata/inputs/x.npy")};
    ppcc_run_options ro = seeded(7);
    ro.inputs = &x;
    ro.n_inputs = 1;
    check_matches_reference(g, &ro);
    ppcc_graph_free(g);
  }
}
END_TEST

/* Outputs of a run as full tensors (caller frees). */
static void run_outputs(const ppcc_graph *g, const ppcc_run_options *ro, ppcc_host_tensor *out) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, ro, &data, &d) == PPCC_OK, "load: %s", d.first);
  ppcc_exec_options eo = {0};
  ck_assert_msg(ppcc_execute(g, &data, &eo, out, NULL, &d) == PPCC_OK, "%s", d.first);
  ppcc_run_data_free(&data);
}

static void generate(const char *flag, const char *model, const char *out) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s '%s' 7 '%s'", t_tool_path("gen_safetensors"), flag, t_src_path(model), out);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* gen_safetensors writes the --random-weights values: same outputs, bit
 * for bit, from .safetensors and from .irpa. */
START_TEST(weight_files_equal_random_weights) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char model[256], st[64], irpa[64];
    snprintf(model, sizeof model, "testdata/models/%s.json", models[i]);
    snprintf(st, sizeof st, "/tmp/ppcc_rt_%d.safetensors", (int)getpid());
    snprintf(irpa, sizeof irpa, "/tmp/ppcc_rt_%d.irpa", (int)getpid());
    generate("", model, st);
    generate("--irpa", model, irpa);
    ppcc_diag d;
    ppcc_graph *g = t_compile_file(model, &d);
    ck_assert_ptr_nonnull(g);
    ppcc_host_tensor a[8], b[8], c[8];
    ppcc_run_options ro = seeded(7);
    run_outputs(g, &ro, a);
    ro.weights_path = st;
    run_outputs(g, &ro, b);
    ro.weights_path = irpa;
    run_outputs(g, &ro, c);
    for (int k = 0; k < g->n_outputs; k++) {
      ck_assert_int_eq(a[k].bytes, b[k].bytes);
      ck_assert_msg(memcmp(a[k].data, b[k].data, (size_t)a[k].bytes) == 0, "%s: safetensors differs", model);
      ck_assert_msg(memcmp(a[k].data, c[k].data, (size_t)a[k].bytes) == 0, "%s: irpa differs", model);
      ppcc_host_tensor_free(&a[k]), ppcc_host_tensor_free(&b[k]), ppcc_host_tensor_free(&c[k]);
    }
    ppcc_graph_free(g);
    unlink(st);
    unlink(irpa);
  }
}
END_TEST

/* Device 1 fails at its first op while device 0 goes on to wait for it in
 * the all_reduce: the run must end with an error naming device and op. */
START_TEST(failure_on_one_device_does_not_hang) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_run_options ro = seeded(1);
  ro.inject_fault = true;
  ro.fault_device = 1;
  ro.fault_op = 0;
  ppcc_diag_init(&d, "tp_ffn.json", NULL);
  ck_assert_int_eq(ppcc_run(g, &ro, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "device 1: ops[0] 'matmul'") && strstr(d.first, "injected failure"), "%s", d.first);
  ro.fault_op = 3; /* in the all_reduce itself */
  ro.fault_device = 0;
  ppcc_diag_init(&d, "tp_ffn.json", NULL);
  ck_assert_int_eq(ppcc_run(g, &ro, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "device 0: ops[3] 'all_reduce'"), "%s", d.first);
  ppcc_graph_free(g);
}
END_TEST

/* Hand-written graphs covering every layout conversion and the local
 * slicing of replicated operands. */
static const char *collective_models[] = {
  /* column-parallel over 3 devices, all_gather, unshard to device 2 */
  "{\"ppcc\":1,\"name\":\"gather3\",\"devices\":3,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[12,9],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":3}}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,12],\"shard\":{\"kind\":\"replicated\",\"count\":3}}],"
  "\"ops\":[{\"op\":\"matmul\",\"in\":[\"x\",\"w\"],\"out\":[\"h\"]},"
  "{\"op\":\"all_gather\",\"in\":[\"h\"],\"out\":[\"g\"]},"
  "{\"op\":\"silu\",\"in\":[\"g\"],\"out\":[\"s\"]},"
  "{\"op\":\"unshard\",\"in\":[\"h\"],\"out\":[\"u\"],\"attrs\":{\"device\":2}}],"
  "\"outputs\":[\"s\",\"u\",\"h\"]}",
  /* row-parallel over 4 devices on a permuted device tuple: reduce_scatter,
   * an unreduced output, unshard of unreduced */
  "{\"ppcc\":1,\"name\":\"rs4\",\"devices\":4,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[16,8],\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":4},\"devices\":[3,1,0,2]}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[8,16],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":4},\"devices\":[3,1,0,2]}],"
  "\"ops\":[{\"op\":\"matmul\",\"in\":[\"x\",\"w\"],\"out\":[\"p\"]},"
  "{\"op\":\"reduce_scatter\",\"in\":[\"p\"],\"out\":[\"r\"],\"attrs\":{\"dim\":0}},"
  "{\"op\":\"tanh\",\"in\":[\"r\"],\"out\":[\"t\"]},"
  "{\"op\":\"unshard\",\"in\":[\"p\"],\"out\":[\"u\"]}],"
  "\"outputs\":[\"t\",\"u\",\"p\"]}",
  /* scatter an unsharded value, broadcast bias, replicate, relu */
  "{\"ppcc\":1,\"name\":\"scatter\",\"devices\":4,"
  "\"params\":[{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[6],\"shard\":{\"kind\":\"replicated\",\"count\":3},\"devices\":[1,2,3]}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[9,6]}],"
  "\"ops\":[{\"op\":\"reshard_split\",\"in\":[\"x\"],\"out\":[\"xs\"],\"attrs\":{\"dim\":0,\"count\":3,\"devices\":[1,2,3]}},"
  "{\"op\":\"add\",\"in\":[\"xs\",\"b\"],\"out\":[\"y\"]},"
  "{\"op\":\"relu\",\"in\":[\"y\"],\"out\":[\"z\"]},"
  "{\"op\":\"replicate\",\"in\":[\"x\"],\"out\":[\"xr\"],\"attrs\":{\"count\":2,\"devices\":[3,0]}},"
  "{\"op\":\"scale\",\"in\":[\"xr\"],\"out\":[\"xh\"],\"attrs\":{\"value\":0.5}}],"
  "\"outputs\":[\"z\",\"xh\"]}",
  /* split + replicated of the same shape: the replicated one is sliced */
  "{\"ppcc\":1,\"name\":\"slice\",\"devices\":2,"
  "\"params\":[{\"name\":\"r\",\"dtype\":\"f32\",\"shape\":[4,8],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,8],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2}}],"
  "\"ops\":[{\"op\":\"mul\",\"in\":[\"r\",\"x\"],\"out\":[\"m\"]},"
  "{\"op\":\"sub\",\"in\":[\"m\",\"r\"],\"out\":[\"s\"]},"
  "{\"op\":\"maximum\",\"in\":[\"s\",\"x\"],\"out\":[\"y\"]},"
  "{\"op\":\"all_gather\",\"in\":[\"y\"],\"out\":[\"g\"]}],"
  "\"outputs\":[\"g\"]}",
  /* in-place index_copy into a split cache, replicated source sliced */
  "{\"ppcc\":1,\"name\":\"kv\",\"devices\":2,"
  "\"params\":[{\"name\":\"cache\",\"dtype\":\"f32\",\"shape\":[6,8],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2}}],"
  "\"inputs\":[{\"name\":\"pos\",\"dtype\":\"i64\",\"shape\":[3],\"shard\":{\"kind\":\"replicated\",\"count\":2}},"
  "{\"name\":\"v\",\"dtype\":\"f32\",\"shape\":[3,8],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"ops\":[{\"op\":\"index_copy\",\"in\":[\"cache\",\"pos\",\"v\"],\"out\":[\"c2\"],\"attrs\":{\"dim\":0}},"
  "{\"op\":\"transpose\",\"in\":[\"c2\"],\"out\":[\"ct\"]},"
  "{\"op\":\"reshape\",\"in\":[\"ct\"],\"out\":[\"cr\"],\"attrs\":{\"shape\":[2,4,6]}}],"
  "\"outputs\":[\"cr\"]}",
  /* f16 linear with split bias, then all_gather */
  "{\"ppcc\":1,\"name\":\"lin16\",\"devices\":2,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f16\",\"shape\":[8,16],\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":2}},"
  "{\"name\":\"b\",\"dtype\":\"f16\",\"shape\":[8],\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":2}}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f16\",\"shape\":[2,3,16],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"ops\":[{\"op\":\"linear\",\"in\":[\"x\",\"w\",\"b\"],\"out\":[\"y\"]},"
  "{\"op\":\"gelu\",\"in\":[\"y\"],\"out\":[\"a\"]},"
  "{\"op\":\"all_gather\",\"in\":[\"a\"],\"out\":[\"g\"]}],"
  "\"outputs\":[\"g\"]}",
};

/* DESIGN v2 rules in the interpreter: replicated x split(contracting)
 * (the replicated operand sliced locally, the bias added once, shards on
 * permuted devices), its mirror split(contracting) x replicated, and a
 * whole value transferred to several devices (replicated there). */
static const char *const v2_models[] = {
  "{\"ppcc\":1,\"name\":\"ppffn_layer\",\"devices\":4,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f16\",\"shape\":[12,16],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":4},\"devices\":[3,1,0,2]},"
  "{\"name\":\"b\",\"dtype\":\"f16\",\"shape\":[12],\"shard\":{\"kind\":\"replicated\",\"count\":4},\"devices\":[3,1,0,2]}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f16\",\"shape\":[2,3,16],\"shard\":{\"kind\":\"replicated\",\"count\":4},\"devices\":[0,1,2,3]}],"
  "\"ops\":[{\"op\":\"linear\",\"in\":[\"x\",\"w\",\"b\"],\"out\":[\"p\"]},"
  "{\"op\":\"all_reduce\",\"in\":[\"p\"],\"out\":[\"y\"]}],"
  "\"outputs\":[\"y\",\"p\"]}",
  "{\"ppcc\":1,\"name\":\"split_k_times_replicated\",\"devices\":2,"
  "\"params\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[8,6],\"shard\":{\"kind\":\"replicated\",\"count\":2}}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,8],\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":2}},"
  "{\"name\":\"u\",\"dtype\":\"f32\",\"shape\":[6]}],"
  "\"ops\":[{\"op\":\"matmul\",\"in\":[\"x\",\"w\"],\"out\":[\"p\"]},"
  "{\"op\":\"all_reduce\",\"in\":[\"p\"],\"out\":[\"y\"]},"
  "{\"op\":\"transfer\",\"in\":[\"u\"],\"out\":[\"ur\"],\"attrs\":{\"devices\":[0,1]}},"
  "{\"op\":\"add\",\"in\":[\"y\",\"ur\"],\"out\":[\"z\"]}],"
  "\"outputs\":[\"z\"]}",
};

START_TEST(v2_placement_rules_match_reference) {
  size_t n_inline = sizeof v2_models / sizeof v2_models[0];
  const char *files[] = {"testdata/models/ppffn_sharktank.json", "testdata/models/inserted_collectives.json"};
  for (size_t i = 0; i < n_inline + 2; i++) {
    ppcc_diag d;
    ppcc_graph *g = i < n_inline ? t_compile(v2_models[i], &d) : t_compile_file(files[i - n_inline], &d);
    ck_assert_msg(g != NULL, "model %zu: %s", i, d.first);
    ppcc_run_options ro = seeded(11);
    check_matches_reference(g, &ro);
    ppcc_graph_free(g);
  }
}
END_TEST

START_TEST(collectives_and_local_slicing_match_reference) {
  for (size_t i = 0; i < sizeof collective_models / sizeof collective_models[0]; i++) {
    ppcc_diag d;
    ppcc_graph *g = t_compile(collective_models[i], &d);
    ck_assert_msg(g != NULL, "model %zu: %s", i, d.first);
    ppcc_run_options ro = seeded(3);
    check_matches_reference(g, &ro);
    ppcc_graph_free(g);
  }
}
END_TEST

/* A pipeline over more devices than this machine has cores. */
START_TEST(more_devices_than_cores) {
  char json[8192];
  int n = 12;
  int off = snprintf(json, sizeof json,
                     "{\"ppcc\":1,\"name\":\"long\",\"devices\":%d,\"params\":[],"
                     "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,4]}],\"ops\":[",
                     n);
  char prev[16] = "x";
  for (int i = 1; i < n; i++) { /* x -> device i -> tanh -> e_i */
    off += snprintf(json + off, sizeof json - (size_t)off,
                    "%s{\"op\":\"transfer\",\"in\":[\"%s\"],\"out\":[\"x%d\"],\"attrs\":{\"devices\":[%d]}},"
                    "{\"op\":\"tanh\",\"in\":[\"x%d\"],\"out\":[\"e%d\"]}",
                    i > 1 ? "," : "", prev, i, i, i, i);
    snprintf(prev, sizeof prev, "e%d", i);
  }
  snprintf(json + off, sizeof json - (size_t)off, "],\"outputs\":[\"%s\"]}", prev);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_run_options ro = seeded(5);
  check_matches_reference(g, &ro);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_models");
  TCase *tc = t_add_tcase(s, "models", 120);
  tcase_add_test(tc, every_model_matches_reference);
  tcase_add_test(tc, weight_files_equal_random_weights);
  tcase_add_test(tc, failure_on_one_device_does_not_hang);
  tcase_add_test(tc, collectives_and_local_slicing_match_reference);
  tcase_add_test(tc, v2_placement_rules_match_reference);
  tcase_add_test(tc, more_devices_than_cores);
  return t_run_suite(s);
}
