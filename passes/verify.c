/* verify: structural checks and shape inference, in program order. */
#include "ppcc/ops.h"
#include "ppcc/passes.h"

static ppcc_status check_operands(ppcc_graph *g, int op_index, ppcc_diag *d) {
  ppcc_op *op = &g->ops[op_index];
  char ref[600]; /* spelled out only for a diagnostic */
#define REF ppcc_op_ref(g, op, ref, sizeof ref)
  if (op->n_in < op->info->min_in || op->n_in > op->info->max_in || op->n_out != op->info->n_out)
    return ppcc_error(d, "%s: takes %d..%d operands and %d results, got %d and %d", REF, op->info->min_in,
                      op->info->max_in, op->info->n_out, op->n_in, op->n_out);
  for (int k = 0; k < op->n_in; k++) {
    int v = op->in[k];
    if (v < 0 || v >= g->n_values) return ppcc_error(d, "%s: operand %d is not a value", REF, k);
    if (g->values[v].def_op >= op_index)
      return ppcc_error(d, "%s: operand '%s' is used before its definition (cycle)", REF, g->values[v].name);
  }
  for (int k = 0; k < op->n_out; k++) {
    int v = op->out[k];
    if (v < 0 || v >= g->n_values || g->values[v].def_op != op_index)
      return ppcc_error(d, "%s: result %d is not defined by this op", REF, k);
  }
#undef REF
  return PPCC_OK;
}

static ppcc_status check_result_size(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  for (int k = 0; k < op->n_out; k++) {
    const ppcc_value *v = &g->values[op->out[k]];
    if (v->rank > PPCC_MAX_RANK || ppcc_num_elements(v->rank, v->shape) < 0) {
      char ref[600];
      return ppcc_error(d, "%s: result '%s' has more than %lld elements", ppcc_op_ref(g, op, ref, sizeof ref),
                        v->name, (long long)PPCC_MAX_ELEMENTS);
    }
  }
  return PPCC_OK;
}

/* Block-quantized params feed only the operands their op's shape rule
 * accepts (a linear's weight, an embedding's table). */
static ppcc_status check_quantized(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = &g->values[op->in[k]];
    if (!ppcc_dtype_is_quantized(v->dtype) || (op->quantized_ok >> k & 1u)) continue;
    char ref[600];
    return ppcc_error(d, "%s: operand '%s' is %s (block-quantized): only the weight of a linear or the table of an "
                      "embedding may be quantized",
                      ppcc_op_ref(g, op, ref, sizeof ref), v->name, ppcc_dtype_name(v->dtype));
  }
  return PPCC_OK;
}

ppcc_status ppcc_pass_verify(ppcc_graph *g, ppcc_diag *d) {
  for (int i = 0; i < g->n_ops; i++) {
    ppcc_op *op = &g->ops[i];
    ppcc_status st = check_operands(g, i, d);
    op->quantized_ok = 0;
    if (!st) st = op->info->infer_shape(g, op, d);
    if (!st) st = check_quantized(g, op, d);
    if (!st) st = check_result_size(g, op, d);
    if (st) return st;
  }
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] < 0 || g->outputs[i] >= g->n_values)
      return ppcc_error(d, "outputs[%d]: not a value", i);
  return PPCC_OK;
}
