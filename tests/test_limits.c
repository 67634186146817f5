/* Limits instead of trust (include/ppcc/graph.h): every limit has a clear
 * error, the largest allowed value is accepted, and nothing overflows on
 * the way (the sanitizer build runs these too).
 *
 *   PPCC_MAX_RANK       8 dimensions
 *   PPCC_MAX_ELEMENTS   2^48 elements per tensor, products overflow-checked
 *   PPCC_MAX_DEVICES    4096 devices (top level, shard tuples, op attrs)
 *   PPCC_MAX_OPS        10,000,000 ops
 *   JSON nesting        64 levels
 *   PPCC_MAX_NAME       256 bytes per name
 *   file size           256 MiB per model file
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/frontend.h"
#include "ppcc/io.h"
#include "ppcc/passes.h"
#include "test_support.h"

/* ---------------- helpers ---------------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int n = vsnprintf(NULL, 0, f, ap);
  va_end(ap);
  ck_assert_int_ge(n, 0);
  char *s = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(s);
  va_start(ap, f);
  vsnprintf(s, (size_t)n + 1, f, ap);
  va_end(ap);
  return s;
}

/* Loads (frontend only) and expects exactly one error containing want. */
static void expect_load_error(const char *json, size_t len, const char *want) {
  ppcc_diag d;
  ppcc_diag_init(&d, "limits.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(json, len, &d);
  ck_assert_msg(g == NULL, "expected an error containing \"%s\"", want);
  ppcc_graph_free(g);
  ck_assert_int_eq(d.errors, 1);
  ck_assert_msg(strstr(d.first, want) != NULL, "error \"%s\" lacks \"%s\"", d.first, want);
}

/* Loads and runs every pass; the model must compile. */
static void expect_ok(const char *json) {
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  ck_assert_msg(g != NULL, "expected success, got: %s", d.first);
  ppcc_graph_free(g);
}

/* A model with one input of the given shape text and one neg op. */
static char *model_with_shape(int devices, const char *shape) {
  return fmt("{\"ppcc\": 1, \"devices\": %d, \"inputs\": [{\"name\": \"x\", \"dtype\": \"i8\", "
             "\"shape\": %s}], \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], "
             "\"outputs\": [\"y\"]}",
             devices, shape);
}

/* ---------------- rank ---------------- */

START_TEST(test_rank_limit) {
  char *ok = model_with_shape(1, "[1, 1, 1, 1, 1, 1, 1, 2]"); /* rank 8 */
  expect_ok(ok);
  free(ok);
  char *bad = model_with_shape(1, "[1, 1, 1, 1, 1, 1, 1, 1, 2]"); /* rank 9 */
  expect_load_error(bad, strlen(bad), "inputs[0].shape: rank 9 exceeds the maximum rank 8");
  free(bad);
  /* A huge rank is refused before any dimension is read. */
  char big[4096] = "[";
  for (int i = 0; i < 1000; i++) strcat(big, i ? ",1" : "1");
  strcat(big, "]");
  bad = model_with_shape(1, big);
  expect_load_error(bad, strlen(bad), "rank 1000 exceeds the maximum rank 8");
  free(bad);
  /* reshape's target shape obeys the same limit (shape rule, verify pass). */
  const char *reshape =
      "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2]}],"
      " \"ops\": [{\"op\": \"reshape\", \"in\": [\"x\"], \"out\": [\"y\"],"
      " \"attrs\": {\"shape\": [1, 1, 1, 1, 1, 1, 1, 1, 2]}}], \"outputs\": [\"y\"]}";
  ppcc_diag d;
  ppcc_graph *g = t_compile(reshape, &d);
  ck_assert(g == NULL);
  ck_assert_msg(strstr(d.first, "more than the maximum 8") != NULL, "%s", d.first);
}
END_TEST

/* ---------------- element count ---------------- */

START_TEST(test_elements_limit) {
  /* Exactly 2^48 elements: allowed (nothing is allocated at compile time). */
  char *ok = model_with_shape(1, "[16777216, 16777216]");
  expect_ok(ok);
  free(ok);
  const char *want = "inputs[0].shape: the tensor has more than 281474976710656 elements (2^48, the limit)";
  const char *too_many[] = {
    "[16777216, 16777217]",                      /* 2^48 + 2^24 */
    "[281474976710657]",                         /* 2^48 + 1, one dim */
    "[4294967296, 4294967296]",                  /* 2^64: would wrap to 0 */
    "[3037000500, 3037000500]",                  /* > 2^63: signed overflow */
    "[9007199254740992, 9007199254740992, 2]",   /* 2^53 * 2^53 * 2 */
    "[2, 2, 2, 2, 2, 2, 2, 9007199254740992]",   /* the overflow in the last dim */
    "[65536, 65536, 65536, 65536]",              /* 2^64 in four steps */
  };
  for (size_t i = 0; i < sizeof too_many / sizeof too_many[0]; i++) {
    char *bad = model_with_shape(1, too_many[i]);
    expect_load_error(bad, strlen(bad), want);
    free(bad);
  }
  /* JSON integers above 2^53 are not exact: refused as such. */
  char *bad = model_with_shape(1, "[9007199254740994]");
  expect_load_error(bad, strlen(bad), "is too large");
  free(bad);
}
END_TEST

START_TEST(test_elements_helper) {
  /* ppcc_num_elements is the one overflow-checked product everybody uses. */
  int64_t s1[] = {INT64_C(1) << 24, INT64_C(1) << 24};
  ck_assert_int_eq(ppcc_num_elements(2, s1), PPCC_MAX_ELEMENTS);
  int64_t s2[] = {INT64_C(1) << 24, (INT64_C(1) << 24) + 1};
  ck_assert_int_eq(ppcc_num_elements(2, s2), -1);
  int64_t s3[] = {INT64_C(1) << 62, INT64_C(1) << 62};
  ck_assert_int_eq(ppcc_num_elements(2, s3), -1);
  int64_t s4[] = {INT64_MAX, INT64_MAX, INT64_MAX};
  ck_assert_int_eq(ppcc_num_elements(3, s4), -1);
  int64_t s5[] = {3, -1};
  ck_assert_int_eq(ppcc_num_elements(2, s5), -1);
  int64_t s6[] = {0, 5};
  ck_assert_int_eq(ppcc_num_elements(2, s6), 0);
  ck_assert_int_eq(ppcc_num_elements(0, NULL), 1);
  /* Byte sizes stay below 2^51 (2^48 elements of at most 8 bytes). */
  ppcc_value v = {.name = "v", .dtype = PPCC_I64, .rank = 2, .shape = {INT64_C(1) << 24, INT64_C(1) << 24},
                  .layout = ppcc_layout_unsharded()};
  ck_assert_int_eq(ppcc_value_bytes(&v), INT64_C(1) << 51);
}
END_TEST

/* ---------------- devices ---------------- */

START_TEST(test_devices_limit) {
  char *ok = model_with_shape(PPCC_MAX_DEVICES, "[4]");
  expect_ok(ok);
  free(ok);
  char *bad = model_with_shape(PPCC_MAX_DEVICES + 1, "[4]");
  expect_load_error(bad, strlen(bad), "devices: 4097 is out of range [1, 4096]");
  free(bad);
  bad = model_with_shape(0, "[4]");
  expect_load_error(bad, strlen(bad), "devices: 0 is out of range [1, 4096]");
  free(bad);
  bad = model_with_shape(-1, "[4]");
  expect_load_error(bad, strlen(bad), "devices: -1 is out of range [1, 4096]");
  free(bad);
  const char *huge = "{\"ppcc\": 1, \"devices\": 1e300, \"ops\": [], \"outputs\": []}";
  expect_load_error(huge, strlen(huge), "devices: ");
}
END_TEST

START_TEST(test_devices_full_tuple) {
  /* A value replicated on all 4096 devices, the tuple written out in
   * reverse: the largest shard tuple goes through every pass. */
  size_t cap = 64 * 1024;
  char *devs = malloc(cap);
  size_t off = 0;
  for (int i = PPCC_MAX_DEVICES - 1; i >= 0; i--)
    off += (size_t)snprintf(devs + off, cap - off, "%s%d", i == PPCC_MAX_DEVICES - 1 ? "" : ",", i);
  char *json = fmt("{\"ppcc\": 1, \"devices\": %d, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\","
                   " \"shape\": [2], \"shard\": {\"kind\": \"replicated\", \"count\": %d}, \"devices\": [%s]}],"
                   " \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}",
                   PPCC_MAX_DEVICES, PPCC_MAX_DEVICES, devs);
  expect_ok(json);
  free(json);
  /* 4097 shards on a 4096-device model. */
  json = fmt("{\"ppcc\": 1, \"devices\": %d, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\","
             " \"shape\": [2], \"shard\": {\"kind\": \"replicated\", \"count\": %d}}],"
             " \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}",
             PPCC_MAX_DEVICES, PPCC_MAX_DEVICES + 1);
  expect_load_error(json, strlen(json), "4097 shards need more devices than the model's 4096");
  free(json);
  /* A device id beyond the model's devices. */
  json = fmt("{\"ppcc\": 1, \"devices\": 2, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\","
             " \"shape\": [2], \"devices\": [4096]}],"
             " \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}");
  expect_load_error(json, strlen(json), "device 4096 is out of range (model has 2 devices)");
  free(json);
  free(devs);
}
END_TEST

START_TEST(test_devices_in_op_attrs) {
  /* replicate's count attribute obeys the same limit (shape/shard rule). */
  const char *json =
      "{\"ppcc\": 1, \"devices\": 2, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2]}],"
      " \"ops\": [{\"op\": \"replicate\", \"in\": [\"x\"], \"out\": [\"y\"], \"attrs\": {\"count\": 4097}}],"
      " \"outputs\": [\"y\"]}";
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  ck_assert(g == NULL);
  ck_assert_msg(strstr(d.first, "attrs.count = 4097 is out of range [1, 4096]") != NULL, "%s", d.first);
}
END_TEST

/* ---------------- ops ---------------- */

/* 10,000,001 ops cannot be written as real ops inside the 256 MiB file
 * limit (a minimal op is ~40 bytes), but the count is checked before any
 * op is looked at, so "ops": [0, 0, ...] (2 bytes an item, 20 MB of text)
 * reaches the limit. cJSON needs ~64 bytes a node (~1 GB with ASan's
 * redzones), so the test runs only when the machine has the memory. */
static long long mem_available_kib(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static char *ops_array_model(long n_items, size_t *len) {
  const char *head = "{\"ppcc\": 1, \"devices\": 1, \"ops\": [";
  const char *tail = "], \"outputs\": [\"y\"]}";
  size_t cap = strlen(head) + 2 * (size_t)n_items + strlen(tail) + 1;
  char *s = malloc(cap);
  ck_assert_ptr_nonnull(s);
  size_t off = strlen(head);
  memcpy(s, head, off);
  for (long i = 0; i < n_items; i++) {
    s[off++] = '0';
    if (i + 1 < n_items) s[off++] = ',';
  }
  memcpy(s + off, tail, strlen(tail) + 1);
  *len = off + strlen(tail);
  return s;
}

START_TEST(test_ops_limit_small) {
  /* The count check comes before the ops are read: a short list reaches
   * ops[0] (proves the same path without the limit). */
  size_t len;
  char *s = ops_array_model(3, &len);
  expect_load_error(s, len, "ops[0]: expected an object, got a number");
  free(s);
}
END_TEST

START_TEST(test_ops_limit) {
  long long avail = mem_available_kib();
  if (avail >= 0 && avail < 6LL * 1024 * 1024) {
    fprintf(stderr, "test_ops_limit: skipped, only %lld MiB of memory available (needs 6 GiB)\n",
            avail / 1024);
    return;
  }
  size_t len;
  char *s = ops_array_model(PPCC_MAX_OPS + 1L, &len);
  ck_assert_uint_lt(len, (size_t)256 << 20);
  expect_load_error(s, len, "ops: 10000001 ops exceed the limit of 10000000");
  free(s);
}
END_TEST

/* ---------------- JSON nesting ---------------- */

/* A valid model whose "shape" holds `levels` nested lists, so the whole
 * document nests levels + 2 deep (top object, inputs list, input object,
 * then the shape lists). */
static char *nested_model(int levels) {
  char *open = malloc((size_t)levels + 1), *close = malloc((size_t)levels + 1);
  memset(open, '[', (size_t)levels);
  memset(close, ']', (size_t)levels);
  open[levels] = close[levels] = 0;
  char *s = fmt("{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", "
                "\"shape\": %s%s}], \"ops\": [], \"outputs\": [\"x\"]}",
                open, close);
  free(open);
  free(close);
  return s;
}

START_TEST(test_nesting_limit) {
  /* 64 levels: parsed, then refused for what it is (not a dimension). */
  char *s = nested_model(64 - 3);
  expect_load_error(s, strlen(s), "inputs[0].shape[0]: expected an integer, got an array");
  free(s);
  /* 65 levels: the nesting limit, with its position. */
  s = nested_model(65 - 3);
  expect_load_error(s, strlen(s), "line 1, column 138: JSON nesting is deeper than 64 levels");
  free(s);
  /* A million levels: no stack overflow, same message. */
  enum { DEEP = 1000000 };
  char *deep = malloc(2 * DEEP);
  memset(deep, '{', DEEP);
  memset(deep + DEEP, '}', DEEP);
  expect_load_error(deep, 2 * DEEP, "JSON nesting is deeper than 64 levels");
  /* Unbalanced: a million openers and nothing else. */
  memset(deep, '[', 2 * DEEP);
  expect_load_error(deep, 2 * DEEP, "JSON nesting is deeper than 64 levels");
  free(deep);
}
END_TEST

/* ---------------- names and file size ---------------- */

START_TEST(test_name_limit) {
  char name[PPCC_MAX_NAME + 2];
  memset(name, 'n', PPCC_MAX_NAME);
  name[PPCC_MAX_NAME] = 0;
  char *json = fmt("{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"%s\", \"dtype\": \"f32\","
                   " \"shape\": [2]}], \"ops\": [{\"op\": \"neg\", \"in\": [\"%s\"], \"out\": [\"y\"]}],"
                   " \"outputs\": [\"y\"]}",
                   name, name);
  expect_ok(json);
  free(json);
  strcat(name, "n"); /* 257 bytes */
  json = fmt("{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"%s\", \"dtype\": \"f32\","
             " \"shape\": [2]}], \"ops\": [], \"outputs\": [\"y\"]}",
             name);
  expect_load_error(json, strlen(json), "is 257 bytes long, more than the maximum 256");
  free(json);
}
END_TEST

START_TEST(test_file_size_limit) {
  /* A sparse 257 MiB file: refused from its size, before it is read. */
  char path[] = "/tmp/ppcc_limits_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)257 << 20), 0);
  close(fd);
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  ppcc_graph *g = ppcc_load_model_file(path, &d);
  unlink(path);
  ck_assert(g == NULL);
  ck_assert_msg(strstr(d.first, "larger than 256 MiB") != NULL, "%s", d.first);
}
END_TEST

Suite *limits_suite(void) {
  Suite *s = suite_create("limits");
  TCase *tc = t_add_tcase(s, "limits", 300);
  tcase_add_test(tc, test_rank_limit);
  tcase_add_test(tc, test_elements_limit);
  tcase_add_test(tc, test_elements_helper);
  tcase_add_test(tc, test_devices_limit);
  tcase_add_test(tc, test_devices_full_tuple);
  tcase_add_test(tc, test_devices_in_op_attrs);
  tcase_add_test(tc, test_ops_limit_small);
  tcase_add_test(tc, test_ops_limit);
  tcase_add_test(tc, test_nesting_limit);
  tcase_add_test(tc, test_name_limit);
  tcase_add_test(tc, test_file_size_limit);
  return s;
}

int main(void) { return t_run_suite(limits_suite()); }
