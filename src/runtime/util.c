/* Runtime utilities: mapped files, aligned buffers, shard geometry, dtype
 * conversion and accumulation. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ppcc/random_fill.h"
#include "rt_internal.h"
#include "ppcc/quant.h"

/* ---------------- mapped files ---------------- */
ppcc_status rt_map_file(const char *path, rt_mapped_file *f, ppcc_diag *d) {
  memset(f, 0, sizeof *f);
  /* O_NONBLOCK: a FIFO is refused below instead of blocking in open(). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ppcc_error(d, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ppcc_error(d, "%s: not a regular file", path);
  }
  f->size = (size_t)st.st_size;
  if (f->size > 0) {
    void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return ppcc_error(d, "%s: cannot map: %s", path, strerror(errno));
    }
    f->data = p;
  }
  close(fd); /* the mapping stays valid */
  f->path = strdup(path);
  if (!f->path) {
    rt_unmap_file(f);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  return PPCC_OK;
}

void rt_unmap_file(rt_mapped_file *f) {
  if (f->data) munmap((void *)f->data, f->size);
  free(f->path);
  memset(f, 0, sizeof *f);
}

/* ---------------- buffers ---------------- */
void *rt_alloc(int64_t bytes) {
  if (bytes < 0) return NULL;
  size_t n = ((size_t)bytes + 63) & ~(size_t)63;
  void *p = NULL;
  if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
  return p;
}

void *rt_calloc(int64_t bytes) {
  void *p = rt_alloc(bytes);
  if (p) memset(p, 0, (size_t)bytes);
  return p;
}

void rt_free(void *p) { free(p); }

/* ---------------- recycled temporaries ----------------
 * Messages in flight and collective/kernel temporaries are needed op after
 * op with the same few sizes: a freed one waits here for the next request
 * of a similar size instead of going back to the C library (whose large
 * blocks are fresh mmaps: every page faulted again on each use). A 64-byte
 * header before the data holds the capacity. */
enum { REUSE_SLOTS = 64, REUSE_HEADER = 64 };
static const int64_t reuse_max_bytes = (int64_t)1 << 30; /* cached at most */
static pthread_mutex_t reuse_lock = PTHREAD_MUTEX_INITIALIZER;
static char *reuse_free[REUSE_SLOTS];
static int reuse_count;
static int64_t reuse_bytes;

static int64_t capacity_of(const char *p) {
  int64_t c;
  memcpy(&c, p - REUSE_HEADER, sizeof c);
  return c;
}

void *rt_reuse_alloc(int64_t bytes) {
  if (bytes < 0) return NULL;
  int64_t need = ((bytes > 0 ? bytes : 1) + 63) / 64 * 64;
  char *got = NULL;
  pthread_mutex_lock(&reuse_lock);
  int best = -1; /* the smallest that fits, at most twice the request */
  for (int i = 0; i < reuse_count; i++) {
    int64_t c = capacity_of(reuse_free[i]);
    if (c >= need && c <= 2 * need && (best < 0 || c < capacity_of(reuse_free[best]))) best = i;
  }
  if (best >= 0) {
    got = reuse_free[best];
    reuse_bytes -= capacity_of(got);
    reuse_free[best] = reuse_free[--reuse_count];
  }
  pthread_mutex_unlock(&reuse_lock);
  if (got) return got;
  char *base = rt_alloc(need + REUSE_HEADER);
  if (!base) return NULL;
  memcpy(base, &need, sizeof need);
  return base + REUSE_HEADER;
}

void *rt_reuse_calloc(int64_t bytes) {
  void *p = rt_reuse_alloc(bytes);
  if (p && bytes > 0) memset(p, 0, (size_t)bytes);
  return p;
}

void rt_reuse_free(void *p) {
  if (!p) return;
  char *q = p;
  int64_t c = capacity_of(q);
  pthread_mutex_lock(&reuse_lock);
  bool kept = reuse_count < REUSE_SLOTS && reuse_bytes + c <= reuse_max_bytes;
  if (kept) {
    reuse_free[reuse_count++] = q;
    reuse_bytes += c;
  }
  pthread_mutex_unlock(&reuse_lock);
  if (!kept) rt_free(q - REUSE_HEADER);
}

bool ppcc_host_tensor_alloc(ppcc_host_tensor *t, ppcc_dtype dtype, int rank, const int64_t *shape) {
  memset(t, 0, sizeof *t);
  if (rank < 0 || rank > PPCC_MAX_RANK) return false;
  int64_t n = ppcc_num_elements(rank, shape);
  if (n < 0) return false;
  t->dtype = dtype;
  t->rank = rank;
  memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
  t->bytes = rt_tensor_bytes(dtype, rank, shape);
  t->data = rt_calloc(t->bytes);
  return t->data != NULL;
}

void ppcc_host_tensor_free(ppcc_host_tensor *t) {
  if (!t) return;
  rt_free(t->data);
  t->data = NULL;
}

/* Random blocks of a quantized tensor: random value bytes, and scales
 * (finite f16) that keep values near ppcc_random_scale's size. */
static void random_blocks(uint64_t seed, const char *name, const ppcc_host_tensor *t) {
  const ppcc_block_format *f = ppcc_dtype_blocks(t->dtype);
  uint64_t key = ppcc_random_key(seed, name);
  unsigned char *b = t->data;
  for (int64_t j = 0; j < t->bytes; j++) b[j] = (unsigned char)(int)(ppcc_random_unit(key, j) * 127.5f + 128.0f);
  uint16_t d = ppcc_f32_to_f16(ppcc_random_scale(t->rank, t->shape) / (f->block == 32 ? 64.0f : 512.0f));
  for (int64_t at = 0; at + f->bytes <= t->bytes; at += f->bytes)
    for (int s = 0; s < 3 && f->scale_at[s] >= 0; s++) memcpy(b + at + f->scale_at[s], &d, 2);
}

bool ppcc_random_tensor(uint64_t seed, const char *name, ppcc_host_tensor *t) {
  if (!t->data) return false;
  if (ppcc_dtype_is_quantized(t->dtype)) random_blocks(seed, name, t);
  else ppcc_random_fill(seed, name, t->dtype, t->rank, t->shape, t->data);
  return true;
}

/* ---------------- shard geometry ---------------- */
int rt_storage_units(ppcc_dtype t, int rank, const int64_t *shape, int64_t *unit_shape) {
  memcpy(unit_shape, shape, sizeof(int64_t) * (size_t)rank);
  const ppcc_block_format *f = ppcc_dtype_blocks(t);
  if (!f) return ppcc_dtype_size(t);
  if (rank > 0) unit_shape[rank - 1] /= f->block;
  return f->bytes;
}

int64_t rt_tensor_bytes(ppcc_dtype t, int rank, const int64_t *shape) {
  int64_t units[PPCC_MAX_RANK];
  int size = rt_storage_units(t, rank, shape, units);
  return ppcc_num_elements(rank, units) * size;
}

rt_split_geom rt_split_geometry(int rank, const int64_t *shape, int dim, int count) {
  rt_split_geom g = {1, 1};
  for (int i = 0; i < dim; i++) g.outer *= shape[i];
  g.inner = count > 0 ? shape[dim] / count : 0;
  for (int i = dim + 1; i < rank; i++) g.inner *= shape[i];
  return g;
}

void rt_copy_shard_out(const void *full, void *shard, rt_split_geom g, int count, int i,
                       int elem_size) {
  size_t row = (size_t)(g.inner * elem_size);
  const char *src = (const char *)full + row * (size_t)i;
  char *dst = shard;
  for (int64_t o = 0; o < g.outer; o++) memcpy(dst + row * (size_t)o, src + row * (size_t)count * (size_t)o, row);
}

void rt_copy_shard_in(void *full, const void *shard, rt_split_geom g, int count, int i,
                      int elem_size) {
  size_t row = (size_t)(g.inner * elem_size);
  char *dst = (char *)full + row * (size_t)i;
  const char *src = shard;
  for (int64_t o = 0; o < g.outer; o++) memcpy(dst + row * (size_t)count * (size_t)o, src + row * (size_t)o, row);
}

/* ---------------- dtype conversion ---------------- */
/* ppcc_f16_to_f32 and ppcc_bf16_to_f32 live in src/ir/quant.c (the block
 * decoders need them in the core library). */
uint16_t ppcc_f32_to_f16(float f) { return ppcc_random_f32_to_f16(f); }

uint16_t ppcc_f32_to_bf16(float f) { return ppcc_random_f32_to_bf16(f); }

void rt_to_f32(ppcc_dtype dtype, const void *src, float *dst, int64_t count) {
  switch (dtype) {
  case PPCC_F32: memcpy(dst, src, (size_t)count * 4); break;
  case PPCC_F16:
    for (int64_t j = 0; j < count; j++) dst[j] = ppcc_f16_to_f32(((const uint16_t *)src)[j]);
    break;
  case PPCC_BF16:
    for (int64_t j = 0; j < count; j++) dst[j] = ppcc_bf16_to_f32(((const uint16_t *)src)[j]);
    break;
  case PPCC_I64:
    for (int64_t j = 0; j < count; j++) dst[j] = (float)((const int64_t *)src)[j];
    break;
  case PPCC_I32:
    for (int64_t j = 0; j < count; j++) dst[j] = (float)((const int32_t *)src)[j];
    break;
  case PPCC_I8:
    for (int64_t j = 0; j < count; j++) dst[j] = (float)((const int8_t *)src)[j];
    break;
  case PPCC_BOOL:
    for (int64_t j = 0; j < count; j++) dst[j] = ((const uint8_t *)src)[j] ? 1.0f : 0.0f;
    break;
  default: break;
  }
}

void rt_from_f32(ppcc_dtype dtype, const float *src, void *dst, int64_t count) {
  switch (dtype) {
  case PPCC_F32: memcpy(dst, src, (size_t)count * 4); break;
  case PPCC_F16:
    for (int64_t j = 0; j < count; j++) ((uint16_t *)dst)[j] = ppcc_f32_to_f16(src[j]);
    break;
  case PPCC_BF16:
    for (int64_t j = 0; j < count; j++) ((uint16_t *)dst)[j] = ppcc_f32_to_bf16(src[j]);
    break;
  /* Integers never take this path: they are not computed in f32. */
  default: break;
  }
}

void rt_acc_f32(ppcc_dtype dtype, const void *src, float *acc, int64_t count) {
  if (dtype == PPCC_F32) {
    const float *s = src;
    for (int64_t j = 0; j < count; j++) acc[j] += s[j];
    return;
  }
  float tmp[256];
  for (int64_t j = 0; j < count; j += 256) {
    int64_t n = count - j < 256 ? count - j : 256;
    rt_to_f32(dtype, (const char *)src + j * ppcc_dtype_size(dtype), tmp, n);
    for (int64_t k = 0; k < n; k++) acc[j + k] += tmp[k];
  }
}

void rt_add_int(ppcc_dtype dtype, const void *src, void *acc, int64_t count) {
  switch (dtype) {
  case PPCC_I64:
    for (int64_t j = 0; j < count; j++) /* wrap, like the hardware, without UB */
      ((int64_t *)acc)[j] = (int64_t)((uint64_t)((int64_t *)acc)[j] + (uint64_t)((const int64_t *)src)[j]);
    break;
  case PPCC_I32:
    for (int64_t j = 0; j < count; j++)
      ((int32_t *)acc)[j] = (int32_t)((uint32_t)((int32_t *)acc)[j] + (uint32_t)((const int32_t *)src)[j]);
    break;
  case PPCC_I8:
    for (int64_t j = 0; j < count; j++)
      ((int8_t *)acc)[j] = (int8_t)((uint8_t)((int8_t *)acc)[j] + (uint8_t)((const int8_t *)src)[j]);
    break;
  case PPCC_BOOL:
    for (int64_t j = 0; j < count; j++) ((uint8_t *)acc)[j] |= ((const uint8_t *)src)[j];
    break;
  default: break;
  }
}

void rt_shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
  size_t off = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && off < n; i++) off += (size_t)snprintf(buf + off, n - off, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (off < n) snprintf(buf + off, n - off, "]");
}
