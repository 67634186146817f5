/* Predicted memory and time of a placed graph (issue 17), and the check of
 * a run against them (`ppcc run --check-plan`). Implemented in
 * src/report/predict.c (core: no runtime needed); the runtime fills a
 * ppcc_plan_measure, `ppcc calibrate` fills a ppcc_calibration.
 *
 * Memory model (per device, what the interpreter executor holds in its
 * value buffers, src/runtime/executor.c):
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
 * src/runtime/jit_exec.c: argument shards + the high-water mark of what
 * the compiled code allocates through src/runtime/jit_arena.c):
 *   - params, inputs and one buffer per output shard are arguments the
 *     executor holds for the whole run; the result an output's op computes
 *     is a buffer of its own, copied into the output argument at the end;
 *   - every buffer the device function allocates lives until it returns
 *     (src/emit/exec_dealloc.c frees them all at the end): nothing is
 *     released after its last reader;
 *   - a reshape is a view (not outlined, src/emit/exec_kernel.c); an
 *     in-place op (index_copy) copies its destination into a new result;
 *   - a layout change (src/emit/exec_comm.c) whose shard stays on its
 *     home device is the operand's buffer (whole to whole, split to split
 *     on the same dim) or, for the offset-0 cut of a split whose leading
 *     dims are 1, a view; other cuts, receives, gathers and reductions are
 *     new buffers;
 *   - with M > 1 the JIT does not run (the interpreter does).
 * Not modelled: temporaries that kernels allocate and free inside one op
 * (a row reduction's accumulator, a bias-add's staging buffer); they are
 * in the measurement when live at its high-water mark (a few hundred
 * bytes on the shipped models, tests/plan_check.sh).
 *
 * Time model (per device, per op shard it computes):
 *   t = overhead [+ gemm call cost] + max(flops / rate, bytes / elementwise_bandwidth)
 * where rate is the GEMM FLOP/s for ops doing more than 16 FLOPs per
 * result element (contractions), else the elementwise FLOP/s (a roofline:
 * GEMMs are bound by FLOP/s, elementwise ops by the bytes they read and
 * write or by their arithmetic), divided by the device's relative speed; rates are
 * those of the thread count each device gets (cores / devices, as the
 * runtime's thread budget; elementwise: the per-thread rate with as many
 * threads streaming as the stage has devices, up to the cores; a stage
 * with more devices than cores takes devices/cores as long). A stage's time is its slowest device's
 * compute time over all microbatches. Transfers and collectives are not
 * busy time (a receive mostly waits for its peer). Predicted bubble for M
 * microbatches of p stages with times T_s: wall = sum_s T_s/M +
 * (M-1) max_s T_s/M (fill, steady state, drain), but at least the
 * stages' device time over the cores (devices time-share them), bubble =
 * 1 - sum_s T_s / (p wall). */
#ifndef PPCC_PREDICT_H
#define PPCC_PREDICT_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "ppcc/graph.h"

#define PPCC_CALIB_MAX_THREADS 64

/* This machine's speeds, by thread count (index t-1 for t threads). */
typedef struct ppcc_calibration {
  bool calibrated;            /* false: the documented defaults */
  int n_threads;              /* entries measured (1..PPCC_CALIB_MAX_THREADS) */
  double gemm_gflops[PPCC_CALIB_MAX_THREADS];
  double elementwise_gbps[PPCC_CALIB_MAX_THREADS];
  double elementwise_gflops[PPCC_CALIB_MAX_THREADS]; /* op-table FLOPs of a non-GEMM kernel (gelu) */
  double copy_gbps[PPCC_CALIB_MAX_THREADS];
  double op_overhead_us;      /* fixed cost of one compute step */
  double gemm_call_us;        /* extra fixed cost of a GEMM call (small GEMMs
                                 run far below the peak rate) */
  int cores;                  /* cores of the machine measured */
} ppcc_calibration;

/* Defaults when uncalibrated: 20 GFLOP/s GEMM, 5 GB/s and 1 GFLOP/s
 * elementwise, 8 GB/s copy per thread (GEMM scaling linearly with
 * threads), 2 us per step, 2 us more per GEMM call. */
void ppcc_calibration_defaults(ppcc_calibration *c);
/* Reads a calibration file; a bad file is a user error naming the file
 * and the field. */
ppcc_status ppcc_calibration_read(const char *path, ppcc_calibration *c, ppcc_diag *d);
/* Writes it through the atomic-output module. */
ppcc_status ppcc_calibration_write(const char *path, const ppcc_calibration *c, ppcc_diag *d);

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
} ppcc_predict_options;

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
} ppcc_prediction;

/* A user error when the graph cannot run on opts->microbatches (the batch
 * dim of an input does not divide). */
ppcc_status ppcc_predict(const ppcc_graph *g, const ppcc_predict_options *opts, ppcc_prediction *p, ppcc_diag *d);
void ppcc_prediction_free(ppcc_prediction *p);

/* The report sections (text, JSON fields after "device_summary"). */
void ppcc_prediction_write_text(const ppcc_prediction *p, FILE *out);
void ppcc_prediction_write_json(const ppcc_prediction *p, FILE *out);

/* What `ppcc run --check-plan` measures (the runtime fills it). */
typedef struct ppcc_plan_measure {
  /* in */
  const int *op_stage;    /* per op: stage (ppcc_prediction.op_stage) */
  int n_stages;
  /* out (allocated by the caller: n_devices and n_stages * n_devices) */
  int64_t *peak_bytes;    /* per device: high-water mark of the value buffers */
  double *stage_busy_ms;  /* [stage * n_devices + device]: compute spans */
  double wall_ms;
  bool filled;
  int forwards;           /* runs measured: the peak is the largest, busy
                             times and wall the smallest (warm) */
} ppcc_plan_measure;

/* Prints predicted vs measured per device and per stage; a user error
 * naming the first device or stage off by more than the tolerance
 * (relative to the measured value). */
ppcc_status ppcc_plan_check(const ppcc_prediction *p, const ppcc_plan_measure *m, double memory_tolerance,
                            double time_tolerance, FILE *out, ppcc_diag *d);

/* The one thread budget (src/report/concurrency.c): at most how many
 * devices of g compute at the same time with M microbatches (the largest
 * min(M, stages) stage groups, capped at g's devices), and the kernel
 * threads each device then gets from `cores` (never more busy threads than
 * cores). Both backends and the prediction use them. */
int ppcc_concurrent_devices(const ppcc_graph *g, int microbatches);
int ppcc_kernel_threads_per_device(int cores, int concurrent);

#endif
