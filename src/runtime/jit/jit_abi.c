/* The ppcc_rt_* ABI as JIT-compiled device functions call it: thin
 * adapters from MLIR memref descriptors (llvm.emit_c_interface, unranked
 * memrefs) to the functions of comm.c and ppcc_rt_sgemm. The calls and
 * their arguments are listed in src/emit/exec/exec_comm.c.
 *
 * The communicator and the device a call acts for are bound per thread
 * (rt_jit_bind): each device function runs on its own thread, and the same
 * lowered code could later call an MPI implementation of the ABI where the
 * device is the process's rank. A failing call aborts the run (every later
 * call returns at once) and records its op index for the error message. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jit_abi.h"
#include "ppcc/quant.h"
#include "../kernels/kernels.h"

/* MLIR's UnrankedMemRefType: the rank and a pointer to the ranked
 * descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}. */
typedef struct jit_unranked {
  int64_t rank;
  int64_t *desc; /* every field is 8 bytes wide */
} jit_unranked;

typedef struct jit_view {
  char *data;     /* first element */
  int64_t count;  /* elements */
  bool contiguous;
} jit_view;

static _Thread_local ppcc_rt_comm *bound_comm;
static _Thread_local int bound_self = -1;
static _Thread_local int failed_op = -1;
static _Thread_local double comm_seconds; /* in communication calls */

void rt_jit_bind(ppcc_rt_comm *comm, int self) {
  bound_comm = comm;
  bound_self = self;
  failed_op = -1;
  comm_seconds = 0;
}

double rt_jit_comm_ms(void) { return comm_seconds * 1e3; }

/* Starts / ends the timing of one communication call. */
static double comm_start(void) { return omp_get_wtime(); }
static void comm_end(double t0) { comm_seconds += omp_get_wtime() - t0; }

int rt_jit_failed_op(void) { return failed_op; }

static jit_view view_of(const jit_unranked *m, int64_t elem_size) {
  jit_view v = {NULL, 1, true};
  const int64_t *sizes = m->desc + 3, *strides = m->desc + 3 + m->rank;
  v.data = (char *)(intptr_t)m->desc[1] + m->desc[2] * elem_size;
  int64_t expected = 1;
  for (int64_t i = m->rank - 1; i >= 0; i--) {
    if (sizes[i] != 1 && strides[i] != expected) v.contiguous = false;
    expected *= sizes[i];
  }
  v.count = expected;
  return v;
}

/* Records op as the failure of this thread (the first one wins). */
static void note_failure(int64_t op, int rc) {
  if (rc != 0 && failed_op < 0) failed_op = (int)op;
}

static bool usable(int64_t op, const jit_view *v, const char *what) {
  if (v->contiguous) return true;
  char msg[128];
  snprintf(msg, sizeof msg, "%s: the buffer is not contiguous", what);
  ppcc_rt_abort(bound_comm, bound_self, msg);
  note_failure(op, -1);
  return false;
}

static int64_t elem_size(int64_t dtype) { return ppcc_dtype_size((ppcc_dtype)dtype); }

static void jit_send(int64_t op, int64_t dtype, int64_t dst, jit_unranked *buf) {
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "send")) return;
  double t0 = comm_start();
  note_failure(op, ppcc_rt_send(bound_comm, bound_self, (int)dst, v.data, v.count * elem_size(dtype)));
  comm_end(t0);
}

static void jit_recv(int64_t op, int64_t dtype, int64_t src, jit_unranked *buf) {
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "recv")) return;
  double t0 = comm_start();
  note_failure(op, ppcc_rt_recv(bound_comm, bound_self, (int)src, v.data, v.count * elem_size(dtype)));
  comm_end(t0);
}

/* The device ids of a group (memref<Nxi64>, N <= 64 by the emitter). */
static int group_ids(const jit_unranked *group, int *ids) {
  jit_view g = view_of(group, 8);
  int n = g.count <= 64 ? (int)g.count : 64;
  for (int i = 0; i < n; i++) ids[i] = (int)((const int64_t *)(const void *)g.data)[i];
  return n;
}

static void jit_all_reduce(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, jit_unranked *buf) {
  int ids[64], n = group_ids(group, ids);
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "all_reduce")) return;
  double t0 = comm_start();
  note_failure(op, ppcc_rt_all_reduce(bound_comm, ids, n, (int)rank, (int)dtype, v.data, v.count));
  comm_end(t0);
}

static bool sizes_match(int64_t op, const jit_view *shard, const jit_view *full, int64_t outer, int64_t inner, int n,
                        const char *what) {
  if (shard->count == outer * inner && full->count == outer * inner * n) return true;
  char msg[128];
  snprintf(msg, sizeof msg, "%s: buffer sizes do not match the split", what);
  ppcc_rt_abort(bound_comm, bound_self, msg);
  note_failure(op, -1);
  return false;
}

static void jit_all_gather(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, int64_t outer,
                           int64_t inner, jit_unranked *shard, jit_unranked *full) {
  int ids[64], n = group_ids(group, ids);
  jit_view s = view_of(shard, elem_size(dtype)), f = view_of(full, elem_size(dtype));
  if (!usable(op, &s, "all_gather") || !usable(op, &f, "all_gather")) return;
  if (!sizes_match(op, &s, &f, outer, inner, n, "all_gather")) return;
  double t0 = comm_start();
  note_failure(op, ppcc_rt_all_gather(bound_comm, ids, n, (int)rank, (int)dtype, s.data, f.data, outer, inner));
  comm_end(t0);
}

static void jit_reduce_scatter(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, int64_t outer,
                               int64_t inner, jit_unranked *full, jit_unranked *shard) {
  int ids[64], n = group_ids(group, ids);
  jit_view f = view_of(full, elem_size(dtype)), s = view_of(shard, elem_size(dtype));
  if (!usable(op, &s, "reduce_scatter") || !usable(op, &f, "reduce_scatter")) return;
  if (!sizes_match(op, &s, &f, outer, inner, n, "reduce_scatter")) return;
  double t0 = comm_start();
  note_failure(op, ppcc_rt_reduce_scatter(bound_comm, ids, n, (int)rank, (int)dtype, f.data, s.data, outer, inner));
  comm_end(t0);
}

/* Index checks (exec_check_index in src/emit/exec/exec_comm.c): every element
 * of index must lie in [0, bound) ([-bound, bound) with kind bit 2), else the run fails with the message the
 * interpreter's kernel gives (kernels.c, kernels_llm.c). The lowered code
 * clamps the indices it uses, so nothing is read or written out of bounds
 * between this call and the end of the run. */
static void jit_check_index(int64_t op, int64_t dtype, int64_t kind, int64_t bound, jit_unranked *index) {
  jit_view v = view_of(index, elem_size(dtype));
  if (!usable(op, &v, "index check")) return;
  for (int64_t p = 0; p < v.count; p++) {
    int64_t t = dtype == PPCC_I64 ? ((const int64_t *)(const void *)v.data)[p] : ((const int32_t *)(const void *)v.data)[p];
    bool wraps = (kind & 2) != 0; /* ONNX: a negative index counts from the end */
    if (t >= (wraps ? -bound : 0) && t < bound) continue;
    char msg[160];
    snprintf(msg, sizeof msg, "%s %lld at position %lld is out of range [%lld, %lld)", kind & 1 ? "token id" : "index",
             (long long)t, (long long)p, (long long)(wraps ? -bound : 0), (long long)bound);
    ppcc_rt_abort(bound_comm, bound_self, msg);
    note_failure(op, -1);
    return;
  }
}

static bool fail_call(const char *what) {
  ppcc_rt_abort(bound_comm, bound_self, what);
  note_failure(-1, -1);
  return false;
}

/* conv on f32 buffers x [N, C, (H,) W], w [F, C/group, (kh,) kw], y [N, F,
 * (OH,) OW]: the interpreter's kernel (im2col + GEMM), so both backends
 * compute the same sums. Then the group, strides, dilations, begin pads
 * and end pads of spatial dims 0 and 1 (dim 1 unused by a 1-D conv). */
static void jit_conv(jit_unranked *x, jit_unranked *w, jit_unranked *y, int64_t group, int64_t s0, int64_t s1,
                     int64_t d0, int64_t d1, int64_t pb0, int64_t pb1, int64_t pe0, int64_t pe1) {
  jit_view vx = view_of(x, 4), vw = view_of(w, 4), vy = view_of(y, 4);
  if (!usable(-1, &vx, "conv") || !usable(-1, &vw, "conv") || !usable(-1, &vy, "conv")) return;
  if ((x->rank != 3 && x->rank != 4) || w->rank != x->rank || y->rank != x->rank) {
    fail_call("conv: unsupported operand ranks");
    return;
  }
  bool two = x->rank == 4;
  int64_t r = x->rank, xs[4], ys[4];
  xs[0] = x->desc[3], xs[1] = x->desc[4], xs[2] = two ? x->desc[5] : 1, xs[3] = x->desc[3 + r - 1];
  ys[0] = y->desc[3], ys[1] = y->desc[4], ys[2] = two ? y->desc[5] : 1, ys[3] = y->desc[3 + r - 1];
  ppcc_conv_geom g = {.spatial = (int)r - 2, .group = group, .stride = {s0, s1}, .dilation = {d0, d1},
                      .pad_begin = {pb0, pb1}, .pad_end = {pe0, pe1}};
  for (int i = 0; i < r - 2; i++) g.kernel[i] = w->desc[3 + 2 + i];
  if (!rt_conv2d_f32(&g, xs, w->desc[3], ys, (const float *)(void *)vx.data, (const float *)(void *)vw.data,
                     (float *)(void *)vy.data))
    fail_call("conv: out of memory");
}

/* Y[..., N] = A[..., K] . W[N, K]^T + bias[N]: the interpreter's linear
 * (rt_linear_f32), the same bits. */
static void jit_linear(jit_unranked *a, jit_unranked *w, jit_unranked *bias, jit_unranked *y) {
  jit_view va = view_of(a, 4), vw = view_of(w, 4), vb = view_of(bias, 4), vy = view_of(y, 4);
  if (!usable(-1, &va, "linear") || !usable(-1, &vw, "linear") || !usable(-1, &vb, "linear") ||
      !usable(-1, &vy, "linear"))
    return;
  if (a->rank < 1 || w->rank != 2 || bias->rank != 1 || y->rank != a->rank) {
    fail_call("linear: unsupported operand ranks");
    return;
  }
  int64_t N = w->desc[3], K = w->desc[4], M = K > 0 ? va.count / K : N > 0 ? vy.count / N : 0;
  if (va.count != M * K || vb.count != N || vy.count != M * N) {
    fail_call("linear: operand sizes do not match");
    return;
  }
  float *Y = (float *)(void *)vy.data;
  rt_linear_f32(M, N, K, (const float *)(void *)va.data, (const float *)(void *)vw.data,
                (const float *)(void *)vb.data, Y);
}

/* y = layer_norm(x) over x's last dim, * w (+ b when has_bias): the
 * interpreter's kernel (rt_layer_norm), the same bits. */
static void jit_layer_norm(jit_unranked *x, jit_unranked *w, jit_unranked *b, jit_unranked *y, double eps,
                           int64_t has_bias) {
  jit_view vx = view_of(x, 4), vw = view_of(w, 4), vb = view_of(b, 4), vy = view_of(y, 4);
  if (!usable(-1, &vx, "layer_norm") || !usable(-1, &vw, "layer_norm") || !usable(-1, &vb, "layer_norm") ||
      !usable(-1, &vy, "layer_norm"))
    return;
  if (x->rank < 1 || w->rank != 1 || b->rank != 1 || y->rank != x->rank) {
    fail_call("layer_norm: unsupported operand ranks");
    return;
  }
  int64_t H = x->desc[3 + x->rank - 1], rows = H > 0 ? vx.count / H : 0;
  if (vw.count != H || vb.count != H || vy.count != vx.count) {
    fail_call("layer_norm: operand sizes do not match");
    return;
  }
  rt_layer_norm((const float *)(void *)vx.data, (const float *)(void *)vw.data,
                has_bias ? (const float *)(void *)vb.data : NULL, (float *)(void *)vy.data, rows, H, (float)eps);
}

/* C[..., M, N] = A[..., M, K] * B, through ppcc_rt_sgemm (OpenBLAS when
 * built with it). B is [K, N] (or [N, K] when b_transposed): A's leading
 * dims collapse into M, one GEMM. B of A's rank: one GEMM per batch
 * element (batched matmul). */
static void jit_matmul(jit_unranked *a, jit_unranked *b, jit_unranked *c, int64_t b_transposed) {
  jit_view va = view_of(a, 4), vb = view_of(b, 4), vc = view_of(c, 4);
  if (!usable(-1, &va, "matmul") || !usable(-1, &vb, "matmul") || !usable(-1, &vc, "matmul")) return;
  if (a->rank < 2 || c->rank != a->rank || (b->rank != 2 && b->rank != a->rank)) {
    fail_call("matmul: unsupported operand ranks");
    return;
  }
  int64_t K = a->desc[3 + a->rank - 1], M = a->desc[3 + a->rank - 2], N = c->desc[3 + c->rank - 1], batch = 1;
  for (int64_t i = 0; i < a->rank - 2; i++) batch *= a->desc[3 + i];
  if (va.count != batch * M * K || vc.count != batch * M * N || (b->rank == 2 ? vb.count != K * N : vb.count != batch * K * N)) {
    fail_call("matmul: operand sizes do not match");
    return;
  }
  const float *A = (const float *)(void *)va.data, *B = (const float *)(void *)vb.data;
  float *C = (float *)(void *)vc.data;
  if (b->rank == 2) {
    ppcc_rt_sgemm(batch * M, N, K, A, B, b_transposed != 0, C);
    return;
  }
  for (int64_t p = 0; p < batch; p++)
    ppcc_rt_sgemm(M, N, K, A + p * M * K, B + p * K * N, b_transposed != 0, C + p * M * N);
}

/* out = f(x) for f32 exp, silu, sigmoid, gelu (op id of the table): the
 * interpreter's vector kernels (vmath.c). */
static void jit_unary(jit_unranked *x, jit_unranked *o, int64_t op_id) {
  jit_view vx = view_of(x, 4), vo = view_of(o, 4);
  if (!usable(-1, &vx, "unary") || !usable(-1, &vo, "unary")) return;
  if (vx.count != vo.count) {
    fail_call("unary: operand sizes do not match");
    return;
  }
  const float *X = (const float *)(void *)vx.data;
  float *Y = (float *)(void *)vo.data;
  switch (op_id) {
  case PPCC_OP_exp: rt_vexp(X, Y, vx.count); break;
  case PPCC_OP_silu: rt_vsilu(X, Y, vx.count); break;
  case PPCC_OP_sigmoid: rt_vsigmoid(X, Y, vx.count); break;
  case PPCC_OP_gelu: rt_vgelu(X, Y, vx.count); break;
  default: fail_call("unary: not a vector kernel");
  }
}

/* out[B,Hq,S,Dv] = attention(q[B,Hq,S,D], k[B,Hkv,T,D], v[B,Hkv,T,Dv]
 * [, positions]), or all four [B,S,H,D] when seq_major != 0: the
 * interpreter's kernel (ppcc_rt_attention_f32). The
 * positions (index_size 8 or 4 bytes; [S], or [B, S] per row) go to it as
 * int64: any value is safe there (it only bounds the visible slots). */
static void attention_with(jit_unranked *q, jit_unranked *k, jit_unranked *v, jit_unranked *o, double scale,
                           int64_t causal, int64_t window, double softcap, int64_t seq_major, jit_unranked *pos,
                           int index_size) {
  jit_view vq = view_of(q, 4), vk = view_of(k, 4), vv = view_of(v, 4), vo = view_of(o, 4);
  jit_view vp = pos ? view_of(pos, index_size) : vq;
  if (!usable(-1, &vq, "attention") || !usable(-1, &vk, "attention") || !usable(-1, &vv, "attention") ||
      !usable(-1, &vo, "attention") || !usable(-1, &vp, "attention positions"))
    return;
  if (q->rank != 4 || k->rank != 4 || v->rank != 4 || o->rank != 4) {
    fail_call("attention: operands must have rank 4");
    return;
  }
  const int64_t *qs = q->desc + 3, *ks = k->desc + 3, *vs = v->desc + 3;
  int hd = seq_major ? 2 : 1, sd = 3 - hd; /* the heads' dim and the positions' */
  bool per_row = pos && pos->rank == 2;
  int64_t n_pos = pos ? vp.count : 0;
  if (pos && ((pos->rank != 1 && pos->rank != 2) || n_pos != (per_row ? qs[0] : 1) * qs[sd])) {
    fail_call("attention: positions must be [S] or [B, S]");
    return;
  }
  int64_t *p64 = pos ? malloc((size_t)(n_pos > 0 ? n_pos : 1) * sizeof *p64) : NULL;
  if (pos && !p64) {
    fail_call("attention: out of memory");
    return;
  }
  for (int64_t i = 0; i < n_pos; i++)
    p64[i] = index_size == 8 ? ((const int64_t *)(const void *)vp.data)[i] : ((const int32_t *)(const void *)vp.data)[i];
  int rc = ppcc_rt_attention_f32(qs[0], qs[hd], qs[sd], qs[3], ks[hd], ks[sd], vs[3], scale, causal != 0, window, softcap,
                                 p64, per_row, seq_major != 0, (const float *)(void *)vq.data, (const float *)(void *)vk.data,
                                 (const float *)(void *)vv.data, (float *)(void *)vo.data);
  free(p64);
  if (rc) fail_call(rc == -1 ? "attention: query heads do not group over kv heads" : "attention: out of memory");
}

static void jit_attention(jit_unranked *q, jit_unranked *k, jit_unranked *v, jit_unranked *o, double scale,
                          int64_t causal, int64_t window, double softcap, int64_t seq_major) {
  attention_with(q, k, v, o, scale, causal, window, softcap, seq_major, NULL, 0);
}

static void jit_attention_positions_i64(jit_unranked *q, jit_unranked *k, jit_unranked *v, jit_unranked *o,
                                        double scale, int64_t causal, int64_t window, double softcap,
                                        int64_t seq_major, jit_unranked *pos) {
  attention_with(q, k, v, o, scale, causal, window, softcap, seq_major, pos, 8);
}

static void jit_attention_positions_i32(jit_unranked *q, jit_unranked *k, jit_unranked *v, jit_unranked *o,
                                        double scale, int64_t causal, int64_t window, double softcap,
                                        int64_t seq_major, jit_unranked *pos) {
  attention_with(q, k, v, o, scale, causal, window, softcap, seq_major, pos, 4);
}

/* y[..., N] = x[..., K] . w^T with w block-quantized (dtype; i8 bytes
 * [N, K / block * bytes]): the interpreter's kernel. */
static void jit_qlinear(jit_unranked *x, jit_unranked *w, jit_unranked *y, int64_t dtype) {
  jit_view vx = view_of(x, 4), vw = view_of(w, 1), vy = view_of(y, 4);
  if (!usable(-1, &vx, "linear") || !usable(-1, &vw, "linear") || !usable(-1, &vy, "linear")) return;
  const ppcc_block_format *f = ppcc_dtype_blocks((ppcc_dtype)dtype);
  int64_t K = x->rank > 0 ? x->desc[3 + x->rank - 1] : 0, N = y->rank > 0 ? y->desc[3 + y->rank - 1] : 0;
  int64_t M = K > 0 ? vx.count / K : 0;
  if (!f || K <= 0 || K % f->block != 0 || vy.count != M * N || vw.count != N * (K / f->block * f->bytes)) {
    fail_call("linear: quantized operand sizes do not match");
    return;
  }
  if (!ppcc_rt_qlinear_f32((ppcc_dtype)dtype, M, N, K, (const float *)(void *)vx.data, vw.data, (float *)(void *)vy.data))
    fail_call("linear: out of memory");
}

/* y[..., N] = x[..., K] . w^T with w [N, K] f16 or bf16 (dtype) as
 * stored: the interpreter's kernel. */
static void jit_hlinear(jit_unranked *x, jit_unranked *w, jit_unranked *y, int64_t dtype) {
  jit_view vx = view_of(x, 4), vw = view_of(w, 2), vy = view_of(y, 4);
  if (!usable(-1, &vx, "linear") || !usable(-1, &vw, "linear") || !usable(-1, &vy, "linear")) return;
  int64_t K = x->rank > 0 ? x->desc[3 + x->rank - 1] : 0, N = y->rank > 0 ? y->desc[3 + y->rank - 1] : 0;
  int64_t M = K > 0 ? vx.count / K : 0;
  if ((dtype != PPCC_F16 && dtype != PPCC_BF16) || K <= 0 || vy.count != M * N || vw.count != N * K) {
    fail_call("linear: f16/bf16 operand sizes do not match");
    return;
  }
  if (!ppcc_rt_hlinear_f32((ppcc_dtype)dtype, M, N, K, (const float *)(void *)vx.data, vw.data, (float *)(void *)vy.data))
    fail_call("linear: out of memory");
}

/* out[p, :] = row ids[p] - first of a quantized table decoded (zeros for
 * ids outside it, as the interpreter's vocab-parallel embedding). */
static void qembedding_with(jit_unranked *ids, jit_unranked *table, jit_unranked *out, int64_t dtype, int64_t first,
                            int64_t wrap, int index_size) {
  jit_view vi = view_of(ids, index_size), vt = view_of(table, 1), vo = view_of(out, 4);
  if (!usable(-1, &vi, "embedding") || !usable(-1, &vt, "embedding") || !usable(-1, &vo, "embedding")) return;
  const ppcc_block_format *f = ppcc_dtype_blocks((ppcc_dtype)dtype);
  int64_t cols = out->rank > 0 ? out->desc[3 + out->rank - 1] : 0, rows = table->rank == 2 ? table->desc[3] : 0;
  if (!f || cols <= 0 || cols % f->block != 0 || vo.count != vi.count * cols || vt.count != rows * (cols / f->block * f->bytes)) {
    fail_call("embedding: quantized operand sizes do not match");
    return;
  }
  float *o = (float *)(void *)vo.data;
  for (int64_t p = 0; p < vi.count; p++) {
    int64_t id = index_size == 8 ? ((const int64_t *)(const void *)vi.data)[p] : ((const int32_t *)(const void *)vi.data)[p];
    if (id < 0 && wrap > 0) id += wrap;
    if (id < first || id >= first + rows) {
      memset(o + p * cols, 0, sizeof(float) * (size_t)cols);
    } else if (!ppcc_rt_qrows_f32((ppcc_dtype)dtype, vt.data, id - first, cols, o + p * cols)) {
      fail_call("embedding: a row of the quantized table has a NaN or infinite scale");
      return;
    }
  }
}

static void jit_qembedding_i64(jit_unranked *ids, jit_unranked *table, jit_unranked *out, int64_t dtype, int64_t first,
                               int64_t wrap) {
  qembedding_with(ids, table, out, dtype, first, wrap, 8);
}

static void jit_qembedding_i32(jit_unranked *ids, jit_unranked *table, jit_unranked *out, int64_t dtype, int64_t first,
                               int64_t wrap) {
  qembedding_with(ids, table, out, dtype, first, wrap, 4);
}

/* memref.copy between strided buffers (MLIR's CRunnerUtils memrefCopy,
 * which the lowered code calls for non-contiguous copies). */
static void copy_strided(int64_t rank, const int64_t *sizes, const int64_t *ss, const int64_t *ds, const char *src,
                         char *dst, int64_t es) {
  if (rank == 0) {
    memcpy(dst, src, (size_t)es);
    return;
  }
  for (int64_t i = 0; i < sizes[0]; i++)
    copy_strided(rank - 1, sizes + 1, ss + 1, ds + 1, src + i * ss[0] * es, dst + i * ds[0] * es, es);
}

static void jit_memref_copy(int64_t es, jit_unranked *src, jit_unranked *dst) {
  jit_view s = view_of(src, es), d = view_of(dst, es);
  if (s.contiguous && d.contiguous) {
    if (s.count > 0) memmove(d.data, s.data, (size_t)(s.count * es));
    return;
  }
  int64_t r = src->rank;
  copy_strided(r, src->desc + 3, src->desc + 3 + r, dst->desc + 3 + r, s.data, d.data, es);
}

/* LLVM lowers f32->bf16 truncation to this libcall; libgcc before GCC 13
 * lacks it. The x86-64 ABI returns a bf16 in the low 16 bits of xmm0; a
 * float whose low 16 bits are the bf16 lands there too, and unlike
 * _Float16 it compiles with clang 14 (the fuzz build). Rounds to nearest
 * even, as compiler-rt does. */
static float jit_truncsfbf2(float f) {
  uint32_t bits = ppcc_f32_to_bf16(f);
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

#define DTYPE_SYMBOLS(fn, impl)                                                                     \
  {"_mlir_ciface_ppcc_rt_" #fn "_f32", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_f16", (void *)impl}, \
      {"_mlir_ciface_ppcc_rt_" #fn "_bf16", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_i64", (void *)impl}, \
      {"_mlir_ciface_ppcc_rt_" #fn "_i32", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_i8", (void *)impl},   \
      {"_mlir_ciface_ppcc_rt_" #fn "_bool", (void *)impl}

const ppcc_jit_symbol *ppcc_jit_symbols(void) {
  static const ppcc_jit_symbol table[] = {
      DTYPE_SYMBOLS(send, jit_send),
      DTYPE_SYMBOLS(recv, jit_recv),
      DTYPE_SYMBOLS(all_reduce, jit_all_reduce),
      DTYPE_SYMBOLS(all_gather, jit_all_gather),
      DTYPE_SYMBOLS(reduce_scatter, jit_reduce_scatter),
      {"_mlir_ciface_ppcc_rt_matmul_f32", (void *)jit_matmul},
      {"_mlir_ciface_ppcc_rt_linear_f32", (void *)jit_linear},
      {"_mlir_ciface_ppcc_rt_layer_norm_f32", (void *)jit_layer_norm},
      {"_mlir_ciface_ppcc_rt_conv_f32", (void *)jit_conv},
      {"_mlir_ciface_ppcc_rt_attention_f32", (void *)jit_attention},
      {"_mlir_ciface_ppcc_rt_unary_f32", (void *)jit_unary},
      {"_mlir_ciface_ppcc_rt_attention_positions_i64", (void *)jit_attention_positions_i64},
      {"_mlir_ciface_ppcc_rt_attention_positions_i32", (void *)jit_attention_positions_i32},
      {"_mlir_ciface_ppcc_rt_qlinear_f32", (void *)jit_qlinear},
      {"_mlir_ciface_ppcc_rt_hlinear_f16", (void *)jit_hlinear},
      {"_mlir_ciface_ppcc_rt_hlinear_bf16", (void *)jit_hlinear},
      {"_mlir_ciface_ppcc_rt_qembedding_i64", (void *)jit_qembedding_i64},
      {"_mlir_ciface_ppcc_rt_qembedding_i32", (void *)jit_qembedding_i32},
      {"_mlir_ciface_ppcc_rt_check_index_i64", (void *)jit_check_index},
      {"_mlir_ciface_ppcc_rt_check_index_i32", (void *)jit_check_index},
      {"memrefCopy", (void *)jit_memref_copy},
      {"_mlir_memref_to_llvm_alloc", (void *)rt_jit_alloc},
      {"_mlir_memref_to_llvm_aligned_alloc", (void *)rt_jit_aligned_alloc},
      {"_mlir_memref_to_llvm_free", (void *)rt_jit_free},
      {"__truncsfbf2", (void *)jit_truncsfbf2},
      {NULL, NULL},
  };
  return table;
}
