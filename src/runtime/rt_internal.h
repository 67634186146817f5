/* The runtime's shared base (util.c): mapped files, aligned and reused
 * buffers, shard geometry, dtype conversion, and the per-device timeline
 * record that exec/ fills and comm/ gathers across ranks. Every runtime
 * folder includes it; not a public interface. */
#ifndef PPCC_RT_INTERNAL_H
#define PPCC_RT_INTERNAL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "ppcc/runtime.h"

/* A read-only memory-mapped file (no copy of the contents). */
typedef struct rt_mapped_file {
  const unsigned char *data;
  size_t size;
  char *path;
} rt_mapped_file;

ppcc_status rt_map_file(const char *path, rt_mapped_file *f, ppcc_diag *d);
void rt_unmap_file(rt_mapped_file *f);

/* 64-byte aligned buffers (whole cache lines, SIMD friendly); bytes may be
 * 0. rt_free accepts NULL. */
void *rt_alloc(int64_t bytes);
void *rt_calloc(int64_t bytes);
void rt_free(void *p);
/* Temporaries recycled across ops and runs (a process-wide cache of freed
 * blocks, reused for requests of up to their size and at least half of
 * it): no allocation or page fault per op in the steady state. Free only
 * with rt_reuse_free. */
void *rt_reuse_alloc(int64_t bytes);
void *rt_reuse_calloc(int64_t bytes);
void rt_reuse_free(void *p);

/* Geometry of a split along dim of a shape: the tensor is
 * [outer][count][inner] elements, shard i the [outer][inner] block. */
typedef struct rt_split_geom {
  int64_t outer, inner;
} rt_split_geom;
rt_split_geom rt_split_geometry(int rank, const int64_t *shape, int dim, int count);
/* A tensor's storage units: elements, or for a block-quantized dtype its
 * blocks (the last dim counted in blocks). Fills unit_shape (rank dims)
 * and returns the bytes of one unit. Shard geometry and copies of
 * quantized params work on these units (splits cut whole blocks). */
int rt_storage_units(ppcc_dtype t, int rank, const int64_t *shape, int64_t *unit_shape);
/* Bytes of a tensor (quantized: whole blocks along its last dim). */
int64_t rt_tensor_bytes(ppcc_dtype t, int rank, const int64_t *shape);
/* Copies shard i out of / into a full buffer (elem_size bytes each). */
void rt_copy_shard_out(const void *full, void *shard, rt_split_geom g, int count, int i,
                       int elem_size);
void rt_copy_shard_in(void *full, const void *shard, rt_split_geom g, int count, int i,
                      int elem_size);

/* Adds src into acc (count elements of dtype; floats accumulate in f32 and
 * round once per call, so callers summing many buffers use rt_acc_f32). */
void rt_to_f32(ppcc_dtype dtype, const void *src, float *dst, int64_t count);
void rt_from_f32(ppcc_dtype dtype, const float *src, void *dst, int64_t count);
/* acc[j] += src[j] for f32 accumulators from any numeric dtype. */
void rt_acc_f32(ppcc_dtype dtype, const void *src, float *acc, int64_t count);
/* Exact sum for integer dtypes: acc[j] += src[j]. */
void rt_add_int(ppcc_dtype dtype, const void *src, void *acc, int64_t count);

/* "[2, 3]" (truncated to n bytes). */
void rt_shape_str(int rank, const int64_t *shape, char *buf, size_t n);

/* ---- per-device timeline (filled by exec/trace_stats.c) ---- */

typedef struct rt_span {
  int op, microbatch;
  double start, end; /* seconds since the run started */
} rt_span;

/* One end of a transfer: a flow arrow from the send to the receive. */
typedef struct rt_flow_end {
  int64_t id; /* the same at both ends */
  double t;
  bool is_send;
} rt_flow_end;

/* Written only by its device's thread, so no locking. */
typedef struct rt_device_timeline {
  rt_span *spans;
  int n_spans, cap_spans;
  rt_flow_end *flows;
  int n_flows, cap_flows;
  bool oom;
} rt_device_timeline;

typedef struct rt_timeline {
  int n_devices;
  rt_device_timeline *dev;
} rt_timeline;

#endif
