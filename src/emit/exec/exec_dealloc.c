/* Frees of a straight device function's buffers, for the JIT's lowering
 * (exec_jit.c). After One-Shot Bufferize a device function is usually one
 * block without regions: calls, buffer allocations, copies and views, and
 * a return, with nothing returned. Upstream's ownership-based deallocation
 * frees every buffer allocated in such a block at its end, in allocation
 * order, after a simplification that is quadratic in the number of
 * buffers; this frees each right after its last use instead (below), in
 * linear time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"
#include "ptr_map.h"

static bool is_op(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

static bool is_device_func(MlirOperation f) {
  if (!is_op(f, "func.func")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(f, mlirStringRefCreateFromCString("sym_name"));
  if (mlirAttributeIsNull(a)) return false;
  MlirStringRef s = mlirStringAttrGetValue(a);
  return s.length > 7 && memcmp(s.data, "device_", 7) == 0;
}

/* One block, no op with regions, no frees or reallocs of its own, ending
 * in a return of nothing. */
static bool is_straight(MlirOperation f) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  if (mlirBlockIsNull(b) || !mlirBlockIsNull(mlirBlockGetNextInRegion(b))) return false;
  MlirOperation last = mlirBlockGetTerminator(b);
  if (mlirOperationIsNull(last) || !is_op(last, "func.return") || mlirOperationGetNumOperands(last) != 0) return false;
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    if (mlirOperationGetNumRegions(o) > 0 || is_op(o, "memref.dealloc") || is_op(o, "memref.realloc") ||
        is_op(o, "bufferization.dealloc"))
      return false;
  return true;
}

int exec_take_straight_devices(MlirModule module, MlirOperation *out, int cap) {
  int n = 0;
  MlirBlock body = mlirModuleGetBody(module);
  for (MlirOperation f = mlirBlockGetFirstOperation(body), next; !mlirOperationIsNull(f) && n < cap; f = next) {
    next = mlirOperationGetNextInBlock(f);
    if (!is_device_func(f) || !is_straight(f)) continue;
    mlirOperationRemoveFromParent(f);
    out[n++] = f;
  }
  return n;
}

/* ---- each buffer freed right after its last use ----
 * One forward walk over the block: every memref.alloc starts a buffer;
 * every result of an op that reads a buffer (a view, a cast, a reshape,
 * an extracted pointer: whatever the op) is taken for an alias of it,
 * unless the op only reads elements or sizes (load, dim, rank); an op
 * reading several buffers whose results may alias any of them joins them
 * (union-find), so they are freed together. The last op to use a buffer
 * or any alias of it is recorded; a buffer stored into memory or
 * returned escapes and is freed at the end, as before. The copies of
 * results into the output arguments, which the function makes at its
 * end, move up to right after their buffer's last use (nothing touches
 * either in between). Then one free per buffer goes right after its last
 * user (in allocation order where several share one), so that the
 * runtime's arena (jit_arena.c) reuses its bytes: memory flat in model
 * depth instead of the sum of all buffers. Linear in the ops: one walk,
 * a hash table of values. */

typedef struct buf_set {
  int *parent;             /* union-find over buffers */
  int *last;               /* per root: position of the last user */
  MlirOperation *last_op;  /* per root: the last user */
  bool *escapes;           /* per root: freed at the end */
  bool stores;             /* some op may store a pointer: nothing moved */
  MlirOperation *alloc;    /* per buffer: its memref.alloc */
  int n;
  ptr_map buffer; /* value -> buffer (any member of its set) */
} buf_set;

static int find(buf_set *s, int b) {
  while (s->parent[b] != b) b = s->parent[b] = s->parent[s->parent[b]];
  return b;
}

static int join(buf_set *s, int a, int b) {
  a = find(s, a), b = find(s, b);
  if (a == b) return a;
  if (s->last[b] > s->last[a]) s->last[a] = s->last[b], s->last_op[a] = s->last_op[b];
  s->escapes[a] = s->escapes[a] || s->escapes[b];
  s->parent[b] = a;
  return a;
}

static void map_value(buf_set *s, MlirValue v, int b) { ptr_map_put(&s->buffer, v.ptr, b); }

static int buffer_of(const buf_set *s, MlirValue v) { return (int)ptr_map_get(&s->buffer, v.ptr); }

/* Ops whose results are no pointer into their operands. */
static bool reads_only(MlirOperation o) {
  return is_op(o, "memref.load") || is_op(o, "memref.dim") || is_op(o, "memref.rank") || is_op(o, "memref.copy");
}

/* Ops that write their operand 0 into memory as a value. */
static bool stores_value(MlirOperation o) {
  return is_op(o, "memref.store") || is_op(o, "llvm.store") || is_op(o, "memref.atomic_rmw");
}

/* The op keeps a buffer beyond itself: it is returned, or written into
 * memory as a value. (Calls do not: the kernels and the runtime's
 * communication calls copy what they send, src/runtime/comm/comm.c.) */
static bool keeps(MlirOperation o, int operand) {
  return is_op(o, "func.return") || (operand == 0 && stores_value(o));
}

static bool buf_set_init(buf_set *s, MlirBlock b) {
  int n_alloc = 0;
  size_t n_values = 0;
  bool stores = false;
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    n_alloc += is_op(o, "memref.alloc");
    stores = stores || stores_value(o);
    n_values += (size_t)mlirOperationGetNumResults(o);
  }
  size_t nb = (size_t)n_alloc + 1;
  *s = (buf_set){.parent = malloc(nb * sizeof(int)), .last = malloc(nb * sizeof(int)),
                 .last_op = malloc(nb * sizeof(MlirOperation)), .escapes = calloc(nb, sizeof(bool)),
                 .alloc = malloc(nb * sizeof(MlirOperation)), .stores = stores};
  bool mapped = ptr_map_init(&s->buffer, n_values);
  return mapped && s->parent && s->last && s->last_op && s->escapes && s->alloc;
}

static void buf_set_free(buf_set *s) {
  free(s->parent);
  free(s->last);
  free(s->last_op);
  free(s->escapes);
  free(s->alloc);
  ptr_map_free(&s->buffer);
}

/* A copy of a buffer into an output argument that nothing else uses
 * (the device function's outputs, written back at its end): it may as
 * well run right after the buffer's last use so far, since nothing
 * touches either between; then the buffer is freed there too instead of
 * living to the end. Returns the buffer, or -1. */
static int output_copy_source(const buf_set *s, MlirOperation o) {
  if (s->stores || !is_op(o, "memref.copy") || mlirOperationGetNumOperands(o) != 2) return -1;
  MlirValue dst = mlirOperationGetOperand(o, 1);
  if (!mlirValueIsABlockArgument(dst)) return -1;
  MlirOpOperand use = mlirValueGetFirstUse(dst);
  if (mlirOpOperandIsNull(use) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(use))) return -1;
  return buffer_of(s, mlirOperationGetOperand(o, 0));
}

/* The walk: last users, aliases, escapes; output copies moved up. */
static void record_uses(buf_set *s, MlirBlock b) {
  int pos = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(b), next; !mlirOperationIsNull(o); o = next, pos++) {
    next = mlirOperationGetNextInBlock(o);
    int src = output_copy_source(s, o);
    if (src >= 0) {
      src = find(s, src);
      if (!mlirOperationEqual(s->last_op[src], o)) mlirOperationMoveAfter(o, s->last_op[src]);
      s->last_op[src] = o; /* its position stays the last use's */
      continue;
    }
    /* the buffers o uses; joined when its results may point into them */
    bool aliases = mlirOperationGetNumResults(o) > 0 && !reads_only(o);
    int set = -1;
    for (intptr_t k = 0, n = mlirOperationGetNumOperands(o); k < n; k++) {
      int m = buffer_of(s, mlirOperationGetOperand(o, k));
      if (m < 0) continue;
      m = find(s, m);
      s->last[m] = pos, s->last_op[m] = o;
      if (keeps(o, (int)k)) s->escapes[m] = true;
      if (aliases) set = set < 0 ? m : join(s, set, m);
    }
    if (is_op(o, "memref.alloc")) {
      int a = s->n++;
      s->parent[a] = a, s->last[a] = pos, s->last_op[a] = o, s->alloc[a] = o;
      map_value(s, mlirOperationGetResult(o, 0), a);
    } else if (set >= 0) {
      for (intptr_t r = 0, n = mlirOperationGetNumResults(o); r < n; r++) map_value(s, mlirOperationGetResult(o, r), set);
    }
  }
}

static MlirOperation dealloc_of(MlirOperation alloc) {
  MlirValue buf = mlirOperationGetResult(alloc, 0);
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("memref.dealloc"),
                                                mlirOperationGetLocation(alloc));
  mlirOperationStateAddOperands(&st, 1, &buf);
  return mlirOperationCreate(&st);
}

/* false: out of memory (nothing inserted) */
static bool free_after_last_use(MlirOperation f) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  MlirOperation ret = mlirBlockGetTerminator(b);
  buf_set s;
  bool ok = buf_set_init(&s, b);
  if (ok) {
    record_uses(&s, b);
    /* backwards, each right after its last user: those sharing one end
     * up in allocation order; escaping ones before the return, in order */
    for (int a = s.n - 1; a >= 0; a--) {
      int r = find(&s, a);
      if (!s.escapes[r]) mlirBlockInsertOwnedOperationAfter(b, s.last_op[r], dealloc_of(s.alloc[a]));
    }
    for (int a = 0; a < s.n; a++)
      if (s.escapes[find(&s, a)]) mlirBlockInsertOwnedOperationBefore(b, ret, dealloc_of(s.alloc[a]));
  }
  buf_set_free(&s);
  return ok;
}

bool exec_put_back_freeing_after_last_use(MlirModule module, MlirOperation *funcs, int n) {
  MlirBlock body = mlirModuleGetBody(module);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    ok = ok && free_after_last_use(funcs[i]);
    mlirBlockAppendOwnedOperation(body, funcs[i]);
  }
  return ok;
}
