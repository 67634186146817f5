/* libFuzzer target: the run path. A small 2-device graph (embedding of a
 * hidden-split table, rms_norm, softmax, a KV-cache style index_copy into a
 * split cache, unshard), compiled once; each input fills its ids, cache
 * positions and float tensors, and the graph runs on the interpreter and
 * on the JIT-compiled device functions.
 *
 * Input layout: byte 0 flags (bit 0: ids and positions folded into range,
 * so the success path is reached often; bit 1: raw 64-bit indices), then
 * the ids and positions (int8 each, or int64 with bit 1), then raw f32
 * bits for the float inputs in order (missing bytes are zero), so NaN,
 * infinities and subnormals come for free.
 *
 * Any outcome is fine except: a crash or sanitizer report (an index past
 * a buffer), one backend failing where the other succeeds, a failure
 * without a diagnostic, or outputs that differ beyond the --check
 * tolerance (ppcc_compare). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/jit.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"

static const char model[] =
    "{\"ppcc\": 1, \"name\": \"fuzz_run\", \"devices\": 2,\n"
    " \"inputs\": [\n"
    "  {\"name\": \"ids\", \"dtype\": \"i64\", \"shape\": [4], \"shard\": {\"kind\": \"replicated\", \"count\": 2}},\n"
    "  {\"name\": \"tab\", \"dtype\": \"f32\", \"shape\": [6, 8], \"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}},\n"
    "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [8]},\n"
    "  {\"name\": \"cache\", \"dtype\": \"f32\", \"shape\": [5, 8], \"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}},\n"
    "  {\"name\": \"pos\", \"dtype\": \"i64\", \"shape\": [2], \"shard\": {\"kind\": \"replicated\", \"count\": 2}},\n"
    "  {\"name\": \"upd\", \"dtype\": \"f32\", \"shape\": [2, 8], \"shard\": {\"kind\": \"split\", \"dim\": 1, \"count\": 2}}],\n"
    " \"ops\": [\n"
    "  {\"op\": \"embedding\", \"in\": [\"ids\", \"tab\"], \"out\": [\"e\"]},\n"
    "  {\"op\": \"unshard\", \"in\": [\"e\"], \"out\": [\"e1\"]},\n"
    "  {\"op\": \"rms_norm\", \"in\": [\"e1\", \"w\"], \"out\": [\"n\"]},\n"
    "  {\"op\": \"softmax\", \"in\": [\"n\"], \"out\": [\"s\"]},\n"
    "  {\"op\": \"index_copy\", \"in\": [\"cache\", \"pos\", \"upd\"], \"out\": [\"c\"], \"attrs\": {\"dim\": 0}},\n"
    "  {\"op\": \"unshard\", \"in\": [\"c\"], \"out\": [\"c1\"]}],\n"
    " \"outputs\": [\"s\", \"c1\"]}\n";

enum { N_IDS = 4, N_POS = 2, VOCAB = 6, ROWS = 5 };

static ppcc_graph *graph;
static ppcc_jit *jit;

static void fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_run: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void setup(void) {
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz_run.json", NULL);
  graph = ppcc_load_model_string(model, sizeof model - 1, &d);
  if (!graph || ppcc_run_passes(graph, NULL, NULL, &d) != PPCC_OK) fail("the fixed model does not compile", d.first);
  if (ppcc_jit_compile(graph, NULL, &jit, NULL, &d) != PPCC_OK) fail("the JIT does not compile the model", d.first);
}

/* Reads the next n bytes (zeros past the end). */
static void take(const uint8_t **p, const uint8_t *end, void *out, size_t n) {
  memset(out, 0, n);
  size_t have = (size_t)(end - *p) < n ? (size_t)(end - *p) : n;
  memcpy(out, *p, have);
  *p += have;
}

static int64_t take_index(const uint8_t **p, const uint8_t *end, uint8_t flags, int64_t bound) {
  int64_t v;
  if (flags & 2) {
    take(p, end, &v, sizeof v);
  } else {
    int8_t b;
    take(p, end, &b, 1);
    v = b;
  }
  if (flags & 1) v = ((v % bound) + bound) % bound;
  return v;
}

static void fill(const ppcc_graph *g, ppcc_run_data *data, const uint8_t *p, const uint8_t *end) {
  uint8_t flags = 0;
  take(&p, end, &flags, 1);
  int64_t *ids = data->values[ppcc_find_value(g, "ids")].data, *pos = data->values[ppcc_find_value(g, "pos")].data;
  for (int i = 0; i < N_IDS; i++) ids[i] = take_index(&p, end, flags, VOCAB);
  for (int i = 0; i < N_POS; i++) pos[i] = take_index(&p, end, flags, ROWS);
  const char *floats[] = {"tab", "w", "cache", "upd"};
  for (int k = 0; k < 4; k++) {
    ppcc_host_tensor *t = &data->values[ppcc_find_value(g, floats[k])];
    take(&p, end, t->data, (size_t)t->bytes);
  }
}

static ppcc_status run(bool use_jit, const ppcc_run_data *data, ppcc_host_tensor *out, ppcc_diag *d) {
  ppcc_exec_options eo = {.threads = 2};
  ppcc_diag_init(d, "fuzz_run.json", NULL);
  ppcc_status st = use_jit ? ppcc_jit_execute(jit, graph, data, &eo, out, NULL, d)
                           : ppcc_execute(graph, data, &eo, out, NULL, d);
  if (st != PPCC_OK && (d->errors == 0 || d->first[0] == 0)) fail(use_jit ? "the JIT failed" : "the interpreter failed", "no diagnostic");
  return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!graph) setup();
  ppcc_run_options ro = {.random_seed = 1, .have_random_seed = true};
  ppcc_run_data rd;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz_run.json", NULL);
  if (ppcc_run_data_load(graph, &ro, &rd, &d) != PPCC_OK) fail("loading the run data", d.first);
  fill(graph, &rd, data, data + size);
  ppcc_host_tensor ref[2] = {0}, got[2] = {0};
  ppcc_diag dj;
  ppcc_status st_ref = run(false, &rd, ref, &d), st_got = run(true, &rd, got, &dj);
  if (st_ref != st_got) {
    fprintf(stderr, "interpreter: %s\nJIT: %s\n", st_ref ? d.first : "ok", st_got ? dj.first : "ok");
    fail("the backends disagree on failing", NULL);
  }
  for (int k = 0; k < graph->n_outputs && st_ref == PPCC_OK; k++) {
    ppcc_compare_result r = ppcc_compare(&got[k], &ref[k]);
    if (!r.ok) {
      fprintf(stderr, "output %d element %lld: JIT %.9g, interpreter %.9g\n", k, (long long)r.worst, r.worst_got,
              r.worst_ref);
      fail("the backends disagree beyond the --check tolerance", NULL);
    }
  }
  for (int k = 0; k < 2; k++) {
    ppcc_host_tensor_free(&ref[k]);
    ppcc_host_tensor_free(&got[k]);
  }
  ppcc_run_data_free(&rd);
  return 0;
}
