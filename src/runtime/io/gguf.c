/* GGUF reader (see gguf.h). Layout: "GGUF", u32 version, u64 tensor count,
 * u64 metadata count, the metadata (string key, u32 type, value), the
 * tensor infos (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64
 * offset), then the data section at the next multiple of
 * general.alignment (default 32). Version 1 (u32 counts) is refused.
 *
 * Dequantization follows ggml's block formats (ggml-quants.c):
 *   Q8_0  32 values: f16 d, 32 x i8          -> d * q
 *   Q4_0  32 values: f16 d, 16 bytes         -> d * (nibble - 8); low
 *         nibbles are values 0..15, high nibbles 16..31
 *   Q4_K 256 values: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins,
 *         128 bytes of nibbles              -> d*sc*q - dmin*m per 32
 *   Q6_K 256 values: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 x i8
 *         scales, f16 d                     -> d * sc * (q - 32) per 16 */
#include <stdlib.h>
#include <string.h>
#include "io.h"

#define GGUF_MAX_TENSORS (1 << 20)
#define GGUF_MAX_KV (1 << 20)
#define GGUF_MAX_STRING (1 << 24)

static const struct {
  uint32_t type;
  const char *name;
  int block, bytes; /* values per block, bytes per block */
} gguf_types[] = {
  {GGUF_F32, "F32", 1, 4},       {GGUF_F16, "F16", 1, 2},      {GGUF_BF16, "BF16", 1, 2},
  {GGUF_Q8_0, "Q8_0", 32, 34},   {GGUF_Q4_0, "Q4_0", 32, 18},  {GGUF_Q4_K, "Q4_K", 256, 144},
  {GGUF_Q6_K, "Q6_K", 256, 210},
};

static int type_index(uint32_t type) {
  for (size_t i = 0; i < sizeof gguf_types / sizeof *gguf_types; i++)
    if (gguf_types[i].type == type) return (int)i;
  return -1;
}

const char *rt_gguf_type_name(uint32_t type) {
  int i = type_index(type);
  return i < 0 ? "?" : gguf_types[i].name;
}

bool rt_gguf_is_gguf(const rt_mapped_file *f) { return f->size >= 4 && memcmp(f->data, "GGUF", 4) == 0; }

/* ---------------- bounds-checked cursor ---------------- */

typedef struct cursor {
  const unsigned char *p;
  size_t size, pos;
  bool bad; /* read past the end */
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
    int ti = type_index(t->type);
    order[i] = t;
    if (ti < 0) {
      st = ppcc_error(d, "%s: tensor '%s': unsupported GGUF type %u (ppcc reads F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)",
                      path, t->name, t->type);
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
    if (t->ne[0] % gguf_types[ti].block != 0) {
      st = ppcc_error(d, "%s: tensor '%s': row length %lld is not a multiple of the %s block (%d)", path, t->name,
                      (long long)t->ne[0], gguf_types[ti].name, gguf_types[ti].block);
      break;
    }
    t->bytes = n / (uint64_t)gguf_types[ti].block * (uint64_t)gguf_types[ti].bytes;
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

ppcc_status rt_gguf_parse(rt_gguf *g, ppcc_diag *d) {
  const char *path = g->file.path;
  cursor c = {g->file.data, g->file.size, 0, false};
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
    kv->type = (uint32_t)read_le(&c, 4);
    if (c.bad || !read_value(&c, kv->type, kv, 0))
      return ppcc_error(d, "%s: metadata key '%s': %s", path, kv->key,
                        c.bad ? "truncated value" : "unknown value type");
    if (strcmp(kv->key, "general.alignment") == 0) {
      if (kv->type != GGUF_KV_U32 || kv->number < 1 || kv->number > 65536 || ((uint64_t)kv->number & ((uint64_t)kv->number - 1)))
        return ppcc_error(d, "%s: metadata key 'general.alignment' must be a u32 power of two", path);
      alignment = (uint64_t)kv->number;
    }
  }
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

/* ---------------- dequantization ---------------- */

static uint16_t u16_at(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static float f16_at(const unsigned char *p) { return ppcc_f16_to_f32(u16_at(p)); }

static void deq_q8_0(const unsigned char *b, float *y) {
  float dd = f16_at(b);
  for (int j = 0; j < 32; j++) y[j] = dd * (float)(int8_t)b[2 + j];
}

static void deq_q4_0(const unsigned char *b, float *y) {
  float dd = f16_at(b);
  for (int j = 0; j < 16; j++) {
    y[j] = dd * (float)((b[2 + j] & 0x0F) - 8);
    y[j + 16] = dd * (float)((b[2 + j] >> 4) - 8);
  }
}

static void scale_min_k4(int j, const unsigned char *q, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

static void deq_q4_k(const unsigned char *b, float *y) {
  float dd = f16_at(b), dmin = f16_at(b + 2);
  const unsigned char *scales = b + 4, *q = b + 16;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    int sc, m;
    scale_min_k4(is, scales, &sc, &m);
    float d1 = dd * (float)sc, m1 = dmin * (float)m;
    scale_min_k4(is + 1, scales, &sc, &m);
    float d2 = dd * (float)sc, m2 = dmin * (float)m;
    for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
    for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
  }
}

static void deq_q6_k(const unsigned char *b, float *y) {
  const unsigned char *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float dd = f16_at(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
    for (int l = 0; l < 32; l++) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = dd * (float)sc[is] * (float)q1;
      y[l + 32] = dd * (float)sc[is + 2] * (float)q2;
      y[l + 64] = dd * (float)sc[is + 4] * (float)q3;
      y[l + 96] = dd * (float)sc[is + 6] * (float)q4;
    }
}

void rt_gguf_dequantize_rows(const rt_gguf_tensor *t, int64_t row0, int64_t n_rows, float *out) {
  int ti = type_index(t->type);
  int64_t cols = t->ne[0], blocks = cols / gguf_types[ti].block, bsize = gguf_types[ti].bytes;
  for (int64_t r = 0; r < n_rows; r++) {
    const unsigned char *row = t->data + (size_t)((row0 + r) * blocks * bsize);
    float *y = out + r * cols;
    for (int64_t k = 0; k < blocks; k++) {
      const unsigned char *b = row + k * bsize;
      switch (t->type) {
      case GGUF_F32: memcpy(&y[k], b, 4); break;
      case GGUF_F16: y[k] = f16_at(b); break;
      case GGUF_BF16: y[k] = ppcc_bf16_to_f32(u16_at(b)); break;
      case GGUF_Q8_0: deq_q8_0(b, y + k * 32); break;
      case GGUF_Q4_0: deq_q4_0(b, y + k * 32); break;
      case GGUF_Q4_K: deq_q4_k(b, y + k * 256); break;
      case GGUF_Q6_K: deq_q6_k(b, y + k * 256); break;
      }
    }
  }
}
