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
 *               IREE: util.global per (param, device) initialised from
 *                 #flow.parameter.named<"model"::"NAME"> (the full tensor, as
 *                 the weights file holds it) with stream.affinity on that
 *                 device; each shard is a tensor.extract_slice of its load.
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
  if (c->kind == PPCC_EMIT_MLIR_EXEC) return exec_transfer(c, v, from, to);
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

/* s as the body of an MLIR string literal (quotes, backslashes and
 * non-printable bytes as \XX). */
static void append_escaped(fixed_text *t, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    char esc[4];
    if (ch == '"' || ch == '\\' || ch < 0x20 || ch > 0x7e) {
      snprintf(esc, sizeof esc, "\\%02X", ch);
      fixed_append(t, esc);
    } else {
      fixed_put(t, (const char *)&ch, 1);
    }
  }
}

/* Whether the shards of v live on more than one device. */
static bool on_several_devices(const ppcc_value *v) {
  for (int i = 1; i < v->layout.count; i++)
    if (v->devices[i] != v->devices[0]) return true;
  return false;
}

/* Symbol of the copy of param v on `device`: its name, or "NAME@D" when
 * the param is spread over several devices. */
static void param_symbol(const ppcc_value *v, int device, char *buf, size_t n) {
  if (on_several_devices(v))
    snprintf(buf, n, "%s@%d", v->name, device);
  else
    snprintf(buf, n, "%s", v->name);
}

/* Whether an earlier shard of v already lives on shard i's device. */
static bool device_seen_before(const ppcc_value *v, int i) {
  for (int k = 0; k < i; k++)
    if (v->devices[k] == v->devices[i]) return true;
  return false;
}

/* Every shard reads the param except shards 1.. of an unreduced one
 * (zeros: the sum of the shards is the param, as the runtime cuts it). */
static bool shard_reads_param(const ppcc_value *v, int i) {
  return v->layout.kind != PPCC_LAYOUT_UNREDUCED || i == 0;
}

static ppcc_status declare_param(ppcc_emit_ctx *c, MlirBlock body, const ppcc_value *v) {
  MlirType full = emit_tensor_type(c, v->dtype, v->rank, v->shape);
  fixed_text t = {.len = 0};
  fixed_append(&t, "#flow.parameter.named<\"" IREE_PARAM_SCOPE "\"::\"");
  append_escaped(&t, v->name);
  fixed_append(&t, "\"> : ");
  mlirTypePrint(full, fixed_print, &t); /* the attribute carries the tensor type */
  if (t.overflow)
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "param '%s': its IREE parameter reference is too long",
                             v->name);
  MlirAttribute init = mlirAttributeParseGet(c->mctx, emit_str(t.buf));
  if (mlirAttributeIsNull(init))
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "param '%s': cannot build its IREE parameter reference",
                             v->name);
  c->op_loc = emit_name_loc(c, v->name);
  for (int i = 0; i < v->layout.count; i++) {
    if (device_seen_before(v, i) || !shard_reads_param(v, i)) continue;
    char sym[PPCC_MAX_NAME + 32];
    param_symbol(v, v->devices[i], sym, sizeof sym);
    MlirNamedAttribute attrs[5] = {
        emit_named(c, "sym_name", emit_string_attr(c, sym)),
        emit_named(c, "sym_visibility", emit_string_attr(c, "private")),
        emit_named(c, "type", mlirTypeAttrGet(full)),
        emit_named(c, "initial_value", init),
        emit_named(c, "stream.affinity", iree_device_attr(c, v->devices[i])),
    };
    emit_op_spec s = {"util.global", 0, NULL, 0, NULL, 5, attrs, 0};
    emit_op_in(c, body, &s);
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

/* Shard i of param v from the load of its copy on the shard's device:
 * a slice (split), the whole (replicated, unsharded), or for an unreduced
 * param the whole in shard 0 and zeros elsewhere (their sum is the param,
 * as the runtime cuts it). */
static MlirValue load_param_shard(ppcc_emit_ctx *c, const ppcc_value *v, int i) {
  if (!shard_reads_param(v, i)) return emit_zeros(c, emit_shard_type(c, v));
  char sym[PPCC_MAX_NAME + 32];
  param_symbol(v, v->devices[i], sym, sizeof sym);
  MlirType full = emit_tensor_type(c, v->dtype, v->rank, v->shape);
  MlirNamedAttribute global = emit_named(c, "global", mlirFlatSymbolRefAttrGet(c->mctx, emit_str(sym)));
  emit_op_spec s = {"util.global.load", 0, NULL, 1, &full, 1, &global, 0};
  MlirValue whole = mlirOperationGetResult(emit_op(c, &s), 0);
  if (v->layout.kind != PPCC_LAYOUT_SPLIT || v->layout.count < 2) return whole;
  int dim = v->layout.dim;
  int64_t size = v->shape[dim] / v->layout.count;
  return emit_slice(c, whole, dim, size * i, size);
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
