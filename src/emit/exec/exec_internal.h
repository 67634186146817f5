/* Shared by the files of the executable form (exec_func.c, exec_comm.c,
 * exec_kernel.c, exec_jit.c): the per-device function bodies and small builders for the
 * memref / bufferization / func.call ops that surround runtime calls. */
#ifndef PPCC_EXEC_INTERNAL_H
#define PPCC_EXEC_INTERNAL_H
#include "exec_form.h"

typedef struct exec_state {
  int n_devices;
  MlirBlock *blocks;       /* body of func.func @device_D */
  MlirOperation anchor;    /* last runtime declaration / global at the module top */
  char **declared;         /* symbols declared so far */
  int n_declared, cap_declared;
  int op_index;            /* index in g->ops of the op being lowered */
  struct exec_kernel *kernels; /* distinct shard kernels (exec_kernel.c) */
  /* While a shard is lowered into a kernel: its body, and the i64 argument
   * carrying the op index into runtime calls (null until one needs it), so
   * identical shards of different ops still share one kernel. */
  MlirBlock kernel_body;
  MlirValue kernel_op_arg;
  int n_kernels, cap_kernels;
  struct exec_input_key *input_keys; /* what a kernel was built from -> kernel (exec_kernel.c) */
  int n_input_keys, cap_input_keys;
} exec_state;

/* Makes device's function body the insertion block and returns it. */
MlirBlock exec_block(ppcc_emit_ctx *c, int device);

/* Declares `func.func private @name(types) attributes
 * {llvm.emit_c_interface}` once, at the top of the module. */
ppcc_status exec_declare(ppcc_emit_ctx *c, const char *name, int n, const MlirType *types);
/* Inserts a module-level op (a memref.global) next to the declarations. */
void exec_insert_global(ppcc_emit_ctx *c, MlirOperation op);
bool exec_is_declared(const ppcc_emit_ctx *c, const char *name);
ppcc_status exec_mark_declared(ppcc_emit_ctx *c, const char *name);

/* ---- builders, appended to c->block ---- */
MlirType exec_memref_type(ppcc_emit_ctx *c, MlirType tensor_type);
MlirType exec_unranked_type(ppcc_emit_ctx *c, MlirType elem);
MlirValue exec_i64(ppcc_emit_ctx *c, int64_t v);
/* memref.alloc of the tensor type's shape (64-byte aligned). */
MlirValue exec_alloc(ppcc_emit_ctx *c, MlirType tensor_type);
/* bufferization.to_memref (read_only): the buffer of a tensor, to read. */
MlirValue exec_to_memref(ppcc_emit_ctx *c, MlirValue tensor);
/* bufferization.to_tensor restrict [writable]. */
/* The output argument of device d for shard `shard` of output value
 * `value`, or null (not an output there, or listed more than once). */
MlirValue exec_output_arg(ppcc_emit_ctx *c, int d, int value, int shard);
MlirValue exec_to_tensor(ppcc_emit_ctx *c, MlirValue memref, bool writable);
/* bufferization.materialize_in_destination tensor in restrict writable memref. */
void exec_materialize(ppcc_emit_ctx *c, MlirValue tensor, MlirValue memref);
/* memref.cast to memref<*xT>, as the runtime ABI takes it. */
MlirValue exec_unranked(ppcc_emit_ctx *c, MlirValue memref);
/* memref.reinterpret_cast of a contiguous static buffer to the same shape
 * with its strides spelled out: a descriptor built from constants, so a
 * kernel passing it on needs only the buffer's pointers from its caller. */
MlirValue exec_static_view(ppcc_emit_ctx *c, MlirValue memref);
/* A fresh buffer holding a copy of tensor (for in-place runtime calls). */
MlirValue exec_copy_to_buffer(ppcc_emit_ctx *c, MlirValue tensor);
/* func.call @name(operands), declaring @name on first use. */
ppcc_status exec_call(ppcc_emit_ctx *c, const char *name, int n, const MlirValue *operands);

/* ---- shard kernels (exec_kernel.c) ---- */
/* The op index for a runtime call: a constant in a device function, the
 * kernel's op-index argument inside a kernel. */
MlirValue exec_op_index(ppcc_emit_ctx *c);
/* Lowers shard `shard` of a compute op running on `device`: into a private
 * kernel function shared by every identical shard computation, called
 * from the device function (or in place when it has no loops). */
ppcc_status exec_lower_shard(ppcc_emit_ctx *c, const ppcc_op *op, ppcc_lower_fn lower, int shard, int device);
void exec_kernels_free(exec_state *x);

/* ---- frees of straight device functions (exec_dealloc.c) ---- */
/* Removes from the bufferized module (at most cap of) the device functions
 * that are one block without regions and frees, into out; returns how many. */
int exec_take_straight_devices(MlirModule module, MlirOperation *out, int cap);
/* Frees every buffer each of funcs allocates right after its last use
 * (of it or of a view of it; at the end if it escapes), and appends it to
 * the module; false when out of memory (then some are not freed). */
bool exec_put_back_freeing_after_last_use(MlirModule module, MlirOperation *funcs, int n);

/* ppcc_dtype of an MLIR element type (-1 if none). */
int exec_dtype_of(MlirType elem);

/* ---- runtime calls (exec_comm.c; c->runtime_calls in exec_func.c) ---- */
void exec_state_free(ppcc_emit_ctx *c);
/* Transfer of one shard in the executable form: ppcc_rt_send on `from`,
 * ppcc_rt_recv on `to`; returns the value on `to`. */
MlirValue exec_transfer(ppcc_emit_ctx *c, MlirValue v, int from, int to);
/* Lowers a collective op into the device functions of its shards. */
ppcc_status exec_lower_collective(ppcc_emit_ctx *c, const ppcc_op *op);
/* A contraction the executable form hands to ppcc_rt_matmul (f32, a of
 * rank >= 2, b a matrix or of a's rank), or a null value when it is left
 * to linalg. */
MlirValue exec_try_matmul_call(ppcc_emit_ctx *c, MlirValue a, MlirValue b, bool b_transposed, MlirType out_type);
MlirValue exec_try_linear_bias_call(ppcc_emit_ctx *c, MlirValue a, MlirValue w, MlirValue bias, MlirType out_type);
MlirValue exec_try_layer_norm_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, MlirValue bias, double eps,
                                   MlirType out_type);
/* A conv handed to ppcc_rt_conv_f32 (f32), or a null value. */
MlirValue exec_try_conv_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, const ppcc_conv_geom *g, MlirType out_type);
/* f32 exp/silu/sigmoid/gelu as a ppcc_rt_unary_f32 call in the executable
 * form (null value otherwise: the scalar linalg body is used). */
MlirValue exec_try_unary_call(ppcc_emit_ctx *c, int op_id, MlirValue x, MlirType out_type);
/* f32 attention as a ppcc_rt_attention call in the executable form (null
 * value otherwise: the linalg lowering is used); positions (null: none)
 * an i64/i32 index tensor [S] or [B, S]. */
MlirValue exec_try_attention_call(ppcc_emit_ctx *c, MlirValue q, MlirValue k, MlirValue v, MlirValue positions,
                                  const emit_attention_mask *m, MlirType out_type);
/* Quantized linear / embedding as runtime calls (emit_runtime_calls). */
MlirValue exec_qlinear_call(ppcc_emit_ctx *c, MlirValue x, MlirValue w, ppcc_dtype wt, MlirType out_type);
MlirValue exec_qembedding_call(ppcc_emit_ctx *c, MlirValue ids, MlirValue table, ppcc_dtype wt, int64_t first,
                               int64_t wrap, MlirType out_type);

/* The executable form's index check (emit_check_index; kind EXEC_*). */
ppcc_status exec_check_index(ppcc_emit_ctx *c, MlirValue index, int64_t bound, int kind);

#endif
