/* Lowerings of sqrt, reciprocal, erf and log: one elementwise
 * linalg.generic whose body is the math/arith scalar op. Float only, like
 * their kernels. */
#include <math.h>
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

/* pow: math.powf on two float tensors with numpy broadcasting. */
ppcc_status lower_onnx_pow(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *a = &g->values[op->in[0]], *b = &g->values[op->in[1]], *out = &g->values[op->out[0]];
  if (!ppcc_dtype_is_float(a->dtype) || !ppcc_dtype_is_float(b->dtype))
    return emit_op_error(c, op, "op '%s' has no MLIR lowering for dtype %s", op->info->name, ppcc_dtype_name(a->dtype));
  /* f16/bf16 compute in f32 and round once, as the interpreter does. */
  MlirValue x = emit_to_f32(c, emit_shard(c, op->in[0], a->layout.count == 1 ? 0 : shard));
  MlirValue y = emit_to_f32(c, emit_shard(c, op->in[1], b->layout.count == 1 ? 0 : shard));
  MlirType t = emit_shard_type(c, out);
  int rank = (int)mlirShapedTypeGetRank(t);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(t, i);
  MlirType t32 = mlirRankedTensorTypeGet(rank, shape, mlirF32TypeGet(c->mctx), mlirAttributeGetNull());
  MlirValue r = emit_binary_tensor(c, "math.powf", x, y, t32, shard);
  emit_set_shard(c, op->out[0], shard, emit_convert_floats(c, r, mlirShapedTypeGetElementType(t)));
  return PPCC_OK;
}

/* arith.cmpf / arith.cmpi predicates (their enum values in MLIR). */
enum { CMPF_OEQ = 1, CMPF_OGT = 2, CMPF_OLT = 4, CMPI_EQ = 0, CMPI_SLT = 2, CMPI_SGT = 4, CMPI_ULT = 6, CMPI_UGT = 8 };

static MlirValue compare_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  int predicate = *(const int *)user;
  MlirValue ops[2] = {mlirBlockGetArgument(b, 0), mlirBlockGetArgument(b, 1)};
  bool is_float = !mlirTypeIsAInteger(mlirValueGetType(ops[0]));
  MlirType i1 = mlirIntegerTypeGet(c->mctx, 1);
  MlirNamedAttribute p = emit_named(c, "predicate", emit_i64_attr(c, predicate));
  emit_op_spec s = {is_float ? "arith.cmpf" : "arith.cmpi", 2, ops, 1, &i1, 1, &p, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

/* equal/less/greater: ordered float compares (NaN gives false), signed
 * integer compares, and bool compared as 0/1 (unsigned i1). */
ppcc_status lower_onnx_compare(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                               ppcc_diag *d) {
  const ppcc_value *a = &g->values[op->in[0]], *b = &g->values[op->in[1]], *out = &g->values[op->out[0]];
  bool f = ppcc_dtype_is_float(a->dtype), u = a->dtype == PPCC_BOOL;
  int predicate;
  switch (op->info->id) {
  case PPCC_OP_equal: predicate = f ? CMPF_OEQ : CMPI_EQ; break;
  case PPCC_OP_less: predicate = f ? CMPF_OLT : u ? CMPI_ULT : CMPI_SLT; break;
  case PPCC_OP_greater: predicate = f ? CMPF_OGT : u ? CMPI_UGT : CMPI_SGT; break;
  default: return emit_op_error(c, op, "op '%s' is not lowered by lower_onnx_compare", op->info->name);
  }
  MlirValue ins[2] = {emit_shard(c, op->in[0], a->layout.count == 1 ? 0 : shard),
                      emit_shard(c, op->in[1], b->layout.count == 1 ? 0 : shard)};
  emit_set_shard(c, op->out[0], shard,
                 emit_elementwise_shard(c, 2, ins, emit_shard_type(c, out), shard, compare_body, &predicate));
  return PPCC_OK;
}

static MlirValue select_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue ops[3] = {mlirBlockGetArgument(b, 0), mlirBlockGetArgument(b, 1), mlirBlockGetArgument(b, 2)};
  MlirType t = mlirValueGetType(ops[1]);
  emit_op_spec s = {"arith.select", 3, ops, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

/* where(cond, x, y): arith.select per element, any dtype. */
ppcc_status lower_onnx_where(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                             ppcc_diag *d) {
  MlirValue ins[3];
  for (int k = 0; k < 3; k++)
    ins[k] = emit_shard(c, op->in[k], g->values[op->in[k]].layout.count == 1 ? 0 : shard);
  emit_set_shard(c, op->out[0], shard,
                 emit_elementwise_shard(c, 3, ins, emit_shard_type(c, &g->values[op->out[0]]), shard, select_body, NULL));
  return PPCC_OK;
}

/* ---- cast (the kernel's rules: kernels_onnx.c) ---- */
enum { CMPF_UNO = 14, CMPF_UNE = 13, CMPI_NE = 1 };

static MlirValue conv(ppcc_emit_ctx *c, MlirBlock b, const char *name, MlirValue x, MlirType t) {
  emit_op_spec s = {name, 1, &x, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue cmp_scalar(ppcc_emit_ctx *c, MlirBlock b, const char *name, int predicate, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  MlirType i1 = mlirIntegerTypeGet(c->mctx, 1);
  MlirNamedAttribute p = emit_named(c, "predicate", emit_i64_attr(c, predicate));
  emit_op_spec s = {name, 2, ops, 1, &i1, 1, &p, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue select3(ppcc_emit_ctx *c, MlirBlock b, MlirValue cond, MlirValue x, MlirValue y) {
  MlirValue ops[3] = {cond, x, y};
  MlirType t = mlirValueGetType(x);
  emit_op_spec s = {"arith.select", 3, ops, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue cast_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirType dt = *(const MlirType *)user, f32 = mlirF32TypeGet(c->mctx);
  MlirValue x = mlirBlockGetArgument(b, 0);
  MlirType st = mlirValueGetType(x);
  if (mlirTypeEqual(st, dt)) return x;
  bool from_float = !mlirTypeIsAInteger(st), to_float = !mlirTypeIsAInteger(dt);
  if (from_float) {
    if (!to_float && mlirIntegerTypeGetWidth(dt) == 1)
      return cmp_scalar(c, b, "arith.cmpf", CMPF_UNE, x, emit_float_const(c, b, st, 0.0));
    MlirValue x32 = mlirTypeIsAF32(st) ? x : conv(c, b, "arith.extf", x, f32);
    if (to_float) return mlirTypeIsAF32(dt) ? x32 : conv(c, b, "arith.truncf", x32, dt);
    unsigned w = mlirIntegerTypeGetWidth(dt);
    double lo = w == 64 ? -9223372036854775808.0 : w == 32 ? -2147483648.0 : -128.0;
    double hi = w == 64 ? 9223371487098961920.0 : w == 32 ? 2147483520.0 : 127.0;
    MlirValue cl = emit_binary_scalar(c, b, "arith.maximumf", x32, emit_float_const(c, b, f32, lo));
    cl = emit_binary_scalar(c, b, "arith.minimumf", cl, emit_float_const(c, b, f32, hi));
    MlirValue i = conv(c, b, "arith.fptosi", cl, dt);
    return select3(c, b, cmp_scalar(c, b, "arith.cmpf", CMPF_UNO, x32, x32), emit_int_const(c, b, dt, 0), i);
  }
  unsigned ws = mlirIntegerTypeGetWidth(st);
  if (to_float) {
    MlirValue f = conv(c, b, ws == 1 ? "arith.uitofp" : "arith.sitofp", x, f32);
    return mlirTypeIsAF32(dt) ? f : conv(c, b, "arith.truncf", f, dt);
  }
  unsigned wd = mlirIntegerTypeGetWidth(dt);
  if (wd == 1) return cmp_scalar(c, b, "arith.cmpi", CMPI_NE, x, emit_int_const(c, b, st, 0));
  if (wd > ws) return conv(c, b, ws == 1 ? "arith.extui" : "arith.extsi", x, dt);
  return conv(c, b, "arith.trunci", x, dt);
}

ppcc_status lower_onnx_cast(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *in = &g->values[op->in[0]], *out = &g->values[op->out[0]];
  MlirValue x = emit_shard(c, op->in[0], in->layout.count == 1 ? 0 : shard);
  MlirType t = emit_shard_type(c, out);
  MlirType elem = mlirShapedTypeGetElementType(t);
  emit_set_shard(c, op->out[0], shard, emit_elementwise(c, 1, &x, t, cast_body, &elem));
  return PPCC_OK;
}

static MlirValue copy_body(ppcc_emit_ctx *c, MlirBlock b, void *user) { return mlirBlockGetArgument(b, 0); }

/* expand: an elementwise copy whose operand map broadcasts it. */
ppcc_status lower_onnx_expand(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                              ppcc_diag *d) {
  const ppcc_value *in = &g->values[op->in[0]];
  MlirValue x = emit_shard(c, op->in[0], in->layout.count == 1 ? 0 : shard);
  emit_set_shard(c, op->out[0], shard, emit_elementwise(c, 1, &x, emit_shard_type(c, &g->values[op->out[0]]), copy_body, NULL));
  return PPCC_OK;
}

/* ---- reduce_max ---- */
static MlirValue max_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  /* maximumf propagates NaN, as the kernel does */
  return emit_binary_scalar(c, b, "arith.maximumf", mlirBlockGetArgument(b, 1), mlirBlockGetArgument(b, 0));
}

/* A linalg.generic whose loops are the kept dims, then the reduced ones,
 * into a -inf filled result of the kept dims; keepdim reshapes it. */
ppcc_status lower_onnx_reduce_max(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                  ppcc_diag *d) {
  const ppcc_value *in = &g->values[op->in[0]], *out = &g->values[op->out[0]];
  if (!ppcc_dtype_is_float(in->dtype))
    return emit_op_error(c, op, "op '%s' has no MLIR lowering for dtype %s", op->info->name, ppcc_dtype_name(in->dtype));
  MlirValue x = emit_shard(c, op->in[0], in->layout.count == 1 ? 0 : shard);
  MlirType xt = mlirValueGetType(x), elem = mlirShapedTypeGetElementType(xt);
  int r = (int)mlirShapedTypeGetRank(xt), k = 0, pos[PPCC_MAX_RANK];
  bool mask[PPCC_MAX_RANK];
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < r; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) mask[a->ints[i] < 0 ? a->ints[i] + r : a->ints[i]] = true;
  int64_t kept[PPCC_MAX_RANK];
  for (int i = 0; i < r; i++)
    if (!mask[i]) kept[k] = mlirShapedTypeGetDimSize(xt, i), pos[i] = k++;
  for (int i = 0, j = k; i < r; i++)
    if (mask[i]) pos[i] = j++;
  MlirAffineExpr ein[PPCC_MAX_RANK], eout[PPCC_MAX_RANK];
  for (int i = 0; i < r; i++) ein[i] = mlirAffineDimExprGet(c->mctx, pos[i]);
  for (int i = 0; i < k; i++) eout[i] = mlirAffineDimExprGet(c->mctx, i);
  MlirAffineMap maps[2] = {mlirAffineMapGet(c->mctx, r, 0, r, ein), mlirAffineMapGet(c->mctx, r, 0, k, eout)};
  MlirType rt = mlirRankedTensorTypeGet(k, kept, elem, mlirAttributeGetNull());
  MlirValue ninf = emit_float_const(c, c->block, elem, -INFINITY);
  MlirValue init = emit_named_linalg(c, "linalg.fill", 1, &ninf, emit_empty(c, rt));
  MlirValue y = emit_generic(c, 1, &x, init, r, r - k, maps, max_body, NULL);
  MlirType t = emit_shard_type(c, out);
  if (!mlirTypeEqual(t, rt)) y = emit_reshape_to(c, y, t); /* keepdim */
  emit_set_shard(c, op->out[0], shard, y);
  return PPCC_OK;
}

/* ---- gather_elements, gather: one linalg.generic over the result ---- */
typedef struct gather_body {
  MlirValue data;
  int rank, dim;
  int index_rank; /* result dims the index spans from dim on (gather_elements: 1) */
  int64_t bound;
} gather_body;

/* data[i.., index (+ D when negative, then clamped to [0, D): a bad one has already failed the
 * run through emit_check_index, and nothing is read out of bounds), ..]: data dim i is result
 * dim i before dim, i + index_rank - 1 after it. */
static MlirValue body_gather(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const gather_body *g = user;
  MlirValue raw = mlirBlockGetArgument(b, 0);
  MlirType it = mlirValueGetType(raw), index = mlirIndexTypeGet(c->mctx);
  MlirValue zero = emit_int_const(c, b, it, 0);
  /* a negative index counts from the end (ONNX) */
  MlirValue wrapped = emit_binary_scalar(c, b, "arith.addi", raw, emit_int_const(c, b, it, g->bound));
  raw = select3(c, b, cmp_scalar(c, b, "arith.cmpi", CMPI_SLT, raw, zero), wrapped, raw);
  MlirValue ok = emit_binary_scalar(c, b, "arith.andi", cmp_scalar(c, b, "arith.cmpi", 5 /* sge */, raw, zero),
                                    cmp_scalar(c, b, "arith.cmpi", CMPI_SLT, raw, emit_int_const(c, b, it, g->bound)));
  MlirValue at[1 + PPCC_MAX_RANK];
  at[0] = g->data;
  for (int i = 0; i < g->rank; i++) {
    if (i == g->dim) {
      at[1 + i] = conv(c, b, "arith.index_cast", select3(c, b, ok, raw, zero), index);
      continue;
    }
    MlirNamedAttribute dattr = emit_named(c, "dim", emit_i64_attr(c, i < g->dim ? i : i + g->index_rank - 1));
    emit_op_spec li = {"linalg.index", 0, NULL, 1, &index, 1, &dattr, 0};
    at[1 + i] = mlirOperationGetResult(emit_op_in(c, b, &li), 0);
  }
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(g->data));
  emit_op_spec ex = {"tensor.extract", 1 + g->rank, at, 1, &elem, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &ex), 0);
}

/* gather_elements reads its index at the result's own position; gather
 * (numpy take) at the result's dims [dim, dim + index rank). */
static ppcc_status lower_gather_rows(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                     bool elements) {
  const ppcc_value *x = &g->values[op->in[0]], *ix = &g->values[op->in[1]], *y = &g->values[op->out[0]];
  MlirValue data = emit_shard(c, op->in[0], x->layout.count == 1 ? 0 : shard);
  MlirValue index = emit_shard(c, op->in[1], ix->layout.count == 1 ? 0 : shard);
  int dim = (int)ppcc_attr_int(op, "dim", 0);
  if (dim < 0) dim += x->rank;
  ppcc_status st = emit_check_index(c, index, x->shape[dim], EXEC_INDEX_WRAPS);
  if (st) return st;
  gather_body gb = {data, x->rank, dim, elements ? 1 : ix->rank, x->shape[dim]};
  MlirAffineExpr at[PPCC_MAX_RANK];
  for (int i = 0; i < ix->rank; i++) at[i] = mlirAffineDimExprGet(c->mctx, elements ? i : dim + i);
  MlirAffineMap maps[2] = {mlirAffineMapGet(c->mctx, y->rank, 0, ix->rank, at),
                           mlirAffineMapMultiDimIdentityGet(c->mctx, y->rank)};
  MlirType t = emit_shard_type(c, y);
  emit_set_shard(c, op->out[0], shard, emit_generic(c, 1, &index, emit_empty(c, t), y->rank, 0, maps, body_gather, &gb));
  return PPCC_OK;
}

ppcc_status lower_onnx_gather_elements(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                       ppcc_diag *d) {
  (void)d;
  return lower_gather_rows(c, g, op, shard, true);
}

ppcc_status lower_onnx_gather(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                              ppcc_diag *d) {
  (void)d;
  return lower_gather_rows(c, g, op, shard, false);
}

/* ---- conv, max_pool: one linalg.generic over (n, f|c, out..., [c,] k...)
 * on the input padded by tensor inserts (zeros for conv, -inf for the
 * pool), computing in f32 ---- */

/* max(acc, x): block args x, window (unused), acc */
static MlirValue pool_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  return emit_binary_scalar(c, b, "arith.maximumf", mlirBlockGetArgument(b, 2), mlirBlockGetArgument(b, 0));
}

/* x [N, C, spatial...] inside a `fill`-filled tensor, offset by the begin pads. */
static MlirValue pad_window(ppcc_emit_ctx *c, MlirValue x, const ppcc_conv_geom *gm, double fill) {
  MlirType t = mlirValueGetType(x), elem = mlirShapedTypeGetElementType(t);
  int r = (int)mlirShapedTypeGetRank(t);
  int64_t shape[4];
  for (int i = 0; i < r; i++) shape[i] = mlirShapedTypeGetDimSize(t, i);
  for (int i = gm->spatial - 1; i >= 0; i--) {
    if (gm->pad_begin[i] == 0 && gm->pad_end[i] == 0) continue;
    shape[2 + i] += gm->pad_begin[i] + gm->pad_end[i];
    MlirType pt = mlirRankedTensorTypeGet(r, shape, elem, mlirAttributeGetNull());
    MlirValue v = emit_float_const(c, c->block, elem, fill);
    MlirValue dest = emit_named_linalg(c, "linalg.fill", 1, &v, emit_empty(c, pt));
    x = emit_insert_slice(c, x, dest, 2 + i, gm->pad_begin[i]);
  }
  return x;
}

/* the input position of output dim o and window dim k: o * stride + k * dilation */
static MlirAffineExpr window_pos(ppcc_emit_ctx *c, const ppcc_conv_geom *gm, int i, int o_loop, int k_loop) {
  return mlirAffineAddExprGet(mlirAffineMulExprGet(mlirAffineDimExprGet(c->mctx, o_loop), mlirAffineConstantExprGet(c->mctx, gm->stride[i])),
                              mlirAffineMulExprGet(mlirAffineDimExprGet(c->mctx, k_loop), mlirAffineConstantExprGet(c->mctx, gm->dilation[i])));
}

static MlirValue mac_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue p = emit_binary_scalar(c, b, "arith.mulf", mlirBlockGetArgument(b, 0), mlirBlockGetArgument(b, 1));
  return emit_binary_scalar(c, b, "arith.addf", mlirBlockGetArgument(b, 2), p);
}

ppcc_status lower_onnx_conv(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *xv = &g->values[op->in[0]], *wv = &g->values[op->in[1]], *ov = &g->values[op->out[0]];
  MlirValue x = emit_to_f32(c, emit_shard(c, op->in[0], xv->layout.count == 1 ? 0 : shard));
  MlirValue w = emit_to_f32(c, emit_shard(c, op->in[1], wv->layout.count == 1 ? 0 : shard));
  MlirType wt = mlirValueGetType(w), t = emit_shard_type(c, ov);
  int r = (int)mlirShapedTypeGetRank(wt), s = r - 2;
  int64_t wshape[4], oshape[4];
  for (int i = 0; i < r; i++) wshape[i] = mlirShapedTypeGetDimSize(wt, i), oshape[i] = mlirShapedTypeGetDimSize(t, i);
  ppcc_conv_geom gm;
  if (!ppcc_conv_geom_read(op, r, wshape + 2, &gm)) return emit_op_error(c, op, "conv: invalid window attributes");
  MlirType f32 = mlirF32TypeGet(c->mctx), t32 = mlirRankedTensorTypeGet(r, oshape, f32, mlirAttributeGetNull());
  MlirValue called = c->runtime_calls ? c->runtime_calls->conv(c, x, w, &gm, t32) : (MlirValue){NULL}; /* the interpreter's kernel: the same sums */
  if (!mlirValueIsNull(called)) {
    emit_set_shard(c, op->out[0], shard, emit_convert_floats(c, called, mlirShapedTypeGetElementType(t)));
    return PPCC_OK;
  }
  x = pad_window(c, x, &gm, 0.0);
  /* loops: n, f, out[s] | cg, k[s] */
  int n_loops = 2 + s + 1 + s, cg = 2 + s;
  int64_t Fg = wshape[0] / gm.group, Cg = wshape[1];
  MlirAffineExpr ex[4], ew[4], eo[4];
  ex[0] = mlirAffineDimExprGet(c->mctx, 0);
  ex[1] = mlirAffineDimExprGet(c->mctx, cg);
  if (gm.group > 1) /* the group's channels: (f / Fg) * Cg + cg */
    ex[1] = mlirAffineAddExprGet(mlirAffineMulExprGet(mlirAffineFloorDivExprGet(mlirAffineDimExprGet(c->mctx, 1),
                                                                                 mlirAffineConstantExprGet(c->mctx, Fg)),
                                                       mlirAffineConstantExprGet(c->mctx, Cg)),
                                 ex[1]);
  ew[0] = mlirAffineDimExprGet(c->mctx, 1);
  ew[1] = mlirAffineDimExprGet(c->mctx, cg);
  for (int i = 0; i < 2; i++) eo[i] = mlirAffineDimExprGet(c->mctx, i);
  for (int i = 0; i < s; i++) {
    ex[2 + i] = window_pos(c, &gm, i, 2 + i, cg + 1 + i);
    ew[2 + i] = mlirAffineDimExprGet(c->mctx, cg + 1 + i);
    eo[2 + i] = mlirAffineDimExprGet(c->mctx, 2 + i);
  }
  MlirAffineMap maps[3] = {mlirAffineMapGet(c->mctx, n_loops, 0, r, ex), mlirAffineMapGet(c->mctx, n_loops, 0, r, ew),
                           mlirAffineMapGet(c->mctx, n_loops, 0, r, eo)};
  MlirValue zero = emit_float_const(c, c->block, f32, 0.0);
  MlirValue init = emit_named_linalg(c, "linalg.fill", 1, &zero, emit_empty(c, t32));
  MlirValue ins[2] = {x, w};
  MlirValue y = emit_generic(c, 2, ins, init, n_loops, 1 + s, maps, mac_body, NULL);
  emit_set_shard(c, op->out[0], shard, emit_convert_floats(c, y, mlirShapedTypeGetElementType(t)));
  return PPCC_OK;
}

ppcc_status lower_onnx_max_pool(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard,
                                ppcc_diag *d) {
  const ppcc_value *xv = &g->values[op->in[0]], *ov = &g->values[op->out[0]];
  MlirValue x = emit_to_f32(c, emit_shard(c, op->in[0], xv->layout.count == 1 ? 0 : shard));
  MlirType t = emit_shard_type(c, ov);
  int r = (int)mlirShapedTypeGetRank(t), s = r - 2;
  int64_t oshape[4];
  for (int i = 0; i < r; i++) oshape[i] = mlirShapedTypeGetDimSize(t, i);
  ppcc_conv_geom gm;
  if (!ppcc_conv_geom_read(op, r, NULL, &gm)) return emit_op_error(c, op, "max_pool: invalid window attributes");
  x = pad_window(c, x, &gm, -INFINITY);
  /* loops: n, c, out[s] | k[s]; an empty [k...] operand gives the window
   * loops their bounds (as linalg's pooling ops take a window tensor) */
  int n_loops = 2 + 2 * s;
  MlirAffineExpr ex[4], ek[2], eo[4];
  for (int i = 0; i < 2; i++) ex[i] = eo[i] = mlirAffineDimExprGet(c->mctx, i);
  for (int i = 0; i < s; i++) {
    ex[2 + i] = window_pos(c, &gm, i, 2 + i, 2 + s + i);
    ek[i] = mlirAffineDimExprGet(c->mctx, 2 + s + i);
    eo[2 + i] = mlirAffineDimExprGet(c->mctx, 2 + i);
  }
  MlirAffineMap maps[3] = {mlirAffineMapGet(c->mctx, n_loops, 0, r, ex), mlirAffineMapGet(c->mctx, n_loops, 0, s, ek),
                           mlirAffineMapGet(c->mctx, n_loops, 0, r, eo)};
  MlirType f32 = mlirF32TypeGet(c->mctx), t32 = mlirRankedTensorTypeGet(r, oshape, f32, mlirAttributeGetNull());
  MlirValue ninf = emit_float_const(c, c->block, f32, -INFINITY);
  MlirValue init = emit_named_linalg(c, "linalg.fill", 1, &ninf, emit_empty(c, t32));
  MlirValue ins[2] = {x, emit_empty(c, mlirRankedTensorTypeGet(s, gm.kernel, f32, mlirAttributeGetNull()))};
  MlirValue y = emit_generic(c, 2, ins, init, n_loops, s, maps, pool_body, NULL);
  emit_set_shard(c, op->out[0], shard, emit_convert_floats(c, y, mlirShapedTypeGetElementType(t)));
  return PPCC_OK;
}
