/* Pointer -> integer map by open addressing (MLIR values to buffers in
 * exec_dealloc.c, LLVM instructions to positions in exec_glue_flat.c):
 * sized once for the most keys it will hold, never grown. */
#ifndef PPCC_EMIT_PTR_MAP_H
#define PPCC_EMIT_PTR_MAP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct ptr_map {
  const void **keys;
  long *vals;
  size_t mask;
} ptr_map;

/* Room for n keys; false: out of memory (the map is then empty, freeable). */
bool ptr_map_init(ptr_map *m, size_t n);
void ptr_map_free(ptr_map *m);
/* Sets key's value (key not NULL). */
void ptr_map_put(ptr_map *m, const void *key, long val);
/* key's value, -1 when absent. */
long ptr_map_get(const ptr_map *m, const void *key);

#endif
