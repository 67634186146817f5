/* The `lower` column of the op table (include/ppcc/op_list.h): one
 * lowering per op kind, from lower_ops.c (generic compute, transfers),
 * lower_llm.c, lower_onnx.c, lower_index.c and lower_collectives.c. Above
 * those files, so none of them needs another's table. */
#include "emit_internal.h"

ppcc_status lower_matmul(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_linear(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_unary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_binary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_transpose(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_reshape(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_transfer(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_index_copy(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_collective(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
#include "lower_llm.h" /* lower_embedding, lower_rms_norm, ... */
#include "lower_onnx.h" /* lower_onnx_unary */

static const ppcc_lower_fn lowerings[PPCC_OP_COUNT] = {
#define PPCC_OP(name, min_in, max_in, n_out, attrs, family, shape, shard, pin, flops, batch, kernel, lower) \
  [PPCC_OP_##name] = lower,
#include "ppcc/op_list.h"
#undef PPCC_OP
};

ppcc_lower_fn emit_lowering_for(ppcc_op_id id) {
  return (unsigned)id < PPCC_OP_COUNT ? lowerings[id] : NULL;
}
