/* Loading and compiling a model for every command that takes one
 * (compile, report, run, fix, calibrate), and what follows a failed
 * compile: the --why chain and fixes of a placement error (src/fix/) as
 * notes, or with --diagnostics=json one JSON document. `ppcc fix` builds
 * on the same functions; no command calls another's file. */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "ppcc/fix.h"
#include "ppcc/frontend.h"
#include "ppcc/io.h"
#include "ppcc/passes.h"

ppcc_graph *cli_load_and_compile(const char *model_path, const char *dump_after,
                                 ppcc_diag *d, ppcc_status *status) {
  return cli_load_and_compile_partitioned(model_path, dump_after, NULL, d, status);
}

ppcc_graph *cli_load_and_compile_partitioned(const char *model_path, const char *dump_after,
                                             const cli_partition *req, ppcc_diag *d,
                                             ppcc_status *status) {
  bool json = req && req->diagnostics_json;
  ppcc_diag_init(d, model_path, json ? NULL : stderr); /* JSON: one document at the end */
  ppcc_graph *g = ppcc_load_model_file(model_path, d);
  if (!g) {
    /* No diagnostic means the loader itself failed (out of memory). */
    *status = d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
    if (json) cli_report_failure(model_path, NULL, d, req);
    return NULL;
  }
  cli_apply_partition(g, req);
  *status = ppcc_run_passes(g, dump_after, stderr, d);
  if (*status == PPCC_OK && req && req->devices_spec.n_devices && req->pp == 0 && req->tp == 0)
    *status = ppcc_devices_spec_check_memory(g, &req->devices_spec, d); /* a placed model */
  if (*status != PPCC_OK) {
    cli_report_failure(model_path, g, d, req); /* the --why chain and fixes */
    ppcc_graph_free(g);
    return NULL;
  }
  d->sink = stderr; /* later errors (rendering, running) stay one line each */
  return g;
}

ppcc_fix_options cli_fix_options(const cli_partition *req) {
  ppcc_fix_options o = {0};
  if (!req) return o;
  /* The same request the compile itself gets (cli_apply_partition). */
  ppcc_graph probe = {0};
  cli_apply_partition(&probe, req);
  o = (ppcc_fix_options){.pp = req->pp, .tp = req->tp, .device_memory = req->device_memory,
                         .stage_tp = probe.partition.stage_tp, .devices_spec = probe.partition.devices_spec};
  return o;
}

/* The model as parsed JSON; NULL if it does not read or parse (the loader
 * has reported that already). */
cJSON *cli_read_model(const char *path) {
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, path, NULL);
  size_t len = 0;
  char *text = ppcc_read_file(path, &len, &quiet);
  cJSON *model = text ? cJSON_ParseWithLength(text, len) : NULL;
  free(text);
  return model;
}

static void print_json_document(const char *path, cJSON *errors, cJSON *applied) {
  cJSON *doc = cJSON_CreateObject();
  if (!doc) return;
  cJSON_AddNumberToObject(doc, "ppcc_diagnostics", 1);
  cJSON_AddStringToObject(doc, "file", path);
  if (applied) cJSON_AddItemReferenceToObject(doc, "applied", applied);
  cJSON_AddItemReferenceToObject(doc, "errors", errors);
  char *text = cJSON_Print(doc);
  if (text) fprintf(stderr, "%s\n", text);
  free(text);
  cJSON_Delete(doc);
}

/* One diagnosis, as notes after the error line (through d) or as the JSON
 * document. */
void cli_emit_diagnosis(const char *path, cJSON *diag, ppcc_diag *d, bool json, cJSON *applied) {
  if (!json) {
    ppcc_fix_print_text(diag, d);
    return;
  }
  cJSON *errors = cJSON_CreateArray();
  if (errors && cJSON_AddItemReferenceToArray(errors, diag)) print_json_document(path, errors, applied);
  cJSON_Delete(errors);
}

void cli_report_failure(const char *model_path, const ppcc_graph *g, ppcc_diag *d,
                        const cli_partition *req) {
  bool json = req && req->diagnostics_json;
  if (!json && (!g || d->site.kind == PPCC_SITE_NONE)) return; /* one line said it all */
  cJSON *model = g ? cli_read_model(model_path) : NULL;
  ppcc_fix_options opt = cli_fix_options(req);
  cJSON *diag = ppcc_fix_diagnose(model, model ? g : NULL, d, &opt);
  if (diag) cli_emit_diagnosis(model_path, diag, d, json, NULL);
  cJSON_Delete(diag);
  cJSON_Delete(model);
}
