/* model.json (DESIGN §3) -> ppcc_graph.
 *
 * Strict by design: unknown keys, wrong types and out-of-range numbers are
 * errors, each reported once as "PATH: MESSAGE (param 'w')" so a typo never
 * passes silently. The loader stops at the first error, frees everything it
 * built and returns NULL. Shapes of op results and all placements are left
 * to the passes. */
#include "ppcc/quant.h"
#include "ppcc/frontend.h"
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"
#include "ppcc/ops.h"

#define MAX_JSON_DEPTH 64
#define MAX_FILE_BYTES ((size_t)256 << 20)
/* Integers above 2^53 are not exact in a JSON double: refuse them. */
#define MAX_JSON_INT INT64_C(9007199254740992)
/* Bounds for the per-op stack arrays; the op table stays far below. */
#define MAX_OP_OPERANDS 16
#define MAX_OP_ATTRS 16

/* ---------------- diagnostics helpers ---------------- */

/* A JSON path such as "ops[3].in[1]", kept as a chain of stack nodes and
 * spelled out only when a diagnostic needs it: formatting one for every
 * field of a million-op model cost more than parsing it. */
typedef struct jpath {
  const struct jpath *up; /* NULL at the top */
  const char *key;        /* ".key" ("key" at the top), or NULL for "[index]" */
  int index;
} jpath;
#define JKEY(up, key) (&(const jpath){(up), (key), 0})
#define JIDX(up, i) (&(const jpath){(up), NULL, (i)})

/* What a path belongs to, e.g. " (param 'w')"; no name: "". */
typedef struct jwho {
  const char *kind; /* "param", "input", "op" */
  const char *name;
} jwho;
static const jwho no_who = {NULL, NULL};

static size_t jpath_format(const jpath *p, char *buf, size_t n) {
  size_t off = p->up ? jpath_format(p->up, buf, n) : 0;
  if (off >= n) return off;
  int w = p->key ? snprintf(buf + off, n - off, "%s%s", p->up ? "." : "", p->key)
                 : snprintf(buf + off, n - off, "[%d]", p->index);
  return off + (w > 0 ? (size_t)w : 0);
}

/* Formats "PATH: MESSAGE WHO" as one diagnostic. */
static ppcc_status err_at(ppcc_diag *d, const jpath *path, const jwho *who, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ppcc_status err_at(ppcc_diag *d, const jpath *path, const jwho *who, const char *fmt, ...) {
  char msg[768], where[512], whom[PPCC_MAX_NAME + 32] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  jpath_format(path, where, sizeof where);
  if (who->name) snprintf(whom, sizeof whom, " (%s '%s')", who->kind, who->name);
  return ppcc_error(d, "%s: %s%s", where, msg, whom);
}

static ppcc_status out_of_memory(ppcc_diag *d) {
  return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory while loading the model");
}

static const char *json_type_name(const cJSON *j) {
  if (cJSON_IsString(j)) return "a string";
  if (cJSON_IsNumber(j)) return "a number";
  if (cJSON_IsBool(j)) return "a boolean";
  if (cJSON_IsNull(j)) return "null";
  if (cJSON_IsArray(j)) return "an array";
  if (cJSON_IsObject(j)) return "an object";
  return "an invalid value";
}

/* Edit distance, for "did you mean" hints on short identifiers. */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return (size_t)-1;
  size_t row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* Writes "; did you mean 'X'?" into hint when one candidate is close. */
static void suggest(const char *word, const char *const *candidates, int n, char *hint, size_t len) {
  const char *best = NULL;
  size_t best_d = 3; /* at most two edits */
  for (int i = 0; i < n; i++) {
    size_t dist = edit_distance(word, candidates[i]);
    if (dist < best_d) {
      best_d = dist;
      best = candidates[i];
    }
  }
  if (best)
    snprintf(hint, len, "; did you mean '%s'?", best);
  else
    hint[0] = 0;
}

/* ---------------- raw text checks ---------------- */

typedef struct {
  int line, column;
} text_pos;

static text_pos position_of(const char *buf, size_t offset) {
  text_pos p = {1, 1};
  for (size_t i = 0; i < offset; i++) {
    if (buf[i] == '\n') {
      p.line++;
      p.column = 1;
    } else {
      p.column++;
    }
  }
  return p;
}

/* Checks what cJSON would get wrong or handle badly: NUL bytes (cJSON stops
 * at them), escaped NULs (they would truncate names) and deep nesting (the
 * recursive parser should never see it). One linear scan. */
static ppcc_status check_raw_text(const char *buf, size_t len, bool *truncated, ppcc_diag *d) {
  int depth = 0;
  bool in_string = false;
  *truncated = false;
  for (size_t i = 0; i < len; i++) {
    char c = buf[i];
    if (c == 0) {
      text_pos p = position_of(buf, i);
      return ppcc_error(d, "line %d, column %d: the file contains a NUL byte (not valid JSON text)", p.line, p.column);
    }
    if (in_string) {
      if (c == '\\' && i + 1 < len) {
        if (len - i >= 6 && memcmp(buf + i + 1, "u0000", 5) == 0) {
          text_pos p = position_of(buf, i);
          return ppcc_error(d, "line %d, column %d: escaped NUL (\\u0000) in a string is not supported",
                            p.line, p.column);
        }
        i++; /* skip the escaped character */
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > MAX_JSON_DEPTH) {
        text_pos p = position_of(buf, i);
        return ppcc_error(d, "line %d, column %d: JSON nesting is deeper than %d levels", p.line, p.column,
                          MAX_JSON_DEPTH);
      }
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  *truncated = in_string || depth > 0; /* ends inside a string or container */
  return PPCC_OK;
}

static bool only_whitespace(const char *p, const char *end) {
  for (; p < end; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') return false;
  return true;
}

static void describe_char(const char *buf, size_t len, size_t offset, char *out, size_t n) {
  if (offset >= len)
    snprintf(out, n, "end of input");
  else if ((unsigned char)buf[offset] >= 0x20 && (unsigned char)buf[offset] < 0x7f)
    snprintf(out, n, "'%c'", buf[offset]);
  else
    snprintf(out, n, "byte 0x%02x", (unsigned char)buf[offset]);
}

/* ---------------- the parse arena ----------------
 * cJSON mallocs every node and string: a million-op model is tens of
 * millions of small blocks, with malloc's time and per-block overhead. For
 * the parse, cJSON's hooks point at a bump allocator instead and the tree
 * is dropped in one go once the graph is built. Loading is single-threaded
 * and nothing else parses JSON meanwhile; the hooks are reset right after. */
typedef struct json_block {
  struct json_block *next;
  size_t used, cap;
} json_block;
#define JSON_BLOCK_BYTES ((size_t)4 << 20)

static json_block *json_arena; /* blocks of the parse in progress */

static void *json_arena_alloc(size_t n) {
  n = (n + 7) & ~(size_t)7;
  json_block *b = json_arena;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > JSON_BLOCK_BYTES ? n : JSON_BLOCK_BYTES;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    *b = (json_block){json_arena, 0, cap};
    json_arena = b;
  }
  void *p = (char *)(b + 1) + b->used;
  b->used += n;
  return p;
}

static void json_arena_keep(void *p) { (void)p; /* freed with its block */ }

static void json_blocks_free(json_block *b) {
  while (b) {
    json_block *next = b->next;
    free(b);
    b = next;
  }
}

/* cJSON_ParseWithLengthOpts with the tree in a fresh arena (*blocks). */
static cJSON *parse_in_arena(const char *buf, size_t len, const char **end, json_block **blocks) {
  cJSON_Hooks hooks = {json_arena_alloc, json_arena_keep};
  json_arena = NULL;
  cJSON_InitHooks(&hooks);
  cJSON *root = cJSON_ParseWithLengthOpts(buf, len, end, false);
  cJSON_InitHooks(NULL);
  *blocks = json_arena;
  json_arena = NULL;
  return root;
}

static cJSON *parse_json(const char *buf, size_t len, json_block **blocks, ppcc_diag *d) {
  *blocks = NULL;
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) { /* UTF-8 BOM */
    buf += 3;
    len -= 3;
  }
  if (only_whitespace(buf, buf + len)) {
    ppcc_error(d, "the file is empty (expected a JSON object)");
    return NULL;
  }
  if (len > MAX_FILE_BYTES) {
    ppcc_error(d, "the model is larger than 256 MiB");
    return NULL;
  }
  bool truncated;
  if (check_raw_text(buf, len, &truncated, d) != PPCC_OK) return NULL;
  const char *end = NULL;
  cJSON *root = parse_in_arena(buf, len, &end, blocks);
  char what[32];
  if (!root && truncated) {
    text_pos p = position_of(buf, len);
    ppcc_error(d, "line %d, column %d: unexpected end of input (truncated file?)", p.line, p.column);
    return NULL;
  }
  if (!root) {
    size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
    text_pos p = position_of(buf, off);
    describe_char(buf, len, off, what, sizeof what);
    ppcc_error(d, "line %d, column %d: malformed JSON near %s", p.line, p.column, what);
    return NULL;
  }
  if (!only_whitespace(end, buf + len)) {
    size_t off = (size_t)(end - buf);
    while (off < len && strchr(" \t\r\n", buf[off])) off++;
    text_pos p = position_of(buf, off);
    describe_char(buf, len, off, what, sizeof what);
    ppcc_error(d, "line %d, column %d: unexpected %s after the end of the JSON value", p.line, p.column, what);
    return NULL;
  }
  return root;
}

/* ---------------- typed field access ---------------- */

/* Every object is checked against its list of allowed keys; a repeated
 * key is an error too (cJSON would silently keep the first). */
static ppcc_status check_keys(const cJSON *obj, const jpath *path, const jwho *who,
                              const char *const *allowed, int n_allowed, const char *what, ppcc_diag *d) {
  unsigned seen = 0; /* bit i: allowed[i] seen; n_allowed <= 32 */
  const cJSON *item;
  cJSON_ArrayForEach(item, obj) {
    int k = 0;
    while (k < n_allowed && strcmp(item->string, allowed[k]) != 0) k++;
    if (k == n_allowed) {
      char hint[PPCC_MAX_NAME + 32], list[512];
      size_t off = 0;
      list[0] = 0;
      for (int i = 0; i < n_allowed && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? ", " : "", allowed[i]);
      suggest(item->string, allowed, n_allowed, hint, sizeof hint);
      return err_at(d, path, who, "unknown %s '%.*s' (expected one of: %s)%s", what, PPCC_MAX_NAME,
                    item->string, list, hint);
    }
    if (seen & (1u << k)) return err_at(d, path, who, "%s '%s' appears twice", what, allowed[k]);
    seen |= 1u << k;
  }
  return PPCC_OK;
}

typedef enum { INT_OK, INT_NOT_INTEGER, INT_TOO_LARGE } int_result;

static int_result json_int(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return INT_NOT_INTEGER;
  double v = j->valuedouble;
  if (!isfinite(v)) return INT_TOO_LARGE; /* 1e400 reads as infinity */
  if (v != floor(v)) return INT_NOT_INTEGER;
  if (v > (double)MAX_JSON_INT || v < -(double)MAX_JSON_INT) return INT_TOO_LARGE;
  *out = (int64_t)v;
  return INT_OK;
}

/* Reads an integer or reports why not (with path and who). */
static ppcc_status get_int(const cJSON *j, const jpath *path, const jwho *who, int64_t *out, ppcc_diag *d) {
  switch (json_int(j, out)) {
  case INT_OK: return PPCC_OK;
  case INT_TOO_LARGE:
    if (!isfinite(j->valuedouble)) return err_at(d, path, who, "number out of range (beyond 1.8e308)");
    return err_at(d, path, who, "integer %.17g is too large", j->valuedouble);
  case INT_NOT_INTEGER: break;
  }
  if (cJSON_IsNumber(j)) return err_at(d, path, who, "expected an integer, got %.17g", j->valuedouble);
  return err_at(d, path, who, "expected an integer, got %s", json_type_name(j));
}

static ppcc_status get_int_in(const cJSON *j, const jpath *path, const jwho *who, int64_t lo, int64_t hi,
                              int64_t *out, ppcc_diag *d) {
  ppcc_status st = get_int(j, path, who, out, d);
  if (st) return st;
  if (*out < lo || *out > hi)
    return err_at(d, path, who, "%lld is out of range [%lld, %lld]", (long long)*out, (long long)lo,
                  (long long)hi);
  return PPCC_OK;
}

static ppcc_status expect_type(const cJSON *j, bool ok, const char *want, const jpath *path, const jwho *who,
                               ppcc_diag *d) {
  return ok ? PPCC_OK : err_at(d, path, who, "expected %s, got %s", want, json_type_name(j));
}

/* Names of values and models: non-empty, bounded, printable UTF-8, no
 * '@' (ppcc_name_check). */
static ppcc_status check_name(const cJSON *j, const jpath *path, const jwho *who, ppcc_diag *d) {
  ppcc_status st = expect_type(j, cJSON_IsString(j), "a name (string)", path, who, d);
  if (st) return st;
  char why[PPCC_MAX_NAME + 128];
  if (!ppcc_name_check(j->valuestring, false, why, sizeof why)) return err_at(d, path, who, "%s", why);
  return PPCC_OK;
}

/* ---------------- big arrays, element by element ----------------
 * The fast path (load_fast) never holds the tree of "params", "inputs" or
 * "ops": it finds each element's text with a scanner and parses that alone
 * into a scratch arena reset per element. A million-op tree was ~1 GB. */
typedef struct json_text {
  const char *p, *end;
} json_text;

static json_block *piece_arena; /* scratch blocks of parse_piece */

static const char *skip_space(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* End of the JSON value at p: the first ',', ']' or '}' outside strings
 * and brackets, or end; NULL if the text stops inside a string. */
static const char *value_end(const char *p, const char *end) {
  int depth = 0;
  bool in_string = false;
  for (; p < end; p++) {
    char c = *p;
    if (in_string) {
      if (c == '\\') p++;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      depth++;
    } else if (c == ']' || c == '}') {
      if (depth == 0) return p;
      depth--;
    } else if (c == ',' && depth == 0) {
      return p;
    }
  }
  return in_string || depth ? NULL : end;
}

/* cJSON's tree of the one value in [p, end) (surrounding white space
 * allowed), in the scratch arena; NULL unless that is exactly one value. */
static cJSON *parse_piece(const char *p, const char *end) {
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) end--;
  if (piece_arena) { /* reset: keep the newest block */
    json_blocks_free(piece_arena->next);
    piece_arena->next = NULL;
    piece_arena->used = 0;
  }
  json_block *outer = json_arena;
  json_arena = piece_arena;
  const char *stop = NULL;
  cJSON *item = end > p ? cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &stop, false) : NULL;
  piece_arena = json_arena;
  json_arena = outer;
  return item && stop == end ? item : NULL;
}

/* Steps through the elements of the array text *t ("[ a, b ]"): *item is
 * the next element's tree, NULL at the end. False if the text is not an
 * array of well-formed values. */
static bool next_piece(json_text *t, bool first, cJSON **item) {
  const char *p = skip_space(t->p, t->end);
  *item = NULL;
  if (first) {
    if (p == t->end || *p != '[') return false;
    p = skip_space(p + 1, t->end);
    if (p < t->end && *p == ']') {
      t->p = p + 1;
      return true;
    }
  } else {
    if (p == t->end) return false;
    if (*p == ']') {
      t->p = p + 1;
      return true;
    }
    if (*p != ',') return false;
    p++;
  }
  const char *e = value_end(p, t->end);
  if (!e || e == t->end) return false;
  *item = parse_piece(p, e);
  t->p = e;
  return *item != NULL;
}

/* ---------------- the loader ---------------- */

typedef struct {
  ppcc_graph *g;
  ppcc_diag *d;
  const cJSON *ops; /* the "ops" array, for the use-before-definition scan */
  int n_params;     /* values [0, n_params) are params, then inputs */
  int n_inputs;
  struct decl *decl; /* scratch for load_decl */
  bool piece_error;  /* fast path: an element's text did not parse */
} loader;

/* Where an existing value was defined, for "already defined by ..." */
static void describe_definition(const loader *L, int value, char *buf, size_t n) {
  const ppcc_value *v = &L->g->values[value];
  if (v->kind == PPCC_VALUE_PARAM)
    snprintf(buf, n, "params[%d]", value);
  else if (v->kind == PPCC_VALUE_INPUT)
    snprintf(buf, n, "inputs[%d]", value - L->n_params);
  else
    snprintf(buf, n, "ops[%d]", v->def_op);
}

/* ---- params and inputs ---- */

typedef struct decl {
  const jpath *path; /* "params[3]" */
  const jwho *who;   /* " (param 'w')" */
  int64_t shape[PPCC_MAX_RANK];
  int rank;
  ppcc_dtype dtype;
  ppcc_layout layout;
  int devices[PPCC_MAX_DEVICES];
  bool pinned;
  bool devices_declared;
  bool used[PPCC_MAX_DEVICES]; /* device_listed's bitmap */
} decl;

static ppcc_status load_shape(loader *L, decl *x, const cJSON *j) {
  const jpath *path = JKEY(x->path, "shape");
  ppcc_status st = expect_type(j, cJSON_IsArray(j), "a list of dimensions", path, x->who, L->d);
  if (st) return st;
  int rank = cJSON_GetArraySize(j);
  if (rank > PPCC_MAX_RANK)
    return err_at(L->d, path, x->who, "rank %d exceeds the maximum rank %d", rank, PPCC_MAX_RANK);
  int k = 0;
  const cJSON *dim;
  cJSON_ArrayForEach(dim, j) {
    const jpath *dim_path = JIDX(path, k);
    if ((st = get_int(dim, dim_path, x->who, &x->shape[k], L->d))) return st;
    if (x->shape[k] < 0)
      return err_at(L->d, dim_path, x->who, "dimension %lld is negative", (long long)x->shape[k]);
    k++;
  }
  x->rank = rank;
  if (ppcc_num_elements(rank, x->shape) < 0) {
    return err_at(L->d, path, x->who, "the tensor has more than %lld elements (2^48, the limit)",
                  (long long)PPCC_MAX_ELEMENTS);
  }
  return PPCC_OK;
}

static ppcc_status parse_shard_kind(loader *L, decl *x, const cJSON *kind) {
  static const char *const kinds[] = {"none", "replicated", "split", "unreduced"};
  static const ppcc_layout_kind values[] = {PPCC_LAYOUT_UNSHARDED, PPCC_LAYOUT_REPLICATED, PPCC_LAYOUT_SPLIT,
                                            PPCC_LAYOUT_UNREDUCED};
  const jpath *path = JKEY(JKEY(x->path, "shard"), "kind");
  x->layout.kind = PPCC_LAYOUT_UNSHARDED;
  if (!kind) return PPCC_OK;
  ppcc_status st = expect_type(kind, cJSON_IsString(kind), "a string", path, x->who, L->d);
  if (st) return st;
  for (int i = 0; i < 4; i++)
    if (strcmp(kind->valuestring, kinds[i]) == 0) {
      x->layout.kind = values[i];
      return PPCC_OK;
    }
  return err_at(L->d, path, x->who, "unknown shard kind '%.*s' (expected none, replicated, split or unreduced)",
                PPCC_MAX_NAME, kind->valuestring);
}

static ppcc_status load_shard(loader *L, decl *x, const cJSON *j) {
  static const char *const keys[] = {"kind", "dim", "count"};
  x->layout = ppcc_layout_unsharded();
  if (!j) return PPCC_OK;
  const jpath *path = JKEY(x->path, "shard"), *count_path = JKEY(path, "count"), *dim_path = JKEY(path, "dim");
  ppcc_status st = expect_type(j, cJSON_IsObject(j), "an object", path, x->who, L->d);
  if (!st) st = check_keys(j, path, x->who, keys, 3, "key", L->d);
  if (!st) st = parse_shard_kind(L, x, cJSON_GetObjectItemCaseSensitive(j, "kind"));
  if (st) return st;
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(j, "count");
  const cJSON *dim = cJSON_GetObjectItemCaseSensitive(j, "dim");
  int64_t n = 1, dim_v = -1;
  if (count) {
    if ((st = get_int(count, count_path, x->who, &n, L->d))) return st;
    if (n < 1) return err_at(L->d, count_path, x->who, "shard count %lld must be at least 1", (long long)n);
    if (n > L->g->n_devices)
      return err_at(L->d, count_path, x->who, "%lld shards need more devices than the model's %d", (long long)n,
                    L->g->n_devices);
    if (n > 1 && x->layout.kind == PPCC_LAYOUT_UNSHARDED)
      return err_at(L->d, count_path, x->who, "shard kind 'none' cannot have %lld shards", (long long)n);
  }
  if (x->layout.kind == PPCC_LAYOUT_SPLIT) {
    if (!dim) return err_at(L->d, dim_path, x->who, "a split needs 'dim'");
    if ((st = get_int(dim, dim_path, x->who, &dim_v, L->d))) return st;
    if (dim_v < 0 || dim_v >= x->rank)
      return err_at(L->d, dim_path, x->who, "split dim %lld is out of range for rank %d", (long long)dim_v,
                    x->rank);
    if (x->shape[dim_v] % n != 0)
      return err_at(L->d, count_path, x->who, "%lld does not divide dim %lld of size %lld", (long long)n,
                    (long long)dim_v, (long long)x->shape[dim_v]);
    const ppcc_block_format *f = ppcc_dtype_blocks(x->dtype);
    if (f && dim_v == x->rank - 1 && (x->shape[dim_v] / n) % f->block != 0)
      return err_at(L->d, count_path, x->who,
                    "%lld shards of %lld values along dim %lld would cut %s's %d-value blocks (split whole rows, "
                    "or the last dim at multiples of %d)",
                    (long long)n, (long long)(x->shape[dim_v] / n), (long long)dim_v, f->name, f->block, f->block);
  } else if (dim) {
    return err_at(L->d, dim_path, x->who, "'dim' is only valid for shard kind 'split'");
  }
  x->layout.dim = (int)dim_v;
  x->layout.count = (int)n;
  return PPCC_OK;
}

/* Whether id is among the first k devices of x: a scan for short tuples,
 * the bitmap for long ones (clearing 4096 flags per value was a cost). */
static bool device_listed(decl *x, int k, int id) {
  enum { SCAN = 32 };
  if (k < SCAN) {
    for (int i = 0; i < k; i++)
      if (x->devices[i] == id) return true;
    return false;
  }
  if (k == SCAN) {
    memset(x->used, 0, sizeof x->used);
    for (int i = 0; i < k; i++) x->used[x->devices[i]] = true;
  }
  bool seen = x->used[id];
  x->used[id] = true;
  return seen;
}

static ppcc_status load_devices(loader *L, decl *x, const cJSON *j) {
  int count = x->layout.count;
  x->devices_declared = j != NULL;
  if (!j) { /* P1/P2: default 0..count-1 (count <= n_devices checked) */
    for (int i = 0; i < count; i++) x->devices[i] = i;
    return PPCC_OK;
  }
  const jpath *path = JKEY(x->path, "devices");
  ppcc_status st = expect_type(j, cJSON_IsArray(j), "a list of device ids", path, x->who, L->d);
  if (st) return st;
  int n = cJSON_GetArraySize(j);
  if (n != count)
    return err_at(L->d, path, x->who, "%d devices given for %d shard%s (shard count)", n, count,
                  count == 1 ? "" : "s");
  int k = 0;
  const cJSON *dev;
  cJSON_ArrayForEach(dev, j) {
    int64_t id;
    const jpath *dev_path = JIDX(path, k);
    if ((st = get_int(dev, dev_path, x->who, &id, L->d))) return st;
    if (id < 0 || id >= L->g->n_devices)
      return err_at(L->d, dev_path, x->who, "device %lld is out of range (model has %d devices)", (long long)id,
                    L->g->n_devices);
    if (device_listed(x, k, (int)id))
      return err_at(L->d, dev_path, x->who, "device %lld appears twice in the tuple", (long long)id);
    x->devices[k++] = (int)id;
  }
  return PPCC_OK;
}

/* A quantized param holds whole blocks along its last dim. */
static ppcc_status check_blocks(loader *L, decl *x) {
  const ppcc_block_format *f = ppcc_dtype_blocks(x->dtype);
  if (!f) return PPCC_OK;
  if (x->rank < 1 || x->shape[x->rank - 1] % f->block != 0)
    return err_at(L->d, JKEY(x->path, "shape"), x->who,
                  "a %s param needs a last dim that is a multiple of its block (%d values)", f->name, f->block);
  return PPCC_OK;
}

static ppcc_status load_decl_fields(loader *L, decl *x, const cJSON *j, bool is_param) {
  const jpath *path = JKEY(x->path, "dtype");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  if (!dtype) return err_at(L->d, x->path, x->who, "missing required key 'dtype'");
  ppcc_status st = expect_type(dtype, cJSON_IsString(dtype), "a dtype name", path, x->who, L->d);
  if (st) return st;
  if (!ppcc_dtype_from_name(dtype->valuestring, &x->dtype)) {
    const char *names[PPCC_DTYPE_COUNT];
    char hint[64];
    for (int i = 0; i < PPCC_DTYPE_COUNT; i++) names[i] = ppcc_dtype_name((ppcc_dtype)i);
    suggest(dtype->valuestring, names, PPCC_DTYPE_COUNT, hint, sizeof hint);
    return err_at(L->d, path, x->who,
                  "unknown dtype '%.*s' (expected f32, f16, bf16, i64, i32, i8 or bool; params may also be "
                  "q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k)%s",
                  PPCC_MAX_NAME, dtype->valuestring, hint);
  }
  if (ppcc_dtype_is_quantized(x->dtype) && !is_param)
    return err_at(L->d, path, x->who, "dtype %s is a block-quantized weight format: only params may have it",
                  ppcc_dtype_name(x->dtype));
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
  if (!shape) return err_at(L->d, x->path, x->who, "missing required key 'shape'");
  if ((st = load_shape(L, x, shape))) return st;
  if ((st = check_blocks(L, x))) return st;
  if ((st = load_shard(L, x, cJSON_GetObjectItemCaseSensitive(j, "shard")))) return st;
  if ((st = load_devices(L, x, cJSON_GetObjectItemCaseSensitive(j, "devices")))) return st;
  const cJSON *pinned = cJSON_GetObjectItemCaseSensitive(j, "pinned");
  x->pinned = is_param; /* P1 / P2 defaults */
  if (pinned) {
    if ((st = expect_type(pinned, cJSON_IsBool(pinned), "true or false", JKEY(x->path, "pinned"), x->who, L->d)))
      return st;
    x->pinned = cJSON_IsTrue(pinned);
  }
  return PPCC_OK;
}

static ppcc_status add_declared_value(loader *L, const decl *x, const char *name, bool is_param) {
  int existing = ppcc_find_value(L->g, name);
  if (existing >= 0) {
    char where[64];
    describe_definition(L, existing, where, sizeof where);
    return err_at(L->d, JKEY(x->path, "name"), x->who, "'%s' is already defined by %s", name, where);
  }
  int v = ppcc_add_value(L->g, name, is_param ? PPCC_VALUE_PARAM : PPCC_VALUE_INPUT, x->dtype, x->rank,
                         x->shape);
  if (v < 0) return out_of_memory(L->d);
  ppcc_value *val = &L->g->values[v];
  val->layout = x->layout;
  val->devices = ppcc_dup_ints(L->g, x->devices, x->layout.count);
  val->pinned = x->pinned;
  val->devices_declared = x->devices_declared;
  val->why = is_param ? (x->pinned ? "P1: parameter pinned on declared devices"
                                   : "P1: parameter placed as declared (pinned: false)")
                      : (x->pinned ? "P2: graph input pinned as declared" : "P2: graph input placed as declared");
  return val->devices ? PPCC_OK : out_of_memory(L->d);
}

static ppcc_status load_decl(loader *L, const cJSON *j, const char *section, int index, bool is_param) {
  static const char *const keys[] = {"name", "dtype", "shape", "shard", "devices", "pinned"};
  const char *kind = is_param ? "param" : "input";
  const jpath *path = JIDX(JKEY(NULL, section), index);
  ppcc_status st = expect_type(j, cJSON_IsObject(j), "an object", path, &no_who, L->d);
  if (st) return st;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  jwho who = {kind, NULL};
  if (cJSON_IsString(name) && strlen(name->valuestring) <= PPCC_MAX_NAME) who.name = name->valuestring;
  /* Keys first, so a misspelt "name" gets a hint rather than "missing". */
  if ((st = check_keys(j, path, &who, keys, 6, "key", L->d))) return st;
  if (!name) return err_at(L->d, path, &no_who, "missing required key 'name'");
  if ((st = check_name(name, JKEY(path, "name"), &no_who, L->d))) return st;
  decl *x = L->decl; /* 20 KiB of device ids: not on the stack, reused */
  x->path = path;
  x->who = &who;
  st = load_decl_fields(L, x, j, is_param);
  if (!st) st = add_declared_value(L, x, name->valuestring, is_param);
  return st;
}

/* Failure of the fast path: an element that does not parse alone. The
 * full parse then runs and reports it as the classic loader does. */
static ppcc_status piece_failed(loader *L) {
  L->piece_error = true;
  return ppcc_error(L->d, "(fast path) an array element does not parse on its own");
}

/* text: the array's text (fast path), or NULL to walk arr's tree. */
static ppcc_status load_decls(loader *L, const cJSON *arr, const json_text *text, const char *section, bool is_param,
                              int *count) {
  *count = 0;
  if (!arr) return PPCC_OK;
  ppcc_status st = expect_type(arr, cJSON_IsArray(arr), "an array", JKEY(NULL, section), &no_who, L->d);
  if (st) return st;
  if (text) {
    json_text t = *text;
    cJSON *item;
    for (bool first = true;; first = false) {
      if (!next_piece(&t, first, &item)) return piece_failed(L);
      if (!item) return PPCC_OK;
      if ((st = load_decl(L, item, section, *count, is_param))) return st;
      (*count)++;
    }
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, arr) {
    if ((st = load_decl(L, item, section, *count, is_param))) return st;
    (*count)++;
  }
  return PPCC_OK;
}

/* ---- ops ---- */

typedef struct {
  const ppcc_op_info *info;
  int index;
  const jpath *path; /* "ops[3]" */
  jwho who;          /* " (op 'matmul')" */
} op_ctx;

/* An undefined operand: if a later op defines it, the model uses a value
 * before its definition (a cycle in a graph listed in program order). Only
 * runs once, on the error path, so the scan stays linear. */
static int later_definition(const loader *L, const char *name, int from) {
  int i = 0;
  const cJSON *op;
  cJSON_ArrayForEach(op, L->ops) {
    if (i >= from) {
      const cJSON *outs = cJSON_GetObjectItemCaseSensitive(op, "out");
      const cJSON *o;
      if (cJSON_IsArray(outs))
        cJSON_ArrayForEach(o, outs) if (cJSON_IsString(o) && strcmp(o->valuestring, name) == 0) return i;
    }
    i++;
  }
  return -1;
}

static ppcc_status load_operands(loader *L, const op_ctx *c, const cJSON *j, int *in, int *n_in) {
  const jpath *path = JKEY(c->path, "in");
  if (!j) return err_at(L->d, c->path, &c->who, "missing required key 'in'");
  ppcc_status st = expect_type(j, cJSON_IsArray(j), "a list of value names", path, &c->who, L->d);
  if (st) return st;
  int n = cJSON_GetArraySize(j);
  if (n < c->info->min_in || n > c->info->max_in || n > MAX_OP_OPERANDS) {
    if (c->info->min_in == c->info->max_in)
      return err_at(L->d, path, &c->who, "'%s' takes %d operand%s, got %d (arity)", c->info->name,
                    c->info->min_in, c->info->min_in == 1 ? "" : "s", n);
    return err_at(L->d, path, &c->who, "'%s' takes %d to %d operands, got %d (arity)", c->info->name,
                  c->info->min_in, c->info->max_in, n);
  }
  int k = 0;
  const cJSON *name;
  cJSON_ArrayForEach(name, j) {
    const jpath *in_path = JIDX(path, k);
    if ((st = expect_type(name, cJSON_IsString(name), "a value name (string)", in_path, &c->who, L->d)))
      return st;
    int v = ppcc_find_value(L->g, name->valuestring);
    if (v < 0) {
      int later = later_definition(L, name->valuestring, c->index);
      if (later >= 0)
        return err_at(L->d, in_path, &c->who, "cycle: '%.*s' is used by ops[%d] before its definition by ops[%d]",
                      PPCC_MAX_NAME, name->valuestring, c->index, later);
      return err_at(L->d, in_path, &c->who, "'%.*s' is not defined", PPCC_MAX_NAME, name->valuestring);
    }
    in[k++] = v;
  }
  *n_in = n;
  return PPCC_OK;
}

static ppcc_status check_results(loader *L, const op_ctx *c, const cJSON *j, int *n_out) {
  const jpath *path = JKEY(c->path, "out");
  if (!j) return err_at(L->d, c->path, &c->who, "missing required key 'out'");
  ppcc_status st = expect_type(j, cJSON_IsArray(j), "a list of value names", path, &c->who, L->d);
  if (st) return st;
  int n = cJSON_GetArraySize(j);
  if (n != c->info->n_out || n > MAX_OP_OPERANDS)
    return err_at(L->d, path, &c->who, "'%s' has %d result%s, got %d names", c->info->name, c->info->n_out,
                  c->info->n_out == 1 ? "" : "s", n);
  int k = 0;
  const cJSON *name;
  cJSON_ArrayForEach(name, j) {
    const jpath *out_path = JIDX(path, k++);
    if ((st = check_name(name, out_path, &c->who, L->d))) return st;
    int existing = ppcc_find_value(L->g, name->valuestring);
    if (existing >= 0) {
      char where[64];
      describe_definition(L, existing, where, sizeof where);
      return err_at(L->d, out_path, &c->who, "'%s' is already defined by %s", name->valuestring, where);
    }
    /* The same name twice in one "out" list. */
    const cJSON *prev;
    cJSON_ArrayForEach(prev, j) {
      if (prev == name) break;
      if (strcmp(prev->valuestring, name->valuestring) == 0)
        return err_at(L->d, out_path, &c->who, "'%s' appears twice in the op's results", name->valuestring);
    }
  }
  *n_out = n;
  return PPCC_OK;
}

static const char *attr_type_name(ppcc_attr_type t) {
  switch (t) {
  case PPCC_ATTR_INT: return "an integer";
  case PPCC_ATTR_INTS: return "a list of integers";
  case PPCC_ATTR_FLOAT: return "a number";
  case PPCC_ATTR_BOOL: return "true or false";
  case PPCC_ATTR_STRING: return "a string";
  case PPCC_ATTR_FLOATS: return "a list of numbers";
  }
  return "?";
}

static ppcc_status load_ints_attr(loader *L, const op_ctx *c, const cJSON *j, const jpath *path, ppcc_attr *a) {
  int n = cJSON_GetArraySize(j);
  a->n = n;
  a->ints = ppcc_alloc(L->g, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (!a->ints) return out_of_memory(L->d);
  int k = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, j) {
    ppcc_status st = get_int(item, JIDX(path, k), &c->who, &a->ints[k], L->d);
    k++;
    if (st) return st;
  }
  return PPCC_OK;
}

static ppcc_status load_floats_attr(loader *L, const op_ctx *c, const cJSON *j, const jpath *path, ppcc_attr *a) {
  int n = cJSON_GetArraySize(j);
  a->n = n;
  a->floats = ppcc_alloc(L->g, sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!a->floats) return out_of_memory(L->d);
  int k = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, j) {
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
      return err_at(L->d, JIDX(path, k), &c->who, "expected a finite number, got %s", json_type_name(item));
    a->floats[k++] = item->valuedouble;
  }
  return PPCC_OK;
}

/* Converts one attribute value per its schema type. */
static ppcc_status load_attr_value(loader *L, const op_ctx *c, const ppcc_attr_spec *spec, const cJSON *j,
                                   ppcc_attr *a) {
  const jpath *path = JKEY(JKEY(c->path, "attrs"), spec->name);
  a->name = spec->name; /* static string from the op table */
  a->type = spec->type;
  bool ok = false;
  switch (spec->type) {
  case PPCC_ATTR_INT: ok = cJSON_IsNumber(j); break;
  case PPCC_ATTR_INTS: ok = cJSON_IsArray(j); break;
  case PPCC_ATTR_FLOAT: ok = cJSON_IsNumber(j) && isfinite(j->valuedouble); break;
  case PPCC_ATTR_BOOL: ok = cJSON_IsBool(j); break;
  case PPCC_ATTR_STRING: ok = cJSON_IsString(j); break;
  case PPCC_ATTR_FLOATS: ok = cJSON_IsArray(j); break;
  }
  if (!ok && cJSON_IsNumber(j) && !isfinite(j->valuedouble))
    return err_at(L->d, path, &c->who, "number out of range (beyond 1.8e308)");
  if (!ok) return err_at(L->d, path, &c->who, "expected %s, got %s", attr_type_name(spec->type), json_type_name(j));
  switch (spec->type) {
  case PPCC_ATTR_INT: return get_int(j, path, &c->who, &a->i, L->d);
  case PPCC_ATTR_INTS: return load_ints_attr(L, c, j, path, a);
  case PPCC_ATTR_FLOATS: return load_floats_attr(L, c, j, path, a);
  case PPCC_ATTR_FLOAT: a->f = j->valuedouble; return PPCC_OK;
  case PPCC_ATTR_BOOL: a->i = cJSON_IsTrue(j); return PPCC_OK;
  case PPCC_ATTR_STRING:
    a->s = ppcc_strdup(L->g, j->valuestring);
    return a->s ? PPCC_OK : out_of_memory(L->d);
  }
  return PPCC_OK;
}

static ppcc_status load_attrs(loader *L, const op_ctx *c, const cJSON *j, ppcc_attr *attrs, int *n_attrs) {
  const ppcc_attr_spec *specs = c->info->attrs;
  const char *names[MAX_OP_ATTRS] = {NULL};
  int n_specs = 0;
  while (specs[n_specs].name && n_specs < MAX_OP_ATTRS) {
    names[n_specs] = specs[n_specs].name;
    n_specs++;
  }
  const jpath *path = JKEY(c->path, "attrs");
  *n_attrs = 0;
  if (j) {
    ppcc_status st = expect_type(j, cJSON_IsObject(j), "an object", path, &c->who, L->d);
    if (st) return st;
    if (n_specs == 0 && j->child)
      return err_at(L->d, path, &c->who, "unknown attribute '%.*s' ('%s' takes no attributes)", PPCC_MAX_NAME,
                    j->child->string, c->info->name);
    if ((st = check_keys(j, path, &c->who, names, n_specs, "attribute", L->d))) return st;
  }
  for (int s = 0; s < n_specs; s++) {
    const cJSON *value = j ? cJSON_GetObjectItemCaseSensitive(j, specs[s].name) : NULL;
    if (!value) {
      if (specs[s].required)
        return err_at(L->d, j ? path : c->path, &c->who, "missing required attribute '%s'", specs[s].name);
      continue;
    }
    ppcc_status st = load_attr_value(L, c, &specs[s], value, &attrs[(*n_attrs)++]);
    if (st) return st;
  }
  return PPCC_OK;
}

static ppcc_status load_op_kind(loader *L, op_ctx *c, const cJSON *j) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "op");
  const jpath *path = JKEY(c->path, "op");
  if (!name) return err_at(L->d, c->path, &no_who, "missing required key 'op'");
  ppcc_status st = expect_type(name, cJSON_IsString(name), "an op name (string)", path, &no_who, L->d);
  if (st) return st;
  c->info = ppcc_op_lookup(name->valuestring);
  if (!c->info) {
    int n_ops;
    const ppcc_op_info *table = ppcc_op_table(&n_ops);
    const char *names[PPCC_OP_COUNT];
    char hint[64];
    for (int i = 0; i < n_ops; i++) names[i] = table[i].name;
    suggest(name->valuestring, names, n_ops, hint, sizeof hint);
    return err_at(L->d, path, &no_who, "unknown op '%.*s'%s", PPCC_MAX_NAME, name->valuestring, hint);
  }
  c->who = (jwho){"op", c->info->name};
  return PPCC_OK;
}

static ppcc_status load_op(loader *L, const cJSON *j, int index) {
  static const char *const keys[] = {"op", "in", "out", "attrs"};
  op_ctx c = {.index = index, .path = JIDX(JKEY(NULL, "ops"), index), .who = {"op", NULL}};
  ppcc_status st = expect_type(j, cJSON_IsObject(j), "an object", c.path, &no_who, L->d);
  if (st) return st;
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "op");
  if (cJSON_IsString(kind) && strlen(kind->valuestring) <= PPCC_MAX_NAME) c.who.name = kind->valuestring;
  st = check_keys(j, c.path, &c.who, keys, 4, "key", L->d);
  if (!st) st = load_op_kind(L, &c, j);
  if (st) return st;
  int in[MAX_OP_OPERANDS], out[MAX_OP_OPERANDS], n_in = 0, n_out = 0, n_attrs = 0;
  ppcc_attr attrs[MAX_OP_ATTRS];
  memset(attrs, 0, sizeof attrs);
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(j, "out");
  if ((st = load_operands(L, &c, cJSON_GetObjectItemCaseSensitive(j, "in"), in, &n_in))) return st;
  if ((st = check_results(L, &c, outs, &n_out))) return st;
  if ((st = load_attrs(L, &c, cJSON_GetObjectItemCaseSensitive(j, "attrs"), attrs, &n_attrs))) return st;
  /* Results take the first operand's dtype for now; verify infers them. */
  ppcc_dtype dtype = n_in > 0 ? L->g->values[in[0]].dtype : PPCC_F32;
  int k = 0;
  const cJSON *name;
  cJSON_ArrayForEach(name, outs) {
    int v = ppcc_add_value(L->g, name->valuestring, PPCC_VALUE_RESULT, dtype, 0, NULL);
    if (v < 0) return out_of_memory(L->d);
    L->g->values[v].def_op = L->g->n_ops;
    out[k++] = v;
  }
  if (ppcc_add_op(L->g, c.info, n_in, in, n_out, out, n_attrs, attrs) < 0) return out_of_memory(L->d);
  return PPCC_OK;
}

static ppcc_status load_ops(loader *L, const cJSON *arr, const json_text *text) {
  if (!arr) return ppcc_error(L->d, "top level: missing required key 'ops'");
  ppcc_status st = expect_type(arr, cJSON_IsArray(arr), "an array", JKEY(NULL, "ops"), &no_who, L->d);
  if (st) return st;
  if (text) { /* the cycle diagnostic needs the whole list: the full parse gives it */
    json_text t = *text;
    cJSON *op;
    for (int i = 0;; i++) {
      if (!next_piece(&t, i == 0, &op) || i > PPCC_MAX_OPS) return piece_failed(L);
      if (!op) return PPCC_OK;
      if ((st = load_op(L, op, i))) return st;
    }
  }
  int n = cJSON_GetArraySize(arr);
  if (n > PPCC_MAX_OPS) return ppcc_error(L->d, "ops: %d ops exceed the limit of %d", n, PPCC_MAX_OPS);
  L->ops = arr;
  int i = 0;
  const cJSON *op;
  cJSON_ArrayForEach(op, arr) {
    if ((st = load_op(L, op, i++))) return st;
  }
  return PPCC_OK;
}

static ppcc_status load_outputs(loader *L, const cJSON *arr) {
  if (!arr) return ppcc_error(L->d, "top level: missing required key 'outputs'");
  ppcc_status st = expect_type(arr, cJSON_IsArray(arr), "a list of value names", JKEY(NULL, "outputs"), &no_who, L->d);
  if (st) return st;
  int n = cJSON_GetArraySize(arr);
  if (n == 0) return ppcc_error(L->d, "outputs: the model has no outputs (list at least one value)");
  L->g->outputs = ppcc_alloc(L->g, sizeof(int) * (size_t)n);
  if (!L->g->outputs) return out_of_memory(L->d);
  int k = 0;
  const cJSON *name;
  cJSON_ArrayForEach(name, arr) {
    const jpath *path = JIDX(JKEY(NULL, "outputs"), k);
    if ((st = expect_type(name, cJSON_IsString(name), "a value name (string)", path, &no_who, L->d))) return st;
    int v = ppcc_find_value(L->g, name->valuestring);
    if (v < 0) return err_at(L->d, path, &no_who, "'%.*s' is not defined", PPCC_MAX_NAME, name->valuestring);
    if (L->g->values[v].is_output) return err_at(L->d, path, &no_who, "'%s' is listed twice", name->valuestring);
    L->g->values[v].is_output = true;
    L->g->outputs[k++] = v;
  }
  L->g->n_outputs = n;
  return PPCC_OK;
}

/* ---- top level ---- */

static ppcc_status check_version(const cJSON *root, ppcc_diag *d) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "ppcc");
  if (!v) return ppcc_error(d, "top level: missing required key 'ppcc' (the format version, 1)");
  if (!cJSON_IsNumber(v) || v->valuedouble != 1) {
    if (cJSON_IsNumber(v))
      return ppcc_error(d, "ppcc: unsupported format version %.17g (this ppcc reads version 1)", v->valuedouble);
    return ppcc_error(d, "ppcc: expected the format version 1, got %s", json_type_name(v));
  }
  return PPCC_OK;
}

static ppcc_status read_header(const cJSON *root, const char *default_name, const char **name, int *devices,
                               ppcc_diag *d) {
  static const char *const keys[] = {"ppcc", "name", "devices", "params", "inputs", "ops", "outputs"};
  if (!cJSON_IsObject(root)) return ppcc_error(d, "top level: expected a JSON object, got %s", json_type_name(root));
  ppcc_status st = check_version(root, d);
  if (!st) st = check_keys(root, JKEY(NULL, "top level"), &no_who, keys, 7, "key", d);
  if (st) return st;
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "name");
  *name = default_name;
  if (n) {
    if ((st = check_name(n, JKEY(NULL, "name"), &no_who, d))) return st;
    *name = n->valuestring;
  }
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "devices");
  if (!dev) return ppcc_error(d, "top level: missing required key 'devices' (the number of devices)");
  int64_t count;
  if ((st = get_int_in(dev, JKEY(NULL, "devices"), &no_who, 1, PPCC_MAX_DEVICES, &count, d))) return st;
  *devices = (int)count;
  return PPCC_OK;
}

/* arrays: the text of "params", "inputs" and "ops" (fast path; their
 * entries in root are empty placeholders), or NULL: all in root's tree. */
static ppcc_graph *build_graph(const cJSON *root, const json_text *arrays, const char *default_name, ppcc_diag *d) {
  const char *name = NULL;
  int devices = 0;
  if (read_header(root, default_name, &name, &devices, d)) return NULL;
  loader L = {.d = d, .g = ppcc_graph_new(name, devices), .decl = malloc(sizeof(decl))};
  if (!L.g || !L.decl) {
    out_of_memory(d);
    ppcc_graph_free(L.g);
    free(L.decl);
    return NULL;
  }
  ppcc_status st = load_decls(&L, cJSON_GetObjectItemCaseSensitive(root, "params"), arrays ? &arrays[0] : NULL,
                              "params", true, &L.n_params);
  if (!st)
    st = load_decls(&L, cJSON_GetObjectItemCaseSensitive(root, "inputs"), arrays ? &arrays[1] : NULL, "inputs",
                    false, &L.n_inputs);
  if (!st) st = load_ops(&L, cJSON_GetObjectItemCaseSensitive(root, "ops"), arrays ? &arrays[2] : NULL);
  if (!st) st = load_outputs(&L, cJSON_GetObjectItemCaseSensitive(root, "outputs"));
  free(L.decl);
  if (st) {
    ppcc_graph_free(L.g);
    return NULL;
  }
  return L.g;
}

/* ---- the fast path ----
 * The top-level object is split by a scanner: its small members are
 * parsed into a root object, the three big arrays are left as text for
 * load_decls / load_ops to parse element by element. Any problem, in the
 * text or in the model, makes it give up quietly: the full parse then
 * runs and reports exactly what it always did. */
static const char *const big_arrays[3] = {"params", "inputs", "ops"};

static cJSON *split_top_level(const char *p, const char *end, json_text arrays[3]) {
  p = skip_space(p, end);
  if (p == end || *p != '{') return NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  p = skip_space(p + 1, end);
  if (p < end && *p == '}') return skip_space(p + 1, end) == end ? root : NULL;
  for (;;) {
    char key[32];
    const char *k = p + 1, *k_end = k;
    if (p == end || *p != '"') return NULL;
    while (k_end < end && *k_end != '"' && *k_end != '\\' && k_end - k < (long)sizeof key - 1) k_end++;
    if (k_end == end || *k_end != '"') return NULL;
    memcpy(key, k, (size_t)(k_end - k));
    key[k_end - k] = 0;
    p = skip_space(k_end + 1, end);
    if (p == end || *p != ':') return NULL;
    p = skip_space(p + 1, end);
    const char *v_end = value_end(p, end);
    if (!v_end || v_end == p) return NULL;
    int big = 0;
    while (big < 3 && strcmp(key, big_arrays[big]) != 0) big++;
    cJSON *item = big < 3 ? cJSON_CreateArray() : parse_piece(p, v_end);
    if (big < 3) arrays[big] = (json_text){p, v_end};
    if (!item) return NULL;
    if (big == 3) { /* parse_piece's arena is scratch: keep a copy */
      cJSON *copy = cJSON_Duplicate(item, true);
      if (!copy) return NULL;
      item = copy;
    }
    cJSON_AddItemToObject(root, key, item);
    p = skip_space(v_end, end);
    if (p < end && *p == ',') {
      p = skip_space(p + 1, end);
      continue;
    }
    if (p < end && *p == '}') return skip_space(p + 1, end) == end ? root : NULL;
    return NULL;
  }
}

/* The graph by the fast path, or NULL (nothing reported) to use the full
 * parse instead. */
static ppcc_graph *load_fast(const char *json, size_t len, const char *default_name, ppcc_diag *d) {
  if (len >= 3 && memcmp(json, "\xEF\xBB\xBF", 3) == 0) {
    json += 3;
    len -= 3;
  }
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, d->file, NULL);
  bool truncated;
  if (len > MAX_FILE_BYTES || check_raw_text(json, len, &truncated, &quiet) != PPCC_OK || truncated) return NULL;
  cJSON_Hooks hooks = {json_arena_alloc, json_arena_keep};
  json_arena = NULL;
  piece_arena = NULL;
  cJSON_InitHooks(&hooks);
  json_text arrays[3] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
  cJSON *root = split_top_level(json, json + len, arrays);
  ppcc_graph *g = root ? build_graph(root, arrays, default_name, &quiet) : NULL;
  cJSON_InitHooks(NULL);
  json_blocks_free(json_arena);
  json_blocks_free(piece_arena);
  json_arena = piece_arena = NULL;
  if (g && quiet.errors) { /* cannot happen: build_graph returns NULL on errors */
    ppcc_graph_free(g);
    g = NULL;
  }
  return g;
}

/* Parses and builds the graph; owned_json (the text, when the loader read
 * it) is freed as soon as the tree holds its own copies, and the tree once
 * the graph is built, so the three never all live at once. */
static ppcc_graph *load(const char *json, size_t len, char *owned_json, const char *default_name, ppcc_diag *d) {
  ppcc_graph *fast = load_fast(json, len, default_name, d);
  if (fast) {
    free(owned_json);
    return fast;
  }
  json_block *blocks;
  cJSON *root = parse_json(json, len, &blocks, d);
  free(owned_json);
  ppcc_graph *g = root ? build_graph(root, NULL, default_name, d) : NULL;
  json_blocks_free(blocks);
  return g;
}

ppcc_graph *ppcc_load_model_string(const char *json, size_t len, ppcc_diag *d) {
  return load(json, len, NULL, "model", d);
}

/* "dir/ppffn.json" -> "ppffn" */
static void file_stem(const char *path, char *out, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 5 && strcmp(base + len - 5, ".json") == 0) len -= 5;
  if (len == 0 || len >= n) {
    snprintf(out, n, "model");
    return;
  }
  memcpy(out, base, len);
  out[len] = 0;
}

ppcc_graph *ppcc_load_model_file(const char *path, ppcc_diag *d) {
  size_t len;
  char *text = ppcc_read_file(path, &len, d);
  if (!text) return NULL;
  char stem[PPCC_MAX_NAME + 1];
  file_stem(path, stem, sizeof stem);
  ppcc_graph *g = load(text, len, text, stem, d);
  if (g) {
    g->source_file = ppcc_strdup(g, path);
    if (!g->source_file) {
      out_of_memory(d);
      ppcc_graph_free(g);
      return NULL;
    }
  }
  return g;
}
