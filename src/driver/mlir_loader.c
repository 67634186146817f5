/* The MLIR backend (emitter and JIT) lives in a loadable module,
 * libppcc_mlir.so, opened on first use: loading MLIR and LLVM (their
 * relocations and static initializers) costs ~0.1 s and ~60 MB, which
 * `ppcc --version`, `ppcc report` and interpreter runs never pay. The
 * module takes ppcc's core and runtime from this executable (exported). It
 * is looked up next to the executable first, then in the install libdir. */
#ifdef PPCC_HAVE_MLIR
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "driver.h"
#include "ppcc/emit.h"
#ifdef PPCC_HAVE_JIT
#include "ppcc/jit.h"
#include "ppcc/runtime.h"
#endif

static void *module;

static ppcc_status load_module(ppcc_diag *d) {
  if (module) return PPCC_OK;
  char path[PATH_MAX + 64], first[512] = "";
  ssize_t n = readlink("/proc/self/exe", path, PATH_MAX);
  char *slash = n > 0 ? (path[n] = '\0', strrchr(path, '/')) : NULL;
  if (slash) {
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", PPCC_MLIR_MODULE);
    module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!module && access(path, F_OK) == 0) snprintf(first, sizeof first, "%s", dlerror());
  }
  if (!module) {
    snprintf(path, sizeof path, "%s/%s", PPCC_MLIR_MODULE_DIR, PPCC_MLIR_MODULE);
    module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (module) return PPCC_OK;
  const char *err = first[0] ? first : dlerror();
  return ppcc_error_status(d, PPCC_ERR_INTERNAL, "cannot load the MLIR backend %s: %s", PPCC_MLIR_MODULE,
                           err ? err : "not found");
}

/* The module's function `name` (POSIX's way to turn dlsym's result into a
 * function pointer), or NULL after reporting why. */
static ppcc_status find(const char *name, void *fn_ptr, ppcc_diag *d) {
  ppcc_status st = load_module(d);
  if (st) return st;
  void *p = dlsym(module, name);
  if (!p) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "the MLIR backend %s lacks %s", PPCC_MLIR_MODULE, name);
  memcpy(fn_ptr, &p, sizeof p);
  return PPCC_OK;
}

ppcc_status cli_emit(const ppcc_graph *g, int kind, FILE *out, ppcc_diag *d) {
  ppcc_status (*fn)(const ppcc_graph *, ppcc_emit_kind, FILE *, ppcc_diag *) = NULL;
  ppcc_status st = find("ppcc_emit", &fn, d);
  return st ? st : fn(g, (ppcc_emit_kind)kind, out, d);
}

#ifdef PPCC_HAVE_JIT
ppcc_status cli_jit_compile(const ppcc_graph *g, const ppcc_jit_options *opts, ppcc_jit **out, ppcc_jit_stats *stats,
                            ppcc_diag *d) {
  ppcc_status (*fn)(const ppcc_graph *, const ppcc_jit_options *, ppcc_jit **, ppcc_jit_stats *, ppcc_diag *) = NULL;
  *out = NULL;
  ppcc_status st = find("ppcc_jit_compile", &fn, d);
  return st ? st : fn(g, opts, out, stats, d);
}

ppcc_status cli_jit_execute(void *ctx, const ppcc_graph *g, const struct ppcc_run_data *data,
                            const struct ppcc_exec_options *opts, ppcc_host_tensor *outputs, double *elapsed_ms,
                            ppcc_diag *d) {
  ppcc_status (*fn)(void *, const ppcc_graph *, const struct ppcc_run_data *, const struct ppcc_exec_options *,
                    ppcc_host_tensor *, double *, ppcc_diag *) = NULL;
  ppcc_status st = find("ppcc_jit_execute", &fn, d);
  return st ? st : fn(ctx, g, data, opts, outputs, elapsed_ms, d);
}

void cli_jit_free(ppcc_jit *jit) {
  void (*fn)(ppcc_jit *) = NULL;
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  if (jit && !find("ppcc_jit_free", &fn, &quiet)) fn(jit);
}
#endif
#endif
