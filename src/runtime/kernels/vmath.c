/* exp, silu, sigmoid, gelu and softmax rows over arrays, eight lanes at a
 * time with AVX2+FMA where the CPU has them (gemm_small.c's check), else
 * the scalar expf/erff forms. silu took scalar expf per element (issue 23).
 * (--deterministic: always the scalar forms, as the JIT's lowerings.)
 * Softmax rows take 16 lanes where the kernels run at AVX-512.
 *   exp: Cephes' range reduction x = n ln2 + r, |r| <= ln2/2, a degree-6
 *     polynomial, 2^n applied in two halves so results down to the
 *     denormals round once; within 2 ulp of expf; +-inf, NaN, overflow to
 *     inf and underflow to 0 as expf.
 *   gelu: 0.5 x erfc(-x/sqrt 2), erfc from Numerical Recipes' erfcc
 *     (fractional error < 1.2e-7) with the exponent kept exact in two parts so the
 *     small tail for negative x keeps its relative accuracy (the erff form
 *     0.5 x (1 + erf) loses it by cancellation). */
#include <math.h>
#include "kernels.h"
#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86 1
#define AVX2 __attribute__((target("avx2,fma")))
#endif

/* --deterministic promises the same bits from both backends, and the
 * JIT's lowerings call libm's expf and erff: the scalar forms then. */
static bool use_vector(void) { return rt_simd_enabled() && !rt_row_invariant_matmul(); }

static float silu1(float x) { return x / (1.0f + expf(-x)); }
static float sigmoid1(float x) { return 1.0f / (1.0f + expf(-x)); }
static float gelu1(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

#ifdef HAVE_X86
AVX2 static inline __m256 exp8(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.8f), lo = _mm256_set1_ps(-104.0f);
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi); /* NaN -> lo: put back below */
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
  __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  y = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

AVX2 static inline __m256 silu8(__m256 x) {
  __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

AVX2 static inline __m256 sigmoid8(__m256 x) {
  __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* erfc(a) ~ t e^(-a^2 + P(t)), t = 1 / (1 + a/2) (Numerical Recipes'
 * erfcc): P's coefficients, highest power first, for gelu8 and gelu16. */
enum { ERFC_TERMS = 10 };
static const float erfc_poly[ERFC_TERMS] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                                            -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f, -1.26551223f};

AVX2 static inline __m256 gelu8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(-0.70710678118654752f)); /* erfc's argument */
  /* |z| = |x|/sqrt 2, at most 16 (erfc(16) is 0 in f32); z^2 = x^2/2 from x
   * itself, exactly as hi + lo: the rounding of z would cost ulp(z^2) */
  __m256 ax = _mm256_min_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(22.627417f));
  __m256 a = _mm256_mul_ps(ax, _mm256_set1_ps(0.70710678118654752f));
  __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), a, one));
  __m256 p = _mm256_set1_ps(erfc_poly[0]);
#pragma GCC unroll 9
  for (int i = 1; i < ERFC_TERMS; i++) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(erfc_poly[i]));
  __m256 x2 = _mm256_mul_ps(ax, ax), half = _mm256_set1_ps(0.5f);
  __m256 a2 = _mm256_mul_ps(half, x2), a2_lo = _mm256_mul_ps(half, _mm256_fmsub_ps(ax, ax, x2));
  /* p - a2 as s + err exactly (TwoSum): its rounding would cost ulp(x^2/2) */
  __m256 na2 = _mm256_sub_ps(_mm256_setzero_ps(), a2), sum = _mm256_add_ps(p, na2), bv = _mm256_sub_ps(sum, p);
  __m256 err = _mm256_add_ps(_mm256_sub_ps(p, _mm256_sub_ps(sum, bv)), _mm256_sub_ps(na2, bv));
  /* e^(err - a2_lo) ~ 1 + err - a2_lo: both tiny */
  __m256 e = _mm256_mul_ps(exp8(sum), _mm256_add_ps(one, _mm256_sub_ps(err, a2_lo)));
  __m256 erfc_a = _mm256_mul_ps(t, e);
  __m256 neg_z = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ); /* erfc(-a) = 2 - erfc(a) */
  __m256 erfc_z = _mm256_blendv_ps(erfc_a, _mm256_sub_ps(_mm256_set1_ps(2.0f), erfc_a), neg_z);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), erfc_z);
}

#define ARRAY_FN(name)                                                                                         \
  AVX2 static void name##_avx2(const float *x, float *y, int64_t n) {                                         \
    int64_t j = 0;                                                                                             \
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, name##8(_mm256_loadu_ps(x + j)));                       \
    if (j < n) {                                                                                               \
      float buf[8] = {0};                                                                                      \
      for (int64_t k = j; k < n; k++) buf[k - j] = x[k];                                                       \
      _mm256_storeu_ps(buf, name##8(_mm256_loadu_ps(buf)));                                                    \
      for (int64_t k = j; k < n; k++) y[k] = buf[k - j];                                                       \
    }                                                                                                          \
  }
ARRAY_FN(exp)
ARRAY_FN(silu)
ARRAY_FN(sigmoid)
ARRAY_FN(gelu)
#endif

/* Arrays split among the kernel threads (elements are independent: the
 * split changes no bits); gelu of a BERT FFN's 128 x 3072 took a
 * millisecond on one thread while the other waited. */
typedef void (*array_fn)(const float *x, float *y, int64_t n);
typedef struct array_job {
  array_fn fn;
  const float *x;
  float *y;
} array_job;

static void array_range(void *arg, int64_t begin, int64_t end) {
  const array_job *j = arg;
  j->fn(j->x + begin, j->y + begin, end - begin);
}

static void split_array(array_fn fn, const float *x, float *y, int64_t n) {
  array_job j = {fn, x, y};
  rt_parallel_range(n, 16, 16384, array_range, &j);
}

#define SCALAR_FN(name, f)                                                                                     \
  static void name##_scalar(const float *x, float *y, int64_t n) {                                             \
    for (int64_t j = 0; j < n; j++) y[j] = f(x[j]);                                                            \
  }
SCALAR_FN(exp, expf)
SCALAR_FN(silu, silu1)
SCALAR_FN(sigmoid, sigmoid1)
SCALAR_FN(gelu, gelu1)

#ifdef HAVE_X86
static void gelu_avx512(const float *x, float *y, int64_t n); /* below, next to exp16 */
#define PICK(name) (use_vector() ? name##_avx2 : name##_scalar)
#else
#define PICK(name) name##_scalar
#endif

void rt_vexp(const float *x, float *y, int64_t n) { split_array(PICK(exp), x, y, n); }
void rt_vsilu(const float *x, float *y, int64_t n) { split_array(PICK(silu), x, y, n); }
void rt_vsigmoid(const float *x, float *y, int64_t n) { split_array(PICK(sigmoid), x, y, n); }
void rt_vgelu(const float *x, float *y, int64_t n) {
#ifdef HAVE_X86
  if (use_vector() && rt_simd_level() >= RT_SIMD_AVX512) {
    split_array(gelu_avx512, x, y, n);
    return;
  }
#endif
  split_array(PICK(gelu), x, y, n);
}

/* ---------------- softmax rows ---------------- */

#ifdef HAVE_X86
/* y = exp(x - mx) over n, returns the sum (in double lanes' order: the
 * f32 lanes summed per 8, then in double). */
AVX2 static double exp_shift_sum_avx2(float *y, int64_t n, float mx) {
  __m256 m = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
  double sum = 0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(y + j), m));
    _mm256_storeu_ps(y + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  for (int l = 0; l < 8; l++) sum += lanes[l];
  if (j < n) {
    float buf[8] = {0};
    for (int64_t k = j; k < n; k++) buf[k - j] = y[k] - mx;
    _mm256_storeu_ps(buf, exp8(_mm256_loadu_ps(buf)));
    for (int64_t k = j; k < n; k++) sum += (y[k] = buf[k - j]);
  }
  return sum;
}
#endif

#ifdef HAVE_X86
/* row *= scale over n, returns the maximum (NaN entries ignored, as fmaxf:
 * max_ps returns its second operand when either is NaN). */
AVX2 static float scale_max_avx2(float *row, int64_t n, float scale) {
  __m256 s = _mm256_set1_ps(scale), m = _mm256_set1_ps(-INFINITY);
  int64_t t = 0;
  for (; t + 8 <= n; t += 8) {
    __m256 x = _mm256_mul_ps(_mm256_loadu_ps(row + t), s);
    _mm256_storeu_ps(row + t, x);
    m = _mm256_max_ps(x, m);
  }
  float lanes[8], mx = -INFINITY;
  _mm256_storeu_ps(lanes, m);
  for (int l = 0; l < 8; l++) mx = fmaxf(mx, lanes[l]);
  for (; t < n; t++) mx = fmaxf(mx, row[t] *= scale);
  return mx;
}
#endif

#ifdef HAVE_X86
#define AVX512 __attribute__((target("avx512f,avx2,fma")))
/* exp8's steps on 16 lanes (the same constants and polynomial). */
AVX512 static inline __m512 exp16(__m512 x) {
  __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.8f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  y = _mm512_scalef_ps(y, n); /* y 2^n rounded once, denormals included (exp8's two halves) */
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}

/* gelu8's steps on 16 lanes (exp16 rounds as exp8: the same bits); a
 * BERT FFN's gelu took twice as long on 8 lanes. */
AVX512 static inline __m512 gelu16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(-0.70710678118654752f));
  __m512 ax = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(22.627417f));
  __m512 a = _mm512_mul_ps(ax, _mm512_set1_ps(0.70710678118654752f));
  __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(half, a, one));
  __m512 p = _mm512_set1_ps(erfc_poly[0]);
#pragma GCC unroll 9
  for (int i = 1; i < ERFC_TERMS; i++) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(erfc_poly[i]));
  __m512 x2 = _mm512_mul_ps(ax, ax);
  __m512 a2 = _mm512_mul_ps(half, x2), a2_lo = _mm512_mul_ps(half, _mm512_fmsub_ps(ax, ax, x2));
  __m512 na2 = _mm512_sub_ps(_mm512_setzero_ps(), a2), sum = _mm512_add_ps(p, na2), bv = _mm512_sub_ps(sum, p);
  __m512 err = _mm512_add_ps(_mm512_sub_ps(p, _mm512_sub_ps(sum, bv)), _mm512_sub_ps(na2, bv));
  __m512 e = _mm512_mul_ps(exp16(sum), _mm512_add_ps(one, _mm512_sub_ps(err, a2_lo)));
  __m512 erfc_a = _mm512_mul_ps(t, e);
  __mmask16 neg_z = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ); /* erfc(-a) = 2 - erfc(a) */
  __m512 erfc_z = _mm512_mask_blend_ps(neg_z, erfc_a, _mm512_sub_ps(_mm512_set1_ps(2.0f), erfc_a));
  return _mm512_mul_ps(_mm512_mul_ps(half, x), erfc_z);
}

AVX512 static void gelu_avx512(const float *x, float *y, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(y + j, k, gelu16(_mm512_maskz_loadu_ps(k, x + j)));
  }
}

/* rt_softmax_exp on 16 lanes, tails masked (max ignores NaN as fmaxf:
 * max_ps returns its second operand when either is NaN). */
AVX512 static double softmax_exp_avx512(float *row, int64_t n, float scale) {
  __m512 s = _mm512_set1_ps(scale), m = _mm512_set1_ps(-INFINITY);
  for (int64_t t = 0; t < n; t += 16) {
    __mmask16 k = n - t >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - t)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(k, row + t);
    if (scale != 1.0f) { /* attention's scores come scaled */
      x = _mm512_mul_ps(x, s);
      _mm512_mask_storeu_ps(row + t, k, x);
    }
    m = _mm512_mask_max_ps(m, k, x, m);
  }
  float mx = _mm512_reduce_max_ps(m);
  if (mx == -INFINITY) mx = 0.0f; /* all -inf scores: exp gives 0, sum 0, NaN as the scalar softmax */
  __m512 acc = _mm512_setzero_ps(), mv = _mm512_set1_ps(mx);
  for (int64_t t = 0; t < n; t += 16) {
    __mmask16 k = n - t >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - t)) - 1);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + t), mv));
    _mm512_mask_storeu_ps(row + t, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  /* the lanes summed in double, as a tree (a serial sum of 16 was a
   * quarter of the attention's softmax time) */
  __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(acc));
  __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
  return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* SM_ROWS rows of softmax_exp_avx512 at once, each with the very operations
 * (and bits) it gets alone: a causal block's rows are 4 vectors or so, so
 * one row's chain of max, its reduction, exp and the sum's reduction ran
 * mostly on latency (a quarter of the prefill attention's time). The
 * shorter row's lanes past its end are masked off (no loads, stores or
 * adds). */
enum { SM_ROWS = 3 };

AVX512 static inline __mmask16 tail16_vm(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

AVX512 static void softmax_exp_n_avx512(float *const *row, const int64_t *len, double *sums, int rows) {
  int64_t n = 0;
  __m512 m[SM_ROWS], acc[SM_ROWS], mv[SM_ROWS];
  _Pragma("GCC unroll 4") for (int r = 0; r < SM_ROWS; r++) {
    n = r < rows && len[r] > n ? len[r] : n;
    m[r] = _mm512_set1_ps(-INFINITY);
  }
  for (int64_t t = 0; t < n; t += 16)
    _Pragma("GCC unroll 4") for (int r = 0; r < SM_ROWS; r++) {
      __mmask16 k = r < rows ? tail16_vm(len[r] - t) : 0;
      m[r] = _mm512_mask_max_ps(m[r], k, _mm512_maskz_loadu_ps(k, row[r] + t), m[r]);
    }
  _Pragma("GCC unroll 4") for (int r = 0; r < SM_ROWS; r++) {
    float mx = _mm512_reduce_max_ps(m[r]);
    mv[r] = _mm512_set1_ps(mx == -INFINITY ? 0.0f : mx);
    acc[r] = _mm512_setzero_ps();
  }
  for (int64_t t = 0; t < n; t += 16)
    _Pragma("GCC unroll 4") for (int r = 0; r < SM_ROWS; r++) {
      __mmask16 k = r < rows ? tail16_vm(len[r] - t) : 0;
      __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row[r] + t), mv[r]));
      _mm512_mask_storeu_ps(row[r] + t, k, e);
      acc[r] = _mm512_mask_add_ps(acc[r], k, acc[r], e);
    }
  _Pragma("GCC unroll 4") for (int r = 0; r < SM_ROWS; r++) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(acc[r]));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1)));
    if (r < rows) sums[r] = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  }
}
#endif

/* row[0..valid) = exp(row * scale - max), returns their sum: softmax but
 * for the division (attention divides its output row instead). */
double rt_softmax_exp(float *row, int64_t valid, float scale) {
  float mx = -INFINITY;
  bool vector = use_vector();
#ifdef HAVE_X86
  if (vector && rt_simd_level() >= RT_SIMD_AVX512) return softmax_exp_avx512(row, valid, scale);
  if (vector) mx = scale_max_avx2(row, valid, scale);
#endif
  if (!vector)
    for (int64_t t = 0; t < valid; t++) {
      row[t] *= scale;
      mx = fmaxf(mx, row[t]);
    }
  if (mx == -INFINITY) mx = 0.0f; /* all -inf scores: exp gives 0, sum 0, NaN as the scalar softmax */
#ifdef HAVE_X86
  if (vector) return exp_shift_sum_avx2(row, valid, mx);
#endif
  double sum = 0;
  for (int64_t t = 0; t < valid; t++) sum += (row[t] = expf(row[t] - mx));
  return sum;
}

/* row[0..n) = softmax(row * scale) where only the first `valid` entries
 * take part (the rest, masked keys, become 0): the attention's scores in
 * one pass for scale and max, one for exp and sum, one to normalise. */
void rt_softmax_row(float *row, int64_t n, float scale, int64_t valid) {
  if (valid > n) valid = n;
  if (valid < 0) valid = 0;
  for (int64_t t = valid; t < n; t++) row[t] = 0.0f;
  if (valid == 0) { /* every key masked: as softmax of all -inf (NaN) */
    for (int64_t t = 0; t < n; t++) row[t] = NAN;
    return;
  }
  float inv = (float)(1.0 / rt_softmax_exp(row, valid, scale));
  for (int64_t t = 0; t < valid; t++) row[t] *= inv;
}

void rt_softmax_exp_rows(float *p, int64_t ld, int64_t rows, const int64_t *lo, const int64_t *hi, double *sums) {
  int64_t r = 0;
#ifdef HAVE_X86
  if (use_vector() && rt_simd_level() >= RT_SIMD_AVX512)
    for (; r < rows; r += SM_ROWS) {
      float *row[SM_ROWS];
      int64_t len[SM_ROWS];
      int n = rows - r < SM_ROWS ? (int)(rows - r) : SM_ROWS;
      for (int i = 0; i < n; i++) row[i] = p + (r + i) * ld + lo[r + i], len[i] = hi[r + i] - lo[r + i];
      softmax_exp_n_avx512(row, len, sums + r, n);
    }
#endif
  for (; r < rows; r++) sums[r] = rt_softmax_exp(p + r * ld + lo[r], hi[r] - lo[r], 1.0f);
}
