/* Tests of `ppcc report --why VALUE` (src/report/explain.c): the chain of
 * rules that placed a value, on the PPFFN example (declared placement, one
 * transfer inserted by P4/P10) and on an auto-partitioned model. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"
#include "test_support.h"

static ppcc_diag diag;

/* The explanation of value in g, as a string (caller frees). */
static char *explain(const ppcc_graph *g, const char *value, ppcc_status *st) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  *st = ppcc_explain(g, value, f, &diag);
  fclose(f);
  return text;
}

static void expect_line(const char *text, const char *line) {
  ck_assert_msg(strstr(text, line), "explanation lacks \"%s\":\n%s", line, text);
}

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static ppcc_graph *ppffn(void) {
  ppcc_graph *g = t_compile_file("testdata/models/ppffn.json", &diag);
  ck_assert_msg(g != NULL, "%s", diag.first);
  return g;
}

START_TEST(ppffn_value_after_the_stage_crossing) {
  ppcc_graph *g = ppffn();
  ppcc_status st;
  char *text = explain(g, "blk.2.h", &st);
  ck_assert_int_eq(st, PPCC_OK);
  /* The value, its rule, its op and the operands that decided it. */
  /* P4 v2: computed from the activation that crossed, so unpinned */
  ck_assert_msg(strncmp(text, "'blk.2.h': result split(dim=1, 2) on [2,3], unpinned\n", 53) == 0, "%s", text);
  expect_line(text, "  rule: P4: unpinned operands moved to the pinned operands' devices; the result is unpinned\n");
  expect_line(text, "  defined by ops[8] 'matmul' (-> 'blk.2.h')\n");
  expect_line(text, "  pinned operand 'blk.2.ffn_up.weight' (split(dim=1, 2) on [2,3], pinned)\n");
  expect_line(text, "  operand 'blk.1.y@2,3' is 'blk.1.y' (replicated(2) on [0,1], unpinned) brought to it by an "
                    "inserted transfer (replicated(2) on [2,3], unpinned)\n");
  /* The transfer and why it was inserted. */
  expect_line(text, "'blk.1.y@2,3': result replicated(2) on [2,3], unpinned\n"
                    "  rule: P10: transfer inserted to bring the value to a consumer's devices\n"
                    "  defined by inserted 'transfer' (-> 'blk.1.y@2,3'): P10: per-shard transfer of an unpinned "
                    "operand\n"
                    "  moves 'blk.1.y' shard by shard (4.0 KiB)\n");
  /* Up the chain: collectives unpinned, params and the input at the end. */
  expect_line(text, "'blk.1.y': result replicated(2) on [0,1], unpinned\n"
                    "  rule: P6: collective result stays on its operand's devices, unpinned\n");
  expect_line(text, "'blk.0.ffn_up.weight': param split(dim=1, 2) on [0,1], pinned\n"
                    "  rule: P1: parameter pinned on declared devices\n");
  expect_line(text, "'x': input replicated(2) on [0,1], unpinned\n  rule: P2: graph input placed as declared\n");
  /* Each value once; nothing downstream of blk.2.h. */
  ck_assert_int_eq(count(text, "\n'blk.0.h':"), 1);
  ck_assert_int_eq(count(text, "\n'x':"), 1);
  ck_assert_int_eq(count(text, "'blk.2.a'"), 0);
  ck_assert_int_eq(count(text, "  rule: "), 16); /* 10 results, 5 params and x */
  free(text);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(param_is_its_own_chain) {
  ppcc_graph *g = ppffn();
  ppcc_status st;
  char *text = explain(g, "blk.3.ffn_down.weight", &st);
  ck_assert_int_eq(st, PPCC_OK);
  ck_assert_str_eq(text, "'blk.3.ffn_down.weight': param split(dim=0, 2) on [2,3], pinned\n"
                         "  rule: P1: parameter pinned on declared devices\n");
  free(text);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(unknown_value_is_an_error_naming_it) {
  ppcc_graph *g = ppffn();
  ppcc_status st;
  char *text = explain(g, "blk.9.h", &st);
  ck_assert_int_eq(st, PPCC_ERR_USER);
  ck_assert_str_eq(text, "");
  ck_assert_str_eq(diag.first, "--why: no value named 'blk.9.h' in model 'ppffn'");
  free(text);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(auto_partitioned_value_names_the_partition_rules) {
  char path[4096];
  snprintf(path, sizeof path, "%s", t_src_path("testdata/auto/auto_ffn.json"));
  ppcc_diag_init(&diag, path, NULL);
  ppcc_graph *g = ppcc_load_model_file(path, &diag);
  ck_assert_ptr_nonnull(g);
  g->partition.pp = 2;
  g->partition.tp = 2;
  ck_assert_int_eq(ppcc_run_passes(g, NULL, NULL, &diag), PPCC_OK);
  ppcc_status st;
  char *text = explain(g, "blk.2.y", &st);
  ck_assert_int_eq(st, PPCC_OK);
  expect_line(text, "  defined by inserted 'all_reduce' (-> 'blk.2.y'): auto-partition: all_reduce completes the "
                    "partial sums of a row-parallel matmul (Megatron pair)\n");
  expect_line(text, "'blk.2.ffn_up.weight': param split(dim=1, 2) on [2,3], pinned\n"
                    "  rule: auto-partition: column-parallel weight");
  expect_line(text, "  defined by inserted 'transfer' (-> 'blk.1.y@2,3'): auto-partition: the value crosses a "
                    "pipeline-stage boundary to the stage that reads it\n");
  expect_line(text, "'x': input replicated(2) on [0,1], unpinned\n"
                    "  rule: auto-partition: graph input replicated on stage 0's devices\n");
  free(text);
  ppcc_graph_free(g);
}
END_TEST

/* P11: collectives a sharding rule needs are inserted ops, and --why says
 * which rule inserted them; P4 v2 texts say why a result is (un)pinned. */
START_TEST(inserted_collectives_name_their_rule) {
  ppcc_graph *g = t_compile(
      "{\"ppcc\": 1, \"name\": \"rows_cols\", \"devices\": 2,"
      " \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [16, 32], \"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}}],"
      " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [8, 16], \"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}}],"
      " \"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": [\"y\"]},"
      "          {\"op\": \"concat\", \"in\": [\"y\", \"y\"], \"out\": [\"z\"], \"attrs\": {\"dim\": 0}}],"
      " \"outputs\": [\"z\"]}",
      &diag);
  ck_assert_msg(g != NULL, "%s", diag.first);
  ppcc_status st;
  char *text = explain(g, "z", &st);
  ck_assert_int_eq(st, PPCC_OK);
  expect_line(text, "'z': result split(dim=0, 2) on [0,1], unpinned\n"
                    "  rule: P11/P5: inserted re-split, local on each device; keeps its operand's devices and pin\n"
                    "  defined by inserted 'reshard_split' (-> 'z'): P11: inserted reshard_split: the op ran on whole "
                    "(gathered) operands; its result is re-split locally\n");
  expect_line(text, "'y@gathered': result replicated(2) on [0,1], unpinned\n"
                    "  rule: P11: inserted collective; stays on its operand's devices and keeps its pin\n"
                    "  defined by inserted 'all_gather' (-> 'y@gathered'): P11: inserted all_gather: the sharding rule "
                    "needs this operand whole on every shard\n");
  expect_line(text, "'w@gathered': result replicated(2) on [0,1], pinned\n");
  expect_line(text, "'y': result split(dim=0, 2) on [0,1], unpinned\n"
                    "  rule: P4: all operands on the same devices; computed from an unpinned operand, so unpinned\n");
  free(text);
  ppcc_graph_free(g);
}
END_TEST

Suite *explain_suite(void) {
  Suite *s = suite_create("explain");
  TCase *tc = t_add_tcase(s, "explain", 0);
  tcase_add_test(tc, ppffn_value_after_the_stage_crossing);
  tcase_add_test(tc, param_is_its_own_chain);
  tcase_add_test(tc, unknown_value_is_an_error_naming_it);
  tcase_add_test(tc, auto_partitioned_value_names_the_partition_rules);
  tcase_add_test(tc, inserted_collectives_name_their_rule);
  return s;
}

int main(void) { return t_run_suite(explain_suite()); }
