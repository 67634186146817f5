/* The ppcc_rt_* ABI as JIT-compiled device functions call it: thin
 * adapters from MLIR memref descriptors (llvm.emit_c_interface, unranked
 * memrefs) to the functions of comm.c and ppcc_rt_sgemm. The calls and
 * their arguments are listed in src/emit/exec_comm.c.
 *
 * The communicator and the device a call acts for are bound per thread
 * (rt_jit_bind): each device function runs on its own thread, and the same
 * lowered code could later call an MPI implementation of the ABI where the
 * device is the process's rank. A failing call aborts the run (every later
 * call returns at once) and records its op index for the error message. */
#include <stdio.h>
#include <string.h>
#include "jit_abi.h"

/* MLIR's UnrankedMemRefType: the rank and a pointer to the ranked
 * descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}. */
typedef struct jit_unranked {
  int64_t rank;
  int64_t *desc; /* every field is 8 bytes wide */
} jit_unranked;

typedef struct jit_view {
  char *data;     /* first element */
  int64_t count;  /* elements */
  bool contiguous;
} jit_view;

static _Thread_local ppcc_rt_comm *bound_comm;
static _Thread_local int bound_self = -1;
static _Thread_local int failed_op = -1;

void rt_jit_bind(ppcc_rt_comm *comm, int self) {
  bound_comm = comm;
  bound_self = self;
  failed_op = -1;
}

int rt_jit_failed_op(void) { return failed_op; }

static jit_view view_of(const jit_unranked *m, int64_t elem_size) {
  jit_view v = {NULL, 1, true};
  const int64_t *sizes = m->desc + 3, *strides = m->desc + 3 + m->rank;
  v.data = (char *)(intptr_t)m->desc[1] + m->desc[2] * elem_size;
  int64_t expected = 1;
  for (int64_t i = m->rank - 1; i >= 0; i--) {
    if (sizes[i] != 1 && strides[i] != expected) v.contiguous = false;
    expected *= sizes[i];
  }
  v.count = expected;
  return v;
}

/* Records op as the failure of this thread (the first one wins). */
static void note_failure(int64_t op, int rc) {
  if (rc != 0 && failed_op < 0) failed_op = (int)op;
}

static bool usable(int64_t op, const jit_view *v, const char *what) {
  if (v->contiguous) return true;
  char msg[128];
  snprintf(msg, sizeof msg, "%s: the buffer is not contiguous", what);
  ppcc_rt_abort(bound_comm, bound_self, msg);
  note_failure(op, -1);
  return false;
}

static int64_t elem_size(int64_t dtype) { return ppcc_dtype_size((ppcc_dtype)dtype); }

static void jit_send(int64_t op, int64_t dtype, int64_t dst, jit_unranked *buf) {
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "send")) return;
  note_failure(op, ppcc_rt_send(bound_comm, bound_self, (int)dst, v.data, v.count * elem_size(dtype)));
}

static void jit_recv(int64_t op, int64_t dtype, int64_t src, jit_unranked *buf) {
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "recv")) return;
  note_failure(op, ppcc_rt_recv(bound_comm, bound_self, (int)src, v.data, v.count * elem_size(dtype)));
}

/* The device ids of a group (memref<Nxi64>, N <= 64 by the emitter). */
static int group_ids(const jit_unranked *group, int *ids) {
  jit_view g = view_of(group, 8);
  int n = g.count <= 64 ? (int)g.count : 64;
  for (int i = 0; i < n; i++) ids[i] = (int)((const int64_t *)(const void *)g.data)[i];
  return n;
}

static void jit_all_reduce(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, jit_unranked *buf) {
  int ids[64], n = group_ids(group, ids);
  jit_view v = view_of(buf, elem_size(dtype));
  if (!usable(op, &v, "all_reduce")) return;
  note_failure(op, ppcc_rt_all_reduce(bound_comm, ids, n, (int)rank, (int)dtype, v.data, v.count));
}

static bool sizes_match(int64_t op, const jit_view *shard, const jit_view *full, int64_t outer, int64_t inner, int n,
                        const char *what) {
  if (shard->count == outer * inner && full->count == outer * inner * n) return true;
  char msg[128];
  snprintf(msg, sizeof msg, "%s: buffer sizes do not match the split", what);
  ppcc_rt_abort(bound_comm, bound_self, msg);
  note_failure(op, -1);
  return false;
}

static void jit_all_gather(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, int64_t outer,
                           int64_t inner, jit_unranked *shard, jit_unranked *full) {
  int ids[64], n = group_ids(group, ids);
  jit_view s = view_of(shard, elem_size(dtype)), f = view_of(full, elem_size(dtype));
  if (!usable(op, &s, "all_gather") || !usable(op, &f, "all_gather")) return;
  if (!sizes_match(op, &s, &f, outer, inner, n, "all_gather")) return;
  note_failure(op, ppcc_rt_all_gather(bound_comm, ids, n, (int)rank, (int)dtype, s.data, f.data, outer, inner));
}

static void jit_reduce_scatter(int64_t op, int64_t dtype, jit_unranked *group, int64_t rank, int64_t outer,
                               int64_t inner, jit_unranked *full, jit_unranked *shard) {
  int ids[64], n = group_ids(group, ids);
  jit_view f = view_of(full, elem_size(dtype)), s = view_of(shard, elem_size(dtype));
  if (!usable(op, &s, "reduce_scatter") || !usable(op, &f, "reduce_scatter")) return;
  if (!sizes_match(op, &s, &f, outer, inner, n, "reduce_scatter")) return;
  note_failure(op, ppcc_rt_reduce_scatter(bound_comm, ids, n, (int)rank, (int)dtype, f.data, s.data, outer, inner));
}

/* C[M,N] = A[M,K] * B ([K,N], or [N,K] when b_transposed), through
 * ppcc_rt_sgemm (OpenBLAS when built with it). */
static void jit_matmul(jit_unranked *a, jit_unranked *b, jit_unranked *c, int64_t b_transposed) {
  jit_view va = view_of(a, 4), vb = view_of(b, 4), vc = view_of(c, 4);
  if (!usable(-1, &va, "matmul") || !usable(-1, &vb, "matmul") || !usable(-1, &vc, "matmul")) return;
  int64_t M = a->desc[3], K = a->desc[4], N = c->desc[4];
  ppcc_rt_sgemm(M, N, K, (const float *)(void *)va.data, (const float *)(void *)vb.data, b_transposed != 0,
                (float *)(void *)vc.data);
}

/* memref.copy between strided buffers (MLIR's CRunnerUtils memrefCopy,
 * which the lowered code calls for non-contiguous copies). */
static void copy_strided(int64_t rank, const int64_t *sizes, const int64_t *ss, const int64_t *ds, const char *src,
                         char *dst, int64_t es) {
  if (rank == 0) {
    memcpy(dst, src, (size_t)es);
    return;
  }
  for (int64_t i = 0; i < sizes[0]; i++)
    copy_strided(rank - 1, sizes + 1, ss + 1, ds + 1, src + i * ss[0] * es, dst + i * ds[0] * es, es);
}

static void jit_memref_copy(int64_t es, jit_unranked *src, jit_unranked *dst) {
  jit_view s = view_of(src, es), d = view_of(dst, es);
  if (s.contiguous && d.contiguous) {
    if (s.count > 0) memmove(d.data, s.data, (size_t)(s.count * es));
    return;
  }
  int64_t r = src->rank;
  copy_strided(r, src->desc + 3, src->desc + 3 + r, dst->desc + 3 + r, s.data, d.data, es);
}

/* LLVM lowers f32->bf16 truncation to this libcall; libgcc before GCC 13
 * lacks it. The x86-64 ABI returns a bf16 in the low 16 bits of xmm0; a
 * float carrying those bits in its low half lands there too (clang 14,
 * which builds the fuzz targets, has no _Float16 on x86). Rounds to
 * nearest even, as compiler-rt does. */
static float jit_truncsfbf2(float f) {
  uint32_t bits = ppcc_f32_to_bf16(f);
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

#define DTYPE_SYMBOLS(fn, impl)                                                                     \
  {"_mlir_ciface_ppcc_rt_" #fn "_f32", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_f16", (void *)impl}, \
      {"_mlir_ciface_ppcc_rt_" #fn "_bf16", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_i64", (void *)impl}, \
      {"_mlir_ciface_ppcc_rt_" #fn "_i32", (void *)impl}, {"_mlir_ciface_ppcc_rt_" #fn "_i8", (void *)impl},   \
      {"_mlir_ciface_ppcc_rt_" #fn "_bool", (void *)impl}

const ppcc_jit_symbol *ppcc_jit_symbols(void) {
  static const ppcc_jit_symbol table[] = {
      DTYPE_SYMBOLS(send, jit_send),
      DTYPE_SYMBOLS(recv, jit_recv),
      DTYPE_SYMBOLS(all_reduce, jit_all_reduce),
      DTYPE_SYMBOLS(all_gather, jit_all_gather),
      DTYPE_SYMBOLS(reduce_scatter, jit_reduce_scatter),
      {"_mlir_ciface_ppcc_rt_matmul_f32", (void *)jit_matmul},
      {"memrefCopy", (void *)jit_memref_copy},
      {"__truncsfbf2", (void *)jit_truncsfbf2},
      {NULL, NULL},
  };
  return table;
}
