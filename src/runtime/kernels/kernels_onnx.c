/* Kernels of the elementwise ops ONNX models bring: f32 in, f32 out
 * (ppcc_rt_run_kernel converts f16/bf16 around them), IEEE semantics
 * (sqrt of a negative is NaN, 1/0 is inf), as ONNX Runtime computes them. */
#include <math.h>
#include <string.h>
#include "kernels.h"
#include "kernels_onnx.h"

static void map(float (*f)(float), const ppcc_tensor *x, ppcc_tensor *y) {
  const float *src = x->data;
  float *dst = y->data;
  int64_t n = ppcc_num_elements(x->rank, x->shape);
  int nt = rt_kernel_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && n > 32768) schedule(static)
  for (int64_t j = 0; j < n; j++) dst[j] = f(src[j]);
}

static float f_reciprocal(float x) { return 1.0f / x; }

#define ONNX_UNARY(name, fn)                                                                     \
  ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,         \
                            ppcc_diag *d) {                                                      \
    map(fn, &in[0], &out[0]);                                                                    \
    return PPCC_OK;                                                                              \
  }
ONNX_UNARY(sqrt, sqrtf)
ONNX_UNARY(reciprocal, f_reciprocal)
ONNX_UNARY(erf, erff)
ONNX_UNARY(log, logf)

/* out = f(a, b) with numpy broadcasting: walk the output index, stepping
 * each operand's offset by its stride (0 along broadcast dims). */
static void map2(float (*f)(float, float), const ppcc_tensor *a, const ppcc_tensor *b, ppcc_tensor *y) {
  int r = y->rank;
  int64_t sa[PPCC_MAX_RANK], sb[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0};
  const ppcc_tensor *xs[2] = {a, b};
  int64_t *ss[2] = {sa, sb};
  for (int k = 0; k < 2; k++) {
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
      int xi = i - (r - xs[k]->rank);
      int64_t size = xi >= 0 ? xs[k]->shape[xi] : 1;
      ss[k][i] = size == 1 ? 0 : s;
      s *= size;
    }
  }
  const float *pa = a->data, *pb = b->data;
  float *dst = y->data;
  int64_t n = ppcc_num_elements(y->rank, y->shape), oa = 0, ob = 0;
  for (int64_t j = 0; j < n; j++) {
    dst[j] = f(pa[oa], pb[ob]);
    for (int i = r - 1; i >= 0; i--) {
      oa += sa[i];
      ob += sb[i];
      if (++idx[i] < y->shape[i]) break;
      oa -= sa[i] * y->shape[i];
      ob -= sb[i] * y->shape[i];
      idx[i] = 0;
    }
  }
}

ppcc_status kernel_pow(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  map2(powf, &in[0], &in[1], &out[0]);
  return PPCC_OK;
}

/* ---------------- comparisons: any dtype in, bool out ---------------- */
typedef enum { CMP_EQ, CMP_LT, CMP_GT } cmp_kind;

static double load_float(const ppcc_tensor *t, int64_t j) {
  if (t->dtype == PPCC_F32) return ((const float *)t->data)[j];
  float f;
  rt_to_f32(t->dtype, (const char *)t->data + j * ppcc_dtype_size(t->dtype), &f, 1);
  return f;
}

static int64_t load_int(const ppcc_tensor *t, int64_t j) {
  switch (t->dtype) {
  case PPCC_I64: return ((const int64_t *)t->data)[j];
  case PPCC_I32: return ((const int32_t *)t->data)[j];
  case PPCC_I8: return ((const int8_t *)t->data)[j];
  default: return ((const uint8_t *)t->data)[j] & 1; /* bool */
  }
}

/* Strides of x broadcast to rank r (0 along broadcast dims). */
static void bstrides(const ppcc_tensor *x, int r, int64_t *st) {
  int64_t s = 1;
  for (int i = r - 1; i >= 0; i--) {
    int xi = i - (r - x->rank);
    int64_t size = xi >= 0 ? x->shape[xi] : 1;
    st[i] = size == 1 ? 0 : s;
    s *= size;
  }
}

/* Calls visit(j, offsets of each operand) for every output element j. */
#define FOR_BROADCAST(y, n_ops, ops, off, body)                                                  \
  do {                                                                                           \
    int r_ = (y)->rank;                                                                          \
    int64_t st_[3][PPCC_MAX_RANK], idx_[PPCC_MAX_RANK] = {0}, off[3] = {0, 0, 0};               \
    for (int k_ = 0; k_ < (n_ops); k_++) bstrides((ops)[k_], r_, st_[k_]);                      \
    int64_t n_ = ppcc_num_elements(r_, (y)->shape);                                              \
    for (int64_t j = 0; j < n_; j++) {                                                           \
      body;                                                                                      \
      for (int i_ = r_ - 1; i_ >= 0; i_--) {                                                     \
        for (int k_ = 0; k_ < (n_ops); k_++) off[k_] += st_[k_][i_];                             \
        if (++idx_[i_] < (y)->shape[i_]) break;                                                  \
        for (int k_ = 0; k_ < (n_ops); k_++) off[k_] -= st_[k_][i_] * (y)->shape[i_];            \
        idx_[i_] = 0;                                                                            \
      }                                                                                          \
    }                                                                                            \
  } while (0)

static bool cmp(cmp_kind k, const ppcc_tensor *a, int64_t ia, const ppcc_tensor *b, int64_t ib) {
  if (ppcc_dtype_is_float(a->dtype)) { /* NaN compares false, as ONNX Runtime does */
    double x = load_float(a, ia), y = load_float(b, ib);
    return k == CMP_EQ ? x == y : k == CMP_LT ? x < y : x > y;
  }
  int64_t x = load_int(a, ia), y = load_int(b, ib);
  return k == CMP_EQ ? x == y : k == CMP_LT ? x < y : x > y;
}

static ppcc_status run_compare(cmp_kind k, const ppcc_tensor *in, ppcc_tensor *out) {
  const ppcc_tensor *ops[2] = {&in[0], &in[1]};
  uint8_t *dst = out->data;
  FOR_BROADCAST(out, 2, ops, off, dst[j] = cmp(k, &in[0], off[0], &in[1], off[1]));
  return PPCC_OK;
}

ppcc_status kernel_equal(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  return run_compare(CMP_EQ, in, out);
}
ppcc_status kernel_less(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  return run_compare(CMP_LT, in, out);
}
ppcc_status kernel_greater(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  return run_compare(CMP_GT, in, out);
}

/* where(cond, x, y): x's element where cond, else y's; any dtype, moved raw. */
ppcc_status kernel_where(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *ops[3] = {&in[0], &in[1], &in[2]};
  const uint8_t *c = in[0].data;
  int es = ppcc_dtype_size(out->dtype);
  char *dst = out->data;
  const char *x = in[1].data, *y = in[2].data;
  FOR_BROADCAST(out, 3, ops, off,
                memcpy(dst + j * es, (c[off[0]] & 1) ? x + off[1] * es : y + off[2] * es, (size_t)es));
  return PPCC_OK;
}

/* ---------------- cast ---------------- */
/* Float to integer: truncation toward zero, NaN to 0, out of range
 * saturated at the largest f32 values inside the type (the JIT clamps the
 * same f32 bounds), so both backends agree where C and LLVM leave it
 * undefined. Float to bool: x != 0 (NaN is true, as numpy has it). Integer
 * to integer wraps; integer to f16/bf16 rounds via f32, like the JIT. */
static void float_int_bounds(ppcc_dtype t, float *lo, float *hi) {
  switch (t) {
  case PPCC_I64: *lo = -9223372036854775808.0f, *hi = 9223371487098961920.0f; break;
  case PPCC_I32: *lo = -2147483648.0f, *hi = 2147483520.0f; break;
  default: *lo = -128.0f, *hi = 127.0f; break; /* i8 */
  }
}

static void store_int(ppcc_tensor *t, int64_t j, int64_t v) {
  switch (t->dtype) {
  case PPCC_I64: ((int64_t *)t->data)[j] = v; break;
  case PPCC_I32: ((int32_t *)t->data)[j] = (int32_t)(uint32_t)(uint64_t)v; break;
  case PPCC_I8: ((int8_t *)t->data)[j] = (int8_t)(uint8_t)(uint64_t)v; break;
  default: ((uint8_t *)t->data)[j] = v != 0; break; /* bool */
  }
}

static void store_float(ppcc_tensor *t, int64_t j, float f) {
  if (t->dtype == PPCC_F32) ((float *)t->data)[j] = f;
  else rt_from_f32(t->dtype, &f, (char *)t->data + j * ppcc_dtype_size(t->dtype), 1);
}

ppcc_status kernel_cast(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0];
  int64_t n = ppcc_num_elements(x->rank, x->shape);
  bool from_float = ppcc_dtype_is_float(x->dtype), to_float = ppcc_dtype_is_float(out->dtype);
  float lo = 0, hi = 0;
  if (!to_float) float_int_bounds(out->dtype, &lo, &hi);
  for (int64_t j = 0; j < n; j++) {
    if (from_float) {
      float f = (float)load_float(x, j);
      if (to_float) store_float(out, j, f);
      else if (out->dtype == PPCC_BOOL) store_int(out, j, f != 0 || isnan(f));
      else store_int(out, j, isnan(f) ? 0 : (int64_t)(f < lo ? lo : f > hi ? hi : f));
    } else {
      int64_t v = load_int(x, j);
      if (x->dtype == PPCC_BOOL) v &= 1;
      if (to_float) store_float(out, j, (float)v);
      else store_int(out, j, v);
    }
  }
  return PPCC_OK;
}

/* expand: each output element copies the operand element it broadcasts
 * from (any dtype, moved raw; the local shard's shapes). */
ppcc_status kernel_expand(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *ops[1] = {&in[0]};
  int es = ppcc_dtype_size(out->dtype);
  char *dst = out->data;
  const char *x = in[0].data;
  FOR_BROADCAST(out, 1, ops, off, memcpy(dst + j * es, x + off[0] * es, (size_t)es));
  return PPCC_OK;
}

/* gather_elements: any data dtype, moved raw; an index outside [-D, D)
 * fails the run with the message the JIT's index check gives. */
ppcc_status kernel_gather_elements(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0], *ix = &in[1];
  int r = x->rank, dim = (int)ppcc_attr_int(op, "dim", 0), es = ppcc_dtype_size(x->dtype);
  if (dim < 0) dim += r;
  int64_t xs[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0}, s = 1;
  for (int i = r - 1; i >= 0; i--) {
    xs[i] = s;
    s *= x->shape[i];
  }
  int64_t n = ppcc_num_elements(ix->rank, ix->shape), D = x->shape[dim];
  for (int64_t j = 0; j < n; j++) {
    int64_t t = load_int(ix, j);
    if (t < -D || t >= D)
      return ppcc_error(d, "index %lld at position %lld is out of range [%lld, %lld)", (long long)t, (long long)j,
                        (long long)-D, (long long)D);
    if (t < 0) t += D; /* ONNX: a negative index counts from the end */
    int64_t off = 0;
    for (int i = 0; i < r; i++) off += (i == dim ? t : idx[i]) * xs[i];
    memcpy((char *)out->data + j * es, (const char *)x->data + off * es, (size_t)es);
    for (int i = r - 1; i >= 0; i--) {
      if (++idx[i] < ix->shape[i]) break;
      idx[i] = 0;
    }
  }
  return PPCC_OK;
}

/* gather (numpy take along dim): any data dtype, moved raw; an index
 * outside [-D, D) fails the run with the message the JIT's check gives. */
ppcc_status kernel_gather(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0], *ix = &in[1];
  int r = x->rank, dim = (int)ppcc_attr_int(op, "dim", 0), es = ppcc_dtype_size(x->dtype);
  if (dim < 0) dim += r;
  int64_t outer = 1, inner = 1, D = x->shape[dim], n = ppcc_num_elements(ix->rank, ix->shape);
  for (int i = 0; i < dim; i++) outer *= x->shape[i];
  for (int i = dim + 1; i < r; i++) inner *= x->shape[i];
  size_t row = (size_t)(inner * es);
  for (int64_t j = 0; j < n; j++) {
    int64_t t = load_int(ix, j);
    if (t < -D || t >= D)
      return ppcc_error(d, "index %lld at position %lld is out of range [%lld, %lld)", (long long)t, (long long)j,
                        (long long)-D, (long long)D);
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < n; j++) {
      int64_t t = load_int(ix, j);
      if (t < 0) t += D; /* ONNX: a negative index counts from the end */
      memcpy((char *)out->data + (size_t)((o * n + j) * inner * es), (const char *)x->data + (size_t)((o * D + t) * inner * es), row);
    }
  return PPCC_OK;
}

/* ---- conv, max_pool (f32; 1-D runs as 2-D with one row) ---- */

typedef struct window {
  ppcc_conv_geom g;
  int64_t N, C, H, W, OH, OW;
} window;

/* A 1-D geometry as 2-D with one row. */
static void as_2d(ppcc_conv_geom *g) {
  if (g->spatial != 1) return;
  g->kernel[1] = g->kernel[0], g->stride[1] = g->stride[0], g->dilation[1] = g->dilation[0];
  g->pad_begin[1] = g->pad_begin[0], g->pad_end[1] = g->pad_end[0];
  g->kernel[0] = g->stride[0] = g->dilation[0] = 1;
  g->pad_begin[0] = g->pad_end[0] = 0;
  g->spatial = 2;
}

static bool window_of(const ppcc_op *op, const ppcc_tensor *x, const ppcc_tensor *y, const int64_t *kernel, window *w) {
  if (!ppcc_conv_geom_read(op, x->rank, kernel, &w->g)) return false;
  as_2d(&w->g); /* [N, C, W] as [N, C, 1, W] */
  bool two = x->rank == 4;
  w->N = x->shape[0], w->C = x->shape[1], w->H = two ? x->shape[2] : 1, w->W = x->shape[x->rank - 1];
  w->OH = two ? y->shape[2] : 1, w->OW = y->shape[y->rank - 1];
  return true;
}

/* conv: per batch row and group, im2col ([C/group * kh * kw, OH * OW],
 * zeros where the window reads padding) and one GEMM with the group's
 * filters [F/group, C/group * kh * kw]. */
bool rt_conv2d_f32(const ppcc_conv_geom *geom, const int64_t *xs, int64_t F, const int64_t *ys, const float *X,
                   const float *Wt, float *Y) {
  window w = {.g = *geom, .N = xs[0], .C = xs[1], .H = xs[2], .W = xs[3], .OH = ys[2], .OW = ys[3]};
  as_2d(&w.g);
  int64_t G = w.g.group, Cg = w.C / G, Fg = F / G, kh = w.g.kernel[0], kw = w.g.kernel[1];
  int64_t K = Cg * kh * kw, P = w.OH * w.OW;
  float *col = rt_alloc((size_t)(K * P > 0 ? K * P : 1) * sizeof(float));
  if (!col) return false;
  for (int64_t n = 0; n < w.N; n++)
    for (int64_t g = 0; g < G; g++) {
      int nt = rt_kernel_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && K * P > 32768) schedule(static)
      for (int64_t r = 0; r < K; r++) {
        int64_t c = r / (kh * kw), i = r / kw % kh, j = r % kw;
        const float *plane = X + ((n * w.C) + g * Cg + c) * w.H * w.W;
        for (int64_t oh = 0; oh < w.OH; oh++) {
          int64_t ih = oh * w.g.stride[0] - w.g.pad_begin[0] + i * w.g.dilation[0];
          for (int64_t ow = 0; ow < w.OW; ow++) {
            int64_t iw = ow * w.g.stride[1] - w.g.pad_begin[1] + j * w.g.dilation[1];
            bool inside = ih >= 0 && ih < w.H && iw >= 0 && iw < w.W;
            col[r * P + oh * w.OW + ow] = inside ? plane[ih * w.W + iw] : 0.0f;
          }
        }
      }
      ppcc_rt_sgemm(Fg, P, K, Wt + g * Fg * K, col, false, Y + (n * F + g * Fg) * P);
    }
  rt_free(col);
  return true;
}

ppcc_status kernel_conv(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0], *wt = &in[1];
  window w;
  if (!window_of(op, x, out, wt->shape + 2, &w)) return ppcc_error(d, "conv: invalid window attributes");
  int64_t xs[4] = {w.N, w.C, w.H, w.W}, ys[4] = {w.N, wt->shape[0], w.OH, w.OW};
  ppcc_conv_geom g;
  ppcc_conv_geom_read(op, x->rank, wt->shape + 2, &g);
  if (!rt_conv2d_f32(&g, xs, wt->shape[0], ys, x->data, wt->data, out->data))
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  return PPCC_OK;
}

/* max_pool: the max over each window's elements inside the input (padding
 * never wins, as ONNX's -inf padding); NaN propagates. */
ppcc_status kernel_max_pool(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0];
  window w;
  if (!window_of(op, x, out, NULL, &w)) return ppcc_error(d, "max_pool: invalid window attributes");
  const float *X = x->data;
  float *Y = out->data;
  int64_t planes = w.N * w.C;
  int nt = rt_kernel_threads();
#pragma omp parallel for num_threads(nt) if (nt > 1 && planes * w.OH * w.OW > 32768) schedule(static)
  for (int64_t p = 0; p < planes; p++)
    for (int64_t oh = 0; oh < w.OH; oh++)
      for (int64_t ow = 0; ow < w.OW; ow++) {
        float m = -INFINITY;
        for (int64_t i = 0; i < w.g.kernel[0]; i++) {
          int64_t ih = oh * w.g.stride[0] - w.g.pad_begin[0] + i * w.g.dilation[0];
          for (int64_t j = 0; ih >= 0 && ih < w.H && j < w.g.kernel[1]; j++) {
            int64_t iw = ow * w.g.stride[1] - w.g.pad_begin[1] + j * w.g.dilation[1];
            if (iw < 0 || iw >= w.W) continue;
            float v = X[(p * w.H + ih) * w.W + iw];
            if (isnan(v) || v > m) m = isnan(m) ? m : v;
          }
        }
        Y[(p * w.OH + oh) * w.OW + ow] = m;
      }
  return PPCC_OK;
}

bool kernel_onnx_handles_dtypes(ppcc_kernel_fn k) {
  return k == kernel_equal || k == kernel_less || k == kernel_greater || k == kernel_where || k == kernel_cast ||
         k == kernel_expand || k == kernel_gather_elements || k == kernel_gather;
}

/* reduce_max over attrs.dim (all dims without it), f32 (f16/bf16 are
 * converted around it, exactly); NaN propagates, an empty max is -inf. */
ppcc_status kernel_reduce_max(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *x = &in[0];
  int r = x->rank;
  bool mask[PPCC_MAX_RANK];
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < r; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) mask[a->ints[i] < 0 ? a->ints[i] + r : a->ints[i]] = true;
  /* output strides over x's dims: 0 along reduced dims */
  int64_t os[PPCC_MAX_RANK], s = 1, idx[PPCC_MAX_RANK] = {0};
  for (int i = r - 1; i >= 0; i--) {
    os[i] = mask[i] ? 0 : s;
    s *= mask[i] ? 1 : x->shape[i];
  }
  float *y = out->data;
  const float *src = x->data;
  int64_t n_out = ppcc_num_elements(out->rank, out->shape), n = ppcc_num_elements(r, x->shape), o = 0;
  for (int64_t j = 0; j < n_out; j++) y[j] = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    float v = src[j];
    if (isnan(v) || isnan(y[o]) ? true : v > y[o]) y[o] = isnan(y[o]) ? y[o] : v;
    for (int i = r - 1; i >= 0; i--) {
      o += os[i];
      if (++idx[i] < x->shape[i]) break;
      o -= os[i] * x->shape[i];
      idx[i] = 0;
    }
  }
  return PPCC_OK;
}
