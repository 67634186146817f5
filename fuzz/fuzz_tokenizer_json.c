/* libFuzzer target: the Hugging Face tokenizer.json reader
 * (src/import/tokenizer_load.c). A refusal must come with a one-line
 * diagnostic; an accepted tokenizer encodes a fixed varied text and
 * decodes its whole vocabulary (tokenizer_exercise.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tokenizer_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
