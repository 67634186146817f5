/* The per-shard value table of the emission context, and the checks and
 * diagnostics that name the value or op being lowered. Below everything
 * else in src/emit/ (the placement map and every lowering record shards). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "emit_internal.h"

ppcc_status emit_op_error(ppcc_emit_ctx *c, const ppcc_op *op, const char *fmt, ...) {
  char msg[1024], ref[PPCC_MAX_NAME * 2 + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ppcc_error(c->d, "%s: %s", ppcc_op_ref(c->g, op, ref, sizeof ref), msg);
}


MlirValue emit_shard(const ppcc_emit_ctx *c, int value, int shard) {
  if (!c->shards[value]) return (MlirValue){NULL};
  return c->shards[value][shard];
}

void emit_set_shard(ppcc_emit_ctx *c, int value, int shard, MlirValue v) {
  if (!c->shards[value]) {
    int n = c->g->values[value].layout.count;
    c->shards[value] = calloc((size_t)(n > 0 ? n : 1), sizeof(MlirValue));
    if (!c->shards[value]) return; /* checked by emit_lower_all_ops */
  }
  c->shards[value][shard] = v;
}

ppcc_status emit_check_results_defined(ppcc_emit_ctx *c, const ppcc_op *op) {
  for (int k = 0; k < op->n_out; k++) {
    const ppcc_value *v = &c->g->values[op->out[k]];
    for (int i = 0; i < v->layout.count; i++)
      if (mlirValueIsNull(emit_shard(c, op->out[k], i)))
        return emit_op_error(c, op, "lowering left shard %d of '%s' undefined", i, v->name);
  }
  return PPCC_OK;
}

ppcc_status emit_check_values(ppcc_emit_ctx *c) {
  for (int i = 0; i < c->g->n_values; i++) {
    MlirType t;
    const ppcc_value *v = &c->g->values[i];
    /* quantized params: only the executable form computes with them (the
     * runtime's quantized kernels); IREE and the annotated form have none */
    if (ppcc_dtype_is_quantized(v->dtype) && c->kind != PPCC_EMIT_MLIR_EXEC)
      return ppcc_error(c->d, "param '%s' is %s (block-quantized): the annotated and IREE forms take f32, f16 or "
                              "bf16 params (import with --dtype f32 to dequantize it, or run it with ppcc run)",
                        v->name, ppcc_dtype_name(v->dtype));
    if (ppcc_dtype_is_quantized(v->dtype)) continue;
    if (!emit_elem_type(c, v->dtype, &t))
      return ppcc_error(c->d, "value '%s': dtype %s has no MLIR mapping", v->name, ppcc_dtype_name(v->dtype));
    if (!v->devices || v->layout.count < 1)
      return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "value '%s' has no placement; run the passes first",
                               v->name);
  }
  return PPCC_OK;
}
