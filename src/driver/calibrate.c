/* `ppcc calibrate [-o FILE] [--threads N]`: measures this machine's speeds
 * (src/plan/calibrate/calibrate.c) and writes the calibration file that
 * --calibration reads (include/ppcc/predict.h). No model argument. */
#include <stdio.h>
#include <string.h>
#include "driver.h"
#include "ppcc/io.h"
#ifdef PPCC_HAVE_RUNTIME
#include <stdlib.h>
#include "import_cli.h"
#include "ppcc/runtime.h"
#endif
#ifdef PPCC_HAVE_JIT
#include "ppcc/jit.h"
#endif
#ifndef PPCC_VERSION
#define PPCC_VERSION "unknown"
#endif

typedef struct calibrate_args {
  const char *out;
  long long threads;
} calibrate_args;

static const cli_option calibrate_options[] = {
  CLI_TEXT_ROW("o", "FILE", calibrate_args, out,
               "write the calibration JSON to FILE (default: stdout),\n"
               "atomically"),
  CLI_INT_ROW("threads", "N", calibrate_args, threads, 1, 4096,
              "measure 1..N threads (default: all cores, at most 64)"),
  CLI_END_ROW,
};

static const cli_command calibrate_command = {
  .name = "calibrate",
  .usage = "Usage: ppcc calibrate [-o CALIB.json] [--threads N]\n"
           "\n"
           "Measures this machine once for the time model of the placement report\n"
           "(ppcc report/compile/run --calibration=CALIB.json): GEMM GFLOP/s through\n"
           "the runtime's sgemm (OpenBLAS when built with it) for 1..N kernel threads,\n"
           "elementwise (c = a + b) and copy GB/s per thread with 1..N threads\n"
           "streaming at once, the fixed cost of a kernel call, and through the\n"
           "interpreter on generated Llama and FFN workloads: each op kind's cost\n"
           "(op_costs: us per call + ns per FLOP, per byte and per weight byte), a\n"
           "hand-over between devices, an op after its device waited, and the\n"
           "slowdown of devices computing at once; with the JIT, each op kind's cost\n"
           "on JIT-compiled workloads (jit_op_costs) and the cut of a replicated\n"
           "operand in a row-parallel kernel (jit_operand_cut). Best (or median) of\n"
           "several runs each; takes about 30 s. Calibrate on the machine, and with the\n"
           "--threads, of the runs.\n",
  .options = calibrate_options,
  .help_column = 17,
  .no_positional = true,
};

void cli_help_calibrate(FILE *out) { cli_print_help(&calibrate_command, out); }

#ifdef PPCC_HAVE_JIT
static ppcc_status jit_compile(const ppcc_graph *g, void **ctx, ppcc_diag *d) {
  ppcc_jit *jit = NULL;
  ppcc_jit_stats t;
  ppcc_status st = cli_jit_compile(g, NULL, &jit, &t, d);
  *ctx = jit;
  return st;
}

static void jit_release(void *ctx) { cli_jit_free(ctx); }

#endif

#ifdef PPCC_HAVE_RUNTIME
/* A calibration workload: the importers' graph builder
 * (src/import/llama_graph.c) on one device, an f32 Llama prefill of seq
 * tokens (kv heads = heads / 2, ffn = 2 * hidden). */
static ppcc_status workload_llama(long layers, long hidden, long heads, long seq, char **text, ppcc_diag *d) {
  llama_spec s = {.layers = layers, .hidden = hidden, .heads = heads, .kv_heads = heads / 2, .head_dim = hidden / heads,
                  .ffn = 2 * hidden, .vocab = 512, .eps = 1e-5, .theta = 10000, .rope_factor = 1, .rope_low = 1,
                  .rope_high = 4, .naming = LLAMA_NAMES_GGUF, .seq = seq, .batch = 1, .cache = seq, .tp = 1, .pp = 1,
                  .dtype = "f32", .name = "calibrate_llama"};
  const char *problem = llama_spec_error(&s);
  if (problem) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "calibration workload: %s", problem);
  *text = llama_graph_json(&s, NULL);
  return *text ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
}

/* The Llama workloads of the per-op costs: 2 layers of hidden 256
 * (prefills of 4 to 64 tokens, head dim 64 and 32) and of hidden 64
 * (8 tokens, head dim 16: ops whose fixed cost dominates). */
static ppcc_status calibrate_ops(ppcc_calibration *c, FILE *log, ppcc_diag *d) {
  static const long seq[] = {4, 16, 64, 32, 8}, heads[] = {4, 4, 4, 8, 4}, hidden[] = {256, 256, 256, 256, 64};
  enum { N = sizeof seq / sizeof *seq };
  char *texts[N] = {0};
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < N && !st; i++) st = workload_llama(2, hidden[i], heads[i], seq[i], &texts[i], d);
  if (!st) st = ppcc_calibrate_ops(c, (const char *const *)texts, N, log, d);
#ifdef PPCC_HAVE_JIT
  /* the JIT's costs: one-layer Llamas of both sizes, prefills of 4 to 64
   * tokens (each op kind of each costs a compile: calibrate stays within
   * seconds); attention with or without the importer's positions operand
   * runs the same runtime kernel */
  static const long jseq[] = {8, 4, 16, 64}, jhidden[] = {64, 256, 256, 256};
  enum { NJ = sizeof jseq / sizeof *jseq };
  char *jit_texts[NJ] = {0};
  for (int i = 0; i < NJ && !st; i++)
    st = workload_llama(1, jhidden[i], 4, jseq[i], &jit_texts[i], d);
  ppcc_calib_jit jit = {.compile = jit_compile, .execute = cli_jit_execute, .release = jit_release};
  if (!st) st = ppcc_calibrate_jit_ops(c, (const char *const *)jit_texts, NJ, &jit, log, d);
  for (int i = 0; i < NJ; i++) free(jit_texts[i]);
#endif
  for (int i = 0; i < N; i++) free(texts[i]);
  return st;
}

ppcc_status cli_calibrate_measure(ppcc_calibration *c, int threads, FILE *log, ppcc_diag *d) {
  ppcc_status st = ppcc_calibrate(c, threads, log, d);
  if (!st) st = calibrate_ops(c, log, d);
  if (!st) {
    cli_cpu_model(c->cpu, sizeof c->cpu);
    snprintf(c->ppcc_version, sizeof c->ppcc_version, "%s", PPCC_VERSION);
  }
  return st;
}
#endif

int cli_cmd_calibrate(int argc, char **argv) {
  calibrate_args a = {.out = "-"};
  cli_parse p = {.cmd = &calibrate_command, .args = &a};
  ppcc_status parsed = cli_parse_args(&p, argc, argv);
  if (parsed != PPCC_OK || p.help) return parsed;
  const char *out = a.out;
  long long threads = a.threads;
#ifdef PPCC_HAVE_RUNTIME
  ppcc_diag d;
  ppcc_diag_init(&d, "ppcc calibrate", stderr);
  ppcc_calibration c;
  FILE *log = strcmp(out, "-") == 0 ? stderr : stdout;
  ppcc_outfile file; /* opened first: an uncreatable -o is refused before a minute of measuring */
  ppcc_status st = ppcc_outfile_open(&file, out, &d);
  if (st) return st;
  st = cli_calibrate_measure(&c, (int)threads, log, &d);
  if (!st) return ppcc_calibration_write_to(&file, &c, &d);
  ppcc_outfile_abort(&file);
  return st;
#else
  fprintf(stderr, "ppcc calibrate: error: this ppcc was built without the runtime\n");
  return PPCC_ERR_USER;
#endif
}
