/* Pipeline benchmark (not a test): a 4-stage pipeline FFN
 * (tools/pipeline_model.h, one device per stage, output gathered back to
 * device 0) run with M = 1, 2, 4, 8, 16 microbatches: wall time, the
 * measured bubble and the GPipe estimate (p-1)/(m+p-1) beside it.
 *
 *   bench_pipeline [--quick] [--threads N] [--blocks B] [--hidden H] [--ffn F] [--batch N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../tools/pipeline_model.h"
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"

static ppcc_graph *build(const pipeline_config *c) {
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  if (!f) return NULL;
  pipeline_write_model(f, c);
  fclose(f);
  ppcc_diag d;
  ppcc_diag_init(&d, "bench_pipeline", stderr);
  ppcc_graph *g = ppcc_load_model_string(json, len, &d);
  free(json);
  if (g && ppcc_run_passes(g, NULL, NULL, &d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

/* The fastest of reps runs with m microbatches (its statistics in *best). */
static bool measure(const ppcc_graph *g, const ppcc_run_data *data, int threads, int m, int reps,
                    ppcc_pipeline_stats *best) {
  memset(best, 0, sizeof *best);
  for (int r = 0; r < reps; r++) {
    ppcc_diag d;
    ppcc_diag_init(&d, "bench_pipeline", stderr);
    ppcc_pipeline_stats s;
    ppcc_host_tensor out[1];
    ppcc_exec_options eo = {.threads = threads, .microbatches = m, .stats = &s};
    if (ppcc_execute(g, data, &eo, out, NULL, &d)) return false;
    ppcc_host_tensor_free(&out[0]);
    if (!best->busy || s.wall_ms < best->wall_ms) {
      ppcc_pipeline_stats_free(best);
      *best = s;
    } else {
      ppcc_pipeline_stats_free(&s);
    }
  }
  return true;
}

static double mean_busy(const ppcc_pipeline_stats *s) {
  double sum = 0;
  for (int dev = 0; dev < s->n_devices; dev++) sum += s->busy[dev];
  return s->n_devices ? sum / s->n_devices : 0;
}

static bool parse_args(int argc, char **argv, pipeline_config *c, int *threads, int *reps) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      *reps = 1;
      continue;
    }
    long *field = strcmp(argv[i], "--blocks") == 0   ? &c->blocks
                  : strcmp(argv[i], "--hidden") == 0 ? &c->hidden
                  : strcmp(argv[i], "--ffn") == 0    ? &c->ffn
                  : strcmp(argv[i], "--batch") == 0  ? &c->batch
                                                     : NULL;
    long value = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : 0;
    if (strcmp(argv[i], "--threads") == 0 && value > 0)
      *threads = (int)value;
    else if (field && value > 0)
      *field = value;
    else
      return false;
    i++;
  }
  return pipeline_config_error(c) == NULL;
}

int main(int argc, char **argv) {
  pipeline_config c = pipeline_defaults;
  c.tp = 1, c.pp = 4, c.blocks = 8, c.hidden = 512, c.ffn = 2048, c.batch = 256;
  int threads = 2, reps = 3;
  if (!parse_args(argc, argv, &c, &threads, &reps)) {
    fputs("usage: bench_pipeline [--quick] [--threads N] [--blocks B] [--hidden H] [--ffn F] [--batch N]\n", stderr);
    return 2;
  }
  ppcc_graph *g = build(&c);
  ppcc_diag d;
  ppcc_diag_init(&d, "bench_pipeline", stderr);
  ppcc_run_options ro = {.random_seed = 1, .have_random_seed = true};
  ppcc_run_data data;
  if (!g || ppcc_run_data_load(g, &ro, &data, &d)) return 1;
  printf("4-stage pipeline FFN: %ld blocks (matmul %ldx%ld, gelu, matmul %ldx%ld), batch %ld, f32,\n"
         "%d devices on %d cores (%s), best of %d\n",
         c.blocks, c.hidden, c.ffn, c.ffn, c.hidden, c.batch, (int)(c.tp * c.pp), threads,
         ppcc_rt_have_blas() ? "OpenBLAS" : "portable kernel", reps);
  printf("   M   wall ms  speedup  mean busy  bubble measured  GPipe (p-1)/(m+p-1)\n");
  static const int ms[] = {1, 2, 4, 8, 16};
  double base = 0;
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    ppcc_pipeline_stats s;
    if (!measure(g, &data, threads, ms[i], reps, &s)) return 1;
    if (i == 0) base = s.wall_ms;
    printf("  %2d  %8.2f  %6.2fx  %8.1f%%  %15.3f  %19.3f\n", ms[i], s.wall_ms, base / s.wall_ms, 100 * mean_busy(&s),
           s.bubble, s.gpipe_bubble);
    ppcc_pipeline_stats_free(&s);
  }
  ppcc_run_data_free(&data);
  ppcc_graph_free(g);
  return 0;
}
