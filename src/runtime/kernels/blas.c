/* Matrix products and the kernel thread count (below every kernel file):
 * ppcc_rt_sgemm reads B in place with our own kernels where they are as
 * fast (a few rows: gemm_small.c; up to a few dozen: gemm_tiles.c, see
 * rt_sgemm_tiles_pay; 64 to 256 rows with a linear weight: gemm_panels.c),
 * else OpenBLAS when built with it, else (or where
 * OpenBLAS's buffers would not fit) the portable register-blocked one. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#ifdef PPCC_HAVE_OPENBLAS
#include <cblas.h>
#include <limits.h>
#include <stdatomic.h>
#endif
#include <sys/resource.h>
#include <unistd.h>

/* Parallel loops only when the work pays for the fork. */
#define PAR_MIN 32768

/* Threads of one kernel call: OpenBLAS's own threads only. The other
 * kernels run on the device's thread: a nested OpenMP team inside a device
 * thread spins against the BLAS threads on the same cores (an elementwise
 * mul took 3x longer with 2 threads than with 1). */
static int kernel_threads = 1;
/* OpenBLAS gives a row of C different bits depending on how many rows the
 * call has (its micro-kernels and tails accumulate differently), on its
 * thread split, and on whether its buffers fit (rt_blas_has_room: under an
 * address-space limit the probe's answer changes with what the other
 * device threads hold at that instant, so one process and MPI ranks, or
 * two runs under load, took different kernels for the same product and
 * differed by an ulp). Runs that must match bit for bit (--deterministic)
 * use no BLAS: sgemm_fixed_order sums every element of C in one fixed
 * order whatever the rows, threads or memory. */
static bool row_invariant_matmul = false;

void ppcc_rt_set_row_invariant_matmul(bool on) { row_invariant_matmul = on; }

/* An address-space limit OpenBLAS's buffers could run into (a generous
 * container-wide one, 32 GiB or more, leaves BLAS threads alone). */
static bool address_space_limited(void) {
  struct rlimit r;
  return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < ((rlim_t)32 << 30);
}

void ppcc_rt_set_kernel_threads(int n) {
  kernel_threads = n > 0 ? n : 1;
#ifdef PPCC_HAVE_OPENBLAS
  /* OpenBLAS's own workers stay idle (asleep): the kernels' pool
   * (thread_pool.c) splits its calls, and parks between them. */
  openblas_set_num_threads(1);
#endif
}

bool rt_blas_env_for_rlimit(void) {
#ifdef PPCC_HAVE_OPENBLAS
  return address_space_limited() && !getenv("OPENBLAS_NUM_THREADS") && setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
#else
  return false;
#endif
}

int rt_kernel_threads(void) { return kernel_threads; }

bool rt_row_invariant_matmul(void) { return row_invariant_matmul; }

bool ppcc_rt_have_blas(void) {
#ifdef PPCC_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

/* ---------------- matmul ---------------- */

/* Register-blocked: 4 rows of C share each loaded row segment of B. */
static void sgemm_rows(int64_t i0, int64_t i1, int64_t N, int64_t K, const float *A,
                       const float *B, int64_t ldb, float *C) {
  enum { KB = 256, NB = 512 };
  for (int64_t k0 = 0; k0 < K; k0 += KB) {
    int64_t k1 = k0 + KB < K ? k0 + KB : K;
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
      int64_t jn = (j0 + NB < N ? j0 + NB : N) - j0;
      int64_t i = i0;
      for (; i + 4 <= i1; i += 4) {
        float *restrict c0 = C + i * N + j0, *restrict c1 = c0 + N, *restrict c2 = c1 + N, *restrict c3 = c2 + N;
        for (int64_t k = k0; k < k1; k++) {
          const float *restrict b = B + k * ldb + j0;
          float a0 = A[i * K + k], a1 = A[(i + 1) * K + k], a2 = A[(i + 2) * K + k], a3 = A[(i + 3) * K + k];
          for (int64_t j = 0; j < jn; j++) {
            c0[j] += a0 * b[j];
            c1[j] += a1 * b[j];
            c2[j] += a2 * b[j];
            c3[j] += a3 * b[j];
          }
        }
      }
      for (; i < i1; i++) {
        float *restrict c = C + i * N + j0;
        for (int64_t k = k0; k < k1; k++) {
          const float *restrict b = B + k * ldb + j0;
          float a = A[i * K + k];
          for (int64_t j = 0; j < jn; j++) c[j] += a * b[j];
        }
      }
    }
  }
}

/* B's rows ldb floats apart. */
static void sgemm_portable_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb,
                               bool b_transposed, float *C) {
  float *bt = NULL;
  if (b_transposed) { /* B is [N, K]: make it [K, N] once */
    bt = rt_alloc(N * K * 4);
    if (!bt) return;
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < K; k++) bt[k * N + n] = B[n * ldb + k];
    B = bt;
    ldb = N;
  }
  memset(C, 0, (size_t)(M * N) * 4);
  int nt = rt_in_pool_part() ? 1 : kernel_threads; /* a pool part has its one thread */
  int64_t rows = 64;
#pragma omp parallel for num_threads(nt) if (nt > 1 && M * N * K > PAR_MIN) schedule(static)
  for (int64_t i0 = 0; i0 < M; i0 += rows) sgemm_rows(i0, i0 + rows < M ? i0 + rows : M, N, K, A, B, ldb, C);
  rt_free(bt);
}

void ppcc_rt_sgemm_portable(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                            bool b_transposed, float *C) {
  sgemm_portable_ldb(M, N, K, A, B, b_transposed ? K : N, b_transposed, C);
}

#ifdef PPCC_HAVE_OPENBLAS
/* OpenBLAS takes a work buffer (128 MiB in Debian's build) for each thread
 * that runs a BLAS call and, when malloc fails, retries forever: under a
 * tight `ulimit -v` the process hung. So with an address-space limit the
 * BLAS runs only where the buffers of every thread that may call it at
 * once (device threads x kernel threads, + 1) fit: probed by allocating
 * that much (address space only: nothing is touched) and freeing it. Elsewhere the portable kernel computes the product. */
#define BLAS_BUFFER_BYTES ((size_t)136 << 20)
static atomic_int blas_room_ok, blas_room_short = INT_MAX; /* concurrency known to fit / not to fit */

static bool rt_blas_has_room(int kernel_thread_count) {
  static atomic_int limited = -1;
  if (atomic_load(&limited) < 0) atomic_store(&limited, address_space_limited());
  if (!atomic_load(&limited)) return true;
  int callers = omp_get_num_threads() * (kernel_thread_count > 0 ? kernel_thread_count : 1) + 1;
  if (callers <= atomic_load(&blas_room_ok)) return true;
  if (callers >= atomic_load(&blas_room_short)) return false;
  size_t bytes = BLAS_BUFFER_BYTES * (size_t)callers;
  void *p = malloc(bytes); /* as OpenBLAS asks: address space only, nothing touched */
  bool fits = p != NULL;
  free(p);
  atomic_int *known = fits ? &blas_room_ok : &blas_room_short;
  int old = atomic_load(known);
  while ((fits ? callers > old : callers < old) && !atomic_compare_exchange_weak(known, &old, callers)) {
  }
  return fits;
}

/* Columns of C split among the pool's threads, each one single-threaded
 * sgemm (each packs only its columns of B). */
typedef struct blas_job {
  int M, N, K, ldb;
  const float *A, *B;
  bool bt;
  float *C;
} blas_job;

static void blas_part(void *arg, int part, int parts) {
  const blas_job *j = arg;
  int64_t n0, n1;
  rt_part_range(j->N, 64, part, parts, &n0, &n1);
  if (n1 <= n0) return;
  if (j->M == 1) { /* sgemv: the fastest read of B for one row */
    if (j->bt) /* B is [N, K] */
      cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(n1 - n0), j->K, 1.0f, j->B + n0 * j->ldb, j->ldb, j->A, 1, 0.0f,
                  j->C + n0, 1);
    else
      cblas_sgemv(CblasRowMajor, CblasTrans, j->K, (int)(n1 - n0), 1.0f, j->B + n0, j->ldb, j->A, 1, 0.0f, j->C + n0, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, j->bt ? CblasTrans : CblasNoTrans, j->M, (int)(n1 - n0), j->K, 1.0f,
              j->A, j->K, j->bt ? j->B + n0 * j->ldb : j->B + n0, j->ldb, 0.0f, j->C + n0, j->N);
}
#endif

/* --deterministic's product: every C[i, n] = A[i, :] . B[n, :] summed in
 * one fixed order, whatever M, the threads or the memory: 8 lanes (lane l
 * sums k = l mod 8), combined as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)),
 * then the tail k in order. Vector types make it SIMD at -O2 without
 * reassociating anything; four rows of A share each load of B. */
typedef float f32x4 __attribute__((vector_size(16)));

static inline f32x4 load4(const float *p) {
  f32x4 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline float lanes_sum(f32x4 lo, f32x4 hi, const float *a, const float *b, int64_t k, int64_t K) {
  f32x4 s = lo + hi;
  float sum = (s[0] + s[2]) + (s[1] + s[3]);
  for (; k < K; k++) sum += a[k] * b[k];
  return sum;
}

/* C[i, n] and the three rows below it, sharing each load of b. */
static void dots4_fixed_order(const float *A, const float *b, int64_t K, float *out, int64_t ldc) {
  const float *a0 = A, *a1 = A + K, *a2 = A + 2 * K, *a3 = A + 3 * K;
  f32x4 l0 = {0}, h0 = {0}, l1 = {0}, h1 = {0}, l2 = {0}, h2 = {0}, l3 = {0}, h3 = {0};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    f32x4 b0 = load4(b + k), b1 = load4(b + k + 4);
    l0 += load4(a0 + k) * b0, h0 += load4(a0 + k + 4) * b1;
    l1 += load4(a1 + k) * b0, h1 += load4(a1 + k + 4) * b1;
    l2 += load4(a2 + k) * b0, h2 += load4(a2 + k + 4) * b1;
    l3 += load4(a3 + k) * b0, h3 += load4(a3 + k + 4) * b1;
  }
  out[0] = lanes_sum(l0, h0, a0, b, k, K);
  out[ldc] = lanes_sum(l1, h1, a1, b, k, K);
  out[2 * ldc] = lanes_sum(l2, h2, a2, b, k, K);
  out[3 * ldc] = lanes_sum(l3, h3, a3, b, k, K);
}

/* The same for one row (the rows left over). */
static float dot_fixed_order(const float *a, const float *b, int64_t K) {
  f32x4 l = {0}, h = {0};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) l += load4(a + k) * load4(b + k), h += load4(a + k + 4) * load4(b + k + 4);
  return lanes_sum(l, h, a, b, k, K);
}

/* Split over the kernel threads by output column (no sum changes). B
 * [K, N] (not transposed): the portable kernel, which sums each element
 * over k in order too. */
static void sgemm_fixed_order(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb,
                              bool b_transposed, float *C) {
  if (!b_transposed) {
    sgemm_portable_ldb(M, N, K, A, B, ldb, false, C);
    return;
  }
  int nt = rt_in_pool_part() ? 1 : kernel_threads; /* a pool part has its one thread */
#pragma omp parallel for num_threads(nt) if (nt > 1 && M * N * K > PAR_MIN) schedule(static)
  for (int64_t n = 0; n < N; n++) /* row n of B stays in cache across the rows of A */
  {
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) dots4_fixed_order(A + i * K, B + n * ldb, K, C + i * N + n, N);
    for (; i < M; i++) C[i * N + n] = dot_fixed_order(A + i * K, B + n * ldb, K);
  }
}

/* B's rows ldb floats apart. */
static bool sgemm_blas_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb,
                           bool b_transposed, float *C, int threads) {
#ifdef PPCC_HAVE_OPENBLAS
  if (!rt_blas_has_room(threads) || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || ldb > INT32_MAX || K <= 0)
    return false;
  blas_job j = {(int)M, (int)N, (int)K, (int)ldb, A, B, b_transposed, C};
  int64_t parts = M == 1 ? N * K / (64 * 1024) : N / 64; /* enough work a thread */
  rt_parallel_parts(threads < parts ? threads : (int)(parts > 1 ? parts : 1), blas_part, &j);
  return true;
#else
  (void)M, (void)N, (void)K, (void)A, (void)B, (void)ldb, (void)b_transposed, (void)C, (void)threads;
  return false;
#endif
}

bool rt_sgemm_blas(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                   int threads) {
  return sgemm_blas_ldb(M, N, K, A, B, b_transposed ? K : N, b_transposed, C, threads);
}

void ppcc_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                   bool b_transposed, float *C) {
  if (M <= 0 || N <= 0) return;
  if (row_invariant_matmul) {
    sgemm_fixed_order(M, N, K, A, B, b_transposed ? K : N, b_transposed, C);
    return;
  }
  int threads = rt_in_pool_part() ? 1 : kernel_threads;
  /* a few rows (a decode step, a small batch): read B once as it lies,
   * where sgemm would first repack all of it (one row: sgemv, but for a
   * linear weight with AVX-512 our own 8-row matvec, which streams it
   * faster: gemm_small.c) */
  bool one_row_blas = false;
#ifdef PPCC_HAVE_OPENBLAS
  one_row_blas = M == 1 && K > 0 && N <= INT32_MAX && K <= INT32_MAX && !(b_transposed && rt_simd_level() >= RT_SIMD_AVX512) &&
                 rt_blas_has_room(threads);
#endif
  /* many rows with a linear weight: outer products (gemm_panels.c) */
  if (b_transposed && rt_sgemm_panels_pay(M, N, K) && rt_sgemm_panels(M, N, K, A, B, NULL, C, threads)) return;
  if (!one_row_blas && rt_sgemm_tiles_pay(M, N, K, A, B, b_transposed)) {
    rt_sgemm_tiles(M, N, K, A, B, b_transposed, C, threads);
    return;
  }
  if (!one_row_blas && M <= RT_SMALL_M) {
    for (int64_t i = 0; i < M; i += RT_SMALL_M)
      rt_sgemm_small(M - i < RT_SMALL_M ? M - i : RT_SMALL_M, N, K, A + i * K, B, b_transposed, C + i * N, threads);
    return;
  }
  if (rt_sgemm_blas(M, N, K, A, B, b_transposed, C, threads)) return;
  ppcc_rt_sgemm_portable(M, N, K, A, B, b_transposed, C); /* computes every row alike */
}

void rt_sgemm_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb, bool b_transposed,
                  float *C) {
  if (ldb == (b_transposed ? K : N)) {
    ppcc_rt_sgemm(M, N, K, A, B, b_transposed, C);
    return;
  }
  if (M <= 0 || N <= 0) return;
  if (row_invariant_matmul) {
    sgemm_fixed_order(M, N, K, A, B, ldb, b_transposed, C);
    return;
  }
  int threads = rt_in_pool_part() ? 1 : kernel_threads;
  bool one_row_blas = false; /* as ppcc_rt_sgemm: a decode step's bits whichever way K and V lie */
#ifdef PPCC_HAVE_OPENBLAS
  one_row_blas = M == 1 && K > 0 && N <= INT32_MAX && K <= INT32_MAX && !(b_transposed && rt_simd_level() >= RT_SIMD_AVX512) &&
                 rt_blas_has_room(threads);
#endif
  if (one_row_blas && sgemm_blas_ldb(M, N, K, A, B, ldb, b_transposed, C, threads)) return;
  rt_sgemm_small_ldb(M, N, K, A, B, ldb, b_transposed, C, threads); /* any M: no packed copy of B */
}

void rt_linear_f32(int64_t M, int64_t N, int64_t K, const float *x, const float *w, const float *bias, float *y) {
  if (M <= 0 || N <= 0) return;
  int threads = rt_in_pool_part() ? 1 : kernel_threads;
  if (!row_invariant_matmul && rt_sgemm_panels_pay(M, N, K) && rt_sgemm_panels(M, N, K, x, w, bias, y, threads))
    return;
  ppcc_rt_sgemm(M, N, K, x, w, true, y);
  if (bias) rt_add_bias(y, bias, M, N);
}
