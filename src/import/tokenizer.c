/* Text -> ids and ids -> text for the tokenizers of tokenizer.h: special
 * tokens first, then normalization (spaces to U+2581, a prefix), the
 * pre-tokenizer's words, and merges inside each word. Loading lives in
 * tokenizer_load.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tokenizer.h"

/* ---- maps ---- */

uint64_t tok_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h ? h : 1;
}

static bool map_grow(tok_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  uint64_t *keys = calloc(cap, sizeof *keys);
  int64_t *vals = malloc(cap * sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    return false;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      size_t j = (size_t)(m->keys[i] * 0x9E3779B97F4A7C15ULL >> 7) & (cap - 1);
      while (keys[j]) j = (j + 1) & (cap - 1);
      keys[j] = m->keys[i];
      vals[j] = m->vals[i];
    }
  free(m->keys);
  free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return true;
}

static size_t map_slot(const tok_map *m, uint64_t key) {
  size_t j = (size_t)(key * 0x9E3779B97F4A7C15ULL >> 7) & (m->cap - 1);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  return j;
}

bool tok_map_put(tok_map *m, uint64_t key, int64_t val) {
  if ((m->count + 1) * 2 > m->cap && !map_grow(m)) return false;
  size_t j = map_slot(m, key);
  if (!m->keys[j]) m->count++;
  m->keys[j] = key;
  m->vals[j] = val;
  return true;
}

int64_t *tok_map_get(const tok_map *m, uint64_t key) {
  if (!m->cap) return NULL;
  size_t j = map_slot(m, key);
  return m->keys[j] ? &m->vals[j] : NULL;
}

long tok_find(const tokenizer *t, const char *s, size_t n) {
  const int64_t *v = tok_map_get(&t->by_text, tok_hash(s, n));
  if (!v) return -1;
  long id = (long)*v;
  return t->len[id] == n && memcmp(t->text[id], s, n) == 0 ? id : -1;
}

bool tok_add_token(tokenizer *t, long id, const char *s, size_t n) {
  char *copy = malloc(n + 1);
  if (!copy) return false;
  memcpy(copy, s, n);
  copy[n] = 0;
  free(t->text[id]);
  t->text[id] = copy;
  t->len[id] = n;
  return tok_map_put(&t->by_text, tok_hash(s, n), id);
}

/* GPT-2's map: printable bytes stay, the others take 256, 257, ... in order. */
uint32_t tok_byte_char(unsigned b) {
  if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
  unsigned n = 0;
  for (unsigned c = 0; c < b; c++)
    if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) n++;
  return 256 + n;
}

static int utf8_put(uint32_t cp, char *out) {
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000)
    return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)), out[2] = (char)(0x80 | (cp & 0x3F)), 3;
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Length of the UTF-8 character at s (1 for a malformed byte) and its code
 * point (U+FFFD when malformed). */
static int utf8_next(const char *s, size_t n, uint32_t *cp) {
  const unsigned char *u = (const unsigned char *)s;
  int len = u[0] < 0x80 ? 1 : (u[0] >> 5) == 6 ? 2 : (u[0] >> 4) == 14 ? 3 : (u[0] >> 3) == 30 ? 4 : 0;
  if (len == 0 || (size_t)len > n) return *cp = 0xFFFD, 1;
  uint32_t v = len == 1 ? u[0] : len == 2 ? u[0] & 0x1Fu : len == 3 ? u[0] & 0x0Fu : u[0] & 0x07u;
  for (int i = 1; i < len; i++) {
    if ((u[i] & 0xC0) != 0x80) return *cp = 0xFFFD, 1;
    v = v << 6 | (u[i] & 0x3Fu);
  }
  *cp = v;
  return len;
}

/* ---- Unicode NFC (UAX #15): decompose, order marks by class, compose ---- */

enum { HANGUL_S = 0xAC00, HANGUL_L = 0x1100, HANGUL_V = 0x1161, HANGUL_T = 0x11A7, HANGUL_L_COUNT = 19,
       HANGUL_V_COUNT = 21, HANGUL_T_COUNT = 28, HANGUL_S_COUNT = 11172 };
/* a byte that is not well-formed UTF-8: kept as is, a starter that composes with nothing */
#define NFC_RAW_BYTE 0x80000000u

/* Length of the well-formed UTF-8 character at s (its code point in *cp),
 * 0 where s starts with a byte that begins none (malformed, cut, overlong,
 * a surrogate or above U+10FFFF). */
static int utf8_well_formed(const char *s, size_t n, uint32_t *cp) {
  int k = utf8_next(s, n, cp);
  if (k == 1) return (unsigned char)s[0] < 0x80 ? 1 : 0;
  if ((k == 2 && *cp < 0x80) || (k == 3 && (*cp < 0x800 || (*cp >= 0xD800 && *cp <= 0xDFFF))) ||
      (k == 4 && (*cp < 0x10000 || *cp > 0x10FFFF)))
    return 0;
  return k;
}

static int nfc_decompose(uint32_t c, uint32_t *out) {
  if (c >= HANGUL_S && c < HANGUL_S + HANGUL_S_COUNT) {
    uint32_t s = c - HANGUL_S;
    out[0] = HANGUL_L + s / (HANGUL_V_COUNT * HANGUL_T_COUNT);
    out[1] = HANGUL_V + s % (HANGUL_V_COUNT * HANGUL_T_COUNT) / HANGUL_T_COUNT;
    if (s % HANGUL_T_COUNT == 0) return 2;
    out[2] = HANGUL_T + s % HANGUL_T_COUNT;
    return 3;
  }
  int k = c & NFC_RAW_BYTE ? 0 : tok_canonical_decomposition(c, out);
  if (k == 0) out[k++] = c;
  return k;
}

static uint32_t nfc_compose(uint32_t a, uint32_t b) {
  if (a >= HANGUL_L && a < HANGUL_L + HANGUL_L_COUNT && b >= HANGUL_V && b < HANGUL_V + HANGUL_V_COUNT)
    return HANGUL_S + ((a - HANGUL_L) * HANGUL_V_COUNT + (b - HANGUL_V)) * HANGUL_T_COUNT;
  if (a >= HANGUL_S && a < HANGUL_S + HANGUL_S_COUNT && (a - HANGUL_S) % HANGUL_T_COUNT == 0 && b > HANGUL_T &&
      b < HANGUL_T + HANGUL_T_COUNT)
    return a + (b - HANGUL_T);
  return (a | b) & NFC_RAW_BYTE ? 0 : tok_primary_composite(a, b);
}

bool tok_nfc(const char *s, size_t n, char **out, size_t *out_len) {
  /* every code point takes at least one byte and decomposes into at most TOK_MAX_DECOMPOSITION */
  uint32_t *c = malloc(sizeof *c * (n * TOK_MAX_DECOMPOSITION + 1));
  unsigned char *cls = malloc(n * TOK_MAX_DECOMPOSITION + 1);
  char *o = NULL;
  if (!c || !cls) goto fail;
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int k = utf8_well_formed(s + i, n - i, &cp);
    size_t first = m;
    m += (size_t)nfc_decompose(k ? cp : NFC_RAW_BYTE | (unsigned char)s[i], c + m);
    i += k ? (size_t)k : 1;
    /* canonical order: each mark moves back past the marks of a higher class (stable) */
    for (size_t j = first; j < m; j++) {
      cls[j] = (unsigned char)(c[j] & NFC_RAW_BYTE ? 0 : tok_combining_class(c[j]));
      for (size_t q = j; q > 0 && cls[q] != 0 && cls[q - 1] > cls[q]; q--) {
        uint32_t tc = c[q];
        unsigned char tk = cls[q];
        c[q] = c[q - 1], cls[q] = cls[q - 1];
        c[q - 1] = tc, cls[q - 1] = tk;
      }
    }
  }
  /* compose each character with the last starter unless a mark of the same
   * or a higher class (or a starter) stands between them */
  size_t w = 0, starter = SIZE_MAX;
  int last = 0;
  for (size_t i = 0; i < m; i++) {
    uint32_t comp = 0;
    if (starter != SIZE_MAX && (starter + 1 == w || last < cls[i])) comp = nfc_compose(c[starter], c[i]);
    if (comp) {
      c[starter] = comp;
      continue;
    }
    if (cls[i] == 0) starter = w;
    last = cls[i];
    c[w] = c[i], cls[w] = cls[i];
    w++;
  }
  o = malloc(w * 4 + 1);
  if (!o) goto fail;
  size_t len = 0;
  for (size_t i = 0; i < w; i++) {
    if (c[i] & NFC_RAW_BYTE) o[len++] = (char)(c[i] & 0xFF);
    else len += (size_t)utf8_put(c[i], o + len);
  }
  o[len] = 0;
  free(c);
  free(cls);
  *out = o;
  *out_len = len;
  return true;
fail:
  free(c);
  free(cls);
  return false;
}

bool tok_finish(tokenizer *t) {
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->byte_id[b] = tok_find(t, name, 6);
  }
  t->n_specials = 0;
  for (long i = 0; i < t->n_vocab; i++)
    if (t->literal[i] && t->len[i]) t->n_specials++;
  free(t->specials);
  t->specials = malloc(sizeof *t->specials * (size_t)(t->n_specials + 1));
  if (!t->specials) return false;
  for (long i = 0, k = 0; i < t->n_vocab; i++)
    if (t->literal[i] && t->len[i]) t->specials[k++] = i;
  /* longest first, so "<|im_start|>" wins over a shorter token it starts with */
  for (long i = 1; i < t->n_specials; i++)
    for (long j = i; j > 0 && t->len[t->specials[j - 1]] < t->len[t->specials[j]]; j--) {
      long tmp = t->specials[j];
      t->specials[j] = t->specials[j - 1];
      t->specials[j - 1] = tmp;
    }
  return true;
}

void tokenizer_free(tokenizer *t) {
  if (!t) return;
  for (long i = 0; i < t->n_vocab; i++) free(t->text[i]);
  free(t->text);
  free(t->len);
  free(t->score);
  free(t->special);
  free(t->literal);
  free(t->by_text.keys);
  free(t->by_text.vals);
  free(t->pairs.keys);
  free(t->pairs.vals);
  free(t->specials);
  free(t);
}

bool tokenizer_is_eos(const tokenizer *t, int64_t id) {
  for (int i = 0; i < t->n_eos; i++)
    if (t->eos[i] == id) return true;
  return false;
}

/* ---- growable buffers ---- */

typedef struct ids_buf {
  int64_t *ids;
  long n, cap;
} ids_buf;

static bool push_id(ids_buf *b, int64_t id) {
  if (b->n == b->cap) {
    long cap = b->cap ? b->cap * 2 : 64;
    int64_t *p = realloc(b->ids, sizeof *p * (size_t)cap);
    if (!p) return false;
    b->ids = p;
    b->cap = cap;
  }
  b->ids[b->n++] = id;
  return true;
}

static bool append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap : 64);
    while (c < *len + n + 1) c *= 2;
    char *p = realloc(*buf, c);
    if (!p) return false;
    *buf = p;
    *cap = c;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = 0;
  return true;
}

/* ---- pre-tokenizer patterns ---- */

static bool is_space(uint32_t c) {
  return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
static bool is_other(uint32_t c) { return !is_space(c) && !tok_is_letter(c) && !tok_is_number(c); }
static bool is_newline(uint32_t c) { return c == '\r' || c == '\n'; }
static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at i: their length, else 0 */
static long contraction(const uint32_t *c, long n, long i, bool any_case) {
  if (c[i] != '\'' || i + 1 >= n) return 0;
  uint32_t a = any_case ? lower_ascii(c[i + 1]) : c[i + 1];
  uint32_t b = i + 2 < n ? (any_case ? lower_ascii(c[i + 2]) : c[i + 2]) : 0;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return a == 's' || a == 't' || a == 'm' || a == 'd' ? 2 : 0;
}

/* \s+(?!\S)|\s+ at a whitespace character i */
static long spaces(const uint32_t *c, long n, long i) {
  long k = i;
  while (k < n && is_space(c[k])) k++;
  if (k == n || k - i == 1) return k - i;
  return k - i - 1;
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static long match_gpt2(const uint32_t *c, long n, long i) {
  long k = contraction(c, n, i, false);
  if (k) return k;
  long j = i + (c[i] == ' ' && i + 1 < n);
  bool (*classes[3])(uint32_t) = {tok_is_letter, tok_is_number, is_other};
  for (int q = 0; q < 3; q++)
    if (classes[q](c[j])) {
      long e = j;
      while (e < n && classes[q](c[e])) e++;
      return e - i;
    }
  return is_space(c[i]) ? spaces(c, n, i) : 1;
}

/* Qwen2 (digits 1) and Llama 3 (digits up to 3):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}
 * | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static long match_qwen2(const uint32_t *c, long n, long i, int max_digits) {
  long k = contraction(c, n, i, true);
  if (k) return k;
  long j = i;
  if (!is_newline(c[i]) && !tok_is_letter(c[i]) && !tok_is_number(c[i]) && i + 1 < n && tok_is_letter(c[i + 1])) j++;
  if (tok_is_letter(c[j])) {
    while (j < n && tok_is_letter(c[j])) j++;
    return j - i;
  }
  if (tok_is_number(c[i])) {
    for (j = i; j < n && j - i < max_digits && tok_is_number(c[j]);) j++;
    return j - i;
  }
  j = i + (c[i] == ' ' && i + 1 < n);
  if (is_other(c[j])) {
    while (j < n && is_other(c[j])) j++;
    while (j < n && is_newline(c[j])) j++;
    return j - i;
  }
  if (!is_space(c[i])) return 1;
  long e = i, last_newline = -1;
  while (e < n && is_space(c[e])) {
    if (is_newline(c[e])) last_newline = e;
    e++;
  }
  if (last_newline >= 0) return last_newline + 1 - i;
  return spaces(c, n, i);
}

/* ---- merges inside one word ---- */

typedef struct sym {
  size_t off, n;
  long id;
} sym;

/* Priority of merging syms[i] and syms[i + 1] (lower is first); NO_MERGE if
 * they do not merge. *merged: the merged id. */
#define NO_MERGE 1e300
static double pair_priority(const tokenizer *t, const char *w, const sym *a, const sym *b, long *merged) {
  if (t->merge == TOK_MERGE_BY_RANK) {
    if (a->id < 0 || b->id < 0) return NO_MERGE;
    const int64_t *v = tok_map_get(&t->pairs, (uint64_t)(a->id + 1) << 32 | (uint64_t)(b->id + 1));
    if (!v) return NO_MERGE;
    *merged = (long)(*v & 0xFFFFFFFF);
    return (double)(*v >> 32);
  }
  long id = tok_find(t, w + a->off, a->n + b->n);
  if (id < 0) return NO_MERGE;
  *merged = id;
  return -(double)t->score[id]; /* highest score first */
}

static bool emit_unknown(const tokenizer *t, const char *s, size_t n, ids_buf *out) {
  for (size_t i = 0; i < n; i++) {
    long b = t->byte_fallback ? t->byte_id[(unsigned char)s[i]] : -1;
    if (b < 0) { /* no byte token: one unk for the whole piece */
      if (t->unk >= 0 && !(out->n && out->ids[out->n - 1] == t->unk) && !push_id(out, t->unk)) return false;
      return true;
    }
    if (!push_id(out, b)) return false;
  }
  return true;
}

static bool encode_word(const tokenizer *t, const char *w, size_t n, ids_buf *out) {
  if (n == 0) return true;
  if (t->ignore_merges) {
    long id = tok_find(t, w, n);
    if (id >= 0) return push_id(out, id);
  }
  sym *s = malloc(sizeof *s * n);
  double *prio = malloc(sizeof *prio * n);
  long *merged = malloc(sizeof *merged * n);
  bool ok = s && prio && merged;
  long ns = 0;
  for (size_t i = 0; ok && i < n;) {
    uint32_t cp;
    int len = utf8_next(w + i, n - i, &cp);
    s[ns] = (sym){i, (size_t)len, tok_find(t, w + i, (size_t)len)};
    ns++;
    i += (size_t)len;
  }
  for (long i = 0; ok && i + 1 < ns; i++) prio[i] = pair_priority(t, w, &s[i], &s[i + 1], &merged[i]);
  while (ok && ns > 1) {
    long best = -1;
    for (long i = 0; i + 1 < ns; i++)
      if (prio[i] < NO_MERGE && (best < 0 || prio[i] < prio[best])) best = i;
    if (best < 0) break;
    s[best].n += s[best + 1].n;
    s[best].id = merged[best];
    memmove(&s[best + 1], &s[best + 2], sizeof *s * (size_t)(ns - best - 2));
    memmove(&prio[best + 1], &prio[best + 2], sizeof *prio * (size_t)(ns - best - 2 > 0 ? ns - best - 2 : 0));
    memmove(&merged[best + 1], &merged[best + 2], sizeof *merged * (size_t)(ns - best - 2 > 0 ? ns - best - 2 : 0));
    ns--;
    if (best > 0) prio[best - 1] = pair_priority(t, w, &s[best - 1], &s[best], &merged[best - 1]);
    if (best + 1 < ns) prio[best] = pair_priority(t, w, &s[best], &s[best + 1], &merged[best]);
  }
  for (long i = 0; ok && i < ns; i++)
    ok = s[i].id >= 0 ? push_id(out, s[i].id) : emit_unknown(t, w + s[i].off, s[i].n, out);
  free(s);
  free(prio);
  free(merged);
  return ok;
}

/* One stretch of text between special tokens: normalize, cut into words,
 * map bytes (byte-level), merge. */
static bool encode_segment(const tokenizer *t, const char *text, size_t n, bool at_start, ids_buf *out) {
  char *norm = NULL, *nfc = NULL;
  size_t len = 0, cap = 0;
  bool ok = true;
  if (t->nfc && n > 0) {
    if (!tok_nfc(text, n, &nfc, &n)) return false;
    text = nfc;
  }
  static const char meta[] = "\xe2\x96\x81";
  if (n > 0 && t->prefix_meta && (at_start || !t->prefix_first_only)) {
    if (t->space_to_meta && !(t->prefix_if_absent && text[0] == ' ')) ok = append(&norm, &len, &cap, meta, 3);
    else if (!t->space_to_meta && text[0] != ' ') ok = append(&norm, &len, &cap, " ", 1);
  }
  for (size_t i = 0; ok && i < n; i++)
    ok = t->space_to_meta && text[i] == ' ' ? append(&norm, &len, &cap, meta, 3) : append(&norm, &len, &cap, &text[i], 1);
  if (!ok || len == 0) {
    free(norm);
    free(nfc);
    return ok;
  }
  /* code points and their byte offsets */
  uint32_t *cp = malloc(sizeof *cp * (len + 1));
  size_t *at = malloc(sizeof *at * (len + 1));
  char *word = malloc(len * 2 + 1);
  ok = cp && at && word;
  long ncp = 0;
  for (size_t i = 0; ok && i < len;) {
    at[ncp] = i;
    i += (size_t)utf8_next(norm + i, len - i, &cp[ncp]);
    ncp++;
  }
  if (ok) at[ncp] = len;
  for (long i = 0; ok && i < ncp;) {
    long k = ncp - i;
    if (t->pre == TOK_PRE_GPT2) k = match_gpt2(cp, ncp, i);
    else if (t->pre == TOK_PRE_QWEN2 || t->pre == TOK_PRE_LLAMA3) k = match_qwen2(cp, ncp, i, t->pre == TOK_PRE_QWEN2 ? 1 : 3);
    else if (t->pre == TOK_PRE_METASPACE) /* words start at each U+2581 */
      for (k = 1; i + k < ncp && cp[i + k] != 0x2581;) k++;
    const char *w = norm + at[i];
    size_t wn = at[i + k] - at[i];
    if (t->byte_level) { /* each byte as GPT-2's printable character */
      size_t m = 0;
      for (size_t b = 0; b < wn; b++) m += (size_t)utf8_put(tok_byte_char((unsigned char)w[b]), word + m);
      ok = encode_word(t, word, m, out);
    } else {
      ok = encode_word(t, w, wn, out);
    }
    i += k;
  }
  free(cp);
  free(at);
  free(word);
  free(norm);
  free(nfc);
  return ok;
}

ppcc_status tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_special, int64_t **ids, long *n,
                             ppcc_diag *d) {
  ids_buf out = {0};
  bool ok = true;
  for (int i = 0; add_special && ok && i < t->n_prefix; i++) ok = push_id(&out, t->prefix[i]);
  size_t start = 0;
  for (size_t i = 0; ok && i <= len;) {
    long hit = -1;
    for (long k = 0; i < len && k < t->n_specials && hit < 0; k++) {
      long id = t->specials[k];
      if (t->text[id][0] == text[i] && t->len[id] <= len - i && memcmp(t->text[id], text + i, t->len[id]) == 0) hit = id;
    }
    if (hit < 0 && i < len) {
      i++;
      continue;
    }
    ok = encode_segment(t, text + start, i - start, start == 0, &out);
    if (hit >= 0) {
      ok = ok && push_id(&out, hit);
      i += t->len[hit];
      start = i;
    } else {
      break;
    }
  }
  for (int i = 0; add_special && ok && i < t->n_suffix; i++) ok = push_id(&out, t->suffix[i]);
  if (!ok) {
    free(out.ids);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  *ids = out.ids ? out.ids : malloc(sizeof **ids);
  *n = out.n;
  return *ids ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
}

bool tokenizer_piece(const tokenizer *t, int64_t id, bool first, bool skip_special, char **buf, size_t *len,
                     size_t *cap) {
  if (id < 0 || id >= t->n_vocab || !t->text[id]) return true;
  if (skip_special && t->special[id]) return true;
  const char *s = t->text[id];
  size_t n = t->len[id], start = *len;
  bool ok = true;
  if (t->literal[id]) {
    ok = append(buf, len, cap, s, n);
  } else if (t->byte_level) {
    for (size_t i = 0; ok && i < n;) {
      uint32_t cp;
      int k = utf8_next(s + i, n - i, &cp);
      char b = 0;
      bool mapped = false;
      for (unsigned v = 0; v < 256 && !mapped; v++)
        if (tok_byte_char(v) == cp) b = (char)v, mapped = true;
      ok = mapped ? append(buf, len, cap, &b, 1) : append(buf, len, cap, s + i, (size_t)k);
      i += (size_t)k;
    }
  } else {
    int byte = -1;
    for (int b = 0; t->byte_fallback && b < 256 && byte < 0; b++)
      if (t->byte_id[b] == id) byte = b;
    if (byte >= 0) {
      char c = (char)byte;
      ok = append(buf, len, cap, &c, 1);
    }
    for (size_t i = 0; byte < 0 && ok && i < n;) {
      bool meta = i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0;
      ok = meta ? append(buf, len, cap, " ", 1) : append(buf, len, cap, s + i, 1);
      i += meta ? 3 : 1;
    }
  }
  if (ok && first && t->strip_first_space && *len > start && (*buf)[start] == ' ') {
    memmove(*buf + start, *buf + start + 1, *len - start - 1);
    (*buf)[--*len] = 0;
  }
  return ok;
}

/* ---- streamed, lossy decoding ---- */

void tok_stream_init(tok_stream *s, const tokenizer *t) { *s = (tok_stream){.t = t, .first = true}; }

static const char replacement[] = "\xef\xbf\xbd";

/* Length of the valid UTF-8 character at s[0..n): > 0 valid, 0 when s may
 * still become one (incomplete), < 0: -(length of the maximal invalid part). */
static int utf8_check(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  int len;
  unsigned lo = 0x80, hi = 0xBF;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) len = 2;
  else if (s[0] >= 0xE0 && s[0] <= 0xEF) len = 3, lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;
  else if (s[0] >= 0xF0 && s[0] <= 0xF4) len = 4, lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;
  else return -1;
  for (int i = 1; i < len; i++) {
    if ((size_t)i >= n) return 0;
    if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF)) return -i;
  }
  return len;
}

/* Writes the complete characters of s->pending (U+FFFD for invalid parts);
 * keeps an incomplete tail unless flush. */
static bool drain_utf8(tok_stream *s, bool flush, char **buf, size_t *len, size_t *cap) {
  size_t i = 0;
  bool ok = true;
  while (ok && i < s->n_pending) {
    int k = utf8_check((const unsigned char *)s->pending + i, s->n_pending - i);
    if (k == 0 && !flush) break;
    if (k > 0) ok = append(buf, len, cap, s->pending + i, (size_t)k), i += (size_t)k;
    else ok = append(buf, len, cap, replacement, 3), i += k == 0 ? s->n_pending - i : (size_t)-k;
  }
  memmove(s->pending, s->pending + i, s->n_pending - i);
  s->n_pending -= i;
  return ok;
}

/* A run of <0xXX> tokens: valid UTF-8 as a whole, else U+FFFD per byte. */
static bool drain_byte_run(tok_stream *s, char **buf, size_t *len, size_t *cap) {
  bool valid = true, ok = true;
  for (size_t i = 0; valid && i < s->n_pending;) {
    int k = utf8_check((const unsigned char *)s->pending + i, s->n_pending - i);
    valid = k > 0;
    i += k > 0 ? (size_t)k : 0;
  }
  if (valid) ok = append(buf, len, cap, s->pending, s->n_pending);
  for (size_t i = 0; !valid && ok && i < s->n_pending; i++) ok = append(buf, len, cap, replacement, 3);
  s->n_pending = 0;
  s->pending_bytes = false;
  return ok;
}

bool tok_stream_push(tok_stream *s, int64_t id, char **buf, size_t *len, size_t *cap) {
  const tokenizer *t = s->t;
  if (id < 0 || id >= t->n_vocab || !t->text[id] || t->special[id]) return true;
  char *piece = NULL;
  size_t n = 0, c = 0;
  if (!tokenizer_piece(t, id, s->first, false, &piece, &n, &c)) return false;
  bool is_byte = false;
  for (int b = 0; t->byte_fallback && !t->byte_level && b < 256 && !is_byte; b++) is_byte = t->byte_id[b] == id;
  bool ok = true;
  if (!t->byte_level && !is_byte && s->pending_bytes) ok = drain_byte_run(s, buf, len, cap);
  if (s->first && n) s->first = false;
  for (size_t i = 0; ok && i < n; i++) { /* pending stays short: drain whenever it fills */
    if (s->n_pending == sizeof s->pending)
      ok = s->pending_bytes ? drain_byte_run(s, buf, len, cap) : drain_utf8(s, true, buf, len, cap);
    s->pending[s->n_pending++] = piece[i];
  }
  s->pending_bytes = s->pending_bytes || is_byte;
  if (ok && !s->pending_bytes) ok = drain_utf8(s, false, buf, len, cap);
  free(piece);
  return ok;
}

bool tok_stream_end(tok_stream *s, char **buf, size_t *len, size_t *cap) {
  return s->pending_bytes ? drain_byte_run(s, buf, len, cap) : drain_utf8(s, true, buf, len, cap);
}
