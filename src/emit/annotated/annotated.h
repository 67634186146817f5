/* Door of src/emit/annotated/: the annotated form (DESIGN §5, --emit=mlir)
 * and the IREE form (--emit=iree) as one func.func over all shards, and
 * the annotated form printed without MLIR. */
#ifndef PPCC_EMIT_ANNOTATED_H
#define PPCC_EMIT_ANNOTATED_H
#include <stdio.h>
#include "../lower/emit_internal.h"

/* Builds the module: one function over all shards (emit_func.c). */
ppcc_status emit_main_func(ppcc_emit_ctx *c);

/* The annotated form without MLIR (emit_direct.c). */
/* Whether emit_direct prints exactly what the MLIR path would. */
bool emit_direct_supported(const ppcc_graph *g);
ppcc_status emit_direct(const ppcc_graph *g, FILE *out, ppcc_diag *d);

#endif
