/* .npy, .safetensors and .irpa loaders: round trips, and one-line errors
 * naming file and tensor on truncated or corrupt files (never reading out
 * of bounds: run under ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ppcc/runtime.h"
#include "test_support.h"

static char tmp_path[256];

static const char *tmp(const char *suffix) {
  snprintf(tmp_path, sizeof tmp_path, "/tmp/ppcc_rt_loader_%d%s", (int)getpid(), suffix);
  return tmp_path;
}

START_TEST(npy_round_trip) {
  ppcc_dtype types[] = {PPCC_F32, PPCC_F16, PPCC_I64, PPCC_I32, PPCC_I8, PPCC_BOOL};
  int64_t shapes[][3] = {{2, 3, 5}, {7, 1, 1}};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    for (int r = 1; r <= 3; r += 2) {
      ppcc_host_tensor a, b;
      ck_assert(ppcc_host_tensor_alloc(&a, types[t], r, shapes[r == 3 ? 0 : 1]));
      for (int64_t j = 0; j < a.bytes; j++) ((unsigned char *)a.data)[j] = (unsigned char)(j * 7 % 2 == 0 ? j : 1);
      if (types[t] == PPCC_BOOL) memset(a.data, 1, (size_t)a.bytes);
      ppcc_diag d;
      ppcc_diag_init(&d, "test", NULL);
      const char *p = tmp(".npy");
      ck_assert_msg(ppcc_npy_write(p, &a, &d) == PPCC_OK, "%s", d.first);
      ck_assert_msg(ppcc_npy_read(p, &b, &d) == PPCC_OK, "%s", d.first);
      ck_assert_int_eq(b.dtype, a.dtype);
      ck_assert_int_eq(b.rank, a.rank);
      ck_assert(memcmp(a.shape, b.shape, sizeof(int64_t) * (size_t)r) == 0);
      ck_assert(memcmp(a.data, b.data, (size_t)a.bytes) == 0);
      ppcc_host_tensor_free(&a);
      ppcc_host_tensor_free(&b);
      unlink(p);
    }
}
END_TEST

START_TEST(npy_truncated_and_corrupt) {
  ppcc_host_tensor a, b;
  int64_t shape[] = {64};
  ck_assert(ppcc_host_tensor_alloc(&a, PPCC_F32, 1, shape));
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  const char *p = tmp(".npy");
  ck_assert(ppcc_npy_write(p, &a, &d) == PPCC_OK);
  FILE *f = fopen(p, "rb");
  unsigned char buf[1024];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  for (size_t cut = 0; cut < n; cut += 7) { /* every truncation fails cleanly */
    t_write_file(p, buf, cut);
    ppcc_diag_init(&d, "test", NULL);
    ck_assert_int_eq(ppcc_npy_read(p, &b, &d), PPCC_ERR_USER);
    ck_assert_msg(strstr(d.first, p) != NULL, "message does not name the file: %s", d.first);
  }
  t_write_file(p, buf, n);
  for (size_t i = 0; i + 3 < n; i++) /* big-endian: refused */
    if (memcmp(buf + i, "<f4", 3) == 0) buf[i] = '>';
  t_write_file(p, buf, n);
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_int_eq(ppcc_npy_read(p, &b, &d), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(d.first, "dtype"));
  ppcc_host_tensor_free(&a);
  unlink(p);
}
END_TEST

/* A one-param graph: w f32 [2, 3]. */
static ppcc_value param_w(void) {
  ppcc_value v = {.name = "w", .kind = PPCC_VALUE_PARAM, .dtype = PPCC_F32, .rank = 2, .shape = {2, 3}};
  v.layout = ppcc_layout_unsharded();
  return v;
}

static size_t safetensors_file(unsigned char *buf, const char *header, const float *data, size_t data_bytes) {
  size_t h = strlen(header);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, header, h);
  memcpy(buf + 8 + h, data, data_bytes);
  return 8 + h + data_bytes;
}

static ppcc_status load_w(const char *path, const ppcc_value *w, float *out, ppcc_diag *d) {
  ppcc_diag_init(d, "test", NULL);
  ppcc_weights *ws = ppcc_weights_open(path, d);
  if (!ws) return PPCC_ERR_USER;
  const void *data;
  void *owned;
  ppcc_status st = ppcc_weights_get(ws, w, &data, &owned, d);
  if (!st) memcpy(out, data, 24);
  free(owned);
  ppcc_weights_close(ws);
  return st;
}

START_TEST(safetensors_reads_and_checks) {
  float data[6] = {1, 2, 3, 4, 5, 6}, got[6];
  unsigned char buf[512];
  ppcc_value w = param_w();
  ppcc_diag d;
  const char *p = tmp(".safetensors");
  const char *good = "{\"__metadata__\":{\"a\":\"b\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
  size_t n = safetensors_file(buf, good, data, sizeof data);
  t_write_file(p, buf, n);
  ck_assert_msg(load_w(p, &w, got, &d) == PPCC_OK, "%s", d.first);
  ck_assert(memcmp(got, data, sizeof data) == 0);
  for (size_t cut = 0; cut < n; cut += 5) { /* truncated anywhere: a clean error */
    t_write_file(p, buf, cut);
    ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
    ck_assert_msg(strstr(d.first, p) != NULL, "%s", d.first);
  }
  struct { const char *header; const char *expect; } bad[] = {
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,48]}}", "past the end"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,4]}}", "bad data_offsets"},
    {"{\"w\":{\"dtype\":\"F16\",\"shape\":[2,6],\"data_offsets\":[0,24]}}", "is f16 but the graph declares f32"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]}}", "has shape [3, 2]"},
    {"{\"v\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", "tensor 'w' (a parameter of the graph) is missing"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", "20 data bytes"},
    {"{\"w\":{\"dtype\":\"Q4\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", "unsupported or missing dtype"},
    {"[1,2]", "not a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t_write_file(p, buf, safetensors_file(buf, bad[i].header, data, sizeof data));
    ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
    ck_assert_msg(strstr(d.first, bad[i].expect) && strstr(d.first, p), "case %zu: %s", i, d.first);
  }
  unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
  t_write_file(p, huge, sizeof huge);
  ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
  ck_assert_ptr_nonnull(strstr(d.first, "header length"));
  unlink(p);
}
END_TEST

static void put(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* header(88) pad(8) entries@96 (96 bytes) name@192 "w" data@208 */
static size_t irpa_file(unsigned char *b, const float *data, int type) {
  memset(b, 0, 256);
  put(b, 0x41505249u, 4);
  put(b + 8, 88, 8);
  put(b + 32, 1, 8);
  put(b + 40, 96, 8), put(b + 48, 96, 8);
  put(b + 56, 192, 8), put(b + 64, 1, 8);
  put(b + 72, 208, 8), put(b + 80, 24, 8);
  unsigned char *e = b + 96;
  put(e, type == 1 ? 85 : 76, 8);
  put(e + 8, (uint64_t)type, 4);
  put(e + 20, 0, 8), put(e + 28, 1, 8);
  if (type == 2) put(e + 60, 0, 8), put(e + 68, 24, 8);
  if (type == 1) { /* splat of 1.5f */
    float v = 1.5f;
    put(e + 60, 24, 8);
    memcpy(e + 68, &v, 4);
    e[84] = 4;
  }
  b[192] = 'w';
  memcpy(b + 208, data, 24);
  return 232;
}

START_TEST(irpa_reads_and_checks) {
  float data[6] = {1, 2, 3, 4, 5, 6}, got[6];
  unsigned char buf[256];
  ppcc_value w = param_w();
  ppcc_diag d;
  const char *p = tmp(".irpa");
  size_t n = irpa_file(buf, data, 2);
  t_write_file(p, buf, n);
  ck_assert_msg(load_w(p, &w, got, &d) == PPCC_OK, "%s", d.first);
  ck_assert(memcmp(got, data, sizeof data) == 0);
  for (size_t cut = 4; cut < n; cut += 3) {
    t_write_file(p, buf, cut);
    ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
    ck_assert_msg(strstr(d.first, p) != NULL, "%s", d.first);
  }
  t_write_file(p, buf, irpa_file(buf, data, 1)); /* splat entry */
  ck_assert_msg(load_w(p, &w, got, &d) == PPCC_OK, "%s", d.first);
  for (int j = 0; j < 6; j++) ck_assert_float_eq(got[j], 1.5f);
  irpa_file(buf, data, 2);
  put(buf + 96 + 68, 40, 8); /* data length past the storage segment */
  t_write_file(p, buf, n);
  ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "tensor 'w'") && strstr(d.first, "storage segment"), "%s", d.first);
  irpa_file(buf, data, 2);
  put(buf + 96 + 68, 20, 8); /* fits the file, wrong size for the graph */
  t_write_file(p, buf, n);
  ck_assert_int_eq(load_w(p, &w, got, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "tensor 'w' has 20 bytes"), "%s", d.first);
  unlink(p);
}
END_TEST

/* ---------------- issue 11: strict parsers, lookup, FIFOs ---------------- */

static ppcc_status npy_header(const char *header, ppcc_diag *d) {
  unsigned char buf[512];
  size_t h = strlen(header);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)h;
  buf[9] = 0;
  memcpy(buf + 10, header, h);
  memset(buf + 10 + h, 0, 24); /* data: 6 f32 zeros */
  const char *p = tmp(".npy");
  t_write_file(p, buf, 10 + h + 24);
  ppcc_diag_init(d, "test", NULL);
  ppcc_host_tensor t;
  ppcc_status st = ppcc_npy_read(p, &t, d);
  ppcc_host_tensor_free(&t);
  unlink(p);
  return st;
}

/* The header is a Python dict literal: what numpy writes (and reorders)
 * is read; anything literal_eval or numpy would refuse is refused. */
START_TEST(npy_header_is_a_dict_literal) {
  static const char *const good[] = {
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
    "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
    "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}   \n",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n",
  };
  static const char *const bad[] = {
    "{'junk': \"'descr': '<f4'\", 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ",
    "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }",
    "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }",
    "{'descr': '<f4', 'fortran_order': False 'shape': (2, 3), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}",
    "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3)}",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}",
    "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2, 3)}",
    "'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
    "{'descr': '<f4', 'fortran_order': False}",
  };
  ppcc_diag d;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    ck_assert_msg(npy_header(good[i], &d) == PPCC_OK, "refused [%s]: %s", good[i], d.first);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(npy_header(bad[i], &d) == PPCC_ERR_USER, "accepted [%s]", bad[i]);
    ck_assert_msg(strstr(d.first, ".npy"), "[%s]: %s", bad[i], d.first);
  }
  /* A long descr is shown as it is (not as ''). */
  npy_header("{'descr': '<f4_and_a_descr_longer_than_31_bytes', 'fortran_order': False, 'shape': (2, 3)}", &d);
  ck_assert_msg(strstr(d.first, "'<f4_and_a_descr_longer_than_31_bytes'"), "%s", d.first);
}
END_TEST

/* A FIFO given as a .npy or weights file is refused at once, not waited
 * on in open() (the test would time out). */
START_TEST(fifo_is_refused_without_blocking) {
  const char *p = tmp(".fifo");
  unlink(p);
  ck_assert_int_eq(mkfifo(p, 0600), 0);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_host_tensor t;
  ck_assert_int_eq(ppcc_npy_read(p, &t, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "not a regular file"), "%s", d.first);
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_ptr_null(ppcc_weights_open(p, &d));
  ck_assert_msg(strstr(d.first, "not a regular file"), "%s", d.first);
  unlink(p);
}
END_TEST

/* 20000 tensors: each name finds its own tensor (hashed lookup), a name
 * that is not there finds nothing, and a name given twice is refused. */
START_TEST(weights_lookup_by_name) {
  enum { N = 20000 };
  size_t cap = (size_t)N * 80 + 64;
  char *header = malloc(cap);
  ck_assert_ptr_nonnull(header);
  size_t h = (size_t)snprintf(header, cap, "{");
  for (int i = 0; i < N; i++)
    h += (size_t)snprintf(header + h, cap - h, "%s\"t%d\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                          i ? "," : "", i, 4 * i, 4 * i + 4);
  h += (size_t)snprintf(header + h, cap - h, "}");
  while ((8 + h) % 8) header[h++] = ' ';
  unsigned char *buf = malloc(8 + h + 4 * (size_t)N);
  ck_assert_ptr_nonnull(buf);
  for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(buf + 8, header, h);
  for (int32_t i = 0; i < N; i++) memcpy(buf + 8 + h + 4 * (size_t)i, &i, 4);
  const char *p = tmp(".safetensors");
  t_write_file(p, buf, 8 + h + 4 * (size_t)N);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_weights *ws = ppcc_weights_open(p, &d);
  ck_assert_msg(ws != NULL, "%s", d.first);
  char name[32];
  ppcc_value v = {.name = name, .kind = PPCC_VALUE_PARAM, .dtype = PPCC_I32, .rank = 1, .shape = {1}};
  v.layout = ppcc_layout_unsharded();
  for (int32_t i = N - 1; i >= 0; i -= 7) {
    snprintf(name, sizeof name, "t%d", i);
    const void *data;
    void *owned;
    ck_assert_msg(ppcc_weights_get(ws, &v, &data, &owned, &d) == PPCC_OK, "%s", d.first);
    int32_t got;
    memcpy(&got, data, 4);
    ck_assert_int_eq(got, i);
    free(owned);
  }
  snprintf(name, sizeof name, "t%d", N);
  const void *data;
  void *owned;
  ck_assert_int_eq(ppcc_weights_get(ws, &v, &data, &owned, &d), PPCC_ERR_USER);
  ck_assert_msg(strstr(d.first, "is missing"), "%s", d.first);
  ppcc_weights_close(ws);
  /* t7 twice (the second one replaces t8's name). */
  char *dup = strstr(header, "\"t8\"");
  ck_assert_ptr_nonnull(dup);
  memcpy(dup, "\"t7\"", 4);
  memcpy(buf + 8, header, h);
  t_write_file(p, buf, 8 + h + 4 * (size_t)N);
  ppcc_diag_init(&d, "test", NULL);
  ck_assert_ptr_null(ppcc_weights_open(p, &d));
  ck_assert_msg(strstr(d.first, "tensor 't7' is defined twice"), "%s", d.first);
  unlink(p);
  free(buf);
  free(header);
}
END_TEST

/* gen_safetensors writes files the strict reader takes: mixed dtype widths
 * tile the data section with no padding, each tensor aligned. */
START_TEST(generated_safetensors_tile) {
  const char *model = "{\"ppcc\": 1, \"devices\": 1, \"params\": ["
                      "{\"name\": \"b\", \"dtype\": \"bool\", \"shape\": [3]},"
                      "{\"name\": \"h\", \"dtype\": \"f16\", \"shape\": [3]},"
                      "{\"name\": \"f\", \"dtype\": \"f32\", \"shape\": [3]},"
                      "{\"name\": \"l\", \"dtype\": \"i64\", \"shape\": [1]}],"
                      "\"ops\": [{\"op\": \"neg\", \"in\": [\"f\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}";
  char model_path[300], weights[300], cmd[1200];
  snprintf(model_path, sizeof model_path, "%s", tmp(".json"));
  t_write_text(model_path, model);
  snprintf(weights, sizeof weights, "%s", tmp(".safetensors"));
  snprintf(cmd, sizeof cmd, "'%s' '%s' 3 '%s'", t_tool_path("gen_safetensors"), model_path, weights);
  ck_assert_int_eq(system(cmd), 0);
  ppcc_diag d;
  ppcc_diag_init(&d, "test", NULL);
  ppcc_weights *ws = ppcc_weights_open(weights, &d);
  ck_assert_msg(ws != NULL, "%s", d.first);
  ppcc_weights_close(ws);
  unlink(weights);
  unlink(model_path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rt_loaders");
  TCase *tc = t_add_tcase(s, "loaders", 0);
  tcase_add_test(tc, npy_round_trip);
  tcase_add_test(tc, npy_truncated_and_corrupt);
  tcase_add_test(tc, safetensors_reads_and_checks);
  tcase_add_test(tc, irpa_reads_and_checks);
  tcase_add_test(tc, npy_header_is_a_dict_literal);
  tcase_add_test(tc, fifo_is_refused_without_blocking);
  tcase_add_test(tc, weights_lookup_by_name);
  tcase_add_test(tc, generated_safetensors_tile);
  return t_run_suite(s);
}
