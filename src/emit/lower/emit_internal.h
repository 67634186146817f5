/* Door of src/emit/lower/, the layer below the forms: the emission
 * context (emit_ctx.c), the per-shard value table, helpers that build
 * types, attributes and operations with the MLIR C API (mlir_build.c), the
 * op table's lowerings (lower_*.c), the placement map and the printer.
 *
 * Flow: ppcc_emit() (src/emit/emit.c) creates a context, a form builds its
 * module (annotated/emit_func.c, or exec/exec_func.c) lowering every op
 * through the op table's `lower` column (lower_ops.c, lower_collectives.c),
 * then verifies and prints (emit_print.c). Every device / transfer
 * decision goes through placement_map.c. Nothing here calls a form: the
 * executable form's runtime calls come in through c->runtime_calls. */
#ifndef PPCC_EMIT_INTERNAL_H
#define PPCC_EMIT_INTERNAL_H
#include <mlir-c/AffineExpr.h>
#include <mlir-c/AffineMap.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/IR.h>
#include "ppcc/emit.h"
#include "ppcc/ops.h"

/* A lowering called with this shard index handles all shards of the op at
 * once (collectives: they combine the shards of one value). */
#define PPCC_LOWER_ALL_SHARDS (-1)

typedef struct ppcc_emit_ctx {
  const ppcc_graph *g;
  ppcc_emit_kind kind;
  ppcc_diag *d;
  MlirContext mctx;
  MlirModule module;
  MlirBlock block;      /* where ops are appended (the function body) */
  MlirValue **shards;   /* shards[v][i]: SSA value of shard i of value v */
  MlirLocation op_loc;  /* location of the op being lowered */
  const ppcc_op *op;    /* op being lowered, for diagnostics */
  MlirOperation last_op; /* last op appended to block (null: none yet) */
  MlirAttribute iter_parallel, iter_reduction; /* linalg iterator types */
  struct exec_state *exec; /* executable form only (exec_*.c), else NULL */
  const struct emit_runtime_calls *runtime_calls; /* executable form only, else NULL */
  bool exec_linalg_matmul; /* executable form: f32 matmul as linalg, not ppcc_rt_matmul */
} ppcc_emit_ctx;

/* ---- context (emit_ctx.c) ---- */
ppcc_status emit_ctx_init(ppcc_emit_ctx *c, const ppcc_graph *g, ppcc_emit_kind kind, ppcc_diag *d);
void emit_ctx_free(ppcc_emit_ctx *c);
/* Every value has a dtype with an MLIR mapping and a placement. */
ppcc_status emit_check_values(ppcc_emit_ctx *c);
/* The lowering of an op kind, NULL when the op table has none. */
ppcc_lower_fn emit_lowering_for(ppcc_op_id id);

/* ---- per-shard value table ---- */
MlirValue emit_shard(const ppcc_emit_ctx *c, int value, int shard);
void emit_set_shard(ppcc_emit_ctx *c, int value, int shard, MlirValue v);

/* ---- diagnostics naming the op being lowered ---- */
ppcc_status emit_op_error(ppcc_emit_ctx *c, const ppcc_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- types and attributes (mlir_build.c) ---- */
/* Element type of a dtype; false if it has no mapping (caller reports). */
bool emit_elem_type(ppcc_emit_ctx *c, ppcc_dtype t, MlirType *out);
MlirType emit_tensor_type(ppcc_emit_ctx *c, ppcc_dtype t, int rank, const int64_t *shape);
/* Type of one shard of a value (its local shape). */
MlirType emit_shard_type(ppcc_emit_ctx *c, const ppcc_value *v);
MlirStringRef emit_str(const char *s);

/* A growable buffer (emit_print.c) for printed text and for key bytes;
 * always NUL-terminated. A failed allocation sets oom, and later appends
 * do nothing: check oom once at the end. */
typedef struct emit_buf {
  char *data;
  size_t len, cap;
  bool oom;
} emit_buf;
void emit_buf_append(emit_buf *b, const void *p, size_t n);
/* An MlirStringCallback appending to the emit_buf `user`. */
void emit_buf_print(MlirStringRef s, void *user);
MlirAttribute emit_i64_attr(ppcc_emit_ctx *c, int64_t v);
MlirAttribute emit_i64_array_attr(ppcc_emit_ctx *c, int n, const int64_t *v);
MlirAttribute emit_devices_attr(ppcc_emit_ctx *c, int n, const int *devices);
MlirAttribute emit_string_attr(ppcc_emit_ctx *c, const char *s);
MlirNamedAttribute emit_named(ppcc_emit_ctx *c, const char *name, MlirAttribute a);
MlirLocation emit_name_loc(ppcc_emit_ctx *c, const char *name);

/* ---- generic op construction ---- */
typedef struct emit_op_spec {
  const char *name;
  int n_operands;
  const MlirValue *operands;
  int n_results;
  const MlirType *results;
  int n_attrs;
  const MlirNamedAttribute *attrs;
  int n_regions;       /* empty regions to create */
} emit_op_spec;

/* Creates the op at c->op_loc and appends it to block. */
MlirOperation emit_op_in(ppcc_emit_ctx *c, MlirBlock block, const emit_op_spec *s);
MlirOperation emit_op(ppcc_emit_ctx *c, const emit_op_spec *s);
/* Single-result helpers appended to block. */
MlirValue emit_float_const(ppcc_emit_ctx *c, MlirBlock block, MlirType t, double v);
MlirValue emit_int_const(ppcc_emit_ctx *c, MlirBlock block, MlirType t, int64_t v);
MlirValue emit_index_const(ppcc_emit_ctx *c, MlirBlock block, int64_t v);
MlirValue emit_binary_scalar(ppcc_emit_ctx *c, MlirBlock block, const char *name, MlirValue a, MlirValue b);
MlirValue emit_unary_scalar(ppcc_emit_ctx *c, MlirBlock block, const char *name, MlirValue a);
/* tensor.empty + linalg.fill with zero: the init of a contraction. */
MlirValue emit_zeros(ppcc_emit_ctx *c, MlirType tensor_type);
MlirValue emit_empty(ppcc_emit_ctx *c, MlirType tensor_type);
/* tensor.extract_slice of the `size` elements at `offset` along dim. */
MlirValue emit_slice(ppcc_emit_ctx *c, MlirValue src, int dim, int64_t offset, int64_t size);
/* tensor.concat along dim. */
MlirValue emit_concat(ppcc_emit_ctx *c, int dim, int n, const MlirValue *parts, MlirType result);
/* dest with src inserted at offset along dim (tensor.insert_slice). */
MlirValue emit_insert_slice(ppcc_emit_ctx *c, MlirValue src, MlirValue dest, int dim, int64_t offset);
/* Concatenation as tensor.empty + one insert_slice per part: unlike
 * tensor.concat, upstream one-shot bufferization handles it (MLIR 19). */
MlirValue emit_concat_by_inserts(ppcc_emit_ctx *c, int dim, int n, const MlirValue *parts, MlirType result);
/* Fails naming the op if its lowering left a result shard undefined. */
ppcc_status emit_check_results_defined(ppcc_emit_ctx *c, const ppcc_op *op);

/* linalg.generic: maps[i] for each input then the init; body_fn fills the
 * scalar body (block args: one per input, then the init) and returns the
 * value to yield. */
typedef MlirValue (*emit_body_fn)(ppcc_emit_ctx *c, MlirBlock body, void *user);
MlirValue emit_generic(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirValue init,
                       int n_loops, int n_reduction_tail, const MlirAffineMap *maps,
                       emit_body_fn body_fn, void *user);
/* The same with parallel loops and two results (maps: the inputs', then
 * the two inits'); body_fn writes the two values to yield. */
typedef void (*emit_body2_fn)(ppcc_emit_ctx *c, MlirBlock body, void *user, MlirValue yielded[2]);
void emit_generic2(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, const MlirValue inits[2], int n_loops,
                   const MlirAffineMap *maps, emit_body2_fn body_fn, void *user, MlirValue results[2]);
/* A linalg named op (matmul, ...) with its region filled by MLIR. */
MlirValue emit_named_linalg(ppcc_emit_ctx *c, const char *name, int n_in, const MlirValue *ins,
                            MlirValue init);
/* Elementwise linalg.generic over a tensor of `type`: one input per operand,
 * operands broadcast to `type` with identity/broadcast maps. */
/* out = a <scalar_op> b with numpy broadcasting, replicated operands sliced
 * to this shard (lower_ops.c). */
MlirValue emit_binary_tensor(ppcc_emit_ctx *c, const char *scalar_op, MlirValue a, MlirValue b, MlirType out_type,
                             int shard);
/* The same with any body over n_in (at most 4) operands. */
MlirValue emit_elementwise_shard(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirType out_type, int shard,
                                 emit_body_fn body_fn, void *user);
MlirValue emit_elementwise(ppcc_emit_ctx *c, int n_in, const MlirValue *ins, MlirType type,
                           emit_body_fn body_fn, void *user);

/* A float tensor converted elementwise to element type elem (extf or
 * truncf); v itself when it has that type or is not float. f16/bf16 ops
 * compute on emit_to_f32 of their operands and round once at the end. */
MlirValue emit_convert_floats(ppcc_emit_ctx *c, MlirValue v, MlirType elem);
/* tensor.reshape of v to the static type t (same element count; lower_llm.c). */
MlirValue emit_reshape_to(ppcc_emit_ctx *c, MlirValue v, MlirType t);
MlirValue emit_to_f32(ppcc_emit_ctx *c, MlirValue v);

/* ---- placement map (placement_map.c): the one place that knows how
 * devices and transfers are spelled in each output form ---- */
/* Attributes for a function argument / result holding shard i of v. */
int placement_arg_attrs(ppcc_emit_ctx *c, const ppcc_value *v, int shard, MlirNamedAttribute *out);
/* Marks a per-shard compute op as running on device. */
void placement_mark_op(ppcc_emit_ctx *c, MlirOperation op, int device);
/* Moves one shard from device `from` to device `to`; returns the value on
 * `to` (the input itself when from == to: a shard already there is not
 * copied, P10). */
MlirValue placement_transfer(ppcc_emit_ctx *c, MlirValue v, int from, int to);
/* Whether params are function arguments (annotated form) or, in the IREE
 * form, parameter-backed globals resolved from the weights file at run
 * time. */
bool placement_params_are_arguments(ppcc_emit_kind kind);
/* IREE form: one util.global per (param, device) into module_body. */
ppcc_status placement_declare_params(ppcc_emit_ctx *c, MlirBlock module_body);
/* IREE form: every param shard from a load of its global (c->block). */
void placement_load_params(ppcc_emit_ctx *c);
/* Context options the form needs (e.g. unregistered IREE ops). */
bool placement_allows_unregistered(ppcc_emit_kind kind);
/* Whether collectives are emitted as one ppcc.* op (annotated form) or
 * decomposed into transfers and local compute (IREE form). */
bool placement_collectives_as_ops(ppcc_emit_kind kind);

/* ---- the executable form's runtime calls ----
 * Set by the executable form (src/emit/exec/exec_func.c) for its module,
 * NULL in the other forms, so the lowerings use the runtime without
 * depending on the form that provides it. */
/* The attention op's attributes: scale * q.k, softcap * tanh(x / softcap)
 * when softcap > 0, then the causal (or positions) mask, narrowed to the
 * last `window` keys when window > 0 (kernel_attention's semantics). */
typedef struct emit_attention_mask {
  double scale;
  bool causal;
  int64_t offset; /* T - S: query i sits at position offset + i (no positions) */
  int64_t window;
  double softcap;
  bool seq_major; /* q, k, v and out [B, S, H, D] (else [B, H, S, D]) */
} emit_attention_mask;

typedef struct emit_runtime_calls {
  /* Transfer of one shard: ppcc_rt_send on `from`, ppcc_rt_recv on `to`;
   * returns the value on `to`. */
  MlirValue (*transfer)(ppcc_emit_ctx *c, MlirValue v, int from, int to);
  /* A contraction handed to ppcc_rt_matmul (f32, a of rank >= 2, b a
   * matrix or of a's rank), or a null value when it is left to linalg. */
  MlirValue (*matmul)(ppcc_emit_ctx *c, MlirValue a, MlirValue b, bool b_transposed, MlirType out_type);
  /* linear with a bias, a[..., K] . w[N, K]^T + bias[N], handed to
   * ppcc_rt_linear_f32 (the interpreter's GEMM and its bias split among
   * the kernel threads; all f32), or a null value. */
  MlirValue (*linear_bias)(ppcc_emit_ctx *c, MlirValue a, MlirValue w, MlirValue bias, MlirType out_type);
  /* f32 layer_norm over x's last dim (bias a null value when none) as a
   * ppcc_rt_layer_norm_f32 call (the interpreter's kernel, its rows split
   * among the kernel threads: the same bits), or a null value. */
  MlirValue (*layer_norm)(ppcc_emit_ctx *c, MlirValue x, MlirValue w, MlirValue bias, double eps, MlirType out_type);
  /* A conv handed to ppcc_rt_conv_f32 (the interpreter's kernel; f32 x and
   * w, out_type f32), or a null value. */
  MlirValue (*conv)(ppcc_emit_ctx *c, MlirValue x, MlirValue w, const ppcc_conv_geom *g, MlirType out_type);
  /* f32 attention as a ppcc_rt_attention call (null value otherwise: the
   * linalg lowering is used); positions (null: none) an i64/i32 index
   * tensor [S] or [B, S]. */
  MlirValue (*attention)(ppcc_emit_ctx *c, MlirValue q, MlirValue k, MlirValue v, MlirValue positions,
                         const emit_attention_mask *m, MlirType out_type);
  /* f32 exp/silu/sigmoid/gelu of a whole tensor as a ppcc_rt_unary_f32
   * call (the interpreter's vector kernels, the same bits), or null. */
  MlirValue (*unary)(ppcc_emit_ctx *c, int op_id, MlirValue x, MlirType out_type);
  /* A run-time error (failing the run, naming the op) unless every element
   * of the index tensor (i64 or i32) is in range (kind below); the message
   * says "token id" or "index" as the interpreter's kernels do. */
  ppcc_status (*check_index)(ppcc_emit_ctx *c, MlirValue index, int64_t bound, int kind);
  /* x[..., K] (f32) . w^T with w a block-quantized param shard (dtype wt,
   * i8 bytes [N, K / block * bytes]) as a ppcc_rt_qlinear_f32 call, or an
   * f16/bf16 one ([N, K]) as a ppcc_rt_hlinear_T call. */
  MlirValue (*qlinear)(ppcc_emit_ctx *c, MlirValue x, MlirValue w, ppcc_dtype wt, MlirType out_type);
  /* Rows of a quantized table (dtype wt, i8 bytes) for ids (i64/i32):
   * table row r holds id first + r, other ids give zero rows; wrap > 0
   * counts negative ids from wrap. */
  MlirValue (*qembedding)(ppcc_emit_ctx *c, MlirValue ids, MlirValue table, ppcc_dtype wt, int64_t first, int64_t wrap,
                          MlirType out_type);
  /* Frees the form's state (emit_ctx_free calls it). */
  void (*free_state)(ppcc_emit_ctx *c);
} emit_runtime_calls;

/* The index check in the executable form; no-op in the other forms. The
 * caller still clamps the indices it uses. kind: EXEC_INDEX (in [0,
 * bound)), EXEC_TOKEN_IDS (the same, named token ids in the message), with
 * EXEC_INDEX_WRAPS: in [-bound, bound) (ONNX's negative indices). */
enum { EXEC_INDEX = 0, EXEC_TOKEN_IDS = 1, EXEC_INDEX_WRAPS = 2 };
static inline ppcc_status emit_check_index(ppcc_emit_ctx *c, MlirValue index, int64_t bound, int kind) {
  return c->runtime_calls ? c->runtime_calls->check_index(c, index, bound, kind) : PPCC_OK;
}

/* ---- output (emit_print.c) ---- */
/* Verifies the module, prints it and post-processes the text; on success
 * *text is malloc'ed (caller frees). */
ppcc_status emit_render(ppcc_emit_ctx *c, char **text, size_t *len);

#endif
