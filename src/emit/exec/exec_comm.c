/* Transfers, collectives and GEMMs of the executable form as calls to the
 * runtime ABI (adapters in src/runtime/jit/jit_abi.c). Every call names its
 * buffer dtype in the symbol (one MLIR signature per element type) and
 * passes, first, the op index (for error messages) and the ppcc_dtype:
 *
 *   ppcc_rt_send_T(op, dtype, dst, buf)         ppcc_rt_recv_T(op, dtype, src, buf)
 *   ppcc_rt_all_reduce_T(op, dtype, group, rank, buf)            (in place)
 *   ppcc_rt_all_gather_T(op, dtype, group, rank, outer, inner, shard, full)
 *   ppcc_rt_reduce_scatter_T(op, dtype, group, rank, outer, inner, full, shard)
 *   ppcc_rt_matmul_f32(a, b, c, b_transposed)                    (OpenBLAS)
 *   ppcc_rt_linear_f32(a, w, bias, c)          (a . w^T + bias, the bias threaded)
 *   ppcc_rt_layer_norm_f32(x, w, b, y, eps, has_bias)     (rows threaded; b = w when none)
 *   ppcc_rt_conv_f32(x, w, y, group, strides, dilations, pads)   (im2col + GEMM)
 *   ppcc_rt_attention_f32(q, k, v, out, scale, causal, window, softcap, seq_major)   (OpenBLAS)
 *   ppcc_rt_attention_positions_T(q, k, v, out, scale, causal, window, softcap, seq_major, positions)
 *                                                 (T: i64, i32; OpenBLAS)
 *   ppcc_rt_unary_f32(x, out, op id)     (exp, silu, sigmoid, gelu: vector)
 *   ppcc_rt_check_index_T(op, dtype, kind, bound, index)         (T: i64, i32)
 *   ppcc_rt_qlinear_f32(x, w, y, wdtype)          (w: quantized blocks as i8)
 *   ppcc_rt_hlinear_T(x, w, y, wdtype)            (T: f16, bf16; w as stored)
 *   ppcc_rt_qembedding_T(ids, table, out, wdtype, first, wrap)   (T: i64, i32)
 *
 * Buffers are memref<*xT>; a group is a memref.global of device ids.
 * Collectives follow the executor's plan (src/runtime/exec/executor.c): every
 * device first produces and sends what it owns, then receives, so the
 * device functions cannot deadlock (sends never block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"

static MlirType elem_of(MlirValue v) { return mlirShapedTypeGetElementType(mlirValueGetType(v)); }

/* "ppcc_rt_send_f32" */
static void symbol(char *buf, size_t n, const char *fn, MlirType elem) {
  snprintf(buf, n, "ppcc_rt_%s_%s", fn, ppcc_dtype_name((ppcc_dtype)exec_dtype_of(elem)));
}

/* The two leading operands of every communication call. */
static void head(ppcc_emit_ctx *c, MlirType elem, MlirValue *ops) {
  ops[0] = exec_op_index(c);
  ops[1] = exec_i64(c, exec_dtype_of(elem));
}

/* ---- point to point ---- */

static ppcc_status exec_send(ppcc_emit_ctx *c, MlirValue v, int from, int to) {
  exec_block(c, from);
  char name[64];
  symbol(name, sizeof name, "send", elem_of(v));
  MlirValue ops[4];
  head(c, elem_of(v), ops);
  ops[2] = exec_i64(c, to);
  ops[3] = exec_unranked(c, exec_to_memref(c, v));
  return exec_call(c, name, 4, ops);
}

static MlirValue exec_recv(ppcc_emit_ctx *c, MlirType tensor_type, int from, int to) {
  exec_block(c, to);
  MlirType elem = mlirShapedTypeGetElementType(tensor_type);
  char name[64];
  symbol(name, sizeof name, "recv", elem);
  MlirValue buf = exec_alloc(c, tensor_type), ops[4];
  head(c, elem, ops);
  ops[2] = exec_i64(c, from);
  ops[3] = exec_unranked(c, buf);
  if (exec_call(c, name, 4, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, buf, true);
}

MlirValue exec_transfer(ppcc_emit_ctx *c, MlirValue v, int from, int to) {
  if (exec_send(c, v, from, to)) return (MlirValue){NULL};
  return exec_recv(c, mlirValueGetType(v), from, to);
}

/* ---- GEMM ---- */

/* f32 contractions of any rank >= 2 go to the runtime: a's leading dims
 * collapse into the GEMM's rows when b is a matrix, else (b of a's rank)
 * one GEMM per batch element. */
MlirValue exec_try_matmul_call(ppcc_emit_ctx *c, MlirValue a, MlirValue b, bool b_transposed, MlirType out_type) {
  MlirType elem = mlirShapedTypeGetElementType(out_type);
  intptr_t ra = mlirShapedTypeGetRank(mlirValueGetType(a)), rb = mlirShapedTypeGetRank(mlirValueGetType(b));
  if (c->exec_linalg_matmul || !mlirTypeIsAF32(elem) || !mlirTypeIsAF32(elem_of(a)) || !mlirTypeIsAF32(elem_of(b)) ||
      ra < 2 || (rb != 2 && rb != ra) || mlirShapedTypeGetRank(out_type) != ra)
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[4] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, a))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, b))),
                      exec_unranked(c, exec_static_view(c, out)), exec_i64(c, b_transposed)};
  if (exec_call(c, "ppcc_rt_matmul_f32", 4, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

/* linear's GEMM and bias in one runtime call: the bias as linalg was a
 * single-threaded pass over the result (a BERT layer's six linears). */
MlirValue exec_try_linear_bias_call(ppcc_emit_ctx *c, MlirValue a, MlirValue w, MlirValue bias, MlirType out_type) {
  intptr_t ra = mlirShapedTypeGetRank(mlirValueGetType(a));
  if (c->exec_linalg_matmul || !mlirTypeIsAF32(mlirShapedTypeGetElementType(out_type)) || !mlirTypeIsAF32(elem_of(a)) ||
      !mlirTypeIsAF32(elem_of(w)) || !mlirTypeIsAF32(elem_of(bias)) || ra < 2 ||
      mlirShapedTypeGetRank(mlirValueGetType(w)) != 2 || mlirShapedTypeGetRank(mlirValueGetType(bias)) != 1 ||
      mlirShapedTypeGetRank(out_type) != ra)
    return (MlirValue){NULL};
  /* a bias that is not this shard's [N] (replicated next to a split
   * result) is left to linalg, which slices it */
  int64_t N = mlirShapedTypeGetDimSize(out_type, ra - 1);
  if (mlirShapedTypeGetDimSize(mlirValueGetType(bias), 0) != N || mlirShapedTypeGetDimSize(mlirValueGetType(w), 0) != N)
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[4] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, a))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, w))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, bias))),
                      exec_unranked(c, exec_static_view(c, out))};
  if (exec_call(c, "ppcc_rt_linear_f32", 4, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

/* layer_norm as the interpreter's kernel: as linalg its three passes ran
 * on one thread. */
MlirValue exec_try_layer_norm_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, MlirValue bias, double eps,
                                   MlirType out_type) {
  bool has_bias = !mlirValueIsNull(bias);
  intptr_t r = mlirShapedTypeGetRank(mlirValueGetType(x));
  if (c->kind != PPCC_EMIT_MLIR_EXEC || !mlirTypeIsAF32(mlirShapedTypeGetElementType(out_type)) ||
      !mlirTypeIsAF32(elem_of(x)) || !mlirTypeIsAF32(elem_of(w)) || (has_bias && !mlirTypeIsAF32(elem_of(bias))) ||
      r < 1 || mlirShapedTypeGetRank(out_type) != r || mlirShapedTypeGetRank(mlirValueGetType(w)) != 1 ||
      (has_bias && mlirShapedTypeGetRank(mlirValueGetType(bias)) != 1))
    return (MlirValue){NULL};
  int64_t H = mlirShapedTypeGetDimSize(mlirValueGetType(x), r - 1);
  if (mlirShapedTypeGetDimSize(mlirValueGetType(w), 0) != H ||
      (has_bias && mlirShapedTypeGetDimSize(mlirValueGetType(bias), 0) != H))
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[6] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, x))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, w))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, has_bias ? bias : w))),
                      exec_unranked(c, exec_static_view(c, out)),
                      emit_float_const(c, c->block, mlirF64TypeGet(c->mctx), eps), exec_i64(c, has_bias)};
  if (exec_call(c, "ppcc_rt_layer_norm_f32", 6, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

MlirValue exec_try_conv_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, const ppcc_conv_geom *g, MlirType out_type) {
  if (c->kind != PPCC_EMIT_MLIR_EXEC || c->exec_linalg_matmul || !mlirTypeIsAF32(mlirShapedTypeGetElementType(out_type)))
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  int64_t geom[9] = {g->group, g->stride[0], g->stride[1], g->dilation[0], g->dilation[1],
                     g->pad_begin[0], g->pad_begin[1], g->pad_end[0], g->pad_end[1]};
  MlirValue ops[12] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, x))),
                       exec_unranked(c, exec_static_view(c, exec_to_memref(c, w))), exec_unranked(c, exec_static_view(c, out))};
  for (int i = 0; i < 9; i++) ops[3 + i] = exec_i64(c, geom[i]);
  if (exec_call(c, "ppcc_rt_conv_f32", 12, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

MlirValue exec_try_unary_call(ppcc_emit_ctx *c, int op_id, MlirValue x, MlirType out_type) {
  if (c->kind != PPCC_EMIT_MLIR_EXEC || !mlirTypeIsAF32(mlirShapedTypeGetElementType(out_type)) ||
      !mlirTypeIsAF32(elem_of(x)))
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[3] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, x))),
                      exec_unranked(c, exec_static_view(c, out)), exec_i64(c, op_id)};
  if (exec_call(c, "ppcc_rt_unary_f32", 3, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

MlirValue exec_try_attention_call(ppcc_emit_ctx *c, MlirValue q, MlirValue k, MlirValue v, MlirValue positions,
                                  const emit_attention_mask *m, MlirType out_type) {
  bool pos = !mlirValueIsNull(positions);
  if (c->kind != PPCC_EMIT_MLIR_EXEC || c->exec_linalg_matmul || !mlirTypeIsAF32(mlirShapedTypeGetElementType(out_type)) ||
      !mlirTypeIsAF32(elem_of(q)) || !mlirTypeIsAF32(elem_of(k)) || !mlirTypeIsAF32(elem_of(v)))
    return (MlirValue){NULL};
  MlirValue out = exec_alloc(c, out_type);
  MlirType f64 = mlirF64TypeGet(c->mctx);
  MlirValue ops[10] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, q))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, k))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, v))),
                      exec_unranked(c, exec_static_view(c, out)),
                      emit_float_const(c, c->block, f64, m->scale), exec_i64(c, m->causal),
                      exec_i64(c, m->window), emit_float_const(c, c->block, f64, m->softcap), exec_i64(c, m->seq_major)};
  /* positions (i64 or i32, [S] or [B, S]): one symbol per index dtype */
  char name[64] = "ppcc_rt_attention_f32";
  if (pos) {
    ops[9] = exec_unranked(c, exec_static_view(c, exec_to_memref(c, positions)));
    symbol(name, sizeof name, "attention_positions", elem_of(positions));
  }
  if (exec_call(c, name, pos ? 10 : 9, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

/* ---- quantized weights (src/runtime/kernels/quant_matmul.c) ---- */

MlirValue exec_qlinear_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, ppcc_dtype wt, MlirType out_type) {
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[4] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, x))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, w))), exec_unranked(c, exec_static_view(c, out)),
                      exec_i64(c, wt)};
  char name[64] = "ppcc_rt_qlinear_f32";
  if (!ppcc_dtype_is_quantized(wt)) symbol(name, sizeof name, "hlinear", elem_of(w));
  if (exec_call(c, name, 4, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

MlirValue exec_qembedding_call(ppcc_emit_ctx *c, MlirValue ids, MlirValue table, ppcc_dtype wt, int64_t first,
                               int64_t wrap, MlirType out_type) {
  MlirValue out = exec_alloc(c, out_type);
  MlirValue ops[6] = {exec_unranked(c, exec_static_view(c, exec_to_memref(c, ids))),
                      exec_unranked(c, exec_static_view(c, exec_to_memref(c, table))),
                      exec_unranked(c, exec_static_view(c, out)), exec_i64(c, wt), exec_i64(c, first), exec_i64(c, wrap)};
  char name[64];
  symbol(name, sizeof name, "qembedding", elem_of(ids));
  if (exec_call(c, name, 6, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, out, true);
}

/* ---- index checks ---- */

ppcc_status exec_check_index(ppcc_emit_ctx *c, MlirValue index, int64_t bound, int kind) {
  if (!c->exec) return PPCC_OK; /* only the executable form runs */
  MlirType elem = elem_of(index);
  char name[64];
  symbol(name, sizeof name, "check_index", elem);
  MlirValue ops[5];
  head(c, elem, ops);
  ops[2] = exec_i64(c, kind);
  ops[3] = exec_i64(c, bound);
  ops[4] = exec_unranked(c, exec_to_memref(c, index));
  return exec_call(c, name, 5, ops);
}

/* ---- collectives ---- */

typedef enum { PRODUCE_COPY, PRODUCE_CUT, PRODUCE_ALL_GATHER, PRODUCE_ALL_REDUCE, PRODUCE_REDUCE_SCATTER } produce_kind;

typedef struct exec_coll {
  ppcc_emit_ctx *c;
  const ppcc_op *op;
  const ppcc_value *in, *out;
  MlirValue *src, *dst;
  MlirType out_type; /* one result shard */
} exec_coll;

/* memref<*xi64> of the group's device ids (a private constant global). */
static MlirValue group_buffer(exec_coll *k) {
  ppcc_emit_ctx *c = k->c;
  int n = k->in->layout.count;
  char name[64 + 12 * 16];
  int off = snprintf(name, sizeof name, "ppcc_group");
  for (int i = 0; i < n && off < (int)sizeof name - 12; i++) off += snprintf(name + off, sizeof name - (size_t)off, "_%d", k->in->devices[i]);
  int64_t len = n;
  MlirType i64 = mlirIntegerTypeGet(c->mctx, 64);
  MlirType mt = mlirMemRefTypeContiguousGet(i64, 1, &len, mlirAttributeGetNull());
  if (!exec_is_declared(c, name)) {
    int64_t ids[64]; /* check_group bounds n */
    for (int i = 0; i < n && i < 64; i++) ids[i] = k->in->devices[i];
    MlirType tt = mlirRankedTensorTypeGet(1, &len, i64, mlirAttributeGetNull());
    MlirNamedAttribute attrs[5] = {
        emit_named(c, "sym_name", emit_string_attr(c, name)),
        emit_named(c, "sym_visibility", emit_string_attr(c, "private")),
        emit_named(c, "type", mlirTypeAttrGet(mt)),
        emit_named(c, "initial_value", mlirDenseElementsAttrInt64Get(tt, n, ids)),
        emit_named(c, "constant", mlirUnitAttrGet(c->mctx)),
    };
    MlirOperationState st = mlirOperationStateGet(emit_str("memref.global"), mlirLocationUnknownGet(c->mctx));
    mlirOperationStateAddAttributes(&st, 5, attrs);
    exec_insert_global(c, mlirOperationCreate(&st));
    if (exec_mark_declared(c, name)) return (MlirValue){NULL};
  }
  MlirNamedAttribute ref = emit_named(c, "name", mlirFlatSymbolRefAttrGet(c->mctx, emit_str(name)));
  emit_op_spec s = {"memref.get_global", 0, NULL, 1, &mt, 1, &ref, 0};
  return exec_unranked(c, mlirOperationGetResult(emit_op(c, &s), 0));
}

/* [outer][n][inner] view of a split along dim (as rt_split_geometry). */
static void split_geometry(const ppcc_value *v, int dim, int n, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = v->shape[dim] / n;
  for (int i = 0; i < dim; i++) *outer *= v->shape[i];
  for (int i = dim + 1; i < v->rank; i++) *inner *= v->shape[i];
}

/* A group call on member j's device; its result (a new buffer) as a
 * tensor. in_place: the call updates a copy of the shard (all_reduce);
 * else it reads the shard and fills a new buffer, split_in telling which
 * side is split (all_gather: the operand, reduce_scatter: the result). */
static MlirValue group_call(exec_coll *k, const char *fn, int j, bool in_place, bool split_in) {
  ppcc_emit_ctx *c = k->c;
  MlirType elem = elem_of(k->src[j]);
  char name[64];
  symbol(name, sizeof name, fn, elem);
  MlirValue ops[8];
  head(c, elem, ops);
  int n = 2;
  ops[n++] = group_buffer(k);
  ops[n++] = exec_i64(c, j);
  MlirValue buf;
  if (in_place) {
    buf = exec_copy_to_buffer(c, k->src[j]);
    ops[n++] = exec_unranked(c, buf);
  } else {
    const ppcc_value *split = split_in ? k->in : k->out;
    int64_t outer, inner;
    split_geometry(split, split->layout.dim, k->in->layout.count, &outer, &inner);
    ops[n++] = exec_i64(c, outer);
    ops[n++] = exec_i64(c, inner);
    buf = exec_alloc(c, k->out_type);
    ops[n++] = exec_unranked(c, exec_to_memref(c, k->src[j]));
    ops[n++] = exec_unranked(c, buf);
  }
  if (exec_call(c, name, n, ops)) return (MlirValue){NULL};
  return exec_to_tensor(c, buf, true);
}

static int64_t out_chunk(const exec_coll *k) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(k->out, local);
  return local[k->out->layout.dim];
}

/* Result shard j on its home device, before delivery. */
static MlirValue produce(exec_coll *k, produce_kind kind, int j) {
  int s = k->in->layout.count == 1 ? 0 : j;
  switch (kind) {
  case PRODUCE_COPY: return k->src[s];
  case PRODUCE_CUT: return emit_slice(k->c, k->src[s], k->out->layout.dim, j * out_chunk(k), out_chunk(k));
  case PRODUCE_ALL_GATHER: return group_call(k, "all_gather", j, false, true);
  case PRODUCE_ALL_REDUCE: return group_call(k, "all_reduce", j, true, false);
  case PRODUCE_REDUCE_SCATTER: return group_call(k, "reduce_scatter", j, false, false);
  }
  return (MlirValue){NULL};
}

/* A builder returned no value: an error was reported already, unless
 * MLIR itself failed silently. */
static ppcc_status lost_value(ppcc_emit_ctx *c) {
  return c->d->errors ? PPCC_ERR_INTERNAL
                      : ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "building the executable form failed (null MLIR value)");
}

/* Phase 1: every home produces its shards and sends them; phase 2: every
 * target receives. A shard already on its target is not copied (P10). */
static ppcc_status produce_and_deliver(exec_coll *k, produce_kind kind) {
  int n = k->out->layout.count;
  MlirValue *made = calloc((size_t)n, sizeof *made);
  if (!made) return ppcc_error_status(k->c->d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = PPCC_OK;
  for (int j = 0; j < n && !st; j++) {
    int home = k->in->layout.count == 1 ? k->in->devices[0] : k->in->devices[j];
    exec_block(k->c, home);
    made[j] = produce(k, kind, j);
    if (mlirValueIsNull(made[j])) st = lost_value(k->c);
    if (!st && home != k->out->devices[j]) st = exec_send(k->c, made[j], home, k->out->devices[j]);
  }
  for (int j = 0; j < n && !st; j++) {
    int home = k->in->layout.count == 1 ? k->in->devices[0] : k->in->devices[j];
    k->dst[j] = home == k->out->devices[j] ? made[j] : exec_recv(k->c, k->out_type, home, k->out->devices[j]);
  }
  free(made);
  return st;
}

static MlirValue add_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = mlirBlockGetArgument(b, 0), y = mlirBlockGetArgument(b, 1);
  return emit_binary_scalar(c, b, mlirTypeIsAInteger(mlirValueGetType(x)) ? "arith.addi" : "arith.addf", x, y);
}

/* Split or unreduced shards gathered (concatenated / summed in shard
 * order) on the one device of an unsharded result. */
static ppcc_status collect_to_root(exec_coll *k) {
  ppcc_emit_ctx *c = k->c;
  int n = k->in->layout.count, root = k->out->devices[0];
  MlirValue *parts = calloc((size_t)n, sizeof *parts);
  if (!parts) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < n && !st; i++)
    if (k->in->devices[i] != root) st = exec_send(c, k->src[i], k->in->devices[i], root);
  for (int i = 0; i < n && !st; i++) {
    parts[i] = k->in->devices[i] == root ? k->src[i] : exec_recv(c, mlirValueGetType(k->src[i]), k->in->devices[i], root);
    if (mlirValueIsNull(parts[i])) st = lost_value(c);
  }
  if (!st) {
    exec_block(c, root);
    MlirValue acc = parts[0];
    if (k->in->layout.kind == PPCC_LAYOUT_SPLIT) {
      acc = emit_concat_by_inserts(c, k->in->layout.dim, n, parts, k->out_type);
    } else {
      for (int i = 1; i < n; i++) {
        MlirValue pair[2] = {acc, parts[i]};
        acc = emit_elementwise(c, 2, pair, k->out_type, add_body, NULL);
      }
    }
    k->dst[0] = acc;
  }
  free(parts);
  return st;
}

/* A collective group plays one rank per device. */
static ppcc_status check_group(exec_coll *k) {
  const ppcc_value *v = k->in;
  for (int i = 0; i < v->layout.count; i++)
    for (int j = 0; j < i; j++)
      if (v->devices[i] == v->devices[j])
        return emit_op_error(k->c, k->op, "'%s' has shards %d and %d on device %d; collectives need distinct devices",
                             v->name, j, i, v->devices[i]);
  if (v->layout.count > 64) return emit_op_error(k->c, k->op, "collective groups of more than 64 devices are not supported");
  return PPCC_OK;
}

/* The conversion between the operand's and the result's layout; the op's
 * name only chose the result layout (as in the executor). */
static bool choose(const exec_coll *k, produce_kind *kind, bool *group) {
  ppcc_layout i = k->in->layout, o = k->out->layout;
  if (i.count == 1) i = ppcc_layout_unsharded(); /* one shard is a whole value */
  bool whole_in = i.kind == PPCC_LAYOUT_UNSHARDED || i.kind == PPCC_LAYOUT_REPLICATED;
  bool whole_out = o.kind == PPCC_LAYOUT_UNSHARDED || o.kind == PPCC_LAYOUT_REPLICATED;
  *group = false;
  if (whole_in && whole_out) *kind = PRODUCE_COPY;
  else if (whole_in && o.kind == PPCC_LAYOUT_SPLIT) *kind = PRODUCE_CUT;
  else if (i.kind == PPCC_LAYOUT_SPLIT && o.kind == PPCC_LAYOUT_REPLICATED) *kind = PRODUCE_ALL_GATHER, *group = true;
  else if (i.kind == PPCC_LAYOUT_SPLIT && o.kind == PPCC_LAYOUT_SPLIT && i.dim == o.dim) *kind = PRODUCE_COPY;
  else if (i.kind == PPCC_LAYOUT_UNREDUCED && o.kind == PPCC_LAYOUT_REPLICATED) *kind = PRODUCE_ALL_REDUCE, *group = true;
  else if (i.kind == PPCC_LAYOUT_UNREDUCED && o.kind == PPCC_LAYOUT_SPLIT) *kind = PRODUCE_REDUCE_SCATTER, *group = true;
  else return false;
  return true;
}

static ppcc_status unsupported(exec_coll *k) {
  char a[64], b[64];
  ppcc_layout_str(k->in->layout, a, sizeof a);
  ppcc_layout_str(k->out->layout, b, sizeof b);
  return emit_op_error(k->c, k->op, "no executable lowering from %s to %s", a, b);
}

static ppcc_status lower(exec_coll *k) {
  /* one shard is a whole value, whatever its layout (count-1 = unsharded) */
  ppcc_layout_kind ik = k->in->layout.count == 1 ? PPCC_LAYOUT_UNSHARDED : k->in->layout.kind, ok = k->out->layout.kind;
  if (ik != PPCC_LAYOUT_UNSHARDED && ok != PPCC_LAYOUT_UNSHARDED && k->in->layout.count != k->out->layout.count)
    return unsupported(k);
  if (ok == PPCC_LAYOUT_UNSHARDED && (ik == PPCC_LAYOUT_SPLIT || ik == PPCC_LAYOUT_UNREDUCED)) return collect_to_root(k);
  produce_kind kind;
  bool group;
  if (!choose(k, &kind, &group)) return unsupported(k);
  ppcc_status st = group ? check_group(k) : PPCC_OK;
  return st ? st : produce_and_deliver(k, kind);
}

ppcc_status exec_lower_collective(ppcc_emit_ctx *c, const ppcc_op *op) {
  exec_coll k = {c, op, &c->g->values[op->in[0]], &c->g->values[op->out[0]], NULL, NULL, {NULL}};
  k.out_type = emit_shard_type(c, k.out);
  k.src = malloc(sizeof *k.src * (size_t)k.in->layout.count);
  k.dst = calloc((size_t)k.out->layout.count, sizeof *k.dst);
  ppcc_status st = k.src && k.dst ? PPCC_OK : ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; !st && i < k.in->layout.count; i++) k.src[i] = emit_shard(c, op->in[0], i);
  if (!st) st = lower(&k);
  for (int j = 0; !st && j < k.out->layout.count; j++) emit_set_shard(c, op->out[0], j, k.dst[j]);
  free(k.src);
  free(k.dst);
  return st;
}
