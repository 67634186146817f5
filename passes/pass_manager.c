/* Runs the passes in order (DESIGN §1) and dumps the graph on request. */
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"

static const ppcc_pass_info passes[] = {
  {"verify", ppcc_pass_verify},
  {"auto-partition", ppcc_pass_auto_partition},
  {"shard-propagate", ppcc_pass_shard_propagate},
  {"pin-propagate", ppcc_pass_pin_propagate},
  {"insert-transfers", ppcc_pass_insert_transfers},
};

const ppcc_pass_info *ppcc_pass_list(int *count) {
  *count = (int)(sizeof passes / sizeof passes[0]);
  return passes;
}

ppcc_status ppcc_run_passes(ppcc_graph *g, const char *dump_after, FILE *dump_out, ppcc_diag *d) {
  int n;
  const ppcc_pass_info *list = ppcc_pass_list(&n);
  for (int i = 0; i < n; i++) {
    ppcc_status st = list[i].run(g, d);
    if (st) return st;
    if (dump_after && dump_out && strcmp(dump_after, list[i].name) == 0) {
      fprintf(dump_out, "// after %s\n", list[i].name);
      ppcc_graph_dump(g, dump_out);
    }
  }
  return PPCC_OK;
}

static void dump_value(const ppcc_graph *g, const ppcc_value *v, FILE *out) {
  char layout[64], devs[256];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  ppcc_escape_fputs(out, v->name, PPCC_ESCAPE_TEXT);
  fprintf(out, " %s[", ppcc_dtype_name(v->dtype));
  for (int i = 0; i < v->rank; i++) fprintf(out, i ? ", %lld" : "%lld", (long long)v->shape[i]);
  fprintf(out, "] %s", layout);
  if (v->devices) {
    ppcc_devices_str(v->devices, v->layout.count, devs, sizeof devs);
    fprintf(out, " on %s%s", devs, v->pinned ? " pinned" : "");
  }
}

void ppcc_graph_dump(const ppcc_graph *g, FILE *out) {
  fputs("graph ", out);
  ppcc_escape_fputs(out, g->name, PPCC_ESCAPE_TEXT);
  fprintf(out, " devices=%d\n", g->n_devices);
  for (int i = 0; i < g->n_values; i++) {
    const ppcc_value *v = &g->values[i];
    if (v->kind == PPCC_VALUE_RESULT) continue;
    fprintf(out, "  %s ", v->kind == PPCC_VALUE_PARAM ? "param" : "input");
    dump_value(g, v, out);
    fputc('\n', out);
  }
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    fprintf(out, "  %%%d = %s%s(", i, op->info->name, op->inserted ? "*" : "");
    for (int k = 0; k < op->n_in; k++) {
      if (k) fputs(", ", out);
      ppcc_escape_fputs(out, g->values[op->in[k]].name, PPCC_ESCAPE_TEXT);
    }
    fprintf(out, ") -> ");
    for (int k = 0; k < op->n_out; k++) {
      if (k) fprintf(out, ", ");
      dump_value(g, &g->values[op->out[k]], out);
    }
    fputc('\n', out);
  }
  fprintf(out, "  outputs:");
  for (int i = 0; i < g->n_outputs; i++) {
    fputc(' ', out);
    ppcc_escape_fputs(out, g->values[g->outputs[i]].name, PPCC_ESCAPE_TEXT);
  }
  fputc('\n', out);
}
