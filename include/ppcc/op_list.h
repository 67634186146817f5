/* THE op table: one row per op. Every module expands the rows it needs:
 * src/ir/ops.c takes the IR columns, the runtime takes `kernel`, the MLIR
 * emitter takes `lower`. A missing kernel or lowering is written 0 and
 * reported as a clear error by the module that needed it.
 *
 * PPCC_OP(name, min_in, max_in, n_out, attrs, family, shape, shard, pin,
 *         flops, batch, kernel, lower)
 *   attrs:  attribute schema array in src/ir/ops.c (attrs_<x>)
 *   family: COMPUTE | COLLECTIVE | TRANSFER
 *   shape/shard/flops: functions in src/ir/ops.c
 *   batch:  whether the op keeps dim-0 (batch) rows apart, so it can run on
 *           microbatches; a rule function in src/ir/ops.c
 *   pin:    UNARY | MULTI | CREATE | COLLECTIVE | INPLACE | TRANSFER | UNSHARD
 *   kernel: reference kernel in src/runtime/kernels/kernels.c
 *   lower:  MLIR lowering in src/emit/lower/lower_ops.c
 */
/*      name             in  in   out attrs             family       shape              shard                  pin          flops             batch              kernel              lower */
PPCC_OP(matmul,          2,  2,   1,  attrs_none,       COMPUTE,     shape_matmul,      shard_matmul,          MULTI,       flops_matmul,     batch_contract,    kernel_matmul,      lower_matmul)
PPCC_OP(linear,          2,  3,   1,  attrs_none,       COMPUTE,     shape_linear,      shard_linear,          MULTI,       flops_linear,     batch_contract,    kernel_linear,      lower_linear)
PPCC_OP(gelu,            1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem8,      batch_rowwise,     kernel_gelu,        lower_unary)
PPCC_OP(gelu_tanh,       1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem8,      batch_rowwise,     kernel_gelu_tanh,   lower_unary)
PPCC_OP(silu,            1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem4,      batch_rowwise,     kernel_silu,        lower_unary)
PPCC_OP(relu,            1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem1,      batch_rowwise,     kernel_relu,        lower_unary)
PPCC_OP(sigmoid,         1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem4,      batch_rowwise,     kernel_sigmoid,     lower_unary)
PPCC_OP(tanh,            1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem4,      batch_rowwise,     kernel_tanh,        lower_unary)
PPCC_OP(exp,             1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem1,      batch_rowwise,     kernel_exp,         lower_unary)
PPCC_OP(neg,             1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_linear_unary,    UNARY,       flops_elem1,      batch_rowwise,     kernel_neg,         lower_unary)
PPCC_OP(scale,           1,  1,   1,  attrs_scale,      COMPUTE,     shape_same,        shard_linear_unary,    UNARY,       flops_elem1,      batch_rowwise,     kernel_scale,       lower_unary)
PPCC_OP(add,             2,  2,   1,  attrs_none,       COMPUTE,     shape_broadcast,   shard_add,             MULTI,       flops_elem1,      batch_rowwise,     kernel_add,         lower_binary)
PPCC_OP(sub,             2,  2,   1,  attrs_none,       COMPUTE,     shape_broadcast,   shard_add,             MULTI,       flops_elem1,      batch_rowwise,     kernel_sub,         lower_binary)
PPCC_OP(mul,             2,  2,   1,  attrs_none,       COMPUTE,     shape_broadcast,   shard_mul,             MULTI,       flops_elem1,      batch_rowwise,     kernel_mul,         lower_binary)
PPCC_OP(div,             2,  2,   1,  attrs_none,       COMPUTE,     shape_div,         shard_div,             MULTI,       flops_elem1,      batch_rowwise,     kernel_div,         lower_binary)
PPCC_OP(maximum,         2,  2,   1,  attrs_none,       COMPUTE,     shape_broadcast,   shard_elementwise,     MULTI,       flops_elem1,      batch_rowwise,     kernel_maximum,     lower_binary)
PPCC_OP(transpose,       1,  1,   1,  attrs_perm_opt,   COMPUTE,     shape_transpose,   shard_transpose,       UNARY,       flops_zero,       batch_transpose,   kernel_transpose,   lower_transpose)
PPCC_OP(permute,         1,  1,   1,  attrs_perm,       COMPUTE,     shape_transpose,   shard_transpose,       UNARY,       flops_zero,       batch_transpose,   kernel_transpose,   lower_transpose)
PPCC_OP(reshape,         1,  1,   1,  attrs_shape,      COMPUTE,     shape_reshape,     shard_reshape,         UNARY,       flops_zero,       batch_any,         kernel_reshape,     lower_reshape)
PPCC_OP(all_reduce,      1,  1,   1,  attrs_none,       COLLECTIVE,  shape_same,        shard_all_reduce,      COLLECTIVE,  flops_reduce,     batch_any,         0,                  lower_collective)
PPCC_OP(all_gather,      1,  1,   1,  attrs_none,       COLLECTIVE,  shape_same,        shard_all_gather,      COLLECTIVE,  flops_zero,       batch_any,         0,                  lower_collective)
PPCC_OP(reduce_scatter,  1,  1,   1,  attrs_dim,        COLLECTIVE,  shape_same,        shard_reduce_scatter,  COLLECTIVE,  flops_reduce,     batch_any,         0,                  lower_collective)
PPCC_OP(replicate,       1,  1,   1,  attrs_replicate,  COLLECTIVE,  shape_same,        shard_replicate,       CREATE,      flops_zero,       batch_any,         0,                  lower_collective)
PPCC_OP(reshard_split,   1,  1,   1,  attrs_reshard,    COLLECTIVE,  shape_same,        shard_reshard_split,   CREATE,      flops_zero,       batch_any,         0,                  lower_collective)
PPCC_OP(unshard,         1,  1,   1,  attrs_unshard,    COLLECTIVE,  shape_same,        shard_unshard,         UNSHARD,     flops_reduce,     batch_any,         0,                  lower_collective)
PPCC_OP(transfer,        1,  1,   1,  attrs_transfer,   TRANSFER,    shape_same,        shard_transfer,        TRANSFER,    flops_zero,       batch_any,         0,                  lower_transfer)
PPCC_OP(index_copy,      3,  3,   1,  attrs_dim,        COMPUTE,     shape_index_copy,  shard_index_copy,      INPLACE,     flops_zero,       batch_inplace,     kernel_index_copy,  lower_index_copy)
PPCC_OP(index_put,       3,  3,   1,  attrs_none,       COMPUTE,     shape_index_copy,  shard_index_copy,      INPLACE,     flops_zero,       batch_inplace,     kernel_index_copy,  lower_index_copy)
PPCC_OP(embedding,       2,  2,   1,  attrs_embedding,  COMPUTE,     shape_embedding,   shard_embedding,       MULTI,       flops_zero,       batch_first_only,  kernel_embedding,   lower_embedding)
PPCC_OP(rms_norm,        2,  2,   1,  attrs_rms_norm,       COMPUTE,     shape_norm,        shard_norm,            MULTI,       flops_elem4,      batch_norm,        kernel_rms_norm,    lower_rms_norm)
PPCC_OP(layer_norm,      2,  3,   1,  attrs_eps,        COMPUTE,     shape_norm,        shard_norm,            MULTI,       flops_elem8,      batch_norm,        kernel_layer_norm,  lower_layer_norm)
PPCC_OP(softmax,         1,  1,   1,  attrs_dim_opt,    COMPUTE,     shape_same,        shard_softmax,         UNARY,       flops_elem4,      batch_dim_last,    kernel_softmax,     lower_softmax)
PPCC_OP(rotary,          2,  3,   1,  attrs_rotary,     COMPUTE,     shape_rotary,      shard_rotary,          MULTI,       flops_elem4,      batch_rotary,      kernel_rotary,      lower_rotary)
PPCC_OP(attention,       3,  4,   1,  attrs_attention,  COMPUTE,     shape_attention,   shard_attention,       MULTI,       flops_attention,  batch_all,         kernel_attention,   lower_attention)
PPCC_OP(concat,          1,  16,  1,  attrs_dim,        COMPUTE,     shape_concat,      shard_concat,          MULTI,       flops_zero,       batch_dim_first,   kernel_concat,      lower_concat)
PPCC_OP(slice,           1,  1,   1,  attrs_slice,      COMPUTE,     shape_slice,       shard_slice,           UNARY,       flops_zero,       batch_dim_first,   kernel_slice,       lower_slice)
PPCC_OP(sum,             1,  1,   1,  attrs_reduce,     COMPUTE,     shape_reduce,      shard_reduce,          UNARY,       flops_reduce_in,  batch_reduce,      kernel_sum,         lower_sum)
PPCC_OP(mean,            1,  1,   1,  attrs_reduce,     COMPUTE,     shape_reduce,      shard_reduce,          UNARY,       flops_reduce_in,  batch_reduce,      kernel_mean,        lower_mean)
PPCC_OP(argmax,          1,  1,   1,  attrs_dim_opt,    COMPUTE,     shape_argmax,      shard_argmax,          UNARY,       flops_reduce_in,  batch_dim_last,    kernel_argmax,      lower_argmax)
/* Elementwise ops ONNX models bring (kernels in src/runtime/kernels/kernels_onnx.c, lowerings in src/emit/lower/lower_onnx.c). */
PPCC_OP(sqrt,            1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem4,      batch_rowwise,     kernel_sqrt,        lower_onnx_unary)
PPCC_OP(reciprocal,      1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem1,      batch_rowwise,     kernel_reciprocal,  lower_onnx_unary)
PPCC_OP(erf,             1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem8,      batch_rowwise,     kernel_erf,         lower_onnx_unary)
PPCC_OP(log,             1,  1,   1,  attrs_none,       COMPUTE,     shape_same,        shard_nonlinear,       UNARY,       flops_elem4,      batch_rowwise,     kernel_log,         lower_onnx_unary)
PPCC_OP(pow,             2,  2,   1,  attrs_none,       COMPUTE,     shape_float_broadcast, shard_elementwise, MULTI,       flops_elem8,      batch_rowwise,     kernel_pow,         lower_onnx_pow)
PPCC_OP(equal,           2,  2,   1,  attrs_none,       COMPUTE,     shape_compare,     shard_elementwise,     MULTI,       flops_elem1,      batch_rowwise,     kernel_equal,       lower_onnx_compare)
PPCC_OP(less,            2,  2,   1,  attrs_none,       COMPUTE,     shape_compare,     shard_elementwise,     MULTI,       flops_elem1,      batch_rowwise,     kernel_less,        lower_onnx_compare)
PPCC_OP(greater,         2,  2,   1,  attrs_none,       COMPUTE,     shape_compare,     shard_elementwise,     MULTI,       flops_elem1,      batch_rowwise,     kernel_greater,     lower_onnx_compare)
PPCC_OP(where,           3,  3,   1,  attrs_none,       COMPUTE,     shape_where,       shard_where,           MULTI,       flops_elem1,      batch_rowwise,     kernel_where,       lower_onnx_where)
PPCC_OP(cast,            1,  1,   1,  attrs_cast,       COMPUTE,     shape_cast,        shard_nonlinear,       UNARY,       flops_elem1,      batch_rowwise,     kernel_cast,        lower_onnx_cast)
PPCC_OP(expand,          1,  1,   1,  attrs_shape,      COMPUTE,     shape_expand,      shard_expand,          UNARY,       flops_zero,       batch_rowwise,     kernel_expand,      lower_onnx_expand)
PPCC_OP(reduce_max,      1,  1,   1,  attrs_reduce,     COMPUTE,     shape_reduce_max,  shard_reduce_max,      UNARY,       flops_reduce_in,  batch_reduce,      kernel_reduce_max,  lower_onnx_reduce_max)
PPCC_OP(gather_elements, 2,  2,   1,  attrs_dim,        COMPUTE,     shape_gather_elements, shard_gather_elements, MULTI, flops_zero,    batch_gather_elements, kernel_gather_elements, lower_onnx_gather_elements)
PPCC_OP(gather,          2,  2,   1,  attrs_dim,        COMPUTE,     shape_gather,      shard_gather,          MULTI,       flops_zero,       batch_gather,      kernel_gather,      lower_onnx_gather)
PPCC_OP(conv,            2,  2,   1,  attrs_conv,       COMPUTE,     shape_conv,        shard_conv,            MULTI,       flops_conv,       batch_window,      kernel_conv,        lower_onnx_conv)
PPCC_OP(max_pool,        1,  1,   1,  attrs_pool,       COMPUTE,     shape_max_pool,    shard_max_pool,        UNARY,       flops_pool,       batch_window,      kernel_max_pool,    lower_onnx_max_pool)
