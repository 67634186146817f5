/* Door of src/plan/ (besides the public include/ppcc/predict.h): the
 * placement measures the cost model and the reports share (device of a
 * shard, bytes, FLOPs per device, stages). Everything here is
 * O(ops + values) so reports stay fast on 100k-op graphs. */
#ifndef PPCC_PLAN_H
#define PPCC_PLAN_H
#include <stdio.h>
#include "ppcc/graph.h"

/* Device of shard i; the DESIGN default 0..n-1 when no placement is set yet. */
int rep_shard_device(const ppcc_value *v, int shard);
/* Bytes of one shard, 0 when the size overflows (verify rejects those). */
int64_t rep_shard_bytes(const ppcc_value *v);
/* Bytes a transfer op copies: shards already on their target are free (P10). */
int64_t rep_transfer_bytes(const ppcc_graph *g, const ppcc_op *op);
bool rep_is_transfer(const ppcc_op *op);
/* FLOPs one result shard's device does for the op (DESIGN: split/unreduced
 * share the total, replicated repeats it, unsharded runs it once). */
double rep_op_flops_per_shard(const ppcc_graph *g, const ppcc_op *op);
/* Sum of rep_op_flops_per_shard over the result's shards. */
double rep_op_flops_on_devices(const ppcc_graph *g, const ppcc_op *op);

/* Per value: index of the first op reading it, -1 if none. Caller frees. */
int *rep_first_consumers(const ppcc_graph *g);

/* A stage is a distinct sorted device group, numbered by first appearance;
 * a group inside an earlier stage's group belongs to that stage.
 * Collectives and transfers belong to their result devices' group. */
typedef struct rep_stages {
  int n_stages;
  int *op_stage;   /* per op */
  int *first_dev;  /* per stage: offset into dev_pool */
  int *n_dev;      /* per stage: device count */
  int *dev_pool;
  int *order;      /* op indices grouped by stage, program order inside */
  int *start;      /* per stage + 1: offsets into order */
} rep_stages;

bool rep_stages_build(const ppcc_graph *g, rep_stages *s);
void rep_stages_free(rep_stages *s);
static inline const int *rep_stage_devices(const rep_stages *s, int stage) {
  return s->dev_pool + s->first_dev[stage];
}

/* ppcc_concurrent_devices (concurrency.c) on stages already built. */
int rep_concurrent_devices(const ppcc_graph *g, const rep_stages *st, int microbatches);

/* Devices an op runs on (op->devices, or its result's devices before
 * pin-propagate), written to buf (PPCC_MAX_DEVICES entries); returns the
 * count. */
int rep_op_devices(const ppcc_graph *g, const ppcc_op *op, int *buf);

/* "32.0 KiB" (or "512 B"). */
void rep_human_bytes(int64_t bytes, char *buf, size_t n);

#endif
