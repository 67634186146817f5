/* Microbatched pipeline execution (`ppcc run --microbatches M`).
 *
 * The batch dim is dim 0 of every graph input. A run with M microbatches
 * executes a microbatch-sized copy of the compiled graph M times: every
 * input is cut into M contiguous slices along dim 0, microbatch k gets
 * slice k, and each output is the concatenation of its M microbatch
 * results along dim 0. Placements, layouts and inserted transfers are the
 * compiled graph's, so the pipeline is the same as for M = 1.
 *
 * This is only correct when no op mixes rows of different microbatches.
 * rt_microbatch_graph proves it with a small dataflow rule: a value
 * "carries the batch" if it is an input or computed from one; every
 * batch-carrying value must keep the batch in dim 0 (its microbatch shape
 * is its full shape with dim 0 divided by M), and every op on such a value
 * must keep dim-0 rows apart (no reduction, softmax, slice, concat or
 * transpose over dim 0, no contraction over it). Anything else, including
 * an attribute that hard-codes the batch size (a reshape to [8, ...]),
 * is a user error naming the op or value. Inputs split along dim 0 (data
 * parallel) are allowed when each microbatch still splits evenly.
 *
 * ppcc_pipeline_segments (src/plan/pipeline_segments.c) picks the order in
 * which a device interleaves microbatches (see there). */
#include <stdlib.h>
#include <string.h>
#include "exec.h"

static ppcc_status oom(ppcc_diag *d) { return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"); }


/* ---------------- which ops keep batch rows apart ---------------- */

/* NULL if op may run on microbatches, else why not (the op table's batch
 * rule, asked only when some operand carries the batch). */
static const char *mixes_batch_rows(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 0; k < op->n_in; k++)
    if (carries[op->in[k]]) return op->info->batch_rule(g, op, carries);
  return NULL;
}

/* ---------------- the microbatch-sized graph ---------------- */

static void shape_text(const ppcc_value *v, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < v->rank && off < n; i++)
    off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)v->shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}

static ppcc_status split_inputs(ppcc_graph *mg, int m, bool *carries, ppcc_diag *d) {
  for (int v = 0; v < mg->n_values; v++) {
    ppcc_value *p = &mg->values[v];
    if (p->kind != PPCC_VALUE_INPUT) continue;
    char s[160];
    shape_text(p, s, sizeof s);
    if (p->rank < 1 || p->shape[0] % m != 0)
      return ppcc_error(d, "--microbatches %d: input '%s' %s: its batch dim (dim 0) does not divide into %d microbatches",
                        m, p->name, s, m);
    p->shape[0] /= m;
    carries[v] = true;
  }
  return PPCC_OK;
}

/* Shape inference of every result on microbatch-sized inputs, and the
 * row rule of every op. */
static ppcc_status infer_micro_shapes(ppcc_graph *mg, int m, bool *carries, ppcc_diag *d) {
  for (int j = 0; j < mg->n_ops; j++) {
    ppcc_op *op = &mg->ops[j];
    char ref[PPCC_MAX_NAME * 2 + 64];
    ppcc_op_ref(mg, op, ref, sizeof ref);
    ppcc_diag local;
    ppcc_diag_init(&local, NULL, NULL);
    if (op->info->infer_shape(mg, op, &local))
      return ppcc_error(d, "--microbatches %d: cannot run on a microbatch (does an attribute depend on the batch size?): %s",
                        m, local.first);
    const char *why = mixes_batch_rows(mg, op, carries);
    if (why) return ppcc_error(d, "--microbatches %d: %s mixes rows of different microbatches: %s", m, ref, why);
    for (int k = 0; k < op->n_in; k++)
      if (carries[op->in[k]])
        for (int r = 0; r < op->n_out; r++) carries[op->out[r]] = true;
  }
  return PPCC_OK;
}

/* A batch-carrying value must be its full shape with dim 0 divided by m;
 * any other value must not have changed. Split shards must stay even. */
static ppcc_status check_value(const ppcc_graph *g, const ppcc_graph *mg, int m, const bool *carries, int v,
                               ppcc_diag *d) {
  const ppcc_value *full = &g->values[v], *micro = &mg->values[v];
  bool ok = full->rank == micro->rank && (!carries[v] || (full->rank >= 1 && micro->shape[0] * m == full->shape[0]));
  for (int i = 0; ok && i < full->rank; i++) ok = (carries[v] && i == 0) || micro->shape[i] == full->shape[i];
  char a[160], b[160];
  shape_text(full, a, sizeof a);
  shape_text(micro, b, sizeof b);
  if (!ok)
    return ppcc_error(d, "--microbatches %d: value '%s' %s does not keep the batch in dim 0 (a microbatch gives %s)", m,
                      full->name, a, b);
  ppcc_layout l = micro->layout;
  if (l.kind == PPCC_LAYOUT_SPLIT && (l.dim >= micro->rank || micro->shape[l.dim] % l.count != 0))
    return ppcc_error(d, "--microbatches %d: value '%s' is split %d ways along dim %d, which is %lld in a microbatch %s",
                      m, full->name, l.count, l.dim, l.dim < micro->rank ? (long long)micro->shape[l.dim] : -1LL, b);
  if (full->is_output && !carries[v])
    return ppcc_error(d, "--microbatches %d: output '%s' does not depend on the batch, so it cannot be concatenated "
                         "over microbatches", m, full->name);
  return PPCC_OK;
}

ppcc_status rt_microbatch_graph(const ppcc_graph *g, int m, ppcc_graph *mg, ppcc_diag *d) {
  memset(mg, 0, sizeof *mg);
  if (m < 1) return ppcc_error(d, "--microbatches must be at least 1, got %d", m);
  *mg = *g; /* names, arena and outputs are shared read-only; values and ops are copied */
  size_t nv = (size_t)(g->n_values > 0 ? g->n_values : 1), no = (size_t)(g->n_ops > 0 ? g->n_ops : 1);
  mg->values = malloc(nv * sizeof *mg->values);
  mg->ops = malloc(no * sizeof *mg->ops);
  bool *carries = calloc(nv, sizeof *carries);
  ppcc_status st = mg->values && mg->ops && carries ? PPCC_OK : oom(d);
  if (!st) {
    memcpy(mg->values, g->values, sizeof *mg->values * (size_t)g->n_values);
    memcpy(mg->ops, g->ops, sizeof *mg->ops * (size_t)g->n_ops);
    mg->cap_values = g->n_values;
    mg->cap_ops = g->n_ops;
    st = split_inputs(mg, m, carries, d);
  }
  if (!st) st = infer_micro_shapes(mg, m, carries, d);
  for (int v = 0; v < g->n_values && !st; v++) st = check_value(g, mg, m, carries, v, d);
  free(carries);
  if (st) rt_microbatch_graph_free(mg);
  return st;
}

void rt_microbatch_graph_free(ppcc_graph *mg) {
  free(mg->values);
  free(mg->ops);
  memset(mg, 0, sizeof *mg);
}

