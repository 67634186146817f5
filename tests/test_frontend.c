/* Frontend (model.json -> graph) and atomic output files (io.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ppcc/frontend.h"
#include "ppcc/io.h"
#include "ppcc/ops.h"
#include "test_support.h"

/* Tests write JSON with single quotes for readability; this turns them
 * into double quotes (no test needs a literal single quote). */
static char *json_of(const char *text) {
  static char buf[8192];
  size_t n = strlen(text);
  ck_assert_uint_lt(n, sizeof buf);
  for (size_t i = 0; i <= n; i++) buf[i] = text[i] == '\'' ? '"' : text[i];
  return buf;
}

static ppcc_graph *load(const char *text, ppcc_diag *d) {
  const char *json = json_of(text);
  ppcc_diag_init(d, "test.json", NULL);
  return ppcc_load_model_string(json, strlen(json), d);
}

/* Loading must fail with exactly one error containing `want`. */
static void expect_error(const char *text, const char *want) {
  ppcc_diag d;
  ppcc_graph *g = load(text, &d);
  ck_assert_msg(g == NULL, "expected an error containing \"%s\" for %s", want, text);
  ck_assert_int_eq(d.errors, 1);
  ck_assert_msg(strstr(d.first, want) != NULL, "error \"%s\" lacks \"%s\"", d.first, want);
}

#define HEAD "{'ppcc': 1, 'devices': 4, "
#define X_IN "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [8, 64]}], "
#define W_PARAM "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64]}], "
#define NEG_OP "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y']}], 'outputs': ['y']}"

/* ---------------- valid models ---------------- */

START_TEST(test_defaults) {
  ppcc_diag d;
  ppcc_graph *g = load("{'ppcc': 1, 'name': 'ppffn', 'devices': 4,"
                       " 'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64],"
                       "             'shard': {'kind': 'split', 'dim': 1, 'count': 2}}],"
                       " 'inputs': [{'name': 'x', 'dtype': 'bf16', 'shape': [8, 64],"
                       "             'shard': {'kind': 'replicated', 'count': 3}}],"
                       " 'ops': [{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h0']}],"
                       " 'outputs': ['h0']}",
                       &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ck_assert_str_eq(g->name, "ppffn");
  ck_assert_int_eq(g->n_devices, 4);
  ck_assert_int_eq(g->n_values, 3);
  ck_assert_int_eq(g->n_ops, 1);

  const ppcc_value *w = t_value(g, "w");
  ck_assert_int_eq(w->kind, PPCC_VALUE_PARAM);
  ck_assert_int_eq(w->layout.kind, PPCC_LAYOUT_SPLIT);
  ck_assert_int_eq(w->layout.dim, 1);
  ck_assert_int_eq(w->layout.count, 2);
  ck_assert_int_eq(w->devices[0], 0);
  ck_assert_int_eq(w->devices[1], 1);
  ck_assert(w->pinned);
  ck_assert_int_eq(w->def_op, -1);
  ck_assert_ptr_nonnull(strstr(w->why, "P1"));

  const ppcc_value *x = t_value(g, "x");
  ck_assert_int_eq(x->kind, PPCC_VALUE_INPUT);
  ck_assert_int_eq(x->dtype, PPCC_BF16);
  ck_assert_int_eq(x->rank, 2);
  ck_assert_int_eq(x->shape[0], 8);
  ck_assert_int_eq(x->shape[1], 64);
  ck_assert_int_eq(x->layout.kind, PPCC_LAYOUT_REPLICATED);
  ck_assert_int_eq(x->layout.count, 3);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(x->devices[i], i);
  ck_assert(!x->pinned);
  ck_assert_ptr_nonnull(strstr(x->why, "P2"));

  const ppcc_value *h = t_value(g, "h0");
  ck_assert_int_eq(h->kind, PPCC_VALUE_RESULT);
  ck_assert_int_eq(h->dtype, PPCC_BF16); /* first operand's, until verify */
  ck_assert_int_eq(h->def_op, 0);
  ck_assert(h->is_output);
  ck_assert_int_eq(g->n_outputs, 1);
  ck_assert_int_eq(g->outputs[0], ppcc_find_value(g, "h0"));

  const ppcc_op *op = &g->ops[0];
  ck_assert_str_eq(op->info->name, "matmul");
  ck_assert_int_eq(op->n_in, 2);
  ck_assert_int_eq(op->in[0], ppcc_find_value(g, "x"));
  ck_assert_int_eq(op->in[1], ppcc_find_value(g, "w"));
  ck_assert_int_eq(op->src_index, 0);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(test_unsharded_default_and_explicit_placement) {
  ppcc_diag d;
  ppcc_graph *g = load(HEAD
                       "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4], 'pinned': false,"
                       "            'devices': [3]},"
                       "           {'name': 's', 'dtype': 'f32', 'shape': [4, 8],"
                       "            'shard': {'kind': 'unreduced', 'count': 2}, 'devices': [2, 0]}],"
                       "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [], 'pinned': true}],"
                       "'ops': [], 'outputs': ['x']}",
                       &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  const ppcc_value *w = t_value(g, "w"), *s = t_value(g, "s"), *x = t_value(g, "x");
  ck_assert_int_eq(w->layout.kind, PPCC_LAYOUT_UNSHARDED);
  ck_assert_int_eq(w->layout.count, 1);
  ck_assert_int_eq(w->devices[0], 3);
  ck_assert(!w->pinned);
  ck_assert_int_eq(s->layout.kind, PPCC_LAYOUT_UNREDUCED);
  ck_assert_int_eq(s->devices[0], 2);
  ck_assert_int_eq(s->devices[1], 0);
  ck_assert(s->pinned);
  ck_assert_int_eq(x->rank, 0);
  ck_assert_int_eq(x->devices[0], 0);
  ck_assert(x->pinned);
  ck_assert_str_eq(g->name, "model");
  ppcc_graph_free(g);
}
END_TEST

START_TEST(test_attrs) {
  ppcc_diag d;
  ppcc_graph *g = load(HEAD X_IN
                       "'ops': [{'op': 'transfer', 'in': ['x'], 'out': ['a'],"
                       "         'attrs': {'devices': [2], 'pinned': true}},"
                       "        {'op': 'scale', 'in': ['a'], 'out': ['b'], 'attrs': {'value': 0.5}},"
                       "        {'op': 'scale', 'in': ['b'], 'out': ['c'], 'attrs': {'value': 3}},"
                       "        {'op': 'reshape', 'in': ['c'], 'out': ['e'], 'attrs': {'shape': [-1, 16]}},"
                       "        {'op': 'transpose', 'in': ['e'], 'out': ['f']}],"
                       "'outputs': ['f', 'c']}",
                       &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  const ppcc_op *tr = &g->ops[0];
  const ppcc_attr *devs = ppcc_op_attr(tr, "devices");
  ck_assert_ptr_nonnull(devs);
  ck_assert_int_eq(devs->type, PPCC_ATTR_INTS);
  ck_assert_int_eq(devs->n, 1);
  ck_assert_int_eq(devs->ints[0], 2);
  ck_assert(ppcc_attr_bool(tr, "pinned", false));
  ck_assert(ppcc_attr_float(&g->ops[1], "value", 0) == 0.5);
  ck_assert(ppcc_attr_float(&g->ops[2], "value", 0) == 3.0);
  const ppcc_attr *shape = ppcc_op_attr(&g->ops[3], "shape");
  ck_assert_int_eq(shape->n, 2);
  ck_assert_int_eq(shape->ints[0], -1);
  ck_assert_int_eq(shape->ints[1], 16);
  ck_assert_int_eq(g->ops[4].n_attrs, 0);
  ck_assert_int_eq(g->n_outputs, 2);
  ck_assert_int_eq(g->outputs[1], ppcc_find_value(g, "c"));
  ppcc_graph_free(g);
}
END_TEST

/* ---------------- errors ---------------- */

typedef struct {
  const char *json;
  const char *want;
} bad_case;

static const bad_case structure_cases[] = {
    {"[1, 2]", "top level: expected a JSON object, got an array"},
    {"{'devices': 4, 'ops': [], 'outputs': []}", "missing required key 'ppcc'"},
    {"{'ppcc': 2, 'devices': 4, 'ops': [], 'outputs': ['x']}", "unsupported format version 2"},
    {"{'ppcc': '1', 'devices': 4, 'ops': [], 'outputs': ['x']}", "ppcc: expected the format version 1"},
    {"{'ppcc': 1, 'devices': 4, 'opps': [], 'outputs': ['x']}", "unknown key 'opps'"},
    {"{'ppcc': 1, 'devices': 4, 'opps': [], 'outputs': ['x']}", "did you mean 'ops'?"},
    {"{'ppcc': 1, 'devices': 4, 'devices': 2, 'ops': [], 'outputs': ['x']}", "key 'devices' appears twice"},
    {"{'ppcc': 1, 'ops': [], 'outputs': ['x']}", "missing required key 'devices'"},
    {"{'ppcc': 1, 'devices': 0, 'ops': [], 'outputs': ['x']}", "devices: 0 is out of range [1, 4096]"},
    {"{'ppcc': 1, 'devices': 5000, 'ops': [], 'outputs': ['x']}", "devices: 5000 is out of range"},
    {"{'ppcc': 1, 'devices': 2.5, 'ops': [], 'outputs': ['x']}", "devices: expected an integer, got 2.5"},
    {"{'ppcc': 1, 'devices': 1e300, 'ops': [], 'outputs': ['x']}", "is too large"},
    {"{'ppcc': 1, 'name': 7, 'devices': 4, 'ops': [], 'outputs': ['x']}", "name: expected a name"},
    {"{'ppcc': 1, 'devices': 4, 'outputs': ['x']}", "missing required key 'ops'"},
    {HEAD X_IN "'ops': []}", "missing required key 'outputs'"},
    {HEAD X_IN "'ops': [], 'outputs': []}", "the model has no outputs"},
    {HEAD X_IN "'ops': {}, 'outputs': ['x']}", "ops: expected an array, got an object"},
    {HEAD "'params': 3, 'ops': [], 'outputs': ['x']}", "params: expected an array, got a number"},
    {HEAD X_IN "'ops': [], 'outputs': ['nope']}", "outputs[0]: 'nope' is not defined"},
    {HEAD X_IN "'ops': [], 'outputs': ['x', 'x']}", "outputs[1]: 'x' is listed twice"},
    {HEAD X_IN "'ops': [], 'outputs': [1]}", "outputs[0]: expected a value name (string), got a number"},
};

static const bad_case decl_cases[] = {
    {HEAD "'inputs': [{'dtype': 'f32', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
     "inputs[0]: missing required key 'name'"},
    {HEAD "'inputs': [{'name': '', 'dtype': 'f32', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
     "inputs[0].name: name is empty"},
    {HEAD "'inputs': [{'name': 'a@1', 'dtype': 'f32', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
     "reserved for inserted values"},
    {HEAD "'inputs': [{'name': 'x', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
     "inputs[0]: missing required key 'dtype' (input 'x')"},
    {HEAD "'inputs': [{'name': 'x', 'dtype': 'f33', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
     "inputs[0].dtype: unknown dtype 'f33'"},
    {HEAD "'inputs': [{'name': 'x', 'dtype': 'f32'}], 'ops': [], 'outputs': ['x']}",
     "missing required key 'shape' (input 'x')"},
    {HEAD "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [1], 'shpe': 1}], 'ops': [], 'outputs': ['x']}",
     "inputs[0]: unknown key 'shpe'"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [2, -4]}], 'ops': [], 'outputs': ['w']}",
     "params[0].shape[1]: dimension -4 is negative (param 'w')"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [2, 'a']}], 'ops': [], 'outputs': ['w']}",
     "params[0].shape[1]: expected an integer, got a string"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [1,1,1,1,1,1,1,1,1]}], 'ops': [], 'outputs': ['w']}",
     "params[0].shape: rank 9 exceeds the maximum rank 8"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4294967296, 4294967296]}], 'ops': [],"
          " 'outputs': ['w']}",
     "params[0].shape: the tensor has more than"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [1e300]}], 'ops': [], 'outputs': ['w']}",
     "params[0].shape[0]: integer 1.0000000000000001e+300 is too large"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64],"
          " 'shard': {'kind': 'split', 'dim': 1, 'count': 3}}], 'ops': [], 'outputs': ['w']}",
     "params[0].shard.count: 3 does not divide dim 1 of size 64 (param 'w')"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64],"
          " 'shard': {'kind': 'split', 'count': 2}}], 'ops': [], 'outputs': ['w']}",
     "params[0].shard.dim: a split needs 'dim'"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64],"
          " 'shard': {'kind': 'split', 'dim': 2, 'count': 2}}], 'ops': [], 'outputs': ['w']}",
     "split dim 2 is out of range for rank 2"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64, 64],"
          " 'shard': {'kind': 'replicated', 'dim': 0, 'count': 2}}], 'ops': [], 'outputs': ['w']}",
     "'dim' is only valid for shard kind 'split'"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'none', 'count': 2}}], 'ops': [], 'outputs': ['w']}",
     "shard kind 'none' cannot have 2 shards"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'mirrored', 'count': 2}}], 'ops': [], 'outputs': ['w']}",
     "params[0].shard.kind: unknown shard kind 'mirrored'"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 8}}], 'ops': [], 'outputs': ['w']}",
     "8 shards need more devices than the model's 4"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 0}}], 'ops': [], 'outputs': ['w']}",
     "shard count 0 must be at least 1"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'cnt': 2}}], 'ops': [], 'outputs': ['w']}",
     "params[0].shard: unknown key 'cnt'"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [0, 7]}], 'ops': [], 'outputs': ['w']}",
     "params[0].devices[1]: device 7 is out of range (model has 4 devices) (param 'w')"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [-1, 0]}], 'ops': [], 'outputs': ['w']}",
     "params[0].devices[0]: device -1 is out of range"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [1, 1]}], 'ops': [], 'outputs': ['w']}",
     "params[0].devices[1]: device 1 appears twice"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64],"
          " 'shard': {'kind': 'replicated', 'count': 2}, 'devices': [1, 2, 3]}], 'ops': [], 'outputs': ['w']}",
     "params[0].devices: 3 devices given for 2 shards"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64], 'pinned': 1}], 'ops': [], 'outputs': ['w']}",
     "params[0].pinned: expected true or false, got a number"},
    {HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [64]}],"
          " 'inputs': [{'name': 'w', 'dtype': 'f32', 'shape': [64]}], 'ops': [], 'outputs': ['w']}",
     "inputs[0].name: 'w' is already defined by params[0] (input 'w')"},
};

static const bad_case op_cases[] = {
    {HEAD X_IN "'ops': [{'op': 'matmull', 'in': ['x', 'x'], 'out': ['y']}], 'outputs': ['y']}",
     "ops[0].op: unknown op 'matmull'; did you mean 'matmul'?"},
    {HEAD X_IN "'ops': [{'in': ['x'], 'out': ['y']}], 'outputs': ['y']}", "ops[0]: missing required key 'op'"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y'], 'atrs': {}}], 'outputs': ['y']}",
     "ops[0]: unknown key 'atrs'"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'out': ['y']}], 'outputs': ['y']}", "missing required key 'in' (op 'neg')"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x']}], 'outputs': ['y']}", "missing required key 'out' (op 'neg')"},
    {HEAD X_IN "'ops': [{'op': 'matmul', 'in': ['x'], 'out': ['y']}], 'outputs': ['y']}",
     "ops[0].in: 'matmul' takes 2 operands, got 1 (arity)"},
    {HEAD X_IN "'ops': [{'op': 'linear', 'in': ['x', 'x', 'x', 'x'], 'out': ['y']}], 'outputs': ['y']}",
     "'linear' takes 2 to 3 operands, got 4"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y', 'z']}], 'outputs': ['y']}",
     "ops[0].out: 'neg' has 1 result, got 2 names"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['h9'], 'out': ['y']}], 'outputs': ['y']}",
     "ops[0].in[0]: 'h9' is not defined (op 'neg')"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y']}, {'op': 'add', 'in': ['y', 'h3'], 'out': ['z']},"
               " {'op': 'neg', 'in': ['z'], 'out': ['h3']}], 'outputs': ['h3']}",
     "ops[1].in[1]: cycle: 'h3' is used by ops[1] before its definition by ops[2] (op 'add')"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['y'], 'out': ['y']}], 'outputs': ['y']}",
     "cycle: 'y' is used by ops[0] before its definition by ops[0]"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['x']}], 'outputs': ['x']}",
     "ops[0].out[0]: 'x' is already defined by inputs[0] (op 'neg')"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y']}, {'op': 'neg', 'in': ['x'], 'out': ['y']}],"
               " 'outputs': ['y']}",
     "ops[1].out[0]: 'y' is already defined by ops[0]"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': [3], 'out': ['y']}], 'outputs': ['y']}",
     "ops[0].in[0]: expected a value name (string), got a number"},
    {HEAD X_IN "'ops': [{'op': 'scale', 'in': ['x'], 'out': ['y']}], 'outputs': ['y']}",
     "ops[0]: missing required attribute 'value' (op 'scale')"},
    {HEAD X_IN "'ops': [{'op': 'scale', 'in': ['x'], 'out': ['y'], 'attrs': {}}], 'outputs': ['y']}",
     "ops[0].attrs: missing required attribute 'value'"},
    {HEAD X_IN "'ops': [{'op': 'scale', 'in': ['x'], 'out': ['y'], 'attrs': {'value': 'big'}}], 'outputs': ['y']}",
     "ops[0].attrs.value: expected a number, got a string (op 'scale')"},
    {HEAD X_IN "'ops': [{'op': 'scale', 'in': ['x'], 'out': ['y'], 'attrs': {'value': 1, 'vaule': 2}}],"
               " 'outputs': ['y']}",
     "unknown attribute 'vaule'"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y'], 'attrs': {'alpha': 1}}], 'outputs': ['y']}",
     "unknown attribute 'alpha' ('neg' takes no attributes)"},
    {HEAD X_IN "'ops': [{'op': 'transfer', 'in': ['x'], 'out': ['y'], 'attrs': {'devices': 2}}], 'outputs': ['y']}",
     "ops[0].attrs.devices: expected a list of integers, got a number"},
    {HEAD X_IN "'ops': [{'op': 'transfer', 'in': ['x'], 'out': ['y'], 'attrs': {'devices': [1.5]}}],"
               " 'outputs': ['y']}",
     "ops[0].attrs.devices[0]: expected an integer, got 1.5"},
    {HEAD X_IN "'ops': [{'op': 'transfer', 'in': ['x'], 'out': ['y'], 'attrs': {'devices': [1], 'pinned': 'yes'}}],"
               " 'outputs': ['y']}",
     "ops[0].attrs.pinned: expected true or false, got a string"},
    {HEAD X_IN "'ops': [{'op': 'unshard', 'in': ['x'], 'out': ['y'], 'attrs': {'device': 0.5}}], 'outputs': ['y']}",
     "ops[0].attrs.device: expected an integer, got 0.5"},
    {HEAD X_IN "'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y'], 'attrs': []}], 'outputs': ['y']}",
     "ops[0].attrs: expected an object, got an array"},
    {HEAD X_IN "'ops': [3], 'outputs': ['y']}", "ops[0]: expected an object, got a number"},
};

static void run_cases(const bad_case *cases, size_t n) {
  for (size_t i = 0; i < n; i++) expect_error(cases[i].json, cases[i].want);
}

START_TEST(test_structure_errors) { run_cases(structure_cases, sizeof structure_cases / sizeof *structure_cases); }
END_TEST
START_TEST(test_decl_errors) { run_cases(decl_cases, sizeof decl_cases / sizeof *decl_cases); }
END_TEST
START_TEST(test_op_errors) { run_cases(op_cases, sizeof op_cases / sizeof *op_cases); }
END_TEST

START_TEST(test_name_limits) {
  char text[2048], name[PPCC_MAX_NAME + 2];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = 0; /* one byte too long */
  snprintf(text, sizeof text, HEAD "'inputs': [{'name': '%s', 'dtype': 'f32', 'shape': [1]}], 'ops': [],"
                                   " 'outputs': ['x']}", name);
  expect_error(text, "more than the maximum 256");
  name[PPCC_MAX_NAME] = 0; /* exactly the maximum is fine */
  snprintf(text, sizeof text, HEAD "'inputs': [{'name': '%s', 'dtype': 'f32', 'shape': [1]}], 'ops': [],"
                                   " 'outputs': ['%s']}", name, name);
  ppcc_diag d;
  ppcc_graph *g = load(text, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_graph_free(g);
  expect_error(HEAD "'inputs': [{'name': 'a\\nb', 'dtype': 'f32', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
               "control character");
  expect_error(HEAD "'inputs': [{'name': 'a\xff', 'dtype': 'f32', 'shape': [1]}], 'ops': [], 'outputs': ['x']}",
               "inputs[0].name: name is not valid UTF-8 (byte 1)");
  expect_error(HEAD "'inputs': [{'name': '\xed\xa0\x80', 'dtype': 'f32', 'shape': [1]}], 'ops': [],"
                    " 'outputs': ['x']}",
               "not valid UTF-8");
  g = load(HEAD "'inputs': [{'name': 'caf\xc3\xa9', 'dtype': 'f32', 'shape': [1]}], 'ops': [],"
                " 'outputs': ['caf\xc3\xa9']}",
           &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_graph_free(g);
}
END_TEST

/* C1 controls and invisible direction / line characters make a name print
 * as something else (U+202E reverses what follows): refused, with the code
 * point named. */
START_TEST(test_name_hidden_characters) {
  static const struct {
    const char *name, *want;
  } cases[] = {
    {"a\xc2\x85" "b", "control character (U+0085 at byte 1)"},
    {"\xc2\x9f", "control character (U+009F at byte 0)"},
    {"w\xe2\x80\xae" "1gol", "U+202E (byte 1)"},
    {"w\xe2\x80\x8f", "U+200F"},
    {"w\xe2\x81\xa6x", "U+2066"},
    {"w\xe2\x80\xa8x", "U+2028"},
    {"\xd8\x9cx", "U+061C"},
  };
  char text[512];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, HEAD "'inputs': [{'name': '%s', 'dtype': 'f32', 'shape': [1]}], 'ops': [],"
                                     " 'outputs': ['x']}", cases[i].name);
    expect_error(text, cases[i].want);
  }
  /* Printable non-ASCII (U+00A0 and up, not the characters above) stays fine. */
  ppcc_diag d;
  ppcc_graph *g = load(HEAD "'inputs': [{'name': '\xc2\xa0\xe2\x80\x90\xe2\x81\xb0', 'dtype': 'f32', 'shape': [1]}],"
                            " 'ops': [], 'outputs': ['\xc2\xa0\xe2\x80\x90\xe2\x81\xb0']}",
                       &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_graph_free(g);
}
END_TEST

/* 1e400 reads as infinity: "out of range", not "expected a number, got a
 * number". */
START_TEST(test_number_out_of_range) {
  expect_error(HEAD "'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [1e400]}], 'ops': [], 'outputs': ['x']}",
               "inputs[0].shape[0]: number out of range (beyond 1.8e308)");
  expect_error(HEAD "'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4]}],"
                    " 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [2, 4]}],"
                    " 'ops': [{'op': 'rms_norm', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'eps': -1e400}}],"
                    " 'outputs': ['y']}",
               "number out of range (beyond 1.8e308)");
}
END_TEST

/* ---------------- malformed text ---------------- */

static void expect_raw_error(const char *text, size_t len, const char *want) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(text, len, &d);
  ck_assert_msg(g == NULL, "expected an error containing \"%s\"", want);
  ck_assert_int_eq(d.errors, 1);
  ck_assert_msg(strstr(d.first, want) != NULL, "error \"%s\" lacks \"%s\"", d.first, want);
}

/* A string literal and its length, embedded NULs included. */
#define RAW(literal) literal, sizeof(literal) - 1

START_TEST(test_malformed_json) {
  expect_raw_error(RAW(""), "the file is empty");
  expect_raw_error(RAW(" \n\t "), "the file is empty");
  expect_raw_error(RAW("{\"ppcc\": 1,\n  \"devices\": 4,\n  \"ops\": [}}"), "line 3, column 11: malformed JSON");
  expect_raw_error(RAW("{\"ppcc\": 1} x"), "line 1, column 13: unexpected 'x' after the end of the JSON value");
  expect_raw_error(RAW("{\"ppcc\": 1}{}"), "after the end of the JSON value");
  expect_raw_error(RAW("{\"ppcc\": 1, \"devices\": 4"), "line 1, column 25: unexpected end of input (truncated file?)");
  expect_raw_error(RAW("{\"ppcc\": 1,\0 \"devices\": 4}"), "line 1, column 12: the file contains a NUL byte");
  expect_raw_error(RAW("{\"na\\u0000me\": 1}"), "escaped NUL");
  expect_raw_error(RAW("\"just a string\""), "expected a JSON object, got a string");
  expect_raw_error(RAW("null"), "expected a JSON object, got null");
}
END_TEST

START_TEST(test_nesting_limit) {
  enum { DEEP = 100000 };
  char *text = malloc(2 * DEEP + 1);
  for (int i = 0; i < DEEP; i++) text[i] = '[';
  for (int i = 0; i < DEEP; i++) text[DEEP + i] = ']';
  text[2 * DEEP] = 0;
  expect_raw_error(text, 2 * DEEP, "JSON nesting is deeper than 64 levels");
  free(text);
  /* Brackets inside strings do not count. */
  char str[256];
  snprintf(str, sizeof str, "{\"ppcc\": 1, \"devices\": 1, \"name\": \"%s\", \"ops\": [], \"outputs\": [\"x\"]}",
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
  expect_raw_error(str, strlen(str), "outputs[0]: 'x' is not defined");
  /* 64 levels are fine (the top-level object is level 1). */
  char ok[512];
  int n = snprintf(ok, sizeof ok, "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": "
                                  "\"f32\", \"shape\": []}], \"ops\": [], \"outputs\": [\"x\"], \"z\": ");
  for (int i = 0; i < 63; i++) ok[n++] = '[';
  for (int i = 0; i < 63; i++) ok[n++] = ']';
  ok[n++] = '}';
  ok[n] = 0;
  expect_raw_error(ok, (size_t)n, "unknown key 'z'"); /* parsed, then rejected by key */
}
END_TEST

/* Every prefix of a valid model must fail cleanly (no crash, no leak). */
START_TEST(test_every_truncation_fails_cleanly) {
  const char *full = json_of(HEAD W_PARAM X_IN
                             "'ops': [{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
                             " {'op': 'transfer', 'in': ['h'], 'out': ['t'], 'attrs': {'devices': [1]}}],"
                             " 'outputs': ['t']}");
  char *copy = strdup(full);
  size_t n = strlen(copy);
  for (size_t len = 0; len < n; len++) {
    ppcc_diag d;
    ppcc_diag_init(&d, "t.json", NULL);
    ppcc_graph *g = ppcc_load_model_string(copy, len, &d);
    ck_assert_msg(g == NULL, "prefix of %zu bytes loaded", len);
    ck_assert_int_eq(d.errors, 1);
  }
  ppcc_diag d;
  ppcc_diag_init(&d, "t.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(copy, n, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_graph_free(g);
  free(copy);
}
END_TEST

/* ---------------- scale ---------------- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

START_TEST(test_large_model_loads_fast) {
  enum { N_OPS = 100000 };
  size_t cap = (size_t)N_OPS * 64 + 1024, off = 0;
  char *text = malloc(cap);
  off += (size_t)snprintf(text + off, cap - off,
                          "{\"ppcc\": 1, \"devices\": 2, \"inputs\": [{\"name\": \"v0\", \"dtype\": \"f32\","
                          " \"shape\": [4, 4]}], \"ops\": [");
  for (int i = 0; i < N_OPS; i++)
    off += (size_t)snprintf(text + off, cap - off, "%s{\"op\": \"neg\", \"in\": [\"v%d\"], \"out\": [\"v%d\"]}",
                            i ? ", " : "", i, i + 1);
  off += (size_t)snprintf(text + off, cap - off, "], \"outputs\": [\"v%d\"]}", N_OPS);
  ppcc_diag d;
  ppcc_diag_init(&d, "big.json", NULL);
  double t0 = now_seconds();
  ppcc_graph *g = ppcc_load_model_string(text, off, &d);
  double elapsed = now_seconds() - t0;
  ck_assert_msg(g != NULL, "%s", d.first);
  ck_assert_int_eq(g->n_ops, N_OPS);
  ck_assert_int_eq(g->n_values, N_OPS + 1);
  /* Timing is for bench/ (the machines are noisy): printed, not asserted. */
  fprintf(stderr, "loaded 100k ops in %.3f s\n", elapsed);
  ppcc_graph_free(g);

  /* Use-before-definition at the very end stays linear too. */
  memcpy(strstr(text, "\"in\": [\"v0\"]"), "\"in\": [\"v9\"]", 12);
  ppcc_diag_init(&d, "big.json", NULL);
  ck_assert_ptr_null(ppcc_load_model_string(text, off, &d));
  ck_assert_ptr_nonnull(strstr(d.first, "cycle: 'v9' is used by ops[0] before its definition by ops[8]"));
  free(text);
}
END_TEST

/* The loader has a fast path (top level split by a scanner, big arrays
 * parsed element by element) that gives up on any text it is not sure of;
 * the full parse then runs. Both must build the same graph. */
static void expect_same_graph(const ppcc_graph *a, const ppcc_graph *b) {
  ck_assert_str_eq(a->name, b->name);
  ck_assert_int_eq(a->n_devices, b->n_devices);
  ck_assert_int_eq(a->n_values, b->n_values);
  ck_assert_int_eq(a->n_ops, b->n_ops);
  ck_assert_int_eq(a->n_outputs, b->n_outputs);
  for (int i = 0; i < a->n_values; i++) {
    const ppcc_value *x = &a->values[i], *y = &b->values[i];
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->kind, y->kind);
    ck_assert_int_eq(x->dtype, y->dtype);
    ck_assert_int_eq(x->rank, y->rank);
    for (int k = 0; k < x->rank; k++) ck_assert_int_eq(x->shape[k], y->shape[k]);
    ck_assert_int_eq(x->layout.kind, y->layout.kind);
    ck_assert_int_eq(x->layout.dim, y->layout.dim);
    ck_assert_int_eq(x->layout.count, y->layout.count);
    ck_assert_int_eq(x->devices == NULL, y->devices == NULL); /* results: placed by the passes */
    for (int k = 0; x->devices && k < x->layout.count; k++) ck_assert_int_eq(x->devices[k], y->devices[k]);
    ck_assert_int_eq(x->pinned, y->pinned);
  }
  for (int i = 0; i < a->n_ops; i++) {
    const ppcc_op *x = &a->ops[i], *y = &b->ops[i];
    ck_assert_ptr_eq(x->info, y->info);
    ck_assert_int_eq(x->n_in, y->n_in);
    ck_assert_int_eq(x->n_attrs, y->n_attrs);
    for (int k = 0; k < x->n_in; k++) ck_assert_int_eq(x->in[k], y->in[k]);
    for (int k = 0; k < x->n_attrs; k++) ck_assert_int_eq(x->attrs[k].i, y->attrs[k].i);
  }
}

START_TEST(test_fast_and_full_parse_agree) {
  static const char *const plain = "{'ppcc': 1, 'name': 'm', 'devices': 2,"
                                   " 'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4, 6],"
                                   "  'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [1, 0]}],"
                                   " 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [3, 4]}],"
                                   " 'ops': [{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
                                   "         {'op': 'softmax', 'in': ['h'], 'out': ['y'], 'attrs': {'dim': -1}}],"
                                   " 'outputs': ['y']}";
  /* What cJSON accepts and the fast path's scanner does not take: a form
   * feed as white space, an escaped top-level key, a number with '+'. */
  static const char *const odd[] = {
      "{'ppcc': 1,\f'name': 'm', 'devices': 2,"
      " 'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4, 6],"
      "  'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [1, 0]}],\f"
      " 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [3, 4]}],"
      " 'ops': [{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},\f"
      "         {'op': 'softmax', 'in': ['h'], 'out': ['y'], 'attrs': {'dim': -1}}],"
      " 'outputs': ['y']}",
      "{'ppcc': 1, 'n\\u0061me': 'm', 'devices': 2,"
      " 'params': [{'name': 'w', 'dtype': 'f32', 'shape': [4, 6],"
      "  'shard': {'kind': 'split', 'dim': 1, 'count': 2}, 'devices': [1, 0]}],"
      " 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [3, 4]}],"
      " 'ops': [{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
      "         {'op': 'softmax', 'in': ['h'], 'out': ['y'], 'attrs': {'dim': -1}}],"
      " 'outputs': ['y']}",
  };
  ppcc_diag d;
  ppcc_graph *want = load(plain, &d);
  ck_assert_msg(want != NULL, "%s", d.first);
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
    ppcc_graph *got = load(odd[i], &d);
    ck_assert_msg(got != NULL, "case %zu: %s", i, d.first);
    ck_assert_int_eq(d.errors, 0);
    expect_same_graph(want, got);
    ppcc_graph_free(got);
  }
  ppcc_graph_free(want);
  /* An error inside a big array is reported once, by the full parse. */
  expect_error("{'ppcc': 1, 'devices': 2, 'inputs': [{'name': 'x', 'dtype': 'f32', 'shape': [3, 4]}],"
               " 'ops': [{'op': 'neg', 'in': ['x'], 'out': ['y']}, {'op': 'neg', 'in': ['z'], 'out': ['q']}],"
               " 'outputs': ['y']}",
               "ops[1].in[0]: 'z' is not defined (op 'neg')");
}
END_TEST

/* ---------------- files and io.c ---------------- */

static char *tmp_dir;

static void make_tmp_dir(void) { tmp_dir = t_make_temp_dir("test_frontend"); }

static void remove_tmp_dir(void) {
  t_remove_tree(tmp_dir);
  free(tmp_dir);
  tmp_dir = NULL;
}

static int count_dir_entries(void) { return t_count_entries(tmp_dir); }

/* Reads back through io.c, the module under test here. */
static char *read_text(const char *path) {
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  size_t len;
  return ppcc_read_file(path, &len, &d);
}

START_TEST(test_outfile_abort_keeps_target) {
  make_tmp_dir();
  char target[512];
  snprintf(target, sizeof target, "%s/report.json", tmp_dir);
  ppcc_diag d;
  ppcc_diag_init(&d, "t", NULL);
  ppcc_outfile f;

  /* No target yet: abort leaves nothing behind. */
  ck_assert_int_eq(ppcc_outfile_open(&f, target, &d), PPCC_OK);
  fputs("partial", f.fp);
  ck_assert_int_eq(count_dir_entries(), 1); /* the temp file */
  ppcc_outfile_abort(&f);
  ck_assert_int_eq(count_dir_entries(), 0);

  /* Existing target: abort keeps it as it was. */
  t_write_text(target, "old");
  ck_assert_int_eq(ppcc_outfile_open(&f, target, &d), PPCC_OK);
  fputs("new but aborted", f.fp);
  ppcc_outfile_abort(&f);
  char *text = read_text(target);
  ck_assert_str_eq(text, "old");
  free(text);
  ck_assert_int_eq(count_dir_entries(), 1);
  remove_tmp_dir();
}
END_TEST

START_TEST(test_outfile_commit_replaces) {
  make_tmp_dir();
  char target[512];
  snprintf(target, sizeof target, "%s/out.mlir", tmp_dir);
  t_write_text(target, "old contents");
  ppcc_diag d;
  ppcc_diag_init(&d, "t", NULL);
  ppcc_outfile f;
  ck_assert_int_eq(ppcc_outfile_open(&f, target, &d), PPCC_OK);
  ck_assert_ptr_nonnull(f.tmp_path);
  ck_assert_ptr_nonnull(strstr(f.tmp_path, "/.out.mlir."));
  fputs("new", f.fp);
  /* Until commit the target is untouched. */
  char *text = read_text(target);
  ck_assert_str_eq(text, "old contents");
  free(text);
  ck_assert_int_eq(ppcc_outfile_commit(&f, &d), PPCC_OK);
  text = read_text(target);
  ck_assert_str_eq(text, "new");
  free(text);
  ck_assert_int_eq(count_dir_entries(), 1);
  struct stat st;
  ck_assert_int_eq(stat(target, &st), 0);
  ck_assert_msg((st.st_mode & 0044) != 0 || (st.st_mode & 0600) == 0600, "mode %o", st.st_mode);
  remove_tmp_dir();
}
END_TEST

START_TEST(test_outfile_errors) {
  ppcc_diag d;
  ppcc_diag_init(&d, "t", NULL);
  ppcc_outfile f;
  ck_assert_int_eq(ppcc_outfile_open(&f, "/nonexistent-dir/x/out.json", &d), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(d.first, "cannot create '/nonexistent-dir/x/out.json': No such file"));
  ck_assert_ptr_null(f.fp);
  ppcc_outfile_abort(&f); /* harmless after a failed open */

  ppcc_diag_init(&d, "t", NULL);
  ck_assert_int_eq(ppcc_outfile_open(&f, "-", &d), PPCC_OK);
  ck_assert_ptr_eq(f.fp, stdout);
  ck_assert_ptr_null(f.tmp_path);
  ck_assert_int_eq(ppcc_outfile_commit(&f, &d), PPCC_OK);
}
END_TEST

/* Every diagnostic goes through one escaping function: a name holding a
 * terminal escape sequence or a newline reaches the terminal escaped, and
 * a path given in the message is not repeated in the prefix. */
START_TEST(test_diag_escapes_names) {
  char *buf = NULL;
  size_t n = 0;
  FILE *sink = open_memstream(&buf, &n);
  ppcc_diag d;
  ppcc_diag_init(&d, "dir\x1b[2Jx", sink);
  ppcc_error(&d, "node '%s': bad", "a\x1b[31mred\nline\x7f");
  ppcc_diag_init(&d, "dir", sink);
  ppcc_warning(&d, "dir/config.json: key '%s' appears twice", "k\a");
  ppcc_diag_detail(&d, "note", "value '%s'", "v\x1b]0;title\x07");
  fclose(sink);
  ck_assert_ptr_null(memchr(buf, 0x1b, n));
  ck_assert_ptr_null(memchr(buf, 0x07, n));
  ck_assert_str_eq(buf, "dir\\x1b[2Jx: error: node 'a\\x1b[31mred\\nline\\x7f': bad\n"
                        "dir/config.json: warning: key 'k\\x07' appears twice\n"
                        "  note: value 'v\\x1b]0;title\\x07'\n");
  free(buf);
  char out[8];
  ck_assert_uint_eq(ppcc_escape_text(out, sizeof out, "ab\x1b\x1b"), 6); /* whole escapes only */
  ck_assert_str_eq(out, "ab\\x1b");
}
END_TEST

START_TEST(test_read_file_errors) {
  ppcc_diag d;
  ppcc_diag_init(&d, "t", NULL);
  size_t len;
  ck_assert_ptr_null(ppcc_read_file("/nonexistent/model.json", &len, &d));
  ck_assert_ptr_nonnull(strstr(d.first, "/nonexistent/model.json: cannot read: No such file or directory"));
  ppcc_diag_init(&d, "t", NULL);
  ck_assert_ptr_null(ppcc_read_file("/tmp", &len, &d));
  ck_assert_ptr_nonnull(strstr(d.first, "Is a directory"));
  ppcc_diag_init(&d, "t", NULL);
  ck_assert_ptr_null(ppcc_load_model_file("/nonexistent/model.json", &d));
  ck_assert_int_eq(d.errors, 1);
}
END_TEST

/* A sparse file just over the limit: refused before anything is read. */
START_TEST(test_read_file_size_limit) {
  make_tmp_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/huge.json", tmp_dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(ftruncate(fileno(f), ((off_t)256 << 20) + 1), 0);
  fclose(f);
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  ck_assert_ptr_null(ppcc_load_model_file(path, &d));
  ck_assert_int_eq(d.errors, 1);
  ck_assert_ptr_nonnull(strstr(d.first, "is larger than 256 MiB"));
  remove_tmp_dir();
}
END_TEST

START_TEST(test_load_file_uses_stem_as_name) {
  make_tmp_dir();
  char path[512];
  snprintf(path, sizeof path, "%s/tiny_ffn.json", tmp_dir);
  t_write_text(path, json_of(HEAD X_IN NEG_OP));
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  ppcc_graph *g = ppcc_load_model_file(path, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ck_assert_str_eq(g->name, "tiny_ffn");
  ck_assert_str_eq(g->source_file, path);
  ppcc_graph_free(g);
  remove_tmp_dir();
}
END_TEST

int main(void) {
  Suite *s = suite_create("frontend");
  TCase *valid = t_add_tcase(s, "valid", 0);
  tcase_add_test(valid, test_defaults);
  tcase_add_test(valid, test_diag_escapes_names);
  tcase_add_test(valid, test_unsharded_default_and_explicit_placement);
  tcase_add_test(valid, test_attrs);
  tcase_add_test(valid, test_fast_and_full_parse_agree);
  TCase *errors = t_add_tcase(s, "errors", 0);
  tcase_add_test(errors, test_structure_errors);
  tcase_add_test(errors, test_decl_errors);
  tcase_add_test(errors, test_op_errors);
  tcase_add_test(errors, test_name_limits);
  tcase_add_test(errors, test_name_hidden_characters);
  tcase_add_test(errors, test_number_out_of_range);
  tcase_add_test(errors, test_malformed_json);
  tcase_add_test(errors, test_nesting_limit);
  tcase_add_test(errors, test_every_truncation_fails_cleanly);
  TCase *scale = t_add_tcase(s, "scale", 60);
  tcase_add_test(scale, test_large_model_loads_fast);
  TCase *io = t_add_tcase(s, "io", 0);
  tcase_add_test(io, test_outfile_abort_keeps_target);
  tcase_add_test(io, test_outfile_commit_replaces);
  tcase_add_test(io, test_outfile_errors);
  tcase_add_test(io, test_read_file_errors);
  tcase_add_test(io, test_read_file_size_limit);
  tcase_add_test(io, test_load_file_uses_stem_as_name);
  return t_run_suite(s);
}
