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

/* "h1@2,3": deterministic, and unique even if the model used that name. */
static int new_transfer_value(ppcc_graph *g, int src, const int *devices) {
  const ppcc_value *v = &g->values[src];
  int count = v->layout.count;
  char name[PPCC_MAX_NAME + 64];
  size_t off = (size_t)snprintf(name, sizeof name, "%s@", v->name);
  for (int i = 0; i < count && off < sizeof name; i++)
    off += (size_t)snprintf(name + off, sizeof name - off, i ? ",%d" : "%d", devices[i]);
  char unique[sizeof name + 16];
  snprintf(unique, sizeof unique, "%s", name);
  for (int n = 2; ppcc_find_value(g, unique) >= 0; n++) snprintf(unique, sizeof unique, "%s#%d", name, n);
  int idx = ppcc_add_value(g, unique, PPCC_VALUE_RESULT, v->dtype, v->rank, v->shape);
  if (idx < 0) return -1;
  ppcc_value *src_v = &g->values[src], *t = &g->values[idx]; /* re-read: values may move */
  t->layout = src_v->layout;
  t->devices = (int *)devices;
  t->pinned = false;
  t->why = "P10: transfer inserted to bring the value to a consumer's devices";
  return idx;
}

static ppcc_attr devices_attr(ppcc_graph *g, const int *devices, int count) {
  ppcc_attr a = {.name = "devices", .type = PPCC_ATTR_INTS, .n = count};
  a.ints = ppcc_alloc(g, sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
  if (a.ints)
    for (int i = 0; i < count; i++) a.ints[i] = devices[i];
  return a;
}

typedef struct {
  ppcc_op *ops;
  int n, cap;
} op_list;

static bool push_op(op_list *l, const ppcc_op *op) {
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

static bool make_transfer(ppcc_graph *g, op_list *l, int src, const int *devices, int *result) {
  int count = g->values[src].layout.count;
  int out = new_transfer_value(g, src, devices);
  ppcc_attr attr = devices_attr(g, devices, count);
  if (out < 0 || !attr.ints) return false;
  ppcc_op t = {0};
  t.info = ppcc_op_info_by_id(PPCC_OP_transfer);
  t.n_in = t.n_out = t.n_attrs = 1;
  t.in = ppcc_dup_ints(g, &src, 1);
  t.out = ppcc_dup_ints(g, &out, 1);
  t.attrs = ppcc_alloc(g, sizeof attr);
  if (!t.in || !t.out || !t.attrs) return false;
  *t.attrs = attr;
  t.devices = (int *)devices;
  t.n_devices = count;
  t.inserted = true;
  t.src_index = -1;
  t.why = "P10: per-shard transfer of an unpinned operand";
  g->values[out].def_op = l->n;
  *result = out;
  return push_op(l, &t);
}

/* The transfer result for (src, devices), creating the transfer if new. */
static bool transfer_for(ppcc_graph *g, op_list *l, moved **seen, int src, const int *devices, int *result) {
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
  op_list l = {0};
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
    ok = ok && push_op(&l, &op);
  }
  free(seen);
  if (!ok) {
    free(l.ops);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory while inserting transfers");
  }
  ppcc_graph_set_ops(g, l.ops, l.n, l.cap);
  return PPCC_OK;
}
