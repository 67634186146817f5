/* MLIR lowerings of the elementwise ops ONNX models bring (lower_onnx.c);
 * included by lower_ops.c, which expands the op table. */
#ifndef PPCC_LOWER_ONNX_H
#define PPCC_LOWER_ONNX_H
#include "ppcc/ops.h"
ppcc_status lower_onnx_unary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                             ppcc_diag *d);
ppcc_status lower_onnx_pow(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                           ppcc_diag *d);
ppcc_status lower_onnx_compare(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                               ppcc_diag *d);
ppcc_status lower_onnx_where(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                             ppcc_diag *d);
ppcc_status lower_onnx_cast(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                            ppcc_diag *d);
ppcc_status lower_onnx_expand(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                              ppcc_diag *d);
ppcc_status lower_onnx_reduce_max(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                  ppcc_diag *d);
ppcc_status lower_onnx_gather_elements(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                       ppcc_diag *d);
ppcc_status lower_onnx_gather(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                              ppcc_diag *d);
ppcc_status lower_onnx_conv(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);
ppcc_status lower_onnx_max_pool(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                ppcc_diag *d);
#endif
