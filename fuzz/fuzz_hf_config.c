/* libFuzzer target: the Hugging Face config.json reader
 * (src/import/hf.c). A refusal must come with a one-line diagnostic; an
 * accepted config of a small model is turned into a graph, which the
 * frontend must accept (the builder never writes an invalid model.json
 * for a config it accepted). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/import/import.h"
#include "ppcc/frontend.h"
#include "ppcc/graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ppcc_diag d;
  ppcc_diag_init(&d, "config.json", NULL);
  llama_spec s = {0};
  if (llama_spec_from_hf_json("config.json", (const char *)data, size, &s, &d) != PPCC_OK) {
    if (d.errors == 0 || strchr(d.first, '\n')) {
      fprintf(stderr, "fuzz: config refused without a one-line diagnostic: '%s'\n", d.first);
      abort();
    }
    return 0;
  }
  s.tp = 1;
  s.pp = 1;
  s.batch = 1;
  s.seq = 2;
  s.cache = 4;
  s.dtype = "f32";
  /* keep the graph small: the builder's cost grows with layers only */
  if (s.layers > 4 || llama_spec_error(&s)) return 0;
  size_t len;
  char *json = llama_graph_json(&s, &len);
  if (!json) return 0;
  ppcc_diag d2;
  ppcc_diag_init(&d2, "graph", NULL);
  ppcc_graph *g = ppcc_load_model_string(json, len, &d2);
  if (!g) {
    fprintf(stderr, "fuzz: the graph of an accepted config does not load: %s\n", d2.first);
    abort();
  }
  ppcc_graph_free(g);
  free(json);
  return 0;
}
