/* The device functions ("glue": kernel calls, buffer allocation, ppcc_rt_*
 * calls, as long as the model) compiled fast. The MLIR ExecutionEngine's C
 * API always compiles with LLVM's optimising code generator, whose
 * instruction selection and register allocation are super-linear on a
 * device function's one huge basic block (17 s for 32 llama layers). The
 * glue has nothing to optimise, so it is translated to LLVM IR and
 * compiled by an ORC LLJIT whose target machine is at CodeGenLevelNone:
 * FastISel and the fast register allocator, linear in the code size.
 *
 * Entry points have the ExecutionEngine's packed form (include/ppcc/jit.h):
 * `_mlir__mlir_ciface_device_D(void **args)` is added here in LLVM IR,
 * loading each argument through args[i] and calling the C interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <mlir-c/Target/LLVMIR.h>
#include "exec_internal.h"
#include "exec_glue_jit.h"

struct glue_jit {
  LLVMOrcLLJITRef lljit;
};

void glue_jit_free(glue_jit *g) {
  if (!g) return;
  if (g->lljit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(g->lljit);
    if (e) LLVMConsumeError(e);
  }
  free(g);
}

/* Reports an LLVM error (and consumes it). */
static ppcc_status llvm_error(ppcc_diag *d, const char *what, LLVMErrorRef e) {
  char *msg = LLVMGetErrorMessage(e);
  ppcc_status st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: %s: %s", what, msg ? msg : "unknown error");
  LLVMDisposeErrorMessage(msg);
  return st;
}

/* void name(void **args) { f(*(T0 *)args[0], *(T1 *)args[1], ...); } */
static ppcc_status add_packed_wrapper(LLVMModuleRef m, LLVMValueRef f, const char *name, ppcc_diag *d) {
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  LLVMTypeRef fty = LLVMGlobalGetValueType(f);
  unsigned n = LLVMCountParamTypes(fty);
  LLVMTypeRef *types = malloc(sizeof *types * (n > 0 ? n : 1));
  LLVMValueRef *values = malloc(sizeof *values * (n > 0 ? n : 1));
  if (!types || !values) {
    free(types);
    free(values);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  LLVMGetParamTypes(fty, types);
  LLVMValueRef w = LLVMAddFunction(m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, w, "entry"));
  LLVMValueRef args = LLVMGetParam(w, 0);
  for (unsigned i = 0; i < n; i++) {
    LLVMValueRef idx = LLVMConstInt(i64, i, 0);
    LLVMValueRef slot = LLVMBuildLoad2(b, ptr, LLVMBuildGEP2(b, ptr, args, &idx, 1, ""), "");
    values[i] = LLVMBuildLoad2(b, types[i], slot, "");
  }
  LLVMBuildCall2(b, fty, f, values, n, "");
  LLVMBuildRetVoid(b);
  LLVMDisposeBuilder(b);
  free(types);
  free(values);
  return PPCC_OK;
}

/* Packed wrappers of _mlir_ciface_device_D, D < n_devices. */
static ppcc_status add_entries(LLVMModuleRef m, int n_devices, ppcc_diag *d) {
  ppcc_status st = PPCC_OK;
  for (int dev = 0; dev < n_devices && !st; dev++) {
    char name[48], packed[56];
    snprintf(name, sizeof name, "_mlir_ciface_device_%d", dev);
    snprintf(packed, sizeof packed, "_mlir_%s", name);
    LLVMValueRef f = LLVMGetNamedFunction(m, name);
    if (!f) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: no function %s in the lowered module", name);
    st = add_packed_wrapper(m, f, packed, d);
  }
  return st;
}

static LLVMTargetMachineRef fast_target_machine(ppcc_diag *d) {
  if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
    ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: LLVM has no native target");
    return NULL;
  }
  char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
  LLVMTargetRef target = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: no LLVM target for %s: %s", triple, err ? err : "?");
    LLVMDisposeMessage(err);
  } else {
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelNone, LLVMRelocDefault,
                                 LLVMCodeModelJITDefault);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    if (!tm) ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: LLVM could not create a target machine for %s", triple);
  }
  LLVMDisposeMessage(triple);
  return tm;
}

static ppcc_status create_lljit(glue_jit *g, ppcc_diag *d) {
  LLVMTargetMachineRef tm = fast_target_machine(d);
  if (!tm) return PPCC_ERR_INTERNAL;
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  /* both take ownership: tm of the machine builder, that of the builder */
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&g->lljit, builder); /* consumes the builder */
  if (e) {
    g->lljit = NULL;
    return llvm_error(d, "cannot create the LLJIT", e);
  }
  return PPCC_OK;
}

/* The runtime ABI and the kernels at their addresses; anything else the
 * glue calls (malloc, free) from the process. */
static ppcc_status define_symbols(glue_jit *g, int n, const char *const *names, void *const *addresses,
                                  ppcc_diag *d) {
  LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(g->lljit);
  int n_rt = 0;
  for (const ppcc_jit_symbol *s = ppcc_jit_symbols(); s->name; s++) n_rt++;
  LLVMOrcCSymbolMapPair *pairs = calloc((size_t)(n + n_rt > 0 ? n + n_rt : 1), sizeof *pairs);
  if (!pairs) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  LLVMJITSymbolFlags flags = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
  int k = 0;
  for (const ppcc_jit_symbol *s = ppcc_jit_symbols(); s->name; s++)
    pairs[k++] = (LLVMOrcCSymbolMapPair){LLVMOrcLLJITMangleAndIntern(g->lljit, s->name),
                                         {(LLVMOrcExecutorAddress)(uintptr_t)s->address, flags}};
  for (int i = 0; i < n; i++)
    pairs[k++] = (LLVMOrcCSymbolMapPair){LLVMOrcLLJITMangleAndIntern(g->lljit, names[i]),
                                         {(LLVMOrcExecutorAddress)(uintptr_t)addresses[i], flags}};
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)k); /* takes the names */
  free(pairs);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(main, mu);
  if (e) {
    LLVMOrcDisposeMaterializationUnit(mu);
    return llvm_error(d, "cannot define the runtime symbols", e);
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(g->lljit), NULL, NULL);
  if (e) return llvm_error(d, "cannot search the process for symbols", e);
  LLVMOrcJITDylibAddGenerator(main, gen);
  return PPCC_OK;
}

ppcc_status glue_jit_compile(MlirModule module, int n_devices, int n_symbols, const char *const *names,
                             void *const *addresses, glue_jit **out, ppcc_jit_entry *entries, ppcc_diag *d) {
  *out = NULL;
  glue_jit *g = calloc(1, sizeof *g);
  if (!g) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = create_lljit(g, d);
  if (!st) st = define_symbols(g, n_symbols, names, addresses, d);
  if (st) {
    glue_jit_free(g);
    return st;
  }
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef m = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(module), LLVMOrcThreadSafeContextGetContext(tsc));
  if (!m) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: translating the device functions to LLVM IR failed");
  if (!st) {
    LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(g->lljit));
    LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(g->lljit));
    st = add_entries(m, n_devices, d);
  }
  if (st) {
    if (m) LLVMDisposeModule(m);
    LLVMOrcDisposeThreadSafeContext(tsc);
    glue_jit_free(g);
    return st;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(m, tsc); /* owns m, shares tsc */
  LLVMOrcDisposeThreadSafeContext(tsc);
  LLVMErrorRef e = LLVMOrcLLJITAddLLVMIRModule(g->lljit, LLVMOrcLLJITGetMainJITDylib(g->lljit), tsm);
  if (e) st = llvm_error(d, "cannot add the device functions", e);
  for (int dev = 0; dev < n_devices && !st; dev++) { /* the first lookup compiles */
    char name[64];
    snprintf(name, sizeof name, "_mlir__mlir_ciface_device_%d", dev);
    LLVMOrcExecutorAddress addr = 0;
    e = LLVMOrcLLJITLookup(g->lljit, &addr, name);
    if (e) st = llvm_error(d, "compiling the device functions failed", e);
    else if (!addr) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: no compiled function for device %d", dev);
    else entries[dev] = (ppcc_jit_entry)(uintptr_t)addr;
  }
  if (st) {
    glue_jit_free(g);
    return st;
  }
  *out = g;
  return PPCC_OK;
}
