/* Unit tests of the passes: every placement rule P1-P11 (DESIGN §2) and
 * every sharding rule (DESIGN §4), including the error cases. Models are
 * written with single quotes for readability. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "test_support.h"

static ppcc_diag diag;

/* Compiles a model given as its params, inputs, ops and outputs. */
static ppcc_graph *model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs) {
  ppcc_graph *g = t_model(devices, params, inputs, ops, outputs, &diag);
  return g;
}

static void expect_error(ppcc_graph *g, const char *substring) {
  ck_assert_msg(g == NULL, "expected an error containing '%s'", substring);
  ck_assert_msg(strstr(diag.first, substring), "error '%s' lacks '%s'", diag.first, substring);
}

static ppcc_graph *ok(ppcc_graph *g) {
  ck_assert_msg(g != NULL, "unexpected error: %s", diag.first);
  return g;
}

static void expect_devices(const ppcc_value *v, int n, const int *devs) {
  ck_assert_int_eq(v->layout.count, n);
  for (int i = 0; i < n; i++) ck_assert_msg(v->devices[i] == devs[i], "'%s' shard %d on %d, expected %d", v->name, i, v->devices[i], devs[i]);
}

static void expect_layout(const ppcc_value *v, ppcc_layout_kind kind, int dim, int count) {
  char got[64];
  ppcc_layout_str(v->layout, got, sizeof got);
  ck_assert_msg(v->layout.kind == kind && v->layout.count == count && (kind != PPCC_LAYOUT_SPLIT || v->layout.dim == dim),
                "'%s' has layout %s", v->name, got);
}

static int count_ops(const ppcc_graph *g, const char *name, bool inserted) {
  int n = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (strcmp(g->ops[i].info->name, name) == 0 && g->ops[i].inserted == inserted) n++;
  return n;
}

/* Shared pieces. */
#define X_REP01 "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 2}}"
#define W_COL01 "{'name': 'w', 'dtype': 'f32', 'shape': [16, 32], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}"
#define W_COL23 "{'name': 'w', 'dtype': 'f32', 'shape': [16, 32], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [2, 3]}"

/* ---------------- P1, P2 ---------------- */
START_TEST(p1_params_pinned_on_default_and_declared_devices) {
  ppcc_graph *g = ok(model(4, W_COL23 ", {'name': 'b', 'dtype': 'f32', 'shape': [32], 'shard': {'kind': 'replicated', 'count': 2}}", "", "", "'w', 'b'"));
  expect_devices(t_value(g, "w"), 2, (int[]){2, 3});
  expect_devices(t_value(g, "b"), 2, (int[]){0, 1});
  ck_assert(t_value(g, "w")->pinned && t_value(g, "b")->pinned);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p2_inputs_unpinned_unless_declared) {
  ppcc_graph *g = ok(model(4, "", X_REP01 ", {'name': 'y', 'dtype': 'f32', 'shape': [4], 'devices': [3], 'pinned': true}", "", "'x', 'y'"));
  ck_assert(!t_value(g, "x")->pinned);
  expect_devices(t_value(g, "x"), 2, (int[]){0, 1});
  ck_assert(t_value(g, "y")->pinned);
  expect_devices(t_value(g, "y"), 1, (int[]){3});
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p1_device_out_of_range_is_error) {
  expect_error(model(2, W_COL23, "", "", "'w'"), "out of range");
}
END_TEST

/* ---------------- P3 ---------------- */
START_TEST(p3_unary_follows_operand) {
  ppcc_graph *g = ok(model(4, W_COL23, X_REP01,
                           "{'op': 'gelu', 'in': ['w'], 'out': ['gw']}, {'op': 'gelu', 'in': ['x'], 'out': ['gx']},"
                           "{'op': 'transpose', 'in': ['w'], 'out': ['wt']}",
                           "'gw', 'gx', 'wt'"));
  expect_devices(t_value(g, "gw"), 2, (int[]){2, 3});
  ck_assert(t_value(g, "gw")->pinned);
  ck_assert(!t_value(g, "gx")->pinned);
  expect_devices(t_value(g, "gx"), 2, (int[]){0, 1});
  ck_assert(t_value(g, "wt")->pinned);
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- P4 (v2) ---------------- */
START_TEST(p4_same_devices_result_pinned_iff_all_pinned) {
  ppcc_graph *g = ok(model(4, W_COL01 ", {'name': 'v', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 2}}",
                           X_REP01,
                           "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']}, {'op': 'matmul', 'in': ['v', 'w'], 'out': ['vw']}",
                           "'h', 'vw'"));
  const ppcc_value *h = t_value(g, "h");
  expect_devices(h, 2, (int[]){0, 1});
  ck_assert(!h->pinned); /* computed from the activation x: an activation */
  ck_assert(t_value(g, "vw")->pinned); /* only from weights: stays with them */
  ck_assert(strstr(h->why, "P4"));
  ck_assert_int_eq(count_ops(g, "transfer", true), 0);
  ck_assert_int_eq(g->ops[0].n_devices, 2);
  ppcc_graph_free(g);
}
END_TEST

/* The point of P4 v2: an activation computed on stage 0 follows stage 1's
 * weights by itself, no transfer written in the model. */
START_TEST(p4_activation_follows_the_next_stage_weights) {
  ppcc_graph *g = ok(model(4,
                           "{'name': 'w0', 'dtype': 'f32', 'shape': [16, 16], 'devices': [0]},"
                           "{'name': 'w1', 'dtype': 'f32', 'shape': [16, 16], 'devices': [1]}",
                           "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16]}",
                           "{'op': 'matmul', 'in': ['x', 'w0'], 'out': ['h0']}, {'op': 'gelu', 'in': ['h0'], 'out': ['a0']},"
                           "{'op': 'matmul', 'in': ['a0', 'w1'], 'out': ['h1']}",
                           "'h1'"));
  ck_assert(!t_value(g, "h0")->pinned && !t_value(g, "a0")->pinned);
  ck_assert_int_eq(count_ops(g, "transfer", true), 1);
  expect_devices(t_value(g, "a0@1"), 1, (int[]){1});
  expect_devices(t_value(g, "h1"), 1, (int[]){1});
  ck_assert(!t_value(g, "h1")->pinned);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p4_unpinned_operand_moves_to_pinned) {
  ppcc_graph *g = ok(model(4, W_COL23, X_REP01, "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']}", "'h'"));
  ck_assert_int_eq(g->n_ops, 2);
  const ppcc_op *t = &g->ops[0];
  ck_assert_str_eq(t->info->name, "transfer");
  ck_assert(t->inserted);
  const ppcc_value *moved = t_value(g, "x@2,3");
  expect_devices(moved, 2, (int[]){2, 3});
  ck_assert(!moved->pinned);
  ck_assert_int_eq(g->ops[1].in[0], ppcc_find_value(g, "x@2,3"));
  expect_devices(t_value(g, "h"), 2, (int[]){2, 3});
  ck_assert(!t_value(g, "h")->pinned);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p4_pin_conflict_names_op_and_operands) {
  ppcc_graph *g = model(4, W_COL23 ", {'name': 'v', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 2}}",
                        "", "{'op': 'matmul', 'in': ['v', 'w'], 'out': ['h']}", "'h'");
  expect_error(g, "pin conflict");
  ck_assert(strstr(diag.first, "ops[0] 'matmul'"));
  ck_assert(strstr(diag.first, "'v' on [0,1] pinned"));
  ck_assert(strstr(diag.first, "'w' on [2,3] pinned"));
}
END_TEST

START_TEST(p4_different_devices_none_pinned) {
  ppcc_graph *g = model(4, "", X_REP01 ", {'name': 'y', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [2, 3]}",
                        "{'op': 'add', 'in': ['x', 'y'], 'out': ['s']}", "'s'");
  expect_error(g, "different devices and none pinned");
  ck_assert(strstr(diag.first, "'x' on [0,1] unpinned"));
  ck_assert(strstr(diag.first, "'y' on [2,3] unpinned"));
}
END_TEST

/* ---------------- P5 ---------------- */
START_TEST(p5_replicate_and_reshard_split_of_unsharded) {
  ppcc_graph *g = ok(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16]}",
                           "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'count': 2, 'devices': [2, 3], 'pinned': true}},"
                           "{'op': 'replicate', 'in': ['x'], 'out': ['r2'], 'attrs': {'count': 2}},"
                           "{'op': 'reshard_split', 'in': ['x'], 'out': ['s'], 'attrs': {'dim': 1, 'count': 4}}",
                           "'r', 'r2', 's'"));
  expect_devices(t_value(g, "r"), 2, (int[]){2, 3});
  ck_assert(t_value(g, "r")->pinned);
  expect_layout(t_value(g, "r"), PPCC_LAYOUT_REPLICATED, -1, 2);
  expect_devices(t_value(g, "r2"), 2, (int[]){0, 1});
  ck_assert(!t_value(g, "r2")->pinned);
  expect_layout(t_value(g, "s"), PPCC_LAYOUT_SPLIT, 1, 4);
  expect_devices(t_value(g, "s"), 4, (int[]){0, 1, 2, 3});
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p5_sharded_operand_keeps_devices) {
  ppcc_graph *g = ok(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [3, 1]}",
                           "{'op': 'replicate', 'in': ['x'], 'out': ['r']}", "'r'"));
  expect_devices(t_value(g, "r"), 2, (int[]){3, 1});
  expect_layout(t_value(g, "r"), PPCC_LAYOUT_REPLICATED, -1, 2);
  ppcc_graph_free(g);
  expect_error(model(4, "", X_REP01, "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'devices': [2, 3]}}", "'r'"),
               "keeps its devices");
}
END_TEST

/* P5 v2: of a sharded value both ops keep the operand's pin; replicate of
 * a replicated value is that value, reshard_split of one slices locally;
 * `pinned` on a sharded operand is an error like `devices`. */
START_TEST(p5_sharded_operand_keeps_pin) {
  ppcc_graph *g = ok(model(4, "{'name': 'w', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [2, 3]}",
                           X_REP01,
                           "{'op': 'replicate', 'in': ['w'], 'out': ['wr']}, {'op': 'reshard_split', 'in': ['w'], 'out': ['ws'], 'attrs': {'dim': 1}},"
                           "{'op': 'reshard_split', 'in': ['x'], 'out': ['xs'], 'attrs': {'dim': 0}}",
                           "'wr', 'ws', 'xs'"));
  const ppcc_value *wr = t_value(g, "wr"), *ws = t_value(g, "ws"), *xs = t_value(g, "xs");
  ck_assert(wr->pinned && ws->pinned && !xs->pinned);
  expect_layout(wr, PPCC_LAYOUT_REPLICATED, -1, 2);
  expect_devices(wr, 2, (int[]){2, 3});
  expect_layout(ws, PPCC_LAYOUT_SPLIT, 1, 2);
  expect_devices(ws, 2, (int[]){2, 3});
  ck_assert_int_eq(count_ops(g, "transfer", true), 0); /* local: nothing moves */
  ppcc_graph_free(g);
  expect_error(model(4, "", X_REP01, "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'pinned': true}}", "'r'"),
               "attrs.pinned cannot be given");
  expect_error(model(4, "", X_REP01, "{'op': 'reshard_split', 'in': ['x'], 'out': ['r'], 'attrs': {'dim': 0, 'pinned': false}}", "'r'"),
               "attrs.pinned cannot be given");
  expect_error(model(4, "", X_REP01, "{'op': 'reshard_split', 'in': ['x'], 'out': ['r'], 'attrs': {'dim': 0, 'devices': [2, 3]}}", "'r'"),
               "attrs.devices cannot be given");
}
END_TEST

/* P5 v3: replicate of a split value is an all_gather, so its result is
 * not pinned (P6), on the operand's devices (it was pinned as a weight). */
START_TEST(p5_replicate_of_split_is_unpinned) {
  ppcc_graph *g = ok(model(4, "{'name': 'w', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [2, 3]}",
                           X_REP01, "{'op': 'replicate', 'in': ['w'], 'out': ['wr']}", "'wr'"));
  const ppcc_value *wr = t_value(g, "wr");
  ck_assert(!wr->pinned);
  expect_layout(wr, PPCC_LAYOUT_REPLICATED, -1, 2);
  expect_devices(wr, 2, (int[]){2, 3});
  ck_assert(strstr(wr->why, "all_gather"));
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p5_devices_must_match_count) {
  expect_error(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16]}",
                     "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'count': 2, 'devices': [1, 2, 3]}}", "'r'"),
               "shard count");
}
END_TEST

/* ---------------- P6 ---------------- */
START_TEST(p6_collectives_unpinned_on_operand_devices) {
  ppcc_graph *g = ok(model(4,
                           W_COL23 ", {'name': 'w2', 'dtype': 'f32', 'shape': [32, 16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [2, 3]}",
                           X_REP01,
                           "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']}, {'op': 'matmul', 'in': ['h', 'w2'], 'out': ['p']},"
                           "{'op': 'all_reduce', 'in': ['p'], 'out': ['y']}, {'op': 'all_gather', 'in': ['h'], 'out': ['hg']}",
                           "'y', 'hg'"));
  const ppcc_value *p = t_value(g, "p"), *y = t_value(g, "y");
  expect_layout(p, PPCC_LAYOUT_UNREDUCED, -1, 2);
  ck_assert(!p->pinned); /* P4 v2: computed from the activation x */
  expect_layout(y, PPCC_LAYOUT_REPLICATED, -1, 2);
  expect_devices(y, 2, (int[]){2, 3});
  ck_assert(!y->pinned);
  ck_assert(!t_value(g, "hg")->pinned);
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- P7 ---------------- */
#define CACHE23 "{'name': 'cache', 'dtype': 'f32', 'shape': [16, 4, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [2, 3]}"
START_TEST(p7_inplace_destination_never_moves) {
  ppcc_graph *g = ok(model(4, CACHE23,
                           "{'name': 'pos', 'dtype': 'i64', 'shape': [2], 'shard': {'kind': 'replicated', 'count': 2}},"
                           "{'name': 'kv', 'dtype': 'f32', 'shape': [2, 4, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}",
                           "{'op': 'index_copy', 'in': ['cache', 'pos', 'kv'], 'out': ['cache2'], 'attrs': {'dim': 0}}", "'cache2'"));
  const ppcc_value *c2 = t_value(g, "cache2");
  expect_devices(c2, 2, (int[]){2, 3});
  ck_assert(c2->pinned);
  expect_layout(c2, PPCC_LAYOUT_SPLIT, 1, 2);
  ck_assert_int_eq(count_ops(g, "transfer", true), 2); /* pos and kv come to the cache */
  ck_assert(ppcc_find_value(g, "kv@2,3") >= 0 && ppcc_find_value(g, "pos@2,3") >= 0);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p7_pinned_update_elsewhere_is_error) {
  expect_error(model(4, CACHE23 ", {'name': 'kv', 'dtype': 'f32', 'shape': [2, 4, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}",
                     "{'name': 'pos', 'dtype': 'i64', 'shape': [2], 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [2, 3]}",
                     "{'op': 'index_copy', 'in': ['cache', 'pos', 'kv'], 'out': ['c2'], 'attrs': {'dim': 0}}", "'c2'"),
               "pin conflict");
}
END_TEST

/* ---------------- P8 ---------------- */
START_TEST(p8_explicit_transfer_kept_and_unpinned) {
  ppcc_graph *g = ok(model(4, "", X_REP01,
                           "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [2, 3]}},"
                           "{'op': 'transfer', 'in': ['x'], 'out': ['b'], 'attrs': {'devices': [0, 1], 'pinned': true}}",
                           "'a', 'b'"));
  ck_assert_int_eq(count_ops(g, "transfer", false), 2);
  expect_devices(t_value(g, "a"), 2, (int[]){2, 3});
  ck_assert(!t_value(g, "a")->pinned);
  ck_assert(t_value(g, "b")->pinned); /* same devices: still kept, never removed */
  ppcc_graph_free(g);
  expect_error(model(4, "", X_REP01, "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [2]}}", "'a'"),
               "shard count");
  expect_error(model(4, "", X_REP01, "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [1, 2, 3]}}", "'a'"),
               "shard count");
  expect_error(model(4, "", X_REP01, "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [2, 9]}}", "'a'"),
               "out of range");
}
END_TEST

/* P8 v2: an unsharded value sent to n > 1 devices is replicated onto them. */
START_TEST(p8_transfer_of_unsharded_to_several_devices_replicates) {
  ppcc_graph *g = ok(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16], 'devices': [1]}",
                           "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [2, 3]}},"
                           "{'op': 'transfer', 'in': ['x'], 'out': ['b'], 'attrs': {'devices': [0]}}",
                           "'a', 'b'"));
  expect_layout(t_value(g, "a"), PPCC_LAYOUT_REPLICATED, -1, 2);
  expect_devices(t_value(g, "a"), 2, (int[]){2, 3});
  ck_assert(!t_value(g, "a")->pinned);
  ck_assert(strstr(t_value(g, "a")->why, "replicates"));
  expect_layout(t_value(g, "b"), PPCC_LAYOUT_UNSHARDED, -1, 1);
  ppcc_graph_free(g);
  expect_error(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16]}",
                     "{'op': 'transfer', 'in': ['x'], 'out': ['a'], 'attrs': {'devices': [2, 2]}}", "'a'"),
               "listed twice");
}
END_TEST

/* ---------------- P9 ---------------- */
START_TEST(p9_unshard_onto_first_or_given_device) {
  ppcc_graph *g = ok(model(4, W_COL23, "",
                           "{'op': 'unshard', 'in': ['w'], 'out': ['u']}, {'op': 'unshard', 'in': ['w'], 'out': ['u0'], 'attrs': {'device': 0}}",
                           "'u', 'u0'"));
  expect_devices(t_value(g, "u"), 1, (int[]){2});
  expect_devices(t_value(g, "u0"), 1, (int[]){0});
  expect_layout(t_value(g, "u0"), PPCC_LAYOUT_UNSHARDED, -1, 1);
  ck_assert(!t_value(g, "u0")->pinned);
  ppcc_graph_free(g);
  expect_error(model(4, W_COL23, "", "{'op': 'unshard', 'in': ['w'], 'out': ['u'], 'attrs': {'device': 4}}", "'u'"),
               "out of range");
}
END_TEST

/* ---------------- P10 ---------------- */
START_TEST(p10_transfer_reused_and_per_shard) {
  ppcc_graph *g = ok(model(4,
                           W_COL23 ", {'name': 'w2', 'dtype': 'f32', 'shape': [16, 32], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [2, 3]},"
                                   "{'name': 'w3', 'dtype': 'f32', 'shape': [16, 32], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [0, 3]}",
                           X_REP01,
                           "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['a']}, {'op': 'matmul', 'in': ['x', 'w2'], 'out': ['b']},"
                           "{'op': 'matmul', 'in': ['x', 'w3'], 'out': ['c']}",
                           "'a', 'b', 'c'"));
  ck_assert_int_eq(count_ops(g, "transfer", true), 2); /* x@2,3 reused by b; x@0,3 new */
  ck_assert_str_eq(g->values[g->ops[0].out[0]].name, "x@2,3");
  ck_assert_int_eq(g->ops[2].in[0], ppcc_find_value(g, "x@2,3"));
  const ppcc_value *partial = t_value(g, "x@0,3");
  expect_devices(partial, 2, (int[]){0, 3});
  /* Inserted transfer sits right before its first consumer. */
  int c_op = t_value(g, "c")->def_op;
  ck_assert_str_eq(g->ops[c_op - 1].info->name, "transfer");
  ppcc_graph_free(g);
}
END_TEST

START_TEST(p10_transfer_of_sharded_value_names_every_device) {
  ppcc_graph *g = ok(model(8,
                           "{'name': 'w', 'dtype': 'f32', 'shape': [16, 32], 'shard': {'kind': 'split', 'dim': 1, 'count': 4}, 'devices': [7, 6, 5, 4]}",
                           "{'name': 'x', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'replicated', 'count': 4}}",
                           "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']}", "'h'"));
  expect_devices(t_value(g, "x@7,6,5,4"), 4, (int[]){7, 6, 5, 4});
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- sharding rules ---------------- */
static const ppcc_value *rule(const char *params, const char *inputs, const char *ops, const char *result, ppcc_graph **gp) {
  *gp = ok(model(4, params, inputs, ops, result));
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)strlen(result) - 2, result + 1);
  return t_value(*gp, name);
}

#define SPLIT(name, shape, dim) "{'name': '" name "', 'dtype': 'f32', 'shape': " shape ", 'shard': {'kind': 'split', 'dim': " #dim ", 'count': 2}}"
#define REP(name, shape) "{'name': '" name "', 'dtype': 'f32', 'shape': " shape ", 'shard': {'kind': 'replicated', 'count': 2}}"
#define UNR(name, shape) "{'name': '" name "', 'dtype': 'f32', 'shape': " shape ", 'shard': {'kind': 'unreduced', 'count': 2}}"
#define PLAIN(name, shape) "{'name': '" name "', 'dtype': 'f32', 'shape': " shape "}"

START_TEST(matmul_rules) {
  ppcc_graph *g;
  expect_layout(rule(SPLIT("w", "[16, 32]", 1), REP("x", "[8, 16]"), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ppcc_graph_free(g);
  expect_layout(rule(SPLIT("w", "[16, 32]", 0), SPLIT("x", "[8, 16]", 1), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule(REP("w", "[16, 32]"), REP("x", "[8, 16]"), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_REPLICATED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule(REP("w", "[16, 32]"), SPLIT("x", "[8, 16]", 0), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 0, 2);
  ppcc_graph_free(g);
  expect_layout(rule(REP("w", "[16, 32]"), SPLIT("x", "[4, 8, 16]", 0), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 0, 2); /* batch dim of a rank-3 activation */
  ppcc_graph_free(g);
  expect_error(model(4, SPLIT("w", "[16, 32]", 1), PLAIN("x", "[8, 16]"), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
  ck_assert(strstr(diag.first, "'x' unsharded") && strstr(diag.first, "'w' split(dim=1, 2)"));
  expect_error(model(4, SPLIT("w", "[16, 32]", 1), SPLIT("x", "[8, 16]", 1), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
  expect_error(model(4, UNR("w", "[16, 32]"), SPLIT("x", "[8, 16]", 1), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
  expect_error(model(4, PLAIN("w", "[15, 32]"), PLAIN("x", "[8, 16]"), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'"),
               "shape mismatch");
}
END_TEST

START_TEST(linear_rules) {
  ppcc_graph *g;
  /* weights [out, in]: split(0) is column parallel, split(1) row parallel */
  expect_layout(rule(SPLIT("w", "[32, 16]", 0) ", " SPLIT("b", "[32]", 0), REP("x", "[8, 16]"),
                     "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ck_assert_int_eq(t_value(g, "y")->shape[1], 32);
  ppcc_graph_free(g);
  expect_layout(rule(SPLIT("w", "[16, 32]", 1), SPLIT("x", "[8, 32]", 1), "{'op': 'linear', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  /* partial sums with a replicated bias: shard 0 adds it, once */
  expect_layout(rule(SPLIT("w", "[16, 32]", 1) ", " REP("b", "[16]"), SPLIT("x", "[8, 32]", 1),
                     "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_error(model(4, SPLIT("w", "[16, 32]", 1) ", " SPLIT("b", "[16]", 0), SPLIT("x", "[8, 32]", 1),
                     "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']}", "'y'"),
               "bias layout");
}
END_TEST

/* v2: replicated x split(contracting) -> unreduced, the replicated operand
 * sliced locally (sharktank's PPFFN), for matmul and linear, either side. */
START_TEST(replicated_times_split_contracting_is_unreduced) {
  ppcc_graph *g;
  expect_layout(rule(SPLIT("w", "[16, 32]", 1) ", " REP("b", "[16]"), REP("x", "[8, 32]"),
                     "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ck_assert_int_eq(count_ops(g, "transfer", true) + count_ops(g, "reshard_split", true), 0);
  ppcc_graph_free(g);
  expect_layout(rule(SPLIT("w", "[16, 32]", 0), REP("x", "[8, 16]"), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule(REP("w", "[16, 32]"), SPLIT("x", "[8, 16]", 1), "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_error(model(4, SPLIT("w", "[16, 32]", 1), PLAIN("x", "[8, 32]"), "{'op': 'linear', 'in': ['x', 'w'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
}
END_TEST

/* v2 + P11: split(rows) x split(cols) -> split(rows) after an inserted,
 * named all_gather of the right operand, which keeps the weight's pin. */
START_TEST(rows_times_cols_inserts_all_gather) {
  ppcc_graph *g;
  const ppcc_value *y = rule(SPLIT("w", "[16, 32]", 1), SPLIT("x", "[8, 16]", 0),
                             "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['y']}, {'op': 'matmul', 'in': ['x', 'w'], 'out': ['z']}",
                             "'y'", &g);
  expect_layout(y, PPCC_LAYOUT_SPLIT, 0, 2);
  ck_assert_int_eq(count_ops(g, "all_gather", true), 1); /* reused by z */
  const ppcc_value *wg = t_value(g, "w@gathered");
  expect_layout(wg, PPCC_LAYOUT_REPLICATED, -1, 2);
  ck_assert(wg->pinned);
  ck_assert(strstr(g->ops[wg->def_op].why, "P11"));
  ck_assert_int_eq(g->ops[y->def_op].in[1], ppcc_find_value(g, "w@gathered"));
  ck_assert_int_eq(wg->def_op, 0);
  expect_layout(t_value(g, "z"), PPCC_LAYOUT_SPLIT, 0, 2);
  ppcc_graph_free(g);
  /* linear: weights [out, in], columns of the result are weight rows */
  expect_layout(rule(SPLIT("w", "[32, 16]", 0), SPLIT("x", "[8, 16]", 0), "{'op': 'linear', 'in': ['x', 'w'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 0, 2);
  ck_assert_int_eq(count_ops(g, "all_gather", true), 1);
  ppcc_graph_free(g);
}
END_TEST

/* P11 v3: an operand that must move (P4) and be gathered moves its shards
 * first and is gathered on the destination: the transfer carries the split
 * x (1/n of the bytes), not x@gathered. */
START_TEST(p11_move_then_gather_on_destination) {
  ppcc_graph *g = ok(model(4, "{'name': 'w', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}, 'devices': [2, 3]}",
                           "{'name': 'x', 'dtype': 'f32', 'shape': [16, 6], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [0, 1]}",
                           "{'op': 'matmul', 'in': ['w', 'x'], 'out': ['y']}", "'y'"));
  ck_assert_int_eq(count_ops(g, "transfer", true), 1);
  ck_assert_int_eq(count_ops(g, "all_gather", true), 1);
  int x = ppcc_find_value(g, "x");
  const ppcc_value *xg = t_value(g, "x@gathered"), *y = t_value(g, "y");
  const ppcc_op *gather = &g->ops[xg->def_op], *move = &g->ops[g->values[gather->in[0]].def_op];
  ck_assert_str_eq(move->info->name, "transfer");
  ck_assert_int_eq(move->in[0], x); /* the split shards move */
  expect_layout(&g->values[move->out[0]], PPCC_LAYOUT_SPLIT, 1, 2);
  expect_devices(&g->values[move->out[0]], 2, (int[]){2, 3});
  expect_devices(xg, 2, (int[]){2, 3}); /* gathered on the destination */
  ck_assert(gather->devices[0] == 2 && gather->devices[1] == 3);
  ck_assert_int_eq(g->ops[y->def_op].in[1], ppcc_find_value(g, "x@gathered"));
  ck_assert(move < gather && gather < &g->ops[y->def_op]);
  expect_devices(y, 2, (int[]){2, 3});
  ppcc_graph_free(g);
}
END_TEST

/* v2 + P11: concat along the split dim = gather, concat whole, re-split. */
START_TEST(concat_along_split_dim_inserts_collectives) {
  ppcc_graph *g;
  const ppcc_value *y = rule("", SPLIT("a", "[8, 16]", 1) ", " SPLIT("b", "[8, 16]", 1),
                             "{'op': 'concat', 'in': ['a', 'b'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", &g);
  expect_layout(y, PPCC_LAYOUT_SPLIT, 1, 2);
  ck_assert_int_eq(t_value(g, "y")->shape[1], 32);
  ck_assert_int_eq(count_ops(g, "all_gather", true), 2);
  ck_assert_int_eq(count_ops(g, "reshard_split", true), 1);
  expect_layout(t_value(g, "y@whole"), PPCC_LAYOUT_REPLICATED, -1, 2);
  ck_assert_str_eq(g->ops[y->def_op].info->name, "reshard_split");
  ck_assert(g->ops[y->def_op].inserted);
  ck_assert_int_eq(g->n_ops, 4);
  ppcc_graph_free(g);
  /* along another dim: shard by shard, nothing inserted */
  expect_layout(rule("", SPLIT("a", "[8, 16]", 1) ", " SPLIT("b", "[8, 16]", 1),
                     "{'op': 'concat', 'in': ['a', 'b'], 'out': ['y'], 'attrs': {'dim': 0}}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ck_assert_int_eq(g->n_ops, 1);
  ppcc_graph_free(g);
  expect_error(model(4, "", SPLIT("a", "[8, 16]", 1) ", " REP("b", "[8, 16]"),
                     "{'op': 'concat', 'in': ['a', 'b'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'"),
               "share one layout");
}
END_TEST

/* A count-1 layout never blocks a rule: it may do what unsharded may. */
#define ONE(name, shape, dim) "{'name': '" name "', 'dtype': 'f32', 'shape': " shape ", 'shard': {'kind': 'split', 'dim': " #dim ", 'count': 1}}"
START_TEST(count_one_layouts_behave_as_unsharded) {
  ppcc_graph *g;
  /* a split(0, 1) destination indexed along dim 0 (a decode KV cache) */
  expect_layout(rule("", ONE("cache", "[16, 4]", 0) ", {'name': 'pos', 'dtype': 'i64', 'shape': [1]}, " PLAIN("kv", "[1, 4]"),
                     "{'op': 'index_copy', 'in': ['cache', 'pos', 'kv'], 'out': ['y'], 'attrs': {'dim': 0}}", "'y'", &g),
                PPCC_LAYOUT_UNSHARDED, -1, 1);
  ppcc_graph_free(g);
  /* ...and a TP=1 graph's collectives after it are the identity */
  expect_layout(rule("", ONE("cache", "[16, 4]", 0) ", {'name': 'pos', 'dtype': 'i64', 'shape': [1]}, " PLAIN("kv", "[1, 4]"),
                     "{'op': 'index_copy', 'in': ['cache', 'pos', 'kv'], 'out': ['c'], 'attrs': {'dim': 0}},"
                     "{'op': 'all_reduce', 'in': ['c'], 'out': ['r']}, {'op': 'all_gather', 'in': ['c'], 'out': ['a']},"
                     "{'op': 'reduce_scatter', 'in': ['c'], 'out': ['y'], 'attrs': {'dim': 1}}",
                     "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 1);
  expect_layout(t_value(g, "r"), PPCC_LAYOUT_REPLICATED, -1, 1);
  expect_layout(t_value(g, "a"), PPCC_LAYOUT_REPLICATED, -1, 1);
  ppcc_graph_free(g);
  /* count-1 operands never trigger inserted collectives: one shard is whole */
  expect_layout(rule(ONE("w", "[16, 32]", 1), ONE("x", "[8, 16]", 0),
                     "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['m']}, {'op': 'concat', 'in': ['x', 'x'], 'out': ['y'], 'attrs': {'dim': 0}}",
                     "'y'", &g),
                PPCC_LAYOUT_SPLIT, 0, 1);
  ck_assert_int_eq(g->n_ops, 2);
  ppcc_graph_free(g);
  /* mixed with unsharded operands, and softmax over the "split" dim */
  expect_layout(rule("", ONE("a", "[8, 16]", 1) ", " PLAIN("b", "[8, 16]"),
                     "{'op': 'add', 'in': ['a', 'b'], 'out': ['s']}, {'op': 'softmax', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 1}}",
                     "'y'", &g),
                PPCC_LAYOUT_UNSHARDED, -1, 1);
  expect_layout(t_value(g, "s"), PPCC_LAYOUT_UNSHARDED, -1, 1);
  ppcc_graph_free(g);
  /* what already worked keeps its layout: all_reduce of unreduced(1) */
  expect_layout(rule("", "{'name': 'p', 'dtype': 'f32', 'shape': [8, 16], 'shard': {'kind': 'unreduced', 'count': 1}}",
                     "{'op': 'all_reduce', 'in': ['p'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_REPLICATED, -1, 1);
  ppcc_graph_free(g);
  /* a real count-2 refusal is still reported with the real layouts */
  expect_error(model(4, "", SPLIT("a", "[8, 16]", 1) ", " ONE("b", "[8, 16]", 1), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'"),
               "split(dim=1, 1)");
}
END_TEST

START_TEST(elementwise_rules) {
  ppcc_graph *g;
  expect_layout(rule("", SPLIT("a", "[8, 16]", 1) ", " SPLIT("b", "[8, 16]", 1), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", SPLIT("a", "[8, 16]", 1) ", " REP("b", "[8, 16]"), "{'op': 'mul', 'in': ['b', 'a'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ppcc_graph_free(g);
  /* broadcasting shifts the split dim: [16] split(0) + [4, 8, 16] -> dim 2 */
  expect_layout(rule("", SPLIT("a", "[16]", 0) ", " REP("b", "[4, 8, 16]"), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 2, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", UNR("a", "[8, 16]") ", " UNR("b", "[8, 16]"), "{'op': 'sub', 'in': ['a', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", UNR("a", "[8, 16]") ", " REP("b", "[8, 16]"), "{'op': 'mul', 'in': ['a', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", UNR("a", "[8, 16]"), "{'op': 'neg', 'in': ['a'], 'out': ['y']}", "'y'", &g), PPCC_LAYOUT_UNREDUCED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", PLAIN("a", "[8, 16]") ", " PLAIN("b", "[1, 16]"), "{'op': 'div', 'in': ['a', 'b'], 'out': ['y']}", "'y'", &g),
                PPCC_LAYOUT_UNSHARDED, -1, 1);
  ppcc_graph_free(g);
  expect_error(model(4, "", UNR("a", "[8, 16]") ", " REP("b", "[8, 16]"), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
  expect_error(model(4, "", UNR("a", "[8, 16]"), "{'op': 'gelu', 'in': ['a'], 'out': ['y']}", "'y'"), "nonlinear");
  expect_error(model(4, "", SPLIT("a", "[8, 16]", 0) ", " SPLIT("b", "[8, 16]", 1), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'"),
               "different dims");
  expect_error(model(4, "", PLAIN("a", "[8, 16]") ", " REP("b", "[8, 16]"), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'"),
               "unsupported layouts");
  expect_error(model(4, "", PLAIN("a", "[8, 16]") ", " PLAIN("b", "[8, 3]"), "{'op': 'add', 'in': ['a', 'b'], 'out': ['y']}", "'y'"),
               "shape mismatch");
}
END_TEST

START_TEST(shape_op_rules) {
  ppcc_graph *g;
  expect_layout(rule("", SPLIT("a", "[8, 16, 4]", 1), "{'op': 'permute', 'in': ['a'], 'out': ['y'], 'attrs': {'perm': [2, 0, 1]}}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 2, 2);
  ck_assert_int_eq(t_value(g, "y")->shape[0], 4);
  ppcc_graph_free(g);
  expect_layout(rule("", SPLIT("a", "[8, 16]", 1), "{'op': 'transpose', 'in': ['a'], 'out': ['y']}", "'y'", &g), PPCC_LAYOUT_SPLIT, 0, 2);
  ppcc_graph_free(g);
  /* heads split: [2, 8, 64] split(2) -> [2, 8, 4, 16] split(2) */
  expect_layout(rule("", SPLIT("a", "[2, 8, 64]", 2), "{'op': 'reshape', 'in': ['a'], 'out': ['y'], 'attrs': {'shape': [2, 8, 4, -1]}}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 2, 2);
  ck_assert_int_eq(t_value(g, "y")->shape[3], 16);
  ppcc_graph_free(g);
  expect_error(model(4, "", SPLIT("a", "[2, 8, 64]", 1), "{'op': 'reshape', 'in': ['a'], 'out': ['y'], 'attrs': {'shape': [16, 64]}}", "'y'"),
               "shard boundaries");
  expect_error(model(4, "", PLAIN("a", "[2, 8]"), "{'op': 'reshape', 'in': ['a'], 'out': ['y'], 'attrs': {'shape': [3, 5]}}", "'y'"),
               "shape mismatch");
  expect_error(model(4, "", PLAIN("a", "[2, 8]"), "{'op': 'permute', 'in': ['a'], 'out': ['y'], 'attrs': {'perm': [0, 0]}}", "'y'"),
               "not a permutation");
}
END_TEST

START_TEST(collective_rules) {
  ppcc_graph *g;
  expect_layout(rule("", UNR("a", "[8, 16]"), "{'op': 'reduce_scatter', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", SPLIT("a", "[8, 16]", 0), "{'op': 'all_gather', 'in': ['a'], 'out': ['y']}", "'y'", &g), PPCC_LAYOUT_REPLICATED, -1, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", REP("a", "[8, 16]"), "{'op': 'reshard_split', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 0}}", "'y'", &g),
                PPCC_LAYOUT_SPLIT, 0, 2);
  ppcc_graph_free(g);
  expect_layout(rule("", UNR("a", "[8, 16]"), "{'op': 'unshard', 'in': ['a'], 'out': ['y']}", "'y'", &g), PPCC_LAYOUT_UNSHARDED, -1, 1);
  ppcc_graph_free(g);
  expect_error(model(4, "", REP("a", "[8, 16]"), "{'op': 'all_reduce', 'in': ['a'], 'out': ['y']}", "'y'"), "needs an unreduced operand");
  expect_error(model(4, "", REP("a", "[8, 16]"), "{'op': 'all_gather', 'in': ['a'], 'out': ['y']}", "'y'"), "needs a split operand");
  expect_error(model(4, "", UNR("a", "[8, 15]"), "{'op': 'reduce_scatter', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'"),
               "cannot be split evenly");
  expect_error(model(4, "", PLAIN("a", "[6, 16]"), "{'op': 'reshard_split', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 0, 'count': 4}}", "'y'"),
               "cannot be split evenly");
  expect_error(model(4, "", PLAIN("a", "[8, 16]"), "{'op': 'replicate', 'in': ['a'], 'out': ['y']}", "'y'"), "attrs.count is required");
  expect_error(model(4, "", SPLIT("a", "[8, 16]", 0), "{'op': 'reshard_split', 'in': ['a'], 'out': ['y'], 'attrs': {'dim': 1}}", "'y'"),
               "all-to-all");
}
END_TEST

START_TEST(dump_after_each_pass) {
  ppcc_graph *g = ok(model(4, W_COL23, X_REP01, "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']}", "'h'"));
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ppcc_graph_dump(g, f);
  fclose(f);
  ck_assert(strstr(buf, "transfer*(x) -> x@2,3 f32[8, 16] replicated(2) on [2,3]"));
  ck_assert(strstr(buf, "h f32[8, 32] split(dim=1, 2) on [2,3]\n"));
  free(buf);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("passes");
  TCase *p = t_add_tcase(s, "placement", 0);
  tcase_add_test(p, p1_params_pinned_on_default_and_declared_devices);
  tcase_add_test(p, p2_inputs_unpinned_unless_declared);
  tcase_add_test(p, p1_device_out_of_range_is_error);
  tcase_add_test(p, p3_unary_follows_operand);
  tcase_add_test(p, p4_same_devices_result_pinned_iff_all_pinned);
  tcase_add_test(p, p4_activation_follows_the_next_stage_weights);
  tcase_add_test(p, p4_unpinned_operand_moves_to_pinned);
  tcase_add_test(p, p4_pin_conflict_names_op_and_operands);
  tcase_add_test(p, p4_different_devices_none_pinned);
  tcase_add_test(p, p5_replicate_and_reshard_split_of_unsharded);
  tcase_add_test(p, p5_sharded_operand_keeps_devices);
  tcase_add_test(p, p5_sharded_operand_keeps_pin);
  tcase_add_test(p, p5_replicate_of_split_is_unpinned);
  tcase_add_test(p, p5_devices_must_match_count);
  tcase_add_test(p, p6_collectives_unpinned_on_operand_devices);
  tcase_add_test(p, p7_inplace_destination_never_moves);
  tcase_add_test(p, p7_pinned_update_elsewhere_is_error);
  tcase_add_test(p, p8_explicit_transfer_kept_and_unpinned);
  tcase_add_test(p, p8_transfer_of_unsharded_to_several_devices_replicates);
  tcase_add_test(p, p9_unshard_onto_first_or_given_device);
  tcase_add_test(p, p10_transfer_reused_and_per_shard);
  tcase_add_test(p, p10_transfer_of_sharded_value_names_every_device);
  TCase *r = t_add_tcase(s, "sharding", 0);
  tcase_add_test(r, matmul_rules);
  tcase_add_test(r, linear_rules);
  tcase_add_test(r, replicated_times_split_contracting_is_unreduced);
  tcase_add_test(r, rows_times_cols_inserts_all_gather);
  tcase_add_test(r, p11_move_then_gather_on_destination);
  tcase_add_test(r, concat_along_split_dim_inserts_collectives);
  tcase_add_test(r, count_one_layouts_behave_as_unsharded);
  tcase_add_test(r, elementwise_rules);
  tcase_add_test(r, shape_op_rules);
  tcase_add_test(r, collective_rules);
  tcase_add_test(r, dump_after_each_pass);
  return t_run_suite(s);
}
