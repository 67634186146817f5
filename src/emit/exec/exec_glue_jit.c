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

/* Most operations in one basic block of the glue (see split_long_blocks). */
enum { BLOCK_OPS = 64 };

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

/* ---- packed entry points ----
 * The lowered device_D takes every memref descriptor expanded into its
 * fields (allocated and aligned pointers, offset, sizes, strides): 7
 * arguments per weight matrix, so a device holding thousands of weights
 * has tens of thousands of formal arguments, which instruction selection
 * lowers in one super-linear DAG. The packed entry
 * `_mlir__mlir_ciface_device_D(void **args)` takes the body of device_D
 * instead and loads each field from the descriptor args[k] points to (the
 * ABI of include/ppcc/jit.h): one argument, plain loads FastISel selects.
 * device_D and its C wrapper are then deleted. */

/* The descriptor arguments of f: in its parameter list, each starts with
 * two pointers followed by 1 + 2 * rank i64. Sets first[k] and rank[k];
 * returns how many (-1 if the list does not have that form). */
static int descriptors(LLVMValueRef f, int *first, int *rank, int cap) {
  LLVMTypeRef fty = LLVMGlobalGetValueType(f);
  unsigned n = LLVMCountParams(f);
  int k = 0;
  for (unsigned i = 0; i < n;) {
    LLVMValueRef p0 = LLVMGetParam(f, i), p1 = i + 1 < n ? LLVMGetParam(f, i + 1) : NULL;
    if (k == cap || !p1 || LLVMGetTypeKind(LLVMTypeOf(p0)) != LLVMPointerTypeKind ||
        LLVMGetTypeKind(LLVMTypeOf(p1)) != LLVMPointerTypeKind)
      return -1;
    unsigned j = i + 2;
    while (j < n && LLVMGetTypeKind(LLVMTypeOf(LLVMGetParam(f, j))) == LLVMIntegerTypeKind) j++;
    if ((j - i - 2) % 2 != 1) return -1;
    first[k] = (int)i;
    rank[k++] = (int)(j - i - 3) / 2;
    i = j;
  }
  (void)fty;
  return k;
}

static LLVMValueRef load_field(LLVMBuilderRef b, LLVMTypeRef desc_ty, LLVMValueRef desc, LLVMTypeRef ty, int field,
                               int index, LLVMContextRef ctx) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef at[3] = {LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, (unsigned)field, 0),
                        LLVMConstInt(i32, (unsigned)(index < 0 ? 0 : index), 0)};
  return LLVMBuildLoad2(b, ty, LLVMBuildGEP2(b, desc_ty, desc, at, index < 0 ? 2 : 3, ""), "");
}

/* Moves device's body into the packed entry `name`, its parameters loaded
 * from the descriptors. */
static ppcc_status make_packed_entry(LLVMModuleRef m, LLVMValueRef f, LLVMValueRef ciface, const char *name,
                                     ppcc_diag *d) {
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
  unsigned n = LLVMCountParams(f);
  int *first = malloc(sizeof(int) * (n + 1)), *rank = malloc(sizeof(int) * (n + 1));
  if (!first || !rank) {
    free(first);
    free(rank);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  int k = descriptors(f, first, rank, (int)n + 1);
  LLVMBasicBlockRef entry = LLVMGetFirstBasicBlock(f);
  if (k < 0 || !entry) {
    free(first);
    free(rank);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: a device function has arguments that are not memrefs");
  }
  LLVMValueRef w = LLVMAddFunction(m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0));
  /* f's blocks, in order, into w: removed and appended, which makes w
   * their parent (LLVMMoveBasicBlockAfter to another function's block
   * left f as the parent they report, so that LLVM took w's allocas for
   * dynamic ones and FastISel did not select them). */
  for (LLVMBasicBlockRef bb = entry, next; bb; bb = next) {
    next = LLVMGetNextBasicBlock(bb);
    LLVMRemoveBasicBlockFromParent(bb);
    LLVMAppendExistingBasicBlock(w, bb);
  }
  /* The loads go in blocks of their own before the body, at most
   * BLOCK_OPS descriptors each: in the body's first block, an aggregate
   * FastISel leaves to SelectionDAG would take them all along. */
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMBasicBlockRef loads = LLVMInsertBasicBlockInContext(ctx, entry, "");
  LLVMPositionBuilderAtEnd(b, loads);
  LLVMValueRef args = LLVMGetParam(w, 0);
  for (int j = 0; j < k; j++) {
    if (j > 0 && j % BLOCK_OPS == 0) {
      LLVMBasicBlockRef next = LLVMInsertBasicBlockInContext(ctx, entry, "");
      LLVMBuildBr(b, next);
      LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMTypeRef arr = LLVMArrayType2(i64, (uint64_t)rank[j]);
    LLVMTypeRef fields[5] = {ptr, ptr, i64, arr, arr};
    LLVMTypeRef desc_ty = LLVMStructTypeInContext(ctx, fields, rank[j] > 0 ? 5 : 3, 0);
    LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)j, 0);
    LLVMValueRef slot = LLVMBuildLoad2(b, ptr, LLVMBuildGEP2(b, ptr, args, &idx, 1, ""), "");
    LLVMValueRef desc = LLVMBuildLoad2(b, ptr, slot, "");
    for (int q = 0; q < 3 + 2 * rank[j]; q++) {
      LLVMValueRef param = LLVMGetParam(f, (unsigned)(first[j] + q));
      if (!LLVMGetFirstUse(param)) continue;
      int field = q < 3 ? q : q < 3 + rank[j] ? 3 : 4, index = q < 3 ? -1 : (q - 3) % rank[j];
      LLVMReplaceAllUsesWith(param, load_field(b, desc_ty, desc, q < 2 ? ptr : i64, field, index, ctx));
    }
  }
  LLVMBuildBr(b, entry);
  LLVMDisposeBuilder(b);
  free(first);
  free(rank);
  LLVMDeleteFunction(ciface); /* its call of f first */
  /* f, now a declaration nothing uses, stays */
  return PPCC_OK;
}

/* Packed entries of device_D, D < n_devices. */
static ppcc_status add_entries(LLVMModuleRef m, int n_devices, ppcc_diag *d) {
  ppcc_status st = PPCC_OK;
  for (int dev = 0; dev < n_devices && !st; dev++) {
    char name[48], ciface[48], packed[64];
    snprintf(name, sizeof name, "device_%d", dev);
    snprintf(ciface, sizeof ciface, "_mlir_ciface_device_%d", dev);
    snprintf(packed, sizeof packed, "_mlir_%s", ciface);
    LLVMValueRef f = LLVMGetNamedFunction(m, name), c = LLVMGetNamedFunction(m, ciface);
    if (!f || !c) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: no function %s in the lowered module", name);
    st = make_packed_entry(m, f, c, packed, d);
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

/* glue_flatten on the packed entries. */
static ppcc_status flatten_entries(LLVMModuleRef m, int n_devices, ppcc_diag *d) {
  LLVMValueRef *entries = calloc((size_t)(n_devices > 0 ? n_devices : 1), sizeof *entries);
  if (!entries) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  int n = 0;
  for (int dev = 0; dev < n_devices; dev++) {
    char name[64];
    snprintf(name, sizeof name, "_mlir__mlir_ciface_device_%d", dev);
    LLVMValueRef f = LLVMGetNamedFunction(m, name);
    if (f) entries[n++] = f;
  }
  bool ok = glue_flatten(m, entries, n);
  free(entries);
  return ok ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
}

/* The glue is compiled for the small code model, where X86 FastISel
 * selects calls and global addresses (with the JIT's default, the large
 * model, it selects neither and SelectionDAG took over every call). Calls
 * to the kernels and the runtime, wherever they are, go through the
 * linker's stubs; data is addressed PC-relative, which is safe for the
 * module's own constants (loaded with its code) but not for data defined
 * elsewhere: a module that declares such data keeps the large model. */
static bool declares_data(LLVMModuleRef m) {
  for (LLVMValueRef v = LLVMGetFirstGlobal(m); v; v = LLVMGetNextGlobal(v))
    if (LLVMIsDeclaration(v)) return true;
  return false;
}

static LLVMTargetMachineRef fast_target_machine(bool small_code, ppcc_diag *d) {
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
                                 small_code ? LLVMCodeModelSmall : LLVMCodeModelJITDefault);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    if (!tm) ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: LLVM could not create a target machine for %s", triple);
  }
  LLVMDisposeMessage(triple);
  return tm;
}

static ppcc_status create_lljit(glue_jit *g, bool small_code, ppcc_diag *d) {
  LLVMTargetMachineRef tm = fast_target_machine(small_code, d);
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
  ppcc_status st = PPCC_OK;
  split_long_blocks(module);
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMModuleRef m = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(module), LLVMOrcThreadSafeContextGetContext(tsc));
  if (!m) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT: translating the device functions to LLVM IR failed");
  if (!st) st = create_lljit(g, !declares_data(m), d);
  if (!st) st = define_symbols(g, n_symbols, names, addresses, d);
  if (!st) {
    LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(g->lljit));
    LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(g->lljit));
    st = add_entries(m, n_devices, d);
    if (!st) st = flatten_entries(m, n_devices, d);
    if (!st) st = fold_descriptors(m, d);
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
