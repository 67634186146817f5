/* Per-device memory accounting of a run: the bytes of the value buffers
 * the executor holds on each device (params, inputs, results, transfer
 * destinations) and their high-water mark, for `ppcc run --check-plan`.
 * The executor calls rt_mem_account where it allocates and frees a value
 * buffer; a planned arena would call it where it hands out and takes back
 * a block. Each device's entry is written only by its own thread, so no
 * locking. */
#include <stdlib.h>
#include <string.h>
#include "rt_internal.h"
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

/* Median of column `col` over rows [from, rows) of a row-major table;
 * scratch holds the column sorted after. */
static double column_median(const double *rows_at, size_t width, size_t col, int from, int rows, double *scratch) {
  int n = 0;
  for (int r = from; r < rows; r++) scratch[n++] = rows_at[(size_t)r * width + col];
  qsort(scratch, (size_t)n, sizeof *scratch, ascending);
  return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

/* Medians, not minima: a forward's busy time swings with the machine
 * (time slices, BLAS threads waking, a shared host), and a prediction is
 * checked against what a forward typically takes. The fastest of several
 * forwards, or the sum of each op's fastest, is systematically lower. */
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
  m->forwards = row + 1;
  m->filled = true;
  double *scratch = malloc((size_t)m->forwards * sizeof *scratch);
  if (!scratch) return;
  int from = m->forwards > 1 ? 1 : 0; /* the first forward is cold */
  for (size_t k = 0; k < cells; k++) {
    m->stage_busy_ms[k] = column_median(m->history, width, k, from, m->forwards, scratch);
    if (m->stage_busy_lo) m->stage_busy_lo[k] = scratch[0]; /* column_median leaves the column sorted */
    if (m->stage_busy_hi) m->stage_busy_hi[k] = scratch[m->forwards - from - 1];
  }
  m->wall_ms = column_median(m->history, width, cells, from, m->forwards, scratch);
  for (size_t j = 0; j < ops; j++) m->op_busy_ms[j] = column_median(m->history, width, cells + 1 + j, from, m->forwards, scratch);
  free(scratch);
}

void ppcc_plan_measure_release(ppcc_plan_measure *m) {
  free(m->history);
  m->history = NULL;
  m->history_cap = 0;
}
