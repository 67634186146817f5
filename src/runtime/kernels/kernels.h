/* Door of src/runtime/kernels/: what the executors need to know about the
 * reference kernels besides the public ppcc_rt_kernel / ppcc_rt_run_kernel
 * (include/ppcc/runtime.h): local slicing of replicated operands, views,
 * the kernel thread count. */
#ifndef PPCC_RT_KERNELS_H
#define PPCC_RT_KERNELS_H
#include "../rt_internal.h"

/* A COMPUTE op whose result is split but whose operand k is replicated
 * sees, per shard, only the matching slice of that operand: the dim of
 * operand k to slice (shard i = i-th of result_layout.count), or -1. */
int rt_local_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                       const ppcc_value *result, ppcc_layout result_layout);

/* matmul/linear with an unreduced result: the contracting dim of a
 * replicated operand k whose other operand is split, or -1. */
int rt_contract_slice_dim(const ppcc_op *op, int k, const ppcc_value *operand, ppcc_layout operand_layout,
                          ppcc_layout other_layout, ppcc_layout result_layout);
/* Shard `shard` of a linear with partial-sum result runs without its bias. */
bool rt_drops_bias(const ppcc_op *op, ppcc_layout result_layout, int shard);

/* Under an address-space limit (ulimit -v, below 32 GiB) OpenBLAS's worker
 * threads spin forever on a failing malloc, and exit waits for them: sets
 * OPENBLAS_NUM_THREADS=1 (no workers; each BLAS call runs only where its
 * buffer fits, else the portable kernel) unless the user set it, and says
 * whether it did (ppcc_rt_tame_threads then runs the program again). */
bool rt_blas_env_for_rlimit(void);
/* Threads kernels may use (set per run). */
int rt_kernel_threads(void);
/* Whether every matmul row is computed by the same one-row call
 * (ppcc_rt_set_row_invariant_matmul, --deterministic). */
bool rt_row_invariant_matmul(void);
/* Whether op's kernel is a byte-for-byte copy of operand 0 (reshape): the
 * executor makes its result a view of the operand instead. */
bool rt_kernel_is_view(const ppcc_op *op);
/* A transpose/permute of a rank-`rank` operand that only swaps the last
 * two dims, and whether operand k of op accepts such a tensor unmoved
 * (ppcc_tensor.last_two_swapped): the executor then folds the transpose
 * into that consumer. */
bool rt_kernel_swaps_last_two(const ppcc_op *op, int rank);
bool rt_kernel_reads_swapped(const ppcc_op *op, int k);

/* The conv kernel's core (also the JIT's ppcc_rt_conv_f32): x [N, C, H, W]
 * (xs), weight [F, C/group, kh, kw], y [N, F, OH, OW] (ys); a 1-D geometry
 * runs with H = OH = 1. False when out of memory. */
bool rt_conv2d_f32(const ppcc_conv_geom *geom, const int64_t *xs, int64_t F, const int64_t *ys, const float *X,
                   const float *Wt, float *Y);

/* The kernels' threads (thread_pool.c): fn(arg, part, parts) for part 0..
 * parts-1, part 0 on the caller, the rest on the caller's parked workers;
 * inside a part (or with parts <= 1) just fn(arg, 0, 1). */
typedef void (*rt_part_fn)(void *arg, int part, int parts);
void rt_parallel_parts(int parts, rt_part_fn fn, void *arg);
bool rt_in_pool_part(void);
/* The calling thread is about to block (a receive, the end of its
 * program): its pool's workers stop spinning and sleep at once, so they
 * do not hold cores another device's kernels need (4 pipeline stages on
 * 2 cores: each stage waited for the previous one's spinning worker,
 * a decode stage 10x its compute). The next call wakes them. */
void rt_pool_park(void);
/* Whether the threads calling kernels from now on share one pool (devices
 * that compute one at a time, rt_place_threads) instead of one each. */
void rt_pool_share(bool on);
/* [begin, end) of part `part` of n items split in multiples of align. */
void rt_part_range(int64_t n, int64_t align, int part, int parts, int64_t *begin, int64_t *end);
/* fn(arg, begin, end) over [0, n) split in multiples of align among the
 * kernel threads (rt_kernel_threads; one inside a pool part), each part
 * at least min_items (a smaller n runs whole on the caller): for kernels
 * whose items are independent, so the split changes no result. */
typedef void (*rt_range_fn)(void *arg, int64_t begin, int64_t end);
void rt_parallel_range(int64_t n, int64_t align, int64_t min_items, rt_range_fn fn, void *arg);
/* fn(arg, begin, end) over [0, n) on `parts` parts (as rt_parallel_parts)
 * that take chunks (multiples of align, at least min_chunk, big ones
 * first) from one counter: a part the OS delays (another process on its
 * core) leaves the rest of its share to the others instead of holding
 * the whole call back. For independent items, so the split changes no
 * result. */
void rt_parallel_guided(int parts, int64_t n, int64_t align, int64_t min_chunk, rt_range_fn fn, void *arg);
/* y[M, N] += bias[N] on every row, columns split among the kernel threads
 * (linear's bias in both backends). */
void rt_add_bias(float *y, const float *bias, int64_t M, int64_t N);
/* y = layer_norm(x) * w (+ b when not NULL) over rows of H, the rows split
 * among the kernel threads (the layer_norm kernel's core, also the JIT's
 * ppcc_rt_layer_norm_f32). */
void rt_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t H, float eps);
/* Where the pools' workers run (the executors' thread placement): a
 * cpu_set_t of `size` bytes. */
void rt_pool_set_worker_cpus(const void *cpus, size_t size);

/* Small-row products without repacking B (gemm_small.c): C[M, N] = A[M, K]
 * . B ([N, K] when b_transposed, else [K, N]) on up to `threads` threads;
 * _cols computes only columns [n0, n1) on the caller. A row's bits do not
 * depend on M, the columns or the threads. */
#define RT_SMALL_M 16
/* The work a kernel thread must get to be worth waking (the time model
 * charges that wake from the same figures: PPCC_COST_SPLIT_*, predict.h):
 * rt_sgemm_small, N * K weights a part; rt_sgemm_tiles, M * N * K
 * multiply-adds a part; attention, multiply-adds in all. */
#define RT_SPLIT_SMALL_WORK (64 * 1024)
#define RT_SPLIT_TILES_WORK (256 * 1024)
#define RT_SPLIT_ATTENTION_WORK (1 << 16)
void rt_sgemm_small(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                    int threads);
void rt_sgemm_small_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *A, const float *B,
                         bool b_transposed, float *C);
/* rt_sgemm_small with B's rows ldb floats apart (any M). */
void rt_sgemm_small_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb,
                        bool b_transposed, float *C, int threads);
/* ppcc_rt_sgemm with B's rows ldb floats apart: attention reading a KV
 * cache [B, T, H, D] where it lies (a head's rows H * D apart). With
 * ldb = K ([N, K]) or N ([K, N]) it is ppcc_rt_sgemm; else one row takes
 * the same kernel as ppcc_rt_sgemm (a decode step's bits do not depend on
 * where the cache's rows lie), --deterministic its fixed order, and more
 * rows the small kernels (OpenBLAS's sgemm would pack a copy of B). */
void rt_sgemm_ldb(int64_t M, int64_t N, int64_t K, const float *A, const float *B, int64_t ldb, bool b_transposed,
                  float *C);
/* Products of any M without copying B (gemm_tiles.c): the same bits per
 * element as rt_sgemm_small's (a row's bits depend neither on M, nor the
 * columns, nor the threads). Register tiles with cache blocking where
 * rt_sgemm_tiles_in_use (AVX-512), else the small kernels for every M. */
bool rt_sgemm_tiles_in_use(void);
/* Whether ppcc_rt_sgemm takes the tiles for this product: where
 * bench/gemm_gflops (AVX-512 Xeon, 1 and 2 threads) measured them at
 * least as fast as the small kernels (from 8 rows with B [N, K]) and as
 * OpenBLAS: up to 48 rows [N, K] (K >= 256: shorter dot products are
 * mostly horizontal sums) and 32 [K, N] (N >= 512), or 128 (K >= 512)
 * and 64 where A and B start on 64-byte lines and their rows are whole
 * lines (a load across two lines costs the tiles ~30 %; OpenBLAS's packed
 * copy never has one). Above, OpenBLAS's packed kernel is faster (tiles
 * 0.85-0.95x at 192-512 rows, aligned). */
bool rt_sgemm_tiles_pay(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed);
void rt_sgemm_tiles(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                    int threads);
void rt_sgemm_tiles_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *A, const float *B,
                         bool b_transposed, float *C);
/* Many-row products with a linear weight B [N, K] as outer products
 * (gemm_panels.c): A copied per call into K-major panels of 64 rows
 * (rt_sgemm_panels_bytes of scratch, freed before the return), B read in
 * place. Every C[i, n] is one FMA chain over k in order from zero, so a
 * row's bits depend neither on M, nor the columns, nor the threads (but
 * differ from rt_sgemm_small's); with a bias (else NULL) each C[i, n] is
 * its chain + bias[n], as rt_add_bias would make it, in the same pass.
 * rt_sgemm_panels_pay: where ppcc_rt_sgemm and rt_linear_f32 take them
 * (AVX-512, 64 to 256 rows); rt_sgemm_panels is false, computing nothing,
 * when out of memory. _pack and _cols are its pieces (tests): the panels
 * of A, and columns [n0, n1) of C from them. */
bool rt_sgemm_panels_pay(int64_t M, int64_t N, int64_t K);
bool rt_sgemm_panels(int64_t M, int64_t N, int64_t K, const float *A, const float *B, const float *bias, float *C,
                     int threads);
int64_t rt_sgemm_panels_bytes(int64_t M, int64_t K);
void rt_sgemm_panels_pack(int64_t M, int64_t K, const float *A, float *P);
void rt_sgemm_panels_cols(int64_t M, int64_t n0, int64_t n1, int64_t N, int64_t K, const float *P, const float *B,
                          const float *bias, float *C);
/* y[M, N] = x[M, K] . w[N, K]^T (+ bias[N] unless NULL): linear's f32
 * product in both backends (ppcc_rt_sgemm's choice of kernel, then
 * rt_add_bias; the panels add the bias as they store). */
void rt_linear_f32(int64_t M, int64_t N, int64_t K, const float *x, const float *w, const float *bias, float *y);
/* C[M, N] = A[M, K] . B[K, N] with row strides lda, ldb, ldc on the
 * calling thread, through the [K, N] tiles (attention's products on a
 * block of its score rows); false, computing nothing, where the tiles are
 * not in use. */
bool rt_sgemm_tiles_strided(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                            int64_t ldb, float *C, int64_t ldc);
/* dst[cols, rows] = src[rows, cols]^T * scale (src's rows ld floats
 * apart, dst's ldd), and x[0..n) *= scale:
 * AVX-512 where the tiles are in use (attention's operands around them). */
void rt_tiles_transpose_scaled(int64_t rows, int64_t cols, const float *src, int64_t ld, float scale, float *dst,
                               int64_t ldd);
void rt_tiles_scale(float *x, int64_t n, float scale);
/* ppcc_rt_sgemm's OpenBLAS path (columns split over `threads`); false
 * where it cannot run (no OpenBLAS, sizes over int, buffers would not
 * fit): nothing is computed then. */
bool rt_sgemm_blas(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool b_transposed, float *C,
                   int threads);
/* AVX2+FMA kernels in use (the CPU has them); rt_set_simd(false) forces the
 * plain C ones (tests), returns the previous state. */
bool rt_simd_enabled(void);
bool rt_set_simd(bool on);
/* The kernels' instruction set: the best the CPU has unless lowered by
 * rt_set_simd_level (tests; returns the previous level). The vector math
 * (vmath.c) uses AVX2 at either level. */
enum { RT_SIMD_NONE = 0, RT_SIMD_AVX2 = 1, RT_SIMD_AVX512 = 2 };
int rt_simd_level(void);
int rt_set_simd_level(int level);

/* y[j] = f(x[j]) (vmath.c; y may be x): AVX2 where rt_simd_enabled, else
 * the scalar expf/erff forms, within ~1e-6 relative of them. */
void rt_vexp(const float *x, float *y, int64_t n);
void rt_vsilu(const float *x, float *y, int64_t n);
void rt_vsigmoid(const float *x, float *y, int64_t n);
void rt_vgelu(const float *x, float *y, int64_t n);
/* row = softmax(row * scale) over its first `valid` entries, 0 after. */
void rt_softmax_row(float *row, int64_t n, float scale, int64_t valid);
/* row[0..valid) = exp(row * scale - its max); returns their sum (the
 * softmax without its division). */
double rt_softmax_exp(float *row, int64_t valid, float scale);
/* rt_softmax_exp (scale 1) of rows r < rows over p[r * ld + lo[r] ..
 * r * ld + hi[r]), sums[r] their sums: the same bits as row by row. */
void rt_softmax_exp_rows(float *p, int64_t ld, int64_t rows, const int64_t *lo, const int64_t *hi, double *sums);

#endif
