/* Auto-partition benchmark.
 *  1. Time of the auto-partition pass (Megatron layouts + optimal split +
 *     placement) on a 1,000-block FFN model without placement (target
 *     < 100 ms), best of REPS runs, for a few --pp/--tp.
 *  2. Imbalance (slowest stage / mean) of the automatic split vs the even
 *     split (the same number of blocks per stage) on a model whose blocks
 *     have uneven FFN widths.
 *
 *   bench_partition [REPS]     (default 5)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ppcc/frontend.h"
#include "ppcc/partition.h"
#include "ppcc/passes.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An FFN chain without placement: block b = matmul -> gelu -> matmul with
 * an FFN width of widths[b]. */
static char *ffn_model(int blocks, const int *widths, int hidden, int batch, int devices, size_t *len) {
  char *json = NULL;
  FILE *f = open_memstream(&json, len);
  if (!f) return NULL;
  fprintf(f, "{\"ppcc\": 1, \"name\": \"ffn%d\", \"devices\": %d, \"params\": [\n", blocks, devices);
  for (int b = 0; b < blocks; b++)
    fprintf(f, "%s{\"name\": \"blk.%d.up\", \"dtype\": \"f32\", \"shape\": [%d, %d]},\n"
               "{\"name\": \"blk.%d.down\", \"dtype\": \"f32\", \"shape\": [%d, %d]}",
            b ? ",\n" : "", b, hidden, widths[b], b, widths[b], hidden);
  fprintf(f, "],\n\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [%d, %d]}],\n\"ops\": [\n", batch,
          hidden);
  for (int b = 0; b < blocks; b++) {
    char x[32];
    if (b) snprintf(x, sizeof x, "blk.%d.y", b - 1);
    else snprintf(x, sizeof x, "x");
    fprintf(f, "%s{\"op\": \"matmul\", \"in\": [\"%s\", \"blk.%d.up\"], \"out\": [\"blk.%d.h\"]},\n"
               "{\"op\": \"gelu\", \"in\": [\"blk.%d.h\"], \"out\": [\"blk.%d.a\"]},\n"
               "{\"op\": \"matmul\", \"in\": [\"blk.%d.a\", \"blk.%d.down\"], \"out\": [\"blk.%d.y\"]}",
            b ? ",\n" : "", x, b, b, b, b, b, b, b);
  }
  fprintf(f, "],\n\"outputs\": [\"blk.%d.y\"]}\n", blocks - 1);
  fclose(f);
  return json;
}

typedef struct run {
  double verify, partition, rest; /* seconds */
  int ops;
  ppcc_partition_summary summary;
} run;

/* Loads, then runs verify, auto-partition and the other passes, timed. */
static bool compile_once(const char *json, size_t len, int pp, int tp, run *r) {
  ppcc_diag d;
  ppcc_diag_init(&d, "bench.json", stderr);
  ppcc_graph *g = ppcc_load_model_string(json, len, &d);
  if (!g) return false;
  g->partition.pp = pp;
  g->partition.tp = tp;
  int n;
  const ppcc_pass_info *passes = ppcc_pass_list(&n);
  double t0 = now();
  ppcc_status st = ppcc_pass_verify(g, &d);
  double t1 = now();
  if (!st) st = ppcc_pass_auto_partition(g, &d);
  double t2 = now();
  for (int i = 0; !st && i < n; i++)
    if (strcmp(passes[i].name, "verify") != 0 && strcmp(passes[i].name, "auto-partition") != 0)
      st = passes[i].run(g, &d);
  double t3 = now();
  *r = (run){t1 - t0, t2 - t1, t3 - t2, g->n_ops, {0}};
  if (!st) r->summary = *g->partition_summary;
  r->summary.stages = NULL; /* arena memory, freed with the graph */
  r->summary.start = NULL;
  ppcc_graph_free(g);
  return st == PPCC_OK;
}

static bool time_partition(int blocks, int pp, int tp, int reps) {
  int *widths = malloc(sizeof(int) * (size_t)blocks);
  for (int b = 0; b < blocks; b++) widths[b] = 256;
  size_t len = 0;
  char *json = ffn_model(blocks, widths, 64, 8, pp * tp, &len);
  free(widths);
  if (!json) return false;
  run best = {0}, r;
  bool ok = true;
  for (int i = 0; i < reps && ok; i++) {
    ok = compile_once(json, len, pp, tp, &r);
    if (ok && (i == 0 || r.partition < best.partition)) best = r;
  }
  if (ok)
    printf("  %6d  %3d  %3d  %7d  %14.2f  %11.2f  %14.2f\n", blocks, pp, tp, best.ops, best.partition * 1e3,
           best.verify * 1e3, best.rest * 1e3);
  free(json);
  return ok;
}

/* Deterministic uneven widths: 64 .. 2048, heavy blocks clustered. */
static void uneven_widths(int blocks, int *widths) {
  static const int choices[] = {64, 128, 256, 512, 1024, 2048};
  uint64_t s = 12345;
  for (int b = 0; b < blocks; b++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int k = (int)((s >> 33) % 6);
    if (b < blocks / 4) k = k > 3 ? k : k + 2; /* a heavier first quarter */
    widths[b] = choices[k > 5 ? 5 : k];
  }
}

static bool compare_splits(int blocks, int pp, int tp) {
  int *widths = malloc(sizeof(int) * (size_t)blocks);
  uneven_widths(blocks, widths);
  size_t len = 0;
  char *json = ffn_model(blocks, widths, 512, 16, pp * tp, &len);
  free(widths);
  run r;
  bool ok = json && compile_once(json, len, pp, tp, &r);
  if (ok)
    printf("  %6d  %3d  %3d  %13.3f  %10.3f  %15.2f  %10.2f\n", blocks, pp, tp, r.summary.max_cost * 1e6,
           r.summary.mean_cost * 1e6, r.summary.imbalance, r.summary.even_imbalance);
  free(json);
  return ok;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  if (reps < 1) reps = 1;
  printf("auto-partition time, FFN blocks of 3 ops (+1 all_reduce with tp > 1), best of %d\n", reps);
  printf("  %6s  %3s  %3s  %7s  %14s  %11s  %14s\n", "blocks", "pp", "tp", "ops", "partition (ms)", "verify (ms)",
         "other passes (ms)");
  bool ok = time_partition(1000, 4, 2, reps) && time_partition(1000, 8, 1, reps) &&
            time_partition(1000, 16, 2, reps) && time_partition(1000, 64, 1, reps);
  printf("\nimbalance (slowest/mean) of the automatic vs the even split, uneven FFN widths 64..2048\n");
  printf("  %6s  %3s  %3s  %13s  %10s  %15s  %10s\n", "blocks", "pp", "tp", "slowest (us)", "mean (us)",
         "auto imbalance", "even split");
  ok = ok && compare_splits(64, 4, 2) && compare_splits(64, 8, 1) && compare_splits(1000, 8, 2);
  if (!ok) fprintf(stderr, "bench_partition: a compile failed\n");
  return ok ? 0 : 1;
}
