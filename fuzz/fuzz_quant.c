/* libFuzzer target: the block decoders (src/ir/quant.c). The first byte
 * picks a format by GGML type id, the rest is taken as whole blocks (the
 * tail that is not a block is dropped, as the GGUF reader never passes
 * one). Each block is decoded alone and all at once: the two must agree,
 * and a non-finite scale must stop the decoder at the block that has it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/quant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const ppcc_block_format *f = ppcc_block_format_of_ggml(data[0] % 32);
  if (!f) return 0;
  int64_t n_blocks = (int64_t)((size - 1) / (size_t)f->bytes);
  if (n_blocks > 4096) n_blocks = 4096;
  float *all = malloc(sizeof(float) * (size_t)(n_blocks * f->block + 1));
  float *one = malloc(sizeof(float) * (size_t)f->block);
  if (!all || !one) abort();
  int64_t bad = ppcc_block_decode(f, data + 1, n_blocks, all);
  if (bad < -1 || bad >= n_blocks) abort();
  int64_t good = bad < 0 ? n_blocks : bad;
  for (int64_t k = 0; k < good; k++) {
    if (ppcc_block_decode(f, data + 1 + k * f->bytes, 1, one) != -1) abort();
    if (memcmp(one, all + k * f->block, sizeof(float) * (size_t)f->block) != 0) abort();
  }
  if (bad >= 0 && ppcc_block_decode(f, data + 1 + bad * f->bytes, 1, one) != 0) abort();
  free(all);
  free(one);
  return 0;
}
