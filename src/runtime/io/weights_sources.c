/* Parameter sources beyond one .safetensors/.irpa file (issue 13):
 *
 * - a Hugging Face checkpoint directory: DIR/model.safetensors, or the
 *   shard files named by DIR/model.safetensors.index.json ("weight_map":
 *   tensor -> file), each mapped and indexed by the safetensors reader;
 *   a tensor is read from the file the index names for it;
 * - a GGUF file (gguf.c): tensors are dequantized to a float dtype at
 *   load, or kept in their block format (or f16/bf16) when the graph
 *   declares it (a view of the mapping: the quantized and half kernels
 *   compute with the stored bytes).
 *   llama.cpp stores attn_q/attn_k rows in interleaved-rotary order (its
 *   converter permutes HF's rows so pairs (2i, 2i+1) rotate together);
 *   ppcc's rotary op uses HF's rotate-half pairing, so this loader permutes
 *   those rows back: stored row h*D + 2i + j is HF row h*D + j*D/2 + i,
 *   with D = rows / heads and heads from llama.attention.head_count(_kv).
 *
 * Float tensors whose dtype differs from the graph's (bf16 or f16 weights
 * in an f32 graph, f32 in a bf16 graph...) are converted once here.
 *
 * A param named NAME#T or NAME#a:b (or NAME#T#a:b) is a view of the source
 * tensor NAME, cut at load: #T transposes a 2-D tensor (GPT-2's Conv1D
 * weights are stored [in, out]), #a:b keeps rows a..b-1 of dim 0 (one of
 * the parts of a fused qkv or gate_up tensor), so the graph sees separate
 * q/k/v or gate/up params that split over devices like any other. */
#include <cjson/cJSON.h>
#include "ppcc/json_strict.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io.h"
#include "weights.h"
#include "weights_sources.h"
#include "ppcc/io.h"

typedef struct hf_shard {
  char *file;            /* name inside the directory */
  rt_weight_index index; /* mapped and indexed */
} hf_shard;

struct rt_source {
  char *path;
  /* HF directory */
  hf_shard *shards;
  int n_shards;
  cJSON *weight_map;     /* tensor -> file, NULL for a single file */
  char *index_path;
  /* GGUF */
  bool is_gguf;
  rt_gguf gguf;
};

static ppcc_status oom(ppcc_diag *d) { return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"); }

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

bool rt_source_handles(const char *path) {
  if (ppcc_is_dir(path)) return true;
  struct stat st; /* only a regular file is opened: a FIFO would block open() */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char magic[4] = {0};
  bool gguf = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
  fclose(f);
  return gguf;
}

void rt_source_close(rt_source *s) {
  if (!s) return;
  for (int i = 0; i < s->n_shards; i++) {
    free(s->shards[i].file);
    rt_weight_index_free(&s->shards[i].index);
  }
  free(s->shards);
  cJSON_Delete(s->weight_map);
  free(s->index_path);
  if (s->is_gguf) rt_gguf_close(&s->gguf);
  free(s->path);
  free(s);
}

/* Maps DIR/file and indexes it (a shard of the checkpoint). */
static ppcc_status add_shard(rt_source *s, const char *file, const char *first_tensor, ppcc_diag *d) {
  for (int i = 0; i < s->n_shards; i++)
    if (strcmp(s->shards[i].file, file) == 0) return PPCC_OK;
  if (!*file || strchr(file, '/') || strcmp(file, "..") == 0 || strcmp(file, ".") == 0)
    return ppcc_error(d, "%s: tensor '%s': shard file name '%s' must be a plain file name in the directory",
                      s->index_path, first_tensor, file);
  char *full = ppcc_path_join(s->path, file);
  if (!full) return oom(d);
  if (s->index_path && !exists(full)) {
    ppcc_status st = ppcc_error(d, "%s: shard file '%s' (holding tensor '%s') is absent", s->index_path, full, first_tensor);
    free(full);
    return st;
  }
  hf_shard *grown = realloc(s->shards, sizeof *grown * (size_t)(s->n_shards + 1));
  if (!grown) {
    free(full);
    return oom(d);
  }
  s->shards = grown;
  hf_shard *sh = &s->shards[s->n_shards];
  memset(sh, 0, sizeof *sh);
  sh->file = strdup(file);
  if (!sh->file) {
    free(full);
    return oom(d);
  }
  s->n_shards++;
  ppcc_status st = rt_map_file(full, &sh->index.file, d);
  free(full);
  return st ? st : rt_safetensors_index(&sh->index, d);
}

static ppcc_status open_hf_dir(rt_source *s, ppcc_diag *d) {
  s->index_path = ppcc_path_join(s->path, "model.safetensors.index.json");
  if (!s->index_path) return oom(d);
  if (!exists(s->index_path)) {
    free(s->index_path);
    s->index_path = NULL;
    char *single = ppcc_path_join(s->path, "model.safetensors");
    if (!single) return oom(d);
    bool have = exists(single);
    free(single);
    if (!have)
      return ppcc_error(d, "%s: neither model.safetensors nor model.safetensors.index.json is in the directory",
                        s->path);
    return add_shard(s, "model.safetensors", "(all)", d);
  }
  size_t len = 0;
  char *text = ppcc_read_file(s->index_path, &len, d);
  if (!text) return PPCC_ERR_USER;
  cJSON *root = NULL; /* written by Python: last key wins; a NUL in a shard name is refused */
  ppcc_status parsed = ppcc_json_parse_strict(s->index_path, text, len, PPCC_JSON_LAST_WINS, &root, d);
  free(text);
  if (parsed) return parsed;
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!cJSON_IsObject(map)) {
    cJSON_Delete(root);
    return ppcc_error(d, "%s: key 'weight_map': missing or not an object", s->index_path);
  }
  s->weight_map = cJSON_DetachItemViaPointer(root, (cJSON *)map);
  cJSON_Delete(root);
  for (const cJSON *e = s->weight_map->child; e; e = e->next) {
    if (!cJSON_IsString(e)) return ppcc_error(d, "%s: tensor '%s': the file name must be a string", s->index_path, e->string);
    ppcc_status st = add_shard(s, e->valuestring, e->string, d);
    if (st) return st;
  }
  return PPCC_OK;
}

rt_source *rt_source_open(const char *path, ppcc_diag *d) {
  rt_source *s = calloc(1, sizeof *s);
  if (!s || !(s->path = strdup(path))) {
    free(s);
    oom(d);
    return NULL;
  }
  ppcc_status st;
  if (ppcc_is_dir(path)) {
    st = open_hf_dir(s, d);
  } else {
    s->is_gguf = true;
    st = rt_gguf_open(path, &s->gguf, d);
    if (st) s->is_gguf = false; /* rt_gguf_open freed it */
  }
  if (st) {
    rt_source_close(s);
    return NULL;
  }
  return s;
}

/* ---------------- fetching a param ---------------- */

static ppcc_status shape_error(const char *file, const ppcc_value *p, int rank, const int64_t *shape, ppcc_diag *d) {
  char got[128], want[128];
  rt_shape_str(rank, shape, got, sizeof got);
  rt_shape_str(p->rank, p->shape, want, sizeof want);
  return ppcc_error(d, "%s: tensor '%s' has shape %s but the graph declares %s", file, p->name, got, want);
}

/* src (count elements of from) as the param's dtype, in a new buffer,
 * a slice at a time through f32: a whole-tensor f32 temporary, freed per
 * tensor, stayed in the heap as holes the next tensor's buffers did not
 * fit (an 8-layer bf16 checkpoint at --dtype f32: 240 MiB more peak RSS
 * than its 423 MiB of converted weights). */
static ppcc_status convert(const void *src, ppcc_dtype from, const ppcc_value *p, const void **data, void **owned,
                           ppcc_diag *d) {
  int64_t n = ppcc_num_elements(p->rank, p->shape), in_size = ppcc_dtype_size(from), out_size = ppcc_dtype_size(p->dtype);
  char *out = rt_alloc(n * out_size);
  if (!out) return oom(d);
  if (from == PPCC_F32) rt_from_f32(p->dtype, src, out, n);
  else if (p->dtype == PPCC_F32) rt_to_f32(from, src, (float *)out, n);
  else {
    enum { SLICE = 4096 };
    float f[SLICE];
    for (int64_t k = 0; k < n; k += SLICE) {
      int64_t m = n - k < SLICE ? n - k : SLICE;
      rt_to_f32(from, (const char *)src + k * in_size, f, m);
      rt_from_f32(p->dtype, f, out + k * out_size, m);
    }
  }
  *data = *owned = out;
  return PPCC_OK;
}

/* The shard file that holds tensor name (weight_map's, or the one file),
 * NULL when weight_map does not name it. */
static const hf_shard *hf_shard_of(const rt_source *s, const char *name) {
  if (!s->weight_map) return &s->shards[0];
  const cJSON *file = cJSON_GetObjectItemCaseSensitive(s->weight_map, name);
  if (!cJSON_IsString(file)) return NULL;
  for (int i = 0; i < s->n_shards; i++)
    if (strcmp(s->shards[i].file, file->valuestring) == 0) return &s->shards[i];
  return &s->shards[0];
}

static const rt_weight_entry *hf_entry(const hf_shard *sh, const char *name) {
  for (int i = 0; i < sh->index.n; i++)
    if (strcmp(sh->index.entries[i].name, name) == 0) return &sh->index.entries[i];
  return NULL;
}

static ppcc_status get_hf(rt_source *s, const ppcc_value *p, const void **data, void **owned, ppcc_diag *d) {
  const hf_shard *sh = hf_shard_of(s, p->name);
  if (!sh)
    return ppcc_error(d, "%s: tensor '%s' (a parameter of the graph) is missing from weight_map", s->index_path, p->name);
  const char *where = sh->index.file.path;
  const rt_weight_entry *e = hf_entry(sh, p->name);
  if (!e) return ppcc_error(d, "%s: tensor '%s' (a parameter of the graph) is missing", where, p->name);
  if (e->rank != p->rank || memcmp(e->shape, p->shape, sizeof(int64_t) * (size_t)p->rank) != 0)
    return shape_error(where, p, e->rank, e->shape, d);
  if (e->dtype == p->dtype) {
    *data = e->data;
    return PPCC_OK;
  }
  if (!ppcc_dtype_is_float(e->dtype) || !ppcc_dtype_is_float(p->dtype))
    return ppcc_error(d, "%s: tensor '%s' is %s but the graph declares %s", where, p->name, ppcc_dtype_name(e->dtype),
                      ppcc_dtype_name(p->dtype));
  ppcc_status st = convert(e->data, e->dtype, p, data, owned, d);
  /* the converted copy is what runs: the stored bytes (a read-only file
   * mapping, read again if touched) are not resident beside it */
  if (!st) rt_release_pages(e->data, (int64_t)e->bytes);
  return st;
}

/* Heads of a permuted q/k tensor, 0 when the name is not one. */
static long qk_heads(const rt_gguf *g, const char *name) {
  const char *dot = strrchr(name, '.');
  size_t n = strlen(name);
  if (strncmp(name, "blk.", 4) != 0 || !dot || strcmp(dot, ".weight") != 0 || n < 14) return 0;
  const char *key = NULL;
  if (strcmp(name + n - 14, ".attn_q.weight") == 0) key = "llama.attention.head_count";
  else if (strcmp(name + n - 14, ".attn_k.weight") == 0) key = "llama.attention.head_count_kv";
  if (!key) return 0;
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  if (!kv && strcmp(key, "llama.attention.head_count_kv") == 0) kv = rt_gguf_find_kv(g, "llama.attention.head_count");
  return kv && kv->number >= 1 && kv->number < 1e6 ? (long)kv->number : 0;
}

/* A quantized (or f16/bf16) param as stored: a view of the mapped file
 * (q/k rows permuted back in a copy, whole rows of blocks). Every block's
 * scales are checked finite here, as the decoder would. */
static ppcc_status get_gguf_blocks(rt_source *s, const rt_gguf_tensor *t, const ppcc_value *p, int64_t rows, long heads,
                                   const void **data, void **owned, ppcc_diag *d) {
  const ppcc_block_format *f = ppcc_block_format_named(ppcc_dtype_name(p->dtype));
  if (t->format != f)
    return ppcc_error(d, "%s: tensor '%s' is %s but the graph declares %s", s->path, p->name,
                      ppcc_ggml_type_name((int)t->type) ? ppcc_ggml_type_name((int)t->type) : "?", ppcc_dtype_name(p->dtype));
  int64_t bytes = ppcc_value_bytes(p), blocks = f->bytes ? bytes / f->bytes : 0;
  if (bytes < 0 || (uint64_t)bytes != t->bytes)
    return ppcc_error(d, "%s: tensor '%s' has %llu bytes but the graph's %s needs %lld", s->path, p->name,
                      (unsigned long long)t->bytes, f->name, (long long)bytes);
  for (int64_t b = 0; b < blocks; b++)
    for (int k = 0; k < 3 && f->scale_at[k] >= 0; k++) {
      const unsigned char *h = t->data + b * f->bytes + f->scale_at[k];
      if ((h[1] & 0x7c) == 0x7c)
        return ppcc_error(d, "%s: tensor '%s' (%s): block %lld has a NaN or infinite scale", s->path, p->name,
                          f->gguf_name, (long long)b);
    }
  if (heads == 0) {
    *data = t->data; /* used in place from the mapping */
    return PPCC_OK;
  }
  if (rows % heads != 0 || (rows / heads) % 2 != 0)
    return ppcc_error(d, "%s: tensor '%s': %lld rows do not split into %ld heads of even size", s->path, p->name,
                      (long long)rows, heads);
  unsigned char *u = rt_alloc(bytes);
  if (!u) return oom(d);
  int64_t row = bytes / rows, D = rows / heads, half = D / 2;
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < half; i++)
      for (int64_t j = 0; j < 2; j++)
        memcpy(u + (h * D + j * half + i) * row, t->data + (h * D + 2 * i + j) * row, (size_t)row);
  rt_release_pages(t->data, bytes); /* the mapped rows are not read again: not resident twice */
  *data = *owned = u;
  return PPCC_OK;
}

static ppcc_status get_gguf(rt_source *s, const ppcc_value *p, const void **data, void **owned, ppcc_diag *d) {
  const rt_gguf_tensor *t = rt_gguf_find_tensor(&s->gguf, p->name);
  if (!t) return ppcc_error(d, "%s: tensor '%s' (a parameter of the graph) is missing", s->path, p->name);
  int64_t shape[4];
  for (int k = 0; k < t->n_dims; k++) shape[k] = t->ne[t->n_dims - 1 - k];
  if (t->n_dims != p->rank || memcmp(shape, p->shape, sizeof(int64_t) * (size_t)p->rank) != 0)
    return shape_error(s->path, p, t->n_dims, shape, d);
  int64_t n = ppcc_num_elements(p->rank, p->shape), cols = t->ne[0], rows = cols ? n / cols : 0;
  long heads = p->rank == 2 ? qk_heads(&s->gguf, p->name) : 0;
  bool half_as_stored = (p->dtype == PPCC_F16 || p->dtype == PPCC_BF16) && t->format &&
                        strcmp(t->format->name, ppcc_dtype_name(p->dtype)) == 0;
  if (ppcc_dtype_is_quantized(p->dtype) || half_as_stored) return get_gguf_blocks(s, t, p, rows, heads, data, owned, d);
  if (!ppcc_dtype_is_float(p->dtype))
    return ppcc_error(d, "%s: tensor '%s': the graph declares %s, GGUF tensors are floats or blocks", s->path, p->name,
                      ppcc_dtype_name(p->dtype));
  if (t->type == 0 /* GGML F32 */ && p->dtype == PPCC_F32 && heads == 0 && t->bytes == (uint64_t)n * 4 &&
      (uintptr_t)t->data % 4 == 0) {
    *data = t->data; /* f32 as the graph computes: used in place from the mapping */
    return PPCC_OK;
  }
  if (heads > 0 && (rows % heads != 0 || (rows / heads) % 2 != 0))
    return ppcc_error(d, "%s: tensor '%s': %lld rows do not split into %ld heads of even size", s->path, p->name,
                      (long long)rows, heads);
  /* decoded straight into the result; in another dtype than f32, a row at
   * a time through f32 (a whole-tensor f32 temporary, freed per tensor,
   * stayed in the heap: a Q4_0 model at --dtype bf16 peaked 28 % above
   * its plan) */
  int64_t out_size = ppcc_dtype_size(p->dtype);
  char *out = rt_alloc(n * out_size);
  float *row = p->dtype == PPCC_F32 ? NULL : rt_alloc(cols * 4);
  if (!out || (p->dtype != PPCC_F32 && !row)) {
    rt_free(out);
    rt_free(row);
    return oom(d);
  }
  /* q/k: each stored row decoded straight into its HF place (no copy in
   * stored order: a freed one stayed in the heap, tens of MiB) */
  int64_t D = heads > 0 ? rows / heads : 1, half = D / 2;
  ppcc_status dq = PPCC_OK;
  if (heads == 0 && !row) dq = rt_gguf_dequantize_rows(s->path, t, 0, rows, (float *)(void *)out, d);
  for (int64_t r = 0; (heads > 0 || row) && r < rows && !dq; r++) {
    int64_t to = heads > 0 ? r / D * D + r % 2 * half + r % D / 2 : r;
    dq = rt_gguf_dequantize_rows(s->path, t, r, 1, row ? row : (float *)(void *)out + to * cols, d);
    if (!dq && row) rt_from_f32(p->dtype, row, out + to * cols * out_size, cols);
  }
  rt_free(row);
  if (dq) {
    rt_free(out);
    return dq;
  }
  rt_release_pages(t->data, (int64_t)t->bytes); /* the copy is what runs: the stored bytes are not resident twice */
  *data = *owned = out;
  return PPCC_OK;
}

/* ---------------- views: NAME#T, NAME#a:b ---------------- */

typedef struct view {
  char base[PPCC_MAX_NAME + 1];
  bool transposed;
  long start, end; /* rows; end 0: all */
} view;

/* True when name is a view; false for a plain name or a malformed suffix
 * (then the name is looked up as it is and reported missing). */
static bool parse_view(const char *name, view *v) {
  memset(v, 0, sizeof *v);
  const char *hash = strchr(name, '#');
  if (!hash || (size_t)(hash - name) > PPCC_MAX_NAME) return false;
  memcpy(v->base, name, (size_t)(hash - name));
  const char *rest = hash + 1;
  if (strncmp(rest, "T", 1) == 0 && (rest[1] == 0 || rest[1] == '#')) {
    v->transposed = true;
    rest += rest[1] ? 2 : 1;
  }
  if (*rest) {
    char *end = NULL;
    v->start = strtol(rest, &end, 10);
    if (*end != ':') return false;
    v->end = strtol(end + 1, &end, 10);
    if (*end || v->start < 0 || v->end <= v->start) return false;
  }
  return true;
}

/* The source's shape of tensor name (rank 0 when it has none). */
static int source_shape(rt_source *s, const char *name, int64_t *shape) {
  if (s->is_gguf) {
    const rt_gguf_tensor *t = rt_gguf_find_tensor(&s->gguf, name);
    if (!t || t->n_dims > PPCC_MAX_RANK) return 0;
    for (int k = 0; k < t->n_dims; k++) shape[k] = t->ne[t->n_dims - 1 - k];
    return t->n_dims;
  }
  for (int i = 0; i < s->n_shards; i++)
    for (int j = 0; j < s->shards[i].index.n; j++) {
      const rt_weight_entry *e = &s->shards[i].index.entries[j];
      if (strcmp(e->name, name) == 0 && e->rank <= PPCC_MAX_RANK) {
        memcpy(shape, e->shape, sizeof(int64_t) * (size_t)e->rank);
        return e->rank;
      }
    }
  return 0;
}

static ppcc_status get_whole(rt_source *s, const ppcc_value *p, const void **data, void **owned, ppcc_diag *d) {
  return s->is_gguf ? get_gguf(s, p, data, owned, d) : get_hf(s, p, data, owned, d);
}

static ppcc_status get_view(rt_source *s, const ppcc_value *p, const view *v, const void **data, void **owned,
                            ppcc_diag *d) {
  ppcc_value base = *p;
  base.name = v->base;
  base.rank = source_shape(s, v->base, base.shape);
  if (base.rank == 0) return ppcc_error(d, "%s: tensor '%s' (viewed by param '%s') is missing", s->path, v->base, p->name);
  if ((v->transposed && base.rank != 2) || base.rank > 2)
    return ppcc_error(d, "%s: tensor '%s': param '%s' views only 1-D or 2-D tensors (and transposes 2-D ones)", s->path,
                      v->base, p->name);
  int64_t rows = v->transposed ? base.shape[1] : base.shape[0], cols = base.rank == 2 ? base.shape[v->transposed ? 0 : 1] : 1;
  int64_t start = v->start, end = v->end ? v->end : rows;
  int64_t want[2] = {end - start, cols};
  if (end > rows || p->rank != base.rank || memcmp(p->shape, want, sizeof(int64_t) * (size_t)p->rank) != 0) {
    char got[128], decl[128];
    rt_shape_str(base.rank, base.shape, got, sizeof got);
    rt_shape_str(p->rank, p->shape, decl, sizeof decl);
    return ppcc_error(d, "%s: tensor '%s' has shape %s, which param '%s' cannot view as %s", s->path, v->base, got,
                      p->name, decl);
  }
  const void *whole = NULL;
  void *whole_owned = NULL;
  ppcc_status st = get_whole(s, &base, &whole, &whole_owned, d);
  if (st) return st;
  size_t es = (size_t)ppcc_dtype_size(p->dtype);
  char *out = rt_alloc((end - start) * cols * (int64_t)es);
  if (!out) {
    rt_free(whole_owned);
    return oom(d);
  }
  const char *in = whole;
  for (int64_t r = start; r < end; r++)
    for (int64_t c = 0; c < cols; c++) { /* transposed: element (r, c) is the stored (c, r) */
      int64_t from = v->transposed ? c * rows + r : r * cols + c;
      memcpy(out + ((r - start) * cols + c) * es, in + from * (int64_t)es, es);
    }
  rt_free(whole_owned);
  *data = *owned = out;
  return PPCC_OK;
}

ppcc_status rt_source_get(rt_source *s, const ppcc_value *p, const void **data, void **owned, ppcc_diag *d) {
  *data = NULL;
  *owned = NULL;
  view v;
  if (parse_view(p->name, &v)) return get_view(s, p, &v, data, owned, d);
  return get_whole(s, p, data, owned, d);
}

const char *rt_source_tensor_dtype(const char *path, const char *tensor, void **state) {
  rt_source *s = *state;
  if (!tensor) {
    rt_source_close(s);
    *state = NULL;
    return NULL;
  }
  if (!s) {
    ppcc_diag quiet;
    ppcc_diag_init(&quiet, path, NULL);
    if (!rt_source_handles(path) || !(s = rt_source_open(path, &quiet))) return NULL;
    *state = s;
  }
  char base[PPCC_MAX_NAME + 1];
  size_t n = strcspn(tensor, "#"); /* a view NAME#...: the dtype of NAME */
  if (n > PPCC_MAX_NAME) return NULL;
  memcpy(base, tensor, n);
  base[n] = 0;
  if (s->is_gguf) {
    const rt_gguf_tensor *t = rt_gguf_find_tensor(&s->gguf, base);
    return t && t->format ? t->format->name : NULL;
  }
  const hf_shard *sh = hf_shard_of(s, base);
  const rt_weight_entry *e = sh ? hf_entry(sh, base) : NULL;
  return e && e->has_type ? ppcc_dtype_name(e->dtype) : NULL;
}
