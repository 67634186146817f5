/* Tests of the MLIR emitter (DESIGN §5): every op's lowering verifies
 * in-process and with mlir-opt-19 --irdl-file (the shipped ppcc dialect),
 * every shipped model emits, and bad cases are clear errors with nothing
 * written. Models are written with single quotes for readability. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../tools/pipeline_model.h"
#include "ppcc/emit.h"
#include "ppcc/frontend.h"
#include "ppcc/ops.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"
#include "emit_support.h"

/* src/emit/lower/emit_internal.h: whether the annotated form is printed without
 * MLIR (emit_direct.c). */
bool emit_direct_supported(const ppcc_graph *g);

static ppcc_diag diag;

static ppcc_graph *model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs) {
  ppcc_graph *g = t_model(devices, params, inputs, ops, outputs, &diag);
  ck_assert_msg(g != NULL, "model does not compile: %s", diag.first);
  return g;
}

static char *emit(const ppcc_graph *g, ppcc_emit_kind kind, ppcc_status *st) { return t_emit(g, kind, st, &diag); }

/* The annotated form through an MLIR module, whichever way ppcc_emit
 * takes. */
static char *emit_via_mlir(const ppcc_graph *g) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ppcc_diag_init(&diag, "test.json", NULL);
  ppcc_status st = ppcc_emit_via_mlir(g, PPCC_EMIT_MLIR, f, &diag);
  fclose(f);
  ck_assert_msg(st == PPCC_OK, "emit via MLIR failed: %s", diag.first);
  return text;
}

/* ppcc_emit's annotated text is the MLIR path's, byte for byte. */
static void expect_same_as_mlir_path(const ppcc_graph *g, const char *text) {
  char *want = emit_via_mlir(g);
  if (strcmp(text, want) != 0) {
    size_t i = 0;
    while (text[i] && text[i] == want[i]) i++;
    size_t from = i > 200 ? i - 200 : 0;
    ck_abort_msg("annotated text differs from the MLIR path's at byte %zu:\n--- got\n%.400s\n--- MLIR\n%.400s", i,
                 text + from, want + from);
  }
  free(want);
}

/* Runs mlir-opt-19 with the shipped dialect on the text. */
static void expect_mlir_opt_verifies(const char *text) {
  char options[4096];
  snprintf(options, sizeof options, "--irdl-file=%s", t_src_path("src/emit/annotated/ppcc.irdl.mlir"));
  t_expect_mlir_opt_verifies(text, options);
}

/* Emits both forms, checks the annotated one with mlir-opt and that it
 * contains every `want` string. */
static void expect_emits(ppcc_graph *g, const char *const *want) {
  ppcc_status st;
  char *text = emit(g, PPCC_EMIT_MLIR, &st);
  ck_assert_msg(text, "emit failed: %s", diag.first);
  for (; want && *want; want++) ck_assert_msg(strstr(text, *want), "no '%s' in:\n%s", *want, text);
  expect_same_as_mlir_path(g, text);
  expect_mlir_opt_verifies(text);
  free(text);
  text = emit(g, PPCC_EMIT_IREE, &st);
  ck_assert_msg(text, "IREE emit failed: %s", diag.first);
  ck_assert_msg(!strstr(text, "ppcc.transfer") && !strstr(text, "\"ppcc."), "ppcc ops in IREE form:\n%s", text);
  free(text);
  ppcc_graph_free(g);
}

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(shipped_models_emit_and_verify) {
  const char *models[] = {"tp_ffn", "ppffn", "pp_chain", "explicit_transfer"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "testdata/models/%s.json", models[i]);
    ppcc_graph *g = t_compile_file(rel, &diag);
    ck_assert_msg(g, "%s: %s", rel, diag.first);
    expect_emits(g, W("func.func @main", "ppcc.device"));
  }
}
END_TEST

/* Pipeline-FFN models (tools/pipeline_model.h: matmul, gelu, all_reduce,
 * transfers, unshard) take the direct printer; its text must be the MLIR
 * path's for every shape of pipeline. */
START_TEST(direct_text_matches_mlir_on_pipelines) {
  static const long shapes[][3] = {{1, 1, 1}, {3, 1, 2}, {5, 2, 2}, {7, 2, 3}, {6, 4, 3}, {4, 3, 4}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    pipeline_config cfg = pipeline_defaults;
    cfg.blocks = shapes[i][0];
    cfg.tp = shapes[i][1];
    cfg.pp = shapes[i][2];
    cfg.hidden = 8;
    cfg.ffn = 24;
    cfg.batch = 2;
    ck_assert_ptr_null(pipeline_config_error(&cfg));
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    pipeline_write_model(f, &cfg);
    fclose(f);
    ppcc_diag_init(&diag, "pipeline.json", NULL);
    ppcc_graph *g = ppcc_load_model_string(json, len, &diag);
    ck_assert_msg(g && ppcc_run_passes(g, NULL, NULL, &diag) == PPCC_OK, "pipeline %zu: %s", i, diag.first);
    ck_assert_msg(emit_direct_supported(g), "pipeline %zu does not take the direct printer", i);
    ppcc_status st;
    char *text = emit(g, PPCC_EMIT_MLIR, &st);
    ck_assert_msg(text, "emit failed: %s", diag.first);
    expect_same_as_mlir_path(g, text);
    if (i == 3) expect_mlir_opt_verifies(text);
    free(text);
    free(json);
    ppcc_graph_free(g);
  }
}
END_TEST

/* Names MLIR prints escaped (non-ASCII bytes as \XX) come out the same
 * from the direct printer. */
START_TEST(direct_text_escapes_names_like_mlir) {
  ppcc_graph *g = model(2, "{'name': 'w\xc3\xa9', 'dtype': 'f32', 'shape': [4, 6], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [3, 4], 'shard': {'kind': 'replicated', 'count': 2}}",
                        "{'op': 'matmul', 'in': ['x', 'w\xc3\xa9'], 'out': ['h\xc3\xa9']},"
                        "{'op': 'gelu', 'in': ['h\xc3\xa9'], 'out': ['a']},"
                        "{'op': 'all_gather', 'in': ['a'], 'out': ['y']}",
                        "'y'");
  ck_assert(emit_direct_supported(g));
  expect_emits(g, W("loc(\"h\\C3\\A9\")", "ppcc.name = \"w\\C3\\A9\""));
}
END_TEST

START_TEST(tensor_parallel_ffn_annotations) {
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &diag);
  ck_assert(g);
  expect_emits(g, W("module @tp_ffn", "linalg.matmul", "math.erf", "\"ppcc.all_reduce\"", "devices = array<i64: 0, 1>",
                    "ppcc.name = \"ffn_up.weight\"", "ppcc.pinned", "ppcc.shard = 1 : i64", "loc(\"h\")",
                    "tensor<64x128xf32>"));
}
END_TEST

START_TEST(transfers_between_stages) {
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &diag);
  ck_assert(g);
  ppcc_status st;
  char *iree = emit(g, PPCC_EMIT_IREE, &st);
  ck_assert(iree);
  ck_assert_msg(strstr(iree, "flow.tensor.transfer %") && strstr(iree, " to #hal.device.promise<@__device_1>"), "%s", iree);
  ck_assert_msg(strstr(iree, "iree.abi.affinity = #hal.device.promise<@__device_0>"), "%s", iree);
  free(iree);
  expect_emits(g, W("\"ppcc.transfer\"", "source = 0 : i64, target = 1 : i64"));
}
END_TEST

/* IREE form: params are not arguments but parameter-backed globals, one per
 * shard typed with the shard's shape, resolved at run time from the archive
 * entries sharktank names NAME.shard.K; nothing is loaded whole and sliced. */
START_TEST(iree_params_are_named_parameter_globals) {
  ppcc_graph *g = model(4,
                        "{'name': 'w', 'dtype': 'f32', 'shape': [8, 6], 'shard': {'kind': 'split', 'dim': 1, 'count': 2},"
                        " 'devices': [2, 3]},"
                        "{'name': 'b', 'dtype': 'f32', 'shape': [4, 6], 'shard': {'kind': 'unreduced', 'count': 2},"
                        " 'devices': [2, 3]},"
                        "{'name': 'solo', 'dtype': 'f32', 'shape': [4, 6], 'devices': [1]},"
                        "{'name': 'rep', 'dtype': 'f32', 'shape': [4, 6], 'shard': {'kind': 'replicated', 'count': 2},"
                        " 'devices': [2, 3]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'replicated', 'count': 2},"
                        " 'devices': [2, 3]}",
                        "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
                        "{'op': 'all_reduce', 'in': ['b'], 'out': ['br']},"
                        "{'op': 'all_gather', 'in': ['h'], 'out': ['hg']},"
                        "{'op': 'add', 'in': ['hg', 'br'], 'out': ['y0']},"
                        "{'op': 'add', 'in': ['y0', 'rep'], 'out': ['y']},"
                        "{'op': 'unshard', 'in': ['y'], 'out': ['y1'], 'attrs': {'device': 1}},"
                        "{'op': 'add', 'in': ['y1', 'solo'], 'out': ['z']}",
                        "'z'");
  ppcc_status st;
  char *iree = emit(g, PPCC_EMIT_IREE, &st);
  ck_assert_msg(iree, "IREE emit failed: %s", diag.first);
  const char *want[] = {
      "util.global private @\"w.shard.0\" {stream.affinity = #hal.device.promise<@__device_2>} = "
      "#flow.parameter.named<\"model\"::\"w.shard.0\"> : tensor<8x3xf32> loc(\"w\")",
      "util.global private @\"w.shard.1\" {stream.affinity = #hal.device.promise<@__device_3>} = "
      "#flow.parameter.named<\"model\"::\"w.shard.1\"> : tensor<8x3xf32> loc(\"w\")",
      /* an unreduced param: one entry per shard, as sharktank's UnreducedTensor */
      "#flow.parameter.named<\"model\"::\"b.shard.1\"> : tensor<4x6xf32>",
      /* a replicated param: every replica reads the one entry NAME.shard.0,
       * as sharktank's ReplicatedTensor stores it */
      "util.global private @\"rep.shard.1\" {stream.affinity = #hal.device.promise<@__device_3>} = "
      "#flow.parameter.named<\"model\"::\"rep.shard.0\"> : tensor<4x6xf32>",
      /* a param on one device keeps its name */
      "util.global private @\"solo\" {stream.affinity = #hal.device.promise<@__device_1>} = "
      "#flow.parameter.named<\"model\"::\"solo\"> : tensor<4x6xf32>",
      "= util.global.load @w.shard.1 : tensor<8x3xf32>",
      "= util.global.load @b.shard.1 : tensor<4x6xf32>",
      "= util.global.load @solo : tensor<4x6xf32>",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(iree, want[i]), "no '%s' in:\n%s", want[i], iree);
  /* the only function arguments are the input's two shards */
  ck_assert_msg(strstr(iree, "func.func @main(%arg0: tensor<4x8xf32>") && !strstr(iree, "%arg2"), "%s", iree);
  /* no param is sliced: the only slices are of the replicated input */
  ck_assert_msg(!strstr(iree, "tensor<8x6xf32>"), "%s", iree);
  /* every IREE op is in its custom form */
  ck_assert_msg(!strstr(iree, "\"util.") && !strstr(iree, "\"flow."), "%s", iree);
  free(iree);
  ppcc_graph_free(g);
}
END_TEST

/* Bytes of an MLIR tensor type "tensor<AxBxELEM>" starting at t; -1 if
 * it is not one. */
static int64_t tensor_type_bytes(const char *t) {
  static const struct { const char *name; int bytes; } elems[] = {
      {"f32>", 4}, {"f16>", 2}, {"bf16>", 2}, {"i64>", 8}, {"i32>", 4}, {"i8>", 1}, {"i1>", 1}};
  if (strncmp(t, "tensor<", 7) != 0) return -1;
  const char *p = t + 7;
  int64_t n = 1;
  while (*p >= '0' && *p <= '9') {
    char *end;
    n *= strtoll(p, &end, 10);
    if (*end != 'x') return -1;
    p = end + 1;
  }
  for (size_t i = 0; i < sizeof elems / sizeof *elems; i++)
    if (strncmp(p, elems[i].name, strlen(elems[i].name)) == 0) return n * elems[i].bytes;
  return -1;
}

/* DESIGN §5 for every shipped model: the IREE form's parameter globals,
 * summed per stream.affinity device, hold exactly the report's param_bytes
 * of that device (each device holds its shards, not whole tensors), and no
 * loaded global is sliced. */
static void check_iree_param_bytes(const char *rel) {
  ppcc_graph *g = t_compile_file(rel, &diag);
  ck_assert_msg(g, "%s: %s", rel, diag.first);
  ppcc_status st;
  char *iree = emit(g, PPCC_EMIT_IREE, &st);
  ck_assert_msg(iree, "%s: IREE emit failed: %s", rel, diag.first);
  int64_t *bytes = calloc((size_t)g->n_devices, sizeof *bytes);
  char loads[512][16];
  int n_loads = 0, n_globals = 0;
  for (char *line = strtok(iree, "\n"); line; line = strtok(NULL, "\n")) {
    const char *dev = strstr(line, "util.global private");
    if (dev && (dev = strstr(dev, "#hal.device.promise<@__device_"))) {
      int d = atoi(dev + strlen("#hal.device.promise<@__device_"));
      const char *type = strstr(line, "> : tensor<");
      ck_assert_msg(type && d >= 0 && d < g->n_devices, "%s: bad global: %s", rel, line);
      int64_t b = tensor_type_bytes(type + 4);
      ck_assert_msg(b >= 0, "%s: bad global type: %s", rel, line);
      bytes[d] += b;
      n_globals++;
    }
    const char *load = strstr(line, " = util.global.load");
    const char *name = strchr(line, '%');
    if (load && name && name < load && load - name < 16 && n_loads < 512) {
      snprintf(loads[n_loads], sizeof loads[n_loads], "%.*s[", (int)(load - name), name);
      n_loads++;
    }
    const char *slice = strstr(line, "tensor.extract_slice ");
    for (int k = 0; slice && k < n_loads; k++)
      ck_assert_msg(strncmp(slice + 21, loads[k], strlen(loads[k])) != 0, "%s: a parameter is sliced: %s", rel,
                    line);
  }
  ck_assert_msg(n_globals > 0, "%s: no parameter globals", rel);
  ppcc_device_summary *rows = ppcc_device_summaries(g);
  for (int d = 0; d < g->n_devices; d++)
    ck_assert_msg(bytes[d] == rows[d].param_bytes, "%s: device %d: globals hold %lld bytes, the report %lld", rel, d,
                  (long long)bytes[d], (long long)rows[d].param_bytes);
  free(rows);
  free(bytes);
  free(iree);
  ppcc_graph_free(g);
}

START_TEST(iree_param_bytes_per_device_match_the_report) {
  const char *dirs[] = {"testdata/models", "testdata/iree", "testdata/sharded"};
  int checked = 0;
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    DIR *dir = opendir(t_src_path(dirs[i]));
    ck_assert_msg(dir, "cannot open %s", dirs[i]);
    for (struct dirent *e; (e = readdir(dir));) {
      size_t n = strlen(e->d_name);
      if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
      char rel[512];
      snprintf(rel, sizeof rel, "%s/%s", dirs[i], e->d_name);
      check_iree_param_bytes(rel);
      checked++;
    }
    closedir(dir);
  }
  ck_assert_int_ge(checked, 10);
}
END_TEST

START_TEST(linear_with_bias_and_elementwise) {
  expect_emits(model(2,
                     "{'name': 'w', 'dtype': 'f32', 'shape': [16, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}},"
                     "{'name': 'b', 'dtype': 'f32', 'shape': [16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                     "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'replicated', 'count': 2}}",
                     "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']},"
                     "{'op': 'silu', 'in': ['y'], 'out': ['s']},"
                     "{'op': 'sigmoid', 'in': ['s'], 'out': ['t']},"
                     "{'op': 'tanh', 'in': ['t'], 'out': ['u']},"
                     "{'op': 'relu', 'in': ['u'], 'out': ['r']},"
                     "{'op': 'exp', 'in': ['r'], 'out': ['e']},"
                     "{'op': 'neg', 'in': ['e'], 'out': ['n']},"
                     "{'op': 'scale', 'in': ['n'], 'out': ['m'], 'attrs': {'value': 0.5}},"
                     "{'op': 'mul', 'in': ['m', 'y'], 'out': ['p']},"
                     "{'op': 'sub', 'in': ['p', 'y'], 'out': ['q']},"
                     "{'op': 'div', 'in': ['q', 'y'], 'out': ['v']},"
                     "{'op': 'maximum', 'in': ['v', 'y'], 'out': ['z']},"
                     "{'op': 'all_gather', 'in': ['z'], 'out': ['out']}",
                     "'out'"),
               W("linalg.matmul_transpose_b", "math.tanh", "arith.maximumf", "arith.divf", "\"ppcc.all_gather\"",
                 "dim = 1 : i64"));
}
END_TEST

START_TEST(replicated_operand_is_sliced_locally) {
  expect_emits(model(2, "",
                     "{'name': 'a', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}},"
                     "{'name': 'b', 'dtype': 'f32', 'shape': [8], 'shard': {'kind': 'replicated', 'count': 2}}",
                     "{'op': 'add', 'in': ['a', 'b'], 'out': ['c']}", "'c'"),
               W("tensor.extract_slice", "[4] [4] [1]", "arith.addf"));
}
END_TEST

START_TEST(batched_matmul_transpose_reshape) {
  expect_emits(model(2, "{'name': 'w', 'dtype': 'f32', 'shape': [8, 6], 'shard': {'kind': 'replicated', 'count': 2}}",
                     "{'name': 'x', 'dtype': 'f32', 'shape': [4, 3, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                     "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
                     "{'op': 'transpose', 'in': ['h'], 'out': ['t']},"
                     "{'op': 'permute', 'in': ['t'], 'out': ['p'], 'attrs': {'perm': [0, 2, 1]}},"
                     "{'op': 'reshape', 'in': ['p'], 'out': ['r'], 'attrs': {'shape': [4, 18]}}",
                     "'r'"),
               W("linalg.generic", "\"reduction\"", "tensor.reshape", "tensor<2x18xf32>"));
}
END_TEST

START_TEST(collectives_create_and_unshard) {
  expect_emits(model(4, "",
                     "{'name': 'x', 'dtype': 'f32', 'shape': [8, 4]}",
                     "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'count': 2, 'devices': [1, 2]}},"
                     "{'op': 'reshard_split', 'in': ['x'], 'out': ['s'], 'attrs': {'dim': 0, 'count': 2}},"
                     "{'op': 'unshard', 'in': ['s'], 'out': ['u'], 'attrs': {'device': 3}},"
                     "{'op': 'unshard', 'in': ['r'], 'out': ['v']}",
                     "'u', 'v'"),
               W("\"ppcc.replicate\"", "target_devices = array<i64: 1, 2>", "\"ppcc.reshard_split\"", "\"ppcc.unshard\"",
                 "mode = \"concat\"", "mode = \"copy\""));
}
END_TEST

START_TEST(reduce_scatter_and_index_copy) {
  expect_emits(model(2,
                     "{'name': 'cache', 'dtype': 'f32', 'shape': [16, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}},"
                     "{'name': 'w', 'dtype': 'f32', 'shape': [8, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                     "{'name': 'x', 'dtype': 'f32', 'shape': [2, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}},"
                     "{'name': 'pos', 'dtype': 'i64', 'shape': [2], 'shard': {'kind': 'replicated', 'count': 2}}",
                     "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['partial']},"
                     "{'op': 'reduce_scatter', 'in': ['partial'], 'out': ['k'], 'attrs': {'dim': 1}},"
                     "{'op': 'index_copy', 'in': ['cache', 'pos', 'k'], 'out': ['cache2'], 'attrs': {'dim': 0}}",
                     "'cache2'"),
               W("\"ppcc.reduce_scatter\"", "scf.for", "tensor.insert_slice", "arith.index_cast"));
}
END_TEST

START_TEST(nonlinear_op_on_integers_is_an_error) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'i32', 'shape': [4]}",
                        "{'op': 'gelu', 'in': ['x'], 'out': ['y']}", "'y'");
  ppcc_status st;
  ck_assert_ptr_null(emit(g, PPCC_EMIT_MLIR, &st));
  ck_assert_int_eq(st, PPCC_ERR_USER);
  ck_assert_msg(strstr(diag.first, "ops[0] 'gelu'") && strstr(diag.first, "no MLIR lowering for dtype i32"), "%s",
                diag.first);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(op_without_lowering_is_an_error) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'f32', 'shape': [4]}",
                        "{'op': 'exp', 'in': ['x'], 'out': ['y']}", "'y'");
  /* Point the op at a row past the table: no lowering exists for it. */
  ppcc_op_info fake = *g->ops[0].info;
  fake.id = PPCC_OP_COUNT;
  fake.name = "mystery";
  g->ops[0].info = &fake;
  ppcc_status st;
  ck_assert_ptr_null(emit(g, PPCC_EMIT_MLIR, &st));
  ck_assert_msg(strstr(diag.first, "op 'mystery' has no MLIR lowering"), "%s", diag.first);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(unknown_dtype_is_an_error) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'f32', 'shape': [4]}",
                        "{'op': 'exp', 'in': ['x'], 'out': ['y']}", "'y'");
  g->values[0].dtype = PPCC_DTYPE_COUNT; /* a dtype added without an MLIR mapping */
  ppcc_status st;
  ck_assert_ptr_null(emit(g, PPCC_EMIT_IREE, &st));
  ck_assert_msg(strstr(diag.first, "value 'x'") && strstr(diag.first, "has no MLIR"), "%s", diag.first);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit_mlir");
  TCase *tc = tcase_create("emit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, shipped_models_emit_and_verify);
  tcase_add_test(tc, direct_text_matches_mlir_on_pipelines);
  tcase_add_test(tc, direct_text_escapes_names_like_mlir);
  tcase_add_test(tc, tensor_parallel_ffn_annotations);
  tcase_add_test(tc, transfers_between_stages);
  tcase_add_test(tc, iree_params_are_named_parameter_globals);
  tcase_add_test(tc, iree_param_bytes_per_device_match_the_report);
  tcase_add_test(tc, linear_with_bias_and_elementwise);
  tcase_add_test(tc, replicated_operand_is_sliced_locally);
  tcase_add_test(tc, batched_matmul_transpose_reshape);
  tcase_add_test(tc, collectives_create_and_unshard);
  tcase_add_test(tc, reduce_scatter_and_index_copy);
  tcase_add_test(tc, nonlinear_op_on_integers_is_an_error);
  tcase_add_test(tc, op_without_lowering_is_an_error);
  tcase_add_test(tc, unknown_dtype_is_an_error);
  suite_add_tcase(s, tc);
  return t_run_suite(s);
}
