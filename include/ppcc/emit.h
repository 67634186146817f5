/* MLIR emission (DESIGN §5). Implemented in src/emit/ with the MLIR C API. */
#ifndef PPCC_EMIT_H
#define PPCC_EMIT_H
#include <stdio.h>
#include "ppcc/graph.h"

typedef enum {
  PPCC_EMIT_MLIR,      /* annotated form: one function over all shards */
  PPCC_EMIT_IREE,      /* IREE-flavoured text (flow.tensor.transfer) */
  PPCC_EMIT_MLIR_EXEC  /* executable form: one function per device */
} ppcc_emit_kind;

/* Emits the graph (after all passes) and verifies the module before writing
 * it to out. On error nothing is written. */
ppcc_status ppcc_emit(const ppcc_graph *g, ppcc_emit_kind kind, FILE *out, ppcc_diag *d);
/* The same, always through an MLIR module (the annotated form of models
 * made only of common ops is otherwise printed straight from the graph,
 * src/emit/annotated/emit_direct.c; tests compare the two). */
ppcc_status ppcc_emit_via_mlir(const ppcc_graph *g, ppcc_emit_kind kind, FILE *out, ppcc_diag *d);

#endif
