/* shard-propagate: every op result's layout from its operands' layouts, by
 * the op table's sharding rule (DESIGN §4). Unsupported combinations are
 * errors raised by the rule, naming the op and the layouts.
 *
 * Where a rule needs data to move between shards (P11) it asks for it on
 * the op (gather_operands, resplit) and this pass inserts the collectives
 * as explicit, named ops marked inserted:
 *   all_gather  operand k -> "NAME@gathered" (replicated), reused when the
 *               same value is gathered again;
 *   resplit     the op computes "OUT@whole" (replicated) and an inserted
 *               reshard_split cuts it into OUT, locally on each device. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "ppcc/test_inject.h"

static const char why_gather[] =
    "P11: inserted all_gather: the sharding rule needs this operand whole on every shard";
static const char why_resplit[] =
    "P11: inserted reshard_split: the op ran on whole (gathered) operands; its result is re-split locally";

typedef struct rewrite {
  ppcc_op_list l;   /* the new op list, built once the first rewrite is needed */
  bool active;
  int *gathered;    /* value -> its inserted all_gather result + 1, or 0 */
  int n_gathered;
} rewrite;

/* Copies ops[0..upto) into the new list, the first time a rewrite happens. */
static bool start(rewrite *r, ppcc_graph *g, int upto) {
  if (r->active) return true;
  r->active = true;
  r->n_gathered = g->n_values;
  r->gathered = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *r->gathered);
  if (!r->gathered) return false;
  for (int i = 0; i < upto; i++)
    if (!ppcc_op_list_push(&r->l, &g->ops[i])) return false;
  return true;
}

/* Pushes the inserted one-operand op id(src) -> value `out`, shard rule applied. */
static ppcc_status push_inserted(rewrite *r, ppcc_graph *g, ppcc_op_id id, int src, int out, const ppcc_attr *attrs,
                                 int n_attrs, const char *why, ppcc_diag *d) {
  ppcc_op op;
  if (!ppcc_op_init_inserted(g, &op, id, src, out, why))
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (n_attrs > 0) {
    op.attrs = ppcc_alloc(g, sizeof *attrs * (size_t)n_attrs);
    if (!op.attrs) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    for (int i = 0; i < n_attrs; i++) op.attrs[i] = attrs[i];
    op.n_attrs = n_attrs;
  }
  ppcc_status st = ppcc_apply_shard_rule(g, &op, d);
  if (st) return st;
  g->values[out].def_op = r->l.n;
  return ppcc_op_list_push(&r->l, &op) ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
}

/* The all_gather of value v (inserted once). */
static ppcc_status gathered(rewrite *r, ppcc_graph *g, int v, int *out, ppcc_diag *d) {
  if (v < r->n_gathered && r->gathered[v]) {
    *out = r->gathered[v] - 1;
    return PPCC_OK;
  }
  int res = ppcc_add_value_like(g, v, "@gathered");
  if (res < 0) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = push_inserted(r, g, PPCC_OP_all_gather, v, res, NULL, 0, why_gather, d);
  if (st) return st;
  if (v < r->n_gathered) r->gathered[v] = res + 1;
  *out = res;
  return PPCC_OK;
}

/* Applies the op's requests: gathers its operands, runs its rule again on
 * them, and re-splits its result if asked. */
static ppcc_status rewrite_op(rewrite *r, ppcc_graph *g, ppcc_op op, ppcc_diag *d) {
  unsigned gather = op.gather_operands;
  bool resplit = op.resplit;
  int dim = op.resplit_dim, count = g->values[op.out[0]].layout.count;
  int *in = ppcc_dup_ints(g, op.in, op.n_in);
  if (!in) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  op.in = in;
  for (int k = 0; k < op.n_in && k < 32; k++) {
    if (!(gather & (1u << k))) continue;
    ppcc_status st = gathered(r, g, op.in[k], &op.in[k], d);
    if (st) return st;
  }
  int final_out = op.out[0];
  if (resplit) {
    int whole = ppcc_add_value_like(g, final_out, "@whole");
    int *out = ppcc_dup_ints(g, &whole, 1);
    if (whole < 0 || !out) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    op.out = out;
  }
  op.gather_operands = 0;
  op.resplit = false;
  ppcc_status st = ppcc_apply_shard_rule(g, &op, d);
  if (!st && (op.gather_operands || op.resplit)) {
    char ref[700];
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "%s: sharding rule still needs collectives after inserting them",
                           ppcc_op_ref(g, &op, ref, sizeof ref));
  }
  if (st) return st;
  for (int k = 0; k < op.n_out; k++) g->values[op.out[k]].def_op = r->l.n;
  if (!ppcc_op_list_push(&r->l, &op)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!resplit) return PPCC_OK;
  ppcc_attr attrs[2] = {{.name = "dim", .type = PPCC_ATTR_INT, .i = dim},
                        {.name = "count", .type = PPCC_ATTR_INT, .i = count}};
  return push_inserted(r, g, PPCC_OP_reshard_split, op.out[0], final_out, attrs, 2, why_resplit, d);
}

/* TEST-ONLY (ppcc/test_inject.h, partial-as-replicated:VALUE): the op
 * computing VALUE declares its partial sums replicated, and a collective
 * reading them keeps that layout (nothing left to reduce). Only the
 * sharded run sees layouts: the reference stays right. */
static bool injected_collective(ppcc_graph *g, ppcc_op *op) {
  char name[PPCC_MAX_NAME + 1];
  if (op->info->family != PPCC_FAMILY_COLLECTIVE || op->n_in != 1 || op->n_out != 1 ||
      !ppcc_test_inject("partial-as-replicated", name, sizeof name))
    return false;
  const ppcc_value *src = &g->values[op->in[0]];
  if (strcmp(src->name, name) != 0 || src->layout.kind != PPCC_LAYOUT_REPLICATED) return false;
  g->values[op->out[0]].layout = src->layout;
  return true;
}

static void inject_wrong_rule(ppcc_graph *g, ppcc_op *op) {
  char name[PPCC_MAX_NAME + 1];
  if (!ppcc_test_inject("partial-as-replicated", name, sizeof name) || op->n_out < 1) return;
  ppcc_value *v = &g->values[op->out[0]];
  if (strcmp(v->name, name) != 0 || v->layout.kind != PPCC_LAYOUT_UNREDUCED) return;
  v->layout.kind = PPCC_LAYOUT_REPLICATED;
  op->why = "TEST-ONLY PPCC_TEST_INJECT: wrong sharding rule, partial sums declared replicated";
}

ppcc_status ppcc_pass_shard_propagate(ppcc_graph *g, ppcc_diag *d) {
  rewrite r = {0};
  ppcc_status st = PPCC_OK;
  int n_ops = g->n_ops;
  for (int i = 0; i < n_ops && !st; i++) {
    ppcc_op *op = &g->ops[i];
    op->gather_operands = 0;
    op->resplit = false;
    if (!injected_collective(g, op)) st = ppcc_apply_shard_rule(g, op, d);
    if (st) break;
    inject_wrong_rule(g, op);
    bool needs = op->gather_operands || op->resplit;
    if (needs && !start(&r, g, i)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    else if (needs) st = rewrite_op(&r, g, *op, d);
    else if (r.active) {
      for (int k = 0; k < op->n_out; k++) g->values[op->out[k]].def_op = r.l.n;
      if (!ppcc_op_list_push(&r.l, op)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    }
  }
  free(r.gathered);
  if (st || !r.active) {
    free(r.l.ops);
    return st;
  }
  ppcc_graph_set_ops(g, r.l.ops, r.l.n, r.l.cap);
  return PPCC_OK;
}
