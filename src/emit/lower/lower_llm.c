/* Lowerings of the LLM ops (the `lower` column of their rows in
 * include/ppcc/op_list.h): embedding, rms_norm, layer_norm, softmax,
 * rotary, attention, concat, slice, sum, mean, argmax. Per shard, to
 * upstream linalg / tensor / arith / math only, so the same functions
 * serve the annotated form and a per-device executable form.
 *
 * Reductions (norms, softmax, sum, argmax) are linalg.generic ops whose
 * loops are the kept dims first and the reduced dims last; the elementwise
 * step that follows reads the reduced tensors through "drop" maps. The
 * semantics match the reference kernels in src/runtime/kernels/kernels_llm.c,
 * step for step: f16/bf16 operands are widened to f32 and the result
 * rounded once; softmax, norm and sum/mean sums accumulate in f64, norms
 * take 1/sqrt and x * inv in f64, rotary angles are f64. */
#include <math.h>
#include "lower_llm.h"

/* arith.cmpf / arith.cmpi predicates (their enum values in MLIR). */
enum { CMPF_OEQ = 1, CMPF_OGT = 2, CMPF_OLT = 4, CMPF_UNO = 14, CMPI_SLT = 2, CMPI_SLE = 3, CMPI_SGT = 4, CMPI_SGE = 5, CMPI_ULT = 6, CMPI_UGT = 8 };

/* ---------------- operand access ---------------- */

static const ppcc_value *in_value(const ppcc_graph *g, const ppcc_op *op, int k) { return &g->values[op->in[k]]; }
static const ppcc_value *out_value(const ppcc_graph *g, const ppcc_op *op) { return &g->values[op->out[0]]; }

/* Shard `shard` of a sharded operand, the only shard of an unsharded one. */
static MlirValue operand(const ppcc_emit_ctx *c, const ppcc_op *op, int k, int shard) {
  return emit_shard(c, op->in[k], c->g->values[op->in[k]].layout.count == 1 ? 0 : shard);
}

static void set_result(ppcc_emit_ctx *c, const ppcc_op *op, int shard, MlirValue v) {
  emit_set_shard(c, op->out[0], shard, v);
}

static int rank_of(MlirValue v) { return (int)mlirShapedTypeGetRank(mlirValueGetType(v)); }
static int64_t dim_size(MlirValue v, int i) { return mlirShapedTypeGetDimSize(mlirValueGetType(v), i); }
static MlirType elem_of(MlirValue v) { return mlirShapedTypeGetElementType(mlirValueGetType(v)); }
static bool is_float_type(MlirType t) { return mlirTypeIsAFloat(t); }

static ppcc_status need_float(ppcc_emit_ctx *c, const ppcc_op *op, const ppcc_value *v) {
  if (ppcc_dtype_is_float(v->dtype)) return PPCC_OK;
  return emit_op_error(c, op, "'%s' is %s; op '%s' is lowered for float tensors only", v->name,
                       ppcc_dtype_name(v->dtype), op->info->name);
}

static int norm_dim(int64_t dim, int rank) { return (int)(dim < 0 ? dim + rank : dim); }

/* ---------------- scalar helpers (inside region bodies) ---------------- */

static MlirValue barg(MlirBlock b, int i) { return mlirBlockGetArgument(b, i); }

static MlirValue scalar_op(ppcc_emit_ctx *c, MlirBlock b, const char *name, int n, const MlirValue *ops, MlirType t,
                           int n_attrs, const MlirNamedAttribute *attrs) {
  emit_op_spec s = {name, n, ops, 1, &t, n_attrs, attrs, 0};
  return mlirOperationGetResult(emit_op_in(c, b, &s), 0);
}

static MlirValue bin(ppcc_emit_ctx *c, MlirBlock b, const char *name, MlirValue x, MlirValue y) {
  return emit_binary_scalar(c, b, name, x, y);
}

static MlirValue fconst(ppcc_emit_ctx *c, MlirBlock b, MlirType t, double v) { return emit_float_const(c, b, t, v); }

static MlirValue cast(ppcc_emit_ctx *c, MlirBlock b, const char *name, MlirValue x, MlirType to) {
  return scalar_op(c, b, name, 1, &x, to, 0, NULL);
}

static MlirValue compare(ppcc_emit_ctx *c, MlirBlock b, bool is_float, int predicate, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  MlirNamedAttribute p = emit_named(c, "predicate", emit_i64_attr(c, predicate));
  return scalar_op(c, b, is_float ? "arith.cmpf" : "arith.cmpi", 2, ops, mlirIntegerTypeGet(c->mctx, 1), 1, &p);
}

static MlirValue select_value(ppcc_emit_ctx *c, MlirBlock b, MlirValue cond, MlirValue x, MlirValue y) {
  MlirValue ops[3] = {cond, x, y};
  return scalar_op(c, b, "arith.select", 3, ops, mlirValueGetType(x), 0, NULL);
}

/* linalg.index: the current iteration index of loop `loop`. */
static MlirValue loop_index(ppcc_emit_ctx *c, MlirBlock b, int loop) {
  MlirNamedAttribute dim = emit_named(c, "dim", emit_i64_attr(c, loop));
  return scalar_op(c, b, "linalg.index", 0, NULL, mlirIndexTypeGet(c->mctx), 1, &dim);
}

static MlirValue extract(ppcc_emit_ctx *c, MlirBlock b, MlirValue tensor, int n, const MlirValue *indices) {
  MlirValue ops[PPCC_MAX_RANK + 1] = {tensor};
  for (int i = 0; i < n; i++) ops[i + 1] = indices[i];
  return scalar_op(c, b, "tensor.extract", n + 1, ops, elem_of(tensor), 0, NULL);
}

/* An integer or index scalar as a float of type t. */
static MlirValue int_to_float(ppcc_emit_ctx *c, MlirBlock b, MlirValue x, MlirType t) {
  if (mlirTypeIsAIndex(mlirValueGetType(x))) x = cast(c, b, "arith.index_cast", x, mlirIntegerTypeGet(c->mctx, 64));
  return cast(c, b, "arith.sitofp", x, t);
}

/* f32 <-> the element type, for math done in f32 on f16/bf16 tensors. */
static MlirValue to_f32(ppcc_emit_ctx *c, MlirBlock b, MlirValue x) {
  return mlirTypeIsAF32(mlirValueGetType(x)) ? x : cast(c, b, "arith.extf", x, mlirF32TypeGet(c->mctx));
}
static MlirValue from_f32(ppcc_emit_ctx *c, MlirBlock b, MlirValue x, MlirType t) {
  return mlirTypeIsAF32(t) ? x : cast(c, b, "arith.truncf", x, t);
}

/* ---------------- tensors ---------------- */

static MlirType tensor_type(int rank, const int64_t *shape, MlirType elem) {
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
}

static MlirValue filled(ppcc_emit_ctx *c, MlirType tensor_type, MlirValue scalar) {
  return emit_named_linalg(c, "linalg.fill", 1, &scalar, emit_empty(c, tensor_type));
}

/* tensor.reshape of v to the static type t (same element count). */
MlirValue emit_reshape_to(ppcc_emit_ctx *c, MlirValue v, MlirType t) {
  int64_t rank = mlirShapedTypeGetRank(t), shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(t, i);
  MlirType shape_type = mlirRankedTensorTypeGet(1, &rank, mlirIntegerTypeGet(c->mctx, 64), mlirAttributeGetNull());
  MlirNamedAttribute value = emit_named(c, "value", mlirDenseElementsAttrInt64Get(shape_type, rank, shape));
  emit_op_spec cst = {"arith.constant", 0, NULL, 1, &shape_type, 1, &value, 0};
  MlirValue operands[2] = {v, mlirOperationGetResult(emit_op(c, &cst), 0)};
  emit_op_spec s = {"tensor.reshape", 2, operands, 1, &t, 0, NULL, 0};
  return mlirOperationGetResult(emit_op(c, &s), 0);
}

/* ---------------- reduction spaces ---------------- */

/* The loops of a reduction of x over the dims in mask: kept dims first (in
 * order), reduced dims last, so linalg's reduction iterators are a tail. */
typedef struct red_space {
  int rank, n_kept;
  bool mask[PPCC_MAX_RANK];
  int loop_of[PPCC_MAX_RANK]; /* x dim -> loop */
  int64_t shape[PPCC_MAX_RANK];
} red_space;

static red_space red_space_make(MlirValue x, const bool *mask) {
  red_space r = {rank_of(x), 0, {false}, {0}, {0}};
  for (int i = 0; i < r.rank; i++) {
    r.mask[i] = mask[i];
    r.shape[i] = dim_size(x, i);
    r.n_kept += !mask[i];
  }
  int kept = 0, red = r.n_kept;
  for (int i = 0; i < r.rank; i++) r.loop_of[i] = mask[i] ? red++ : kept++;
  return r;
}

static red_space red_space_one_dim(MlirValue x, int dim) {
  bool mask[PPCC_MAX_RANK] = {false};
  mask[dim] = true;
  return red_space_make(x, mask);
}

static MlirAffineExpr dim_expr(ppcc_emit_ctx *c, int i) { return mlirAffineDimExprGet(c->mctx, i); }

/* How an operand of a reduction or of the elementwise step after it is
 * indexed: the whole x shape, the reduced (kept dims) shape, or only the
 * last dim of x (a norm's weight). */
typedef enum { K_FULL, K_KEPT, K_LAST } operand_kind;

/* Map of an operand in the reduction's loop space. */
static MlirAffineMap reduce_map(ppcc_emit_ctx *c, const red_space *r, operand_kind k) {
  MlirAffineExpr e[PPCC_MAX_RANK];
  int n = 0;
  if (k == K_FULL)
    for (int i = 0; i < r->rank; i++) e[n++] = dim_expr(c, r->loop_of[i]);
  else if (k == K_KEPT)
    for (int i = 0; i < r->n_kept; i++) e[n++] = dim_expr(c, i);
  else
    e[n++] = dim_expr(c, r->loop_of[r->rank - 1]);
  return mlirAffineMapGet(c->mctx, r->rank, 0, n, e);
}

/* Map of an operand in x's own (elementwise) loop space. */
static MlirAffineMap elementwise_map(ppcc_emit_ctx *c, const red_space *r, operand_kind k) {
  MlirAffineExpr e[PPCC_MAX_RANK];
  int n = 0;
  for (int i = 0; i < r->rank; i++)
    if (k == K_FULL || (k == K_KEPT && !r->mask[i]) || (k == K_LAST && i == r->rank - 1)) e[n++] = dim_expr(c, i);
  return mlirAffineMapGet(c->mctx, r->rank, 0, n, e);
}

static MlirType kept_type(const red_space *r, MlirType elem) {
  int64_t shape[PPCC_MAX_RANK];
  int n = 0;
  for (int i = 0; i < r->rank; i++)
    if (!r->mask[i]) shape[n++] = r->shape[i];
  return tensor_type(n, shape, elem);
}

/* A reduction into a kept-shape tensor of `elem` filled with init; the
 * body's block args are the inputs' elements, then the accumulator. */
static MlirValue reduce(ppcc_emit_ctx *c, const red_space *r, int n_in, const MlirValue *ins, const operand_kind *kinds,
                        MlirType elem, MlirValue init, emit_body_fn body, void *user) {
  MlirAffineMap maps[8];
  for (int k = 0; k < n_in; k++) maps[k] = reduce_map(c, r, kinds[k]);
  maps[n_in] = reduce_map(c, r, K_KEPT);
  MlirValue acc = filled(c, kept_type(r, elem), init);
  return emit_generic(c, n_in, ins, acc, r->rank, r->rank - r->n_kept, maps, body, user);
}

/* An elementwise generic over x's shape with result element type elem. */
static MlirValue elementwise(ppcc_emit_ctx *c, const red_space *r, int n_in, const MlirValue *ins,
                             const operand_kind *kinds, MlirType elem, emit_body_fn body, void *user) {
  MlirAffineMap maps[8];
  for (int k = 0; k < n_in; k++) maps[k] = elementwise_map(c, r, kinds[k]);
  maps[n_in] = mlirAffineMapMultiDimIdentityGet(c->mctx, r->rank);
  MlirValue out = emit_empty(c, tensor_type(r->rank, r->shape, elem));
  return emit_generic(c, n_in, ins, out, r->rank, 0, maps, body, user);
}

/* ---------------- scalar bodies ---------------- */

static MlirValue body_add(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  bool f = is_float_type(mlirValueGetType(barg(b, 0)));
  return bin(c, b, f ? "arith.addf" : "arith.addi", barg(b, 1), barg(b, 0));
}

static MlirValue body_max(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  return bin(c, b, "arith.maximumf", barg(b, 1), barg(b, 0));
}

static MlirType f64_type(ppcc_emit_ctx *c) { return mlirF64TypeGet(c->mctx); }
static MlirValue to_f64(ppcc_emit_ctx *c, MlirBlock b, MlirValue x) { return cast(c, b, "arith.extf", x, f64_type(c)); }

/* acc + f64(x): float sums accumulate in f64, as the interpreter's. */
static MlirValue body_add_f64(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  return bin(c, b, "arith.addf", barg(b, 1), to_f64(c, b, barg(b, 0)));
}

/* acc + f64(exp(x - max)) */
static MlirValue body_add_exp_shifted(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue e = emit_unary_scalar(c, b, "math.exp", bin(c, b, "arith.subf", barg(b, 0), barg(b, 1)));
  return bin(c, b, "arith.addf", barg(b, 2), to_f64(c, b, e));
}

/* exp(x - max) * f32(1 / sum) */
static MlirValue body_softmax(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = barg(b, 0);
  MlirValue e = emit_unary_scalar(c, b, "math.exp", bin(c, b, "arith.subf", x, barg(b, 1)));
  MlirValue inv = bin(c, b, "arith.divf", fconst(c, b, f64_type(c), 1.0), barg(b, 2));
  return bin(c, b, "arith.mulf", e, cast(c, b, "arith.truncf", inv, mlirValueGetType(x)));
}

static MlirValue zero_of(ppcc_emit_ctx *c, MlirType elem) {
  return is_float_type(elem) ? emit_float_const(c, c->block, elem, 0.0) : emit_int_const(c, c->block, elem, 0);
}

/* softmax of an f32 x over dim, as max / sum-of-exp reductions (the sum
 * in f64) and a normalise: the interpreter's softmax_strided. */
static MlirValue softmax_of(ppcc_emit_ctx *c, MlirValue x, int dim) {
  red_space r = red_space_one_dim(x, dim);
  MlirType elem = elem_of(x), f64 = f64_type(c);
  operand_kind full[1] = {K_FULL}, full_kept[2] = {K_FULL, K_KEPT}, full_kept2[3] = {K_FULL, K_KEPT, K_KEPT};
  MlirValue mx = reduce(c, &r, 1, &x, full, elem, emit_float_const(c, c->block, elem, -INFINITY), body_max, NULL);
  MlirValue ins2[2] = {x, mx};
  MlirValue sum = reduce(c, &r, 2, ins2, full_kept, f64, zero_of(c, f64), body_add_exp_shifted, NULL);
  MlirValue ins3[3] = {x, mx, sum};
  return elementwise(c, &r, 3, ins3, full_kept2, elem, body_softmax, NULL);
}

/* ---------------- norms ---------------- */

/* Norms compute on f32 x and weights (f16/bf16 widened, the result
 * rounded once), with f64 sums, f64 1/sqrt and an f64 x * inv: the same
 * steps as the interpreter's kernels, and no overflow or underflow of
 * x^2 or 1/sqrt for |x| up to the f32 maximum. */
typedef struct norm_body {
  double h, eps;
  bool has_bias;
  double weight_offset; /* rms_norm: x / rms * (w + weight_offset) */
} norm_body;

/* 1 / sqrt(acc / H + eps), in f64 */
static MlirValue inv_root(ppcc_emit_ctx *c, MlirBlock b, const norm_body *n, MlirValue acc) {
  MlirType f64 = f64_type(c);
  MlirValue v = bin(c, b, "arith.addf", bin(c, b, "arith.divf", acc, fconst(c, b, f64, n->h)), fconst(c, b, f64, n->eps));
  return bin(c, b, "arith.divf", fconst(c, b, f64, 1.0), emit_unary_scalar(c, b, "math.sqrt", v));
}

/* acc + f64(x)^2 */
static MlirValue body_add_square(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = to_f64(c, b, barg(b, 0));
  return bin(c, b, "arith.addf", barg(b, 1), bin(c, b, "arith.mulf", x, x));
}

/* f32(f64(x) * inv) * w */
static MlirValue body_rms(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = barg(b, 0);
  MlirValue y = bin(c, b, "arith.mulf", to_f64(c, b, x), inv_root(c, b, user, barg(b, 1)));
  const norm_body *n = user;
  MlirValue w = barg(b, 2);
  if (n->weight_offset != 0) w = bin(c, b, "arith.addf", w, fconst(c, b, mlirValueGetType(w), n->weight_offset));
  return bin(c, b, "arith.mulf", cast(c, b, "arith.truncf", y, mlirValueGetType(x)), w);
}

static norm_body norm_of(const ppcc_op *op, const red_space *r) {
  /* eps as the interpreter reads it: an f32 attribute */
  return (norm_body){(double)r->shape[r->rank - 1], (double)(float)ppcc_attr_float(op, "eps", 1e-5), op->n_in == 3,
                     (double)(float)ppcc_attr_float(op, "weight_offset", 0.0)};
}

ppcc_status lower_rms_norm(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  ppcc_status st = need_float(c, op, in_value(g, op, 0));
  if (st) return st;
  MlirValue x0 = operand(c, op, 0, shard);
  MlirValue x = emit_to_f32(c, x0), w = emit_to_f32(c, operand(c, op, 1, shard));
  red_space r = red_space_one_dim(x, rank_of(x) - 1);
  MlirType f64 = f64_type(c);
  operand_kind full[1] = {K_FULL}, kinds[3] = {K_FULL, K_KEPT, K_LAST};
  MlirValue ss = reduce(c, &r, 1, &x, full, f64, zero_of(c, f64), body_add_square, NULL);
  norm_body n = norm_of(op, &r);
  MlirValue ins[3] = {x, ss, w};
  MlirValue y = elementwise(c, &r, 3, ins, kinds, elem_of(x), body_rms, &n);
  set_result(c, op, shard, emit_convert_floats(c, y, elem_of(x0)));
  return PPCC_OK;
}

/* acc + (f64(x) - sum / H)^2 */
static MlirValue body_add_centered_square(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const norm_body *n = user;
  MlirValue mean = bin(c, b, "arith.divf", barg(b, 1), fconst(c, b, f64_type(c), n->h));
  MlirValue dx = bin(c, b, "arith.subf", to_f64(c, b, barg(b, 0)), mean);
  return bin(c, b, "arith.addf", barg(b, 2), bin(c, b, "arith.mulf", dx, dx));
}

/* f32((f64(x) - sum / H) * inv) * w (+ bias) */
static MlirValue body_layer_norm(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const norm_body *n = user;
  MlirValue x = barg(b, 0);
  MlirValue mean = bin(c, b, "arith.divf", barg(b, 1), fconst(c, b, f64_type(c), n->h));
  MlirValue dx = bin(c, b, "arith.subf", to_f64(c, b, x), mean);
  MlirValue y64 = bin(c, b, "arith.mulf", dx, inv_root(c, b, n, barg(b, 2)));
  MlirValue y = bin(c, b, "arith.mulf", cast(c, b, "arith.truncf", y64, mlirValueGetType(x)), barg(b, 3));
  return n->has_bias ? bin(c, b, "arith.addf", y, barg(b, 4)) : y;
}

ppcc_status lower_layer_norm(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  ppcc_status st = need_float(c, op, in_value(g, op, 0));
  if (st) return st;
  MlirValue x0 = operand(c, op, 0, shard), x = emit_to_f32(c, x0);
  red_space r = red_space_one_dim(x, rank_of(x) - 1);
  MlirType f64 = f64_type(c);
  norm_body n = norm_of(op, &r);
  if (c->runtime_calls && c->runtime_calls->layer_norm && mlirTypeIsAF32(elem_of(x0))) { /* the runtime's kernel */
    MlirValue y = c->runtime_calls->layer_norm(c, x, operand(c, op, 1, shard),
                                               n.has_bias ? operand(c, op, 2, shard) : (MlirValue){NULL}, n.eps,
                                               mlirValueGetType(x));
    if (!mlirValueIsNull(y)) {
      set_result(c, op, shard, y);
      return PPCC_OK;
    }
  }
  operand_kind full[1] = {K_FULL}, full_kept[2] = {K_FULL, K_KEPT};
  MlirValue sum = reduce(c, &r, 1, &x, full, f64, zero_of(c, f64), body_add_f64, NULL);
  MlirValue ins2[2] = {x, sum};
  MlirValue sq = reduce(c, &r, 2, ins2, full_kept, f64, zero_of(c, f64), body_add_centered_square, &n);
  MlirValue w = emit_to_f32(c, operand(c, op, 1, shard));
  MlirValue ins[5] = {x, sum, sq, w, n.has_bias ? emit_to_f32(c, operand(c, op, 2, shard)) : x};
  operand_kind kinds[5] = {K_FULL, K_KEPT, K_KEPT, K_LAST, K_LAST};
  MlirValue y = elementwise(c, &r, n.has_bias ? 5 : 4, ins, kinds, elem_of(x), body_layer_norm, &n);
  set_result(c, op, shard, emit_convert_floats(c, y, elem_of(x0)));
  return PPCC_OK;
}

/* ---------------- softmax ---------------- */

ppcc_status lower_softmax(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *x = in_value(g, op, 0);
  ppcc_status st = need_float(c, op, x);
  if (st) return st;
  if (x->rank == 0) return emit_op_error(c, op, "softmax of a rank-0 tensor has no MLIR lowering");
  int dim = norm_dim(ppcc_attr_int(op, "dim", -1), x->rank);
  MlirValue x0 = operand(c, op, 0, shard);
  set_result(c, op, shard, emit_convert_floats(c, softmax_of(c, emit_to_f32(c, x0), dim), elem_of(x0)));
  return PPCC_OK;
}

/* ---------------- sum, mean ---------------- */

typedef struct scale_body {
  double count; /* divide by it (mean); 0: a plain sum */
  MlirType elem;
} scale_body;

/* f64 accumulator -> the result's element type, via f32 (the interpreter
 * rounds its double sums to f32, then to f16/bf16). */
static MlirValue body_round_sum(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const scale_body *s = user;
  MlirValue x = barg(b, 0);
  if (s->count != 0) x = bin(c, b, "arith.divf", x, fconst(c, b, f64_type(c), s->count));
  MlirValue f = cast(c, b, "arith.truncf", x, mlirF32TypeGet(c->mctx));
  return mlirTypeIsAF32(s->elem) ? f : cast(c, b, "arith.truncf", f, s->elem);
}

/* The sum over the reduced dims (kept dims only; f64 for floats); *count
 * gets how many elements each result element sums. */
static MlirValue sum_over(ppcc_emit_ctx *c, const ppcc_op *op, MlirValue x, int64_t *count) {
  int rank = rank_of(x);
  bool mask[PPCC_MAX_RANK] = {false};
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < rank; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) mask[norm_dim(a->ints[i], rank)] = true;
  red_space r = red_space_make(x, mask);
  *count = 1;
  for (int i = 0; i < rank; i++) *count *= mask[i] ? r.shape[i] : 1;
  operand_kind full[1] = {K_FULL};
  MlirType elem = elem_of(x);
  if (!is_float_type(elem)) return reduce(c, &r, 1, &x, full, elem, zero_of(c, elem), body_add, NULL);
  MlirType f64 = f64_type(c);
  return reduce(c, &r, 1, &x, full, f64, zero_of(c, f64), body_add_f64, NULL);
}

static ppcc_status lower_reduction(ppcc_emit_ctx *c, const ppcc_op *op, int shard, bool mean) {
  if (mean) {
    ppcc_status st = need_float(c, op, in_value(c->g, op, 0));
    if (st) return st;
  }
  int64_t count;
  MlirValue x = operand(c, op, 0, shard);
  MlirValue y = sum_over(c, op, x, &count);
  if (is_float_type(elem_of(x))) { /* the reduced dims are never split (shard_reduce): count is global */
    red_space r = red_space_make(y, (bool[PPCC_MAX_RANK]){false});
    scale_body s = {mean ? (count > 0 ? (double)count : NAN) : 0, elem_of(x)};
    operand_kind full[1] = {K_FULL};
    y = elementwise(c, &r, 1, &y, full, elem_of(x), body_round_sum, &s);
  }
  MlirType t = emit_shard_type(c, out_value(c->g, op));
  set_result(c, op, shard, mlirTypeEqual(t, mlirValueGetType(y)) ? y : emit_reshape_to(c, y, t)); /* keepdim */
  return PPCC_OK;
}

ppcc_status lower_sum(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  return lower_reduction(c, op, shard, false);
}

ppcc_status lower_mean(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  return lower_reduction(c, op, shard, true);
}

/* ---------------- argmax ---------------- */

typedef struct argmax_body {
  int dim_loop;
} argmax_body;

/* The first index whose element equals the max, or is NaN (then the max
 * is NaN too, as arith.maximumf propagates it): acc = min(acc, match ? i : acc). */
static MlirValue body_argmax(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const argmax_body *a = user;
  MlirValue x = barg(b, 0), mx = barg(b, 1), acc = barg(b, 2);
  MlirValue match = bin(c, b, "arith.ori", compare(c, b, true, CMPF_OEQ, x, mx), compare(c, b, true, CMPF_UNO, x, x));
  MlirValue i = cast(c, b, "arith.index_cast", loop_index(c, b, a->dim_loop), mlirValueGetType(acc));
  return bin(c, b, "arith.minsi", acc, select_value(c, b, match, i, acc));
}

ppcc_status lower_argmax(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *xv = in_value(g, op, 0);
  ppcc_status st = need_float(c, op, xv);
  if (st) return st;
  if (xv->rank == 0) return emit_op_error(c, op, "argmax of a rank-0 tensor has no MLIR lowering");
  MlirValue x = operand(c, op, 0, shard);
  int dim = norm_dim(ppcc_attr_int(op, "dim", -1), xv->rank);
  red_space r = red_space_one_dim(x, dim);
  MlirType elem = elem_of(x), i64 = mlirIntegerTypeGet(c->mctx, 64);
  operand_kind full[1] = {K_FULL}, full_kept[2] = {K_FULL, K_KEPT};
  MlirValue mx = reduce(c, &r, 1, &x, full, elem, emit_float_const(c, c->block, elem, -INFINITY), body_max, NULL);
  argmax_body a = {r.rank - 1};
  MlirValue ins[2] = {x, mx};
  MlirValue none = emit_int_const(c, c->block, i64, r.shape[dim]); /* larger than any index */
  set_result(c, op, shard, reduce(c, &r, 2, ins, full_kept, i64, none, body_argmax, &a));
  return PPCC_OK;
}

/* ---------------- embedding ---------------- */

typedef struct embedding_body {
  MlirValue table;
  int hidden_loop;
  int64_t vocab; /* > 0: a negative id counts from the end (wrap_negative) */
  int64_t row_offset, rows; /* this shard's rows of a vocab-split table */
} embedding_body;

/* table[id - offset, h] when the row is in this shard's table, else 0
 * (a vocab-split table leaves partial sums). Ids outside the vocabulary
 * fail the run (emit_check_index) and read row 0 meanwhile, never memory
 * outside the table. */
static MlirValue body_embedding(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const embedding_body *e = user;
  MlirValue id = barg(b, 0);
  MlirType it = mlirValueGetType(id), index = mlirIndexTypeGet(c->mctx);
  if (e->vocab > 0)
    id = select_value(c, b, compare(c, b, false, CMPI_SLT, id, emit_int_const(c, b, it, 0)),
                      bin(c, b, "arith.addi", id, emit_int_const(c, b, it, e->vocab)), id);
  MlirValue local = bin(c, b, "arith.subi", id, emit_int_const(c, b, it, e->row_offset));
  MlirValue ok = bin(c, b, "arith.andi", compare(c, b, false, CMPI_SGE, local, emit_int_const(c, b, it, 0)),
                     compare(c, b, false, CMPI_SLT, local, emit_int_const(c, b, it, e->rows)));
  MlirValue row = cast(c, b, "arith.index_cast", select_value(c, b, ok, local, emit_int_const(c, b, it, 0)), index);
  MlirValue at[2] = {row, loop_index(c, b, e->hidden_loop)};
  MlirValue v = extract(c, b, e->table, 2, at);
  MlirType t = mlirValueGetType(v);
  MlirValue zero = is_float_type(t) ? fconst(c, b, t, 0.0) : emit_int_const(c, b, t, 0);
  return select_value(c, b, ok, v, zero);
}

ppcc_status lower_embedding(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *table = in_value(g, op, 1);
  MlirValue ids = operand(c, op, 0, shard), tab = operand(c, op, 1, shard);
  MlirType t = emit_shard_type(c, out_value(g, op));
  int rank = (int)mlirShapedTypeGetRank(t);
  bool vocab_split = table->layout.kind == PPCC_LAYOUT_SPLIT && table->layout.dim == 0;
  int64_t rows = dim_size(tab, 0);
  /* ids outside the whole vocabulary fail the run, as in the interpreter. */
  bool wraps = ppcc_attr_int(op, "wrap_negative", 0) != 0;
  ppcc_status st = emit_check_index(c, ids, table->shape[0], EXEC_TOKEN_IDS | (wraps ? EXEC_INDEX_WRAPS : 0));
  if (st) return st;
  if (ppcc_dtype_is_quantized(table->dtype)) { /* rows decoded by the runtime (executable form only) */
    if (!c->runtime_calls || !c->runtime_calls->qembedding)
      return emit_op_error(c, op, "table '%s' is %s: only the executable form reads quantized tables", table->name,
                           ppcc_dtype_name(table->dtype));
    MlirValue y = c->runtime_calls->qembedding(c, ids, tab, table->dtype, vocab_split ? shard * rows : 0,
                                               wraps ? table->shape[0] : 0, t);
    if (mlirValueIsNull(y)) return emit_op_error(c, op, "the quantized embedding call could not be built");
    set_result(c, op, shard, y);
    return PPCC_OK;
  }
  embedding_body e = {tab, rank - 1, wraps ? table->shape[0] : 0, vocab_split ? shard * rows : 0, rows};
  MlirAffineExpr ex[PPCC_MAX_RANK];
  for (int i = 0; i < rank - 1; i++) ex[i] = dim_expr(c, i);
  MlirAffineMap maps[2] = {mlirAffineMapGet(c->mctx, rank, 0, rank - 1, ex), mlirAffineMapMultiDimIdentityGet(c->mctx, rank)};
  set_result(c, op, shard, emit_generic(c, 1, &ids, emit_empty(c, t), rank, 0, maps, body_embedding, &e));
  return PPCC_OK;
}

/* ---------------- rotary ---------------- */

typedef struct rotary_body {
  MlirValue x;
  int64_t half;
  double log_theta_over_d; /* -2 ln(theta) / D: freq_j = exp(j * this) */
  double factor, low, high; /* rope scaling (see kernel_rotary's scaled_freq) */
  int64_t orig;
  bool divisors; /* a third operand: per-pair frequency divisors (block arg 1 of the tables) */
  /* the block args of the tables after the positions (-1: absent): the
   * third operand, the call's largest position (0-d), rope_divisors and
   * rope_long_divisors as f64 constants */
  int arg_ff, arg_most, arg_div, arg_long;
  int64_t dynamic, long_after; /* rope_dynamic_max_position, rope_long_after */
  double attention_factor;
} rotary_body;

/* The scaled frequency, as scaled_freq in src/runtime/kernels/kernels_llm.c:
 * linear: freq / factor; llama3: freq above 2 pi high / orig kept, below
 * 2 pi low / orig divided by factor, blended in between. */
static MlirValue scale_freq(ppcc_emit_ctx *c, MlirBlock b, const rotary_body *r, MlirValue freq) {
  MlirType f32 = mlirValueGetType(freq); /* the angle's type (f64) */
  MlirValue scaled = bin(c, b, "arith.mulf", freq, fconst(c, b, f32, 1.0 / r->factor));
  if (r->orig <= 0) return scaled;
  double two_pi = 2.0 * 3.14159265358979323846, orig = (double)r->orig;
  MlirValue smooth = bin(c, b, "arith.subf", bin(c, b, "arith.mulf", freq, fconst(c, b, f32, orig / two_pi)),
                         fconst(c, b, f32, r->low));
  smooth = bin(c, b, "arith.mulf", smooth, fconst(c, b, f32, 1.0 / (r->high - r->low)));
  MlirValue one_minus = bin(c, b, "arith.subf", fconst(c, b, f32, 1.0), smooth);
  MlirValue mid = bin(c, b, "arith.addf", bin(c, b, "arith.mulf", one_minus, scaled), bin(c, b, "arith.mulf", smooth, freq));
  MlirValue is_high = compare(c, b, true, CMPF_OGT, freq, fconst(c, b, f32, two_pi * r->high / orig));
  MlirValue is_low = compare(c, b, true, CMPF_OLT, freq, fconst(c, b, f32, two_pi * r->low / orig));
  return select_value(c, b, is_high, freq, select_value(c, b, is_low, scaled, mid));
}

/* Rotate-half pairing (see kernel_rotary): lane i < D/2 pairs with
 * i + D/2 and gets x[i] cos - x[i+D/2] sin; lane i >= D/2 gets
 * x[i] cos + x[i-D/2] sin; the angle is pos * theta^(-2j/D), j = i mod D/2.
 * The angle, its cos and sin are computed in f64 (as the interpreter
 * does): in f32 an angle of pos * freq at position 500k is off by ~4e-2.
 * They depend on the position and the pair only, so each pair's frequency
 * is computed once ([D/2]) and the cos and sin once per position and pair
 * ([S, D/2] or [B, S, D/2]); the rotation reads them at lane mod D/2: exp,
 * cos and sin per head were most of a Llama layer's rotary time, and per
 * lane of both halves (the same angle twice) and exp per position they
 * still made the JIT's rotary 2.5x the interpreter's (gen_llama h128). */
static MlirValue body_rotary_freq(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const rotary_body *r = user;
  MlirType f64 = mlirF64TypeGet(c->mctx);
  MlirValue j = loop_index(c, b, 0);
  MlirValue exponent = fconst(c, b, f64, r->log_theta_over_d), longest = exponent; /* set when used (arg_most) */
  if (r->arg_most >= 0) longest = bin(c, b, "arith.addf", int_to_float(c, b, barg(b, r->arg_most), f64), fconst(c, b, f64, 1));
  if (r->dynamic > 0) { /* dynamic NTK (kernel_rotary's rotary_freqs): ln theta + D/(D-2) ln ntk */
    double d = 2.0 * (double)r->half;
    MlirValue ntk = bin(c, b, "arith.subf", bin(c, b, "arith.mulf", longest, fconst(c, b, f64, r->factor / (double)r->dynamic)),
                        fconst(c, b, f64, r->factor - 1.0));
    ntk = select_value(c, b, compare(c, b, true, CMPF_OGT, longest, fconst(c, b, f64, (double)r->dynamic)), ntk,
                       fconst(c, b, f64, 1.0));
    exponent = bin(c, b, "arith.addf", exponent,
                   bin(c, b, "arith.mulf", emit_unary_scalar(c, b, "math.log", ntk), fconst(c, b, f64, -2.0 / (d - 2.0))));
  }
  MlirValue freq = emit_unary_scalar(c, b, "math.exp", bin(c, b, "arith.mulf", int_to_float(c, b, j, f64), exponent));
  if (r->dynamic <= 0 && (r->factor != 1.0 || r->orig > 0)) freq = scale_freq(c, b, r, freq);
  if (r->arg_div >= 0 || r->arg_long >= 0) {
    MlirValue div = r->arg_div >= 0 ? barg(b, r->arg_div) : fconst(c, b, f64, 1.0);
    if (r->arg_long >= 0)
      div = select_value(c, b, compare(c, b, true, CMPF_OGT, longest, fconst(c, b, f64, (double)r->long_after)),
                         barg(b, r->arg_long), div);
    freq = bin(c, b, "arith.divf", freq, div);
  }
  if (r->arg_ff >= 0) freq = bin(c, b, "arith.divf", freq, cast(c, b, "arith.extf", to_f32(c, b, barg(b, r->arg_ff)), f64));
  return freq;
}

/* cos and sin of position (block arg 0) times frequency (arg 1), as f32,
 * in one body: LLVM makes them one sincos call (glibc's, the same bits as
 * sin and cos apart), half the trigonometry's time. */
static void body_rotary_table(ppcc_emit_ctx *c, MlirBlock b, void *user, MlirValue yielded[2]) {
  const rotary_body *r = user;
  MlirType f32 = mlirF32TypeGet(c->mctx), f64 = mlirF64TypeGet(c->mctx);
  MlirValue angle = bin(c, b, "arith.mulf", int_to_float(c, b, barg(b, 0), f64), barg(b, 1));
  for (int k = 0; k < 2; k++) {
    MlirValue v = emit_unary_scalar(c, b, k ? "math.sin" : "math.cos", angle);
    if (r->attention_factor != 1.0) v = bin(c, b, "arith.mulf", v, fconst(c, b, f64, r->attention_factor));
    yielded[k] = cast(c, b, "arith.truncf", v, f32);
  }
}

/* max(acc, x) of integers */
static MlirValue body_max_int(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  (void)user;
  return bin(c, b, "arith.maxsi", barg(b, 1), barg(b, 0));
}

/* The largest entry of the positions, a 0-d tensor. */
static MlirValue largest_position(ppcc_emit_ctx *c, MlirValue pos) {
  int rank = rank_of(pos);
  MlirType elem = elem_of(pos);
  MlirValue init = filled(c, tensor_type(0, NULL, elem), emit_int_const(c, c->block, elem, -1));
  MlirAffineMap maps[2] = {mlirAffineMapMultiDimIdentityGet(c->mctx, rank), mlirAffineMapGet(c->mctx, rank, 0, 0, NULL)};
  return emit_generic(c, 1, &pos, init, rank, rank, maps, body_max_int, NULL);
}

/* A FLOATS attribute as an f64 tensor constant [n]. */
static MlirValue f64_constant(ppcc_emit_ctx *c, const double *v, int64_t n) {
  MlirType t = tensor_type(1, &n, f64_type(c));
  MlirNamedAttribute value = emit_named(c, "value", mlirDenseElementsAttrDoubleGet(t, (intptr_t)n, v));
  emit_op_spec cst = {"arith.constant", 0, NULL, 1, &t, 1, &value, 0};
  return mlirOperationGetResult(emit_op(c, &cst), 0);
}

static MlirValue body_rotary(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const rotary_body *r = user;
  MlirValue x = barg(b, 0), cosv = barg(b, 1), sinv = barg(b, 2);
  MlirType t = mlirValueGetType(x);
  MlirValue idx[4];
  for (int i = 0; i < 4; i++) idx[i] = loop_index(c, b, i);
  MlirValue half = emit_index_const(c, b, r->half);
  MlirValue low = compare(c, b, false, CMPI_ULT, idx[3], half);
  idx[3] = select_value(c, b, low, bin(c, b, "arith.addi", idx[3], half), bin(c, b, "arith.subi", idx[3], half));
  MlirValue partner = to_f32(c, b, extract(c, b, r->x, 4, idx)); /* the partner lane */
  MlirValue ps = bin(c, b, "arith.mulf", partner, sinv);
  MlirValue signed_ps = select_value(c, b, low, emit_unary_scalar(c, b, "arith.negf", ps), ps);
  return from_f32(c, b, bin(c, b, "arith.addf", bin(c, b, "arith.mulf", to_f32(c, b, x), cosv), signed_ps), t);
}

ppcc_status lower_rotary(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *xv = in_value(g, op, 0);
  MlirValue x = operand(c, op, 0, shard), pos = operand(c, op, 1, shard);
  double theta = ppcc_attr_float(op, "theta", 10000.0);
  if (!(theta > 0)) return emit_op_error(c, op, "attrs.theta must be positive, got %g", theta);
  rotary_body r = {x, xv->shape[3] / 2, -2.0 * log(theta) / (double)xv->shape[3], ppcc_attr_float(op, "rope_factor", 1.0),
                   ppcc_attr_float(op, "rope_low_freq_factor", 1.0), ppcc_attr_float(op, "rope_high_freq_factor", 4.0),
                   ppcc_attr_int(op, "rope_original_max_position", 0), op->n_in > 2, -1, -1, -1, -1,
                   ppcc_attr_int(op, "rope_dynamic_max_position", 0), ppcc_attr_int(op, "rope_long_after", 0),
                   ppcc_attr_float(op, "rope_attention_factor", 1.0)};
  bool has_long = ppcc_op_attr(op, "rope_long_divisors") != NULL;
  int n_div = 0, n_long = 0;
  const double *div = ppcc_attr_floats(op, "rope_divisors", &n_div), *long_div = ppcc_attr_floats(op, "rope_long_divisors", &n_long);
  /* positions [S] or per row [B, S]; the frequencies [D/2] (from what the
   * op has of the third operand, the largest position, the divisors and
   * the long divisors, read at the pair); the tables [S, D/2] or
   * [B, S, D/2] */
  bool per_row = in_value(g, op, 1)->rank == 2;
  int table_rank = per_row ? 3 : 2;
  MlirType xt = mlirValueGetType(x);
  int64_t table_shape[3] = {mlirShapedTypeGetDimSize(xt, 0), mlirShapedTypeGetDimSize(xt, 1), r.half};
  const int64_t *tshape = per_row ? table_shape : table_shape + 1;
  MlirType table_type = tensor_type(table_rank, tshape, mlirF32TypeGet(c->mctx));
  MlirAffineMap pair = mlirAffineMapMultiDimIdentityGet(c->mctx, 1);
  MlirValue freq_ins[4];
  MlirAffineMap freq_maps[5];
  int n_ins = 0;
  if (r.divisors) {
    r.arg_ff = n_ins;
    freq_maps[n_ins] = pair;
    freq_ins[n_ins++] = operand(c, op, 2, shard);
  }
  if (r.dynamic > 0 || has_long) {
    r.arg_most = n_ins;
    freq_maps[n_ins] = mlirAffineMapGet(c->mctx, 1, 0, 0, NULL);
    freq_ins[n_ins++] = largest_position(c, pos);
  }
  if (div && n_div == r.half) {
    r.arg_div = n_ins;
    freq_maps[n_ins] = pair;
    freq_ins[n_ins++] = f64_constant(c, div, n_div);
  }
  if (has_long && long_div && n_long == r.half) {
    r.arg_long = n_ins;
    freq_maps[n_ins] = pair;
    freq_ins[n_ins++] = f64_constant(c, long_div, n_long);
  }
  freq_maps[n_ins] = pair;
  MlirValue freq = emit_generic(c, n_ins, freq_ins, emit_empty(c, tensor_type(1, &r.half, f64_type(c))), 1, 0, freq_maps,
                                body_rotary_freq, &r);
  MlirAffineExpr pos_dims[2] = {dim_expr(c, 0), dim_expr(c, 1)}, lane = dim_expr(c, table_rank - 1);
  MlirAffineMap table_maps[4] = {mlirAffineMapGet(c->mctx, table_rank, 0, table_rank - 1, pos_dims),
                                 mlirAffineMapGet(c->mctx, table_rank, 0, 1, &lane),
                                 mlirAffineMapMultiDimIdentityGet(c->mctx, table_rank),
                                 mlirAffineMapMultiDimIdentityGet(c->mctx, table_rank)};
  MlirValue tables[2], table_ins[2] = {pos, freq}, inits[2] = {emit_empty(c, table_type), emit_empty(c, table_type)};
  emit_generic2(c, 2, table_ins, inits, table_rank, table_maps, body_rotary_table, &r, tables);
  MlirAffineExpr pair_of_x = mlirAffineModExprGet(dim_expr(c, 3), mlirAffineConstantExprGet(c->mctx, r.half));
  MlirAffineExpr bsd[3] = {dim_expr(c, 0), dim_expr(c, 1), pair_of_x};
  MlirAffineMap table_of_x = mlirAffineMapGet(c->mctx, 4, 0, table_rank, per_row ? bsd : bsd + 1);
  MlirAffineMap maps[4] = {mlirAffineMapMultiDimIdentityGet(c->mctx, 4), table_of_x, table_of_x,
                           mlirAffineMapMultiDimIdentityGet(c->mctx, 4)};
  MlirValue ins[3] = {x, tables[0], tables[1]};
  MlirValue out = emit_empty(c, xt);
  set_result(c, op, shard, emit_generic(c, 3, ins, out, 4, 0, maps, body_rotary, &r));
  return PPCC_OK;
}

/* ---------------- attention ---------------- */

static MlirValue body_mul_add(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  return bin(c, b, "arith.addf", barg(b, 2), bin(c, b, "arith.mulf", barg(b, 0), barg(b, 1)));
}

/* kv head of query head h: h floordiv (Hq / Hkv). */
static MlirAffineExpr kv_head(ppcc_emit_ctx *c, int loop, int64_t group) {
  MlirAffineExpr h = dim_expr(c, loop);
  return group == 1 ? h : mlirAffineFloorDivExprGet(h, mlirAffineConstantExprGet(c->mctx, group));
}

/* out[b, h, i, j] = sum_r a[b, h, i, r] * kv[b, h / group, ., .], with kv
 * indexed [r, j] (p . v) or [j, r] (q . k^T). Loops b, h, i, j, r.
 * seq_major: the operands q (a) or out, and kv, as [B, S, H, D] (a is
 * then q, out the scores; else a is the scores, out [B, S, Hq, Dv]): the
 * maps read them as they lie. */
static MlirValue head_contraction(ppcc_emit_ctx *c, MlirValue a, MlirValue kv, bool kv_transposed, int64_t group,
                                  int64_t n_j, bool seq_major) {
  bool a_sm = seq_major && kv_transposed, o_sm = seq_major && !kv_transposed;
  MlirAffineExpr ea[4] = {dim_expr(c, 0), dim_expr(c, a_sm ? 2 : 1), dim_expr(c, a_sm ? 1 : 2), dim_expr(c, 4)};
  MlirAffineExpr kh = kv_head(c, 1, group), kp = dim_expr(c, kv_transposed ? 3 : 4), ke = dim_expr(c, kv_transposed ? 4 : 3);
  MlirAffineExpr ek[4] = {dim_expr(c, 0), seq_major ? kp : kh, seq_major ? kh : kp, ke};
  MlirAffineExpr eo[4] = {dim_expr(c, 0), dim_expr(c, o_sm ? 2 : 1), dim_expr(c, o_sm ? 1 : 2), dim_expr(c, 3)};
  MlirAffineMap maps[3] = {mlirAffineMapGet(c->mctx, 5, 0, 4, ea), mlirAffineMapGet(c->mctx, 5, 0, 4, ek),
                           mlirAffineMapGet(c->mctx, 5, 0, 4, eo)};
  int64_t heads = dim_size(a, a_sm ? 2 : 1), rows = dim_size(a, a_sm ? 1 : 2);
  int64_t shape[4] = {dim_size(a, 0), o_sm ? rows : heads, o_sm ? heads : rows, n_j};
  MlirType elem = elem_of(a);
  MlirValue init = filled(c, tensor_type(4, shape, elem), zero_of(c, elem));
  MlirValue ins[2] = {a, kv};
  return emit_generic(c, 2, ins, init, 5, 1, maps, body_mul_add, NULL);
}

typedef emit_attention_mask mask_body;

/* scale * score, capped (softcap * tanh(x / softcap)) when softcap > 0. */
static MlirValue scaled_score(ppcc_emit_ctx *c, MlirBlock b, const mask_body *m, MlirValue x) {
  MlirType t = mlirValueGetType(x);
  MlirValue v = bin(c, b, "arith.mulf", x, fconst(c, b, t, m->scale));
  if (!(m->softcap > 0)) return v;
  MlirValue th = emit_unary_scalar(c, b, "math.tanh", bin(c, b, "arith.divf", v, fconst(c, b, t, m->softcap)));
  return bin(c, b, "arith.mulf", th, fconst(c, b, t, m->softcap));
}

/* -inf where the key (loop 3) is after `last` or, with a window, at or
 * before last - window; `last` and the key as values of type `it`. */
static MlirValue masked_score(ppcc_emit_ctx *c, MlirBlock b, const mask_body *m, MlirValue v, MlirValue key,
                              MlirValue last, bool is_signed) {
  MlirType t = mlirValueGetType(v);
  MlirValue hidden = compare(c, b, false, is_signed ? CMPI_SGT : CMPI_UGT, key, last);
  if (m->window > 0) { /* key <= last - window, only where last >= window (no wrap) */
    MlirValue w = is_signed ? emit_int_const(c, b, mlirValueGetType(last), m->window) : emit_index_const(c, b, m->window);
    MlirValue reaches = compare(c, b, false, CMPI_SGE, last, w);
    MlirValue before = compare(c, b, false, CMPI_SLE, key, bin(c, b, "arith.subi", last, w));
    hidden = bin(c, b, "arith.ori", hidden, bin(c, b, "arith.andi", reaches, before));
  }
  return select_value(c, b, hidden, fconst(c, b, t, -INFINITY), v);
}

/* scale * score, or -inf for a key after the query's position. */
static MlirValue body_scale_mask(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const mask_body *m = user;
  MlirValue v = scaled_score(c, b, m, barg(b, 0));
  if (!m->causal) return v;
  MlirValue last_visible = bin(c, b, "arith.addi", loop_index(c, b, 2), emit_index_const(c, b, m->offset));
  return masked_score(c, b, m, v, loop_index(c, b, 3), last_visible, false);
}

/* scale * score, or -inf for a cache slot after the query's position
 * (operand 1: positions[S] or [B, S], loop 2 is the query, loop 3 the key). */
static MlirValue body_scale_mask_positions(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  const mask_body *m = user;
  MlirValue pos = barg(b, 1);
  MlirValue v = scaled_score(c, b, m, barg(b, 0));
  MlirValue key = cast(c, b, "arith.index_cast", loop_index(c, b, 3), mlirValueGetType(pos));
  return masked_score(c, b, m, v, key, pos, true);
}

/* softmax(q k^T * scale, causal bottom-right) v per head, grouped-query:
 * the same semantics as kernel_attention. */
ppcc_status lower_attention(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  ppcc_status st = need_float(c, op, in_value(g, op, 0));
  if (st) return st;
  MlirValue q0 = operand(c, op, 0, shard); /* f16/bf16: computed in f32, rounded once */
  MlirValue q = emit_to_f32(c, q0), k = emit_to_f32(c, operand(c, op, 1, shard)), v = emit_to_f32(c, operand(c, op, 2, shard));
  bool seq_major = ppcc_attr_bool(op, "seq_major", false);
  int hd = seq_major ? 2 : 1, sd = 3 - hd; /* the heads' dim and the positions' */
  int64_t Hq = dim_size(q, hd), Hkv = dim_size(k, hd), S = dim_size(q, sd), T = dim_size(k, sd), D = dim_size(q, 3);
  if (Hkv <= 0 || Hq % Hkv != 0)
    return emit_op_error(c, op, "shard %d: %lld query heads do not group over %lld kv heads", shard, (long long)Hq,
                         (long long)Hkv);
  int64_t group = Hq / Hkv;
  mask_body m = {ppcc_attr_float(op, "scale", D > 0 ? 1.0 / sqrt((double)D) : 1.0), ppcc_attr_bool(op, "causal", false),
                 T - S, ppcc_attr_int(op, "window", 0), ppcc_attr_float(op, "softcap", 0.0), seq_major};
  /* Executable form: the runtime's GEMM-based kernel (both backends). */
  MlirValue positions = op->n_in == 4 ? operand(c, op, 3, shard) : (MlirValue){NULL};
  MlirValue call = c->runtime_calls ? c->runtime_calls->attention(c, q, k, v, positions, &m,
                                                                 emit_shard_type(c, out_value(g, op)))
                                   : (MlirValue){NULL};
  if (!mlirValueIsNull(call)) {
    set_result(c, op, shard, call);
    return PPCC_OK;
  }
  MlirValue scores = head_contraction(c, q, k, true, group, T, seq_major); /* [B, Hq, S, T] */
  red_space all = red_space_make(scores, (bool[PPCC_MAX_RANK]){false});
  operand_kind full[1] = {K_FULL};
  MlirValue masked;
  if (op->n_in == 4) { /* query s (of row b) sees cache slots 0..positions[(b,) s] */
    MlirAffineExpr bs[2] = {dim_expr(c, 0), dim_expr(c, 2)};
    bool per_row = in_value(g, op, 3)->rank == 2;
    MlirAffineMap maps[3] = {mlirAffineMapMultiDimIdentityGet(c->mctx, 4),
                             mlirAffineMapGet(c->mctx, 4, 0, per_row ? 2 : 1, per_row ? bs : bs + 1),
                             mlirAffineMapMultiDimIdentityGet(c->mctx, 4)};
    MlirValue ins[2] = {scores, operand(c, op, 3, shard)};
    masked = emit_generic(c, 2, ins, emit_empty(c, mlirValueGetType(scores)), 4, 0, maps, body_scale_mask_positions, &m);
  } else {
    masked = elementwise(c, &all, 1, &scores, full, elem_of(scores), body_scale_mask, &m);
  }
  MlirValue p = softmax_of(c, masked, 3);
  set_result(c, op, shard, emit_convert_floats(c, head_contraction(c, p, v, false, group, dim_size(v, 3), seq_major), elem_of(q0)));
  return PPCC_OK;
}

/* ---------------- concat, slice ---------------- */

/* A chain of tensor.insert_slice into tensor.empty rather than
 * tensor.concat: upstream one-shot bufferization handles the former, so
 * the executable form can reuse this lowering as is. */
ppcc_status lower_concat(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *out = out_value(g, op);
  int dim = norm_dim(ppcc_attr_int(op, "dim", 0), out->rank);
  MlirValue parts[16]; /* the op table allows at most 16 operands */
  for (int k = 0; k < op->n_in; k++) parts[k] = operand(c, op, k, shard);
  set_result(c, op, shard, emit_concat_by_inserts(c, dim, op->n_in, parts, emit_shard_type(c, out)));
  return PPCC_OK;
}

/* The sliced dim is never the split dim (shard_slice), so every shard
 * takes the same [start, end) of its local tensor. */
ppcc_status lower_slice(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  const ppcc_value *x = in_value(g, op, 0), *out = out_value(g, op);
  int dim = norm_dim(ppcc_attr_int(op, "dim", 0), x->rank);
  int64_t start = ppcc_attr_int(op, "start", 0);
  if (start < 0) start += x->shape[dim];
  set_result(c, op, shard, emit_slice(c, operand(c, op, 0, shard), dim, start, out->shape[dim]));
  return PPCC_OK;
}
