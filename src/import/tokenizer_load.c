/* Loading the tokenizers of tokenizer.h: GGUF metadata (tokenizer.ggml.*,
 * as llama.cpp's convert_hf_to_gguf.py writes it) or a Hugging Face
 * tokenizer.json (the `tokenizers` library's format). What ppcc does not
 * implement is refused in one line naming the key and its value. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "../runtime/io/io.h"
#include "ppcc/io.h"
#include "tokenizer.h"

static tokenizer *tok_alloc(long n) {
  tokenizer *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->n_vocab = n;
  t->text = calloc((size_t)n + 1, sizeof *t->text);
  t->len = calloc((size_t)n + 1, sizeof *t->len);
  t->score = calloc((size_t)n + 1, sizeof *t->score);
  t->special = calloc((size_t)n + 1, sizeof *t->special);
  t->literal = calloc((size_t)n + 1, sizeof *t->literal);
  t->unk = -1;
  if (!t->text || !t->len || !t->score || !t->special || !t->literal) {
    tokenizer_free(t);
    return NULL;
  }
  return t;
}

/* "a b" (or the two strings) -> a merge of rank `rank` */
static bool add_merge(tokenizer *t, const char *a, size_t an, const char *b, size_t bn, long rank) {
  long x = tok_find(t, a, an), y = tok_find(t, b, bn);
  if (x < 0 || y < 0) return true; /* a merge of pieces the vocabulary lacks never applies */
  char *both = malloc(an + bn + 1);
  if (!both) return false;
  memcpy(both, a, an);
  memcpy(both + an, b, bn);
  long m = tok_find(t, both, an + bn);
  free(both);
  if (m < 0) return true;
  uint64_t key = (uint64_t)(x + 1) << 32 | (uint64_t)(y + 1);
  if (tok_map_get(&t->pairs, key)) return true; /* the first (best) rank stays */
  return tok_map_put(&t->pairs, key, (int64_t)rank << 32 | m);
}

/* ---- GGUF ---- */

static const rt_gguf_kv *array_kv(const rt_gguf *g, const char *key, uint32_t type, ppcc_diag *d, ppcc_status *st) {
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  if (!kv) return NULL;
  if (kv->type != GGUF_KV_ARRAY || (type == GGUF_KV_STRING ? kv->array_type != GGUF_KV_STRING
                                                            : kv->array_type == GGUF_KV_STRING || kv->array_type == GGUF_KV_ARRAY))
    *st = ppcc_error(d, "%s: metadata key '%s' must be an array of %s", g->file.path, key,
                     type == GGUF_KV_STRING ? "strings" : "numbers");
  return kv;
}

static long gguf_id(const rt_gguf *g, const char *key, long n_vocab, ppcc_diag *d, ppcc_status *st) {
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  if (!kv) return -1;
  if (kv->type == GGUF_KV_STRING || kv->type == GGUF_KV_ARRAY || !(kv->number >= 0) || kv->number >= (double)n_vocab) {
    *st = ppcc_error(d, "%s: metadata key '%s' must be a token id below %ld", g->file.path, key, n_vocab);
    return -1;
  }
  return (long)kv->number;
}

static bool gguf_flag(const rt_gguf *g, const char *key, bool dflt) {
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  return kv && kv->type == GGUF_KV_BOOL ? kv->number != 0 : dflt;
}

static ppcc_status tokenizer_from_gguf(const rt_gguf *g, tokenizer **out, ppcc_diag *d) {
  const char *path = g->file.path;
  const rt_gguf_kv *model = rt_gguf_find_kv(g, "tokenizer.ggml.model");
  if (!model || !model->string) return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.model' is missing (no tokenizer)", path);
  bool spm = strcmp(model->string, "llama") == 0;
  if (!spm && strcmp(model->string, "gpt2") != 0)
    return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.model': tokenizer '%.60s' is not supported (llama, gpt2)", path,
                      model->string);
  ppcc_status st = PPCC_OK;
  const rt_gguf_kv *tokens = array_kv(g, "tokenizer.ggml.tokens", GGUF_KV_STRING, d, &st);
  const rt_gguf_kv *scores = array_kv(g, "tokenizer.ggml.scores", GGUF_KV_F32, d, &st);
  const rt_gguf_kv *types = array_kv(g, "tokenizer.ggml.token_type", GGUF_KV_I32, d, &st);
  const rt_gguf_kv *merges = array_kv(g, "tokenizer.ggml.merges", GGUF_KV_STRING, d, &st);
  if (st) return st;
  if (!tokens || tokens->array_count == 0 || tokens->array_count > (1u << 24))
    return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.tokens' is missing or empty", path);
  long n = (long)tokens->array_count;
  if ((scores && (long)scores->array_count != n) || (types && (long)types->array_count != n))
    return ppcc_error(d, "%s: metadata keys 'tokenizer.ggml.scores'/'token_type' must have one entry per token (%ld)", path, n);
  if (spm && !scores) return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.scores' is missing (llama tokenizer)", path);
  if (!spm && !merges) return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.merges' is missing (gpt2 tokenizer)", path);
  tokenizer *t = tok_alloc(n);
  if (!t) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  const unsigned char *at = tokens->array_data;
  bool ok = true;
  for (long i = 0; ok && i < n; i++) {
    uint64_t len;
    const char *s = rt_gguf_array_next_string(&at, &len);
    ok = tok_add_token(t, i, s, (size_t)len);
    if (scores) t->score[i] = (float)rt_gguf_array_number(scores, (uint64_t)i);
    int type = types ? (int)rt_gguf_array_number(types, (uint64_t)i) : 1;
    t->special[i] = type == 3 || type == 5;   /* CONTROL; UNUSED ([PADi] fillers) decode to nothing too */
    t->literal[i] = type == 3 || type == 4; /* and USER_DEFINED: matched in raw text */
  }
  if (spm) {
    t->merge = TOK_MERGE_BY_SCORE;
    t->space_to_meta = true;
    t->byte_fallback = true;
    t->prefix_meta = gguf_flag(g, "tokenizer.ggml.add_space_prefix", true);
    t->strip_first_space = t->prefix_meta;
  } else {
    t->merge = TOK_MERGE_BY_RANK;
    t->byte_level = true;
    const rt_gguf_kv *pre = rt_gguf_find_kv(g, "tokenizer.ggml.pre");
    const char *p = pre && pre->string ? pre->string : "default";
    if (strcmp(p, "default") == 0 || strcmp(p, "gpt-2") == 0) t->pre = TOK_PRE_GPT2;
    else if (strcmp(p, "qwen2") == 0) t->pre = TOK_PRE_QWEN2;
    else if (strcmp(p, "llama-bpe") == 0 || strcmp(p, "llama3") == 0) t->pre = TOK_PRE_LLAMA3, t->ignore_merges = true;
    else {
      tokenizer_free(t);
      return ppcc_error(d, "%s: metadata key 'tokenizer.ggml.pre': pre-tokenizer '%.60s' is not supported (gpt-2, qwen2, llama-bpe)",
                        path, p);
    }
    at = merges->array_data;
    for (uint64_t r = 0; ok && r < merges->array_count; r++) {
      uint64_t len;
      const char *s = rt_gguf_array_next_string(&at, &len);
      const char *sp = memchr(s, ' ', (size_t)len);
      if (sp) ok = add_merge(t, s, (size_t)(sp - s), sp + 1, (size_t)(len - (uint64_t)(sp - s) - 1), (long)r);
    }
  }
  long bos = gguf_id(g, "tokenizer.ggml.bos_token_id", n, d, &st);
  long eos = gguf_id(g, "tokenizer.ggml.eos_token_id", n, d, &st);
  t->unk = gguf_id(g, "tokenizer.ggml.unknown_token_id", n, d, &st);
  if (!st && bos >= 0 && gguf_flag(g, "tokenizer.ggml.add_bos_token", spm)) t->prefix[t->n_prefix++] = bos;
  if (!st && eos >= 0 && gguf_flag(g, "tokenizer.ggml.add_eos_token", false)) t->suffix[t->n_suffix++] = eos;
  if (eos >= 0) t->eos[t->n_eos++] = eos;
  long eot = gguf_id(g, "tokenizer.ggml.eot_token_id", n, d, &st);
  if (eot >= 0 && eot != eos) t->eos[t->n_eos++] = eot;
  if (ok) ok = tok_finish(t);
  if (!ok && !st) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (st) {
    tokenizer_free(t);
    return st;
  }
  *out = t;
  return PPCC_OK;
}

/* ---- tokenizer.json ---- */

static ppcc_status json_error(ppcc_diag *d, const char *path, const char *key, const char *what, const char *value) {
  if (value) return ppcc_error(d, "%s: key '%s': %s '%.80s'", path, key, what, value);
  return ppcc_error(d, "%s: key '%s': %s", path, key, what);
}

static const char *type_of(const cJSON *o) {
  const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
  return cJSON_IsString(ty) ? ty->valuestring : "";
}

static bool json_flag(const cJSON *o, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key)); }

static const char *json_string(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A normalizer, or a Sequence of them. */
static ppcc_status read_normalizer(const cJSON *n, const char *path, tokenizer *t, ppcc_diag *d) {
  if (!n || cJSON_IsNull(n)) return PPCC_OK;
  const char *ty = type_of(n);
  if (strcmp(ty, "Sequence") == 0) {
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) {
      ppcc_status st = read_normalizer(item, path, t, d);
      if (st) return st;
    }
    return PPCC_OK;
  }
  if (strcmp(ty, "NFC") == 0) {
    t->nfc = true;
    return PPCC_OK;
  }
  if (strcmp(ty, "Prepend") == 0 && json_string(n, "prepend") && strcmp(json_string(n, "prepend"), "\xe2\x96\x81") == 0) {
    t->prefix_meta = true;
    return PPCC_OK;
  }
  if (strcmp(ty, "Replace") == 0) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(n, "pattern");
    const char *from = json_string(pat, "String"), *to = json_string(n, "content");
    if (from && to && strcmp(from, " ") == 0 && strcmp(to, "\xe2\x96\x81") == 0) {
      t->space_to_meta = true;
      return PPCC_OK;
    }
    return json_error(d, path, "normalizer.pattern", "only the replacement of ' ' by U+2581 is supported, not", from ? from : "?");
  }
  return json_error(d, path, "normalizer.type", "normalizer not supported:", ty);
}

static const char *const gpt2_pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char *const qwen2_pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                                         "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const llama3_pattern = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                          "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static ppcc_status read_pre_tokenizer(const cJSON *p, const char *path, tokenizer *t, ppcc_diag *d) {
  if (!p || cJSON_IsNull(p)) return PPCC_OK;
  const char *ty = type_of(p);
  if (strcmp(ty, "Sequence") == 0) {
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) {
      ppcc_status st = read_pre_tokenizer(item, path, t, d);
      if (st) return st;
    }
    return PPCC_OK;
  }
  if (strcmp(ty, "ByteLevel") == 0) {
    t->byte_level = true;
    if (json_flag(p, "add_prefix_space")) t->prefix_meta = true;
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
    if ((!re || cJSON_IsTrue(re)) && t->pre == TOK_PRE_NONE) t->pre = TOK_PRE_GPT2;
    return PPCC_OK;
  }
  if (strcmp(ty, "Split") == 0) {
    const char *re = json_string(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "Regex");
    const char *behavior = json_string(p, "behavior");
    const char *str = json_string(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "String");
    /* Gemma's: a split at ' ' after a normalizer that replaced every ' ' by U+2581 cuts nothing */
    if (str && strcmp(str, " ") == 0 && t->space_to_meta) return PPCC_OK;
    if (json_flag(p, "invert") || !behavior || strcmp(behavior, "Isolated") != 0)
      return json_error(d, path, "pre_tokenizer.behavior", "only Isolated, not inverted, is supported, not", behavior ? behavior : "?");
    if (re && strcmp(re, gpt2_pattern) == 0) t->pre = TOK_PRE_GPT2;
    else if (re && strcmp(re, qwen2_pattern) == 0) t->pre = TOK_PRE_QWEN2;
    else if (re && strcmp(re, llama3_pattern) == 0) t->pre = TOK_PRE_LLAMA3;
    else return json_error(d, path, "pre_tokenizer.pattern", "pattern not supported (GPT-2's, Qwen2's, Llama 3's):", re ? re : "?");
    return PPCC_OK;
  }
  if (strcmp(ty, "Metaspace") == 0) {
    const char *rep = json_string(p, "replacement"), *scheme = json_string(p, "prepend_scheme");
    if (rep && strcmp(rep, "\xe2\x96\x81") != 0) return json_error(d, path, "pre_tokenizer.replacement", "only U+2581 is supported, not", rep);
    t->space_to_meta = true;
    t->prefix_if_absent = true;
    if (!scheme || strcmp(scheme, "always") == 0) t->prefix_meta = true;
    else if (strcmp(scheme, "first") == 0) t->prefix_meta = t->prefix_first_only = true;
    else if (strcmp(scheme, "never") != 0) return json_error(d, path, "pre_tokenizer.prepend_scheme", "unknown scheme", scheme);
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(p, "split");
    if (!split || cJSON_IsTrue(split)) t->pre = TOK_PRE_METASPACE;
    return PPCC_OK;
  }
  return json_error(d, path, "pre_tokenizer.type", "pre-tokenizer not supported:", ty);
}

/* The decoder only decides whether one leading space is dropped. */
static void read_decoder(const cJSON *dec, tokenizer *t) {
  if (!dec || cJSON_IsNull(dec)) return;
  const char *ty = type_of(dec);
  if (strcmp(ty, "Sequence") == 0) {
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(dec, "decoders")) read_decoder(item, t);
  } else if (strcmp(ty, "Strip") == 0) {
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(dec, "start");
    if (cJSON_IsNumber(start) && start->valuedouble >= 1) t->strip_first_space = true;
  } else if (strcmp(ty, "Metaspace") == 0) {
    const char *scheme = json_string(dec, "prepend_scheme");
    if (!scheme || strcmp(scheme, "never") != 0) t->strip_first_space = true;
  }
}

/* TemplateProcessing's "single": special tokens before/after the text. */
static ppcc_status read_post_processor(const cJSON *p, const char *path, tokenizer *t, ppcc_diag *d) {
  if (!p || cJSON_IsNull(p)) return PPCC_OK;
  const char *ty = type_of(p);
  if (strcmp(ty, "Sequence") == 0) {
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "processors")) {
      ppcc_status st = read_post_processor(item, path, t, d);
      if (st) return st;
    }
    return PPCC_OK;
  }
  if (strcmp(ty, "ByteLevel") == 0) return PPCC_OK;
  if (strcmp(ty, "TemplateProcessing") != 0) return json_error(d, path, "post_processor.type", "post-processor not supported:", ty);
  const cJSON *item, *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
  bool after = false;
  cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(p, "single")) {
    if (cJSON_GetObjectItemCaseSensitive(item, "Sequence")) {
      after = true;
      continue;
    }
    const char *name = json_string(cJSON_GetObjectItemCaseSensitive(item, "SpecialToken"), "id");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(specials, name ? name : ""), "ids"), *id;
    if (!name || !cJSON_IsArray(ids)) return json_error(d, path, "post_processor.single", "names an unknown special token", name);
    cJSON_ArrayForEach(id, ids) {
      if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (double)t->n_vocab)
        return json_error(d, path, "post_processor.special_tokens", "id outside the vocabulary for", name);
      int *count = after ? &t->n_suffix : &t->n_prefix;
      if (*count == 4) return json_error(d, path, "post_processor.single", "more than 4 special tokens around the text", NULL);
      (after ? t->suffix : t->prefix)[(*count)++] = (long)id->valuedouble;
    }
  }
  return PPCC_OK;
}

ppcc_status tokenizer_load_hf_json(const char *path, const char *json, size_t len, tokenizer **out, ppcc_diag *d) {
  cJSON *root = cJSON_ParseWithLength(json, len);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ppcc_error(d, "%s: not a JSON object", path);
  }
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  ppcc_status st = PPCC_OK;
  if (!cJSON_IsObject(model)) st = json_error(d, path, "model", "missing", NULL);
  else if (strcmp(type_of(model), "BPE") != 0) st = json_error(d, path, "model.type", "tokenizer model not supported (BPE):", type_of(model));
  else if (!cJSON_IsObject(vocab)) st = json_error(d, path, "model.vocab", "must be an object of token -> id", NULL);
  else if (!cJSON_IsArray(merges)) st = json_error(d, path, "model.merges", "must be a list", NULL);
  long n = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, vocab) {
    if (!st && (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble >= (1 << 24)))
      st = json_error(d, path, "model.vocab", "ids must be integers in [0, 2^24) for", item->string);
    if (!st && (long)item->valuedouble + 1 > n) n = (long)item->valuedouble + 1;
  }
  cJSON_ArrayForEach(item, added) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    if (!st && (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= (1 << 24) || !json_string(item, "content")))
      st = json_error(d, path, "added_tokens", "each needs an id in [0, 2^24) and a content", NULL);
    if (!st && (long)id->valuedouble + 1 > n) n = (long)id->valuedouble + 1;
  }
  if (!st && n == 0) st = json_error(d, path, "model.vocab", "is empty", NULL);
  tokenizer *t = st ? NULL : tok_alloc(n);
  if (!st && !t) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  bool ok = true;
  const cJSON *vocab_items = st ? NULL : vocab, *added_items = st ? NULL : added, *merge_items = st ? NULL : merges;
  cJSON_ArrayForEach(item, vocab_items) if (ok) ok = tok_add_token(t, (long)item->valuedouble, item->string, strlen(item->string));
  cJSON_ArrayForEach(item, added_items) {
    long id = (long)cJSON_GetObjectItemCaseSensitive(item, "id")->valuedouble;
    const char *s = json_string(item, "content");
    if (ok) ok = tok_add_token(t, id, s, strlen(s));
    t->literal[id] = true; /* matched in raw text */
    t->special[id] = json_flag(item, "special");
  }
  if (!st) {
    t->merge = TOK_MERGE_BY_RANK;
    t->byte_fallback = json_flag(model, "byte_fallback");
    t->ignore_merges = json_flag(model, "ignore_merges");
    const char *unk = json_string(model, "unk_token");
    if (unk) t->unk = tok_find(t, unk, strlen(unk));
    st = read_normalizer(cJSON_GetObjectItemCaseSensitive(root, "normalizer"), path, t, d);
  }
  if (!st) st = read_pre_tokenizer(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), path, t, d);
  if (!st) st = read_post_processor(cJSON_GetObjectItemCaseSensitive(root, "post_processor"), path, t, d);
  if (!st) read_decoder(cJSON_GetObjectItemCaseSensitive(root, "decoder"), t);
  long rank = 0;
  if (st) merge_items = NULL;
  cJSON_ArrayForEach(item, merge_items) {
    if (!ok) break;
    if (cJSON_IsString(item)) { /* "a b" */
      const char *s = item->valuestring, *sp = strchr(s, ' ');
      if (sp) ok = add_merge(t, s, (size_t)(sp - s), sp + 1, strlen(sp + 1), rank);
    } else if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 2 && cJSON_IsString(item->child) &&
               cJSON_IsString(item->child->next)) { /* ["a", "b"] */
      const char *a = item->child->valuestring, *b = item->child->next->valuestring;
      ok = add_merge(t, a, strlen(a), b, strlen(b), rank);
    } else {
      st = json_error(d, path, "model.merges", "each merge must be \"a b\" or [\"a\", \"b\"]", NULL);
      break;
    }
    rank++;
  }
  if (!st && ok) ok = tok_finish(t);
  if (!st && !ok) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  cJSON_Delete(root);
  if (st) {
    tokenizer_free(t);
    return st;
  }
  *out = t;
  return PPCC_OK;
}

/* eos_token_id of a config file: an id or a list of ids; false if absent. */
static ppcc_status eos_from_config(const char *path, int64_t *eos, int max, int *n, bool *found, ppcc_diag *d) {
  *found = false;
  FILE *f = fopen(path, "rb");
  if (!f) return PPCC_OK;
  fclose(f);
  size_t len;
  char *text = ppcc_read_file(path, &len, d);
  if (!text) return PPCC_ERR_USER;
  cJSON *root = cJSON_ParseWithLength(text, len);
  free(text);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id"), *item;
  ppcc_status st = PPCC_OK;
  if (cJSON_IsNumber(v) || cJSON_IsArray(v)) {
    *found = true;
    *n = 0;
    if (cJSON_IsNumber(v)) {
      eos[(*n)++] = (int64_t)v->valuedouble;
    } else {
      cJSON_ArrayForEach(item, v) {
        if (!cJSON_IsNumber(item)) st = json_error(d, path, "eos_token_id", "must be an id or a list of ids", NULL);
        else if (*n < max) eos[(*n)++] = (int64_t)item->valuedouble;
      }
    }
  }
  cJSON_Delete(root);
  return st;
}

ppcc_status tokenizer_eos_of_source(const char *source, int64_t *eos, int max, int *n, ppcc_diag *d) {
  *n = 0;
  if (ppcc_is_dir(source)) {
    static const char *const files[] = {"generation_config.json", "config.json"};
    bool found = false;
    ppcc_status st = PPCC_OK;
    for (int i = 0; i < 2 && !found && !st; i++) {
      char *p = ppcc_path_join(source, files[i]);
      if (!p) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
      st = eos_from_config(p, eos, max, n, &found, d);
      free(p);
    }
    return st;
  }
  rt_gguf g;
  ppcc_status st = rt_gguf_open(source, &g, d);
  if (st) return st;
  const rt_gguf_kv *kv = rt_gguf_find_kv(&g, "tokenizer.ggml.eos_token_id");
  if (kv && kv->type != GGUF_KV_STRING && kv->type != GGUF_KV_ARRAY && kv->number >= 0 && max > 0) eos[(*n)++] = (int64_t)kv->number;
  rt_gguf_close(&g);
  return PPCC_OK;
}

ppcc_status tokenizer_load(const char *source, tokenizer **out, ppcc_diag *d) {
  *out = NULL;
  if (!ppcc_is_dir(source)) {
    rt_gguf g;
    ppcc_status st = rt_gguf_open(source, &g, d);
    if (st) return st;
    st = tokenizer_from_gguf(&g, out, d);
    rt_gguf_close(&g);
    return st;
  }
  char *path = ppcc_path_join(source, "tokenizer.json");
  if (!path) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  size_t len;
  char *text = ppcc_read_file(path, &len, d);
  ppcc_status st = text ? tokenizer_load_hf_json(path, text, len, out, d) : PPCC_ERR_USER;
  free(text);
  free(path);
  if (st) return st;
  tokenizer *t = *out;
  int64_t eos[8];
  int n = 0;
  st = tokenizer_eos_of_source(source, eos, 8, &n, d);
  for (int i = 0; !st && i < n; i++)
    if (eos[i] >= 0 && eos[i] < t->n_vocab) t->eos[t->n_eos++] = eos[i];
  if (st) {
    tokenizer_free(t);
    *out = NULL;
  }
  return st;
}
