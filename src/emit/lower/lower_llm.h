/* Lowerings of the LLM ops (src/emit/lower/lower_llm.c): the `lower` column of
 * their rows in include/ppcc/op_list.h. Same signature as every other
 * lowering (ppcc_lower_fn), one shard per call. */
#ifndef PPCC_EMIT_LOWER_LLM_H
#define PPCC_EMIT_LOWER_LLM_H
#include "emit_internal.h"

#define LLM_LOWERING(name) \
  ppcc_status lower_##name(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d)
LLM_LOWERING(embedding);
LLM_LOWERING(rms_norm);
LLM_LOWERING(layer_norm);
LLM_LOWERING(softmax);
LLM_LOWERING(rotary);
LLM_LOWERING(attention);
LLM_LOWERING(concat);
LLM_LOWERING(slice);
LLM_LOWERING(sum);
LLM_LOWERING(mean);
LLM_LOWERING(argmax);
#undef LLM_LOWERING

#endif
