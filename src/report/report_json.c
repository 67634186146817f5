/* The JSON placement report (DESIGN §6). Written directly with stdio for
 * speed; one value/op/transfer/device per line so diffs stay readable. Key
 * order is fixed, so equal graphs give byte-identical reports. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include "ppcc/ops.h"
#include "ppcc/devices_spec.h"
#include "ppcc/partition.h"
#include "ppcc/report.h"
#include "../plan/plan.h"

/* Integers with fputs rather than fprintf: a million-op report prints
 * tens of millions of them. */
static void json_int(FILE *out, long long v) {
  char digits[24], *p = digits + sizeof digits;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  *--p = 0;
  do *--p = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  fputs(p, out);
}

static void json_string(FILE *out, const char *s) {
  putc('"', out);
  ppcc_escape_fputs(out, s, PPCC_ESCAPE_JSON);
  putc('"', out);
}

/* Integral values print as integers (exact up to 2^53); JSON has no NaN. */
static void json_number(FILE *out, double x) {
  if (!isfinite(x)) fputs("null", out);
  else if (x == floor(x) && fabs(x) < 9007199254740992.0) fprintf(out, "%.0f", x);
  else fprintf(out, "%.17g", x);
}

static void json_int_list(FILE *out, const int *v, int n) {
  putc('[', out);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", out);
    json_int(out, v[i]);
  }
  putc(']', out);
}

static void json_shard_devices(FILE *out, const ppcc_value *v) {
  int n = v->layout.count > 0 ? v->layout.count : 1;
  putc('[', out);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", out);
    json_int(out, rep_shard_device(v, i));
  }
  putc(']', out);
}

static void json_value_names(FILE *out, const ppcc_graph *g, const int *idx, int n) {
  putc('[', out);
  for (int i = 0; i < n; i++) {
    if (i) fputs(", ", out);
    json_string(out, g->values[idx[i]].name);
  }
  putc(']', out);
}

static void json_value(FILE *out, const ppcc_value *v) {
  fputs("{\"name\": ", out);
  json_string(out, v->name);
  fputs(", \"dtype\": \"", out);
  fputs(ppcc_dtype_name(v->dtype), out);
  fputs("\", \"shape\": [", out);
  for (int i = 0; i < v->rank; i++) {
    if (i) fputs(", ", out);
    json_int(out, v->shape[i]);
  }
  fputs("], \"shard\": {\"kind\": \"", out);
  fputs(ppcc_layout_kind_name(v->layout.kind), out);
  putc('"', out);
  if (v->layout.kind == PPCC_LAYOUT_SPLIT) {
    fputs(", \"dim\": ", out);
    json_int(out, v->layout.dim);
  }
  fputs(", \"count\": ", out);
  json_int(out, v->layout.count > 0 ? v->layout.count : 1);
  fputs("}, \"devices\": ", out);
  json_shard_devices(out, v);
  fputs(v->pinned ? ", \"pinned\": true}" : ", \"pinned\": false}", out);
}

static void json_op(FILE *out, const ppcc_graph *g, int index, int *dev_buf) {
  const ppcc_op *op = &g->ops[index];
  fputs("{\"index\": ", out);
  json_int(out, index);
  fputs(", \"op\": ", out);
  json_string(out, op->info ? op->info->name : "?");
  fputs(", \"in\": ", out);
  json_value_names(out, g, op->in, op->n_in);
  fputs(", \"out\": ", out);
  json_value_names(out, g, op->out, op->n_out);
  fputs(", \"devices\": ", out);
  json_int_list(out, dev_buf, rep_op_devices(g, op, dev_buf));
  fputs(op->inserted ? ", \"inserted\": true}" : ", \"inserted\": false}", out);
}

static void json_transfer(FILE *out, const ppcc_graph *g, int index, const int *first_use) {
  const ppcc_op *op = &g->ops[index];
  const ppcc_value *from = &g->values[op->in[0]], *to = &g->values[op->out[0]];
  fputs("{\"value\": ", out);
  json_string(out, from->name);
  fputs(", \"from\": ", out);
  json_shard_devices(out, from);
  fputs(", \"to\": ", out);
  json_shard_devices(out, to);
  fprintf(out, ", \"bytes\": %" PRId64 ", \"before_op\": %d}", rep_transfer_bytes(g, op), first_use[op->out[0]]);
}

static void write_values(FILE *out, const ppcc_graph *g) {
  fputs("  \"values\": [", out);
  for (int v = 0; v < g->n_values; v++) {
    fputs(v ? ",\n    " : "\n    ", out);
    json_value(out, &g->values[v]);
  }
  fputs(g->n_values ? "\n  ],\n" : "],\n", out);
}

static void write_ops(FILE *out, const ppcc_graph *g, int *dev_buf) {
  fputs("  \"ops\": [", out);
  for (int i = 0; i < g->n_ops; i++) {
    fputs(i ? ",\n    " : "\n    ", out);
    json_op(out, g, i, dev_buf);
  }
  fputs(g->n_ops ? "\n  ],\n" : "],\n", out);
}

static void write_transfers(FILE *out, const ppcc_graph *g, const int *first_use) {
  int n = 0;
  fputs("  \"transfers\": [", out);
  for (int i = 0; i < g->n_ops; i++) {
    if (!rep_is_transfer(&g->ops[i])) continue;
    fputs(n++ ? ",\n    " : "\n    ", out);
    json_transfer(out, g, i, first_use);
  }
  fputs(n ? "\n  ],\n" : "],\n", out);
}

static void write_summary(FILE *out, const ppcc_graph *g, const ppcc_device_summary *rows) {
  fputs("  \"device_summary\": [", out);
  for (int d = 0; d < g->n_devices; d++) {
    fprintf(out, "%s{\"device\": %d, \"param_bytes\": %" PRId64 ", \"peak_activation_bytes\": %" PRId64
                 ", \"flops\": ",
            d ? ",\n    " : "\n    ", rows[d].device, rows[d].param_bytes, rows[d].peak_activation_bytes);
    json_number(out, rows[d].flops);
    putc('}', out);
  }
  fputs(g->n_devices > 0 ? "\n  ]" : "]", out);
}

/* --devices-spec given: the file, each device's memory (null: not given)
 * and speed, and the auto-partition stage it serves (-1: none, or the
 * model placed itself). */
static void write_devices_spec(FILE *out, const ppcc_graph *g) {
  const ppcc_partition_summary *s = g->partition_summary;
  ppcc_devices_spec view = {0};
  if (s && s->spec_path)
    view = (ppcc_devices_spec){.path = s->spec_path, .n_devices = s->n_spec_devices, .memory = s->spec_memory, .speed = s->spec_speed};
  else if (g->partition.devices_spec)
    view = *g->partition.devices_spec;
  else
    return;
  fputs(",\n  \"devices_spec\": {\"file\": ", out);
  json_string(out, view.path ? view.path : "");
  fputs(", \"devices\": [", out);
  for (int d = 0; d < view.n_devices; d++) {
    int stage = -1;
    for (int k = 0; s && k < s->pp; k++)
      if (d >= s->stages[k].first_device && d < s->stages[k].first_device + s->stages[k].tp) stage = k;
    fprintf(out, "%s{\"device\": %d, \"memory\": ", d ? ",\n    " : "\n    ", d);
    if (view.memory[d] > 0) fprintf(out, "%" PRId64, view.memory[d]);
    else fputs("null", out);
    fputs(", \"speed\": ", out);
    json_number(out, view.speed[d]);
    fprintf(out, ", \"stage\": %d}", stage);
  }
  fputs("\n  ]}", out);
}

ppcc_status ppcc_report_json(const ppcc_graph *g, FILE *out, ppcc_diag *d) {
  return ppcc_report_json_with(g, NULL, out, d);
}

ppcc_status ppcc_report_json_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d) {
  ppcc_prediction pred;
  ppcc_status pst = ppcc_predict(g, opts, &pred, d);
  if (pst) return pst;
  ppcc_device_summary *rows = ppcc_device_summaries(g);
  int *first_use = rep_first_consumers(g);
  int *dev_buf = malloc(sizeof(int) * PPCC_MAX_DEVICES);
  ppcc_status st = PPCC_OK;
  if (!rows || !first_use || !dev_buf) {
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing the JSON report");
  } else {
    fputs("{\n  \"ppcc\": 1,\n  \"model\": ", out);
    json_string(out, g->name);
    fprintf(out, ",\n  \"devices\": %d,\n", g->n_devices);
    write_values(out, g);
    write_ops(out, g, dev_buf);
    write_transfers(out, g, first_use);
    write_summary(out, g, rows);
    write_devices_spec(out, g);
    fputs(",\n", out);
    ppcc_prediction_write_json(&pred, out);
    fputs(",\n", out);
    st = ppcc_loaded_memory_write_json(g, opts, out, d);
    fputs("\n}\n", out);
    if (!st && ferror(out)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "write error in the JSON report");
  }
  free(rows);
  free(first_use);
  free(dev_buf);
  ppcc_prediction_free(&pred);
  return st;
}
