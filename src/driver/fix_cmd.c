/* Placement errors with their fixes on the command line (issue 17 item 3):
 * the notes and fixes after a failed compile (text or --diagnostics=json)
 * and `ppcc fix MODEL.json -o FIXED.json`, which applies the first fix of
 * each error until the model compiles. Fixes come from src/fix/. */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "ppcc/fix.h"
#include "ppcc/io.h"

/* ---------------- ppcc fix ---------------- */

#define FIX_MAX_ROUNDS 32

typedef struct fix_args {
  const char *out_path;
  int pick; /* apply the pick-th fix of each error (1 = the first) */
  cli_partition partition;
} fix_args;

static const cli_option fix_cmd_options[] = {
  CLI_TEXT_ROW("o", "FILE", fix_args, out_path, "where to write the fixed model (required)"),
  CLI_INT_ROW("pick", "N", fix_args, pick, 1, 3,
              "apply the N-th proposed fix (1-3) where an error has\n"
              "that many, else the first (default 1)"),
  CLI_GROUP_ROW(fix_args, partition, cli_partition_options),
  CLI_GROUP_ROW(fix_args, partition, cli_diagnostics_options),
  CLI_END_ROW,
};

static const cli_command fix_command = {
  .name = "fix",
  .usage = "Usage: ppcc fix MODEL.json -o FIXED.json [--diagnostics=text|json]\n"
           "\n"
           "Compiles MODEL.json; while a placement error stops it, applies the first\n"
           "fix proposed for that error (an inserted transfer or collective, a changed\n"
           "pin, a block of params moved to another stage when a device is over its\n"
           "--devices-spec memory) and compiles again, at most 32 times. Writes the\n"
           "model that compiles to FIXED.json and lists the fixes applied on stdout.\n"
           "Fails, writing nothing, with the remaining error when no fix applies; a\n"
           "fix that changes the command line (--tp, --pp, --device-memory) is shown,\n"
           "not applied.\n",
  .options = fix_cmd_options,
};

void cli_help_fix(FILE *out) { cli_print_help(&fix_command, out); }

/* True if the fix only edits the model (no command-line option). */
static bool edits_model_only(const cJSON *fix) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(fix, "edits")) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "edit");
    if (!cJSON_IsString(k) || strcmp(k->valuestring, "set_option") == 0) return false;
  }
  return true;
}

static ppcc_status write_model(const char *path, const cJSON *model, ppcc_diag *d) {
  cli_buffer buf = {.data = cJSON_Print(model)};
  if (!buf.data) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  buf.len = strlen(buf.data);
  /* A trailing newline, like every other file ppcc writes. */
  char *nl = realloc(buf.data, buf.len + 2);
  if (!nl) {
    free(buf.data);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  buf.data = nl;
  buf.data[buf.len++] = '\n';
  buf.data[buf.len] = '\0';
  ppcc_status st = cli_write_outputs(&path, &buf, 1, d);
  cli_buffer_free(&buf);
  return st;
}

/* One round: compiles; on a placement error with a model fix, applies it. */
static ppcc_status fix_round(const char *path, cJSON *model, const ppcc_fix_options *opt, const fix_args *a,
                             cJSON *applied, bool *done) {
  bool json = a->partition.diagnostics_json;
  ppcc_diag d, out; /* d: quiet, for this compile; out: what the user sees */
  ppcc_diag_init(&d, path, NULL);
  ppcc_diag_init(&out, path, json ? NULL : stderr);
  ppcc_status st;
  ppcc_graph *g = ppcc_fix_compile(model, opt, &d, &st, true);
  *done = st == PPCC_OK;
  if (st == PPCC_OK || st != PPCC_ERR_USER || !g) {
    if (st != PPCC_OK) ppcc_error_status(&out, st, "%s", d.first);
    cJSON *diag = st != PPCC_OK && json ? ppcc_fix_diagnose(NULL, NULL, &d, opt) : NULL;
    if (diag) cli_emit_diagnosis(path, diag, &out, true, applied);
    cJSON_Delete(diag);
    ppcc_graph_free(g);
    return st;
  }
  cJSON *diag = ppcc_fix_diagnose(model, g, &d, opt);
  ppcc_graph_free(g);
  if (!diag) return ppcc_error_status(&out, PPCC_ERR_INTERNAL, "out of memory");
  const cJSON *fixes = cJSON_GetObjectItemCaseSensitive(diag, "fixes");
  int pick = a->pick > 0 && a->pick <= cJSON_GetArraySize(fixes) ? a->pick - 1 : 0;
  cJSON *first = cJSON_GetArrayItem(fixes, pick);
  char why[300] = "";
  if (first && edits_model_only(first) && ppcc_fix_apply(model, first, &(ppcc_fix_options){0}, why, sizeof why)) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(first, "text");
    fputs("applied: ", stdout);
    ppcc_escape_fputs(stdout, cJSON_IsString(text) ? text->valuestring : "?", PPCC_ESCAPE_TEXT);
    putchar('\n');
    cJSON_AddItemToArray(applied, cJSON_Duplicate(first, true));
    cJSON_Delete(diag);
    return PPCC_OK;
  }
  /* No fix applies: the remaining error, explained, and nothing written. */
  ppcc_error(&out, "%s", d.first);
  cli_emit_diagnosis(path, diag, &out, json, applied);
  if (why[0]) ppcc_diag_detail(&out, "note", "the fix does not apply: %s", why);
  else if (first) ppcc_diag_detail(&out, "note", "the fix changes the command line, not the model; ppcc fix leaves that to you");
  cJSON_Delete(diag);
  return PPCC_ERR_USER;
}

int cli_cmd_fix(int argc, char **argv) {
  fix_args a = {0};
  cli_parse p = {.cmd = &fix_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st != PPCC_OK || p.help) return st;
  if (!a.out_path) return cli_usage_error("fix", "missing -o FIXED.json (where to write the fixed model)");
  if ((st = cli_check_partition("fix", &a.partition)) != PPCC_OK) return st;
  ppcc_diag d;
  ppcc_diag_init(&d, p.model_path, stderr);
  cJSON *model = cli_read_model(p.model_path);
  if (!model) {
    /* Let the loader say what is wrong with the file, one line. */
    ppcc_graph_free(cli_load_and_compile_partitioned(p.model_path, NULL, &a.partition, &d, &st));
    return st != PPCC_OK ? st : PPCC_ERR_USER;
  }
  ppcc_fix_options opt = cli_fix_options(&a.partition);
  cJSON *applied = cJSON_CreateArray();
  bool done = false;
  int rounds = 0;
  st = applied ? PPCC_OK : PPCC_ERR_INTERNAL;
  while (st == PPCC_OK && !done && rounds++ <= FIX_MAX_ROUNDS) st = fix_round(p.model_path, model, &opt, &a, applied, &done);
  if (st == PPCC_OK && !done)
    st = ppcc_error(&d, "still does not compile after %d fixes; giving up", FIX_MAX_ROUNDS);
  if (st == PPCC_OK) {
    st = write_model(a.out_path, model, &d);
    char shown[1024];
    ppcc_escape_text(shown, sizeof shown, a.out_path);
    if (st == PPCC_OK)
      printf("%d fix%s applied; '%s' compiles\n", cJSON_GetArraySize(applied),
             cJSON_GetArraySize(applied) == 1 ? "" : "es", shown);
  }
  cJSON_Delete(applied);
  cJSON_Delete(model);
  return st;
}
