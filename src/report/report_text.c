/* The text placement report, for people: a header, one table per stage
 * (a distinct device group), the transfers with their bytes, per-device
 * totals and the balance between stages. Column widths are computed over
 * the whole graph first, so every line is deterministic and aligned. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/devices_spec.h"
#include "ppcc/partition.h"
#include "ppcc/report.h"
#include "../plan/plan.h"

#define CELL 1024 /* longest cell we print; longer text is cut with "..." */

/* ---- tables ---- */

typedef struct table {
  int n_cols;
  const char *const *heads;
  const bool *right; /* right-align (numbers) */
  int width[8];
} table;

static void table_init(table *t, int n_cols, const char *const *heads, const bool *right) {
  t->n_cols = n_cols;
  t->heads = heads;
  t->right = right;
  for (int c = 0; c < n_cols; c++) t->width[c] = (int)strlen(heads[c]);
}

static void table_fit(table *t, char cells[][CELL]) {
  for (int c = 0; c < t->n_cols; c++) {
    int w = (int)strlen(cells[c]);
    if (w > t->width[c]) t->width[c] = w;
  }
}

static void pad(FILE *out, int n) {
  static const char spaces[] = "                                                                ";
  for (; n > 0; n -= (int)sizeof spaces - 1) fwrite(spaces, 1, n < (int)sizeof spaces - 1 ? (size_t)n : sizeof spaces - 1, out);
}

/* Two-space indent and gaps; no trailing blanks. (fputs and padding, not
 * fprintf: a million-op report prints six cells per op.) */
static void table_print(FILE *out, const table *t, const char *const *cells) {
  fputs("  ", out);
  for (int c = 0; c < t->n_cols; c++) {
    bool last = c == t->n_cols - 1;
    int len = (int)strlen(cells[c]);
    if (t->right[c]) pad(out, t->width[c] - len);
    fputs(cells[c], out);
    if (!t->right[c] && !last) pad(out, t->width[c] - len);
    if (!last) fputs("  ", out);
  }
  putc('\n', out);
}

static void table_head(FILE *out, const table *t) {
  table_print(out, t, t->heads);
  char rule[8][CELL];
  const char *cells[8];
  for (int c = 0; c < t->n_cols; c++) {
    int w = t->width[c] < CELL - 1 ? t->width[c] : CELL - 1;
    memset(rule[c], '-', (size_t)w);
    rule[c][w] = 0;
    cells[c] = rule[c];
  }
  table_print(out, t, cells);
}

static void table_row(FILE *out, const table *t, char cells[][CELL]) {
  const char *p[8];
  for (int c = 0; c < t->n_cols; c++) p[c] = cells[c];
  table_print(out, t, p);
}

/* ---- cells ---- */

static void cut(char *cell) {
  if (strlen(cell) == CELL - 1) memcpy(cell + CELL - 4, "...", 4);
}

/* Appends name s to a cell, escaped (ppcc_escape_text), cut at CELL - 1
 * characters as snprintf cuts. */
static void cell_put(char *cell, size_t *off, const char *s) {
  *off += ppcc_escape_text(cell + *off, CELL - *off, s);
}

static void int_cell(long long v, char *cell) {
  char digits[24], *p = digits + sizeof digits;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  *--p = 0;
  do *--p = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  memcpy(cell, p, (size_t)(digits + sizeof digits - p));
}

static void names_cell(const ppcc_graph *g, const int *idx, int n, char *cell) {
  size_t off = 0;
  cell[0] = 0;
  for (int i = 0; i < n && off < CELL - 1; i++) {
    if (i) cell_put(cell, &off, ", ");
    cell_put(cell, &off, g->values[idx[i]].name);
  }
  cut(cell);
}

static void devices_cell(const int *devices, int n, char *cell) {
  ppcc_devices_str(devices, n, cell, CELL);
  cut(cell);
}

static void shard_devices_cell(const ppcc_value *v, int *buf, char *cell) {
  int n = v->layout.count > 0 ? v->layout.count : 1;
  if (n > PPCC_MAX_DEVICES) n = PPCC_MAX_DEVICES;
  for (int i = 0; i < n; i++) buf[i] = rep_shard_device(v, i);
  devices_cell(buf, n, cell);
}

static void bytes_cell(int64_t bytes, char *cell) {
  char human[32];
  rep_human_bytes(bytes, human, sizeof human);
  if (bytes < 1024) snprintf(cell, CELL, "%s", human);
  else snprintf(cell, CELL, "%s (%" PRId64 ")", human, bytes);
}

/* GFLOP for scale, exact count for small models. */
static void gflop_cell(double flops, char *cell) { snprintf(cell, CELL, "%.6f (%.0f)", flops / 1e9, flops); }

/* ---- op tables, one per stage ---- */

static const char *const op_heads[] = {"index", "op", "outputs", "layout", "devices", "pinned"};
static const bool op_right[] = {true, false, false, false, false, false};

static void op_cells(const ppcc_graph *g, int i, int *buf, char cells[][CELL]) {
  const ppcc_op *op = &g->ops[i];
  const ppcc_value *r = op->n_out > 0 ? &g->values[op->out[0]] : NULL;
  size_t off = 0;
  int_cell(i, cells[0]);
  cells[1][0] = 0;
  cell_put(cells[1], &off, op->info ? op->info->name : "?");
  cell_put(cells[1], &off, op->inserted ? "*" : "");
  names_cell(g, op->out, op->n_out, cells[2]);
  if (r) ppcc_layout_str(r->layout, cells[3], CELL);
  else cells[3][0] = 0;
  devices_cell(buf, rep_op_devices(g, op, buf), cells[4]);
  strcpy(cells[5], r && r->pinned ? "yes" : "no");
}

typedef struct text_ctx {
  const ppcc_graph *g;
  FILE *out;
  rep_stages stages;
  ppcc_device_summary *rows;
  int *first_use;
  int *buf;            /* PPCC_MAX_DEVICES scratch */
  char (*cells)[CELL]; /* 8 scratch cells */
} text_ctx;

static void write_stage_tables(text_ctx *x) {
  table t;
  table_init(&t, 6, op_heads, op_right);
  for (int i = 0; i < x->g->n_ops; i++) {
    op_cells(x->g, i, x->buf, x->cells);
    table_fit(&t, x->cells);
  }
  const rep_stages *s = &x->stages;
  for (int k = 0; k < s->n_stages; k++) {
    devices_cell(rep_stage_devices(s, k), s->n_dev[k], x->cells[0]);
    int n_ops = s->start[k + 1] - s->start[k];
    fprintf(x->out, "\nstage %d: devices %s, %d op%s\n", k, x->cells[0], n_ops, n_ops == 1 ? "" : "s");
    table_head(x->out, &t);
    for (int j = s->start[k]; j < s->start[k + 1]; j++) {
      op_cells(x->g, s->order[j], x->buf, x->cells);
      table_row(x->out, &t, x->cells);
    }
  }
}

/* ---- transfers ---- */

static const char *const xfer_heads[] = {"value", "from", "to", "bytes", "before op"};
static const bool xfer_right[] = {false, false, false, true, true};

static void transfer_cells(text_ctx *x, int i) {
  const ppcc_op *op = &x->g->ops[i];
  size_t off = 0;
  cell_put(x->cells[0], &off, x->g->values[op->in[0]].name);
  cut(x->cells[0]);
  shard_devices_cell(&x->g->values[op->in[0]], x->buf, x->cells[1]);
  shard_devices_cell(&x->g->values[op->out[0]], x->buf, x->cells[2]);
  bytes_cell(rep_transfer_bytes(x->g, op), x->cells[3]);
  int before = x->first_use[op->out[0]];
  if (before >= 0) snprintf(x->cells[4], CELL, "%d", before);
  else snprintf(x->cells[4], CELL, "-");
}

static void write_transfers(text_ctx *x) {
  table t;
  table_init(&t, 5, xfer_heads, xfer_right);
  int count = 0;
  int64_t total = 0;
  for (int i = 0; i < x->g->n_ops; i++) {
    if (!rep_is_transfer(&x->g->ops[i])) continue;
    transfer_cells(x, i);
    table_fit(&t, x->cells);
    total += rep_transfer_bytes(x->g, &x->g->ops[i]);
    count++;
  }
  if (count == 0) {
    fputs("\ntransfers: none\n", x->out);
    return;
  }
  bytes_cell(total, x->cells[0]);
  fprintf(x->out, "\ntransfers: %d, %s\n", count, x->cells[0]);
  table_head(x->out, &t);
  for (int i = 0; i < x->g->n_ops; i++) {
    if (!rep_is_transfer(&x->g->ops[i])) continue;
    transfer_cells(x, i);
    table_row(x->out, &t, x->cells);
  }
}

/* ---- devices ---- */

static const char *const dev_heads[] = {"device", "param bytes", "peak activation bytes", "GFLOP"};
static const bool dev_right[] = {false, true, true, true};

static void device_cells(const ppcc_device_summary *r, char cells[][CELL]) {
  snprintf(cells[0], CELL, "%d", r->device);
  bytes_cell(r->param_bytes, cells[1]);
  bytes_cell(r->peak_activation_bytes, cells[2]);
  gflop_cell(r->flops, cells[3]);
}

static void write_devices(text_ctx *x) {
  table t;
  table_init(&t, 4, dev_heads, dev_right);
  ppcc_device_summary total = {0};
  for (int d = 0; d < x->g->n_devices; d++) {
    device_cells(&x->rows[d], x->cells);
    table_fit(&t, x->cells);
    total.param_bytes += x->rows[d].param_bytes;
    total.peak_activation_bytes += x->rows[d].peak_activation_bytes;
    total.flops += x->rows[d].flops;
  }
  device_cells(&total, x->cells);
  snprintf(x->cells[0], CELL, "total");
  table_fit(&t, x->cells);
  fputs("\ndevices:\n", x->out);
  table_head(x->out, &t);
  for (int d = 0; d < x->g->n_devices; d++) {
    device_cells(&x->rows[d], x->cells);
    table_row(x->out, &t, x->cells);
  }
  device_cells(&total, x->cells);
  snprintf(x->cells[0], CELL, "total");
  table_row(x->out, &t, x->cells);
}

/* ---- stage balance ---- */

static const char *const bal_heads[] = {"stage", "devices", "ops", "GFLOP", "param bytes"};
static const bool bal_right[] = {false, false, true, true, true};

/* A parameter counts (all shards) for the stage of the first op reading it. */
static void stage_totals(text_ctx *x, double *flops, int64_t *params) {
  const ppcc_graph *g = x->g;
  for (int i = 0; i < g->n_ops; i++) flops[x->stages.op_stage[i]] += rep_op_flops_on_devices(g, &g->ops[i]);
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    if (val->kind != PPCC_VALUE_PARAM || x->first_use[v] < 0) continue;
    int shards = val->layout.count > 0 ? val->layout.count : 1;
    params[x->stages.op_stage[x->first_use[v]]] += rep_shard_bytes(val) * shards;
  }
}

static void balance_cells(text_ctx *x, int k, double flops, int64_t params) {
  snprintf(x->cells[0], CELL, "%d", k);
  devices_cell(rep_stage_devices(&x->stages, k), x->stages.n_dev[k], x->cells[1]);
  snprintf(x->cells[2], CELL, "%d", x->stages.start[k + 1] - x->stages.start[k]);
  gflop_cell(flops, x->cells[3]);
  bytes_cell(params, x->cells[4]);
}

static void print_imbalance(FILE *out, const char *what, double max, double sum, int n) {
  double mean = n > 0 ? sum / n : 0;
  if (mean > 0) fprintf(out, "  %s imbalance (max/mean): %.2f\n", what, max / mean);
  else fprintf(out, "  %s imbalance (max/mean): -\n", what);
}

static bool write_balance(text_ctx *x) {
  int n = x->stages.n_stages;
  if (n == 0) return true;
  double *flops = calloc((size_t)n, sizeof(double));
  int64_t *params = calloc((size_t)n, sizeof(int64_t));
  if (!flops || !params) {
    free(flops);
    free(params);
    return false;
  }
  stage_totals(x, flops, params);
  table t;
  table_init(&t, 5, bal_heads, bal_right);
  for (int k = 0; k < n; k++) {
    balance_cells(x, k, flops[k], params[k]);
    table_fit(&t, x->cells);
  }
  fputs("\nstage balance:\n", x->out);
  table_head(x->out, &t);
  double fmax = 0, fsum = 0, pmax = 0, psum = 0;
  for (int k = 0; k < n; k++) {
    balance_cells(x, k, flops[k], params[k]);
    table_row(x->out, &t, x->cells);
    fmax = flops[k] > fmax ? flops[k] : fmax;
    fsum += flops[k];
    pmax = (double)params[k] > pmax ? (double)params[k] : pmax;
    psum += (double)params[k];
  }
  print_imbalance(x->out, "flops", fmax, fsum, n);
  print_imbalance(x->out, "param bytes", pmax, psum, n);
  free(flops);
  free(params);
  return true;
}

/* ---- KV cache (only when the graph has one) ---- */

/* The cache an in-place op (index_copy/index_put, P7) writes: its
 * destination, unless that is itself an earlier update's result (the same
 * buffer, counted once). */
static int kv_cache_value(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info || op->info->pin_rule != PPCC_PIN_INPLACE || op->n_in < 1) return -1;
  const ppcc_value *dst = &g->values[op->in[0]];
  if (dst->def_op >= 0 && g->ops[dst->def_op].info->pin_rule == PPCC_PIN_INPLACE) return -1;
  return op->in[0];
}

/* One line per stage: bytes of all shards of the caches its ops update. */
static bool write_kv_cache(text_ctx *x) {
  int n = x->stages.n_stages, found = 0;
  int64_t *bytes = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
  int *count = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
  bool ok = bytes && count;
  for (int i = 0; ok && i < x->g->n_ops; i++) {
    int v = kv_cache_value(x->g, &x->g->ops[i]);
    if (v < 0) continue;
    const ppcc_value *val = &x->g->values[v];
    bytes[x->stages.op_stage[i]] += rep_shard_bytes(val) * (val->layout.count > 0 ? val->layout.count : 1);
    count[x->stages.op_stage[i]]++;
    found++;
  }
  if (ok && found) {
    fputs("\nkv cache (destinations of index_copy/index_put):\n", x->out);
    for (int k = 0; k < n; k++) {
      bytes_cell(bytes[k], x->cells[0]);
      fprintf(x->out, "  stage %d: %d value%s, %s\n", k, count[k], count[k] == 1 ? "" : "s", x->cells[0]);
    }
  }
  free(bytes);
  free(count);
  return ok;
}

/* ---- auto-partition (only when the graph was auto-partitioned) ---- */

static const char *const part_heads[] = {"stage", "devices", "ops", "cost (us)", "transfer in (us)",
                                         "params/device", "activations/device", "memory/device"};
static const bool part_right[] = {false, false, true, true, true, true, true, true};

static void partition_cells(text_ctx *x, const ppcc_partition_summary *s, int k) {
  const ppcc_partition_stage *st = &s->stages[k];
  snprintf(x->cells[0], CELL, "%d", k);
  for (int t = 0; t < st->tp && t < PPCC_MAX_DEVICES; t++) x->buf[t] = st->first_device + t;
  devices_cell(x->buf, st->tp, x->cells[1]);
  snprintf(x->cells[2], CELL, "%d", st->end_op - st->first_op);
  snprintf(x->cells[3], CELL, "%.3f", st->cost * 1e6);
  snprintf(x->cells[4], CELL, "%.3f", st->transfer_in * 1e6);
  bytes_cell(st->param_bytes, x->cells[5]);
  bytes_cell(st->activation_bytes, x->cells[6]);
  bytes_cell(st->param_bytes + st->activation_bytes, x->cells[7]);
}

/* --devices-spec: each device's memory and speed, and the auto-partition
 * stage using it ("-": none, or the model placed itself). */
static void write_devices_spec(text_ctx *x, const ppcc_partition_summary *s) {
  const ppcc_devices_spec *g_spec = x->g->partition.devices_spec;
  ppcc_devices_spec view = {0};
  if (s && s->spec_path)
    view = (ppcc_devices_spec){.path = s->spec_path, .n_devices = s->n_spec_devices, .memory = s->spec_memory, .speed = s->spec_speed};
  else if (g_spec)
    view = *g_spec;
  else
    return;
  char path[1024];
  ppcc_escape_text(path, sizeof path, view.path ? view.path : "");
  fprintf(x->out, "%sdevices spec %s%s:\n", s ? "" : "\n", path,
          s ? " (stage cost = compute / slowest speed of the stage + transfer in)" : "");
  fprintf(x->out, "  %-6s  %-5s  %-20s  %s\n", "device", "stage", "memory", "speed");
  for (int d = 0; d < view.n_devices; d++) {
    int stage = -1;
    for (int k = 0; s && k < s->pp; k++)
      if (d >= s->stages[k].first_device && d < s->stages[k].first_device + s->stages[k].tp) stage = k;
    int64_t fallback = s ? s->device_memory : x->g->partition.device_memory;
    if (view.memory[d] > 0) bytes_cell(view.memory[d], x->cells[0]);
    else snprintf(x->cells[0], CELL, "%s", fallback > 0 ? "(--device-memory)" : "(unlimited)");
    if (stage >= 0) snprintf(x->cells[1], CELL, "%d", stage);
    else snprintf(x->cells[1], CELL, "-");
    fprintf(x->out, "  %-6d  %-5s  %-20s  %g\n", d, x->cells[1], x->cells[0], view.speed[d]);
  }
}

static void write_partition(text_ctx *x) {
  const ppcc_partition_summary *s = x->g->partition_summary;
  if (!s) return;
  table t;
  table_init(&t, 8, part_heads, part_right);
  for (int k = 0; k < s->pp; k++) {
    partition_cells(x, s, k);
    table_fit(&t, x->cells);
  }
  if (s->mixed_tp) {
    fprintf(x->out, "\nauto-partition: %d stage%s of TP sizes ", s->pp, s->pp == 1 ? "" : "s");
    for (int k = 0; k < s->pp; k++) fprintf(x->out, "%s%d", k ? "," : "", s->stages[k].tp);
    fprintf(x->out, ", %d Megatron pair%s, device memory ", s->n_pairs, s->n_pairs == 1 ? "" : "s");
  } else {
    fprintf(x->out, "\nauto-partition: %d stage%s x %d device%s, %d Megatron pair%s, device memory ", s->pp,
            s->pp == 1 ? "" : "s", s->tp, s->tp == 1 ? "" : "s", s->n_pairs, s->n_pairs == 1 ? "" : "s");
  }
  if (s->spec_path) {
    fputs("from the devices spec (below)\n", x->out);
  } else if (s->device_memory > 0) {
    bytes_cell(s->device_memory, x->cells[0]);
    fprintf(x->out, "limit %s\n", x->cells[0]);
  } else {
    fputs("unlimited\n", x->out);
  }
  table_head(x->out, &t);
  for (int k = 0; k < s->pp; k++) {
    partition_cells(x, s, k);
    table_row(x->out, &t, x->cells);
  }
  fprintf(x->out, "  slowest stage: %.3f us, mean %.3f us\n", s->max_cost * 1e6, s->mean_cost * 1e6);
  if (s->even_imbalance >= 0)
    fprintf(x->out, "  imbalance (slowest/mean): %.2f (even split by blocks: %.2f)\n", s->imbalance,
            s->even_imbalance);
  else
    fprintf(x->out, "  imbalance (slowest/mean): %.2f\n", s->imbalance);
  write_devices_spec(x, s);
}

/* ---- header ---- */

static void write_header(text_ctx *x) {
  const ppcc_graph *g = x->g;
  int inserted = 0, counts[3] = {0};
  for (int i = 0; i < g->n_ops; i++) inserted += g->ops[i].inserted;
  for (int v = 0; v < g->n_values; v++) counts[g->values[v].kind]++;
  fprintf(x->out, "ppcc placement report\n");
  fputs("model:   ", x->out);
  ppcc_escape_fputs(x->out, g->name, PPCC_ESCAPE_TEXT);
  fputs("\n", x->out);
  fprintf(x->out, "devices: %d\n", g->n_devices);
  fprintf(x->out, "ops:     %d (%d inserted, marked *)\n", g->n_ops, inserted);
  fprintf(x->out, "values:  %d (params %d, inputs %d, results %d)\n", g->n_values,
          counts[PPCC_VALUE_PARAM], counts[PPCC_VALUE_INPUT], counts[PPCC_VALUE_RESULT]);
  fprintf(x->out, "stages:  %d\n", x->stages.n_stages);
}

ppcc_status ppcc_report_text(const ppcc_graph *g, FILE *out, ppcc_diag *d) {
  return ppcc_report_text_with(g, NULL, out, d);
}

ppcc_status ppcc_report_text_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d) {
  ppcc_prediction pred;
  ppcc_status pst = ppcc_predict(g, opts, &pred, d);
  if (pst) return pst;
  text_ctx x = {.g = g, .out = out};
  bool have_stages = rep_stages_build(g, &x.stages);
  x.rows = ppcc_device_summaries(g);
  x.first_use = rep_first_consumers(g);
  x.buf = malloc(sizeof(int) * PPCC_MAX_DEVICES);
  x.cells = malloc(sizeof(char[CELL]) * 8);
  ppcc_status st = PPCC_OK;
  if (!have_stages || !x.rows || !x.first_use || !x.buf || !x.cells) {
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing the text report");
  } else {
    write_header(&x);
    write_stage_tables(&x);
    write_transfers(&x);
    write_devices(&x);
    bool balanced = write_balance(&x) && write_kv_cache(&x);
    if (balanced) write_partition(&x);
    if (balanced) ppcc_prediction_write_text(&pred, out);
    if (balanced) st = ppcc_loaded_memory_write_text(g, opts, out, d);
    if (balanced && !g->partition_summary) write_devices_spec(&x, NULL); /* a placed model */
    if (!balanced) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing the text report");
    else if (!st && ferror(out)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "write error in the text report");
  }
  rep_stages_free(&x.stages);
  free(x.rows);
  free(x.first_use);
  free(x.buf);
  free(x.cells);
  ppcc_prediction_free(&pred);
  return st;
}
