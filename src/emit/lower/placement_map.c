/* The placement map: the one place that decides how devices, shards and
 * transfers are spelled in each output form (DESIGN §5).
 *
 *   form        device of an op / argument          transfer of one shard
 *   annotated   ppcc.device = N : i64                "ppcc.transfer" {source, target}
 *   IREE        iree.abi.affinity =                  flow.tensor.transfer %v : T
 *                 #hal.device.promise<@__device_N>     to #hal.device.promise<@__device_N>
 *   executable  one func per device (no attribute)   ppcc_rt_send / ppcc_rt_recv calls
 *                                                      (exec_comm.c)
 *
 *   params      annotated: function arguments (one per shard)
 *               IREE: one util.global per shard, typed with the shard's
 *                 shape, initialised from #flow.parameter.named<"model"::
 *                 ENTRY> (ppcc_param_shard_entry: sharktank's NAME.shard.K)
 *                 with stream.affinity on the shard's device; nothing is
 *                 loaded whole and sliced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit_internal.h"

/* Scope of every parameter reference: the run tools register the weights
 * file under this name (tools/iree_run.py). */
#define IREE_PARAM_SCOPE "model"

bool placement_allows_unregistered(ppcc_emit_kind kind) {
  return kind == PPCC_EMIT_IREE; /* flow / hal are IREE's, not available here */
}

bool placement_collectives_as_ops(ppcc_emit_kind kind) {
  return kind == PPCC_EMIT_MLIR;
}

/* #hal.device.promise<@__device_N>: an IREE device affinity. Parsed because
 * the hal dialect is not available; the context allows unregistered
 * dialects in IREE mode, so it is kept as an opaque attribute. */
static MlirAttribute iree_device_attr(ppcc_emit_ctx *c, int device) {
  char text[64];
  snprintf(text, sizeof text, "#hal.device.promise<@__device_%d>", device);
  return mlirAttributeParseGet(c->mctx, emit_str(text));
}

int placement_arg_attrs(ppcc_emit_ctx *c, const ppcc_value *v, int shard, MlirNamedAttribute *out) {
  int n = 0, device = v->devices ? v->devices[shard] : shard;
  if (c->kind == PPCC_EMIT_IREE) {
    out[n++] = emit_named(c, "iree.abi.affinity", iree_device_attr(c, device));
    return n;
  }
  char layout[64];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  out[n++] = emit_named(c, "ppcc.device", emit_i64_attr(c, device));
  out[n++] = emit_named(c, "ppcc.name", emit_string_attr(c, v->name));
  out[n++] = emit_named(c, "ppcc.shard", emit_i64_attr(c, shard));
  out[n++] = emit_named(c, "ppcc.layout", emit_string_attr(c, layout));
  if (v->pinned) out[n++] = emit_named(c, "ppcc.pinned", mlirUnitAttrGet(c->mctx));
  return n;
}

void placement_mark_op(ppcc_emit_ctx *c, MlirOperation op, int device) {
  /* IREE infers where compute runs from its operands' affinities; in the
   * executable form the enclosing function is the device. */
  if (c->kind == PPCC_EMIT_IREE || c->kind == PPCC_EMIT_MLIR_EXEC) return;
  mlirOperationSetAttributeByName(op, emit_str("ppcc.device"), emit_i64_attr(c, device));
}

MlirValue placement_transfer(ppcc_emit_ctx *c, MlirValue v, int from, int to) {
  if (from == to) return v;
  if (c->runtime_calls) return c->runtime_calls->transfer(c, v, from, to); /* executable form */
  MlirType t = mlirValueGetType(v);
  if (c->kind == PPCC_EMIT_IREE) {
    MlirNamedAttribute target = emit_named(c, "target", iree_device_attr(c, to));
    emit_op_spec s = {"flow.tensor.transfer", 1, &v, 1, &t, 1, &target, 0};
    return mlirOperationGetResult(emit_op(c, &s), 0);
  }
  MlirNamedAttribute attrs[2] = {emit_named(c, "source", emit_i64_attr(c, from)),
                                 emit_named(c, "target", emit_i64_attr(c, to))};
  emit_op_spec s = {"ppcc.transfer", 1, &v, 1, &t, 2, attrs, 0};
  return mlirOperationGetResult(emit_op(c, &s), 0);
}

bool placement_params_are_arguments(ppcc_emit_kind kind) {
  return kind != PPCC_EMIT_IREE;
}

/* A bounded text buffer (a parameter reference: name and tensor type). */
typedef struct fixed_text {
  char buf[4 * PPCC_MAX_NAME + 256];
  size_t len;
  bool overflow;
} fixed_text;

static void fixed_put(fixed_text *t, const char *s, size_t n) {
  if (t->len + n >= sizeof t->buf) {
    t->overflow = true;
    return;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = 0;
}

static void fixed_append(fixed_text *t, const char *s) { fixed_put(t, s, strlen(s)); }

static void fixed_print(MlirStringRef s, void *user) { fixed_put(user, s.data, s.length); }

/* s as the body of an MLIR string literal (ppcc_escape's MLIR form). */
static void append_escaped(fixed_text *t, const char *s) {
  char unit[PPCC_ESCAPE_UNIT];
  while (*s) {
    size_t m;
    s += ppcc_escape_next(s, PPCC_ESCAPE_MLIR, unit, &m);
    fixed_put(t, unit, m);
  }
}

/* Whether v has more than one shard (count 1 behaves as unsharded, §1). */
static bool is_sharded(const ppcc_value *v) { return v->layout.count > 1; }

/* Symbol of the global holding shard i of param v: "NAME" when unsharded,
 * else "NAME.shard.K" (one global per shard, even when two shards share a
 * device, so the module holds exactly the bytes the report places). */
static void param_symbol(const ppcc_value *v, int i, char *buf, size_t n) {
  if (is_sharded(v))
    snprintf(buf, n, "%s.shard.%d", v->name, i);
  else
    snprintf(buf, n, "%s", v->name);
}

static ppcc_status declare_param_shard(ppcc_emit_ctx *c, MlirBlock body, const ppcc_value *v, int i) {
  MlirType type = emit_shard_type(c, v);
  char entry[PPCC_MAX_NAME + 32], sym[PPCC_MAX_NAME + 32];
  ppcc_param_shard_entry(v, i, entry, sizeof entry); /* sharktank's naming, DESIGN §5 */
  param_symbol(v, i, sym, sizeof sym);
  fixed_text t = {.len = 0};
  fixed_append(&t, "#flow.parameter.named<\"" IREE_PARAM_SCOPE "\"::\"");
  append_escaped(&t, entry);
  fixed_append(&t, "\"> : ");
  mlirTypePrint(type, fixed_print, &t); /* the attribute carries the shard's type */
  if (t.overflow)
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "param '%s': its IREE parameter reference is too long",
                             v->name);
  MlirAttribute init = mlirAttributeParseGet(c->mctx, emit_str(t.buf));
  if (mlirAttributeIsNull(init))
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "param '%s': cannot build its IREE parameter reference",
                             v->name);
  MlirNamedAttribute attrs[5] = {
      emit_named(c, "sym_name", emit_string_attr(c, sym)),
      emit_named(c, "sym_visibility", emit_string_attr(c, "private")),
      emit_named(c, "type", mlirTypeAttrGet(type)),
      emit_named(c, "initial_value", init),
      emit_named(c, "stream.affinity", iree_device_attr(c, v->devices[i])),
  };
  emit_op_spec s = {"util.global", 0, NULL, 0, NULL, 5, attrs, 0};
  emit_op_in(c, body, &s);
  return PPCC_OK;
}

/* One global per shard, typed with the shard's shape. */
static ppcc_status declare_param(ppcc_emit_ctx *c, MlirBlock body, const ppcc_value *v) {
  c->op_loc = emit_name_loc(c, v->name);
  for (int i = 0; i < v->layout.count; i++) {
    ppcc_status st = declare_param_shard(c, body, v, i);
    if (st) return st;
  }
  return PPCC_OK;
}

ppcc_status placement_declare_params(ppcc_emit_ctx *c, MlirBlock module_body) {
  if (placement_params_are_arguments(c->kind)) return PPCC_OK;
  for (int i = 0; i < c->g->n_values; i++) {
    const ppcc_value *v = &c->g->values[i];
    if (v->kind != PPCC_VALUE_PARAM) continue;
    ppcc_status st = declare_param(c, module_body, v);
    if (st) return st;
  }
  return PPCC_OK;
}

/* Shard i of param v: the load of its own global (no slicing: the
 * archive holds the shard as the device uses it). */
static MlirValue load_param_shard(ppcc_emit_ctx *c, const ppcc_value *v, int i) {
  char sym[PPCC_MAX_NAME + 32];
  param_symbol(v, i, sym, sizeof sym);
  MlirType type = emit_shard_type(c, v);
  MlirNamedAttribute global = emit_named(c, "global", mlirFlatSymbolRefAttrGet(c->mctx, emit_str(sym)));
  emit_op_spec s = {"util.global.load", 0, NULL, 1, &type, 1, &global, 0};
  return mlirOperationGetResult(emit_op(c, &s), 0);
}

void placement_load_params(ppcc_emit_ctx *c) {
  if (placement_params_are_arguments(c->kind)) return;
  for (int k = 0; k < c->g->n_values; k++) {
    const ppcc_value *v = &c->g->values[k];
    if (v->kind != PPCC_VALUE_PARAM) continue;
    c->op_loc = emit_name_loc(c, v->name);
    for (int i = 0; i < v->layout.count; i++) emit_set_shard(c, k, i, load_param_shard(c, v, i));
  }
}
