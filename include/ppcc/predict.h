/* Predicted memory and time of a placed graph (issue 17), and the check of
 * a run against them (`ppcc run --check-plan`). Implemented in
 * src/plan/predict.c (core: no runtime needed); the runtime fills a
 * ppcc_plan_measure, `ppcc calibrate` fills a ppcc_calibration.
 *
 * Memory model (per device, what the interpreter executor holds in its
 * value buffers, src/runtime/exec/executor.c):
 *   - every param shard on the device, loaded once and resident;
 *   - every input shard of every microbatch, loaded before the run starts;
 *   - a result shard is allocated when its op runs on the device (compute
 *     results, transfer destinations, collective results); an in-place
 *     result (P7) aliases its destination and allocates nothing;
 *   - after op j the device frees the buffers of the operands whose last
 *     reader is op j (an in-place destination lives as long as its
 *     result), and results nobody reads; graph outputs stay;
 *   - with M microbatches each device runs, per pipeline segment, the
 *     segment's ops for microbatch 0..M-1 (ppcc_pipeline_segments), on
 *     microbatch-sized values (batch-carrying values: bytes / M).
 * Peak = the largest sum of these on the device over its program, split
 * at that point into params + activations (inputs and compute results, of
 * every microbatch in flight) + KV cache (destinations of in-place
 * updates) + transfer buffers (results of transfers and collectives).
 * Scratch that lives only inside one op (a replicated operand's slice,
 * the staging copy of a send) is in neither the prediction nor the
 * measurement.
 *
 * JIT memory model (ppcc_predict_options.jit; measured by
 * src/runtime/jit/jit_exec.c: argument shards + the high-water mark of what
 * the compiled code allocates through src/runtime/jit/jit_arena.c):
 *   - params, inputs and one buffer per output shard are arguments the
 *     executor holds for the whole run; the result an output's op computes
 *     is a buffer of its own, copied into the output argument after its
 *     last reader (at once if none);
 *   - every buffer the device function allocates is freed right after its
 *     last reader (src/emit/exec/exec_dealloc.c), and the arena reuses its
 *     bytes: results nobody reads are freed at once; inputs and params are
 *     arguments and stay;
 *   - a reshape is a view (not outlined, src/emit/exec/exec_kernel.c), and the
 *     buffer under a view lives until the view's last reader; an in-place
 *     op (index_copy) copies its destination into a new result, so the
 *     destination is not kept for it;
 *   - a layout change (src/emit/exec/exec_comm.c) whose shard stays on its
 *     home device is the operand's buffer (whole to whole, split to split
 *     on the same dim) or, for the offset-0 cut of a split whose leading
 *     dims are 1, a view (the operand then lives as long as the result);
 *     other cuts, receives, gathers and reductions are new buffers;
 *   - a row-parallel contraction (unreduced result) next to a replicated
 *     operand copies that operand's slice inside its kernel (lower_ops.c):
 *     counted while the op runs;
 *   - with M > 1 the JIT does not run (the interpreter does).
 * Not modelled: other temporaries that kernels allocate and free inside
 * one op (a row reduction's accumulator, a bias-add's staging buffer);
 * they are in the measurement when live at its high-water mark, which is
 * now often inside an op (a few hundred bytes on most shipped models, a
 * biased linear's 1.5 KiB of 9.7 KiB on inserted_collectives,
 * tests/plan_check.sh).
 *
 * Time model (per device, per op shard it computes, per microbatch):
 *   interpreter, when the calibration file has the op kind's cost
 *   (op_costs, measured by `ppcc calibrate` through the interpreter;
 *   a GEMM of one or a few rows: its kernel's, ppcc_op_cost_key):
 *     t = call_us + flops * ns_per_flop + bytes * ns_per_byte
 *         + weight bytes * ((1 - cold) * ns_per_weight_byte + cold * ns_per_cold_weight_byte)
 *   (cold: ppcc_predict_cold_share of the graph's params and the caches
 *   of the cores the run uses, cache_bytes * min(cores, devices x kernel
 *   threads): a decode step streams its weights from memory, a small
 *   model finds them in cache) with those of ppcc_predict_op_work (batch-carrying
 *   operands and results divided by M), the FLOPs part of a contraction
 *   (> 16 FLOPs per result element) sped up by the sgemm rate with the
 *   device's kernel threads over the 1-thread rate; plus resume_us for
 *   the first op after its device waited that reads weights (a param
 *   operand, or a contraction's matrix: the wait let other threads push
 *   them out of the core's caches, while what the wait delivered is hot;
 *   the wait: the start of a pipeline segment and microbatch, a
 *   collective it takes part in or a transfer it receives; a residual of the model,
 *   which may be negative, taking back at most the op's own time); plus
 *   start_us for the first compute op of a device that starts computing
 *   without waiting (a first stage's; a file before format 4: only when
 *   the run has more devices than cores); both as the runtime places the
 *   device threads: spread over the cores, a kernel thread each
 *   (ppcc_devices_spread: resume_spread_us, start_spread_us; from format
 *   5 on, with no more device threads than cores, each alone on its
 *   core, start_own_core_us, and with k other device threads on the
 *   device's core start_own_core_us + k * (start_spread_us -
 *   start_own_core_us), at least 0 (from format 7 on the interpreter's
 *   may be below 0: a residual, taking back at most the first op's time
 *   with its resume); from format 6 on, a line through
 *   the measured k = 0, 1 and 3 (start_wide_us), and beyond 3 the last
 *   segment's; the resume likewise from k = 1 (resume_spread_us) to
 *   3 (resume_wide_us), resume_spread_us below), else sharing a core;
 *   the JIT, when the file has the op kind's jit_op_costs (measured by
 *   `ppcc calibrate` on JIT-compiled workloads): the same formula with
 *   those, jit_resume_us / jit_resume_spread_us and jit_start_us /
 *   jit_start_spread_us / jit_start_own_core_us (and their _wide_us) for the costs around waits (its busy time counts
 *   the device function around the waits; before format 4 no resume);
 *   a row-parallel
 *   contraction whose kernel first cuts a replicated operand to its part
 *   (see the JIT memory model) also pays that cut (the interpreter's
 *   kernels cut it too: operand_cut when the file has it): jit_operand_cut, else
 *   the JIT's slice cost (call_us + ns_per_byte * (the operand's bytes +
 *   the part's));
 *   both backends, with more than one kernel thread per device: plus
 *   pool_wake_us for the first op after the device waited (a transfer, a
 *   collective, the start of a forward of several devices) whose kernel
 *   splits across the threads (ppcc_predict_op_splits): they parked;
 *   the JIT with t > 1 kernel threads: times 1 + (jit_threads_factor - 1)
 *   (its cost key's own factor, jit_threads_factors, when the file has one)
 *   * (min(t, many_threads) - 1) / (many_threads - 1) (measured: its
 *   compiled code gains less from a second thread than the interpreter's
 *   kernels), and jit_concurrent_slowdown for concurrent_slowdown;
 *   the JIT's collectives and transfers, when the file has their op's
 *   jit_op_costs: call_us + ns_per_byte * ppcc_predict_move_bytes on
 *   each result device (the compiled code's allocations and copies
 *   around the communication call, which its busy time counts; the call
 *   itself not);
 *   otherwise (an older calibration file, an op kind not measured) the
 *   roofline:
 *     t = overhead [+ gemm call cost] + max(flops / rate, bytes / elementwise_bandwidth)
 *   where rate is the GEMM FLOP/s for contractions, else the elementwise
 *   FLOP/s, with the thread count each device gets (cores / devices, as
 *   the runtime's thread budget; elementwise: the per-thread rate with as
 *   many threads streaming as the stage has devices, up to the cores);
 *   t is divided by the device's relative speed.
 * A stage's work per microbatch is its slowest device's sum of t. The
 * pipeline is then simulated as the runtime runs it (simulate_pipeline in
 * src/plan/predict.c): device threads block while they wait and keep
 * their core while they have work, a stage runs microbatch i when it ran
 * i - 1, stage k - 1 handed i over (hop_us later) and cores are free for
 * its devices (a stage with more devices than cores runs at cores /
 * devices), and while t devices compute at once each is
 * concurrent_slowdown[t-1] times slower (interpreter; the JIT with its
 * per-op costs). A stage's
 * predicted time is the wall time it computes (what --check-plan
 * measures: compute spans); transfers and collectives are not busy time.
 * Links (devices spec "links", hosts per device or a distributed run's
 * ranks): a transfer between devices on two hosts takes latency + bytes /
 * bandwidth per microbatch; a stage's incoming link carries one microbatch
 * at a time (microbatch i leaves when stage k - 1 finished it and the link
 * is free) while both stages go on computing (sends are asynchronous); a
 * gather back to an earlier stage's device (the output onto device 0) is
 * a later pipeline segment, so its microbatches cross their link after the
 * last stage finished them all; outputs held on other hosts than device
 * 0's reach it after the run.
 * Predicted wall = the simulated run; bubble = 1 - sum_s T_s / (p wall).
 * Not modelled: other processes on the machine (a shared machine's load
 * delays a woken device thread, which lengthens the measured wall, hence
 * the bubble, more than the busy times). */
#ifndef PPCC_PREDICT_H
#define PPCC_PREDICT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ppcc/graph.h"

#define PPCC_CALIB_MAX_THREADS 64
#define PPCC_CALIB_MAX_OPS 64
/* The calibration file's format ("ppcc_calibration"): 2 adds the GEMM
 * kernels' own costs (keys OP.rows1 and OP.rows16, ppcc_op_cost_key);
 * 3 the cost of weight bytes the caches cannot hold (cache_bytes,
 * ns_per_cold_weight_byte: ppcc_predict_cold_share); 4 the wake of parked
 * kernel threads (pool_wake_us; the multithreaded fits no longer include
 * it) and the fixed costs around waits per placement of the device
 * threads (resume_spread_us ...; start_us then counts whatever the number
 * of devices); 5 the start where each spread device thread has a core of
 * its own (start_own_core_us: a forward's first op costs less than where
 * two device threads share each core); 6 the costs where four device
 * threads share each core (resume_wide_us, start_wide_us); 7 the
 * interpreter's starts where device threads spread (start_spread_us,
 * start_own_core_us, start_wide_us) as residuals, below 0 where a
 * forward's first op costs less than its modelled cost with the resume
 * the program's start counts (40 of the 42 fits of two calibrations below
 * 0, the medians -0.3 to -0.8 us where the resumes were 0.27 to 1.05;
 * clamped at 0, the first stage of each spread model read up to 1 us
 * long). Files of
 * formats 1 to 6 still read
 * (their weight bytes all cost ns_per_weight_byte before 3), the
 * calibration cache is measured again. */
#define PPCC_CALIBRATION_VERSION 7
/* Rows at most this many take the runtime's small-GEMM kernel
 * (RT_SMALL_M, src/runtime/kernels/kernels.h); one row its GEMV. */
#define PPCC_COST_SMALL_ROWS 16
/* The work from which the runtime's kernels split across their threads
 * (RT_SPLIT_*, src/runtime/kernels/kernels.h; ppcc_predict_op_splits):
 * small-row GEMMs, weights a part; larger ones, multiply-adds a part;
 * batched ones (attention), multiply-adds in all. */
#define PPCC_COST_SPLIT_SMALL_WORK (64 * 1024)
#define PPCC_COST_SPLIT_TILES_WORK (256 * 1024)
#define PPCC_COST_SPLIT_BATCHED_WORK (1 << 16)

/* The interpreter's measured cost of one op kind (the op table's name),
 * per op shard it computes: call_us + (flops * ns_per_flop + bytes *
 * ns_per_byte + weight_bytes * ns_per_weight_byte) / 1e3 microseconds,
 * flops the op-table FLOPs of the shard, bytes those of its non-param
 * operands and result, weight_bytes those of its param operands
 * (ppcc_predict_op_work), on one device with one kernel thread. */
typedef struct ppcc_op_cost {
  char name[32];              /* op name, or a kernel of it (ppcc_op_cost_key) */
  double call_us, ns_per_flop, ns_per_byte;
  double ns_per_weight_byte; /* per byte of param operands (optional in the file: 0) */
  double ns_per_cold_weight_byte; /* per byte of param operands the caches cannot hold
                                 (ppcc_predict_cold_share; optional in the file, from
                                 format 3 on: else ns_per_weight_byte) */
} ppcc_op_cost;

/* A factor of one op's cost key (ppcc_op_cost_key). */
typedef struct ppcc_key_factor {
  char name[32];
  double factor;
} ppcc_key_factor;

/* This machine's speeds, by thread count (index t-1 for t threads). */
typedef struct ppcc_calibration {
  bool calibrated;            /* false: the documented defaults */
  int version;                /* the file's format (PPCC_CALIBRATION_VERSION when measured) */
  int n_threads;              /* entries measured (1..PPCC_CALIB_MAX_THREADS) */
  double gemm_gflops[PPCC_CALIB_MAX_THREADS];
  double elementwise_gbps[PPCC_CALIB_MAX_THREADS];
  double elementwise_gflops[PPCC_CALIB_MAX_THREADS]; /* op-table FLOPs of a non-GEMM kernel (gelu) */
  double copy_gbps[PPCC_CALIB_MAX_THREADS];
  double op_overhead_us;      /* fixed cost of one compute step */
  double gemm_call_us;        /* extra fixed cost of a GEMM call (small GEMMs
                                 run far below the peak rate) */
  int cores;                  /* cores of the machine measured */
  int n_op_costs;             /* 0: an older file; every op uses the roofline */
  ppcc_op_cost op_costs[PPCC_CALIB_MAX_OPS];
  double hop_us;              /* a microbatch's hand-over between pipeline
                                 stages (send, wake-up of the receiver);
                                 0: not measured */
  int n_slowdown;             /* entries of concurrent_slowdown; 0: not measured */
  double concurrent_slowdown[PPCC_CALIB_MAX_THREADS]; /* [t-1]: how much slower a
                                 device computes while t compute at once (1 for t = 1) */
  double resume_us;           /* extra cost of a compute op that runs right
                                 after its device waited (program start, a
                                 receive, a collective): caches gone cold;
                                 0: not measured */
  int n_jit_op_costs;         /* 0: none (an older file, or a ppcc without the JIT) */
  ppcc_op_cost jit_op_costs[PPCC_CALIB_MAX_OPS]; /* the JIT's costs per op kind
                                 ("jit_op_costs"; same terms as op_costs, measured on
                                 JIT-compiled workloads, ppcc_calibrate_jit_ops):
                                 what the prediction of a JIT run uses */
  int many_threads;           /* kernel threads of op_costs_many ("op_costs_threads",
                                 the calibration's most); 0: none */
  int n_op_costs_many;
  ppcc_op_cost op_costs_many[PPCC_CALIB_MAX_OPS]; /* the interpreter's costs per op kind
                                 with many_threads kernel threads on the device
                                 ("op_costs_multithreaded", fitted on the same
                                 workloads): with t threads in between, the op takes
                                 the time linear in t between the two fits; the JIT's
                                 cost scales by the same ratio (it calls the same
                                 sgemm). Without them a contraction's FLOPs speed up
                                 as the sgemm rate (gemm_gflops), which a GEMM of
                                 32 rows never sees in a forward. */
  char cpu[128];              /* the CPU model measured ("cpu"; optional, "" unknown) */
  char ppcc_version[32];      /* the ppcc that measured ("ppcc_version"; optional):
                                 the calibration cache is redone when it differs */
  double start_us, jit_start_us; /* extra cost of a device's first compute op of a
                                 forward when it starts without waiting (the
                                 woken device threads start on its core, its
                                 caches went cold since the last forward): the
                                 interpreter's, the JIT's ("start_us",
                                 "jit_start_us"; optional, 0: not measured;
                                 before format 4 only with more device threads
                                 than cores) */
  /* The same fixed costs where the runtime spreads the device threads over
   * the cores, one kernel thread each (ppcc_devices_spread: a woken device
   * runs on a core that idled, TP stages), and the JIT's resume (its busy
   * time counts the device function around the waits); resume_us and
   * start_us are those of device threads sharing a core (RT_PLACE_LONE_DEVICE:
   * a pipeline's stages hand over on one core). From format 4 on, all
   * optional ("resume_spread_us", "start_spread_us", "jit_resume_us",
   * "jit_resume_spread_us", "jit_start_spread_us"; 0: not measured). */
  double resume_spread_us, start_spread_us, jit_resume_us, jit_resume_spread_us, jit_start_spread_us;
  /* The start where the spread device threads are no more than the cores,
   * each alone on its core (a TP group of the machine's size: tp_ffn,
   * gen_llama --tp 2 on 2 cores): no other device thread of the run wakes
   * on its core as a forward starts. Measured (interp, 2 cores, per op
   * over 60 forwards): a 2-device TP chain's first op 0.5-0.6 us beyond
   * its fitted cost, the same op 1.3 us where 4 device threads share the
   * 2 cores. From format 5 on ("start_own_core_us",
   * "jit_start_own_core_us"; optional: 0); their resume is the spread one. */
  double start_own_core_us, jit_start_own_core_us;
  /* Both where four spread device threads share each of the 2 cores
   * (tp_chain_model of 1 block in 4 stages: 8 devices, as
   * ppffn_sharktank): each device has 3 others on its core, against 1
   * for the *_spread_us. Measured (interp, 2 cores, 6 calibrations): a
   * forward's first op 1.3-1.55 us more (start), against 0.4-0.65 with one
   * other. From
   * format 6 on ("resume_wide_us", "start_wide_us", "jit_resume_wide_us",
   * "jit_start_wide_us"; optional: 0, not measured). */
  double resume_wide_us, start_wide_us, jit_resume_wide_us, jit_start_wide_us;
  bool have_jit_cut;          /* jit_cut measured ("jit_operand_cut"; optional) */
  ppcc_op_cost jit_cut;       /* the JIT's cut of a replicated operand inside a
                                 row-parallel contraction's kernel: call_us +
                                 ns_per_byte * (operand + part bytes) */
  double jit_threads_factor;  /* the JIT with many_threads kernel threads: this times
                                 the time its costs with the interpreter's scaling
                                 give it, as measured (linear in the threads from 1;
                                 "jit_threads_factor", optional: 0, none; ppcc
                                 calibrate no longer writes it, nor the next:
                                 see calibrate_jit_scaling) */
  int n_jit_threads_factors;  /* jit_threads_factor of the workloads whose time one cost
                                 key dominates (a decode's GEMVs gain nothing from a
                                 second thread in the JIT, a prefill's GEMMs do):
                                 "jit_threads_factors", optional; an op whose key (or
                                 name) has none takes jit_threads_factor */
  ppcc_key_factor jit_threads_factors[PPCC_CALIB_MAX_OPS];
  int n_jit_slowdown;         /* entries of jit_concurrent_slowdown; 0: the interpreter's */
  double jit_concurrent_slowdown[PPCC_CALIB_MAX_THREADS]; /* concurrent_slowdown of JIT
                                 runs ("jit_concurrent_slowdown", optional) */
  double cache_bytes;         /* the cache of one core that holds weights from one
                                 forward to the next (its L2; "cache_bytes",
                                 optional: 0, no weight byte is cold) */
  double pool_wake_us;        /* a device's kernel threads sleep while it waits (a
                                 transfer, a collective, the end of a forward of
                                 several devices: rt_pool_park); its next kernel
                                 split across them (ppcc_predict_op_splits) first
                                 wakes them: this much longer, with more than one
                                 kernel thread ("pool_wake_us", optional from
                                 format 4 on: 0, not measured) */
  bool have_cut;              /* cut measured ("operand_cut"; optional) */
  ppcc_op_cost cut;           /* the same cut as the interpreter makes it (a
                                 scratch slice of the operand, executor.c) */
} ppcc_calibration;

/* Defaults when uncalibrated: 20 GFLOP/s GEMM, 5 GB/s and 1 GFLOP/s
 * elementwise, 8 GB/s copy per thread (GEMM scaling linearly with
 * threads), 2 us per step, 2 us more per GEMM call; no per-op costs,
 * hand-over, resume cost or concurrency slowdown. */
void ppcc_calibration_defaults(ppcc_calibration *c);
/* Reads a calibration file; a bad file is a user error naming the file
 * and the field. */
ppcc_status ppcc_calibration_read(const char *path, ppcc_calibration *c, ppcc_diag *d);
/* The same from text already read (`path` names it in diagnostics). */
ppcc_status ppcc_calibration_parse(const char *path, const char *text, size_t len, ppcc_calibration *c, ppcc_diag *d);
/* Writes it through the atomic-output module. */
ppcc_status ppcc_calibration_write(const char *path, const ppcc_calibration *c, ppcc_diag *d);
/* The same into an output already opened (ppcc_outfile_open), so that a
 * path that cannot be created is refused before measuring; commits it, or
 * aborts it on error. */
struct ppcc_outfile;
ppcc_status ppcc_calibration_write_to(struct ppcc_outfile *f, const ppcc_calibration *c, ppcc_diag *d);
/* The calibrated cost of op kind `name`, NULL if the file has none. */
const ppcc_op_cost *ppcc_calibration_op_cost(const ppcc_calibration *c, const char *name);
/* Sets (adds or replaces) the cost of op kind c->name; false when full. */
bool ppcc_calibration_set_op_cost(ppcc_calibration *c, const ppcc_op_cost *cost);
/* The same for the JIT's costs (jit_op_costs). */
const ppcc_op_cost *ppcc_calibration_jit_op_cost(const ppcc_calibration *c, const char *name);
bool ppcc_calibration_set_jit_op_cost(ppcc_calibration *c, const ppcc_op_cost *cost);
/* The same for the interpreter's costs with many_threads kernel threads
 * (op_costs_many). */
const ppcc_op_cost *ppcc_calibration_op_cost_many(const ppcc_calibration *c, const char *name);
bool ppcc_calibration_set_op_cost_many(ppcc_calibration *c, const ppcc_op_cost *cost);
/* The key of op's cost in the cost tables: the op name, or for a
 * contraction (more than 16 FLOPs per result element) whose GEMMs have
 * one row "NAME.rows1", 2 to PPCC_COST_SMALL_ROWS rows "NAME.rows16"
 * (the runtime's GEMV and small-GEMM kernels run far from the sgemm's
 * rate, and from each other). The prediction takes the key's cost, else
 * the op name's. Rows: the result's elements over its last dim, or its
 * second-to-last dim when the second operand is batched (rank > 2). */
void ppcc_op_cost_key(const ppcc_graph *g, const ppcc_op *op, char *key, size_t n);
/* More than 16 FLOPs per result element of the unsharded op: a GEMM-like
 * kernel (the roofline's contraction; the runtime's sgemm or attention,
 * which the JIT calls too). */
bool ppcc_predict_is_contraction(const ppcc_graph *g, const ppcc_op *op);
/* Whether the runtime's kernel for op splits its work across `threads`
 * kernel threads (the pool, thread_pool.c), as the kernels decide it:
 * two parts' work (PPCC_COST_SPLIT_*) for GEMMs, small-row (gemm_small.c)
 * or larger (gemm_tiles.c); one part's for batched ones (attention,
 * kernels_llm.c). */
bool ppcc_predict_op_splits(const ppcc_graph *g, const ppcc_op *op, int threads);
/* What the time model charges a compute op for one result shard: its
 * op-table FLOPs (rep_op_flops_per_shard), the bytes of its non-param
 * operand shards and first result shard, and of its param operand shards
 * (weights), one microbatch being the whole batch. */
void ppcc_predict_op_work(const ppcc_graph *g, const ppcc_op *op, double *flops, double *bytes, double *weight_bytes);
/* The JIT's factor with the most kernel threads for op: its cost key's,
 * else its name's (jit_threads_factors), else jit_threads_factor (0: none). */
double ppcc_calibration_jit_threads_factor(const ppcc_calibration *c, const ppcc_graph *g, const ppcc_op *op);
/* What the JIT's own cost of a collective or transfer (its jit_op_costs
 * row under the op's name) is charged on each result device: the bytes of
 * one operand shard and one result shard. */
double ppcc_predict_move_bytes(const ppcc_graph *g, const ppcc_op *op);
/* The share of weight bytes a run reads from beyond the caches: every
 * forward reads all its params (param_bytes, every device's shards, and
 * of every model run in turn), and the caches of the cores it runs on
 * (cache_bytes) hold a part of them until the next forward:
 * 1 - cache_bytes / param_bytes, 0 when they all fit. */
double ppcc_predict_cold_share(double param_bytes, double cache_bytes);
/* The bytes of every param shard of g (all devices). */
double ppcc_predict_param_bytes(const ppcc_graph *g);
/* An op's cost in us by a cost row: call_us + (flops * ns_per_flop +
 * bytes * ns_per_byte + weight bytes * (1 - cold) * ns_per_weight_byte +
 * weight bytes * cold * ns_per_cold_weight_byte) / 1e3. */
double ppcc_op_cost_us(const ppcc_op_cost *k, double flops, double bytes, double weight_bytes, double cold);

typedef struct ppcc_predict_options {
  int microbatches;                 /* M; 0 or 1: none */
  const ppcc_calibration *calib;    /* NULL: defaults (uncalibrated) */
  const double *device_speed;       /* relative speed per device; NULL: all 1.0 */
  int threads;                      /* cores the run uses; 0: calib->cores, or
                                       uncalibrated one per device */
  const bool *view_ops;             /* per op: its result is a view of operand 0
                                       (the interpreter's reshape views and folded
                                       transposes: ppcc_rt_view_ops); NULL: none */
  bool jit;                         /* the JIT's buffers (see "JIT memory model" above);
                                       view_ops then from ppcc_rt_jit_view_ops */
  const int *device_host;           /* per device: its host (a distributed run: its
                                       rank); NULL: the devices spec's hosts */
} ppcc_predict_options;

/* A transfer between devices on two hosts joined by a link of the devices
 * spec ("links"): what one microbatch moves and how long the link takes. */
typedef struct ppcc_transfer_prediction {
  int op;                           /* the transfer op */
  const char *value;                /* its result (points into the graph) */
  int from_device, to_device, from_host, to_host;
  int64_t bytes;                    /* per microbatch */
  double ms;                        /* per microbatch: latency + bytes / bandwidth */
} ppcc_transfer_prediction;

typedef struct ppcc_device_prediction {
  int device;
  int64_t peak_bytes;               /* = the four components below */
  int64_t param_bytes;
  int64_t activation_bytes;         /* at the peak, all microbatches in flight */
  int64_t kv_cache_bytes;
  int64_t transfer_bytes;
  int microbatches_in_flight;       /* microbatches holding activations at the peak */
  double flops;                     /* whole batch */
  double compute_ms;                /* predicted busy time */
} ppcc_device_prediction;

typedef struct ppcc_stage_prediction {
  int n_devices;
  int devices[PPCC_MAX_DEVICES];
  double flops, bytes;              /* slowest device's, whole batch */
  double time_ms;                   /* slowest device's busy time in the stage */
} ppcc_stage_prediction;

typedef struct ppcc_prediction {
  int n_devices, n_stages, microbatches;
  bool calibrated;
  ppcc_device_prediction *devices;
  ppcc_stage_prediction *stages;
  int *op_stage;                    /* per op: its stage */
  double wall_ms, bubble;           /* predicted pipeline wall and bubble */
  int n_transfers;                  /* transfers over links (devices spec "links") */
  ppcc_transfer_prediction *transfers;
  double outputs_ms;                /* outputs of other hosts sent to device 0's host
                                       after the run (a distributed run's rank 0) */
  double unoverlapped_ms;           /* with links: every stage's compute and every
                                       transfer one after the other (no pipelining) */
} ppcc_prediction;

/* A user error when the graph cannot run on opts->microbatches (the batch
 * dim of an input does not divide). */
ppcc_status ppcc_predict(const ppcc_graph *g, const ppcc_predict_options *opts, ppcc_prediction *p, ppcc_diag *d);
void ppcc_prediction_free(ppcc_prediction *p);

/* Memory of a loaded model in one process or MPI rank (`ppcc generate`:
 * a prefill and a decode graph over the same weights and KV caches).
 * graphs[0..n) bind the same resident param shards by name and the same
 * state: is_state[k][v] marks input v of graph k bound as state to an
 * output of the same shape and layout (ppcc_run_data_bind_state; the
 * state inputs of graph 0 are counted). Counted once for all the graphs:
 *   - params: each param shard a local device holds; a whole or
 *     replicated param once however many local devices hold it (they view
 *     one copy: the mapped file, or one made at load), a split or
 *     unreduced one per local shard; a table only looked up (the token
 *     embedding) only where looked up, its other pages left in the mapped
 *     file, unless held_whole[k][v] (NULL: none) says the load holds it
 *     whole in memory (converted or generated at load: all of it);
 *   - state: each local state shard, twice on the JIT (it writes the next
 *     state into a second buffer, then the two swap);
 * and the largest over the graphs of its working set: the local devices'
 * predicted peaks (ppcc_predict with view_ops[k] and jit) less their
 * params and states. local: per device, whether this process holds it
 * (NULL: every device). Not counted: the process itself (code, libraries,
 * the compiler's heap), which the caller measures before the weights. */
typedef struct ppcc_loaded_memory {
  int64_t param_bytes, state_bytes, activation_bytes;
  int64_t total_bytes; /* the three */
  int peak_graph;      /* the graph whose working set is counted */
} ppcc_loaded_memory;
ppcc_status ppcc_predict_loaded_memory(const ppcc_graph *const *graphs, const bool *const *is_state,
                                       const bool *const *view_ops, const bool *const *held_whole, int n,
                                       const bool *local, bool jit, ppcc_loaded_memory *m, ppcc_diag *d);
/* Per value of g: an input that an in-place update writes (a KV cache),
 * which a loaded model holds as state (NULL: out of memory; caller frees). */
bool *ppcc_loaded_state_inputs(const ppcc_graph *g);
/* The report's "loaded model" section (text) and "loaded_model" field
 * (JSON, followed by nothing: the caller writes the separator): g's
 * params, caches as state and working set in one process holding every
 * device, and with several pipeline stages in each rank of one stage
 * (rank -1 in JSON: the one process); opts->jit and view_ops choose the
 * backend's buffers. */
ppcc_status ppcc_loaded_memory_write_text(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out,
                                          ppcc_diag *d);
ppcc_status ppcc_loaded_memory_write_json(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out,
                                          ppcc_diag *d);

/* The report sections (text, JSON fields after "device_summary"). */
void ppcc_prediction_write_text(const ppcc_prediction *p, FILE *out);
void ppcc_prediction_write_json(const ppcc_prediction *p, FILE *out);

/* Warm forwards `ppcc run --check-plan` measures without --repeat (after
 * a cold one), and `ppcc calibrate` where it measures a stage as it does. */
#define PPCC_CHECK_PLAN_FORWARDS 10

/* Wall time of unmeasured forwards before the measured ones (at least
 * one): a plan predicts the steady state, and the cores reach it only
 * after running a while. Measured (2 cores, explicit_transfer, 200
 * forwards): after compile and load, the first ~10 ms of forwards ran
 * every op at half speed (a 256-element gelu 0.77-0.80 us, then
 * 0.37-0.39), and how many of the measured forwards fell there set the
 * median: a stage's 1.3 to 2.4 us between runs, 1.10 to 1.19 after this
 * warm-up. */
#define PPCC_CHECK_PLAN_WARMUP_MS 50

/* What `ppcc run --check-plan` measures (the runtime fills it). */
typedef struct ppcc_plan_measure {
  /* in */
  const int *op_stage;    /* per op: stage (ppcc_prediction.op_stage) */
  int n_stages;
  /* out (allocated by the caller: n_devices and n_stages * n_devices) */
  int64_t *peak_bytes;    /* per device: high-water mark of the value buffers */
  double *stage_busy_ms;  /* [stage * n_devices + device]: compute spans */
  double *stage_busy_lo, *stage_busy_hi; /* optional (NULL: not wanted), as
                             stage_busy_ms: the fastest and slowest warm forward */
  double wall_ms;
  double *op_busy_ms;     /* optional (NULL: not recorded), per op of the
                             graph: its compute spans summed over devices
                             and microbatches, the median over forwards */
  int n_ops;              /* entries of op_busy_ms (the graph's ops) */
  bool *held_whole;       /* optional (NULL: not wanted), per value of the
                             graph: a param the load holds whole in memory
                             (converted or generated), not a view of the
                             mapped file (ppcc_predict_loaded_memory) */
  bool filled;
  int forwards;           /* runs measured: the peak is the largest, busy
                             times and wall the median of the warm ones
                             (all but the first, when there are several:
                             the first is cold), once summarized. Set 0 to
                             start over. */
  /* the runtime's: every forward's figures, for the medians; freed by
     ppcc_plan_measure_release */
  double *history;
  size_t history_cap, history_cells, history_ops;
} ppcc_plan_measure;

/* Sets the busy times, their fastest and slowest, the wall and the op
 * times from the forwards recorded so far (the peak bytes are kept as each
 * forward ends): call it before reading them. */
void ppcc_plan_measure_summarize(ppcc_plan_measure *m);
/* Frees what the runtime kept in m (its history), not the caller's arrays. */
void ppcc_plan_measure_release(ppcc_plan_measure *m);

/* Prints predicted vs measured per device and per stage; a user error
 * naming the first device or stage off by more than the tolerance
 * (relative to the measured value). A negative time tolerance: stage times
 * are shown, said to be unchecked, and not checked. */
ppcc_status ppcc_plan_check(const ppcc_prediction *p, const ppcc_plan_measure *m, double memory_tolerance,
                            double time_tolerance, FILE *out, ppcc_diag *d);

/* The one thread budget (src/plan/concurrency.c): at most how many
 * devices of g compute at the same time with M microbatches (the largest
 * min(M, stages) stage groups, capped at g's devices), and the kernel
 * threads each device then gets from `cores` (never more busy threads than
 * cores). Both backends and the prediction use them. */
int ppcc_concurrent_devices(const ppcc_graph *g, int microbatches);
int ppcc_kernel_threads_per_device(int cores, int concurrent);
/* Whether a run's devices (several, one kernel thread each, on at least 2
 * cores) are pinned one to a core, device d on core d mod cores: the
 * runtime places them so (src/runtime/exec/affinity.c), the prediction's
 * pipeline simulation likewise. */
bool ppcc_devices_spread(int cores, int kernel_threads_per_device, int devices);
/* Whether one device computes at a time with several kernel threads: the
 * runtime pins its thread to the first core and the workers to the others,
 * and the devices share one pool of workers that no wait parks
 * (src/runtime/exec/affinity.c); the prediction then charges no wake. */
bool ppcc_lone_device(int kernel_threads_per_device, int concurrent);

#endif
