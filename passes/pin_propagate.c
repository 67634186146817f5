/* pin-propagate: devices and pinned flag of every value, rules P1-P11 of
 * DESIGN §2. Moves an op needs are recorded in op->move_to for
 * insert-transfers; nothing is inserted here. */
#include <stdio.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"

#define IN(k) (&g->values[op->in[k]])
#define OUT(k) (&g->values[op->out[k]])

static int *default_devices(ppcc_graph *g, int count) {
  int *dev = ppcc_alloc(g, sizeof(int) * (size_t)count);
  if (dev)
    for (int i = 0; i < count; i++) dev[i] = i;
  return dev;
}

/* A device tuple given by the model: in range, one entry per shard, no
 * device twice. */
static ppcc_status check_tuple(ppcc_graph *g, const int *dev, int n, int count, const char *what,
                               ppcc_diag *d) {
  if (n != count)
    return ppcc_error(d, "%s: %d devices given for %d shards (the shard count must match)", what, n, count);
  for (int i = 0; i < n; i++) {
    if (dev[i] < 0 || dev[i] >= g->n_devices)
      return ppcc_error(d, "%s: device %d is out of range (model has %d devices)", what, dev[i], g->n_devices);
    for (int j = 0; j < i; j++)
      if (dev[j] == dev[i]) return ppcc_error(d, "%s: device %d is listed twice", what, dev[i]);
  }
  return PPCC_OK;
}

/* P1, P2: params pinned and inputs unpinned unless declared otherwise; the
 * frontend fills declared values, hand-built graphs get the defaults here. */
static ppcc_status place_declared(ppcc_graph *g, ppcc_diag *d) {
  for (int i = 0; i < g->n_values; i++) {
    ppcc_value *v = &g->values[i];
    if (v->kind == PPCC_VALUE_RESULT) continue;
    if (!v->devices) {
      v->devices = default_devices(g, v->layout.count);
      if (!v->devices) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
      v->pinned = v->kind == PPCC_VALUE_PARAM;
    }
    if (!v->why)
      v->why = v->kind == PPCC_VALUE_PARAM ? "P1: parameter placed on its declared devices"
                                           : "P2: graph input placed as declared";
    char what[PPCC_MAX_NAME + 32];
    snprintf(what, sizeof what, "%s '%s'", v->kind == PPCC_VALUE_PARAM ? "param" : "input", v->name);
    ppcc_status st = check_tuple(g, v->devices, v->layout.count, v->layout.count, what, d);
    if (st) return st;
  }
  return PPCC_OK;
}

static void place_result(ppcc_op *op, ppcc_value *out, int *devices, bool pinned, const char *why) {
  out->devices = devices;
  out->pinned = pinned;
  out->why = why;
  op->devices = devices;
  op->n_devices = out->layout.count;
}

/* Devices given in an op's "devices" attribute, checked against count. */
static ppcc_status attr_devices(ppcc_graph *g, ppcc_op *op, int count, int **out, ppcc_diag *d) {
  const ppcc_attr *a = ppcc_op_attr(op, "devices");
  char ref[600], what[700];
  snprintf(what, sizeof what, "%s: attrs.devices", ppcc_op_ref(g, op, ref, sizeof ref));
  int *dev = ppcc_alloc(g, sizeof(int) * (size_t)(a->n > 0 ? a->n : 1));
  if (!dev) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; i < a->n; i++) {
    int64_t x = a->ints[i];
    if (x < 0 || x >= g->n_devices)
      return ppcc_error(d, "%s: device %lld is out of range (model has %d devices)", what, (long long)x, g->n_devices);
    dev[i] = (int)x;
  }
  *out = dev;
  return check_tuple(g, dev, a->n, count, what, d);
}

static ppcc_status pin_unary(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  place_result(op, OUT(0), IN(0)->devices, IN(0)->pinned, "P3: follows its operand's devices and pin");
  return PPCC_OK;
}

static void tuple_str(const ppcc_value *v, char *buf, size_t n) {
  char devs[256];
  ppcc_devices_str(v->devices, v->layout.count, devs, sizeof devs);
  snprintf(buf, n, "'%s' on %s %s", v->name, devs, v->pinned ? "pinned" : "unpinned");
}

static ppcc_status placement_error(ppcc_graph *g, ppcc_op *op, ppcc_site_kind site, const char *what,
                                   ppcc_diag *d) {
  char msg[1024], ref[600], one[400];
  ppcc_diag_site_set(d, site, op->src_index); /* src/fix/ explains it and proposes fixes */
  size_t off = (size_t)snprintf(msg, sizeof msg, "%s: %s:", ppcc_op_ref(g, op, ref, sizeof ref), what);
  for (int k = 0; k < op->n_in && off < sizeof msg; k++) {
    tuple_str(IN(k), one, sizeof one);
    off += (size_t)snprintf(msg + off, sizeof msg - off, "%s %s", k ? "," : "", one);
  }
  return ppcc_error(d, "%s", msg);
}

static bool same_tuple(const ppcc_value *a, const ppcc_value *b) {
  return a->layout.count == b->layout.count && ppcc_devices_equal(a->devices, b->devices, a->layout.count);
}

/* Operand k must live on target: record the move, or fail if pinned. */
static void request_move(ppcc_graph *g, ppcc_op *op, int k, int *target) {
  if (!op->move_to) op->move_to = ppcc_alloc(g, sizeof(int *) * (size_t)op->n_in);
  if (op->move_to) op->move_to[k] = target;
}

/* P4 (v2): all on one tuple -> stay; otherwise unpinned operands move to
 * the pinned operands' tuple. The result is pinned iff every operand is:
 * computed only from weights it stays with them, anything computed from
 * an activation is an activation and follows the next weights it meets. */
static ppcc_status pin_multi(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  bool all_same = true, all_pinned = true;
  const ppcc_value *pinned = NULL;
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = IN(k);
    if (!same_tuple(v, IN(0))) all_same = false;
    if (!v->pinned) {
      all_pinned = false;
      continue;
    }
    if (!pinned) pinned = v;
    else if (!same_tuple(v, pinned))
      return placement_error(g, op, PPCC_SITE_PIN_CONFLICT, "pin conflict: pinned operands live on different devices", d);
  }
  if (all_same) {
    place_result(op, OUT(0), IN(0)->devices, all_pinned && op->n_in > 0,
                 all_pinned ? "P4: all operands pinned on the same devices; the result stays with them, pinned"
                            : "P4: all operands on the same devices; computed from an unpinned operand, so unpinned");
    return PPCC_OK;
  }
  if (!pinned) return placement_error(g, op, PPCC_SITE_NO_PINNED, "operands on different devices and none pinned", d);
  for (int k = 0; k < op->n_in; k++) {
    if (same_tuple(IN(k), pinned)) continue;
    if (IN(k)->layout.count != pinned->layout.count)
      return placement_error(g, op, PPCC_SITE_SHARD_COUNTS, "cannot transfer between different shard counts", d);
    request_move(g, op, k, pinned->devices);
  }
  if (op->n_in > 0 && !op->move_to) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  place_result(op, OUT(0), pinned->devices, false,
               "P4: unpinned operands moved to the pinned operands' devices; the result is unpinned");
  return PPCC_OK;
}

/* P5 (v2): replicate / reshard_split. Of an unsharded value (or a count-1
 * one made into several shards): onto the given or default devices, pinned
 * as asked. Of a sharded value: in place, keeping devices and pin. */
static ppcc_status pin_create(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  bool pinned = ppcc_attr_bool(op, "pinned", false);
  const ppcc_value *x = IN(0);
  ppcc_value *o = OUT(0);
  if (ppcc_value_is_sharded(x) && x->layout.count == o->layout.count) {
    const char *given = ppcc_op_attr(op, "devices") ? "devices" : ppcc_op_attr(op, "pinned") ? "pinned" : NULL;
    if (given) {
      char ref[600];
      return ppcc_error(d, "%s: attrs.%s cannot be given: applied to sharded '%s' the op keeps its devices and pin",
                        ppcc_op_ref(g, op, ref, sizeof ref), given, x->name);
    }
    /* (v3) replicate of a split value is an all_gather: P6, not pinned */
    if (x->layout.kind == PPCC_LAYOUT_SPLIT && o->layout.kind == PPCC_LAYOUT_REPLICATED) {
      place_result(op, o, x->devices, false,
                   "P5/P6: replicate of a split value is an all_gather; same devices, not pinned");
      return PPCC_OK;
    }
    place_result(op, o, x->devices, x->pinned,
                 op->inserted ? "P11/P5: inserted re-split, local on each device; keeps its operand's devices and pin"
                              : "P5: resharded in place; keeps its operand's devices and pin");
    return PPCC_OK;
  }
  int *dev = NULL;
  if (ppcc_op_attr(op, "devices")) {
    ppcc_status st = attr_devices(g, op, o->layout.count, &dev, d);
    if (st) return st;
  } else if (!(dev = default_devices(g, o->layout.count))) {
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  } else {
    char ref[600], what[700];
    snprintf(what, sizeof what, "%s: default devices", ppcc_op_ref(g, op, ref, sizeof ref));
    ppcc_status st = check_tuple(g, dev, o->layout.count, o->layout.count, what, d);
    if (st) return st;
  }
  place_result(op, o, dev, pinned, "P5: sharded onto the given (or default) devices");
  return PPCC_OK;
}

/* P6; a collective inserted by shard-propagate (P11) is part of the op
 * that needed it, so it keeps its operand's pin: a gathered weight is
 * still a weight. */
static ppcc_status pin_collective(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  if (op->inserted) {
    place_result(op, OUT(0), IN(0)->devices, IN(0)->pinned,
                 "P11: inserted collective; stays on its operand's devices and keeps its pin");
    return PPCC_OK;
  }
  place_result(op, OUT(0), IN(0)->devices, false, "P6: collective result stays on its operand's devices, unpinned");
  return PPCC_OK;
}

/* P7: the destination never moves; updates come to it. */
static ppcc_status pin_inplace(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *dst = IN(0);
  for (int k = 1; k < op->n_in; k++) {
    if (same_tuple(IN(k), dst)) continue;
    if (IN(k)->pinned)
      return placement_error(g, op, PPCC_SITE_PINNED_UPDATE, "pin conflict: a pinned update cannot move to the destination", d);
    request_move(g, op, k, dst->devices);
    if (!op->move_to) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  place_result(op, OUT(0), dst->devices, dst->pinned, "P7: in-place update keeps the destination's placement");
  return PPCC_OK;
}

static ppcc_status pin_transfer(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int *dev;
  ppcc_status st = attr_devices(g, op, OUT(0)->layout.count, &dev, d);
  if (st) return st;
  place_result(op, OUT(0), dev, ppcc_attr_bool(op, "pinned", false),
               OUT(0)->layout.count != IN(0)->layout.count
                   ? "P8: explicit transfer of an unsharded value to several devices replicates it onto them"
                   : "P8: explicit transfer to the given devices");
  return PPCC_OK;
}

static ppcc_status pin_unshard(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int64_t device = ppcc_attr_int(op, "device", IN(0)->devices[0]);
  if (device < 0 || device >= g->n_devices) {
    char ref[600];
    return ppcc_error(d, "%s: attrs.device %lld is out of range (model has %d devices)",
                      ppcc_op_ref(g, op, ref, sizeof ref), (long long)device, g->n_devices);
  }
  int dev = (int)device;
  int *tuple = ppcc_dup_ints(g, &dev, 1);
  if (!tuple) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  place_result(op, OUT(0), tuple, false, "P9: unshard gathers onto one device");
  return PPCC_OK;
}

static ppcc_status (*const pin_rules[])(ppcc_graph *, ppcc_op *, ppcc_diag *) = {
  [PPCC_PIN_UNARY] = pin_unary,           [PPCC_PIN_MULTI] = pin_multi,
  [PPCC_PIN_CREATE] = pin_create,         [PPCC_PIN_COLLECTIVE] = pin_collective,
  [PPCC_PIN_INPLACE] = pin_inplace,       [PPCC_PIN_TRANSFER] = pin_transfer,
  [PPCC_PIN_UNSHARD] = pin_unshard,
};

ppcc_status ppcc_pass_pin_propagate(ppcc_graph *g, ppcc_diag *d) {
  ppcc_status st = place_declared(g, d);
  for (int i = 0; !st && i < g->n_ops; i++) st = pin_rules[g->ops[i].info->pin_rule](g, &g->ops[i], d);
  return st;
}
