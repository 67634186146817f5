#ifndef PPCC_FRONTEND_H
#define PPCC_FRONTEND_H
#include "ppcc/graph.h"

/* Parses a model.json (DESIGN §3) into a graph: values declared, ops added
 * in program order with their attributes checked against the op table's
 * schema. Errors carry the JSON path, e.g. "ops[3].in[1]". Returns NULL on
 * error. Shape inference and placement are the passes' job. */
ppcc_graph *ppcc_load_model_file(const char *path, ppcc_diag *d);
ppcc_graph *ppcc_load_model_string(const char *json, size_t len, ppcc_diag *d);

#endif
