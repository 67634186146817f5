/* insert-transfers: every move recorded by pin-propagate becomes an explicit
 * `transfer` op placed just before its first consumer (P10). A value moved
 * to the same devices twice reuses the first transfer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"

typedef struct moved {
  struct moved *next;
  const int *devices;
  int value; /* the transfer's result */
} moved;

/* The transfer op and its result, placed: shard i moves to devices[i]. */
static bool make_transfer(ppcc_graph *g, ppcc_op_list *l, int src, const int *devices, int *result) {
  int out = ppcc_push_transfer(g, l, src, devices, "P10: per-shard transfer of an unpinned operand");
  if (out < 0) return false;
  ppcc_value *t = &g->values[out];
  t->devices = (int *)devices;
  t->pinned = false;
  t->why = "P10: transfer inserted to bring the value to a consumer's devices";
  ppcc_op *op = &l->ops[l->n - 1];
  op->devices = (int *)devices;
  op->n_devices = t->layout.count;
  *result = out;
  return true;
}

/* The transfer result for (src, devices), creating the transfer if new. */
static bool transfer_for(ppcc_graph *g, ppcc_op_list *l, moved **seen, int src, const int *devices, int *result) {
  int count = g->values[src].layout.count;
  for (moved *m = seen[src]; m; m = m->next)
    if (ppcc_devices_equal(m->devices, devices, count)) {
      *result = m->value;
      return true;
    }
  moved *m = ppcc_alloc(g, sizeof *m);
  if (!m || !make_transfer(g, l, src, devices, result)) return false;
  m->devices = devices;
  m->value = *result;
  m->next = seen[src];
  seen[src] = m;
  return true;
}

ppcc_status ppcc_pass_insert_transfers(ppcc_graph *g, ppcc_diag *d) {
  int n_sources = g->n_values;
  moved **seen = calloc((size_t)(n_sources > 0 ? n_sources : 1), sizeof *seen);
  ppcc_op_list l = {0};
  bool ok = seen != NULL;
  for (int i = 0; ok && i < g->n_ops; i++) {
    ppcc_op op = g->ops[i];
    for (int k = 0; ok && op.move_to && k < op.n_in; k++) {
      if (!op.move_to[k]) continue;
      int result;
      ok = transfer_for(g, &l, seen, op.in[k], op.move_to[k], &result);
      if (ok) op.in[k] = result;
    }
    op.move_to = NULL;
    for (int k = 0; ok && k < op.n_out; k++) g->values[op.out[k]].def_op = l.n;
    ok = ok && ppcc_op_list_push(&l, &op);
  }
  free(seen);
  if (!ok) {
    free(l.ops);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory while inserting transfers");
  }
  ppcc_graph_set_ops(g, l.ops, l.n, l.cap);
  return PPCC_OK;
}
