/* The placement map: the one place that decides how devices, shards and
 * transfers are spelled in each output form (DESIGN §5).
 *
 *   form        device of an op / argument          transfer of one shard
 *   annotated   ppcc.device = N : i64                "ppcc.transfer" {source, target}
 *   IREE        iree.abi.affinity =                  flow.tensor.transfer %v : T
 *                 #hal.device.promise<@__device_N>     to #hal.device.promise<@__device_N>
 *   executable  one func per device (no attribute)   ppcc_rt_send / ppcc_rt_recv calls
 *                                                      (exec_comm.c)
 */
#include <stdio.h>
#include "emit_internal.h"

bool placement_allows_unregistered(ppcc_emit_kind kind) {
  return kind == PPCC_EMIT_IREE; /* flow / hal are IREE's, not available here */
}

bool placement_collectives_as_ops(ppcc_emit_kind kind) {
  return kind == PPCC_EMIT_MLIR;
}

/* #hal.device.promise<@__device_N>: an IREE device affinity. Parsed because
 * the hal dialect is not available; the context allows unregistered
 * dialects in IREE mode, so it is kept as an opaque attribute. */
static MlirAttribute iree_device_attr(ppcc_emit_ctx *c, int device) {
  char text[64];
  snprintf(text, sizeof text, "#hal.device.promise<@__device_%d>", device);
  return mlirAttributeParseGet(c->mctx, emit_str(text));
}

int placement_arg_attrs(ppcc_emit_ctx *c, const ppcc_value *v, int shard, MlirNamedAttribute *out) {
  int n = 0, device = v->devices ? v->devices[shard] : shard;
  if (c->kind == PPCC_EMIT_IREE) {
    out[n++] = emit_named(c, "iree.abi.affinity", iree_device_attr(c, device));
    return n;
  }
  char layout[64];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  out[n++] = emit_named(c, "ppcc.device", emit_i64_attr(c, device));
  out[n++] = emit_named(c, "ppcc.name", emit_string_attr(c, v->name));
  out[n++] = emit_named(c, "ppcc.shard", emit_i64_attr(c, shard));
  out[n++] = emit_named(c, "ppcc.layout", emit_string_attr(c, layout));
  if (v->pinned) out[n++] = emit_named(c, "ppcc.pinned", mlirUnitAttrGet(c->mctx));
  return n;
}

void placement_mark_op(ppcc_emit_ctx *c, MlirOperation op, int device) {
  /* IREE infers where compute runs from its operands' affinities; in the
   * executable form the enclosing function is the device. */
  if (c->kind == PPCC_EMIT_IREE || c->kind == PPCC_EMIT_MLIR_EXEC) return;
  mlirOperationSetAttributeByName(op, emit_str("ppcc.device"), emit_i64_attr(c, device));
}

MlirValue placement_transfer(ppcc_emit_ctx *c, MlirValue v, int from, int to) {
  if (from == to) return v;
  if (c->kind == PPCC_EMIT_MLIR_EXEC) return exec_transfer(c, v, from, to);
  MlirType t = mlirValueGetType(v);
  if (c->kind == PPCC_EMIT_IREE) {
    MlirNamedAttribute target = emit_named(c, "target", iree_device_attr(c, to));
    emit_op_spec s = {"flow.tensor.transfer", 1, &v, 1, &t, 1, &target, 0};
    return mlirOperationGetResult(emit_op(c, &s), 0);
  }
  MlirNamedAttribute attrs[2] = {emit_named(c, "source", emit_i64_attr(c, from)),
                                 emit_named(c, "target", emit_i64_attr(c, to))};
  emit_op_spec s = {"ppcc.transfer", 1, &v, 1, &t, 2, attrs, 0};
  return mlirOperationGetResult(emit_op(c, &s), 0);
}
