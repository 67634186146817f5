/* Automatic partitioning (passes/auto_partition.c, src/ir/partition.c):
 * the cost model and the stage-split solver. Public so that tests can check
 * the split against brute force and benchmarks can compare splits.
 *
 * Cost model (a simple, documented machine; only ratios matter for the
 * split):
 *   - an op costs its FLOPs on one device of its stage divided by
 *     PPCC_PART_DEVICE_FLOPS; split/unreduced results share the op's FLOPs
 *     across the stage's devices, replicated ones repeat them;
 *   - a collective additionally moves its data over the links (ring:
 *     all_reduce 2(T-1)/T of the tensor, gathers/scatters (T-1)/T);
 *   - a stage starting at op k first receives the values crossing the cut
 *     there: the bytes of one shard of each (shards move in parallel, one
 *     link each) divided by PPCC_PART_LINK_BYTES_PER_S;
 *   - memory per device of a stage = the parameter shards first used by
 *     its ops + the peak of the activation shards live while its ops run.
 * A stage's cost is its compute + collective + incoming-transfer time; the
 * solver minimises the slowest stage subject to the memory limit. */
#ifndef PPCC_PARTITION_H
#define PPCC_PARTITION_H
#include <stdbool.h>
#include <stdint.h>
#include "ppcc/graph.h"

#define PPCC_PART_DEVICE_FLOPS 1e12      /* FLOP/s of one device */
#define PPCC_PART_LINK_BYTES_PER_S 25e9  /* bytes/s of one device-to-device link */
/* A stage may start only where at most this many activations cross (the
 * residual stream and one side input such as positions), all of them whole
 * (replicated or unsharded): block boundaries, not the inside of a
 * Megatron pair. */
#define PPCC_PART_MAX_CUT_VALUES 2

/* The split problem over ops 0..n_ops-1 in program order. */
typedef struct ppcc_split_problem {
  int n_ops;
  double *time;         /* per op: seconds on one device of its stage */
  int64_t *param_bytes; /* per op: parameter bytes per device first used here */
  int64_t *live_bytes;  /* per op: activation bytes per device live while it runs */
  bool *can_cut;        /* per op: a stage may start here (can_cut[0] is true) */
  double *cut_time;     /* per op: seconds to receive what crosses a cut here */
  int n_stages;
  int64_t memory_limit; /* bytes per device, 0 = unlimited */
  /* Heterogeneous devices (--devices-spec), both optional (NULL): per
   * stage, the speed its compute time is divided by (1.0 = the cost
   * model's device) and its memory limit per device (0 = unlimited),
   * replacing memory_limit. */
  const double *stage_speed;
  const int64_t *stage_memory;
  /* Per-stage TP sizes (--tp 4,1,2,1) for a problem built on the unsharded
   * graph, all optional: per op, the part of its time and of its
   * first-used param bytes that a stage's T_s devices would share
   * (Megatron pairs), divided by T_s there. */
  const int *stage_tp;
  const double *shared_time;
  const int64_t *shared_param;
} ppcc_split_problem;

typedef struct ppcc_split_result {
  bool feasible;
  double max_cost;      /* slowest stage (feasible only) */
  bool too_few_cuts;    /* fewer places to cut than n_stages - 1 */
  /* Memory infeasible: the first stage that cannot fit even when every
   * earlier stage takes as many ops as fit, ops [fail_begin, fail_end). */
  int fail_stage, fail_begin, fail_end;
  int64_t fail_memory;
} ppcc_split_result;

/* Stage [begin, end): cost in seconds (incoming transfer included when
 * begin > 0) and memory per device. Direct sums, used as the reference. */
double ppcc_split_stage_cost(const ppcc_split_problem *p, int begin, int end);
int64_t ppcc_split_stage_memory(const ppcc_split_problem *p, int begin, int end);
/* The cost of [begin, end) as stage `stage`: compute divided by its speed
 * (stage_speed), plus the incoming transfer. */
double ppcc_split_stage_time(const ppcc_split_problem *p, int stage, int begin, int end);
/* Memory per device of [begin, end) as stage `stage` (shared params
 * divided by its TP size). */
int64_t ppcc_split_stage_memory_as(const ppcc_split_problem *p, int stage, int begin, int end);
/* Stage `stage`'s memory limit per device (0 = unlimited). */
int64_t ppcc_split_stage_limit(const ppcc_split_problem *p, int stage);
/* Optimal split (dynamic programming over the cut points): stage s is ops
 * [start[s], start[s+1]), start has n_stages + 1 entries. Returns false only
 * when out of memory; r says whether a split exists. */
bool ppcc_split_solve(const ppcc_split_problem *p, int *start, ppcc_split_result *r);
/* The even split: the same number of cut segments (blocks) per stage.
 * False if there are fewer cut points than stages. */
bool ppcc_split_even(const ppcc_split_problem *p, int *start);
/* Slowest stage cost / mean stage cost of a split. */
double ppcc_split_imbalance(const ppcc_split_problem *p, const int *start);

/* Builds the problem from a graph whose layouts are set (arrays in the
 * graph's arena). False on out of memory. */
bool ppcc_split_problem_from_graph(ppcc_graph *g, int n_stages, int64_t memory_limit,
                                   ppcc_split_problem *p);

typedef struct ppcc_partition_stage {
  int first_op, end_op;     /* ops [first_op, end_op) of the problem */
  int tp, first_device;     /* devices [first_device, first_device + tp) */
  double speed;             /* slowest device of the stage (1.0 without a spec) */
  int64_t memory_limit;     /* per device, 0 = unlimited */
  double cost;              /* seconds */
  double transfer_in;       /* seconds of it spent receiving the cut */
  int64_t param_bytes;      /* per device */
  int64_t activation_bytes; /* per device, peak */
} ppcc_partition_stage;

/* What auto-partition decided, kept on the graph for the reports. */
typedef struct ppcc_partition_summary {
  int pp, tp;
  int64_t device_memory;
  int n_pairs;              /* Megatron column/row pairs */
  ppcc_partition_stage *stages; /* pp entries */
  double max_cost, mean_cost;
  double imbalance;         /* slowest / mean */
  double even_imbalance;    /* of the even split, -1 if none exists */
  ppcc_split_problem problem; /* the problem the split was chosen on */
  int *start;               /* pp + 1 entries */
  bool mixed_tp;            /* stages of different TP sizes (tp is the largest) */
  /* --devices-spec, copied: NULL/0 without one. */
  const char *spec_path;
  int n_spec_devices;
  int64_t *spec_memory;     /* per device, 0 = not given */
  double *spec_speed;
} ppcc_partition_summary;

#endif
