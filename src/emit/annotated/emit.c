/* ppcc_emit: builds the module with the MLIR C API, verifies it and writes
 * it. Owns the emission context (MLIR context with every upstream dialect
 * and the ppcc IRDL dialect loaded) and the per-shard value table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/IRDL.h>
#include <mlir-c/RegisterEverything.h>
#include "../lower/emit_internal.h"

/* The ppcc dialect (src/emit/ppcc.irdl.mlir), embedded at build time so the
 * binary does not depend on where the file is installed. */
extern const char ppcc_irdl_text[];

ppcc_status emit_op_error(ppcc_emit_ctx *c, const ppcc_op *op, const char *fmt, ...) {
  char msg[1024], ref[PPCC_MAX_NAME * 2 + 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ppcc_error(c->d, "%s: %s", ppcc_op_ref(c->g, op, ref, sizeof ref), msg);
}

static ppcc_status load_ppcc_dialect(ppcc_emit_ctx *c) {
  MlirModule irdl = mlirModuleCreateParse(c->mctx, emit_str(ppcc_irdl_text));
  if (mlirModuleIsNull(irdl))
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "cannot parse the built-in ppcc IRDL dialect");
  bool ok = mlirLogicalResultIsSuccess(mlirLoadIRDLDialects(irdl));
  mlirModuleDestroy(irdl);
  return ok ? PPCC_OK
            : ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "cannot load the built-in ppcc IRDL dialect");
}

/* Appends a diagnostic chunk to a 1 KiB message buffer (truncating). */
static void print_to_buffer(MlirStringRef s, void *user) {
  char *buf = user;
  size_t used = strlen(buf), room = 1023 - used;
  size_t n = s.length < room ? s.length : room;
  memcpy(buf + used, s.data, n);
  buf[used + n] = 0;
}

/* MLIR reports verifier failures through diagnostics: pass them on so the
 * user sees why a module did not verify. */
static MlirLogicalResult report_diagnostic(MlirDiagnostic diag, void *user) {
  ppcc_emit_ctx *c = user;
  char msg[1024] = "";
  mlirDiagnosticPrint(diag, print_to_buffer, msg);
  if (mlirDiagnosticGetSeverity(diag) == MlirDiagnosticError)
    ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "MLIR: %s", msg);
  return mlirLogicalResultSuccess();
}

ppcc_status emit_ctx_init(ppcc_emit_ctx *c, const ppcc_graph *g, ppcc_emit_kind kind, ppcc_diag *d) {
  memset(c, 0, sizeof *c);
  c->g = g;
  c->kind = kind;
  c->d = d;
  c->shards = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *c->shards);
  if (!c->shards) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  c->mctx = mlirContextCreateWithThreading(false);
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(c->mctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(c->mctx);
  mlirContextSetAllowUnregisteredDialects(c->mctx, placement_allows_unregistered(kind));
  mlirContextAttachDiagnosticHandler(c->mctx, report_diagnostic, c, NULL);
  c->iter_parallel = mlirAttributeParseGet(c->mctx, emit_str("#linalg.iterator_type<parallel>"));
  c->iter_reduction = mlirAttributeParseGet(c->mctx, emit_str("#linalg.iterator_type<reduction>"));
  c->op_loc = mlirLocationUnknownGet(c->mctx);
  return load_ppcc_dialect(c);
}

void emit_ctx_free(ppcc_emit_ctx *c) {
  exec_state_free(c);
  if (c->shards)
    for (int v = 0; v < c->g->n_values; v++) free(c->shards[v]);
  free(c->shards);
  if (!mlirModuleIsNull(c->module)) mlirModuleDestroy(c->module);
  if (!mlirContextIsNull(c->mctx)) mlirContextDestroy(c->mctx);
  memset(c, 0, sizeof *c);
}

MlirValue emit_shard(const ppcc_emit_ctx *c, int value, int shard) {
  if (!c->shards[value]) return (MlirValue){NULL};
  return c->shards[value][shard];
}

void emit_set_shard(ppcc_emit_ctx *c, int value, int shard, MlirValue v) {
  if (!c->shards[value]) {
    int n = c->g->values[value].layout.count;
    c->shards[value] = calloc((size_t)(n > 0 ? n : 1), sizeof(MlirValue));
    if (!c->shards[value]) return; /* checked by emit_lower_all_ops */
  }
  c->shards[value][shard] = v;
}

/* Marks every op a per-shard lowering appended after `before` with the
 * shard's device, so constants and inits carry it too. */
static void mark_new_ops(ppcc_emit_ctx *c, MlirOperation before, int device) {
  MlirOperation op = mlirOperationIsNull(before) ? mlirBlockGetFirstOperation(c->block)
                                                 : mlirOperationGetNextInBlock(before);
  for (; !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) placement_mark_op(c, op, device);
}

ppcc_status emit_check_results_defined(ppcc_emit_ctx *c, const ppcc_op *op) {
  for (int k = 0; k < op->n_out; k++) {
    const ppcc_value *v = &c->g->values[op->out[k]];
    for (int i = 0; i < v->layout.count; i++)
      if (mlirValueIsNull(emit_shard(c, op->out[k], i)))
        return emit_op_error(c, op, "lowering left shard %d of '%s' undefined", i, v->name);
  }
  return PPCC_OK;
}

static ppcc_status lower_one_op(ppcc_emit_ctx *c, const ppcc_op *op) {
  ppcc_lower_fn lower = emit_lowering_for(op->info->id);
  if (!lower) return emit_op_error(c, op, "op '%s' has no MLIR lowering", op->info->name);
  c->op = op;
  c->op_loc = emit_name_loc(c, c->g->values[op->out[0]].name);
  ppcc_status st = PPCC_OK;
  if (op->info->family == PPCC_FAMILY_COLLECTIVE) {
    st = lower(c, c->g, op, PPCC_LOWER_ALL_SHARDS, c->d);
  } else {
    const ppcc_value *out = &c->g->values[op->out[0]];
    for (int i = 0; i < out->layout.count && !st; i++) {
      MlirOperation before = c->last_op;
      st = lower(c, c->g, op, i, c->d);
      if (!st && op->info->family == PPCC_FAMILY_COMPUTE) mark_new_ops(c, before, out->devices[i]);
    }
  }
  if (!st) st = emit_check_results_defined(c, op);
  return st;
}

ppcc_status emit_lower_all_ops(ppcc_emit_ctx *c) {
  for (int i = 0; i < c->g->n_ops; i++) {
    ppcc_status st = lower_one_op(c, &c->g->ops[i]);
    if (st) return st;
  }
  return PPCC_OK;
}

ppcc_status ppcc_emit(const ppcc_graph *g, ppcc_emit_kind kind, FILE *out, ppcc_diag *d) {
  if (kind == PPCC_EMIT_MLIR && emit_direct_supported(g)) return emit_direct(g, out, d);
  return ppcc_emit_via_mlir(g, kind, out, d);
}

ppcc_status ppcc_emit_via_mlir(const ppcc_graph *g, ppcc_emit_kind kind, FILE *out, ppcc_diag *d) {
  ppcc_emit_ctx c;
  ppcc_status st = emit_ctx_init(&c, g, kind, d);
  char *text = NULL;
  size_t len = 0;
  if (!st) st = kind == PPCC_EMIT_MLIR_EXEC ? exec_build_module(&c) : emit_main_func(&c);
  if (!st) st = emit_render(&c, &text, &len);
  if (!st && fwrite(text, 1, len, out) != len)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "cannot write the MLIR output");
  free(text);
  emit_ctx_free(&c);
  return st;
}
