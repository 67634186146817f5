/* Building blocks for passes that insert ops: a growable op list that
 * replaces g->ops, derived values with deterministic unique names, and the
 * transfer op every such pass inserts the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"

bool ppcc_op_list_push(ppcc_op_list *l, const ppcc_op *op) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    ppcc_op *o = realloc(l->ops, sizeof *o * (size_t)cap);
    if (!o) return false;
    l->ops = o;
    l->cap = cap;
  }
  l->ops[l->n++] = *op;
  return true;
}

int ppcc_add_value_like(ppcc_graph *g, int like, const char *suffix) {
  char name[PPCC_MAX_NAME * 2 + 64], unique[sizeof name + 16];
  snprintf(name, sizeof name, "%s%s", g->values[like].name, suffix);
  snprintf(unique, sizeof unique, "%s", name);
  for (int n = 2; ppcc_find_value(g, unique) >= 0; n++) snprintf(unique, sizeof unique, "%s#%d", name, n);
  ppcc_value v = g->values[like]; /* a copy: adding a value may move the array */
  int idx = ppcc_add_value(g, unique, PPCC_VALUE_RESULT, v.dtype, v.rank, v.shape);
  if (idx >= 0) g->values[idx].layout = v.layout;
  return idx;
}

bool ppcc_op_init_inserted(ppcc_graph *g, ppcc_op *op, ppcc_op_id id, int in, int out, const char *why) {
  memset(op, 0, sizeof *op);
  op->info = ppcc_op_info_by_id(id);
  op->n_in = op->n_out = 1;
  op->in = ppcc_dup_ints(g, &in, 1);
  op->out = ppcc_dup_ints(g, &out, 1);
  op->inserted = true;
  op->src_index = -1;
  op->why = why;
  return op->in && op->out;
}

int ppcc_push_transfer(ppcc_graph *g, ppcc_op_list *l, int src, const int *devices, const char *why) {
  return ppcc_push_transfer_to(g, l, src, devices, g->values[src].layout.count, why);
}

int ppcc_push_transfer_to(ppcc_graph *g, ppcc_op_list *l, int src, const int *devices, int count, const char *why) {
  char suffix[PPCC_MAX_NAME] = "@";
  size_t off = 1;
  for (int i = 0; i < count && off < sizeof suffix; i++)
    off += (size_t)snprintf(suffix + off, sizeof suffix - off, i ? ",%d" : "%d", devices[i]);
  int out = ppcc_add_value_like(g, src, suffix);
  ppcc_op t;
  if (out < 0 || !ppcc_op_init_inserted(g, &t, PPCC_OP_transfer, src, out, why)) return -1;
  t.attrs = ppcc_alloc(g, sizeof(ppcc_attr));
  int64_t *ids = ppcc_alloc(g, sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
  if (!t.attrs || !ids) return -1;
  for (int i = 0; i < count; i++) ids[i] = devices[i];
  *t.attrs = (ppcc_attr){.name = "devices", .type = PPCC_ATTR_INTS, .n = count, .ints = ids};
  t.n_attrs = 1;
  g->values[out].def_op = l->n;
  return ppcc_op_list_push(l, &t) ? out : -1;
}
