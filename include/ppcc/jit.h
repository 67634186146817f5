/* The JIT backend of `ppcc run` (DESIGN §5, §7): the executable MLIR form
 * (--emit=mlir-exec), lowered to LLVM in-process and compiled (the shard
 * kernels at -O2 by the MLIR ExecutionEngine, the device functions that
 * call them at CodeGenLevelNone by an ORC LLJIT), then run with one
 * OpenMP thread per device.
 *
 * Two halves:
 *   - src/emit/exec/exec_jit.c (ppcc_emit, MLIR): ppcc_jit_compile builds the
 *     module, lowers and JIT-compiles it, and hands back one packed entry
 *     point per device;
 *   - src/runtime/jit_*.c (ppcc_runtime, plain C): the memref-descriptor
 *     adapters of the ppcc_rt_* ABI that the JIT-compiled code calls, and
 *     the executor that prepares the shard buffers and runs the devices.
 *
 * Device function ABI. `func.func @device_D` has one memref argument per
 * shard it holds, in this order:
 *   1. every shard on D of every param and input, by value index then shard;
 *   2. every shard on D of every graph output, in g->outputs order then shard
 *      (written by the function).
 * Buffers are contiguous row-major with the shard's local shape. With
 * llvm.emit_c_interface the packed entry takes a void*[] whose k-th entry
 * points to a pointer to the k-th memref descriptor. */
#ifndef PPCC_JIT_H
#define PPCC_JIT_H
#include <stdbool.h>
#include <stdint.h>
#include "ppcc/graph.h"

/* A packed entry point: `_mlir__mlir_ciface_device_D`. */
typedef void (*ppcc_jit_entry)(void **args);

typedef struct ppcc_jit_options {
  /* f32 2-D matmul/linear as linalg.matmul (lowered to loops) instead of a
   * call to ppcc_rt_matmul (OpenBLAS); for the benchmark. */
  bool linalg_matmul;
  int opt_level; /* LLVM -O level 1..3; 0: the default, 2 */
} ppcc_jit_options;

/* ---- runtime half (ppcc_runtime) ---- */

/* One ABI function the JIT-compiled code may call: the C symbol name the
 * lowered code references and its address. */
typedef struct ppcc_jit_symbol {
  const char *name;
  void *address;
} ppcc_jit_symbol;
/* The table of every adapter (NULL-terminated). */
const ppcc_jit_symbol *ppcc_jit_symbols(void);

struct ppcc_run_data;
struct ppcc_exec_options;
struct ppcc_host_tensor;
/* Runs entries[d] for every device d of g on one OpenMP thread each and
 * assembles the outputs (same contract as ppcc_execute). */
ppcc_status ppcc_jit_run_devices(const ppcc_graph *g, const ppcc_jit_entry *entries,
                                 const struct ppcc_run_data *data, const struct ppcc_exec_options *opts,
                                 struct ppcc_host_tensor *outputs, double *elapsed_ms, ppcc_diag *d);

/* ---- MLIR half (ppcc_emit) ---- */

typedef struct ppcc_jit ppcc_jit;

typedef struct ppcc_jit_stats {
  double emit_ms, lower_ms, codegen_ms; /* build + verify, pass pipeline, LLVM */
  double kernels_ms;                    /* of codegen: the -O2 kernels (the rest: call glue) */
  double cpu_ms;                        /* process CPU time of the whole compile */
} ppcc_jit_stats;

/* Emits, lowers and compiles the executable form of g (after all passes). */
ppcc_status ppcc_jit_compile(const ppcc_graph *g, const ppcc_jit_options *opts, ppcc_jit **out,
                             ppcc_jit_stats *stats, ppcc_diag *d);
void ppcc_jit_free(ppcc_jit *jit);
/* The packed entry of device `device`. */
ppcc_jit_entry ppcc_jit_device_entry(const ppcc_jit *jit, int device);
/* ppcc_execute's contract with the JIT-compiled device functions; ctx is the
 * ppcc_jit (usable as ppcc_run_options.execute). */
ppcc_status ppcc_jit_execute(void *ctx, const ppcc_graph *g, const struct ppcc_run_data *data,
                             const struct ppcc_exec_options *opts, struct ppcc_host_tensor *outputs,
                             double *elapsed_ms, ppcc_diag *d);

#endif
