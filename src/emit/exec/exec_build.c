/* Builders of the executable form: runtime declarations at the module top,
 * and the memref / bufferization / func.call ops around runtime calls.
 * Device bodies stay in tensor form; buffers appear only where a runtime
 * function reads or writes memory, and One-Shot Bufferize resolves the
 * rest when the JIT lowers the module. */
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"

MlirBlock exec_block(ppcc_emit_ctx *c, int device) {
  c->block = c->exec->blocks[device];
  return c->block;
}

bool exec_is_declared(const ppcc_emit_ctx *c, const char *name) {
  for (int i = 0; i < c->exec->n_declared; i++)
    if (strcmp(c->exec->declared[i], name) == 0) return true;
  return false;
}

ppcc_status exec_mark_declared(ppcc_emit_ctx *c, const char *name) {
  exec_state *x = c->exec;
  if (x->n_declared == x->cap_declared) {
    int cap = x->cap_declared ? 2 * x->cap_declared : 16;
    char **p = realloc(x->declared, sizeof *p * (size_t)cap);
    if (!p) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
    x->declared = p;
    x->cap_declared = cap;
  }
  x->declared[x->n_declared] = strdup(name);
  if (!x->declared[x->n_declared]) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  x->n_declared++;
  return PPCC_OK;
}

/* Declarations and globals go before the device functions, in first-use
 * order, so the text is stable. */
void exec_insert_global(ppcc_emit_ctx *c, MlirOperation op) {
  MlirBlock body = mlirModuleGetBody(c->module);
  if (mlirOperationIsNull(c->exec->anchor))
    mlirBlockInsertOwnedOperation(body, 0, op);
  else
    mlirBlockInsertOwnedOperationAfter(body, c->exec->anchor, op);
  c->exec->anchor = op;
}

ppcc_status exec_declare(ppcc_emit_ctx *c, const char *name, int n, const MlirType *types) {
  if (exec_is_declared(c, name)) return PPCC_OK;
  MlirType fn_type = mlirFunctionTypeGet(c->mctx, n, types, 0, NULL);
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "sym_name", emit_string_attr(c, name)),
      emit_named(c, "function_type", mlirTypeAttrGet(fn_type)),
      emit_named(c, "sym_visibility", emit_string_attr(c, "private")),
      emit_named(c, "llvm.emit_c_interface", mlirUnitAttrGet(c->mctx)),
  };
  MlirOperationState st = mlirOperationStateGet(emit_str("func.func"), mlirLocationUnknownGet(c->mctx));
  mlirOperationStateAddAttributes(&st, 4, attrs);
  MlirRegion body = mlirRegionCreate(); /* empty: an external function */
  mlirOperationStateAddOwnedRegions(&st, 1, &body);
  exec_insert_global(c, mlirOperationCreate(&st));
  return exec_mark_declared(c, name);
}

MlirType exec_memref_type(ppcc_emit_ctx *c, MlirType tensor_type) {
  int rank = (int)mlirShapedTypeGetRank(tensor_type);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(tensor_type, i);
  return mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(tensor_type), rank, shape, mlirAttributeGetNull());
}

MlirType exec_unranked_type(ppcc_emit_ctx *c, MlirType elem) {
  return mlirUnrankedMemRefTypeGet(elem, mlirAttributeGetNull());
}

MlirValue exec_i64(ppcc_emit_ctx *c, int64_t v) {
  return emit_int_const(c, c->block, mlirIntegerTypeGet(c->mctx, 64), v);
}

static MlirValue result0(MlirOperation op) { return mlirOperationGetResult(op, 0); }

MlirValue exec_alloc(ppcc_emit_ctx *c, MlirType tensor_type) {
  MlirType t = exec_memref_type(c, tensor_type);
  int32_t seg[2] = {0, 0}; /* no dynamic sizes, no symbols */
  MlirNamedAttribute attrs[2] = {
      emit_named(c, "operandSegmentSizes", mlirDenseI32ArrayGet(c->mctx, 2, seg)),
      emit_named(c, "alignment", emit_i64_attr(c, 64)),
  };
  emit_op_spec s = {"memref.alloc", 0, NULL, 1, &t, 2, attrs, 0};
  return result0(emit_op(c, &s));
}

MlirValue exec_to_memref(ppcc_emit_ctx *c, MlirValue tensor) {
  MlirType t = exec_memref_type(c, mlirValueGetType(tensor));
  MlirNamedAttribute ro = emit_named(c, "read_only", mlirUnitAttrGet(c->mctx));
  emit_op_spec s = {"bufferization.to_memref", 1, &tensor, 1, &t, 1, &ro, 0};
  return result0(emit_op(c, &s));
}

MlirValue exec_to_tensor(ppcc_emit_ctx *c, MlirValue memref, bool writable) {
  MlirType mt = mlirValueGetType(memref);
  int rank = (int)mlirShapedTypeGetRank(mt);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(mt, i);
  MlirType t = mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(mt), mlirAttributeGetNull());
  MlirNamedAttribute attrs[2] = {emit_named(c, "restrict", mlirUnitAttrGet(c->mctx)),
                                 emit_named(c, "writable", mlirUnitAttrGet(c->mctx))};
  emit_op_spec s = {"bufferization.to_tensor", 1, &memref, 1, &t, writable ? 2 : 1, attrs, 0};
  return result0(emit_op(c, &s));
}

void exec_materialize(ppcc_emit_ctx *c, MlirValue tensor, MlirValue memref) {
  MlirValue operands[2] = {tensor, memref};
  MlirNamedAttribute attrs[2] = {emit_named(c, "restrict", mlirUnitAttrGet(c->mctx)),
                                 emit_named(c, "writable", mlirUnitAttrGet(c->mctx))};
  emit_op_spec s = {"bufferization.materialize_in_destination", 2, operands, 0, NULL, 2, attrs, 0};
  emit_op(c, &s);
}

MlirValue exec_unranked(ppcc_emit_ctx *c, MlirValue memref) {
  MlirType t = exec_unranked_type(c, mlirShapedTypeGetElementType(mlirValueGetType(memref)));
  emit_op_spec s = {"memref.cast", 1, &memref, 1, &t, 0, NULL, 0};
  return result0(emit_op(c, &s));
}

MlirValue exec_static_view(ppcc_emit_ctx *c, MlirValue memref) {
  MlirType mt = mlirValueGetType(memref);
  int rank = (int)mlirShapedTypeGetRank(mt);
  int64_t shape[PPCC_MAX_RANK], strides[PPCC_MAX_RANK], zero = 0;
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(mt, i);
  for (int i = rank - 1, s = 1; i >= 0; s *= shape[i], i--) strides[i] = s;
  MlirAttribute layout = mlirStridedLayoutAttrGet(c->mctx, 0, rank, strides);
  MlirType t = mlirMemRefTypeGet(mlirShapedTypeGetElementType(mt), rank, shape, layout, mlirAttributeGetNull());
  int32_t seg[4] = {1, 0, 0, 0};
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "operandSegmentSizes", mlirDenseI32ArrayGet(c->mctx, 4, seg)),
      emit_named(c, "static_offsets", mlirDenseI64ArrayGet(c->mctx, 1, &zero)),
      emit_named(c, "static_sizes", mlirDenseI64ArrayGet(c->mctx, rank, shape)),
      emit_named(c, "static_strides", mlirDenseI64ArrayGet(c->mctx, rank, strides)),
  };
  emit_op_spec s = {"memref.reinterpret_cast", 1, &memref, 1, &t, 4, attrs, 0};
  return result0(emit_op(c, &s));
}

MlirValue exec_copy_to_buffer(ppcc_emit_ctx *c, MlirValue tensor) {
  MlirValue buf = exec_alloc(c, mlirValueGetType(tensor));
  exec_materialize(c, tensor, buf);
  return buf;
}

ppcc_status exec_call(ppcc_emit_ctx *c, const char *name, int n, const MlirValue *operands) {
  MlirType types[16];
  if (n > 16) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "runtime call with %d operands", n);
  for (int i = 0; i < n; i++) types[i] = mlirValueGetType(operands[i]);
  ppcc_status st = exec_declare(c, name, n, types);
  if (st) return st;
  MlirNamedAttribute callee = emit_named(c, "callee", mlirFlatSymbolRefAttrGet(c->mctx, emit_str(name)));
  emit_op_spec s = {"func.call", n, operands, 0, NULL, 1, &callee, 0};
  emit_op(c, &s);
  return PPCC_OK;
}

int exec_dtype_of(MlirType elem) {
  if (mlirTypeIsAF32(elem)) return PPCC_F32;
  if (mlirTypeIsAF16(elem)) return PPCC_F16;
  if (mlirTypeIsABF16(elem)) return PPCC_BF16;
  if (!mlirTypeIsAInteger(elem)) return -1;
  switch (mlirIntegerTypeGetWidth(elem)) {
  case 64: return PPCC_I64;
  case 32: return PPCC_I32;
  case 8: return PPCC_I8;
  case 1: return PPCC_BOOL;
  default: return -1;
  }
}
