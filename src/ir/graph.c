#include "ppcc/graph.h"
#include "ppcc/quant.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */
struct ppcc_arena_block {
  ppcc_arena_block *next;
  size_t used, cap;
  _Alignas(max_align_t) unsigned char data[];
};

void *ppcc_alloc(ppcc_graph *g, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (bytes == 0) bytes = 16;
  ppcc_arena_block *b = g->arena;
  if (!b || b->cap - b->used < bytes) {
    size_t cap = bytes > 65536 ? bytes : 65536;
    b = calloc(1, sizeof *b + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->next = g->arena;
    g->arena = b;
  }
  void *p = b->data + b->used;
  b->used += bytes;
  return p;
}

char *ppcc_strdup(ppcc_graph *g, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ppcc_alloc(g, n);
  if (p) memcpy(p, s, n);
  return p;
}

int *ppcc_dup_ints(ppcc_graph *g, const int *v, int n) {
  int *p = ppcc_alloc(g, sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (p && n > 0) memcpy(p, v, sizeof(int) * (size_t)n);
  return p;
}

/* ---- name map: open addressing, name -> value index ----
 * Slots keep the hash beside the index so a probe rarely has to chase the
 * name (a cache miss per value on 100k-op graphs). */
typedef struct {
  uint32_t hash;
  int value; /* -1: empty */
} name_slot;

struct ppcc_name_map {
  size_t cap, count;
  name_slot *slots;
};

static uint32_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (uint32_t)(h ^ (h >> 32));
}

static bool map_grow(ppcc_graph *g) {
  struct ppcc_name_map *m = g->names;
  size_t cap = m->cap ? m->cap * 2 : 64;
  name_slot *slots = malloc(sizeof *slots * cap);
  if (!slots) return false;
  for (size_t i = 0; i < cap; i++) slots[i].value = -1;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slots[i].value < 0) continue;
    size_t h = m->slots[i].hash & (cap - 1);
    while (slots[h].value >= 0) h = (h + 1) & (cap - 1);
    slots[h] = m->slots[i];
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return true;
}

/* The slot holding name, or the empty slot where it would go. */
static size_t map_probe(const ppcc_graph *g, const char *name, uint32_t hash) {
  const struct ppcc_name_map *m = g->names;
  size_t h = hash & (m->cap - 1);
  for (; m->slots[h].value >= 0; h = (h + 1) & (m->cap - 1))
    if (m->slots[h].hash == hash && strcmp(g->values[m->slots[h].value].name, name) == 0) break;
  return h;
}

int ppcc_find_value(const ppcc_graph *g, const char *name) {
  if (!g->names->cap) return -1;
  return g->names->slots[map_probe(g, name, hash_str(name))].value;
}

int ppcc_state_update_output(const ppcc_graph *g, int v) {
  int reader = -1;
  for (int j = 0; j < g->n_ops; j++)
    for (int i = 0; i < g->ops[j].n_in; i++) {
      if (g->ops[j].in[i] != v) continue;
      if (reader >= 0) return -1;
      reader = j;
    }
  if (reader < 0 || g->ops[reader].n_out != 1) return -1;
  int w = g->ops[reader].out[0], k = -1;
  for (int o = 0; o < g->n_outputs; o++) {
    if (g->outputs[o] == v) return -1;
    if (g->outputs[o] != w) continue;
    if (k >= 0) return -1;
    k = o;
  }
  return k;
}

ppcc_graph *ppcc_graph_new(const char *name, int n_devices) {
  ppcc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->names = calloc(1, sizeof *g->names);
  if (!g->names) {
    free(g);
    return NULL;
  }
  g->name = ppcc_strdup(g, name ? name : "model");
  g->n_devices = n_devices;
  return g;
}

void ppcc_graph_free(ppcc_graph *g) {
  if (!g) return;
  for (ppcc_arena_block *b = g->arena; b;) {
    ppcc_arena_block *n = b->next;
    free(b);
    b = n;
  }
  free(g->values);
  free(g->ops);
  if (g->names) free(g->names->slots);
  free(g->names);
  free(g);
}

int ppcc_add_value(ppcc_graph *g, const char *name, ppcc_value_kind kind,
                   ppcc_dtype dtype, int rank, const int64_t *shape) {
  if (rank < 0 || rank > PPCC_MAX_RANK) return -1;
  struct ppcc_name_map *m = g->names;
  if ((m->count + 1) * 2 > m->cap && !map_grow(g)) return -1;
  uint32_t hash = hash_str(name);
  size_t slot = map_probe(g, name, hash);
  if (m->slots[slot].value >= 0) return -1; /* the name exists */
  if (g->n_values == g->cap_values) {
    int cap = g->cap_values ? g->cap_values * 2 : 64;
    ppcc_value *v = realloc(g->values, sizeof *v * (size_t)cap);
    if (!v) return -1;
    g->values = v;
    g->cap_values = cap;
  }
  int idx = g->n_values;
  ppcc_value *v = &g->values[idx];
  memset(v, 0, sizeof *v);
  v->name = ppcc_strdup(g, name);
  if (!v->name) return -1;
  v->kind = kind;
  v->dtype = dtype;
  v->rank = rank;
  for (int i = 0; i < rank; i++) v->shape[i] = shape[i];
  v->layout = ppcc_layout_unsharded();
  v->def_op = -1;
  g->n_values++;
  m->slots[slot] = (name_slot){hash, idx};
  m->count++;
  return idx;
}

int ppcc_add_op(ppcc_graph *g, const struct ppcc_op_info *info, int n_in,
                const int *in, int n_out, const int *out, int n_attrs,
                const ppcc_attr *attrs) {
  if (g->n_ops >= PPCC_MAX_OPS) return -1; /* the frontend reports it; API users get -1 */
  if (g->n_ops == g->cap_ops) {
    int cap = g->cap_ops ? g->cap_ops * 2 : 64;
    ppcc_op *o = realloc(g->ops, sizeof *o * (size_t)cap);
    if (!o) return -1;
    g->ops = o;
    g->cap_ops = cap;
  }
  ppcc_op *op = &g->ops[g->n_ops];
  memset(op, 0, sizeof *op);
  op->info = info;
  op->n_in = n_in;
  op->n_out = n_out;
  op->n_attrs = n_attrs;
  op->in = ppcc_dup_ints(g, in, n_in);
  op->out = ppcc_dup_ints(g, out, n_out);
  op->src_index = g->n_ops;
  if (n_attrs > 0) {
    op->attrs = ppcc_alloc(g, sizeof(ppcc_attr) * (size_t)n_attrs);
    if (!op->attrs) return -1;
    memcpy(op->attrs, attrs, sizeof(ppcc_attr) * (size_t)n_attrs);
  }
  if (!op->in || !op->out) return -1;
  return g->n_ops++;
}

void ppcc_graph_set_ops(ppcc_graph *g, ppcc_op *ops, int n_ops, int cap_ops) {
  free(g->ops);
  g->ops = ops;
  g->n_ops = n_ops;
  g->cap_ops = cap_ops;
}

const ppcc_attr *ppcc_op_attr(const ppcc_op *op, const char *name) {
  for (int i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
  return NULL;
}

int64_t ppcc_attr_int(const ppcc_op *op, const char *name, int64_t dflt) {
  const ppcc_attr *a = ppcc_op_attr(op, name);
  return a && (a->type == PPCC_ATTR_INT || a->type == PPCC_ATTR_BOOL) ? a->i : dflt;
}

bool ppcc_attr_bool(const ppcc_op *op, const char *name, bool dflt) {
  const ppcc_attr *a = ppcc_op_attr(op, name);
  return a && a->type == PPCC_ATTR_BOOL ? a->i != 0 : dflt;
}

double ppcc_attr_float(const ppcc_op *op, const char *name, double dflt) {
  const ppcc_attr *a = ppcc_op_attr(op, name);
  if (!a) return dflt;
  if (a->type == PPCC_ATTR_FLOAT) return a->f;
  if (a->type == PPCC_ATTR_INT) return (double)a->i;
  return dflt;
}

const double *ppcc_attr_floats(const ppcc_op *op, const char *name, int *n) {
  const ppcc_attr *a = ppcc_op_attr(op, name);
  bool ok = a && a->type == PPCC_ATTR_FLOATS;
  *n = ok ? a->n : 0;
  return ok ? a->floats : NULL;
}

/* ---- dtypes and layouts ---- */
static const struct { const char *name; int size; bool is_float; } dtypes[] = {
  [PPCC_F32] = {"f32", 4, true},  [PPCC_F16] = {"f16", 2, true},
  [PPCC_BF16] = {"bf16", 2, true}, [PPCC_I64] = {"i64", 8, false},
  [PPCC_I32] = {"i32", 4, false},  [PPCC_I8] = {"i8", 1, false},
  [PPCC_BOOL] = {"bool", 1, false},
  /* block-quantized: size 0, block length and bytes in quant.c's table */
  [PPCC_Q8_0] = {"q8_0", 0, false}, [PPCC_Q4_0] = {"q4_0", 0, false}, [PPCC_Q4_1] = {"q4_1", 0, false},
  [PPCC_Q5_0] = {"q5_0", 0, false}, [PPCC_Q5_1] = {"q5_1", 0, false}, [PPCC_Q2_K] = {"q2_k", 0, false},
  [PPCC_Q3_K] = {"q3_k", 0, false}, [PPCC_Q4_K] = {"q4_k", 0, false}, [PPCC_Q5_K] = {"q5_k", 0, false},
  [PPCC_Q6_K] = {"q6_k", 0, false},
};

const char *ppcc_dtype_name(ppcc_dtype t) {
  return (unsigned)t < PPCC_DTYPE_COUNT ? dtypes[t].name : "?";
}
int ppcc_dtype_size(ppcc_dtype t) {
  return (unsigned)t < PPCC_DTYPE_COUNT ? dtypes[t].size : 0;
}
bool ppcc_dtype_is_float(ppcc_dtype t) {
  return (unsigned)t < PPCC_DTYPE_COUNT && dtypes[t].is_float;
}
bool ppcc_dtype_is_quantized(ppcc_dtype t) {
  return (unsigned)t < PPCC_DTYPE_COUNT && dtypes[t].size == 0;
}
bool ppcc_dtype_is_stored_half(ppcc_dtype w, ppcc_dtype x) {
  return (w == PPCC_F16 || w == PPCC_BF16) && x == PPCC_F32;
}
const ppcc_block_format *ppcc_dtype_blocks(ppcc_dtype t) {
  return ppcc_dtype_is_quantized(t) ? ppcc_block_format_named(dtypes[t].name) : NULL;
}
int64_t ppcc_dtype_stored_bytes(ppcc_dtype t, int64_t rows, int64_t cols) {
  const ppcc_block_format *f = ppcc_dtype_blocks(t);
  int64_t per_row = f ? (cols + f->block - 1) / f->block * f->bytes : cols * ppcc_dtype_size(t);
  if (rows < 0 || cols < 0 || (per_row && rows > INT64_MAX / per_row)) return -1;
  return rows * per_row;
}
bool ppcc_split_cuts_blocks(const ppcc_value *v, int dim, int count) {
  const ppcc_block_format *f = ppcc_dtype_blocks(v->dtype);
  return f && count > 0 && dim == v->rank - 1 && (v->shape[dim] / count) % f->block != 0;
}
bool ppcc_dtype_from_name(const char *s, ppcc_dtype *out) {
  for (int i = 0; i < PPCC_DTYPE_COUNT; i++)
    if (strcmp(s, dtypes[i].name) == 0) {
      *out = (ppcc_dtype)i;
      return true;
    }
  return false;
}

const char *ppcc_layout_kind_name(ppcc_layout_kind k) {
  switch (k) {
  case PPCC_LAYOUT_UNSHARDED: return "none";
  case PPCC_LAYOUT_REPLICATED: return "replicated";
  case PPCC_LAYOUT_SPLIT: return "split";
  case PPCC_LAYOUT_UNREDUCED: return "unreduced";
  }
  return "?";
}

/* Text into a buffer of n bytes, cut as snprintf cuts it: reports and
 * passes format these once per op, where snprintf was a large share of
 * a million-op compile. */
typedef struct capped_text {
  char *buf;
  size_t n, off; /* off: characters written (at most n - 1) */
} capped_text;

static void capped_put(capped_text *t, const char *s, size_t len) {
  if (t->off + 1 >= t->n) return;
  size_t room = t->n - 1 - t->off;
  if (len > room) len = room;
  memcpy(t->buf + t->off, s, len);
  t->off += len;
  t->buf[t->off] = 0;
}

static void capped_int(capped_text *t, long long v) {
  char digits[24], *p = digits + sizeof digits;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  capped_put(t, p, (size_t)(digits + sizeof digits - p));
}

#define CAPPED_LIT(t, lit) capped_put((t), (lit), sizeof(lit) - 1)

void ppcc_layout_str(ppcc_layout l, char *buf, size_t n) {
  if (n == 0) return;
  capped_text t = {buf, n, 0};
  buf[0] = 0;
  switch (l.kind) {
  case PPCC_LAYOUT_UNSHARDED: CAPPED_LIT(&t, "unsharded"); break;
  case PPCC_LAYOUT_REPLICATED:
    CAPPED_LIT(&t, "replicated(");
    capped_int(&t, l.count);
    CAPPED_LIT(&t, ")");
    break;
  case PPCC_LAYOUT_SPLIT:
    CAPPED_LIT(&t, "split(dim=");
    capped_int(&t, l.dim);
    CAPPED_LIT(&t, ", ");
    capped_int(&t, l.count);
    CAPPED_LIT(&t, ")");
    break;
  case PPCC_LAYOUT_UNREDUCED:
    CAPPED_LIT(&t, "unreduced(");
    capped_int(&t, l.count);
    CAPPED_LIT(&t, ")");
    break;
  }
}

ppcc_layout ppcc_layout_unsharded(void) {
  return (ppcc_layout){PPCC_LAYOUT_UNSHARDED, -1, 1};
}

int64_t ppcc_num_elements(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] != 0 && n > PPCC_MAX_ELEMENTS / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

/* Stored bytes of a tensor: rows of its last dim (whole blocks). */
static int64_t shape_bytes(ppcc_dtype t, int rank, const int64_t *shape) {
  int64_t n = ppcc_num_elements(rank, shape);
  if (n < 0) return -1;
  int64_t cols = rank > 0 ? shape[rank - 1] : 1;
  return ppcc_dtype_stored_bytes(t, cols ? n / cols : 0, cols);
}

int64_t ppcc_value_bytes(const ppcc_value *v) { return shape_bytes(v->dtype, v->rank, v->shape); }

bool ppcc_param_shard_stored(const ppcc_value *v, int i) {
  return v->layout.count <= 1 || v->layout.kind != PPCC_LAYOUT_REPLICATED || i == 0;
}

/* sharktank: ShardedTensorBase names shard K "NAME.shard.K" and stores each
 * (split, unreduced); ReplicatedTensor stores only shard 0. */
bool ppcc_param_shard_entry(const ppcc_value *v, int i, char *buf, size_t n) {
  int len;
  if (v->layout.count <= 1)
    len = snprintf(buf, n, "%s", v->name);
  else
    len = snprintf(buf, n, "%s.shard.%d", v->name, ppcc_param_shard_stored(v, i) ? i : 0);
  return len >= 0 && (size_t)len < n;
}

void ppcc_value_shard_shape(const ppcc_value *v, int64_t *shape_out) {
  for (int i = 0; i < v->rank; i++) shape_out[i] = v->shape[i];
  if (v->layout.kind == PPCC_LAYOUT_SPLIT && v->layout.dim >= 0 &&
      v->layout.dim < v->rank && v->layout.count > 0)
    shape_out[v->layout.dim] /= v->layout.count;
}

int64_t ppcc_value_shard_bytes(const ppcc_value *v) {
  int64_t s[PPCC_MAX_RANK];
  ppcc_value_shard_shape(v, s);
  return shape_bytes(v->dtype, v->rank, s);
}

void ppcc_devices_str(const int *devices, int n, char *buf, size_t len) {
  if (len == 0) return;
  capped_text t = {buf, len, 0};
  buf[0] = 0;
  CAPPED_LIT(&t, "[");
  for (int i = 0; i < n && t.off + 1 < len; i++) {
    if (i) CAPPED_LIT(&t, ",");
    capped_int(&t, devices ? devices[i] : -1);
  }
  CAPPED_LIT(&t, "]");
}

bool ppcc_devices_equal(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}
