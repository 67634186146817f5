/* Reference kernels of the elementwise ops ONNX models bring (rows sqrt,
 * reciprocal, erf, log of include/ppcc/op_list.h), in kernels_onnx.c.
 * Included by kernels.c, which expands the op table into its kernels. */
#ifndef PPCC_RT_KERNELS_ONNX_H
#define PPCC_RT_KERNELS_ONNX_H
#include "ppcc/ops.h"

#define ONNX_KERNEL(name) \
  ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d)
ONNX_KERNEL(sqrt);
ONNX_KERNEL(reciprocal);
ONNX_KERNEL(erf);
ONNX_KERNEL(log);
ONNX_KERNEL(pow);
ONNX_KERNEL(equal);
ONNX_KERNEL(less);
ONNX_KERNEL(greater);
ONNX_KERNEL(where);
ONNX_KERNEL(cast);
ONNX_KERNEL(expand);
ONNX_KERNEL(reduce_max);
ONNX_KERNEL(gather_elements);
ONNX_KERNEL(conv);
ONNX_KERNEL(max_pool);
#undef ONNX_KERNEL
/* The conv kernel's core (also the JIT's ppcc_rt_conv_f32): x [N, C, H, W]
 * (xs), weight [F, C/group, kh, kw], y [N, F, OH, OW] (ys); a 1-D geometry
 * runs with H = OH = 1. False when out of memory. */
bool rt_conv2d_f32(const ppcc_conv_geom *geom, const int64_t *xs, int64_t F, const int64_t *ys, const float *X,
                   const float *Wt, float *Y);
/* Kernels that take their dtypes as they come (no f32 conversion). */
bool kernel_onnx_handles_dtypes(ppcc_kernel_fn k);

#endif
