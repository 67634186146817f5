/* Small builders over the MLIR C API: types, attributes, generic op
 * creation, linalg.generic / named ops and a few tensor ops. */
#include <stdlib.h>
#include <string.h>
#include <mlir-c/Dialect/Linalg.h>
#include "emit_internal.h"
#include "ppcc/quant.h"

MlirStringRef emit_str(const char *s) { return mlirStringRefCreateFromCString(s); }

bool emit_elem_type(ppcc_emit_ctx *c, ppcc_dtype t, MlirType *out) {
  switch (t) {
  case PPCC_F32: *out = mlirF32TypeGet(c->mctx); return true;
  case PPCC_F16: *out = mlirF16TypeGet(c->mctx); return true;
  case PPCC_BF16: *out = mlirBF16TypeGet(c->mctx); return true;
  case PPCC_I64: *out = mlirIntegerTypeGet(c->mctx, 64); return true;
  case PPCC_I32: *out = mlirIntegerTypeGet(c->mctx, 32); return true;
  case PPCC_I8: *out = mlirIntegerTypeGet(c->mctx, 8); return true;
  case PPCC_BOOL: *out = mlirIntegerTypeGet(c->mctx, 1); return true;
  default: break;
  }
  return false;
}

/* Callers have checked the dtype with emit_elem_type (emit_check_values checks
 * every value up front), so a failure here is an internal error. */
MlirType emit_tensor_type(ppcc_emit_ctx *c, ppcc_dtype t, int rank, const int64_t *shape) {
  MlirType elem;
  const ppcc_block_format *f = ppcc_dtype_blocks(t);
  if (f && rank > 0) { /* a quantized param: its stored bytes, rows of whole blocks (executable form only) */
    int64_t bytes[PPCC_MAX_RANK];
    memcpy(bytes, shape, sizeof(int64_t) * (size_t)rank);
    bytes[rank - 1] = shape[rank - 1] / f->block * f->bytes;
    return mlirRankedTensorTypeGet(rank, bytes, mlirIntegerTypeGet(c->mctx, 8), mlirAttributeGetNull());
  }
  if (!emit_elem_type(c, t, &elem)) return (MlirType){NULL};
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
}

MlirType emit_shard_type(ppcc_emit_ctx *c, const ppcc_value *v) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(v, local);
  return emit_tensor_type(c, v->dtype, v->rank, local);
}

MlirAttribute emit_i64_attr(ppcc_emit_ctx *c, int64_t v) {
  return mlirIntegerAttrGet(mlirIntegerTypeGet(c->mctx, 64), v);
}

MlirAttribute emit_i64_array_attr(ppcc_emit_ctx *c, int n, const int64_t *v) {
  return mlirDenseI64ArrayGet(c->mctx, n, v);
}

MlirAttribute emit_devices_attr(ppcc_emit_ctx *c, int n, const int *devices) {
  int64_t tmp[64] = {0};
  int64_t *v = n <= 64 ? tmp : malloc(sizeof *v * (size_t)n);
  if (!v) return mlirAttributeGetNull();
  for (int i = 0; i < n; i++) v[i] = devices[i];
  MlirAttribute a = emit_i64_array_attr(c, n, v);
  if (v != tmp) free(v);
  return a;
}

MlirAttribute emit_string_attr(ppcc_emit_ctx *c, const char *s) {
  return mlirStringAttrGet(c->mctx, emit_str(s));
}

MlirNamedAttribute emit_named(ppcc_emit_ctx *c, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(c->mctx, emit_str(name)), a);
}

MlirLocation emit_name_loc(ppcc_emit_ctx *c, const char *name) {
  return mlirLocationNameGet(c->mctx, emit_str(name), mlirLocationUnknownGet(c->mctx));
}

MlirOperation emit_op_in(ppcc_emit_ctx *c, MlirBlock block, const emit_op_spec *s) {
  MlirOperationState st = mlirOperationStateGet(emit_str(s->name), c->op_loc);
  if (s->n_operands) mlirOperationStateAddOperands(&st, s->n_operands, s->operands);
  if (s->n_results) mlirOperationStateAddResults(&st, s->n_results, s->results);
  if (s->n_attrs) mlirOperationStateAddAttributes(&st, s->n_attrs, s->attrs);
  MlirRegion regions[2];
  for (int i = 0; i < s->n_regions && i < 2; i++) regions[i] = mlirRegionCreate();
  if (s->n_regions) mlirOperationStateAddOwnedRegions(&st, s->n_regions, regions);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockAppendOwnedOperation(block, op);
  if (mlirBlockEqual(block, c->block)) c->last_op = op;
  return op;
}

MlirOperation emit_op(ppcc_emit_ctx *c, const emit_op_spec *s) { return emit_op_in(c, c->block, s); }

static MlirValue single_result(MlirOperation op) { return mlirOperationGetResult(op, 0); }

MlirValue emit_float_const(ppcc_emit_ctx *c, MlirBlock block, MlirType t, double v) {
  MlirNamedAttribute value = emit_named(c, "value", mlirFloatAttrDoubleGet(c->mctx, t, v));
  emit_op_spec s = {"arith.constant", 0, NULL, 1, &t, 1, &value, 0};
  return single_result(emit_op_in(c, block, &s));
}

MlirValue emit_int_const(ppcc_emit_ctx *c, MlirBlock block, MlirType t, int64_t v) {
  MlirNamedAttribute value = emit_named(c, "value", mlirIntegerAttrGet(t, v));
  emit_op_spec s = {"arith.constant", 0, NULL, 1, &t, 1, &value, 0};
  return single_result(emit_op_in(c, block, &s));
}

MlirValue emit_index_const(ppcc_emit_ctx *c, MlirBlock block, int64_t v) {
  return emit_int_const(c, block, mlirIndexTypeGet(c->mctx), v);
}

MlirValue emit_binary_scalar(ppcc_emit_ctx *c, MlirBlock block, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  MlirType t = mlirValueGetType(a);
  emit_op_spec s = {name, 2, ops, 1, &t, 0, NULL, 0};
  return single_result(emit_op_in(c, block, &s));
}

MlirValue emit_unary_scalar(ppcc_emit_ctx *c, MlirBlock block, const char *name, MlirValue a) {
  MlirType t = mlirValueGetType(a);
  emit_op_spec s = {name, 1, &a, 1, &t, 0, NULL, 0};
  return single_result(emit_op_in(c, block, &s));
}

MlirValue emit_empty(ppcc_emit_ctx *c, MlirType tensor_type) {
  emit_op_spec s = {"tensor.empty", 0, NULL, 1, &tensor_type, 0, NULL, 0};
  return single_result(emit_op(c, &s));
}

static MlirAttribute segment_sizes(ppcc_emit_ctx *c, int n, const int32_t *sizes) {
  return mlirDenseI32ArrayGet(c->mctx, n, sizes);
}

MlirValue emit_named_linalg(ppcc_emit_ctx *c, const char *name, int n_in, const MlirValue *ins,
                            MlirValue init) {
  MlirValue operands[8];
  for (int i = 0; i < n_in; i++) operands[i] = ins[i];
  operands[n_in] = init;
  MlirType t = mlirValueGetType(init);
  int32_t seg[2] = {n_in, 1};
  MlirNamedAttribute attr = emit_named(c, "operandSegmentSizes", segment_sizes(c, 2, seg));
  emit_op_spec s = {name, n_in + 1, operands, 1, &t, 1, &attr, 1};
  MlirOperation op = emit_op(c, &s);
  mlirLinalgFillBuiltinNamedOpRegion(op); /* the scalar body MLIR defines for it */
  return single_result(op);
}

MlirValue emit_zeros(ppcc_emit_ctx *c, MlirType tensor_type) {
  MlirType elem = mlirShapedTypeGetElementType(tensor_type);
  MlirValue zero = mlirTypeIsAInteger(elem) ? emit_int_const(c, c->block, elem, 0)
                                            : emit_float_const(c, c->block, elem, 0.0);
  return emit_named_linalg(c, "linalg.fill", 1, &zero, emit_empty(c, tensor_type));
}

/* A linalg.generic of n_out results (inits; maps: the inputs', then the
 * results'), the last n_reduction_tail loops reductions; *body its block,
 * for the caller's scalar ops and yield. */
static MlirOperation generic_op(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, int n_out, const MlirValue *inits,
                                int n_loops, int n_reduction_tail, const MlirAffineMap *maps, MlirBlock *body) {
  MlirAttribute map_attrs[8], iters[PPCC_MAX_RANK * 2 + 2];
  MlirValue operands[8];
  int n = n_in + n_out;
  for (int i = 0; i < n; i++) map_attrs[i] = mlirAffineMapAttrGet(maps[i]);
  for (int i = 0; i < n_loops; i++)
    iters[i] = i < n_loops - n_reduction_tail ? c->iter_parallel : c->iter_reduction;
  for (int i = 0; i < n; i++) operands[i] = i < n_in ? ins[i] : inits[i - n_in];
  int32_t seg[2] = {n_in, n_out};
  MlirNamedAttribute attrs[3] = {
      emit_named(c, "indexing_maps", mlirArrayAttrGet(c->mctx, n, map_attrs)),
      emit_named(c, "iterator_types", mlirArrayAttrGet(c->mctx, n_loops, iters)),
      emit_named(c, "operandSegmentSizes", segment_sizes(c, 2, seg)),
  };
  MlirType t[2];
  for (int i = 0; i < n_out; i++) t[i] = mlirValueGetType(inits[i]);
  emit_op_spec s = {"linalg.generic", n, operands, n_out, t, 3, attrs, 1};
  MlirOperation op = emit_op(c, &s);

  MlirType arg_types[8];
  MlirLocation arg_locs[8];
  for (int i = 0; i < n; i++) {
    arg_types[i] = mlirShapedTypeGetElementType(mlirValueGetType(operands[i]));
    arg_locs[i] = c->op_loc;
  }
  *body = mlirBlockCreate(n, arg_types, arg_locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(op, 0), *body);
  return op;
}

MlirValue emit_generic(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirValue init,
                       int n_loops, int n_reduction_tail, const MlirAffineMap *maps,
                       emit_body_fn body_fn, void *user) {
  MlirBlock body;
  MlirOperation op = generic_op(c, n_in, ins, 1, &init, n_loops, n_reduction_tail, maps, &body);
  MlirValue yielded = body_fn(c, body, user);
  emit_op_spec y = {"linalg.yield", 1, &yielded, 0, NULL, 0, NULL, 0};
  emit_op_in(c, body, &y);
  return single_result(op);
}

/* emit_generic of parallel loops with two results: one loop nest computes
 * both, so that LLVM sees, e.g., sin and cos of one angle together (one
 * sincos call). */
void emit_generic2(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, const MlirValue inits[2], int n_loops,
                   const MlirAffineMap *maps, emit_body2_fn body_fn, void *user, MlirValue results[2]) {
  MlirBlock body;
  MlirOperation op = generic_op(c, n_in, ins, 2, inits, n_loops, 0, maps, &body);
  MlirValue yielded[2];
  body_fn(c, body, user, yielded);
  emit_op_spec y = {"linalg.yield", 2, yielded, 0, NULL, 0, NULL, 0};
  emit_op_in(c, body, &y);
  results[0] = mlirOperationGetResult(op, 0);
  results[1] = mlirOperationGetResult(op, 1);
}

/* Map of an operand of shape `in` (rank ri) broadcast to `out` (rank ro):
 * leading dims dropped, size-1 dims read at index 0 (numpy rules). */
static MlirAffineMap broadcast_map(ppcc_emit_ctx *c, int ri, const int64_t *in, int ro, const int64_t *out) {
  MlirAffineExpr exprs[PPCC_MAX_RANK];
  for (int j = 0; j < ri; j++) {
    int i = j + (ro - ri);
    exprs[j] = in[j] == 1 && out[i] != 1 ? mlirAffineConstantExprGet(c->mctx, 0)
                                         : mlirAffineDimExprGet(c->mctx, i);
  }
  return mlirAffineMapGet(c->mctx, ro, 0, ri, exprs);
}

MlirValue emit_elementwise(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirType type,
                           emit_body_fn body_fn, void *user) {
  int ro = (int)mlirShapedTypeGetRank(type);
  int64_t out[PPCC_MAX_RANK], in[PPCC_MAX_RANK];
  for (int i = 0; i < ro; i++) out[i] = mlirShapedTypeGetDimSize(type, i);
  MlirAffineMap maps[8];
  for (int k = 0; k < n_in; k++) {
    MlirType t = mlirValueGetType(ins[k]);
    int ri = (int)mlirShapedTypeGetRank(t);
    for (int j = 0; j < ri; j++) in[j] = mlirShapedTypeGetDimSize(t, j);
    maps[k] = broadcast_map(c, ri, in, ro, out);
  }
  maps[n_in] = mlirAffineMapMultiDimIdentityGet(c->mctx, ro);
  return emit_generic(c, n_in, ins, emit_empty(c, type), ro, 0, maps, body_fn, user);
}

MlirValue emit_slice(ppcc_emit_ctx *c, MlirValue src, int dim, int64_t offset, int64_t size) {
  MlirType t = mlirValueGetType(src);
  int rank = (int)mlirShapedTypeGetRank(t);
  int64_t offsets[PPCC_MAX_RANK], sizes[PPCC_MAX_RANK], strides[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    offsets[i] = i == dim ? offset : 0;
    sizes[i] = i == dim ? size : mlirShapedTypeGetDimSize(t, i);
    strides[i] = 1;
  }
  MlirType rt = mlirRankedTensorTypeGet(rank, sizes, mlirShapedTypeGetElementType(t), mlirAttributeGetNull());
  int32_t seg[4] = {1, 0, 0, 0};
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "static_offsets", emit_i64_array_attr(c, rank, offsets)),
      emit_named(c, "static_sizes", emit_i64_array_attr(c, rank, sizes)),
      emit_named(c, "static_strides", emit_i64_array_attr(c, rank, strides)),
      emit_named(c, "operandSegmentSizes", segment_sizes(c, 4, seg)),
  };
  emit_op_spec s = {"tensor.extract_slice", 1, &src, 1, &rt, 4, attrs, 0};
  return single_result(emit_op(c, &s));
}

MlirValue emit_insert_slice(ppcc_emit_ctx *c, MlirValue src, MlirValue dest, int dim, int64_t offset) {
  MlirType st = mlirValueGetType(src), dt = mlirValueGetType(dest);
  int rank = (int)mlirShapedTypeGetRank(st);
  int64_t offsets[PPCC_MAX_RANK], sizes[PPCC_MAX_RANK], strides[PPCC_MAX_RANK];
  for (int r = 0; r < rank; r++) {
    offsets[r] = r == dim ? offset : 0;
    sizes[r] = mlirShapedTypeGetDimSize(st, r);
    strides[r] = 1;
  }
  int32_t seg[5] = {1, 1, 0, 0, 0};
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "static_offsets", emit_i64_array_attr(c, rank, offsets)),
      emit_named(c, "static_sizes", emit_i64_array_attr(c, rank, sizes)),
      emit_named(c, "static_strides", emit_i64_array_attr(c, rank, strides)),
      emit_named(c, "operandSegmentSizes", segment_sizes(c, 5, seg)),
  };
  MlirValue operands[2] = {src, dest};
  emit_op_spec s = {"tensor.insert_slice", 2, operands, 1, &dt, 4, attrs, 0};
  return single_result(emit_op(c, &s));
}

MlirValue emit_concat_by_inserts(ppcc_emit_ctx *c, int dim, int n, const MlirValue *parts, MlirType result) {
  MlirValue acc = emit_empty(c, result);
  int64_t offset = 0;
  for (int i = 0; i < n; i++) {
    acc = emit_insert_slice(c, parts[i], acc, dim, offset);
    offset += mlirShapedTypeGetDimSize(mlirValueGetType(parts[i]), dim);
  }
  return acc;
}

MlirValue emit_concat(ppcc_emit_ctx *c, int dim, int n, const MlirValue *parts, MlirType result) {
  MlirNamedAttribute attr = emit_named(c, "dim", emit_i64_attr(c, dim));
  emit_op_spec s = {"tensor.concat", n, parts, 1, &result, 1, &attr, 0};
  return single_result(emit_op(c, &s));
}

/* ---- f16/bf16 computed in f32 (DESIGN §7: accumulate in f32, round once) ---- */
static MlirValue convert_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = mlirBlockGetArgument(b, 0);
  MlirType to = *(const MlirType *)user;
  bool widen = mlirFloatTypeGetWidth(to) > mlirFloatTypeGetWidth(mlirValueGetType(x));
  emit_op_spec s = {widen ? "arith.extf" : "arith.truncf", 1, &x, 1, &to, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

MlirValue emit_convert_floats(ppcc_emit_ctx *c, MlirValue v, MlirType elem) {
  MlirType t = mlirValueGetType(v), from = mlirShapedTypeGetElementType(t);
  if (mlirTypeEqual(from, elem) || !mlirTypeIsAFloat(from) || !mlirTypeIsAFloat(elem)) return v;
  int rank = (int)mlirShapedTypeGetRank(t);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(t, i);
  MlirType to = mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
  return emit_elementwise(c, 1, &v, to, convert_body, &elem);
}

MlirValue emit_to_f32(ppcc_emit_ctx *c, MlirValue v) { return emit_convert_floats(c, v, mlirF32TypeGet(c->mctx)); }
