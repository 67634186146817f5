/* shard-propagate: every op result's layout from its operands' layouts, by
 * the op table's sharding rule (DESIGN §4). Unsupported combinations are
 * errors raised by the rule, naming the op and the layouts. */
#include "ppcc/ops.h"
#include "ppcc/passes.h"

ppcc_status ppcc_pass_shard_propagate(ppcc_graph *g, ppcc_diag *d) {
  for (int i = 0; i < g->n_ops; i++) {
    ppcc_op *op = &g->ops[i];
    ppcc_status st = op->info->shard_rule(g, op, d);
    if (st) return st;
  }
  return PPCC_OK;
}
