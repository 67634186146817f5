/* The pipeline schedule's segments, shared by the executor
 * (src/runtime/exec/executor.c runs them) and the report's prediction
 * (src/plan/predict.c simulates them), so the two cannot drift.
 *
 * Every device runs: for each segment, for each microbatch k, the ops of
 * the segment on microbatch k. All devices thus visit (segment,
 * microbatch, op) in the same lexicographic order: a receive waits only
 * for a send at the same position, so the run cannot deadlock, and
 * messages between two devices (FIFO) pair up without tags.
 *
 * One segment is the naive "whole program per microbatch", which already
 * pipelines a chain of stages: stage 0 sends microbatch k (sends never
 * block) and goes on with k+1. It stalls when a device comes back later
 * in the program to wait for a downstream stage (e.g. the final gather of
 * the output onto device 0): it would wait for microbatch k to cross the
 * whole pipeline before starting k+1. So a new segment starts at an op
 * where some device may wait although it was idle since its last op in
 * the segment; then it first finishes its earlier work for every
 * microbatch (GPipe fill), and collects results afterwards (drain). */
#include <stdlib.h>
#include "ppcc/graph.h"
#include "ppcc/ops.h"

static bool has_device(const ppcc_value *v, int dev) {
  for (int i = 0; v->devices && i < v->layout.count; i++)
    if (v->devices[i] == dev) return true;
  return false;
}

bool ppcc_op_involves(const ppcc_graph *g, const ppcc_op *op, int dev) {
  for (int k = 0; k < op->n_in; k++)
    if (has_device(&g->values[op->in[k]], dev)) return true;
  for (int r = 0; r < op->n_out; r++)
    if (has_device(&g->values[op->out[r]], dev)) return true;
  return false;
}

/* Whether dev may wait on another device in op: it receives a shard of a
 * transfer from elsewhere, or takes part in a collective (only the root
 * of a gather to one device waits). Compute ops never wait. */
bool ppcc_op_may_wait(const ppcc_graph *g, const ppcc_op *op, int dev) {
  if (op->n_in < 1 || op->n_out < 1 || op->info->family == PPCC_FAMILY_COMPUTE) return false;
  const ppcc_value *in = &g->values[op->in[0]], *out = &g->values[op->out[0]];
  if (op->info->family == PPCC_FAMILY_TRANSFER) {
    for (int i = 0; i < out->layout.count; i++) { /* a whole value may go to n devices (P8) */
      int s = in->layout.count == 1 ? 0 : i;
      if (s < in->layout.count && out->devices[i] == dev && in->devices[s] != dev) return true;
    }
    return false;
  }
  if (out->layout.kind == PPCC_LAYOUT_UNSHARDED) return out->devices[0] == dev;
  return ppcc_op_involves(g, op, dev);
}

int ppcc_pipeline_segments(const ppcc_graph *g, int *begin) {
  int n = 0, n_dev = g->n_devices > 0 ? g->n_devices : 1;
  int *last = malloc(sizeof(int) * (size_t)n_dev); /* last op of dev in the segment, -1 none */
  begin[n++] = 0;
  for (int dev = 0; last && dev < n_dev; dev++) last[dev] = -1;
  for (int j = 0; last && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    bool cut = false;
    for (int dev = 0; dev < n_dev && !cut && j > begin[n - 1]; dev++)
      cut = last[dev] >= 0 && last[dev] < j - 1 && ppcc_op_may_wait(g, op, dev);
    if (cut) {
      begin[n++] = j;
      for (int dev = 0; dev < n_dev; dev++) last[dev] = -1;
    }
    for (int dev = 0; dev < n_dev; dev++)
      if (ppcc_op_involves(g, op, dev)) last[dev] = j;
  }
  free(last); /* on OOM: one segment, still correct */
  begin[n] = g->n_ops;
  return n;
}
