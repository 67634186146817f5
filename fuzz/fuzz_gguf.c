/* libFuzzer target: the GGUF reader (src/runtime/io/gguf.c), the GGUF
 * importer's metadata reading (src/import/gguf.c) and the tokenizer read
 * from tokenizer.ggml.* (src/import/tokenizer_load.c, which then encodes a
 * fixed varied text and decodes every id), compiled in with
 * the file mapping replaced by a heap copy of exactly the input (see
 * memory_file.h). Every tensor the reader accepts is dequantized whole
 * (bounded), so a bad offset or size is an ASan report; a refusal must
 * come with a diagnostic. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define rt_map_file fuzz_map_file
#define rt_unmap_file fuzz_unmap_file
#define rt_gguf_open fuzz_gguf_open
#define rt_gguf_parse fuzz_gguf_parse
#define rt_gguf_close fuzz_gguf_close
#define rt_gguf_is_gguf fuzz_gguf_is_gguf
#define rt_gguf_find_kv fuzz_gguf_find_kv
#define rt_gguf_find_tensor fuzz_gguf_find_tensor
#define rt_gguf_type_name fuzz_gguf_type_name
#define rt_gguf_dequantize_rows fuzz_gguf_dequantize_rows
#define llama_spec_from_gguf fuzz_spec_from_gguf
#define llama_spec_from_source fuzz_spec_from_source
#define rt_gguf_array_number fuzz_gguf_array_number
#define rt_gguf_array_next_string fuzz_gguf_array_next_string
#define tokenizer_load fuzz_tokenizer_load
#define tokenizer_load_hf_json fuzz_tokenizer_load_hf_json
#define tokenizer_eos_of_source fuzz_tokenizer_eos_of_source
#include "../src/runtime/io/gguf.c"
#include "../src/import/gguf.c"
#include "../src/import/tokenizer_load.c"
#include "tokenizer_exercise.h"

#include "memory_file.h"

#define FUZZ_MAX_VALUES ((int64_t)1 << 22)

static volatile float fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_data = data;
  fuzz_size = size;
  ppcc_diag d;
  ppcc_diag_init(&d, "fuzz.gguf", NULL);
  rt_gguf g;
  if (fuzz_gguf_open("fuzz.gguf", &g, &d) != PPCC_OK) {
    fuzz_require_diag(&d, "rt_gguf_open");
    return 0;
  }
  for (int i = 0; i < g.n_tensors; i++) {
    const rt_gguf_tensor *t = &g.tensors[i];
    int64_t n = 1;
    for (int k = 0; k < t->n_dims && n <= FUZZ_MAX_VALUES; k++) n *= t->ne[k] > 0 ? t->ne[k] : 0;
    if (n == 0 || n > FUZZ_MAX_VALUES) continue;
    float *out = malloc(sizeof(float) * (size_t)n);
    if (!out) continue;
    ppcc_diag dq;
    ppcc_diag_init(&dq, "fuzz.gguf", NULL);
    if (fuzz_gguf_dequantize_rows("fuzz.gguf", t, 0, n / t->ne[0], out, &dq) == PPCC_OK) fuzz_sink += out[n - 1];
    else fuzz_require_diag(&dq, "rt_gguf_dequantize_rows");
    free(out);
  }
  tokenizer *tok = NULL;
  ppcc_diag d3;
  ppcc_diag_init(&d3, "fuzz.gguf", NULL);
  if (tokenizer_from_gguf(&g, &tok, &d3) == PPCC_OK) fuzz_exercise_tokenizer(tok);
  else fuzz_require_diag(&d3, "tokenizer_from_gguf");
  tokenizer_free(tok);
  fuzz_gguf_close(&g);
  llama_spec s = {0};
  ppcc_diag d2;
  ppcc_diag_init(&d2, "fuzz.gguf", NULL);
  if (fuzz_spec_from_gguf("fuzz.gguf", &s, &d2) != PPCC_OK) fuzz_require_diag(&d2, "llama_spec_from_gguf");
  return 0;
}
