/* Microbatched pipeline runs (--microbatches): equal to unbatched runs bit
 * for bit, refused with a clear error when a graph mixes batch rows; the
 * Chrome trace and the pipeline statistics. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../src/runtime/exec/exec.h"
#include "ppcc/io.h"
#include "ppcc/runtime.h"
#include "test_support.h"

/* Outputs of g with m microbatches on random data from seed 3. */
static ppcc_status run_with(const ppcc_graph *g, int m, ppcc_exec_options eo, ppcc_host_tensor *out, ppcc_diag *d) {
  ppcc_run_options ro = {.random_seed = 3, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, d) == PPCC_OK, "load: %s", d->first);
  eo.microbatches = m;
  ppcc_status st = ppcc_execute(g, &data, &eo, out, NULL, d);
  ppcc_run_data_free(&data);
  return st;
}

static void free_outputs(const ppcc_graph *g, ppcc_host_tensor *out) {
  for (int k = 0; k < g->n_outputs; k++) ppcc_host_tensor_free(&out[k]);
}

/* Every m in ms that divides the batch: the same bits as m = 1. */
static void check_bitwise(const ppcc_graph *g, const char *what) {
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_host_tensor want[4], got[4];
  ck_assert_int_le(g->n_outputs, 4);
  ck_assert_msg(run_with(g, 1, (ppcc_exec_options){0}, want, &d) == PPCC_OK, "%s: %s", what, d.first);
  static const int ms[] = {2, 4, 8};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    ck_assert_msg(run_with(g, ms[i], (ppcc_exec_options){0}, got, &d) == PPCC_OK, "%s M=%d: %s", what, ms[i], d.first);
    for (int k = 0; k < g->n_outputs; k++) {
      ck_assert_int_eq(got[k].bytes, want[k].bytes);
      ck_assert_msg(memcmp(got[k].data, want[k].data, (size_t)want[k].bytes) == 0, "%s: M=%d output %d differs", what,
                    ms[i], k);
    }
    free_outputs(g, got);
  }
  free_outputs(g, want);
}

START_TEST(microbatched_runs_equal_unbatched_bit_for_bit) {
  ppcc_rt_set_row_invariant_matmul(true);
  static const char *models[] = {"pp_chain", "ppffn", "tp_ffn", "explicit_transfer"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "testdata/models/%s.json", models[i]);
    ppcc_diag d;
    ppcc_graph *g = t_compile_file(path, &d);
    ck_assert_msg(g != NULL, "%s: %s", path, d.first);
    check_bitwise(g, path);
    ppcc_graph_free(g);
  }
  ppcc_graph *g = t_pipeline_graph(2, 2, 16); /* tensor + pipeline parallel, final gather to device 0 */
  check_bitwise(g, "pipeline tp=2 pp=2");
  ppcc_graph_free(g);
  g = t_pipeline_graph(1, 4, 16);
  check_bitwise(g, "pipeline tp=1 pp=4");
  ppcc_graph_free(g);
  ppcc_rt_set_row_invariant_matmul(false);
}
END_TEST

static const char *data_parallel_json =
  "{\"ppcc\": 1, \"name\": \"dp\", \"devices\": 2,"
  " \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [16, 16], \"shard\": {\"kind\": \"replicated\", \"count\": 2}}],"
  " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [8, 16], \"shard\": {\"kind\": \"split\", \"dim\": 0, \"count\": 2}}],"
  " \"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": [\"h\"]},"
  "         {\"op\": \"unshard\", \"in\": [\"h\"], \"out\": [\"y\"]}],"
  " \"outputs\": [\"y\"]}";

/* An input split along the batch dim works while each microbatch still
 * splits evenly over its shards. */
START_TEST(data_parallel_input_split_along_the_batch) {
  ppcc_rt_set_row_invariant_matmul(true);
  ppcc_diag d;
  ppcc_graph *g = t_compile(data_parallel_json, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_host_tensor want[1], got[1];
  ck_assert_msg(run_with(g, 1, (ppcc_exec_options){0}, want, &d) == PPCC_OK, "%s", d.first);
  ck_assert_msg(run_with(g, 4, (ppcc_exec_options){0}, got, &d) == PPCC_OK, "%s", d.first);
  ck_assert(memcmp(got[0].data, want[0].data, (size_t)want[0].bytes) == 0);
  ppcc_host_tensor_free(&got[0]);
  ppcc_host_tensor_free(&want[0]);
  ck_assert_int_eq(run_with(g, 8, (ppcc_exec_options){0}, got, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "'x' is split 2 ways along dim 0"), "%s", d.first);
  ppcc_graph_free(g);
  ppcc_rt_set_row_invariant_matmul(false);
}
END_TEST

/* With OpenBLAS (rows depend on the call's row count) the results agree
 * within the --check tolerance. */
START_TEST(microbatched_runs_with_blas_agree_within_tolerance) {
  ppcc_graph *g = t_pipeline_graph(1, 4, 32);
  ppcc_diag d;
  ppcc_host_tensor want[1], got[1];
  ck_assert_msg(run_with(g, 1, (ppcc_exec_options){0}, want, &d) == PPCC_OK, "%s", d.first);
  ck_assert_msg(run_with(g, 8, (ppcc_exec_options){0}, got, &d) == PPCC_OK, "%s", d.first);
  ppcc_compare_result r = ppcc_compare(&got[0], &want[0]);
  ck_assert_msg(r.ok, "max abs error %g", r.max_abs);
  ppcc_host_tensor_free(&got[0]);
  ppcc_host_tensor_free(&want[0]);
  ppcc_graph_free(g);
}
END_TEST

/* A one-op model over x[8, 16] (op JSON given) and the error of running
 * it with 4 microbatches. */
static void expect_refusal(const char *x_shape, const char *op, const char *output, const char *message) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"ppcc\": 1, \"name\": \"m\", \"devices\": 1,"
           " \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [16, 16]}],"
           " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": %s}],"
           " \"ops\": [%s], \"outputs\": [\"%s\"]}",
           x_shape, op, output);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  ck_assert_msg(g != NULL, "%s: %s", op, d.first);
  ppcc_host_tensor out[1];
  ck_assert_int_eq(run_with(g, 4, (ppcc_exec_options){0}, out, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, message) && strstr(d.first, "--microbatches 4"), "%s: got '%s'", op, d.first);
  ppcc_graph_free(g);
}

START_TEST(graphs_that_mix_batch_rows_are_refused) {
  const char *relu = "{\"op\": \"relu\", \"in\": [\"x\"], \"out\": [\"y\"]}";
  expect_refusal("[6, 16]", relu, "y", "input 'x' [6, 16]: its batch dim (dim 0) does not divide into 4");
  expect_refusal("[8, 16]", "{\"op\": \"sum\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"dim\": [0], \"keepdim\": true}}",
                 "y", "ops[0] 'sum' (-> 'y') mixes rows of different microbatches: it reduces over the batch dim");
  expect_refusal("[8, 16]", "{\"op\": \"softmax\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"dim\": 0}}", "y",
                 "it works along the batch dim");
  expect_refusal("[8, 16]", "{\"op\": \"transpose\", \"in\": [\"x\"], \"out\": [\"y\"]}", "y",
                 "it moves the batch dim away from dim 0");
  expect_refusal("[16, 16]", "{\"op\": \"matmul\", \"in\": [\"w\", \"x\"], \"out\": [\"y\"]}", "y",
                 "cannot run on a microbatch");
  expect_refusal("[8, 16]", "{\"op\": \"reshape\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"shape\": [8, 2, 8]}}",
                 "y", "does an attribute depend on the batch size?");
  expect_refusal("[8, 16]", "{\"op\": \"reshape\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"shape\": [2, -1]}}",
                 "y", "value 'y' [2, 64] does not keep the batch in dim 0");
  expect_refusal("[8, 16]",
                 "{\"op\": \"relu\", \"in\": [\"x\"], \"out\": [\"h\"]}, {\"op\": \"relu\", \"in\": [\"w\"], \"out\": [\"y\"]}",
                 "y", "output 'y' does not depend on the batch");
}
END_TEST

static int count_events(const cJSON *events, const char *ph, const char *name) {
  int n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    const cJSON *p = cJSON_GetObjectItem(e, "ph"), *nm = cJSON_GetObjectItem(e, "name");
    if (strcmp(cJSON_GetStringValue(p), ph) == 0 && (!name || strcmp(cJSON_GetStringValue(nm), name) == 0)) n++;
  }
  return n;
}

/* Every "s" flow id has exactly one "f" on another track. */
static void check_flows(const cJSON *events) {
  const cJSON *s;
  cJSON_ArrayForEach(s, events) {
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "ph")), "s") != 0) continue;
    double id = cJSON_GetNumberValue(cJSON_GetObjectItem(s, "id"));
    int ends = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, events) {
      if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "ph")), "f") != 0) continue;
      if (cJSON_GetNumberValue(cJSON_GetObjectItem(f, "id")) != id) continue;
      ends++;
      ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "tid")) != cJSON_GetNumberValue(cJSON_GetObjectItem(s, "tid")));
    }
    ck_assert_int_eq(ends, 1);
  }
}

/* pp_chain: 4 devices, 8 compute ops and 3 transfers per microbatch. */
START_TEST(trace_is_chrome_json_with_one_track_per_device) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &d);
  ck_assert_ptr_nonnull(g);
  char path[64];
  snprintf(path, sizeof path, "/tmp/ppcc_mb_trace_%d.json", (int)getpid());
  ppcc_host_tensor out[1];
  ck_assert_msg(run_with(g, 4, (ppcc_exec_options){.trace_path = path}, out, &d) == PPCC_OK, "%s", d.first);
  ppcc_host_tensor_free(&out[0]);
  size_t len;
  char *text = ppcc_read_file(path, &len, &d);
  ck_assert_ptr_nonnull(text);
  cJSON *root = cJSON_ParseWithLength(text, len);
  ck_assert_msg(root != NULL, "trace is not valid JSON");
  const cJSON *events = cJSON_GetObjectItem(root, "traceEvents");
  ck_assert(cJSON_IsArray(events));
  ck_assert_int_eq(count_events(events, "M", "thread_name"), 4);
  bool seen[4] = {false};
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    int tid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "tid"));
    ck_assert(tid >= 0 && tid < 4);
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), "thread_name") == 0) {
      ck_assert(!seen[tid]);
      seen[tid] = true;
    }
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph")), "X") != 0) continue;
    const cJSON *args = cJSON_GetObjectItem(e, "args");
    int mb = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(args, "microbatch"));
    ck_assert(mb >= 0 && mb < 4);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(args, "op")));
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(e, "dur")) >= 0);
  }
  ck_assert_int_eq(count_events(events, "X", "matmul") + count_events(events, "X", "gelu"), 8 * 4);
  ck_assert_int_eq(count_events(events, "s", NULL), 3 * 4);
  ck_assert_int_eq(count_events(events, "f", NULL), 3 * 4);
  check_flows(events);
  cJSON_Delete(root);
  free(text);
  unlink(path);
  ppcc_graph_free(g);
}
END_TEST

START_TEST(statistics_measure_the_bubble_beside_the_gpipe_estimate) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &d);
  ck_assert_ptr_nonnull(g);
  ppcc_pipeline_stats s;
  ppcc_host_tensor out[1];
  ck_assert_msg(run_with(g, 4, (ppcc_exec_options){.stats = &s}, out, &d) == PPCC_OK, "%s", d.first);
  ppcc_host_tensor_free(&out[0]);
  ck_assert_int_eq(s.stages, 4);
  ck_assert_int_eq(s.microbatches, 4);
  ck_assert_int_eq(s.n_devices, 4);
  ck_assert(s.gpipe_bubble > 3.0 / 7 - 1e-12 && s.gpipe_bubble < 3.0 / 7 + 1e-12);
  ck_assert(s.bubble >= 0 && s.bubble < 1);
  for (int dev = 0; dev < 4; dev++) ck_assert(s.busy[dev] > 0 && s.busy[dev] <= 1);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ppcc_pipeline_stats_print(&s, f);
  fclose(f);
  ck_assert_msg(strstr(text, "device 3 busy") && strstr(text, "bubble: measured") &&
                    strstr(text, "GPipe estimate (p-1)/(m+p-1) = 0.429"),
                "%s", text);
  free(text);
  ppcc_pipeline_stats_free(&s);
  ppcc_graph_free(g);
}
END_TEST

/* A chain of stages is one segment; a final gather back onto device 0
 * starts a second one, so device 0 fills the pipeline first. */
START_TEST(schedule_segments_fill_then_drain) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &d);
  ck_assert_ptr_nonnull(g);
  int begin[64];
  ck_assert_int_le(g->n_ops + 2, 64);
  ck_assert_int_eq(ppcc_pipeline_segments(g, begin), 1);
  ck_assert_int_eq(begin[1], g->n_ops);
  ppcc_graph_free(g);
  g = t_pipeline_graph(1, 4, 8);
  ck_assert_int_le(g->n_ops + 2, 64);
  ck_assert_int_eq(ppcc_pipeline_segments(g, begin), 2);
  ck_assert_str_eq(g->ops[begin[1]].info->name, "unshard");
  ppcc_graph_free(g);
}
END_TEST

START_TEST(ppcc_run_prints_the_pipeline_summary) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/pp_chain.json", &d);
  ck_assert_ptr_nonnull(g);
  char *text = NULL;
  size_t len = 0;
  FILE *log = open_memstream(&text, &len);
  ppcc_run_options ro = {.random_seed = 1, .have_random_seed = true, .microbatches = 2, .check = true, .log = log};
  ck_assert_msg(ppcc_run(g, &ro, &d) == PPCC_OK, "%s", d.first);
  fclose(log);
  ck_assert_msg(strstr(text, "pipeline: 4 stages, 2 microbatches") && strstr(text, "check stage.3.y") &&
                    strstr(text, "GPipe estimate (p-1)/(m+p-1) = 0.600"),
                "%s", text);
  free(text);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_microbatch");
  TCase *tc = t_add_tcase(s, "core", 0);
  tcase_add_test(tc, microbatched_runs_equal_unbatched_bit_for_bit);
  tcase_add_test(tc, data_parallel_input_split_along_the_batch);
  tcase_add_test(tc, microbatched_runs_with_blas_agree_within_tolerance);
  tcase_add_test(tc, graphs_that_mix_batch_rows_are_refused);
  tcase_add_test(tc, trace_is_chrome_json_with_one_track_per_device);
  tcase_add_test(tc, statistics_measure_the_bubble_beside_the_gpipe_estimate);
  tcase_add_test(tc, schedule_segments_fill_then_drain);
  tcase_add_test(tc, ppcc_run_prints_the_pipeline_summary);
  return t_run_suite(s);
}
