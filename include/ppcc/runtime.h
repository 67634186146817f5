/* Running a compiled graph on logical devices (DESIGN §7). Implemented in
 * src/runtime/.
 *
 * Three layers, each usable on its own:
 *   1. ppcc_rt_*      the communication ABI device programs call (plain C
 *                     on device-local buffers, so a JIT-compiled device
 *                     program can call it too);
 *   2. loaders        .npy, .safetensors, .irpa, random weights;
 *   3. ppcc_run       the whole `ppcc run` path: one OpenMP thread per
 *                     device interpreting its part of the graph, and the
 *                     unsharded reference executor for --check. */
#ifndef PPCC_RUNTIME_H
#define PPCC_RUNTIME_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ppcc/graph.h"
#include "ppcc/ops.h"

/* ------------------------------------------------------------------ */
/* 1. Communication ABI                                               */
/* ------------------------------------------------------------------ */

/* Shared state of one run: a mailbox per device and an abort flag. */
typedef struct ppcc_rt_comm ppcc_rt_comm;

ppcc_rt_comm *ppcc_rt_comm_new(int n_devices);
void ppcc_rt_comm_free(ppcc_rt_comm *c);

/* Every call below returns 0 on success and -1 once the run is aborted
 * (by any device, or by this call on a protocol error such as a size
 * mismatch). A blocked call wakes up on abort: no device waits forever. */

/* Copies `bytes` from buf into device dst's receive buffer (directly if dst
 * already waits in ppcc_rt_recv, else into the mailbox) and signals dst.
 * Never blocks on the receiver. Messages between two devices arrive in the
 * order they were sent. */
int ppcc_rt_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes);
/* Waits for the next message from src and copies it into buf; the size
 * must be exactly `bytes`. */
int ppcc_rt_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes);

/* Collectives over a group: devices[0..n-1] (shard i on devices[i]), the
 * caller being devices[rank]. Every member calls with the same arguments
 * except rank and the buffers. Reductions sum in shard order 0..n-1 (f16
 * and bf16 accumulate in f32), so every member gets bit-identical results
 * and a rerun gives the same bits. dtype is a ppcc_dtype. */
int ppcc_rt_all_reduce(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                       void *buf, int64_t count);
/* A split tensor seen as [outer][n][inner] elements; shard i is the
 * [outer][inner] block. all_gather assembles the full tensor on everyone;
 * reduce_scatter sums full tensors and leaves shard `rank` on each. */
int ppcc_rt_all_gather(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                       const void *shard, void *full, int64_t outer, int64_t inner);
int ppcc_rt_reduce_scatter(ppcc_rt_comm *c, const int *devices, int n, int rank, int dtype,
                           const void *full, void *shard, int64_t outer, int64_t inner);

/* Marks the run failed and wakes every waiting device. The first call's
 * device and message are kept (see ppcc_rt_comm_error). */
void ppcc_rt_abort(ppcc_rt_comm *c, int device, const char *message);
bool ppcc_rt_aborted(const ppcc_rt_comm *c);
/* The first failure: its device (or -1) and message. */
int ppcc_rt_comm_error(const ppcc_rt_comm *c, const char **message);

/* ------------------------------------------------------------------ */
/* 2. Tensors, kernels and loaders                                    */
/* ------------------------------------------------------------------ */

/* A whole tensor owned by the caller (data from malloc). */
typedef struct ppcc_host_tensor {
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  void *data;
  int64_t bytes;
} ppcc_host_tensor;

/* Allocates a zeroed tensor; false on overflow or OOM. */
bool ppcc_host_tensor_alloc(ppcc_host_tensor *t, ppcc_dtype dtype, int rank, const int64_t *shape);
void ppcc_host_tensor_free(ppcc_host_tensor *t);

/* Reference kernel of an op (the op table's `kernel` column), NULL for
 * collectives and transfers, which the runtime implements itself. */
ppcc_kernel_fn ppcc_rt_kernel(ppcc_op_id id);
/* Runs op's kernel on local tensors, converting f16/bf16 operands to f32
 * and the results back (kernels compute in f32). */
ppcc_status ppcc_rt_run_kernel(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out,
                               ppcc_diag *d);
/* Threads a kernel may use (nested OpenMP / BLAS threads); default 1. */
void ppcc_rt_set_kernel_threads(int n);
/* The arena of `device` in the last run that planned one, in bytes.
 * Interpreter: the planned high-water mark (*planned) of the op results
 * that device holds (every result shard of every microbatch, each rounded
 * up to 64 bytes, placed by lifetime; params, inputs, in-place results,
 * reshape views and folded transposes are not in it) plus the scratch for
 * one op's temporaries (*scratch: replicated-operand slices, shards sent
 * away, a root's receive buffer and f32 sum). JIT: the planned high-water
 * mark of every buffer the device's compiled code allocates (recorded in
 * its first run; scratch 0); output buffers and leaves are not in it.
 * Returns planned + scratch; 0 for a device that never ran. */
int64_t ppcc_rt_arena_bytes(int device, int64_t *planned, int64_t *scratch);
/* Per op of the compiled graph g: true when the interpreter makes its
 * result a view of operand 0 (reshapes, transposes folded into their
 * matmuls) -- what the report's memory prediction needs to mirror the
 * executor (ppcc_predict_options.view_ops). Free with free(); NULL: out
 * of memory. */
bool *ppcc_rt_view_ops(const ppcc_graph *g);
/* The same for the JIT (src/emit/exec/exec_kernel.c): a reshape is not
 * outlined into a kernel, so bufferization leaves it a view of its
 * operand; transposes are kernels (copies), and in-place ops copy their
 * destination (no write through a view). */
bool *ppcc_rt_jit_view_ops(const ppcc_graph *g);
/* C = A[M,K] * B (B is [K,N], or [N,K] when b_transposed), row-major,
 * f32. Uses OpenBLAS when built with it, else ppcc_rt_sgemm_portable. */
void ppcc_rt_sgemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                   bool b_transposed, float *C);
/* The blocked C kernel used without OpenBLAS (exposed for the benchmark). */
void ppcc_rt_sgemm_portable(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                            bool b_transposed, float *C);
bool ppcc_rt_have_blas(void);
/* y[M, N] = x[M, K] . w[N, K]^T with w block-quantized (dtype wt, each
 * row K / block whole blocks), as llama.cpp: x quantized per block to 8
 * bits (q8_0 for 32-value formats, q8_K for the k-quants), integer dot
 * products per block (src/runtime/kernels/quant_matmul.c). Every (m, n)
 * is one call, so a row's bits do not depend on M. The linear kernel of
 * both backends. False when K is not whole blocks or out of memory. */
bool ppcc_rt_qlinear_f32(ppcc_dtype wt, int64_t M, int64_t N, int64_t K, const float *x, const void *w, float *y);
/* y[M, N] = x[M, K] . w[N, K]^T with w f16 or bf16 (dtype wt) as stored:
 * blocks of weight rows converted to f32 per thread, then the f32 tile
 * kernel (src/runtime/kernels/half_matmul.c); equal to the f32 product of
 * the converted weight, a row's bits independent of M. The linear kernel
 * of both backends for weights kept as stored. False when out of memory. */
bool ppcc_rt_hlinear_f32(ppcc_dtype wt, int64_t M, int64_t N, int64_t K, const float *x, const void *w, float *y);
/* Row `row` of a block-quantized table [rows, cols] decoded to f32;
 * false when a scale is NaN/Inf or cols is not whole blocks. */
bool ppcc_rt_qrows_f32(ppcc_dtype wt, const void *table, int64_t row, int64_t cols, float *out);
/* The quantized kernels' instruction set: "c", "avx2", "avx2-vnni" or
 * "avx512-vnni"
 * (the best this CPU has, chosen at first use); set_isa forces one and
 * returns false when the name is unknown or the CPU lacks it. */
const char *ppcc_rt_quant_isa(void);
bool ppcc_rt_quant_set_isa(const char *name);
/* softmax(q k^T * scale [causal, bottom-right]) v per head, grouped-query:
 * q[B,Hq,S,D], k[B,Hkv,T,D], v[B,Hkv,T,Dv] -> out[B,Hq,S,Dv], contiguous
 * f32, as GEMMs through ppcc_rt_sgemm; positions (S entries, B*S when
 * per_row, or NULL) limit query s of row b to cache slots
 * 0..positions[(b*S +) s]; window > 0 also hides the keys at or before
 * that last slot - window (sliding-window attention); softcap > 0 maps
 * each scaled score x to softcap * tanh(x / softcap) (Gemma 2);
 * seq_major: q[B,S,Hq,D], k[B,T,Hkv,D], v[B,T,Hkv,Dv] -> out[B,S,Hq,Dv]
 * instead (KV caches read where they lie, no permuted copies). The
 * attention kernel of both backends. 0 on success, -1 when Hq is not a
 * multiple of Hkv, -2 out of memory. */
int ppcc_rt_attention_f32(int64_t B, int64_t Hq, int64_t S, int64_t D, int64_t Hkv, int64_t T, int64_t Dv,
                          double scale, bool causal, int64_t window, double softcap, const int64_t *positions,
                          bool per_row, bool seq_major, const float *q, const float *k, const float *v, float *out);
/* Settings that libgomp and OpenBLAS read once, when they load (before
 * main): call first thing in main. Where one is wanted and unset it sets
 * it and re-executes the program (/proc/self/exe, the same argv); returns,
 * doing nothing, when none is wanted or that fails.
 * - GOMP_SPINCOUNT=1000, unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set:
 *   libgomp's default lets a thread spin 300000 rounds in a barrier or
 *   between parallel regions when its team has no more threads than
 *   cores, and the device threads of a pipeline share a core
 *   (rt_run_thread_budget), so one spun while the other it waited for
 *   could not run until a scheduler tick (gen_llama decode TP1 PP2 on 2
 *   cores: 6-12 ms a forward instead of 0.3).
 * - OPENBLAS_NUM_THREADS=1 under an address-space limit (ulimit -v below
 *   32 GiB), unless set: OpenBLAS's workers spin forever on a failing
 *   malloc, and exit waits for them. */
void ppcc_rt_tame_threads(char **argv);
/* With on, ppcc_rt_sgemm sums every element of C in one fixed order with
 * ppcc's own kernel (no OpenBLAS), so its bits depend on neither the row
 * count, the kernel threads nor the memory left: a microbatched run then
 * equals the unbatched one, and MPI ranks one process, bit for bit (with
 * OpenBLAS they agree to about an ulp). Process-wide; default off; `ppcc
 * run --deterministic`. */
void ppcc_rt_set_row_invariant_matmul(bool on);

/* Element conversions (round to nearest even). */
float ppcc_f16_to_f32(uint16_t h);
uint16_t ppcc_f32_to_f16(float f);
float ppcc_bf16_to_f32(uint16_t h);
uint16_t ppcc_f32_to_bf16(float f);

/* .npy (format 1.0-3.0, little-endian, C order): f32, f16, i64, i32, i8,
 * bool. bf16 tensors are written as f32 (numpy has no bf16). */
ppcc_status ppcc_npy_read(const char *path, ppcc_host_tensor *out, ppcc_diag *d);
/* Writes path atomically (through ppcc_outfile: temp file + rename). */
ppcc_status ppcc_npy_write(const char *path, const ppcc_host_tensor *t, ppcc_diag *d);
/* Writes the .npy bytes to an open stream; path names it in diagnostics. */
ppcc_status ppcc_npy_write_stream(FILE *fp, const char *path, const ppcc_host_tensor *t, ppcc_diag *d);

/* A source of parameter values: a .safetensors or .irpa file (mmapped) or
 * the deterministic generator. */
typedef struct ppcc_weights ppcc_weights;
/* Opens a .safetensors or .irpa file (chosen by content, not the name). */
ppcc_weights *ppcc_weights_open(const char *path, ppcc_diag *d);
ppcc_weights *ppcc_weights_random(uint64_t seed);
void ppcc_weights_close(ppcc_weights *w);
/* The full (unsharded) tensor of param in its graph dtype. Errors name the
 * file and the tensor: missing, wrong dtype/shape/size, out of bounds.
 * *owned is set when the data was allocated for the caller (random), in
 * which case the caller frees it; otherwise data points into the mapping. */
ppcc_status ppcc_weights_get(ppcc_weights *w, const ppcc_value *param, const void **data,
                             void **owned, ppcc_diag *d);

/* Whether the weights hold param in shards (a sharded archive: no entry
 * NAME, an entry NAME.shard.0), to be read with ppcc_weights_get_shard. */
bool ppcc_weights_sharded(const ppcc_weights *w, const ppcc_value *param);
/* Shard i of param as the model places it, from its own archive entry
 * (ppcc_param_shard_entry); one-line error naming the param when the
 * archive's shards disagree with the placement (missing entry, more shards
 * than placed, a shard's size/shape/dtype). data/owned as ppcc_weights_get. */
ppcc_status ppcc_weights_get_shard(ppcc_weights *w, const ppcc_value *param, int i, const void **data,
                                   void **owned, ppcc_diag *d);

/* `ppcc shard-weights`: writes the sharded parameter archive of the placed
 * graph g (one entry per stored shard, named by ppcc_param_shard_entry, in
 * each param's dtype) to out_path, an .irpa or a .safetensors, from any
 * weights source ppcc_weights_open reads. Streams one source tensor at a
 * time; atomic (a failure leaves no file). */
ppcc_status ppcc_shard_weights(const ppcc_graph *g, const char *weights_path, const char *out_path, ppcc_diag *d);

/* Deterministic values for a named tensor: element j depends only on
 * (seed, name, j), so every shard can be cut from the same full tensor and
 * tools/gen_safetensors.c reproduces it. Floats: uniform in
 * (-s, s), s = sqrt(3/shape[rank-2]) for rank >= 2, else 1; integers: j
 * modulo shape[0] (valid indices for the usual index_copy). The generator
 * itself is include/ppcc/random_fill.h. */
bool ppcc_random_tensor(uint64_t seed, const char *name, ppcc_host_tensor *t);

/* ------------------------------------------------------------------ */
/* 3. Running graphs                                                  */
/* ------------------------------------------------------------------ */

struct ppcc_run_data;     /* below */
struct ppcc_exec_options;

typedef struct ppcc_input_arg {
  const char *name; /* graph input name */
  const char *path; /* .npy file */
} ppcc_input_arg;

typedef struct ppcc_run_options {
  const char *weights_path;    /* .safetensors or .irpa; NULL: random */
  uint64_t random_seed;        /* --random-weights SEED (0 when not given) */
  bool have_random_seed;
  const ppcc_input_arg *inputs;
  int n_inputs;                /* inputs not given are random from the seed;
                                  with a weights file they need a seed */
  const char *output_dir;      /* NULL: no files written */
  bool check;                  /* compare with the unsharded reference */
  int threads;                 /* total cores to use; 0: all */
  int microbatches;            /* 0 or 1: none; M > 1: the batch (dim 0 of
                                  every input) is cut into M microbatches that
                                  flow through the pipeline (GPipe fill and
                                  drain); outputs equal M = 1 within an ulp,
                                  bit for bit with deterministic */
  bool deterministic;          /* row-invariant matmul (see
                                  ppcc_rt_set_row_invariant_matmul) */
  const char *trace_path;      /* Chrome trace JSON, or NULL */
  int repeat;                  /* > 0: run the forward this many more times
                                  after the first and log the min / median
                                  steady-state time (outputs of the first) */
  FILE *log;                   /* summary lines (stdout), or NULL; includes
                                  the pipeline summary (ppcc_pipeline_stats) */
  /* Testing hook: device fault_device fails when it reaches op fault_op. */
  bool inject_fault;
  int fault_device, fault_op;
  /* Executor of the sharded run (same contract as ppcc_execute); NULL:
   * ppcc_execute. `ppcc run --backend=jit` passes ppcc_jit_execute
   * (include/ppcc/jit.h) with its compiled module as execute_ctx. */
  ppcc_status (*execute)(void *ctx, const ppcc_graph *g, const struct ppcc_run_data *data,
                         const struct ppcc_exec_options *opts, ppcc_host_tensor *outputs,
                         double *elapsed_ms, ppcc_diag *d);
  void *execute_ctx;
  /* --expect NAME=FILE.npy: outputs compared with given references by the
   * criterion of --check (src/runtime/exec/expect.c). */
  const ppcc_input_arg *expects;
  int n_expects;
  /* --check-plan: the first forward's measurement (ppcc/predict.h), or
   * NULL. */
  struct ppcc_plan_measure *measure;
} ppcc_run_options;

/* `ppcc calibrate` (src/plan/calibrate/calibrate.c): measures this machine's
 * GEMM GFLOP/s, elementwise and copy GB/s for 1..max_threads threads
 * (0: all cores) and the fixed cost of a kernel call; log gets a line per
 * thread count. */
struct ppcc_calibration;
struct ppcc_op_cost;
ppcc_status ppcc_calibrate(struct ppcc_calibration *c, int max_threads, FILE *log, ppcc_diag *d);
/* Adds the interpreter's per-op costs (ppcc_calibration.op_costs) from
 * built-in FFN workloads and the given workload model texts (the driver's
 * generated Llamas), each run on one device with one kernel thread. */
ppcc_status ppcc_calibrate_ops(struct ppcc_calibration *c, const char *const *workloads, int n_workloads, FILE *log,
                               ppcc_diag *d);

/* One measured call of an op kind, as ppcc_calibrate_ops samples them:
 * its FLOPs, bytes, the weight bytes the caches hold and those from
 * beyond them (ppcc_predict_cold_share), and its time. */
typedef struct ppcc_op_sample {
  double flops, bytes, weight_bytes, cold_weight_bytes, us;
} ppcc_op_sample;
/* The op cost ppcc_calibrate_ops fits to an op kind's samples (calibrate.c,
 * fit_op): the least relative squared error among the non-negative fits of
 * every subset of its five terms, a weight byte from beyond the caches
 * costing at least one from them where samples have both. False without a
 * fit (no samples, none non-negative). */
bool ppcc_calibrate_fit_op_cost(const char *name, const ppcc_op_sample *samples, int n, struct ppcc_op_cost *out);

/* The JIT as ppcc_calibrate_jit_ops uses it (the driver's, which loads the
 * MLIR backend): compile a graph (after all passes) into *ctx, run it as
 * ppcc_run_options.execute does, release *ctx. */
typedef struct ppcc_calib_jit {
  ppcc_status (*compile)(const ppcc_graph *g, void **ctx, ppcc_diag *d);
  ppcc_status (*execute)(void *ctx, const ppcc_graph *g, const struct ppcc_run_data *data,
                         const struct ppcc_exec_options *opts, struct ppcc_host_tensor *outputs, double *elapsed_ms,
                         ppcc_diag *d);
  void (*release)(void *ctx);
} ppcc_calib_jit;
/* Adds the JIT's per-op costs (ppcc_calibration.jit_op_costs): for each
 * workload model text (one device) and each compute op kind in it, the
 * model with every op of that kind run 1 + copies times (the copies read
 * their own copies of the params) is JIT-compiled and its device busy time
 * compared with the workload's (see calibrate.c). */
ppcc_status ppcc_calibrate_jit_ops(struct ppcc_calibration *c, const char *const *workloads, int n_workloads,
                                   const ppcc_calib_jit *jit, FILE *log, ppcc_diag *d);
/* ppcc_calibrate_ops and ppcc_calibrate_jit_ops end with their backend's
 * wait costs (ppcc_calibration's resume_us, start_us and the like), per
 * placement of the device threads the median of several fits. One fit of
 * a placement's workloads (calibrate.c, calibrate_waits): fit[0] the
 * resume, fit[1] the start (PPCC_WAITS_OWN_CORE: start + resume, the
 * caller takes off the spread resume); false when a workload fails (every
 * placement but PPCC_WAITS_SHARING_A_CORE needs 2 threads). jit NULL: the
 * interpreter. */
enum { PPCC_WAITS_SHARING_A_CORE, PPCC_WAITS_SPREAD, PPCC_WAITS_OWN_CORE, PPCC_WAITS_WIDE };
bool ppcc_calibrate_wait_fit(const struct ppcc_calibration *c, const ppcc_calib_jit *jit, int placement, double fit[2]);
/* Each wait fit then runs as `exe calibrate --wait-fit BACKEND,PLACEMENT,FILE`
 * in a process of its own, as a run measures (NULL, the default: in this
 * process; where a child cannot start, the fit runs in this process). */
void ppcc_calibrate_set_wait_fit_exe(const char *exe);

/* Runs the graph (after all passes) on its devices, writes outputs, and
 * with check compares against the reference executor. */
ppcc_status ppcc_run(const ppcc_graph *g, const ppcc_run_options *opts, ppcc_diag *d);

/* Lower-level entry points (tests, benchmark, a later JIT driver). */

/* Full tensors of every param and input (index = value index; NULL for
 * results), loaded per opts (weights file or seed, --input files). */
typedef struct ppcc_run_data {
  int n_values;
  ppcc_host_tensor *values; /* values[i].data NULL when not a param/input;
                               read only: params may point into a mapped file */
  bool *owned;              /* values[i].data allocated here */
  ppcc_weights *weights;    /* kept open while the data is used */
  bool *borrowed;           /* values[i].data is another run data's (load_sharing) */
  int *state_of;            /* per input value: k when g->outputs[k] is fed back
                               into it as state (bind_state), else -1 */
  struct ppcc_resident *resident; /* the param shards the devices hold (below) */
  /* shards[v][i]: shard i of a param read from a sharded archive (then
   * values[v].data is NULL: the whole tensor is never assembled); NULL
   * rows for everything else. shard_owned[v][i]: allocated here. */
  const void ***shards;
  void ***shard_owned;
  int *n_shards;            /* entries of shards[v] / shard_owned[v] */
  /* Set before make_resident when the whole of a param is rarely read
   * afterwards (run without --check, whose reference run reads every
   * whole tensor; generate): a param held whole in memory (generated,
   * converted or realigned at load) whose local shards are all copies
   * gives its pages back once cut, so the process holds it once, as its
   * shards, like a weight cut from the mapped file. An unsharded run that
   * asks for the whole later (generate's search for a non-finite value)
   * gets it put together again from the shards. */
  bool release_cut;
  bool *released;           /* values[i].data's pages were given back: the
                               pointer stays as the resident shards' key,
                               and nothing may read through it */
} ppcc_run_data;
/* Shard i of leaf v when it was loaded shard by shard, else NULL. */
const void *ppcc_run_data_shard(const ppcc_run_data *data, int v, int i);
ppcc_status ppcc_run_data_load(const ppcc_graph *g, const ppcc_run_options *opts,
                               ppcc_run_data *data, ppcc_diag *d);
void ppcc_run_data_free(ppcc_run_data *data);

/* Resident param shards (DESIGN §7): each device's shard of a param is
 * made once, the first time a graph of the loaded model binds it, and
 * every later execute of any graph sharing the run data binds the same
 * bytes. A shard is a pointer, a dtype and a shape, either a view (the
 * shard lies contiguous in the full tensor: a mapped file's bytes or the
 * tensor converted at load) or owned (a strided split, a zero shard of an
 * unreduced param, or an f32 weight read in full whose mapped bytes are
 * off a 64-byte line: copied once at load, the file's pages released).
 * Executors only read it. */
typedef struct ppcc_resident_shard {
  const void *data;
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
  bool owned;        /* made at load; false: a view of the full tensor */
} ppcc_resident_shard;

/* Loads `g`'s params as views of `from`'s (params matched by name, dtype
 * and shape; the others loaded per opts) and shares from's resident
 * shards: a prefill and a decode graph of one model hold its weights once.
 * `from` must outlive `data`. */
ppcc_status ppcc_run_data_load_sharing(const ppcc_graph *g, const ppcc_run_options *opts, const ppcc_graph *from_g,
                                       const ppcc_run_data *from, ppcc_run_data *data, ppcc_diag *d);
/* Makes now (at load, before any execute) every param shard that g's
 * devices on this process hold, for the sharded run; f32 weights that g
 * reads in full then lie on 64-byte lines (the GEMM tiles' condition).
 * With data->release_cut, whole tensors cut into copies are given back. */
ppcc_status ppcc_run_data_make_resident(const ppcc_graph *g, const ppcc_run_data *data, ppcc_diag *d);
/* State (a KV cache): input `input` of g takes, at every execute, the
 * value output `output` had at the previous one (same dtype, shape,
 * layout and devices). Its shards live on their devices, made once from
 * the host tensor of the input (at make_resident or the first execute)
 * and shared by every graph of the run data's model that binds the same
 * input name; an execute updates them in place (index_copy / index_put
 * into the input) or on the device, and leaves outputs[k] empty: the
 * value never goes back to the host. */
ppcc_status ppcc_run_data_bind_state(const ppcc_graph *g, ppcc_run_data *data, const char *input, const char *output,
                                     ppcc_diag *d);
/* Bytes of resident shards the process holds beyond the full tensors
 * (owned shards), and how many there are in all. */
int64_t ppcc_resident_owned_bytes(const ppcc_run_data *data);
/* Bytes of whole tensors given back after they were cut (release_cut). */
int64_t ppcc_resident_released_bytes(const ppcc_run_data *data);
int ppcc_resident_count(const ppcc_run_data *data);
/* Bytes of the state shards (KV caches) the process holds. */
int64_t ppcc_resident_state_bytes(const ppcc_run_data *data);
/* Bytes of the param shards the process's devices hold resident (views of
 * the weights and shards made at load alike). */
int64_t ppcc_resident_param_bytes(const ppcc_run_data *data);
/* Process-wide count of param bytes copied into device shards since
 * start (resident shards made, and per-call copies of params an in-place
 * op writes): after load it must not grow from one execute to the next. */
int64_t ppcc_rt_param_bytes_copied(void);
/* Process-wide count of state bytes copied between the host and the
 * devices (a state's shards made from its host tensor; never per execute). */
int64_t ppcc_rt_state_bytes_host(void);

/* Executes g. reference: every value unsharded on one device (layouts and
 * placements ignored), else sharded with one OpenMP thread per device.
 * outputs[k] receives the full value of g->outputs[k] (caller frees with
 * ppcc_host_tensor_free). elapsed_ms, if not NULL, gets the wall time of
 * the device programs (loading excluded). */
/* What the per-device timeline of a run measured. Busy time is the time
 * a device spends in compute ops (transfers and collectives are mostly
 * waiting for a peer, so they count as idle).
 *   busy[d]      busy time of device d / wall_ms;
 *   bubble       1 - (mean busy time of the stage devices) / span, where
 *                the stage devices are those that run compute ops and the
 *                span runs from the first compute op's start to the last
 *                one's end on any device: the fraction of the pipeline's
 *                device-time spent idle;
 *   gpipe_bubble (p - 1) / (m + p - 1), the GPipe estimate for p equal
 *                stages and m microbatches with free communication; p is
 *                the number of distinct device groups of compute ops. */
typedef struct ppcc_pipeline_stats {
  int n_devices;
  double wall_ms, span_ms;
  double *busy; /* n_devices entries */
  int stages, microbatches;
  double bubble, gpipe_bubble;
} ppcc_pipeline_stats;
void ppcc_pipeline_stats_free(ppcc_pipeline_stats *s);
/* The summary lines `ppcc run` prints. */
void ppcc_pipeline_stats_print(const ppcc_pipeline_stats *s, FILE *out);

/* Every shard of every param and input as cut, and of every op result as
 * it was computed, for --check's search of the first divergent value
 * (src/runtime/exec/divergence.c). shards[v][i]
 * holds shard i of value v (its local shape, contiguous), NULL when not
 * captured; each device thread writes only its own shards. */
typedef struct ppcc_capture {
  int n_values;
  int *counts;    /* shards per value */
  void ***shards;
} ppcc_capture;
/* Capture slots for g's values with the given shard counts (NULL: g's
 * layouts; the reference's views are 1 per value). */
bool ppcc_capture_init(ppcc_capture *c, const ppcc_graph *g, bool reference);
void ppcc_capture_free(ppcc_capture *c);
/* Copies bytes of data as shard i of value v (a repeated store replaces). */
bool ppcc_capture_store(ppcc_capture *c, int v, int i, const void *data, int64_t bytes);

typedef struct ppcc_exec_options {
  bool reference;
  int threads; /* total cores; 0: all */
  bool inject_fault;
  int fault_device, fault_op;
  const char *trace_path; /* Chrome trace: a track per device, an event per
                             op and microbatch, flow arrows for transfers */
  struct ppcc_outfile *trace_file; /* open (ppcc/io.h): the trace goes there,
                                      uncommitted; NULL: to trace_path */
  int microbatches;       /* as in ppcc_run_options */
  ppcc_pipeline_stats *stats; /* filled when not NULL (free with
                                 ppcc_pipeline_stats_free) */
  ppcc_capture *capture;  /* not NULL: every leaf's and op result's shards
                             are copied there (one microbatch; not in MPI
                             runs) */
  struct ppcc_plan_measure *measure; /* ppcc/predict.h: per-device peak of
                                        the value buffers and per-stage busy
                                        time, filled when not NULL (the
                                        interpreter only) */
} ppcc_exec_options;
ppcc_status ppcc_execute(const ppcc_graph *g, const ppcc_run_data *data,
                         const ppcc_exec_options *opts, ppcc_host_tensor *outputs,
                         double *elapsed_ms, ppcc_diag *d);

/* Tolerances of --check, those of torch.testing.assert_close: an element
 * passes when |got - ref| <= atol + rtol * |ref| (rtol / atol: f32
 * 1.3e-6 / 1e-5, f16 1e-3 / 1e-5, bf16 1.6e-2 / 1e-5; integers exact).
 * ppcc_compare widens atol with the output's scale M = max|ref| to
 * atol * max(1, M) + rtol * M: a sharded run sums long reductions in
 * another order (partial sums rounded to the dtype, then all_reduce), and
 * that rounding error grows with the magnitude of the terms, not of each
 * result element, so an element near zero among large ones needs an
 * absolute allowance of the tensor's scale (a bf16 Llama split over 2
 * devices differs from the unsharded run by ~0.6 % of max|logit|). An
 * output whose values are all small is still held to its own scale (bf16
 * softmax over 4096 zeros giving 1/256 instead of 1/4096 fails). NaN
 * agrees only with NaN, an infinity only with the same infinity. */
typedef struct ppcc_tolerance {
  double rtol, atol;
} ppcc_tolerance;
ppcc_tolerance ppcc_check_tolerance(ppcc_dtype t);
/* Compares two tensors of the same dtype and shape. */
typedef struct ppcc_compare_result {
  double max_abs, max_rel;
  bool ok;
  double atol;          /* the widened atol used */
  int64_t n_bad;        /* elements beyond the bound (all when shapes differ) */
  int64_t n_nan;        /* of those, NaN where the reference is not NaN */
  int64_t worst;        /* flat index of the element furthest past its bound
                           (or closest to it when all pass); -1: none */
  double worst_got, worst_ref;
} ppcc_compare_result;
ppcc_compare_result ppcc_compare(const ppcc_host_tensor *got, const ppcc_host_tensor *ref);
/* --check down to the first divergent value: g runs again sharded (on
 * opts->execute, else the interpreter) and unsharded, every op result
 * captured, and the results are compared in program order with the
 * reference by ppcc_compare's criterion (the scale M of the whole value):
 * split shards with the reference's slice, replicated and unsharded
 * shards each with the whole reference, partial sums (unreduced) as the
 * sum of their shards. When the sharded executor cannot capture (the JIT
 * failing to build its capture module), the interpreter captures. */
typedef struct ppcc_divergence {
  bool found;
  int op;               /* index into g->ops of the op computing `value`; -1: a param or input */
  int value;
  int shard;            /* first differing shard; -1: the sum of the shards */
  int n_bad_shards, n_shards;
  ppcc_compare_result cmp; /* of that shard (or sum) */
  int64_t worst_at[PPCC_MAX_RANK]; /* the worst element's index in the whole value */
  bool on_interp;       /* opts->execute was given but the interpreter captured */
  char why_not_jit[1024];  /* why the JIT did not capture ("" if it did) */
} ppcc_divergence;
ppcc_status ppcc_find_divergence(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *opts,
                                 ppcc_divergence *out, ppcc_diag *d);

/* The first value, in program order (params and inputs first, then op
 * results), holding a NaN or an infinity when g runs unsharded on the
 * interpreter with every result captured: *value is its index, -1 if
 * every float value is finite; *element its first bad flat index. */
ppcc_status ppcc_find_first_nonfinite(const ppcc_graph *g, const ppcc_run_data *data, int threads, int *value,
                                      int64_t *element, ppcc_diag *d);

/* Compares the outputs named in expects with their .npy files by
 * ppcc_compare; an error names the output, the file and the errors. */
ppcc_status ppcc_expect_outputs(const ppcc_graph *g, const ppcc_input_arg *expects, int n,
                                const ppcc_host_tensor *got, FILE *log, ppcc_diag *d);

#endif
