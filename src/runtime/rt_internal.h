/* Shared helpers of the runtime's files; not a public interface. */
#ifndef PPCC_RT_INTERNAL_H
#define PPCC_RT_INTERNAL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "ppcc/runtime.h"

/* A read-only memory-mapped file (no copy of the contents). */
typedef struct rt_mapped_file {
  const unsigned char *data;
  size_t size;
  char *path;
} rt_mapped_file;

ppcc_status rt_map_file(const char *path, rt_mapped_file *f, ppcc_diag *d);
void rt_unmap_file(rt_mapped_file *f);

/* 64-byte aligned buffers (whole cache lines, SIMD friendly); bytes may be
 * 0. rt_free accepts NULL. */
void *rt_alloc(int64_t bytes);
void *rt_calloc(int64_t bytes);
void rt_free(void *p);
/* Temporaries recycled across ops and runs (a process-wide cache of freed
 * blocks, reused for requests of up to their size and at least half of
 * it): no allocation or page fault per op in the steady state. Free only
 * with rt_reuse_free. */
void *rt_reuse_alloc(int64_t bytes);
void *rt_reuse_calloc(int64_t bytes);
void rt_reuse_free(void *p);

/* Geometry of a split along dim of a shape: the tensor is
 * [outer][count][inner] elements, shard i the [outer][inner] block. */
typedef struct rt_split_geom {
  int64_t outer, inner;
} rt_split_geom;
rt_split_geom rt_split_geometry(int rank, const int64_t *shape, int dim, int count);
/* Copies shard i out of / into a full buffer (elem_size bytes each). */
void rt_copy_shard_out(const void *full, void *shard, rt_split_geom g, int count, int i,
                       int elem_size);
void rt_copy_shard_in(void *full, const void *shard, rt_split_geom g, int count, int i,
                      int elem_size);

/* Adds src into acc (count elements of dtype; floats accumulate in f32 and
 * round once per call, so callers summing many buffers use rt_acc_f32). */
void rt_to_f32(ppcc_dtype dtype, const void *src, float *dst, int64_t count);
void rt_from_f32(ppcc_dtype dtype, const float *src, void *dst, int64_t count);
/* acc[j] += src[j] for f32 accumulators from any numeric dtype. */
void rt_acc_f32(ppcc_dtype dtype, const void *src, float *acc, int64_t count);
/* Exact sum for integer dtypes: acc[j] += src[j]. */
void rt_add_int(ppcc_dtype dtype, const void *src, void *acc, int64_t count);

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

/* Threads kernels may use (set per run). */
int rt_kernel_threads(void);
/* src/runtime/affinity.c: where a run's device threads (between enter
 * and leave) and OpenBLAS's workers go, within the first `cores` of the
 * process's cores: LONE_DEVICE (one device computes at a time with
 * blas_threads > 1): the devices on the first core, the workers on the
 * others; SPREAD (several at once, one thread each): device d on core
 * d mod cores; ANYWHERE: the scheduler decides. */
typedef enum { RT_PLACE_ANYWHERE, RT_PLACE_LONE_DEVICE, RT_PLACE_SPREAD } rt_placement;
void rt_place_threads(rt_placement how, int cores, int blas_threads);
/* A device thread's program runs between these (placed as above). */
void rt_device_thread_enter(int dev);
void rt_device_thread_leave(void);
/* One thread budget for a run: `devices` device threads (OpenMP, one
 * level), each kernel call using per_device threads (OpenBLAS's), placed
 * `how` within `cores` cores; the caller makes devices * per_device <=
 * cores. */
void rt_thread_budget(int devices, int per_device, rt_placement how, int cores);
/* The budget of a run of g on `cores` cores, `local` of its devices
 * running in this process: the kernel threads go to the devices that can
 * compute at the same time (ppcc_concurrent_devices), not to all of them.
 * --deterministic (row-invariant matmul) counts as many microbatches as
 * devices, so the kernel thread count (and a BLAS call's bits) cannot
 * change with M. */
void rt_run_thread_budget(const ppcc_graph *g, int microbatches, int cores, int local);
/* The end of a run's device threads: a device that finished sleeps here
 * until all have (an OpenMP barrier would spin on its core, taking it
 * from the BLAS threads of the stages still computing). Set `left` to the
 * thread count before any thread arrives. */
typedef struct rt_finish_gate {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int left;
} rt_finish_gate;
#define RT_FINISH_GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}
void rt_finish_gate_wait(rt_finish_gate *gate);

/* ---- per-device arenas (arena.c) ---- */

#define RT_ARENA_ALIGN 64
int64_t rt_arena_round(int64_t bytes);
/* One buffer of a device: live from step birth to step death inclusive
 * (steps in the device's program order); offset is set by the plan. */
typedef struct rt_arena_buf {
  int64_t bytes;
  int birth, death;
  int64_t offset;
} rt_arena_buf;
/* Best-fit offsets for n buffers; returns the arena size (high-water
 * mark, each buffer rounded up to RT_ARENA_ALIGN), -1 when out of memory. */
int64_t rt_arena_plan(rt_arena_buf *b, int n);
/* A block of at least `bytes` for device dev: the pooled block of an
 * earlier run when large enough (*fresh false), else a new one (*fresh
 * true: its pages were never touched). rt_arena_give returns it to the
 * pool (the larger of two blocks is kept). */
void *rt_arena_take(int dev, int64_t bytes, bool *fresh);
void rt_arena_give(int dev, void *p, int64_t bytes);
/* What the last run planned for dev (ppcc_rt_arena_bytes reads it). */
void rt_arena_record(int dev, int64_t planned, int64_t scratch);
/* Whether op's kernel is a byte-for-byte copy of operand 0 (reshape): the
 * executor makes its result a view of the operand instead. */
bool rt_kernel_is_view(const ppcc_op *op);
/* A transpose/permute of a rank-`rank` operand that only swaps the last
 * two dims, and whether operand k of op accepts such a tensor unmoved
 * (ppcc_tensor.last_two_swapped): the executor then folds the transpose
 * into that consumer. */
bool rt_kernel_swaps_last_two(const ppcc_op *op, int rank);
bool rt_kernel_reads_swapped(const ppcc_op *op, int k);

/* ---- microbatching (microbatch.c) ---- */

/* mg = g with every shape for one of m microbatches (dim 0 of every input
 * divided by m); values and ops are copied, everything else is shared
 * with g. User error naming the input, op or value if the graph cannot
 * run on microbatches. Free with rt_microbatch_graph_free. */
ppcc_status rt_microbatch_graph(const ppcc_graph *g, int m, ppcc_graph *mg, ppcc_diag *d);
void rt_microbatch_graph_free(ppcc_graph *mg);
/* The pipeline segments and "op involves dev" are ppcc_pipeline_segments
 * and ppcc_op_involves (src/ir/pipeline_segments.c), shared with the
 * report's prediction. */

/* ---- per-device timeline, Chrome trace, statistics (trace_stats.c) ---- */

typedef struct rt_span {
  int op, microbatch;
  double start, end; /* seconds since the run started */
} rt_span;

/* One end of a transfer: a flow arrow from the send to the receive. */
typedef struct rt_flow_end {
  int64_t id; /* the same at both ends */
  double t;
  bool is_send;
} rt_flow_end;

/* Written only by its device's thread, so no locking. */
typedef struct rt_device_timeline {
  rt_span *spans;
  int n_spans, cap_spans;
  rt_flow_end *flows;
  int n_flows, cap_flows;
  bool oom;
} rt_device_timeline;

typedef struct rt_timeline {
  int n_devices;
  rt_device_timeline *dev;
} rt_timeline;

bool rt_timeline_init(rt_timeline *t, int n_devices);
void rt_timeline_free(rt_timeline *t);
void rt_timeline_span(rt_timeline *t, int dev, int op, int microbatch, double start, double end);
void rt_timeline_flow(rt_timeline *t, int dev, int64_t id, bool is_send, double at);
/* Chrome trace event format, written atomically (temporary + rename);
 * _to writes into an open output file and closes it, uncommitted. */
struct ppcc_outfile;
ppcc_status rt_timeline_write_to(const rt_timeline *t, const ppcc_graph *g, struct ppcc_outfile *f, ppcc_diag *d);
ppcc_status rt_timeline_write(const rt_timeline *t, const ppcc_graph *g, const char *path, ppcc_diag *d);
ppcc_status rt_timeline_stats(const rt_timeline *t, const ppcc_graph *g, int microbatches, double wall_ms,
                              ppcc_pipeline_stats *s, ppcc_diag *d);

/* ---- per-device memory accounting (mem_account.c) ---- */

typedef struct rt_mem_accounting {
  int n_devices;
  int64_t *live, *peak; /* per device: bytes held now, high-water mark */
} rt_mem_accounting;
bool rt_mem_accounting_init(rt_mem_accounting *a, int n_devices);
void rt_mem_accounting_free(rt_mem_accounting *a);
/* +bytes when a value buffer of device dev is allocated, -bytes when it
 * is freed (a NULL accounting ignores it). */
void rt_mem_account(rt_mem_accounting *a, int dev, int64_t delta);
/* --check-plan on either backend: one forward's per-(stage, device) busy
 * times (cells of them), wall time and (op_ms, NULL when not recorded)
 * per-op busy times, kept for ppcc_plan_measure_summarize's medians over
 * the warm forwards (peak bytes are the caller's: each backend counts its
 * own). */
struct ppcc_plan_measure;
/* A few measurements sorted ascending, and (sorting them) their median:
 * the middle one, or the mean of the middle two; 0 for none. */
void rt_sort_doubles(double *v, int n);
double rt_median(double *v, int n);
void rt_plan_measure_add_forward(struct ppcc_plan_measure *m, const double *busy, size_t cells, double wall_ms,
                                 const double *op_ms);

/* ---- distributed runs (comm_mpi.c, or dist_stub.c without MPI) ---- */

/* Whether ppcc_mpi_distribute made this run distributed. */
bool rt_dist_active(void);
/* Whether device dev runs in this process (always true when not
 * distributed), and this process's rank (0). */
bool rt_dist_local(int dev);
int rt_dist_rank(void);
/* The rank that runs device dev (0 when not distributed). */
int rt_dist_rank_of(int dev);
/* How many devices this rank runs, and the cores it may use by default:
 * the host's cores divided among the ranks on that host. */
int rt_dist_local_devices(void);
int rt_dist_rank_cores(void);
/* The device of rank 0 that receives every remote output shard. */
int rt_dist_collector(void);
/* Whether this rank needs the data of leaf v (a shard of it is local). */
bool rt_dist_holds_value(const ppcc_graph *g, int v);
/* The communicator of the running executor receives other ranks' aborts
 * (NULL: none running). */
void rt_dist_bind_comm(ppcc_rt_comm *c);
/* mapped_shard.c: shard i of param p cut from its full tensor in a mapped
 * weights file, the file's pages released as they are copied (MPI runs:
 * a rank's memory is its own shards). */
void *rt_copy_mapped_shard(const void *full, const ppcc_value *p, int i);
/* resident.c: the run data's resident param shards (ppcc_resident_shard). */
typedef struct ppcc_resident ppcc_resident;
ppcc_resident *rt_resident_new(void);
ppcc_resident *rt_resident_ref(ppcc_resident *r);
void rt_resident_unref(ppcc_resident *r);
/* Shard i of param v (value p) under layout l, made on first use (mapped:
 * full lies in a file mapping whose pages a copy may release, MPI runs);
 * NULL when out of memory or the run data has no resident store. */
const void *rt_resident_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i,
                              bool mapped);
bool rt_param_mapped(const ppcc_run_data *data, int v, bool dist);
/* State input v's shard i of microbatch mb (ppcc_run_data_bind_state):
 * the current bytes, or with next the buffer an executor that cannot write
 * in place fills (then rt_state_flip makes it current). */
void *rt_state_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i, int mb, bool next);
void rt_state_flip(const ppcc_run_data *data, const ppcc_value *p, ppcc_layout l, int i, int mb);
/* The state input fed by output k, or -1. */
int rt_state_input(const ppcc_graph *g, const ppcc_run_data *data, int k);
/* Adds to ppcc_rt_param_bytes_copied. */
void rt_count_param_copy(int64_t bytes);
/* mapped_shard.c: drops the whole pages of [p, p + bytes) of a read-only
 * file mapping from this process (a later touch reads them again). */
void rt_release_pages(const void *p, int64_t bytes);
/* comm.c: route moves to devices of other ranks through MPI. */
void rt_comm_attach_dist(ppcc_rt_comm *c);
/* comm.c: an abort another rank reported (not reported back). */
void rt_comm_remote_abort(ppcc_rt_comm *c, int device, const char *message);
/* The cross-rank halves of ppcc_rt_send / ppcc_rt_recv. */
int rt_dist_send(ppcc_rt_comm *c, int self, int dst, const void *buf, int64_t bytes);
int rt_dist_recv(ppcc_rt_comm *c, int self, int src, void *buf, int64_t bytes);
/* Tells every other rank that this one failed (once). */
void rt_dist_broadcast_abort(int device, const char *message);
/* Lets MPI progress and takes in other ranks' aborts. */
void rt_dist_poll(void);
/* Waits until every rank got here and sets *t0 (if not NULL) to the
 * common clock origin (omp_get_wtime). Every rank calls it exactly once
 * per distributed run, also when it failed before running. */
void rt_dist_sync(double *t0);
/* Every rank calls it once per distributed run with its own status; all
 * return failure (with the failing rank's message) if any rank failed. */
ppcc_status rt_dist_agree(ppcc_status st, ppcc_diag *d);
/* After a successful agreement: rank 0's timeline gets every other rank's
 * device tracks (the others send theirs). */
ppcc_status rt_dist_merge_timeline(rt_timeline *t, ppcc_diag *d);
/* After a successful run: rank 0 prints each rank's param bytes (its
 * shards) and peak RSS. */
void rt_dist_report_memory(FILE *log, int64_t param_bytes);

/* ppcc_compare with the tolerance's scale M = scale_of (the max |ref| of
 * the whole tensor when ref is one shard of it); scale_of < 0: of ref. */
ppcc_compare_result rt_compare_at_scale(const ppcc_host_tensor *got, const ppcc_host_tensor *ref, double scale_of);
/* After output k of a --check failed: re-runs with every result captured
 * and reports the first divergent value as notes through d
 * (divergence.c). */
void rt_report_divergence(const ppcc_graph *g, const ppcc_run_data *data, const ppcc_run_options *o, int k,
                          ppcc_diag *d);

ppcc_status rt_report_comparison(const ppcc_value *p, const ppcc_compare_result *r, const char *label,
                                 const char *against, FILE *log, ppcc_diag *d);

#endif
