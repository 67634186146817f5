/* Resident param shards (DESIGN §7, include/ppcc/runtime.h): the shard a
 * device holds of a param is made once and bound by every later execute
 * of every graph that shares the run data. A shard that lies contiguous
 * in the full tensor (unsplit, replicated, or split along its outermost
 * non-unit dim) is a view of the full tensor's bytes, i.e. of the mapped
 * weights file when the file holds the compute dtype; a strided split or
 * the zero shard of an unreduced param is made (and owned) once.
 *
 * Shards are keyed by (param name, full tensor, layout, shard index), so
 * the reference run (every value unsharded) and the sharded run of one
 * model share what they can and never mix up layouts. Device threads ask
 * concurrently: lookups and makes are serialised (a make happens once). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "rt_internal.h"

typedef struct resident_entry {
  char *name;
  const void *full;
  ppcc_layout layout;
  int shard;
  ppcc_resident_shard s;
} resident_entry;

struct ppcc_resident {
  int refs;
  int n, cap;
  resident_entry *entries;
  int *table;        /* open addressing: entry index + 1, 0 empty */
  size_t table_size; /* a power of two, more than twice n */
  int64_t owned_bytes;
};

static _Atomic int64_t param_bytes_copied;

int64_t ppcc_rt_param_bytes_copied(void) { return atomic_load(&param_bytes_copied); }

void rt_count_param_copy(int64_t bytes) { atomic_fetch_add(&param_bytes_copied, bytes); }

ppcc_resident *rt_resident_new(void) {
  ppcc_resident *r = calloc(1, sizeof *r);
  if (r) r->refs = 1;
  return r;
}

ppcc_resident *rt_resident_ref(ppcc_resident *r) {
  if (r) r->refs++;
  return r;
}

void rt_resident_unref(ppcc_resident *r) {
  if (!r || --r->refs > 0) return;
  for (int k = 0; k < r->n; k++) {
    if (r->entries[k].s.owned) rt_free((void *)r->entries[k].s.data);
    free(r->entries[k].name);
  }
  free(r->entries);
  free(r->table);
  free(r);
}

int64_t ppcc_resident_owned_bytes(const ppcc_run_data *data) {
  return data && data->resident ? data->resident->owned_bytes : 0;
}

int ppcc_resident_count(const ppcc_run_data *data) { return data && data->resident ? data->resident->n : 0; }

static size_t key_hash(const char *name, ppcc_layout l, int shard) {
  size_t h = 1469598103934665603u;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 1099511628211u;
  h = (h ^ (size_t)l.kind) * 1099511628211u;
  h = (h ^ (size_t)(l.dim + 1)) * 1099511628211u;
  h = (h ^ (size_t)l.count) * 1099511628211u;
  return (h ^ (size_t)shard) * 1099511628211u;
}

static bool same_key(const resident_entry *e, const char *name, const void *full, ppcc_layout l, int shard) {
  return e->full == full && e->shard == shard && e->layout.kind == l.kind && e->layout.dim == l.dim &&
         e->layout.count == l.count && strcmp(e->name, name) == 0;
}

static resident_entry *find(const ppcc_resident *r, const char *name, const void *full, ppcc_layout l, int shard) {
  if (!r->table) return NULL;
  size_t mask = r->table_size - 1;
  for (size_t h = key_hash(name, l, shard) & mask;; h = (h + 1) & mask) {
    int k = r->table[h];
    if (!k) return NULL;
    if (same_key(&r->entries[k - 1], name, full, l, shard)) return &r->entries[k - 1];
  }
}

static void table_put(ppcc_resident *r, int k) {
  const resident_entry *e = &r->entries[k];
  size_t mask = r->table_size - 1, h = key_hash(e->name, e->layout, e->shard) & mask;
  while (r->table[h]) h = (h + 1) & mask;
  r->table[h] = k + 1;
}

/* Room for one more entry (the table rehashed when it would be half full). */
static bool grow(ppcc_resident *r) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 64;
    resident_entry *e = realloc(r->entries, sizeof *e * (size_t)cap);
    if (!e) return false;
    r->entries = e, r->cap = cap;
  }
  if ((size_t)(r->n + 1) * 2 < r->table_size) return true;
  size_t size = r->table_size ? 2 * r->table_size : 256;
  int *t = calloc(size, sizeof *t);
  if (!t) return false;
  free(r->table);
  r->table = t, r->table_size = size;
  for (int k = 0; k < r->n; k++) table_put(r, k);
  return true;
}

/* Shard i of param p under layout l, made from full: a view when its bytes
 * are contiguous in full and aligned for the dtype, else a copy. */
static bool make_shard(const ppcc_value *p, ppcc_layout l, int i, const void *full, bool mapped, ppcc_resident_shard *s) {
  int es = ppcc_dtype_size(p->dtype);
  s->dtype = p->dtype;
  s->rank = p->rank;
  memcpy(s->shape, p->shape, sizeof s->shape);
  if (l.kind == PPCC_LAYOUT_SPLIT) s->shape[l.dim] /= l.count;
  int64_t bytes = ppcc_num_elements(s->rank, s->shape) * es;
  s->owned = false;
  if (l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) { /* the value sits in shard 0 */
    s->data = rt_calloc(bytes);
    s->owned = true;
    return s->data != NULL;
  }
  const char *start = full;
  if (l.kind == PPCC_LAYOUT_SPLIT) {
    rt_split_geom geom = rt_split_geometry(p->rank, p->shape, l.dim, l.count);
    start = geom.outer == 1 ? start + (int64_t)i * bytes : NULL;
  }
  if (start && (uintptr_t)start % (uintptr_t)(es > 0 ? es : 1) == 0) {
    s->data = start;
    return true;
  }
  void *copy;
  if (mapped) { /* MPI: the file's pages are released as copied (mapped_shard.c) */
    ppcc_value shard_of = *p;
    shard_of.layout = l;
    copy = rt_copy_mapped_shard(full, &shard_of, i);
  } else {
    copy = rt_alloc(bytes);
    if (copy && l.kind == PPCC_LAYOUT_SPLIT)
      rt_copy_shard_out(full, copy, rt_split_geometry(p->rank, p->shape, l.dim, l.count), l.count, i, es);
    else if (copy && bytes > 0)
      memcpy(copy, full, (size_t)bytes);
  }
  s->data = copy;
  s->owned = true;
  rt_count_param_copy(bytes);
  return copy != NULL;
}

bool rt_param_mapped(const ppcc_run_data *data, int v, bool dist) {
  return dist && !data->owned[v] && !(data->borrowed && data->borrowed[v]);
}

const void *rt_resident_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i,
                              bool mapped) {
  ppcc_resident *r = data->resident;
  const void *full = data->values[v].data, *out = NULL;
  if (!r || !full) return NULL;
#pragma omp critical(ppcc_resident)
  {
    resident_entry *e = find(r, p->name, full, l, i);
    if (e) out = e->s.data;
    else if (grow(r)) {
      e = &r->entries[r->n];
      memset(e, 0, sizeof *e);
      e->name = malloc(strlen(p->name) + 1);
      if (e->name && make_shard(p, l, i, full, mapped, &e->s)) {
        strcpy(e->name, p->name);
        e->full = full, e->layout = l, e->shard = i;
        if (e->s.owned) r->owned_bytes += ppcc_num_elements(e->s.rank, e->s.shape) * ppcc_dtype_size(e->s.dtype);
        table_put(r, r->n++);
        out = e->s.data;
      } else {
        free(e->name);
      }
    }
  }
  return out;
}

ppcc_status ppcc_run_data_make_resident(const ppcc_graph *g, const ppcc_run_data *data, ppcc_diag *d) {
  bool dist = rt_dist_active();
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_PARAM || !p->devices) continue;
    for (int i = 0; i < p->layout.count; i++) {
      if (dist && !rt_dist_local(p->devices[i])) continue;
      if (!data->values[v].data) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no data for '%s'", p->name);
      if (!rt_resident_shard(data, v, p, p->layout, i, rt_param_mapped(data, v, dist)))
        return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory for param '%s'", p->name);
    }
  }
  return PPCC_OK;
}
