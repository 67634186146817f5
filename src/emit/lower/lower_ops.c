/* Per-shard lowerings of the generic compute ops (the `lower` column of
 * the op table, gathered in lowerings.c) to upstream dialects (linalg, tensor, arith,
 * math, scf) and of transfers. Each lowering reads the SSA values of its
 * operands' shards and records its result's shard. */
#include <math.h>
#include "emit_internal.h"
#include "ppcc/quant.h"

/* ---- operand access ---- */
static const ppcc_value *in_value(const ppcc_emit_ctx *c, const ppcc_op *op, int k) {
  return &c->g->values[op->in[k]];
}
static const ppcc_value *out_value(const ppcc_emit_ctx *c, const ppcc_op *op) {
  return &c->g->values[op->out[0]];
}

/* Shard `shard` of the result reads shard `shard` of each sharded operand
 * and the only shard of an unsharded one. */
static MlirValue operand(const ppcc_emit_ctx *c, const ppcc_op *op, int k, int shard) {
  const ppcc_value *v = in_value(c, op, k);
  return emit_shard(c, op->in[k], v->layout.count == 1 ? 0 : shard);
}

static void set_result(ppcc_emit_ctx *c, const ppcc_op *op, int shard, MlirValue v) {
  emit_set_shard(c, op->out[0], shard, v);
}

static void local_shape(MlirType t, int *rank, int64_t *shape) {
  *rank = (int)mlirShapedTypeGetRank(t);
  for (int i = 0; i < *rank; i++) shape[i] = mlirShapedTypeGetDimSize(t, i);
}

/* A replicated operand combined with a split one is sliced locally (DESIGN
 * §4, no transfer): every dim where the operand is larger than the result
 * shard (right-aligned, broadcast dims aside) is cut to this shard's part. */
static MlirValue slice_to_shard(ppcc_emit_ctx *c, MlirValue v, int ro, const int64_t *out, int shard,
                                int skip_dim) {
  int ri;
  int64_t in[PPCC_MAX_RANK];
  local_shape(mlirValueGetType(v), &ri, in);
  for (int j = 0; j < ri; j++) {
    int i = j + (ro - ri);
    if (i < 0 || j == skip_dim || in[j] == out[i] || in[j] == 1) continue;
    v = emit_slice(c, v, j, (int64_t)shard * out[i], out[i]);
  }
  return v;
}

/* ---- scalar bodies ---- */
static bool is_float_value(MlirValue v) { return !mlirTypeIsAInteger(mlirValueGetType(v)); }

static MlirValue arg(MlirBlock body, int i) { return mlirBlockGetArgument(body, i); }

static MlirValue fconst(ppcc_emit_ctx *c, MlirBlock body, MlirValue like, double v) {
  return emit_float_const(c, body, mlirValueGetType(like), v);
}

/* 1 / (1 + exp(-x)) */
static MlirValue sigmoid_of(ppcc_emit_ctx *c, MlirBlock b, MlirValue x) {
  MlirValue e = emit_unary_scalar(c, b, "math.exp", emit_unary_scalar(c, b, "arith.negf", x));
  MlirValue den = emit_binary_scalar(c, b, "arith.addf", fconst(c, b, x, 1.0), e);
  return emit_binary_scalar(c, b, "arith.divf", fconst(c, b, x, 1.0), den);
}

/* 0.5 * x * (1 + erf(x / sqrt(2))): exact GELU. */
static MlirValue gelu_of(ppcc_emit_ctx *c, MlirBlock b, MlirValue x) {
  MlirValue scaled = emit_binary_scalar(c, b, "arith.mulf", x, fconst(c, b, x, 0.70710678118654752));
  MlirValue cdf = emit_binary_scalar(c, b, "arith.addf", fconst(c, b, x, 1.0),
                                     emit_unary_scalar(c, b, "math.erf", scaled));
  MlirValue half_x = emit_binary_scalar(c, b, "arith.mulf", x, fconst(c, b, x, 0.5));
  return emit_binary_scalar(c, b, "arith.mulf", half_x, cdf);
}

/* 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))): torch's tanh GELU,
 * in the kernel's order. */
static MlirValue gelu_tanh_of(ppcc_emit_ctx *c, MlirBlock b, MlirValue x) {
  MlirValue cube = emit_binary_scalar(c, b, "arith.mulf", emit_binary_scalar(c, b, "arith.mulf", x, x), x);
  MlirValue x3 = emit_binary_scalar(c, b, "arith.mulf", fconst(c, b, x, 0.044715), cube);
  MlirValue inner = emit_binary_scalar(c, b, "arith.mulf", fconst(c, b, x, 0.79788456080286536),
                                       emit_binary_scalar(c, b, "arith.addf", x, x3));
  MlirValue cdf = emit_binary_scalar(c, b, "arith.addf", fconst(c, b, x, 1.0), emit_unary_scalar(c, b, "math.tanh", inner));
  MlirValue half_x = emit_binary_scalar(c, b, "arith.mulf", fconst(c, b, x, 0.5), x);
  return emit_binary_scalar(c, b, "arith.mulf", half_x, cdf);
}

typedef struct unary_body {
  ppcc_op_id id;
  double scale;
} unary_body;

/* f16/bf16 <-> f32 inside a scalar body: half floats compute in f32 and
 * round once, as the interpreter does. */
static MlirValue scalar_cast(ppcc_emit_ctx *c, MlirBlock b, MlirValue x, MlirType to) {
  if (mlirTypeEqual(mlirValueGetType(x), to)) return x;
  bool widen = mlirFloatTypeGetWidth(to) > mlirFloatTypeGetWidth(mlirValueGetType(x));
  emit_op_spec s = {widen ? "arith.extf" : "arith.truncf", 1, &x, 1, &to, 0, NULL, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue unary_f32_of(ppcc_emit_ctx *c, MlirBlock b, const struct unary_body *u, MlirValue x);

static MlirValue unary_float_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirType t = mlirValueGetType(arg(b, 0));
  MlirValue x = scalar_cast(c, b, arg(b, 0), mlirF32TypeGet(c->mctx));
  return scalar_cast(c, b, unary_f32_of(c, b, user, x), t);
}

static MlirValue unary_f32_of(ppcc_emit_ctx *c, MlirBlock b, const unary_body *u, MlirValue x) {
  switch (u->id) {
  case PPCC_OP_gelu: return gelu_of(c, b, x);
  case PPCC_OP_gelu_tanh: return gelu_tanh_of(c, b, x);
  case PPCC_OP_silu: return emit_binary_scalar(c, b, "arith.mulf", x, sigmoid_of(c, b, x));
  case PPCC_OP_sigmoid: return sigmoid_of(c, b, x);
  case PPCC_OP_relu: return emit_binary_scalar(c, b, "arith.maximumf", x, fconst(c, b, x, 0.0));
  case PPCC_OP_tanh: return emit_unary_scalar(c, b, "math.tanh", x);
  case PPCC_OP_exp: return emit_unary_scalar(c, b, "math.exp", x);
  case PPCC_OP_neg: return emit_unary_scalar(c, b, "arith.negf", x);
  case PPCC_OP_scale: return emit_binary_scalar(c, b, "arith.mulf", x, fconst(c, b, x, u->scale));
  default: return x;
  }
}

static MlirValue unary_int_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const unary_body *u = user;
  MlirValue x = arg(b, 0);
  MlirType t = mlirValueGetType(x);
  switch (u->id) {
  case PPCC_OP_relu: return emit_binary_scalar(c, b, "arith.maxsi", x, emit_int_const(c, b, t, 0));
  case PPCC_OP_neg: return emit_binary_scalar(c, b, "arith.subi", emit_int_const(c, b, t, 0), x);
  case PPCC_OP_scale: return emit_binary_scalar(c, b, "arith.muli", x, emit_int_const(c, b, t, (int64_t)u->scale));
  default: return x;
  }
}

static bool unary_has_int_form(ppcc_op_id id) {
  return id == PPCC_OP_relu || id == PPCC_OP_neg || id == PPCC_OP_scale;
}

ppcc_status lower_unary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  MlirValue x = operand(c, op, 0, shard);
  const ppcc_value *in = in_value(c, op, 0);
  unary_body u = {op->info->id, ppcc_attr_float(op, "value", 1.0)};
  bool is_float = ppcc_dtype_is_float(in->dtype);
  if (!is_float && !unary_has_int_form(u.id))
    return emit_op_error(c, op, "op '%s' has no MLIR lowering for dtype %s", op->info->name,
                         ppcc_dtype_name(in->dtype));
  MlirType t = emit_shard_type(c, out_value(c, op));
  bool vector_kernel = u.id == PPCC_OP_exp || u.id == PPCC_OP_silu || u.id == PPCC_OP_sigmoid || u.id == PPCC_OP_gelu;
  MlirValue call = vector_kernel && c->runtime_calls && c->runtime_calls->unary
                       ? c->runtime_calls->unary(c, (int)u.id, x, t)
                       : (MlirValue){NULL};
  set_result(c, op, shard,
             !mlirValueIsNull(call) ? call
                                    : emit_elementwise(c, 1, &x, t, is_float ? unary_float_body : unary_int_body, &u));
  return PPCC_OK;
}

/* ---- binary elementwise ---- */
static const char *binary_scalar_op(ppcc_op_id id, bool is_float) {
  switch (id) {
  case PPCC_OP_add: return is_float ? "arith.addf" : "arith.addi";
  case PPCC_OP_sub: return is_float ? "arith.subf" : "arith.subi";
  case PPCC_OP_mul: return is_float ? "arith.mulf" : "arith.muli";
  case PPCC_OP_div: return is_float ? "arith.divf" : "arith.divsi";
  case PPCC_OP_maximum: return is_float ? "arith.maximumf" : "arith.maxsi";
  default: return NULL;
  }
}

static MlirValue binary_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  return emit_binary_scalar(c, b, user, arg(b, 0), arg(b, 1));
}

/* out = a <op> b with numpy broadcasting, after slicing replicated operands
 * to this shard. */
MlirValue emit_binary_tensor(ppcc_emit_ctx *c, const char *scalar_op, MlirValue a, MlirValue b, MlirType out_type,
                             int shard) {
  MlirValue ins[2] = {a, b};
  return emit_elementwise_shard(c, 2, ins, out_type, shard, binary_body, (void *)scalar_op);
}

MlirValue emit_elementwise_shard(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirType out_type, int shard,
                                 emit_body_fn body_fn, void *user) {
  int ro;
  int64_t out[PPCC_MAX_RANK];
  local_shape(out_type, &ro, out);
  MlirValue sliced[4];
  for (int k = 0; k < n_in && k < 4; k++) sliced[k] = slice_to_shard(c, ins[k], ro, out, shard, -1);
  return emit_elementwise(c, n_in < 4 ? n_in : 4, sliced, out_type, body_fn, user);
}

ppcc_status lower_binary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *a = in_value(c, op, 0);
  const char *scalar_op = binary_scalar_op(op->info->id, ppcc_dtype_is_float(a->dtype));
  if (!scalar_op) return emit_op_error(c, op, "op '%s' has no MLIR lowering", op->info->name);
  MlirType t = emit_shard_type(c, out_value(c, op));
  set_result(c, op, shard, emit_binary_tensor(c, scalar_op, operand(c, op, 0, shard), operand(c, op, 1, shard), t, shard));
  return PPCC_OK;
}

/* ---- contractions ---- */
static MlirValue mul_add_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  bool f = is_float_value(arg(b, 0));
  MlirValue prod = emit_binary_scalar(c, b, f ? "arith.mulf" : "arith.muli", arg(b, 0), arg(b, 1));
  return emit_binary_scalar(c, b, f ? "arith.addf" : "arith.addi", arg(b, 2), prod);
}

static MlirAffineExpr dim(ppcc_emit_ctx *c, int i) { return mlirAffineDimExprGet(c->mctx, i); }

/* out[batch.., m, n] += a[batch.., m, k] * b[(batch..,) k, n] (or b[n, k]
 * when b_transposed) as a linalg.generic: loops batch.., m, n, then k. */
static MlirValue emit_contraction(ppcc_emit_ctx *c, MlirValue a, MlirValue b, bool b_transposed, MlirValue init) {
  int ra = (int)mlirShapedTypeGetRank(mlirValueGetType(a));
  int rb = (int)mlirShapedTypeGetRank(mlirValueGetType(b));
  int n_loops = ra + 1, m = ra - 2, n = ra - 1, k = ra;
  MlirAffineExpr ea[PPCC_MAX_RANK], eb[PPCC_MAX_RANK], eo[PPCC_MAX_RANK];
  for (int i = 0; i < ra - 2; i++) ea[i] = eo[i] = dim(c, i);
  ea[ra - 2] = eo[ra - 2] = dim(c, m);
  ea[ra - 1] = dim(c, k);
  eo[ra - 1] = dim(c, n);
  int nb = 0; /* b has batch dims only when it has a's rank */
  for (int i = 0; i < rb - 2; i++) eb[nb++] = dim(c, i);
  eb[nb++] = dim(c, b_transposed ? n : k);
  eb[nb++] = dim(c, b_transposed ? k : n);
  MlirAffineMap maps[3] = {mlirAffineMapGet(c->mctx, n_loops, 0, ra, ea),
                           mlirAffineMapGet(c->mctx, n_loops, 0, rb, eb),
                           mlirAffineMapGet(c->mctx, n_loops, 0, ra, eo)};
  MlirValue ins[2] = {a, b};
  return emit_generic(c, 2, ins, init, n_loops, 1, maps, mul_add_body, NULL);
}

/* The linalg named op for the shapes, NULL when only a generic fits. */
static const char *named_contraction(int ra, int rb, bool b_transposed) {
  if (ra == 2 && rb == 2) return b_transposed ? "linalg.matmul_transpose_b" : "linalg.matmul";
  if (ra == 3 && rb == 3) return b_transposed ? "linalg.batch_matmul_transpose_b" : "linalg.batch_matmul";
  return NULL;
}

static MlirValue contract(ppcc_emit_ctx *c, MlirValue a, MlirValue b, bool b_transposed, MlirType out_type) {
  if (c->runtime_calls) { /* executable form: f32 GEMMs go to OpenBLAS through the runtime */
    MlirValue call = c->runtime_calls->matmul(c, a, b, b_transposed, out_type);
    if (!mlirValueIsNull(call)) return call;
  }
  MlirValue init = emit_zeros(c, out_type);
  int ra = (int)mlirShapedTypeGetRank(mlirValueGetType(a));
  int rb = (int)mlirShapedTypeGetRank(mlirValueGetType(b));
  /* IREE 3.x dropped the *_transpose_b named ops: it gets the generic form. */
  const char *named = c->kind == PPCC_EMIT_IREE && b_transposed ? NULL : named_contraction(ra, rb, b_transposed);
  MlirValue ins[2] = {a, b};
  return named ? emit_named_linalg(c, named, 2, ins, init) : emit_contraction(c, a, b, b_transposed, init);
}

/* Operand k of a row-parallel contraction (unreduced result): a replicated
 * operand next to a split one is cut along its contracting dim to this
 * shard's part (DESIGN §4: sharktank's PPFFN, no data moves). */
static MlirValue contract_operand(ppcc_emit_ctx *c, const ppcc_op *op, int k, int shard, bool b_transposed) {
  MlirValue v = operand(c, op, k, shard);
  const ppcc_value *x = in_value(c, op, k), *other = in_value(c, op, 1 - k);
  if (out_value(c, op)->layout.kind != PPCC_LAYOUT_UNREDUCED || x->layout.kind != PPCC_LAYOUT_REPLICATED ||
      other->layout.kind != PPCC_LAYOUT_SPLIT)
    return v;
  int dim = k == 0 ? x->rank - 1 : b_transposed ? 1 : x->rank - 2;
  int64_t part = x->shape[dim] / other->layout.count;
  return emit_slice(c, v, dim, (int64_t)shard * part, part);
}

/* The type a contraction computes in: f32 for f16/bf16 results (summed in
 * f32 and rounded once, as the interpreter and PyTorch do). */
static MlirType compute_type(ppcc_emit_ctx *c, MlirType t) {
  MlirType e = mlirShapedTypeGetElementType(t);
  if (!mlirTypeIsAF16(e) && !mlirTypeIsABF16(e)) return t;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  local_shape(t, &rank, shape);
  return mlirRankedTensorTypeGet(rank, shape, mlirF32TypeGet(c->mctx), mlirAttributeGetNull());
}

/* A half-float operand widened to f32 when the op computes in f32. */
static MlirValue widened(ppcc_emit_ctx *c, MlirValue v, MlirType compute) {
  return emit_convert_floats(c, v, mlirShapedTypeGetElementType(compute));
}

ppcc_status lower_matmul(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  MlirType t = emit_shard_type(c, out_value(c, op)), ct = compute_type(c, t);
  MlirValue a = widened(c, contract_operand(c, op, 0, shard, false), ct);
  MlirValue b = widened(c, contract_operand(c, op, 1, shard, false), ct);
  set_result(c, op, shard, emit_convert_floats(c, contract(c, a, b, false, ct), mlirShapedTypeGetElementType(t)));
  return PPCC_OK;
}

/* linear: x . w^T (+ bias), weights stored [out, in]. On partial sums the
 * bias is added by shard 0 only, so the all_reduce counts it once. */
/* A block-quantized weight's shard (i8 bytes, rows of whole blocks); the
 * slice of a replicated one next to a split x is whole blocks of columns. */
static MlirValue quantized_weight(ppcc_emit_ctx *c, const ppcc_op *op, int shard, ppcc_status *st) {
  MlirValue w = operand(c, op, 1, shard);
  const ppcc_value *wv = in_value(c, op, 1), *xv = in_value(c, op, 0);
  const ppcc_block_format *f = ppcc_dtype_blocks(wv->dtype);
  if (out_value(c, op)->layout.kind != PPCC_LAYOUT_UNREDUCED || wv->layout.kind != PPCC_LAYOUT_REPLICATED ||
      xv->layout.kind != PPCC_LAYOUT_SPLIT)
    return w;
  int64_t part = wv->shape[1] / xv->layout.count;
  if (part % f->block != 0) {
    *st = emit_op_error(c, op, "weight '%s' is %s: a slice of %lld columns cuts its blocks of %d", wv->name,
                        ppcc_dtype_name(wv->dtype), (long long)part, f->block);
    return w;
  }
  int64_t bytes = part / f->block * f->bytes;
  return emit_slice(c, w, 1, (int64_t)shard * bytes, bytes);
}

ppcc_status lower_linear(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  MlirType t = emit_shard_type(c, out_value(c, op)), ct = compute_type(c, t);
  MlirValue a = widened(c, contract_operand(c, op, 0, shard, true), ct), y;
  ppcc_dtype wt = in_value(c, op, 1)->dtype;
  /* on partial sums the bias is added by shard 0 only */
  bool bias = op->n_in == 3 && !(out_value(c, op)->layout.kind == PPCC_LAYOUT_UNREDUCED && shard > 0);
  if (ppcc_dtype_is_quantized(wt)) { /* the runtime's quantized kernel (executable form only) */
    ppcc_status st = PPCC_OK;
    MlirValue w = quantized_weight(c, op, shard, &st);
    if (st) return st;
    if (!c->runtime_calls || !c->runtime_calls->qlinear)
      return emit_op_error(c, op, "weight '%s' is %s: only the executable form computes with quantized weights",
                           in_value(c, op, 1)->name, ppcc_dtype_name(wt));
    y = c->runtime_calls->qlinear(c, a, w, wt, ct);
    if (mlirValueIsNull(y)) return emit_op_error(c, op, "the quantized linear call could not be built");
  } else if (ppcc_dtype_is_stored_half(wt, PPCC_F32) && mlirTypeIsAF32(mlirShapedTypeGetElementType(ct)) &&
             c->runtime_calls && c->runtime_calls->qlinear) {
    /* an f16/bf16 weight as stored, next to f32 activations (or f16/bf16
     * ones widened to f32): the runtime's kernel converts blocks of its
     * rows; widened whole, an LM head was a 31 MiB f32 buffer per call
     * (the other forms widen it below) */
    y = c->runtime_calls->qlinear(c, a, contract_operand(c, op, 1, shard, true), wt, ct);
    if (mlirValueIsNull(y)) return emit_op_error(c, op, "the f16/bf16 linear call could not be built");
  } else {
    MlirValue b = widened(c, contract_operand(c, op, 1, shard, true), ct);
    y = (MlirValue){NULL};
    if (bias && c->runtime_calls && c->runtime_calls->linear_bias) { /* GEMM and bias in one runtime call */
      y = c->runtime_calls->linear_bias(c, a, b, operand(c, op, 2, shard), ct);
      bias = mlirValueIsNull(y);
    }
    if (mlirValueIsNull(y)) y = contract(c, a, b, true, ct);
  }
  if (bias) {
    const char *add = ppcc_dtype_is_float(out_value(c, op)->dtype) ? "arith.addf" : "arith.addi";
    y = emit_binary_tensor(c, add, y, widened(c, operand(c, op, 2, shard), ct), ct, shard);
  }
  set_result(c, op, shard, emit_convert_floats(c, y, mlirShapedTypeGetElementType(t)));
  return PPCC_OK;
}

/* ---- data movement within a shard ---- */
static MlirValue yield_input(ppcc_emit_ctx *c, MlirBlock b, void *user) { return arg(b, 0); }

/* transpose / permute: result dim i reads input dim perm[i]. */
ppcc_status lower_transpose(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *in = in_value(c, op, 0);
  int rank = in->rank, perm[PPCC_MAX_RANK];
  const ppcc_attr *p = ppcc_op_attr(op, "perm");
  for (int i = 0; i < rank; i++) perm[i] = p ? (int)p->ints[i] : i;
  if (!p && rank >= 2) {
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
  }
  MlirAffineExpr e[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) e[perm[i]] = dim(c, i);
  MlirAffineMap maps[2] = {mlirAffineMapGet(c->mctx, rank, 0, rank, e), mlirAffineMapMultiDimIdentityGet(c->mctx, rank)};
  MlirValue x = operand(c, op, 0, shard);
  MlirValue init = emit_empty(c, emit_shard_type(c, out_value(c, op)));
  set_result(c, op, shard, emit_generic(c, 1, &x, init, rank, 0, maps, yield_input, NULL));
  return PPCC_OK;
}

/* reshape: tensor.reshape to the shard's result shape, given as a constant. */
ppcc_status lower_reshape(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *out = out_value(c, op);
  int64_t local[PPCC_MAX_RANK], rank = out->rank;
  ppcc_value_shard_shape(out, local);
  MlirType shape_type = mlirRankedTensorTypeGet(1, &rank, mlirIntegerTypeGet(c->mctx, 64), mlirAttributeGetNull());
  MlirNamedAttribute value = emit_named(c, "value", mlirDenseElementsAttrInt64Get(shape_type, rank, local));
  emit_op_spec cst = {"arith.constant", 0, NULL, 1, &shape_type, 1, &value, 0};
  MlirValue operands[2] = {operand(c, op, 0, shard), mlirOperationGetResult(emit_op(c, &cst), 0)};
  MlirType t = emit_shard_type(c, out);
  emit_op_spec s = {"tensor.reshape", 2, operands, 1, &t, 0, NULL, 0};
  set_result(c, op, shard, mlirOperationGetResult(emit_op(c, &s), 0));
  return PPCC_OK;
}

/* transfer: shard i moves from the operand's devices[i] to the result's. */
ppcc_status lower_transfer(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *in = in_value(c, op, 0), *out = out_value(c, op);
  MlirValue v = operand(c, op, 0, shard); /* P8: a whole value goes to every result shard */
  set_result(c, op, shard, placement_transfer(c, v, in->devices[in->layout.count == 1 ? 0 : shard], out->devices[shard]));
  return PPCC_OK;
}
