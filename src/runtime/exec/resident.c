/* Resident param shards (DESIGN §7, include/ppcc/runtime.h): the shard a
 * device holds of a param is made once and bound by every later execute
 * of every graph that shares the run data. A shard that lies contiguous
 * in the full tensor (unsplit, replicated, or split along its outermost
 * non-unit dim) is a view of the full tensor's bytes, i.e. of the mapped
 * weights file when the file holds the compute dtype; a strided split or
 * the zero shard of an unreduced param is made (and owned) once.
 *
 * A param read shard by shard from a sharded archive (run.c) is bound as
 * stored, never assembled.
 *
 * Shards are keyed by (param name, full tensor, layout, shard index), so
 * the reference run (every value unsharded) and the sharded run of one
 * model share what they can and never mix up layouts. Device threads ask
 * concurrently: lookups and makes are serialised (a make happens once). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "../comm/comm.h"
#include "exec.h"
#include "../io/io.h"

typedef struct resident_entry {
  char *name;
  const void *full;   /* params: the full tensor; NULL for state */
  ppcc_layout layout;
  int shard;          /* state: microbatch * count + shard */
  int64_t elements;   /* of the whole value (a microbatch's value differs) */
  ppcc_resident_shard s;
  /* state: the current shard (s.data) and, for an executor that cannot
   * write in place (the JIT), the next one it writes; flipped after */
  bool is_state;
  void *next;
} resident_entry;

struct ppcc_resident {
  int refs;
  int n, cap;
  resident_entry *entries;
  int *table;        /* open addressing: entry index + 1, 0 empty */
  size_t table_size; /* a power of two, more than twice n */
  int64_t owned_bytes;
  int64_t released_bytes; /* whole tensors given back once cut (release_cut) */
};

static _Atomic int64_t param_bytes_copied, state_bytes_host;

int64_t ppcc_rt_param_bytes_copied(void) { return atomic_load(&param_bytes_copied); }
int64_t ppcc_rt_state_bytes_host(void) { return atomic_load(&state_bytes_host); }
void rt_count_state_host(int64_t bytes) { atomic_fetch_add(&state_bytes_host, bytes); }

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
    rt_free(r->entries[k].next);
    free(r->entries[k].name);
  }
  free(r->entries);
  free(r->table);
  free(r);
}

int64_t ppcc_resident_owned_bytes(const ppcc_run_data *data) {
  return data && data->resident ? data->resident->owned_bytes : 0;
}

int64_t ppcc_resident_released_bytes(const ppcc_run_data *data) {
  return data && data->resident ? data->resident->released_bytes : 0;
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

static bool same_key(const resident_entry *e, const char *name, const void *full, ppcc_layout l, int shard,
                     int64_t elements) {
  return e->full == full && e->elements == elements && e->is_state == !full && e->shard == shard && e->layout.kind == l.kind && e->layout.dim == l.dim &&
         e->layout.count == l.count && strcmp(e->name, name) == 0;
}

static resident_entry *find(const ppcc_resident *r, const char *name, const void *full, ppcc_layout l, int shard,
                            int64_t elements) {
  if (!r->table) return NULL;
  size_t mask = r->table_size - 1;
  for (size_t h = key_hash(name, l, shard) & mask;; h = (h + 1) & mask) {
    int k = r->table[h];
    if (!k) return NULL;
    if (same_key(&r->entries[k - 1], name, full, l, shard, elements)) return &r->entries[k - 1];
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
 * are contiguous in full and aligned for the dtype, else a copy. `lines`:
 * an f32 view of a mapped file must also start on a 64-byte line, else it
 * is copied once (the file's pages released as copied). llama.cpp's f32
 * GGUF puts every tensor at 32 mod 64: a 128-row product on such a weight
 * failed the GEMM tiles' line check and went to OpenBLAS, which packs the
 * weight per call (prefill 13 % behind llama.cpp). */
static bool make_shard(const ppcc_value *p, ppcc_layout l, int i, const void *full, bool mapped, bool lines,
                       ppcc_resident_shard *s) {
  int64_t units[PPCC_MAX_RANK]; /* elements, or blocks of a quantized param */
  int es = rt_storage_units(p->dtype, p->rank, p->shape, units);
  s->dtype = p->dtype;
  s->rank = p->rank;
  memcpy(s->shape, p->shape, sizeof s->shape);
  if (l.kind == PPCC_LAYOUT_SPLIT) s->shape[l.dim] /= l.count;
  int64_t bytes = rt_tensor_bytes(s->dtype, s->rank, s->shape);
  s->owned = false;
  if (l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) { /* the value sits in shard 0 */
    s->data = rt_calloc(bytes);
    s->owned = true;
    return s->data != NULL;
  }
  const char *start = full;
  if (l.kind == PPCC_LAYOUT_SPLIT && l.count > 1) { /* one shard of one is the whole tensor */
    rt_split_geom geom = rt_split_geometry(p->rank, units, l.dim, l.count);
    start = geom.outer == 1 ? start + (int64_t)i * bytes : NULL;
  }
  int align = ppcc_dtype_is_quantized(p->dtype) ? 1 : es; /* kernels read blocks bytewise */
  bool off_line = lines && mapped && p->dtype == PPCC_F32 && (uintptr_t)start % 64 != 0;
  if (start && (uintptr_t)start % (uintptr_t)(align > 0 ? align : 1) == 0 && !off_line) {
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
      rt_copy_shard_out(full, copy, rt_split_geometry(p->rank, units, l.dim, l.count), l.count, i, es);
    else if (copy && bytes > 0)
      memcpy(copy, full, (size_t)bytes);
  }
  s->data = copy;
  s->owned = true;
  rt_count_param_copy(bytes);
  return copy != NULL;
}

bool rt_param_released(const ppcc_run_data *data, int v) { return data->released && data->released[v]; }

ppcc_status rt_refuse_released(const ppcc_run_data *data, int v, const ppcc_value *p, int shard, ppcc_diag *d) {
  if (!rt_param_released(data, v)) return PPCC_OK;
  return ppcc_error_status(d, PPCC_ERR_INTERNAL, "'%s' was released after load but its shard %d is not resident",
                           p->name, shard);
}

bool rt_param_mapped(const ppcc_run_data *data, int v, bool dist) {
  return dist && !data->owned[v] && !(data->borrowed && data->borrowed[v]);
}

/* A state's shard i (of microbatch slice `host`) made from its host
 * tensor: always a copy, the executors write it. */
static bool make_state(const ppcc_value *p, ppcc_layout l, int i, const void *host, ppcc_resident_shard *s) {
  int es = ppcc_dtype_size(p->dtype);
  s->dtype = p->dtype;
  s->rank = p->rank;
  memcpy(s->shape, p->shape, sizeof s->shape);
  if (l.kind == PPCC_LAYOUT_SPLIT) s->shape[l.dim] /= l.count;
  int64_t bytes = ppcc_num_elements(s->rank, s->shape) * es;
  void *b = l.kind == PPCC_LAYOUT_UNREDUCED && i > 0 ? rt_calloc(bytes) : rt_alloc(bytes);
  if (b && l.kind == PPCC_LAYOUT_SPLIT)
    rt_copy_shard_out(host, b, rt_split_geometry(p->rank, p->shape, l.dim, l.count), l.count, i % l.count, es);
  else if (b && !(l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) && bytes > 0)
    memcpy(b, host, (size_t)bytes);
  s->data = b;
  s->owned = true;
  rt_count_state_host(bytes);
  return b != NULL;
}

/* The whole of a released param (its pages given back once cut), put
 * together again from the shards of its own layout, all resident here,
 * when an unsharded run asks for it: generate's search for the first
 * non-finite value. */
static bool assemble_whole(const ppcc_resident *r, const ppcc_value *p, const void *full, ppcc_resident_shard *s) {
  ppcc_layout own = p->layout;
  if (own.kind != PPCC_LAYOUT_SPLIT || own.count < 2) return false;
  int64_t units[PPCC_MAX_RANK], elements = ppcc_num_elements(p->rank, p->shape);
  int es = rt_storage_units(p->dtype, p->rank, p->shape, units);
  rt_split_geom geom = rt_split_geometry(p->rank, units, own.dim, own.count);
  void *whole = rt_alloc(rt_tensor_bytes(p->dtype, p->rank, p->shape));
  for (int k = 0; whole && k < own.count; k++) {
    const resident_entry *e = find(r, p->name, full, own, k, elements);
    if (!e) { /* a shard on another rank */
      rt_free(whole);
      return false;
    }
    rt_copy_shard_in(whole, e->s.data, geom, own.count, k, es);
  }
  s->dtype = p->dtype;
  s->rank = p->rank;
  memcpy(s->shape, p->shape, sizeof s->shape);
  s->data = whole;
  s->owned = true;
  return whole != NULL;
}

/* The entry of (p's name, full, l, i), made on first use (full NULL: a
 * state, made from `host`; `released`: full's pages were given back, so
 * only the whole is made, from the shards); NULL when out of memory or
 * not to be made. Call in the critical section. */
static resident_entry *entry_of(ppcc_resident *r, const ppcc_value *p, const void *full, const void *host,
                                ppcc_layout l, int i, bool mapped, bool lines, bool released) {
  int64_t elements = ppcc_num_elements(p->rank, p->shape);
  resident_entry *e = find(r, p->name, full, l, i, elements);
  if (e || (released && (l.count > 1 || i != 0)) || !grow(r)) return e;
  e = &r->entries[r->n];
  memset(e, 0, sizeof *e);
  e->name = malloc(strlen(p->name) + 1);
  bool made = e->name && (released ? assemble_whole(r, p, full, &e->s)
                          : full   ? make_shard(p, l, i, full, mapped, lines, &e->s)
                                   : make_state(p, l, i, host, &e->s));
  if (!made) {
    free(e->name);
    return NULL;
  }
  strcpy(e->name, p->name);
  e->full = full, e->layout = l, e->shard = i, e->is_state = !full, e->elements = elements;
  if (e->s.owned) r->owned_bytes += rt_tensor_bytes(e->s.dtype, e->s.rank, e->s.shape);
  table_put(r, r->n++);
  return e;
}

/* rt_resident_shard's work; `lines` as make_shard's (the first make of a
 * shard decides: later lookups find it). */
static const void *resident_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i,
                                  bool mapped, bool lines) {
  ppcc_resident *r = data->resident;
  const void *full = data->values[v].data, *out = NULL;
  bool own_layout = l.kind == p->layout.kind && l.count == p->layout.count && l.dim == p->layout.dim;
  const void *stored = own_layout ? ppcc_run_data_shard(data, v, i) : NULL;
  if (stored && r) return stored; /* read shard by shard from a sharded archive: bound as stored */
  if (!r || !full) return NULL;
#pragma omp critical(ppcc_resident)
  {
    resident_entry *e = entry_of(r, p, full, NULL, l, i, mapped, lines, rt_param_released(data, v));
    out = e ? e->s.data : NULL;
  }
  return out;
}

const void *rt_resident_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i,
                              bool mapped) {
  return resident_shard(data, v, p, l, i, mapped, false);
}

void *rt_state_shard(const ppcc_run_data *data, int v, const ppcc_value *p, ppcc_layout l, int i, int mb, bool next) {
  ppcc_resident *r = data->resident;
  const char *host = data->values[v].data;
  void *out = NULL;
  if (!r || !host) return NULL;
#pragma omp critical(ppcc_resident)
  {
    resident_entry *e =
        entry_of(r, p, NULL, host + (size_t)mb * (size_t)ppcc_value_bytes(p), l, mb * l.count + i, false, false, false);
    if (e && next && !e->next) e->next = rt_alloc(ppcc_num_elements(e->s.rank, e->s.shape) * ppcc_dtype_size(e->s.dtype));
    if (e) out = next ? e->next : (void *)e->s.data;
  }
  return out;
}

void rt_state_flip(const ppcc_run_data *data, const ppcc_value *p, ppcc_layout l, int i, int mb) {
  ppcc_resident *r = data->resident;
  if (!r) return;
#pragma omp critical(ppcc_resident)
  {
    resident_entry *e = find(r, p->name, NULL, l, mb * l.count + i, ppcc_num_elements(p->rank, p->shape));
    if (e && e->next) {
      void *cur = (void *)e->s.data;
      e->s.data = e->next;
      e->next = cur;
    }
  }
}

ppcc_status ppcc_run_data_bind_state(const ppcc_graph *g, ppcc_run_data *data, const char *input, const char *output,
                                     ppcc_diag *d) {
  int v = ppcc_find_value(g, input), w = ppcc_find_value(g, output), k = -1;
  for (int j = 0; w >= 0 && j < g->n_outputs; j++)
    if (g->outputs[j] == w) k = j;
  if (v < 0 || g->values[v].kind != PPCC_VALUE_INPUT) return ppcc_error(d, "state: '%s' is not an input of the graph", input);
  if (k < 0) return ppcc_error(d, "state: '%s' is not an output of the graph", output);
  const ppcc_value *a = &g->values[v], *b = &g->values[w];
  bool same = a->dtype == b->dtype && a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) == 0 &&
              a->layout.kind == b->layout.kind && a->layout.dim == b->layout.dim && a->layout.count == b->layout.count &&
              a->devices && b->devices && memcmp(a->devices, b->devices, sizeof(int) * (size_t)a->layout.count) == 0;
  if (!same)
    return ppcc_error(d, "state: output '%s' differs from input '%s' in dtype, shape, layout or devices", output, input);
  data->state_of[v] = k;
  return PPCC_OK;
}

/* Whether some op of g reads all of value v: any reader but a lookup (a
 * compute op of zero FLOPs reads at most what it writes, e.g. the token
 * embedding), as the plan's memory prediction counts (src/plan). */
static bool read_in_full(const ppcc_graph *g, int v) {
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    for (int k = 0; k < op->n_in; k++) {
      if (op->in[k] != v) continue;
      bool lookup = op->info && op->info->family == PPCC_FAMILY_COMPUTE && op->n_out == 1 &&
                    (!op->info->flops || op->info->flops(g, op) == 0);
      if (!lookup) return true;
    }
  }
  return false;
}

/* Whether a resident shard of param v lies in its full tensor (bound in
 * place) rather than in a copy made at load. */
static bool view_of_full(const ppcc_run_data *data, int v, const ppcc_value *p, const void *shard) {
  const char *full = data->values[v].data, *at = shard;
  return full && at >= full && at < full + ppcc_value_bytes(p);
}

/* A shard bound in place from the mapped weights and read in full gets
 * its pages mapped now: loaded once at load, as llama.cpp's MAP_POPULATE,
 * instead of page faults in the first execute (a tenth of a 128-token
 * prefill's time). A lookup table's pages stay in the file until looked
 * up, as the memory plan counts. */
static void populate_view(const ppcc_graph *g, const ppcc_run_data *data, int v, const void *shard) {
  const ppcc_value *p = &g->values[v];
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(p, local);
  if (view_of_full(data, v, p, shard) && read_in_full(g, v))
    rt_populate_pages(shard, rt_tensor_bytes(p->dtype, p->rank, local));
}

/* A param held whole in memory (generated, converted or realigned at
 * load) whose local shards are all copies is read through its shards
 * only: its pages go back, so the process holds the weights once, as the
 * loaded-memory plan counts them (src/plan). The allocation stays: its
 * address keys the shards made from it (and the whole assembled again
 * from them, assemble_whole). */
static void release_if_cut(const ppcc_run_data *data, int v, int copies, int views) {
  if (!data->released || !data->owned[v] || copies == 0 || views > 0) return;
  rt_release_pages(data->values[v].data, data->values[v].bytes);
  data->released[v] = true;
  data->resident->released_bytes += data->values[v].bytes;
}

/* Whether an op of g writes in place into something other than an input
 * (a KV cache): the interpreter then cuts each forward a fresh copy of
 * what it writes, maybe from a param's whole tensor (executor.c). */
static bool writes_in_place_beyond_inputs(const ppcc_graph *g) {
  for (int j = 0; j < g->n_ops; j++) {
    const ppcc_op *op = &g->ops[j];
    if (op->info && op->info->pin_rule == PPCC_PIN_INPLACE && op->n_in >= 1 &&
        g->values[op->in[0]].kind != PPCC_VALUE_INPUT)
      return true;
  }
  return false;
}

ppcc_status ppcc_run_data_make_resident(const ppcc_graph *g, const ppcc_run_data *data, ppcc_diag *d) {
  bool dist = rt_dist_active(), release = data->release_cut && !writes_in_place_beyond_inputs(g);
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    bool state = p->kind == PPCC_VALUE_INPUT && data->state_of[v] >= 0;
    if ((p->kind != PPCC_VALUE_PARAM && !state) || !p->devices) continue;
    int copies = 0, views = 0;
    for (int i = 0; i < p->layout.count; i++) {
      if (dist && !rt_dist_local(p->devices[i])) continue;
      if (!data->values[v].data && !ppcc_run_data_shard(data, v, i))
        return ppcc_error_status(d, PPCC_ERR_INTERNAL, "no data for '%s'", p->name);
      /* a shard copied at load releases the mapped file's pages it came
       * from, in any run: the process then holds the weights once (its
       * shards), not shards plus the tensors they were cut from */
      /* a weight read in full from the mapped file lies on 64-byte lines
       * (the GEMM tiles' condition), copied once when the file did not
       * put it there; a lookup table stays in the file */
      const void *made = state ? rt_state_shard(data, v, p, p->layout, i, 0, false)
                               : resident_shard(data, v, p, p->layout, i, rt_param_mapped(data, v, true),
                                                read_in_full(g, v));
      if (!made) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory for '%s'", p->name);
      if (state) continue;
      populate_view(g, data, v, made);
      bool view = view_of_full(data, v, p, made);
      views += view, copies += !view;
    }
    if (release && !state && !data->borrowed[v]) release_if_cut(data, v, copies, views);
  }
  return PPCC_OK;
}

int rt_state_input(const ppcc_graph *g, const ppcc_run_data *data, int k) {
  for (int v = 0; data->state_of && v < g->n_values; v++)
    if (data->state_of[v] == k) return v;
  return -1;
}

int64_t ppcc_resident_state_bytes(const ppcc_run_data *data) {
  int64_t bytes = 0;
  for (int k = 0; data && data->resident && k < data->resident->n; k++) {
    const resident_entry *e = &data->resident->entries[k];
    if (e->is_state) bytes += ppcc_num_elements(e->s.rank, e->s.shape) * ppcc_dtype_size(e->s.dtype) * (e->next ? 2 : 1);
  }
  return bytes;
}

int64_t ppcc_resident_param_bytes(const ppcc_run_data *data) {
  int64_t bytes = 0;
  for (int k = 0; data && data->resident && k < data->resident->n; k++) {
    const resident_entry *e = &data->resident->entries[k];
    if (!e->is_state) bytes += ppcc_num_elements(e->s.rank, e->s.shape) * ppcc_dtype_size(e->s.dtype);
  }
  return bytes;
}
