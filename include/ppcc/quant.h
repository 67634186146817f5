/* Block formats of stored weights (DESIGN §11): GGUF's quantized blocks
 * (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k ... q6_k) and the plain floats, in
 * ONE table (src/ir/quant.c) giving each its block length, bytes per block,
 * GGML type id and decoder. Decoders compute exactly what gguf-py's
 * quants.dequantize computes (same float operations in the same order), so
 * tests compare bit for bit. */
#ifndef PPCC_QUANT_H
#define PPCC_QUANT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ppcc_block_format {
  const char *name;      /* ppcc's name: "q4_k", "f16" */
  const char *gguf_name; /* GGUF's name: "Q4_K", "F16" */
  int ggml_type;         /* GGML type id in GGUF files */
  int block;             /* values per block */
  int bytes;             /* bytes per block */
  /* Byte offsets of the block's f16 scales (checked finite), -1 ends. */
  int scale_at[3];
  void (*decode)(const unsigned char *block, float *out); /* one block */
} ppcc_block_format;

/* The format stored as GGML type id `ggml_type`, or NULL. */
const ppcc_block_format *ppcc_block_format_of_ggml(int ggml_type);
/* The format called `name` ("q4_k"), or NULL. */
const ppcc_block_format *ppcc_block_format_named(const char *name);
/* GGML's name of any type id, known to ppcc or not ("IQ2_XS"), or NULL. */
const char *ppcc_ggml_type_name(int ggml_type);
/* "f32, f16, ..., q6_k" (every format ppcc reads; GGUF's names if asked)
 * into buf, truncated to n bytes. */
void ppcc_block_format_list(char *buf, size_t n, bool gguf_names);

/* Bytes that n_values stored in format f take (n_values a multiple of the
 * block), -1 when it is not a whole number of blocks or overflows. */
int64_t ppcc_block_bytes(const ppcc_block_format *f, int64_t n_values);

/* Decodes n_blocks blocks from src into out (n_blocks * f->block floats).
 * Returns -1, or the index of the first block whose scale is NaN or Inf
 * (nothing after it is decoded). */
int64_t ppcc_block_decode(const ppcc_block_format *f, const unsigned char *src, int64_t n_blocks, float *out);

#endif
