/* Per-device memory accounting of a run: the bytes of the value buffers
 * the executor holds on each device (params, inputs, results, transfer
 * destinations) and their high-water mark, for `ppcc run --check-plan`.
 * The executor calls rt_mem_account where it allocates and frees a value
 * buffer; a planned arena would call it where it hands out and takes back
 * a block. Each device's entry is written only by its own thread, so no
 * locking. */
#include <stdlib.h>
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

void rt_plan_measure_add_forward(ppcc_plan_measure *m, const double *busy, size_t cells, double wall_ms) {
  for (size_t k = 0; k < cells; k++)
    if (!m->filled || busy[k] < m->stage_busy_ms[k]) m->stage_busy_ms[k] = busy[k];
  if (!m->filled || wall_ms < m->wall_ms) m->wall_ms = wall_ms;
  m->forwards++;
  m->filled = true;
}
