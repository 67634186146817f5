/* Door of src/runtime/exec/: the interpreter's executor and what the JIT's
 * executor shares with it: thread placement and budget, arenas,
 * microbatching, timelines and statistics, memory accounting, resident
 * param shards, comparison and divergence search. */
#ifndef PPCC_RT_EXEC_H
#define PPCC_RT_EXEC_H
#include "../rt_internal.h"

/* affinity.c: where a run's device threads (between enter
 * and leave) and OpenBLAS's workers go, within the first `cores` of the
 * process's cores: LONE_DEVICE (one device computes at a time with
 * blas_threads > 1): the devices on the first core, the workers on the
 * others; SPREAD (several at once, one thread each): device d on core
 * d mod cores; ANYWHERE: the scheduler decides. */
typedef enum { RT_PLACE_ANYWHERE, RT_PLACE_LONE_DEVICE, RT_PLACE_SPREAD } rt_placement;
void rt_place_threads(rt_placement how, int cores, int blas_threads);
/* run.c: freed buffers stay with the process for the next op and the
 * next forward (glibc would hand large ones back to the kernel at once,
 * and every reuse would fault its pages in again); ppcc calibrate sets
 * the same, so that its workloads allocate as runs do. */
void rt_keep_freed_memory(void);
/* A device thread's program runs between these (placed as above; a
 * pinned thread is SCHED_BATCH from then on). */
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

/* ---- microbatching (microbatch.c) ---- */

/* mg = g with every shape for one of m microbatches (dim 0 of every input
 * divided by m); values and ops are copied, everything else is shared
 * with g. User error naming the input, op or value if the graph cannot
 * run on microbatches. Free with rt_microbatch_graph_free. */
ppcc_status rt_microbatch_graph(const ppcc_graph *g, int m, ppcc_graph *mg, ppcc_diag *d);
void rt_microbatch_graph_free(ppcc_graph *mg);
/* The pipeline segments and "op involves dev" are ppcc_pipeline_segments
 * and ppcc_op_involves (src/plan/pipeline_segments.c), shared with the
 * report's prediction. */

/* ---- timeline, Chrome trace, statistics (trace_stats.c) ---- */

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

/* resident.c: the run data's resident param shards (ppcc_resident_shard). */
typedef struct ppcc_resident ppcc_resident;
ppcc_resident *rt_resident_new(void);
ppcc_resident *rt_resident_ref(ppcc_resident *r);
void rt_resident_unref(ppcc_resident *r);
/* Shard i of param v (value p) under layout l, made on first use (mapped:
 * full lies in a file mapping whose pages a copy may release: MPI runs,
 * and every run's shards made at load, ppcc_run_data_make_resident);
 * NULL when out of memory or the run data has no resident store. */
const void *rt_resident_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i,
                              bool mapped);
bool rt_param_mapped(const ppcc_run_data *data, int v, bool dist);
/* Whether param v's whole tensor was given back after load (release_cut):
 * only the shards made from it may be read. */
bool rt_param_released(const ppcc_run_data *data, int v);
/* An executor about to cut shard `shard` of param v from its full tensor:
 * an internal error when that tensor was given back (reading it would
 * read zeros), else PPCC_OK. */
ppcc_status rt_refuse_released(const ppcc_run_data *data, int v, const ppcc_value *p, int shard, ppcc_diag *d);
/* State input v's shard i of microbatch mb (ppcc_run_data_bind_state):
 * the current bytes, or with next the buffer an executor that cannot write
 * in place fills (then rt_state_flip makes it current). */
void *rt_state_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i, int mb, bool next);
void rt_state_flip(const ppcc_run_data *data, const ppcc_value *p, ppcc_layout l, int i, int mb);
/* The state input fed by output k, or -1. */
int rt_state_input(const ppcc_graph *g, const ppcc_run_data *data, int k);
/* Adds to ppcc_rt_param_bytes_copied. */
void rt_count_param_copy(int64_t bytes);

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
