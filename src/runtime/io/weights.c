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

static ppcc_status check_entry(const char *path, const rt_weight_entry *e, const ppcc_value *p, ppcc_diag *d) {
  char want[128], got[128];
  uint64_t bytes = (uint64_t)ppcc_value_bytes(p);
  if (e->has_type && e->dtype != p->dtype)
    return ppcc_error(d, "%s: tensor '%s' is %s but the graph declares %s", path, p->name, ppcc_dtype_name(e->dtype),
                      ppcc_dtype_name(p->dtype));
  bool same_shape = e->rank == p->rank && memcmp(e->shape, p->shape, sizeof(int64_t) * (size_t)p->rank) == 0;
  if (e->has_type && !same_shape) {
    rt_shape_str(e->rank, e->shape, got, sizeof got);
    rt_shape_str(p->rank, p->shape, want, sizeof want);
    return ppcc_error(d, "%s: tensor '%s' has shape %s but the graph declares %s", path, p->name, got, want);
  }
  if (e->bytes != bytes)
    return ppcc_error(d, "%s: tensor '%s' has %llu bytes but the graph's %s%s needs %llu", path, p->name,
                      (unsigned long long)e->bytes, ppcc_dtype_name(p->dtype),
                      (rt_shape_str(p->rank, p->shape, want, sizeof want), want), (unsigned long long)bytes);
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
