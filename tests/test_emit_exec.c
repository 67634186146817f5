/* Tests of the executable MLIR form and the JIT (DESIGN §5, §7): every
 * shipped model's --emit=mlir-exec module verifies with plain mlir-opt-19
 * (upstream dialects only), and JIT runs of every model and of every
 * collective conversion match the unsharded reference within tolerance.
 * Models are written with single quotes for readability. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/emit.h"
#include "ppcc/jit.h"
#include "ppcc/runtime.h"
#include "emit_support.h"

static ppcc_diag diag;

static ppcc_graph *model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs) {
  ppcc_graph *g = t_model(devices, params, inputs, ops, outputs, &diag);
  ck_assert_msg(g != NULL, "model does not compile: %s", diag.first);
  return g;
}

static char *emit_exec(const ppcc_graph *g, ppcc_status *st) { return t_emit(g, PPCC_EMIT_MLIR_EXEC, st, &diag); }

/* Plain mlir-opt-19: no ppcc dialect, no unregistered ops. */
static void expect_mlir_opt_verifies(const char *text) { t_expect_mlir_opt_verifies(text, ""); }

static void expect_exec_form(const ppcc_graph *g) {
  ppcc_status st;
  char *text = emit_exec(g, &st);
  ck_assert_msg(text, "mlir-exec emit failed: %s", diag.first);
  for (int d = 0; d < g->n_devices; d++) {
    char fn[64];
    snprintf(fn, sizeof fn, "func.func @device_%d(", d);
    ck_assert_msg(strstr(text, fn), "no %s in:\n%s", fn, text);
  }
  ck_assert_msg(!strstr(text, "\"ppcc.") && !strstr(text, "ppcc.device"), "ppcc dialect in the exec form:\n%s", text);
  expect_mlir_opt_verifies(text);
  free(text);
}

/* Runs g with the JIT (twice: the first run records the buffers' sizes
 * and lifetimes on the heap, the second replays planned offsets in the
 * device arena, where a buffer freed too early is overwritten) and with
 * the reference executor on the same random data; every output of both
 * runs must agree within the dtype's tolerance. */
static void expect_jit_matches_reference(const ppcc_graph *g, const ppcc_jit_options *jo) {
  ppcc_run_options ro = {.random_seed = 11, .have_random_seed = true};
  ppcc_run_data data;
  ppcc_diag_init(&diag, "test.json", NULL);
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &diag) == PPCC_OK, "%s", diag.first);
  ppcc_jit *jit = NULL;
  ck_assert_msg(ppcc_jit_compile(g, jo, &jit, NULL, &diag) == PPCC_OK, "JIT: %s", diag.first);
  int n = g->n_outputs;
  ppcc_host_tensor *got = calloc((size_t)n, sizeof *got), *ref = calloc((size_t)n, sizeof *ref);
  ppcc_exec_options sharded = {.threads = 2}, reference = {.reference = true};
  ck_assert_msg(ppcc_execute(g, &data, &reference, ref, NULL, &diag) == PPCC_OK, "reference: %s", diag.first);
  for (int run = 0; run < 2; run++) {
    ck_assert_msg(ppcc_jit_execute(jit, g, &data, &sharded, got, NULL, &diag) == PPCC_OK, "JIT run: %s", diag.first);
    for (int k = 0; k < n; k++) {
      ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
      ck_assert_msg(r.ok, "JIT run %d, output '%s': max abs error %g", run, g->values[g->outputs[k]].name, r.max_abs);
      ppcc_host_tensor_free(&got[k]);
    }
  }
  for (int k = 0; k < n; k++) ppcc_host_tensor_free(&ref[k]);
  free(got);
  free(ref);
  ppcc_jit_free(jit);
  ppcc_run_data_free(&data);
}

static void expect_all(ppcc_graph *g) {
  expect_exec_form(g);
  expect_jit_matches_reference(g, NULL);
  ppcc_graph_free(g);
}

START_TEST(every_shipped_model_verifies_and_matches_reference) {
  DIR *dir = opendir(t_src_path("testdata/models"));
  ck_assert(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char rel[512];
    snprintf(rel, sizeof rel, "testdata/models/%s", e->d_name);
    ppcc_graph *g = t_compile_file(rel, &diag);
    ck_assert_msg(g, "%s: %s", rel, diag.first);
    expect_all(g);
    n++;
  }
  closedir(dir);
  ck_assert_int_ge(n, 4);
}
END_TEST

START_TEST(linalg_matmul_instead_of_openblas) {
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &diag);
  ck_assert(g);
  ppcc_jit_options jo = {.linalg_matmul = true, .opt_level = 1};
  expect_jit_matches_reference(g, &jo);
  ppcc_graph_free(g);
}
END_TEST

/* g's executable form makes both calls and leaves no contraction to
 * linalg loops; the JIT matches the reference with them and with the
 * linalg form (linalg_matmul: an independent check of the runtime's
 * kernels, which the reference executor shares). Frees g. */
static void expect_runtime_calls(ppcc_graph *g, const char *call_a, const char *call_b) {
  ppcc_status st;
  char *text = emit_exec(g, &st);
  ck_assert_msg(text, "%s", diag.first);
  ck_assert_msg(strstr(text, call_a) && strstr(text, call_b), "%s", text);
  ck_assert_msg(!strstr(text, "linalg.generic"), "a contraction left to linalg loops:\n%s", text);
  free(text);
  expect_jit_matches_reference(g, NULL);
  ppcc_jit_options jo = {.linalg_matmul = true, .opt_level = 1};
  expect_jit_matches_reference(g, &jo);
  ppcc_graph_free(g);
}

/* conv (groups, strides, asymmetric pads, dilations; 2-D and 1-D) calls
 * the runtime's kernel; its linalg form (linalg_matmul) is an independent
 * check of that kernel, which the reference executor shares. */
START_TEST(conv_calls_the_runtime_and_its_linalg_form_agrees) {
  ppcc_graph *g = model(1,
                        "{'name': 'w', 'dtype': 'f32', 'shape': [6, 2, 3, 2]},"
                        "{'name': 'w1', 'dtype': 'f32', 'shape': [4, 3, 3]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [2, 4, 7, 6]},"
                        "{'name': 'x1', 'dtype': 'f32', 'shape': [2, 3, 9]}",
                        "{'op': 'conv', 'in': ['x', 'w'], 'out': ['y'], 'attrs': {'group': 2, 'strides': [2, 1],"
                        " 'pads': [1, 0, 1, 1], 'dilations': [1, 2]}},"
                        "{'op': 'conv', 'in': ['x1', 'w1'], 'out': ['y1'], 'attrs': {'strides': [2], 'pads': [1, 2]}}",
                        "'y', 'y1'");
  expect_runtime_calls(g, "ppcc_rt_conv_f32", "ppcc_rt_conv_f32");
}
END_TEST

/* Contractions of any rank reach the runtime's GEMM calls (OpenBLAS):
 * linear on [B,S,H], batched matmul, grouped-query causal attention. The
 * linalg form (linalg_matmul) is an independent check of the runtime's
 * GEMM-based attention kernel, which the reference executor shares. */
START_TEST(contractions_of_any_rank_call_the_runtime) {
  ppcc_graph *g = model(1,
                        "{'name': 'w', 'dtype': 'f32', 'shape': [32, 16]},"
                        "{'name': 'm', 'dtype': 'f32', 'shape': [2, 6, 16, 5]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [2, 6, 16]},"
                        "{'name': 'q', 'dtype': 'f32', 'shape': [2, 4, 6, 8]},"
                        "{'name': 'k', 'dtype': 'f32', 'shape': [2, 2, 9, 8]},"
                        "{'name': 'v', 'dtype': 'f32', 'shape': [2, 2, 9, 4]}",
                        "{'op': 'linear', 'in': ['x', 'w'], 'out': ['y']},"
                        "{'op': 'reshape', 'in': ['x'], 'out': ['x4'], 'attrs': {'shape': [2, 6, 1, 16]}},"
                        "{'op': 'matmul', 'in': ['x4', 'm'], 'out': ['z']},"
                        "{'op': 'attention', 'in': ['q', 'k', 'v'], 'out': ['a'], 'attrs': {'causal': true}}",
                        "'y', 'z', 'a'");
  expect_runtime_calls(g, "call @ppcc_rt_matmul_f32", "call @ppcc_rt_attention_f32");
}
END_TEST

/* seq_major attention (q [B, S, Hq, D], k and v [B, T, Hkv, D], out [B, S,
 * Hq, Dv]: the KV caches read where they lie) calls the runtime, and its
 * linalg form (the affine maps read the operands in place) agrees with
 * the kernel, causal and with positions and a window, grouped-query. */
START_TEST(seq_major_attention_calls_the_runtime_and_its_linalg_form_agrees) {
  ppcc_graph *g = model(1, "",
                        "{'name': 'q', 'dtype': 'f32', 'shape': [2, 6, 4, 8]},"
                        "{'name': 'k', 'dtype': 'f32', 'shape': [2, 9, 2, 8]},"
                        "{'name': 'v', 'dtype': 'f32', 'shape': [2, 9, 2, 4]},"
                        "{'name': 'p', 'dtype': 'i64', 'shape': [2, 6]}",
                        "{'op': 'attention', 'in': ['q', 'k', 'v'], 'out': ['a'], 'attrs': {'causal': true, 'seq_major': true}},"
                        "{'op': 'attention', 'in': ['q', 'k', 'v', 'p'], 'out': ['a2'],"
                        " 'attrs': {'causal': true, 'seq_major': true, 'window': 3}}",
                        "'a', 'a2'");
  ck_assert_int_eq(g->values[ppcc_find_value(g, "a")].shape[1], 6);
  ck_assert_int_eq(g->values[ppcc_find_value(g, "a")].shape[3], 4);
  expect_runtime_calls(g, "call @ppcc_rt_attention_f32", "call @ppcc_rt_attention_positions_i64");
}
END_TEST

/* linear with a bias is one runtime call (GEMM and bias, the bias's rows
 * split among the kernel threads), no linalg loop for the bias, on [B, S,
 * H] and [M, K] inputs; the JIT matches the reference and the linalg form. */
START_TEST(linear_with_bias_is_one_runtime_call) {
  ppcc_graph *g = model(1,
                        "{'name': 'w', 'dtype': 'f32', 'shape': [40, 16]},"
                        "{'name': 'b', 'dtype': 'f32', 'shape': [40]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [2, 6, 16]},"
                        "{'name': 'x2', 'dtype': 'f32', 'shape': [3, 16]}",
                        "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']},"
                        "{'op': 'linear', 'in': ['x2', 'w', 'b'], 'out': ['y2']}",
                        "'y', 'y2'");
  expect_runtime_calls(g, "call @ppcc_rt_linear_f32", "call @ppcc_rt_linear_f32");
}
END_TEST

/* layer_norm (with and without a bias, on [B, S, H] and [M, H]) is the
 * runtime's kernel, no linalg loops; the JIT matches the reference. */
START_TEST(layer_norm_is_a_runtime_call) {
  ppcc_graph *g = model(1,
                        "{'name': 'w', 'dtype': 'f32', 'shape': [24]},"
                        "{'name': 'b', 'dtype': 'f32', 'shape': [24]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [2, 5, 24]},"
                        "{'name': 'x2', 'dtype': 'f32', 'shape': [3, 24]}",
                        "{'op': 'layer_norm', 'in': ['x', 'w', 'b'], 'out': ['y'], 'attrs': {'eps': 0.001}},"
                        "{'op': 'layer_norm', 'in': ['x2', 'w'], 'out': ['y2']}",
                        "'y', 'y2'");
  expect_runtime_calls(g, "call @ppcc_rt_layer_norm_f32", "call @ppcc_rt_layer_norm_f32");
}
END_TEST

/* Attention with the importers' positions operand (i64 [S] and i32
 * [B, S], per row) calls the runtime's kernel too, not linalg loops (3x
 * slower at 256 tokens), and matches the reference and the linalg form. */
START_TEST(attention_with_positions_calls_the_runtime) {
  ppcc_graph *g = model(1, "",
                        "{'name': 'q', 'dtype': 'f32', 'shape': [2, 4, 3, 8]},"
                        "{'name': 'k', 'dtype': 'f32', 'shape': [2, 2, 9, 8]},"
                        "{'name': 'v', 'dtype': 'f32', 'shape': [2, 2, 9, 4]},"
                        "{'name': 'p', 'dtype': 'i64', 'shape': [3]},"
                        "{'name': 'rows', 'dtype': 'i32', 'shape': [2, 3]}",
                        "{'op': 'attention', 'in': ['q', 'k', 'v', 'p'], 'out': ['a'], 'attrs': {'causal': true}},"
                        "{'op': 'attention', 'in': ['q', 'k', 'v', 'rows'], 'out': ['b']}",
                        "'a', 'b'");
  expect_runtime_calls(g, "call @ppcc_rt_attention_positions_i64", "call @ppcc_rt_attention_positions_i32");
}
END_TEST

static int count_of(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* Identical shards of different ops share one kernel, also when the
 * kernel checks indices at run time (issue 12: the op index for the error
 * message is a kernel argument, not a constant in it, so a model's layers
 * do not each compile their own index_copy). */
START_TEST(identical_index_kernels_are_shared) {
  ppcc_graph *g = model(1, "",
                        "{'name': 'cache', 'dtype': 'f32', 'shape': [8, 4]}, {'name': 'p', 'dtype': 'i64', 'shape': [2]},"
                        " {'name': 'row', 'dtype': 'f32', 'shape': [2, 4]}",
                        "{'op': 'index_copy', 'in': ['cache', 'p', 'row'], 'out': ['a'], 'attrs': {'dim': 0}},"
                        " {'op': 'index_copy', 'in': ['a', 'p', 'row'], 'out': ['b'], 'attrs': {'dim': 0}}",
                        "'b'");
  ppcc_status st;
  char *text = emit_exec(g, &st);
  ck_assert_msg(text, "%s", diag.first);
  ck_assert_msg(count_of(text, "func.func private @k") == 1, "want one kernel:\n%s", text);
  ck_assert_msg(count_of(text, "call @k0_index_copy") == 2, "want two calls of it:\n%s", text);
  ck_assert_msg(strstr(text, "%c0_i64") && strstr(text, "%c1_i64"), "op indices 0 and 1 not passed:\n%s", text);
  free(text);
  expect_jit_matches_reference(g, NULL);
  ppcc_graph_free(g);
}
END_TEST

/* Both backends against PyTorch (testdata/reference/README.md): the
 * logits of a small Llama with ppcc's random weights (seed 0). */
START_TEST(llama_matches_pytorch_logits) {
  ppcc_graph *g = t_compile_file("testdata/reference/llama_torch.json", &diag);
  ck_assert_msg(g, "%s", diag.first);
  ppcc_host_tensor ref;
  ck_assert_msg(ppcc_npy_read(t_src_path("testdata/reference/llama_torch.logits.npy"), &ref, &diag) == PPCC_OK, "%s",
                diag.first);
  ppcc_run_options ro = {.random_seed = 0, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &diag) == PPCC_OK, "%s", diag.first);
  ppcc_jit *jit = NULL;
  ck_assert_msg(ppcc_jit_compile(g, NULL, &jit, NULL, &diag) == PPCC_OK, "JIT: %s", diag.first);
  ck_assert_str_eq(g->values[g->outputs[0]].name, "logits");
  for (int backend = 0; backend < 2; backend++) {
    ppcc_host_tensor *got = calloc((size_t)g->n_outputs, sizeof *got);
    ppcc_exec_options eo = {.threads = 2};
    ppcc_status st = backend ? ppcc_execute(g, &data, &eo, got, NULL, &diag)
                             : ppcc_jit_execute(jit, g, &data, &eo, got, NULL, &diag);
    ck_assert_msg(st == PPCC_OK, "%s", diag.first);
    ppcc_compare_result r = ppcc_compare(&got[0], &ref);
    ck_assert_msg(r.ok, "%s logits differ from PyTorch's: max abs error %g", backend ? "interp" : "jit", r.max_abs);
    for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&got[k]);
    free(got);
    if (backend == 0) {
      /* The JIT's buffers come from the device arena (the lowering calls
       * the generic alloc functions): the first run records, a second
       * run replays the planned offsets and reports their size. */
      got = calloc((size_t)g->n_outputs, sizeof *got);
      ck_assert_msg(ppcc_jit_execute(jit, g, &data, &eo, got, NULL, &diag) == PPCC_OK, "%s", diag.first);
      ck_assert(ppcc_compare(&got[0], &ref).ok);
      for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&got[k]);
      free(got);
      int64_t planned = 0, scratch = 0;
      ppcc_rt_arena_bytes(0, &planned, &scratch);
      ck_assert_msg(planned > 0, "JIT run planned no arena on device 0");
    }
  }
  ppcc_jit_free(jit);
  ppcc_run_data_free(&data);
  ppcc_host_tensor_free(&ref);
  ppcc_graph_free(g);
}
END_TEST

/* The JIT frees each buffer right after its last use (exec_dealloc.c), so
 * that the device arena reuses its bytes: a chain of 12 ops on 16 KiB
 * values plans far less than the 11 buffers it allocates (all of them
 * when every free was at the end). a1 is read through a view (r1) by the
 * last op: its bytes must not be reused before. a2, a3, a6 and a7 are
 * outputs too: copied into their output arguments after their last
 * reader, then freed (they lived to the end when the copies were made
 * there). Two runs (the recording one on the heap, then the replay of
 * planned offsets) both match the reference. */
START_TEST(jit_reuses_buffers_after_their_last_use) {
  ppcc_graph *g = model(1, "",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [64, 64]}",
                        "{'op': 'silu', 'in': ['x'], 'out': ['a1']},"
                        "{'op': 'reshape', 'in': ['a1'], 'out': ['r1'], 'attrs': {'shape': [4096]}},"
                        "{'op': 'tanh', 'in': ['r1'], 'out': ['a2']},"
                        "{'op': 'scale', 'in': ['a2'], 'out': ['a3'], 'attrs': {'value': 0.5}},"
                        "{'op': 'silu', 'in': ['a3'], 'out': ['a4']},"
                        "{'op': 'reshape', 'in': ['a4'], 'out': ['r4'], 'attrs': {'shape': [64, 64]}},"
                        "{'op': 'add', 'in': ['r4', 'x'], 'out': ['a5']},"
                        "{'op': 'tanh', 'in': ['a5'], 'out': ['a6']},"
                        "{'op': 'scale', 'in': ['a6'], 'out': ['a7'], 'attrs': {'value': 2.0}},"
                        "{'op': 'silu', 'in': ['a7'], 'out': ['a8']},"
                        "{'op': 'tanh', 'in': ['a8'], 'out': ['a9']},"
                        "{'op': 'scale', 'in': ['a9'], 'out': ['a10'], 'attrs': {'value': 3.0}},"
                        "{'op': 'reshape', 'in': ['a10'], 'out': ['r10'], 'attrs': {'shape': [4096]}},"
                        "{'op': 'add', 'in': ['r10', 'r1'], 'out': ['y']}",
                        "'y', 'a2', 'a3', 'a6', 'a7'");
  ppcc_run_options ro = {.random_seed = 5, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &diag) == PPCC_OK, "%s", diag.first);
  ppcc_jit *jit = NULL;
  ck_assert_msg(ppcc_jit_compile(g, NULL, &jit, NULL, &diag) == PPCC_OK, "JIT: %s", diag.first);
  ppcc_host_tensor ref[5] = {0};
  ppcc_exec_options reference = {.reference = true}, eo = {.threads = 1};
  ck_assert_int_eq(g->n_outputs, 5);
  ck_assert_msg(ppcc_execute(g, &data, &reference, ref, NULL, &diag) == PPCC_OK, "%s", diag.first);
  for (int run = 0; run < 2; run++) {
    ppcc_host_tensor got[5] = {0};
    ck_assert_msg(ppcc_jit_execute(jit, g, &data, &eo, got, NULL, &diag) == PPCC_OK, "%s", diag.first);
    for (int k = 0; k < 5; k++) {
      ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
      ck_assert_msg(r.ok, "JIT run %d, output %d: max abs error %g", run, k, r.max_abs);
      ppcc_host_tensor_free(&got[k]);
    }
  }
  int64_t planned = 0, value = 64 * 64 * 4;
  ppcc_rt_arena_bytes(0, &planned, NULL);
  /* live at once: a1 (read at the end) and an op's operand and result */
  ck_assert_msg(planned >= 2 * value && planned <= 4 * value, "JIT arena of %lld B for 11 buffers of %lld B",
                (long long)planned, (long long)value);
  for (int k = 0; k < 5; k++) ppcc_host_tensor_free(&ref[k]);
  ppcc_jit_free(jit);
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(all_gather_and_elementwise) {
  expect_all(model(2,
                   "{'name': 'w', 'dtype': 'f32', 'shape': [16, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}},"
                   "{'name': 'b', 'dtype': 'f32', 'shape': [16], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                   "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'replicated', 'count': 2}}",
                   "{'op': 'linear', 'in': ['x', 'w', 'b'], 'out': ['y']},"
                   "{'op': 'silu', 'in': ['y'], 'out': ['s']},"
                   "{'op': 'tanh', 'in': ['s'], 'out': ['u']},"
                   "{'op': 'scale', 'in': ['u'], 'out': ['m'], 'attrs': {'value': 0.5}},"
                   "{'op': 'maximum', 'in': ['m', 'y'], 'out': ['z']},"
                   "{'op': 'all_gather', 'in': ['z'], 'out': ['out']}",
                   "'out'"));
}
END_TEST

/* Kernels are reused by their inputs (exec_kernel.c's input keys): ops
 * alike but for an attribute or for an operand bound twice (x * x against
 * x * y) must keep kernels of their own; the results prove it. */
START_TEST(kernel_reuse_keeps_different_inputs_apart) {
  ppcc_graph *g = model(2, "",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}},"
                        "{'name': 'y', 'dtype': 'f32', 'shape': [4, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                        "{'op': 'mul', 'in': ['x', 'x'], 'out': ['a']},"
                        "{'op': 'mul', 'in': ['x', 'y'], 'out': ['b']},"
                        "{'op': 'scale', 'in': ['a'], 'out': ['c'], 'attrs': {'value': 0.5}},"
                        "{'op': 'scale', 'in': ['b'], 'out': ['d'], 'attrs': {'value': 0.25}},"
                        "{'op': 'mul', 'in': ['y', 'y'], 'out': ['e']},"
                        "{'op': 'add', 'in': ['c', 'd'], 'out': ['f']},"
                        "{'op': 'add', 'in': ['f', 'e'], 'out': ['g']},"
                        "{'op': 'all_gather', 'in': ['g'], 'out': ['out']}",
                        "'out'");
  ppcc_status st;
  char *text = emit_exec(g, &st);
  ck_assert_msg(text, "mlir-exec emit failed: %s", diag.first);
  int kernels = 0;
  for (const char *p = text; (p = strstr(p, "func.func private @k")); p++) kernels++;
  ck_assert_int_eq(kernels, 5); /* x*x (= y*y), x*y, scale 0.5, scale 0.25, add */
  free(text);
  expect_all(g);
}
END_TEST

START_TEST(create_and_unshard) {
  expect_all(model(4, "", "{'name': 'x', 'dtype': 'f32', 'shape': [8, 4]}",
                   "{'op': 'replicate', 'in': ['x'], 'out': ['r'], 'attrs': {'count': 2, 'devices': [1, 2]}},"
                   "{'op': 'reshard_split', 'in': ['x'], 'out': ['s'], 'attrs': {'dim': 0, 'count': 2}},"
                   "{'op': 'unshard', 'in': ['s'], 'out': ['u'], 'attrs': {'device': 3}},"
                   "{'op': 'unshard', 'in': ['r'], 'out': ['v']}",
                   "'u', 'v', 's'"));
}
END_TEST

START_TEST(reduce_scatter_index_copy_and_unreduced_unshard) {
  expect_all(model(2,
                   "{'name': 'cache', 'dtype': 'f32', 'shape': [16, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}},"
                   "{'name': 'w', 'dtype': 'f32', 'shape': [8, 8], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                   "{'name': 'x', 'dtype': 'f32', 'shape': [2, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}},"
                   "{'name': 'pos', 'dtype': 'i64', 'shape': [2], 'shard': {'kind': 'replicated', 'count': 2}}",
                   "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['partial']},"
                   "{'op': 'reduce_scatter', 'in': ['partial'], 'out': ['k'], 'attrs': {'dim': 1}},"
                   "{'op': 'index_copy', 'in': ['cache', 'pos', 'k'], 'out': ['cache2'], 'attrs': {'dim': 0}},"
                   "{'op': 'unshard', 'in': ['partial'], 'out': ['total'], 'attrs': {'device': 1}}",
                   "'cache2', 'total', 'partial'"));
}
END_TEST

START_TEST(integer_dtypes_move_between_devices) {
  expect_all(model(2, "", "{'name': 'x', 'dtype': 'i32', 'shape': [6, 4], 'shard': {'kind': 'split', 'dim': 0, 'count': 2}}",
                   "{'op': 'all_gather', 'in': ['x'], 'out': ['g']},"
                   "{'op': 'unshard', 'in': ['x'], 'out': ['u'], 'attrs': {'device': 1}}",
                   "'g', 'u'"));
}
END_TEST

/* f16 / bf16 shards compute in their own type (GEMMs in linalg: the
 * OpenBLAS call is f32 only); tolerances are the dtype's. */
START_TEST(half_precision_models) {
  const char *dtypes[] = {"f16", "bf16"};
  for (int i = 0; i < 2; i++) {
    char params[256], inputs[256];
    snprintf(params, sizeof params,
             "{'name': 'w', 'dtype': '%s', 'shape': [16, 8], 'shard': {'kind': 'split', 'dim': 1, 'count': 2}}", dtypes[i]);
    snprintf(inputs, sizeof inputs,
             "{'name': 'x', 'dtype': '%s', 'shape': [4, 16], 'shard': {'kind': 'replicated', 'count': 2}}", dtypes[i]);
    expect_all(model(2, params, inputs,
                     "{'op': 'matmul', 'in': ['x', 'w'], 'out': ['h']},"
                     "{'op': 'gelu', 'in': ['h'], 'out': ['a']},"
                     "{'op': 'all_gather', 'in': ['a'], 'out': ['y']}",
                     "'y'"));
  }
}
END_TEST

/* A failing device aborts the run: every device returns, the error names
 * the device, nothing hangs. */
START_TEST(injected_fault_aborts_all_devices) {
  ppcc_graph *g = t_compile_file("testdata/models/ppffn.json", &diag);
  ck_assert(g);
  ppcc_run_options ro = {.random_seed = 1, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert(ppcc_run_data_load(g, &ro, &data, &diag) == PPCC_OK);
  ppcc_jit *jit = NULL;
  ck_assert_msg(ppcc_jit_compile(g, NULL, &jit, NULL, &diag) == PPCC_OK, "%s", diag.first);
  ppcc_host_tensor out[1];
  ppcc_exec_options eo = {.inject_fault = true, .fault_device = 2};
  ppcc_diag_init(&diag, "test.json", NULL);
  ck_assert_int_eq(ppcc_jit_execute(jit, g, &data, &eo, out, NULL, &diag), PPCC_ERR_USER);
  ck_assert_msg(strstr(diag.first, "device 2") && strstr(diag.first, "injected failure"), "%s", diag.first);
  ck_assert_ptr_null(out[0].data);
  ppcc_jit_free(jit);
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(op_without_lowering_names_the_op) {
  ppcc_graph *g = model(1, "", "{'name': 'x', 'dtype': 'f32', 'shape': [4]}", "{'op': 'exp', 'in': ['x'], 'out': ['y']}",
                        "'y'");
  ppcc_op_info fake = *g->ops[0].info; /* a row past the table: no lowering */
  fake.id = PPCC_OP_COUNT;
  fake.name = "mystery";
  g->ops[0].info = &fake;
  ppcc_jit *jit = NULL;
  ppcc_diag_init(&diag, "test.json", NULL);
  ck_assert_int_eq(ppcc_jit_compile(g, NULL, &jit, NULL, &diag), PPCC_ERR_USER);
  ck_assert_ptr_null(jit);
  ck_assert_msg(strstr(diag.first, "ops[0] 'mystery'") && strstr(diag.first, "no MLIR lowering"), "%s", diag.first);
  ppcc_status st;
  ck_assert_ptr_null(emit_exec(g, &st));
  ck_assert_int_eq(st, PPCC_ERR_USER);
  ppcc_graph_free(g);
}
END_TEST

/* After a compile, LLVM's and MLIR's code (the libraries' read-only,
 * unrelocated pages: ~100 MiB resident once compiling has run them) is no
 * longer resident: the compiled code never calls it (issue 23: generate's
 * peak RSS). Memory, not time. */
static long compiler_code_kb(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  ck_assert(f != NULL);
  char line[4352];
  long kb = 0;
  bool counted = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &path_at) == 3 && path_at > 0)
      counted = perms[1] != 'w' && (strstr(line + path_at, "/libLLVM") || strstr(line + path_at, "/libMLIR"));
    else if (counted && strncmp(line, "Rss:", 4) == 0)
      kb += strtol(line + 4, NULL, 10);
    else if (counted && strncmp(line, "Anonymous:", 10) == 0)
      kb -= strtol(line + 10, NULL, 10); /* relocated pages stay: they are the process's own */
  }
  fclose(f);
  return kb;
}

START_TEST(compiler_code_is_not_resident_after_a_compile) {
  ppcc_graph *g = model(1, "{'name': 'w', 'dtype': 'f32', 'shape': [8, 8]}",
                        "{'name': 'x', 'dtype': 'f32', 'shape': [4, 8]}",
                        "{'op': 'linear', 'in': ['x', 'w'], 'out': ['h']},{'op': 'silu', 'in': ['h'], 'out': ['y']}",
                        "'y'");
  ppcc_jit *jit = NULL;
  ck_assert_msg(ppcc_jit_compile(g, NULL, &jit, NULL, &diag) == PPCC_OK, "JIT: %s", diag.first);
  long kb = compiler_code_kb();
  ck_assert_msg(kb < 2048, "%ld KiB of LLVM's and MLIR's code still resident after the compile", kb);
  ppcc_jit_free(jit);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit_exec");
  TCase *tc = tcase_create("exec");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, every_shipped_model_verifies_and_matches_reference);
  tcase_add_test(tc, kernel_reuse_keeps_different_inputs_apart);
  tcase_add_test(tc, linalg_matmul_instead_of_openblas);
  tcase_add_test(tc, seq_major_attention_calls_the_runtime_and_its_linalg_form_agrees);
  tcase_add_test(tc, conv_calls_the_runtime_and_its_linalg_form_agrees);
  tcase_add_test(tc, contractions_of_any_rank_call_the_runtime);
  tcase_add_test(tc, linear_with_bias_is_one_runtime_call);
  tcase_add_test(tc, layer_norm_is_a_runtime_call);
  tcase_add_test(tc, attention_with_positions_calls_the_runtime);
  tcase_add_test(tc, llama_matches_pytorch_logits);
  tcase_add_test(tc, jit_reuses_buffers_after_their_last_use);
  tcase_add_test(tc, all_gather_and_elementwise);
  tcase_add_test(tc, create_and_unshard);
  tcase_add_test(tc, reduce_scatter_index_copy_and_unreduced_unshard);
  tcase_add_test(tc, integer_dtypes_move_between_devices);
  tcase_add_test(tc, half_precision_models);
  tcase_add_test(tc, injected_fault_aborts_all_devices);
  tcase_add_test(tc, op_without_lowering_names_the_op);
  tcase_add_test(tc, identical_index_kernels_are_shared);
  tcase_add_test(tc, compiler_code_is_not_resident_after_a_compile);
  suite_add_tcase(s, tc);
  return t_run_suite(s);
}
