/* libFuzzer target: the Hugging Face tokenizer.json reader
 * (src/import/tokenizer_load.c). A refusal must come with a one-line
 * diagnostic; an accepted tokenizer encodes a fixed varied text and
 * decodes its whole vocabulary (tokenizer_exercise.h). The input's bytes,
 * UTF-8 or not, also go through the NFC normalizer, which must be
 * idempotent on its own output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tokenizer_exercise.h"

static void check_nfc(const char *s, size_t n) {
  char *once = NULL, *twice = NULL;
  size_t n_once = 0, n_twice = 0;
  if (tok_nfc(s, n, &once, &n_once) && tok_nfc(once, n_once, &twice, &n_twice) &&
      (n_once != n_twice || memcmp(once, twice, n_once) != 0)) {
    fprintf(stderr, "fuzz: NFC is not idempotent\n");
    abort();
  }
  free(once);
  free(twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_nfc((const char *)data, size);
  ppcc_diag d;
  ppcc_diag_init(&d, "tokenizer.json", NULL);
  tokenizer *t = NULL;
  if (tokenizer_load_hf_json("tokenizer.json", (const char *)data, size, &t, &d) != PPCC_OK) {
    if (d.errors == 0 || strchr(d.first, '\n')) {
      fprintf(stderr, "fuzz: tokenizer.json refused without a one-line diagnostic: '%s'\n", d.first);
      abort();
    }
    return 0;
  }
  fuzz_exercise_tokenizer(t);
  tokenizer_free(t);
  return 0;
}
