/* `ppcc run`: compile a model and execute it on its logical devices. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "driver.h"
#include "ppcc/predict.h"
#ifdef PPCC_HAVE_RUNTIME
#include "ppcc/mpi.h"
#include "ppcc/runtime.h"
#endif
#ifdef PPCC_HAVE_JIT
#include "ppcc/jit.h"
#endif

typedef struct run_input {
  const char *name;
  const char *path;
} run_input;

typedef struct run_args {
  const char *weights;
  bool have_seed;
  unsigned long long seed;
  run_input *inputs; /* argc entries at most: one per --input */
  int n_inputs;
  run_input *expects; /* --expect NAME=FILE.npy, argc entries at most */
  int n_expects;
  const char *output_dir;
  bool check;
  long long threads;
  long long microbatches;
  long long repeat;
  bool deterministic;
  cli_partition partition;
  const char *trace;
  const char *dump_after;
  const char *backend; /* "jit", "interp", or NULL: jit when it can run the model */
  bool mpi;             /* --mpi, or started by an MPI launcher */
  const char *ranks_map;
  bool check_plan;      /* --check-plan: measured memory/time vs the prediction */
  double plan_memory_tolerance, plan_time_tolerance;
  double plan_rss_tolerance; /* the process's peak RSS against the loaded model's prediction */
  bool plan_time_tolerance_given; /* uncalibrated times are checked only when asked */
  cli_predict predict;  /* --calibration */
} run_args;

/* A tolerance: a fraction >= 0 ("0.10" is 10 %). */
static ppcc_status set_fraction(const cli_value *v) {
  char *end = NULL;
  double x = strtod(v->text, &end);
  if (end == v->text || *end || !(x >= 0) || x > 1e6)
    return cli_usage_error("run", "option '--%s' needs a fraction >= 0 (e.g. 0.10), got '%s'", v->name, v->text);
  *(double *)v->field = x;
  if (strcmp(v->name, "plan-time-tolerance") == 0) ((run_args *)v->args)->plan_time_tolerance_given = true;
  return PPCC_OK;
}

/* --input name=FILE.npy, --expect name=FILE.npy */
static ppcc_status add_named_file(run_input *list, int *count, const char *option, const char *value) {
  const char *eq = strchr(value, '=');
  if (!eq || eq == value || eq[1] == '\0')
    return cli_usage_error("run", "--%s needs NAME=FILE.npy, got '%s'", option, value);
  run_input *in = &list[(*count)++];
  in->path = eq + 1;
  /* The name is a prefix of an argv string: copy it to terminate it. */
  char *name = malloc((size_t)(eq - value) + 1);
  if (!name) return PPCC_ERR_INTERNAL;
  memcpy(name, value, (size_t)(eq - value));
  name[eq - value] = '\0';
  in->name = name;
  return PPCC_OK;
}

static ppcc_status set_input(const cli_value *v) {
  run_args *a = v->args;
  return add_named_file(a->inputs, &a->n_inputs, v->name, v->text);
}

static ppcc_status set_expect(const cli_value *v) {
  run_args *a = v->args;
  return add_named_file(a->expects, &a->n_expects, v->name, v->text);
}

static ppcc_status set_seed(const cli_value *v) {
  run_args *a = v->args;
  a->have_seed = true;
  return cli_parse_u64("run", v->name, v->text, &a->seed);
}

static const cli_option run_options[] = {
  CLI_TEXT_ROW("weights", "FILE", run_args, weights,
               "parameters from a .safetensors, .irpa or .gguf file, or a\n"
               "Hugging Face checkpoint directory (model.safetensors or\n"
               "the shards of model.safetensors.index.json); float\n"
               "weights of another dtype than the graph's (bf16, f16,\n"
               "GGUF blocks of params declared f32) are converted once\n"
               "at load; params declared q4_k etc. are used as stored\n"
               "A sharded archive (entries NAME.shard.K, as written by\n"
               "`ppcc shard-weights` or sharktank) is read shard by shard"),
  CLI_CALL_ROW("random-weights", "SEED", run_args, seed, set_seed,
               "random parameters from SEED (random is the default)"),
  CLI_CALL_ROW("input", "NAME=FILE", run_args, inputs, set_input,
               "value of graph input NAME from a .npy file (repeatable);\n"
               "inputs not given are random from the seed"),
  CLI_TEXT_ROW("output-dir", "DIR", run_args, output_dir,
               "write every graph output to DIR/NAME.npy (all or none;\n"
               "NAME keeps letters, digits, '.', '-', '_', others\n"
               "become '_'; outputs whose files would clash are refused)"),
  CLI_FLAG_ROW("check", run_args, check,
               "compare with the unsharded reference execution; when an\n"
               "output differs, run again capturing every value and\n"
               "name the first divergent one: shard, op, layouts and\n"
               "the rule that placed it"),
  CLI_CALL_ROW("expect", "NAME=FILE", run_args, expects, set_expect,
               "compare output NAME with FILE.npy by --check's criterion\n"
               "(repeatable); fails beyond it"),
  CLI_INT_ROW("threads", "N", run_args, threads, 1, 4096, "worker threads (default: the runtime's choice)"),
  CLI_INT_ROW("microbatches", "M", run_args, microbatches, 1, 1 << 20,
              "split the batch (dim 0 of every input, divisible by M)\n"
              "into M microbatches that flow through the pipeline;\n"
              "outputs match M = 1 within an ulp, bit for bit with\n"
              "--deterministic (graphs that mix batch rows are\n"
              "refused). The summary gives each device's busy time\n"
              "(compute ops / wall), the measured bubble (idle share\n"
              "of the stage devices over the compute span) and the\n"
              "GPipe estimate (p-1)/(m+p-1)"),
  CLI_FLAG_ROW("deterministic", run_args, deterministic,
               "every matmul element summed in one fixed order by\n"
               "ppcc's own kernel, not OpenBLAS (about 1.2x the time\n"
               "of the default), so results do not depend on\n"
               "--microbatches, threads, MPI ranks or memory limits"),
  CLI_INT_ROW("repeat", "N", run_args, repeat, 0, 1 << 20,
              "after the first run, run the forward N more times\n"
              "and print their min and median wall times: the\n"
              "device programs ('forward') and the whole call\n"
              "('call': leaves bound, outputs collected); no\n"
              "compile, no loading. Every run prints its load time\n"
              "(weights, inputs, resident param shards) and its\n"
              "first call apart; --trace records the first forward"),
  CLI_TEXT_ROW("trace", "FILE", run_args, trace,
               "write a Chrome trace (JSON: a track per device, an\n"
               "event per op and microbatch, transfers as arrows)"),
  CLI_TEXT_ROW("dump-after", "PASS", run_args, dump_after, "print the graph after PASS to stderr"),
  CLI_CALL_ROW("backend", "jit|interp", run_args, backend, cli_set_backend,
               "jit: device functions compiled from the executable MLIR\n"
               "form; interp: the runtime's C kernels. Default: jit\n"
               "when this ppcc has it and the model, --trace and\n"
               "--microbatches allow it, else interp (with a note)"),
  CLI_FLAG_ROW("mpi", run_args, mpi,
               "run distributed over MPI ranks (implied when started by\n"
               "mpiexec/mpirun): each rank holds some devices, loads\n"
               "only their weights, and moves shards between ranks\n"
               "with MPI; results are bit-identical to one process.\n"
               "Rank 0 writes the outputs, the summary and the trace\n"
               "(a process per rank)"),
  CLI_TEXT_ROW("ranks-map", "R0,R1,..", run_args, ranks_map,
               "the rank of each device (default: whole pipeline\n"
               "stages per rank, spread evenly)"),
  CLI_FLAG_ROW("check-plan", run_args, check_plan,
               "measure each device's peak memory (high-water mark of\n"
               "the value buffers the runtime holds: params, inputs,\n"
               "results, transfer destinations; interp: not scratch\n"
               "inside one op) and each stage's busy time (compute\n"
               "ops, slowest device, all microbatches); print them\n"
               "next to the report's prediction and fail naming the\n"
               "device or stage off by more than the tolerance\n"
               "(relative to the measurement). Without --repeat it\n"
               "runs 10 more forwards: busy times are each stage's\n"
               "median over the forwards after the first (cold),\n"
               "measured after 50 ms of unmeasured forwards (the\n"
               "steady state, which the plan predicts).\n"
               "On the JIT: params, inputs and output buffers plus\n"
               "the high-water mark of the compiled code's\n"
               "allocations (kernel temporaries included, each freed\n"
               "after its last use); busy = device function\n"
               "time outside communication calls"),
  CLI_CALL_ROW("plan-memory-tolerance", "F", run_args, plan_memory_tolerance, set_fraction,
               "allowed memory error, default 0.10"),
  CLI_CALL_ROW("plan-rss-tolerance", "F", run_args, plan_rss_tolerance, set_fraction,
               "allowed error of the process's peak RSS against the\n"
               "loaded model's prediction (the process before the\n"
               "weights, measured, + params once + KV caches as state\n"
               "+ working set), default 0.10"),
  CLI_CALL_ROW("plan-time-tolerance", "F", run_args, plan_time_tolerance, set_fraction,
               "allowed stage time error, default 0.25; when\n"
               "uncalibrated stage times are shown but unchecked\n"
               "unless this is given"),
  CLI_TEXT_ROW("calibration", "FILE", run_args, predict.calibration_path,
               "speeds from 'ppcc calibrate' for the time prediction\n"
               "(default: this machine's, measured by --check-plan\n"
               "on first use, about a minute, and cached per CPU model\n"
               "in $XDG_CACHE_HOME/ppcc or ~/.cache/ppcc;\n"
               "PPCC_CALIBRATION_CACHE=0 or --calibration=none:\n"
               "constants, reported as uncalibrated)"),
  CLI_GROUP_ROW(run_args, partition, cli_partition_options),
  CLI_GROUP_ROW(run_args, partition, cli_dtype_options),
  CLI_GROUP_ROW(run_args, partition, cli_diagnostics_options),
  CLI_END_ROW,
};

static const cli_command run_command = {
  .name = "run",
  .usage = "Usage: ppcc run MODEL.json [--weights W.safetensors | --random-weights SEED]\n"
           "                 [--input NAME=FILE.npy]... [--output-dir DIR] [--check]\n"
           "                 [--threads N] [--microbatches M] [--deterministic] [--trace=TRACE.json]\n"
           "                 [--backend=jit|interp] [--pp=P] [--tp=T] [--device-memory=BYTES]\n"
           "                 [--devices-spec=FILE.json] [--repeat N] [--check-plan [--plan-memory-tolerance=F]\n"
           "                 [--plan-rss-tolerance=F] [--plan-time-tolerance=F]] [--calibration=CALIB.json]\n"
           "\n"
           "Compiles MODEL.json and runs it: one in-order stream per logical device,\n"
           "transfers and collectives between them.\n",
  .options = run_options,
  .help_column = 24,
};

void cli_help_run(FILE *out) { cli_print_help(&run_command, out); }

static void free_run_args(run_args *a) {
  for (int i = 0; i < a->n_inputs; i++) free((char *)a->inputs[i].name);
  for (int i = 0; i < a->n_expects; i++) free((char *)a->expects[i].name);
  free(a->inputs);
  free(a->expects);
}

#ifdef PPCC_HAVE_JIT
/* The JIT for --backend=jit, or by default when it can run the model (else
 * *jit stays NULL: the interpreter runs, after a note saying why). */
static ppcc_status compile_jit(const ppcc_graph *g, const run_args *a, ppcc_jit **jit, ppcc_diag *d) {
  *jit = NULL;
  bool asked = a->backend && strcmp(a->backend, "jit") == 0;
  if (a->backend && !asked) return PPCC_OK;
  const char *unsupported = a->trace ? "--trace" : a->microbatches > 1 ? "--microbatches" : NULL;
  if (unsupported && asked) return ppcc_error(d, "--backend=jit does not support %s (use --backend=interp)", unsupported);
  if (unsupported) return PPCC_OK;
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, d->file, NULL);
  ppcc_jit_stats t;
  ppcc_status st = cli_jit_compile(g, NULL, jit, &t, asked ? d : &quiet);
  if (!st) {
    if (ppcc_mpi_rank() == 0) /* MPI: rank 0 prints the summary */
      printf("jit: compiled %d device functions in %.1f ms (emit %.1f, lower %.1f, codegen %.1f of which kernels "
             "%.1f; CPU %.1f ms)\n",
             g->n_devices, t.emit_ms + t.lower_ms + t.codegen_ms, t.emit_ms, t.lower_ms, t.codegen_ms, t.kernels_ms,
             t.cpu_ms);
    return PPCC_OK;
  }
  if (asked) return st;
  if (st != PPCC_ERR_USER) return ppcc_error_status(d, st, "%s", quiet.first);
  if (ppcc_mpi_rank() == 0) printf("note: running with --backend=interp: %s\n", quiet.first);
  return PPCC_OK;
}
#endif

double cli_rss_now(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  if (f) fclose(f);
  return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

double cli_peak_rss(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss * 1024.0;
}

#ifdef PPCC_HAVE_RUNTIME
/* --check-plan: the prediction for this run and room for the measurement. */
typedef struct plan_check {
  ppcc_prediction pred;
  ppcc_plan_measure measure;
  bool jit; /* measured on the JIT (its buffer model, src/runtime/jit/jit_exec.c) */
  double rss_before, peak_before; /* the process before the weights (after compiling) */
} plan_check;

static ppcc_status plan_check_begin(const ppcc_graph *g, run_args *a, bool jit, plan_check *c, ppcc_diag *d) {
  memset(c, 0, sizeof *c);
  c->jit = jit;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  a->predict.opts.microbatches = (int)a->microbatches;
  a->predict.opts.threads = a->threads > 0 ? (int)a->threads : cores > 0 ? (int)cores : 1;
  bool *views = jit ? ppcc_rt_jit_view_ops(g) : ppcc_rt_view_ops(g);
  a->predict.opts.view_ops = views;
  a->predict.opts.jit = jit;
  ppcc_status st = PPCC_OK;
  /* out of the box, times are predicted from this machine's calibration,
   * measured once per CPU and cached (calibration_cache.c) */
  if (!a->predict.calibration_path) st = cli_calibration_cached(&a->predict.calib, d);
  if (!st) st = ppcc_predict(g, &a->predict.opts, &c->pred, d);
  a->predict.opts.view_ops = NULL;
  a->predict.opts.jit = false;
  free(views);
  if (st) return st;
  size_t nd = (size_t)(g->n_devices > 0 ? g->n_devices : 1);
  c->measure.op_stage = c->pred.op_stage;
  c->measure.n_stages = c->pred.n_stages;
  c->measure.peak_bytes = calloc(nd, sizeof *c->measure.peak_bytes);
  size_t cells = nd * (size_t)(c->pred.n_stages > 0 ? c->pred.n_stages : 1);
  c->measure.stage_busy_ms = calloc(cells, sizeof(double));
  c->measure.stage_busy_lo = calloc(cells, sizeof(double));
  c->measure.stage_busy_hi = calloc(cells, sizeof(double));
  c->measure.held_whole = calloc((size_t)g->n_values + 1, sizeof(bool));
  if (!c->measure.peak_bytes || !c->measure.stage_busy_ms || !c->measure.stage_busy_lo || !c->measure.stage_busy_hi ||
      !c->measure.held_whole)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  return PPCC_OK;
}

static ppcc_status plan_check_end(const run_args *a, plan_check *c, ppcc_diag *d) {
  /* Testing hook: PPCC_INJECT_PLAN_MEMORY=DEV:BYTES adds BYTES the
   * prediction does not know of to device DEV's measurement. */
  const char *inject = getenv("PPCC_INJECT_PLAN_MEMORY");
  int dev;
  long long bytes;
  if (inject && sscanf(inject, "%d:%lld", &dev, &bytes) == 2 && dev >= 0 && dev < c->pred.n_devices)
    c->measure.peak_bytes[dev] += bytes;
  ppcc_plan_measure_summarize(&c->measure);
  printf("plan check backend: %s\n", c->jit ? "jit (arguments + compiled code's allocations)" : "interp");
  /* Uncalibrated times come from constants, not this machine: out of the
   * box they are shown, not checked (memory is), unless a tolerance is given. */
  double time_tol = c->pred.calibrated || a->plan_time_tolerance_given ? a->plan_time_tolerance : -1;
  return ppcc_plan_check(&c->pred, &c->measure, a->plan_memory_tolerance, time_tol, stdout, d);
}

/* --check-plan, the process: its peak RSS against the loaded model's
 * prediction (src/plan/loaded_memory.c: params once, KV caches as state,
 * the graph's working set) plus the process before the weights (code,
 * libraries, the compiler's heap: measured), or the compile's own peak
 * when that was higher. */
enum { PROCESS_SLACK_MIB = 4 };
static ppcc_status plan_check_process(const ppcc_graph *g, const run_args *a, const plan_check *c, ppcc_diag *d) {
  bool *state = ppcc_loaded_state_inputs(g), *views = c->jit ? ppcc_rt_jit_view_ops(g) : ppcc_rt_view_ops(g);
  const bool *s = state, *v = views;
  ppcc_loaded_memory m;
  const bool *whole = c->measure.held_whole; /* generated or converted at load: in memory whole */
  ppcc_status st = state && views ? ppcc_predict_loaded_memory(&g, &s, &v, &whole, 1, NULL, c->jit, &m, d)
                                  : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  free(state);
  free(views);
  if (st) return st;
  double measured = cli_peak_rss(), loaded = c->rss_before + (double)m.total_bytes;
  /* Testing hook: PPCC_INJECT_PLAN_RSS=BYTES adds BYTES the prediction
   * does not know of to the measured peak. */
  const char *inject = getenv("PPCC_INJECT_PLAN_RSS");
  if (inject) measured += strtod(inject, NULL);
  double predicted = loaded > c->peak_before ? loaded : c->peak_before, err = (predicted - measured) / measured;
  printf("plan check process memory: peak RSS %.1f MiB planned = %.1f MiB before the weights + params %lld B "
         "+ KV caches %lld B (state) + working set %lld B%s; measured %.1f MiB (%+.1f %%)\n",
         predicted / (1 << 20), c->rss_before / (1 << 20), (long long)m.param_bytes, (long long)m.state_bytes,
         (long long)m.activation_bytes, loaded > c->peak_before ? "" : " (below the compile's own peak, which counts)",
         measured / (1 << 20), 100.0 * err);
  /* a process's threads (stacks, malloc arenas) and its libraries' first
   * calls take a few hundred KiB each, unmodelled: on a small model that
   * is more than the tolerance */
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer's shadow memory, redzones and freed-block quarantine
   * are RSS no plan models: the figures are printed, not checked */
  (void)a;
  printf("plan check process memory: not checked in an AddressSanitizer build\n");
  return PPCC_OK;
#endif
  if (fabs(err) > a->plan_rss_tolerance && fabs(predicted - measured) > PROCESS_SLACK_MIB * (double)(1 << 20))
    return ppcc_error(d, "--check-plan: the process's peak RSS is off by %+.1f %% of the measured %.1f MiB "
                         "(tolerance %.1f %%, or %d MiB)", 100.0 * err, measured / (1 << 20),
                      100.0 * a->plan_rss_tolerance, PROCESS_SLACK_MIB);
  return PPCC_OK;
}

static void plan_check_free(plan_check *c) {
  ppcc_prediction_free(&c->pred);
  ppcc_plan_measure_release(&c->measure);
  free(c->measure.peak_bytes);
  free(c->measure.stage_busy_ms);
  free(c->measure.stage_busy_lo);
  free(c->measure.stage_busy_hi);
  free(c->measure.held_whole);
}

/* MPI: this rank's devices per --ranks-map or the default stage map. */
/* With links in the --devices-spec, rank 0 prints the predicted wall time
 * of this run, each rank a host (devices without a "host" of their own
 * are on their rank's), next to the measured one ("ran ... in"); each
 * rank has --threads cores (default: this machine's) of its own. */
static void print_link_prediction(const ppcc_graph *g, const run_args *a, const int *rank_of, ppcc_diag *d) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  if (!spec || !spec->n_links) return;
  int *host = malloc(sizeof(int) * (size_t)(g->n_devices > 0 ? g->n_devices : 1));
  if (!host) return;
  for (int dev = 0; dev < g->n_devices; dev++)
    host[dev] = spec->host && dev < spec->n_devices && spec->host[dev] >= 0 ? spec->host[dev] : rank_of[dev];
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  ppcc_predict_options o = a->predict.opts;
  o.microbatches = (int)a->microbatches;
  /* each rank its own cores, as on hosts of their own */
  o.threads = (a->threads > 0 ? (int)a->threads : cores > 0 ? (int)cores : 1) * ppcc_mpi_size();
  o.device_host = host;
  ppcc_prediction p;
  if (ppcc_predict(g, &o, &p, d) == PPCC_OK) {
    printf("predicted over the devices spec's links (%d microbatch%s, %s): wall %.3f ms, unoverlapped %.3f ms\n",
           p.microbatches, p.microbatches == 1 ? "" : "es", p.calibrated ? "calibrated" : "uncalibrated", p.wall_ms,
           p.unoverlapped_ms);
    ppcc_prediction_free(&p);
  }
  free(host);
}

static ppcc_status distribute(const ppcc_graph *g, const run_args *a, ppcc_diag *d) {
  static char label[4096]; /* every message says which rank printed it */
  snprintf(label, sizeof label, "%s [rank %d]", d->file ? d->file : "ppcc run", ppcc_mpi_rank());
  d->file = label;
  int *rank_of = malloc(sizeof(int) * (size_t)(g->n_devices > 0 ? g->n_devices : 1));
  if (!rank_of) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = ppcc_rank_map(g, ppcc_mpi_size(), a->ranks_map, rank_of, d);
  if (!st && ppcc_mpi_rank() == 0) print_link_prediction(g, a, rank_of, d);
  if (!st) st = ppcc_mpi_distribute(g, rank_of, d);
  free(rank_of);
  return st;
}

static ppcc_status run_graph(const ppcc_graph *g, run_args *a, ppcc_diag *d) {
  ppcc_input_arg *inputs = calloc((size_t)(a->n_inputs > 0 ? a->n_inputs : 1), sizeof *inputs);
  ppcc_input_arg *expects = calloc((size_t)(a->n_expects > 0 ? a->n_expects : 1), sizeof *expects);
  if (!inputs || !expects) {
    free(inputs);
    free(expects);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  for (int i = 0; i < a->n_inputs; i++) inputs[i] = (ppcc_input_arg){a->inputs[i].name, a->inputs[i].path};
  for (int i = 0; i < a->n_expects; i++) expects[i] = (ppcc_input_arg){a->expects[i].name, a->expects[i].path};
  ppcc_run_options opts = {
    .weights_path = a->weights,
    .random_seed = a->seed,
    .have_random_seed = a->have_seed,
    .inputs = inputs,
    .n_inputs = a->n_inputs,
    .output_dir = a->output_dir,
    .check = a->check,
    .threads = (int)a->threads,
    .microbatches = (int)a->microbatches,
    .deterministic = a->deterministic,
    .trace_path = a->trace,
    .repeat = (int)a->repeat,
    .log = stdout,
    .expects = expects,
    .n_expects = a->n_expects,
  };
  /* Testing hook (tests/mpi): device DEV fails at op OP, like a kernel error. */
  const char *fault = getenv("PPCC_INJECT_FAULT");
  if (fault && sscanf(fault, "%d:%d", &opts.fault_device, &opts.fault_op) == 2) opts.inject_fault = true;
  ppcc_status st = a->mpi ? distribute(g, a, d) : PPCC_OK;
  plan_check check;
  memset(&check, 0, sizeof check);
  bool on_jit = false;
#ifdef PPCC_HAVE_JIT
  ppcc_jit *jit = NULL;
  if (!st) st = compile_jit(g, a, &jit, d);
  opts.execute = jit ? cli_jit_execute : NULL;
  opts.execute_ctx = jit;
  on_jit = jit != NULL;
#endif
  if (!st && a->check_plan) st = plan_check_begin(g, a, on_jit, &check, d);
  if (a->check_plan && a->repeat == 0) opts.repeat = PPCC_CHECK_PLAN_FORWARDS; /* warm forwards: their busy times count */
  if (a->check_plan) opts.measure = &check.measure;
  if (a->check_plan) {
    malloc_trim(0); /* what compiling took goes back before the weights' pages come in */
    check.rss_before = cli_rss_now(), check.peak_before = cli_peak_rss();
  }
  if (!st) st = ppcc_run(g, &opts, d);
  if (!st && a->check_plan) {
    st = plan_check_end(a, &check, d);
    ppcc_status proc = plan_check_process(g, a, &check, d);
    if (!st) st = proc;
  }
  plan_check_free(&check);
#ifdef PPCC_HAVE_JIT
  cli_jit_free(jit);
#endif
  free(inputs);
  free(expects);
  return st;
}
#endif

static ppcc_status check_run_args(run_args *a) {
  if (a->weights && a->have_seed)
    return cli_usage_error("run", "--weights and --random-weights exclude each other");
#ifndef PPCC_HAVE_RUNTIME
  fprintf(stderr, "ppcc run: error: this ppcc was built without the runtime, so 'run' is "
                  "unavailable\n");
  return PPCC_ERR_USER;
#endif
  if (a->check_plan && a->mpi)
    return cli_usage_error("run", "--check-plan measures one process's devices; it does not run over MPI");
  if (a->ranks_map && !a->mpi)
    return cli_usage_error("run", "--ranks-map needs an MPI run (mpiexec -n R ppcc run ... or --mpi)");
#ifndef PPCC_HAVE_JIT
  if (a->backend && strcmp(a->backend, "jit") == 0)
    return cli_usage_error("run", "this ppcc was built without MLIR: --backend=jit is unavailable");
#endif
  ppcc_status st = cli_check_partition("run", &a->partition);
  return st ? st : cli_check_pass_name("run", a->dump_after);
}

int cli_cmd_run(int argc, char **argv) {
  run_args a = {.plan_memory_tolerance = 0.10, .plan_rss_tolerance = 0.10, .plan_time_tolerance = 0.25};
  a.inputs = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.inputs);
  a.expects = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.expects);
  if (!a.inputs || !a.expects) {
    free(a.inputs);
    free(a.expects);
    return PPCC_ERR_INTERNAL;
  }
  cli_parse p = {.cmd = &run_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st == PPCC_OK && !p.help) {
#ifdef PPCC_HAVE_RUNTIME
    a.mpi = a.mpi || ppcc_mpi_launched();
#endif
    st = check_run_args(&a);
  }
  if (st == PPCC_OK && !p.help) {
    ppcc_diag d;
#ifdef PPCC_HAVE_RUNTIME
    if (a.mpi) {
      ppcc_diag_init(&d, "ppcc run", stderr);
      st = ppcc_mpi_init(NULL, NULL, &d);
    }
#endif
    if (!st) st = cli_predict_load(&a.predict, &d);
    ppcc_graph *g = st ? NULL : cli_load_and_compile_partitioned(p.model_path, a.dump_after, &a.partition, &d, &st);
#ifdef PPCC_HAVE_RUNTIME
    if (g) st = run_graph(g, &a, &d);
    if (a.mpi) ppcc_mpi_finalize(st);
#endif
    ppcc_graph_free(g);
  }
  free_run_args(&a);
  return st;
}
