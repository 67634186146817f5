/* Lowerings of sqrt, reciprocal, erf and log: one elementwise
 * linalg.generic whose body is the math/arith scalar op. Float only, like
 * their kernels. */
#include "emit_internal.h"
#include "lower_onnx.h"

static MlirValue body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const char *name = user;
  MlirValue x = mlirBlockGetArgument(b, 0);
  if (name[0] == '1') /* reciprocal: 1 / x */
    return emit_binary_scalar(c, b, "arith.divf", emit_float_const(c, b, mlirValueGetType(x), 1.0), x);
  return emit_unary_scalar(c, b, name, x);
}

ppcc_status lower_onnx_unary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                             ppcc_diag *d) {
  const ppcc_value *in = &g->values[op->in[0]], *out = &g->values[op->out[0]];
  if (!ppcc_dtype_is_float(in->dtype))
    return emit_op_error(c, op, "op '%s' has no MLIR lowering for dtype %s", op->info->name, ppcc_dtype_name(in->dtype));
  const char *name = NULL;
  switch (op->info->id) {
  case PPCC_OP_sqrt: name = "math.sqrt"; break;
  case PPCC_OP_reciprocal: name = "1/x"; break;
  case PPCC_OP_erf: name = "math.erf"; break;
  case PPCC_OP_log: name = "math.log"; break;
  default: return emit_op_error(c, op, "op '%s' is not lowered by lower_onnx_unary", op->info->name);
  }
  MlirValue x = emit_shard(c, op->in[0], in->layout.count == 1 ? 0 : shard);
  emit_set_shard(c, op->out[0], shard, emit_elementwise(c, 1, &x, emit_shard_type(c, out), body, (void *)name));
  return PPCC_OK;
}
