/* Graph IR: SSA values and ops in program order (DESIGN §1).
 * Values and ops are referred to by index; all strings and small arrays live
 * in the graph's arena and are freed with the graph. */
#ifndef PPCC_GRAPH_H
#define PPCC_GRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ppcc/diag.h"

/* Limits instead of trust (each has a diagnostic in the frontend). */
#define PPCC_MAX_RANK 8
#define PPCC_MAX_DEVICES 4096
#define PPCC_MAX_OPS 10000000
#define PPCC_MAX_ELEMENTS (INT64_C(1) << 48)
#define PPCC_MAX_NAME 256

/* The q* dtypes are GGUF's block-quantized weight formats (DESIGN §11):
 * params only, stored as whole blocks along the last dim; their block
 * length and bytes per block come from the one table of
 * include/ppcc/quant.h (ppcc_dtype_blocks). */
typedef enum {
  PPCC_F32, PPCC_F16, PPCC_BF16, PPCC_I64, PPCC_I32, PPCC_I8, PPCC_BOOL,
  PPCC_Q8_0, PPCC_Q4_0, PPCC_Q4_1, PPCC_Q5_0, PPCC_Q5_1, PPCC_Q2_K, PPCC_Q3_K, PPCC_Q4_K, PPCC_Q5_K, PPCC_Q6_K,
  PPCC_DTYPE_COUNT
} ppcc_dtype;

struct ppcc_block_format;
const char *ppcc_dtype_name(ppcc_dtype t);
/* Bytes per element; 0 for the block-quantized dtypes (use
 * ppcc_value_bytes / ppcc_dtype_stored_bytes). */
int ppcc_dtype_size(ppcc_dtype t);
/* The block format of a quantized dtype, NULL for the element dtypes. */
const struct ppcc_block_format *ppcc_dtype_blocks(ppcc_dtype t);
bool ppcc_dtype_is_quantized(ppcc_dtype t);
/* A weight of dtype w used with activations of dtype x that stays as
 * stored: w is f16 or bf16 and x is f32 (the kernels convert its rows). */
bool ppcc_dtype_is_stored_half(ppcc_dtype w, ppcc_dtype x);
/* Bytes that a [rows][cols] tensor of dtype t takes as stored (a partial
 * block of a row counts whole); -1 on overflow. */
int64_t ppcc_dtype_stored_bytes(ppcc_dtype t, int64_t rows, int64_t cols);
bool ppcc_dtype_from_name(const char *s, ppcc_dtype *out);
bool ppcc_dtype_is_float(ppcc_dtype t);

typedef enum {
  PPCC_LAYOUT_UNSHARDED,  /* one whole tensor on one device */
  PPCC_LAYOUT_REPLICATED, /* count identical copies */
  PPCC_LAYOUT_SPLIT,      /* shard i = i-th contiguous slice along dim */
  PPCC_LAYOUT_UNREDUCED   /* count partial sums of the full shape */
} ppcc_layout_kind;

typedef struct {
  ppcc_layout_kind kind;
  int dim;   /* SPLIT only, else -1 */
  int count; /* number of shards; 1 for UNSHARDED */
} ppcc_layout;

const char *ppcc_layout_kind_name(ppcc_layout_kind k);
/* "unsharded", "replicated(2)", "split(1, 2)", "unreduced(2)" */
void ppcc_layout_str(ppcc_layout l, char *buf, size_t n);
ppcc_layout ppcc_layout_unsharded(void);

typedef enum { PPCC_VALUE_PARAM, PPCC_VALUE_INPUT, PPCC_VALUE_RESULT } ppcc_value_kind;

typedef struct ppcc_value {
  const char *name;
  ppcc_value_kind kind;
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK]; /* logical (unsharded) shape */
  ppcc_layout layout;
  int *devices;     /* layout.count entries: shard i lives on devices[i] */
  bool pinned;
  int def_op;       /* defining op index, -1 for params and inputs */
  bool is_output;
  const char *why;  /* rule that decided devices/pin (for explain) */
  bool devices_declared; /* the model gave "devices" (auto-partition refuses those) */
} ppcc_value;

typedef enum {
  PPCC_ATTR_INT, PPCC_ATTR_INTS, PPCC_ATTR_FLOAT, PPCC_ATTR_BOOL, PPCC_ATTR_STRING, PPCC_ATTR_FLOATS
} ppcc_attr_type;

typedef struct ppcc_attr {
  const char *name;
  ppcc_attr_type type;
  int64_t i;      /* INT, BOOL */
  double f;       /* FLOAT */
  int n;          /* INTS / FLOATS length */
  int64_t *ints;  /* INTS */
  double *floats; /* FLOATS */
  const char *s;  /* STRING */
} ppcc_attr;

struct ppcc_op_info;

typedef struct ppcc_op {
  const struct ppcc_op_info *info; /* row of the op table */
  int n_in, n_out, n_attrs;
  int *in;          /* value indices */
  int *out;         /* value indices */
  ppcc_attr *attrs;
  int n_devices;    /* after pin-propagate: devices the op runs on */
  int *devices;
  bool inserted;    /* added by a pass (e.g. insert-transfers) */
  int src_index;    /* index in the model's "ops" array, -1 if inserted */
  /* pin-propagate -> insert-transfers: operand k must move to
   * move_to[k] (layout-count device ids), or NULL. */
  int **move_to;
  /* shard-propagate's rewrite requests (P11), set by sharding rules: bit k
   * of gather_operands: operand k is all-gathered first; resplit: the
   * result is computed whole (replicated) and re-split along resplit_dim. */
  unsigned gather_operands;
  /* Set by the shape rule: bit k: operand k may be block-quantized (a
   * linear's weight, an embedding's table); verify refuses the others. */
  unsigned quantized_ok;
  bool resplit;
  int resplit_dim;
  const char *why;
} ppcc_op;

typedef struct ppcc_arena_block ppcc_arena_block;

typedef struct ppcc_graph {
  const char *name;
  int n_devices;
  int n_values, cap_values;
  ppcc_value *values;
  int n_ops, cap_ops;
  ppcc_op *ops;
  int n_outputs;
  int *outputs;           /* value indices */
  ppcc_arena_block *arena;
  struct ppcc_name_map *names; /* name -> value index */
  const char *source_file;
  /* Auto-partition request (--pp/--tp/--device-memory); pp == tp == 0:
   * none, the model's own placement is used. device_memory 0: no limit.
   * stage_tp: pp per-stage TP sizes (--tp 4,1,2,1), NULL = tp for all;
   * devices_spec: --devices-spec (include/ppcc/devices_spec.h) or NULL. */
  struct {
    int pp, tp;
    int64_t device_memory;
    const int *stage_tp;
    const struct ppcc_devices_spec *devices_spec;
  } partition;
  /* The split auto-partition chose (include/ppcc/partition.h), or NULL. */
  struct ppcc_partition_summary *partition_summary;
} ppcc_graph;

ppcc_graph *ppcc_graph_new(const char *name, int n_devices);
void ppcc_graph_free(ppcc_graph *g);

/* Arena memory: zeroed, lives as long as the graph. NULL only on OOM. */
void *ppcc_alloc(ppcc_graph *g, size_t bytes);
char *ppcc_strdup(ppcc_graph *g, const char *s);
int *ppcc_dup_ints(ppcc_graph *g, const int *v, int n);

/* Adds a value; returns its index or -1 if the name exists (or OOM). */
int ppcc_add_value(ppcc_graph *g, const char *name, ppcc_value_kind kind,
                   ppcc_dtype dtype, int rank, const int64_t *shape);
int ppcc_find_value(const ppcc_graph *g, const char *name);
/* The output index k whose value is computed from input v by v's one
 * reader (v read by exactly one op, which writes graph output k, listed
 * once; v itself no output), else -1. Bound as v's state
 * (ppcc_run_data_bind_state), that output may share v's buffer: nothing
 * reads v after the op has read it, so the JIT updates a KV cache in
 * place (index_copy's kernel writes into the output argument). */
int ppcc_state_update_output(const ppcc_graph *g, int v);
/* Appends an op (arrays copied into the arena); returns its index. */
int ppcc_add_op(ppcc_graph *g, const struct ppcc_op_info *info, int n_in,
                const int *in, int n_out, const int *out, int n_attrs,
                const ppcc_attr *attrs);
/* Replaces the op list (used by passes that insert ops). */
void ppcc_graph_set_ops(ppcc_graph *g, ppcc_op *ops, int n_ops, int cap_ops);

const ppcc_attr *ppcc_op_attr(const ppcc_op *op, const char *name);
/* Attribute accessors with defaults. */
int64_t ppcc_attr_int(const ppcc_op *op, const char *name, int64_t dflt);
bool ppcc_attr_bool(const ppcc_op *op, const char *name, bool dflt);
double ppcc_attr_float(const ppcc_op *op, const char *name, double dflt);
/* A FLOATS attribute's values (its length in *n), or NULL (*n = 0). */
const double *ppcc_attr_floats(const ppcc_op *op, const char *name, int *n);

/* Element count and byte sizes, overflow-checked (-1 on overflow). */
int64_t ppcc_num_elements(int rank, const int64_t *shape);
int64_t ppcc_value_bytes(const ppcc_value *v);        /* whole logical tensor */
/* Whether splitting v along dim into count shards cuts its blocks (a
 * quantized dtype split along its last dim off a block multiple). */
bool ppcc_split_cuts_blocks(const ppcc_value *v, int dim, int count);
int64_t ppcc_value_shard_bytes(const ppcc_value *v);  /* one shard */
/* Local (per-shard) shape of a value. */
void ppcc_value_shard_shape(const ppcc_value *v, int64_t *shape_out);
/* Name of the archive entry holding shard i of param v in a sharded
 * parameter archive (DESIGN §5, sharktank's naming): "NAME" when v has one
 * shard, "NAME.shard.0" for every replica of a replicated v, else
 * "NAME.shard.K" (K = i). False when it does not fit in n bytes. */
bool ppcc_param_shard_entry(const ppcc_value *v, int i, char *buf, size_t n);
/* Whether shard i of v has an entry of its own (false for the replicas
 * 1.. of a replicated v, which read entry "NAME.shard.0"). */
bool ppcc_param_shard_stored(const ppcc_value *v, int i);

/* "[0,1]" style formatting used in messages and names. */
void ppcc_devices_str(const int *devices, int n, char *buf, size_t len);
bool ppcc_devices_equal(const int *a, const int *b, int n);

/* Whether op reads or writes a shard on device dev. */
bool ppcc_op_involves(const ppcc_graph *g, const ppcc_op *op, int dev);
/* Whether dev may wait on another device in op (it receives a transfer's
 * shard from elsewhere, or takes part in a collective); compute never waits. */
bool ppcc_op_may_wait(const ppcc_graph *g, const ppcc_op *op, int dev);
/* The pipeline schedule (src/plan/pipeline_segments.c): each device runs,
 * per segment, the segment's ops for microbatch 0..M-1. Returns the
 * number of segments; begin[s] is the first op of segment s, begin[n] =
 * n_ops (begin needs n_ops + 2 entries). */
int ppcc_pipeline_segments(const ppcc_graph *g, int *begin);

#endif
