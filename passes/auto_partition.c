/* auto-partition: places a model that declares no placement on --pp P
 * pipeline stages of --tp T devices each (stage s on devices
 * [s*T, ..., s*T+T-1]), or of per-stage TP sizes (--tp 4,1,2,1: stage s
 * on the next T_s devices). No-op unless the graph carries a request.
 * With --devices-spec each stage runs at its slowest device's speed and
 * must fit its smallest device's memory (include/ppcc/devices_spec.h).
 *
 *  1. Tensor parallelism (T > 1), Megatron-style: a weight matmul/linear
 *     whose result reaches, through single-use elementwise ops, a second
 *     weight matmul/linear forms a pair. The first is column-parallel
 *     (weight split along its output features), the second row-parallel
 *     (split along its input features); its partial sums are completed by
 *     one inserted all_reduce (a bias of the row-parallel op stays
 *     replicated and counts once). Every other param and the graph inputs are
 *     replicated over the stage's T devices.
 *  2. The stage split: the optimal one under the cost model of
 *     include/ppcc/partition.h (slowest stage minimised, memory per device
 *     within --device-memory).
 *  3. Placement: params pinned on the stage of their first reader, inputs
 *     on stage 0; a value read by a later stage crosses with an inserted
 *     explicit transfer (P8), so the receiving stage's pinned weights never
 *     meet a pinned activation from elsewhere (which P4 forbids).
 * Later passes then propagate layouts and placements as for any model.
 *
 * Per-stage TP sizes that differ ("mixed"): the split is chosen first on
 * the unsharded graph where the ops that would form Megatron pairs (found
 * at the largest TP size) have time and weights divided by T_s on stage s,
 * other ops counting whole (an estimate); then each stage gets its own
 * Megatron layouts over T_s devices, and a value crossing to a stage of
 * another size is gathered onto the new stage's first device (unshard)
 * and replicated from there (transfer, P8). The summary and the memory
 * check use the exact cost model of the placed graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/devices_spec.h"
#include "ppcc/ops.h"
#include "ppcc/partition.h"
#include "ppcc/passes.h"

enum { ROLE_NONE, ROLE_COLUMN, ROLE_ROW, ROLE_OTHER_STAGE };

typedef struct part_ctx {
  ppcc_graph *g;
  ppcc_diag *d;
  int pp, tp;    /* tp: the stage whose layouts are chosen (mixed), else all */
  int *n_uses;   /* per value */
  int *consumer; /* per value: the last op reading it */
  int n_pairs;
  /* The stages: TP size, first device (pp + 1 entries: the last is the
   * device count used), speed, memory budget per device (0: unlimited). */
  int *stage_tp, *first_dev;
  double *speed;
  int64_t *budget;
  bool mixed;
  int lo, hi;    /* ops whose layouts are being chosen */
} part_ctx;

static ppcc_status oom(ppcc_diag *d) {
  return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory in auto-partition");
}

/* ---------------- the request ---------------- */

static ppcc_status check_declarations(const ppcc_graph *g, ppcc_diag *d) {
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    if (val->kind == PPCC_VALUE_RESULT) continue;
    if (val->devices_declared || ppcc_value_is_sharded(val))
      return ppcc_error(d, "auto-partition: %s '%s' already declares a placement (%s); give a model without "
                           "\"devices\" and \"shard\" or drop --pp/--tp",
                        val->kind == PPCC_VALUE_PARAM ? "param" : "input", val->name,
                        val->devices_declared ? "devices" : "shard");
  }
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    if (op->info->family == PPCC_FAMILY_COMPUTE) continue;
    char ref[600];
    return ppcc_error(d, "%s: auto-partition chooses collectives and transfers itself; remove explicit '%s' "
                         "ops or drop --pp/--tp",
                      ppcc_op_ref(g, op, ref, sizeof ref), op->info->name);
  }
  return PPCC_OK;
}

/* Device d's budget: its spec memory, else --device-memory (0: none). */
static int64_t device_budget(const ppcc_graph *g, int d) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  if (spec && d < spec->n_devices && spec->memory[d] > 0) return spec->memory[d];
  return g->partition.device_memory;
}

static double device_speed(const ppcc_graph *g, int d) {
  return ppcc_devices_spec_speed(g->partition.devices_spec, d);
}

/* Stage TP sizes and devices. */
static bool plan_stages(part_ctx *c) {
  ppcc_graph *g = c->g;
  c->stage_tp = ppcc_alloc(g, sizeof(int) * (size_t)c->pp);
  c->first_dev = ppcc_alloc(g, sizeof(int) * ((size_t)c->pp + 1));
  c->speed = ppcc_alloc(g, sizeof(double) * (size_t)c->pp);
  c->budget = ppcc_alloc(g, sizeof(int64_t) * (size_t)c->pp);
  if (!c->stage_tp || !c->first_dev || !c->speed || !c->budget) return false;
  for (int s = 0; s < c->pp; s++) {
    int t = g->partition.stage_tp ? g->partition.stage_tp[s] : c->tp;
    c->stage_tp[s] = t < 1 ? 1 : t > PPCC_MAX_DEVICES ? PPCC_MAX_DEVICES : t;
    if (c->stage_tp[s] != c->stage_tp[0]) c->mixed = true;
    c->first_dev[s + 1] = c->first_dev[s] + c->stage_tp[s];
  }
  if (!c->mixed) c->tp = c->stage_tp[0];
  return true;
}

/* The slowest device sets a TP group's pace; the smallest one its budget. */
static void stage_speeds_budgets(part_ctx *c) {
  for (int s = 0; s < c->pp; s++) {
    c->speed[s] = 0;
    c->budget[s] = 0;
    for (int d = c->first_dev[s]; d < c->first_dev[s + 1]; d++) {
      double v = device_speed(c->g, d);
      int64_t b = device_budget(c->g, d);
      if (c->speed[s] == 0 || v < c->speed[s]) c->speed[s] = v;
      if (b > 0 && (c->budget[s] == 0 || b < c->budget[s])) c->budget[s] = b;
    }
  }
}

static ppcc_status check_request(part_ctx *c) {
  ppcc_graph *g = c->g;
  if (c->pp < 1 || c->tp < 1 || c->pp > PPCC_MAX_DEVICES || c->tp > PPCC_MAX_DEVICES)
    return ppcc_error(c->d, "auto-partition: --pp %d and --tp %d must be at least 1", c->pp, c->tp);
  int used = c->first_dev[c->pp];
  if (c->mixed && used > g->n_devices)
    return ppcc_error(c->d, "auto-partition: stage TP sizes (--tp) need %d devices, the model declares %d", used,
                      g->n_devices);
  if (!c->mixed && (int64_t)c->pp * c->tp > g->n_devices)
    return ppcc_error(c->d, "auto-partition: --pp %d x --tp %d needs %lld devices, the model declares %d", c->pp,
                      c->tp, (long long)c->pp * c->tp, g->n_devices);
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  if (spec && spec->n_devices < used)
    return ppcc_error(c->d, "auto-partition: devices spec '%s' describes %d device%s, the split uses %d", spec->path,
                      spec->n_devices, spec->n_devices == 1 ? "" : "s", used);
  if (g->n_ops < c->pp)
    return ppcc_error(c->d, "auto-partition: %d stages need at least %d ops, the model has %d", c->pp, c->pp,
                      g->n_ops);
  return check_declarations(g, c->d);
}

/* ---------------- Megatron pairs ---------------- */

static bool count_uses(part_ctx *c) {
  size_t n = (size_t)(c->g->n_values > 0 ? c->g->n_values : 1);
  c->n_uses = calloc(n, sizeof(int));
  c->consumer = malloc(sizeof(int) * n);
  if (!c->n_uses || !c->consumer) return false;
  for (int i = 0; i < c->g->n_ops; i++)
    for (int k = 0; k < c->g->ops[i].n_in; k++) {
      c->n_uses[c->g->ops[i].in[k]]++;
      c->consumer[c->g->ops[i].in[k]] = i;
    }
  return true;
}

static const ppcc_value *val(const part_ctx *c, int v) { return &c->g->values[v]; }

/* A matmul/linear whose right operand is a rank-2 param read only here. */
static bool is_weight_op(const part_ctx *c, const ppcc_op *op) {
  ppcc_op_id id = op->info->id;
  if ((id != PPCC_OP_matmul && id != PPCC_OP_linear) || op->in[0] == op->in[1]) return false;
  const ppcc_value *w = val(c, op->in[1]);
  return w->kind == PPCC_VALUE_PARAM && w->rank == 2 && c->n_uses[op->in[1]] == 1;
}

/* Output / input feature dims of the weight: matmul w[K, N], linear w[N, K]. */
static int out_dim(const ppcc_op *op) { return op->info->id == PPCC_OP_linear ? 0 : 1; }
static int in_dim(const ppcc_op *op) { return op->info->id == PPCC_OP_linear ? 1 : 0; }

static bool column_ok(const part_ctx *c, const ppcc_op *op) {
  if (!is_weight_op(c, op) || val(c, op->in[1])->shape[out_dim(op)] % c->tp != 0) return false;
  if (op->n_in < 3) return true;
  const ppcc_value *b = val(c, op->in[2]); /* the bias is split like the result */
  return b->kind == PPCC_VALUE_PARAM && c->n_uses[op->in[2]] == 1;
}

/* A bias of the row-parallel op stays replicated: on partial sums shard 0
 * adds it, so the all_reduce counts it once (DESIGN §4). */
static bool row_ok(const part_ctx *c, const ppcc_op *op, int activation) {
  return is_weight_op(c, op) && (op->n_in == 2 || val(c, op->in[2])->kind == PPCC_VALUE_PARAM) &&
         op->in[0] == activation && val(c, op->in[1])->shape[in_dim(op)] % c->tp == 0 &&
         !ppcc_split_cuts_blocks(val(c, op->in[1]), in_dim(op), c->tp); /* quantized: whole blocks only */
}

/* Elementwise ops that keep a split along the last dim as it is. */
static bool keeps_split(const ppcc_op *op) {
  switch (op->info->id) {
  case PPCC_OP_gelu: case PPCC_OP_silu: case PPCC_OP_relu: case PPCC_OP_sigmoid:
  case PPCC_OP_tanh: case PPCC_OP_exp: case PPCC_OP_neg: case PPCC_OP_scale:
    return true;
  default:
    return false;
  }
}

/* The row-parallel partner of column op `col`: follow the single-use
 * elementwise chain from its result; -1 if there is none. */
static int find_partner(const part_ctx *c, int col) {
  int v = c->g->ops[col].out[0];
  for (;;) {
    if (c->n_uses[v] != 1 || val(c, v)->is_output) return -1;
    const ppcc_op *next = &c->g->ops[c->consumer[v]];
    if (row_ok(c, next, v)) return c->consumer[v];
    if (!keeps_split(next)) return -1;
    v = next->out[0];
  }
}

static void set_layout(part_ctx *c, int v, ppcc_layout l, const char *why) {
  ppcc_value *x = &c->g->values[v];
  x->layout = l;
  x->why = why;
}

static void make_pair(part_ctx *c, int col, int row, int *role) {
  const ppcc_op *a = &c->g->ops[col], *b = &c->g->ops[row];
  role[col] = ROLE_COLUMN;
  role[row] = ROLE_ROW;
  set_layout(c, a->in[1], (ppcc_layout){PPCC_LAYOUT_SPLIT, out_dim(a), c->tp},
             "auto-partition: column-parallel weight (Megatron: split along its output features), pinned on its "
             "stage's devices");
  if (a->n_in == 3)
    set_layout(c, a->in[2], (ppcc_layout){PPCC_LAYOUT_SPLIT, 0, c->tp},
               "auto-partition: bias of a column-parallel linear, split like its result");
  set_layout(c, b->in[1], (ppcc_layout){PPCC_LAYOUT_SPLIT, in_dim(b), c->tp},
             "auto-partition: row-parallel weight (Megatron: split along its input features; an all_reduce "
             "follows), pinned on its stage's devices");
  c->n_pairs++;
}

/* Default layouts: everything replicated over the stage (T > 1), or whole
 * on the stage's one device. */
static void default_layouts(part_ctx *c) {
  ppcc_layout l = c->tp > 1 ? (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, c->tp} : ppcc_layout_unsharded();
  for (int v = 0; v < c->g->n_values; v++) {
    ppcc_value *x = &c->g->values[v];
    if (x->kind == PPCC_VALUE_PARAM)
      set_layout(c, v, l, c->tp > 1 ? "auto-partition: param replicated and pinned on its stage's devices"
                                    : "auto-partition: param pinned on its stage's device");
    else if (x->kind == PPCC_VALUE_INPUT)
      set_layout(c, v, l, c->tp > 1 ? "auto-partition: graph input replicated on stage 0's devices"
                                    : "auto-partition: graph input placed on stage 0's device");
  }
}

static bool choose_regions(part_ctx *c, int *role);

static bool choose_layouts(part_ctx *c, int *role) {
  if (!c->mixed) default_layouts(c);
  if (c->tp < 2) return true;
  for (int i = c->lo; i < c->hi; i++) {
    if (role[i] != ROLE_NONE || !column_ok(c, &c->g->ops[i])) continue;
    int row = find_partner(c, i);
    if (row >= 0 && role[row] == ROLE_NONE) make_pair(c, i, row, role);
  }
  return choose_regions(c, role);
}

/* ---------------- Megatron regions (SwiGLU, attention) ---------------- */

/* Imported blocks spell their pairs as graphs, not chains: SwiGLU is
 * down(silu(gate(x)) * up(x)); attention is o(attention(rope(q(x)),
 * rope(k(x)), v(x))) through reshapes and permutes. A region grows from a
 * column candidate forward through ops that carry a split along, pulling
 * in the other column ops feeding it (backward through such ops), and ends
 * at row-parallel weight ops. It is kept only if the sharding rules accept
 * it with no data movement (checked quietly). */
enum { MARK_NONE, MARK_COL, MARK_PASS, MARK_ROW };

static bool passes_split(const ppcc_op *op) {
  if (keeps_split(op)) return true;
  switch (op->info->id) {
  case PPCC_OP_add: case PPCC_OP_sub: case PPCC_OP_mul: case PPCC_OP_div: case PPCC_OP_maximum:
  case PPCC_OP_reshape: case PPCC_OP_permute: case PPCC_OP_transpose: case PPCC_OP_slice:
  case PPCC_OP_concat: case PPCC_OP_attention: case PPCC_OP_softmax:
    return true;
  default:
    return false;
  }
}

typedef struct region_ctx {
  part_ctx *c;
  int *first_use, *uses; /* consumers of value v: uses[first_use[v] .. first_use[v+1]) */
  char *mark;            /* per op */
  int *stack, n_stack;   /* values to visit */
  int *touched, n_touched;
} region_ctx;

static bool build_uses(region_ctx *r) {
  const ppcc_graph *g = r->c->g;
  r->first_use = calloc((size_t)g->n_values + 1, sizeof(int));
  int total = 0;
  for (int i = 0; i < g->n_ops; i++) total += g->ops[i].n_in;
  r->uses = malloc(sizeof(int) * (size_t)(total > 0 ? total : 1));
  int *fill = calloc((size_t)g->n_values + 1, sizeof(int));
  if (!r->first_use || !r->uses || !fill) {
    free(fill);
    return false;
  }
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_in; k++) r->first_use[g->ops[i].in[k] + 1]++;
  for (int v = 0; v < g->n_values; v++) r->first_use[v + 1] += r->first_use[v];
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_in; k++) {
      int v = g->ops[i].in[k];
      bool dup = false; /* an op reading v twice is one consumer */
      for (int j = r->first_use[v]; j < r->first_use[v] + fill[v]; j++) dup = dup || r->uses[j] == i;
      if (!dup) r->uses[r->first_use[v] + fill[v]++] = i;
    }
  for (int v = 0; v < g->n_values; v++) /* mark unused slots of duplicates */
    for (int j = r->first_use[v] + fill[v]; j < r->first_use[v + 1]; j++) r->uses[j] = -1;
  free(fill);
  return true;
}

static void mark_op(region_ctx *r, int i, char m) {
  r->mark[i] = m;
  r->touched[r->n_touched++] = i;
  if (m != MARK_ROW)
    for (int k = 0; k < r->c->g->ops[i].n_out; k++) r->stack[r->n_stack++] = r->c->g->ops[i].out[k];
}

/* Does value w come from a column candidate through split-carrying ops? */
static bool traces_to_column(region_ctx *r, int w, int depth, const int *role) {
  const ppcc_value *x = val(r->c, w);
  if (x->def_op < 0 || depth > 64) return false;
  int p = x->def_op;
  if (r->mark[p] == MARK_COL || r->mark[p] == MARK_PASS) return true;
  if (r->mark[p] != MARK_NONE || role[p] != ROLE_NONE) return false;
  if (column_ok(r->c, &r->c->g->ops[p])) return true;
  if (!passes_split(&r->c->g->ops[p])) return false;
  for (int k = 0; k < r->c->g->ops[p].n_in; k++)
    if (traces_to_column(r, r->c->g->ops[p].in[k], depth + 1, role)) return true;
  return false;
}

/* Pulls w's producers into the region back to their column ops. */
static void absorb_backward(region_ctx *r, int w, const int *role) {
  int p = val(r->c, w)->def_op;
  if (p < 0 || r->mark[p] != MARK_NONE || !traces_to_column(r, w, 0, role)) return;
  if (column_ok(r->c, &r->c->g->ops[p])) {
    mark_op(r, p, MARK_COL);
    return;
  }
  mark_op(r, p, MARK_PASS);
  for (int k = 0; k < r->c->g->ops[p].n_in; k++) absorb_backward(r, r->c->g->ops[p].in[k], role);
}

static bool grow_region(region_ctx *r, int start, const int *role, int *n_rows) {
  part_ctx *c = r->c;
  *n_rows = 0;
  mark_op(r, start, MARK_COL);
  while (r->n_stack > 0) {
    int v = r->stack[--r->n_stack];
    if (val(c, v)->is_output) return false;
    for (int j = r->first_use[v]; j < r->first_use[v + 1]; j++) {
      int u = r->uses[j];
      if (u < 0 || r->mark[u] != MARK_NONE) continue;
      const ppcc_op *op = &c->g->ops[u];
      if (role[u] != ROLE_NONE) return false;
      if (row_ok(c, op, v)) {
        mark_op(r, u, MARK_ROW);
        (*n_rows)++;
        continue;
      }
      if (!passes_split(op)) return false;
      mark_op(r, u, MARK_PASS);
      for (int k = 0; k < op->n_in; k++) absorb_backward(r, op->in[k], role);
    }
  }
  return *n_rows > 0;
}

/* The sharding rules accept the layouts with no data movement; row
 * results count as all-reduced. Leaves no rewrite requests behind. */
static bool layouts_accepted(part_ctx *c, const int *role, const char *mark) {
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  bool ok = true;
  for (int i = c->lo; ok && i < c->hi; i++) {
    ppcc_op *op = &c->g->ops[i];
    ok = ppcc_apply_shard_rule(c->g, op, &quiet) == PPCC_OK && !op->gather_operands && !op->resplit;
    if (ok && (role[i] == ROLE_ROW || mark[i] == MARK_ROW))
      c->g->values[op->out[0]].layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, c->tp};
  }
  for (int i = 0; i < c->g->n_ops; i++) {
    c->g->ops[i].gather_operands = 0;
    c->g->ops[i].resplit = false;
  }
  return ok;
}

static void set_region_layouts(part_ctx *c, region_ctx *r, bool on) {
  ppcc_layout repl = {PPCC_LAYOUT_REPLICATED, -1, c->tp};
  for (int t = 0; t < r->n_touched; t++) {
    const ppcc_op *op = &c->g->ops[r->touched[t]];
    char m = r->mark[r->touched[t]];
    if (m == MARK_COL)
      set_layout(c, op->in[1], on ? (ppcc_layout){PPCC_LAYOUT_SPLIT, out_dim(op), c->tp} : repl,
                 "auto-partition: column-parallel weight (Megatron: split along its output features), pinned on its "
                 "stage's devices");
    else if (m == MARK_ROW)
      set_layout(c, op->in[1], on ? (ppcc_layout){PPCC_LAYOUT_SPLIT, in_dim(op), c->tp} : repl,
                 "auto-partition: row-parallel weight (Megatron: split along its input features; an all_reduce "
                 "follows), pinned on its stage's devices");
    if (!on && (m == MARK_COL || m == MARK_ROW))
      set_layout(c, op->in[1], repl, "auto-partition: param replicated and pinned on its stage's devices");
  }
}

static bool choose_regions(part_ctx *c, int *role) {
  int n_ops = c->g->n_ops;
  region_ctx r = {.c = c};
  r.mark = calloc((size_t)(n_ops > 0 ? n_ops : 1), 1);
  r.stack = malloc(sizeof(int) * (size_t)(c->g->n_values + n_ops + 1));
  r.touched = malloc(sizeof(int) * (size_t)(n_ops + 1));
  bool ok = r.mark && r.stack && r.touched && build_uses(&r);
  for (int i = c->lo; ok && i < c->hi; i++) {
    if (role[i] != ROLE_NONE || !column_ok(c, &c->g->ops[i])) continue;
    int n_rows;
    r.n_stack = r.n_touched = 0;
    bool grown = grow_region(&r, i, role, &n_rows);
    if (grown) set_region_layouts(c, &r, true);
    if (grown && layouts_accepted(c, role, r.mark)) {
      for (int t = 0; t < r.n_touched; t++) {
        int k = r.touched[t];
        if (r.mark[k] == MARK_COL) role[k] = ROLE_COLUMN;
        else if (r.mark[k] == MARK_ROW) role[k] = ROLE_ROW;
      }
      c->n_pairs += n_rows;
    } else if (grown) {
      set_region_layouts(c, &r, false);
    }
    for (int t = 0; t < r.n_touched; t++) r.mark[r.touched[t]] = MARK_NONE;
  }
  free(r.mark);
  free(r.stack);
  free(r.touched);
  free(r.first_use);
  free(r.uses);
  return ok;
}

/* ---------------- rewriting the op list ---------------- */

/* The row-parallel op now writes "<y>.partial"; the inserted all_reduce
 * writes y itself, so every consumer and output keeps reading y. */
static bool push_row_with_all_reduce(ppcc_graph *g, ppcc_op_list *l, ppcc_op *row) {
  int y = row->out[0];
  int partial = ppcc_add_value_like(g, y, ".partial");
  if (partial < 0) return false;
  row->out[0] = partial;
  g->values[partial].def_op = l->n;
  ppcc_op ar;
  if (!ppcc_op_list_push(l, row) ||
      !ppcc_op_init_inserted(g, &ar, PPCC_OP_all_reduce, partial, y,
                     "auto-partition: all_reduce completes the partial sums of a row-parallel matmul (Megatron pair)"))
    return false;
  g->values[y].def_op = l->n;
  return ppcc_op_list_push(l, &ar);
}

/* stage_in (per op, or NULL) gives stage_out the stage of every op of the
 * new list (an inserted all_reduce is on its row op's stage). */
static bool insert_all_reduces(ppcc_graph *g, const int *role, const int *stage_in, int **stage_out) {
  ppcc_op_list l = {0};
  int *stage = stage_in ? malloc(sizeof(int) * (2 * (size_t)g->n_ops + 1)) : NULL;
  bool ok = !stage_in || stage;
  for (int i = 0; ok && i < g->n_ops; i++) {
    ppcc_op op = g->ops[i];
    if (stage) stage[l.n] = stage[l.n + 1] = stage_in[i];
    if (role[i] == ROLE_ROW) {
      ok = push_row_with_all_reduce(g, &l, &op);
      continue;
    }
    for (int k = 0; k < op.n_out; k++) g->values[op.out[k]].def_op = l.n;
    ok = ppcc_op_list_push(&l, &op);
  }
  if (!ok) {
    free(l.ops);
    free(stage);
    return false;
  }
  ppcc_graph_set_ops(g, l.ops, l.n, l.cap);
  if (stage_out) *stage_out = stage;
  return true;
}

/* Layouts of every result now, so the cost model knows what is split;
 * shard-propagate recomputes the same later. */
static ppcc_status infer_layouts(ppcc_graph *g, ppcc_diag *d) {
  for (int i = 0; i < g->n_ops; i++) {
    ppcc_status st = ppcc_apply_shard_rule(g, &g->ops[i], d);
    if (st) return st;
  }
  return PPCC_OK;
}

/* ---------------- the split ---------------- */

static void op_range(const ppcc_graph *g, int begin, int end, char *buf, size_t n) {
  char a[600], b[600];
  ppcc_op_ref(g, &g->ops[begin], a, sizeof a);
  if (end - begin == 1) snprintf(buf, n, "%s", a);
  else snprintf(buf, n, "%s .. %s", a, ppcc_op_ref(g, &g->ops[end - 1], b, sizeof b));
}

static ppcc_status split_error(const part_ctx *c, const ppcc_split_problem *p, const ppcc_split_result *r) {
  if (r->too_few_cuts)
    return ppcc_error(c->d, "auto-partition: cannot cut the model into %d stages: too few places where at most %d "
                            "whole activations cross between ops",
                      c->pp, PPCC_PART_MAX_CUT_VALUES);
  char range[1300];
  op_range(c->g, r->fail_begin, r->fail_end, range, sizeof range);
  ppcc_diag_site_set(c->d, PPCC_SITE_MEMORY, c->g->ops[r->fail_begin].src_index); /* src/fix/ proposes fixes */
  c->d->pending.op_end = c->g->ops[r->fail_end - 1].src_index + 1;
  c->d->pending.stage = r->fail_stage;
  c->d->pending.bytes = r->fail_memory;
  const ppcc_devices_spec *spec = c->g->partition.devices_spec;
  int s = r->fail_stage;
  if (spec) {
    int dev = c->first_dev[s]; /* the stage's device with the smallest budget */
    for (int k = c->first_dev[s]; k < c->first_dev[s + 1]; k++) {
      int64_t b = device_budget(c->g, k), best = device_budget(c->g, dev);
      if (b > 0 && (best <= 0 || b < best)) dev = k;
    }
    bool from_spec = dev < spec->n_devices && spec->memory[dev] > 0;
    return ppcc_error(c->d, "auto-partition: stage %d (%s) needs %lld bytes per device, more than device %d's memory "
                            "%lld (%s '%s'); no split into %d stages fits",
                      s, range, (long long)r->fail_memory, dev, (long long)ppcc_split_stage_limit(p, s),
                      from_spec ? "devices spec" : "--device-memory, devices spec", spec->path, c->pp);
  }
  return ppcc_error(c->d, "auto-partition: stage %d (%s) needs %lld bytes per device, more than --device-memory "
                          "%lld; no split into %d stages of %d devices fits",
                    s, range, (long long)r->fail_memory, (long long)p->memory_limit, c->pp, c->tp);
}

/* Mixed TP sizes: the split is chosen on the unsharded graph where the ops
 * of Megatron pairs (shared_role, per op) have their time and weights
 * shared by a stage's T_s devices (the estimate of the file comment). */
static ppcc_status solve_split(part_ctx *c, ppcc_split_problem *p, int *start, const int *shared_role) {
  if (!ppcc_split_problem_from_graph(c->g, c->pp, c->g->partition.device_memory, p)) return oom(c->d);
  p->stage_speed = c->speed;
  p->stage_memory = c->budget;
  if (shared_role) {
    size_t n = (size_t)(c->g->n_ops > 0 ? c->g->n_ops : 1);
    double *time = ppcc_alloc(c->g, sizeof(double) * n);
    int64_t *param = ppcc_alloc(c->g, sizeof(int64_t) * n);
    if (!time || !param) return oom(c->d);
    for (int i = 0; i < c->g->n_ops; i++) {
      bool shared = shared_role[i] == ROLE_COLUMN || shared_role[i] == ROLE_ROW;
      time[i] = shared ? p->time[i] : 0;
      param[i] = shared ? p->param_bytes[i] : 0;
    }
    p->stage_tp = c->stage_tp;
    p->shared_time = time;
    p->shared_param = param;
  }
  ppcc_split_result r;
  if (!ppcc_split_solve(p, start, &r)) return oom(c->d);
  return r.feasible ? PPCC_OK : split_error(c, p, &r);
}

/* ---------------- placement ---------------- */

/* Device tuples of the stages: stage s = [first_dev[s], ..., + T_s - 1]. */
static int **stage_devices(part_ctx *c) {
  int **devs = ppcc_alloc(c->g, sizeof(int *) * (size_t)c->pp);
  for (int s = 0; devs && s < c->pp; s++) {
    devs[s] = ppcc_alloc(c->g, sizeof(int) * (size_t)c->stage_tp[s]);
    if (!devs[s]) return NULL;
    for (int t = 0; t < c->stage_tp[s]; t++) devs[s][t] = c->first_dev[s] + t;
  }
  return devs;
}

/* Stage of every value: params and inputs that of their first reader (an
 * input read only by a late stage, such as its KV cache, goes straight
 * there), results that of their op. */
static void home_stages(const ppcc_graph *g, const int *op_stage, int *home) {
  for (int v = 0; v < g->n_values; v++) home[v] = g->values[v].def_op >= 0 ? op_stage[g->values[v].def_op] : -1;
  for (int i = g->n_ops - 1; i >= 0; i--)
    for (int k = 0; k < g->ops[i].n_in; k++)
      if (g->values[g->ops[i].in[k]].kind != PPCC_VALUE_RESULT) home[g->ops[i].in[k]] = op_stage[i];
  for (int v = 0; v < g->n_values; v++)
    if (home[v] < 0) home[v] = 0;
}

static void place_declared(ppcc_graph *g, const int *home, int **devs) {
  for (int v = 0; v < g->n_values; v++) {
    ppcc_value *x = &g->values[v];
    if (x->kind == PPCC_VALUE_RESULT) continue;
    x->devices = devs[home[v]];
    if (x->kind == PPCC_VALUE_PARAM) x->pinned = true;
    else if (home[v] > 0) x->why = "auto-partition: graph input placed on the stage of its first reader";
  }
}

/* A value and the stages it was already moved to. */
typedef struct moved {
  struct moved *next;
  int stage, value;
} moved;

typedef struct crossing_ctx {
  part_ctx *c;
  ppcc_op_list l;
  moved **seen; /* per source value */
  int **devs;
  const int *home;
  int *final_start; /* pp + 1: the stages in the new op list */
} crossing_ctx;

/* Mixed TP: each new op's layout at once, so the next crossing knows how
 * many shards its source has. */
static bool layout_now(crossing_ctx *x, ppcc_status *st) {
  if (!x->c->mixed || *st) return !*st;
  *st = ppcc_apply_shard_rule(x->c->g, &x->l.ops[x->l.n - 1], x->c->d);
  return *st == PPCC_OK;
}

/* Gathers src onto one device of the next stage (P9). */
static int push_unshard(ppcc_graph *g, ppcc_op_list *l, int src, int device) {
  char suffix[32];
  snprintf(suffix, sizeof suffix, "@%d", device);
  int out = ppcc_add_value_like(g, src, suffix);
  ppcc_op u;
  if (out < 0 || !ppcc_op_init_inserted(g, &u, PPCC_OP_unshard, src, out,
                                        "auto-partition: the value leaves for a stage of another TP size: gathered "
                                        "onto that stage's first device"))
    return -1;
  u.attrs = ppcc_alloc(g, sizeof(ppcc_attr));
  if (!u.attrs) return -1;
  *u.attrs = (ppcc_attr){.name = "device", .type = PPCC_ATTR_INT, .i = device};
  u.n_attrs = 1;
  g->values[out].def_op = l->n;
  return ppcc_op_list_push(l, &u) ? out : -1;
}

static const char why_cross[] = "auto-partition: the value crosses a pipeline-stage boundary to the stage that reads it";

/* src's shards go to the stage's devices: one transfer when the shard
 * counts match (P10), else unshard onto its first device and, for a TP
 * group, a transfer that replicates it there (P8). -1 on failure. */
static int cross_to_stage(crossing_ctx *x, int src, int stage, ppcc_status *st) {
  ppcc_graph *g = x->c->g;
  int tp = x->c->stage_tp[stage], count = g->values[src].layout.count, *devs = x->devs[stage];
  if (count == tp) {
    int out = ppcc_push_transfer(g, &x->l, src, devs, why_cross);
    return out >= 0 && layout_now(x, st) ? out : -1;
  }
  int one = src;
  if (count > 1) {
    one = push_unshard(g, &x->l, src, devs[0]);
    if (one < 0 || !layout_now(x, st)) return -1;
    if (tp == 1) return one;
  }
  int out = ppcc_push_transfer_to(g, &x->l, one, devs, tp, why_cross);
  return out >= 0 && layout_now(x, st) ? out : -1;
}

static bool transfer_to_stage(crossing_ctx *x, int src, int stage, int *result, ppcc_status *st) {
  for (moved *m = x->seen[src]; m; m = m->next)
    if (m->stage == stage) {
      *result = m->value;
      return true;
    }
  moved *m = ppcc_alloc(x->c->g, sizeof *m);
  if (!m || (*result = cross_to_stage(x, src, stage, st)) < 0) return false;
  *m = (moved){x->seen[src], stage, *result};
  x->seen[src] = m;
  return true;
}

/* Every read of a value homed on another stage goes through a transfer
 * inserted before its first reader on this stage. */
static bool insert_crossings(crossing_ctx *x, const int *op_stage, ppcc_status *st) {
  ppcc_graph *g = x->c->g;
  bool ok = true;
  for (int i = 0; ok && i < g->n_ops; i++) {
    if (i == 0 || op_stage[i] != op_stage[i - 1])
      for (int s = i == 0 ? 0 : op_stage[i - 1] + 1; s <= op_stage[i]; s++) x->final_start[s] = x->l.n;
    ppcc_op op = g->ops[i];
    for (int k = 0; ok && k < op.n_in; k++) {
      if (x->home[op.in[k]] == op_stage[i]) continue;
      int moved_value;
      ok = transfer_to_stage(x, op.in[k], op_stage[i], &moved_value, st);
      if (ok) op.in[k] = moved_value;
    }
    for (int k = 0; ok && k < op.n_out; k++) g->values[op.out[k]].def_op = x->l.n;
    ok = ok && ppcc_op_list_push(&x->l, &op) && layout_now(x, st);
  }
  x->final_start[x->c->pp] = x->l.n;
  return ok;
}

/* Places params and inputs and inserts the crossings; op_stage per op.
 * final_start (pp + 1) receives the stages' ranges in the new op list. */
static ppcc_status place_stages(part_ctx *c, const int *op_stage, int *final_start) {
  ppcc_graph *g = c->g;
  size_t n_values = (size_t)(g->n_values > 0 ? g->n_values : 1);
  int *home = malloc(sizeof(int) * n_values);
  crossing_ctx x = {.c = c, .seen = calloc(n_values, sizeof(moved *)), .devs = stage_devices(c), .home = home,
                    .final_start = final_start};
  ppcc_status st = PPCC_OK;
  bool ok = home && x.seen && x.devs;
  if (ok) {
    home_stages(g, op_stage, home);
    place_declared(g, home, x.devs);
    ok = insert_crossings(&x, op_stage, &st);
  }
  if (ok) ppcc_graph_set_ops(g, x.l.ops, x.l.n, x.l.cap);
  else free(x.l.ops);
  free(home);
  free(x.seen);
  return st ? st : ok ? PPCC_OK : oom(c->d);
}

/* ---------------- per-stage layouts (mixed TP sizes) ---------------- */

static ppcc_layout whole_on(int tp) {
  return tp > 1 ? (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, tp} : ppcc_layout_unsharded();
}

/* Stage s's params and inputs whole on its T_s devices; what its ops read
 * from elsewhere is seen as arriving whole there (the crossing makes it
 * so), for the quiet check of Megatron regions. */
static void stage_default_layouts(part_ctx *c, int s, const int *op_stage, const int *home, ppcc_layout *saved) {
  ppcc_graph *g = c->g;
  int tp = c->stage_tp[s];
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind != PPCC_VALUE_RESULT && home[v] == s) {
      bool param = g->values[v].kind == PPCC_VALUE_PARAM;
      set_layout(c, v, whole_on(tp),
                 param ? (tp > 1 ? "auto-partition: param replicated and pinned on its stage's devices"
                                 : "auto-partition: param pinned on its stage's device")
                       : "auto-partition: graph input placed on the stage of its first reader");
      saved[v] = g->values[v].layout;
    }
  for (int i = c->lo; i < c->hi; i++)
    for (int k = 0; k < g->ops[i].n_in; k++) {
      int v = g->ops[i].in[k], def = g->values[v].def_op;
      bool elsewhere = def >= 0 ? op_stage[def] != s : home[v] != s;
      if (elsewhere) g->values[v].layout = whole_on(tp);
    }
}

/* Each stage's Megatron pairs and regions over its own T_s devices. */
static bool choose_mixed_layouts(part_ctx *c, int *role, const int *start, const int *op_stage) {
  ppcc_graph *g = c->g;
  size_t n_ops = (size_t)(g->n_ops > 0 ? g->n_ops : 1), n_values = (size_t)(g->n_values > 0 ? g->n_values : 1);
  int *home = malloc(sizeof(int) * n_values), *r = malloc(sizeof(int) * n_ops);
  ppcc_layout *saved = malloc(sizeof(ppcc_layout) * n_values);
  bool ok = home && r && saved;
  if (ok) home_stages(g, op_stage, home);
  for (int s = 0; ok && s < c->pp; s++) {
    c->tp = c->stage_tp[s];
    c->lo = start[s];
    c->hi = start[s + 1];
    stage_default_layouts(c, s, op_stage, home, saved);
    for (int i = 0; i < g->n_ops; i++) r[i] = i >= c->lo && i < c->hi ? role[i] : ROLE_OTHER_STAGE;
    ok = choose_layouts(c, r);
    for (int i = c->lo; i < c->hi; i++) role[i] = r[i];
    for (int v = 0; v < g->n_values; v++) /* Megatron weights keep their split */
      if (g->values[v].kind != PPCC_VALUE_RESULT && home[v] == s) saved[v] = g->values[v].layout;
  }
  for (int v = 0; ok && v < g->n_values; v++)
    if (g->values[v].kind != PPCC_VALUE_RESULT) g->values[v].layout = saved[v];
  for (int i = 0; ok && i < g->n_ops; i++) role[i] = role[i] == ROLE_OTHER_STAGE ? ROLE_NONE : role[i];
  free(home);
  free(r);
  free(saved);
  return ok;
}

/* ---------------- the summary for the reports ---------------- */

static void fill_stage(const part_ctx *c, const ppcc_split_problem *p, int k, int begin, int end,
                       ppcc_partition_stage *st) {
  st->first_op = begin;
  st->end_op = end;
  st->tp = c->stage_tp[k];
  st->first_device = c->first_dev[k];
  st->speed = c->speed[k];
  st->memory_limit = c->budget[k];
  st->cost = ppcc_split_stage_time(p, k, begin, end);
  st->transfer_in = begin > 0 ? p->cut_time[begin] : 0;
  int64_t params = 0, peak = 0;
  for (int i = begin; i < end; i++) {
    params += p->param_bytes[i];
    peak = p->live_bytes[i] > peak ? p->live_bytes[i] : peak;
  }
  st->param_bytes = params;
  st->activation_bytes = peak;
}

static bool copy_spec(ppcc_graph *g, ppcc_partition_summary *s) {
  const ppcc_devices_spec *spec = g->partition.devices_spec;
  if (!spec) return true;
  s->spec_path = ppcc_strdup(g, spec->path ? spec->path : "");
  s->n_spec_devices = spec->n_devices;
  s->spec_memory = ppcc_alloc(g, sizeof(int64_t) * (size_t)spec->n_devices);
  s->spec_speed = ppcc_alloc(g, sizeof(double) * (size_t)spec->n_devices);
  if (!s->spec_path || !s->spec_memory || !s->spec_speed) return false;
  memcpy(s->spec_memory, spec->memory, sizeof(int64_t) * (size_t)spec->n_devices);
  memcpy(s->spec_speed, spec->speed, sizeof(double) * (size_t)spec->n_devices);
  return true;
}

static ppcc_status record_summary(part_ctx *c, const ppcc_split_problem *p, int *start) {
  ppcc_graph *g = c->g;
  ppcc_partition_summary *s = ppcc_alloc(g, sizeof *s);
  ppcc_partition_stage *stages = ppcc_alloc(g, sizeof(ppcc_partition_stage) * (size_t)c->pp);
  int *even = malloc(sizeof(int) * ((size_t)c->pp + 1));
  if (!s || !stages || !even) {
    free(even);
    return oom(c->d);
  }
  int max_tp = 0;
  for (int k = 0; k < c->pp; k++) max_tp = c->stage_tp[k] > max_tp ? c->stage_tp[k] : max_tp;
  *s = (ppcc_partition_summary){.pp = c->pp, .tp = max_tp, .device_memory = g->partition.device_memory,
                                .n_pairs = c->n_pairs, .stages = stages, .problem = *p, .start = start,
                                .mixed_tp = c->mixed};
  for (int k = 0; k < c->pp; k++) {
    fill_stage(c, p, k, start[k], start[k + 1], &s->stages[k]);
    s->max_cost = s->stages[k].cost > s->max_cost ? s->stages[k].cost : s->max_cost;
    s->mean_cost += s->stages[k].cost / c->pp;
  }
  s->imbalance = ppcc_split_imbalance(p, start);
  s->even_imbalance = ppcc_split_even(p, even) ? ppcc_split_imbalance(p, even) : -1;
  free(even);
  if (!copy_spec(g, s)) return oom(c->d);
  g->partition_summary = s;
  return PPCC_OK;
}

/* Every device's memory under the cost model's accounting within its
 * budget: guaranteed by the split for uniform stages, checked here for
 * all (mixed stages were split on an estimate). */
static ppcc_status check_device_memory(const part_ctx *c, const ppcc_partition_summary *s) {
  const ppcc_devices_spec *spec = c->g->partition.devices_spec;
  for (int k = 0; k < s->pp; k++) {
    const ppcc_partition_stage *st = &s->stages[k];
    int64_t need = st->param_bytes + st->activation_bytes;
    for (int d = st->first_device; d < st->first_device + st->tp; d++) {
      int64_t budget = device_budget(c->g, d);
      if (budget <= 0 || need <= budget) continue;
      bool from_spec = spec && d < spec->n_devices && spec->memory[d] > 0;
      return ppcc_error(c->d, "auto-partition: device %d (stage %d) needs %lld bytes (params %lld + activations "
                              "%lld), more than its memory %lld (%s%s%s)",
                        d, k, (long long)need, (long long)st->param_bytes, (long long)st->activation_bytes,
                        (long long)budget, from_spec ? "devices spec '" : "--device-memory",
                        from_spec ? spec->path : "", from_spec ? "'" : "");
    }
  }
  return PPCC_OK;
}

/* ---------------- the pass ---------------- */

/* One TP size for all stages: layouts first, the split on the exact cost
 * model, then placement. */
static ppcc_status partition_uniform(part_ctx *c) {
  int *role = calloc((size_t)(c->g->n_ops > 0 ? c->g->n_ops : 1), sizeof(int));
  bool ok = role && count_uses(c);
  if (ok) ok = choose_layouts(c, role);
  ok = ok && insert_all_reduces(c->g, role, NULL, NULL);
  free(role);
  if (!ok) return oom(c->d);
  ppcc_status st = infer_layouts(c->g, c->d);
  if (st) return st;
  ppcc_split_problem p;
  int *start = ppcc_alloc(c->g, sizeof(int) * ((size_t)c->pp + 1));
  int *final_start = malloc(sizeof(int) * ((size_t)c->pp + 1));
  int *op_stage = malloc(sizeof(int) * (size_t)(c->g->n_ops > 0 ? c->g->n_ops : 1));
  if (!start || !final_start || !op_stage) st = oom(c->d);
  if (!st) st = solve_split(c, &p, start, NULL);
  if (!st) st = record_summary(c, &p, start);
  if (!st) st = check_device_memory(c, c->g->partition_summary);
  if (!st) {
    for (int s = 0; s < c->pp; s++)
      for (int i = start[s]; i < start[s + 1]; i++) op_stage[i] = s;
    st = place_stages(c, op_stage, final_start);
  }
  free(final_start);
  free(op_stage);
  return st;
}

/* Stages of different TP sizes: the split on the unsharded graph, then
 * each stage's layouts, placement, and the summary of the placed graph. */
static ppcc_status partition_mixed(part_ctx *c) {
  ppcc_graph *g = c->g;
  c->tp = 1;
  c->hi = g->n_ops;
  int *role = calloc((size_t)(g->n_ops > 0 ? g->n_ops : 1), sizeof(int));
  int *start = ppcc_alloc(g, sizeof(int) * ((size_t)c->pp + 1));
  int *final_start = ppcc_alloc(g, sizeof(int) * ((size_t)c->pp + 1));
  int *op_stage = malloc(sizeof(int) * (size_t)(g->n_ops > 0 ? g->n_ops : 1)), *stage_after = NULL;
  ppcc_status st = role && start && final_start && op_stage && count_uses(c) ? PPCC_OK : oom(c->d);
  ppcc_split_problem p;
  int *shared_role = st ? NULL : calloc((size_t)(g->n_ops > 0 ? g->n_ops : 1), sizeof(int));
  if (!st && !shared_role) st = oom(c->d);
  if (!st) { /* which ops would form Megatron pairs (at the largest TP size) */
    for (int k = 0; k < c->pp; k++) c->tp = c->stage_tp[k] > c->tp ? c->stage_tp[k] : c->tp;
    default_layouts(c);
    if (!choose_layouts(c, shared_role)) st = oom(c->d);
    c->n_pairs = 0;
    c->tp = 1;
  }
  if (!st) {
    default_layouts(c); /* tp 1: everything whole, for the estimate */
    st = infer_layouts(g, c->d);
  }
  if (!st) st = solve_split(c, &p, start, shared_role);
  free(shared_role);
  if (!st) {
    for (int s = 0; s < c->pp; s++)
      for (int i = start[s]; i < start[s + 1]; i++) op_stage[i] = s;
    if (!choose_mixed_layouts(c, role, start, op_stage) || !insert_all_reduces(g, role, op_stage, &stage_after))
      st = oom(c->d);
  }
  if (!st) st = place_stages(c, stage_after, final_start);
  if (!st && !ppcc_split_problem_from_graph(g, c->pp, g->partition.device_memory, &p)) st = oom(c->d);
  if (!st) {
    p.stage_speed = c->speed;
    p.stage_memory = c->budget;
    st = record_summary(c, &p, final_start);
  }
  if (!st) st = check_device_memory(c, g->partition_summary);
  free(role);
  free(op_stage);
  free(stage_after);
  return st;
}

static ppcc_status partition(part_ctx *c) {
  if (!plan_stages(c)) return oom(c->d);
  ppcc_status st = check_request(c);
  if (st) return st;
  stage_speeds_budgets(c);
  c->lo = 0;
  c->hi = c->g->n_ops;
  return c->mixed ? partition_mixed(c) : partition_uniform(c);
}

ppcc_status ppcc_pass_auto_partition(ppcc_graph *g, ppcc_diag *d) {
  if (g->partition.pp <= 0 && g->partition.tp <= 0) return PPCC_OK;
  part_ctx c = {.g = g, .d = d,
                .pp = g->partition.pp > 0 ? g->partition.pp : 1,
                .tp = g->partition.tp > 0 ? g->partition.tp : 1};
  ppcc_status st = partition(&c);
  free(c.n_uses);
  free(c.consumer);
  return st;
}
