/* The one place that rewrites a model.json: applies the edits of a fix
 * (include/ppcc/fix.h) to the parsed model. Every edit is checked before
 * it changes anything it points at, so a stale or hand-written fix fails
 * with a reason instead of corrupting the model. */
#include <stdio.h>
#include <string.h>
#include "ppcc/fix.h"

static bool fail(char *why, size_t n, const char *msg, const char *detail) {
  snprintf(why, n, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
  return false;
}

static cJSON *ops_of(cJSON *model) {
  cJSON *ops = cJSON_GetObjectItemCaseSensitive(model, "ops");
  return cJSON_IsArray(ops) ? ops : NULL;
}

/* An integer field of an edit, in [0, limit]. */
static bool index_field(const cJSON *e, const char *key, int limit, int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > limit || v->valuedouble != (int)v->valuedouble)
    return false;
  *out = (int)v->valuedouble;
  return true;
}

/* Inserts item (taken) at index `at` by moving every item into a new array:
 * Debian's cJSON 1.7.15 (deb12u4) refuses cJSON_InsertItemInArray at any
 * index but 0. */
static bool insert_at(cJSON *model, cJSON *ops, int at, cJSON *item) {
  cJSON *fresh = cJSON_CreateArray();
  if (!fresh) {
    cJSON_Delete(item);
    return false;
  }
  int n = cJSON_GetArraySize(ops);
  for (int i = 0; i < n; i++) {
    if (i == at) cJSON_AddItemToArray(fresh, item);
    cJSON_AddItemToArray(fresh, cJSON_DetachItemFromArray(ops, 0));
  }
  if (at == n) cJSON_AddItemToArray(fresh, item);
  if (cJSON_ReplaceItemInObjectCaseSensitive(model, "ops", fresh)) return true;
  cJSON_Delete(fresh);
  return false;
}

static bool insert_op(cJSON *model, const cJSON *e, char *why, size_t n) {
  cJSON *ops = ops_of(model);
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(e, "op");
  int before;
  if (!ops || !cJSON_IsObject(op)) return fail(why, n, "insert_op needs an \"op\" object and a model with ops", NULL);
  if (!index_field(e, "before", cJSON_GetArraySize(ops), &before))
    return fail(why, n, "insert_op: \"before\" is not an op index of the model", NULL);
  cJSON *copy = cJSON_Duplicate(op, true);
  if (!copy) return fail(why, n, "out of memory", NULL);
  return insert_at(model, ops, before, copy) ? true : fail(why, n, "out of memory", NULL);
}

static bool set_operand(cJSON *model, const cJSON *e, char *why, size_t n) {
  cJSON *ops = ops_of(model);
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
  int i, k;
  if (!ops || !index_field(e, "op", cJSON_GetArraySize(ops) - 1, &i) || !cJSON_IsString(value))
    return fail(why, n, "set_operand needs an op index of the model and a value name", NULL);
  cJSON *in = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ops, i), "in");
  if (!cJSON_IsArray(in) || !index_field(e, "index", cJSON_GetArraySize(in) - 1, &k))
    return fail(why, n, "set_operand: the op has no such operand", NULL);
  cJSON *s = cJSON_CreateString(value->valuestring);
  return s && cJSON_ReplaceItemInArray(in, k, s) ? true : fail(why, n, "out of memory", NULL);
}

/* The object an attribute edit changes: a declaration, or an op's attrs
 * (created when the op has none). */
static cJSON *attr_target(cJSON *model, const cJSON *target, char *why, size_t n) {
  static const char *const sections[2][2] = {{"param", "params"}, {"input", "inputs"}};
  for (int s = 0; s < 2; s++) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(target, sections[s][0]);
    if (!name) continue;
    cJSON *decls = cJSON_GetObjectItemCaseSensitive(model, sections[s][1]);
    cJSON *decl;
    cJSON_ArrayForEach(decl, decls) {
      const cJSON *dn = cJSON_GetObjectItemCaseSensitive(decl, "name");
      if (cJSON_IsString(name) && cJSON_IsString(dn) && strcmp(dn->valuestring, name->valuestring) == 0) return decl;
    }
    fail(why, n, "set_attr: no such declaration", cJSON_IsString(name) ? name->valuestring : NULL);
    return NULL;
  }
  cJSON *ops = ops_of(model);
  int i;
  if (!ops || !index_field(target, "op", cJSON_GetArraySize(ops) - 1, &i)) {
    fail(why, n, "set_attr: the target is neither a param, an input nor an op index of the model", NULL);
    return NULL;
  }
  cJSON *op = cJSON_GetArrayItem(ops, i);
  cJSON *attrs = cJSON_GetObjectItemCaseSensitive(op, "attrs");
  if (!attrs) attrs = cJSON_AddObjectToObject(op, "attrs");
  if (!cJSON_IsObject(attrs)) fail(why, n, "set_attr: the op's attrs are not an object", NULL);
  return cJSON_IsObject(attrs) ? attrs : NULL;
}

static bool set_attr(cJSON *model, const cJSON *e, char *why, size_t n) {
  const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
  if (!cJSON_IsString(key) || !value) return fail(why, n, "set_attr needs a key and a value", NULL);
  cJSON *obj = attr_target(model, cJSON_GetObjectItemCaseSensitive(e, "target"), why, n);
  if (!obj) return false;
  cJSON_DeleteItemFromObjectCaseSensitive(obj, key->valuestring);
  if (cJSON_IsNull(value)) return true;
  cJSON *copy = cJSON_Duplicate(value, true);
  if (!copy || !cJSON_AddItemToObject(obj, key->valuestring, copy)) {
    cJSON_Delete(copy);
    return fail(why, n, "out of memory", NULL);
  }
  return true;
}

static bool set_option(const cJSON *e, ppcc_fix_options *opt, char *why, size_t n) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "option");
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(e, "value");
  if (!cJSON_IsString(name) || !cJSON_IsNumber(value) || value->valuedouble < 1)
    return fail(why, n, "set_option needs an option name and a positive value", NULL);
  if (strcmp(name->valuestring, "pp") == 0) opt->pp = value->valueint;
  else if (strcmp(name->valuestring, "tp") == 0) opt->tp = value->valueint;
  else if (strcmp(name->valuestring, "device-memory") == 0) opt->device_memory = (int64_t)value->valuedouble;
  else return fail(why, n, "set_option: unknown option", name->valuestring);
  return true;
}

bool ppcc_fix_apply(cJSON *model, const cJSON *fix, ppcc_fix_options *opt, char *why, size_t n) {
  const cJSON *edits = cJSON_GetObjectItemCaseSensitive(fix, "edits");
  if (!cJSON_IsArray(edits) || cJSON_GetArraySize(edits) == 0) return fail(why, n, "the fix has no edits", NULL);
  const cJSON *e;
  cJSON_ArrayForEach(e, edits) {
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "edit");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : "";
    bool ok = strcmp(k, "insert_op") == 0     ? insert_op(model, e, why, n)
              : strcmp(k, "set_operand") == 0 ? set_operand(model, e, why, n)
              : strcmp(k, "set_attr") == 0    ? set_attr(model, e, why, n)
              : strcmp(k, "set_option") == 0  ? set_option(e, opt, why, n)
                                              : fail(why, n, "unknown edit", k);
    if (!ok) return false;
  }
  return true;
}
