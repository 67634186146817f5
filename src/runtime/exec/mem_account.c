/* Per-device memory accounting of a run: the bytes of the value buffers
 * the executor holds on each device (params, inputs, results, transfer
 * destinations) and their high-water mark, for `ppcc run --check-plan`.
 * The executor calls rt_mem_account where it allocates and frees a value
 * buffer; a planned arena would call it where it hands out and takes back
 * a block. Each device's entry is written only by its own thread, so no
 * locking. */
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "ppcc/predict.h"

bool rt_mem_accounting_init(rt_mem_accounting *a, int n_devices) {
  size_t n = (size_t)(n_devices > 0 ? n_devices : 1);
  a->n_devices = n_devices;
  a->live = calloc(n, sizeof *a->live);
  a->peak = calloc(n, sizeof *a->peak);
  return a->live && a->peak;
}

void rt_mem_accounting_free(rt_mem_accounting *a) {
  free(a->live);
  free(a->peak);
  a->live = a->peak = NULL;
  a->n_devices = 0;
}

void rt_mem_account(rt_mem_accounting *a, int dev, int64_t delta) {
  if (!a || !a->live || dev < 0 || dev >= a->n_devices) return;
  a->live[dev] += delta;
  if (a->live[dev] > a->peak[dev]) a->peak[dev] = a->live[dev];
}

static int ascending(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void rt_sort_doubles(double *v, int n) {
  if (n > 1) qsort(v, (size_t)n, sizeof *v, ascending);
}

double rt_median(double *v, int n) {
  rt_sort_doubles(v, n);
  return n <= 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Each forward's figures are kept (one row of the history); the medians
 * are taken once, by ppcc_plan_measure_summarize, when they are read. */
void rt_plan_measure_add_forward(ppcc_plan_measure *m, const double *busy, size_t cells, double wall_ms,
                                 const double *op_ms) {
  size_t ops = op_ms && m->op_busy_ms ? (size_t)m->n_ops : 0, width = cells + 1 + ops;
  int row = m->forwards;
  if ((size_t)(row + 1) * width > m->history_cap) {
    size_t cap = 2 * (size_t)(row + 1) * width;
    double *h = realloc(m->history, cap * sizeof *h);
    if (!h) return; /* not counted */
    m->history = h, m->history_cap = cap;
  }
  double *at = m->history + (size_t)row * width;
  memcpy(at, busy, cells * sizeof *busy);
  at[cells] = wall_ms;
  if (ops) memcpy(at + cells + 1, op_ms, ops * sizeof *op_ms);
  m->history_cells = cells, m->history_ops = ops;
  m->forwards = row + 1;
  m->filled = true;
}

/* Median of column `col` over rows [from, rows) of the history; scratch
 * holds the column sorted after. */
static double column_median(const ppcc_plan_measure *m, size_t col, int from, double *scratch) {
  size_t width = m->history_cells + 1 + m->history_ops;
  int n = 0;
  for (int r = from; r < m->forwards; r++) scratch[n++] = m->history[(size_t)r * width + col];
  return rt_median(scratch, n);
}

/* Medians, not minima: a forward's busy time swings with the machine
 * (time slices, BLAS threads waking, a shared host), and a prediction is
 * checked against what a forward typically takes. The fastest of several
 * forwards, or the sum of each op's fastest, is systematically lower. */
void ppcc_plan_measure_summarize(ppcc_plan_measure *m) {
  double *scratch = m->forwards > 0 ? malloc((size_t)m->forwards * sizeof *scratch) : NULL;
  if (!scratch) return;
  int from = m->forwards > 1 ? 1 : 0; /* the first forward is cold */
  size_t cells = m->history_cells;
  for (size_t k = 0; k < cells; k++) {
    m->stage_busy_ms[k] = column_median(m, k, from, scratch);
    if (m->stage_busy_lo) m->stage_busy_lo[k] = scratch[0]; /* column_median leaves the column sorted */
    if (m->stage_busy_hi) m->stage_busy_hi[k] = scratch[m->forwards - from - 1];
  }
  m->wall_ms = column_median(m, cells, from, scratch);
  for (size_t j = 0; j < m->history_ops; j++) m->op_busy_ms[j] = column_median(m, cells + 1 + j, from, scratch);
  free(scratch);
}

void ppcc_plan_measure_release(ppcc_plan_measure *m) {
  free(m->history);
  m->history = NULL;
  m->history_cap = m->history_cells = m->history_ops = 0;
}
