/* Memory of a loaded model in one process or MPI rank (include/ppcc/
 * predict.h, ppcc_predict_loaded_memory): several graphs (ppcc generate's
 * prefill and decode) bind the same resident param shards and the same
 * state, so those count once, and only the largest graph's working set
 * adds to them. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/predict.h"
#include "plan.h"

/* Bytes this process holds of param or state v (is_param: its devices
 * view one copy of a whole or replicated param; a split param, or a
 * state, has a buffer per local shard). */
static int64_t held_bytes(const ppcc_value *p, const bool *local, bool is_param) {
  int count = p->layout.count > 0 ? p->layout.count : 1, held = 0;
  for (int i = 0; i < count; i++) held += !p->devices || !local || local[p->devices[i]];
  if (held == 0) return 0;
  int64_t shard = rep_shard_bytes(p);
  if (is_param && p->layout.kind != PPCC_LAYOUT_SPLIT && p->layout.kind != PPCC_LAYOUT_UNREDUCED) return shard;
  return shard * held;
}

/* The bytes of value v's shards on device dev. */
static int64_t on_device(const ppcc_value *p, int dev) {
  int count = p->layout.count > 0 ? p->layout.count : 1, n = 0;
  for (int i = 0; p->devices && i < count; i++) n += p->devices[i] == dev;
  return n * rep_shard_bytes(p);
}

/* Whether p's shards are views of its tensor (resident.c binds those in
 * place): a whole or replicated param, or one split along its outermost
 * non-unit dim. Others are cut at load, touching all of the tensor. */
static bool viewed(const ppcc_value *p) {
  if (p->layout.kind == PPCC_LAYOUT_UNREDUCED) return false;
  for (int r = 0; p->layout.kind == PPCC_LAYOUT_SPLIT && r < p->layout.dim; r++)
    if (p->shape[r] != 1) return false;
  return true;
}

/* Whether a param of this name was counted for an earlier graph. */
static bool counted_before(const ppcc_graph *const *graphs, int k, const char *name) {
  for (int j = 0; j < k; j++) {
    int v = ppcc_find_value(graphs[j], name);
    if (v >= 0 && graphs[j]->values[v].kind == PPCC_VALUE_PARAM) return true;
  }
  return false;
}

/* Per value of g: the bytes of it that its readers can touch, -1 for all
 * of it. An op that computes nothing (zero FLOPs: a row lookup, a slice)
 * reads at most what it writes, so a table read only by lookups (the
 * token embedding) is in memory only where looked up: its pages lie in
 * the mapped file until touched. Any other reader reads it all. */
static int64_t *read_bytes(const ppcc_graph *g) {
  int64_t *r = calloc((size_t)g->n_values + 1, sizeof *r);
  for (int j = 0; r && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool lookup = op->info && op->info->family == PPCC_FAMILY_COMPUTE && op->n_out == 1 &&
                  rep_op_flops_per_shard(g, op) == 0;
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k];
      if (r[v] < 0) continue;
      int64_t out = lookup ? ppcc_value_bytes(&g->values[op->out[0]]) : -1;
      r[v] = out < 0 ? -1 : r[v] + out;
    }
  }
  return r;
}

ppcc_status ppcc_predict_loaded_memory(const ppcc_graph *const *graphs, const bool *const *is_state,
                                       const bool *const *view_ops, const bool *const *held_whole, int n,
                                       const bool *local, bool jit, ppcc_loaded_memory *m, ppcc_diag *d) {
  memset(m, 0, sizeof *m);
  m->peak_graph = -1;
  /* params: what each holds, or only what lookups read of it (over every
   * graph that reads it, once per graph) when the rest stays in the file */
  int64_t **reads = calloc((size_t)n + 1, sizeof *reads);
  for (int k = 0; reads && k < n; k++) reads[k] = read_bytes(graphs[k]);
  for (int k = 0; k < n; k++) {
    const ppcc_graph *g = graphs[k];
    for (int v = 0; v < g->n_values; v++) {
      const ppcc_value *p = &g->values[v];
      if (p->kind != PPCC_VALUE_PARAM || counted_before(graphs, k, p->name)) continue;
      bool whole = held_whole && held_whole[k] && held_whole[k][v];
      int64_t held = held_bytes(p, local, true), read = viewed(p) && !whole ? 0 : -1;
      for (int j = k; j < n && read >= 0; j++) {
        int u = ppcc_find_value(graphs[j], p->name);
        if (u >= 0) read = !reads || !reads[j] || reads[j][u] < 0 ? -1 : read + reads[j][u];
      }
      m->param_bytes += read >= 0 && read < held ? read : held;
    }
  }
  for (int k = 0; reads && k < n; k++) free(reads[k]);
  free(reads);
  for (int k = 0; k < n; k++) {
    const ppcc_graph *g = graphs[k];
    for (int v = 0; v < g->n_values; v++) {
      const ppcc_value *p = &g->values[v];
      if (k == 0 && p->kind == PPCC_VALUE_INPUT && is_state[k][v])
        m->state_bytes += held_bytes(p, local, false) * (jit && ppcc_state_update_output(g, v) < 0 ? 2 : 1); /* the JIT writes the next state beside it, unless in place */
    }
    ppcc_predict_options o = {.view_ops = view_ops ? view_ops[k] : NULL, .jit = jit};
    ppcc_prediction pred;
    ppcc_status st = ppcc_predict(g, &o, &pred, d);
    if (st) return st;
    /* the graph's own working set: each local device's predicted peak less
     * its params and states (and, on the JIT, the state outputs' arguments:
     * the next state buffers, counted above) */
    int64_t work = 0;
    for (int dev = 0; dev < g->n_devices; dev++) {
      if (local && !local[dev]) continue;
      int64_t w = pred.devices[dev].peak_bytes - pred.devices[dev].param_bytes;
      for (int v = 0; v < g->n_values; v++)
        if (g->values[v].kind == PPCC_VALUE_INPUT && is_state[k][v]) w -= on_device(&g->values[v], dev) * (jit ? 2 : 1);
      work += w > 0 ? w : 0;
    }
    ppcc_prediction_free(&pred);
    if (work > m->activation_bytes || m->peak_graph < 0) m->activation_bytes = work, m->peak_graph = k;
  }
  m->total_bytes = m->param_bytes + m->state_bytes + m->activation_bytes;
  return PPCC_OK;
}

bool *ppcc_loaded_state_inputs(const ppcc_graph *g) {
  bool *s = calloc((size_t)g->n_values + 1, sizeof *s);
  for (int j = 0; s && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (!op->info || op->info->pin_rule != PPCC_PIN_INPLACE || op->n_in < 1) continue;
    if (g->values[op->in[0]].kind == PPCC_VALUE_INPUT) s[op->in[0]] = true;
  }
  return s;
}

/* The loaded model of g in each process: one process holding every
 * device, then (with several pipeline stages) one rank per stage, as
 * mpiexec -n STAGES maps them by default. Rows into rows[0..n). */
static int loaded_rows(const ppcc_graph *g, const ppcc_predict_options *opts, ppcc_loaded_memory *rows,
                       int (*devices)[PPCC_MAX_DEVICES], int *n_devices, int max_rows, ppcc_diag *d) {
  bool *state = ppcc_loaded_state_inputs(g), *local = calloc((size_t)g->n_devices + 1, sizeof *local);
  ppcc_prediction pred;
  memset(&pred, 0, sizeof pred);
  ppcc_predict_options o = opts ? *opts : (ppcc_predict_options){0};
  o.microbatches = 1; /* a loaded model runs its graph whole */
  int n = -1;
  if (state && local && ppcc_predict(g, &o, &pred, d) == PPCC_OK) {
    const bool *s = state, *views = o.view_ops;
    n = 0;
    for (int k = -1; k < pred.n_stages && n < max_rows; k++) {
      if (k >= 0 && pred.n_stages < 2) break;
      for (int dev = 0; dev < g->n_devices; dev++) local[dev] = k < 0;
      n_devices[n] = 0;
      if (k < 0)
        for (int dev = 0; dev < g->n_devices && dev < PPCC_MAX_DEVICES; dev++) devices[n][n_devices[n]++] = dev;
      for (int i = 0; k >= 0 && i < pred.stages[k].n_devices; i++) {
        local[pred.stages[k].devices[i]] = true;
        devices[n][n_devices[n]++] = pred.stages[k].devices[i];
      }
      if (ppcc_predict_loaded_memory(&g, &s, &views, NULL, 1, local, o.jit, &rows[n], d)) {
        n = -1;
        break;
      }
      n++;
    }
  }
  ppcc_prediction_free(&pred);
  free(state);
  free(local);
  return n;
}

static void devices_text(const int *dev, int n, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < n && used + 12 < size; i++) used += (size_t)snprintf(buf + used, size - used, "%s%d", i ? "," : "[", dev[i]);
  if (used + 2 < size) snprintf(buf + used, size - used, n ? "]" : "[]");
}

enum { LOADED_MAX_ROWS = 65 };

typedef struct loaded_table {
  ppcc_loaded_memory *rows;
  int (*devices)[PPCC_MAX_DEVICES];
  int *n_devices;
  int n; /* rows; -1: failed */
} loaded_table;

static loaded_table loaded_table_make(const ppcc_graph *g, const ppcc_predict_options *opts, ppcc_diag *d) {
  loaded_table t = {calloc(LOADED_MAX_ROWS, sizeof *t.rows), calloc(LOADED_MAX_ROWS, sizeof *t.devices),
                    calloc(LOADED_MAX_ROWS, sizeof *t.n_devices), -1};
  if (t.rows && t.devices && t.n_devices) t.n = loaded_rows(g, opts, t.rows, t.devices, t.n_devices, LOADED_MAX_ROWS, d);
  return t;
}

static ppcc_status loaded_table_free(loaded_table *t, ppcc_diag *d) {
  free(t->rows);
  free(t->devices);
  free(t->n_devices);
  return t->n >= 0 ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory predicting the loaded model");
}

ppcc_status ppcc_loaded_memory_write_text(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out,
                                          ppcc_diag *d) {
  loaded_table t = loaded_table_make(g, opts, d);
  if (t.n >= 0) {
    fprintf(out, "\nloaded model (%s; per process: params once, KV caches as state, the graph's working set; "
                 "peak RSS adds the process itself, measured by run --check-plan and generate):\n",
            opts && opts->jit ? "JIT" : "interpreter");
    fprintf(out, "  process  devices            params (B)  KV caches (B)  working set (B)       total (B)\n");
    for (int i = 0; i < t.n; i++) {
      char who[16], devs[96];
      if (i == 0) snprintf(who, sizeof who, "one");
      else snprintf(who, sizeof who, "rank %d", i - 1);
      devices_text(t.devices[i], t.n_devices[i], devs, sizeof devs);
      fprintf(out, "  %-7s  %-15s  %13lld  %13lld  %15lld  %14lld\n", who, devs, (long long)t.rows[i].param_bytes,
              (long long)t.rows[i].state_bytes, (long long)t.rows[i].activation_bytes, (long long)t.rows[i].total_bytes);
    }
  }
  return loaded_table_free(&t, d);
}

ppcc_status ppcc_loaded_memory_write_json(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out,
                                          ppcc_diag *d) {
  loaded_table t = loaded_table_make(g, opts, d);
  if (t.n >= 0) {
    fprintf(out, "  \"loaded_model\": {\"backend\": \"%s\", \"processes\": [", opts && opts->jit ? "jit" : "interp");
    for (int i = 0; i < t.n; i++) {
      fprintf(out, "%s\n    {\"rank\": %d, \"devices\": [", i ? "," : "", i - 1);
      for (int k = 0; k < t.n_devices[i]; k++) fprintf(out, "%s%d", k ? ", " : "", t.devices[i][k]);
      fprintf(out, "], \"param_bytes\": %lld, \"state_bytes\": %lld, \"working_set_bytes\": %lld, \"total_bytes\": %lld}",
              (long long)t.rows[i].param_bytes, (long long)t.rows[i].state_bytes, (long long)t.rows[i].activation_bytes,
              (long long)t.rows[i].total_bytes);
    }
    fputs("\n  ]}", out);
  }
  return loaded_table_free(&t, d);
}
