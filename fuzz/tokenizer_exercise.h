/* Runs an accepted tokenizer over a fixed varied text (spaces, digits,
 * Unicode, emoji, newlines, a special-looking token, a malformed byte, text
 * an NFC normalizer changes) and
 * decodes every id of its vocabulary through the lossy stream: any out-of-
 * bounds access is a sanitizer report. */
#ifndef PPCC_FUZZ_TOKENIZER_EXERCISE_H
#define PPCC_FUZZ_TOKENIZER_EXERCISE_H
#include <stdlib.h>
#include <string.h>
#include "../src/import/tokenizer.h"

static void fuzz_exercise_tokenizer(const tokenizer *t) {
  static const char text[] = " Hello  world's 1234 caf\xc3\xa9 \xf0\x9f\x98\x80\n\r\n\t<s><|endoftext|>x\xff\xe2\x96 "
                             "e\xcc\x81\xcc\xa3 \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8 \xff\xcc\x81";
  int64_t *ids = NULL;
  long n = 0;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz", NULL);
  if (tokenizer_encode(t, text, sizeof text - 1, true, &ids, &n, &d) == PPCC_OK) {
    for (long i = 0; i < n; i++)
      if (ids[i] < 0 || ids[i] >= t->n_vocab) abort();
  }
  free(ids);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  tok_stream s;
  tok_stream_init(&s, t);
  long limit = t->n_vocab < 4096 ? t->n_vocab : 4096;
  for (long id = -1; id <= limit; id++) tok_stream_push(&s, id, &buf, &len, &cap);
  tok_stream_end(&s, &buf, &len, &cap);
  free(buf);
}
#endif
