/* Linear with f16/bf16 weights kept as stored (src/runtime/kernels/
 * half_matmul.c): at every instruction set level the CPU has, on odd sizes
 * and tails, 1 and 2 threads, its result is bit for bit the f32 tile
 * kernel's on the weight converted by ppcc_f16_to_f32 / ppcc_bf16_to_f32
 * (the conversion is exact, so nothing else may differ); every one of the
 * 65536 codes of each dtype converts as the scalar functions do (NaN,
 * infinities, subnormals). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../src/runtime/kernels/kernels.h"
#include "ppcc/quant.h"
#include "ppcc/runtime.h"
#include "test_support.h"

static float frand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float half_value(ppcc_dtype t, uint16_t h) { return t == PPCC_BF16 ? ppcc_bf16_to_f32(h) : ppcc_f16_to_f32(h); }

static uint16_t to_half(ppcc_dtype t, float f) {
  if (t == PPCC_F16) return ppcc_f32_to_f16(f);
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static const int64_t Ms[] = {1, 2, 5, 17, 40};
static const int64_t Ns[] = {1, 5, 37, 300};
static const int64_t Ks[] = {1, 7, 16, 33, 100, 1000};

static void check_sizes(ppcc_dtype t) {
  unsigned seed = 11;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
        int64_t M = Ms[mi], N = Ns[ni], K = Ks[ki];
        float *x = malloc(sizeof(float) * (size_t)(M * K)), *wf = malloc(sizeof(float) * (size_t)(N * K));
        float *y = malloc(sizeof(float) * (size_t)(M * N)), *want = malloc(sizeof(float) * (size_t)(M * N));
        uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(N * K));
        for (int64_t j = 0; j < M * K; j++) x[j] = frand(&seed);
        for (int64_t j = 0; j < N * K; j++) {
          w[j] = to_half(t, frand(&seed));
          wf[j] = half_value(t, w[j]);
        }
        rt_sgemm_small_cols(M, 0, N, N, K, x, wf, true, want);
        for (int threads = 1; threads <= 2; threads++) {
          ppcc_rt_set_kernel_threads(threads);
          for (int64_t j = 0; j < M * N; j++) y[j] = NAN; /* every element must be written */
          ck_assert(ppcc_rt_hlinear_f32(t, M, N, K, x, w, y));
          ck_assert_msg(memcmp(y, want, sizeof(float) * (size_t)(M * N)) == 0,
                        "%s M %lld N %lld K %lld threads %d: not the f32 kernel's bits", ppcc_dtype_name(t),
                        (long long)M, (long long)N, (long long)K, threads);
        }
        ppcc_rt_set_kernel_threads(1);
        free(x), free(wf), free(y), free(want), free(w);
      }
}

/* y[n] = 1 * w[n] for every 16-bit code: the conversion of each (a sum
 * starting at +0, so -0 comes out +0). */
static void check_every_code(ppcc_dtype t) {
  enum { N = 65536 };
  uint16_t *w = malloc(sizeof(uint16_t) * N);
  float *y = malloc(sizeof(float) * N), one = 1.0f;
  for (int n = 0; n < N; n++) w[n] = (uint16_t)n;
  ck_assert(ppcc_rt_hlinear_f32(t, 1, N, 1, &one, w, y));
  for (int n = 0; n < N; n++) {
    float want = half_value(t, (uint16_t)n);
    ck_assert_msg(isnan(want) ? isnan(y[n]) : y[n] == want, "%s code 0x%04x: %g vs %g", /* -0 sums to +0 */
                  ppcc_dtype_name(t), n, y[n], want);
  }
  free(w), free(y);
}

START_TEST(half_linear_is_the_f32_kernel_on_converted_weights) {
  int was = rt_set_simd_level(RT_SIMD_AVX512), best = rt_simd_level();
  for (int level = RT_SIMD_NONE; level <= best; level++) {
    rt_set_simd_level(level);
    check_sizes(PPCC_F16);
    check_sizes(PPCC_BF16);
    check_every_code(PPCC_F16);
    check_every_code(PPCC_BF16);
  }
  rt_set_simd_level(was);
}
END_TEST

START_TEST(half_linear_refuses_other_dtypes) {
  float x = 1, y = 0;
  uint16_t w = 0;
  ck_assert(!ppcc_rt_hlinear_f32(PPCC_F32, 1, 1, 1, &x, &w, &y));
  ck_assert(!ppcc_rt_hlinear_f32(PPCC_Q8_0, 1, 1, 1, &x, &w, &y));
  ck_assert(ppcc_rt_hlinear_f32(PPCC_F16, 0, 1, 1, &x, &w, &y)); /* nothing to do */
}
END_TEST

int main(void) {
  Suite *s = suite_create("half_matmul");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, half_linear_is_the_f32_kernel_on_converted_weights);
  tcase_add_test(tc, half_linear_refuses_other_dtypes);
  suite_add_tcase(s, tc);
  return t_run_suite(s);
}
