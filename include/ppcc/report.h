#ifndef PPCC_REPORT_H
#define PPCC_REPORT_H
#include <stdio.h>
#include "ppcc/graph.h"
#include "ppcc/predict.h"

typedef struct ppcc_device_summary {
  int device;
  int64_t param_bytes;
  int64_t peak_activation_bytes;
  double flops;
} ppcc_device_summary;

/* Per-device totals; returns an array of g->n_devices rows (caller frees). */
ppcc_device_summary *ppcc_device_summaries(const ppcc_graph *g);

ppcc_status ppcc_report_json(const ppcc_graph *g, FILE *out, ppcc_diag *d);
ppcc_status ppcc_report_text(const ppcc_graph *g, FILE *out, ppcc_diag *d);
ppcc_status ppcc_report_dot(const ppcc_graph *g, FILE *out, ppcc_diag *d);
/* The same with the prediction (include/ppcc/predict.h) made with opts
 * (NULL: one microbatch, uncalibrated); the plain forms pass NULL. */
ppcc_status ppcc_report_json_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d);
ppcc_status ppcc_report_text_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d);
ppcc_status ppcc_report_dot_with(const ppcc_graph *g, const ppcc_predict_options *opts, FILE *out, ppcc_diag *d);

/* Prints the chain of rules that decided the value's devices and pin:
 * its rule, its defining op, the operands that decided it (pinned ones,
 * transferred ones), recursively up to params and inputs, each value once.
 * An unknown name is a user error naming it. */
ppcc_status ppcc_explain(const ppcc_graph *g, const char *value, FILE *out, ppcc_diag *d);
/* The --why block of value index v alone (its placement, rule, defining
 * op and operands), without the chain above it. */
void ppcc_explain_value(const ppcc_graph *g, int v, FILE *out);

#endif
