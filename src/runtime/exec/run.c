/* `ppcc run`: load weights and inputs, execute sharded, optionally check
 * against the unsharded reference, and write outputs as .npy files
 * (all-or-nothing: temporaries renamed only when everything succeeded). */
#include <errno.h>
#include <float.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ppcc/io.h"
#include "ppcc/mpi.h"
#include "ppcc/predict.h"
#include "exec.h"
#include "../comm/comm.h"

/* ---------------- loading ---------------- */

void ppcc_run_data_free(ppcc_run_data *data) {
  if (!data || !data->values) return;
  rt_resident_unref(data->resident); /* shards before the tensors they view */
  for (int v = 0; v < data->n_values; v++) {
    if (data->owned && data->owned[v]) rt_free(data->values[v].data);
    for (int i = 0; data->shard_owned && data->shard_owned[v] && i < data->n_shards[v]; i++)
      rt_free(data->shard_owned[v][i]);
    if (data->shards) free((void *)data->shards[v]);
    if (data->shard_owned) free(data->shard_owned[v]);
  }
  free(data->shards);
  free(data->shard_owned);
  free(data->n_shards);
  free(data->values);
  free(data->owned);
  free(data->borrowed);
  free(data->released);
  free(data->state_of);
  ppcc_weights_close(data->weights);
  memset(data, 0, sizeof *data);
}

static void set_meta(ppcc_host_tensor *t, const ppcc_value *p) {
  t->dtype = p->dtype;
  t->rank = p->rank;
  memcpy(t->shape, p->shape, sizeof p->shape);
  t->bytes = ppcc_value_bytes(p);
}

/* An MPI rank loads only the leaves of its devices (rank 0 all of them
 * for --check, whose reference run needs every value). */
static bool needed(const ppcc_graph *g, const ppcc_run_options *o, int v) {
  return (o->check && rt_dist_rank() == 0) || rt_dist_holds_value(g, v);
}

/* Param v of g as a view of from's param of the same name, dtype and
 * shape; false when from has none. */
static bool borrow_param(const ppcc_graph *g, int v, const ppcc_graph *from_g, const ppcc_run_data *from,
                         ppcc_run_data *data) {
  const ppcc_value *p = &g->values[v];
  int u = from_g ? ppcc_find_value(from_g, p->name) : -1;
  if (u < 0 || from_g->values[u].kind != PPCC_VALUE_PARAM || !from->values[u].data) return false;
  const ppcc_value *q = &from_g->values[u];
  if (q->dtype != p->dtype || q->rank != p->rank || memcmp(q->shape, p->shape, sizeof(int64_t) * (size_t)p->rank) != 0)
    return false;
  data->values[v] = from->values[u];
  data->borrowed[v] = true;
  data->released[v] = from->released && from->released[u]; /* only its shards may be read */
  return true;
}

const void *ppcc_run_data_shard(const ppcc_run_data *data, int v, int i) {
  return data->shards && data->shards[v] ? data->shards[v][i] : NULL;
}

/* Param v shard by shard from a sharded archive; the whole tensor is never
 * assembled. The unsharded reference (--check) needs it whole: refused. */
static ppcc_status load_param_shards(const ppcc_graph *g, const ppcc_run_options *o, ppcc_run_data *data, int v,
                                     ppcc_diag *d) {
  const ppcc_value *p = &g->values[v];
  if (o->check)
    return ppcc_error(d, "%s: param '%s' is stored in shards; --check runs the unsharded reference, which needs "
                      "the whole tensors (give the unsharded weights file)", o->weights_path, p->name);
  int count = p->layout.count > 0 ? p->layout.count : 1;
  if (!data->shards) {
    data->shards = calloc((size_t)data->n_values, sizeof *data->shards);
    data->shard_owned = calloc((size_t)data->n_values, sizeof *data->shard_owned);
    data->n_shards = calloc((size_t)data->n_values, sizeof *data->n_shards);
    if (!data->shards || !data->shard_owned || !data->n_shards) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  data->shards[v] = calloc((size_t)count, sizeof **data->shards);
  data->shard_owned[v] = calloc((size_t)count, sizeof **data->shard_owned);
  if (!data->shards[v] || !data->shard_owned[v]) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  data->n_shards[v] = count;
  for (int i = 0; i < count; i++) {
    ppcc_status st = ppcc_weights_get_shard(data->weights, p, i, &data->shards[v][i], &data->shard_owned[v][i], d);
    if (st) return st;
  }
  set_meta(&data->values[v], p);
  return PPCC_OK;
}

static ppcc_status load_params(const ppcc_graph *g, const ppcc_run_options *o, const ppcc_graph *from_g,
                               const ppcc_run_data *from, ppcc_run_data *data, ppcc_diag *d) {
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_PARAM || !needed(g, o, v) || borrow_param(g, v, from_g, from, data)) continue;
    if (ppcc_weights_sharded(data->weights, p)) {
      ppcc_status st = load_param_shards(g, o, data, v, d);
      if (st) return st;
      continue;
    }
    const void *bytes;
    void *owned;
    ppcc_status st = ppcc_weights_get(data->weights, p, &bytes, &owned, d);
    if (st) return st;
    set_meta(&data->values[v], p);
    data->values[v].data = (void *)bytes; /* read only; may point into the mapping */
    data->owned[v] = owned != NULL;
  }
  return PPCC_OK;
}

/* Float files may feed any float input (converted); others must match. */
static ppcc_status convert_input(const ppcc_input_arg *arg, const ppcc_value *p, ppcc_host_tensor *t, ppcc_diag *d) {
  char got[128], want[128];
  rt_shape_str(t->rank, t->shape, got, sizeof got);
  rt_shape_str(p->rank, p->shape, want, sizeof want);
  if (t->rank != p->rank || memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)p->rank) != 0)
    return ppcc_error(d, "%s: input '%s' has shape %s but the graph declares %s", arg->path, p->name, got, want);
  if (t->dtype == p->dtype) return PPCC_OK;
  if (!ppcc_dtype_is_float(t->dtype) || !ppcc_dtype_is_float(p->dtype))
    return ppcc_error(d, "%s: input '%s' is %s but the graph declares %s", arg->path, p->name,
                      ppcc_dtype_name(t->dtype), ppcc_dtype_name(p->dtype));
  ppcc_host_tensor c;
  int64_t n = ppcc_num_elements(t->rank, t->shape);
  float *f = rt_alloc(n * 4);
  if (!f || !ppcc_host_tensor_alloc(&c, p->dtype, p->rank, p->shape)) {
    rt_free(f);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  rt_to_f32(t->dtype, t->data, f, n);
  rt_from_f32(p->dtype, f, c.data, n);
  rt_free(f);
  ppcc_host_tensor_free(t);
  *t = c;
  return PPCC_OK;
}

static ppcc_status load_input_file(const ppcc_graph *g, const ppcc_input_arg *arg, ppcc_run_data *data, ppcc_diag *d) {
  int v = ppcc_find_value(g, arg->name);
  if (v < 0 || g->values[v].kind != PPCC_VALUE_INPUT)
    return ppcc_error(d, "--input %s=%s: the graph has no input named '%s'", arg->name, arg->path, arg->name);
  if (data->values[v].data)
    return ppcc_error(d, "--input %s=%s: input '%s' is given twice", arg->name, arg->path, arg->name);
  ppcc_host_tensor t;
  ppcc_status st = ppcc_npy_read(arg->path, &t, d);
  if (!st) st = convert_input(arg, &g->values[v], &t, d);
  if (st) {
    ppcc_host_tensor_free(&t);
    return st;
  }
  data->values[v] = t;
  data->owned[v] = true;
  return PPCC_OK;
}

static ppcc_status load_inputs(const ppcc_graph *g, const ppcc_run_options *o, ppcc_run_data *data, ppcc_diag *d) {
  for (int k = 0; k < o->n_inputs; k++) {
    ppcc_status st = load_input_file(g, &o->inputs[k], data, d);
    if (st) return st;
  }
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_INPUT || data->values[v].data || !needed(g, o, v)) continue;
    if (o->weights_path && !o->have_random_seed)
      return ppcc_error(d, "input '%s' needs --input %s=FILE.npy (or a --random-weights seed)", p->name, p->name);
    if (!ppcc_host_tensor_alloc(&data->values[v], p->dtype, p->rank, p->shape))
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory for input '%s'", p->name);
    data->owned[v] = true;
    ppcc_random_tensor(o->random_seed, p->name, &data->values[v]);
  }
  return PPCC_OK;
}

ppcc_status ppcc_run_data_load_sharing(const ppcc_graph *g, const ppcc_run_options *o, const ppcc_graph *from_g,
                                       const ppcc_run_data *from, ppcc_run_data *data, ppcc_diag *d) {
  memset(data, 0, sizeof *data);
  size_t n = (size_t)(g->n_values > 0 ? g->n_values : 1);
  data->n_values = g->n_values;
  data->values = calloc(n, sizeof *data->values);
  data->owned = calloc(n, sizeof *data->owned);
  data->borrowed = calloc(n, sizeof *data->borrowed);
  data->released = calloc(n, sizeof *data->released);
  data->state_of = malloc(n * sizeof *data->state_of);
  data->resident = from ? rt_resident_ref(from->resident) : rt_resident_new();
  for (size_t v = 0; data->state_of && v < n; v++) data->state_of[v] = -1;
  if (!data->values || !data->owned || !data->borrowed || !data->released || !data->state_of || !data->resident) {
    ppcc_run_data_free(data);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  ppcc_status st = PPCC_OK;
  /* Without --weights, random weights are the default (seed 0). */
  data->weights = o->weights_path ? ppcc_weights_open(o->weights_path, d) : ppcc_weights_random(o->random_seed);
  if (!data->weights) st = d->errors ? PPCC_ERR_USER : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = load_params(g, o, from_g, from, data, d);
  if (!st) st = load_inputs(g, o, data, d);
  if (st) ppcc_run_data_free(data);
  return st;
}

ppcc_status ppcc_run_data_load(const ppcc_graph *g, const ppcc_run_options *o, ppcc_run_data *data, ppcc_diag *d) {
  return ppcc_run_data_load_sharing(g, o, NULL, NULL, data, d);
}

/* ---------------- checking ---------------- */

static ppcc_status check_outputs(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o,
                                 const ppcc_host_tensor *got, ppcc_diag *d) {
  ppcc_host_tensor *ref = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *ref);
  if (!ref) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_exec_options eo = {.reference = true, .threads = o->threads};
  double ms = 0;
  ppcc_status st = ppcc_execute(g, data, &eo, ref, &ms, d);
  for (int k = 0; k < g->n_outputs && !st; k++) {
    ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
    st = rt_report_comparison(&g->values[g->outputs[k]], &r, "check", "the unsharded reference", o->log, d);
    if (st && !rt_dist_active()) rt_report_divergence(g, data, o, k, d); /* notes after the error */
    else if (st) ppcc_note(d, "run without MPI to find the first divergent value (not searched in MPI runs)");
  }
  if (!st && o->log) fprintf(o->log, "reference (unsharded, 1 device) ran in %.3f ms\n", ms);
  for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&ref[k]);
  free(ref);
  return st;
}

/* ---------------- writing ---------------- */

/* The longest file name most file systems take (NAME_MAX). */
#define FILE_NAME_MAX 255

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h;
}

/* "blk.0/h@2,3" -> "blk.0_h_2_3.npy": names stay readable and safe. A name
 * too long for a file name keeps its first bytes and gets a hash of the
 * whole name. Different names can still meet (a/b and a_b): the caller
 * refuses those. */
static char *output_file_name(const char *name) {
  size_t len = strlen(name);
  char *p = malloc(len + 32);
  if (!p) return NULL;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_';
    p[i] = ok ? c : '_';
  }
  if (len + 4 <= FILE_NAME_MAX) {
    memcpy(p + len, ".npy", 5);
    return p;
  }
  size_t keep = FILE_NAME_MAX - 4 - 17;
  snprintf(p + keep, len + 32 - keep, "-%016llx.npy", (unsigned long long)fnv1a64(name));
  return p;
}

static ppcc_status ensure_dir(const char *dir, ppcc_diag *d) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode) ? PPCC_OK : ppcc_error(d, "%s: not a directory", dir);
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) return ppcc_error(d, "%s: cannot create directory: %s", dir, strerror(errno));
  return PPCC_OK;
}

typedef struct named_output {
  const char *value; /* the graph's name */
  char *file;        /* its file name in the output directory */
} named_output;

static int by_file(const void *a, const void *b) {
  return strcmp(((const named_output *)a)->file, ((const named_output *)b)->file);
}

/* The file name of every output; two outputs whose names give the same
 * file are refused (writing one would silently drop the other). */
static ppcc_status name_outputs(const ppcc_graph *g, const char *dir, named_output *names, ppcc_diag *d) {
  int n = g->n_outputs;
  for (int k = 0; k < n; k++) {
    names[k].value = g->values[g->outputs[k]].name;
    names[k].file = output_file_name(names[k].value);
    if (!names[k].file) return ppcc_error(d, "out of memory");
  }
  named_output *sorted = malloc(sizeof *sorted * (size_t)(n > 0 ? n : 1));
  if (!sorted) return ppcc_error(d, "out of memory");
  memcpy(sorted, names, sizeof *sorted * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, by_file);
  ppcc_status st = PPCC_OK;
  for (int k = 1; k < n && !st; k++)
    if (strcmp(sorted[k - 1].file, sorted[k].file) == 0)
      st = ppcc_error(d, "--output-dir %s: outputs '%s' and '%s' would both be written to %s (file names keep only "
                         "letters, digits, '.', '-' and '_'); rename one of them",
                      dir, sorted[k - 1].value, sorted[k].value, sorted[k].file);
  free(sorted);
  return st;
}

/* Writes output k to its temporary and closes it (no descriptor stays
 * open: any number of outputs can be written). */
static ppcc_status write_one(const char *dir, const named_output *name, const ppcc_host_tensor *t, ppcc_outfile *f,
                             bool *opened, ppcc_diag *d) {
  size_t n = strlen(dir) + strlen(name->file) + 2;
  char *path = malloc(n);
  if (!path) return ppcc_error(d, "out of memory");
  snprintf(path, n, "%s/%s", dir, name->file);
  ppcc_status st = ppcc_outfile_open(f, path, d);
  free(path);
  if (st) return st;
  *opened = true;
  st = ppcc_npy_write_stream(f->fp, f->path, t, d);
  return st ? st : ppcc_outfile_close(f, d);
}

/* All outputs (and the trace) or none: every file is written to its
 * temporary first, and the set is committed only once all were written. */
static ppcc_status write_outputs(const ppcc_graph *g, const ppcc_run_options *o, const ppcc_host_tensor *out,
                                 ppcc_outfile *trace, ppcc_diag *d) {
  int n = o->output_dir ? g->n_outputs : 0, opened = 0;
  ppcc_outfile *files = calloc((size_t)n + 1, sizeof *files);
  named_output *names = calloc((size_t)n + 1, sizeof *names);
  ppcc_status st = files && names ? PPCC_OK : ppcc_error(d, "out of memory");
  if (!st && o->output_dir) st = ensure_dir(o->output_dir, d);
  if (!st && o->output_dir) st = name_outputs(g, o->output_dir, names, d);
  for (int k = 0; k < n && !st; k++) {
    bool ok = false;
    st = write_one(o->output_dir, &names[k], &out[k], &files[opened], &ok, d);
    if (ok) opened++;
    if (!st && trace && trace->path && strcmp(trace->path, files[opened - 1].path) == 0)
      st = ppcc_error(d, "--trace %s: the same file as output '%s'", trace->path, names[k].value);
  }
  if (trace && trace->path) files[opened++] = *trace; /* the set owns it now */
  if (trace) memset(trace, 0, sizeof *trace);
  if (!st) st = ppcc_outfile_commit_all(files, opened, d);
  else
    for (int k = 0; k < opened; k++) ppcc_outfile_abort(&files[k]);
  for (int k = 0; !st && o->log && k < n; k++) {
    fprintf(o->log, "wrote ");
    ppcc_escape_fputs(o->log, o->output_dir, PPCC_ESCAPE_TEXT);
    putc('/', o->log);
    ppcc_escape_fputs(o->log, names[k].file, PPCC_ESCAPE_TEXT);
    putc('\n', o->log);
  }
  for (int k = 0; names && k < n; k++) free(names[k].file);
  free(names);
  free(files);
  return st;
}

/* ---------------- ppcc run ---------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of n sorted times. */
static double median_of(const double *ms, int n) { return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]); }

/* One forward through the caller's executor (the JIT) or the interpreter. */
static ppcc_status forward_once(const ppcc_run_options *o, const ppcc_graph *g, const ppcc_run_data *data,
                                const ppcc_exec_options *eo, ppcc_host_tensor *out, double *ms, ppcc_diag *d) {
  return o->execute ? o->execute(o->execute_ctx, g, data, eo, out, ms, d) : ppcc_execute(g, data, eo, out, ms, d);
}

/* --repeat N: N more forwards on the loaded data (weights stay in place,
 * as in a serving loop). Two figures, min and median: the device programs'
 * wall time (compares with an eager framework's forward) and the whole
 * call as a caller sees it (binding leaves, device programs, collecting
 * outputs), so that per-call setup is not hidden. The first run's outputs
 * are the ones kept. Under --check-plan the measured forwards follow a
 * warm-up (PPCC_CHECK_PLAN_WARMUP_MS). */
static ppcc_status repeat_forward(const ppcc_graph *g, const ppcc_run_options *o, const ppcc_run_data *data,
                                  const ppcc_exec_options *eo, ppcc_diag *d) {
  double *ms = calloc((size_t)o->repeat, sizeof *ms), *call = calloc((size_t)o->repeat, sizeof *call);
  ppcc_host_tensor *out = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *out);
  ppcc_status st = ms && call && out ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_exec_options quiet = *eo;
  quiet.stats = NULL;
  quiet.trace_path = NULL; /* the trace is the first forward's, committed with its outputs */
  quiet.trace_file = NULL;
  if (eo->measure && !st) { /* --check-plan: the steady state (PPCC_CHECK_PLAN_WARMUP_MS), unmeasured */
    ppcc_exec_options warm = quiet;
    warm.measure = NULL;
    double t0 = omp_get_wtime(), unused;
    int n = 0;
    do {
      st = forward_once(o, g, data, &warm, out, &unused, d);
      for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
      n++;
    } while (!st && (omp_get_wtime() - t0) * 1e3 < PPCC_CHECK_PLAN_WARMUP_MS);
    if (!st && o->log)
      fprintf(o->log, "warm-up: %d forwards in %.1f ms, not measured (a plan predicts the steady state)\n", n,
              (omp_get_wtime() - t0) * 1e3);
  }
  for (int r = 0; r < o->repeat && !st; r++) {
    double t = omp_get_wtime();
    st = forward_once(o, g, data, &quiet, out, &ms[r], d);
    call[r] = (omp_get_wtime() - t) * 1e3;
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
  }
  if (!st && o->log) {
    qsort(ms, (size_t)o->repeat, sizeof *ms, cmp_double);
    qsort(call, (size_t)o->repeat, sizeof *call, cmp_double);
    fprintf(o->log, "forward (steady state, %d runs): min %.3f ms, median %.3f ms\n", o->repeat, ms[0],
            median_of(ms, o->repeat));
    fprintf(o->log, "call (steady state, %d runs): min %.3f ms, median %.3f ms (whole call: leaves bound, device "
                    "programs, outputs collected)\n",
            o->repeat, call[0], median_of(call, o->repeat));
  }
  free(ms);
  free(call);
  free(out);
  return st;
}

/* Loading, timed apart from compute: weights and inputs, then every
 * param shard this process's devices hold made resident (resident.c), so
 * that the first call pays for no setup but its own. */
static ppcc_status load_timed(const ppcc_graph *g, const ppcc_run_options *o, ppcc_run_data *data, ppcc_diag *d) {
  double t = omp_get_wtime();
  ppcc_status st = ppcc_run_data_load(g, o, data, d);
  if (st) return st;
  data->release_cut = !o->check; /* --check reruns the graph unsharded, on the whole tensors */
  for (int v = 0; o->measure && o->measure->held_whole && v < g->n_values; v++)
    o->measure->held_whole[v] = data->owned[v]; /* for the plan: generated or converted, not in the file */
  st = ppcc_run_data_make_resident(g, data, d);
  if (st) {
    ppcc_run_data_free(data);
    return st;
  }
  if (o->log)
    fprintf(o->log,
            "load: %.3f ms (weights and inputs; %d param shards resident, %.1f MiB of them made at load, "
            "%.2f MiB of whole tensors given back once cut)\n",
            (omp_get_wtime() - t) * 1e3, ppcc_resident_count(data), (double)ppcc_resident_owned_bytes(data) / (1 << 20),
            (double)ppcc_resident_released_bytes(data) / (1 << 20));
  return PPCC_OK;
}

/* The first call's line: its whole wall time beside the device programs'. */
static void log_first_call(FILE *log, double call_ms, double device_ms) {
  if (log)
    fprintf(log, "first call: %.3f ms (device programs %.3f ms; leaves bound and outputs collected %.3f ms)\n",
            call_ms, device_ms, call_ms - device_ms);
}

void rt_keep_freed_memory(void) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

/* The most memory this process can hold: the machine's, or less under
 * ulimit -v / -d. */
static uint64_t memory_limit(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t limit = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
  static const int resources[] = {RLIMIT_AS, RLIMIT_DATA};
  for (int i = 0; i < 2; i++) {
    struct rlimit r;
    if (getrlimit(resources[i], &r) == 0 && r.rlim_cur != RLIM_INFINITY && (uint64_t)r.rlim_cur < limit)
      limit = (uint64_t)r.rlim_cur;
  }
  return limit;
}

/* A value larger than all the memory there is is refused before anything
 * is allocated (else a lazy allocation might succeed and the OOM killer
 * end the run), naming the value and its bytes. */
static ppcc_status check_value_sizes(const ppcc_graph *g, ppcc_diag *d) {
  uint64_t limit = memory_limit();
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    int64_t bytes = ppcc_value_bytes(p);
    char shape[128];
    rt_shape_str(p->rank, p->shape, shape, sizeof shape);
    if (bytes < 0)
      return ppcc_error(d, "value '%s' (%s%s) is too large to address", p->name, ppcc_dtype_name(p->dtype), shape);
    if ((uint64_t)bytes > limit)
      return ppcc_error(d, "value '%s' (%s%s) needs %lld bytes, more than the %llu bytes of memory this process can "
                           "use",
                        p->name, ppcc_dtype_name(p->dtype), shape, (long long)bytes, (unsigned long long)limit);
  }
  return PPCC_OK;
}

/* An MPI run: every rank calls ppcc_run; rank 0 checks, writes and logs. */
static ppcc_status run_distributed(const ppcc_graph *g, const ppcc_run_options *o, ppcc_diag *d);

ppcc_status ppcc_run(const ppcc_graph *g, const ppcc_run_options *o, ppcc_diag *d) {
  if (rt_dist_active()) return run_distributed(g, o, d);
  rt_keep_freed_memory();
  int cores = o->threads > 0 ? o->threads : omp_get_num_procs();
  if (g->n_devices > cores)
    ppcc_warning(d, "%d logical devices on %d cores: device threads time-share the cores", g->n_devices, cores);
  ppcc_run_data data;
  ppcc_status st = check_value_sizes(g, d);
  if (st) return st;
  st = load_timed(g, o, &data, d);
  if (st) return st;
  ppcc_rt_set_row_invariant_matmul(o->deterministic);
  ppcc_host_tensor *out = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *out);
  if (!out) st = ppcc_error(d, "out of memory");
  /* The trace is committed with the outputs: a failed run leaves neither. */
  ppcc_outfile trace = {0};
  if (!st && o->trace_path) st = ppcc_outfile_open(&trace, o->trace_path, d);
  ppcc_exec_options eo = {.threads = o->threads, .inject_fault = o->inject_fault, .fault_device = o->fault_device,
                          .fault_op = o->fault_op, .trace_path = o->trace_path,
                          .trace_file = o->trace_path ? &trace : NULL, .microbatches = o->microbatches,
                          .measure = o->measure};
  ppcc_pipeline_stats stats = {0};
  if (o->log) eo.stats = &stats;
  double ms = 0, t_call = omp_get_wtime();
  if (!st) st = forward_once(o, g, &data, &eo, out, &ms, d);
  t_call = (omp_get_wtime() - t_call) * 1e3;
  char shown[4 * PPCC_MAX_NAME];
  ppcc_escape_text(shown, sizeof shown, g->name);
  if (!st && o->log) fprintf(o->log, "ran '%s' on %d devices in %.3f ms\n", shown, g->n_devices, ms);
  if (!st) log_first_call(o->log, t_call, ms);
  if (!st && o->log && stats.busy) ppcc_pipeline_stats_print(&stats, o->log);
  if (!st && o->repeat > 0) st = repeat_forward(g, o, &data, &eo, d);
  ppcc_pipeline_stats_free(&stats);
  if (!st && o->check) st = check_outputs(g, &data, o, out, d);
  if (!st && o->n_expects) st = ppcc_expect_outputs(g, o->expects, o->n_expects, out, o->log, d);
  if (!st && (o->output_dir || trace.path)) st = write_outputs(g, o, out, &trace, d);
  if (trace.path) ppcc_outfile_abort(&trace);
  for (int k = 0; out && k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
  free(out);
  ppcc_run_data_free(&data);
  return st;
}

/* Bytes of the param shards this rank's devices hold. */
static int64_t local_param_bytes(const ppcc_graph *g) {
  int64_t total = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    int64_t shape[PPCC_MAX_RANK];
    if (p->kind != PPCC_VALUE_PARAM || !p->devices) continue;
    ppcc_value_shard_shape(p, shape);
    for (int i = 0; i < p->layout.count; i++)
      if (rt_dist_local(p->devices[i])) total += ppcc_num_elements(p->rank, shape) * ppcc_dtype_size(p->dtype);
  }
  return total;
}

static ppcc_status run_distributed(const ppcc_graph *g, const ppcc_run_options *o, ppcc_diag *d) {
  bool root = rt_dist_rank() == 0;
  ppcc_run_options local = *o;
  if (!root) local.log = NULL, local.check = false, local.output_dir = NULL;
  ppcc_run_data data;
  ppcc_status st = load_timed(g, &local, &data, d);
  if (st) { /* the executor's steps are never reached: take part in them here */
    rt_dist_sync(NULL);
    return rt_dist_agree(st, d);
  }
  ppcc_rt_set_row_invariant_matmul(o->deterministic);
  ppcc_host_tensor *out = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *out);
  /* rank 0's trace is committed with its outputs, as in a one-process run */
  ppcc_outfile trace = {0};
  ppcc_status trace_st = root && o->trace_path ? ppcc_outfile_open(&trace, o->trace_path, d) : PPCC_OK;
  ppcc_exec_options eo = {.threads = o->threads, .inject_fault = o->inject_fault, .fault_device = o->fault_device,
                          .fault_op = o->fault_op, .trace_path = root ? o->trace_path : NULL,
                          .trace_file = root && trace.path ? &trace : NULL, .microbatches = o->microbatches};
  ppcc_pipeline_stats stats = {0};
  eo.stats = &stats; /* every rank records its tracks: rank 0 merges them */
  double ms = 0;
  if (!out || trace_st) {
    if (trace.path) ppcc_outfile_abort(&trace);
    free(out);
    ppcc_run_data_free(&data);
    rt_dist_sync(NULL);
    return rt_dist_agree(trace_st ? trace_st : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"), d);
  }
  /* the executors agree on the result */
  double t_call = omp_get_wtime();
  st = forward_once(o, g, &data, &eo, out, &ms, d);
  t_call = (omp_get_wtime() - t_call) * 1e3;
  if (!st && local.log)
  {
    char shown[4 * PPCC_MAX_NAME];
    ppcc_escape_text(shown, sizeof shown, g->name);
    fprintf(local.log, "ran '%s' on %d devices over %d MPI ranks in %.3f ms\n", shown, g->n_devices,
            ppcc_mpi_size(), ms);
  }
  if (!st) log_first_call(local.log, t_call, ms);
  if (!st && local.log && stats.busy) ppcc_pipeline_stats_print(&stats, local.log);
  /* --repeat N: every rank takes part in the N more forwards; rank 0 prints its wall times */
  if (!st && o->repeat > 0) st = repeat_forward(g, &local, &data, &eo, d);
  ppcc_pipeline_stats_free(&stats);
  ppcc_status post = PPCC_OK; /* rank 0's check and writing */
  if (!st && local.check) post = check_outputs(g, &data, &local, out, d);
  if (!st && !post && root && o->n_expects)
    post = ppcc_expect_outputs(g, o->expects, o->n_expects, out, local.log, d);
  if (!st && !post && (local.output_dir || trace.path)) post = write_outputs(g, &local, out, &trace, d);
  if (trace.path) ppcc_outfile_abort(&trace);
  if (!st) st = rt_dist_agree(post, d); /* a failed write fails every rank */
  if (!st) rt_dist_report_memory(local.log, local_param_bytes(g));
  for (int k = 0; out && k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
  free(out);
  ppcc_run_data_free(&data);
  return st;
}
