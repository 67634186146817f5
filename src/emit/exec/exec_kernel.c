/* Shard kernels of the executable form. Every per-shard compute is built
 * with its shared lowering (lower_*.c) inside a private func.func, a
 * kernel, and the device function calls it:
 *
 *   func.func private @k1_gelu_8x32(%x: memref<8x32xf32>, %out: memref<8x32xf32>)
 *
 * Operands come in as buffers, viewed as tensors (read only); the result
 * is written into a buffer the caller allocated (destination passing), so
 * the signatures need no bufferization across calls and every buffer the
 * device function frees is one it allocated. Kernels are deduplicated by
 * their printed form (op kind, attributes, operand / result types and any
 * shard-dependent offset all show in it): identical shard computations
 * across blocks and devices share one function, so LLVM compiles each
 * distinct computation once (as IREE dedups dispatches).
 *
 * A shard computation without loops or calls (a slice or reshape view) is
 * not outlined: it costs nothing to compile and, as a kernel, would be
 * copied into its result buffer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"

#define KERNEL_TMP_NAME "ppcc_kernel_under_construction"

struct exec_kernel {
  uint64_t hash;
  char *key;         /* printed function, under KERNEL_TMP_NAME */
  char name[128];
  MlirType result;   /* result shard type */
  bool takes_op;     /* an i64 op index argument before the result */
};

/* Everything a shard lowering reads (op kind and attributes, the operands'
 * and results' MLIR types, dtypes, shapes and layouts, which operand is
 * which binding, the shard index), as bytes: two shard computations with
 * the same input key lower to the same kernel, so a repeat is called
 * without building and printing it again. Printing every candidate was
 * most of the executable form's time (an AsmState per kernel). */
struct exec_input_key {
  uint64_t hash; /* 0: empty slot */
  char *bytes;
  size_t len;
  int kernel; /* index in kernels */
};

void exec_kernels_free(exec_state *x) {
  for (int i = 0; i < x->n_kernels; i++) free(x->kernels[i].key);
  free(x->kernels);
  x->kernels = NULL;
  x->n_kernels = x->cap_kernels = 0;
  for (int i = 0; i < x->cap_input_keys; i++) free(x->input_keys[i].bytes);
  free(x->input_keys);
  x->input_keys = NULL;
  x->n_input_keys = x->cap_input_keys = 0;
}

/* ---- printed form ---- */
/* The function printed without locations, in a local scope (not the whole
 * module's: that would make every print cost the module's size). */
static char *print_key(MlirOperation func) {
  emit_buf b = {0};
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsUseLocalScope(flags);
  mlirOperationPrintWithFlags(func, flags, emit_buf_print, &b);
  mlirOpPrintingFlagsDestroy(flags);
  if (b.oom) {
    free(b.data);
    return NULL;
  }
  return b.data ? b.data : calloc(1, 1);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ---- naming: k<N>_<op>_<operand shapes> ---- */
static void kernel_name(const ppcc_emit_ctx *c, const ppcc_op *op, int n, const MlirType *types, char *buf,
                        size_t size) {
  int off = snprintf(buf, size, "k%d_%s", c->exec->n_kernels, op->info->name);
  for (int i = 0; i < n && off < (int)size - 24; i++) {
    int rank = (int)mlirShapedTypeGetRank(types[i]);
    off += snprintf(buf + off, size - (size_t)off, "_");
    if (rank == 0) off += snprintf(buf + off, size - (size_t)off, "scalar");
    for (int d = 0; d < rank && off < (int)size - 24; d++)
      off += snprintf(buf + off, size - (size_t)off, d ? "x%lld" : "%lld",
                      (long long)mlirShapedTypeGetDimSize(types[i], d));
  }
}

/* ---- operand bindings ---- */
typedef struct binding {
  int value, shard;
  MlirValue outer; /* the shard in the device function */
} binding;

/* ---- input keys ---- */
static void kb_int(emit_buf *k, int64_t v) { emit_buf_append(k, &v, sizeof v); }

static void kb_value(emit_buf *k, const ppcc_value *v) {
  kb_int(k, v->dtype);
  kb_int(k, v->rank);
  emit_buf_append(k, v->shape, sizeof(int64_t) * (size_t)v->rank);
  kb_int(k, v->layout.kind);
  kb_int(k, v->layout.dim);
  kb_int(k, v->layout.count);
}

static void input_key(const ppcc_emit_ctx *c, const ppcc_op *op, int shard, int n, const binding *b,
                      const MlirType *types, emit_buf *k) {
  kb_int(k, op->info->id);
  kb_int(k, shard);
  kb_int(k, c->exec_linalg_matmul);
  kb_int(k, op->n_in);
  for (int i = 0; i < op->n_in; i++) {
    int s = c->g->values[op->in[i]].layout.count == 1 ? 0 : shard, j = 0;
    while (j < n && !(b[j].value == op->in[i] && b[j].shard == s)) j++;
    kb_int(k, j);
    kb_value(k, &c->g->values[op->in[i]]);
  }
  for (int i = 0; i < n; i++) emit_buf_append(k, &types[i].ptr, sizeof types[i].ptr); /* uniqued: same pointer, same type */
  kb_int(k, op->n_out);
  for (int i = 0; i < op->n_out; i++) kb_value(k, &c->g->values[op->out[i]]);
  kb_int(k, op->n_attrs);
  for (int i = 0; i < op->n_attrs; i++) {
    const ppcc_attr *a = &op->attrs[i];
    emit_buf_append(k, a->name, strlen(a->name) + 1);
    kb_int(k, a->type);
    kb_int(k, a->i);
    emit_buf_append(k, &a->f, sizeof a->f);
    kb_int(k, a->n);
    if (a->ints) emit_buf_append(k, a->ints, sizeof(int64_t) * (size_t)a->n);
    if (a->floats) emit_buf_append(k, a->floats, sizeof(double) * (size_t)a->n);
    if (a->s) emit_buf_append(k, a->s, strlen(a->s) + 1);
  }
}

static uint64_t bytes_hash(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h ? h : 1;
}

/* The slot of key k in the open-addressing table (its own or an empty one). */
static struct exec_input_key *input_key_slot(const exec_state *x, uint64_t hash, const emit_buf *k) {
  size_t mask = (size_t)x->cap_input_keys - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    struct exec_input_key *e = &x->input_keys[i];
    if (!e->hash || (e->hash == hash && e->len == k->len && memcmp(e->bytes, k->data, k->len) == 0)) return e;
  }
}

static int find_input_key(const exec_state *x, uint64_t hash, const emit_buf *k) {
  if (!x->cap_input_keys) return -1;
  const struct exec_input_key *e = input_key_slot(x, hash, k);
  return e->hash ? e->kernel : -1;
}

/* Remembers that input key k built kernel `kernel` (takes k's bytes). */
static bool remember_input_key(exec_state *x, uint64_t hash, emit_buf *k, int kernel) {
  if ((x->n_input_keys + 1) * 2 > x->cap_input_keys) {
    int cap = x->cap_input_keys ? x->cap_input_keys * 2 : 64;
    struct exec_input_key *old = x->input_keys, *fresh = calloc((size_t)cap, sizeof *fresh);
    if (!fresh) return false;
    int old_cap = x->cap_input_keys;
    x->input_keys = fresh;
    x->cap_input_keys = cap;
    for (int i = 0; i < old_cap; i++)
      if (old[i].hash) {
        emit_buf ok = {old[i].bytes, old[i].len, old[i].len, false};
        *input_key_slot(x, old[i].hash, &ok) = old[i];
      }
    free(old);
  }
  struct exec_input_key *e = input_key_slot(x, hash, k);
  if (e->hash) return true;
  *e = (struct exec_input_key){hash, k->data, k->len, kernel};
  k->data = NULL;
  x->n_input_keys++;
  return true;
}

/* The operand shards the lowering reads (as operand() in lower_*.c:
 * shard `shard` of a sharded operand, the only shard of an unsharded
 * one), each once. */
static int bind_operands(const ppcc_emit_ctx *c, const ppcc_op *op, int shard, binding *b) {
  int n = 0;
  for (int k = 0; k < op->n_in; k++) {
    int v = op->in[k], s = c->g->values[v].layout.count == 1 ? 0 : shard;
    bool seen = false;
    for (int j = 0; j < n && !seen; j++) seen = b[j].value == v && b[j].shard == s;
    if (!seen) b[n++] = (binding){v, s, emit_shard(c, v, s)};
  }
  return n;
}

static void swap_out(ppcc_emit_ctx *c, int n, const binding *b) {
  for (int i = 0; i < n; i++) c->shards[b[i].value][b[i].shard] = b[i].outer;
}

static bool is_op(MlirOperation op, const char *name);

/* Loops (ops with regions) or calls: worth a function of its own. */
static bool worth_outlining(MlirBlock body) {
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    if (mlirOperationGetNumRegions(o) > 0) return true;
    if (is_op(o, "func.call")) return true;
  }
  return false;
}

static void erase(MlirOperation op) {
  mlirOperationRemoveFromParent(op);
  mlirOperationDestroy(op);
}

static bool is_op(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

/* A result that is a buffer the kernel allocated and filled (a runtime
 * GEMM: to_tensor(memref.alloc)) is filled in the result argument instead,
 * rather than copied there. Tensor results (linalg outs of tensor.empty)
 * are written in place by eliminate-empty-tensors (exec_jit.c). */
static bool write_in_place(MlirValue r, MlirValue out) {
  if (!mlirValueIsAOpResult(r)) return false;
  MlirOperation to_tensor = mlirOpResultGetOwner(r);
  if (!is_op(to_tensor, "bufferization.to_tensor")) return false;
  MlirValue buf = mlirOperationGetOperand(to_tensor, 0);
  if (!mlirValueIsAOpResult(buf) || !is_op(mlirOpResultGetOwner(buf), "memref.alloc")) return false;
  if (!mlirTypeEqual(mlirValueGetType(buf), mlirValueGetType(out))) return false;
  erase(to_tensor); /* r has no uses: it is the result */
  MlirOperation alloc = mlirOpResultGetOwner(buf);
  mlirValueReplaceAllUsesOfWith(buf, out);
  erase(alloc);
  return true;
}

static ppcc_status record_kernel(ppcc_emit_ctx *c, uint64_t hash, char *key, const char *name, MlirType result,
                                 bool takes_op) {
  exec_state *x = c->exec;
  if (x->n_kernels == x->cap_kernels) {
    int cap = x->cap_kernels ? 2 * x->cap_kernels : 32;
    struct exec_kernel *p = realloc(x->kernels, sizeof *p * (size_t)cap);
    if (!p) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
    x->kernels = p;
    x->cap_kernels = cap;
  }
  struct exec_kernel *k = &x->kernels[x->n_kernels++];
  k->hash = hash;
  k->key = key;
  snprintf(k->name, sizeof k->name, "%s", name);
  k->result = result;
  k->takes_op = takes_op;
  return PPCC_OK;
}

static const struct exec_kernel *find_kernel(const exec_state *x, uint64_t hash, const char *key) {
  for (int i = 0; i < x->n_kernels; i++)
    if (x->kernels[i].hash == hash && strcmp(x->kernels[i].key, key) == 0) return &x->kernels[i];
  return NULL;
}

MlirValue exec_op_index(ppcc_emit_ctx *c) {
  exec_state *x = c->exec;
  if (mlirBlockIsNull(x->kernel_body)) return exec_i64(c, x->op_index);
  if (mlirValueIsNull(x->kernel_op_arg))
    x->kernel_op_arg = mlirBlockAddArgument(x->kernel_body, mlirIntegerTypeGet(c->mctx, 64), c->op_loc);
  return x->kernel_op_arg;
}

/* In device's function: the operands' buffers, a new buffer for the
 * result, func.call @name(operands..., [op index,] result); the result
 * shard is the filled buffer. */
static void call_kernel(ppcc_emit_ctx *c, const ppcc_op *op, int shard, int device, const struct exec_kernel *k,
                        int n, const binding *b) {
  const char *name = k->name;
  MlirType result = k->result;
  MlirValue operands[66];
  exec_block(c, device);
  for (int i = 0; i < n; i++) {
    MlirType t = exec_memref_type(c, mlirValueGetType(b[i].outer));
    MlirNamedAttribute ro = emit_named(c, "read_only", mlirUnitAttrGet(c->mctx));
    emit_op_spec s = {"bufferization.to_memref", 1, &b[i].outer, 1, &t, 1, &ro, 0};
    operands[i] = mlirOperationGetResult(emit_op(c, &s), 0);
  }
  if (k->takes_op) operands[n++] = exec_i64(c, c->exec->op_index);
  /* An op writing into its operand 0 (index_copy: a KV cache) whose
   * result is an output writes it straight into the output argument: no
   * buffer to copy from at the end, and the runtime may pass the cache's
   * own buffer there (ppcc_state_update_output). */
  MlirValue out = op->info->pin_rule == PPCC_PIN_INPLACE ? exec_output_arg(c, device, op->out[0], shard) : (MlirValue){NULL};
  if (mlirValueIsNull(out) || !mlirTypeEqual(mlirValueGetType(out), exec_memref_type(c, result))) out = exec_alloc(c, result);
  operands[n] = out;
  MlirNamedAttribute callee = emit_named(c, "callee", mlirFlatSymbolRefAttrGet(c->mctx, emit_str(name)));
  emit_op_spec s = {"func.call", n + 1, operands, 0, NULL, 1, &callee, 0};
  emit_op(c, &s);
  emit_set_shard(c, op->out[0], shard, exec_to_tensor(c, out, true));
}

/* The kernel: func.func private @name(operands..., result) with its
 * operands viewed as tensors (read only), the shard computed by the shared
 * lowering and written into the result buffer. */
static ppcc_status lower_kernel(ppcc_emit_ctx *c, const ppcc_op *op, ppcc_lower_fn lower, int shard, int device, int n,
                                const binding *b, const MlirType *tensors, MlirType *types, int *built);

ppcc_status exec_lower_shard(ppcc_emit_ctx *c, const ppcc_op *op, ppcc_lower_fn lower, int shard, int device) {
  binding b[64];
  if (op->n_in > 64) return emit_op_error(c, op, "more than 64 operands");
  int n = bind_operands(c, op, shard, b);
  MlirType tensors[64], types[66];
  for (int i = 0; i < n; i++) {
    if (mlirValueIsNull(b[i].outer))
      return emit_op_error(c, op, "operand '%s' shard %d is undefined", c->g->values[b[i].value].name, b[i].shard);
    tensors[i] = mlirValueGetType(b[i].outer);
    types[i] = exec_memref_type(c, tensors[i]);
  }
  emit_buf ik = {0};
  input_key(c, op, shard, n, b, tensors, &ik);
  if (ik.oom) {
    free(ik.data);
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  }
  uint64_t ik_hash = bytes_hash(ik.data, ik.len);
  int built = find_input_key(c->exec, ik_hash, &ik);
  if (built >= 0) {
    free(ik.data);
    const struct exec_kernel *k = &c->exec->kernels[built];
    call_kernel(c, op, shard, device, k, n, b);
    return PPCC_OK;
  }
  ppcc_status st = lower_kernel(c, op, lower, shard, device, n, b, tensors, types, &built);
  if (!st && built >= 0 && !remember_input_key(c->exec, ik_hash, &ik, built))
    st = ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  free(ik.data);
  return st;
}

/* exec_lower_shard without the input-key cache; *built: the kernel index
 * the shard calls, -1 when it was not outlined. */
static ppcc_status lower_kernel(ppcc_emit_ctx *c, const ppcc_op *op, ppcc_lower_fn lower, int shard, int device, int n,
                                const binding *b, const MlirType *tensors, MlirType *types, int *built) {
  *built = -1;
  MlirLocation locs[64];
  MlirLocation call_loc = c->op_loc;
  char name[128];
  kernel_name(c, op, n, tensors, name, sizeof name);
  c->op_loc = emit_name_loc(c, name);
  for (int i = 0; i < n; i++) locs[i] = c->op_loc;

  MlirAttribute noinline = emit_string_attr(c, "noinline");
  MlirNamedAttribute attrs[5] = {
      emit_named(c, "sym_name", emit_string_attr(c, KERNEL_TMP_NAME)),
      emit_named(c, "function_type", mlirTypeAttrGet(mlirFunctionTypeGet(c->mctx, n, types, 0, NULL))),
      emit_named(c, "sym_visibility", emit_string_attr(c, "private")),
      /* internal: LLVM specializes the kernel for its callers' constant
       * shapes and strides and drops unused descriptor fields; noinline:
       * one body per kernel, not one per call site. */
      emit_named(c, "llvm.linkage", mlirAttributeParseGet(c->mctx, emit_str("#llvm.linkage<internal>"))),
      emit_named(c, "passthrough", mlirArrayAttrGet(c->mctx, 1, &noinline)),
  };
  emit_op_spec fs = {"func.func", 0, NULL, 0, NULL, 5, attrs, 1};
  MlirOperation func = emit_op_in(c, mlirModuleGetBody(c->module), &fs);
  MlirBlock body = mlirBlockCreate(n, types, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(func, 0), body);

  /* Lower the shard into the kernel, its operands bound to the arguments. */
  c->block = body;
  for (int i = 0; i < n; i++) c->shards[b[i].value][b[i].shard] = exec_to_tensor(c, mlirBlockGetArgument(body, i), false);
  c->exec->kernel_body = body;
  c->exec->kernel_op_arg = (MlirValue){NULL};
  ppcc_status st = lower(c, c->g, op, shard, c->d);
  c->exec->kernel_body = (MlirBlock){NULL};
  bool takes_op = !mlirValueIsNull(c->exec->kernel_op_arg);
  swap_out(c, n, b);
  c->last_op = (MlirOperation){NULL};
  MlirValue r = emit_shard(c, op->out[0], shard);
  if (st || mlirValueIsNull(r) || !worth_outlining(body)) {
    erase(func);
    c->op_loc = call_loc;
    if (st || mlirValueIsNull(r)) return st; /* a null result: reported by emit_check_results_defined */
    /* Nothing to compile (a view): lower again, in the device function. */
    emit_set_shard(c, op->out[0], shard, (MlirValue){NULL});
    exec_block(c, device);
    return lower(c, c->g, op, shard, c->d);
  }

  MlirType result = mlirValueGetType(r);
  int n_args = n;
  if (takes_op) types[n_args++] = mlirIntegerTypeGet(c->mctx, 64);
  types[n_args] = exec_memref_type(c, result);
  MlirValue out = mlirBlockAddArgument(body, types[n_args], c->op_loc);
  if (!write_in_place(r, out)) exec_materialize(c, r, out);
  emit_op_spec ret = {"func.return", 0, NULL, 0, NULL, 0, NULL, 0};
  emit_op_in(c, body, &ret);
  mlirOperationSetAttributeByName(func, emit_str("function_type"),
                                  mlirTypeAttrGet(mlirFunctionTypeGet(c->mctx, n_args + 1, types, 0, NULL)));
  c->op_loc = call_loc;

  char *key = print_key(func);
  if (!key) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  uint64_t hash = fnv1a(key);
  const struct exec_kernel *same = find_kernel(c->exec, hash, key);
  if (same) {
    free(key);
    erase(func);
    *built = (int)(same - c->exec->kernels);
    call_kernel(c, op, shard, device, same, n, b);
    return PPCC_OK;
  }
  mlirOperationSetAttributeByName(func, emit_str("sym_name"), emit_string_attr(c, name));
  st = record_kernel(c, hash, key, name, result, takes_op);
  if (st) {
    free(key);
    return st;
  }
  *built = c->exec->n_kernels - 1;
  call_kernel(c, op, shard, device, &c->exec->kernels[c->exec->n_kernels - 1], n, b);
  return PPCC_OK;
}
