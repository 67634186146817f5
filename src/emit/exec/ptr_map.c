#include "ptr_map.h"
#include <stdint.h>
#include <stdlib.h>

bool ptr_map_init(ptr_map *m, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 1) cap *= 2; /* at most half full: short probes */
  *m = (ptr_map){calloc(cap, sizeof *m->keys), malloc(cap * sizeof *m->vals), cap - 1};
  if (m->keys && m->vals) return true;
  ptr_map_free(m);
  return false;
}

void ptr_map_free(ptr_map *m) {
  free(m->keys);
  free(m->vals);
  *m = (ptr_map){0};
}

static size_t slot_of(const ptr_map *m, const void *key) {
  size_t h = ((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15ull;
  size_t i = (h >> 17) & m->mask;
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & m->mask;
  return i;
}

void ptr_map_put(ptr_map *m, const void *key, long val) {
  size_t i = slot_of(m, key);
  m->keys[i] = key;
  m->vals[i] = val;
}

long ptr_map_get(const ptr_map *m, const void *key) {
  size_t i = slot_of(m, key);
  return m->keys[i] ? m->vals[i] : -1;
}
