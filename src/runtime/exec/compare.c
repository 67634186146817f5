/* Comparing a run's tensors with references (--check, --expect, the
 * divergence search): the tolerance per dtype, the comparison, and its
 * one-line report. Below run.c, expect.c and divergence.c, which all use it. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "exec.h"

ppcc_tolerance ppcc_check_tolerance(ppcc_dtype t) {
  switch (t) {
  case PPCC_F32: return (ppcc_tolerance){1.3e-6, 1e-5};
  case PPCC_F16: return (ppcc_tolerance){1e-3, 1e-5};
  case PPCC_BF16: return (ppcc_tolerance){1.6e-2, 1e-5};
  default: return (ppcc_tolerance){0, 0};
  }
}

static double element(const ppcc_host_tensor *t, int64_t j) {
  switch (t->dtype) {
  case PPCC_F32: return ((const float *)t->data)[j];
  case PPCC_F16: return ppcc_f16_to_f32(((const uint16_t *)t->data)[j]);
  case PPCC_BF16: return ppcc_bf16_to_f32(((const uint16_t *)t->data)[j]);
  case PPCC_I64: return (double)((const int64_t *)t->data)[j];
  case PPCC_I32: return ((const int32_t *)t->data)[j];
  case PPCC_I8: return ((const int8_t *)t->data)[j];
  case PPCC_BOOL: return ((const uint8_t *)t->data)[j];
  default: return 0;
  }
}

static bool int_equal(const ppcc_host_tensor *a, const ppcc_host_tensor *b, int64_t j) {
  if (a->dtype == PPCC_I64) return ((const int64_t *)a->data)[j] == ((const int64_t *)b->data)[j];
  return element(a, j) == element(b, j); /* exact in a double below 64 bits */
}

ppcc_compare_result ppcc_compare(const ppcc_host_tensor *got, const ppcc_host_tensor *ref) {
  return rt_compare_at_scale(got, ref, -1);
}

ppcc_compare_result rt_compare_at_scale(const ppcc_host_tensor *got, const ppcc_host_tensor *ref, double scale_of) {
  ppcc_compare_result r = {0, 0, true, 0, 0, 0, -1, 0, 0};
  int64_t n = ppcc_num_elements(ref->rank, ref->shape);
  if (got->dtype != ref->dtype || got->rank != ref->rank ||
      memcmp(got->shape, ref->shape, sizeof(int64_t) * (size_t)got->rank) != 0)
    return (ppcc_compare_result){INFINITY, INFINITY, false, 0, n, 0, -1, NAN, NAN};
  ppcc_tolerance tol = ppcc_check_tolerance(ref->dtype);
  bool is_float = ppcc_dtype_is_float(ref->dtype);
  double max_ref = scale_of >= 0 ? scale_of : 0;
  for (int64_t j = 0; is_float && scale_of < 0 && j < n; j++) {
    double b = fabs(element(ref, j));
    if (b > max_ref && b <= DBL_MAX) max_ref = b;
  }
  double scale = max_ref > 1 ? max_ref : 1;
  r.atol = tol.atol * scale + tol.rtol * (scale > 1 ? scale : max_ref); /* see ppcc_check_tolerance */
  double worst_excess = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    double a = element(got, j), b = element(ref, j), err, excess;
    if (!is_float) {
      bool same = int_equal(got, ref, j);
      err = same ? 0 : fabs(a - b);
      excess = same ? 0 : fmax(err, 1);
    } else if (isnan(a) || isnan(b)) {
      bool same = isnan(a) && isnan(b);
      err = same ? 0 : INFINITY;
      excess = same ? -INFINITY : INFINITY;
      r.n_nan += isnan(a) && !isnan(b);
    } else {
      err = a == b ? 0 : fabs(a - b); /* equal infinities agree */
      excess = err - (r.atol + tol.rtol * fabs(b));
      if (!(excess <= DBL_MAX)) excess = DBL_MAX; /* an infinity against another value (a NaN ranks above) */
    }
    if (err > r.max_abs) r.max_abs = err;
    if (err > 0 && err / fmax(fabs(b), 1e-30) > r.max_rel) r.max_rel = err / fmax(fabs(b), 1e-30);
    if (excess > 0 || (!is_float && err > 0)) r.n_bad++;
    if (excess > worst_excess) {
      worst_excess = excess;
      r.worst = j;
      r.worst_got = a;
      r.worst_ref = b;
    }
  }
  r.ok = r.n_bad == 0;
  return r;
}

/* "[2, 7]": the multi-dimensional index of flat element j. */
static void index_str(const ppcc_value *p, int64_t j, char *buf, size_t n) {
  int64_t idx[PPCC_MAX_RANK];
  for (int i = p->rank - 1; i >= 0; i--) {
    idx[i] = p->shape[i] > 0 ? j % p->shape[i] : 0;
    j = p->shape[i] > 0 ? j / p->shape[i] : 0;
  }
  rt_shape_str(p->rank, idx, buf, n);
}

/* "every |got-ref| <= 1e-05*8.3 + 1.3e-06*|ref| (f32)" */
static void criterion_str(const ppcc_value *p, const ppcc_compare_result *r, char *buf, size_t n) {
  ppcc_tolerance t = ppcc_check_tolerance(p->dtype);
  if (!ppcc_dtype_is_float(p->dtype))
    snprintf(buf, n, "every element equal (%s)", ppcc_dtype_name(p->dtype));
  else
    snprintf(buf, n, "every |got-ref| <= %.3g + %.2g*|ref| (%s: atol %.0e*max(1, M) + rtol %.2g*M, M = max|ref|)",
             r->atol, t.rtol, ppcc_dtype_name(p->dtype), t.atol, t.rtol);
}

/* Logs one output's comparison (`label NAME: ...: ok|FAIL`) and returns
 * the error when it fails, naming the worst element (--check, --expect). */
ppcc_status rt_report_comparison(const ppcc_value *p, const ppcc_compare_result *r, const char *label,
                                 const char *against, FILE *log, ppcc_diag *d) {
  char at[PPCC_MAX_RANK * 24 + 8] = "[]", rule[256];
  if (r->worst >= 0) index_str(p, r->worst, at, sizeof at);
  criterion_str(p, r, rule, sizeof rule);
  char name[4 * PPCC_MAX_NAME];
  ppcc_escape_text(name, sizeof name, p->name);
  if (log)
    fprintf(log, "%s %s: max abs error %.3g, max rel error %.3g, worst at %s (got %.6g, ref %.6g); %s: %s\n", label,
            name, r->max_abs, r->max_rel, at, r->worst_got, r->worst_ref, rule, r->ok ? "ok" : "FAIL");
  if (r->ok) return PPCC_OK;
  if (r->n_nan > 0)
    return ppcc_error(d, "output '%s' differs from %s: NaN where the reference is not NaN (%lld elements; first at %s, "
                         "ref %.6g)",
                      p->name, against, (long long)r->n_nan, at, r->worst_ref);
  return ppcc_error(d, "output '%s' differs from %s: %lld elements fail, worst at %s: got %.6g, ref %.6g (max abs "
                       "error %.3g; needs %s)",
                    p->name, against, (long long)r->n_bad, at, r->worst_got, r->worst_ref, r->max_abs, rule);
}

