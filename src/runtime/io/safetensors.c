/* safetensors reader: 8-byte little-endian header length, a JSON header
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
 * then the data. Offsets are relative to the data start and are checked
 * against the file size before anything points at them. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "weights.h"

static const struct {
  const char *name;
  ppcc_dtype dtype;
} st_types[] = {
  {"F32", PPCC_F32}, {"F16", PPCC_F16}, {"BF16", PPCC_BF16}, {"I64", PPCC_I64},
  {"I32", PPCC_I32}, {"I8", PPCC_I8},   {"BOOL", PPCC_BOOL},
};

static bool st_dtype(const char *s, ppcc_dtype *out) {
  for (size_t i = 0; i < sizeof st_types / sizeof st_types[0]; i++)
    if (strcmp(s, st_types[i].name) == 0) {
      *out = st_types[i].dtype;
      return true;
    }
  return false;
}

static bool get_u64(const cJSON *item, uint64_t *out) {
  if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > 9007199254740992.0) return false;
  *out = (uint64_t)item->valuedouble;
  return (double)*out == item->valuedouble;
}

static ppcc_status parse_shape(const char *path, const char *name, const cJSON *shape, rt_weight_entry *e,
                               ppcc_diag *d) {
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > PPCC_MAX_RANK)
    return ppcc_error(d, "%s: tensor '%s': bad shape", path, name);
  e->rank = 0;
  for (const cJSON *s = shape->child; s; s = s->next) {
    uint64_t v;
    if (!get_u64(s, &v)) return ppcc_error(d, "%s: tensor '%s': bad shape", path, name);
    e->shape[e->rank++] = (int64_t)v;
  }
  if (ppcc_num_elements(e->rank, e->shape) < 0) return ppcc_error(d, "%s: tensor '%s': shape too large", path, name);
  return PPCC_OK;
}

static ppcc_status parse_entry(rt_weight_index *idx, const cJSON *item, const unsigned char *data,
                               uint64_t data_size, ppcc_diag *d) {
  const char *path = idx->file.path, *name = item->string;
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
  const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
  rt_weight_entry *e = rt_weight_index_add(idx, name, strlen(name));
  if (!e) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!cJSON_IsString(dt) || !st_dtype(dt->valuestring, &e->dtype))
    return ppcc_error(d, "%s: tensor '%s': unsupported or missing dtype", path, name);
  ppcc_status st = parse_shape(path, name, shape, e, d);
  if (st) return st;
  uint64_t begin, end;
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !get_u64(offs->child, &begin) ||
      !get_u64(offs->child->next, &end) || begin > end)
    return ppcc_error(d, "%s: tensor '%s': bad data_offsets", path, name);
  if (end > data_size)
    return ppcc_error(d, "%s: tensor '%s': data_offsets [%llu, %llu] past the end of the file (%llu data bytes)",
                      path, name, (unsigned long long)begin, (unsigned long long)end, (unsigned long long)data_size);
  uint64_t want = (uint64_t)ppcc_num_elements(e->rank, e->shape) * (uint64_t)ppcc_dtype_size(e->dtype);
  if (end - begin != want)
    return ppcc_error(d, "%s: tensor '%s': %llu data bytes for a %s tensor of %llu bytes", path, name,
                      (unsigned long long)(end - begin), ppcc_dtype_name(e->dtype), (unsigned long long)want);
  e->has_type = true;
  e->data = data + begin;
  e->bytes = want;
  return PPCC_OK;
}

/* JSON strings of the header: no raw control characters (JSON forbids
 * them) and no \u0000, which would cut a name short ("w1\u0000junk" must
 * not pass for "w1"). Returns the offending offset or -1. */
static long bad_string_at(const char *h, size_t n) {
  bool in_string = false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)h[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      else if (c == 0) return (long)i;
      continue;
    }
    if (c < 0x20) return (long)i;
    if (c == '"') in_string = false;
    else if (c == '\\' && i + 1 < n) {
      if (h[i + 1] == 'u' && i + 5 < n && memcmp(h + i + 2, "0000", 4) == 0) return (long)i;
      i++; /* the escaped character */
    }
  }
  return -1;
}

typedef struct span {
  uint64_t begin, end;
  const char *name;
} span;

static int by_begin(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->begin != y->begin ? (x->begin < y->begin ? -1 : 1) : (x->end < y->end ? -1 : x->end > y->end);
}

/* As the safetensors format requires, the tensors' data tile the data
 * section exactly: no overlap, no hole, nothing after the last one. */
static ppcc_status check_tiling(const rt_weight_index *idx, int first, const unsigned char *data, uint64_t data_size,
                                ppcc_diag *d) {
  int n = idx->n - first;
  span *spans = malloc(sizeof *spans * (size_t)(n > 0 ? n : 1));
  if (!spans) return ppcc_error(d, "out of memory");
  for (int i = 0; i < n; i++) {
    const rt_weight_entry *e = &idx->entries[first + i];
    spans[i] = (span){(uint64_t)(e->data - data), (uint64_t)(e->data - data) + e->bytes, e->name};
  }
  qsort(spans, (size_t)n, sizeof *spans, by_begin);
  ppcc_status st = PPCC_OK;
  uint64_t at = 0;
  for (int i = 0; i < n && !st; i++) {
    if (spans[i].begin < at)
      st = ppcc_error(d, "%s: tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s'", idx->file.path,
                      spans[i].name, (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end,
                      spans[i - 1].name);
    else if (spans[i].begin > at)
      st = ppcc_error(d, "%s: data bytes [%llu, %llu) belong to no tensor (before tensor '%s')", idx->file.path,
                      (unsigned long long)at, (unsigned long long)spans[i].begin, spans[i].name);
    at = spans[i].end > at ? spans[i].end : at;
  }
  if (!st && at != data_size)
    st = ppcc_error(d, "%s: %llu bytes of trailing garbage after the last tensor's data", idx->file.path,
                    (unsigned long long)(data_size - at));
  free(spans);
  return st;
}

ppcc_status rt_safetensors_index(rt_weight_index *idx, ppcc_diag *d) {
  const rt_mapped_file *f = &idx->file;
  if (f->size < 8) return ppcc_error(d, "%s: truncated safetensors file (no header length)", f->path);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->data[i];
  if (hlen > f->size - 8)
    return ppcc_error(d, "%s: safetensors header length %llu exceeds the file size %zu", f->path,
                      (unsigned long long)hlen, f->size);
  const char *header = (const char *)f->data + 8, *end = NULL;
  long bad = bad_string_at(header, (size_t)hlen);
  if (bad >= 0)
    return ppcc_error(d, "%s: safetensors header: a NUL or control character at byte %ld", f->path, bad);
  cJSON *root = cJSON_ParseWithLengthOpts(header, (size_t)hlen, &end, 0);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ppcc_error(d, "%s: safetensors header is not a JSON object", f->path);
  }
  /* The header may be padded with spaces, nothing else. */
  for (const char *p = end; p && p < header + hlen; p++)
    if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
      cJSON_Delete(root);
      return ppcc_error(d, "%s: safetensors header: trailing garbage after the JSON object (byte %ld)", f->path,
                        (long)(p - header));
    }
  const unsigned char *data = f->data + 8 + hlen;
  uint64_t data_size = f->size - 8 - hlen;
  ppcc_status st = PPCC_OK;
  int first = idx->n;
  for (const cJSON *item = root->child; item && !st; item = item->next) {
    if (strcmp(item->string, "__metadata__") == 0) continue;
    if (!cJSON_IsObject(item)) {
      st = ppcc_error(d, "%s: tensor '%s': entry is not an object", f->path, item->string);
      break;
    }
    st = parse_entry(idx, item, data, data_size, d);
  }
  cJSON_Delete(root);
  if (!st) st = check_tiling(idx, first, data, data_size, d);
  return st;
}
