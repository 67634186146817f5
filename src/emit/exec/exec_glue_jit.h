/* The device functions (call glue) compiled with fast instruction
 * selection (exec_glue_jit.c), for exec_jit.c. */
#ifndef PPCC_EXEC_GLUE_JIT_H
#define PPCC_EXEC_GLUE_JIT_H
#include <llvm-c/Core.h>
#include <mlir-c/IR.h>
#include "ppcc/diag.h"
#include "ppcc/jit.h"

typedef struct glue_jit glue_jit;

/* Translates the lowered module (LLVM dialect; kernels only declared) to
 * LLVM IR, compiles it at CodeGenLevelNone with the runtime ABI symbols
 * and the n_symbols kernels `names` at `addresses` defined, and sets
 * entries[D] to the packed entry of device D. */
ppcc_status glue_jit_compile(MlirModule module, int n_devices, int n_symbols, const char *const *names,
                             void *const *addresses, glue_jit **out, ppcc_jit_entry *entries, ppcc_diag *d);
void glue_jit_free(glue_jit *g);

/* Rewrites what FastISel cannot select in the translated glue (aggregate
 * stores, extractvalues of insertvalue chains, allocas outside the entry
 * block of the n device entries) into what it can (exec_glue_flat.c).
 * False when out of memory. */
bool glue_flatten(LLVMModuleRef m, LLVMValueRef const *entries, int n);

#endif
