/* Frees of a straight device function's buffers, for the JIT's lowering
 * (exec_jit.c). After One-Shot Bufferize a device function is usually one
 * block without regions: calls, buffer allocations, copies and views, and
 * a return, with nothing returned. Upstream's ownership-based deallocation
 * frees every buffer allocated in such a block at its end, in allocation
 * order, after a simplification that is quadratic in the number of
 * buffers; this does the same in one walk. */
#include <string.h>
#include "exec_internal.h"

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

static void free_at_end(MlirOperation f) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  MlirOperation ret = mlirBlockGetTerminator(b);
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationEqual(o, ret); o = mlirOperationGetNextInBlock(o)) {
    if (!is_op(o, "memref.alloc")) continue;
    MlirValue buf = mlirOperationGetResult(o, 0);
    MlirOperationState s = mlirOperationStateGet(mlirStringRefCreateFromCString("memref.dealloc"),
                                                 mlirOperationGetLocation(o));
    mlirOperationStateAddOperands(&s, 1, &buf);
    mlirBlockInsertOwnedOperationBefore(b, ret, mlirOperationCreate(&s));
  }
}

void exec_put_back_freeing_at_end(MlirModule module, MlirOperation *funcs, int n) {
  MlirBlock body = mlirModuleGetBody(module);
  for (int i = 0; i < n; i++) {
    free_at_end(funcs[i]);
    mlirBlockAppendOwnedOperation(body, funcs[i]);
  }
}
