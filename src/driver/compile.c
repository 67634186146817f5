/* `ppcc compile` and `ppcc report`: load a model, run the passes, and write
 * the placement report and/or the emitted MLIR. */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"
#include "ppcc/runtime.h"
#ifdef PPCC_HAVE_MLIR
#include "ppcc/emit.h"
#endif

/* ---------------- report formats ---------------- */

typedef struct report_format {
  const char *name;      /* --format value */
  const char *extension; /* --report=FILE.ext */
  ppcc_status (*write)(const ppcc_graph *g, const ppcc_predict_options *p, FILE *out, ppcc_diag *d);
} report_format;

static const report_format report_formats[] = {
  {"text", ".txt", ppcc_report_text_with},
  {"json", ".json", ppcc_report_json_with},
  {"dot", ".dot", ppcc_report_dot_with},
};
#define N_REPORT_FORMATS (int)(sizeof report_formats / sizeof report_formats[0])

static const report_format *format_by_name(const char *name) {
  for (int i = 0; i < N_REPORT_FORMATS; i++)
    if (strcmp(report_formats[i].name, name) == 0) return &report_formats[i];
  return NULL;
}

static const report_format *format_by_path(const char *path) {
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash)) return NULL;
  for (int i = 0; i < N_REPORT_FORMATS; i++)
    if (strcmp(report_formats[i].extension, dot) == 0) return &report_formats[i];
  return NULL;
}

/* A report in one format with the prediction's options. */
typedef struct report_request {
  const report_format *fmt;
  const ppcc_predict_options *predict;
} report_request;

/* The prediction mirrors the interpreter's buffers, reshape views
 * included (ppcc_rt_view_ops; NULL on OOM: no views, an upper bound). */
static ppcc_status render_report(const ppcc_graph *g, FILE *out, ppcc_diag *d, const void *arg) {
  const report_request *r = arg;
  ppcc_predict_options opts = *r->predict;
  bool *views = ppcc_rt_view_ops(g);
  opts.view_ops = views;
  ppcc_status st = r->fmt->write(g, &opts, out, d);
  free(views);
  return st;
}

static ppcc_status render_explain(const ppcc_graph *g, FILE *out, ppcc_diag *d, const void *arg) {
  return ppcc_explain(g, arg, out, d);
}

/* ---------------- emission ---------------- */

typedef struct emit_kind_name {
  const char *name;
  int kind; /* ppcc_emit_kind when built with MLIR */
} emit_kind_name;

static const emit_kind_name emit_kinds[] = {{"mlir", 0}, {"iree", 1}, {"mlir-exec", 2}};
#define N_EMIT_KINDS (int)(sizeof emit_kinds / sizeof emit_kinds[0])

static const emit_kind_name *emit_kind_by_name(const char *name) {
  for (int i = 0; i < N_EMIT_KINDS; i++)
    if (strcmp(emit_kinds[i].name, name) == 0) return &emit_kinds[i];
  return NULL;
}

#ifdef PPCC_HAVE_MLIR
_Static_assert(PPCC_EMIT_MLIR == 0 && PPCC_EMIT_IREE == 1 && PPCC_EMIT_MLIR_EXEC == 2,
               "emit_kinds[] follows ppcc_emit_kind");

static ppcc_status render_emit(const ppcc_graph *g, FILE *out, ppcc_diag *d, const void *arg) {
  const emit_kind_name *kind = arg;
  return cli_emit(g, kind->kind, out, d);
}
#endif

/* ---------------- shared steps ---------------- */

ppcc_status cli_check_pass_name(const char *command, const char *pass_name) {
  if (!pass_name) return PPCC_OK;
  int n = 0;
  const ppcc_pass_info *passes = ppcc_pass_list(&n);
  char names[1024] = "";
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(passes[i].name, pass_name) == 0) return PPCC_OK;
    off += (size_t)snprintf(names + off, off < sizeof names ? sizeof names - off : 0, "%s%s",
                            i ? ", " : "", passes[i].name);
  }
  return cli_usage_error(command, "unknown pass '%s' for --dump-after (passes: %s)", pass_name,
                         names);
}

/* ---------------- ppcc compile ---------------- */

typedef struct compile_args {
  const char *out_path;
  const char *emit;
  const char *report_path;
  const char *dump_after;
  cli_partition partition;
  cli_predict predict;
} compile_args;

static const cli_option compile_options[] = {
  CLI_TEXT_ROW("o", "FILE", compile_args, out_path, "write the emitted MLIR to FILE"),
  CLI_TEXT_ROW("emit", "KIND", compile_args, emit,
               "MLIR form: mlir (annotated, default), iree, mlir-exec;\n"
               "without -o the MLIR goes to stdout"),
  CLI_TEXT_ROW("report", "FILE", compile_args, report_path,
               "write the placement report; the format follows the\n"
               "extension: .json, .txt or .dot"),
  CLI_TEXT_ROW("dump-after", "PASS", compile_args, dump_after, "print the graph after PASS to stderr"),
  CLI_GROUP_ROW(compile_args, partition, cli_partition_options),
  CLI_GROUP_ROW(compile_args, predict, cli_predict_options),
  CLI_GROUP_ROW(compile_args, partition, cli_diagnostics_options),
  CLI_END_ROW,
};

static const cli_command compile_command = {
  .name = "compile",
  .usage = "Usage: ppcc compile MODEL.json [-o OUT.mlir] [--emit=mlir|iree|mlir-exec]\n"
           "                   [--report=R.json|R.txt|R.dot] [--dump-after=PASS]\n"
           "\n"
           "Loads MODEL.json, propagates shardings and device placements, inserts the\n"
           "transfers between devices, then writes the requested outputs. With neither\n"
           "-o, --emit nor --report, prints the text placement report to stdout.\n",
  .options = compile_options,
  .epilog = "\n"
            "Output files are written only when everything succeeded, through a\n"
            "temporary file renamed into place. Exit codes: 0 ok, 1 bad input,\n"
            "2 bad command line, 3 internal error.\n",
};

void cli_help_compile(FILE *out) { cli_print_help(&compile_command, out); }

static ppcc_status check_compile_args(compile_args *a, const report_format **report,
                                      const emit_kind_name **emit) {
  *report = NULL;
  *emit = NULL;
  if (a->report_path) {
    *report = format_by_path(a->report_path);
    if (!*report)
      return cli_usage_error("compile", "--report=%s: unknown extension (use .json, .txt or .dot)",
                             a->report_path);
  }
  if (a->emit || a->out_path) {
    *emit = emit_kind_by_name(a->emit ? a->emit : "mlir");
    if (!*emit)
      return cli_usage_error("compile", "unknown --emit kind '%s' (use mlir, iree or mlir-exec)",
                             a->emit);
#ifndef PPCC_HAVE_MLIR
    fprintf(stderr, "ppcc compile: error: this ppcc was built without MLIR, so -o and --emit are "
                    "unavailable (configure with -DPPCC_WITH_MLIR=ON)\n");
    return PPCC_ERR_USER;
#endif
  }
  ppcc_status st = cli_check_partition("compile", &a->partition);
  return st != PPCC_OK ? st : cli_check_pass_name("compile", a->dump_after);
}

#define MAX_OUTPUTS 2

/* Renders every requested output to memory; returns how many in *n. */
static ppcc_status render_compile_outputs(const ppcc_graph *g, const compile_args *a,
                                          const report_format *report,
                                          const emit_kind_name *emit, const char **paths,
                                          cli_buffer *bufs, int *n, ppcc_diag *d) {
  ppcc_status st = PPCC_OK;
  *n = 0;
  if (report || !emit) {
    paths[*n] = report ? a->report_path : "-";
    report_request r = {report ? report : format_by_name("text"), &a->predict.opts};
    st = cli_render(&bufs[*n], g, render_report, &r, d);
    if (st != PPCC_OK) return st;
    (*n)++;
  }
#ifdef PPCC_HAVE_MLIR
  if (emit) {
    paths[*n] = a->out_path ? a->out_path : "-";
    st = cli_render(&bufs[*n], g, render_emit, emit, d);
    if (st != PPCC_OK) return st;
    (*n)++;
  }
#endif
  return st;
}

int cli_cmd_compile(int argc, char **argv) {
  compile_args a = {0};
  cli_parse p = {.cmd = &compile_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st != PPCC_OK || p.help) return st;
  const report_format *report;
  const emit_kind_name *emit;
  st = check_compile_args(&a, &report, &emit);
  if (st != PPCC_OK) return st;

  ppcc_diag d;
  st = cli_predict_load(&a.predict, &d);
  if (st != PPCC_OK) return st;
  ppcc_graph *g = cli_load_and_compile_partitioned(p.model_path, a.dump_after, &a.partition, &d, &st);
  if (!g) return st;
  const char *paths[MAX_OUTPUTS];
  cli_buffer bufs[MAX_OUTPUTS] = {{0}};
  int n = 0;
  st = render_compile_outputs(g, &a, report, emit, paths, bufs, &n, &d);
  if (st == PPCC_OK) st = cli_write_outputs(paths, bufs, n, &d);
  for (int i = 0; i < MAX_OUTPUTS; i++) cli_buffer_free(&bufs[i]);
  ppcc_graph_free(g);
  return st;
}

/* ---------------- ppcc report ---------------- */

typedef struct report_args {
  const char *format;
  const char *dump_after;
  const char *why;
  cli_partition partition;
  cli_predict predict;
} report_args;

static const cli_option report_options[] = {
  CLI_TEXT_ROW("format", "FORMAT", report_args, format, "text (default), json or dot (Graphviz)"),
  CLI_TEXT_ROW("dump-after", "PASS", report_args, dump_after, "print the graph after PASS to stderr"),
  CLI_TEXT_ROW("why", "VALUE", report_args, why,
               "instead of the report, print the chain of rules that\n"
               "placed VALUE (pinned operands, inserted transfers)"),
  CLI_GROUP_ROW(report_args, partition, cli_partition_options),
  CLI_GROUP_ROW(report_args, predict, cli_predict_options),
  CLI_GROUP_ROW(report_args, partition, cli_diagnostics_options),
  CLI_END_ROW,
};

static const cli_command report_command = {
  .name = "report",
  .usage = "Usage: ppcc report MODEL.json [--format=text|json|dot] [--dump-after=PASS]\n"
           "\n"
           "Compiles MODEL.json and prints its placement report to stdout: which\n"
           "devices every value and op live on, the transfers between devices with\n"
           "their sizes, and per-device totals.\n",
  .options = report_options,
};

void cli_help_report(FILE *out) { cli_print_help(&report_command, out); }

int cli_cmd_report(int argc, char **argv) {
  report_args a = {.format = "text"};
  cli_parse p = {.cmd = &report_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st != PPCC_OK || p.help) return st;
  const report_format *fmt = format_by_name(a.format);
  if (!fmt) return cli_usage_error("report", "unknown --format '%s' (use text, json or dot)", a.format);
  st = cli_check_pass_name("report", a.dump_after);
  if (st == PPCC_OK) st = cli_check_partition("report", &a.partition);
  if (st != PPCC_OK) return st;

  ppcc_diag d;
  st = cli_predict_load(&a.predict, &d);
  if (st != PPCC_OK) return st;
  ppcc_graph *g = cli_load_and_compile_partitioned(p.model_path, a.dump_after, &a.partition, &d, &st);
  if (!g) return st;
  cli_buffer buf = {0};
  const char *path = "-";
  report_request r = {fmt, &a.predict.opts};
  if (a.why) st = cli_render(&buf, g, render_explain, a.why, &d);
  else st = cli_render(&buf, g, render_report, &r, &d);
  if (st == PPCC_OK) st = cli_write_outputs(&path, &buf, 1, &d);
  cli_buffer_free(&buf);
  ppcc_graph_free(g);
  return st;
}
