/* libFuzzer target: the --devices-spec reader (src/ir/devices_spec.c) and
 * auto-partition driven by what it accepted. A refusal must come with a
 * one-line diagnostic; an accepted spec then partitions a fixed 4-device
 * FFN chain (uniform pp2 x tp2, and per-stage TP sizes 2,1,1 chosen from
 * the spec's first speed) and every pass must either accept the result or
 * refuse it with one line, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/devices_spec.h"
#include "ppcc/frontend.h"
#include "ppcc/graph.h"
#include "ppcc/passes.h"

static const char model[] =
    "{\"ppcc\": 1, \"name\": \"f\", \"devices\": 4, \"params\": ["
    "{\"name\": \"u0\", \"dtype\": \"f32\", \"shape\": [16, 32]}, {\"name\": \"d0\", \"dtype\": \"f32\", \"shape\": [32, 16]},"
    "{\"name\": \"u1\", \"dtype\": \"f32\", \"shape\": [16, 64]}, {\"name\": \"d1\", \"dtype\": \"f32\", \"shape\": [64, 16]},"
    "{\"name\": \"u2\", \"dtype\": \"f32\", \"shape\": [16, 32]}, {\"name\": \"d2\", \"dtype\": \"f32\", \"shape\": [32, 16]}],"
    "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4, 16]}], \"ops\": ["
    "{\"op\": \"matmul\", \"in\": [\"x\", \"u0\"], \"out\": [\"h0\"]}, {\"op\": \"gelu\", \"in\": [\"h0\"], \"out\": [\"a0\"]},"
    "{\"op\": \"matmul\", \"in\": [\"a0\", \"d0\"], \"out\": [\"y0\"]},"
    "{\"op\": \"matmul\", \"in\": [\"y0\", \"u1\"], \"out\": [\"h1\"]}, {\"op\": \"gelu\", \"in\": [\"h1\"], \"out\": [\"a1\"]},"
    "{\"op\": \"matmul\", \"in\": [\"a1\", \"d1\"], \"out\": [\"y1\"]},"
    "{\"op\": \"matmul\", \"in\": [\"y1\", \"u2\"], \"out\": [\"h2\"]}, {\"op\": \"gelu\", \"in\": [\"h2\"], \"out\": [\"a2\"]},"
    "{\"op\": \"matmul\", \"in\": [\"a2\", \"d2\"], \"out\": [\"y2\"]}], \"outputs\": [\"y2\"]}";

static void one_line(const ppcc_diag *d, const char *what) {
  if (d->errors == 0 || strchr(d->first, '\n')) {
    fprintf(stderr, "fuzz: %s refused without a one-line diagnostic: '%s'\n", what, d->first);
    abort();
  }
}

static void partition_with(const ppcc_devices_spec *spec, int pp, int tp, const int *stage_tp) {
  ppcc_diag d;
  ppcc_diag_init(&d, "model", NULL);
  ppcc_graph *g = ppcc_load_model_string(model, sizeof model - 1, &d);
  if (!g) abort(); /* the fixed model is valid */
  g->partition.pp = pp;
  g->partition.tp = tp;
  g->partition.stage_tp = stage_tp;
  g->partition.devices_spec = spec;
  if (ppcc_run_passes(g, NULL, NULL, &d) != PPCC_OK) one_line(&d, "the partition");
  ppcc_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ppcc_diag d;
  ppcc_diag_init(&d, "spec.json", NULL);
  ppcc_devices_spec spec;
  if (ppcc_devices_spec_parse("spec.json", (const char *)data, size, &spec, &d) != PPCC_OK) {
    one_line(&d, "spec");
    return 0;
  }
  partition_with(&spec, 2, 2, NULL);
  static const int sizes[2][3] = {{2, 1, 1}, {1, 1, 2}};
  partition_with(&spec, 3, 2, sizes[spec.speed[0] > 1.0]);
  ppcc_devices_spec_free(&spec);
  return 0;
}
