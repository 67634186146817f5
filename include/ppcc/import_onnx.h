/* `ppcc import onnx`: an ONNX model (protobuf, opsets 13-18) in, a
 * model.json (DESIGN §3) and a safetensors file of its initializers out
 * (DESIGN §9). The protobuf is read with protobuf-c code generated from
 * Debian's onnx.proto. */
#ifndef PPCC_IMPORT_ONNX_H
#define PPCC_IMPORT_ONNX_H
#include <stddef.h>
#include <stdint.h>
#include "ppcc/diag.h"
#include "ppcc/graph.h"

/* --shape NAME=D0,D1,...: the static shape of a graph input. */
typedef struct ppcc_onnx_shape {
  const char *name;
  int rank;
  int64_t dims[PPCC_MAX_RANK];
} ppcc_onnx_shape;

typedef struct ppcc_onnx_options {
  const ppcc_onnx_shape *shapes;
  int n_shapes;
  int devices; /* "devices" of the model written (>= 1) */
  bool shapes_may_miss; /* a shape naming no graph input is no error (the fuzzer gives one set for all models) */
} ppcc_onnx_options;

/* What an import produces, all in memory until the driver commits it. */
typedef struct ppcc_onnx_result {
  char *model_json;    /* model.json text */
  size_t model_len;
  uint8_t *weights;    /* safetensors bytes of every param */
  size_t weights_len;
  int n_nodes, n_ops, n_params; /* ONNX nodes read, ppcc ops and params written */
} ppcc_onnx_result;

/* Imports the file at path; external-data tensors are read from files in
 * its folder. Diagnostics name the file and the node/tensor. */
ppcc_status ppcc_import_onnx_file(const char *path, const ppcc_onnx_options *opts,
                                  ppcc_onnx_result *out, ppcc_diag *d);
/* Same for a protobuf already in memory; dir is the folder external data
 * is read from (NULL: external data is refused). */
ppcc_status ppcc_import_onnx_memory(const uint8_t *data, size_t len, const char *dir,
                                    const ppcc_onnx_options *opts, ppcc_onnx_result *out,
                                    ppcc_diag *d);
void ppcc_onnx_result_free(ppcc_onnx_result *r);
/* Replaces r's model.json by g's with every param's and input's layout,
 * devices and pinned flag written out, and g's ops (those auto-partition
 * inserted included): the placed model, which ppcc report/run read as it
 * is (without --tp/--pp). */
ppcc_status ppcc_onnx_write_placed(const ppcc_graph *g, ppcc_onnx_result *r, ppcc_diag *d);

/* Parses "NAME=D0,D1,..." into s (name points into text's copy held by
 * the caller); false on junk. */
int ppcc_onnx_parse_shape(char *text, ppcc_onnx_shape *s);

#endif
