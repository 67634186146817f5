/* --check down to the first divergent value (issue 17 item 4). When an
 * output differs from the unsharded reference, the graph runs again twice
 * with every op result captured (ppcc_capture): sharded on the backend
 * that failed, unsharded on the reference executor. The first value in
 * program order whose sharded result differs from the reference beyond
 * --check's tolerance is the one to look at: everything before it agreed.
 * How a shard is compared depends on its layout:
 *   split       shard i against the i-th slice of the reference;
 *   replicated  every shard against the whole reference (so a wrong
 *   unsharded   replica is named by its shard);
 *   unreduced   partial sums: the sum of the shards (in shard order, in
 *               f32, as all_reduce does) against the reference.
 * The tolerance's scale M is the whole value's max |ref|, so a slice is
 * held to the bound the whole value would be. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/report.h"
#include "exec.h"

/* One capture run: outputs are computed and dropped. */
static ppcc_status capture_run(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o,
                               bool reference, bool use_execute, ppcc_capture *cap, ppcc_diag *d) {
  if (!ppcc_capture_init(cap, g, reference)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_host_tensor *out = calloc((size_t)(g->n_outputs > 0 ? g->n_outputs : 1), sizeof *out);
  if (!out) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_exec_options eo = {.reference = reference, .threads = o->threads, .capture = cap};
  double ms = 0;
  ppcc_status st = use_execute ? o->execute(o->execute_ctx, g, data, &eo, out, &ms, d)
                               : ppcc_execute(g, data, &eo, out, &ms, d);
  for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
  free(out);
  return st;
}

/* ---------------- comparing one value ---------------- */

static ppcc_host_tensor view(const ppcc_value *p, const int64_t *shape, void *data) {
  ppcc_host_tensor t = {.dtype = p->dtype, .rank = p->rank, .data = data};
  memcpy(t.shape, shape, sizeof t.shape);
  t.bytes = ppcc_num_elements(p->rank, shape) * ppcc_dtype_size(p->dtype);
  return t;
}

static double max_abs_of(const ppcc_host_tensor *t) {
  if (!ppcc_dtype_is_float(t->dtype)) return 0;
  int64_t n = ppcc_num_elements(t->rank, t->shape);
  float *f = rt_alloc(n * 4);
  double m = 0;
  if (!f) return -1; /* fall back to the slice's own scale */
  rt_to_f32(t->dtype, t->data, f, n);
  for (int64_t j = 0; j < n; j++) {
    double a = fabs(f[j]);
    if (a > m && a <= DBL_MAX) m = a; /* as ppcc_compare: NaN and infinities set no scale */
  }
  rt_free(f);
  return m;
}

/* The flat index j of a tensor of `shape` as a multi-index. */
static void unflatten(int rank, const int64_t *shape, int64_t j, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    idx[i] = shape[i] > 0 ? j % shape[i] : 0;
    j = shape[i] > 0 ? j / shape[i] : 0;
  }
}

/* Compares the captured shards of v with the reference; false on OOM. */
static bool compare_value(const ppcc_graph *g, int v, const ppcc_capture *ref, const ppcc_capture *got,
                          ppcc_divergence *r) {
  const ppcc_value *p = &g->values[v];
  ppcc_layout l = p->layout;
  int n = got->counts[v];
  ppcc_host_tensor whole = view(p, p->shape, ref->shards[v][0]);
  double scale = max_abs_of(&whole);
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(p, local);
  int64_t count = ppcc_num_elements(p->rank, local);
  bool split = n > 1 && l.kind == PPCC_LAYOUT_SPLIT, summed = n > 1 && l.kind == PPCC_LAYOUT_UNREDUCED;
  void *tmp = split || summed ? rt_calloc(count * ppcc_dtype_size(p->dtype)) : NULL;
  float *acc = summed && ppcc_dtype_is_float(p->dtype) ? rt_calloc(count * 4) : NULL;
  if ((split || summed) && (!tmp || (summed && ppcc_dtype_is_float(p->dtype) && !acc))) {
    rt_free(tmp);
    rt_free(acc);
    return false;
  }
  memset(r, 0, sizeof *r);
  r->value = v;
  r->op = p->def_op;
  r->n_shards = n;
  if (summed) {
    for (int i = 0; i < n; i++) {
      if (!got->shards[v][i]) goto done; /* not captured: nothing to say */
      if (acc) rt_acc_f32(p->dtype, got->shards[v][i], acc, count);
      else rt_add_int(p->dtype, got->shards[v][i], tmp, count);
    }
    if (acc) rt_from_f32(p->dtype, acc, tmp, count);
    ppcc_host_tensor sum = view(p, p->shape, tmp);
    r->cmp = rt_compare_at_scale(&sum, &whole, scale);
    if (!r->cmp.ok) {
      r->found = true;
      r->shard = -1;
      r->n_bad_shards = n;
      if (r->cmp.worst >= 0) unflatten(p->rank, p->shape, r->cmp.worst, r->worst_at);
    }
    goto done;
  }
  for (int i = 0; i < n; i++) {
    if (!got->shards[v][i]) continue;
    ppcc_host_tensor want = whole;
    if (split) {
      rt_copy_shard_out(whole.data, tmp, rt_split_geometry(p->rank, p->shape, l.dim, n), n, i,
                        ppcc_dtype_size(p->dtype));
      want = view(p, local, tmp);
    }
    ppcc_host_tensor shard = view(p, split ? local : p->shape, got->shards[v][i]);
    ppcc_compare_result c = rt_compare_at_scale(&shard, &want, scale);
    if (c.ok) continue;
    if (!r->found) {
      r->found = true;
      r->shard = i;
      r->cmp = c;
      if (c.worst >= 0) unflatten(p->rank, want.shape, c.worst, r->worst_at);
      if (split) r->worst_at[l.dim] += local[l.dim] * i; /* the index in the whole value */
    }
    r->n_bad_shards++;
  }
done:
  rt_free(tmp);
  rt_free(acc);
  return true;
}

/* The first divergent result in program order (r->found false: none). */
static ppcc_status first_divergence(const ppcc_graph *g, const ppcc_capture *ref, const ppcc_capture *got,
                                    ppcc_divergence *r, ppcc_diag *d) {
  memset(r, 0, sizeof *r);
  for (int v = 0; v < g->n_values; v++) { /* params and inputs first: the shards cut from them */
    if (g->values[v].kind == PPCC_VALUE_RESULT || !ref->shards[v][0]) continue;
    ppcc_divergence c;
    if (!compare_value(g, v, ref, got, &c)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    if (!c.found) continue;
    c.op = -1;
    *r = c;
    return PPCC_OK;
  }
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    for (int k = 0; k < op->n_out; k++) {
      int v = op->out[k];
      if (!ref->shards[v][0]) continue; /* the reference did not compute it */
      ppcc_divergence c;
      if (!compare_value(g, v, ref, got, &c)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
      if (!c.found) continue;
      c.op = j;
      *r = c;
      return PPCC_OK;
    }
  }
  return PPCC_OK;
}

ppcc_status ppcc_find_divergence(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o,
                                 ppcc_divergence *out, ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  ppcc_capture ref = {0}, got = {0};
  ppcc_status st = capture_run(g, data, o, true, false, &ref, d);
  if (!st && o->execute) {
    ppcc_diag quiet;
    ppcc_diag_init(&quiet, NULL, NULL);
    if (capture_run(g, data, o, false, true, &got, &quiet)) {
      ppcc_capture_free(&got);
      out->on_interp = true;
      snprintf(out->why_not_jit, sizeof out->why_not_jit, "%s", quiet.first);
    }
  }
  if (!st && (!o->execute || out->on_interp)) st = capture_run(g, data, o, false, false, &got, d);
  if (!st) {
    bool on_interp = out->on_interp;
    char why[sizeof out->why_not_jit];
    memcpy(why, out->why_not_jit, sizeof why);
    st = first_divergence(g, &ref, &got, out, d);
    out->on_interp = on_interp;
    memcpy(out->why_not_jit, why, sizeof why);
  }
  ppcc_capture_free(&ref);
  ppcc_capture_free(&got);
  return st;
}

/* ---------------- reporting ---------------- */

static void index_text(int rank, const int64_t *idx, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && off < n; i++)
    off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)idx[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}

/* "'a' split(1/2) on [0,1]" */
static void placement_text(const ppcc_value *p, char *buf, size_t n) {
  char layout[64], devs[256] = "?";
  ppcc_layout_str(p->layout, layout, sizeof layout);
  if (p->devices) ppcc_devices_str(p->devices, p->layout.count, devs, sizeof devs);
  snprintf(buf, n, "'%s' %s on %s", p->name, layout, devs);
}

static void note_op(const ppcc_graph *g, const ppcc_op *op, ppcc_diag *d) {
  char ref[PPCC_MAX_NAME * 2 + 64], operands[1024] = "", res[400];
  size_t off = 0;
  for (int k = 0; k < op->n_in && off < sizeof operands; k++) {
    char one[400];
    placement_text(&g->values[op->in[k]], one, sizeof one);
    off += (size_t)snprintf(operands + off, sizeof operands - off, "%s%s", k ? ", " : "", one);
  }
  placement_text(&g->values[op->out[0]], res, sizeof res);
  ppcc_note(d, "  op #%d of the compiled program: %s, a %s op; operands %s; result %s", (int)(op - g->ops),
            ppcc_op_ref(g, op, ref, sizeof ref),
            op->info->family == PPCC_FAMILY_COMPUTE    ? "compute"
            : op->info->family == PPCC_FAMILY_TRANSFER ? "transfer"
                                                       : "collective",
            op->n_in ? operands : "none", res);
}

/* The --why text of the value, one note per line. */
static void note_why(const ppcc_graph *g, int v, ppcc_diag *d) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return;
  ppcc_explain_value(g, v, m);
  if (fclose(m) != 0 || !text) {
    free(text);
    return;
  }
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    ppcc_note(d, "  why: %s", line);
  free(text);
}

static void note_divergence(const ppcc_graph *g, const ppcc_divergence *r, const char *backend, ppcc_diag *d) {
  const ppcc_value *p = &g->values[r->value];
  const ppcc_op *op = r->op >= 0 ? &g->ops[r->op] : NULL;
  char at[PPCC_MAX_RANK * 24 + 8], layout[64], devs[256] = "?";
  index_text(p->rank, r->worst_at, at, sizeof at);
  if (p->devices) ppcc_devices_str(p->devices, p->layout.count, devs, sizeof devs);
  ppcc_layout_str(p->layout, layout, sizeof layout);
  if (r->shard >= 0)
    ppcc_note(d, "first divergent value (program order, %s): '%s' shard %d on device %d (%d of its %d shards differ)",
              backend, p->name, r->shard, p->devices ? p->devices[r->shard] : r->shard, r->n_bad_shards, r->n_shards);
  else
    ppcc_note(d, "first divergent value (program order, %s): '%s', the sum of its %d partial-sum shards on %s", backend,
              p->name, r->n_shards, devs);
  if (op) note_op(g, op, d);
  else ppcc_note(d, "  a %s: its shards are cut from the loaded tensor, no op computes it",
                 p->kind == PPCC_VALUE_PARAM ? "param" : "graph input");
  const char *how = r->shard < 0 ? "sum of shards vs reference"
                    : p->layout.kind == PPCC_LAYOUT_SPLIT && r->n_shards > 1 ? "shard vs its slice of the reference"
                                                                               : "shard vs whole reference";
  ppcc_note(d, "  %s (%s): %lld elements fail, worst at %s: got %.6g, ref %.6g (max abs error %.3g, bound %.3g + "
               "rtol*|ref|)",
            how, layout, (long long)r->cmp.n_bad, at, r->cmp.worst_got, r->cmp.worst_ref, r->cmp.max_abs, r->cmp.atol);
  note_why(g, r->value, d);
}

/* Bytes both captures hold: every result whole, and every shard of it. */
static int64_t capture_bytes(const ppcc_graph *g) {
  int64_t total = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_RESULT) continue;
    int64_t whole = ppcc_value_bytes(p), shard = ppcc_value_shard_bytes(p);
    if (whole < 0 || shard < 0) return INT64_MAX;
    total += whole + shard * (p->layout.count > 0 ? p->layout.count : 1);
  }
  return total;
}

void rt_report_divergence(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o, int k,
                          ppcc_diag *d) {
  ppcc_divergence r;
  const char *output = g->values[g->outputs[k]].name;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t need = capture_bytes(g), half = pages > 0 && page > 0 ? (int64_t)pages * page / 2 : INT64_MAX;
  if (need > half) {
    ppcc_note(d, "not searching for the first divergent value: capturing every value needs %lld bytes, more than "
                 "half of this machine's memory",
              (long long)need);
    return;
  }
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  if (ppcc_find_divergence(g, data, o, &r, &quiet)) {
    ppcc_note(d, "could not search for the first divergent value: %s", quiet.first);
    return;
  }
  const char *backend = !o->execute ? "interpreter" : r.on_interp ? "captured on the interpreter" : "jit";
  if (r.on_interp)
    ppcc_note(d, "the JIT cannot capture intermediate values (%s): captured on the interpreter instead",
              r.why_not_jit);
  if (r.found) {
    note_divergence(g, &r, backend, d);
    if (r.on_interp) ppcc_note(d, "the interpreter diverges too: the fault is not JIT-only");
  } else if (r.on_interp) {
    ppcc_note(d, "the divergence is JIT-only: output '%s' differs on the JIT, but every value of the interpreter's "
                 "sharded run matches the reference",
              output);
  } else {
    ppcc_note(d, "no value diverges when run again with every result captured (output '%s' failed only in the "
                 "first run%s)",
              output, o->microbatches > 1 ? "; the capture runs without --microbatches" : "");
  }
}

/* ---------------- the first non-finite value ---------------- */

/* The first non-finite element of a float value's whole tensor, or -1. */
static int64_t first_nonfinite_in(const ppcc_value *p, const void *data) {
  if (!data || !ppcc_dtype_is_float(p->dtype)) return -1;
  int64_t n = ppcc_num_elements(p->rank, p->shape);
  float *f = rt_alloc(n * 4);
  if (!f) return -1;
  rt_to_f32(p->dtype, data, f, n);
  int64_t bad = -1;
  for (int64_t j = 0; j < n && bad < 0; j++)
    if (!isfinite(f[j])) bad = j;
  rt_free(f);
  return bad;
}

ppcc_status ppcc_find_first_nonfinite(const ppcc_graph *g, const ppcc_run_data *data, int threads, int *value,
                                      int64_t *element, ppcc_diag *d) {
  *value = -1;
  *element = -1;
  ppcc_capture cap;
  ppcc_run_options o = {.threads = threads};
  ppcc_status st = capture_run(g, data, &o, true, false, &cap, d);
  for (int v = 0; !st && v < g->n_values && *value < 0; v++) /* leaves: a bad weight is the cause */
    if (g->values[v].kind != PPCC_VALUE_RESULT && (*element = first_nonfinite_in(&g->values[v], cap.shards[v][0])) >= 0)
      *value = v;
  for (int i = 0; !st && i < g->n_ops && *value < 0; i++)
    for (int k = 0; k < g->ops[i].n_out && *value < 0; k++) {
      int v = g->ops[i].out[k];
      if ((*element = first_nonfinite_in(&g->values[v], cap.shards[v][0])) >= 0) *value = v;
    }
  ppcc_capture_free(&cap);
  return st;
}
