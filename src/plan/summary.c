/* Per-device totals: parameter bytes, peak activation bytes, FLOPs.
 *
 * Peak activations come from a simulation in program order: graph inputs
 * are live from the start, a result's shards are allocated on their devices
 * when its op runs and freed after the last op that reads the value; graph
 * outputs live to the end. An in-place op's result (P7) aliases its
 * destination buffer, so it allocates nothing and keeps that buffer alive
 * until the last read of either name. Parameters are not activations. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/report.h"
#include "plan.h"

typedef struct memory_sim {
  const ppcc_graph *g;
  int *owner;     /* per value: the value whose buffer it uses */
  int *last_use;  /* per owner: last op reading any alias; n_ops for outputs */
  bool *freed;    /* per owner */
  int64_t *live;  /* per device */
  ppcc_device_summary *rows;
} memory_sim;

static bool valid_device(const ppcc_graph *g, int dev) { return dev >= 0 && dev < g->n_devices; }

static bool aliases_operand(const ppcc_op *op) {
  return op->info && op->info->pin_rule == PPCC_PIN_INPLACE && op->n_in > 0 && op->n_out > 0;
}

/* Adds sign * shard bytes to every device holding a shard of v. */
static void add_shards(memory_sim *m, const ppcc_value *v, int sign) {
  int64_t bytes = rep_shard_bytes(v);
  for (int i = 0; i < (v->layout.count > 0 ? v->layout.count : 1); i++) {
    int dev = rep_shard_device(v, i);
    if (!valid_device(m->g, dev)) continue;
    m->live[dev] += sign * bytes;
    if (m->live[dev] > m->rows[dev].peak_activation_bytes) m->rows[dev].peak_activation_bytes = m->live[dev];
  }
}

static void free_buffer(memory_sim *m, int owner) {
  if (m->freed[owner]) return;
  m->freed[owner] = true;
  add_shards(m, &m->g->values[owner], -1);
}

static void compute_lifetimes(memory_sim *m) {
  const ppcc_graph *g = m->g;
  for (int v = 0; v < g->n_values; v++) {
    m->owner[v] = v;
    m->last_use[v] = -1;
  }
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    for (int k = 0; k < op->n_in; k++) m->last_use[m->owner[op->in[k]]] = i;
    if (aliases_operand(op)) m->owner[op->out[0]] = m->owner[op->in[0]];
  }
  for (int k = 0; k < g->n_outputs; k++) m->last_use[m->owner[g->outputs[k]]] = g->n_ops;
}

static void run_op(memory_sim *m, int i) {
  const ppcc_op *op = &m->g->ops[i];
  for (int k = 0; k < op->n_out; k++) {
    int r = op->out[k];
    if (m->owner[r] == r && m->g->values[r].kind != PPCC_VALUE_PARAM) add_shards(m, &m->g->values[r], +1);
  }
  for (int k = 0; k < op->n_in; k++) {
    int o = m->owner[op->in[k]];
    if (m->last_use[o] == i && m->g->values[o].kind != PPCC_VALUE_PARAM) free_buffer(m, o);
  }
  for (int k = 0; k < op->n_out; k++) {
    int r = op->out[k];
    if (m->owner[r] == r && m->last_use[r] < i && m->g->values[r].kind != PPCC_VALUE_PARAM) free_buffer(m, r);
  }
}

static void simulate_memory(memory_sim *m) {
  const ppcc_graph *g = m->g;
  compute_lifetimes(m);
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_INPUT) add_shards(m, &g->values[v], +1);
  for (int v = 0; v < g->n_values; v++) /* unused inputs: counted at start only */
    if (g->values[v].kind == PPCC_VALUE_INPUT && m->last_use[v] < 0) free_buffer(m, v);
  for (int i = 0; i < g->n_ops; i++) run_op(m, i);
}

static void sum_params(const ppcc_graph *g, ppcc_device_summary *rows) {
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    if (val->kind != PPCC_VALUE_PARAM) continue;
    int64_t bytes = rep_shard_bytes(val);
    for (int i = 0; i < (val->layout.count > 0 ? val->layout.count : 1); i++) {
      int dev = rep_shard_device(val, i);
      if (valid_device(g, dev)) rows[dev].param_bytes += bytes;
    }
  }
}

/* Each result shard's device does its share of the op's FLOPs. */
static void sum_flops(const ppcc_graph *g, ppcc_device_summary *rows) {
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    if (op->n_out < 1) continue;
    double share = rep_op_flops_per_shard(g, op);
    if (share == 0) continue;
    const ppcc_value *r = &g->values[op->out[0]];
    for (int s = 0; s < (r->layout.count > 0 ? r->layout.count : 1); s++) {
      int dev = rep_shard_device(r, s);
      if (valid_device(g, dev)) rows[dev].flops += share;
    }
  }
}

ppcc_device_summary *ppcc_device_summaries(const ppcc_graph *g) {
  size_t n_dev = g->n_devices > 0 ? (size_t)g->n_devices : 1;
  size_t n_val = g->n_values > 0 ? (size_t)g->n_values : 1;
  memory_sim m = {.g = g,
                  .owner = malloc(sizeof(int) * n_val),
                  .last_use = malloc(sizeof(int) * n_val),
                  .freed = calloc(n_val, sizeof(bool)),
                  .live = calloc(n_dev, sizeof(int64_t)),
                  .rows = calloc(n_dev, sizeof(ppcc_device_summary))};
  bool ok = m.owner && m.last_use && m.freed && m.live && m.rows;
  if (ok) {
    for (int d = 0; d < g->n_devices; d++) m.rows[d].device = d;
    sum_params(g, m.rows);
    simulate_memory(&m);
    sum_flops(g, m.rows);
  } else {
    free(m.rows);
    m.rows = NULL;
  }
  free(m.owner);
  free(m.last_use);
  free(m.freed);
  free(m.live);
  return m.rows;
}
