/* JIT benchmark (DESIGN §5, §7):
 *  (a) f32 matmul 1024x1024x1024, one thread: the JIT-compiled device
 *      function with linalg.matmul lowered to loops (pure MLIR codegen),
 *      the same with the default ppcc_rt_matmul call (OpenBLAS through the
 *      runtime ABI), a naive C triple loop, and OpenBLAS called directly;
 *  (c) JIT compile time (emit, lowering, LLVM codegen) for ppffn-sized and
 *      64-block pipeline FFN models (tools/pipeline_model.h), plus any
 *      model files given on the command line.
 *
 *   bench_jit [--size N] [--opt L] [--no-matmul] [MODEL.json...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../tools/pipeline_model.h"
#include "ppcc/frontend.h"
#include "ppcc/jit.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ppcc_graph *compile_text(const char *json, ppcc_diag *d) {
  ppcc_graph *g = ppcc_load_model_string(json, strlen(json), d);
  if (g && ppcc_run_passes(g, NULL, NULL, d) != PPCC_OK) {
    ppcc_graph_free(g);
    g = NULL;
  }
  return g;
}

/* ---- (a) matmul ---- */

static ppcc_graph *matmul_model(int n, ppcc_diag *d) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"ppcc\": 1, \"name\": \"mm\", \"devices\": 1,"
           " \"params\": [{\"name\": \"b\", \"dtype\": \"f32\", \"shape\": [%d, %d]}],"
           " \"inputs\": [{\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [%d, %d]}],"
           " \"ops\": [{\"op\": \"matmul\", \"in\": [\"a\", \"b\"], \"out\": [\"c\"]}], \"outputs\": [\"c\"]}",
           n, n, n, n);
  return compile_text(json, d);
}

/* A rank-2 memref descriptor over a contiguous n x n buffer. */
typedef struct desc2 {
  void *allocated, *aligned;
  int64_t offset, sizes[2], strides[2];
} desc2;

static desc2 square(float *p, int n) { return (desc2){p, p, 0, {n, n}, {n, 1}}; }

/* Best-of-reps seconds of one call of the device function: args (b, a, c)
 * in the ABI order (params and inputs by value index, then outputs). */
static double time_jit(const ppcc_jit_options *jo, int n, float *a, float *b, float *c, int reps, double *compile_s) {
  ppcc_diag d;
  ppcc_diag_init(&d, "bench", stderr);
  ppcc_graph *g = matmul_model(n, &d);
  ppcc_jit *jit = NULL;
  ppcc_jit_stats st;
  if (!g || ppcc_jit_compile(g, jo, &jit, &st, &d) != PPCC_OK) {
    ppcc_graph_free(g);
    return -1;
  }
  *compile_s = (st.emit_ms + st.lower_ms + st.codegen_ms) * 1e-3;
  bool a_first = ppcc_find_value(g, "a") < ppcc_find_value(g, "b");
  desc2 da = square(a, n), db = square(b, n), dc = square(c, n);
  void *pa = &da, *pb = &db, *pc = &dc;
  void *args[3] = {a_first ? &pa : &pb, a_first ? &pb : &pa, &pc};
  ppcc_jit_entry entry = ppcc_jit_device_entry(jit, 0);
  double best = 1e30;
  if (reps > 1) entry(args); /* warm-up: first touch of the temporaries */
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    entry(args);
    double t = now() - t0;
    if (t < best) best = t;
  }
  ppcc_jit_free(jit);
  ppcc_graph_free(g);
  return best;
}

static void naive_matmul(int n, const float *a, const float *b, float *c) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float s = 0;
      for (int k = 0; k < n; k++) s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
      c[(size_t)i * n + j] = s;
    }
}

static double max_diff(int n, const float *x, const float *y) {
  double m = 0;
  for (size_t i = 0; i < (size_t)n * n; i++) {
    double e = x[i] > y[i] ? x[i] - y[i] : y[i] - x[i];
    if (e > m) m = e;
  }
  return m;
}

static void bench_matmul(int n) {
  size_t count = (size_t)n * n;
  float *a = malloc(count * 4), *b = malloc(count * 4), *c = malloc(count * 4), *ref = malloc(count * 4);
  if (!a || !b || !c || !ref) return;
  for (size_t i = 0; i < count; i++) {
    a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
  }
  double flops = 2.0 * n * n * n;
  ppcc_rt_set_kernel_threads(1);
  printf("(a) f32 matmul %dx%dx%d, 1 thread, best of runs (GFLOP/s)\n", n, n, n);

  double t0 = now();
  naive_matmul(n, a, b, ref);
  double naive = now() - t0;
  printf("  naive C triple loop (i,j,k)           %8.2f GFLOP/s  (%.3f s)\n", flops / naive * 1e-9, naive);

  double blas = 1e30; /* best of 10 after a warm-up call (thread pool, pages) */
  ppcc_rt_sgemm(n, n, n, a, b, false, c);
  for (int r = 0; r < 10; r++) {
    t0 = now();
    ppcc_rt_sgemm(n, n, n, a, b, false, c);
    double t = now() - t0;
    if (t < blas) blas = t;
  }
  printf("  %-36s  %8.2f GFLOP/s  (max diff %.2g)\n", ppcc_rt_have_blas() ? "OpenBLAS (cblas_sgemm) direct" : "portable C sgemm (no OpenBLAS)",
         flops / blas * 1e-9, max_diff(n, c, ref));

  const struct {
    const char *name;
    ppcc_jit_options o;
    int reps;
  } variants[] = {
      {"JIT linalg.matmul -> loops, -O3", {.linalg_matmul = true, .opt_level = 3}, 1},
      {"JIT default: ppcc_rt_matmul (OpenBLAS)", {.opt_level = 2}, 10},
  };
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    double compile_s = 0;
    memset(c, 0, count * 4);
    double t = time_jit(&variants[v].o, n, a, b, c, variants[v].reps, &compile_s);
    if (t < 0) {
      printf("  %-36s  failed\n", variants[v].name);
      continue;
    }
    printf("  %-36s  %8.2f GFLOP/s  (%.1f%% of the BLAS line, max diff %.2g, compiled in %.0f ms)\n", variants[v].name,
           flops / t * 1e-9, 100.0 * blas / t, max_diff(n, c, ref), compile_s * 1e3);
  }
  free(a);
  free(b);
  free(c);
  free(ref);
}

/* ---- (c) compile time ---- */

static ppcc_jit_options compile_options; /* --opt L */

static void report_compile(const char *label, ppcc_graph *g) {
  ppcc_diag d;
  ppcc_diag_init(&d, label, stderr);
  ppcc_jit *jit = NULL;
  ppcc_jit_stats st;
  clock_t cpu0 = clock(); /* CPU time too: wall time suffers on a shared machine */
  if (!g || ppcc_jit_compile(g, &compile_options, &jit, &st, &d) != PPCC_OK) {
    printf("  %-34s  failed\n", label);
    return;
  }
  double cpu_ms = (double)(clock() - cpu0) * 1e3 / CLOCKS_PER_SEC;
  printf("  %-34s %4d ops %2d devices: wall %7.1f ms, CPU %7.1f ms  (emit %.1f, lower %.1f, LLVM %.1f)\n", label,
         g->n_ops, g->n_devices, st.emit_ms + st.lower_ms + st.codegen_ms, cpu_ms, st.emit_ms, st.lower_ms,
         st.codegen_ms);
  ppcc_jit_free(jit);
}

static void compile_pipeline(long blocks, long tp, long pp) {
  pipeline_config cfg = {.blocks = blocks, .tp = tp, .pp = pp, .hidden = 64, .ffn = 256, .batch = 8};
  char *json = NULL, label[64];
  size_t len = 0;
  FILE *mem = open_memstream(&json, &len);
  if (!mem) return;
  pipeline_write_model(mem, &cfg);
  fclose(mem);
  ppcc_diag d;
  ppcc_diag_init(&d, "pipeline", stderr);
  ppcc_graph *g = compile_text(json, &d);
  snprintf(label, sizeof label, "pipeline FFN %ld blocks tp%ld pp%ld", blocks, tp, pp);
  report_compile(label, g);
  ppcc_graph_free(g);
  free(json);
}

int main(int argc, char **argv) {
  int n = 1024, first_model = 1;
  bool matmul = true;
  for (; first_model < argc && argv[first_model][0] == '-'; first_model++) {
    const char *opt = argv[first_model];
    if (strcmp(opt, "--no-matmul") == 0) {
      matmul = false;
    } else if (first_model + 1 < argc && strcmp(opt, "--size") == 0) {
      n = atoi(argv[++first_model]);
    } else if (first_model + 1 < argc && strcmp(opt, "--opt") == 0) {
      compile_options.opt_level = atoi(argv[++first_model]);
    } else {
      fprintf(stderr, "usage: bench_jit [--size N] [--opt L] [--no-matmul] [MODEL.json...]\n");
      return 2;
    }
  }
  if (n < 1 || n > 8192) {
    fprintf(stderr, "bench_jit: --size must be in [1, 8192]\n");
    return 2;
  }
  if (matmul) bench_matmul(n);
  printf("(c) JIT compile time, LLVM -O%d\n", compile_options.opt_level ? compile_options.opt_level : 2);
  for (int i = first_model; i < argc; i++) {
    ppcc_diag d;
    ppcc_diag_init(&d, argv[i], stderr);
    ppcc_graph *g = ppcc_load_model_file(argv[i], &d);
    if (g && ppcc_run_passes(g, NULL, NULL, &d) != PPCC_OK) {
      ppcc_graph_free(g);
      g = NULL;
    }
    report_compile(argv[i], g);
    ppcc_graph_free(g);
  }
  compile_pipeline(4, 2, 2);
  compile_pipeline(64, 2, 2);
  compile_pipeline(64, 2, 4);
  return 0;
}
