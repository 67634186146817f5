/* Reference kernels: the `kernel` column of include/ppcc/op_list.h. They
 * run on local (per-shard) tensors, contiguous row-major; float kernels
 * compute in f32 (ppcc_rt_run_kernel converts f16/bf16 around them), data
 * movers (reshape, transpose, index_copy) work on raw elements of any
 * dtype, and integer arithmetic has its own wrapping forms (as the JIT). Collectives and transfers have no kernel: the executor does them
 * over the communication ABI. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "kernels_llm.h"
#include "kernels_onnx.h"

static int64_t numel(const ppcc_tensor *t) { return ppcc_num_elements(t->rank, t->shape); }

/* Parallel loops only when the work pays for the fork. */
#define PAR_MIN 32768

/* a[..., M, K] x b[K, N] or b[..., K, N]. */
static ppcc_status kernel_matmul(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                 ppcc_diag *d) {
  const ppcc_tensor *a = &in[0], *b = &in[1];
  int64_t M = a->shape[a->rank - 2], K = a->shape[a->rank - 1], N = b->shape[b->rank - 1];
  int64_t batch = 1;
  for (int i = 0; i < a->rank - 2; i++) batch *= a->shape[i];
  bool bt = b->last_two_swapped; /* a folded transpose: b's bytes are [.., N, K] */
  if (b->rank == 2) {
    ppcc_rt_sgemm(batch * M, N, K, a->data, b->data, bt, out->data);
    return PPCC_OK;
  }
  for (int64_t p = 0; p < batch; p++)
    ppcc_rt_sgemm(M, N, K, (const float *)a->data + p * M * K, (const float *)b->data + p * K * N, bt,
                  (float *)out->data + p * M * N);
  return PPCC_OK;
}

/* y[:, c0..c1] += bias[c0..c1]. The columns split in halves of whole
 * 6-column tiles, as gemm_tiles.c's threads mostly took them (its first,
 * biggest chunks): a thread adds mostly to the part of the result it just
 * wrote, still in its own L2 (split by rows, half of each thread's rows
 * sat in the other core's cache). */
typedef struct bias_job {
  float *y;
  const float *bias;
  int64_t M, N;
} bias_job;

static void add_bias_cols(void *arg, int64_t c0, int64_t c1) {
  const bias_job *j = arg;
  const float *restrict bias = j->bias;
  for (int64_t i = 0; i < j->M; i++) {
    float *restrict y = j->y + i * j->N;
#pragma omp simd /* -O2 leaves it scalar otherwise */
    for (int64_t c = c0; c < c1; c++) y[c] += bias[c];
  }
}

void rt_add_bias(float *y, const float *bias, int64_t M, int64_t N) {
  bias_job j = {y, bias, M, N};
  rt_parallel_range(N, 6, 16384 / (M > 0 ? M : 1) + 1, add_bias_cols, &j);
}

/* x[..., K] . w[N, K]^T (+ bias[N]); a block-quantized w through the
 * quantized kernels (quant_matmul.c), an f16/bf16 one next to an f32 x
 * through half_matmul.c. */
static ppcc_status kernel_linear(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                 ppcc_diag *d) {
  const ppcc_tensor *x = &in[0], *w = &in[1];
  int64_t K = x->shape[x->rank - 1], N = w->shape[0], M = K > 0 ? numel(x) / K : 0;
  if (K == 0) M = numel(out) / (N > 0 ? N : 1);
  float *y = out->data;
  if (ppcc_dtype_is_quantized(w->dtype)) {
    if (!ppcc_rt_qlinear_f32(w->dtype, M, N, K, x->data, w->data, y))
      return ppcc_error(d, "linear: weight is %s with %lld columns per row (whole blocks needed), or out of memory",
                        ppcc_dtype_name(w->dtype), (long long)K);
  } else if (ppcc_dtype_is_stored_half(w->dtype, x->dtype)) {
    if (!ppcc_rt_hlinear_f32(w->dtype, M, N, K, x->data, w->data, y))
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  } else {
    rt_linear_f32(M, N, K, x->data, w->data, op->n_in == 3 ? in[2].data : NULL, y);
    return PPCC_OK;
  }
  if (op->n_in == 3) rt_add_bias(y, in[2].data, M, N);
  return PPCC_OK;
}

/* ---------------- elementwise unary ---------------- */
/* torch's gelu(approximate="tanh") (HF gelu_pytorch_tanh), in f32 as torch */
static float f_gelu_tanh(float x) {
  float cube = x * x * x;
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * cube)));
}
static float f_relu(float x) { return x > 0.0f || isnan(x) ? x : 0.0f; } /* NaN stays NaN (torch) */
static float f_tanh(float x) { return tanhf(x); }
static float f_neg(float x) { return -x; }

/* f inlined into each kernel's loop (relu, a compare, vectorises): through
 * a function pointer an element cost an indirect call, and relu after a
 * batch-8 linear took 12 % of an MLP forward. */
#define UNARY_KERNEL(name)                                                                              \
  static ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,         \
                                   ppcc_diag *d) {                                                      \
    const float *src = in[0].data;                                                                      \
    float *dst = out->data;                                                                             \
    int64_t n = numel(&in[0]);                                                                          \
    for (int64_t j = 0; j < n; j++) dst[j] = f_##name(src[j]);                                          \
    return PPCC_OK;                                                                                     \
  }
UNARY_KERNEL(gelu_tanh)
UNARY_KERNEL(relu)
UNARY_KERNEL(tanh)
UNARY_KERNEL(neg)

/* exp and its kin eight lanes at a time (vmath.c) */
#define ARRAY_KERNEL(name)                                                                              \
  static ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,         \
                                   ppcc_diag *d) {                                                      \
    rt_v##name(in[0].data, out->data, numel(&in[0]));                                                   \
    return PPCC_OK;                                                                                     \
  }
ARRAY_KERNEL(gelu)
ARRAY_KERNEL(silu)
ARRAY_KERNEL(sigmoid)
ARRAY_KERNEL(exp)

static ppcc_status kernel_scale(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                ppcc_diag *d) {
  float s = (float)ppcc_attr_float(op, "value", 1.0);
  const float *x = in[0].data;
  float *y = out->data;
  int64_t n = numel(&in[0]);
  for (int64_t j = 0; j < n; j++) y[j] = x[j] * s;
  return PPCC_OK;
}

/* ---------------- elementwise binary with broadcasting ---------------- */
typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MAX } binary_kind;

static inline float apply_binary(binary_kind k, float a, float b) {
  switch (k) {
  case BIN_ADD: return a + b;
  case BIN_SUB: return a - b;
  case BIN_MUL: return a * b;
  case BIN_DIV: return a / b;
  case BIN_MAX: return a > b || isnan(a) ? a : b;
  }
  return 0.0f;
}

/* Strides of x broadcast to the result's rank: 0 where x has size 1. */
static void broadcast_strides(const ppcc_tensor *x, const ppcc_tensor *out, int64_t *strides) {
  int64_t s = 1;
  for (int i = out->rank - 1; i >= 0; i--) {
    int xi = i - (out->rank - x->rank);
    int64_t size = xi >= 0 ? x->shape[xi] : 1;
    strides[i] = size == 1 ? 0 : s;
    s *= size;
  }
}

static bool same_shape(const ppcc_tensor *a, const ppcc_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* Rows of the innermost dim at a time; outer index walked with counters. */
static void binary_broadcast(binary_kind k, const ppcc_tensor *a, const ppcc_tensor *b, ppcc_tensor *out) {
  int64_t sa[PPCC_MAX_RANK], sb[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0};
  broadcast_strides(a, out, sa);
  broadcast_strides(b, out, sb);
  const float *pa = a->data, *pb = b->data;
  float *po = out->data;
  int r = out->rank;
  int64_t inner = r > 0 ? out->shape[r - 1] : 1, rows = inner > 0 ? numel(out) / inner : 0;
  int64_t ia = r > 0 ? sa[r - 1] : 0, ib = r > 0 ? sb[r - 1] : 0;
  for (int64_t row = 0; row < rows; row++) {
    int64_t oa = 0, ob = 0;
    for (int i = 0; i < r - 1; i++) {
      oa += idx[i] * sa[i];
      ob += idx[i] * sb[i];
    }
    for (int64_t j = 0; j < inner; j++) po[row * inner + j] = apply_binary(k, pa[oa + j * ia], pb[ob + j * ib]);
    for (int i = r - 2; i >= 0; i--) { /* next outer index */
      if (++idx[i] < out->shape[i]) break;
      idx[i] = 0;
    }
  }
}

/* Same-shape operands: elements split among the kernel threads. */
typedef struct binary_job {
  binary_kind k;
  const float *a, *b;
  float *y;
} binary_job;

static void binary_range(void *arg, int64_t j0, int64_t j1) {
  const binary_job *j = arg;
  const float *a = j->a, *b = j->b;
  float *y = j->y;
  switch (j->k) { /* one loop per kind, vectorized (-O2 alone leaves them scalar) */
  case BIN_ADD:
#pragma omp simd
    for (int64_t e = j0; e < j1; e++) y[e] = a[e] + b[e];
    break;
  case BIN_MUL:
#pragma omp simd
    for (int64_t e = j0; e < j1; e++) y[e] = a[e] * b[e];
    break;
  default:
    for (int64_t e = j0; e < j1; e++) y[e] = apply_binary(j->k, a[e], b[e]);
  }
}

static ppcc_status run_binary(binary_kind k, const ppcc_tensor *in, ppcc_tensor *out) {
  if (same_shape(&in[0], out) && same_shape(&in[1], out)) {
    binary_job j = {k, in[0].data, in[1].data, out->data};
    rt_parallel_range(numel(out), 16, 32768, binary_range, &j);
    return PPCC_OK;
  }
  binary_broadcast(k, &in[0], &in[1], out);
  return PPCC_OK;
}

#define BINARY_KERNEL(name, kind)                                                                       \
  static ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,         \
                                   ppcc_diag *d) {                                                      \
    return run_binary(kind, in, out);                                                                   \
  }
BINARY_KERNEL(add, BIN_ADD)
BINARY_KERNEL(sub, BIN_SUB)
BINARY_KERNEL(mul, BIN_MUL)
BINARY_KERNEL(div, BIN_DIV)
BINARY_KERNEL(maximum, BIN_MAX)

/* ---------------- data movement (any dtype) ---------------- */
static ppcc_status kernel_reshape(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                  ppcc_diag *d) {
  size_t bytes = (size_t)numel(&in[0]) * (size_t)ppcc_dtype_size(in[0].dtype);
  if (bytes && out->data != in[0].data) memcpy(out->data, in[0].data, bytes);
  return PPCC_OK;
}

static void get_perm(const ppcc_op *op, int rank, int *perm) {
  const ppcc_attr *a = ppcc_op_attr(op, "perm");
  for (int i = 0; i < rank; i++) perm[i] = a && a->n == rank ? (int)a->ints[i] : i;
  if (!a && rank >= 2) {
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
  }
}

/* out[i0..] = in[i_perm...]: walk the output, step the input offset. The
 * trailing dims a permutation leaves in place are one contiguous block in
 * both tensors, copied whole ([0, 2, 1, 3] moves rows of D elements). The
 * blocks are split among the kernel threads, each part starting its walk
 * at its first block. */
typedef struct transpose_job {
  const char *src;
  char *dst;
  const int64_t *out_shape;
  int64_t os[PPCC_MAX_RANK]; /* input stride (elements) of output dim i */
  int kept;                  /* dims kept..rank-1 stay in place: one block */
  size_t bytes, es;          /* a block's bytes, an element's */
} transpose_job;

static void transpose_blocks(void *arg, int64_t j0, int64_t j1) {
  const transpose_job *t = arg;
  int64_t idx[PPCC_MAX_RANK] = {0}, off = 0, rest = j0;
  for (int i = t->kept - 1; i >= 0; i--) { /* block j0's output index */
    idx[i] = rest % t->out_shape[i];
    rest /= t->out_shape[i];
    off += idx[i] * t->os[i];
  }
  for (int64_t j = j0; j < j1; j++) {
    memcpy(t->dst + (size_t)j * t->bytes, t->src + (size_t)off * t->es, t->bytes);
    for (int i = t->kept - 1; i >= 0; i--) {
      off += t->os[i];
      if (++idx[i] < t->out_shape[i]) break;
      off -= t->os[i] * t->out_shape[i];
      idx[i] = 0;
    }
  }
}

static ppcc_status kernel_transpose(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                    ppcc_diag *d) {
  const ppcc_tensor *x = &in[0];
  int r = x->rank, perm[PPCC_MAX_RANK];
  get_perm(op, r, perm);
  int64_t xs[PPCC_MAX_RANK];
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    xs[i] = s;
    s *= x->shape[i];
  }
  transpose_job t = {.src = x->data, .dst = out->data, .out_shape = out->shape, .es = (size_t)ppcc_dtype_size(x->dtype)};
  for (int i = 0; i < r; i++) t.os[i] = xs[perm[i]];
  t.kept = r;
  while (t.kept > 0 && perm[t.kept - 1] == t.kept - 1) t.kept--;
  int64_t block = 1;
  for (int i = t.kept; i < r; i++) block *= x->shape[i];
  t.bytes = (size_t)block * t.es;
  int64_t n = block > 0 ? numel(x) / block : 0;
  rt_parallel_range(n, 1, 65536 / (int64_t)(t.bytes > 0 ? t.bytes : 1) + 1, transpose_blocks, &t);
  return PPCC_OK;
}

static int64_t index_at(const ppcc_tensor *idx, int64_t p) {
  return idx->dtype == PPCC_I64 ? ((const int64_t *)idx->data)[p] : ((const int32_t *)idx->data)[p];
}

/* dest[..., index[p], ...] = src[..., p, ...] along dim; the result is the
 * destination (written in place when out aliases it, P7). */
static ppcc_status kernel_index_copy(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                                     ppcc_diag *d) {
  const ppcc_tensor *dst = &in[0], *idx = &in[1], *src = &in[2];
  int dim = (int)ppcc_attr_int(op, "dim", 0), es = ppcc_dtype_size(dst->dtype);
  if (idx->dtype != PPCC_I64 && idx->dtype != PPCC_I32)
    return ppcc_error(d, "index must be i64 or i32, not %s", ppcc_dtype_name(idx->dtype));
  if (out->data != dst->data) memcpy(out->data, dst->data, (size_t)(numel(dst) * es));
  rt_split_geom g = rt_split_geometry(dst->rank, dst->shape, dim, (int)dst->shape[dim]);
  int64_t D = dst->shape[dim], L = idx->shape[idx->rank - 1], row = g.inner * es;
  /* a [B, L] index (dim 1): outer row o (batch row o) writes at idx[o, :] */
  bool per_row = idx->rank == 2;
  for (int64_t i = 0; i < numel(idx); i++) {
    int64_t t = index_at(idx, i);
    if (t < 0 || t >= D)
      return ppcc_error(d, "index %lld at position %lld is out of range [0, %lld)", (long long)t, (long long)i,
                        (long long)D);
  }
  for (int64_t p = 0; p < L; p++)
    for (int64_t o = 0; o < g.outer; o++) {
      int64_t t = index_at(idx, per_row ? o * L + p : p);
      memcpy((char *)out->data + (o * D + t) * row, (const char *)src->data + (o * L + p) * row, (size_t)row);
    }
  return PPCC_OK;
}

/* ---------------- local slicing of replicated operands ---------------- */
static bool is_broadcast_binary(ppcc_kernel_fn k) {
  return k == kernel_add || k == kernel_sub || k == kernel_mul || k == kernel_div || k == kernel_maximum ||
         k == kernel_pow || k == kernel_equal || k == kernel_less || k == kernel_greater ||
         k == kernel_where;
}

int rt_local_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                       const ppcc_value *result, ppcc_layout result_layout) {
  if (result_layout.kind != PPCC_LAYOUT_SPLIT || operand_layout.kind != PPCC_LAYOUT_REPLICATED) return -1;
  int d = result_layout.dim;
  ppcc_kernel_fn kern = ppcc_rt_kernel(op->info->id);
  if (is_broadcast_binary(kern)) { /* broadcasting shifts the split dim */
    int od = d - (result->rank - operand->rank);
    return od >= 0 && operand->shape[od] == result->shape[d] ? od : -1;
  }
  if (kern == kernel_matmul) /* batch-split a x replicated batched b */
    return k == 1 && operand->rank > 2 && d < result->rank - 2 ? d : -1;
  if (kern == kernel_index_copy) /* replicated source of a split destination */
    return k == 2 ? d : -1;
  return -1;
}

/* Row-parallel contraction (unreduced result): a replicated operand next
 * to one split along its contracting dim is cut along its own contracting
 * dim, so shard i multiplies matching slices (DESIGN §4, sharktank's PPFFN). */
int rt_contract_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                          ppcc_layout other_layout, ppcc_layout result_layout) {
  ppcc_kernel_fn kern = ppcc_rt_kernel(op->info->id);
  if ((kern != kernel_matmul && kern != kernel_linear) || k > 1 || result_layout.kind != PPCC_LAYOUT_UNREDUCED ||
      operand_layout.kind != PPCC_LAYOUT_REPLICATED || other_layout.kind != PPCC_LAYOUT_SPLIT)
    return -1;
  if (k == 0) return operand->rank - 1;
  return kern == kernel_linear ? 1 : operand->rank - 2;
}

/* A linear's bias on partial sums is added by shard 0 only, so the
 * all_reduce counts it once: true when shard `shard` runs without it. */
bool rt_drops_bias(const ppcc_op *op, ppcc_layout result_layout, int shard) {
  return ppcc_rt_kernel(op->info->id) == kernel_linear && op->n_in == 3 &&
         result_layout.kind == PPCC_LAYOUT_UNREDUCED && shard > 0;
}

/* ---------------- integer forms ---------------- */
/* Integer add, sub, mul, maximum, neg, relu, scale and sum, as the JIT
 * lowers them (arith.addi, subi, muli, maxsi): two's complement at the
 * dtype's width, wrapping. bool is a 1-bit integer there (true reads as
 * -1), so it is loaded sign-extended and stored as its low bit. Integer
 * div is refused by the op's shape rule. */
typedef enum { INT_NONE, INT_ADD, INT_SUB, INT_MUL, INT_MAXIMUM, INT_NEG, INT_RELU, INT_SCALE, INT_SUM } int_kind;

static int_kind int_form(ppcc_kernel_fn k) {
  if (k == kernel_add) return INT_ADD;
  if (k == kernel_sub) return INT_SUB;
  if (k == kernel_mul) return INT_MUL;
  if (k == kernel_maximum) return INT_MAXIMUM;
  if (k == kernel_neg) return INT_NEG;
  if (k == kernel_relu) return INT_RELU;
  if (k == kernel_scale) return INT_SCALE;
  if (k == kernel_sum) return INT_SUM;
  return INT_NONE;
}

static int int_bits(ppcc_dtype t) { return t == PPCC_BOOL ? 1 : 8 * ppcc_dtype_size(t); }

/* The low `bits` bits of v, sign-extended. */
static int64_t wrap_to(int64_t v, int bits) {
  if (bits >= 64) return v;
  uint64_t m = 1ull << (bits - 1), u = (uint64_t)v & ((m << 1) - 1);
  return (int64_t)(u ^ m) - (int64_t)m;
}

static int64_t int_load(const ppcc_tensor *t, int64_t j) {
  switch (t->dtype) {
  case PPCC_I64: return ((const int64_t *)t->data)[j];
  case PPCC_I32: return ((const int32_t *)t->data)[j];
  case PPCC_I8: return ((const int8_t *)t->data)[j];
  default: return wrap_to(((const uint8_t *)t->data)[j], 1);
  }
}

static void int_store(ppcc_tensor *t, int64_t j, int64_t v) {
  switch (t->dtype) {
  case PPCC_I64: ((int64_t *)t->data)[j] = v; break;
  case PPCC_I32: ((int32_t *)t->data)[j] = (int32_t)wrap_to(v, 32); break;
  case PPCC_I8: ((int8_t *)t->data)[j] = (int8_t)wrap_to(v, 8); break;
  default: ((uint8_t *)t->data)[j] = (uint8_t)(v & 1); break;
  }
}

static int64_t int_apply(int_kind k, int64_t a, int64_t b) {
  switch (k) {
  case INT_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
  case INT_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
  case INT_MUL:
  case INT_SCALE: return (int64_t)((uint64_t)a * (uint64_t)b);
  case INT_MAXIMUM: return a > b ? a : b;
  case INT_NEG: return (int64_t)(0 - (uint64_t)a);
  case INT_RELU: return a > 0 ? a : 0;
  default: return 0;
  }
}

/* Elementwise (binary with broadcasting, or unary with b as a constant). */
static void int_map(int_kind k, const ppcc_tensor *a, const ppcc_tensor *b, int64_t constant, ppcc_tensor *out) {
  int64_t sa[PPCC_MAX_RANK], sb[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0}, oa = 0, ob = 0;
  broadcast_strides(a, out, sa);
  if (b) broadcast_strides(b, out, sb);
  int r = out->rank, bits = int_bits(out->dtype);
  int64_t n = numel(out);
  for (int64_t j = 0; j < n; j++) {
    int64_t x = int_load(a, oa), y = b ? int_load(b, ob) : constant;
    int_store(out, j, wrap_to(int_apply(k, x, y), bits));
    for (int i = r - 1; i >= 0; i--) { /* next index: odometer over out's dims */
      oa += sa[i];
      ob += b ? sb[i] : 0;
      if (++idx[i] < out->shape[i]) break;
      oa -= sa[i] * out->shape[i];
      ob -= b ? sb[i] * out->shape[i] : 0;
      idx[i] = 0;
    }
  }
}

/* sum over the attribute's dims (all without it), wrapping. */
static ppcc_status int_sum(const ppcc_op *op, const ppcc_tensor *x, ppcc_tensor *y, ppcc_diag *d) {
  bool mask[PPCC_MAX_RANK];
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < x->rank; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) mask[a->ints[i] < 0 ? a->ints[i] + x->rank : a->ints[i]] = true;
  int64_t stride[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0}, s = 1, off = 0;
  for (int i = x->rank - 1; i >= 0; i--) {
    stride[i] = mask[i] ? 0 : s;
    s *= mask[i] ? 1 : x->shape[i];
  }
  int64_t n_out = numel(y), n_in = numel(x);
  int64_t *acc = rt_calloc((n_out > 0 ? n_out : 1) * 8);
  if (!acc) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int64_t j = 0; j < n_in; j++) {
    acc[off] = int_apply(INT_ADD, acc[off], int_load(x, j));
    for (int i = x->rank - 1; i >= 0; i--) {
      off += stride[i];
      if (++idx[i] < x->shape[i]) break;
      off -= stride[i] * x->shape[i];
      idx[i] = 0;
    }
  }
  for (int64_t j = 0; j < n_out; j++) int_store(y, j, wrap_to(acc[j], int_bits(y->dtype)));
  rt_free(acc);
  return PPCC_OK;
}

static ppcc_status run_int(int_kind k, const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  if (k == INT_SUM) return int_sum(op, &in[0], out, d);
  if (op->n_in == 2) {
    int_map(k, &in[0], &in[1], 0, out);
    return PPCC_OK;
  }
  /* scale by the attribute truncated to an integer, as the JIT's constant */
  int64_t c = k == INT_SCALE ? wrap_to((int64_t)ppcc_attr_float(op, "value", 1.0), int_bits(out->dtype)) : 0;
  int_map(k, &in[0], NULL, c, out);
  return PPCC_OK;
}

/* ---------------- the table ---------------- */
static const ppcc_kernel_fn kernel_table[PPCC_OP_COUNT] = {
#define PPCC_OP(name, min_in, max_in, n_out, attrs, family, shape, shard, pin, flops, batch, kernel, lower) \
  [PPCC_OP_##name] = kernel,
#include "ppcc/op_list.h"
#undef PPCC_OP
};

ppcc_kernel_fn ppcc_rt_kernel(ppcc_op_id id) {
  return (unsigned)id < PPCC_OP_COUNT ? kernel_table[id] : NULL;
}

bool rt_kernel_swaps_last_two(const ppcc_op *op, int rank) {
  if (ppcc_rt_kernel(op->info->id) != kernel_transpose || op->n_in != 1 || rank < 2 || rank > PPCC_MAX_RANK) return false;
  int perm[PPCC_MAX_RANK];
  get_perm(op, rank, perm);
  for (int i = 0; i < rank - 2; i++)
    if (perm[i] != i) return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

bool rt_kernel_reads_swapped(const ppcc_op *op, int k) {
  return ppcc_rt_kernel(op->info->id) == kernel_matmul && op->n_in == 2 && k == 1;
}

bool rt_kernel_is_view(const ppcc_op *op) {
  return ppcc_rt_kernel(op->info->id) == kernel_reshape && op->n_in == 1 && op->n_out == 1;
}

/* Kernels that move elements without arithmetic work on any dtype. */
static bool moves_raw_elements(ppcc_kernel_fn k) {
  return k == kernel_reshape || k == kernel_transpose || k == kernel_index_copy || kernel_llm_handles_dtypes(k) ||
         kernel_onnx_handles_dtypes(k);
}

static void free_f32_copies(ppcc_tensor *t, int n, const ppcc_tensor *orig) {
  for (int i = 0; i < n; i++)
    if (t[i].data != orig[i].data) rt_free(t[i].data);
}

/* Runs a float kernel on f32 copies of f16/bf16 tensors. */
static ppcc_status run_converted(ppcc_kernel_fn k, const ppcc_op *op, const ppcc_tensor *in,
                                 ppcc_tensor *out, ppcc_diag *d) {
  ppcc_tensor cin[8], cout[1];
  int n_in = op->n_in;
  bool ok = true;
  for (int i = 0; i < n_in; i++) {
    cin[i] = in[i];
    if (in[i].dtype == PPCC_F32 || ppcc_dtype_is_quantized(in[i].dtype)) continue; /* blocks: the kernel reads them */
    /* a linear's f16/bf16 weight is read as stored next to the f32 copy
     * of x, a few rows at a time (half_matmul.c): a whole f32 copy per
     * call was the largest buffer of a --dtype bf16 decode (its LM head) */
    if (k == kernel_linear && i == 1 && ppcc_dtype_is_stored_half(in[i].dtype, PPCC_F32)) continue;
    cin[i].dtype = PPCC_F32;
    cin[i].data = rt_alloc(numel(&in[i]) * 4);
    if (cin[i].data)
      rt_to_f32(in[i].dtype, in[i].data, cin[i].data, numel(&in[i]));
    else {
      cin[i].data = in[i].data; /* not freed below */
      ok = false;
    }
  }
  cout[0] = out[0];
  cout[0].dtype = PPCC_F32;
  cout[0].data = rt_alloc(numel(&out[0]) * 4);
  ppcc_status st = ok && cout[0].data ? k(op, cin, cout, d) : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (st == PPCC_OK) rt_from_f32(out[0].dtype, cout[0].data, out[0].data, numel(&out[0]));
  free_f32_copies(cin, n_in, in);
  rt_free(cout[0].data);
  return st;
}

ppcc_status ppcc_rt_run_kernel(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                               ppcc_diag *d) {
  ppcc_kernel_fn k = ppcc_rt_kernel(op->info->id);
  if (!k) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "op '%s' has no kernel", op->info->name);
  if (op->n_in > 8 || op->n_out != 1)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "op '%s': unsupported arity", op->info->name);
  if (moves_raw_elements(k)) return k(op, in, out, d);
  bool all_int = !ppcc_dtype_is_float(out[0].dtype);
  for (int i = 0; i < op->n_in; i++) all_int = all_int && !ppcc_dtype_is_float(in[i].dtype);
  if (all_int && int_form(k) != INT_NONE) return run_int(int_form(k), op, in, out, d);
  bool all_f32 = out[0].dtype == PPCC_F32;
  for (int i = 0; i < op->n_in; i++) {
    if (k == kernel_linear && i == 1 &&
        (ppcc_dtype_is_quantized(in[i].dtype) || ppcc_dtype_is_stored_half(in[i].dtype, in[0].dtype)))
      continue; /* a quantized weight, or f16/bf16 as stored */
    if (!ppcc_dtype_is_float(in[i].dtype))
      return ppcc_error(d, "kernel '%s' computes on float tensors only, got %s", op->info->name,
                        ppcc_dtype_name(in[i].dtype));
    all_f32 = all_f32 && in[i].dtype == PPCC_F32;
  }
  return all_f32 ? k(op, in, out, d) : run_converted(k, op, in, out, d);
}
