/* Compile-time benchmark: generates deep pipeline-FFN models of ~10k and
 * ~100k ops (tools/pipeline_model.h) and times JSON parse+load, the passes
 * and the JSON report. A linear compiler shows a 100k/10k ratio near 10.
 *
 *   bench_compile [REPS]     (best of REPS runs per size, default 3)
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../tools/pipeline_model.h"
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/report.h"

typedef struct timing {
  double load, passes, report; /* seconds */
  int ops;                     /* ops after the passes (with inserted transfers) */
} timing;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double total(const timing *t) { return t->load + t->passes + t->report; }

static char *generate(const pipeline_config *c, size_t *len) {
  char *json = NULL;
  FILE *mem = open_memstream(&json, len);
  if (!mem) return NULL;
  pipeline_write_model(mem, c);
  fclose(mem);
  return json;
}

/* One full compile of the model text; false (with a message) on error. */
static bool compile_once(const char *json, size_t len, FILE *sink, timing *t) {
  ppcc_diag d;
  ppcc_diag_init(&d, "bench.json", stderr);
  double t0 = now();
  ppcc_graph *g = ppcc_load_model_string(json, len, &d);
  double t1 = now();
  ppcc_status st = g ? ppcc_run_passes(g, NULL, NULL, &d) : PPCC_ERR_USER;
  double t2 = now();
  if (st == PPCC_OK) st = ppcc_report_json(g, sink, &d);
  fflush(sink);
  double t3 = now();
  *t = (timing){t1 - t0, t2 - t1, t3 - t2, g ? g->n_ops : 0};
  ppcc_graph_free(g);
  return st == PPCC_OK;
}

static void keep_best(timing *best, const timing *t) {
  if (best->ops == 0 || t->load < best->load) best->load = t->load;
  if (best->ops == 0 || t->passes < best->passes) best->passes = t->passes;
  if (best->ops == 0 || t->report < best->report) best->report = t->report;
  best->ops = t->ops;
}

static bool bench_size(long blocks, int reps, FILE *sink, timing *best) {
  pipeline_config c = pipeline_defaults;
  c.blocks = blocks;
  c.tp = 2;
  c.pp = 4;
  size_t len = 0;
  char *json = generate(&c, &len);
  if (!json) return false;
  *best = (timing){0};
  bool ok = true;
  for (int r = 0; r < reps && ok; r++) {
    timing t;
    ok = compile_once(json, len, sink, &t);
    if (ok) keep_best(best, &t);
  }
  if (ok)
    printf("%8ld %8d %10.1f %10.1f %10.1f %10.1f %12.0f   (%.1f MB JSON)\n", blocks * 4 + 1, best->ops,
           best->load * 1e3, best->passes * 1e3, best->report * 1e3, total(best) * 1e3,
           (double)(blocks * 4 + 1) / total(best), (double)len / 1e6);
  free(json);
  return ok;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 3;
  if (reps < 1) reps = 1;
  FILE *sink = fopen("/dev/null", "w");
  if (!sink) return 3;
  printf("pipeline FFN, tp=2 pp=4, best of %d; times in ms\n", reps);
  printf("%8s %8s %10s %10s %10s %10s %12s\n", "ops", "ops+xfer", "parse+load", "passes",
         "report", "total", "ops/s");
  timing small, large;
  bool ok = bench_size(2500, reps, sink, &small) && bench_size(25000, reps, sink, &large);
  fclose(sink);
  if (!ok) return 1;
  printf("100k/10k total time ratio: %.2f (linear = 10)\n", total(&large) / total(&small));
  return 0;
}
