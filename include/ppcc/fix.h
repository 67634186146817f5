/* Fixes for placement errors (issue 17 item 3).
 *
 * When a pass refuses a placement it marks the error with a site
 * (ppcc_diag.site: the kind and the model op). The fix generator
 * (src/fix/fixes.c) turns that into a diagnosis: the --why chain of how
 * each operand got its placement, and one to three machine-applicable
 * fixes, each a list of edits with its cost, verified by compiling the
 * edited model. The edits are applied by src/fix/model_edit.c, the one
 * place that rewrites a model.json:
 *
 *   {"edit": "insert_op", "before": I, "op": {...model op...}}
 *   {"edit": "set_operand", "op": I, "index": K, "value": "NAME"}
 *   {"edit": "set_attr", "target": {"param"|"input": "NAME"} or {"op": I},
 *    "key": "pinned", "value": false}          (value null removes the key;
 *    "key": "devices" moves a param: a block moved to another stage)
 *   {"edit": "set_option", "option": "pp"|"tp"|"device-memory", "value": N}
 *
 * Edits apply in order; op indices refer to the model as it is when the
 * edit applies. set_option changes the command line, not the model. */
#ifndef PPCC_FIX_H
#define PPCC_FIX_H
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include "ppcc/graph.h"

/* The partition request the model is compiled with (--pp/--tp/--device-memory,
 * per-stage TP sizes, --devices-spec; as in ppcc_graph.partition). */
typedef struct ppcc_fix_options {
  int pp, tp;
  int64_t device_memory;
  const int *stage_tp;                          /* NULL: tp for every stage */
  const struct ppcc_devices_spec *devices_spec; /* NULL: none */
} ppcc_fix_options;

/* Loads the model and runs every pass with the options' request. Returns
 * the compiled graph, or NULL with *status set; with keep_failed, a graph
 * the passes refused is returned as they left it (*status says so). */
ppcc_graph *ppcc_fix_compile(const cJSON *model, const ppcc_fix_options *opt, ppcc_diag *d,
                             ppcc_status *status, bool keep_failed);

/* The diagnosis of a failed compile: {"kind", "message", "op", "op_name",
 * "operands", "chain", "fixes": [{"text", "cost_bytes", "cost_kind",
 * "result", "edits"}]}. g is the graph as the failing pass left it (NULL:
 * the message only). NULL only when out of memory. */
cJSON *ppcc_fix_diagnose(const cJSON *model, const ppcc_graph *g, const ppcc_diag *d,
                         const ppcc_fix_options *opt);

/* The chain and fixes of a diagnosis as indented "  note: " and "  fix: "
 * lines through the diagnostics module, after the one-line error. */
void ppcc_fix_print_text(const cJSON *diagnosis, ppcc_diag *d);

/* Applies a fix's edits to model (set_option to *opt). False with the
 * reason in why if an edit does not apply. */
bool ppcc_fix_apply(cJSON *model, const cJSON *fix, ppcc_fix_options *opt, char *why, size_t n);

#endif
