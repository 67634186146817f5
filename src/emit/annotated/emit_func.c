/* The module and its one function over all shards (DESIGN §5): arguments
 * are the shards of params and inputs, results the shards of outputs. */
#include <stdlib.h>
#include "annotated.h"

#define MAX_ARG_ATTRS 8

static bool is_argument(const ppcc_emit_ctx *c, const ppcc_value *v) {
  return (v->kind == PPCC_VALUE_PARAM && placement_params_are_arguments(c->kind)) || v->kind == PPCC_VALUE_INPUT;
}

/* Marks every op a per-shard lowering appended after `before` with the
 * shard's device, so constants and inits carry it too. */
static void mark_new_ops(ppcc_emit_ctx *c, MlirOperation before, int device) {
  MlirOperation op = mlirOperationIsNull(before) ? mlirBlockGetFirstOperation(c->block)
                                                 : mlirOperationGetNextInBlock(before);
  for (; !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) placement_mark_op(c, op, device);
}


static ppcc_status lower_one_op(ppcc_emit_ctx *c, const ppcc_op *op) {
  ppcc_lower_fn lower = emit_lowering_for(op->info->id);
  if (!lower) return emit_op_error(c, op, "op '%s' has no MLIR lowering", op->info->name);
  c->op = op;
  c->op_loc = emit_name_loc(c, c->g->values[op->out[0]].name);
  ppcc_status st = PPCC_OK;
  if (op->info->family == PPCC_FAMILY_COLLECTIVE) {
    st = lower(c, c->g, op, PPCC_LOWER_ALL_SHARDS, c->d);
  } else {
    const ppcc_value *out = &c->g->values[op->out[0]];
    for (int i = 0; i < out->layout.count && !st; i++) {
      MlirOperation before = c->last_op;
      st = lower(c, c->g, op, i, c->d);
      if (!st && op->info->family == PPCC_FAMILY_COMPUTE) mark_new_ops(c, before, out->devices[i]);
    }
  }
  if (!st) st = emit_check_results_defined(c, op);
  return st;
}

/* Lowers every op of the graph into c->block, in program order. */
static ppcc_status emit_lower_all_ops(ppcc_emit_ctx *c) {
  for (int i = 0; i < c->g->n_ops; i++) {
    ppcc_status st = lower_one_op(c, &c->g->ops[i]);
    if (st) return st;
  }
  return PPCC_OK;
}

/* One entry per shard of each value selected by `want`. */
typedef struct shard_list {
  int n;
  MlirType *types;
  MlirAttribute *attrs; /* DictionaryAttr per shard */
  int *value, *shard;
} shard_list;

static void shard_list_free(shard_list *l) {
  free(l->types);
  free(l->attrs);
  free(l->value);
  free(l->shard);
}

static ppcc_status shard_list_add(ppcc_emit_ctx *c, shard_list *l, int cap, int value) {
  const ppcc_value *v = &c->g->values[value];
  for (int i = 0; i < v->layout.count; i++) {
    if (l->n == cap) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "shard count overflow");
    MlirNamedAttribute named[MAX_ARG_ATTRS];
    int n = placement_arg_attrs(c, v, i, named);
    l->types[l->n] = emit_shard_type(c, v);
    l->attrs[l->n] = mlirDictionaryAttrGet(c->mctx, n, named);
    l->value[l->n] = value;
    l->shard[l->n] = i;
    l->n++;
  }
  return PPCC_OK;
}

static ppcc_status shard_list_build(ppcc_emit_ctx *c, shard_list *l, bool outputs) {
  int cap = 0;
  const ppcc_graph *g = c->g;
  for (int i = 0; i < g->n_values; i++)
    if (is_argument(c, &g->values[i])) cap += g->values[i].layout.count;
  for (int i = 0; i < g->n_outputs; i++) cap += g->values[g->outputs[i]].layout.count;
  size_t n = (size_t)(cap > 0 ? cap : 1);
  l->n = 0;
  l->types = malloc(n * sizeof *l->types);
  l->attrs = malloc(n * sizeof *l->attrs);
  l->value = malloc(n * sizeof *l->value);
  l->shard = malloc(n * sizeof *l->shard);
  if (!l->types || !l->attrs || !l->value || !l->shard)
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = PPCC_OK;
  if (outputs) {
    for (int i = 0; i < g->n_outputs && !st; i++) st = shard_list_add(c, l, cap, g->outputs[i]);
  } else {
    for (int i = 0; i < g->n_values && !st; i++)
      if (is_argument(c, &g->values[i])) st = shard_list_add(c, l, cap, i);
  }
  return st;
}

static MlirOperation create_func(ppcc_emit_ctx *c, const shard_list *args, const shard_list *res) {
  MlirType fn_type = mlirFunctionTypeGet(c->mctx, args->n, args->types, res->n, res->types);
  MlirNamedAttribute attrs[4] = {
      emit_named(c, "sym_name", emit_string_attr(c, "main")),
      emit_named(c, "function_type", mlirTypeAttrGet(fn_type)),
      emit_named(c, "arg_attrs", mlirArrayAttrGet(c->mctx, args->n, args->attrs)),
      emit_named(c, "res_attrs", mlirArrayAttrGet(c->mctx, res->n, res->attrs)),
  };
  c->op_loc = emit_name_loc(c, c->g->name);
  emit_op_spec s = {"func.func", 0, NULL, 0, NULL, 4, attrs, 1};
  return emit_op_in(c, mlirModuleGetBody(c->module), &s);
}

/* The entry block: one argument per shard, located at the value's name. */
static void add_entry_block(ppcc_emit_ctx *c, MlirOperation func, const shard_list *args) {
  c->block = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(func, 0), c->block);
  c->last_op = (MlirOperation){NULL};
  for (int i = 0; i < args->n; i++) {
    const ppcc_value *v = &c->g->values[args->value[i]];
    MlirValue a = mlirBlockAddArgument(c->block, args->types[i], emit_name_loc(c, v->name));
    emit_set_shard(c, args->value[i], args->shard[i], a);
  }
}

static ppcc_status add_return(ppcc_emit_ctx *c, const shard_list *res) {
  MlirValue *vals = malloc(sizeof *vals * (size_t)(res->n > 0 ? res->n : 1));
  if (!vals) return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; i < res->n; i++) vals[i] = emit_shard(c, res->value[i], res->shard[i]);
  c->op_loc = emit_name_loc(c, c->g->name);
  emit_op_spec s = {"func.return", res->n, vals, 0, NULL, 0, NULL, 0};
  emit_op(c, &s);
  free(vals);
  return PPCC_OK;
}

ppcc_status emit_main_func(ppcc_emit_ctx *c) {
  ppcc_status st = emit_check_values(c);
  if (st) return st;
  c->module = mlirModuleCreateEmpty(emit_name_loc(c, c->g->name));
  mlirOperationSetAttributeByName(mlirModuleGetOperation(c->module), emit_str("sym_name"),
                                  emit_string_attr(c, c->g->name));
  shard_list args = {0}, res = {0};
  st = shard_list_build(c, &args, false);
  if (!st) st = shard_list_build(c, &res, true);
  if (!st) st = placement_declare_params(c, mlirModuleGetBody(c->module));
  if (!st) {
    MlirOperation func = create_func(c, &args, &res);
    add_entry_block(c, func, &args);
    placement_load_params(c);
    st = emit_lower_all_ops(c);
  }
  if (!st) st = add_return(c, &res);
  shard_list_free(&args);
  shard_list_free(&res);
  return st;
}
