/* libFuzzer target: the ONNX importer (src/import/onnx_*.c) on arbitrary
 * bytes: protobuf decoding, tensor decoding, folding, pattern matching and
 * op translation. External data is refused (no folder). Whatever imports
 * must give a model.json that ppcc's frontend loads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ppcc/frontend.h"
#include "ppcc/import_onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const ppcc_onnx_shape shapes[] = {
    {"x", 2, {4, 16}}, {"input_ids", 2, {1, 8}}, {"token_type_ids", 2, {1, 8}}, {"attention_mask", 2, {1, 8}},
  };
  ppcc_onnx_options opts = {.shapes = shapes, .n_shapes = 4, .devices = 1, .shapes_may_miss = true};
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz.onnx", NULL);
  ppcc_onnx_result r;
  ppcc_status st = ppcc_import_onnx_memory(data, size, NULL, &opts, &r, &d);
  if (st != PPCC_OK) {
    if (d.errors == 0) { /* every refusal names its reason */
      fprintf(stderr, "fuzz: import failed without a diagnostic\n");
      abort();
    }
    return 0;
  }
  ppcc_diag_init(&d, "fuzz.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(r.model_json, r.model_len, &d);
  if (!g) {
    fprintf(stderr, "fuzz: the imported model.json does not load: %s\n", d.first);
    abort();
  }
  ppcc_graph_free(g);
  ppcc_onnx_result_free(&r);
  return 0;
}
