/* GGUF reader (see gguf.h). Layout: "GGUF", u32 version, u64 tensor count,
 * u64 metadata count, the metadata (string key, u32 type, value), the
 * tensor infos (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64
 * offset), then the data section at the next multiple of
 * general.alignment (default 32). Version 1 (u32 counts) is refused.
 *
 * Block formats and their decoders: include/ppcc/quant.h. */
#include <stdlib.h>
#include <string.h>
#include "io.h"

#define GGUF_MAX_TENSORS (1 << 20)
#define GGUF_MAX_KV (1 << 20)
#define GGUF_MAX_STRING (1 << 24)

const char *rt_gguf_type_name(uint32_t type) {
  const char *n = ppcc_ggml_type_name((int)type);
  return n ? n : "unknown";
}

bool rt_gguf_is_gguf(const rt_mapped_file *f) { return f->size >= 4 && memcmp(f->data, "GGUF", 4) == 0; }

/* ---------------- bounds-checked cursor ---------------- */

typedef struct cursor {
  const unsigned char *p;
  size_t size, pos;
  bool bad; /* read past the end */
  bool nul; /* the last string read held a NUL byte (it would be cut there) */
} cursor;

static bool take(cursor *c, size_t n, const unsigned char **out) {
  if (c->bad || n > c->size - c->pos) {
    c->bad = true;
    return false;
  }
  *out = c->p + c->pos;
  c->pos += n;
  return true;
}

static uint64_t read_le(cursor *c, int n) {
  const unsigned char *b;
  if (!take(c, (size_t)n, &b)) return 0;
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
  return v;
}

/* A length-prefixed string, copied and NUL-terminated (NULL when bad). */
static char *read_string(cursor *c) {
  uint64_t n = read_le(c, 8);
  const unsigned char *b;
  if (c->bad || n > GGUF_MAX_STRING || !take(c, (size_t)n, &b)) {
    c->bad = true;
    return NULL;
  }
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  c->nul = memchr(b, 0, (size_t)n) != NULL;
  memcpy(s, b, (size_t)n);
  s[n] = 0;
  return s;
}

static int scalar_size(uint32_t type) {
  switch (type) {
  case GGUF_KV_U8: case GGUF_KV_I8: case GGUF_KV_BOOL: return 1;
  case GGUF_KV_U16: case GGUF_KV_I16: return 2;
  case GGUF_KV_U32: case GGUF_KV_I32: case GGUF_KV_F32: return 4;
  case GGUF_KV_U64: case GGUF_KV_I64: case GGUF_KV_F64: return 8;
  default: return 0;
  }
}

static double scalar_value(uint32_t type, uint64_t raw) {
  switch (type) {
  case GGUF_KV_I8: return (double)(int8_t)raw;
  case GGUF_KV_I16: return (double)(int16_t)raw;
  case GGUF_KV_I32: return (double)(int32_t)raw;
  case GGUF_KV_I64: return (double)(int64_t)raw;
  case GGUF_KV_F32: { uint32_t u = (uint32_t)raw; float f; memcpy(&f, &u, 4); return f; }
  case GGUF_KV_F64: { double f; memcpy(&f, &raw, 8); return f; }
  default: return (double)raw;
  }
}

/* One value of `type` (arrays: skipped element by element). */
static bool read_value(cursor *c, uint32_t type, rt_gguf_kv *kv, int depth) {
  int n = scalar_size(type);
  if (n) {
    uint64_t raw = read_le(c, n);
    if (kv) kv->number = scalar_value(type, raw);
    return !c->bad;
  }
  if (type == GGUF_KV_STRING) {
    char *s = read_string(c);
    if (!s) return false;
    if (kv) kv->string = s;
    else free(s);
    return true;
  }
  if (type == GGUF_KV_ARRAY && depth == 0) {
    uint32_t et = (uint32_t)read_le(c, 4);
    uint64_t count = read_le(c, 8);
    if (c->bad) return false;
    int es = scalar_size(et);
    if (kv) {
      kv->array_type = et;
      kv->array_count = count;
      kv->array_data = c->p + c->pos;
    }
    if (es) { /* skip fixed-size elements at once */
      const unsigned char *b;
      if (count > (c->size - c->pos) / (uint64_t)es) return c->bad = true, false;
      return take(c, (size_t)(count * (uint64_t)es), &b);
    }
    if (et != GGUF_KV_STRING) return false;
    for (uint64_t i = 0; i < count; i++) { /* strings: each at least 8 bytes */
      uint64_t len = read_le(c, 8);
      const unsigned char *b;
      if (c->bad || len > c->size - c->pos || !take(c, (size_t)len, &b)) return c->bad = true, false;
    }
    return true;
  }
  return false;
}

double rt_gguf_array_number(const rt_gguf_kv *kv, uint64_t i) {
  int es = scalar_size(kv->array_type);
  uint64_t raw = 0;
  for (int b = es - 1; b >= 0; b--) raw = raw << 8 | kv->array_data[i * (uint64_t)es + (uint64_t)b];
  return scalar_value(kv->array_type, raw);
}

const char *rt_gguf_array_next_string(const unsigned char **at, uint64_t *len) {
  uint64_t n = 0;
  for (int b = 7; b >= 0; b--) n = n << 8 | (*at)[b];
  const char *s = (const char *)*at + 8;
  *at += 8 + n;
  *len = n;
  return s;
}

void rt_gguf_close(rt_gguf *g) {
  for (int i = 0; i < g->n_kv; i++) {
    free(g->kv[i].key);
    free(g->kv[i].string);
  }
  for (int i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
  free(g->kv);
  free(g->tensors);
  rt_unmap_file(&g->file);
  memset(g, 0, sizeof *g);
}

static int by_offset(const void *a, const void *b) {
  const rt_gguf_tensor *x = *(rt_gguf_tensor *const *)a, *y = *(rt_gguf_tensor *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sizes, bounds and overlaps of the tensors, once the data start is known. */
static ppcc_status place_tensors(rt_gguf *g, uint64_t data_start, uint64_t alignment, ppcc_diag *d) {
  const char *path = g->file.path;
  uint64_t data_size = g->file.size >= data_start ? g->file.size - data_start : 0;
  if (g->file.size < data_start && g->n_tensors > 0)
    return ppcc_error(d, "%s: truncated GGUF file: the data section would start at byte %llu of %zu", path,
                      (unsigned long long)data_start, g->file.size);
  rt_gguf_tensor **order = malloc(sizeof *order * (size_t)(g->n_tensors ? g->n_tensors : 1));
  if (!order) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < g->n_tensors && !st; i++) {
    rt_gguf_tensor *t = &g->tensors[i];
    const ppcc_block_format *f = t->format = ppcc_block_format_of_ggml((int)t->type);
    order[i] = t;
    if (!f) {
      char known[200];
      ppcc_block_format_list(known, sizeof known, true);
      st = ppcc_error(d, "%s: tensor '%s': GGUF type %s (%u) is not supported (ppcc reads %s)", path, t->name,
                      rt_gguf_type_name(t->type), t->type, known);
      break;
    }
    uint64_t n = 1;
    for (int k = 0; k < t->n_dims; k++) {
      if (t->ne[k] < 0 || (t->ne[k] && n > (UINT64_C(1) << 50) / (uint64_t)t->ne[k])) {
        st = ppcc_error(d, "%s: tensor '%s': shape too large", path, t->name);
        break;
      }
      n *= (uint64_t)t->ne[k];
    }
    if (st) break;
    if (t->ne[0] % f->block != 0) {
      st = ppcc_error(d, "%s: tensor '%s': row length %lld is not a multiple of the %s block (%d)", path, t->name,
                      (long long)t->ne[0], f->gguf_name, f->block);
      break;
    }
    t->bytes = (uint64_t)ppcc_block_bytes(f, (int64_t)n);
    if (t->offset % alignment != 0) {
      st = ppcc_error(d, "%s: tensor '%s': offset %llu is not a multiple of the alignment %llu", path, t->name,
                      (unsigned long long)t->offset, (unsigned long long)alignment);
      break;
    }
    if (t->offset > data_size || t->bytes > data_size - t->offset) {
      st = ppcc_error(d, "%s: tensor '%s': data [%llu, %llu) is past the end of the file (truncated; %llu data bytes)",
                      path, t->name, (unsigned long long)t->offset, (unsigned long long)(t->offset + t->bytes),
                      (unsigned long long)data_size);
      break;
    }
    t->data = g->file.data + data_start + t->offset;
  }
  if (!st) {
    qsort(order, (size_t)g->n_tensors, sizeof *order, by_offset);
    for (int i = 1; i < g->n_tensors && !st; i++)
      if (order[i - 1]->offset + order[i - 1]->bytes > order[i]->offset)
        st = ppcc_error(d, "%s: tensor '%s': data overlaps tensor '%s'", path, order[i]->name, order[i - 1]->name);
  }
  free(order);
  return st;
}

static ppcc_status parse_tensor_info(rt_gguf *g, cursor *c, rt_gguf_tensor *t, ppcc_diag *d) {
  const char *path = g->file.path;
  t->name = read_string(c);
  if (!t->name) return ppcc_error(d, "%s: truncated GGUF file in tensor info %d", path, g->n_tensors);
  g->n_tensors++;
  if (c->nul) return ppcc_error(d, "%s: tensor info %d: the name '%s' holds a NUL byte", path, g->n_tensors - 1, t->name);
  uint32_t n_dims = (uint32_t)read_le(c, 4);
  if (c->bad) return ppcc_error(d, "%s: truncated GGUF file in tensor info '%s'", path, t->name);
  if (n_dims < 1 || n_dims > 4) return ppcc_error(d, "%s: tensor '%s': %u dims (1 to 4 allowed)", path, t->name, n_dims);
  t->n_dims = (int)n_dims;
  for (uint32_t k = 0; k < n_dims; k++) {
    uint64_t ne = read_le(c, 8);
    if (ne > (UINT64_C(1) << 40)) return ppcc_error(d, "%s: tensor '%s': dim %u is too large", path, t->name, k);
    t->ne[k] = (int64_t)ne;
  }
  t->type = (uint32_t)read_le(c, 4);
  t->offset = read_le(c, 8);
  if (c->bad) return ppcc_error(d, "%s: truncated GGUF file in tensor info '%s'", path, t->name);
  for (int i = 0; i < g->n_tensors - 1; i++)
    if (strcmp(g->tensors[i].name, t->name) == 0) return ppcc_error(d, "%s: tensor '%s' appears twice", path, t->name);
  return PPCC_OK;
}

static int by_key(const void *a, const void *b) {
  return strcmp((*(const rt_gguf_kv *const *)a)->key, (*(const rt_gguf_kv *const *)b)->key);
}

/* A metadata key given twice is refused naming it (the first one found
 * used to win silently; llama.cpp refuses it too). */
static ppcc_status refuse_duplicate_keys(const rt_gguf *g, ppcc_diag *d) {
  if (g->n_kv < 2) return PPCC_OK;
  const rt_gguf_kv **order = malloc(sizeof *order * (size_t)g->n_kv);
  if (!order) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  for (int i = 0; i < g->n_kv; i++) order[i] = &g->kv[i];
  qsort(order, (size_t)g->n_kv, sizeof *order, by_key);
  ppcc_status st = PPCC_OK;
  for (int i = 1; i < g->n_kv && !st; i++)
    if (strcmp(order[i - 1]->key, order[i]->key) == 0)
      st = ppcc_error(d, "%s: metadata key '%s' appears twice", g->file.path, order[i]->key);
  free(order);
  return st;
}

ppcc_status rt_gguf_parse(rt_gguf *g, ppcc_diag *d) {
  const char *path = g->file.path;
  cursor c = {g->file.data, g->file.size, 0, false, false};
  if (!rt_gguf_is_gguf(&g->file)) return ppcc_error(d, "%s: not a GGUF file (no 'GGUF' magic)", path);
  c.pos = 4;
  g->version = (uint32_t)read_le(&c, 4);
  if (c.bad) return ppcc_error(d, "%s: truncated GGUF header", path);
  if (g->version != 2 && g->version != 3)
    return ppcc_error(d, "%s: GGUF version %u is not supported (2 or 3)", path, g->version);
  uint64_t n_tensors = read_le(&c, 8), n_kv = read_le(&c, 8);
  if (c.bad) return ppcc_error(d, "%s: truncated GGUF header", path);
  /* every entry takes at least 8 bytes: counts beyond that are lies */
  if (n_tensors > GGUF_MAX_TENSORS || n_kv > GGUF_MAX_KV || n_tensors + n_kv > g->file.size / 8)
    return ppcc_error(d, "%s: truncated or corrupt GGUF file: the header claims %llu tensors and %llu metadata entries, more than the file holds",
                      path, (unsigned long long)n_tensors, (unsigned long long)n_kv);
  g->kv = calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kv);
  g->tensors = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
  if (!g->kv || !g->tensors) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; i++) {
    rt_gguf_kv *kv = &g->kv[g->n_kv];
    kv->key = read_string(&c);
    if (!kv->key) return ppcc_error(d, "%s: truncated GGUF file in metadata entry %llu", path, (unsigned long long)i);
    g->n_kv++;
    if (c.nul)
      return ppcc_error(d, "%s: metadata entry %llu: the key '%s' holds a NUL byte", path, (unsigned long long)i, kv->key);
    kv->type = (uint32_t)read_le(&c, 4);
    if (c.bad || !read_value(&c, kv->type, kv, 0))
      return ppcc_error(d, "%s: metadata key '%s': %s", path, kv->key,
                        c.bad ? "truncated value" : "unknown value type");
    if (kv->type == GGUF_KV_STRING && c.nul) /* an architecture or name cut at the NUL */
      return ppcc_error(d, "%s: metadata key '%s': the string holds a NUL byte", path, kv->key);
    if (strcmp(kv->key, "general.alignment") == 0) {
      if (kv->type != GGUF_KV_U32 || kv->number < 1 || kv->number > 65536 || ((uint64_t)kv->number & ((uint64_t)kv->number - 1)))
        return ppcc_error(d, "%s: metadata key 'general.alignment' must be a u32 power of two", path);
      alignment = (uint64_t)kv->number;
    }
  }
  ppcc_status dup = refuse_duplicate_keys(g, d);
  if (dup) return dup;
  for (uint64_t i = 0; i < n_tensors; i++) {
    ppcc_status st = parse_tensor_info(g, &c, &g->tensors[g->n_tensors], d);
    if (st) return st;
  }
  uint64_t data_start = (c.pos + alignment - 1) / alignment * alignment;
  return place_tensors(g, data_start, alignment, d);
}

ppcc_status rt_gguf_open(const char *path, rt_gguf *g, ppcc_diag *d) {
  memset(g, 0, sizeof *g);
  ppcc_status st = rt_map_file(path, &g->file, d);
  if (!st) st = rt_gguf_parse(g, d);
  if (st) rt_gguf_close(g);
  return st;
}

const rt_gguf_kv *rt_gguf_find_kv(const rt_gguf *g, const char *key) {
  for (int i = 0; i < g->n_kv; i++)
    if (strcmp(g->kv[i].key, key) == 0) return &g->kv[i];
  return NULL;
}

const rt_gguf_tensor *rt_gguf_find_tensor(const rt_gguf *g, const char *name) {
  for (int i = 0; i < g->n_tensors; i++)
    if (strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
  return NULL;
}

ppcc_status rt_gguf_dequantize_rows(const char *path, const rt_gguf_tensor *t, int64_t row0, int64_t n_rows,
                                   float *out, ppcc_diag *d) {
  const ppcc_block_format *f = t->format;
  int64_t blocks = t->ne[0] / f->block;
  int64_t bad = ppcc_block_decode(f, t->data + (size_t)(row0 * blocks * f->bytes), n_rows * blocks, out);
  if (bad < 0) return PPCC_OK;
  return ppcc_error(d, "%s: tensor '%s': %s block %lld (row %lld) has a NaN or infinite scale", path, t->name,
                    f->gguf_name, (long long)(row0 * blocks + bad), (long long)(row0 + bad / blocks));
}
