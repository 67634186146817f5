#include "test_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/passes.h"

ppcc_graph *t_compile(const char *json, ppcc_diag *d) {
  ppcc_diag_init(d, "test.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(json, strlen(json), d);
  if (!g) return NULL;
  if (ppcc_run_passes(g, NULL, NULL, d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

ppcc_graph *t_model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs,
                    ppcc_diag *d) {
  size_t n = strlen(params) + strlen(inputs) + strlen(ops) + strlen(outputs) + 256;
  char *json = malloc(n);
  ck_assert_ptr_nonnull(json);
  snprintf(json, n, "{'ppcc': 1, 'name': 't', 'devices': %d, 'params': [%s], 'inputs': [%s], 'ops': [%s], 'outputs': [%s]}",
           devices, params, inputs, ops, outputs);
  for (char *p = json; *p; p++)
    if (*p == '\'') *p = '"';
  ppcc_graph *g = t_compile(json, d);
  free(json);
  return g;
}

const char *t_src_path(const char *rel) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", PPCC_SOURCE_DIR, rel);
  return buf;
}

ppcc_graph *t_compile_file(const char *rel_path, ppcc_diag *d) {
  const char *path = t_src_path(rel_path);
  ppcc_diag_init(d, path, NULL);
  ppcc_graph *g = ppcc_load_model_file(path, d);
  if (!g) return NULL;
  if (ppcc_run_passes(g, NULL, NULL, d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

const ppcc_value *t_value(const ppcc_graph *g, const char *name) {
  int i = ppcc_find_value(g, name);
  ck_assert_msg(i >= 0, "value '%s' not found", name);
  return &g->values[i];
}

int t_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}
