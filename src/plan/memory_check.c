/* A placed model against the devices spec's memory (include/ppcc/
 * devices_spec.h): each device's params plus its peak activations, from
 * the memory simulation of ppcc_device_summaries (summary.c). */
#include "ppcc/devices_spec.h"
#include <stdlib.h>
#include "ppcc/graph.h"
#include "ppcc/report.h"

static bool on_device(const ppcc_value *v, int device) {
  for (int i = 0; v->devices && i < v->layout.count; i++)
    if (v->devices[i] == device) return true;
  return false;
}

/* The placement-error site of an over-full device: the model ops reading
 * a param placed on it are [op, op_end). */
static void mark_memory_site(const ppcc_graph *g, int device, int64_t need, int64_t memory, ppcc_diag *d) {
  int first = -1, last = -1;
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    for (int k = 0; k < op->n_in && op->src_index >= 0; k++) {
      const ppcc_value *v = &g->values[op->in[k]];
      if (v->kind != PPCC_VALUE_PARAM || !on_device(v, device)) continue;
      if (first < 0 || op->src_index < first) first = op->src_index;
      if (op->src_index > last) last = op->src_index;
    }
  }
  ppcc_diag_site_set(d, PPCC_SITE_MEMORY, first);
  d->pending.op_end = last + 1;
  d->pending.stage = -1; /* src/fix/ numbers the stages of a placed model */
  d->pending.bytes = need;
  d->pending.device = device;
  d->pending.memory = memory;
}

ppcc_status ppcc_devices_spec_check_memory(const ppcc_graph *g, const ppcc_devices_spec *spec, ppcc_diag *d) {
  ppcc_device_summary *rows = ppcc_device_summaries(g);
  if (!rows) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory checking device memory");
  ppcc_status st = PPCC_OK;
  if (spec->n_devices < g->n_devices) /* the missing devices would go unchecked */
    st = ppcc_error(d, "devices spec '%s' describes %d device%s, the placed model uses %d", spec->path ? spec->path : "",
                    spec->n_devices, spec->n_devices == 1 ? "" : "s", g->n_devices);
  for (int k = 0; k < g->n_devices && k < spec->n_devices && !st; k++) {
    int64_t need = rows[k].param_bytes + rows[k].peak_activation_bytes;
    if (spec->memory[k] > 0 && need > spec->memory[k]) {
      mark_memory_site(g, k, need, spec->memory[k], d); /* src/fix/ proposes moving a block */
      st = ppcc_error(d, "device %d needs %lld bytes (params %lld + peak activations %lld), more than its memory %lld "
                         "(devices spec '%s')",
                      k, (long long)need, (long long)rows[k].param_bytes, (long long)rows[k].peak_activation_bytes,
                      (long long)spec->memory[k], spec->path ? spec->path : "");
    }
  }
  free(rows);
  return st;
}
