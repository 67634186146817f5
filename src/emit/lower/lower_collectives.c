/* Collectives (all_reduce, all_gather, reduce_scatter, replicate,
 * reshard_split, unshard): they see all shards of their operand at once.
 *
 * Annotated form: one ppcc.<op> (src/emit/ppcc.irdl.mlir) taking every
 * operand shard and producing every result shard, with the devices.
 * IREE form: decomposed the way sharktank does it, into per-shard
 * transfers and local tensor ops on the receiving device. */
#include <stdio.h>
#include <stdlib.h>
#include "emit_internal.h"

ppcc_status lower_collective(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d);

typedef struct collective {
  ppcc_emit_ctx *c;
  const ppcc_op *op;
  const ppcc_value *in, *out;
  MlirValue *src;    /* operand shards (in->layout.count) */
  MlirValue *dst;    /* result shards (out->layout.count), filled by the lowering */
  MlirType out_type; /* type of one result shard */
} collective;

static MlirValue add_body(ppcc_emit_ctx *c, MlirBlock b, void *user) {
  MlirValue x = mlirBlockGetArgument(b, 0), y = mlirBlockGetArgument(b, 1);
  return emit_binary_scalar(c, b, mlirTypeIsAInteger(mlirValueGetType(x)) ? "arith.addi" : "arith.addf", x, y);
}

/* ---- IREE form: transfers + local ops ---- */
static int64_t chunk(const collective *k, int dim) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(k->out, local);
  return local[dim];
}

/* Every operand shard, optionally cut to part `part` along dim (-1: whole),
 * brought to device `to`. */
static void gather_to(collective *k, int to, int dim, int part, MlirValue *moved) {
  for (int i = 0; i < k->in->layout.count; i++) {
    MlirValue v = k->src[i];
    if (part >= 0) v = emit_slice(k->c, v, dim, part * chunk(k, dim), chunk(k, dim));
    moved[i] = placement_transfer(k->c, v, k->in->devices[i], to);
  }
}

static MlirValue sum_to(collective *k, int to, int dim, int part, MlirValue *moved) {
  gather_to(k, to, dim, part, moved);
  MlirValue acc = moved[0];
  for (int i = 1; i < k->in->layout.count; i++) {
    MlirValue pair[2] = {acc, moved[i]};
    acc = emit_elementwise(k->c, 2, pair, mlirValueGetType(acc), add_body, NULL);
  }
  return acc;
}

static MlirValue concat_to(collective *k, int to, int dim, MlirValue *moved) {
  gather_to(k, to, -1, -1, moved);
  return emit_concat(k->c, dim, k->in->layout.count, moved, k->out_type);
}

/* The operand shard to copy from for a replicated/unsharded operand: one
 * already on `to` if any (no copy), else shard 0. */
static MlirValue any_copy_to(collective *k, int to) {
  for (int i = 0; i < k->in->layout.count; i++)
    if (k->in->devices[i] == to) return k->src[i];
  return placement_transfer(k->c, k->src[0], k->in->devices[0], to);
}

/* Result shard j from the operand, by the operand's layout. */
static MlirValue decompose_shard(collective *k, int j, MlirValue *moved) {
  const ppcc_layout out = k->out->layout; /* one shard is a whole value (count-1 = unsharded) */
  const ppcc_layout in = k->in->layout.count == 1 ? ppcc_layout_unsharded() : k->in->layout;
  int to = k->out->devices[j];
  int out_dim = out.kind == PPCC_LAYOUT_SPLIT ? out.dim : -1;
  switch (in.kind) {
  case PPCC_LAYOUT_UNREDUCED: return sum_to(k, to, out_dim, out_dim >= 0 ? j : -1, moved);
  case PPCC_LAYOUT_SPLIT:
    if (out.kind == PPCC_LAYOUT_SPLIT) return k->src[j]; /* same split: kept in place */
    return concat_to(k, to, in.dim, moved);
  case PPCC_LAYOUT_REPLICATED:
  case PPCC_LAYOUT_UNSHARDED:
    if (out_dim < 0) return any_copy_to(k, to);
    /* split out of a full copy: cut on the source, move only the part */
    {
      int from = in.kind == PPCC_LAYOUT_REPLICATED ? j : 0;
      MlirValue part = emit_slice(k->c, k->src[from], out_dim, j * chunk(k, out_dim), chunk(k, out_dim));
      return placement_transfer(k->c, part, k->in->devices[from], to);
    }
  }
  return k->src[0];
}

static ppcc_status decompose(collective *k) {
  MlirValue *moved = malloc(sizeof *moved * (size_t)k->in->layout.count);
  if (!moved) return ppcc_error_status(k->c->d, PPCC_ERR_INTERNAL, "out of memory");
  for (int j = 0; j < k->out->layout.count; j++) k->dst[j] = decompose_shard(k, j, moved);
  free(moved);
  return PPCC_OK;
}

/* ---- annotated form: one ppcc.* op ---- */
static const char *unshard_mode(ppcc_layout_kind in) {
  switch (in) {
  case PPCC_LAYOUT_SPLIT: return "concat";
  case PPCC_LAYOUT_UNREDUCED: return "sum";
  default: return "copy";
  }
}

/* Attributes of the ppcc op; must match ppcc.irdl.mlir. */
static int collective_attrs(collective *k, MlirNamedAttribute *a) {
  ppcc_emit_ctx *c = k->c;
  const ppcc_value *in = k->in, *out = k->out;
  MlirAttribute src = emit_devices_attr(c, in->layout.count, in->devices);
  MlirAttribute dst = emit_devices_attr(c, out->layout.count, out->devices);
  int n = 0;
  switch (k->op->info->id) {
  case PPCC_OP_all_reduce:
    a[n++] = emit_named(c, "devices", src);
    break;
  case PPCC_OP_all_gather:
    a[n++] = emit_named(c, "devices", src);
    a[n++] = emit_named(c, "dim", emit_i64_attr(c, in->layout.dim));
    break;
  case PPCC_OP_reduce_scatter:
    a[n++] = emit_named(c, "devices", src);
    a[n++] = emit_named(c, "dim", emit_i64_attr(c, out->layout.dim));
    break;
  case PPCC_OP_replicate:
    a[n++] = emit_named(c, "source_devices", src);
    a[n++] = emit_named(c, "target_devices", dst);
    break;
  case PPCC_OP_reshard_split:
    a[n++] = emit_named(c, "source_devices", src);
    a[n++] = emit_named(c, "target_devices", dst);
    a[n++] = emit_named(c, "dim", emit_i64_attr(c, out->layout.dim));
    break;
  case PPCC_OP_unshard:
    a[n++] = emit_named(c, "source_devices", src);
    a[n++] = emit_named(c, "target", emit_i64_attr(c, out->devices[0]));
    a[n++] = emit_named(c, "mode", emit_string_attr(c, unshard_mode(in->layout.kind)));
    a[n++] = emit_named(c, "dim", emit_i64_attr(c, in->layout.kind == PPCC_LAYOUT_SPLIT ? in->layout.dim : -1));
    break;
  default:
    return -1;
  }
  return n;
}

static ppcc_status as_ppcc_op(collective *k) {
  MlirNamedAttribute attrs[4];
  int n_attrs = collective_attrs(k, attrs);
  if (n_attrs < 0) return emit_op_error(k->c, k->op, "op '%s' has no MLIR lowering", k->op->info->name);
  int n_out = k->out->layout.count;
  MlirType *types = malloc(sizeof *types * (size_t)n_out);
  if (!types) return ppcc_error_status(k->c->d, PPCC_ERR_INTERNAL, "out of memory");
  for (int j = 0; j < n_out; j++) types[j] = k->out_type;
  char name[64];
  snprintf(name, sizeof name, "ppcc.%s", k->op->info->name);
  emit_op_spec s = {name, k->in->layout.count, k->src, n_out, types, n_attrs, attrs, 0};
  MlirOperation op = emit_op(k->c, &s);
  for (int j = 0; j < n_out; j++) k->dst[j] = mlirOperationGetResult(op, j);
  free(types);
  return PPCC_OK;
}

ppcc_status lower_collective(struct ppcc_emit_ctx *c, const ppcc_graph *g, const ppcc_op *op, int shard, ppcc_diag *d) {
  collective k = {c, op, &g->values[op->in[0]], &g->values[op->out[0]], NULL, NULL, {NULL}};
  k.out_type = emit_shard_type(c, k.out);
  k.src = malloc(sizeof *k.src * (size_t)k.in->layout.count);
  k.dst = calloc((size_t)k.out->layout.count, sizeof *k.dst);
  ppcc_status st = PPCC_OK;
  if (!k.src || !k.dst) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; !st && i < k.in->layout.count; i++) k.src[i] = emit_shard(c, op->in[0], i);
  if (!st) st = placement_collectives_as_ops(c->kind) ? as_ppcc_op(&k) : decompose(&k);
  for (int j = 0; !st && j < k.out->layout.count; j++) emit_set_shard(c, op->out[0], j, k.dst[j]);
  free(k.src);
  free(k.dst);
  return st;
}
