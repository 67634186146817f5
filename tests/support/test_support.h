/* Helpers shared by the Check test programs. */
#ifndef PPCC_TEST_SUPPORT_H
#define PPCC_TEST_SUPPORT_H
#include <check.h>
#include "ppcc/diag.h"
#include "ppcc/graph.h"

/* Loads a model from a JSON string and runs every pass. Returns the graph
 * (caller frees) or NULL; d receives the diagnostics (quiet). */
ppcc_graph *t_compile(const char *json, ppcc_diag *d);
/* Compiles a model assembled from its params, inputs, ops and outputs
 * lists, written with single quotes for readability (turned into double
 * quotes). NULL on error, with the diagnostics in d. */
ppcc_graph *t_model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs,
                    ppcc_diag *d);
/* Same, from a path relative to the source dir (e.g. "testdata/models/x.json"). */
ppcc_graph *t_compile_file(const char *rel_path, ppcc_diag *d);
/* Path under the source dir, in a static buffer. */
const char *t_src_path(const char *rel);
/* Value by name, failing the test if missing. */
const ppcc_value *t_value(const ppcc_graph *g, const char *name);
/* Runs a Check suite and returns the process exit code. */
int t_run_suite(Suite *s);

#endif
