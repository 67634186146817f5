/* `ppcc run --expect NAME=FILE.npy`: compares a graph output with a given
 * reference (ONNX Runtime's, PyTorch's...) by the same criterion as
 * --check (ppcc_compare), so both follow any change to it. */
#include <string.h>
#include "exec.h"

static void shape_text(const ppcc_host_tensor *t, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "%s[", ppcc_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && off < n; i++) off += (size_t)snprintf(buf + off, n - off, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}

ppcc_status ppcc_expect_outputs(const ppcc_graph *g, const ppcc_input_arg *expects, int n,
                                const ppcc_host_tensor *got, FILE *log, ppcc_diag *d) {
  for (int e = 0; e < n; e++) {
    int k = 0;
    while (k < g->n_outputs && strcmp(g->values[g->outputs[k]].name, expects[e].name) != 0) k++;
    if (k == g->n_outputs) return ppcc_error(d, "--expect %s: the model has no output of that name", expects[e].name);
    ppcc_host_tensor ref = {0};
    ppcc_status st = ppcc_npy_read(expects[e].path, &ref, d);
    if (st) return st;
    ppcc_compare_result r = ppcc_compare(&got[k], &ref);
    const ppcc_value *p = &g->values[g->outputs[k]];
    if (got[k].dtype != ref.dtype || got[k].rank != ref.rank ||
        memcmp(got[k].shape, ref.shape, sizeof(int64_t) * (size_t)ref.rank) != 0) {
      char a[160], b[160];
      shape_text(&got[k], a, sizeof a);
      shape_text(&ref, b, sizeof b);
      ppcc_host_tensor_free(&ref);
      return ppcc_error(d, "--expect %s: output is %s, %s holds %s", p->name, a, expects[e].path, b);
    }
    ppcc_host_tensor_free(&ref);
    st = rt_report_comparison(p, &r, "expect", expects[e].path, log, d);
    if (st) return st;
  }
  return PPCC_OK;
}
