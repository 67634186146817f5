/* The fuzz input as a "mapped file": the runtime's rt_map_file is renamed
 * to fuzz_map_file before its source is included, and this gives a heap
 * copy of exactly the input's size (ASan then sees any read past the end,
 * which an mmap'd file would hide up to the page boundary). Include after
 * the runtime source. */
#ifndef PPCC_FUZZ_MEMORY_FILE_H
#define PPCC_FUZZ_MEMORY_FILE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t *fuzz_data;
static size_t fuzz_size;

ppcc_status fuzz_map_file(const char *path, rt_mapped_file *f, ppcc_diag *d) {
  memset(f, 0, sizeof *f);
  if (fuzz_size > 0) {
    unsigned char *copy = malloc(fuzz_size);
    if (!copy) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    memcpy(copy, fuzz_data, fuzz_size);
    f->data = copy;
  }
  f->size = fuzz_size;
  f->path = strdup(path);
  return PPCC_OK;
}

void fuzz_unmap_file(rt_mapped_file *f) {
  free((void *)f->data);
  free(f->path);
  memset(f, 0, sizeof *f);
}

/* A failure must come with a diagnostic: abort (a fuzz finding) if not. */
static void fuzz_require_diag(const ppcc_diag *d, const char *what) {
  if (d->errors == 0) {
    fprintf(stderr, "fuzz: %s failed without a diagnostic\n", what);
    abort();
  }
}

#endif
