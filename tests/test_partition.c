/* Tests of auto-partition (passes/auto_partition.c, src/ir/partition.c):
 * the stage split is optimal (checked against brute force over every way
 * to cut), the memory limit is enforced with a diagnostic naming the stage,
 * Megatron pairs get one all_reduce each and the result compiles through
 * every pass. Models are written with single quotes for readability. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/ops.h"
#include "ppcc/devices_spec.h"
#include "ppcc/partition.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"
#include "test_support.h"

static ppcc_diag diag;

/* Loads a model (single quotes allowed) and compiles it with a request. */
static ppcc_graph *compile_auto(const char *model, int pp, int tp, int64_t memory) {
  char *json = strdup(model);
  for (char *p = json; *p; p++)
    if (*p == '\'') *p = '"';
  ppcc_diag_init(&diag, "test.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(json, strlen(json), &diag);
  free(json);
  if (!g) return NULL;
  g->partition.pp = pp;
  g->partition.tp = tp;
  g->partition.device_memory = memory;
  if (ppcc_run_passes(g, NULL, NULL, &diag) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

static ppcc_graph *compile_auto_file(const char *rel, int pp, int tp, int64_t memory) {
  char *json = t_read_file(t_src_path(rel), NULL);
  ck_assert_msg(json != NULL, "cannot open %s", rel);
  ppcc_graph *g = compile_auto(json, pp, tp, memory);
  free(json);
  return g;
}

static ppcc_graph *ok(ppcc_graph *g) {
  ck_assert_msg(g != NULL, "unexpected error: %s", diag.first);
  return g;
}

static void expect_error(ppcc_graph *g, const char *substring) {
  ck_assert_msg(g == NULL, "expected an error containing '%s'", substring);
  ck_assert_msg(strstr(diag.first, substring), "error '%s' lacks '%s'", diag.first, substring);
}

static int count_ops(const ppcc_graph *g, ppcc_op_id id, bool inserted) {
  int n = 0;
  for (int i = 0; i < g->n_ops; i++) n += g->ops[i].info->id == id && g->ops[i].inserted == inserted;
  return n;
}

static void expect_devices(const ppcc_value *v, int n, const int *devs) {
  ck_assert_int_eq(v->layout.count, n);
  for (int i = 0; i < n; i++)
    ck_assert_msg(v->devices[i] == devs[i], "'%s' shard %d on %d, expected %d", v->name, i, v->devices[i], devs[i]);
}

/* ---------------- brute force ---------------- */

static uint64_t rng_state;
static int rnd(int n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (int)((rng_state >> 33) % (uint64_t)n);
}

/* Best max stage cost over every way to pick n_stages - 1 cut points;
 * returns false if none fits. */
static bool brute_force(const ppcc_split_problem *p, int stage, int begin, double worst, double *best) {
  if (stage == p->n_stages - 1) {
    if (begin >= p->n_ops) return false;
    int64_t mem = ppcc_split_stage_memory_as(p, stage, begin, p->n_ops), limit = ppcc_split_stage_limit(p, stage);
    if (limit > 0 && mem > limit) return false;
    double c = ppcc_split_stage_time(p, stage, begin, p->n_ops);
    double w = c > worst ? c : worst;
    if (w < *best) *best = w;
    return true;
  }
  bool any = false;
  for (int end = begin + 1; end < p->n_ops; end++) {
    if (!p->can_cut[end]) continue;
    int64_t mem = ppcc_split_stage_memory_as(p, stage, begin, end), limit = ppcc_split_stage_limit(p, stage);
    if (limit > 0 && mem > limit) continue;
    double c = ppcc_split_stage_time(p, stage, begin, end);
    any |= brute_force(p, stage + 1, end, c > worst ? c : worst, best);
  }
  return any;
}

static void check_against_brute_force(const ppcc_split_problem *p, bool feasible, double max_cost) {
  double best = 1e300;
  bool exists = brute_force(p, 0, 0, 0, &best);
  ck_assert_msg(exists == feasible, "solver says feasible=%d, brute force %d (n=%d, P=%d)", feasible, exists,
                p->n_ops, p->n_stages);
  if (exists)
    ck_assert_msg(max_cost <= best * (1 + 1e-12) && max_cost >= best * (1 - 1e-12),
                  "solver's slowest stage %.17g, brute force %.17g (n=%d, P=%d)", max_cost, best, p->n_ops,
                  p->n_stages);
}

typedef struct random_problem {
  ppcc_split_problem p;
  double time[16], cut_time[16];
  int64_t params[16], live[16];
  bool can_cut[16];
  /* heterogeneous stages (--devices-spec, per-stage TP sizes) */
  double speed[16], shared_time[16];
  int64_t memory[16], shared_param[16];
  int tp[16];
} random_problem;

static void make_random_problem(random_problem *r) {
  memset(r, 0, sizeof *r);
  ppcc_split_problem *p = &r->p;
  p->n_ops = 1 + rnd(14);
  p->n_stages = 1 + rnd(p->n_ops < 5 ? p->n_ops : 5);
  for (int i = 0; i < p->n_ops; i++) {
    r->time[i] = rnd(10);
    r->cut_time[i] = i ? rnd(4) : 0;
    r->params[i] = rnd(3) ? rnd(100) : 0;
    r->live[i] = rnd(50);
    r->can_cut[i] = i == 0 || rnd(4) != 0;
  }
  p->time = r->time, p->cut_time = r->cut_time, p->param_bytes = r->params;
  p->live_bytes = r->live, p->can_cut = r->can_cut;
  p->memory_limit = rnd(3) ? 0 : 50 + rnd(250);
  if (rnd(2)) { /* per-stage speeds and memory limits */
    for (int s = 0; s < p->n_stages; s++) {
      r->speed[s] = 0.5 * (1 + rnd(6));
      r->memory[s] = rnd(3) ? 0 : 50 + rnd(250);
    }
    p->stage_speed = r->speed;
    p->stage_memory = rnd(2) ? r->memory : NULL;
  }
  if (rnd(2)) { /* per-stage TP sizes sharing part of the ops */
    for (int s = 0; s < p->n_stages; s++) r->tp[s] = 1 + rnd(4);
    for (int i = 0; i < p->n_ops; i++) {
      bool shared = rnd(2);
      r->shared_time[i] = shared ? r->time[i] : 0;
      r->shared_param[i] = shared ? r->params[i] : 0;
    }
    p->stage_tp = r->tp, p->shared_time = r->shared_time, p->shared_param = r->shared_param;
  }
}

START_TEST(dp_matches_brute_force_on_random_problems) {
  int feasible = 0;
  for (int seed = 1; seed <= 2000; seed++) {
    rng_state = (uint64_t)seed;
    random_problem r;
    make_random_problem(&r);
    int start[17];
    ppcc_split_result res;
    ck_assert(ppcc_split_solve(&r.p, start, &res));
    if (res.feasible) {
      feasible++;
      ck_assert_int_eq(start[0], 0);
      ck_assert_int_eq(start[r.p.n_stages], r.p.n_ops);
      for (int s = 0; s < r.p.n_stages; s++) {
        ck_assert_msg(start[s] < start[s + 1], "empty stage %d", s);
        ck_assert(r.p.can_cut[start[s]]);
      }
    }
    if (!res.feasible && !res.too_few_cuts) { /* the stage named does not fit */
      ck_assert_msg(res.fail_begin < res.fail_end && res.fail_end <= r.p.n_ops && res.fail_stage < r.p.n_stages,
                    "fail range [%d, %d) stage %d (seed %d)", res.fail_begin, res.fail_end, res.fail_stage, seed);
      int64_t limit = ppcc_split_stage_limit(&r.p, res.fail_stage);
      ck_assert(limit > 0 && res.fail_memory > limit);
      ck_assert(res.fail_memory == ppcc_split_stage_memory_as(&r.p, res.fail_stage, res.fail_begin, res.fail_end));
    }
    check_against_brute_force(&r.p, res.feasible, res.max_cost);
  }
  ck_assert_msg(feasible > 500, "only %d feasible problems: the test is too weak", feasible);
}
END_TEST

/* A chain of FFN blocks of random widths, some with a replicated bias add. */
static char *random_chain_model(int blocks) {
  size_t cap = 8192 + (size_t)blocks * 512, off = 0;
  char *s = malloc(cap);
  char x[32] = "x";
  off += (size_t)snprintf(s + off, cap - off, "{'ppcc': 1, 'name': 'r', 'devices': 8, 'params': [");
  static const int widths[] = {16, 32, 64, 128, 256};
  int w[16], bias[16];
  for (int b = 0; b < blocks; b++) {
    w[b] = widths[rnd(5)];
    bias[b] = rnd(2);
    off += (size_t)snprintf(s + off, cap - off,
                            "%s{'name': 'u%d', 'dtype': 'f32', 'shape': [32, %d]}, {'name': 'd%d', 'dtype': 'f32', "
                            "'shape': [%d, 32]}",
                            b ? ", " : "", b, w[b], b, w[b]);
    if (bias[b]) off += (size_t)snprintf(s + off, cap - off, ", {'name': 'b%d', 'dtype': 'f32', 'shape': [32]}", b);
  }
  off += (size_t)snprintf(s + off, cap - off, "], 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [8, 32]}], 'ops': [");
  for (int b = 0; b < blocks; b++) {
    off += (size_t)snprintf(s + off, cap - off,
                            "%s{'op': 'matmul', 'in': ['%s', 'u%d'], 'out': ['h%d']}, {'op': 'relu', 'in': ['h%d'], "
                            "'out': ['a%d']}, {'op': 'matmul', 'in': ['a%d', 'd%d'], 'out': ['y%d']}",
                            b ? ", " : "", x, b, b, b, b, b, b, b);
    snprintf(x, sizeof x, "y%d", b);
    if (bias[b]) {
      off += (size_t)snprintf(s + off, cap - off, ", {'op': 'add', 'in': ['y%d', 'b%d'], 'out': ['z%d']}", b, b, b);
      snprintf(x, sizeof x, "z%d", b);
    }
  }
  snprintf(s + off, cap - off, "], 'outputs': ['%s']}", x);
  return s;
}

START_TEST(dp_optimal_on_random_graphs) {
  for (int seed = 1; seed <= 40; seed++) {
    rng_state = (uint64_t)seed * 7919;
    int blocks = 2 + rnd(5), pp = 1 + rnd(blocks < 4 ? blocks : 4), tp = 1 + rnd(2);
    char *json = random_chain_model(blocks);
    ppcc_graph *g = ok(compile_auto(json, pp, tp, 0));
    free(json);
    const ppcc_partition_summary *s = g->partition_summary;
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->pp, pp);
    check_against_brute_force(&s->problem, true, s->max_cost);
    ck_assert(s->imbalance >= 1.0 - 1e-12);
    int even[5]; /* the optimum is never slower than the even split */
    double even_max = 0;
    for (int k = 0; ppcc_split_even(&s->problem, even) && k < pp; k++) {
      double c = ppcc_split_stage_cost(&s->problem, even[k], even[k + 1]);
      even_max = c > even_max ? c : even_max;
    }
    ck_assert(even_max == 0 || s->max_cost <= even_max * (1 + 1e-12));
    ppcc_graph_free(g);
  }
}
END_TEST

START_TEST(chain_cuts_only_at_block_boundaries) {
  /* Inside a Megatron pair the activation is split: no cut there. */
  ppcc_graph *g = ok(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 0));
  const ppcc_split_problem *p = &g->partition_summary->problem;
  int cuts = 0;
  for (int i = 1; i < p->n_ops; i++) cuts += p->can_cut[i];
  ck_assert_int_eq(cuts, 3); /* between the 4 blocks (4 ops each with the all_reduce) */
  for (int i = 1; i < p->n_ops; i++) ck_assert(p->can_cut[i] == (i % 4 == 0));
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- memory ---------------- */

START_TEST(memory_limit_is_respected) {
  /* Blocks 0+1 | 2+3 is the only split that fits (208 KiB on stage 1). */
  ppcc_graph *g = ok(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 220000));
  const ppcc_partition_summary *s = g->partition_summary;
  for (int k = 0; k < s->pp; k++)
    ck_assert_int_le(s->stages[k].param_bytes + s->stages[k].activation_bytes, 220000);
  ck_assert_int_eq(s->start[1], 8);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(memory_limit_too_small_names_the_stage) {
  /* Blocks 2 and 3 need 96 + 48 KiB of weights per device plus activations. */
  expect_error(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 150000), "stage 1 (");
  ck_assert(strstr(diag.first, "--device-memory 150000"));
  expect_error(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 1000), "stage 0 (ops[0] 'matmul'");
}
END_TEST

START_TEST(memory_error_from_solver_names_first_stage_that_cannot_fit) {
  int64_t params[4] = {10, 10, 10, 10}, live[4] = {0};
  double time[4] = {1, 1, 1, 1}, cut[4] = {0};
  bool can[4] = {true, true, true, true};
  ppcc_split_problem p = {4, time, params, live, can, cut, 2, 15, NULL, NULL, NULL, NULL, NULL};
  int start[3];
  ppcc_split_result r;
  ck_assert(ppcc_split_solve(&p, start, &r));
  ck_assert(!r.feasible && !r.too_few_cuts);
  ck_assert_int_eq(r.fail_stage, 1);
  ck_assert_int_eq(r.fail_begin, 1);
  ck_assert_int_eq(r.fail_end, 4);
  ck_assert_int_eq(r.fail_memory, 30);
}
END_TEST

/* ---------------- Megatron ---------------- */

START_TEST(megatron_one_all_reduce_per_pair) {
  ppcc_graph *g = ok(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 0));
  ck_assert_int_eq(g->partition_summary->n_pairs, 4);
  ck_assert_int_eq(count_ops(g, PPCC_OP_all_reduce, true), 4);
  const ppcc_value *up = t_value(g, "blk.2.ffn_up.weight"), *down = t_value(g, "blk.2.ffn_down.weight");
  ck_assert(up->layout.kind == PPCC_LAYOUT_SPLIT && up->layout.dim == 1 && up->layout.count == 2);
  ck_assert(down->layout.kind == PPCC_LAYOUT_SPLIT && down->layout.dim == 0 && down->layout.count == 2);
  ck_assert(up->pinned && down->pinned);
  /* The reduced value keeps its name, so consumers and outputs are unchanged. */
  const ppcc_value *y = t_value(g, "blk.3.y");
  ck_assert(y->is_output && y->layout.kind == PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(g->ops[y->def_op].info->id, PPCC_OP_all_reduce);
  ck_assert_int_eq(t_value(g, "blk.3.y.partial")->layout.kind, PPCC_LAYOUT_UNREDUCED);
  /* Only the stage crossing moves data; pin-propagate needs no transfer. */
  ck_assert_int_eq(count_ops(g, PPCC_OP_transfer, true), 1);
  expect_devices(t_value(g, "blk.1.y@2,3"), 2, (int[]){2, 3});
  expect_devices(t_value(g, "x"), 2, (int[]){0, 1});
  ck_assert(!t_value(g, "x")->pinned);
  ppcc_graph_free(g);
}
END_TEST

#define LIN_MODEL(ops, outputs)                                                                             \
  "{'ppcc': 1, 'name': 'lin', 'devices': 4, 'params': ["                                                    \
  "{'name': 'w1', 'dtype': 'f32', 'shape': [64, 32]}, {'name': 'b1', 'dtype': 'f32', 'shape': [64]},"      \
  "{'name': 'w2', 'dtype': 'f32', 'shape': [32, 64]}, {'name': 'b2', 'dtype': 'f32', 'shape': [32]},"      \
  "{'name': 'g', 'dtype': 'f32', 'shape': [32]}],"                                                          \
  "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [4, 8, 32]}], 'ops': [" ops "], 'outputs': [" outputs "]}"

START_TEST(megatron_linear_with_column_bias_and_norm) {
  ppcc_graph *g = ok(compile_auto(LIN_MODEL("{'op': 'rms_norm', 'in': ['x', 'g'], 'out': ['n']},"
                                            "{'op': 'linear', 'in': ['n', 'w1', 'b1'], 'out': ['h']},"
                                            "{'op': 'silu', 'in': ['h'], 'out': ['a']},"
                                            "{'op': 'linear', 'in': ['a', 'w2'], 'out': ['y']},"
                                            "{'op': 'add', 'in': ['y', 'b2'], 'out': ['z']}",
                                            "'z'"),
                                  1, 4, 0));
  ck_assert_int_eq(g->partition_summary->n_pairs, 1);
  ck_assert_int_eq(t_value(g, "w1")->layout.dim, 0); /* linear weights are [out, in] */
  ck_assert_int_eq(t_value(g, "w2")->layout.dim, 1);
  ck_assert_int_eq(t_value(g, "b1")->layout.kind, PPCC_LAYOUT_SPLIT);
  ck_assert_int_eq(t_value(g, "b2")->layout.kind, PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(t_value(g, "g")->layout.kind, PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(t_value(g, "z")->layout.kind, PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(count_ops(g, PPCC_OP_all_reduce, true), 1);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(row_linear_with_bias_is_a_pair) {
  /* The row-parallel bias stays replicated; shard 0 adds it to its partial
   * sum, so the all_reduce counts it once (checked against the reference
   * in test_rt_models). */
  ppcc_graph *g = ok(compile_auto(LIN_MODEL("{'op': 'linear', 'in': ['x', 'w1'], 'out': ['h']},"
                                            "{'op': 'linear', 'in': ['h', 'w2', 'b2'], 'out': ['y']}",
                                            "'y'"),
                                  1, 2, 0));
  ck_assert_int_eq(g->partition_summary->n_pairs, 1);
  ck_assert_int_eq(count_ops(g, PPCC_OP_all_reduce, true), 1);
  ck_assert_int_eq(t_value(g, "w1")->layout.kind, PPCC_LAYOUT_SPLIT);
  ck_assert_int_eq(t_value(g, "w2")->layout.dim, 1);
  ck_assert_int_eq(t_value(g, "b2")->layout.kind, PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(t_value(g, "y.partial")->layout.kind, PPCC_LAYOUT_UNREDUCED);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(tp1_places_whole_values_on_one_device_per_stage) {
  ppcc_graph *g = ok(compile_auto_file("testdata/auto/auto_ffn.json", 4, 1, 0));
  ck_assert_int_eq(g->partition_summary->n_pairs, 0);
  ck_assert_int_eq(count_ops(g, PPCC_OP_all_reduce, true), 0);
  const ppcc_value *w = t_value(g, "blk.3.ffn_down.weight");
  ck_assert_int_eq(w->layout.kind, PPCC_LAYOUT_UNSHARDED);
  expect_devices(w, 1, (int[]){3});
  ck_assert_int_eq(count_ops(g, PPCC_OP_transfer, true), 3);
  ppcc_graph_free(g);
}
END_TEST

/* Matmuls dominate: the one optimum is [h0 y0 | h1 y1 m1 | h2 y2], so the
 * side input p is read by both later stages. */
START_TEST(side_input_used_by_later_stages_is_transferred_once_per_stage) {
  ppcc_graph *g = ok(compile_auto(
      "{'ppcc': 1, 'name': 's', 'devices': 3, 'params': ["
      "{'name': 'w0', 'dtype': 'f32', 'shape': [512, 512]}, {'name': 'w1', 'dtype': 'f32', 'shape': [512, 512]},"
      "{'name': 'w2', 'dtype': 'f32', 'shape': [512, 512]}],"
      "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [64, 512]}, {'name': 'p', 'dtype': 'f32', 'shape': [64, 512]}],"
      "'ops': [{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, {'op': 'add', 'in': ['h0', 'p'], 'out': ['y0']},"
      "{'op': 'matmul', 'in': ['y0', 'w1'], 'out': ['h1']}, {'op': 'add', 'in': ['h1', 'p'], 'out': ['y1']},"
      "{'op': 'mul', 'in': ['y1', 'p'], 'out': ['m1']},"
      "{'op': 'matmul', 'in': ['m1', 'w2'], 'out': ['h2']}, {'op': 'add', 'in': ['h2', 'p'], 'out': ['y2']}],"
      "'outputs': ['y2']}",
      3, 1, 0));
  /* p lives on the stage of its first reader (stage 1 once the cut falls
   * before that add: p then crosses no cut there) and moves on once */
  expect_devices(t_value(g, "p"), 1, (int[]){1});
  expect_devices(t_value(g, "p@2"), 1, (int[]){2});
  ck_assert_int_eq(g->partition_summary->start[1], 1);
  ck_assert_int_eq(g->partition_summary->start[2], 5);
  ck_assert_int_eq(count_ops(g, PPCC_OP_transfer, true), 3); /* h0, m1 and p once */
  expect_devices(t_value(g, "y2"), 1, (int[]){2});
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- heterogeneous devices ---------------- */

START_TEST(stage_speed_gives_a_faster_stage_more_ops) {
  int64_t params[8] = {0}, live[8] = {0};
  double time[8] = {1, 1, 1, 1, 1, 1, 1, 1}, cut[8] = {0};
  bool can[8] = {true, true, true, true, true, true, true, true};
  double speed[2] = {3, 1};
  ppcc_split_problem p = {8, time, params, live, can, cut, 2, 0, speed, NULL, NULL, NULL, NULL};
  int start[3];
  ppcc_split_result r;
  ck_assert(ppcc_split_solve(&p, start, &r) && r.feasible);
  ck_assert_int_eq(start[1], 6); /* 6/3 = 2 = 2/1 */
  ck_assert(r.max_cost == 2.0);
  ck_assert(ppcc_split_stage_time(&p, 0, 0, 6) == 2.0);
}
END_TEST

START_TEST(stage_memory_gives_a_small_device_fewer_ops) {
  int64_t params[8] = {10, 10, 10, 10, 10, 10, 10, 10}, live[8] = {0}, memory[2] = {20, 0};
  double time[8] = {1, 1, 1, 1, 1, 1, 1, 1}, cut[8] = {0};
  bool can[8] = {true, true, true, true, true, true, true, true};
  ppcc_split_problem p = {8, time, params, live, can, cut, 2, 0, NULL, memory, NULL, NULL, NULL};
  int start[3];
  ppcc_split_result r;
  ck_assert(ppcc_split_solve(&p, start, &r) && r.feasible);
  ck_assert_int_eq(start[1], 2);
  memory[1] = 50; /* 2 + 5 < 8 ops: nothing fits */
  ck_assert(ppcc_split_solve(&p, start, &r) && !r.feasible);
  ck_assert_int_eq(r.fail_stage, 1);
}
END_TEST

START_TEST(devices_spec_parses_and_names_bad_fields) {
  ppcc_devices_spec spec;
  ppcc_diag d;
  ppcc_diag_init(&d, "spec.json", NULL);
  const char *good = "{\"devices\": [{\"memory\": \"8GiB\", \"speed\": 2.5}, {\"memory\": 1000}, {}]}";
  ck_assert_int_eq(ppcc_devices_spec_parse("spec.json", good, strlen(good), &spec, &d), PPCC_OK);
  ck_assert_int_eq(spec.n_devices, 3);
  ck_assert(spec.memory[0] == 8LL << 30 && spec.memory[1] == 1000 && spec.memory[2] == 0);
  ck_assert(spec.speed[0] == 2.5 && spec.speed[1] == 1.0 && spec.speed[2] == 1.0);
  ppcc_devices_spec_free(&spec);
  const char *bad = "{\"devices\": [{}, {\"speed\": -1}]}";
  ck_assert_int_eq(ppcc_devices_spec_parse("spec.json", bad, strlen(bad), &spec, &d), PPCC_ERR_USER);
  ck_assert(strstr(d.first, "devices[1].speed"));
  ck_assert(spec.memory == NULL && spec.n_devices == 0);
}
END_TEST

/* ---------------- errors and no-op ---------------- */

START_TEST(declared_placement_is_refused) {
  expect_error(compile_auto_file("testdata/models/ppffn.json", 2, 2, 0),
               "param 'blk.0.ffn_up.weight' already declares a placement");
}
END_TEST

START_TEST(too_few_devices_is_an_error) {
  expect_error(compile_auto_file("testdata/auto/auto_ffn.json", 4, 2, 0), "needs 8 devices, the model declares 4");
}
END_TEST

START_TEST(explicit_collectives_are_refused) {
  expect_error(compile_auto("{'ppcc': 1, 'name': 'c', 'devices': 2, 'params': [], 'inputs': [{'name': 'x', "
                            "'dtype': 'f32', 'shape': [4]}], 'ops': [{'op': 'transfer', 'in': ['x'], 'out': ['y'], "
                            "'attrs': {'devices': [1]}}], 'outputs': ['y']}",
                            1, 2, 0),
               "ops[0] 'transfer' (-> 'y'): auto-partition chooses collectives and transfers itself");
}
END_TEST

START_TEST(more_stages_than_cut_points_is_an_error) {
  /* With tp 2 only block boundaries are cut points: one pair is one block. */
  expect_error(compile_auto(LIN_MODEL("{'op': 'linear', 'in': ['x', 'w1'], 'out': ['h']},"
                                      "{'op': 'linear', 'in': ['h', 'w2'], 'out': ['y']}",
                                      "'y'"),
                            2, 2, 0),
               "cannot cut the model into 2 stages");
}
END_TEST

START_TEST(no_request_is_a_no_op) {
  ppcc_graph *g = ok(compile_auto_file("testdata/models/ppffn.json", 0, 0, 0));
  ck_assert_ptr_null(g->partition_summary);
  ck_assert_int_eq(count_ops(g, PPCC_OP_all_reduce, true), 0);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(text_report_shows_stage_costs_and_imbalance) {
  ppcc_graph *g = ok(compile_auto_file("testdata/auto/auto_ffn.json", 2, 2, 1 << 20));
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_int_eq(ppcc_report_text(g, f, &diag), PPCC_OK);
  fclose(f);
  ck_assert_msg(strstr(text, "auto-partition: 2 stages x 2 devices, 4 Megatron pairs, device memory limit 1.0 MiB"),
                "%s", text);
  ck_assert(strstr(text, "cost (us)") && strstr(text, "memory/device"));
  ck_assert(strstr(text, "imbalance (slowest/mean): 1.30 (even split by blocks: 1.30)"));
  free(text);
  ppcc_graph_free(g);
}
END_TEST

Suite *partition_suite(void) {
  Suite *s = suite_create("partition");
  TCase *dp = t_add_tcase(s, "dp", 0);
  tcase_add_test(dp, dp_matches_brute_force_on_random_problems);
  tcase_add_test(dp, dp_optimal_on_random_graphs);
  tcase_add_test(dp, chain_cuts_only_at_block_boundaries);
  TCase *mem = t_add_tcase(s, "memory", 0);
  tcase_add_test(mem, memory_limit_is_respected);
  tcase_add_test(mem, memory_limit_too_small_names_the_stage);
  tcase_add_test(mem, memory_error_from_solver_names_first_stage_that_cannot_fit);
  TCase *tp = t_add_tcase(s, "megatron", 0);
  tcase_add_test(tp, megatron_one_all_reduce_per_pair);
  tcase_add_test(tp, megatron_linear_with_column_bias_and_norm);
  tcase_add_test(tp, row_linear_with_bias_is_a_pair);
  tcase_add_test(tp, tp1_places_whole_values_on_one_device_per_stage);
  tcase_add_test(tp, side_input_used_by_later_stages_is_transferred_once_per_stage);
  TCase *het = t_add_tcase(s, "heterogeneous", 0);
  tcase_add_test(het, stage_speed_gives_a_faster_stage_more_ops);
  tcase_add_test(het, stage_memory_gives_a_small_device_fewer_ops);
  tcase_add_test(het, devices_spec_parses_and_names_bad_fields);
  TCase *err = t_add_tcase(s, "errors", 0);
  tcase_add_test(err, declared_placement_is_refused);
  tcase_add_test(err, too_few_devices_is_an_error);
  tcase_add_test(err, explicit_collectives_are_refused);
  tcase_add_test(err, more_stages_than_cut_points_is_an_error);
  tcase_add_test(err, no_request_is_a_no_op);
  tcase_add_test(err, text_report_shows_stage_costs_and_imbalance);
  return s;
}

int main(void) { return t_run_suite(partition_suite()); }
