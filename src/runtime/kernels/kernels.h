/* Door of src/runtime/kernels/: what the executors need to know about the
 * reference kernels besides the public ppcc_rt_kernel / ppcc_rt_run_kernel
 * (include/ppcc/runtime.h): local slicing of replicated operands, views,
 * the kernel thread count. */
#ifndef PPCC_RT_KERNELS_H
#define PPCC_RT_KERNELS_H
#include "../rt_internal.h"

/* A COMPUTE op whose result is split but whose operand k is replicated
 * sees, per shard, only the matching slice of that operand: the dim of
 * operand k to slice (shard i = i-th of result_layout.count), or -1. */
int rt_local_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                       const ppcc_value *result, ppcc_layout result_layout);

/* matmul/linear with an unreduced result: the contracting dim of a
 * replicated operand k whose other operand is split, or -1. */
int rt_contract_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                          ppcc_layout other_layout, ppcc_layout result_layout);
/* Shard `shard` of a linear with partial-sum result runs without its bias. */
bool rt_drops_bias(const ppcc_op *op, ppcc_layout result_layout, int shard);

/* Threads kernels may use (set per run). */
int rt_kernel_threads(void);
/* Whether every matmul row is computed by the same one-row call
 * (ppcc_rt_set_row_invariant_matmul, --deterministic). */
bool rt_row_invariant_matmul(void);
/* Whether op's kernel is a byte-for-byte copy of operand 0 (reshape): the
 * executor makes its result a view of the operand instead. */
bool rt_kernel_is_view(const ppcc_op *op);
/* A transpose/permute of a rank-`rank` operand that only swaps the last
 * two dims, and whether operand k of op accepts such a tensor unmoved
 * (ppcc_tensor.last_two_swapped): the executor then folds the transpose
 * into that consumer. */
bool rt_kernel_swaps_last_two(const ppcc_op *op, int rank);
bool rt_kernel_reads_swapped(const ppcc_op *op, int k);

/* The conv kernel's core (also the JIT's ppcc_rt_conv_f32): x [N, C, H, W]
 * (xs), weight [F, C/group, kh, kw], y [N, F, OH, OW] (ys); a 1-D geometry
 * runs with H = OH = 1. False when out of memory. */
bool rt_conv2d_f32(const ppcc_conv_geom *geom, const int64_t *xs, int64_t F, const int64_t *ys, const float *X,
                   const float *Wt, float *Y);

#endif
