/* Door of src/emit/exec/: the executable form (DESIGN §5,
 * --emit=mlir-exec) and, through include/ppcc/jit.h, its JIT. */
#ifndef PPCC_EMIT_EXEC_FORM_H
#define PPCC_EMIT_EXEC_FORM_H
#include "../lower/emit_internal.h"

/* Builds the module: one func.func @device_D per device (include/ppcc/jit.h
 * gives the argument ABI), runtime calls for transfers and collectives. */
ppcc_status exec_build_module(ppcc_emit_ctx *c);

#endif
