/* JIT compilation of the executable form (DESIGN §5): build the module
 * (exec_func.c), verify it, lower it in-process with upstream pass
 * pipelines to the LLVM dialect, compile the shard kernels at -O2 with the
 * MLIR ExecutionEngine and the device functions (call glue) with fast
 * instruction selection (exec_glue_jit.c), and look up one packed entry
 * point per device. The runtime half
 * (src/runtime/jit_*.c) supplies the ABI symbols and runs the devices. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <mlir-c/ExecutionEngine.h>
#include <mlir-c/Pass.h>
#include <mlir-c/RegisterEverything.h>
#include "exec_glue_jit.h"
#include "exec_internal.h"
#include "ppcc/jit.h"
#include "ppcc/runtime.h"
#include "ppcc/test_inject.h"

/* Tensors -> buffers (One-Shot Bufferize, function signatures are memrefs
 * already; eliminate-empty-tensors first, so that a shard kernel computes
 * straight into its result argument, exec_kernel.c), frees of temporaries
 * (below), linalg -> loops, then everything to the LLVM dialect. Math ops
 * without an LLVM intrinsic (erf, tanh) become libm calls resolved in the
 * ppcc process; math-to-libm comes second because it rejects ops it has
 * no function for (rsqrt). Allocations call the generic functions, which
 * the runtime maps to its per-device arenas (src/runtime/jit/jit_arena.c).
 *
 * The stages marked kernels_only lower what only loops hold (linalg, scf,
 * math) or, for eliminate-empty-tensors, only improve kernels: they run
 * with the device functions that hold none of it taken out of the module
 * (plain_device), since walking those, as long as the model, was most of
 * their time. */
typedef struct lowering_stage {
  const char *pipeline;
  bool kernels_only;
} lowering_stage;

static const lowering_stage bufferize_stages[] = {
    {"builtin.module(eliminate-empty-tensors)", true},
    {"builtin.module(one-shot-bufferize{unknown-type-conversion=identity-layout-map})", false},
};
static const char dealloc_pipeline[] = "builtin.module(buffer-deallocation-pipeline)";
static const lowering_stage to_llvm_stages[] = {
    {"builtin.module(convert-bufferization-to-memref)", false},
    {"builtin.module(func.func(convert-linalg-to-loops),convert-scf-to-cf)", true},
    {"builtin.module(expand-strided-metadata,lower-affine)", false},
    {"builtin.module(convert-math-to-llvm,convert-math-to-libm)", true},
    /* allocations to the arenas, before convert-to-llvm's default memref
     * lowering; convert-to-llvm: arith, func, cf in one walk */
    {"builtin.module(finalize-memref-to-llvm{use-generic-functions=true use-aligned-alloc=true},"
     "convert-to-llvm,reconcile-unrealized-casts)",
     false},
};

struct ppcc_jit {
  glue_jit *glue;              /* the device functions (call glue) */
  MlirExecutionEngine kernels; /* the shard kernels they call */
  double kernels_ms;           /* compiling them */
  int n_devices;
  ppcc_jit_entry *entries;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void register_passes_once(void) {
  static bool done = false; /* MLIR's registry is global; idempotent anyway */
  if (!done) mlirRegisterAllPasses();
  done = true;
}

static void append_error(MlirStringRef s, void *user) {
  char *buf = user;
  size_t used = strlen(buf), room = 511 - used, n = s.length < room ? s.length : room;
  memcpy(buf + used, s.data, n);
  buf[used + n] = 0;
}

/* Runs one pipeline on the module. The pass manager does not verify the
 * module after every pass (upstream passes; at 10k ops that was a walk of
 * the whole module per pass, 20 % of the lowering): the built module is
 * verified before (ppcc_jit_compile), and the lowered one after
 * (lower_to_llvm) for models of at most VERIFY_LOWERED_MAX_OPS ops: every
 * test model, so a pass that breaks the module is still caught there,
 * while the 10k-op pipeline does not spend 10 % of its compile on it. */
enum { VERIFY_LOWERED_MAX_OPS = 2000 };
static ppcc_status run_pipeline(ppcc_emit_ctx *c, const char *pipeline) {
  MlirPassManager pm = mlirPassManagerCreate(c->mctx);
  mlirPassManagerEnableVerifier(pm, false);
  char err[512] = "";
  MlirLogicalResult parsed =
      mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm), emit_str(pipeline), append_error, err);
  ppcc_status st = PPCC_OK;
  if (mlirLogicalResultIsFailure(parsed))
    st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "JIT: bad lowering pipeline: %s", err);
  else if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(c->module))))
    st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "JIT: lowering the executable module to LLVM failed (see above)");
  mlirPassManagerDestroy(pm);
  return st;
}

static bool is_named(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

static bool has_prefix(MlirStringRef s, const char *prefix) {
  size_t n = strlen(prefix);
  return s.length >= n && memcmp(s.data, prefix, n) == 0;
}

/* A device function (func.func @device_D) without ops that have regions
 * or belong to the dialects the kernels_only stages lower. */
static bool plain_device(MlirOperation f) {
  if (!is_named(f, "func.func")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(f, emit_str("sym_name"));
  if (mlirAttributeIsNull(a) || !has_prefix(mlirStringAttrGetValue(a), "device_")) return false;
  for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)); !mlirBlockIsNull(b);
       b = mlirBlockGetNextInRegion(b))
    for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
      MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(o));
      if (mlirOperationGetNumRegions(o) > 0 || has_prefix(n, "linalg.") || has_prefix(n, "scf.") ||
          has_prefix(n, "math.") || has_prefix(n, "affine.") || has_prefix(n, "tensor.empty"))
        return false;
    }
  return true;
}

/* Runs the stages in order, each kernels_only one with the plain device
 * functions held outside the module (and put back, in order, after). */
static ppcc_status run_stages(ppcc_emit_ctx *c, const lowering_stage *stages, int n) {
  MlirBlock top = mlirModuleGetBody(c->module);
  MlirModule held = mlirModuleCreateEmpty(mlirLocationUnknownGet(c->mctx));
  MlirBlock hold = mlirModuleGetBody(held);
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < n && !st; i++) {
    MlirOperation anchor = {NULL}; /* the op before the first one taken out */
    bool took = false;
    if (stages[i].kernels_only)
      for (MlirOperation f = mlirBlockGetFirstOperation(top), prev = {NULL}, next; !mlirOperationIsNull(f); f = next) {
        next = mlirOperationGetNextInBlock(f);
        if (plain_device(f)) {
          if (!took) anchor = prev;
          took = true;
          mlirOperationRemoveFromParent(f);
          mlirBlockAppendOwnedOperation(hold, f);
        } else {
          prev = f;
        }
      }
    st = run_pipeline(c, stages[i].pipeline);
    /* back where the first was (device functions are created together) */
    for (MlirOperation f = mlirBlockGetFirstOperation(hold), next; !mlirOperationIsNull(f); f = next) {
      next = mlirOperationGetNextInBlock(f);
      mlirOperationRemoveFromParent(f);
      if (mlirOperationIsNull(anchor))
        mlirBlockInsertOwnedOperation(top, 0, f);
      else
        mlirBlockInsertOwnedOperationAfter(top, anchor, f);
      anchor = f;
    }
  }
  mlirModuleDestroy(held);
  return st;
}

/* The frees. Upstream's buffer-deallocation-pipeline frees a function's
 * buffers at the end of the block that owns them, and its simplification
 * pass compares every pair of buffers freed there: quadratic in a device
 * function, which is one straight block as long as the model (16 s of 31
 * for a 4k-op pipeline). A straight device function gets its frees from
 * exec_dealloc.c instead, linear, each right after the buffer's last use
 * (so that the arena reuses it); the kernels and anything else go through
 * the upstream pipeline. */
static ppcc_status lower_to_llvm(ppcc_emit_ctx *c) {
  register_passes_once();
  ppcc_status st = run_stages(c, bufferize_stages, (int)(sizeof bufferize_stages / sizeof *bufferize_stages));
  if (st) return st;
  MlirOperation *straight = calloc((size_t)(c->g->n_devices > 0 ? c->g->n_devices : 1), sizeof *straight);
  if (!straight) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  int n = exec_take_straight_devices(c->module, straight, c->g->n_devices);
  st = run_pipeline(c, dealloc_pipeline);
  bool freed = exec_put_back_freeing_after_last_use(c->module, straight, n); /* also after a failure: the module owns them */
  free(straight);
  if (!st && !freed) st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = run_stages(c, to_llvm_stages, (int)(sizeof to_llvm_stages / sizeof *to_llvm_stages));
  if (!st && c->g->n_ops <= VERIFY_LOWERED_MAX_OPS && !mlirOperationVerify(mlirModuleGetOperation(c->module)))
    st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "JIT: the module lowered to LLVM does not verify (see above)");
  return st;
}

static void register_runtime_symbols(MlirExecutionEngine engine) {
  for (const ppcc_jit_symbol *s = ppcc_jit_symbols(); s->name; s++)
    mlirExecutionEngineRegisterSymbol(engine, emit_str(s->name), s->address);
}

/* ---- two compilers: kernels optimized, glue compiled fast ----
 * The deduplicated kernels (exec_kernel.c) are few and hold the loops:
 * they are compiled at -O2 by an ExecutionEngine of their own. The device
 * functions are call glue as long as the model; LLVM's optimising code
 * generator is super-linear on them (instruction selection and register
 * allocation over one huge block; the ExecutionEngine's C API has no
 * code generation level) for nothing to gain, so they are compiled with
 * fast instruction selection by an LLJIT (exec_glue_jit.c), which calls
 * the kernels through their addresses in the first. */

static MlirStringRef name_of(MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, emit_str("sym_name"));
  return mlirAttributeIsNull(a) ? (MlirStringRef){"", 0} : mlirStringAttrGetValue(a);
}

static bool is_llvm_func(MlirOperation op) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == 9 && memcmp(s.data, "llvm.func", 9) == 0;
}

static bool has_body(MlirOperation f) { return !mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))); }

/* A shard kernel: k<N>_<op>... (exec_kernel.c's names). */
static bool is_kernel(MlirOperation f) {
  MlirStringRef s = name_of(f);
  return is_llvm_func(f) && has_body(f) && s.length > 2 && s.data[0] == 'k' && s.data[1] >= '0' && s.data[1] <= '9';
}

static bool mentions_device(MlirOperation f) {
  MlirStringRef s = name_of(f);
  for (size_t i = 0; i + 7 <= s.length; i++)
    if (memcmp(s.data + i, "device_", 7) == 0) return true;
  return false;
}

static void set_external(ppcc_emit_ctx *c, MlirOperation f) {
  mlirOperationSetAttributeByName(f, emit_str("linkage"),
                                  mlirAttributeParseGet(c->mctx, emit_str("#llvm.linkage<external>")));
}

/* Blocks of a body use each other's values: the region is destroyed as a
 * whole (which drops every reference first), not block by block. */
static void drop_body(MlirOperation f) {
  MlirRegion body = mlirRegionCreate();
  mlirRegionTakeBody(body, mlirOperationGetRegion(f, 0));
  mlirRegionDestroy(body);
}

/* The kernels module: a copy of the lowered module without the device
 * functions, its kernels exported. */
static MlirModule kernels_module(ppcc_emit_ctx *c) {
  /* The device functions are taken out while the module is copied: they
   * are most of it (they grow with the model, the kernels do not). */
  MlirBlock top = mlirModuleGetBody(c->module);
  MlirModule held = mlirModuleCreateEmpty(mlirLocationUnknownGet(c->mctx));
  for (MlirOperation f = mlirBlockGetFirstOperation(top), next; !mlirOperationIsNull(f); f = next) {
    next = mlirOperationGetNextInBlock(f);
    if (is_llvm_func(f) && mentions_device(f)) {
      mlirOperationRemoveFromParent(f);
      mlirBlockAppendOwnedOperation(mlirModuleGetBody(held), f);
    }
  }
  MlirOperation copy = mlirOperationClone(mlirModuleGetOperation(c->module));
  for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(held)), next; !mlirOperationIsNull(f); f = next) {
    next = mlirOperationGetNextInBlock(f);
    mlirOperationRemoveFromParent(f);
    mlirBlockAppendOwnedOperation(top, f);
  }
  mlirModuleDestroy(held);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(copy, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f))
    if (is_kernel(f)) set_external(c, f);
  return mlirModuleFromOperation(copy);
}

static ppcc_status compile_kernels(ppcc_emit_ctx *c, int level, ppcc_jit *jit) {
  MlirModule k = kernels_module(c);
  jit->kernels = mlirExecutionEngineCreate(k, level, 0, NULL, false);
  mlirModuleDestroy(k); /* the engine keeps its own LLVM IR */
  if (mlirExecutionEngineIsNull(jit->kernels))
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "JIT: the ExecutionEngine could not compile the kernels");
  register_runtime_symbols(jit->kernels);
  return PPCC_OK;
}

static ppcc_status codegen(ppcc_emit_ctx *c, const ppcc_jit_options *o, ppcc_jit *jit) {
  mlirRegisterAllLLVMTranslations(c->mctx);
  /* -O2 by default: -O3 compiled tiny_llama 5x slower (12 s) for no gain
   * at these sizes (GEMMs run in OpenBLAS anyway). */
  int level = o && o->opt_level > 0 && o->opt_level <= 3 ? o->opt_level : 2;
  double t0 = now_ms();
  ppcc_status st = compile_kernels(c, level, jit);
  if (st) return st;
  /* The kernels' addresses, then their bodies dropped from the glue
   * module (declarations), then the glue engine with them registered. */
  MlirBlock body = mlirModuleGetBody(c->module);
  int n = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f))
    n += is_kernel(f);
  char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
  void **addresses = calloc((size_t)(n > 0 ? n : 1), sizeof *addresses);
  if (!names || !addresses) st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  int k = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !st && !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (!is_kernel(f)) continue;
    MlirStringRef s = name_of(f);
    names[k] = malloc(s.length + 1);
    if (!names[k]) {
      st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
      break;
    }
    memcpy(names[k], s.data, s.length);
    names[k][s.length] = 0;
    addresses[k] = mlirExecutionEngineLookup(jit->kernels, emit_str(names[k]));
    if (!addresses[k]) st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "JIT: kernel %s was not compiled", names[k]);
    drop_body(f);
    set_external(c, f);
    k++;
  }
  jit->kernels_ms = now_ms() - t0; /* the lookups compiled the kernels */
  if (!st) st = glue_jit_compile(c->module, jit->n_devices, k, (const char *const *)names, addresses, &jit->glue,
                                 jit->entries, c->d);
  for (int i = 0; i < k; i++) free(names[i]);
  free(names);
  free(addresses);
  return st;
}

/* ---- the compiler's pages, dropped after a compile ----
 * Compiling touches ~100 MiB of LLVM's and MLIR's code (their libraries'
 * text), which stays resident for the whole run while the compiled code
 * never calls it: a fifth of generate's peak RSS on a 400 MB model. The
 * read-only mappings of those libraries (the loaded objects named
 * libLLVM* and libMLIR*) are dropped with MADV_DONTNEED where they hold no
 * private copies (smaps Anonymous 0: every resident page is the file's
 * own): the kernel maps the pages again from the page cache if they run
 * again (the next compile, destruction). Writable mappings and ones with
 * relocated (private) pages are left alone. */
typedef struct compiler_files {
  int n;
  char path[16][PATH_MAX];
} compiler_files;

static int note_compiler_file(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  compiler_files *f = user;
  const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL, *base = slash ? slash + 1 : "";
  if (f->n < 16 && (strncmp(base, "libLLVM", 7) == 0 || strncmp(base, "libMLIR", 7) == 0) &&
      realpath(info->dlpi_name, f->path[f->n]))
    f->n++;
  return 0;
}

static bool is_compiler_file(const compiler_files *f, const char *path) {
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->path[i], path) == 0) return true;
  return false;
}

static void drop_mapping(uintptr_t start, uintptr_t end, bool eligible, long anonymous_kb) {
  if (eligible && anonymous_kb == 0 && end > start) madvise((void *)start, end - start, MADV_DONTNEED);
}

static void drop_compiler_pages(void) {
  compiler_files *files = calloc(1, sizeof *files);
  if (files) dl_iterate_phdr(note_compiler_file, files);
  FILE *f = files && files->n > 0 ? fopen("/proc/self/smaps", "r") : NULL;
  char line[PATH_MAX + 256];
  uintptr_t start = 0, end = 0;
  bool eligible = false;
  long anonymous_kb = -1;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &path_at) == 3 && path_at > 0) {
      drop_mapping(start, end, eligible, anonymous_kb);
      char *path = line + path_at;
      path[strcspn(path, "\n")] = 0;
      start = a, end = b, anonymous_kb = -1;
      eligible = perms[1] != 'w' && perms[3] == 'p' && is_compiler_file(files, path);
    } else if (strncmp(line, "Anonymous:", 10) == 0) {
      anonymous_kb = strtol(line + 10, NULL, 10);
    }
  }
  drop_mapping(start, end, eligible, anonymous_kb);
  if (f) fclose(f);
  free(files);
}

ppcc_status ppcc_jit_compile(const ppcc_graph *g, const ppcc_jit_options *opts, ppcc_jit **out, ppcc_jit_stats *stats,
                             ppcc_diag *d) {
  *out = NULL;
  ppcc_jit *jit = calloc(1, sizeof *jit);
  if (jit) jit->entries = calloc((size_t)(g->n_devices > 0 ? g->n_devices : 1), sizeof *jit->entries);
  if (!jit || !jit->entries) {
    ppcc_jit_free(jit);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  jit->n_devices = g->n_devices;
  ppcc_jit_stats t = {0};
  double t0 = now_ms(), cpu0 = cpu_ms();
  ppcc_emit_ctx c;
  ppcc_status st = emit_ctx_init(&c, g, PPCC_EMIT_MLIR_EXEC, d);
  c.exec_linalg_matmul = opts && opts->linalg_matmul;
  if (!st) st = exec_build_module(&c);
  if (!st && !mlirOperationVerify(mlirModuleGetOperation(c.module)))
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "the executable MLIR module does not verify (see above)");
  double t1 = now_ms();
  if (!st) st = lower_to_llvm(&c);
  double t2 = now_ms();
  if (!st) st = codegen(&c, opts, jit);
  double t3 = now_ms(); /* lookups compiled the code: LLJIT materializes on first lookup */
  emit_ctx_free(&c);
  drop_compiler_pages();
  t = (ppcc_jit_stats){t1 - t0, t2 - t1, t3 - t2, jit->kernels_ms, cpu_ms() - cpu0};
  if (stats) *stats = t;
  if (st) {
    ppcc_jit_free(jit);
    return st;
  }
  *out = jit;
  return PPCC_OK;
}

void ppcc_jit_free(ppcc_jit *jit) {
  if (!jit) return;
  glue_jit_free(jit->glue);
  if (!mlirExecutionEngineIsNull(jit->kernels)) mlirExecutionEngineDestroy(jit->kernels);
  free(jit->entries);
  free(jit);
}

ppcc_jit_entry ppcc_jit_device_entry(const ppcc_jit *jit, int device) {
  return device >= 0 && device < jit->n_devices ? jit->entries[device] : NULL;
}

/* --check's divergence search (opts->capture): the device functions of
 * `g` keep only its outputs, so a copy of g whose outputs are every op
 * result is compiled and run, and every shard it writes is captured. */
static ppcc_status capture_execute(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_exec_options *opts,
                                   double *elapsed_ms, ppcc_diag *d) {
  if (ppcc_test_inject("jit-no-capture", NULL, 0))
    return ppcc_error(d, "PPCC_TEST_INJECT=jit-no-capture: the JIT's capture run is disabled");
  ppcc_graph cg = *g;
  int *outs = malloc(sizeof(int) * (size_t)(g->n_values > 0 ? g->n_values : 1));
  if (!outs) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  cg.n_outputs = 0;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_RESULT && g->values[v].def_op >= 0) outs[cg.n_outputs++] = v;
  cg.outputs = outs;
  ppcc_host_tensor *results = calloc((size_t)(cg.n_outputs > 0 ? cg.n_outputs : 1), sizeof *results);
  ppcc_jit *jit = NULL;
  ppcc_status st = results ? ppcc_jit_compile(&cg, NULL, &jit, NULL, d)
                           : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = ppcc_jit_run_devices(&cg, jit->entries, data, opts, results, elapsed_ms, d);
  for (int k = 0; results && k < cg.n_outputs; k++) ppcc_host_tensor_free(&results[k]);
  free(results);
  ppcc_jit_free(jit);
  free(outs);
  return st;
}

ppcc_status ppcc_jit_execute(void *ctx, const ppcc_graph *g, const ppcc_run_data *data, const ppcc_exec_options *opts,
                             ppcc_host_tensor *outputs, double *elapsed_ms, ppcc_diag *d) {
  const ppcc_jit *jit = ctx;
  if (opts->reference) return ppcc_execute(g, data, opts, outputs, elapsed_ms, d); /* the interpreter is the reference */
  if (opts->capture) {
    for (int k = 0; k < g->n_outputs; k++) memset(&outputs[k], 0, sizeof outputs[k]);
    return capture_execute(g, data, opts, elapsed_ms, d);
  }
  if (g->n_devices != jit->n_devices)
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "JIT compiled for %d devices, graph has %d", jit->n_devices,
                             g->n_devices);
  return ppcc_jit_run_devices(g, jit->entries, data, opts, outputs, elapsed_ms, d);
}
