/* The emission context shared by every form (emit_internal.h): MLIR
 * context with every upstream dialect and the ppcc IRDL dialect loaded,
 * MLIR's diagnostics passed on, the form's state freed with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/IRDL.h>
#include <mlir-c/RegisterEverything.h>
#include "emit_internal.h"

/* The ppcc dialect (src/emit/annotated/ppcc.irdl.mlir), embedded at build time so the
 * binary does not depend on where the file is installed. */
extern const char ppcc_irdl_text[];

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
  if (c->runtime_calls) c->runtime_calls->free_state(c);
  if (c->shards)
    for (int v = 0; v < c->g->n_values; v++) free(c->shards[v]);
  free(c->shards);
  if (!mlirModuleIsNull(c->module)) mlirModuleDestroy(c->module);
  if (!mlirContextIsNull(c->mctx)) mlirContextDestroy(c->mctx);
  memset(c, 0, sizeof *c);
}
