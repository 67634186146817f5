/* How many devices of a placed graph can compute at the same time, for the
 * one thread budget (issue 12): both backends give each device
 * cores / that many kernel threads (src/runtime/exec/executor.c run_devices,
 * src/runtime/jit/jit_exec.c run_all) and the prediction assumes the same
 * (src/plan/predict.c), all through the two functions below.
 *
 * The schedule (src/plan/pipeline_segments.c): every device runs its ops in
 * program order, per segment for microbatch 0..M-1, and waits only where
 * it receives (a transfer from another device, a collective). In a
 * pipeline a stage's work on microbatch k follows its receive of k from
 * the stage before, so a stage computes only on a microbatch that already
 * left the earlier stages: at most min(M, S) of the S stages compute at
 * once, and at most the largest min(M, S) stage groups' devices. With one
 * microbatch the stages take turns, and each gets every core.
 *
 * A device whose program starts with compute before any wait (work that
 * needs nothing from another stage) starts at once, beside the first
 * stage: the stages with such devices are counted as running together
 * too. */
#include <stdlib.h>
#include "ppcc/ops.h"
#include "ppcc/predict.h"
#include "plan.h"

static int cmp_desc(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x < y) - (x > y);
}

enum { UNDECIDED, GATED, UNGATED };

static void decide(const ppcc_graph *g, const ppcc_op *op, const ppcc_value *v, char *state, int *left) {
  for (int i = 0; v->devices && i < v->layout.count; i++) {
    int dev = v->devices[i];
    if (dev < 0 || dev >= g->n_devices || state[dev] != UNDECIDED) continue;
    if (ppcc_op_may_wait(g, op, dev)) state[dev] = GATED;
    else if (op->info->family == PPCC_FAMILY_COMPUTE) state[dev] = UNGATED;
    else continue; /* a send: it goes on without waiting */
    (*left)--;
  }
}

/* Per device: whether it computes before its first wait in the program
 * (one pass over the ops, stopping once every device is decided). */
static void find_ungated(const ppcc_graph *g, char *state) {
  int left = g->n_devices;
  for (int j = 0; j < g->n_ops && left > 0; j++) {
    const ppcc_op *op = &g->ops[j];
    if (!op->info) continue;
    for (int k = 0; k < op->n_in; k++) decide(g, op, &g->values[op->in[k]], state, &left);
    for (int r = 0; r < op->n_out; r++) decide(g, op, &g->values[op->out[r]], state, &left);
  }
}

int rep_concurrent_devices(const ppcc_graph *g, const rep_stages *st, int microbatches) {
  int nd = g->n_devices > 0 ? g->n_devices : 1;
  int *size = calloc((size_t)st->n_stages + 1, sizeof *size); /* compute stages' group sizes */
  char *state = calloc((size_t)nd, 1);
  int busy = nd; /* OOM: assume all (never oversubscribes) */
  if (size && state) {
    find_ungated(g, state);
    int n = 0, at_start = 0;
    for (int k = 0; k < st->n_stages; k++) {
      bool computes = false, free_start = false;
      for (int i = st->start[k]; i < st->start[k + 1] && !computes; i++) {
        const ppcc_op *op = &g->ops[st->order[i]];
        computes = op->info && op->info->family == PPCC_FAMILY_COMPUTE;
      }
      const int *devs = rep_stage_devices(st, k);
      for (int i = 0; computes && i < st->n_dev[k] && !free_start; i++)
        free_start = devs[i] >= 0 && devs[i] < nd && state[devs[i]] == UNGATED;
      if (!computes) continue;
      if (free_start) at_start += st->n_dev[k];
      size[n++] = st->n_dev[k];
    }
    qsort(size, (size_t)n, sizeof *size, cmp_desc);
    int m = microbatches > 1 ? microbatches : 1, together = 0;
    for (int k = 0; k < n && k < m; k++) together += size[k];
    if (at_start > together) together = at_start;
    busy = together < 1 ? 1 : together < nd ? together : nd;
  }
  free(size);
  free(state);
  return busy;
}

int ppcc_concurrent_devices(const ppcc_graph *g, int microbatches) {
  rep_stages st;
  if (!rep_stages_build(g, &st)) return g->n_devices > 0 ? g->n_devices : 1; /* OOM: assume all */
  int busy = rep_concurrent_devices(g, &st, microbatches);
  rep_stages_free(&st);
  return busy;
}

/* Never more busy threads than cores: `concurrent` devices each run one
 * device thread that calls the BLAS, which adds its own threads up to the
 * share, so concurrent * (cores / concurrent) <= cores. More devices than
 * cores: one thread each (the OS shares the cores). */
int ppcc_kernel_threads_per_device(int cores, int concurrent) {
  return concurrent > 0 && cores / concurrent > 1 ? cores / concurrent : 1;
}

bool ppcc_devices_spread(int cores, int kernel_threads_per_device, int devices) {
  return cores >= 2 && kernel_threads_per_device == 1 && devices > 1;
}

bool ppcc_lone_device(int kernel_threads_per_device, int concurrent) {
  return concurrent == 1 && kernel_threads_per_device > 1;
}
