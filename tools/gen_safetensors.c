/* gen_safetensors: writes the parameters of a model with the values of
 * `ppcc run --random-weights SEED`, as a .safetensors file or (with
 * --irpa) an IREE parameter archive. Standalone (links ppcc_core only):
 * the generator is the header-only include/ppcc/random_fill.h.
 *
 *   gen_safetensors MODEL.json SEED OUT.safetensors
 *   gen_safetensors --irpa MODEL.json SEED OUT.irpa */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/frontend.h"
#include "ppcc/random_fill.h"

static const char *st_dtype(ppcc_dtype t) {
  static const char *names[] = {[PPCC_F32] = "F32", [PPCC_F16] = "F16", [PPCC_BF16] = "BF16", [PPCC_I64] = "I64",
                                [PPCC_I32] = "I32", [PPCC_I8] = "I8",   [PPCC_BOOL] = "BOOL"};
  return (unsigned)t < PPCC_DTYPE_COUNT ? names[t] : "?";
}

/* Params with their byte offsets, each padded to `align`. by_size: the
 * widest dtypes first and no padding, as the safetensors package lays
 * files out: the tensors tile the data section exactly (the format
 * requires it) and every tensor stays aligned to its element size. */
typedef struct param_list {
  int n;
  int *values;
  uint64_t *offsets;
  uint64_t total;
} param_list;

static bool list_params(const ppcc_graph *g, param_list *l, uint64_t align, bool by_size) {
  l->values = calloc((size_t)g->n_values + 1, sizeof(int));
  l->offsets = calloc((size_t)g->n_values + 1, sizeof(uint64_t));
  if (!l->values || !l->offsets) return false;
  for (int size = 8; size >= 1; size /= 2)
    for (int v = 0; v < g->n_values; v++) {
      if (g->values[v].kind != PPCC_VALUE_PARAM) continue;
      if (by_size ? ppcc_dtype_size(g->values[v].dtype) != size : size != 1) continue;
      l->values[l->n] = v;
      l->offsets[l->n++] = l->total;
      l->total += ((uint64_t)ppcc_value_bytes(&g->values[v]) + align - 1) / align * align;
    }
  return true;
}

/* One param, zero-padded to `padded` bytes. */
static bool write_param(FILE *f, const ppcc_value *p, uint64_t seed, uint64_t padded) {
  unsigned char *buf = calloc(1, (size_t)padded + 1);
  if (!buf) return false;
  ppcc_random_fill(seed, p->name, p->dtype, p->rank, p->shape, buf);
  bool ok = fwrite(buf, 1, (size_t)padded, f) == (size_t)padded;
  free(buf);
  return ok;
}

static bool write_data(FILE *f, const ppcc_graph *g, const param_list *l, uint64_t seed) {
  for (int i = 0; i < l->n; i++) {
    uint64_t end = i + 1 < l->n ? l->offsets[i + 1] : l->total;
    if (!write_param(f, &g->values[l->values[i]], seed, end - l->offsets[i])) return false;
  }
  return true;
}

static char *safetensors_header(const ppcc_graph *g, const param_list *l) {
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
  cJSON_AddStringToObject(meta, "generator", "ppcc gen_safetensors");
  for (int i = 0; i < l->n; i++) {
    const ppcc_value *p = &g->values[l->values[i]];
    cJSON *t = cJSON_AddObjectToObject(root, p->name);
    cJSON_AddStringToObject(t, "dtype", st_dtype(p->dtype));
    cJSON *shape = cJSON_AddArrayToObject(t, "shape");
    for (int k = 0; k < p->rank; k++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)p->shape[k]));
    cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)l->offsets[i]));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(l->offsets[i] + (uint64_t)ppcc_value_bytes(p))));
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static bool write_safetensors(FILE *f, const ppcc_graph *g, uint64_t seed) {
  param_list l = {0};
  bool ok = list_params(g, &l, 1, true);
  char *header = ok ? safetensors_header(g, &l) : NULL;
  if (header) {
    size_t len = strlen(header), padded = (len + 7) / 8 * 8; /* data 8-byte aligned */
    unsigned char n[8];
    put_le(n, padded, 8);
    ok = fwrite(n, 1, 8, f) == 8 && fwrite(header, 1, len, f) == len;
    for (size_t i = len; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    ok = ok && write_data(f, g, &l, seed);
  }
  free(header);
  free(l.values);
  free(l.offsets);
  return ok && header;
}

/* IRPA v0 (see src/runtime/io/irpa.c): header, entry table, names, data. */
static bool write_irpa(FILE *f, const ppcc_graph *g, uint64_t seed) {
  enum { HEADER = 88, ENTRY = 76, ENTRY_PADDED = 80, DATA_ALIGN = 64 };
  param_list l = {0};
  if (!list_params(g, &l, DATA_ALIGN, false)) return false;
  uint64_t entries_off = HEADER + 8 /* pad to 16 */, entries_len = (uint64_t)l.n * ENTRY_PADDED;
  uint64_t names_off = entries_off + entries_len, names_len = 0;
  for (int i = 0; i < l.n; i++) names_len += strlen(g->values[l.values[i]].name);
  uint64_t data_off = (names_off + names_len + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
  size_t head_size = (size_t)data_off;
  unsigned char *h = calloc(1, head_size);
  bool ok = h != NULL;
  if (ok) {
    put_le(h, 0x41505249u, 4); /* "IRPA", version 0.0 */
    put_le(h + 8, HEADER, 8);
    put_le(h + 32, (uint64_t)l.n, 8);
    put_le(h + 40, entries_off, 8), put_le(h + 48, entries_len, 8);
    put_le(h + 56, names_off, 8), put_le(h + 64, names_len, 8);
    put_le(h + 72, data_off, 8), put_le(h + 80, l.total, 8);
    uint64_t name_pos = 0;
    for (int i = 0; i < l.n; i++) {
      const ppcc_value *p = &g->values[l.values[i]];
      unsigned char *e = h + entries_off + (uint64_t)i * ENTRY_PADDED;
      size_t nl = strlen(p->name);
      put_le(e, ENTRY, 8);
      put_le(e + 8, 2, 4); /* DATA entry */
      put_le(e + 20, name_pos, 8), put_le(e + 28, nl, 8);
      put_le(e + 52, DATA_ALIGN, 8);
      put_le(e + 60, l.offsets[i], 8), put_le(e + 68, (uint64_t)ppcc_value_bytes(p), 8);
      memcpy(h + names_off + name_pos, p->name, nl);
      name_pos += nl;
    }
    ok = fwrite(h, 1, head_size, f) == head_size && write_data(f, g, &l, seed);
  }
  free(h);
  free(l.values);
  free(l.offsets);
  return ok;
}

int main(int argc, char **argv) {
  bool irpa = argc > 1 && strcmp(argv[1], "--irpa") == 0;
  if (argc != 4 + irpa) {
    fprintf(stderr, "usage: gen_safetensors [--irpa] MODEL.json SEED OUT\n");
    return 2;
  }
  const char *model = argv[1 + irpa], *out = argv[3 + irpa];
  char *end;
  errno = 0;
  unsigned long long seed = strtoull(argv[2 + irpa], &end, 10);
  if (errno || *end) {
    fprintf(stderr, "gen_safetensors: error: bad seed '%s'\n", argv[2 + irpa]);
    return 2;
  }
  ppcc_diag d;
  ppcc_diag_init(&d, model, stderr);
  ppcc_graph *g = ppcc_load_model_file(model, &d);
  if (!g) return 1;
  FILE *f = fopen(out, "wb");
  bool ok = f && (irpa ? write_irpa(f, g, seed) : write_safetensors(f, g, seed));
  if (f && fclose(f) != 0) ok = false;
  if (!ok) {
    fprintf(stderr, "%s: error: cannot write: %s\n", out, strerror(errno));
    remove(out);
  }
  ppcc_graph_free(g);
  return ok ? 0 : 1;
}
