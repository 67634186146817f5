/* Tokenizers (src/import/tokenizer*.c) against transformers' AutoTokenizer
 * on 300 lines of varied text (Unicode, spaces, digits, emoji, newlines,
 * contractions, special tokens written in the text): for every shipped
 * tokenizer (testdata/tokenizers/, made by tools/make_tokenizer_refs.py) in
 * both forms, HF tokenizer.json and GGUF tokenizer.ggml.* as llama.cpp's
 * convert_hf_to_gguf.py writes them, the ids are AutoTokenizer's and
 * decoding them (special tokens skipped) gives AutoTokenizer's text.
 * Id sequences that cut characters (prefixes of those ids, random ids with
 * byte tokens and specials) decode, streamed one token at a time, to
 * transformers' decode, and every streamed piece is whole UTF-8 characters.
 * Bad tokenizer files are one-line errors naming the key and value. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "../src/import/tokenizer.h"
#include "ppcc/io.h"
#include "test_support.h"

static const char *const sources[][2] = {
  {"spm", "testdata/tokenizers/spm"},     {"spm", "testdata/tokenizers/spm.gguf"},
  {"gpt2", "testdata/tokenizers/gpt2"},   {"gpt2", "testdata/tokenizers/gpt2.gguf"},
  {"qwen2", "testdata/tokenizers/qwen2"}, {"qwen2", "testdata/tokenizers/qwen2.gguf"},
  {"gemma", "testdata/tokenizers/gemma"}, {"gemma", "testdata/tokenizers/gemma.gguf"},
  {"llama3", "testdata/tokenizers/llama3"}, {"llama3", "testdata/tokenizers/llama3.gguf"},
};
#define N_SOURCES 10

static cJSON *refs(void) {
  static cJSON *root;
  if (!root) {
    size_t len;
    ppcc_diag d;
    ppcc_diag_init(&d, "refs", NULL);
    char *text = ppcc_read_file(t_src_path("testdata/tokenizers/refs.json"), &len, &d);
    ck_assert_msg(text, "%s", d.first);
    root = cJSON_ParseWithLength(text, len);
    free(text);
    ck_assert_ptr_nonnull(root);
  }
  return root;
}

static tokenizer *load(const char *rel) {
  tokenizer *t = NULL;
  ppcc_diag d;
  ppcc_diag_init(&d, rel, NULL);
  ck_assert_msg(tokenizer_load(t_src_path(rel), &t, &d) == PPCC_OK, "%s", d.first);
  return t;
}

START_TEST(ids_and_text_match_transformers) {
  const char *name = sources[_i][0], *rel = sources[_i][1];
  tokenizer *t = load(rel);
  const cJSON *lines = cJSON_GetObjectItem(refs(), "lines");
  const cJSON *ref = cJSON_GetObjectItem(cJSON_GetObjectItem(refs(), "tokenizers"), name);
  const cJSON *want_ids = cJSON_GetObjectItem(ref, "ids"), *want_text = cJSON_GetObjectItem(ref, "decoded");
  int n_lines = cJSON_GetArraySize(lines), bad = 0;
  ck_assert_int_ge(n_lines, 300);
  for (int i = 0; i < n_lines; i++) {
    const char *line = cJSON_GetArrayItem(lines, i)->valuestring;
    const cJSON *want = cJSON_GetArrayItem(want_ids, i);
    int64_t *ids = NULL;
    long n = 0;
    ppcc_diag d;
    ppcc_diag_init(&d, rel, NULL);
    ck_assert(tokenizer_encode(t, line, strlen(line), true, &ids, &n, &d) == PPCC_OK);
    bool same = n == cJSON_GetArraySize(want);
    for (long k = 0; same && k < n; k++) same = ids[k] == (int64_t)cJSON_GetArrayItem(want, (int)k)->valuedouble;
    if (!same && bad++ < 5) {
      char *w = cJSON_PrintUnformatted(want);
      fprintf(stderr, "%s line %d '%s': want %s, got", rel, i, line, w);
      for (long k = 0; k < n; k++) fprintf(stderr, " %lld", (long long)ids[k]);
      fprintf(stderr, "\n");
      free(w);
    }
    /* decode the reference ids */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    tok_stream ts;
    tok_stream_init(&ts, t);
    const cJSON *id;
    cJSON_ArrayForEach(id, want) ck_assert(tok_stream_push(&ts, (int64_t)id->valuedouble, &buf, &len, &cap));
    ck_assert(tok_stream_end(&ts, &buf, &len, &cap));
    const char *text = cJSON_GetArrayItem(want_text, i)->valuestring;
    if ((len != strlen(text) || (len && memcmp(buf, text, len) != 0)) && bad++ < 5)
      fprintf(stderr, "%s line %d: decoded '%.*s', want '%s'\n", rel, i, (int)len, buf ? buf : "", text);
    free(buf);
    free(ids);
  }
  ck_assert_msg(bad == 0, "%s: %d lines differ from transformers", rel, bad);
  tokenizer_free(t);
}
END_TEST

/* s[0..n) is whole UTF-8 characters (no character cut). */
static bool whole_utf8(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t k = u[i] < 0x80 ? 1 : (u[i] >> 5) == 6 ? 2 : (u[i] >> 4) == 14 ? 3 : (u[i] >> 3) == 30 ? 4 : 0;
    if (k == 0 || i + k > n) return false;
    for (size_t j = 1; j < k; j++)
      if ((u[i + j] & 0xC0) != 0x80) return false;
    i += k;
  }
  return true;
}

START_TEST(streamed_decode_matches_transformers) {
  const char *name = sources[_i][0], *rel = sources[_i][1];
  tokenizer *t = load(rel);
  const cJSON *ref = cJSON_GetObjectItem(cJSON_GetObjectItem(refs(), "decode"), name);
  const cJSON *cases = cJSON_GetObjectItem(ref, "ids"), *texts = cJSON_GetObjectItem(ref, "text");
  int n_cases = cJSON_GetArraySize(cases), bad = 0;
  ck_assert_int_ge(n_cases, 100);
  for (int i = 0; i < n_cases; i++) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool pieces_whole = true;
    tok_stream ts;
    tok_stream_init(&ts, t);
    const cJSON *id;
    cJSON_ArrayForEach(id, cJSON_GetArrayItem(cases, i)) {
      size_t before = len;
      ck_assert(tok_stream_push(&ts, (int64_t)id->valuedouble, &buf, &len, &cap));
      pieces_whole = pieces_whole && whole_utf8(buf + before, len - before);
    }
    ck_assert(tok_stream_end(&ts, &buf, &len, &cap));
    const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
    if ((!pieces_whole || len != strlen(text) || (len && memcmp(buf, text, len) != 0)) && bad++ < 5) {
      char *w = cJSON_PrintUnformatted(cJSON_GetArrayItem(cases, i));
      fprintf(stderr, "%s case %d %s: decoded '%.*s'%s, want '%s'\n", rel, i, w, (int)len, buf ? buf : "",
              pieces_whole ? "" : " (a streamed piece cut a character)", text);
      free(w);
    }
    free(buf);
  }
  ck_assert_msg(bad == 0, "%s: %d decodes differ from transformers", rel, bad);
  tokenizer_free(t);
}
END_TEST

/* Phi-3's tokenizer has added specials after its vocabulary and a model
 * vocabulary padded past them ([PAD] tokens in the GGUF): transformers'
 * decode skips those ids, the specials and <unk> (hf_phi3/ref_text.json). */
START_TEST(padded_vocab_ids_decode_as_transformers) {
  const char *rel = _i ? "testdata/llm/phi3.gguf" : "testdata/llm/hf_phi3";
  tokenizer *t = load(rel);
  size_t len;
  ppcc_diag d;
  ppcc_diag_init(&d, "ref_text.json", NULL);
  char *json = ppcc_read_file(t_src_path("testdata/llm/hf_phi3/ref_text.json"), &len, &d);
  ck_assert_msg(json, "%s", d.first);
  cJSON *ref = cJSON_ParseWithLength(json, len);
  free(json);
  const cJSON *ids = cJSON_GetObjectItem(ref, "decode_ids"), *id;
  const char *want = cJSON_GetStringValue(cJSON_GetObjectItem(ref, "decode_text"));
  ck_assert(ids && want);
  char *buf = NULL;
  size_t n = 0, cap = 0;
  tok_stream ts;
  tok_stream_init(&ts, t);
  cJSON_ArrayForEach(id, ids) ck_assert(tok_stream_push(&ts, (int64_t)id->valuedouble, &buf, &n, &cap));
  ck_assert(tok_stream_end(&ts, &buf, &n, &cap));
  ck_assert_msg(n == strlen(want) && memcmp(buf, want, n) == 0, "%s: decoded '%.*s', want '%s'", rel, (int)n, buf, want);
  free(buf);
  cJSON_Delete(ref);
  tokenizer_free(t);
}
END_TEST

static void expect_error(const char *json, const char *needle) {
  tokenizer *t = NULL;
  ppcc_diag d;
  ppcc_diag_init(&d, "tokenizer.json", NULL);
  ck_assert(tokenizer_load_hf_json("tokenizer.json", json, strlen(json), &t, &d) != PPCC_OK);
  ck_assert_ptr_null(t);
  ck_assert_msg(d.first && strstr(d.first, needle) && !strchr(d.first, '\n'), "want '%s' in '%s'", needle, d.first);
}

START_TEST(bad_tokenizers_name_the_key) {
  expect_error("[]", "not a JSON object");
  expect_error("{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]]}}", "'model.type': tokenizer model not supported (BPE): 'Unigram'");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", "'model.vocab'");
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [1]}}", "'model.merges'");
  expect_error("{\"normalizer\": {\"type\": \"NFKC\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "'normalizer.type': normalizer not supported: 'NFKC'");
  expect_error("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+\"}, \"behavior\": \"Isolated\"},"
               " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "'pre_tokenizer.pattern'");
  /* Gemma's Split(' ') is a no-op only after the ' ' -> U+2581 normalizer */
  expect_error("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\"},"
               " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "'pre_tokenizer.behavior'");
  expect_error("{\"post_processor\": {\"type\": \"BertProcessing\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
               "'post_processor.type': post-processor not supported: 'BertProcessing'");
  /* a GGUF without a tokenizer names the key */
  tokenizer *t = NULL;
  ppcc_diag d;
  ppcc_diag_init(&d, "gguf", NULL);
  ck_assert(tokenizer_load(t_src_path("testdata/llm/kquants.gguf"), &t, &d) != PPCC_OK);
  ck_assert_msg(strstr(d.first, "'tokenizer.ggml.model'"), "%s", d.first);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tokenizer");
  TCase *tc = t_add_tcase(s, "tokenizer", 120);
  tcase_add_loop_test(tc, ids_and_text_match_transformers, 0, N_SOURCES);
  tcase_add_loop_test(tc, streamed_decode_matches_transformers, 0, N_SOURCES);
  tcase_add_loop_test(tc, padded_vocab_ids_decode_as_transformers, 0, 2);
  tcase_add_test(tc, bad_tokenizers_name_the_key);
  return t_run_suite(s);
}
