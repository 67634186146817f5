/* Tokenizers (src/import/tokenizer*.c) against transformers' AutoTokenizer
 * on 318 lines of varied text (Unicode, spaces, digits, emoji, newlines,
 * contractions, special tokens written in the text, text not in NFC): for every shipped
 * tokenizer (testdata/tokenizers/, made by tools/make_tokenizer_refs.py) in
 * both forms, HF tokenizer.json and GGUF tokenizer.ggml.* as llama.cpp's
 * convert_hf_to_gguf.py writes them, the ids are AutoTokenizer's and
 * decoding them (special tokens skipped) gives AutoTokenizer's text.
 * Id sequences that cut characters (prefixes of those ids, random ids with
 * byte tokens and specials) decode, streamed one token at a time, to
 * transformers' decode, and every streamed piece is whole UTF-8 characters.
 * A GGUF tokenizer does not normalize (as llama.cpp): its ids are compared
 * on the lines already in NFC only ("not_nfc" lists the others); the HF
 * form of Qwen2's applies its NFC normalizer to them as transformers does.
 * tok_nfc gives Python's unicodedata.normalize('NFC', ...) on tricky cases
 * and passes malformed UTF-8 through.
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
  /* the lines NFC changes: a GGUF tokenizer keeps them as they are */
  bool *not_nfc = calloc((size_t)n_lines, sizeof *not_nfc);
  const cJSON *k_line;
  cJSON_ArrayForEach(k_line, cJSON_GetObjectItem(refs(), "not_nfc")) not_nfc[(int)k_line->valuedouble] = true;
  bool gguf = strstr(rel, ".gguf") != NULL;
  if (strcmp(name, "qwen2") == 0) ck_assert(t->nfc == !gguf);
  for (int i = 0; i < n_lines; i++) {
    const char *line = cJSON_GetArrayItem(lines, i)->valuestring;
    const cJSON *want = cJSON_GetArrayItem(want_ids, i);
    int64_t *ids = NULL;
    long n = 0;
    ppcc_diag d;
    ppcc_diag_init(&d, rel, NULL);
    ck_assert(tokenizer_encode(t, line, strlen(line), true, &ids, &n, &d) == PPCC_OK);
    bool same = (gguf && not_nfc[i]) || n == cJSON_GetArraySize(want);
    for (long k = 0; same && !(gguf && not_nfc[i]) && k < n; k++) same = ids[k] == (int64_t)cJSON_GetArrayItem(want, (int)k)->valuedouble;
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
  free(not_nfc);
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

static void expect_nfc(const char *in, size_t n, const char *want, size_t want_n) {
  char *out = NULL;
  size_t len = 0;
  ck_assert(tok_nfc(in, n, &out, &len));
  ck_assert_msg(len == want_n && memcmp(out, want, len) == 0 && out[len] == 0, "NFC of '%.*s': '%.*s', want '%.*s'",
                (int)n, in, (int)len, out, (int)want_n, want);
  free(out);
}

/* The expected strings are Python 3.11's unicodedata.normalize('NFC', in)
 * (Unicode 14.0, the version of the generated tables), written out as bytes:
 * decomposed letters, Hangul jamo (LV, LVT, a mark between L and V),
 * singletons (U+212B, U+212A, U+2126), composition exclusions (U+0958,
 * U+0F73, U+1D15E), non-starter decompositions (U+0344, U+0340), marks out
 * of canonical order, blocked and unblocked compositions, leading marks. */
START_TEST(nfc_matches_python) {
  static const char *const cases[][2] = {
      {"cafe\xcc\x81", "caf\xc3\xa9"},
      {"A\xcc\x8a \xe2\x84\xab \xe2\x84\xaa \xe2\x84\xa6", "\xc3\x85 \xc3\x85 K \xce\xa9"},
      {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab", "\xea\xb0\x81\xed\x95\x9c"},
      {"\xea\xb0\x80\xe1\x86\xa8 \xe1\x84\x80\xe1\x85\xa1\xcc\x81 \xe1\x84\x80\xcc\x81\xe1\x85\xa1", "\xea\xb0\x81 \xea\xb0\x80\xcc\x81 \xe1\x84\x80\xcc\x81\xe1\x85\xa1"},
      {"a\xcc\xa3\xcc\x87 a\xcc\x87\xcc\xa3 q\xcc\x87\xcc\xa3", "\xe1\xba\xa1\xcc\x87 \xe1\xba\xa1\xcc\x87 q\xcc\xa3\xcc\x87"},
      {"\xe0\xa5\x98 \xe0\xa4\x95\xe0\xa4\xbc", "\xe0\xa4\x95\xe0\xa4\xbc \xe0\xa4\x95\xe0\xa4\xbc"},
      {"\xe0\xbd\xb3 \xe0\xbd\xb1\xe0\xbd\xb2", "\xe0\xbd\xb1\xe0\xbd\xb2 \xe0\xbd\xb1\xe0\xbd\xb2"},
      {"\xf0\x9d\x85\x9e \xf0\x9d\x85\x97\xf0\x9d\x85\xa5", "\xf0\x9d\x85\x97\xf0\x9d\x85\xa5 \xf0\x9d\x85\x97\xf0\x9d\x85\xa5"},
      {"e\xcc\x81\xcc\x81 \xc3\xa9\xcc\xa7", "\xc3\xa9\xcc\x81 \xc8\xa9\xcc\x81"},
      {"o\xcc\x88\xcc\x84 \xc7\x95", "\xc8\xab \xc7\x95"},
      {"\xcc\x81\xcc\x81" "e \xcd\x84\xcd\x80", "\xcc\x81\xcc\x81" "e \xcc\x88\xcc\x81\xcc\x80"},
      {"\xce\x91\xcc\x93\xcc\x81\xcd\x85", "\xe1\xbe\x8c"},
      {"a\xcc\xb5\xcc\x81 a\xcc\x81\xcc\xb5", "\xc3\xa1\xcc\xb5 \xc3\xa1\xcc\xb5"},
      {"\xd7\x91\xd6\xbc\xd6\xb0 x", "\xd7\x91\xd6\xb0\xd6\xbc x"},
      {"\xe1\xba\x9b\xcc\xa3", "\xe1\xba\x9b\xcc\xa3"},
      {"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xc3\x85", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xc3\x85"},
      {"a\xcc\xa8\xcc\x81\xcc\xa7", "\xc4\x85\xcc\xa7\xcc\x81"},
      {"plain ascii", "plain ascii"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_nfc(cases[i][0], strlen(cases[i][0]), cases[i][1], strlen(cases[i][1]));
  /* not well-formed UTF-8 passes through byte for byte; nothing composes across it */
  static const char *const raw[][2] = {
      {"e\xff\xcc\x81", "e\xff\xcc\x81"},                   /* a stray byte between e and its accent */
      {"e\xcc", "e\xcc"},                                   /* a character cut at the end */
      {"\xc0\x81" "e\xcc\x81", "\xc0\x81\xc3\xa9"},             /* overlong */
      {"\xed\xa0\x80\xcc\x81", "\xed\xa0\x80\xcc\x81"},         /* a surrogate */
      {"a\xcc\x81\xf4\x90\x80\x80", "\xc3\xa1\xf4\x90\x80\x80"}, /* above U+10FFFF */
      {"\x80\xcc\x81\xcc\xa3", "\x80\xcc\xa3\xcc\x81"},         /* a lone continuation byte, then marks reordered */
      {"\xf0\x9f\x98", "\xf0\x9f\x98"},                         /* an emoji cut */
  };
  for (size_t i = 0; i < sizeof raw / sizeof *raw; i++)
    expect_nfc(raw[i][0], strlen(raw[i][0]), raw[i][1], strlen(raw[i][1]));
  expect_nfc("e\xcc\x81\0x", 5, "\xc3\xa9\0x", 4); /* NUL is a starter like any other */
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
  tcase_add_test(tc, nfc_matches_python);
  return t_run_suite(s);
}
