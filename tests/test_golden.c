/* Golden tests: every model in testdata/models compiles, and its JSON, text
 * and DOT placement reports match testdata/golden/ byte for byte
 * (regenerate with tools/update_goldens.sh after an intended change).
 * Also the placement facts the design requires for the example models. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/io.h"
#include "ppcc/ops.h"
#include "ppcc/predict.h"
#include "ppcc/report.h"
#include "ppcc/runtime.h"
#include "test_support.h"
#include "../tools/pipeline_model.h"

/* ---------------- the model list ---------------- */

#define MAX_MODELS 256
static char *model_names[MAX_MODELS]; /* "ppffn" for testdata/models/ppffn.json */
static int n_models;

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n > m && strcmp(s + n - m, suffix) == 0;
}

/* Scans the directory so that a new model is tested without editing this
 * file (and fails until its goldens exist). */
static void list_models(void) {
  DIR *dir = opendir(t_src_path("testdata/models"));
  if (!dir) return;
  for (struct dirent *e; (e = readdir(dir)) && n_models < MAX_MODELS;) {
    if (!has_suffix(e->d_name, ".json")) continue;
    char *name = strdup(e->d_name);
    if (!name) break;
    name[strlen(name) - strlen(".json")] = '\0';
    model_names[n_models++] = name;
  }
  closedir(dir);
  qsort(model_names, (size_t)n_models, sizeof model_names[0], compare_names);
}

static void free_models(void) {
  for (int i = 0; i < n_models; i++) free(model_names[i]);
}

/* ---------------- golden comparison ---------------- */

typedef struct report_kind {
  const char *extension;
  ppcc_status (*write)(const ppcc_graph *g, const ppcc_predict_options *o, FILE *out, ppcc_diag *d);
} report_kind;

static const report_kind report_kinds[] = {
  {"report.json", ppcc_report_json_with},
  {"report.txt", ppcc_report_text_with},
  {"report.dot", ppcc_report_dot_with},
};

/* Renders one report into *buf (caller frees); the caller owns the
 * memstream's buffer pointer, so it outlives the stream. The prediction
 * mirrors the interpreter's reshape views, as `ppcc compile --report`'s
 * does (src/driver/compile.c), so the goldens are what users see. */
static void render(const ppcc_graph *g, const report_kind *kind, char **buf, size_t *len) {
  *buf = NULL;
  FILE *mem = open_memstream(buf, len);
  ck_assert_ptr_nonnull(mem);
  ppcc_diag d;
  ppcc_diag_init(&d, "render", NULL);
  bool *views = ppcc_rt_view_ops(g);
  ppcc_predict_options opts = {.view_ops = views};
  ppcc_status st = kind->write(g, &opts, mem, &d);
  free(views);
  fclose(mem);
  ck_assert_msg(st == PPCC_OK, "%s report failed: %s", kind->extension, d.first);
}

/* 1-based line number where a and b first differ, and that line of each. */
static int first_difference(const char *a, size_t na, const char *b, size_t nb,
                            const char **line_a, const char **line_b) {
  int line = 1;
  size_t start = 0;
  for (size_t i = 0; i < na && i < nb && a[i] == b[i]; i++)
    if (a[i] == '\n') {
      line++;
      start = i + 1;
    }
  *line_a = a + start;
  *line_b = b + start;
  return line;
}

static int line_length(const char *s, const char *end) {
  const char *nl = memchr(s, '\n', (size_t)(end - s));
  return (int)((nl ? nl : end) - s);
}

static void check_golden(const char *model, const report_kind *kind, const char *got, size_t got_len) {
  char rel[512];
  snprintf(rel, sizeof rel, "testdata/golden/%s.%s", model, kind->extension);
  ppcc_diag d;
  ppcc_diag_init(&d, rel, NULL);
  size_t want_len = 0;
  char *want = ppcc_read_file(t_src_path(rel), &want_len, &d);
  ck_assert_msg(want, "%s: no golden (run tools/update_goldens.sh): %s", rel, d.first);
  bool same = want_len == got_len && memcmp(want, got, got_len) == 0;
  if (!same) {
    const char *lw, *lg;
    int line = first_difference(want, want_len, got, got_len, &lw, &lg);
    fprintf(stderr, "%s differs at line %d:\n  golden: %.*s\n  actual: %.*s\n", rel, line,
            line_length(lw, want + want_len), lw, line_length(lg, got + got_len), lg);
  }
  free(want);
  ck_assert_msg(same, "%s does not match (see stderr; tools/update_goldens.sh regenerates)", rel);
}

START_TEST(test_model_matches_goldens) {
  const char *model = model_names[_i];
  char rel[512];
  snprintf(rel, sizeof rel, "testdata/models/%s.json", model);
  ppcc_diag d;
  ppcc_graph *g = t_compile_file(rel, &d);
  ck_assert_msg(g, "%s does not compile: %s", rel, d.first);
  for (size_t k = 0; k < sizeof report_kinds / sizeof report_kinds[0]; k++) {
    size_t len = 0;
    char *got = NULL;
    render(g, &report_kinds[k], &got, &len);
    check_golden(model, &report_kinds[k], got, len);
    free(got);
  }
  ppcc_graph_free(g);
}
END_TEST

START_TEST(test_models_exist) {
  ck_assert_msg(n_models >= 4, "expected the example models in testdata/models, found %d", n_models);
}
END_TEST

/* ---------------- placement facts ---------------- */

static int count_transfers(const ppcc_graph *g, bool inserted) {
  int n = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i].info->family == PPCC_FAMILY_TRANSFER && g->ops[i].inserted == inserted) n++;
  return n;
}

static const ppcc_op *find_transfer(const ppcc_graph *g) {
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i].info->family == PPCC_FAMILY_TRANSFER) return &g->ops[i];
  return NULL;
}

static void assert_devices(const ppcc_value *v, int n, const int *want) {
  ck_assert_msg(v->layout.count == n, "'%s' has %d shards, expected %d", v->name, v->layout.count, n);
  char got[128], exp[128];
  ppcc_devices_str(v->devices, n, got, sizeof got);
  ppcc_devices_str(want, n, exp, sizeof exp);
  ck_assert_msg(ppcc_devices_equal(v->devices, want, n), "'%s' is on %s, expected %s", v->name, got, exp);
}

static void assert_params_pinned(const ppcc_graph *g) {
  for (int i = 0; i < g->n_values; i++)
    if (g->values[i].kind == PPCC_VALUE_PARAM)
      ck_assert_msg(g->values[i].pinned, "param '%s' is not pinned", g->values[i].name);
}

/* PPFFN (sharktank's pipeline-parallel example): blocks 0-1 on [0,1],
 * blocks 2-3 on [2,3]. One transfer per stage boundary, with 2 shards; the
 * activation crossing it is unpinned; the final unshard lands on device 0. */
START_TEST(test_ppffn_placement) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/ppffn.json", &d);
  ck_assert_msg(g, "ppffn does not compile: %s", d.first);
  assert_params_pinned(g);
  ck_assert_int_eq(count_transfers(g, true), 1); /* one stage boundary */
  ck_assert_int_eq(count_transfers(g, false), 0);

  const ppcc_op *t = find_transfer(g);
  const ppcc_value *moved = &g->values[t->in[0]], *arrived = &g->values[t->out[0]];
  ck_assert_str_eq(moved->name, "blk.1.y");
  ck_assert_msg(!moved->pinned, "the activation crossing stages must be unpinned");
  assert_devices(moved, 2, (int[]){0, 1});
  assert_devices(arrived, 2, (int[]){2, 3});

  assert_devices(t_value(g, "blk.1.h"), 2, (int[]){0, 1});
  assert_devices(t_value(g, "blk.2.h"), 2, (int[]){2, 3});
  const ppcc_value *out = t_value(g, "out");
  ck_assert_int_eq(out->layout.kind, PPCC_LAYOUT_UNSHARDED);
  assert_devices(out, 1, (int[]){0});
  ppcc_graph_free(g);
}
END_TEST

/* TP=1, PP=4 with unsharded values and no transfer in the model: each
 * stage's gelu result is an activation (P4 v2), so it follows the next
 * stage's pinned weight through an inserted transfer, one per boundary. */
START_TEST(test_pp_chain_placement) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &d);
  ck_assert_msg(g, "pp_chain does not compile: %s", d.first);
  assert_params_pinned(g);
  ck_assert_int_eq(count_transfers(g, false), 0);
  ck_assert_int_eq(count_transfers(g, true), 3);
  for (int s = 0; s < 4; s++) {
    char name[32];
    snprintf(name, sizeof name, "stage.%d.y", s);
    assert_devices(t_value(g, name), 1, (int[]){s});
    ck_assert_msg(!t_value(g, name)->pinned, "'%s' must be unpinned (P4)", name);
    if (s == 0) continue;
    snprintf(name, sizeof name, "stage.%d.y@%d", s - 1, s);
    const ppcc_value *moved = t_value(g, name);
    assert_devices(moved, 1, (int[]){s});
    ck_assert_msg(g->ops[moved->def_op].inserted, "'%s' must come from an inserted transfer", name);
  }
  ppcc_graph_free(g);
}
END_TEST

/* sharktank's own PPFFN (export_ppffn_net.py): 8 layers of
 * all_reduce(linear(x, w_i)), x replicated on [0,1], w_i split on its input
 * features and pinned on stage i/2's devices. It compiles unchanged:
 * exactly one inserted transfer per stage boundary, 2 shards each, weights
 * pinned, every activation unpinned. */
START_TEST(test_ppffn_sharktank_placement) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/ppffn_sharktank.json", &d);
  ck_assert_msg(g, "ppffn_sharktank does not compile: %s", d.first);
  assert_params_pinned(g);
  ck_assert_int_eq(count_transfers(g, false), 0);
  ck_assert_int_eq(count_transfers(g, true), 3);
  int boundary = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    if (op->info->family != PPCC_FAMILY_TRANSFER) continue;
    const ppcc_value *from = &g->values[op->in[0]], *to = &g->values[op->out[0]];
    ck_assert_int_eq(to->layout.count, 2);
    assert_devices(from, 2, (int[]){2 * boundary, 2 * boundary + 1});
    assert_devices(to, 2, (int[]){2 * boundary + 2, 2 * boundary + 3});
    boundary++;
  }
  for (int i = 0; i < g->n_values; i++) {
    const ppcc_value *v = &g->values[i];
    if (v->kind != PPCC_VALUE_PARAM)
      ck_assert_msg(!v->pinned, "activation '%s' is pinned", v->name);
  }
  for (int l = 0; l < 8; l++) {
    char name[32];
    snprintf(name, sizeof name, "blk.%d.partial", l);
    ck_assert_int_eq(t_value(g, name)->layout.kind, PPCC_LAYOUT_UNREDUCED);
    assert_devices(t_value(g, name), 2, (int[]){2 * (l / 2), 2 * (l / 2) + 1});
  }
  ppcc_graph_free(g);
}
END_TEST

/* Generated pipelines (tools/pipeline_model.h): exactly one inserted
 * transfer per stage boundary, with tp shards, from stage s to s+1. */
static const int pipeline_shapes[][3] = {{8, 1, 4}, {8, 2, 4}, {12, 4, 3}, {5, 2, 2}, {3, 1, 1}};

START_TEST(test_generated_pipeline_transfers) {
  pipeline_config c = pipeline_defaults;
  c.blocks = pipeline_shapes[_i][0];
  c.tp = pipeline_shapes[_i][1];
  c.pp = pipeline_shapes[_i][2];
  ck_assert_ptr_null(pipeline_config_error(&c));
  char *json = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&json, &len);
  pipeline_write_model(mem, &c);
  fclose(mem);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  free(json);
  ck_assert_msg(g, "generated pipeline does not compile: %s", d.first);
  assert_params_pinned(g);
  ck_assert_int_eq(count_transfers(g, true), (int)c.pp - 1);
  int stage = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    if (op->info->family != PPCC_FAMILY_TRANSFER) continue;
    const ppcc_value *from = &g->values[op->in[0]], *to = &g->values[op->out[0]];
    ck_assert_msg(!from->pinned, "'%s' crosses stages but is pinned", from->name);
    ck_assert_int_eq(to->layout.count, (int)c.tp);
    for (int t = 0; t < c.tp; t++) {
      ck_assert_int_eq(from->devices[t], stage * (int)c.tp + t);
      ck_assert_int_eq(to->devices[t], (stage + 1) * (int)c.tp + t);
    }
    stage++;
  }
  assert_devices(t_value(g, "out"), 1, (int[]){0});
  ppcc_graph_free(g);
}
END_TEST

/* An explicit transfer is kept (P8) and makes an inserted one unneeded. */
START_TEST(test_explicit_transfer_kept) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/explicit_transfer.json", &d);
  ck_assert_msg(g, "explicit_transfer does not compile: %s", d.first);
  ck_assert_int_eq(count_transfers(g, false), 1);
  ck_assert_int_eq(count_transfers(g, true), 0);
  const ppcc_value *moved = t_value(g, "r0.moved");
  ck_assert(!moved->pinned);
  assert_devices(moved, 2, (int[]){2, 3});
  assert_devices(t_value(g, "y"), 2, (int[]){2, 3});
  ppcc_graph_free(g);
}
END_TEST

static Suite *golden_suite(void) {
  Suite *s = suite_create("golden");
  TCase *tc = t_add_tcase(s, "goldens", 0);
  tcase_add_test(tc, test_models_exist);
  tcase_add_loop_test(tc, test_model_matches_goldens, 0, n_models);
  TCase *facts = t_add_tcase(s, "placement", 0);
  tcase_add_test(facts, test_ppffn_placement);
  tcase_add_test(facts, test_pp_chain_placement);
  tcase_add_test(facts, test_ppffn_sharktank_placement);
  tcase_add_test(facts, test_explicit_transfer_kept);
  tcase_add_loop_test(facts, test_generated_pipeline_transfers, 0,
                      (int)(sizeof pipeline_shapes / sizeof pipeline_shapes[0]));
  return s;
}

int main(void) {
  list_models();
  int rc = t_run_suite(golden_suite());
  free_models();
  return rc;
}
