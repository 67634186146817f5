/* libFuzzer target: model.json text -> frontend -> every pass (with or
 * without an auto-partition request) -> the JSON, text and DOT reports,
 * the per-device summary, explain and the graph dump; a placement error's
 * diagnosis and fixes (src/fix/), each fix applied to a copy of the model.
 *
 * The input is handed over as (pointer, length) without a terminating NUL,
 * exactly as ppcc_load_model_string promises to accept it, so an over-read
 * past the end is caught by ASan. Any outcome is fine except a crash, a
 * sanitizer report, a leak or an error without a diagnostic. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/fix.h"
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"

/* The auto-partition request (--pp/--tp/--device-memory) is derived from a
 * hash of the input, so every mutation of a model is also tried with some
 * request, and a crashing input reproduces by itself. A quarter of the
 * inputs run without one (the model's own placement). */
static void choose_partition(ppcc_graph *g, const uint8_t *data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  if ((h & 3) == 0) return;
  g->partition.pp = 1 + (int)((h >> 2) & 3);
  g->partition.tp = 1 + (int)((h >> 4) & 1);
  g->partition.device_memory = (h >> 5) & 1 ? (int64_t)1 << (12 + ((h >> 6) & 15)) : 0;
}

static FILE *sink(void) {
  static FILE *null_out;
  if (!null_out) null_out = fopen("/dev/null", "w");
  return null_out;
}

/* A failing stage must say why: a NULL graph or a non-OK status with no
 * diagnostic is a bug (the driver would exit 3 without a message). */
static void require_diag(const ppcc_diag *d, const char *stage) {
  if (d->errors == 0 || d->first[0] == 0) {
    fprintf(stderr, "fuzz_model: %s failed without a diagnostic\n", stage);
    abort();
  }
}

/* The fixes of a placement error: diagnosed (which compiles each
 * candidate) and every one applied to a copy of the model. */
static void try_fixes(const ppcc_graph *g, const ppcc_diag *d, const uint8_t *data, size_t size) {
  if (d->site.kind == PPCC_SITE_NONE) return;
  cJSON *model = cJSON_ParseWithLength((const char *)data, size);
  if (!model) return; /* the frontend accepted it, cJSON should too; nothing to fix without it */
  ppcc_fix_options opt = {.pp = g->partition.pp, .tp = g->partition.tp, .device_memory = g->partition.device_memory};
  cJSON *diag = ppcc_fix_diagnose(model, g, d, &opt);
  const cJSON *fix;
  cJSON_ArrayForEach(fix, cJSON_GetObjectItemCaseSensitive(diag, "fixes")) {
    cJSON *copy = cJSON_Duplicate(model, true);
    ppcc_fix_options o = opt;
    char why[300];
    if (copy && !ppcc_fix_apply(copy, fix, &o, why, sizeof why)) {
      fprintf(stderr, "fuzz_model: a proposed fix does not apply: %s\n", why);
      abort();
    }
    cJSON_Delete(copy);
  }
  cJSON_Delete(diag);
  cJSON_Delete(model);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *out = sink();
  if (!out) return 0;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz.json", NULL);
  ppcc_graph *g = ppcc_load_model_string((const char *)data, size, &d);
  if (!g) {
    require_diag(&d, "the frontend");
    return 0;
  }
  choose_partition(g, data, size);
  ppcc_status st = ppcc_run_passes(g, NULL, NULL, &d);
  if (st != PPCC_OK) {
    require_diag(&d, "the passes");
    try_fixes(g, &d, data, size);
  } else {
    ppcc_diag_init(&d, "fuzz.json", NULL);
    if (ppcc_report_json(g, out, &d) != PPCC_OK) require_diag(&d, "the JSON report");
    if (ppcc_report_text(g, out, &d) != PPCC_OK) require_diag(&d, "the text report");
    if (ppcc_report_dot(g, out, &d) != PPCC_OK) require_diag(&d, "the DOT report");
    free(ppcc_device_summaries(g));
    for (int i = 0; i < g->n_outputs && i < 4; i++) {
      ppcc_diag_init(&d, "fuzz.json", NULL);
      if (ppcc_explain(g, g->values[g->outputs[i]].name, out, &d) != PPCC_OK) require_diag(&d, "explain");
    }
    ppcc_diag_init(&d, "fuzz.json", NULL);
    if (ppcc_explain(g, "no such value @", out, &d) == PPCC_OK) {
      fprintf(stderr, "fuzz_model: explain accepted an unknown value\n");
      abort();
    }
    ppcc_graph_dump(g, out);
  }
  ppcc_graph_free(g);
  return 0;
}
