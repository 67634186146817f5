/* Private declarations of the ppcc command-line driver (DESIGN §8). */
#ifndef PPCC_DRIVER_H
#define PPCC_DRIVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "ppcc/diag.h"
#include "ppcc/devices_spec.h"
#include "ppcc/graph.h"

/* ---- command-line parsing (args.c) ---- */

/* Every command declares one table of its options; one parser reads argv
 * against it and prints the command's --help from it, so adding an option
 * is adding one row. A row either names a field of the command's argument
 * struct that the parser fills, or a handler for values that need more. */
typedef enum cli_kind {
  CLI_END,   /* ends a table */
  CLI_FLAG,  /* bool field = true */
  CLI_TEXT,  /* const char * field = the value (argv's string) */
  CLI_INT,   /* int, long or long long field = the value, in [min, max] */
  CLI_CALL,  /* call(value): parses and stores it itself */
  CLI_GROUP, /* the rows of `group`, whose fields are in the struct at offset */
} cli_kind;

/* What a CLI_CALL handler gets. */
typedef struct cli_value {
  const char *command; /* "run", for messages */
  const char *name;    /* the option without dashes */
  const char *text;    /* its value; NULL for a flag */
  void *args;          /* the struct the table's fields are in */
  void *field;         /* args + the row's offset */
} cli_value;
typedef ppcc_status (*cli_call_fn)(const cli_value *v);

typedef struct cli_option {
  cli_kind kind;
  const char *name;    /* without the leading "--"; one letter is "-o" */
  const char *arg;     /* the value's name in --help ("FILE"); NULL: takes no value */
  const char *help;    /* --help text, '\n' between lines; NULL: not listed */
  size_t offset, size; /* the field in the argument struct */
  long long min, max;  /* CLI_INT */
  cli_call_fn call;    /* CLI_CALL */
  const struct cli_option *group; /* CLI_GROUP */
} cli_option;

#define CLI_FIELD(type, field) offsetof(type, field), sizeof(((type *)0)->field)
#define CLI_FLAG_ROW(name, type, field, help) {CLI_FLAG, name, NULL, help, CLI_FIELD(type, field), 0, 0, NULL, NULL}
#define CLI_TEXT_ROW(name, arg, type, field, help) {CLI_TEXT, name, arg, help, CLI_FIELD(type, field), 0, 0, NULL, NULL}
#define CLI_INT_ROW(name, arg, type, field, lo, hi, help) \
  {CLI_INT, name, arg, help, CLI_FIELD(type, field), lo, hi, NULL, NULL}
#define CLI_CALL_ROW(name, arg, type, field, fn, help) {CLI_CALL, name, arg, help, CLI_FIELD(type, field), 0, 0, fn, NULL}
#define CLI_GROUP_ROW(type, field, rows) {CLI_GROUP, NULL, NULL, NULL, CLI_FIELD(type, field), 0, 0, NULL, rows}
#define CLI_END_ROW {CLI_END, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL}

/* A command: its table and the text of its --help around the options. */
typedef struct cli_command {
  const char *name;          /* "compile", for messages */
  const char *usage;         /* "Usage: ..." and the description, before "Options:" */
  const cli_option *options;
  const char *epilog;        /* after the options, or NULL */
  int help_column;           /* where the option help starts (0: 22) */
  bool no_positional;        /* no MODEL argument (calibrate) */
} cli_command;

typedef struct cli_parse {
  const cli_command *cmd;
  void *args;                    /* the struct the table's fields are in */
  const char *model_path;        /* the one positional argument */
  bool help;                     /* -h / --help seen (and the help printed) */
} cli_parse;

/* Parses argv (after the command name): "--opt=value", "--opt value",
 * "-o FILE", "--" ends options; each option is applied in command-line
 * order (a later one wins). Exactly one positional (the model) unless
 * the command takes none or --help is given; --help prints the help. */
ppcc_status cli_parse_args(cli_parse *p, int argc, char **argv);
void cli_print_help(const cli_command *c, FILE *out);

/* --backend=jit|interp into a const char * field (run, generate). */
ppcc_status cli_set_backend(const cli_value *v);

/* Prints "ppcc COMMAND: error: MSG" and the --help hint; returns
 * PPCC_ERR_USAGE. */
ppcc_status cli_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Strict integer parsing for option values; usage error on junk. */
ppcc_status cli_parse_int(const char *command, const char *option, const char *text,
                          long long min, long long max, long long *out);
ppcc_status cli_parse_u64(const char *command, const char *option, const char *text,
                          unsigned long long *out);

/* ---- shared steps (compile.c) ---- */

/* Checks that pass_name is one of ppcc_pass_list(); usage error listing
 * the passes otherwise. NULL is fine (no dump). */
ppcc_status cli_check_pass_name(const char *command, const char *pass_name);

/* Loads model_path and runs every pass; NULL on error (diagnostics on
 * stderr, *status says which exit code). */
ppcc_graph *cli_load_and_compile(const char *model_path, const char *dump_after,
                                 ppcc_diag *d, ppcc_status *status);

/* ---- auto-partition request (partition_opts.c) ---- */

/* --pp, --tp, --device-memory, --devices-spec; all 0 when not given. */
typedef struct cli_partition {
  int pp, tp;
  long long device_memory;
  bool diagnostics_json; /* --diagnostics=json: errors as one JSON document on stderr */
  int n_stage_tp;                 /* --tp 4,1,2,1: per-stage TP sizes */
  int stage_tp[PPCC_MAX_DEVICES];
  const char *devices_spec_path;  /* --devices-spec, loaded by cli_check_partition */
  ppcc_devices_spec devices_spec; /* its arrays point into the two below */
  int64_t spec_memory[PPCC_MAX_DEVICES];
  double spec_speed[PPCC_MAX_DEVICES];
  int spec_host[PPCC_MAX_DEVICES];
  ppcc_link_spec spec_links[PPCC_MAX_LINKS];
  const char *param_dtype; /* --dtype: block-quantized params dequantized to it at load */
} cli_partition;

/* Rows of --pp, --tp, --device-memory, --devices-spec, and of
 * --diagnostics (fields in a cli_partition). */
extern const cli_option cli_partition_options[];
/* --dtype D of compile, run and shard-weights (field in a cli_partition):
 * every block-quantized param is declared D (f32, f16 or bf16) before the
 * passes, so it is dequantized at load. */
extern const cli_option cli_dtype_options[];
extern const cli_option cli_diagnostics_options[];
/* Usage error for combinations that make no sense; loads --devices-spec
 * (a bad file: one diagnostic naming it, exit 1). */
ppcc_status cli_check_partition(const char *command, cli_partition *req);
/* Devices the request uses (pp x tp, or the sum of the stage TP sizes). */
int cli_partition_devices(const cli_partition *req);
/* Puts the request on the graph (NULL: none). */
void cli_apply_partition(ppcc_graph *g, const cli_partition *req);
/* cli_load_and_compile with an auto-partition request (NULL: none)
 * (compile_model.c, as the rest of this section). */
ppcc_graph *cli_load_and_compile_partitioned(const char *model_path, const char *dump_after,
                                             const cli_partition *req, ppcc_diag *d,
                                             ppcc_status *status);

/* ---- prediction options (predict_opts.c) ---- */

#include "ppcc/predict.h"
/* --microbatches M and --calibration FILE of compile, report and run. */
typedef struct cli_predict {
  const char *calibration_path;
  ppcc_calibration calib;
  ppcc_predict_options opts;
} cli_predict;
extern const cli_option cli_predict_options[]; /* fields in a cli_predict */
/* Reads the calibration file if one was given (a bad file: one line
 * naming the file and the field, PPCC_ERR_USER) and sets p->opts. */
ppcc_status cli_predict_load(cli_predict *p, ppcc_diag *d);
/* ---- placement errors explained, with fixes (fix_cmd.c) ---- */

/* After a failed load or compile: the --why chain and fixes of a
 * placement error as "  note:"/"  fix:" lines, or with --diagnostics=json
 * the whole error as one JSON document on stderr. g may be NULL. */
void cli_report_failure(const char *model_path, const ppcc_graph *g, ppcc_diag *d,
                        const cli_partition *req);
/* The pieces of that report `ppcc fix` (fix_cmd.c) reuses: the fix
 * request matching the command line, the model as parsed JSON (NULL if it
 * does not read or parse: the loader reports that), and one diagnosis as
 * notes through d or as the JSON document (with the fixes applied). */
struct ppcc_fix_options cli_fix_options(const cli_partition *req);
struct cJSON *cli_read_model(const char *path);
void cli_emit_diagnosis(const char *path, struct cJSON *diag, ppcc_diag *d, bool json, struct cJSON *applied);
int cli_cmd_fix(int argc, char **argv);
void cli_help_fix(FILE *out);

/* ---- in-memory output, committed atomically (output.c) ---- */

/* A rendered output held in memory until everything has succeeded. */
typedef struct cli_buffer {
  char *data;
  size_t len;
} cli_buffer;

typedef ppcc_status (*cli_render_fn)(const ppcc_graph *g, FILE *out, ppcc_diag *d, const void *arg);

/* Runs render into a memory buffer. */
ppcc_status cli_render(cli_buffer *buf, const ppcc_graph *g, cli_render_fn render,
                       const void *arg, ppcc_diag *d);
void cli_buffer_free(cli_buffer *buf);

/* Writes each buffer to its path ("-" is stdout) through temporary files;
 * the targets are renamed only once every file was written completely. */
ppcc_status cli_write_outputs(const char *const *paths, const cli_buffer *bufs, int n,
                              ppcc_diag *d);

/* A file named on the command line: refused when an output is the same
 * file as another output or an input (e.g. -o X --weights-out X). */
typedef struct cli_file_arg {
  const char *label; /* the option, e.g. "--weights-out", or "the model" */
  const char *path;  /* NULL: not given */
  bool output;
} cli_file_arg;
ppcc_status cli_check_distinct_files(const cli_file_arg *files, int n, ppcc_diag *d);

/* ---- commands ---- */
int cli_cmd_compile(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_calibrate(int argc, char **argv);
/* What `ppcc calibrate` measures (threads 0: all cores), labelled with
 * this CPU's model and ppcc's version. */
ppcc_status cli_calibrate_measure(ppcc_calibration *c, int threads, FILE *log, ppcc_diag *d);
/* This machine's CPU model (/proc/cpuinfo's "model name", printable
 * ASCII), else "unknown". */
void cli_cpu_model(char *out, size_t n);
/* The calibration of `run --check-plan` when none is given
 * (calibration_cache.c): read from the user's cache, or measured once and
 * cached there; left uncalibrated when PPCC_CALIBRATION_CACHE=0. */
ppcc_status cli_calibration_cached(ppcc_calibration *c, ppcc_diag *d);
/* This process's resident set now and its peak so far (bytes; run.c):
 * what run --check-plan and generate measure against the plan. */
double cli_rss_now(void);
double cli_peak_rss(void);
void cli_help_calibrate(FILE *out);
int cli_cmd_import(int argc, char **argv);
/* One importer per source (argv[0] names it); *handled false if not ours. */
int cli_cmd_import_onnx(int argc, char **argv, bool *handled);
void cli_help_import_onnx(FILE *out);
int cli_cmd_import_llama(int argc, char **argv, bool *handled); /* hf, gguf */
void cli_help_import_llama(FILE *out);

void cli_help_compile(FILE *out);
void cli_help_report(FILE *out);
void cli_help_run(FILE *out);
void cli_help_import(FILE *out);
int cli_cmd_shard_weights(int argc, char **argv);
void cli_help_shard_weights(FILE *out);

/* ---- the MLIR backend, loaded on first use (mlir_loader.c) ---- */
#ifdef PPCC_HAVE_MLIR
#include "ppcc/devices_spec.h"
#include "ppcc/graph.h"
ppcc_status cli_emit(const ppcc_graph *g, int kind, FILE *out, ppcc_diag *d); /* ppcc_emit */
#ifdef PPCC_HAVE_JIT
#include "ppcc/jit.h"
#include "ppcc/runtime.h"
ppcc_status cli_jit_compile(const ppcc_graph *g, const ppcc_jit_options *opts, ppcc_jit **out, ppcc_jit_stats *stats,
                            ppcc_diag *d);
ppcc_status cli_jit_execute(void *ctx, const ppcc_graph *g, const struct ppcc_run_data *data,
                            const struct ppcc_exec_options *opts, ppcc_host_tensor *outputs, double *elapsed_ms,
                            ppcc_diag *d);
void cli_jit_free(ppcc_jit *jit);
#endif
#endif

#endif
