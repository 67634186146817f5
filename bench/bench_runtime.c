/* Runtime benchmark (not a test):
 *  (a) f32 matmul 1024^3, one core: naive triple loop, our portable
 *      blocked kernel, the runtime's matmul kernel (ppcc_rt_sgemm: calls
 *      OpenBLAS cblas_sgemm when built with it) and OpenBLAS directly;
 *  (b) a tensor-parallel FFN (x[256,1024] . up[1024,2048] -> gelu ->
 *      down[2048,1024] -> all_reduce): TP=2 on 2 devices (one core each)
 *      against TP=1 on one device with one core, and with every core.
 *
 *   bench_runtime [--quick] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"
#ifdef PPCC_HAVE_OPENBLAS
#include <cblas.h>
#endif

typedef void (*gemm_fn)(int64_t n, const float *a, const float *b, float *c);

static void naive(int64_t n, const float *a, const float *b, float *c) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      float s = 0;
      for (int64_t k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}

static void portable(int64_t n, const float *a, const float *b, float *c) { ppcc_rt_sgemm_portable(n, n, n, a, b, false, c); }
static void runtime_kernel(int64_t n, const float *a, const float *b, float *c) { ppcc_rt_sgemm(n, n, n, a, b, false, c); }
#ifdef PPCC_HAVE_OPENBLAS
static void openblas(int64_t n, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c, (int)n);
}
#endif

/* Best GFLOP/s over `reps` runs. */
static double gflops(gemm_fn f, int64_t n, const float *a, const float *b, float *c, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = omp_get_wtime();
    f(n, a, b, c);
    t = omp_get_wtime() - t;
    if (t < best) best = t;
  }
  return 2.0 * (double)n * (double)n * (double)n / best / 1e9;
}

static void bench_matmul(bool quick) {
  int64_t n = 1024;
  float *a = malloc(sizeof(float) * (size_t)(n * n)), *b = malloc(sizeof(float) * (size_t)(n * n));
  float *c = malloc(sizeof(float) * (size_t)(n * n));
  for (int64_t j = 0; j < n * n; j++) a[j] = (float)(j % 13) * 0.1f, b[j] = (float)(j % 7) * 0.2f;
  ppcc_rt_set_kernel_threads(1);
  printf("(a) f32 matmul %lldx%lldx%lld, 1 core\n", (long long)n, (long long)n, (long long)n);
  double g_naive = gflops(naive, n, a, b, c, 1);
  double g_port = gflops(portable, n, a, b, c, quick ? 1 : 3);
  double g_rt = gflops(runtime_kernel, n, a, b, c, quick ? 1 : 3);
  printf("  naive triple loop          %7.2f GFLOP/s\n", g_naive);
  printf("  ppcc portable C kernel     %7.2f GFLOP/s\n", g_port);
  printf("  ppcc runtime matmul kernel %7.2f GFLOP/s (%s)\n", g_rt,
         ppcc_rt_have_blas() ? "calls OpenBLAS cblas_sgemm" : "portable C kernel");
#ifdef PPCC_HAVE_OPENBLAS
  double g_blas = gflops(openblas, n, a, b, c, quick ? 1 : 3);
  printf("  OpenBLAS cblas_sgemm       %7.2f GFLOP/s\n", g_blas);
  printf("  runtime kernel / OpenBLAS  %6.0f%%   portable / OpenBLAS %3.0f%%\n\n", 100 * g_rt / g_blas,
         100 * g_port / g_blas);
#endif
  free(a), free(b), free(c);
}

static const char *ffn_json =
  "{\"ppcc\":1,\"name\":\"ffn_tp%d\",\"devices\":%d,"
  "\"params\":[{\"name\":\"up\",\"dtype\":\"f32\",\"shape\":[1024,2048]%s},"
  "{\"name\":\"down\",\"dtype\":\"f32\",\"shape\":[2048,1024]%s}],"
  "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[256,1024]%s}],"
  "\"ops\":[{\"op\":\"matmul\",\"in\":[\"x\",\"up\"],\"out\":[\"h\"]},{\"op\":\"gelu\",\"in\":[\"h\"],\"out\":[\"a\"]},"
  "{\"op\":\"matmul\",\"in\":[\"a\",\"down\"],\"out\":[\"p\"]}%s],\"outputs\":[\"y\"]}";

/* TP=1: unsharded on one device; TP>1: column- then row-parallel. */
static ppcc_graph *ffn_graph(int tp) {
  char json[2048], up[96] = "", down[96] = "", x[96] = "";
  if (tp > 1) {
    snprintf(up, sizeof up, ",\"shard\":{\"kind\":\"split\",\"dim\":1,\"count\":%d}", tp);
    snprintf(down, sizeof down, ",\"shard\":{\"kind\":\"split\",\"dim\":0,\"count\":%d}", tp);
    snprintf(x, sizeof x, ",\"shard\":{\"kind\":\"replicated\",\"count\":%d}", tp);
  }
  const char *reduce = tp > 1 ? ",{\"op\":\"all_reduce\",\"in\":[\"p\"],\"out\":[\"y\"]}"
                              : ",{\"op\":\"scale\",\"in\":[\"p\"],\"out\":[\"y\"],\"attrs\":{\"value\":1.0}}";
  snprintf(json, sizeof json, ffn_json, tp, tp, up, down, x, reduce);
  ppcc_diag d;
  ppcc_diag_init(&d, "ffn", stderr);
  ppcc_graph *g = ppcc_load_model_string(json, strlen(json), &d);
  if (g && ppcc_run_passes(g, NULL, NULL, &d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

/* Best wall time (ms) of the device programs over reps runs. */
static double time_ffn(const ppcc_graph *g, int threads, int reps) {
  ppcc_diag d;
  ppcc_diag_init(&d, "ffn", stderr);
  ppcc_run_options ro = {.random_seed = 1, .have_random_seed = true};
  ppcc_run_data data;
  if (ppcc_run_data_load(g, &ro, &data, &d)) return -1;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    ppcc_host_tensor out[1];
    ppcc_exec_options eo = {.threads = threads};
    double ms;
    if (ppcc_execute(g, &data, &eo, out, &ms, &d)) return -1;
    ppcc_host_tensor_free(&out[0]);
    if (ms < best) best = ms;
  }
  ppcc_run_data_free(&data);
  return best;
}

static void bench_ffn(bool quick) {
  ppcc_graph *tp1 = ffn_graph(1), *tp2 = ffn_graph(2);
  if (!tp1 || !tp2) {
    fprintf(stderr, "bench: cannot build the FFN graphs\n");
    return;
  }
  int reps = quick ? 2 : 10, cores = omp_get_num_procs();
  printf("(b) FFN x[256,1024] . up[1024,2048] . down[2048,1024], %d cores on this machine\n", cores);
  double t1 = time_ffn(tp1, 1, reps), t1all = time_ffn(tp1, cores, reps), t2 = time_ffn(tp2, 2, reps);
  printf("  TP=1, 1 device, 1 core        %8.2f ms\n", t1);
  printf("  TP=1, 1 device, %d cores (BLAS threads) %8.2f ms\n", cores, t1all);
  printf("  TP=2, 2 devices, 1 core each  %8.2f ms\n", t2);
  printf("  speedup TP=2 vs TP=1 (1 core) %8.2fx\n", t1 / t2);
  ppcc_graph_free(tp1);
  ppcc_graph_free(tp2);
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  bench_matmul(quick);
  bench_ffn(quick);
  return 0;
}
