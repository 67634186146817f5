/* Shared body of fuzz_safetensors and fuzz_irpa: src/runtime/io/weights.c
 * and weight_index.c are compiled into the target with the file mapping
 * replaced by a heap copy of the input of exactly its size (ASan then sees any read past the end,
 * which an mmap'd file would hide up to the page boundary). Public
 * functions are renamed so they do not clash with the runtime library.
 *
 * After opening, every indexed tensor is fetched as a graph parameter of
 * its own dtype/shape (or of its byte size, for IRPA) and all of its bytes
 * are read; a mismatching and a missing parameter must give diagnostics. */
#ifndef PPCC_FUZZ_WEIGHTS_HARNESS_H
#define PPCC_FUZZ_WEIGHTS_HARNESS_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define rt_map_file fuzz_map_file
#define rt_unmap_file fuzz_unmap_file
#define ppcc_weights_open fuzz_weights_open
#define ppcc_weights_random fuzz_weights_random
#define ppcc_weights_close fuzz_weights_close
#define ppcc_weights_get fuzz_weights_get
#define rt_weight_index_add fuzz_weight_index_add
#define rt_weight_index_free fuzz_weight_index_free
#define rt_weight_index_finish fuzz_weight_index_finish
#define rt_weight_index_find fuzz_weight_index_find
#include "../src/runtime/io/weights.c"
#include "../src/runtime/io/weight_index.c"

/* Splat entries are expanded into a fresh buffer: keep them small. */
#define FUZZ_MAX_SPLAT_BYTES ((uint64_t)1 << 20)
#define FUZZ_MAX_ENTRIES 256

#include "memory_file.h"

static volatile unsigned fuzz_checksum;

/* Fetches param and touches every byte the loader promises. */
static void fuzz_get(ppcc_weights *w, const ppcc_value *p, int expect_error) {
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz", NULL);
  const void *data = NULL;
  void *owned = NULL;
  ppcc_status st = fuzz_weights_get(w, p, &data, &owned, &d);
  if (st != PPCC_OK) {
    fuzz_require_diag(&d, "ppcc_weights_get");
    return;
  }
  if (expect_error) {
    fprintf(stderr, "fuzz weights: a wrong parameter was accepted: '%s'\n", p->name);
    abort();
  }
  int64_t bytes = ppcc_value_bytes(p);
  unsigned sum = 0;
  for (int64_t i = 0; i < bytes; i++) sum += ((const unsigned char *)data)[i];
  fuzz_checksum += sum;
  rt_free(owned);
}

static void fuzz_weights_one(const uint8_t *data, size_t size, const char *path) {
  fuzz_data = data;
  fuzz_size = size;
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  ppcc_weights *w = fuzz_weights_open(path, &d);
  if (!w) {
    fuzz_require_diag(&d, "ppcc_weights_open");
    return;
  }
  const rt_weight_index *idx = &w->index;
  for (int i = 0; i < idx->n && i < FUZZ_MAX_ENTRIES; i++) {
    const rt_weight_entry *e = &idx->entries[i];
    if (!e->name) continue;
    ppcc_value p;
    memset(&p, 0, sizeof p);
    p.name = e->name;
    p.kind = PPCC_VALUE_PARAM;
    p.layout = ppcc_layout_unsharded();
    if (e->has_type) {
      p.dtype = e->dtype;
      p.rank = e->rank;
      memcpy(p.shape, e->shape, sizeof p.shape);
    } else {
      if (e->bytes > FUZZ_MAX_SPLAT_BYTES) continue;
      p.dtype = PPCC_I8;
      p.rank = 1;
      p.shape[0] = (int64_t)e->bytes;
    }
    /* Names are unique (a repeated one is refused at open). */
    fuzz_get(w, &p, 0);
    /* One more element than the file holds: always an error. */
    ppcc_value bigger = p;
    if (bigger.rank == 0) {
      bigger.rank = 1;
      bigger.shape[0] = 2;
    } else if (bigger.shape[0] < (int64_t)1 << 40) {
      bigger.shape[0] += 1;
    } else {
      continue;
    }
    if (rt_weight_index_find(idx, e->name) != e) {
      fprintf(stderr, "fuzz weights: lookup of '%s' gives another entry\n", e->name);
      abort();
    }
    fuzz_get(w, &bigger, 1);
  }
  ppcc_value missing;
  memset(&missing, 0, sizeof missing);
  missing.name = "\x01 not a tensor name";
  missing.dtype = PPCC_F32;
  missing.layout = ppcc_layout_unsharded();
  fuzz_get(w, &missing, 1);
  fuzz_weights_close(w);
}

#endif
