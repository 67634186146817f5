/* The vector exp/silu/sigmoid/gelu and softmax rows (src/runtime/kernels/
 * vmath.c) against the scalar expf/erff forms and double references, on
 * a sweep and on edge values: signed zeros, denormals, the overflow and
 * underflow thresholds, huge values, +-inf and NaN. Every length 0..19 so
 * the masked tails run. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../src/runtime/kernels/kernels.h"
#include "test_support.h"

static const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 0.5f, -0.5f, 1.0f, -1.0f,
                              3.0f, -3.0f, 10.0f, -10.0f, 20.0f, -20.0f, 80.0f, -80.0f, 87.3f, -87.3f,
                              88.72f, 88.7228f, 88.73f, 89.0f, -89.0f, -100.0f, -103.0f, -103.97f, -104.0f, -110.0f,
                              1e10f, -1e10f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, NAN, -NAN};
#define N_EDGES ((int)(sizeof edges / sizeof *edges))

/* The inputs: every edge, then a sweep of [-120, 120]. */
static int inputs(float *x, int cap) {
  int n = 0;
  for (int i = 0; i < N_EDGES; i++) x[n++] = edges[i];
  for (float v = -120.0f; v <= 120.0f && n < cap; v += 0.0137f) x[n++] = v;
  return n;
}

/* Same class (NaN, inf of a sign, zero) and close: rel, with abs for the
 * denormal range. */
static void check_close(const char *what, float x, float got, double want, double rel) {
  if (isnan(want)) {
    ck_assert_msg(isnan(got), "%s(%g) = %g, want NaN", what, x, got);
    return;
  }
  if (isinf(want)) {
    ck_assert_msg(got == (float)want, "%s(%g) = %g, want %g", what, x, got, want);
    return;
  }
  double tol = rel * fabs(want) + 3e-45; /* two denormal steps */
  ck_assert_msg(fabs(got - want) <= tol && !isnan(got), "%s(%.9g) = %.9g, want %.9g", what, x, got, want);
}

enum { CAP = 20000 };

START_TEST(exp_silu_sigmoid_match_scalar) {
  rt_set_simd(true);
  static float x[CAP], y[CAP];
  int n = inputs(x, CAP);
  rt_vexp(x, y, n);
  for (int i = 0; i < n; i++) check_close("exp", x[i], y[i], expf(x[i]), 1e-6);
  for (int i = 0; i < n; i++) check_close("exp vs double", x[i], y[i], (float)exp((double)x[i]), 3e-7);
  rt_vsilu(x, y, n);
  for (int i = 0; i < n; i++) check_close("silu", x[i], y[i], x[i] / (1.0f + expf(-x[i])), 1e-6);
  rt_vsigmoid(x, y, n);
  for (int i = 0; i < n; i++) check_close("sigmoid", x[i], y[i], 1.0f / (1.0f + expf(-x[i])), 1e-6);
}
END_TEST

/* gelu against double erfc (the scalar erff form loses the small tail for
 * negative x by cancellation, so it is the looser check). */
START_TEST(gelu_matches_double_reference) {
  rt_set_simd(true);
  static float x[CAP], y[CAP];
  int n = inputs(x, CAP);
  rt_vgelu(x, y, n);
  for (int i = 0; i < n; i++) {
    double xd = x[i], want = isinf(xd) ? (xd > 0 ? xd : NAN) : 0.5 * xd * erfc(-xd / sqrt(2.0));
    if (fabs(want) < FLT_MIN) /* denormal results: only tiny */
      ck_assert_msg(fabsf(y[i]) < FLT_MIN, "gelu(%g) = %g, want %g", x[i], y[i], want);
    else
      check_close("gelu", x[i], y[i], (float)want, 2e-6);
    float scalar = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
    if (x[i] > -1.0f || !isfinite(x[i])) check_close("gelu vs erff", x[i], y[i], scalar, 2e-6);
  }
}
END_TEST

/* gelu's 16 lanes (where the CPU has AVX-512) give the 8 lanes' bits on
 * every input and every tail length. */
START_TEST(gelu_avx512_same_bits_as_avx2) {
  if (rt_simd_level() < RT_SIMD_AVX512) return;
  rt_set_simd(true);
  static float x[CAP], y8[CAP], y16[CAP];
  int n = inputs(x, CAP);
  for (int len = n - 17; len <= n; len++) {
    int level_was = rt_set_simd_level(RT_SIMD_AVX2);
    rt_vgelu(x, y8, len);
    rt_set_simd_level(level_was);
    rt_vgelu(x, y16, len);
    for (int i = 0; i < len; i++)
      ck_assert_msg(memcmp(&y8[i], &y16[i], 4) == 0 || (isnan(y8[i]) && isnan(y16[i])),
                    "gelu(%.9g): %.9g on 8 lanes, %.9g on 16", x[i], y8[i], y16[i]);
  }
}
END_TEST

/* Every length hits the masked tail; in place works. */
START_TEST(tails_and_in_place) {
  rt_set_simd(true);
  for (int n = 0; n < 20; n++) {
    float x[20], y[20], z[20];
    for (int i = 0; i < n; i++) x[i] = z[i] = (float)i * 0.7f - 5.0f;
    y[n < 20 ? n : 19] = 123.0f;
    rt_vexp(x, y, n);
    if (n < 20) ck_assert_float_eq(y[n], 123.0f); /* nothing past the end */
    rt_vgelu(z, z, n);
    for (int i = 0; i < n; i++) {
      check_close("exp", x[i], y[i], expf(x[i]), 1e-6);
      check_close("gelu in place", x[i], z[i], 0.5 * x[i] * erfc(-(double)x[i] / sqrt(2.0)), 2e-6);
    }
  }
}
END_TEST

/* The plain C path is the scalar forms exactly. */
START_TEST(plain_path_is_scalar) {
  bool was = rt_set_simd(false);
  static float x[CAP], y[CAP];
  int n = inputs(x, CAP);
  rt_vexp(x, y, n);
  for (int i = 0; i < n; i++) ck_assert(memcmp(&y[i], &(float){expf(x[i])}, 4) == 0 || isnan(y[i]));
  rt_vsilu(x, y, n);
  for (int i = 0; i < n; i++) {
    float want = x[i] / (1.0f + expf(-x[i]));
    ck_assert(memcmp(&y[i], &want, 4) == 0 || (isnan(y[i]) && isnan(want)));
  }
  rt_set_simd(was);
}
END_TEST

/* softmax rows: scale, mask after `valid`, against the double form; all
 * masked is NaN as the scalar softmax of all -inf. Scalar, AVX2 and (where
 * the CPU has it) AVX-512 rows, scores spread over small and wide ranges. */
START_TEST(softmax_rows) {
  int best = rt_simd_level();
  for (int mode = 0; mode < 3 + 3; mode++) {
    bool was = rt_set_simd(mode % 3 != 0);
    int level_was = rt_set_simd_level(mode % 3 == 1 && best >= RT_SIMD_AVX2 ? RT_SIMD_AVX2 : best);
    float spread = mode < 3 ? 1.0f : 40.0f;
    for (int n = 1; n < 40; n += 3)
      for (int valid = 0; valid <= n; valid += 1 + n / 4) {
        float row[40];
        double ref[40], mx = -INFINITY, sum = 0;
        for (int t = 0; t < n; t++) row[t] = ((float)((t * 37) % 11) - 4.0f) * spread;
        for (int t = 0; t < valid; t++) mx = fmax(mx, 0.25 * row[t]);
        for (int t = 0; t < valid; t++) sum += ref[t] = exp(0.25 * row[t] - mx);
        rt_softmax_row(row, n, 0.25f, valid);
        for (int t = 0; t < n; t++) {
          if (valid == 0) ck_assert(isnan(row[t]));
          else if (t >= valid) ck_assert_float_eq(row[t], 0.0f);
          else ck_assert_double_eq_tol(row[t], ref[t] / sum, 1e-6 * (ref[t] / sum) + 1e-9);
        }
      }
    rt_set_simd_level(level_was);
    rt_set_simd(was);
  }
}
END_TEST

/* rt_softmax_exp_rows (attention's rows, a few at a time) gives every row
 * the bits rt_softmax_exp gives it alone: rows of different lengths (the
 * shorter's lanes masked past its end), empty rows, edge values, counts
 * that leave a partial group, at each SIMD level. */
START_TEST(softmax_exp_rows_same_bits_as_one_row) {
  int best = rt_simd_level();
  for (int mode = 0; mode < 3; mode++) {
    bool was = rt_set_simd(mode != 0);
    int level_was = rt_set_simd_level(mode == 1 && best >= RT_SIMD_AVX2 ? RT_SIMD_AVX2 : best);
    enum { LD = 48, ROWS = 7 };
    for (int rows = 1; rows <= ROWS; rows++) {
      float p[ROWS * LD], one[ROWS * LD];
      int64_t lo[ROWS], hi[ROWS];
      double sums[ROWS];
      for (int i = 0; i < ROWS * LD; i++)
        p[i] = i % 29 == 3 ? edges[i % N_EDGES] : ((float)((i * 37) % 23) - 11.0f) * (i % 2 ? 3.0f : 0.3f);
      memcpy(one, p, sizeof p);
      for (int r = 0; r < rows; r++) lo[r] = (r * 5) % 7, hi[r] = r == 2 ? lo[r] : LD - (r * 11) % 19;
      rt_softmax_exp_rows(p, LD, rows, lo, hi, sums);
      for (int r = 0; r < rows; r++) {
        double s = rt_softmax_exp(one + r * LD + lo[r], hi[r] - lo[r], 1.0f);
        ck_assert_msg(s == sums[r] || (isnan(s) && isnan(sums[r])), "mode %d rows %d: sum %d", mode, rows, r);
      }
      ck_assert(memcmp(p, one, sizeof p) == 0);
    }
    rt_set_simd_level(level_was);
    rt_set_simd(was);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("vmath");
  TCase *tc = t_add_tcase(s, "vmath", 0);
  tcase_add_test(tc, exp_silu_sigmoid_match_scalar);
  tcase_add_test(tc, gelu_matches_double_reference);
  tcase_add_test(tc, gelu_avx512_same_bits_as_avx2);
  tcase_add_test(tc, tails_and_in_place);
  tcase_add_test(tc, plain_path_is_scalar);
  tcase_add_test(tc, softmax_rows);
  tcase_add_test(tc, softmax_exp_rows_same_bits_as_one_row);
  return t_run_suite(s);
}
