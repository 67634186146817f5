/* The Graphviz report: ops as boxes filled with their stage's colour and
 * grouped in one cluster per stage, parameters and inputs as ellipses,
 * outputs as double ellipses, transfers as red "cds" nodes whose edges are
 * bold red, the incoming one labelled with the bytes moved. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/report.h"
#include "../plan/plan.h"

/* ColorBrewer Set3/Paired pastels; red is kept for transfers. */
static const char *const palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
                                      "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f", "#a6cee3"};
#define PALETTE_SIZE (int)(sizeof palette / sizeof palette[0])
#define TRANSFER_FILL "#ff9999"

/* Text inside a double-quoted DOT string (ppcc_escape's DOT form). */
static void dot_text(FILE *out, const char *s) { ppcc_escape_fputs(out, s, PPCC_ESCAPE_DOT); }

static void dot_devices(FILE *out, const int *devices, int n) {
  putc('[', out);
  for (int i = 0; i < n; i++) fprintf(out, i ? ",%d" : "%d", devices[i]);
  putc(']', out);
}

static void dot_value_devices(FILE *out, const ppcc_value *v) {
  putc('[', out);
  for (int i = 0; i < (v->layout.count > 0 ? v->layout.count : 1); i++)
    fprintf(out, i ? ",%d" : "%d", rep_shard_device(v, i));
  putc(']', out);
}

typedef struct dot_ctx {
  const ppcc_graph *g;
  FILE *out;
  rep_stages stages;
  int *def;  /* per value: defining op index, -1 for params/inputs */
  int *buf;  /* PPCC_MAX_DEVICES scratch */
  const ppcc_prediction *pred;
} dot_ctx;

static void write_source_nodes(dot_ctx *x) {
  char layout[64];
  for (int v = 0; v < x->g->n_values; v++) {
    const ppcc_value *val = &x->g->values[v];
    if (val->kind == PPCC_VALUE_RESULT) continue;
    ppcc_layout_str(val->layout, layout, sizeof layout);
    fprintf(x->out, "  v%d [shape=ellipse, fillcolor=\"%s\", label=\"", v,
            val->kind == PPCC_VALUE_PARAM ? "#eeeeee" : "#ffffff");
    dot_text(x->out, val->name);
    fprintf(x->out, "\\n%s %s ", val->kind == PPCC_VALUE_PARAM ? "param" : "input", layout);
    dot_value_devices(x->out, val);
    fputs(val->pinned ? " pinned\"];\n" : "\"];\n", x->out);
  }
}

static void write_op_node(dot_ctx *x, int i) {
  const ppcc_op *op = &x->g->ops[i];
  bool transfer = rep_is_transfer(op);
  if (transfer)
    fprintf(x->out, "    op%d [shape=cds, color=red, fillcolor=\"%s\", label=\"", i, TRANSFER_FILL);
  else
    fprintf(x->out, "    op%d [shape=box, fillcolor=\"%s\", label=\"", i,
            palette[x->stages.op_stage[i] % PALETTE_SIZE]);
  dot_text(x->out, op->info ? op->info->name : "?");
  if (op->inserted) fputs("*", x->out); /* inserted by a pass, as in the text report */
  for (int k = 0; k < op->n_out; k++) {
    fputs(k ? ", " : "\\n", x->out);
    dot_text(x->out, x->g->values[op->out[k]].name);
  }
  fputs("\\n", x->out);
  if (transfer) {
    dot_value_devices(x->out, &x->g->values[op->in[0]]);
    fputs(" -> ", x->out);
    dot_value_devices(x->out, &x->g->values[op->out[0]]);
  } else {
    dot_devices(x->out, x->buf, rep_op_devices(x->g, op, x->buf));
  }
  fputs("\"];\n", x->out);
}

/* The prediction of the stage's time and its devices' peak memory. */
static void write_stage_prediction(dot_ctx *x, int k) {
  char human[32];
  const ppcc_prediction *p = x->pred;
  if (k >= p->n_stages) return;
  fprintf(x->out, "\\npredicted %.4f ms", p->stages[k].time_ms);
  for (int i = 0; i < p->stages[k].n_devices; i++) {
    int dev = p->stages[k].devices[i];
    if (dev < 0 || dev >= p->n_devices) continue;
    rep_human_bytes(p->devices[dev].peak_bytes, human, sizeof human);
    fprintf(x->out, "%sdevice %d peak %s", i ? ", " : "\\n", dev, human);
  }
}

static void write_clusters(dot_ctx *x) {
  const rep_stages *s = &x->stages;
  for (int k = 0; k < s->n_stages; k++) {
    fprintf(x->out, "  subgraph cluster_stage%d {\n    label=\"stage %d: devices ", k, k);
    dot_devices(x->out, rep_stage_devices(s, k), s->n_dev[k]);
    write_stage_prediction(x, k);
    fprintf(x->out, "\";\n    style=rounded;\n    color=\"#888888\";\n");
    for (int j = s->start[k]; j < s->start[k + 1]; j++) write_op_node(x, s->order[j]);
    fputs("  }\n", x->out);
  }
}

static void write_node_ref(dot_ctx *x, int value) {
  if (x->def[value] >= 0) fprintf(x->out, "op%d", x->def[value]);
  else fprintf(x->out, "v%d", value);
}

static void write_edges(dot_ctx *x) {
  char human[32];
  for (int i = 0; i < x->g->n_ops; i++) {
    const ppcc_op *op = &x->g->ops[i];
    bool into_transfer = rep_is_transfer(op);
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k];
      bool from_transfer = x->def[v] >= 0 && rep_is_transfer(&x->g->ops[x->def[v]]);
      fputs("  ", x->out);
      write_node_ref(x, v);
      fprintf(x->out, " -> op%d", i);
      if (into_transfer && k == 0) {
        rep_human_bytes(rep_transfer_bytes(x->g, op), human, sizeof human);
        fprintf(x->out, " [style=bold, color=red, label=\"%s\"]", human);
      } else if (from_transfer) {
        fputs(" [style=bold, color=red]", x->out);
      }
      fputs(";\n", x->out);
    }
  }
}

static void write_outputs(dot_ctx *x) {
  for (int k = 0; k < x->g->n_outputs; k++) {
    int v = x->g->outputs[k];
    fprintf(x->out, "  out%d [shape=ellipse, peripheries=2, fillcolor=\"#ffffff\", label=\"", k);
    dot_text(x->out, x->g->values[v].name);
    fputs("\"];\n  ", x->out);
    write_node_ref(x, v);
    fprintf(x->out, " -> out%d;\n", k);
  }
}

static int *defining_ops(const ppcc_graph *g) {
  int *def = malloc(sizeof(int) * (size_t)(g->n_values > 0 ? g->n_values : 1));
  if (!def) return NULL;
  for (int v = 0; v < g->n_values; v++) def[v] = -1;
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_out; k++) def[g->ops[i].out[k]] = i;
  return def;
}

ppcc_status ppcc_report_dot(const ppcc_graph *g, FILE *out, ppcc_diag *d) {
  return ppcc_report_dot_with(g, NULL, out, d);
}

ppcc_status ppcc_report_dot_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d) {
  ppcc_prediction pred;
  ppcc_status pst = ppcc_predict(g, opts, &pred, d);
  if (pst) return pst;
  dot_ctx x = {.g = g, .out = out, .pred = &pred};
  bool have_stages = rep_stages_build(g, &x.stages);
  x.def = defining_ops(g);
  x.buf = malloc(sizeof(int) * PPCC_MAX_DEVICES);
  ppcc_status st = PPCC_OK;
  if (!have_stages || !x.def || !x.buf) {
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing the DOT report");
  } else {
    fputs("digraph \"", out);
    dot_text(out, g->name);
    fputs("\" {\n  graph [rankdir=TB, newrank=true, fontname=\"Helvetica\"];\n"
          "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n",
          out);
    write_source_nodes(&x);
    write_clusters(&x);
    write_outputs(&x);
    write_edges(&x);
    fputs("}\n", out);
    if (ferror(out)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "write error in the DOT report");
  }
  rep_stages_free(&x.stages);
  free(x.def);
  free(x.buf);
  ppcc_prediction_free(&pred);
  return st;
}
