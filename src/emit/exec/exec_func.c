/* The executable form (DESIGN §5, --emit=mlir-exec): one func.func
 * @device_D per logical device, in upstream dialects. Each function takes
 * memrefs for the shards it holds and the output shards it writes (ABI in
 * include/ppcc/jit.h), views them as tensors, computes its shards of every
 * op in program order with the shared lowerings (lower_*.c) by calling one
 * deduplicated kernel per distinct shard computation (exec_kernel.c), and
 * talks to other devices only through ppcc_rt_* calls (exec_comm.c). */
#include <stdio.h>
#include <stdlib.h>
#include "exec_internal.h"
#include "ppcc/test_inject.h"

void exec_state_free(ppcc_emit_ctx *c) {
  exec_state *x = c->exec;
  if (!x) return;
  exec_kernels_free(x);
  for (int i = 0; i < x->n_declared; i++) free(x->declared[i]);
  free(x->declared);
  free(x->blocks);
  free(x);
  c->exec = NULL;
  c->runtime_calls = NULL;
}

/* What the shared lowerings call in this form (emit_internal.h). */
static const emit_runtime_calls runtime_calls = {
  .transfer = exec_transfer,
  .matmul = exec_try_matmul_call,
  .linear_bias = exec_try_linear_bias_call,
  .layer_norm = exec_try_layer_norm_call,
  .conv = exec_try_conv_call,
  .attention = exec_try_attention_call,
  .unary = exec_try_unary_call,
  .check_index = exec_check_index,
  .qlinear = exec_qlinear_call,
  .qembedding = exec_qembedding_call,
  .free_state = exec_state_free,
};

static bool is_leaf(const ppcc_value *v) { return v->kind == PPCC_VALUE_PARAM || v->kind == PPCC_VALUE_INPUT; }

/* The memref arguments of device d, in ABI order: leaves then outputs.
 * With `block` set, adds them as block arguments and binds the leaves. */
static int device_args(ppcc_emit_ctx *c, int d, MlirType *types, MlirBlock block) {
  const ppcc_graph *g = c->g;
  int n = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    for (int i = 0; is_leaf(p) && i < p->layout.count; i++) {
      if (p->devices[i] != d) continue;
      MlirType t = exec_memref_type(c, emit_shard_type(c, p));
      if (types) types[n] = t;
      n++;
      if (mlirBlockIsNull(block)) continue;
      c->op_loc = emit_name_loc(c, p->name);
      MlirValue arg = mlirBlockAddArgument(block, t, c->op_loc);
      emit_set_shard(c, v, i, exec_to_tensor(c, arg, false));
    }
  }
  for (int k = 0; k < g->n_outputs; k++) {
    const ppcc_value *p = &g->values[g->outputs[k]];
    for (int i = 0; i < p->layout.count; i++) {
      if (p->devices[i] != d) continue;
      MlirType t = exec_memref_type(c, emit_shard_type(c, p));
      if (types) types[n] = t;
      n++;
      if (!mlirBlockIsNull(block)) mlirBlockAddArgument(block, t, emit_name_loc(c, p->name));
    }
  }
  return n;
}

static ppcc_status create_device_func(ppcc_emit_ctx *c, int d) {
  int n = device_args(c, d, NULL, (MlirBlock){NULL});
  MlirType *types = malloc(sizeof *types * (size_t)(n > 0 ? n : 1));
  if (!types) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  device_args(c, d, types, (MlirBlock){NULL});
  char name[32];
  snprintf(name, sizeof name, "device_%d", d);
  MlirType fn_type = mlirFunctionTypeGet(c->mctx, n, types, 0, NULL);
  free(types);
  MlirNamedAttribute attrs[3] = {
      emit_named(c, "sym_name", emit_string_attr(c, name)),
      emit_named(c, "function_type", mlirTypeAttrGet(fn_type)),
      emit_named(c, "llvm.emit_c_interface", mlirUnitAttrGet(c->mctx)),
  };
  c->op_loc = emit_name_loc(c, name);
  emit_op_spec s = {"func.func", 0, NULL, 0, NULL, 3, attrs, 1};
  MlirOperation func = emit_op_in(c, mlirModuleGetBody(c->module), &s);
  MlirBlock body = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(func, 0), body);
  c->exec->blocks[d] = body;
  return PPCC_OK;
}

/* Adds device d's arguments and binds its leaves (to_tensor of them). */
static void bind_device_args(ppcc_emit_ctx *c, int d) {
  exec_block(c, d);
  device_args(c, d, NULL, c->block);
}

static int output_shards_on(const ppcc_graph *g, int d) {
  int n = 0;
  for (int k = 0; k < g->n_outputs; k++)
    for (int i = 0; i < g->values[g->outputs[k]].layout.count; i++) n += g->values[g->outputs[k]].devices[i] == d;
  return n;
}

MlirValue exec_output_arg(ppcc_emit_ctx *c, int d, int value, int shard) {
  const ppcc_graph *g = c->g;
  int found = -1;
  intptr_t arg = mlirBlockGetNumArguments(c->exec->blocks[d]) - output_shards_on(g, d);
  for (int k = 0; k < g->n_outputs; k++) {
    const ppcc_value *p = &g->values[g->outputs[k]];
    for (int i = 0; i < p->layout.count; i++) {
      if (p->devices[i] != d) continue;
      if (g->outputs[k] == value && i == shard) {
        if (found >= 0) return (MlirValue){NULL}; /* listed twice: each argument gets its copy */
        found = (int)arg;
      }
      arg++;
    }
  }
  return found >= 0 ? mlirBlockGetArgument(c->exec->blocks[d], found) : (MlirValue){NULL};
}

/* Writes the output shards of device d into its trailing output arguments
 * and returns. */
static void finish_device(ppcc_emit_ctx *c, int d) {
  const ppcc_graph *g = c->g;
  exec_block(c, d);
  intptr_t arg = mlirBlockGetNumArguments(c->block) - output_shards_on(g, d);
  c->op_loc = emit_name_loc(c, g->name);
  for (int k = 0; k < g->n_outputs; k++) {
    const ppcc_value *p = &g->values[g->outputs[k]];
    for (int i = 0; i < p->layout.count; i++)
      if (p->devices[i] == d) exec_materialize(c, emit_shard(c, g->outputs[k], i), mlirBlockGetArgument(c->block, arg++));
  }
  emit_op_spec ret = {"func.return", 0, NULL, 0, NULL, 0, NULL, 0};
  emit_op(c, &ret);
}

/* Shard i of a compute op runs on the device of result shard i and reads
 * operand shards on that device (insert-transfers made sure of it). */
static ppcc_status check_colocated(ppcc_emit_ctx *c, const ppcc_op *op, int i, int device) {
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = &c->g->values[op->in[k]];
    int s = v->layout.count == 1 ? 0 : i;
    if (s >= v->layout.count || v->devices[s] != device)
      return emit_op_error(c, op, "operand '%s' shard %d is on device %d, but result shard %d runs on device %d",
                           v->name, s, s < v->layout.count ? v->devices[s] : -1, i, device);
  }
  return PPCC_OK;
}

/* TEST-ONLY wrong kernel (ppcc/test_inject.h): shard i of op's result
 * becomes result + result (the `add` row's lowering, in the device
 * function), as the interpreter doubles it. */
static ppcc_status inject_double(ppcc_emit_ctx *c, const ppcc_op *op, int i, int device) {
  const ppcc_op_info *add = ppcc_op_lookup("add");
  ppcc_lower_fn lower = add ? emit_lowering_for(add->id) : NULL;
  if (!lower) return emit_op_error(c, op, "PPCC_TEST_INJECT: no 'add' lowering");
  int ins[2] = {op->out[0], op->out[0]};
  ppcc_op twice = *op;
  twice.info = add;
  twice.in = ins;
  twice.n_in = 2;
  twice.attrs = NULL;
  twice.n_attrs = 0;
  exec_block(c, device);
  return lower(c, c->g, &twice, i, c->d);
}

static ppcc_status lower_compute(ppcc_emit_ctx *c, const ppcc_op *op) {
  ppcc_lower_fn lower = emit_lowering_for(op->info->id);
  if (!lower) return emit_op_error(c, op, "op '%s' has no MLIR lowering", op->info->name);
  const ppcc_value *out = &c->g->values[op->out[0]];
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < out->layout.count && !st; i++) {
    st = check_colocated(c, op, i, out->devices[i]);
    if (!st) st = exec_lower_shard(c, op, lower, i, out->devices[i]);
    if (!st && ppcc_test_inject_wrong_kernel(out->name, i, true)) st = inject_double(c, op, i, out->devices[i]);
  }
  return st;
}

static ppcc_status lower_op(ppcc_emit_ctx *c, int index) {
  const ppcc_op *op = &c->g->ops[index];
  c->op = op;
  c->op_loc = emit_name_loc(c, c->g->values[op->out[0]].name);
  c->exec->op_index = index;
  ppcc_status st = PPCC_OK;
  switch (op->info->family) {
  case PPCC_FAMILY_COMPUTE: st = lower_compute(c, op); break;
  case PPCC_FAMILY_COLLECTIVE: st = exec_lower_collective(c, op); break;
  case PPCC_FAMILY_TRANSFER: { /* lower_transfer -> placement_transfer -> exec_transfer */
    ppcc_lower_fn lower = emit_lowering_for(op->info->id);
    for (int i = 0; i < c->g->values[op->out[0]].layout.count && !st; i++) st = lower(c, c->g, op, i, c->d);
    break;
  }
  }
  return st ? st : emit_check_results_defined(c, op);
}

static ppcc_status check_devices(ppcc_emit_ctx *c) {
  for (int v = 0; v < c->g->n_values; v++) {
    const ppcc_value *p = &c->g->values[v];
    for (int i = 0; i < p->layout.count; i++)
      if (p->devices[i] < 0 || p->devices[i] >= c->g->n_devices)
        return ppcc_error(c->d, "value '%s' shard %d is on device %d, outside the model's %d devices", p->name, i,
                          p->devices[i], c->g->n_devices);
  }
  return PPCC_OK;
}

ppcc_status exec_build_module(ppcc_emit_ctx *c) {
  const ppcc_graph *g = c->g;
  ppcc_status st = emit_check_values(c);
  if (!st) st = check_devices(c);
  if (st) return st;
  c->exec = calloc(1, sizeof *c->exec);
  c->runtime_calls = &runtime_calls;
  if (c->exec) c->exec->blocks = calloc((size_t)(g->n_devices > 0 ? g->n_devices : 1), sizeof(MlirBlock));
  if (!c->exec || !c->exec->blocks) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  c->exec->n_devices = g->n_devices;
  c->module = mlirModuleCreateEmpty(emit_name_loc(c, g->name));
  mlirOperationSetAttributeByName(mlirModuleGetOperation(c->module), emit_str("sym_name"), emit_string_attr(c, g->name));
  for (int d = 0; d < g->n_devices && !st; d++) st = create_device_func(c, d);
  for (int d = 0; d < g->n_devices && !st; d++) bind_device_args(c, d);
  for (int k = 0; k < g->n_ops && !st; k++) st = lower_op(c, k);
  for (int d = 0; d < g->n_devices && !st; d++) finish_device(c, d);
  return st;
}
