/* The device functions' LLVM IR made selectable by FastISel (for
 * exec_glue_jit.c). The memref lowering passes a runtime call its buffers
 * as unranked descriptors: an alloca where the cast is (not in the entry
 * block: a dynamic alloca) and a store of the whole ranked descriptor, an
 * aggregate. FastISel selects neither and hands the rest of the block
 * (everything before them) to SelectionDAG, whose per-block setup,
 * combining and scheduling was most of the glue's code generation time.
 *
 *  - aggregate stores become one store per field, each field read from
 *    the insertvalue chain or constant that built the aggregate;
 *  - extractvalues of such chains become the value inserted;
 *  - allocas of a straight device function go to its entry block (static
 *    allocas), and one whose last use is over is reused by the next alloca
 *    of the same type: the frame stays as small as the most descriptors
 *    alive at once, where the dynamic allocas grew the stack at every call.
 *
 * The runtime ABI reads a descriptor only during the call it is passed to
 * (src/runtime/jit/jit_abi.c), so a descriptor's last use is its last user in
 * program order. All of it is linear in the function's size. */
#include <stdlib.h>
#include <string.h>
#include "exec_glue_jit.h"
#include "ptr_map.h"

enum { MAX_DEPTH = 8, MAX_SLOTS = 64 };

/* The value at index path idx[0..n) of aggregate v, looking through
 * insertvalue chains and constants; NULL when v is anything else. */
static LLVMValueRef leaf_of(LLVMValueRef v, const unsigned *idx, unsigned n) {
  while (n > 0 && v) {
    if (LLVMIsAInsertValueInst(v)) {
      unsigned k = LLVMGetNumIndices(v);
      const unsigned *at = LLVMGetIndices(v);
      unsigned common = k < n ? k : n;
      if (memcmp(at, idx, common * sizeof *idx) != 0) {
        v = LLVMGetOperand(v, 0); /* inserted elsewhere */
      } else if (k <= n) {
        v = LLVMGetOperand(v, 1);
        idx += k;
        n -= k;
      } else {
        return NULL; /* only part of what is asked was inserted here */
      }
    } else if (LLVMIsAConstant(v) && !LLVMIsAConstantExpr(v)) {
      v = LLVMGetAggregateElement(v, idx[0]);
      idx++;
      n--;
    } else {
      return NULL;
    }
  }
  return v;
}

/* Element i of aggregate type t. */
static LLVMTypeRef element_type(LLVMTypeRef t, unsigned i) {
  return LLVMGetTypeKind(t) == LLVMStructTypeKind ? LLVMStructGetTypeAtIndex(t, i) : LLVMGetElementType(t);
}

static unsigned element_count(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMStructTypeKind ? LLVMCountStructElementTypes(t) : (unsigned)LLVMGetArrayLength2(t);
}

static bool is_aggregate(LLVMTypeRef t) {
  LLVMTypeKind k = LLVMGetTypeKind(t);
  return k == LLVMStructTypeKind || k == LLVMArrayTypeKind;
}

/* Aggregates of at most MAX_DEPTH levels and 64 fields in all (a memref
 * descriptor of rank 8 has 19): worth storing field by field. */
static int leaf_count(LLVMTypeRef t, int depth) {
  if (!is_aggregate(t)) return 1;
  if (depth == MAX_DEPTH || (LLVMGetTypeKind(t) == LLVMStructTypeKind && LLVMIsPackedStruct(t))) return -1;
  unsigned n = element_count(t);
  if (n > 64) return -1;
  int total = 0;
  for (unsigned i = 0; i < n; i++) {
    int c = leaf_count(element_type(t, i), depth + 1);
    if (c < 0 || (total += c) > 64) return -1;
  }
  return total;
}

typedef struct store_job {
  LLVMBuilderRef b;
  LLVMContextRef ctx;
  LLVMTypeRef top; /* the stored aggregate's type */
  LLVMValueRef value, ptr;
  unsigned path[MAX_DEPTH + 1];
} store_job;

static void store_leaves(store_job *j, LLVMTypeRef t, unsigned depth) {
  if (is_aggregate(t)) {
    for (unsigned i = 0, n = element_count(t); i < n; i++) {
      j->path[depth] = i;
      store_leaves(j, element_type(t, i), depth + 1);
    }
    return;
  }
  LLVMValueRef v = leaf_of(j->value, j->path, depth);
  if (!v) { /* built some other way: take it apart */
    v = j->value;
    for (unsigned i = 0; i < depth; i++) v = LLVMBuildExtractValue(j->b, v, j->path[i], "");
  }
  LLVMTypeRef i32 = LLVMInt32TypeInContext(j->ctx);
  LLVMValueRef at[MAX_DEPTH + 1];
  at[0] = LLVMConstInt(i32, 0, 0);
  for (unsigned i = 0; i < depth; i++) at[i + 1] = LLVMConstInt(i32, j->path[i], 0);
  LLVMBuildStore(j->b, v, LLVMBuildGEP2(j->b, j->top, j->ptr, at, depth + 1, ""));
}

/* The blocks of f in layout order, from f's list: the packed entries'
 * blocks were moved there from device_D (exec_glue_jit.c) and still name
 * it as their parent, so LLVMGetNextBasicBlock cannot walk them. NULL
 * with *n 0 for a declaration, NULL with *n > 0 when out of memory. */
static LLVMBasicBlockRef *blocks_of(LLVMValueRef f, unsigned *n) {
  *n = LLVMCountBasicBlocks(f);
  if (*n == 0) return NULL;
  LLVMBasicBlockRef *blocks = malloc(sizeof *blocks * *n);
  if (blocks) LLVMGetBasicBlocks(f, blocks);
  return blocks;
}

/* Stores of aggregates become stores of their fields; extractvalues of
 * insertvalue chains or constants become the value. */
static bool flatten_function(LLVMValueRef f, LLVMBuilderRef b, LLVMContextRef ctx) {
  unsigned n_blocks = 0;
  LLVMBasicBlockRef *blocks = blocks_of(f, &n_blocks);
  if (!blocks) return n_blocks == 0;
  for (unsigned k = 0; k < n_blocks; k++) {
    LLVMBasicBlockRef bb = blocks[k];
    for (LLVMValueRef ins = LLVMGetFirstInstruction(bb), next; ins; ins = next) {
      next = LLVMGetNextInstruction(ins);
      if (LLVMIsAStoreInst(ins) && !LLVMGetVolatile(ins) && LLVMGetOrdering(ins) == LLVMAtomicOrderingNotAtomic) {
        LLVMValueRef v = LLVMGetOperand(ins, 0);
        LLVMTypeRef t = LLVMTypeOf(v);
        if (!is_aggregate(t) || leaf_count(t, 0) < 1) continue;
        store_job j = {b, ctx, t, v, LLVMGetOperand(ins, 1), {0}};
        LLVMPositionBuilderBefore(b, ins);
        store_leaves(&j, t, 0);
        LLVMInstructionEraseFromParent(ins);
      } else if (LLVMIsAExtractValueInst(ins)) {
        LLVMValueRef v = leaf_of(LLVMGetOperand(ins, 0), LLVMGetIndices(ins), LLVMGetNumIndices(ins));
        if (v && LLVMTypeOf(v) == LLVMTypeOf(ins)) {
          LLVMReplaceAllUsesWith(ins, v);
          LLVMInstructionEraseFromParent(ins);
        }
      }
    }
  }
  free(blocks);
  return true;
}

/* ---- allocas to the entry block ---- */

/* An instruction's position in program order (a ptr_map of them); -1
 * for one outside the function. */
static long position(const ptr_map *m, LLVMValueRef ins) { return ptr_map_get(m, ins); }

/* The blocks of f in layout order are a chain: each ends in an
 * unconditional branch to the next, the last in a return. Counts the
 * instructions. */
static bool is_chain(LLVMBasicBlockRef const *blocks, unsigned n_blocks, long *n_ins) {
  long n = 0;
  for (unsigned k = 0; k < n_blocks; k++) {
    LLVMBasicBlockRef bb = blocks[k];
    LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
    if (!t) return false;
    LLVMBasicBlockRef next = k + 1 < n_blocks ? blocks[k + 1] : NULL;
    if (next ? !LLVMIsABranchInst(t) || LLVMIsConditional(t) || LLVMGetSuccessor(t, 0) != next
             : !LLVMIsAReturnInst(t))
      return false;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (LLVMIsAPHINode(i)) return false;
      n++;
    }
  }
  *n_ins = n;
  return true;
}

/* The last position at which v, or a value computed from it (a GEP, an
 * insertvalue, a cast ... anything that is not a memory access or call),
 * is used; -1 if some user is not in the function. */
static long last_use(const ptr_map *m, LLVMValueRef v, int depth) {
  long last = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    long p = position(m, user);
    if (p < 0) return -1;
    if (LLVMIsAStoreInst(user) && LLVMGetOperand(user, 0) == v) return -1; /* the address itself stored: escapes */
    if (p > last) last = p;
    if (!LLVMIsACallInst(user) && !LLVMIsAStoreInst(user) && !LLVMIsALoadInst(user) &&
        LLVMGetTypeKind(LLVMTypeOf(user)) != LLVMVoidTypeKind) {
      if (depth == 8) return -1;
      long q = last_use(m, user, depth + 1);
      if (q < 0) return -1;
      if (q > last) last = q;
    }
  }
  return last;
}

typedef struct frame_slot {
  LLVMValueRef alloca;
  LLVMTypeRef type;
  unsigned align;
  long busy_until; /* position of the last use of what it holds now */
} frame_slot;

static bool static_alloca(LLVMValueRef a) {
  LLVMValueRef n = LLVMGetOperand(a, 0);
  return LLVMIsAConstantInt(n) && LLVMConstIntGetZExtValue(n) == 1;
}

static bool hoist_allocas(LLVMValueRef f, LLVMBuilderRef b) {
  long n = 0;
  unsigned n_blocks = 0;
  LLVMBasicBlockRef *blocks = blocks_of(f, &n_blocks);
  if (!blocks) return n_blocks == 0;
  if (!is_chain(blocks, n_blocks, &n)) { /* left as it is */
    free(blocks);
    return true;
  }
  ptr_map m;
  if (!ptr_map_init(&m, (size_t)n)) {
    free(blocks);
    return false;
  }
  long p = 0;
  for (unsigned k = 0; k < n_blocks; k++)
    for (LLVMValueRef i = LLVMGetFirstInstruction(blocks[k]); i; i = LLVMGetNextInstruction(i)) ptr_map_put(&m, i, p++);
  LLVMBasicBlockRef entry = blocks[0];
  frame_slot slots[MAX_SLOTS];
  int n_slots = 0;
  for (unsigned k = 1; k < n_blocks; k++) {
    for (LLVMValueRef a = LLVMGetFirstInstruction(blocks[k]), next; a; a = next) {
      next = LLVMGetNextInstruction(a);
      if (!LLVMIsAAllocaInst(a) || !static_alloca(a)) continue;
      long at = position(&m, a), last = last_use(&m, a, 0);
      LLVMTypeRef t = LLVMGetAllocatedType(a);
      unsigned align = LLVMGetAlignment(a);
      int s = 0;
      while (s < n_slots && !(slots[s].type == t && slots[s].align == align && slots[s].busy_until >= 0 &&
                              slots[s].busy_until < at))
        s++;
      if (s < n_slots) { /* free again: reuse it */
        LLVMReplaceAllUsesWith(a, slots[s].alloca);
        LLVMInstructionEraseFromParent(a);
      } else {
        LLVMInstructionRemoveFromParent(a);
        LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
        LLVMInsertIntoBuilder(b, a);
        if (n_slots == MAX_SLOTS) continue; /* its own slot, never reused */
        s = n_slots++;
        slots[s].alloca = a;
        slots[s].type = t;
        slots[s].align = align;
      }
      slots[s].busy_until = last; /* -1: never free again */
    }
  }
  ptr_map_free(&m);
  free(blocks);
  return true;
}

bool glue_flatten(LLVMModuleRef m, LLVMValueRef const *entries, int n) {
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  bool ok = true;
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f && ok; f = LLVMGetNextFunction(f)) ok = flatten_function(f, b, ctx);
  for (int i = 0; i < n && ok; i++) ok = hoist_allocas(entries[i], b);
  LLVMDisposeBuilder(b);
  return ok;
}
