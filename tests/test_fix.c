/* Tests of the fix module (src/fix/): the site a failing pass records, the
 * diagnosis (chain, fixes with edits and cost), fixes that compile once
 * applied, and the model rewriter refusing edits that do not fit. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/devices_spec.h"
#include "ppcc/fix.h"
#include "test_support.h"

/* testdata/fix/NAME.json, parsed. */
static cJSON *model_file(const char *name) {
  char rel[256];
  snprintf(rel, sizeof rel, "testdata/fix/%s.json", name);
  char *text = t_read_text(t_src_path(rel));
  ck_assert_ptr_nonnull(text);
  cJSON *m = cJSON_Parse(text);
  free(text);
  ck_assert_ptr_nonnull(m);
  return m;
}

/* Compiles m, expecting a refusal; returns its diagnosis. */
static cJSON *diagnose(const cJSON *m, const ppcc_fix_options *opt, ppcc_diag *d) {
  ppcc_diag_init(d, "m.json", NULL);
  ppcc_status st;
  ppcc_graph *g = ppcc_fix_compile(m, opt, d, &st, true);
  ck_assert_int_eq(st, PPCC_ERR_USER);
  ck_assert_ptr_nonnull(g);
  cJSON *diag = ppcc_fix_diagnose(m, g, d, opt);
  ppcc_graph_free(g);
  ck_assert_ptr_nonnull(diag);
  return diag;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  ck_assert_msg(cJSON_IsString(v), "no string '%s'", key);
  return v->valuestring;
}

static const cJSON *fix_at(const cJSON *diag, int i) {
  const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(diag, "fixes"), i);
  ck_assert_ptr_nonnull(f);
  return f;
}

/* Applies fix i to a copy of m and compiles it. */
static ppcc_status apply_and_compile(const cJSON *m, const cJSON *fix, ppcc_fix_options opt) {
  cJSON *copy = cJSON_Duplicate(m, true);
  char why[300];
  ck_assert_msg(ppcc_fix_apply(copy, fix, &opt, why, sizeof why), "%s", why);
  ppcc_diag d;
  ppcc_diag_init(&d, "fixed.json", NULL);
  ppcc_status st;
  ppcc_graph *g = ppcc_fix_compile(copy, &opt, &d, &st, false);
  ppcc_graph_free(g);
  cJSON_Delete(copy);
  return st;
}

START_TEST(pin_conflict_site_chain_and_fixes) {
  cJSON *m = model_file("pin_conflict");
  ppcc_diag d;
  cJSON *diag = diagnose(m, NULL, &d);
  ck_assert_int_eq(d.site.kind, PPCC_SITE_PIN_CONFLICT);
  ck_assert_int_eq(d.site.op, 2);
  ck_assert_str_eq(str(diag, "kind"), "pin_conflict");
  ck_assert_str_eq(str(diag, "op_name"), "matmul");
  /* The chain names each operand and the rule that placed it. */
  const cJSON *chain = cJSON_GetObjectItemCaseSensitive(diag, "chain");
  ck_assert_int_eq(cJSON_GetArraySize(chain), 2);
  const cJSON *step = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(chain, 1), "steps"), 0);
  ck_assert_str_eq(str(step, "value"), "w1");
  ck_assert_str_eq(str(step, "placement"), "replicated(2) on [2,3], pinned");
  ck_assert_ptr_nonnull(strstr(str(step, "rule"), "P1"));
  /* First fix: a transfer of w1 (64x64 f32 per shard, 2 shards) that compiles. */
  const cJSON *f = fix_at(diag, 0);
  ck_assert_str_eq(str(f, "text"), "insert `transfer` of `w1` to [0,1] before ops[2] (moves 32 KiB)");
  ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(f, "cost_bytes")->valuedouble, 2 * 64 * 64 * 4);
  ck_assert_str_eq(str(f, "result"), "compiles");
  ck_assert_int_eq(apply_and_compile(m, f, (ppcc_fix_options){0}), PPCC_OK);
  /* Second: unpin w1 in its declaration. */
  ck_assert_str_eq(str(fix_at(diag, 1), "text"), "unpin `w1` (then a transfer moves 32 KiB)");
  ck_assert_int_eq(apply_and_compile(m, fix_at(diag, 1), (ppcc_fix_options){0}), PPCC_OK);
  ck_assert_int_le(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 3);
  cJSON_Delete(diag);
  cJSON_Delete(m);
}
END_TEST

START_TEST(layout_error_gets_a_collective) {
  cJSON *m = model_file("partial_sums");
  ppcc_diag d;
  cJSON *diag = diagnose(m, NULL, &d);
  ck_assert_int_eq(d.site.kind, PPCC_SITE_LAYOUTS);
  ck_assert_str_eq(str(diag, "kind"), "unsupported_layouts");
  const cJSON *f = fix_at(diag, 0);
  ck_assert_str_eq(str(f, "text"), "all_reduce `p` before ops[3] (ring: moves 4 KiB)");
  const cJSON *ins = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(f, "edits"), 1);
  ck_assert_str_eq(str(ins, "edit"), "insert_op");
  ck_assert_str_eq(str(cJSON_GetObjectItemCaseSensitive(ins, "op"), "op"), "all_reduce");
  ck_assert_int_eq(apply_and_compile(m, f, (ppcc_fix_options){0}), PPCC_OK);
  cJSON_Delete(diag);
  cJSON_Delete(m);
}
END_TEST

START_TEST(memory_fixes_are_options_with_their_peak) {
  char *text = t_read_text(t_src_path("testdata/auto/auto_ffn.json"));
  cJSON *m = cJSON_Parse(text);
  free(text);
  ppcc_fix_options opt = {.pp = 2, .tp = 1, .device_memory = 300 * 1024};
  ppcc_diag d;
  cJSON *diag = diagnose(m, &opt, &d);
  ck_assert_int_eq(d.site.kind, PPCC_SITE_MEMORY);
  ck_assert_int_eq(d.site.stage, 1);
  ck_assert_int_gt(d.site.bytes, opt.device_memory);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 3);
  for (int i = 0; i < 3; i++) {
    const cJSON *f = fix_at(diag, i);
    ck_assert_str_eq(str(f, "cost_kind"), "peak_bytes_per_device");
    double peak = cJSON_GetObjectItemCaseSensitive(f, "cost_bytes")->valuedouble;
    ck_assert(peak > 0 && peak <= (double)d.site.bytes);
    ck_assert_int_eq(apply_and_compile(m, f, opt), PPCC_OK);
  }
  cJSON_Delete(diag);
  cJSON_Delete(m);
}
END_TEST

START_TEST(device_over_spec_memory_moves_a_block) {
  /* 4 stages of 2 devices; stage 1 ([2,3]) holds blocks 2-4, 48 KiB of
   * params per device, over its 40 KiB. */
  cJSON *m = model_file("move_block");
  ppcc_devices_spec spec;
  ppcc_diag sd;
  ppcc_diag_init(&sd, "spec.json", NULL);
  ck_assert_int_eq(ppcc_devices_spec_load(t_src_path("testdata/devices_spec/move_block.json"), &spec, &sd), PPCC_OK);
  ppcc_fix_options opt = {.devices_spec = &spec};
  ppcc_diag d;
  cJSON *diag = diagnose(m, &opt, &d);
  ck_assert_int_eq(d.site.kind, PPCC_SITE_MEMORY);
  ck_assert_int_eq(d.site.device, 2);
  ck_assert_int_eq(d.site.op, 8); /* blk.2's first matmul .. blk.4's last */
  ck_assert_int_eq(d.site.op_end, 19);
  ck_assert_int_eq(d.site.bytes, 3 * 16384 + 4096);
  ck_assert_int_eq(d.site.memory, 40960);
  ck_assert_str_eq(str(diag, "kind"), "device_memory");
  ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(diag, "stage")->valueint, 1);
  /* Stage 0 has no room for another block, stage 2 has: one fix. */
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 1);
  const cJSON *f = fix_at(diag, 0);
  ck_assert_str_eq(str(f, "text"), "move block 4 (`blk.4.*`, ops[16]..ops[18]) to stage 2 on [4,5] "
                                   "(\u221216 KiB on device 2, +16 KiB on device 4)");
  ck_assert_str_eq(str(f, "result"), "compiles");
  ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(f, "cost_bytes")->valuedouble, 2 * 16384);
  const cJSON *edits = cJSON_GetObjectItemCaseSensitive(f, "edits"), *e;
  ck_assert_int_eq(cJSON_GetArraySize(edits), 2);
  cJSON_ArrayForEach(e, edits) {
    ck_assert_str_eq(str(e, "edit"), "set_attr");
    ck_assert_str_eq(str(e, "key"), "devices");
    ck_assert(strncmp(str(cJSON_GetObjectItemCaseSensitive(e, "target"), "param"), "blk.4.", 6) == 0);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "value");
    ck_assert_int_eq(cJSON_GetArraySize(v), 2);
    ck_assert_int_eq(cJSON_GetArrayItem(v, 0)->valueint, 4);
    ck_assert_int_eq(cJSON_GetArrayItem(v, 1)->valueint, 5);
  }
  ck_assert_int_eq(apply_and_compile(m, f, opt), PPCC_OK);
  cJSON_Delete(diag);
  ppcc_devices_spec_free(&spec);

  /* No stage with room (stage 2 fits exactly its one block): every move
   * fails verification and none is offered. */
  static const char tight[] = "{\"devices\": [{\"memory\": \"40K\"}, {\"memory\": \"40K\"}, {\"memory\": \"40K\"}, "
                              "{\"memory\": \"40K\"}, {\"memory\": 20480}, {\"memory\": 20480}, {\"memory\": \"40K\"}, "
                              "{\"memory\": \"40K\"}]}";
  ck_assert_int_eq(ppcc_devices_spec_parse("tight.json", tight, sizeof tight - 1, &spec, &sd), PPCC_OK);
  diag = diagnose(m, &opt, &d);
  ck_assert_int_eq(d.site.device, 2);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 0);
  cJSON_Delete(diag);
  ppcc_devices_spec_free(&spec);

  /* Room only two stages away: the block goes there. */
  static const char far[] = "{\"devices\": [{\"memory\": \"40K\"}, {\"memory\": \"40K\"}, {\"memory\": \"40K\"}, "
                            "{\"memory\": \"40K\"}, {\"memory\": 20480}, {\"memory\": 20480}, {\"memory\": \"1M\"}, "
                            "{\"memory\": \"1M\"}]}";
  ck_assert_int_eq(ppcc_devices_spec_parse("far.json", far, sizeof far - 1, &spec, &sd), PPCC_OK);
  diag = diagnose(m, &opt, &d);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 1);
  ck_assert_str_eq(str(fix_at(diag, 0), "text"), "move block 4 (`blk.4.*`, ops[16]..ops[18]) to stage 3 on [6,7] "
                                                 "(\u221216 KiB on device 2, +16 KiB on device 6)");
  ck_assert_int_eq(apply_and_compile(m, fix_at(diag, 0), opt), PPCC_OK);
  cJSON_Delete(diag);
  ppcc_devices_spec_free(&spec);
  cJSON_Delete(m);
}
END_TEST

START_TEST(rewriter_refuses_edits_that_do_not_fit) {
  cJSON *m = model_file("no_pinned");
  char *before = cJSON_PrintUnformatted(m);
  static const char *const bad[] = {
    "{\"edits\": []}",
    "{\"edits\": [{\"edit\": \"explode\"}]}",
    "{\"edits\": [{\"edit\": \"insert_op\", \"before\": 99, \"op\": {\"op\": \"gelu\"}}]}",
    "{\"edits\": [{\"edit\": \"insert_op\", \"before\": -1, \"op\": {\"op\": \"gelu\"}}]}",
    "{\"edits\": [{\"edit\": \"set_operand\", \"op\": 0, \"index\": 5, \"value\": \"x\"}]}",
    "{\"edits\": [{\"edit\": \"set_operand\", \"op\": 0, \"index\": 0}]}",
    "{\"edits\": [{\"edit\": \"set_attr\", \"target\": {\"param\": \"nope\"}, \"key\": \"pinned\", \"value\": true}]}",
    "{\"edits\": [{\"edit\": \"set_attr\", \"target\": {\"op\": 1.5}, \"key\": \"k\", \"value\": 1}]}",
    "{\"edits\": [{\"edit\": \"set_option\", \"option\": \"threads\", \"value\": 2}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cJSON *fix = cJSON_Parse(bad[i]);
    ck_assert_ptr_nonnull(fix);
    ppcc_fix_options opt = {0};
    char why[300] = "";
    ck_assert_msg(!ppcc_fix_apply(m, fix, &opt, why, sizeof why), "accepted %s", bad[i]);
    ck_assert_msg(why[0], "no reason for %s", bad[i]);
    cJSON_Delete(fix);
  }
  char *after = cJSON_PrintUnformatted(m);
  ck_assert_str_eq(before, after); /* every refusal left the model as it was */
  free(before);
  free(after);
  /* Insertion at the end and in the middle keeps the other ops in order. */
  cJSON *fix = cJSON_Parse("{\"edits\": [{\"edit\": \"insert_op\", \"before\": 3, \"op\": {\"op\": \"gelu\", \"in\": "
                           "[\"out\"], \"out\": [\"e\"]}}, {\"edit\": \"insert_op\", \"before\": 1, \"op\": {\"op\": "
                           "\"gelu\", \"in\": [\"s\"], \"out\": [\"m\"]}}]}");
  ppcc_fix_options opt = {0};
  char why[300];
  ck_assert_msg(ppcc_fix_apply(m, fix, &opt, why, sizeof why), "%s", why);
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(m, "ops");
  ck_assert_int_eq(cJSON_GetArraySize(ops), 5);
  static const char *const outs[] = {"s", "m", "y", "out", "e"};
  for (int i = 0; i < 5; i++)
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ops, i), "out"), 0)->valuestring,
                     outs[i]);
  cJSON_Delete(fix);
  cJSON_Delete(m);
}
END_TEST

START_TEST(non_placement_error_has_no_site_and_no_fix) {
  ppcc_diag d;
  ppcc_graph *g = t_compile("{\"ppcc\": 1, \"name\": \"m\", \"devices\": 1, \"params\": [], \"inputs\": ["
                            "{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3]}], \"ops\": ["
                            "{\"op\": \"matmul\", \"in\": [\"x\", \"x\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}",
                            &d);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(d.site.kind, PPCC_SITE_NONE);
  cJSON *diag = ppcc_fix_diagnose(NULL, NULL, &d, NULL);
  ck_assert_str_eq(str(diag, "kind"), "error");
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diag, "fixes")), 0);
  cJSON_Delete(diag);
}
END_TEST

Suite *fix_suite(void) {
  Suite *s = suite_create("fix");
  TCase *tc = t_add_tcase(s, "fix", 0);
  tcase_add_test(tc, pin_conflict_site_chain_and_fixes);
  tcase_add_test(tc, layout_error_gets_a_collective);
  tcase_add_test(tc, memory_fixes_are_options_with_their_peak);
  tcase_add_test(tc, rewriter_refuses_edits_that_do_not_fit);
  tcase_add_test(tc, device_over_spec_memory_moves_a_block);
  tcase_add_test(tc, non_placement_error_has_no_site_and_no_fix);
  return s;
}

int main(void) { return t_run_suite(fix_suite()); }
