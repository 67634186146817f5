/* Kernels of the elementwise ops ONNX models bring: f32 in, f32 out
 * (ppcc_rt_run_kernel converts f16/bf16 around them), IEEE semantics
 * (sqrt of a negative is NaN, 1/0 is inf), as ONNX Runtime computes them. */
#include <math.h>
#include "kernels_onnx.h"
#include "rt_internal.h"

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
