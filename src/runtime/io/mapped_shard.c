/* Cutting a param's shard out of a mapped weights file for an MPI rank
 * without keeping the file's pages: a rank's peak RSS is then its own
 * shards, not shards plus the mapped tensors they came from. */
#define _DEFAULT_SOURCE /* madvise */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "io.h"

/* Drops the whole pages of [p, p + bytes) from this process (MADV_DONTNEED
 * on a read-only file mapping: a later touch reads them again). */
void rt_release_pages(const void *p, int64_t bytes) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p, end = start + (uintptr_t)bytes;
  start = (start + page - 1) / page * page, end = end / page * page;
  if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* Maps the whole pages of fresh buffer [p, p + bytes) now: one call
 * instead of a page fault per page as a copy first writes them. */
static void populate_write(void *p, int64_t bytes) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p, end = start + (uintptr_t)bytes;
  start = (start + page - 1) / page * page, end = end / page * page;
  if (end > start) madvise((void *)start, end - start, MADV_POPULATE_WRITE);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
void rt_populate_pages(const void *p, int64_t bytes) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)p, end = start + (uintptr_t)bytes;
  start = start / page * page;
  if (bytes > 0) madvise((void *)start, end - start, MADV_POPULATE_READ);
}

/* A copy of a contiguous range, 1 MiB at a time, each piece released once
 * copied: the file's pages never add up. Both sides' pages are mapped in
 * bulk first (the f32 GGUF's ~340 MiB of weights copied onto 64-byte
 * lines at hidden 1024 loaded in ~200 ms instead of ~220). */
static void *copy_releasing(const void *src, int64_t bytes) {
  char *p = rt_alloc(bytes);
  if (p) populate_write(p, bytes);
  for (int64_t off = 0, step = 1 << 20; p && off < bytes; off += step) {
    int64_t n = bytes - off < step ? bytes - off : step;
    rt_populate_pages((const char *)src + off, n);
    memcpy(p + off, (const char *)src + off, (size_t)n);
    rt_release_pages((const char *)src + off, n);
  }
  return p;
}

void *rt_copy_mapped_shard(const void *full, const ppcc_value *p, int i) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(p, local);
  int64_t units[PPCC_MAX_RANK]; /* elements, or blocks of a quantized param */
  int es = rt_storage_units(p->dtype, p->rank, p->shape, units);
  int64_t bytes = rt_tensor_bytes(p->dtype, p->rank, local);
  ppcc_layout l = p->layout;
  if (l.kind == PPCC_LAYOUT_UNREDUCED && i > 0) return rt_calloc(bytes); /* the value sits in shard 0 */
  if (l.kind != PPCC_LAYOUT_SPLIT) return copy_releasing(full, bytes);
  rt_split_geom geom = rt_split_geometry(p->rank, units, l.dim, l.count);
  if (geom.outer == 1) return copy_releasing((const char *)full + (int64_t)i * bytes, bytes);
  void *s = rt_alloc(bytes); /* strided: copy, then release the whole tensor */
  if (s) rt_copy_shard_out(full, s, geom, l.count, i, es);
  rt_release_pages(full, ppcc_value_bytes(p));
  return s;
}
