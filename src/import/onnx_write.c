/* The importer's outputs: model.json (DESIGN §3) of the ops that reach an
 * output, and a safetensors file of the params they read. Both are built
 * in memory; the driver writes them through the atomic-output module. */
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "onnx_internal.h"
#include "ppcc/ops.h"

/* A value's name in the written model: '@' is reserved for values a pass
 * inserts, so the placed model spells "h@2,3" as "h.to_2_3". */
static cJSON *name_json(const char *name) {
  if (!strchr(name, '@')) return cJSON_CreateString(name);
  char buf[PPCC_MAX_NAME * 2];
  size_t o = 0;
  for (const char *c = name; *c && o + 5 < sizeof buf; c++) {
    if (*c == '@') {
      memcpy(buf + o, ".to_", 4);
      o += 4;
    } else {
      buf[o++] = *c == ',' ? '_' : *c;
    }
  }
  buf[o] = '\0';
  return cJSON_CreateString(buf);
}

static cJSON *shape_json(int rank, const int64_t *shape) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < rank; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)shape[i]));
  return a;
}

static cJSON *value_json(const ppcc_value *v, bool placed) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "name", name_json(v->name));
  cJSON_AddStringToObject(o, "dtype", ppcc_dtype_name(v->dtype));
  cJSON_AddItemToObject(o, "shape", shape_json(v->rank, v->shape));
  if (!placed || !v->devices) return o;
  if (v->layout.kind != PPCC_LAYOUT_UNSHARDED) {
    cJSON *sh = cJSON_CreateObject();
    cJSON_AddStringToObject(sh, "kind", ppcc_layout_kind_name(v->layout.kind));
    if (v->layout.kind == PPCC_LAYOUT_SPLIT) cJSON_AddNumberToObject(sh, "dim", v->layout.dim);
    cJSON_AddNumberToObject(sh, "count", v->layout.count);
    cJSON_AddItemToObject(o, "shard", sh);
  }
  cJSON *devs = cJSON_CreateArray();
  for (int i = 0; i < v->layout.count; i++) cJSON_AddItemToArray(devs, cJSON_CreateNumber(v->devices[i]));
  cJSON_AddItemToObject(o, "devices", devs);
  cJSON_AddBoolToObject(o, "pinned", v->pinned);
  return o;
}

static cJSON *attr_json(const ppcc_attr *a) {
  switch (a->type) {
  case PPCC_ATTR_INT: return cJSON_CreateNumber((double)a->i);
  case PPCC_ATTR_BOOL: return cJSON_CreateBool(a->i != 0);
  case PPCC_ATTR_FLOAT: return cJSON_CreateNumber(a->f);
  case PPCC_ATTR_STRING: return cJSON_CreateString(a->s);
  case PPCC_ATTR_INTS: return shape_json(a->n, a->ints);
  }
  return cJSON_CreateNull();
}

static cJSON *op_json(const ppcc_graph *g, const ppcc_op *op) {
  cJSON *o = cJSON_CreateObject(), *in = cJSON_CreateArray(), *out = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "op", op->info->name);
  for (int k = 0; k < op->n_in; k++) cJSON_AddItemToArray(in, name_json(g->values[op->in[k]].name));
  for (int k = 0; k < op->n_out; k++) cJSON_AddItemToArray(out, name_json(g->values[op->out[k]].name));
  cJSON_AddItemToObject(o, "in", in);
  cJSON_AddItemToObject(o, "out", out);
  if (op->n_attrs > 0) {
    cJSON *attrs = cJSON_CreateObject();
    for (int k = 0; k < op->n_attrs; k++) cJSON_AddItemToObject(attrs, op->attrs[k].name, attr_json(&op->attrs[k]));
    cJSON_AddItemToObject(o, "attrs", attrs);
  }
  return o;
}

ppcc_status ox_write_model(const ppcc_graph *g, const bool *live_op, const bool *live_value, bool placed,
                           ppcc_onnx_result *out, ppcc_diag *d) {
  cJSON *root = cJSON_CreateObject(), *params = cJSON_CreateArray(), *inputs = cJSON_CreateArray(),
        *ops = cJSON_CreateArray(), *outputs = cJSON_CreateArray();
  cJSON_AddNumberToObject(root, "ppcc", 1);
  cJSON_AddStringToObject(root, "name", g->name);
  cJSON_AddNumberToObject(root, "devices", g->n_devices);
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *x = &g->values[v];
    if (x->kind == PPCC_VALUE_PARAM && live_value[v]) cJSON_AddItemToArray(params, value_json(x, placed));
    else if (x->kind == PPCC_VALUE_INPUT) cJSON_AddItemToArray(inputs, value_json(x, placed));
  }
  int n_ops = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (live_op[i]) {
      cJSON_AddItemToArray(ops, op_json(g, &g->ops[i]));
      n_ops++;
    }
  for (int k = 0; k < g->n_outputs; k++) cJSON_AddItemToArray(outputs, name_json(g->values[g->outputs[k]].name));
  cJSON_AddItemToObject(root, "params", params);
  cJSON_AddItemToObject(root, "inputs", inputs);
  cJSON_AddItemToObject(root, "ops", ops);
  cJSON_AddItemToObject(root, "outputs", outputs);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing model.json");
  size_t len = strlen(text);
  out->model_json = malloc(len + 2);
  if (out->model_json) {
    memcpy(out->model_json, text, len);
    out->model_json[len] = '\n';
    out->model_json[len + 1] = '\0';
    out->model_len = len + 1;
  }
  cJSON_free(text);
  out->n_ops = n_ops;
  return out->model_json ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing model.json");
}

static const char *st_dtype(ppcc_dtype t) {
  switch (t) {
  case PPCC_F32: return "F32";
  case PPCC_F16: return "F16";
  case PPCC_BF16: return "BF16";
  case PPCC_I64: return "I64";
  case PPCC_I32: return "I32";
  case PPCC_I8: return "I8";
  case PPCC_BOOL: return "BOOL";
  default: return "F32";
  }
}

ppcc_status ox_write_weights(const ppcc_graph *g, const bool *live_value, ox_tensor *const *param_data,
                             ppcc_onnx_result *out, ppcc_diag *d) {
  cJSON *header = cJSON_CreateObject();
  uint64_t offset = 0;
  int n_params = 0;
  for (int v = 0; v < g->n_values; v++) {
    if (g->values[v].kind != PPCC_VALUE_PARAM || !live_value[v]) continue;
    const ox_tensor *t = param_data[v];
    uint64_t bytes = (uint64_t)t->n * (uint64_t)ppcc_dtype_size(t->dtype);
    cJSON *e = cJSON_CreateObject(), *offs = cJSON_CreateArray();
    cJSON_AddStringToObject(e, "dtype", st_dtype(t->dtype));
    cJSON_AddItemToObject(e, "shape", shape_json(t->rank, t->shape));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(offset + bytes)));
    cJSON_AddItemToObject(e, "data_offsets", offs);
    cJSON_AddItemToObject(header, g->values[v].name, e);
    offset += bytes;
    n_params++;
  }
  char *text = cJSON_PrintUnformatted(header);
  cJSON_Delete(header);
  if (!text) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing weights");
  /* the data starts on a 64-byte line: weights are read in place, and
   * the product kernels read whole lines faster (gemm_tiles.c) */
  size_t hlen = strlen(text), padded = ((8 + hlen + 63) & ~(size_t)63) - 8;
  size_t total = 8 + padded + (size_t)offset;
  uint8_t *buf = malloc(total ? total : 1);
  if (!buf) {
    cJSON_free(text);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory writing weights");
  }
  for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
  memcpy(buf + 8, text, hlen);
  memset(buf + 8 + hlen, ' ', padded - hlen);
  cJSON_free(text);
  uint8_t *p = buf + 8 + padded;
  for (int v = 0; v < g->n_values; v++) {
    if (g->values[v].kind != PPCC_VALUE_PARAM || !live_value[v]) continue;
    const ox_tensor *t = param_data[v];
    size_t bytes = (size_t)t->n * (size_t)ppcc_dtype_size(t->dtype);
    if (bytes) memcpy(p, t->data, bytes);
    p += bytes;
  }
  out->weights = buf;
  out->weights_len = total;
  out->n_params = n_params;
  return PPCC_OK;
}

ppcc_status ppcc_onnx_write_placed(const ppcc_graph *g, ppcc_onnx_result *r, ppcc_diag *d) {
  size_t nv = (size_t)g->n_values + 1, no = (size_t)g->n_ops + 1;
  bool *live_value = malloc(nv), *live_op = malloc(no);
  ppcc_status st = PPCC_OK;
  if (!live_value || !live_op) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) {
    memset(live_value, 1, nv);
    memset(live_op, 1, no);
    free(r->model_json);
    r->model_json = NULL;
    int n_ops = r->n_ops;
    st = ox_write_model(g, live_op, live_value, true, r, d);
    r->n_ops = n_ops;
  }
  free(live_value);
  free(live_op);
  return st;
}
