/* The index of a mapped weights file's tensors (weights.h): the format
 * readers (safetensors.c, irpa.c) append entries, ppcc_weights_open
 * (weights.c) hashes the names and looks tensors up. Below the readers. */
#include <stdlib.h>
#include <string.h>
#include "weights.h"

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
