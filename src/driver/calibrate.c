/* `ppcc calibrate [-o FILE] [--threads N]`: measures this machine's speeds
 * (src/plan/calibrate/calibrate.c) and writes the calibration file that
 * --calibration reads (include/ppcc/predict.h). No model argument. */
#include <stdio.h>
#include <string.h>
#include "driver.h"
#include "ppcc/io.h"
#ifdef PPCC_HAVE_RUNTIME
#include <stdlib.h>
#include <unistd.h>
#include "import_cli.h"
#include "ppcc/mpi.h"
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
  bool links;
  const char *wait_fit;
} calibrate_args;

static const cli_option calibrate_options[] = {
  CLI_TEXT_ROW("o", "FILE", calibrate_args, out,
               "write the calibration JSON to FILE (default: stdout),\n"
               "atomically"),
  CLI_INT_ROW("threads", "N", calibrate_args, threads, 1, 4096,
              "measure 1..N threads (default: all cores, at most 64)"),
  CLI_FLAG_ROW("links", calibrate_args, links,
               "instead, under mpiexec: the links between every two ranks\n"
               "(latency: half a one-byte round trip; bandwidth: 1 MiB\n"
               "sent one way), written as a --devices-spec with one\n"
               "device per rank on host = rank and a \"links\" entry per\n"
               "pair (copy \"links\" into a larger model's spec: in an MPI\n"
               "run a device without \"host\" is on its rank's host)"),
  CLI_TEXT_ROW("wait-fit", "B,P,FILE", calibrate_args, wait_fit,
               "internal (calibrate runs it): one fit of backend B's\n"
               "wait costs for thread placement P (0-3) with the\n"
               "calibration FILE, printed as \"resume start\" in us"),
  CLI_END_ROW,
};

static const cli_command calibrate_command = {
  .name = "calibrate",
  .usage = "Usage: ppcc calibrate [-o CALIB.json] [--threads N]\n"
           "       mpiexec -n R ppcc calibrate --links [-o SPEC.json]\n"
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
           "several runs each; takes about a minute. Calibrate on the machine, and with the\n"
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
 * (prefills of 1 to 64 tokens, head dim 64 and 32: each GEMM kernel,
 * ppcc_op_cost_key) and of hidden 64 (1 and 8 tokens, head dim 16: ops
 * whose fixed cost dominates). */
static ppcc_status calibrate_ops(ppcc_calibration *c, FILE *log, ppcc_diag *d) {
  static const long seq[] = {4, 16, 64, 32, 8, 1, 2, 1}, heads[] = {4, 4, 4, 8, 4, 4, 4, 4},
                    hidden[] = {256, 256, 256, 256, 64, 256, 256, 64};
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
  static const long jseq[] = {8, 4, 16, 64, 1, 32, 1, 48, 32}, jhidden[] = {64, 256, 256, 256, 256, 256, 64, 256, 64};
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
  /* the wait costs, each fit in a fresh process as a run is (--wait-fit) */
  if (access("/proc/self/exe", X_OK) == 0) ppcc_calibrate_set_wait_fit_exe("/proc/self/exe");
  ppcc_status st = ppcc_calibrate(c, threads, log, d);
  if (!st) st = calibrate_ops(c, log, d);
  if (!st) {
    cli_cpu_model(c->cpu, sizeof c->cpu);
    snprintf(c->ppcc_version, sizeof c->ppcc_version, "%s", PPCC_VERSION);
  }
  return st;
}
#endif

#ifdef PPCC_HAVE_RUNTIME
/* --wait-fit B,P,FILE: one fit of the wait costs in this fresh process
 * (ppcc_calibrate_wait_fit), for the calibrate that started it. */
static ppcc_status wait_fit(const char *spec, ppcc_diag *d) {
  char backend[8] = "";
  int placement = -1, at = 0;
  if (sscanf(spec, "%7[a-z],%d,%n", backend, &placement, &at) < 2 || at == 0 || placement < 0 || placement > 3 ||
      (strcmp(backend, "interp") != 0 && strcmp(backend, "jit") != 0))
    return cli_usage_error("calibrate", "--wait-fit wants BACKEND,PLACEMENT,FILE (interp or jit, 0-3), got '%s'", spec);
  ppcc_calibration c;
  ppcc_status st = ppcc_calibration_read(spec + at, &c, d);
  if (st) return st;
  bool on_jit = strcmp(backend, "jit") == 0;
  const ppcc_calib_jit *jit = NULL;
#ifdef PPCC_HAVE_JIT
  ppcc_calib_jit on = {.compile = jit_compile, .execute = cli_jit_execute, .release = jit_release};
  if (on_jit) jit = &on;
#endif
  if (on_jit && !jit) return ppcc_error(d, "this ppcc was built without MLIR: no JIT to fit");
  double fit[2];
  if (!ppcc_calibrate_wait_fit(&c, jit, placement, fit))
    return ppcc_error(d, "the %s wait fit for placement %d failed", backend, placement);
  printf("%.9g %.9g\n", fit[0], fit[1]);
  return fflush(stdout) == 0 ? PPCC_OK : ppcc_error(d, "cannot write the fit");
}

/* Rank 0's devices spec: one device per rank, a link entry per pair. */
static ppcc_status write_links(const char *out, int n, const double *bw, const double *lat, ppcc_diag *d) {
  ppcc_outfile file;
  ppcc_status st = ppcc_outfile_open(&file, out, d);
  if (st) return st;
  FILE *f = file.fp;
  fputs("{\"devices\": [", f);
  for (int r = 0; r < n; r++) fprintf(f, "%s{\"host\": %d}", r ? ", " : "", r);
  fputs("],\n \"links\": [", f);
  for (int a = 0, first = 1; a < n; a++)
    for (int b = a + 1; b < n; b++, first = 0)
      fprintf(f, "%s{\"hosts\": [%d, %d], \"bandwidth\": %.6g, \"latency\": %.6g}", first ? "\n   " : ",\n   ", a, b,
              bw[a * n + b] >= 1 ? bw[a * n + b] : 1, lat[a * n + b]);
  fputs("]}\n", f);
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      fprintf(stderr, "link rank %d - rank %d: %.1f Mbit/s, latency %.1f us\n", a, b, bw[a * n + b] * 8e-6,
              lat[a * n + b] * 1e6);
  return ppcc_outfile_commit(&file, d);
}

/* --links: every rank measures its pairs; rank 0 writes the spec. */
static ppcc_status calibrate_links(const char *out, ppcc_diag *d) {
  if (!ppcc_mpi_launched() || !ppcc_mpi_available())
    return cli_usage_error("calibrate", "--links measures between MPI ranks: start it with mpiexec -n R (R >= 2)%s",
                           ppcc_mpi_available() ? "" : " (this ppcc was built without MPI)");
  ppcc_status st = ppcc_mpi_init(NULL, NULL, d);
  if (st) return st;
  int n = ppcc_mpi_size();
  double *bw = calloc((size_t)n * (size_t)n, sizeof *bw), *lat = calloc((size_t)n * (size_t)n, sizeof *lat);
  if (n < 2) st = ppcc_error(d, "--links needs at least 2 ranks (mpiexec -n R, R >= 2), got %d", n);
  else if (!bw || !lat) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = ppcc_mpi_measure_links(1 << 20, bw, lat, d);
  if (!st && ppcc_mpi_rank() == 0) st = write_links(out, n, bw, lat, d);
  free(bw);
  free(lat);
  ppcc_mpi_finalize(st);
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
  if (a.links) return calibrate_links(out, &d);
  if (a.wait_fit) return wait_fit(a.wait_fit, &d);
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
