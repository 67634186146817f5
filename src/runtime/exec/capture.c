/* Captured results (ppcc_capture): every op result, or every shard of it,
 * stored by the executors (interpreter and JIT) for the divergence search
 * (divergence.c). */
#include <stdlib.h>
#include <string.h>
#include "exec.h"

bool ppcc_capture_init(ppcc_capture *c, const ppcc_graph *g, bool reference) {
  memset(c, 0, sizeof *c);
  c->n_values = g->n_values;
  size_t n = (size_t)(g->n_values > 0 ? g->n_values : 1);
  c->counts = calloc(n, sizeof *c->counts);
  c->shards = calloc(n, sizeof *c->shards);
  if (!c->counts || !c->shards) {
    ppcc_capture_free(c);
    return false;
  }
  for (int v = 0; v < g->n_values; v++) {
    int count = reference || g->values[v].layout.count < 1 ? 1 : g->values[v].layout.count;
    c->counts[v] = count;
    c->shards[v] = calloc((size_t)count, sizeof **c->shards);
    if (!c->shards[v]) {
      ppcc_capture_free(c);
      return false;
    }
  }
  return true;
}

void ppcc_capture_free(ppcc_capture *c) {
  for (int v = 0; c->shards && v < c->n_values; v++) {
    for (int i = 0; c->shards[v] && i < c->counts[v]; i++) rt_free(c->shards[v][i]);
    free(c->shards[v]);
  }
  free(c->shards);
  free(c->counts);
  memset(c, 0, sizeof *c);
}

bool ppcc_capture_store(ppcc_capture *c, int v, int i, const void *data, int64_t bytes) {
  if (v < 0 || v >= c->n_values || i < 0 || i >= c->counts[v]) return true; /* not a slot: nothing to keep */
  rt_free(c->shards[v][i]);
  c->shards[v][i] = rt_alloc(bytes);
  if (!c->shards[v][i]) return false;
  if (bytes > 0) memcpy(c->shards[v][i], data, (size_t)bytes);
  return true;
}

