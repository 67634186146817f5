/* `ppcc shard-weights`: the sharded parameter archive the IREE form reads
 * (DESIGN §5; entry names from ppcc_param_shard_entry, sharktank's
 * NAME.shard.K), as an IREE .irpa or a .safetensors, in each param's dtype.
 *
 * Streaming: the header is laid out from the graph alone (every entry's
 * size is known), then each param is fetched from the source once, its
 * shards written straight from it (a split's rows piece by piece, no shard
 * buffer), and its pages dropped before the next param: the process holds
 * at most one tensor of the source at a time. Written through the
 * atomic-output module: a failure leaves no partial file. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"
#include "io.h"

enum { IRPA_HEADER_SIZE = 88, IRPA_DATA_ENTRY = 76, IRPA_ENTRY_STRIDE = 80, IRPA_ALIGN = 64 };
#define IRPA_MAGIC 0x41505249u

typedef struct shard_entry {
  int value, shard;
  char name[PPCC_MAX_NAME + 32];
  uint64_t bytes, offset; /* offset in the storage segment / data buffer */
} shard_entry;

typedef struct shard_plan {
  shard_entry *e;
  int n;
  uint64_t storage_bytes;
} shard_plan;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static ppcc_status plan_entries(const ppcc_graph *g, bool irpa, shard_plan *p, ppcc_diag *d) {
  int cap = 0;
  for (int v = 0; v < g->n_values; v++)
    if (g->values[v].kind == PPCC_VALUE_PARAM) cap += g->values[v].layout.count > 0 ? g->values[v].layout.count : 1;
  p->e = calloc((size_t)(cap > 0 ? cap : 1), sizeof *p->e);
  if (!p->e) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  uint64_t off = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *val = &g->values[v];
    if (val->kind != PPCC_VALUE_PARAM) continue;
    int count = val->layout.count > 0 ? val->layout.count : 1;
    for (int i = 0; i < count; i++) {
      if (!ppcc_param_shard_stored(val, i)) continue;
      shard_entry *e = &p->e[p->n++];
      e->value = v;
      e->shard = i;
      if (!ppcc_param_shard_entry(val, i, e->name, sizeof e->name))
        return ppcc_error(d, "param '%s': its shard name is too long", val->name);
      e->bytes = (uint64_t)(count > 1 ? ppcc_value_shard_bytes(val) : ppcc_value_bytes(val));
      if (irpa) off = align_up(off, IRPA_ALIGN);
      e->offset = off;
      off += e->bytes;
    }
  }
  p->storage_bytes = off;
  return PPCC_OK;
}

/* ---- a growable byte buffer for the header ---- */
typedef struct bytes_buf {
  unsigned char *data;
  size_t len, cap;
  bool oom;
} bytes_buf;

static void put(bytes_buf *b, const void *src, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *p = realloc(b->data, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, src, n);
  b->len += n;
}

static void put_le(bytes_buf *b, uint64_t v, int bytes) {
  unsigned char le[8];
  for (int i = 0; i < bytes; i++) le[i] = (unsigned char)(v >> (8 * i));
  put(b, le, (size_t)bytes);
}

static void put_str(bytes_buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_zeros(bytes_buf *b, size_t n) {
  static const unsigned char zero[IRPA_ALIGN];
  while (n) {
    size_t k = n < sizeof zero ? n : sizeof zero;
    put(b, zero, k);
    n -= k;
  }
}

/* The .irpa header, entry table and names (format: see irpa.c), padded to
 * the 64-byte aligned start of the storage segment. */
static void irpa_header(const shard_plan *p, bytes_buf *b) {
  uint64_t entries_off = align_up(IRPA_HEADER_SIZE, 16);
  uint64_t entries_len = p->n ? (uint64_t)(p->n - 1) * IRPA_ENTRY_STRIDE + IRPA_DATA_ENTRY : 0;
  uint64_t names_off = entries_off + entries_len, names_len = 0;
  for (int i = 0; i < p->n; i++) names_len += strlen(p->e[i].name);
  uint64_t storage_off = align_up(names_off + names_len, IRPA_ALIGN);
  put_le(b, IRPA_MAGIC, 4);
  put_le(b, 0, 2); /* version 0.0 */
  put_le(b, 0, 2);
  put_le(b, IRPA_HEADER_SIZE, 8);
  put_le(b, 0, 8); /* next header: none */
  put_le(b, 0, 8); /* flags */
  put_le(b, (uint64_t)p->n, 8);
  put_le(b, entries_off, 8);
  put_le(b, entries_len, 8);
  put_le(b, names_off, 8);
  put_le(b, names_len, 8);
  put_le(b, storage_off, 8);
  put_le(b, p->storage_bytes, 8);
  put_zeros(b, (size_t)(entries_off - IRPA_HEADER_SIZE));
  uint64_t name_at = 0;
  for (int i = 0; i < p->n; i++) {
    const shard_entry *e = &p->e[i];
    uint64_t len = strlen(e->name);
    if (i) put_zeros(b, IRPA_ENTRY_STRIDE - IRPA_DATA_ENTRY);
    put_le(b, IRPA_DATA_ENTRY, 8);
    put_le(b, 2, 4); /* DATA */
    put_le(b, 0, 8); /* flags */
    put_le(b, name_at, 8);
    put_le(b, len, 8);
    put_le(b, 0, 8); /* no metadata */
    put_le(b, 0, 8);
    put_le(b, IRPA_ALIGN, 8); /* minimum alignment */
    put_le(b, e->offset, 8);
    put_le(b, e->bytes, 8);
    name_at += len;
  }
  for (int i = 0; i < p->n; i++) put_str(b, p->e[i].name);
  put_zeros(b, (size_t)(storage_off - names_off - names_len));
}

static const char *safetensors_dtype(ppcc_dtype t) {
  static const char *const names[PPCC_DTYPE_COUNT] = {"F32", "F16", "BF16", "I64", "I32", "I8", "BOOL"};
  return names[t];
}

static void put_json_string(bytes_buf *b, const char *s) {
  put_str(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\' || c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      put_str(b, esc);
    } else {
      put(b, &c, 1);
    }
  }
  put_str(b, "\"");
}

/* The safetensors header: u64 length, then JSON padded with spaces so
 * that the data starts on a 64-byte line (weights are read in place, and
 * the product kernels read whole lines faster: gemm_tiles.c); shards in
 * order, contiguous. */
static void safetensors_header(const ppcc_graph *g, const shard_plan *p, bytes_buf *b) {
  bytes_buf json = {0};
  put_str(&json, "{");
  for (int i = 0; i < p->n; i++) {
    const shard_entry *e = &p->e[i];
    const ppcc_value *v = &g->values[e->value];
    int64_t shape[PPCC_MAX_RANK];
    ppcc_value_shard_shape(v, shape);
    char num[64];
    if (i) put_str(&json, ",");
    put_json_string(&json, e->name);
    put_str(&json, ":{\"dtype\":\"");
    put_str(&json, safetensors_dtype(v->dtype));
    put_str(&json, "\",\"shape\":[");
    for (int k = 0; k < v->rank; k++) {
      snprintf(num, sizeof num, k ? ",%lld" : "%lld", (long long)shape[k]);
      put_str(&json, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)e->offset,
             (unsigned long long)(e->offset + e->bytes));
    put_str(&json, num);
  }
  put_str(&json, "}");
  while ((8 + json.len) % 64) put_str(&json, " ");
  put_le(b, json.len, 8);
  put(b, json.data, json.len);
  b->oom |= json.oom;
  free(json.data);
}

/* ---- writing the data ---- */

static bool write_zeros(FILE *f, uint64_t n) {
  static const unsigned char zero[1 << 16];
  while (n) {
    size_t k = n < sizeof zero ? (size_t)n : sizeof zero;
    if (fwrite(zero, 1, k, f) != k) return false;
    n -= k;
  }
  return true;
}

/* Shard `i` of v from its full tensor: a split's rows in place, an
 * unreduced shard 1.. as zeros, anything else whole. */
static bool write_shard(FILE *f, const ppcc_value *v, int i, const unsigned char *full, uint64_t bytes) {
  ppcc_layout l = v->layout;
  if (l.count <= 1 || l.kind == PPCC_LAYOUT_REPLICATED) return fwrite(full, 1, (size_t)bytes, f) == bytes;
  if (l.kind == PPCC_LAYOUT_UNREDUCED) return i == 0 ? fwrite(full, 1, (size_t)bytes, f) == bytes : write_zeros(f, bytes);
  rt_split_geom geom = rt_split_geometry(v->rank, v->shape, l.dim, l.count);
  size_t row = (size_t)geom.inner * (size_t)ppcc_dtype_size(v->dtype);
  for (int64_t o = 0; o < geom.outer; o++)
    if (row && fwrite(full + row * ((size_t)o * (size_t)l.count + (size_t)i), 1, row, f) != row) return false;
  return true;
}

static ppcc_status write_data(const ppcc_graph *g, const shard_plan *p, bool irpa, ppcc_weights *w, FILE *f,
                              const char *out_path, ppcc_diag *d) {
  uint64_t at = 0;
  for (int k = 0; k < p->n;) {
    const ppcc_value *v = &g->values[p->e[k].value];
    const void *data = NULL;
    void *owned = NULL;
    ppcc_status st = ppcc_weights_get(w, v, &data, &owned, d);
    if (st) return st;
    bool ok = true;
    for (; k < p->n && &g->values[p->e[k].value] == v && ok; k++) {
      const shard_entry *e = &p->e[k];
      if (irpa) ok = write_zeros(f, e->offset - at);
      ok = ok && write_shard(f, v, e->shard, data, e->bytes);
      at = e->offset + e->bytes;
    }
    if (owned)
      rt_free(owned);
    else
      rt_release_pages(data, ppcc_value_bytes(v)); /* mapped: drop this tensor's pages */
    if (!ok) return ppcc_error(d, "%s: cannot write the archive", out_path);
  }
  return PPCC_OK;
}

ppcc_status ppcc_shard_weights(const ppcc_graph *g, const char *weights_path, const char *out_path, ppcc_diag *d) {
  size_t n = strlen(out_path);
  bool irpa = n >= 5 && strcmp(out_path + n - 5, ".irpa") == 0;
  bool safetensors = n >= 12 && strcmp(out_path + n - 12, ".safetensors") == 0;
  if (!irpa && !safetensors)
    return ppcc_error(d, "%s: the archive must be named .irpa or .safetensors", out_path);
  for (int v = 0; v < g->n_values; v++) /* archives hold element dtypes (safetensors has no block formats) */
    if (g->values[v].kind == PPCC_VALUE_PARAM && ppcc_dtype_is_quantized(g->values[v].dtype))
      return ppcc_error(d, "param '%s' is %s (block-quantized): sharded archives hold f32, f16 or bf16 params "
                           "(import with --dtype f32 to dequantize it)",
                        g->values[v].name, ppcc_dtype_name(g->values[v].dtype));
  shard_plan plan = {0};
  bytes_buf header = {0};
  ppcc_outfile out = {0};
  ppcc_weights *w = NULL;
  ppcc_status st = plan_entries(g, irpa, &plan, d);
  if (!st) {
    if (irpa)
      irpa_header(&plan, &header);
    else
      safetensors_header(g, &plan, &header);
    if (header.oom) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  if (!st) {
    w = ppcc_weights_open(weights_path, d);
    if (!w) st = d->errors ? PPCC_ERR_USER : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  bool opened = !st && (st = ppcc_outfile_open(&out, out_path, d)) == PPCC_OK;
  if (!st && fwrite(header.data, 1, header.len, out.fp) != header.len)
    st = ppcc_error(d, "%s: cannot write the archive", out_path);
  if (!st) st = write_data(g, &plan, irpa, w, out.fp, out_path, d);
  if (!st)
    st = ppcc_outfile_commit(&out, d);
  else if (opened)
    ppcc_outfile_abort(&out);
  ppcc_weights_close(w);
  free(header.data);
  free(plan.e);
  return st;
}
