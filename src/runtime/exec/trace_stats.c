/* The per-device timeline of a run: when each op ran on each device (per
 * microbatch) and when each transfer was sent and received. Written as a
 * Chrome trace (chrome://tracing, Perfetto) and summarised as busy
 * fractions and the measured pipeline bubble (runtime.h defines them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"
#include "exec.h"
#include "../comm/comm.h"

bool rt_timeline_init(rt_timeline *t, int n_devices) {
  t->n_devices = n_devices;
  t->dev = calloc((size_t)(n_devices > 0 ? n_devices : 1), sizeof *t->dev);
  return t->dev != NULL;
}

void rt_timeline_free(rt_timeline *t) {
  for (int i = 0; t->dev && i < t->n_devices; i++) {
    free(t->dev[i].spans);
    free(t->dev[i].flows);
  }
  free(t->dev);
  memset(t, 0, sizeof *t);
}

/* Doubles the capacity of an array when full; false (and the array
 * unchanged) on OOM. */
static bool reserve(void **items, int *cap, int n, size_t size) {
  if (n < *cap) return true;
  int grown = *cap ? *cap * 2 : 256;
  void *p = realloc(*items, (size_t)grown * size);
  if (!p) return false;
  *items = p;
  *cap = grown;
  return true;
}

void rt_timeline_span(rt_timeline *t, int dev, int op, int microbatch, double start, double end) {
  rt_device_timeline *dt = &t->dev[dev];
  if (!reserve((void **)&dt->spans, &dt->cap_spans, dt->n_spans, sizeof *dt->spans)) {
    dt->oom = true;
    return;
  }
  dt->spans[dt->n_spans++] = (rt_span){op, microbatch, start, end};
}

void rt_timeline_flow(rt_timeline *t, int dev, int64_t id, bool is_send, double at) {
  rt_device_timeline *dt = &t->dev[dev];
  if (!reserve((void **)&dt->flows, &dt->cap_flows, dt->n_flows, sizeof *dt->flows)) {
    dt->oom = true;
    return;
  }
  dt->flows[dt->n_flows++] = (rt_flow_end){id, at, is_send};
}

/* ---------------- Chrome trace ---------------- */

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  ppcc_escape_fputs(f, s, PPCC_ESCAPE_JSON);
  fputc('"', f);
}

static const char *family_name(ppcc_op_family f) {
  return f == PPCC_FAMILY_COMPUTE ? "compute" : f == PPCC_FAMILY_TRANSFER ? "transfer" : "collective";
}

/* A track (tid) per device, named and sorted by device id; a process
 * (pid) per MPI rank (only pid 0 without MPI). */
static void write_tracks(FILE *f, const rt_timeline *t, const ppcc_graph *g) {
  fputs("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": ", f);
  json_string(f, g->name ? g->name : "ppcc");
  fputs("}}", f);
  for (int dev = 0; dev < t->n_devices; dev++) {
    int pid = rt_dist_rank_of(dev);
    bool first = rt_dist_active();
    for (int e = 0; e < dev && first; e++) first = rt_dist_rank_of(e) != pid;
    if (first)
      fprintf(f, ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"rank %d\"}}",
              pid, pid);
    fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"device %d\"}}",
            pid, dev, dev);
    fprintf(f, ",\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"sort_index\": %d}}",
            pid, dev, dev);
  }
}

static void write_span(FILE *f, const ppcc_graph *g, int dev, const rt_span *s) {
  const ppcc_op *op = &g->ops[s->op];
  fputs(",\n{\"name\": ", f);
  json_string(f, op->info->name);
  fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
             "\"args\": {\"op\": %d, \"value\": ",
          family_name(op->info->family), rt_dist_rank_of(dev), dev, s->start * 1e6, (s->end - s->start) * 1e6, s->op);
  json_string(f, op->n_out ? g->values[op->out[0]].name : "");
  fprintf(f, ", \"microbatch\": %d}}", s->microbatch);
}

/* "s" at the send, "f" at the receive; bp "e" binds the arrow's head to
 * the op slice that encloses the receive. */
static void write_flow(FILE *f, int dev, const rt_flow_end *e) {
  fprintf(f, ",\n{\"name\": \"transfer\", \"cat\": \"transfer\", \"ph\": \"%s\", %s\"id\": %lld, \"pid\": %d, "
             "\"tid\": %d, \"ts\": %.3f}",
          e->is_send ? "s" : "f", e->is_send ? "" : "\"bp\": \"e\", ", (long long)e->id, rt_dist_rank_of(dev), dev,
          e->t * 1e6);
}

ppcc_status rt_timeline_write_to(const rt_timeline *t, const ppcc_graph *g, ppcc_outfile *f, ppcc_diag *d) {
  FILE *out = f->fp;
  fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", out);
  write_tracks(out, t, g);
  for (int dev = 0; dev < t->n_devices; dev++) {
    const rt_device_timeline *dt = &t->dev[dev];
    for (int i = 0; i < dt->n_spans; i++) write_span(out, g, dev, &dt->spans[i]);
    for (int i = 0; i < dt->n_flows; i++) write_flow(out, dev, &dt->flows[i]);
  }
  fputs("\n]}\n", out);
  return ppcc_outfile_close(f, d);
}

ppcc_status rt_timeline_write(const rt_timeline *t, const ppcc_graph *g, const char *path, ppcc_diag *d) {
  ppcc_outfile f;
  ppcc_status st = ppcc_outfile_open(&f, path, d);
  if (st) return st;
  st = rt_timeline_write_to(t, g, &f, d);
  if (st) {
    ppcc_outfile_abort(&f);
    return st;
  }
  return ppcc_outfile_commit(&f, d);
}

/* ---------------- statistics ---------------- */

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static bool same_group(const int *a, int na, const int *b, int nb) {
  return na == nb && memcmp(a, b, sizeof(int) * (size_t)na) == 0;
}

/* p: distinct device sets among compute ops (the pipeline's stages). */
static int count_stages(const ppcc_graph *g) {
  int *firsts = malloc(sizeof(int) * (size_t)(g->n_ops > 0 ? g->n_ops : 1)); /* an op of each stage seen */
  int *a = malloc(sizeof(int) * PPCC_MAX_DEVICES), *b = malloc(sizeof(int) * PPCC_MAX_DEVICES);
  int stages = 0;
  for (int j = 0; firsts && a && b && j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (op->info->family != PPCC_FAMILY_COMPUTE || op->n_devices < 1 || op->n_devices > PPCC_MAX_DEVICES) continue;
    memcpy(a, op->devices, sizeof(int) * (size_t)op->n_devices);
    qsort(a, (size_t)op->n_devices, sizeof(int), cmp_int);
    bool seen = false;
    for (int s = 0; s < stages && !seen; s++) {
      const ppcc_op *other = &g->ops[firsts[s]];
      memcpy(b, other->devices, sizeof(int) * (size_t)other->n_devices);
      qsort(b, (size_t)other->n_devices, sizeof(int), cmp_int);
      seen = same_group(a, op->n_devices, b, other->n_devices);
    }
    if (!seen) firsts[stages++] = j;
  }
  free(firsts);
  free(a);
  free(b);
  return stages;
}

ppcc_status rt_timeline_stats(const rt_timeline *t, const ppcc_graph *g, int microbatches, double wall_ms,
                              ppcc_pipeline_stats *s, ppcc_diag *d) {
  memset(s, 0, sizeof *s);
  s->busy = calloc((size_t)(t->n_devices > 0 ? t->n_devices : 1), sizeof *s->busy);
  if (!s->busy) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  s->n_devices = t->n_devices;
  s->wall_ms = wall_ms;
  s->microbatches = microbatches > 1 ? microbatches : 1;
  s->stages = count_stages(g);
  double first = 1e300, last = -1e300, busy_sum = 0;
  int stage_devices = 0;
  for (int dev = 0; dev < t->n_devices; dev++) {
    const rt_device_timeline *dt = &t->dev[dev];
    double busy = 0;
    bool computes = false;
    for (int i = 0; i < dt->n_spans; i++) {
      const rt_span *sp = &dt->spans[i];
      if (g->ops[sp->op].info->family != PPCC_FAMILY_COMPUTE) continue;
      busy += sp->end - sp->start;
      computes = true;
      if (sp->start < first) first = sp->start;
      if (sp->end > last) last = sp->end;
    }
    s->busy[dev] = wall_ms > 0 ? busy * 1e3 / wall_ms : 0;
    busy_sum += busy;
    stage_devices += computes;
  }
  s->span_ms = last > first ? (last - first) * 1e3 : 0;
  if (stage_devices > 0 && s->span_ms > 0) s->bubble = 1 - busy_sum * 1e3 / stage_devices / s->span_ms;
  int p = s->stages > 0 ? s->stages : 1, m = s->microbatches;
  s->gpipe_bubble = (double)(p - 1) / (double)(m + p - 1);
  return PPCC_OK;
}

void ppcc_pipeline_stats_free(ppcc_pipeline_stats *s) {
  if (!s) return;
  free(s->busy);
  s->busy = NULL;
}

void ppcc_pipeline_stats_print(const ppcc_pipeline_stats *s, FILE *out) {
  fprintf(out, "pipeline: %d stage%s, %d microbatch%s, wall %.3f ms\n", s->stages, s->stages == 1 ? "" : "s",
          s->microbatches, s->microbatches == 1 ? "" : "es", s->wall_ms);
  for (int dev = 0; dev < s->n_devices; dev++) fprintf(out, "  device %d busy %5.1f%%\n", dev, 100 * s->busy[dev]);
  fprintf(out, "  bubble: measured %.3f over the %.3f ms compute span; GPipe estimate (p-1)/(m+p-1) = %.3f\n",
          s->bubble, s->span_ms, s->gpipe_bubble);
}
