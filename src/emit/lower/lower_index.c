/* index_copy / index_put (DESIGN P7): dest[.., index[j], ..] = src[.., j, ..]
 * along `dim`, per shard. Lowered to an scf.for over the index carrying the
 * destination tensor: extract the index, slice row j of the source, insert
 * it at that position. An index outside [0, D) is a run-time error
 * (emit_check_index, the interpreter's message); the loop clamps it to 0
 * so that nothing is written out of bounds before the run stops. */
#include "emit_internal.h"

ppcc_status lower_index_copy(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);

/* Static offsets marked dynamic are taken from the operand list: dim `dim`
 * at pos, and dim 0 at row when row is not null (a per-row index). */
static MlirValue slice_op(ppcc_emit_ctx *c, MlirBlock b, bool insert, MlirValue src, MlirValue dest,
                          MlirType sliced, int dim, MlirValue pos, MlirValue row) {
  int rank = (int)mlirShapedTypeGetRank(insert ? mlirValueGetType(dest) : mlirValueGetType(src));
  bool has_row = !mlirValueIsNull(row);
  int64_t offsets[PPCC_MAX_RANK], sizes[PPCC_MAX_RANK], strides[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    offsets[i] = i == dim || (i == 0 && has_row) ? mlirShapedTypeGetDynamicStrideOrOffset() : 0;
    sizes[i] = mlirShapedTypeGetDimSize(sliced, i);
    strides[i] = 1;
  }
  int32_t n_dyn = has_row ? 2 : 1;
  int32_t seg_insert[5] = {1, 1, n_dyn, 0, 0}, seg_extract[4] = {1, n_dyn, 0, 0};
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "static_offsets", emit_i64_array_attr(c, rank, offsets)),
      emit_named(c, "static_sizes", emit_i64_array_attr(c, rank, sizes)),
      emit_named(c, "static_strides", emit_i64_array_attr(c, rank, strides)),
      emit_named(c, "operandSegmentSizes",
                 insert ? mlirDenseI32ArrayGet(c->mctx, 5, seg_insert) : mlirDenseI32ArrayGet(c->mctx, 4, seg_extract)),
  };
  MlirValue operands[4];
  int n = 0;
  operands[n++] = src;
  if (insert) operands[n++] = dest;
  if (has_row) operands[n++] = row; /* dim 0 comes first (dim is 1 then) */
  operands[n++] = pos;
  MlirType result = insert ? mlirValueGetType(dest) : sliced;
  emit_op_spec s = {insert ? "tensor.insert_slice" : "tensor.extract_slice", n, operands, 1, &result, 4, attrs, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

enum { CMPI_SGE = 5, CMPI_SLT = 2 };

static MlirValue compare_int(ppcc_emit_ctx *c, MlirBlock b, int predicate, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  MlirType i1 = mlirIntegerTypeGet(c->mctx, 1);
  MlirNamedAttribute p = emit_named(c, "predicate", emit_i64_attr(c, predicate));
  emit_op_spec s = {"arith.cmpi", 2, ops, 1, &i1, 1, &p, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

/* raw when 0 <= raw < bound, else 0. */
static MlirValue clamp_index(ppcc_emit_ctx *c, MlirBlock b, MlirValue raw, int64_t bound) {
  MlirType t = mlirValueGetType(raw);
  MlirValue zero = emit_int_const(c, b, t, 0);
  MlirValue ok = emit_binary_scalar(c, b, "arith.andi", compare_int(c, b, CMPI_SGE, raw, zero),
                                    compare_int(c, b, CMPI_SLT, raw, emit_int_const(c, b, t, bound)));
  MlirValue ops[3] = {ok, raw, zero};
  emit_op_spec s = {"arith.select", 3, ops, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue index_binary(ppcc_emit_ctx *c, MlirBlock b, const char *name, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  MlirType t = mlirIndexTypeGet(c->mctx);
  emit_op_spec s = {name, 2, ops, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

/* Loop body: %pos = index_cast(clamp(index[%j])); acc[.., %pos, ..] = src[.., %j, ..].
 * A per-row index [B, L] (dim 1): the loop runs over B*L, %j = (row, p) and
 * acc[row, index[row, p], ..] = src[row, p, ..]. */
static void build_body(ppcc_emit_ctx *c, MlirBlock body, MlirValue index, MlirValue src, int dim, int64_t bound) {
  MlirValue j = mlirBlockGetArgument(body, 0), acc = mlirBlockGetArgument(body, 1);
  MlirType it = mlirValueGetType(index);
  bool per_row = mlirShapedTypeGetRank(it) == 2;
  MlirValue row = {NULL}, col = j;
  if (per_row) {
    MlirValue L = emit_index_const(c, body, mlirShapedTypeGetDimSize(it, 1));
    row = index_binary(c, body, "arith.divui", j, L);
    col = index_binary(c, body, "arith.remui", j, L);
  }
  MlirType idx_elem = mlirShapedTypeGetElementType(it);
  MlirValue extract_operands[3] = {index, per_row ? row : col, col};
  emit_op_spec ex = {"tensor.extract", per_row ? 3 : 2, extract_operands, 1, &idx_elem, 0, NULL, 0};
  MlirValue raw = clamp_index(c, body, mlirOperationGetResult(emit_op_in(c, body, &ex), 0), bound);
  MlirType index_type = mlirIndexTypeGet(c->mctx);
  emit_op_spec cast = {"arith.index_cast", 1, &raw, 1, &index_type, 0, NULL, 0};
  MlirValue pos = mlirOperationGetResult(emit_op_in(c, body, &cast), 0);

  MlirType st = mlirValueGetType(src);
  int rank = (int)mlirShapedTypeGetRank(st);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = i == dim || (i == 0 && per_row) ? 1 : mlirShapedTypeGetDimSize(st, i);
  MlirType row_type = mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(st), mlirAttributeGetNull());
  MlirValue slice = slice_op(c, body, false, src, (MlirValue){NULL}, row_type, dim, col, row);
  MlirValue updated = slice_op(c, body, true, slice, acc, row_type, dim, pos, row);
  emit_op_spec y = {"scf.yield", 1, &updated, 0, NULL, 0, NULL, 0};
  emit_op_in(c, body, &y);
}

ppcc_status lower_index_copy(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *dst_v = &g->values[op->in[0]], *idx_v = &g->values[op->in[1]];
  int dim = (int)ppcc_attr_int(op, "dim", 0);
  MlirValue dest = emit_shard(c, op->in[0], shard);
  MlirValue index = emit_shard(c, op->in[1], idx_v->layout.count == 1 ? 0 : shard);
  MlirValue src = emit_shard(c, op->in[2], g->values[op->in[2]].layout.count == 1 ? 0 : shard);
  /* A replicated source next to a split destination: take this shard's part. */
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(dst_v, local);
  if (dst_v->layout.kind == PPCC_LAYOUT_SPLIT &&
      mlirShapedTypeGetDimSize(mlirValueGetType(src), dst_v->layout.dim) != local[dst_v->layout.dim])
    src = emit_slice(c, src, dst_v->layout.dim, shard * local[dst_v->layout.dim], local[dst_v->layout.dim]);

  int64_t rows = mlirShapedTypeGetDimSize(mlirValueGetType(dest), dim);
  ppcc_status st = emit_check_index(c, index, rows, EXEC_INDEX);
  if (st) return st;
  /* No row to write into: every index fails the check, and the loop must
   * not run (its clamped index 0 would still be out of bounds). */
  int64_t trips = rows > 0 ? idx_v->shape[0] * (idx_v->rank == 2 ? idx_v->shape[1] : 1) : 0;
  if (idx_v->rank == 2 && mlirShapedTypeGetDimSize(mlirValueGetType(dest), 0) != idx_v->shape[0])
    return emit_op_error(c, op, "a per-row index needs the destination's batch rows whole");
  /* Executable form: the loop starts from a copy of the destination into
   * an empty tensor, which the kernel's result buffer replaces
   * (eliminate-empty-tensors): one memcpy, then the rows written in place,
   * instead of a copy into a new buffer and that buffer into the result.
   * The result buffer may be the destination itself (a KV cache updated
   * in place: ppcc_state_update_output), where the memcpy copies nothing. */
  if (c->runtime_calls) {
    MlirType tt = mlirValueGetType(dest);
    emit_op_spec e = {"tensor.empty", 0, NULL, 1, &tt, 0, NULL, 0};
    MlirValue ops[2] = {dest, mlirOperationGetResult(emit_op(c, &e), 0)};
    emit_op_spec m = {"bufferization.materialize_in_destination", 2, ops, 1, &tt, 0, NULL, 0};
    dest = mlirOperationGetResult(emit_op(c, &m), 0);
  }
  MlirValue bounds[4] = {emit_index_const(c, c->block, 0), emit_index_const(c, c->block, trips),
                         emit_index_const(c, c->block, 1), dest};
  MlirType t = mlirValueGetType(dest);
  emit_op_spec loop = {"scf.for", 4, bounds, 1, &t, 0, NULL, 1};
  MlirOperation for_op = emit_op(c, &loop);
  MlirType arg_types[2] = {mlirIndexTypeGet(c->mctx), t};
  MlirLocation arg_locs[2] = {c->op_loc, c->op_loc};
  MlirBlock body = mlirBlockCreate(2, arg_types, arg_locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(for_op, 0), body);
  build_body(c, body, index, src, dim, rows);
  emit_set_shard(c, op->out[0], shard, mlirOperationGetResult(for_op, 0));
  return PPCC_OK;
}
