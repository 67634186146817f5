/* The device -> rank map of a distributed run (include/ppcc/mpi.h).
 *
 * Stages: devices that hold shards of one computed value (or of a param,
 * or of a collective's operand) compute together, usually a
 * tensor-parallel group; the connected groups are the pipeline stages.
 * Transfers (and the inputs, which may be replicated everywhere) do not
 * join groups: moving a value between stages is what pipelines do. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/mpi.h"
#include "comm.h"

static int find_root(int *parent, int a) {
  while (parent[a] != a) a = parent[a] = parent[parent[a]];
  return a;
}

static void join_tuple(int *parent, const ppcc_value *v, int n_devices) {
  if (!v->devices) return;
  for (int i = 1; i < v->layout.count; i++) {
    int a = v->devices[0], b = v->devices[i];
    if (a < 0 || b < 0 || a >= n_devices || b >= n_devices) continue;
    a = find_root(parent, a), b = find_root(parent, b);
    if (a != b) parent[a > b ? a : b] = a < b ? a : b; /* the root is the group's lowest device */
  }
}

/* stage_of[dev] = index of dev's group, groups numbered by lowest device. */
static int stages_of(const ppcc_graph *g, int *stage_of) {
  int n = g->n_devices, *parent = malloc(sizeof(int) * (size_t)n);
  if (!parent) return -1;
  for (int i = 0; i < n; i++) parent[i] = i;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_PARAM) join_tuple(parent, &g->values[v], n);
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (op->info->family == PPCC_FAMILY_COMPUTE)
      for (int r = 0; r < op->n_out; r++) join_tuple(parent, &g->values[op->out[r]], n);
    if (op->info->family == PPCC_FAMILY_COLLECTIVE && op->n_in > 0) join_tuple(parent, &g->values[op->in[0]], n);
  }
  int stages = 0;
  for (int dev = 0; dev < n; dev++) {
    int root = find_root(parent, dev);
    stage_of[dev] = root == dev ? stages++ : stage_of[root]; /* root <= dev: numbered already */
  }
  free(parent);
  return stages;
}

static ppcc_status parse_map(const ppcc_graph *g, int ranks, const char *spec, int *rank_of, ppcc_diag *d) {
  const char *p = spec;
  int n = 0;
  while (*p) {
    char *end;
    long r = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || r < 0)
      return ppcc_error(d, "--ranks-map '%s': entry %d is not a rank number (expected one rank id per device, e.g. 0,0,1,1)",
                        spec, n);
    if (n >= g->n_devices)
      return ppcc_error(d, "--ranks-map '%s' has more entries than the model's %d devices", spec, g->n_devices);
    if (r >= ranks)
      return ppcc_error(d, "--ranks-map '%s': device %d is mapped to rank %ld, but only %d rank%s (0..%d) were started",
                        spec, n, r, ranks, ranks == 1 ? "" : "s", ranks - 1);
    rank_of[n++] = (int)r;
    p = *end ? end + 1 : end;
  }
  if (n != g->n_devices)
    return ppcc_error(d, "--ranks-map '%s' has %d entr%s but the model has %d devices (one rank id per device)", spec, n,
                      n == 1 ? "y" : "ies", g->n_devices);
  return PPCC_OK;
}

ppcc_status ppcc_rank_map(const ppcc_graph *g, int ranks, const char *spec, int *rank_of, ppcc_diag *d) {
  int n = g->n_devices;
  if (ranks < 1) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no MPI ranks");
  if (ranks > n)
    return ppcc_error(d, "%d MPI ranks for a model with %d device%s: start at most %d ranks (every rank needs a device)",
                      ranks, n, n == 1 ? "" : "s", n);
  if (spec) {
    ppcc_status st = parse_map(g, ranks, spec, rank_of, d);
    if (st) return st;
  } else {
    int *stage_of = malloc(sizeof(int) * (size_t)n);
    int stages = stage_of ? stages_of(g, stage_of) : -1;
    if (stages < 0) {
      free(stage_of);
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    }
    if (stages < ranks) {
      free(stage_of);
      return ppcc_error(d, "%d MPI ranks but the model has %d pipeline stage%s (device groups that compute together): "
                           "start at most %d ranks, or split stages with --ranks-map (one rank id per device)",
                        ranks, stages, stages == 1 ? "" : "s", stages);
    }
    for (int dev = 0; dev < n; dev++) rank_of[dev] = (int)((long long)stage_of[dev] * ranks / stages);
    free(stage_of);
  }
  bool rank0 = false;
  for (int dev = 0; dev < n; dev++) rank0 = rank0 || rank_of[dev] == 0;
  if (!rank0) return ppcc_error(d, "--ranks-map '%s' gives rank 0 no device; rank 0 collects the outputs and needs one", spec);
  return PPCC_OK;
}

/* Variables the common launchers set in every process they start. */
bool ppcc_mpi_launched(void) {
  static const char *const vars[] = {"PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
                                     "MPI_LOCALNRANKS", NULL};
  for (int i = 0; vars[i]; i++)
    if (getenv(vars[i])) return true;
  return false;
}

ppcc_rt_comm *ppcc_mpi_comm_new(int n_devices) {
  ppcc_rt_comm *c = ppcc_rt_comm_new(n_devices);
  rt_comm_attach_dist(c);
  return c;
}
