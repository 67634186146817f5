#ifndef PPCC_FRONTEND_H
#define PPCC_FRONTEND_H
#include "ppcc/graph.h"

/* Parses a model.json (DESIGN §3) into a graph: values declared, ops added
 * in program order with their attributes checked against the op table's
 * schema. Errors carry the JSON path, e.g. "ops[3].in[1]". Returns NULL on
 * error. Shape inference and placement are the passes' job. */
ppcc_graph *ppcc_load_model_file(const char *path, ppcc_diag *d);
ppcc_graph *ppcc_load_model_string(const char *json, size_t len, ppcc_diag *d);

/* Whether s may name a value or a model in model.json (src/frontend/names.c):
 * non-empty, at most PPCC_MAX_NAME bytes, printable UTF-8, no '@' unless
 * allow_at (an importer that renames '@' itself). When not, why (NULL:
 * not wanted) gets the reason, "name is not valid UTF-8 (byte 3)", as the
 * loader reports it. */
bool ppcc_name_check(const char *s, bool allow_at, char *why, size_t why_len);

#endif
