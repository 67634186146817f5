/* Reports: device summaries (param bytes, peak activations, FLOP split),
 * the JSON report's exact shape, the text and DOT reports. Graphs are built
 * by hand so the expected numbers can be worked out in the comments. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"
#include "test_support.h"

/* ---- building graphs by hand ---- */

static ppcc_layout unsharded(void) { return ppcc_layout_unsharded(); }
static ppcc_layout replicated(int n) { return (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, n}; }
static ppcc_layout split(int dim, int n) { return (ppcc_layout){PPCC_LAYOUT_SPLIT, dim, n}; }
static ppcc_layout unreduced(int n) { return (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, n}; }

static int add_val(ppcc_graph *g, const char *name, ppcc_value_kind kind, int64_t rows, int64_t cols,
                   ppcc_layout l, const int *devices, bool pinned) {
  int64_t shape[2] = {rows, cols};
  int v = ppcc_add_value(g, name, kind, PPCC_F32, 2, shape);
  ck_assert_int_ge(v, 0);
  g->values[v].layout = l;
  g->values[v].devices = ppcc_dup_ints(g, devices, l.count);
  g->values[v].pinned = pinned;
  return v;
}

/* Adds op `name` reading `in` and defining `out` (whose placement is set). */
static int add_op(ppcc_graph *g, const char *name, int n_in, const int *in, int out, bool inserted) {
  const ppcc_op_info *info = ppcc_op_lookup(name);
  ck_assert_ptr_nonnull(info);
  int i = ppcc_add_op(g, info, n_in, in, 1, &out, 0, NULL);
  ck_assert_int_ge(i, 0);
  g->values[out].def_op = i;
  g->ops[i].inserted = inserted;
  if (inserted) g->ops[i].src_index = -1;
  return i;
}

static void mark_output(ppcc_graph *g, int v) {
  g->outputs = ppcc_dup_ints(g, &v, 1);
  g->n_outputs = 1;
  g->values[v].is_output = true;
}

/* The DESIGN §3 example after the passes, on 4 devices:
 *   x  f32[8,64] replicated(2) on [0,1]   (2048 B per shard)
 *   w  f32[64,64] split(1, 2) on [0,1]    (8192 B per shard, pinned)
 *   op0 matmul(x, w) -> h0    split(1, 2) [0,1]  1024 B/shard, 65536 FLOP
 *   op1 gelu(h0)     -> h1    split(1, 2) [0,1]  1024 B/shard,  4096 FLOP
 *   op2 transfer(h1) -> h1@2,3 split(1, 2) [2,3] inserted, 2048 B moved
 *   op3 relu(h1@2,3) -> h2    split(1, 2) [2,3]  output,         512 FLOP */
static ppcc_graph *ffn_graph(void) {
  ppcc_graph *g = ppcc_graph_new("ppffn", 4);
  const int d01[] = {0, 1}, d23[] = {2, 3};
  int x = add_val(g, "x", PPCC_VALUE_INPUT, 8, 64, replicated(2), d01, false);
  int w = add_val(g, "blk.0.ffn.weight", PPCC_VALUE_PARAM, 64, 64, split(1, 2), d01, true);
  int h0 = add_val(g, "h0", PPCC_VALUE_RESULT, 8, 64, split(1, 2), d01, true);
  int h1 = add_val(g, "h1", PPCC_VALUE_RESULT, 8, 64, split(1, 2), d01, true);
  int h1t = add_val(g, "h1@2,3", PPCC_VALUE_RESULT, 8, 64, split(1, 2), d23, false);
  int h2 = add_val(g, "h2", PPCC_VALUE_RESULT, 8, 64, split(1, 2), d23, false);
  add_op(g, "matmul", 2, (int[]){x, w}, h0, false);
  add_op(g, "gelu", 1, &h0, h1, false);
  add_op(g, "transfer", 1, &h1, h1t, true);
  add_op(g, "relu", 1, &h1t, h2, false);
  mark_output(g, h2);
  return g;
}

/* ---- capturing output ---- */

typedef ppcc_status (*report_fn)(const ppcc_graph *, FILE *, ppcc_diag *);

static char *capture(report_fn fn, const ppcc_graph *g) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_int_eq(fn(g, f, &d), PPCC_OK);
  fclose(f);
  return buf;
}

static cJSON *parse_report(const ppcc_graph *g) {
  char *text = capture(ppcc_report_json, g);
  cJSON *j = cJSON_Parse(text);
  ck_assert_msg(j != NULL, "report is not JSON:\n%s", text);
  free(text);
  return j;
}

/* The object's keys, in order, are exactly `keys` (NULL-terminated). */
static void assert_keys(const cJSON *obj, const char *const *keys) {
  ck_assert(cJSON_IsObject(obj));
  const cJSON *item = obj->child;
  for (int i = 0; keys[i]; i++, item = item->next) {
    ck_assert_msg(item != NULL, "missing key '%s'", keys[i]);
    ck_assert_str_eq(item->string, keys[i]);
  }
  ck_assert_msg(item == NULL, "unexpected key '%s'", item ? item->string : "");
}

static double num(const cJSON *obj, const char *key) {
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
  ck_assert_msg(cJSON_IsNumber(n), "'%s' is not a number", key);
  return n->valuedouble;
}

static const char *str(const cJSON *obj, const char *key) {
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(obj, key);
  ck_assert_msg(cJSON_IsString(s), "'%s' is not a string", key);
  return s->valuestring;
}

static void assert_int_array(const cJSON *arr, const int *want, int n) {
  ck_assert(cJSON_IsArray(arr));
  ck_assert_int_eq(cJSON_GetArraySize(arr), n);
  for (int i = 0; i < n; i++) ck_assert_int_eq(cJSON_GetArrayItem(arr, i)->valueint, want[i]);
}

/* ---- device summaries ---- */

START_TEST(summary_param_bytes_per_shard_device) {
  ppcc_graph *g = ffn_graph();
  ppcc_device_summary *s = ppcc_device_summaries(g);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s[0].param_bytes, 8192);
  ck_assert_int_eq(s[1].param_bytes, 8192);
  ck_assert_int_eq(s[2].param_bytes, 0);
  ck_assert_int_eq(s[3].device, 3);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(summary_peak_activation) {
  ppcc_graph *g = ffn_graph();
  ppcc_device_summary *s = ppcc_device_summaries(g);
  /* dev 0: x (2048) + h0 (1024) live during the matmul; then x is freed. */
  ck_assert_int_eq(s[0].peak_activation_bytes, 3072);
  ck_assert_int_eq(s[1].peak_activation_bytes, 3072);
  /* dev 2: h1@2,3 (1024) + h2 (1024) during the relu. */
  ck_assert_int_eq(s[2].peak_activation_bytes, 2048);
  ck_assert_int_eq(s[3].peak_activation_bytes, 2048);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(summary_flops_split_between_shards) {
  ppcc_graph *g = ffn_graph();
  ppcc_device_summary *s = ppcc_device_summaries(g);
  ck_assert_double_eq(s[0].flops, 65536 / 2 + 4096 / 2);
  ck_assert_double_eq(s[1].flops, 65536 / 2 + 4096 / 2);
  ck_assert_double_eq(s[2].flops, 512 / 2);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

/* Replicated: every copy does all the work; unsharded: one device does;
 * unreduced: the shards share it. */
START_TEST(summary_flops_replicated_unsharded_unreduced) {
  ppcc_graph *g = ppcc_graph_new("flops", 3);
  const int d01[] = {0, 1}, d2[] = {2};
  int a = add_val(g, "a", PPCC_VALUE_INPUT, 4, 4, replicated(2), d01, false);
  int b = add_val(g, "b", PPCC_VALUE_RESULT, 4, 4, replicated(2), d01, false);
  int c = add_val(g, "c", PPCC_VALUE_INPUT, 4, 4, unsharded(), d2, false);
  int e = add_val(g, "e", PPCC_VALUE_RESULT, 4, 4, unsharded(), d2, false);
  int u = add_val(g, "u", PPCC_VALUE_INPUT, 4, 4, unreduced(2), d01, false);
  int n = add_val(g, "n", PPCC_VALUE_RESULT, 4, 4, unreduced(2), d01, false);
  add_op(g, "relu", 1, &a, b, false); /* 16 FLOP */
  add_op(g, "gelu", 1, &c, e, false); /* 128 FLOP */
  add_op(g, "neg", 1, &u, n, false);  /* 16 FLOP */
  ppcc_device_summary *s = ppcc_device_summaries(g);
  ck_assert_double_eq(s[0].flops, 16 + 8);
  ck_assert_double_eq(s[1].flops, 16 + 8);
  ck_assert_double_eq(s[2].flops, 128);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

/* Shard i lives on devices[i], not on device i. */
START_TEST(summary_uses_declared_devices) {
  ppcc_graph *g = ppcc_graph_new("perm", 4);
  const int d31[] = {3, 1};
  add_val(g, "w", PPCC_VALUE_PARAM, 8, 8, split(0, 2), d31, true);
  ppcc_device_summary *s = ppcc_device_summaries(g);
  ck_assert_int_eq(s[0].param_bytes, 0);
  ck_assert_int_eq(s[1].param_bytes, 128);
  ck_assert_int_eq(s[3].param_bytes, 128);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

/* An in-place update writes into its destination: no second buffer. */
START_TEST(summary_inplace_result_aliases_destination) {
  ppcc_graph *g = ppcc_graph_new("kv", 1);
  const int d0[] = {0};
  int cache = add_val(g, "cache", PPCC_VALUE_INPUT, 16, 16, unsharded(), d0, false); /* 1024 B */
  int64_t one = 2;
  int idx = ppcc_add_value(g, "idx", PPCC_VALUE_INPUT, PPCC_I64, 1, &one); /* 16 B */
  g->values[idx].devices = ppcc_dup_ints(g, d0, 1);
  int upd = add_val(g, "upd", PPCC_VALUE_INPUT, 2, 16, unsharded(), d0, false); /* 128 B */
  int cache2 = add_val(g, "cache2", PPCC_VALUE_RESULT, 16, 16, unsharded(), d0, false);
  int y = add_val(g, "y", PPCC_VALUE_RESULT, 16, 16, unsharded(), d0, false);
  add_op(g, "index_copy", 3, (int[]){cache, idx, upd}, cache2, false);
  add_op(g, "relu", 1, &cache2, y, false);
  mark_output(g, y);
  ppcc_device_summary *s = ppcc_device_summaries(g);
  /* start: 1024 + 16 + 128; index_copy adds nothing, frees idx and upd;
   * relu: cache (1024) + y (1024). */
  ck_assert_int_eq(s[0].peak_activation_bytes, 2048);
  free(s);
  ppcc_graph_free(g);
}
END_TEST

/* ---- JSON ---- */

START_TEST(json_has_exact_keys) {
  ppcc_graph *g = ffn_graph();
  cJSON *j = parse_report(g);
  assert_keys(j, (const char *[]){"ppcc", "model", "devices", "values", "ops", "transfers", "device_summary",
                                  "prediction", "loaded_model", NULL});
  /* issue 17: the prediction is a new field after the existing ones */
  const cJSON *pred = cJSON_GetObjectItem(j, "prediction"), *pd;
  /* issue 23: the loaded model per process (one, then a rank per stage) */
  const cJSON *loaded = cJSON_GetObjectItem(j, "loaded_model"), *proc;
  assert_keys(loaded, (const char *[]){"backend", "processes", NULL});
  cJSON_ArrayForEach(proc, cJSON_GetObjectItem(loaded, "processes")) {
    assert_keys(proc, (const char *[]){"rank", "devices", "param_bytes", "state_bytes", "working_set_bytes",
                                       "total_bytes", NULL});
    ck_assert(num(proc, "total_bytes") == num(proc, "param_bytes") + num(proc, "state_bytes") +
                                              num(proc, "working_set_bytes"));
  }
  assert_keys(pred, (const char *[]){"microbatches", "calibrated", "bubble", "wall_ms", "devices", "stages", NULL});
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(pred, "devices")), 4);
  cJSON_ArrayForEach(pd, cJSON_GetObjectItem(pred, "devices")) {
    assert_keys(pd, (const char *[]){"device", "peak_bytes", "param_bytes", "activation_bytes", "microbatches_in_flight",
                                     "kv_cache_bytes", "transfer_bytes", "compute_ms", NULL});
    ck_assert(num(pd, "peak_bytes") == num(pd, "param_bytes") + num(pd, "activation_bytes") +
                                           num(pd, "kv_cache_bytes") + num(pd, "transfer_bytes"));
  }
  ck_assert_int_eq((int)num(j, "ppcc"), 1);
  ck_assert_str_eq(str(j, "model"), "ppffn");
  ck_assert_int_eq((int)num(j, "devices"), 4);
  const cJSON *values = cJSON_GetObjectItem(j, "values");
  ck_assert_int_eq(cJSON_GetArraySize(values), 6);
  const cJSON *v;
  cJSON_ArrayForEach(v, values) {
    assert_keys(v, (const char *[]){"name", "dtype", "shape", "shard", "devices", "pinned", NULL});
  }
  const cJSON *ops = cJSON_GetObjectItem(j, "ops"), *op;
  ck_assert_int_eq(cJSON_GetArraySize(ops), 4);
  cJSON_ArrayForEach(op, ops) {
    assert_keys(op, (const char *[]){"index", "op", "in", "out", "devices", "inserted", NULL});
  }
  const cJSON *rows = cJSON_GetObjectItem(j, "device_summary"), *row;
  ck_assert_int_eq(cJSON_GetArraySize(rows), 4);
  cJSON_ArrayForEach(row, rows) {
    assert_keys(row, (const char *[]){"device", "param_bytes", "peak_activation_bytes", "flops", NULL});
  }
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(json_values_and_ops) {
  ppcc_graph *g = ffn_graph();
  cJSON *j = parse_report(g);
  const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "values"), 1);
  ck_assert_str_eq(str(w, "name"), "blk.0.ffn.weight");
  ck_assert_str_eq(str(w, "dtype"), "f32");
  assert_int_array(cJSON_GetObjectItem(w, "shape"), (int[]){64, 64}, 2);
  const cJSON *shard = cJSON_GetObjectItem(w, "shard");
  assert_keys(shard, (const char *[]){"kind", "dim", "count", NULL});
  ck_assert_str_eq(str(shard, "kind"), "split");
  ck_assert_int_eq((int)num(shard, "dim"), 1);
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(w, "pinned")));
  const cJSON *x_shard = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "values"), 0), "shard");
  assert_keys(x_shard, (const char *[]){"kind", "count", NULL});
  ck_assert_str_eq(str(x_shard, "kind"), "replicated");

  const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), 2);
  ck_assert_int_eq((int)num(t, "index"), 2);
  ck_assert_str_eq(str(t, "op"), "transfer");
  ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "out"), 0)->valuestring, "h1@2,3");
  assert_int_array(cJSON_GetObjectItem(t, "devices"), (int[]){2, 3}, 2);
  ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "inserted")));
  const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "device_summary"), 0);
  ck_assert_int_eq((int)num(d0, "param_bytes"), 8192);
  ck_assert_int_eq((int)num(d0, "peak_activation_bytes"), 3072);
  ck_assert_double_eq(num(d0, "flops"), 34816);
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(json_transfers) {
  ppcc_graph *g = ffn_graph();
  cJSON *j = parse_report(g);
  const cJSON *xs = cJSON_GetObjectItem(j, "transfers");
  ck_assert_int_eq(cJSON_GetArraySize(xs), 1);
  const cJSON *t = cJSON_GetArrayItem(xs, 0);
  assert_keys(t, (const char *[]){"value", "from", "to", "bytes", "before_op", NULL});
  ck_assert_str_eq(str(t, "value"), "h1");
  assert_int_array(cJSON_GetObjectItem(t, "from"), (int[]){0, 1}, 2);
  assert_int_array(cJSON_GetObjectItem(t, "to"), (int[]){2, 3}, 2);
  ck_assert_int_eq((int)num(t, "bytes"), 2048);
  ck_assert_int_eq((int)num(t, "before_op"), 3);
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

/* P10: shard 0 is already on device 0, so only shard 1 is copied; an
 * unused transfer result has no consumer (-1). */
START_TEST(json_transfer_skips_shard_on_target) {
  ppcc_graph *g = ppcc_graph_new("p10", 3);
  const int d01[] = {0, 1}, d02[] = {0, 2};
  int a = add_val(g, "a", PPCC_VALUE_INPUT, 4, 8, split(0, 2), d01, false); /* 64 B/shard */
  int b = add_val(g, "b", PPCC_VALUE_RESULT, 4, 8, split(0, 2), d02, false);
  add_op(g, "transfer", 1, &a, b, false);
  cJSON *j = parse_report(g);
  const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "transfers"), 0);
  ck_assert_int_eq((int)num(t, "bytes"), 64);
  ck_assert_int_eq((int)num(t, "before_op"), -1);
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), 0), "inserted")));
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(json_escapes_names) {
  const char *odd = "a\"b\\c\nd\te\x01";
  ppcc_graph *g = ppcc_graph_new("m\"odel", 1);
  const int d0[] = {0};
  add_val(g, odd, PPCC_VALUE_INPUT, 1, 1, unsharded(), d0, false);
  cJSON *j = parse_report(g);
  ck_assert_str_eq(str(j, "model"), "m\"odel");
  ck_assert_str_eq(str(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "values"), 0), "name"), odd);
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(json_is_deterministic) {
  ppcc_graph *g = ffn_graph();
  char *a = capture(ppcc_report_json, g), *b = capture(ppcc_report_json, g);
  ck_assert_str_eq(a, b);
  ck_assert_ptr_nonnull(strstr(a, "\n  \"ops\": [\n    {\"index\": 0, \"op\": \"matmul\""));
  free(a);
  free(b);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(json_empty_graph) {
  ppcc_graph *g = ppcc_graph_new("empty", 0);
  cJSON *j = parse_report(g);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "ops")), 0);
  ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "device_summary")), 0);
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

/* ---- text ---- */

START_TEST(text_has_stage_tables) {
  ppcc_graph *g = ffn_graph();
  char *t = capture(ppcc_report_text, g);
  ck_assert_ptr_nonnull(strstr(t, "model:   ppffn\n"));
  ck_assert_ptr_nonnull(strstr(t, "stages:  2\n"));
  /* The transfer belongs to the stage that receives the data. */
  ck_assert_ptr_nonnull(strstr(t, "stage 0: devices [0,1], 2 ops\n"));
  ck_assert_ptr_nonnull(strstr(t, "stage 1: devices [2,3], 2 ops\n"));
  ck_assert_ptr_nonnull(strstr(t, "index  op         outputs  layout           devices  pinned\n"));
  ck_assert_ptr_nonnull(strstr(t, "    0  matmul     h0       split(dim=1, 2)  [0,1]    yes\n"));
  ck_assert_ptr_nonnull(strstr(t, "    2  transfer*  h1@2,3   split(dim=1, 2)  [2,3]    no\n"));
  ck_assert_ptr_nonnull(strstr(t, "transfers: 1, 2.0 KiB (2048)\n"));
  ck_assert_ptr_nonnull(strstr(t, "  h1     [0,1]  [2,3]  2.0 KiB (2048)          3\n"));
  ck_assert_ptr_nonnull(strstr(t, "devices:\n"));
  ck_assert_ptr_nonnull(strstr(t, "8.0 KiB (8192)"));
  ck_assert_ptr_nonnull(strstr(t, "  total "));
  ck_assert_ptr_nonnull(strstr(t, "stage balance:\n"));
  ck_assert_ptr_nonnull(strstr(t, "flops imbalance (max/mean): "));
  ck_assert_msg(strstr(t, " \n") == NULL, "trailing blanks:\n%s", t);
  free(t);
  ppcc_graph_free(g);
}
END_TEST

/* Collectives run on their result's devices; op->devices, when set, is
 * what the table shows. */
START_TEST(text_groups_by_sorted_device_set) {
  ppcc_graph *g = ppcc_graph_new("groups", 2);
  const int d01[] = {0, 1}, d10[] = {1, 0};
  int a = add_val(g, "a", PPCC_VALUE_INPUT, 4, 4, unreduced(2), d10, false);
  int b = add_val(g, "b", PPCC_VALUE_RESULT, 4, 4, replicated(2), d10, false);
  int c = add_val(g, "c", PPCC_VALUE_RESULT, 4, 4, replicated(2), d01, false);
  add_op(g, "all_reduce", 1, &a, b, false);
  int r = add_op(g, "relu", 1, &b, c, false);
  g->ops[r].devices = ppcc_dup_ints(g, d01, 2);
  g->ops[r].n_devices = 2;
  char *t = capture(ppcc_report_text, g);
  ck_assert_ptr_nonnull(strstr(t, "stages:  1\n"));
  ck_assert_ptr_nonnull(strstr(t, "stage 0: devices [0,1], 2 ops\n"));
  ck_assert_ptr_nonnull(strstr(t, "all_reduce  b        replicated(2)  [1,0]"));
  free(t);
  ppcc_graph_free(g);
}
END_TEST

/* ---- DOT ---- */

START_TEST(dot_marks_transfers) {
  ppcc_graph *g = ffn_graph();
  char *t = capture(ppcc_report_dot, g);
  ck_assert_ptr_nonnull(strstr(t, "digraph \"ppffn\" {\n"));
  ck_assert_ptr_nonnull(strstr(t, "subgraph cluster_stage0 {"));
  ck_assert_ptr_nonnull(strstr(t, "subgraph cluster_stage1 {"));
  ck_assert_ptr_nonnull(strstr(t, "op2 [shape=cds, color=red"));
  ck_assert_ptr_nonnull(strstr(t, "op1 -> op2 [style=bold, color=red, label=\"2.0 KiB\"];"));
  ck_assert_ptr_nonnull(strstr(t, "op2 -> op3 [style=bold, color=red];"));
  ck_assert_ptr_nonnull(strstr(t, "v1 [shape=ellipse"));
  ck_assert_ptr_nonnull(strstr(t, "v1 -> op0;"));
  ck_assert_ptr_nonnull(strstr(t, "op3 -> out0;"));
  ck_assert(strlen(t) > 2 && strcmp(t + strlen(t) - 2, "}\n") == 0);
  free(t);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(dot_escapes_names) {
  ppcc_graph *g = ppcc_graph_new("q\"uote", 1);
  const int d0[] = {0};
  add_val(g, "x\\\"y", PPCC_VALUE_INPUT, 1, 1, unsharded(), d0, false);
  char *t = capture(ppcc_report_dot, g);
  ck_assert_ptr_nonnull(strstr(t, "digraph \"q\\\"uote\""));
  ck_assert_ptr_nonnull(strstr(t, "label=\"x\\\\\\\"y\\ninput"));
  free(t);
  ppcc_graph_free(g);
}
END_TEST

/* Names holding terminal escapes, C1 controls (U+009B is CSI), a bidi
 * override, a line break and a byte that is not UTF-8 (the loaders refuse
 * them, so the graph is built by hand): every report form shows them
 * escaped by ppcc_escape's family, no such byte reaches the output, the
 * JSON report stays JSON (the names read back exact) and the DOT report
 * shows the text escapes. Fails when one printer prints a name raw. */
static void assert_no_raw_control(const char *what, const char *t) {
  for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
    ck_assert_msg(*p >= 0x20 || *p == '\n', "%s: raw control byte 0x%02x at %zu", what, *p, (size_t)(p - (const unsigned char *)t));
    ck_assert_msg(*p != 0x7f && *p != 0xff, "%s: raw byte 0x%02x", what, *p);
    ck_assert_msg(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "%s: raw C1 control", what);
    ck_assert_msg(!(p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xae), "%s: raw bidi override", what);
  }
}

static char *capture_explain(const ppcc_graph *g, const char *value) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", f);
  ck_assert_int_eq(ppcc_explain(g, value, f, &d), PPCC_OK);
  ck_assert_int_eq(ppcc_explain(g, "no\x1b[2Jsuch", f, &d), PPCC_ERR_USER); /* the diagnostic naming it */
  fclose(f);
  return buf;
}

START_TEST(reports_escape_control_names) {
  const char *in = "x\x1b[2J\x1b[31m", *w = "w\xc2\x9b" "31m\xe2\x80\xae", *h = "h\nnext\x7f\xff";
  ppcc_graph *g = ppcc_graph_new("m\x1b]0;title\x07", 2);
  const int d0[] = {0}, d1[] = {1};
  int x = add_val(g, in, PPCC_VALUE_INPUT, 4, 4, unsharded(), d0, false);
  int wv = add_val(g, w, PPCC_VALUE_PARAM, 4, 4, unsharded(), d0, true);
  int hv = add_val(g, h, PPCC_VALUE_RESULT, 4, 4, unsharded(), d0, false);
  int ht = add_val(g, "h\n@1", PPCC_VALUE_RESULT, 4, 4, unsharded(), d1, false);
  int y = add_val(g, "y\x1b[0m", PPCC_VALUE_RESULT, 4, 4, unsharded(), d1, false);
  add_op(g, "matmul", 2, (int[]){x, wv}, hv, false);
  add_op(g, "transfer", 1, &hv, ht, true);
  add_op(g, "relu", 1, &ht, y, false);
  mark_output(g, y);
  char *text = capture(ppcc_report_text, g), *json = capture(ppcc_report_json, g), *dot = capture(ppcc_report_dot, g);
  char *why = capture_explain(g, "y\x1b[0m");
  char *dump = NULL;
  size_t dump_len = 0;
  FILE *f = open_memstream(&dump, &dump_len);
  ppcc_graph_dump(g, f);
  fclose(f);
  const char *outs[] = {text, json, dot, why, dump}, *names[] = {"text", "json", "dot", "--why", "dump"};
  for (int i = 0; i < 5; i++) assert_no_raw_control(names[i], outs[i]);
  ck_assert_ptr_nonnull(strstr(text, "model:   m\\x1b]0;title\\x07\n"));
  ck_assert_ptr_nonnull(strstr(text, "  h\\nnext\\x7f\\xff  [0]   [1]"));
  ck_assert_ptr_nonnull(strstr(text, "  y\\x1b[0m  "));
  ck_assert_msg(strstr(why, "operand 'x\\x1b[2J\\x1b[31m'") != NULL, "%s", why);
  ck_assert_ptr_nonnull(strstr(why, "operand 'w\\u009b31m\\u202e'"));
  ck_assert_ptr_nonnull(strstr(why, "'y\\x1b[0m': result"));
  ck_assert_ptr_nonnull(strstr(why, "operand 'h\\n@1' is 'h\\nnext\\x7f\\xff'"));
  ck_assert_ptr_nonnull(strstr(why, "test: error: --why: no value named 'no\\x1b[2Jsuch'"));
  ck_assert_ptr_nonnull(strstr(dump, "graph m\\x1b]0;title\\x07 devices=2\n"));
  ck_assert_ptr_nonnull(strstr(dot, "label=\"x\\\\x1b[2J\\\\x1b[31m"));
  ck_assert_ptr_nonnull(strstr(dot, "w\\\\u009b31m\\\\u202e"));
  cJSON *j = cJSON_Parse(json);
  ck_assert_msg(j != NULL, "report is not JSON:\n%s", json);
  ck_assert_str_eq(str(j, "model"), "m\x1b]0;title\x07");
  const cJSON *vals = cJSON_GetObjectItem(j, "values");
  ck_assert_str_eq(str(cJSON_GetArrayItem(vals, 0), "name"), in);
  ck_assert_str_eq(str(cJSON_GetArrayItem(vals, 1), "name"), w); /* valid UTF-8 reads back exact */
  ck_assert_str_eq(str(cJSON_GetArrayItem(vals, 2), "name"), "h\nnext\x7f\xc3\xbf"); /* the stray byte as U+00FF */
  cJSON_Delete(j);
  for (int i = 0; i < 5; i++) free((void *)outs[i]);
  ppcc_graph_free(g);
}
END_TEST

/* ---- compiled models (frontend + passes) ---- */

static const char *pipeline_model =
    "{\"ppcc\": 1, \"name\": \"pp\", \"devices\": 4,"
    " \"params\": [{\"name\": \"w1\", \"dtype\": \"f32\", \"shape\": [64, 64],"
    "   \"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}, \"devices\": [0, 1]},"
    "  {\"name\": \"w2\", \"dtype\": \"f32\", \"shape\": [64, 64],"
    "   \"shard\": {\"kind\": \"replicated\", \"count\": 2}, \"devices\": [2, 3]}],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [8, 64],"
    "   \"shard\": {\"kind\": \"replicated\", \"count\": 2}}],"
    " \"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w1\"], \"out\": [\"h0\"]},"
    "  {\"op\": \"gelu\", \"in\": [\"h0\"], \"out\": [\"h1\"]},"
    "  {\"op\": \"all_gather\", \"in\": [\"h1\"], \"out\": [\"h1g\"]},"
    "  {\"op\": \"matmul\", \"in\": [\"h1g\", \"w2\"], \"out\": [\"h2\"]}],"
    " \"outputs\": [\"h2\"]}";

/* The pass inserts h1g@2,3 before the second matmul: 2 shards of 2048 B. */
START_TEST(compiled_pipeline_report) {
  ppcc_diag d;
  ppcc_graph *g = t_compile(pipeline_model, &d);
  ck_assert_msg(g != NULL, "compile failed: %s", d.first);
  cJSON *j = parse_report(g);
  const cJSON *xs = cJSON_GetObjectItem(j, "transfers");
  ck_assert_int_eq(cJSON_GetArraySize(xs), 1);
  const cJSON *t = cJSON_GetArrayItem(xs, 0);
  ck_assert_str_eq(str(t, "value"), "h1g");
  ck_assert_int_eq((int)num(t, "bytes"), 4096);
  int before = (int)num(t, "before_op");
  const cJSON *consumer = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), before);
  ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(consumer, "in"), 0)->valuestring, "h1g@2,3");
  const cJSON *rows = cJSON_GetObjectItem(j, "device_summary");
  ck_assert_int_eq((int)num(cJSON_GetArrayItem(rows, 0), "param_bytes"), 8192);
  ck_assert_int_eq((int)num(cJSON_GetArrayItem(rows, 2), "param_bytes"), 16384);
  ck_assert_double_eq(num(cJSON_GetArrayItem(rows, 2), "flops"), 65536);
  cJSON_Delete(j);
  char *text = capture(ppcc_report_text, g);
  ck_assert_ptr_nonnull(strstr(text, "stage 1: devices [2,3], 2 ops\n"));
  free(text);
  ppcc_graph_free(g);
}
END_TEST

/* An explicit transfer from the model is listed too; shard 0 stays put. */
START_TEST(compiled_explicit_transfer_partial) {
  const char *model =
      "{\"ppcc\": 1, \"name\": \"p10\", \"devices\": 3,"
      " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4, 8],"
      "   \"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}}],"
      " \"ops\": [{\"op\": \"transfer\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"devices\": [0, 2]}},"
      "  {\"op\": \"relu\", \"in\": [\"y\"], \"out\": [\"z\"]}],"
      " \"outputs\": [\"z\"]}";
  ppcc_diag d;
  ppcc_graph *g = t_compile(model, &d);
  ck_assert_msg(g != NULL, "compile failed: %s", d.first);
  cJSON *j = parse_report(g);
  const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "transfers"), 0);
  ck_assert_str_eq(str(t, "value"), "x");
  assert_int_array(cJSON_GetObjectItem(t, "to"), (int[]){0, 2}, 2);
  ck_assert_int_eq((int)num(t, "bytes"), 64);
  ck_assert_int_eq((int)num(t, "before_op"), 1);
  const cJSON *op0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), 0);
  ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(op0, "inserted")));
  cJSON_Delete(j);
  ppcc_graph_free(g);
}
END_TEST

/* ---- scale: reports must stay linear in the graph size ---- */

static ppcc_graph *chain_graph(int n_ops) {
  ppcc_graph *g = ppcc_graph_new("chain", 8);
  char name[32];
  int prev = add_val(g, "x", PPCC_VALUE_INPUT, 16, 16, replicated(2), (int[]){0, 1}, false);
  for (int i = 0; i < n_ops; i++) {
    int stage = ((i + 1) / 1000) % 4; /* op 999 moves data to stage 1 */
    const int devs[] = {2 * stage, 2 * stage + 1};
    snprintf(name, sizeof name, "h%d", i);
    int v = add_val(g, name, PPCC_VALUE_RESULT, 16, 16, replicated(2), devs, false);
    add_op(g, i % 1000 == 999 ? "transfer" : "relu", 1, &prev, v, false);
    prev = v;
  }
  mark_output(g, prev);
  return g;
}

START_TEST(reports_scale_linearly) {
  ppcc_graph *g = chain_graph(100000);
  FILE *null = fopen("/dev/null", "w");
  ck_assert_ptr_nonnull(null);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  clock_t start = clock();
  ck_assert_int_eq(ppcc_report_json(g, null, &d), PPCC_OK);
  ck_assert_int_eq(ppcc_report_text(g, null, &d), PPCC_OK);
  ck_assert_int_eq(ppcc_report_dot(g, null, &d), PPCC_OK);
  double secs = (double)(clock() - start) / CLOCKS_PER_SEC;
  fprintf(stderr, "reports on 100k ops took %.1f s\n", secs); /* timing belongs to bench/ */
  fclose(null);
  ppcc_device_summary *s = ppcc_device_summaries(g);
  ck_assert_int_eq(s[0].peak_activation_bytes, 2048); /* one input + one result */
  free(s);
  ppcc_graph_free(g);
}
END_TEST

Suite *report_suite(void) {
  Suite *s = suite_create("report");
  TCase *tc = t_add_tcase(s, "summary", 0);
  tcase_add_test(tc, summary_param_bytes_per_shard_device);
  tcase_add_test(tc, summary_peak_activation);
  tcase_add_test(tc, summary_flops_split_between_shards);
  tcase_add_test(tc, summary_flops_replicated_unsharded_unreduced);
  tcase_add_test(tc, summary_uses_declared_devices);
  tcase_add_test(tc, summary_inplace_result_aliases_destination);
  tc = t_add_tcase(s, "json", 0);
  tcase_add_test(tc, json_has_exact_keys);
  tcase_add_test(tc, json_values_and_ops);
  tcase_add_test(tc, json_transfers);
  tcase_add_test(tc, json_transfer_skips_shard_on_target);
  tcase_add_test(tc, json_escapes_names);
  tcase_add_test(tc, json_is_deterministic);
  tcase_add_test(tc, json_empty_graph);
  tc = t_add_tcase(s, "text_dot", 0);
  tcase_add_test(tc, text_has_stage_tables);
  tcase_add_test(tc, text_groups_by_sorted_device_set);
  tcase_add_test(tc, dot_marks_transfers);
  tcase_add_test(tc, dot_escapes_names);
  tcase_add_test(tc, reports_escape_control_names);
  tc = t_add_tcase(s, "compiled", 0);
  tcase_add_test(tc, compiled_pipeline_report);
  tcase_add_test(tc, compiled_explicit_transfer_partial);
  tc = t_add_tcase(s, "scale", 120);
  tcase_add_test(tc, reports_scale_linearly);
  return s;
}

int main(void) { return t_run_suite(report_suite()); }
