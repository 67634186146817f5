/* The cost model of auto-partition and the optimal stage split
 * (include/ppcc/partition.h). Everything is O(ops) except the dynamic
 * program, O(stages x cut points x scan), where the scan back from a stage's
 * end stops as soon as the stage alone is slower than the best found. */
#include "ppcc/partition.h"
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"

/* ---------------- cost model ---------------- */

static int64_t shard_bytes(const ppcc_value *v) {
  int64_t b = ppcc_value_shard_bytes(v);
  return b < 0 ? 0 : b;
}

/* FLOPs one device of the stage does: split and unreduced results share
 * the op's FLOPs, replicated results repeat them on every device. */
static double flops_per_device(const ppcc_graph *g, const ppcc_op *op) {
  if (!op->info->flops || op->n_out < 1) return 0;
  double total = op->info->flops(g, op);
  ppcc_layout l = g->values[op->out[0]].layout;
  bool shared = l.kind == PPCC_LAYOUT_SPLIT || l.kind == PPCC_LAYOUT_UNREDUCED;
  return shared && l.count > 1 ? total / l.count : total;
}

/* Ring collectives: all_reduce moves 2(T-1)/T of the tensor per device,
 * the others (T-1)/T. */
static double collective_seconds(const ppcc_graph *g, const ppcc_op *op) {
  if (op->info->family != PPCC_FAMILY_COLLECTIVE || op->n_in < 1) return 0;
  const ppcc_value *x = &g->values[op->in[0]];
  int t = x->layout.count;
  if (t <= 1) return 0;
  int64_t whole = ppcc_value_bytes(x);
  double share = (double)(t - 1) / t * (op->info->id == PPCC_OP_all_reduce ? 2.0 : 1.0);
  return share * (double)(whole < 0 ? 0 : whole) / PPCC_PART_LINK_BYTES_PER_S;
}

static double op_seconds(const ppcc_graph *g, const ppcc_op *op) {
  return flops_per_device(g, op) / PPCC_PART_DEVICE_FLOPS + collective_seconds(g, op);
}

static bool whole_layout(const ppcc_value *v) {
  return v->layout.kind == PPCC_LAYOUT_REPLICATED || v->layout.kind == PPCC_LAYOUT_UNSHARDED;
}

typedef struct uses {
  int *first, *last; /* per value: first and last reading op, -1 if none */
} uses;

static bool find_uses(const ppcc_graph *g, uses *u) {
  size_t n = (size_t)(g->n_values > 0 ? g->n_values : 1);
  u->first = malloc(sizeof(int) * n);
  u->last = malloc(sizeof(int) * n);
  if (!u->first || !u->last) return false;
  for (int v = 0; v < g->n_values; v++) u->first[v] = u->last[v] = -1;
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_in; k++) {
      int v = g->ops[i].in[k];
      if (u->first[v] < 0) u->first[v] = i;
      u->last[v] = i;
    }
  return true;
}

/* Parameters count on the op that reads them first. */
static void param_bytes_per_op(const ppcc_graph *g, const uses *u, int64_t *out) {
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_PARAM && u->first[v] >= 0) out[u->first[v]] += shard_bytes(&g->values[v]);
}

/* Activations are live from their definition (inputs: the start) to their
 * last use (outputs: the end); difference arrays make it O(ops). */
static void live_bytes_per_op(const ppcc_graph *g, const uses *u, int64_t *diff, int64_t *out) {
  int n = g->n_ops;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    if (val->kind == PPCC_VALUE_PARAM) continue;
    /* a graph input lives on its first reader's stage (auto_partition.c) */
    int begin = val->def_op >= 0 ? val->def_op : (val->kind == PPCC_VALUE_INPUT && u->first[v] >= 0 ? u->first[v] : 0);
    int end = val->is_output ? n - 1 : (u->last[v] > begin ? u->last[v] : begin);
    diff[begin] += shard_bytes(val);
    diff[end + 1] -= shard_bytes(val);
  }
  int64_t live = 0;
  for (int i = 0; i < n; i++) out[i] = live += diff[i];
}

/* A cut before op k is crossed by every activation defined before k and
 * read at or after k. */
static void cut_costs(const ppcc_graph *g, const uses *u, int *count, int *bad, int64_t *bytes,
                      ppcc_split_problem *p) {
  int n = g->n_ops;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    int from = val->def_op + 1, to = u->last[v]; /* positions [from, to] */
    if (val->kind == PPCC_VALUE_INPUT && u->first[v] >= 0) from = u->first[v] + 1; /* homed at its first reader */
    if (val->kind == PPCC_VALUE_PARAM || to < from || to < 1) continue;
    if (from < 1) from = 1;
    count[from]++, count[to + 1]--;
    bad[from] += !whole_layout(val), bad[to + 1] -= !whole_layout(val);
    bytes[from] += shard_bytes(val), bytes[to + 1] -= shard_bytes(val);
  }
  int c = 0, b = 0;
  int64_t by = 0;
  p->can_cut[0] = true;
  for (int k = 1; k < n; k++) {
    c += count[k], b += bad[k], by += bytes[k];
    p->can_cut[k] = c <= PPCC_PART_MAX_CUT_VALUES && b == 0;
    p->cut_time[k] = (double)by / PPCC_PART_LINK_BYTES_PER_S;
  }
}

static bool alloc_problem(ppcc_graph *g, ppcc_split_problem *p, size_t n) {
  p->time = ppcc_alloc(g, sizeof(double) * n);
  p->param_bytes = ppcc_alloc(g, sizeof(int64_t) * n);
  p->live_bytes = ppcc_alloc(g, sizeof(int64_t) * n);
  p->can_cut = ppcc_alloc(g, sizeof(bool) * n);
  p->cut_time = ppcc_alloc(g, sizeof(double) * n);
  return p->time && p->param_bytes && p->live_bytes && p->can_cut && p->cut_time;
}

bool ppcc_split_problem_from_graph(ppcc_graph *g, int n_stages, int64_t memory_limit, ppcc_split_problem *p) {
  memset(p, 0, sizeof *p);
  size_t n = (size_t)(g->n_ops > 0 ? g->n_ops : 1);
  p->n_ops = g->n_ops;
  p->n_stages = n_stages;
  p->memory_limit = memory_limit;
  uses u = {0};
  int *count = calloc(n + 1, sizeof(int)), *bad = calloc(n + 1, sizeof(int));
  int64_t *diff = calloc(n + 1, sizeof(int64_t));
  bool ok = alloc_problem(g, p, n) && find_uses(g, &u) && count && bad && diff;
  if (ok) {
    for (int i = 0; i < g->n_ops; i++) p->time[i] = op_seconds(g, &g->ops[i]);
    param_bytes_per_op(g, &u, p->param_bytes);
    live_bytes_per_op(g, &u, diff, p->live_bytes);
    memset(diff, 0, sizeof(int64_t) * (n + 1));
    cut_costs(g, &u, count, bad, diff, p);
  }
  free(u.first);
  free(u.last);
  free(count);
  free(bad);
  free(diff);
  return ok;
}

/* ---------------- evaluating a split ---------------- */

double ppcc_split_stage_cost(const ppcc_split_problem *p, int begin, int end) {
  double t = begin > 0 ? p->cut_time[begin] : 0;
  for (int i = begin; i < end; i++) t += p->time[i];
  return t;
}

int64_t ppcc_split_stage_memory(const ppcc_split_problem *p, int begin, int end) {
  int64_t params = 0, peak = 0;
  for (int i = begin; i < end; i++) {
    params += p->param_bytes[i];
    if (p->live_bytes[i] > peak) peak = p->live_bytes[i];
  }
  return params + peak;
}

static double stage_speed(const ppcc_split_problem *p, int s) {
  return p->stage_speed && p->stage_speed[s] > 0 ? p->stage_speed[s] : 1.0;
}

int64_t ppcc_split_stage_limit(const ppcc_split_problem *p, int stage) {
  return p->stage_memory ? p->stage_memory[stage] : p->memory_limit;
}

/* The part of time (params) a stage's TP devices share: divided by T_s. */
static int stage_tp(const ppcc_split_problem *p, int s) {
  return p->stage_tp && p->stage_tp[s] > 1 ? p->stage_tp[s] : 1;
}

static double stage_compute(const ppcc_split_problem *p, int s, double all, double shared) {
  return (all - shared + shared / stage_tp(p, s)) / stage_speed(p, s);
}

static int64_t stage_params(const ppcc_split_problem *p, int s, int64_t all, int64_t shared) {
  return all - shared + shared / stage_tp(p, s);
}

int64_t ppcc_split_stage_memory_as(const ppcc_split_problem *p, int stage, int begin, int end) {
  int64_t params = 0, shared = 0, peak = 0;
  for (int i = begin; i < end; i++) {
    params += p->param_bytes[i];
    shared += p->shared_param ? p->shared_param[i] : 0;
    if (p->live_bytes[i] > peak) peak = p->live_bytes[i];
  }
  return stage_params(p, stage, params, shared) + peak;
}

double ppcc_split_stage_time(const ppcc_split_problem *p, int stage, int begin, int end) {
  double t = 0, shared = 0;
  for (int i = begin; i < end; i++) {
    t += p->time[i];
    shared += p->shared_time ? p->shared_time[i] : 0;
  }
  return stage_compute(p, stage, t, shared) + (begin > 0 ? p->cut_time[begin] : 0);
}

double ppcc_split_imbalance(const ppcc_split_problem *p, const int *start) {
  double max = 0, sum = 0;
  for (int s = 0; s < p->n_stages; s++) {
    double c = ppcc_split_stage_time(p, s, start[s], start[s + 1]);
    max = c > max ? c : max;
    sum += c;
  }
  return sum > 0 ? max / (sum / p->n_stages) : 1.0;
}

/* ---------------- the solver ---------------- */

/* Candidate stage starts (cut points, 0 first) and per-segment sums over
 * the ops between consecutive candidates. */
typedef struct split_work {
  const ppcc_split_problem *p;
  int k;              /* number of candidates; cand[k] = n_ops */
  int *cand;
  double *pre_time;   /* prefix over candidates */
  int64_t *pre_param;
  double *pre_shared_time; /* of shared_time / shared_param (zeros if none) */
  int64_t *pre_shared_param;
  int64_t *seg_live;  /* peak live bytes of segment m = [cand[m], cand[m+1]) */
} split_work;

static void work_free(split_work *w) {
  free(w->cand);
  free(w->pre_time);
  free(w->pre_param);
  free(w->pre_shared_time);
  free(w->pre_shared_param);
  free(w->seg_live);
}

static bool work_init(split_work *w, const ppcc_split_problem *p) {
  memset(w, 0, sizeof *w);
  w->p = p;
  size_t n = (size_t)p->n_ops + 1;
  w->cand = malloc(sizeof(int) * n);
  w->pre_time = malloc(sizeof(double) * n);
  w->pre_param = malloc(sizeof(int64_t) * n);
  w->pre_shared_time = malloc(sizeof(double) * n);
  w->pre_shared_param = malloc(sizeof(int64_t) * n);
  w->seg_live = malloc(sizeof(int64_t) * n);
  if (!w->cand || !w->pre_time || !w->pre_param || !w->seg_live || !w->pre_shared_time || !w->pre_shared_param)
    return false;
  double st = 0;
  int64_t sp = 0;
  double t = 0;
  int64_t par = 0;
  for (int i = 0; i < p->n_ops; i++) {
    if (i == 0 || p->can_cut[i]) {
      w->cand[w->k] = i;
      w->pre_time[w->k] = t;
      w->pre_param[w->k] = par;
      w->pre_shared_time[w->k] = st;
      w->pre_shared_param[w->k] = sp;
      w->seg_live[w->k] = 0;
      w->k++;
    }
    t += p->time[i];
    par += p->param_bytes[i];
    st += p->shared_time ? p->shared_time[i] : 0;
    sp += p->shared_param ? p->shared_param[i] : 0;
    if (p->live_bytes[i] > w->seg_live[w->k - 1]) w->seg_live[w->k - 1] = p->live_bytes[i];
  }
  w->cand[w->k] = p->n_ops;
  w->pre_time[w->k] = t;
  w->pre_param[w->k] = par;
  w->pre_shared_time[w->k] = st;
  w->pre_shared_param[w->k] = sp;
  return true;
}

/* Compute time and params of candidate segments [b, e) as stage s. */
static double seg_time(const split_work *w, int s, int b, int e) {
  return stage_compute(w->p, s, w->pre_time[e] - w->pre_time[b], w->pre_shared_time[e] - w->pre_shared_time[b]);
}

static int64_t seg_param(const split_work *w, int s, int b, int e) {
  return stage_params(w->p, s, w->pre_param[e] - w->pre_param[b], w->pre_shared_param[e] - w->pre_shared_param[b]);
}

static bool fits(const ppcc_split_problem *p, int s, int64_t memory) {
  int64_t limit = ppcc_split_stage_limit(p, s);
  return limit <= 0 || memory <= limit;
}

/* Stages 0..n_stages-1 ending at candidate e: best[s][e] = min over the
 * last stage's start b of max(best[s-1][b], cost(b, e)). */
static void solve_stage(const split_work *w, int s, const double *prev, double *cur, int *choice) {
  const ppcc_split_problem *p = w->p;
  for (int e = 0; e <= w->k; e++) cur[e] = DBL_MAX, choice[e] = -1;
  for (int e = s + 1; e <= w->k; e++) {
    int64_t peak = 0;
    for (int b = e - 1; b >= s; b--) {
      double compute = seg_time(w, s, b, e);
      if (compute >= cur[e]) break; /* earlier starts are only slower */
      if (w->seg_live[b] > peak) peak = w->seg_live[b];
      if (!fits(p, s, seg_param(w, s, b, e) + peak)) break; /* and only bigger */
      if (prev[b] == DBL_MAX) continue;
      double stage = compute + (b > 0 ? p->cut_time[w->cand[b]] : 0);
      double worst = prev[b] > stage ? prev[b] : stage;
      if (worst < cur[e]) cur[e] = worst, choice[e] = b;
    }
  }
}

static void first_stage(const split_work *w, double *cur, int *choice) {
  int64_t peak = 0;
  for (int e = 0; e <= w->k; e++) {
    if (e > 0 && w->seg_live[e - 1] > peak) peak = w->seg_live[e - 1];
    bool ok = e > 0 && fits(w->p, 0, seg_param(w, 0, 0, e) + peak);
    cur[e] = ok ? seg_time(w, 0, 0, e) : DBL_MAX;
    choice[e] = 0;
  }
}

/* Memory of candidate segments [b, e) from the prefix sums. */
static int64_t segments_memory(const split_work *w, int s, int b, int e, int64_t peak) {
  return seg_param(w, s, b, e) + peak;
}

/* Why no split fits: pack each stage with as many segments as fit; the
 * first stage that cannot take even one segment, or the last one, which
 * must take the rest, is named. */
static void explain_memory(const split_work *w, ppcc_split_result *r) {
  const ppcc_split_problem *p = w->p;
  int b = 0;
  /* fallback (greedy packing is exact, so only for safety): the last stage */
  r->fail_stage = p->n_stages - 1, r->fail_begin = w->cand[w->k - 1], r->fail_end = p->n_ops;
  r->fail_memory = segments_memory(w, p->n_stages - 1, w->k - 1, w->k, w->seg_live[w->k - 1]);
  for (int s = 0; s < p->n_stages && b < w->k; s++) {
    bool last = s == p->n_stages - 1;
    int max_e = w->k - (p->n_stages - 1 - s); /* one segment left for each later stage */
    int64_t peak = w->seg_live[b];
    int e = b + 1;
    while (e < max_e && (last || fits(p, s, segments_memory(w, s, b, e + 1, peak > w->seg_live[e] ? peak : w->seg_live[e])))) {
      if (w->seg_live[e] > peak) peak = w->seg_live[e];
      e++;
    }
    int64_t mem = segments_memory(w, s, b, e, peak);
    if (!fits(p, s, mem)) {
      r->fail_stage = s, r->fail_begin = w->cand[b], r->fail_end = w->cand[e], r->fail_memory = mem;
      return;
    }
    b = e;
  }
}

static void read_back(const split_work *w, int **choice, int *start) {
  int n_stages = w->p->n_stages, e = w->k;
  start[n_stages] = w->p->n_ops;
  for (int s = n_stages - 1; s >= 0; s--) {
    int b = s == 0 ? 0 : choice[s][e];
    start[s] = w->cand[b];
    e = b;
  }
}

static bool run_dp(const split_work *w, int *start, ppcc_split_result *r) {
  int n_stages = w->p->n_stages;
  size_t row = (size_t)w->k + 1;
  double *prev = malloc(sizeof(double) * row), *cur = malloc(sizeof(double) * row);
  int **choice = calloc((size_t)n_stages, sizeof(int *));
  bool ok = prev && cur && choice;
  for (int s = 0; ok && s < n_stages; s++) ok = (choice[s] = malloc(sizeof(int) * row)) != NULL;
  if (ok) {
    first_stage(w, cur, choice[0]);
    for (int s = 1; s < n_stages; s++) {
      double *t = prev;
      prev = cur, cur = t;
      solve_stage(w, s, prev, cur, choice[s]);
    }
    r->feasible = cur[w->k] != DBL_MAX;
    if (r->feasible) read_back(w, choice, start);
    else explain_memory(w, r);
  }
  for (int s = 0; choice && s < n_stages; s++) free(choice[s]);
  free(choice);
  free(prev);
  free(cur);
  return ok;
}

bool ppcc_split_solve(const ppcc_split_problem *p, int *start, ppcc_split_result *r) {
  memset(r, 0, sizeof *r);
  split_work w;
  bool ok = work_init(&w, p);
  if (ok && (p->n_stages < 1 || w.k < p->n_stages)) {
    r->too_few_cuts = true;
  } else if (ok) {
    ok = run_dp(&w, start, r);
    if (ok && r->feasible) {
      r->max_cost = 0;
      for (int s = 0; s < p->n_stages; s++) {
        double c = ppcc_split_stage_time(p, s, start[s], start[s + 1]);
        r->max_cost = c > r->max_cost ? c : r->max_cost;
      }
    }
  }
  work_free(&w);
  return ok;
}

bool ppcc_split_even(const ppcc_split_problem *p, int *start) {
  split_work w;
  bool ok = work_init(&w, p) && p->n_stages >= 1 && w.k >= p->n_stages;
  for (int s = 0; ok && s < p->n_stages; s++) start[s] = w.cand[(int)((int64_t)s * w.k / p->n_stages)];
  if (ok) start[p->n_stages] = p->n_ops;
  work_free(&w);
  return ok;
}
