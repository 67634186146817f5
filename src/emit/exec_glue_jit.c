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
#include <llvm-c/Transforms/PassBuilder.h>
#include <mlir-c/Target/LLVMIR.h>
#include "exec_internal.h"
#include "exec_glue_jit.h"
#include <time.h>
static double dbg_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

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

/* ---- blocks of bounded size ----
 * FastISel cannot select the aggregates the memref lowering builds
 * (insertvalue, struct stores) and hands the rest of the block to
 * SelectionDAG, whose scheduling and combining are super-linear in the
 * block's size. A device function is one block as long as the model, so
 * its blocks are cut into pieces of at most BLOCK_OPS operations joined
 * by unconditional branches: code generation becomes linear in the model,
 * and the code runs the same (values are SSA across blocks; successors
 * take their block arguments from the moved terminator as before). */
enum { BLOCK_OPS = 64 };

static MlirOperation branch_to(MlirContext ctx, MlirBlock dest) {
  MlirOperationState s = mlirOperationStateGet(mlirStringRefCreateFromCString("llvm.br"), mlirLocationUnknownGet(ctx));
  mlirOperationStateAddSuccessors(&s, 1, &dest);
  return mlirOperationCreate(&s);
}

static void split_block(MlirContext ctx, MlirRegion region, MlirBlock block) {
  MlirBlock cur = block;
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(block), next; !mlirOperationIsNull(op); op = next) {
    next = mlirOperationGetNextInBlock(op);
    if (++n > BLOCK_OPS && !mlirOperationIsNull(next)) { /* op starts a new block (never the terminator alone) */
      MlirBlock piece = mlirBlockCreate(0, NULL, NULL);
      mlirRegionInsertOwnedBlockAfter(region, cur, piece);
      if (mlirBlockEqual(cur, block))
        mlirBlockInsertOwnedOperationBefore(block, op, branch_to(ctx, piece));
      else
        mlirBlockAppendOwnedOperation(cur, branch_to(ctx, piece));
      cur = piece;
      n = 1;
    }
    if (!mlirBlockEqual(cur, block)) {
      mlirOperationRemoveFromParent(op);
      mlirBlockAppendOwnedOperation(cur, op);
    }
  }
}

static bool is_named(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

/* Splits the long blocks of every function defined in the module. */
static void split_long_blocks(MlirModule module) {
  MlirContext ctx = mlirModuleGetContext(module);
  for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(module)); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!is_named(f, "llvm.func")) continue;
    MlirRegion body = mlirOperationGetRegion(f, 0);
    for (MlirBlock b = mlirRegionGetFirstBlock(body), next; !mlirBlockIsNull(b); b = next) {
      next = mlirBlockGetNextInRegion(b); /* the pieces of b come before next */
      split_block(ctx, body, b);
    }
  }
}

/* The memref descriptors the lowering builds (insertvalue chains) and
 * takes apart again (extractvalue) at each kernel call: folded away, so
 * that FastISel selects nearly every instruction (it cannot select
 * aggregates and leaves them to SelectionDAG). Both passes are linear;
 * they halve code generation time. */
static ppcc_status fold_descriptors(LLVMModuleRef m, ppcc_diag *d) {
  LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m, "function(instsimplify,dce)", NULL, o);
  LLVMDisposePassBuilderOptions(o);
  return e ? llvm_error(d, "simplifying the device functions failed", e) : PPCC_OK;
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
  double t0 = dbg_ms();
  split_long_blocks(module);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef m = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(module), LLVMOrcThreadSafeContextGetContext(tsc));
  if (!m) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: translating the device functions to LLVM IR failed");
  if (!st) {
    LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(g->lljit));
    LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(g->lljit));
    st = add_entries(m, n_devices, d);
    if (!st) st = fold_descriptors(m, d);
    if (getenv("PPCC_JIT_DUMP")) LLVMPrintModuleToFile(m, getenv("PPCC_JIT_DUMP"), NULL);
  }
  if (st) {
    if (m) LLVMDisposeModule(m);
    LLVMOrcDisposeThreadSafeContext(tsc);
    glue_jit_free(g);
    return st;
  }
  if (getenv("PPCC_JIT_DEBUG")) fprintf(stderr, "glue translate %.1f ms\n", dbg_ms() - t0);
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
  if (getenv("PPCC_JIT_DEBUG")) fprintf(stderr, "glue translate+compile %.1f ms\n", dbg_ms() - t0);
  if (st) {
    glue_jit_free(g);
    return st;
  }
  *out = g;
  return PPCC_OK;
}
