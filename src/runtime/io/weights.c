/* Parameter sources: a mapped .safetensors / .irpa file, or the
 * deterministic generator. A param is handed out as its full tensor (the
 * executor cuts the shards from it per the param's layout) or, from a
 * sharded archive (DESIGN §5: entries NAME.shard.K, sharktank's naming),
 * shard by shard, each checked against the shard the model places. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "weights.h"
#include "weights_sources.h"

struct ppcc_weights {
  bool random;
  uint64_t seed;
  rt_weight_index index;
  rt_source *source; /* an HF checkpoint directory or a GGUF file */
};

rt_weight_entry *rt_weight_index_add(rt_weight_index *idx, const char *name, size_t name_len) {
  if (idx->n == idx->cap) {
    int cap = idx->cap ? idx->cap * 2 : 64;
    rt_weight_entry *e = realloc(idx->entries, sizeof *e * (size_t)cap);
    if (!e) return NULL;
    idx->entries = e;
    idx->cap = cap;
  }
  rt_weight_entry *e = &idx->entries[idx->n];
  memset(e, 0, sizeof *e);
  e->name = malloc(name_len + 1);
  if (!e->name) return NULL;
  memcpy(e->name, name, name_len);
  e->name[name_len] = 0;
  idx->n++;
  return e;
}

void rt_weight_index_free(rt_weight_index *idx) {
  for (int i = 0; i < idx->n; i++) free(idx->entries[i].name);
  free(idx->entries);
  free(idx->table);
  rt_unmap_file(&idx->file);
  memset(idx, 0, sizeof *idx);
}

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) h = (h ^ *c) * 1099511628211ull;
  return h;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t table_slot(const rt_weight_index *idx, const char *name) {
  size_t mask = idx->table_size - 1, i = (size_t)name_hash(name) & mask;
  while (idx->table[i] && strcmp(idx->entries[idx->table[i] - 1].name, name) != 0) i = (i + 1) & mask;
  return i;
}

ppcc_status rt_weight_index_finish(rt_weight_index *idx, ppcc_diag *d) {
  size_t size = 16;
  while (size < (size_t)idx->n * 2 + 1) size *= 2;
  free(idx->table);
  idx->table = calloc(size, sizeof *idx->table);
  if (!idx->table) return ppcc_error(d, "out of memory");
  idx->table_size = size;
  for (int i = 0; i < idx->n; i++) {
    size_t s = table_slot(idx, idx->entries[i].name);
    if (idx->table[s])
      return ppcc_error(d, "%s: tensor '%s' is defined twice", idx->file.path, idx->entries[i].name);
    idx->table[s] = i + 1;
  }
  return PPCC_OK;
}

const rt_weight_entry *rt_weight_index_find(const rt_weight_index *idx, const char *name) {
  if (!idx->table) return NULL;
  int e = idx->table[table_slot(idx, name)];
  return e ? &idx->entries[e - 1] : NULL;
}

ppcc_weights *ppcc_weights_open(const char *path, ppcc_diag *d) {
  ppcc_weights *w = calloc(1, sizeof *w);
  if (!w) {
    ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  if (rt_source_handles(path)) {
    w->source = rt_source_open(path, d);
    if (!w->source) {
      free(w);
      return NULL;
    }
    return w;
  }
  ppcc_status st = rt_map_file(path, &w->index.file, d);
  if (!st)
    st = rt_irpa_is_archive(&w->index.file) ? rt_irpa_index(&w->index, d) : rt_safetensors_index(&w->index, d);
  if (!st) st = rt_weight_index_finish(&w->index, d);
  if (st) {
    ppcc_weights_close(w);
    return NULL;
  }
  return w;
}

ppcc_weights *ppcc_weights_random(uint64_t seed) {
  ppcc_weights *w = calloc(1, sizeof *w);
  if (w) {
    w->random = true;
    w->seed = seed;
  }
  return w;
}

void ppcc_weights_close(ppcc_weights *w) {
  if (!w) return;
  rt_source_close(w->source);
  rt_weight_index_free(&w->index);
  free(w);
}

static void shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && off < n; i++) off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}

static ppcc_status check_entry(const char *path, const rt_weight_entry *e, const ppcc_value *p, ppcc_diag *d) {
  char want[128], got[128];
  uint64_t bytes = (uint64_t)ppcc_value_bytes(p);
  if (e->has_type && e->dtype != p->dtype)
    return ppcc_error(d, "%s: tensor '%s' is %s but the graph declares %s", path, p->name, ppcc_dtype_name(e->dtype),
                      ppcc_dtype_name(p->dtype));
  bool same_shape = e->rank == p->rank && memcmp(e->shape, p->shape, sizeof(int64_t) * (size_t)p->rank) == 0;
  if (e->has_type && !same_shape) {
    shape_str(e->rank, e->shape, got, sizeof got);
    shape_str(p->rank, p->shape, want, sizeof want);
    return ppcc_error(d, "%s: tensor '%s' has shape %s but the graph declares %s", path, p->name, got, want);
  }
  if (e->bytes != bytes)
    return ppcc_error(d, "%s: tensor '%s' has %llu bytes but the graph's %s%s needs %llu", path, p->name,
                      (unsigned long long)e->bytes, ppcc_dtype_name(p->dtype),
                      (shape_str(p->rank, p->shape, want, sizeof want), want), (unsigned long long)bytes);
  return PPCC_OK;
}

static ppcc_status splat(const rt_weight_entry *e, const void **data, void **owned, ppcc_diag *d) {
  unsigned char *buf = rt_alloc((int64_t)e->bytes);
  if (!buf) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (uint64_t j = 0; j < e->bytes; j++) buf[j] = e->pattern[j % (uint64_t)e->pattern_len];
  *data = *owned = buf;
  return PPCC_OK;
}

/* The data of entry e, checked against p (the param, or one shard of it). */
static ppcc_status entry_data(const char *path, const rt_weight_entry *e, const ppcc_value *p, const void **data,
                              void **owned, ppcc_diag *d) {
  ppcc_status st = check_entry(path, e, p, d);
  if (st) return st;
  if (!e->data) return splat(e, data, owned, d);
  if ((uintptr_t)e->data % (uintptr_t)ppcc_dtype_size(p->dtype) != 0) { /* kernels read whole elements */
    unsigned char *copy = rt_alloc((int64_t)e->bytes);
    if (!copy) return ppcc_error(d, "out of memory for param '%s'", p->name);
    memcpy(copy, e->data, (size_t)e->bytes);
    *data = *owned = copy;
    return PPCC_OK;
  }
  *data = e->data;
  return PPCC_OK;
}

ppcc_status ppcc_weights_get(ppcc_weights *w, const ppcc_value *param, const void **data, void **owned,
                             ppcc_diag *d) {
  *data = NULL;
  *owned = NULL;
  if (w->random) {
    ppcc_host_tensor t;
    if (!ppcc_host_tensor_alloc(&t, param->dtype, param->rank, param->shape))
      return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory for param '%s'", param->name);
    ppcc_random_tensor(w->seed, param->name, &t);
    *data = *owned = t.data;
    return PPCC_OK;
  }
  if (w->source) return rt_source_get(w->source, param, data, owned, d);
  const char *path = w->index.file.path;
  const rt_weight_entry *e = rt_weight_index_find(&w->index, param->name);
  if (!e) return ppcc_error(d, "%s: tensor '%s' (a parameter of the graph) is missing", path, param->name);
  return entry_data(path, e, param, data, owned, d);
}

/* "NAME.shard.K" of param p, as the archive would name it. */
static bool has_shard_entry(const ppcc_weights *w, const ppcc_value *p, int k) {
  char name[PPCC_MAX_NAME + 32];
  snprintf(name, sizeof name, "%s.shard.%d", p->name, k);
  return rt_weight_index_find(&w->index, name) != NULL;
}

bool ppcc_weights_sharded(const ppcc_weights *w, const ppcc_value *param) {
  return !w->random && !w->source && !rt_weight_index_find(&w->index, param->name) &&
         has_shard_entry(w, param, 0);
}

ppcc_status ppcc_weights_get_shard(ppcc_weights *w, const ppcc_value *param, int i, const void **data,
                                   void **owned, ppcc_diag *d) {
  *data = NULL;
  *owned = NULL;
  const char *path = w->index.file.path;
  int count = param->layout.count > 0 ? param->layout.count : 1;
  if (count == 1)
    return ppcc_error(d, "%s: param '%s' is stored in shards (%s.shard.0) but the model places it unsharded", path,
                      param->name, param->name);
  if (has_shard_entry(w, param, count))
    return ppcc_error(d, "%s: param '%s' is stored in more shards (%s.shard.%d exists) than the %d the model places",
                      path, param->name, param->name, count, count);
  char name[PPCC_MAX_NAME + 32], layout[64];
  for (int k = 0; k < count; k++) { /* every shard there before any is checked: the count first */
    if (!ppcc_param_shard_entry(param, k, name, sizeof name))
      return ppcc_error(d, "param '%s': its shard name is too long", param->name);
    if (!rt_weight_index_find(&w->index, name)) {
      ppcc_layout_str(param->layout, layout, sizeof layout);
      return ppcc_error(d, "%s: param '%s' is stored in shards but '%s' is missing (the model places it %s)", path,
                        param->name, name, layout);
    }
  }
  ppcc_param_shard_entry(param, i, name, sizeof name);
  const rt_weight_entry *e = rt_weight_index_find(&w->index, name);
  ppcc_value shard = *param; /* checked against the shard's shape, named as the entry */
  ppcc_value_shard_shape(param, shard.shape);
  shard.layout = (ppcc_layout){PPCC_LAYOUT_UNSHARDED, -1, 1};
  shard.name = name;
  return entry_data(path, e, &shard, data, owned, d);
}
