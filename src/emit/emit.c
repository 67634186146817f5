/* ppcc_emit (include/ppcc/emit.h), the emitter's front door: picks the
 * form (annotated/ for the annotated and IREE forms, exec/ for the
 * executable form), builds its module with the MLIR C API in an emission
 * context (lower/), verifies it and writes it. */
#include <stdio.h>
#include <stdlib.h>
#include "annotated/annotated.h"
#include "exec/exec_form.h"
#include "lower/emit_internal.h"

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
