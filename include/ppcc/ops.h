/* The op table: one row per op (DESIGN §4). A row names the op, its arity,
 * attribute schema, shape rule, sharding rule, pinning rule, FLOP count,
 * reference kernel and MLIR lowering. Nothing else in ppcc switches on op
 * names. */
#ifndef PPCC_OPS_H
#define PPCC_OPS_H
#include "ppcc/graph.h"

typedef struct ppcc_attr_spec {
  const char *name;
  ppcc_attr_type type;
  bool required;
} ppcc_attr_spec;

/* How devices and the pinned flag flow through the op (DESIGN §2). */
typedef enum {
  PPCC_PIN_UNARY,      /* P3 */
  PPCC_PIN_MULTI,      /* P4 */
  PPCC_PIN_CREATE,     /* P5: replicate, reshard_split */
  PPCC_PIN_COLLECTIVE, /* P6 */
  PPCC_PIN_INPLACE,    /* P7: operand 0 is the destination */
  PPCC_PIN_TRANSFER,   /* P8 */
  PPCC_PIN_UNSHARD     /* P9 */
} ppcc_pin_rule;

/* Which family the op belongs to; used by emitters and the runtime to pick
 * a shared lowering (all elementwise ops share one). */
typedef enum {
  PPCC_FAMILY_COMPUTE,    /* local per-shard computation */
  PPCC_FAMILY_COLLECTIVE, /* moves data between the shards of one value */
  PPCC_FAMILY_TRANSFER    /* moves shards between devices */
} ppcc_op_family;

/* A tensor buffer as kernels see it: local shard shape, contiguous row-major. */
typedef struct ppcc_tensor {
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  void *data;
  /* Where a shard sits in its logical tensor: it holds indices
   * [split_offset, split_offset + shape[split_dim]) of split_full along
   * split_dim. split_full == 0: the tensor is whole. Kernels whose result
   * depends on global indices (a vocab-split embedding) read this. */
  int split_dim;
  int64_t split_offset, split_full;
  /* Stored with its last two dims swapped ([.., N, K] bytes for the shape
   * [.., K, N]): a transpose the interpreter folded into this consumer
   * (matmul's right operand reads it through the GEMM's trans flag). */
  bool last_two_swapped;
} ppcc_tensor;

struct ppcc_emit_ctx; /* defined by the MLIR emitter */

typedef ppcc_status (*ppcc_shape_fn)(ppcc_graph *g, ppcc_op *op, ppcc_diag *d);
typedef ppcc_status (*ppcc_shard_fn)(ppcc_graph *g, ppcc_op *op, ppcc_diag *d);
typedef double (*ppcc_flops_fn)(const ppcc_graph *g, const ppcc_op *op);
/* Called when operands carrying the batch in dim 0 are marked in carries
 * (indexed by value): NULL if the op keeps dim-0 rows apart, so it can run
 * on microbatches, else the reason it cannot. */
typedef const char *(*ppcc_batch_fn)(const ppcc_graph *g, const ppcc_op *op, const bool *carries);
/* Reference kernel on local tensors: outputs are preallocated with their
 * shapes set. Used unsharded by the reference executor and per shard by the
 * runtime for COMPUTE ops. */
typedef ppcc_status (*ppcc_kernel_fn)(const ppcc_op *op, const ppcc_tensor *in,
                                      ppcc_tensor *out, ppcc_diag *d);
/* Lowers one shard of an op into the emitter's current block. Collectives
 * are called once with shard = -1 (PPCC_LOWER_ALL_SHARDS in src/emit/):
 * they combine all shards of their operand. */
typedef ppcc_status (*ppcc_lower_fn)(struct ppcc_emit_ctx *ctx, const ppcc_graph *g,
                                     const ppcc_op *op, int shard, ppcc_diag *d);

typedef enum {
#define PPCC_OP(name, ...) PPCC_OP_##name,
#include "ppcc/op_list.h"
#undef PPCC_OP
  PPCC_OP_COUNT
} ppcc_op_id;

typedef struct ppcc_op_info {
  ppcc_op_id id;
  const char *name;
  int min_in, max_in; /* operand count range */
  int n_out;
  const ppcc_attr_spec *attrs; /* terminated by {NULL} */
  ppcc_op_family family;
  ppcc_shape_fn infer_shape;   /* sets result dtype/rank/shape */
  ppcc_shard_fn shard_rule;    /* sets result layouts, or errors */
  ppcc_pin_rule pin_rule;
  ppcc_flops_fn flops;         /* total FLOPs of the unsharded op */
  ppcc_batch_fn batch_rule;    /* keeps dim-0 rows apart? (microbatching) */
} ppcc_op_info;
/* The kernel and lower columns of op_list.h are expanded by the runtime and
 * the emitter into arrays indexed by ppcc_op_id. */

/* Window geometry of conv and max_pool (attrs group, strides, pads as
 * begins then ends, dilations; max_pool's kernel attr, else the weight's
 * spatial dims given in kernel) for an input of rank 3 or 4 (1 or 2
 * spatial dims). False when the attributes are invalid. */
typedef struct ppcc_conv_geom {
  int spatial;
  int64_t group;
  int64_t kernel[2], stride[2], dilation[2], pad_begin[2], pad_end[2];
} ppcc_conv_geom;
bool ppcc_conv_geom_read(const ppcc_op *op, int rank, const int64_t *kernel, ppcc_conv_geom *gm);
int64_t ppcc_conv_out_dim(const ppcc_conv_geom *gm, int i, int64_t in);

const ppcc_op_info *ppcc_op_lookup(const char *name);
const ppcc_op_info *ppcc_op_table(int *count);
const ppcc_op_info *ppcc_op_info_by_id(ppcc_op_id id);

/* Runs op's sharding rule; count-1 layouts behave as unsharded there
 * (a rule refusing them is retried with them seen as unsharded). */
ppcc_status ppcc_apply_shard_rule(ppcc_graph *g, ppcc_op *op, ppcc_diag *d);
/* Helpers shared by rules, reports, emitter and runtime. */
/* Shape of operand k's shard as seen by the op (after broadcasting etc.
 * this is just the value's shard shape). */
bool ppcc_layout_equal(ppcc_layout a, ppcc_layout b);
bool ppcc_value_is_sharded(const ppcc_value *v);
/* Editing helpers for passes that insert ops (src/ir/graph_edit.c). */
typedef struct ppcc_op_list {
  ppcc_op *ops;
  int n, cap;
} ppcc_op_list; /* handed to ppcc_graph_set_ops when complete */
bool ppcc_op_list_push(ppcc_op_list *l, const ppcc_op *op);
/* A result value shaped and laid out like `like`, named like's name +
 * suffix ("#2", "#3"... appended if taken); its index, or -1. */
int ppcc_add_value_like(ppcc_graph *g, int like, const char *suffix);
/* A one-operand, one-result op marked inserted (src_index -1). */
bool ppcc_op_init_inserted(ppcc_graph *g, ppcc_op *op, ppcc_op_id id, int in, int out, const char *why);
/* Appends a transfer of src to devices (one per shard) whose result is
 * named "src@d0,d1,..."; returns the result's index, or -1 on OOM. */
int ppcc_push_transfer(ppcc_graph *g, ppcc_op_list *l, int src, const int *devices, const char *why);
/* The same to `count` devices (an unsharded value sent to count > 1
 * devices is replicated onto them, P8). */
int ppcc_push_transfer_to(ppcc_graph *g, ppcc_op_list *l, int src, const int *devices, int count, const char *why);

/* "ops[3] 'matmul' (-> 'h0')": how diagnostics name an op. */
const char *ppcc_op_ref(const ppcc_graph *g, const ppcc_op *op, char *buf, size_t n);

#endif
