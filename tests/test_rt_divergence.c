/* --check's search for the first divergent value (src/runtime/exec/divergence.c):
 * no value of a correct sharded model diverges (split shards, replicas and
 * partial sums all compared right), and a fault injected with the
 * test-only PPCC_TEST_INJECT is found at its value and shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/runtime.h"
#include "test_support.h"

static ppcc_run_options seeded(uint64_t seed) {
  return (ppcc_run_options){.random_seed = seed, .have_random_seed = true};
}

static ppcc_divergence search(const ppcc_graph *g) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_run_options ro = seeded(7);
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &d) == PPCC_OK, "load: %s", d.first);
  ppcc_divergence r;
  ck_assert_msg(ppcc_find_divergence(g, &data, &ro, &r, &d) == PPCC_OK, "search: %s", d.first);
  ppcc_run_data_free(&data);
  return r;
}

/* gen_llama --tp 2 --pp 2, compiled (after PPCC_TEST_INJECT is set: the
 * wrong rule acts at compile time). */
static ppcc_graph *llama(void) {
  char file[64], cmd[8192];
  snprintf(file, sizeof file, "/tmp/ppcc_div_%d.json", (int)getpid());
  snprintf(cmd, sizeof cmd, "'%s' --tp 2 --pp 2 -o '%s'", t_tool_path("gen_llama"), file);
  ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
  char *json = NULL;
  size_t len = 0;
  FILE *f = fopen(file, "rb");
  ck_assert_ptr_nonnull(f);
  FILE *m = open_memstream(&json, &len);
  int c;
  while ((c = fgetc(f)) != EOF) fputc(c, m);
  fclose(f);
  fclose(m);
  unlink(file);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  free(json);
  ck_assert_msg(g != NULL, "gen_llama model: %s", d.first);
  return g;
}

START_TEST(correct_models_have_no_divergence) {
  static const char *models[] = {"tp_ffn", "ppffn", "pp_chain", "explicit_transfer", "inserted_collectives",
                                 "ppffn_sharktank", "tiny_llama"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, "testdata/models/%s.json", models[i]);
    ppcc_diag d;
    ppcc_graph *g = t_compile_file(path, &d);
    ck_assert_msg(g != NULL, "%s: %s", path, d.first);
    ppcc_divergence r = search(g);
    ck_assert_msg(!r.found, "%s: '%s' shard %d diverges (max abs error %g)", models[i], g->values[r.value].name,
                  r.shard, r.cmp.max_abs);
    ppcc_graph_free(g);
  }
  ppcc_graph *g = llama(); /* split, replicated and unreduced values, two stages */
  ppcc_divergence r = search(g);
  ck_assert_msg(!r.found, "llama: '%s' shard %d diverges", g->values[r.value].name, r.shard);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(wrong_kernel_found_at_its_shard) {
  setenv("PPCC_TEST_INJECT", "wrong-kernel:blk.1.up:1", 1);
  ppcc_graph *g = llama();
  ppcc_divergence r = search(g);
  unsetenv("PPCC_TEST_INJECT");
  ck_assert(r.found);
  ck_assert_str_eq(g->values[r.value].name, "blk.1.up");
  ck_assert_int_eq(r.shard, 1);
  ck_assert_int_eq(r.n_bad_shards, 1);
  ck_assert_int_eq(g->ops[r.op].out[0], r.value);
  ck_assert_int_ge(r.worst_at[2], 64); /* shard 1 holds columns 64..127 of the whole value */
  ck_assert(!r.on_interp);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(partial_sums_compared_as_their_sum) {
  setenv("PPCC_TEST_INJECT", "wrong-kernel:blk.0.attn_partial:0", 1);
  ppcc_graph *g = llama();
  ppcc_divergence r = search(g);
  unsetenv("PPCC_TEST_INJECT");
  ck_assert(r.found);
  ck_assert_str_eq(g->values[r.value].name, "blk.0.attn_partial");
  ck_assert_int_eq(r.shard, -1);
  ck_assert_int_eq(r.n_shards, 2);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(wrong_rule_found_at_its_value) {
  setenv("PPCC_TEST_INJECT", "partial-as-replicated:blk.1.attn_partial", 1);
  ppcc_graph *g = llama();
  unsetenv("PPCC_TEST_INJECT");
  ck_assert_int_eq(t_value(g, "blk.1.attn_partial")->layout.kind, PPCC_LAYOUT_REPLICATED);
  ppcc_divergence r = search(g);
  ck_assert(r.found);
  ck_assert_str_eq(g->values[r.value].name, "blk.1.attn_partial");
  ck_assert_int_eq(r.shard, 0);
  ck_assert_int_eq(r.n_bad_shards, 2);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(capture_ignores_slots_it_does_not_have) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_capture c;
  ck_assert(ppcc_capture_init(&c, g, false));
  float x[2] = {1, 2};
  ck_assert(ppcc_capture_store(&c, -1, 0, x, sizeof x));
  ck_assert(ppcc_capture_store(&c, g->n_values, 0, x, sizeof x));
  int v = ppcc_find_value(g, "h");
  ck_assert(ppcc_capture_store(&c, v, c.counts[v], x, sizeof x));
  ck_assert(ppcc_capture_store(&c, v, 1, x, sizeof x));
  ck_assert(ppcc_capture_store(&c, v, 1, x, sizeof x)); /* replaces */
  ck_assert(memcmp(c.shards[v][1], x, sizeof x) == 0);
  ppcc_capture_free(&c);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_divergence");
  TCase *tc = t_add_tcase(s, "divergence", 300);
  tcase_add_test(tc, correct_models_have_no_divergence);
  tcase_add_test(tc, wrong_kernel_found_at_its_shard);
  tcase_add_test(tc, partial_sums_compared_as_their_sum);
  tcase_add_test(tc, wrong_rule_found_at_its_value);
  tcase_add_test(tc, capture_ignores_slots_it_does_not_have);
  return t_run_suite(s);
}
