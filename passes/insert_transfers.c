/* insert-transfers: every move recorded by pin-propagate becomes an explicit
 * `transfer` op placed just before its first consumer (P10). A value moved
 * to the same devices twice reuses the first transfer. An operand that
 * must both move and be gathered (an inserted all_gather whose every use
 * moves to one tuple) moves its shards first and is gathered on the
 * destination (P11 v3): 1/n of the bytes of moving the gathered value. */
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

/* An all_gather inserted by shard-propagate: split in, replicated out. */
static bool inserted_gather(const ppcc_graph *g, const ppcc_op *op) {
  return op->inserted && op->info->family == PPCC_FAMILY_COLLECTIVE && op->n_in == 1 && op->n_out == 1 &&
         g->values[op->in[0]].layout.kind == PPCC_LAYOUT_SPLIT &&
         g->values[op->out[0]].layout.kind == PPCC_LAYOUT_REPLICATED;
}

/* dest[v]: the one tuple every use of v moves it to (NULL: some use reads
 * it in place, as a graph output, or uses move it to different tuples). */
static const int **single_destinations(const ppcc_graph *g) {
  const int **dest = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *dest);
  bool *stays = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *stays);
  if (!dest || !stays) {
    free(dest);
    free(stays);
    return NULL;
  }
  for (int i = 0; i < g->n_outputs; i++) stays[g->outputs[i]] = true;
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k];
      const int *to = op->move_to ? op->move_to[k] : NULL;
      if (!to) stays[v] = true;
      else if (!dest[v]) dest[v] = to;
      else if (!ppcc_devices_equal(dest[v], to, g->values[v].layout.count)) stays[v] = true;
    }
  }
  for (int v = 0; v < g->n_values; v++)
    if (stays[v]) dest[v] = NULL;
  free(stays);
  return dest;
}

ppcc_status ppcc_pass_insert_transfers(ppcc_graph *g, ppcc_diag *d) {
  int n_sources = g->n_values;
  moved **seen = calloc((size_t)(n_sources > 0 ? n_sources : 1), sizeof *seen);
  const int **dest = single_destinations(g);
  ppcc_op_list l = {0};
  bool ok = seen != NULL && dest != NULL;
  for (int i = 0; ok && i < g->n_ops; i++) {
    ppcc_op op = g->ops[i];
    if (inserted_gather(g, &op) && dest[op.out[0]]) {
      /* move the shards, then gather on the destination */
      const int *to = dest[op.out[0]];
      int in;
      ok = transfer_for(g, &l, seen, op.in[0], to, &in) && (op.in = ppcc_dup_ints(g, &in, 1)) != NULL;
      ppcc_value *out = &g->values[op.out[0]];
      out->devices = (int *)to;
      out->pinned = g->values[in].pinned;
      out->why = "P11: inserted all_gather on the destination devices: its operand's shards moved there first";
      op.devices = (int *)to;
    }
    for (int k = 0; ok && op.move_to && k < op.n_in; k++) {
      if (!op.move_to[k]) continue;
      if (ppcc_devices_equal(g->values[op.in[k]].devices, op.move_to[k], g->values[op.in[k]].layout.count))
        continue; /* gathered there already */
      int result;
      ok = transfer_for(g, &l, seen, op.in[k], op.move_to[k], &result);
      if (ok) op.in[k] = result;
    }
    op.move_to = NULL;
    for (int k = 0; ok && k < op.n_out; k++) g->values[op.out[k]].def_op = l.n;
    ok = ok && ppcc_op_list_push(&l, &op);
  }
  free(seen);
  free(dest);
  if (!ok) {
    free(l.ops);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory while inserting transfers");
  }
  ppcc_graph_set_ops(g, l.ops, l.n, l.cap);
  return PPCC_OK;
}
