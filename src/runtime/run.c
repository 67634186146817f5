/* `ppcc run`: load weights and inputs, execute sharded, optionally check
 * against the unsharded reference, and write outputs as .npy files
 * (all-or-nothing: temporaries renamed only when everything succeeded). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ppcc/io.h"
#include "rt_internal.h"

/* ---------------- loading ---------------- */

void ppcc_run_data_free(ppcc_run_data *data) {
  if (!data || !data->values) return;
  for (int v = 0; v < data->n_values; v++)
    if (data->owned && data->owned[v]) rt_free(data->values[v].data);
  free(data->values);
  free(data->owned);
  ppcc_weights_close(data->weights);
  memset(data, 0, sizeof *data);
}

static void set_meta(ppcc_host_tensor *t, const ppcc_value *p) {
  t->dtype = p->dtype;
  t->rank = p->rank;
  memcpy(t->shape, p->shape, sizeof p->shape);
  t->bytes = ppcc_value_bytes(p);
}

static ppcc_status load_params(const ppcc_graph *g, ppcc_run_data *data, ppcc_diag *d) {
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_PARAM) continue;
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

static void shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && off < n; i++) off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}

/* Float files may feed any float input (converted); others must match. */
static ppcc_status convert_input(const ppcc_input_arg *arg, const ppcc_value *p, ppcc_host_tensor *t, ppcc_diag *d) {
  char got[128], want[128];
  shape_str(t->rank, t->shape, got, sizeof got);
  shape_str(p->rank, p->shape, want, sizeof want);
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
    if (p->kind != PPCC_VALUE_INPUT || data->values[v].data) continue;
    if (o->weights_path && !o->have_random_seed)
      return ppcc_error(d, "input '%s' needs --input %s=FILE.npy (or a --random-weights seed)", p->name, p->name);
    if (!ppcc_host_tensor_alloc(&data->values[v], p->dtype, p->rank, p->shape))
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory for input '%s'", p->name);
    data->owned[v] = true;
    ppcc_random_tensor(o->random_seed, p->name, &data->values[v]);
  }
  return PPCC_OK;
}

ppcc_status ppcc_run_data_load(const ppcc_graph *g, const ppcc_run_options *o, ppcc_run_data *data, ppcc_diag *d) {
  memset(data, 0, sizeof *data);
  data->n_values = g->n_values;
  data->values = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *data->values);
  data->owned = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *data->owned);
  if (!data->values || !data->owned) {
    ppcc_run_data_free(data);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  ppcc_status st = PPCC_OK;
  /* Without --weights, random weights are the default (seed 0). */
  data->weights = o->weights_path ? ppcc_weights_open(o->weights_path, d) : ppcc_weights_random(o->random_seed);
  if (!data->weights) st = d->errors ? PPCC_ERR_USER : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = load_params(g, data, d);
  if (!st) st = load_inputs(g, o, data, d);
  if (st) ppcc_run_data_free(data);
  return st;
}

/* ---------------- checking ---------------- */

double ppcc_check_tolerance(ppcc_dtype t) {
  switch (t) {
  case PPCC_F32: return 1e-4;
  case PPCC_F16: return 1e-2;
  case PPCC_BF16: return 5e-2;
  default: return 0;
  }
}

static double element(const ppcc_host_tensor *t, int64_t j) {
  switch (t->dtype) {
  case PPCC_F32: return ((const float *)t->data)[j];
  case PPCC_F16: return ppcc_f16_to_f32(((const uint16_t *)t->data)[j]);
  case PPCC_BF16: return ppcc_bf16_to_f32(((const uint16_t *)t->data)[j]);
  case PPCC_I64: return (double)((const int64_t *)t->data)[j];
  case PPCC_I32: return ((const int32_t *)t->data)[j];
  case PPCC_I8: return ((const int8_t *)t->data)[j];
  case PPCC_BOOL: return ((const uint8_t *)t->data)[j];
  default: return 0;
  }
}

ppcc_compare_result ppcc_compare(const ppcc_host_tensor *got, const ppcc_host_tensor *ref) {
  ppcc_compare_result r = {0, 0, true};
  if (got->dtype != ref->dtype || got->rank != ref->rank ||
      memcmp(got->shape, ref->shape, sizeof(int64_t) * (size_t)got->rank) != 0)
    return (ppcc_compare_result){INFINITY, INFINITY, false};
  double tol = ppcc_check_tolerance(ref->dtype);
  int64_t n = ppcc_num_elements(ref->rank, ref->shape);
  for (int64_t j = 0; j < n; j++) {
    double a = element(got, j), b = element(ref, j);
    double err = a == b || (isnan(a) && isnan(b)) ? 0 : fabs(a - b); /* equal infinities agree */
    if (isnan(err)) err = INFINITY;
    double rel = err / fmax(fabs(b), 1e-30);
    if (err > r.max_abs) r.max_abs = err;
    if (rel > r.max_rel && err > 0) r.max_rel = rel;
    if (!(err <= tol * (1.0 + fabs(b)))) r.ok = false;
  }
  return r;
}

static ppcc_status check_outputs(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o,
                                 const ppcc_host_tensor *got, ppcc_diag *d) {
  ppcc_host_tensor *ref = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *ref);
  if (!ref) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_exec_options eo = {.reference = true, .threads = o->threads};
  double ms = 0;
  ppcc_status st = ppcc_execute(g, data, &eo, ref, &ms, d);
  for (int k = 0; k < g->n_outputs && !st; k++) {
    const ppcc_value *p = &g->values[g->outputs[k]];
    ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
    if (o->log)
      fprintf(o->log, "check %s: max abs error %.3g, max rel error %.3g; every |got-ref| <= %.0e*(1+|ref|) (%s): %s\n",
              p->name, r.max_abs, r.max_rel, ppcc_check_tolerance(p->dtype), ppcc_dtype_name(p->dtype),
              r.ok ? "ok" : "FAIL");
    if (!r.ok)
      st = ppcc_error(d, "output '%s' differs from the unsharded reference: max abs error %.3g, max rel error %.3g "
                         "(needs every |got-ref| <= %.0e*(1+|ref|) for %s)",
                      p->name, r.max_abs, r.max_rel, ppcc_check_tolerance(p->dtype), ppcc_dtype_name(p->dtype));
  }
  if (!st && o->log) fprintf(o->log, "reference (unsharded, 1 device) ran in %.3f ms\n", ms);
  for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&ref[k]);
  free(ref);
  return st;
}

/* ---------------- writing ---------------- */

/* "blk.0/h@2,3" -> "blk.0_h_2_3.npy": names stay readable and safe. */
static char *output_path(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 8;
  char *p = malloc(n);
  if (!p) return NULL;
  int off = snprintf(p, n, "%s/", dir);
  for (const char *c = name; *c; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
              *c == '-' || *c == '_';
    p[off++] = ok ? *c : '_';
  }
  snprintf(p + off, n - (size_t)off, ".npy");
  return p;
}

static ppcc_status ensure_dir(const char *dir, ppcc_diag *d) {
  struct stat st;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode) ? PPCC_OK : ppcc_error(d, "%s: not a directory", dir);
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) return ppcc_error(d, "%s: cannot create directory: %s", dir, strerror(errno));
  return PPCC_OK;
}

/* All outputs or none: every file is written to its temporary first and
 * renamed only once all of them were written. */
static ppcc_status write_outputs(const ppcc_graph *g, const ppcc_run_options *o, const ppcc_host_tensor *out,
                                 ppcc_diag *d) {
  ppcc_status st = ensure_dir(o->output_dir, d);
  int n = g->n_outputs, opened = 0;
  ppcc_outfile *files = calloc((size_t)(n > 0 ? n : 1), sizeof *files);
  if (!files && !st) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int k = 0; k < n && !st; k++) {
    char *path = output_path(o->output_dir, g->values[g->outputs[k]].name);
    st = path ? ppcc_outfile_open(&files[k], path, d) : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    free(path);
    if (!st) opened++;
    if (!st) st = ppcc_npy_write_stream(files[k].fp, files[k].path, &out[k], d);
  }
  for (int k = 0; k < opened; k++) {
    if (st) {
      ppcc_outfile_abort(&files[k]);
      continue;
    }
    char *path = strdup(files[k].path); /* commit frees it */
    st = ppcc_outfile_commit(&files[k], d);
    if (!st && o->log && path) fprintf(o->log, "wrote %s\n", path);
    free(path);
  }
  free(files);
  return st;
}

/* ---------------- ppcc run ---------------- */

ppcc_status ppcc_run(const ppcc_graph *g, const ppcc_run_options *o, ppcc_diag *d) {
  ppcc_run_data data;
  ppcc_status st = ppcc_run_data_load(g, o, &data, d);
  if (st) return st;
  ppcc_rt_set_row_invariant_matmul(o->deterministic);
  ppcc_host_tensor *out = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *out);
  if (!out) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_exec_options eo = {.threads = o->threads, .inject_fault = o->inject_fault, .fault_device = o->fault_device,
                          .fault_op = o->fault_op, .trace_path = o->trace_path,
                          .microbatches = o->microbatches};
  ppcc_pipeline_stats stats = {0};
  if (o->log) eo.stats = &stats;
  double ms = 0;
  if (!st) st = o->execute ? o->execute(o->execute_ctx, g, &data, &eo, out, &ms, d) : ppcc_execute(g, &data, &eo, out, &ms, d);
  if (!st && o->log) fprintf(o->log, "ran '%s' on %d devices in %.3f ms\n", g->name, g->n_devices, ms);
  if (!st && o->log && stats.busy) ppcc_pipeline_stats_print(&stats, o->log);
  ppcc_pipeline_stats_free(&stats);
  if (!st && o->check) st = check_outputs(g, &data, o, out, d);
  if (!st && o->n_expects) st = ppcc_expect_outputs(g, o->expects, o->n_expects, out, o->log, d);
  if (!st && o->output_dir) st = write_outputs(g, o, out, d);
  for (int k = 0; out && k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
  free(out);
  ppcc_run_data_free(&data);
  return st;
}
