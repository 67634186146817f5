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
ONNX_KERNEL(gather);
ONNX_KERNEL(conv);
ONNX_KERNEL(max_pool);
#undef ONNX_KERNEL
/* Kernels that take their dtypes as they come (no f32 conversion). */
bool kernel_onnx_handles_dtypes(ppcc_kernel_fn k);

#endif
