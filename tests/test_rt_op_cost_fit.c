/* The per-op cost fit of `ppcc calibrate` (ppcc_calibrate_fit_op_cost,
 * src/plan/calibrate/calibrate.c): the calibration's workloads read their
 * weights with one cold share each, so an op kind's cached and cold weight
 * bytes are proportional and two fits explain the samples equally well.
 * The one putting the cost on the cached bytes charged every weight byte
 * of a model that fits in the caches as if it came from memory (an AMD
 * EPYC calibration: linear at 3.3 ns a weight byte, gen_llama pp4's
 * stages predicted 4x too slow). A cold byte never costs less. */
#include <math.h>
#include "ppcc/predict.h"
#include "ppcc/runtime.h"
#include "test_support.h"

/* linears of `rows` rows and a k x n weight, a share 0.95 of it cold */
static ppcc_op_sample linear_sample(double rows, double k, double n, double call_us, double ns_flop, double ns_cold) {
  double flops = 2 * rows * k * n, weights = 4 * k * n;
  ppcc_op_sample s = {.flops = flops, .bytes = 4 * rows * (k + n), .weight_bytes = 0.05 * weights,
                      .cold_weight_bytes = 0.95 * weights};
  s.us = call_us + (flops * ns_flop + s.cold_weight_bytes * ns_cold) * 1e-3;
  return s;
}

START_TEST(cold_bytes_carry_the_weights_cost) {
  ppcc_op_sample s[6];
  int n = 0;
  for (int r = 32; r <= 64; r += 32) {
    s[n++] = linear_sample(r, 256, 512, 2, 0.01, 0.06);
    s[n++] = linear_sample(r, 256, 256, 2, 0.01, 0.06);
    s[n++] = linear_sample(r, 512, 256, 2, 0.01, 0.06);
  }
  ppcc_op_cost k;
  ck_assert(ppcc_calibrate_fit_op_cost("linear", s, n, &k));
  ck_assert_str_eq(k.name, "linear");
  ck_assert_msg(k.ns_per_weight_byte <= k.ns_per_cold_weight_byte, "cached %g > cold %g ns a byte",
                k.ns_per_weight_byte, k.ns_per_cold_weight_byte);
  ck_assert_double_eq_tol(k.ns_per_cold_weight_byte, 0.06, 1e-3);
  /* the same linear with every weight byte in the caches costs no more */
  double flops = 2 * 32 * 256 * 512, weights = 4 * 256 * 512, bytes = 4 * 32 * (256 + 512);
  ck_assert_double_le(ppcc_op_cost_us(&k, flops, bytes, weights, 0), ppcc_op_cost_us(&k, flops, bytes, weights, 0.95) + 1e-9);
  for (int i = 0; i < n; i++) {
    double w = s[i].weight_bytes + s[i].cold_weight_bytes;
    ck_assert_double_eq_tol(ppcc_op_cost_us(&k, s[i].flops, s[i].bytes, w, s[i].cold_weight_bytes / w), s[i].us, 1e-6 * s[i].us);
  }
}
END_TEST

/* No sample read from beyond the caches: a weight byte costs what the
 * cached ones do, wherever it comes from. */
START_TEST(all_cached_samples_price_cold_bytes_alike) {
  ppcc_op_sample s[4];
  for (int i = 0; i < 4; i++) {
    double w = 4096.0 * (i + 1);
    s[i] = (ppcc_op_sample){.flops = 0, .bytes = 0, .weight_bytes = w, .cold_weight_bytes = 0, .us = 0.5 + w * 0.02e-3};
  }
  ppcc_op_cost k;
  ck_assert(ppcc_calibrate_fit_op_cost("rms_norm", s, 4, &k));
  ck_assert_double_eq_tol(k.ns_per_weight_byte, 0.02, 1e-6);
  ck_assert_double_eq(k.ns_per_cold_weight_byte, k.ns_per_weight_byte);
}
END_TEST

START_TEST(no_fit_without_timed_samples) {
  ppcc_op_cost k;
  ck_assert(!ppcc_calibrate_fit_op_cost("add", NULL, 0, &k));
  ppcc_op_sample zero = {.flops = 10, .bytes = 10, .us = 0};
  ck_assert(!ppcc_calibrate_fit_op_cost("add", &zero, 1, &k));
}
END_TEST

int main(void) {
  Suite *s = suite_create("op_cost_fit");
  TCase *tc = t_add_tcase(s, "fit", 0);
  tcase_add_test(tc, cold_bytes_carry_the_weights_cost);
  tcase_add_test(tc, all_cached_samples_price_cold_bytes_alike);
  tcase_add_test(tc, no_fit_without_timed_samples);
  return t_run_suite(s);
}
