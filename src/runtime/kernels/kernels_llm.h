/* Reference kernels of the LLM ops (the `kernel` column of their rows in
 * include/ppcc/op_list.h), implemented in kernels_llm.c. Included by
 * kernels.c, which expands the op table into its kernel array. */
#ifndef PPCC_RT_KERNELS_LLM_H
#define PPCC_RT_KERNELS_LLM_H
#include <stdbool.h>
#include "ppcc/ops.h"

#define LLM_KERNEL(name) \
  ppcc_status kernel_##name(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d)
LLM_KERNEL(embedding);
LLM_KERNEL(rms_norm);
LLM_KERNEL(layer_norm);
LLM_KERNEL(softmax);
LLM_KERNEL(rotary);
LLM_KERNEL(attention);
LLM_KERNEL(concat);
LLM_KERNEL(slice);
LLM_KERNEL(sum);
LLM_KERNEL(mean);
LLM_KERNEL(argmax);
#undef LLM_KERNEL

/* Kernels that take integer operands or results (embedding ids, rotary
 * positions, argmax indices) or move raw elements (concat, slice): they
 * handle every dtype themselves, so ppcc_rt_run_kernel must call them
 * directly instead of converting to f32 around them. */
bool kernel_llm_handles_dtypes(ppcc_kernel_fn k);

#endif
