/* f32 products with a weight operand, GFLOP/s (not a test): OpenBLAS
 * sgemm as ppcc_rt_sgemm calls it (columns split over the kernel pool)
 * against our in-place kernels (gemm_small.c, gemm_tiles.c, which never
 * copy the weight; gemm_panels.c, [N, K] only, which copies A), for M
 * rows x the weight shapes of the benchmark models, both layouts of B
 * ([N, K] linear weights, [K, N] ONNX MatMul weights; panels there: the
 * tiles again). Paired rounds (blas, small, tiles, panels, blas, ...),
 * rates from CPU time (see timed): prints the median GFLOP/s of each and
 * the min / median per-round ratios tiles/blas and panels/tiles.
 *
 *   gemm_gflops [--threads T] [--rounds R] [--m M,M,...] [--kn K,N] [--offset BYTES]
 *
 * The operands are 64-byte aligned, B unless --offset moves it by BYTES
 * (a multiple of 4: a weight mapped from a file lies where the file put
 * it).
 *
 * Run it at high priority on a quiet machine (see bench/README or
 * HELPERS: under the bench lock). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../src/runtime/kernels/kernels.h"
#include "ppcc/runtime.h"

typedef enum { K_BLAS, K_SMALL, K_TILES, K_PANELS, N_KERNELS } kernel_id;
static const char *const kernel_names[N_KERNELS] = {"blas", "small", "tiles", "panels"};

static int threads = 2;

static void run(kernel_id k, int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool bt, float *C) {
  if (k == K_BLAS) {
    if (!rt_sgemm_blas(M, N, K, A, B, bt, C, threads)) ppcc_rt_sgemm_portable(M, N, K, A, B, bt, C);
  } else if (k == K_SMALL) {
    rt_sgemm_small(M, N, K, A, B, bt, C, threads);
  } else if (k == K_TILES || !bt || !rt_sgemm_panels(M, N, K, A, B, NULL, C, threads)) {
    rt_sgemm_tiles(M, N, K, A, B, bt, C, threads); /* panels: [N, K] only */
  }
}

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s of `reps` calls on `threads` cores, from the process's CPU time
 * (the machine is shared: wall time measures the other processes too; CPU
 * time counts what our threads ran, spin-waits included). */
static double timed(kernel_id k, int reps, int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool bt,
                    float *C) {
  double t = cpu_seconds();
  for (int r = 0; r < reps; r++) run(k, M, N, K, A, B, bt, C);
  t = cpu_seconds() - t;
  return 2.0 * (double)M * (double)N * (double)K * reps / (t / threads) / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  int rounds = 5, offset = 0;
  int64_t Ms[16] = {1, 8, 16, 32, 128, 512};
  int n_m = 6;
  int64_t shapes[][2] = {{1024, 1024}, {1024, 2816}, {768, 3072}, {3072, 768}}; /* K, N */
  size_t n_shapes = sizeof shapes / sizeof *shapes;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--threads") && a + 1 < argc) threads = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--rounds") && a + 1 < argc) rounds = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--m") && a + 1 < argc) {
      n_m = 0;
      for (char *p = argv[++a]; *p && n_m < 16;) {
        Ms[n_m++] = strtoll(p, &p, 10);
        if (*p == ',') p++;
        else break;
      }
    } else if (!strcmp(argv[a], "--offset") && a + 1 < argc) {
      offset = atoi(argv[++a]);
      if (offset < 0 || offset > 60 || offset % 4) return 2;
    } else if (!strcmp(argv[a], "--kn") && a + 1 < argc) {
      char *p = argv[++a];
      shapes[0][0] = strtoll(p, &p, 10);
      shapes[0][1] = *p == ',' ? strtoll(p + 1, NULL, 10) : 0;
      n_shapes = 1;
      if (shapes[0][0] < 1 || shapes[0][0] > 3072 || shapes[0][1] < 1 || shapes[0][1] > 3072) return 2;
    } else {
      fprintf(stderr, "usage: gemm_gflops [--threads T] [--rounds R] [--m M,M,...] [--kn K,N] [--offset BYTES]\n");
      return 2;
    }
  }
  if (rounds < 1 || rounds > 100 || threads < 1 || threads > 64) return 2;
  ppcc_rt_set_kernel_threads(threads);
  int64_t max_m = 0;
  for (int i = 0; i < n_m; i++) max_m = Ms[i] > max_m ? Ms[i] : max_m;
  size_t max_kn = 3072 * 3072;
  float *A = aligned_alloc(64, sizeof(float) * (size_t)max_m * 3072);
  float *B_mem = aligned_alloc(64, sizeof(float) * max_kn + 64), *B = B_mem + offset / 4;
  float *C = aligned_alloc(64, sizeof(float) * (size_t)max_m * 3072);
  if (!A || !B_mem || !C) return 1;
  for (size_t j = 0; j < (size_t)max_m * 3072; j++) A[j] = (float)(j % 13) * 0.1f - 0.6f;
  for (size_t j = 0; j < max_kn; j++) B[j] = (float)(j % 7) * 0.2f - 0.6f;
  printf("threads %d, rounds %d, B offset %d, simd level %d, tiles %s\n", threads, rounds, offset, rt_simd_level(),
         rt_sgemm_tiles_in_use() ? "AVX-512" : "= small kernels");
  printf("%-5s %5s %5s %5s  %8s %8s %8s %8s  %s  %s\n", "B", "M", "K", "N", "blas", "small", "tiles", "panels",
         "tiles/blas min med", "panels/tiles min med");
  for (size_t s = 0; s < n_shapes; s++)
    for (int bt = 1; bt >= 0; bt--)
      for (int mi = 0; mi < n_m; mi++) {
        int64_t M = Ms[mi], K = shapes[s][0], N = shapes[s][1];
        double flops = 2.0 * (double)M * (double)N * (double)K;
        int reps = (int)(2e8 / flops) + 3;
        reps = reps > 300 ? 300 : reps;
        double g[N_KERNELS][100], ratio[100], pratio[100];
        for (int k = 0; k < N_KERNELS; k++) run((kernel_id)k, M, N, K, A, B, bt, C); /* warm: threads, pages */
        for (int r = 0; r < rounds; r++) {
          for (int k = 0; k < N_KERNELS; k++) g[k][r] = timed((kernel_id)k, reps, M, N, K, A, B, bt, C);
          ratio[r] = g[K_TILES][r] / g[K_BLAS][r];
          pratio[r] = g[K_PANELS][r] / g[K_TILES][r];
        }
        double lo = ratio[0];
        double plo = pratio[0];
        for (int r = 1; r < rounds; r++) lo = ratio[r] < lo ? ratio[r] : lo, plo = pratio[r] < plo ? pratio[r] : plo;
        printf("%-5s %5lld %5lld %5lld  %8.1f %8.1f %8.1f %8.1f  %.2f %.2f  %.2f %.2f\n", bt ? "[N,K]" : "[K,N]",
               (long long)M, (long long)K, (long long)N, median(g[K_BLAS], rounds), median(g[K_SMALL], rounds),
               median(g[K_TILES], rounds), median(g[K_PANELS], rounds), lo, median(ratio, rounds), plo,
               median(pratio, rounds));
        fflush(stdout);
      }
  (void)kernel_names;
  free(A), free(B_mem), free(C);
  return 0;
}
