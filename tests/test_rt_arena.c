/* Per-device arenas (src/runtime/exec/arena.c) and reshape views in the
 * interpreter (src/runtime/exec/executor.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/runtime/exec/exec.h"
#include "ppcc/runtime.h"
#include "test_support.h"

static bool overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) { return a0 < b1 && b0 < a1; }

/* Buffers live at the same time never share a byte; every buffer lies
 * inside the high-water mark, aligned; the mark is at least the largest
 * sum of live sizes. */
static void check_plan(rt_arena_buf *b, int n, int steps) {
  int64_t top = rt_arena_plan(b, n);
  ck_assert_int_ge(top, 0);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(b[i].offset % RT_ARENA_ALIGN, 0);
    ck_assert_int_le(b[i].offset + rt_arena_round(b[i].bytes), top);
    for (int j = 0; j < i; j++)
      if (b[i].birth <= b[j].death && b[j].birth <= b[i].death)
        ck_assert_msg(!overlap(b[i].offset, b[i].offset + rt_arena_round(b[i].bytes), b[j].offset,
                               b[j].offset + rt_arena_round(b[j].bytes)),
                      "buffers %d and %d overlap", i, j);
  }
  for (int t = 0; t < steps; t++) {
    int64_t live = 0;
    for (int i = 0; i < n; i++)
      if (b[i].birth <= t && t <= b[i].death) live += rt_arena_round(b[i].bytes);
    ck_assert_int_ge(top, live);
  }
}

START_TEST(plan_keeps_live_buffers_apart) {
  srand(7);
  for (int round = 0; round < 50; round++) {
    int n = 1 + rand() % 60, steps = 1 + rand() % 40;
    rt_arena_buf b[60];
    for (int i = 0; i < n; i++) {
      int birth = rand() % steps, len = rand() % 6;
      b[i] = (rt_arena_buf){rand() % 5000, birth, birth + len, -1};
    }
    check_plan(b, n, steps + 6);
  }
}
END_TEST

/* A chain where each result dies when the next op read it needs two
 * buffers, however long the chain. */
START_TEST(plan_reuses_dead_buffers) {
  rt_arena_buf b[100];
  for (int i = 0; i < 100; i++) b[i] = (rt_arena_buf){4096, i, i + 1, -1};
  ck_assert_int_eq(rt_arena_plan(b, 100), 2 * 4096);
  check_plan(b, 100, 101);
}
END_TEST

/* Two runs of the same graph (the second takes the pooled arenas back)
 * give the same bits, and every device reports its arena. */
START_TEST(repeated_runs_reuse_the_arena_and_agree) {
  ppcc_diag d;
  ppcc_graph *g = t_compile_file("testdata/models/tp_ffn.json", &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_run_options ro = {.random_seed = 3, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &d) == PPCC_OK, "%s", d.first);
  ppcc_host_tensor a[4], b[4];
  ck_assert_int_le(g->n_outputs, 4);
  ppcc_exec_options eo = {0};
  ck_assert_msg(ppcc_execute(g, &data, &eo, a, NULL, &d) == PPCC_OK, "%s", d.first);
  ck_assert_msg(ppcc_execute(g, &data, &eo, b, NULL, &d) == PPCC_OK, "%s", d.first);
  for (int k = 0; k < g->n_outputs; k++) {
    ck_assert_int_eq(a[k].bytes, b[k].bytes);
    ck_assert(memcmp(a[k].data, b[k].data, (size_t)a[k].bytes) == 0);
    ppcc_host_tensor_free(&a[k]);
    ppcc_host_tensor_free(&b[k]);
  }
  int64_t largest = 0, all = 0;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_RESULT) {
      int64_t shard = ppcc_value_bytes(&g->values[v]) / g->values[v].layout.count;
      if (shard > largest) largest = shard;
      all += ppcc_value_bytes(&g->values[v]) + RT_ARENA_ALIGN * g->values[v].layout.count;
    }
  for (int dev = 0; dev < g->n_devices; dev++) {
    int64_t planned = 0, scratch = 0;
    int64_t total = ppcc_rt_arena_bytes(dev, &planned, &scratch);
    ck_assert_int_eq(total, planned + scratch);
    ck_assert_int_gt(planned, 0);
    ck_assert_int_le(planned, all); /* never more than every result at once */
  }
  ck_assert_int_gt(largest, 0);
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

/* y = reshape(x) read after x was written in place must still be the old
 * x: such a reshape copies instead of viewing. z = reshape(w), w never
 * written, is a view and equals w. */
static const char *view_json =
    "{\"ppcc\": 1, \"name\": \"views\", \"devices\": 1,"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4, 3], \"pinned\": true},"
    "              {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4, 3]},"
    "              {\"name\": \"pos\", \"dtype\": \"i32\", \"shape\": [1]},"
    "              {\"name\": \"src\", \"dtype\": \"f32\", \"shape\": [1, 3]}],"
    " \"ops\": [{\"op\": \"reshape\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"shape\": [12]}},"
    "         {\"op\": \"index_copy\", \"in\": [\"x\", \"pos\", \"src\"], \"out\": [\"x2\"], \"attrs\": {\"dim\": 0}},"
    "         {\"op\": \"scale\", \"in\": [\"y\"], \"out\": [\"y2\"], \"attrs\": {\"value\": 1.0}},"
    "         {\"op\": \"reshape\", \"in\": [\"w\"], \"out\": [\"z\"], \"attrs\": {\"shape\": [2, 6]}},"
    "         {\"op\": \"reshape\", \"in\": [\"z\"], \"out\": [\"z2\"], \"attrs\": {\"shape\": [12]}}],"
    " \"outputs\": [\"y2\", \"x2\", \"z2\"]}";

START_TEST(reshape_views_never_see_in_place_writes) {
  ppcc_diag d;
  ppcc_graph *g = t_compile(view_json, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_run_options ro = {.random_seed = 5, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &d) == PPCC_OK, "%s", d.first);
  int pos = ppcc_find_value(g, "pos"), x = ppcc_find_value(g, "x"), w = ppcc_find_value(g, "w");
  ck_assert_int_ge(pos, 0);
  ((int32_t *)data.values[pos].data)[0] = 1;
  ppcc_host_tensor out[3];
  for (int reference = 0; reference < 2; reference++) {
    ppcc_exec_options eo = {.reference = reference};
    ck_assert_msg(ppcc_execute(g, &data, &eo, out, NULL, &d) == PPCC_OK, "%s", d.first);
    ck_assert(memcmp(out[0].data, data.values[x].data, 12 * sizeof(float)) == 0); /* the old x */
    ck_assert(memcmp(out[2].data, data.values[w].data, 12 * sizeof(float)) == 0);
    ck_assert(memcmp((float *)out[1].data + 3, ((float *)data.values[ppcc_find_value(g, "src")].data),
                     3 * sizeof(float)) == 0); /* row 1 of x2 is src */
    for (int k = 0; k < 3; k++) ppcc_host_tensor_free(&out[k]);
  }
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

/* y = a . transpose(b) and z = c . permute(e, [0, 2, 1]): the transposes
 * fold into the matmuls (no copy, the GEMM's trans flag); the results are
 * those of the plain products. */
static const char *fold_json =
    "{\"ppcc\": 1, \"name\": \"fold\", \"devices\": 1,"
    " \"inputs\": [{\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [3, 4]},"
    "              {\"name\": \"b\", \"dtype\": \"f32\", \"shape\": [5, 4]},"
    "              {\"name\": \"c\", \"dtype\": \"f32\", \"shape\": [2, 3, 4]},"
    "              {\"name\": \"e\", \"dtype\": \"f32\", \"shape\": [2, 5, 4]}],"
    " \"ops\": [{\"op\": \"transpose\", \"in\": [\"b\"], \"out\": [\"bt\"]},"
    "         {\"op\": \"matmul\", \"in\": [\"a\", \"bt\"], \"out\": [\"y\"]},"
    "         {\"op\": \"permute\", \"in\": [\"e\"], \"out\": [\"et\"], \"attrs\": {\"perm\": [0, 2, 1]}},"
    "         {\"op\": \"matmul\", \"in\": [\"c\", \"et\"], \"out\": [\"z\"]}],"
    " \"outputs\": [\"y\", \"z\"]}";

START_TEST(transposes_fold_into_matmul) {
  ppcc_diag d;
  ppcc_graph *g = t_compile(fold_json, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  ppcc_run_options ro = {.random_seed = 9, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert_msg(ppcc_run_data_load(g, &ro, &data, &d) == PPCC_OK, "%s", d.first);
  const float *a = data.values[ppcc_find_value(g, "a")].data, *b = data.values[ppcc_find_value(g, "b")].data;
  const float *c = data.values[ppcc_find_value(g, "c")].data, *e = data.values[ppcc_find_value(g, "e")].data;
  ppcc_host_tensor out[2];
  for (int reference = 0; reference < 2; reference++) {
    ppcc_exec_options eo = {.reference = reference};
    ck_assert_msg(ppcc_execute(g, &data, &eo, out, NULL, &d) == PPCC_OK, "%s", d.first);
    const float *y = out[0].data, *z = out[1].data;
    for (int p = 0; p < 2; p++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
          float wy = 0, wz = 0;
          for (int k = 0; k < 4; k++) {
            wy += a[i * 4 + k] * b[j * 4 + k];
            wz += c[(p * 3 + i) * 4 + k] * e[(p * 5 + j) * 4 + k];
          }
          if (p == 0) ck_assert_float_eq_tol(y[i * 5 + j], wy, 1e-5f);
          ck_assert_float_eq_tol(z[(p * 3 + i) * 5 + j], wz, 1e-5f);
        }
    for (int k = 0; k < 2; k++) ppcc_host_tensor_free(&out[k]);
  }
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_arena");
  TCase *tc = t_add_tcase(s, "core", 0);
  tcase_add_test(tc, plan_keeps_live_buffers_apart);
  tcase_add_test(tc, plan_reuses_dead_buffers);
  tcase_add_test(tc, repeated_runs_reuse_the_arena_and_agree);
  tcase_add_test(tc, reshape_views_never_see_in_place_writes);
  tcase_add_test(tc, transposes_fold_into_matmul);
  return t_run_suite(s);
}
