/* Door of src/runtime/io/: the GGUF reader (the importer reads GGUF
 * metadata with it) and cutting shards out of mapped weights files. The
 * weights API (ppcc_weights_*, ppcc_npy_*) is public
 * (include/ppcc/runtime.h). */
#ifndef PPCC_RT_IO_H
#define PPCC_RT_IO_H
#include "../rt_internal.h"
#include "ppcc/quant.h"

/* mapped_shard.c: shard i of param p cut from its full tensor in a mapped
 * weights file, the file's pages released as they are copied (MPI runs:
 * a rank's memory is its own shards). */
void *rt_copy_mapped_shard(const void *full, const ppcc_value *p, int i);
/* mapped_shard.c: drops the whole pages of [p, p + bytes) of a read-only
 * file mapping from this process (a later touch reads them again). */
void rt_release_pages(const void *p, int64_t bytes);
/* Maps the pages of [p, p + bytes) into this process now (a resident
 * shard used in place from a mapped file: its first execute then takes no
 * page faults, as llama.cpp's MAP_POPULATE); a no-op where the kernel
 * lacks MADV_POPULATE_READ (Linux < 5.14). */
void rt_populate_pages(const void *p, int64_t bytes);

/* The format tensor `tensor` (NAME, or a view NAME#... of it) is stored in
 * at path, a GGUF file or a Hugging Face checkpoint directory: "q4_k",
 * "f16", "bf16", "f32" ..., NULL when unknown. The source stays open in
 * *state between calls; tensor NULL closes it. (The importers' question:
 * which weights can stay as stored.) */
const char *rt_source_tensor_dtype(const char *path, const char *tensor, void **state);

/* GGUF (v2, v3) reader: llama.cpp's and sharktank's single-file format.
 * The file is mmapped; header, metadata and tensor infos are parsed with
 * every length and offset checked against the file size, tensors must lie
 * inside the data section without overlapping. Internal to ppcc (the
 * runtime's weights and src/import/ use it). */

/* Metadata value kinds (GGUF's own numbering). */
enum {
  GGUF_KV_U8, GGUF_KV_I8, GGUF_KV_U16, GGUF_KV_I16, GGUF_KV_U32, GGUF_KV_I32, GGUF_KV_F32, GGUF_KV_BOOL,
  GGUF_KV_STRING, GGUF_KV_ARRAY, GGUF_KV_U64, GGUF_KV_I64, GGUF_KV_F64,
};

typedef struct rt_gguf_kv {
  char *key;
  uint32_t type;       /* GGUF_KV_* */
  double number;       /* numeric and bool values */
  char *string;        /* GGUF_KV_STRING */
  /* GGUF_KV_ARRAY: element type, count, and the elements as stored in the
   * mapped file (checked to lie inside it; read with rt_gguf_array_*) */
  uint32_t array_type;
  uint64_t array_count;
  const unsigned char *array_data;
} rt_gguf_kv;

typedef struct rt_gguf_tensor {
  char *name;
  int n_dims;
  int64_t ne[4];       /* ne[0] is the fastest (row) dim: shape is reversed */
  uint32_t type;       /* GGML type id */
  const ppcc_block_format *format; /* of type (set once parsed) */
  uint64_t offset;     /* from the start of the data section */
  uint64_t bytes;
  const unsigned char *data;
} rt_gguf_tensor;

typedef struct rt_gguf {
  rt_mapped_file file;
  uint32_t version;
  int n_kv, n_tensors;
  rt_gguf_kv *kv;
  rt_gguf_tensor *tensors;
} rt_gguf;

/* Maps path and parses it. On error g is freed and a one-line diagnostic
 * names the file and the key or tensor. */
ppcc_status rt_gguf_open(const char *path, rt_gguf *g, ppcc_diag *d);
/* Parses an already mapped g->file (fuzzing uses this). */
ppcc_status rt_gguf_parse(rt_gguf *g, ppcc_diag *d);
void rt_gguf_close(rt_gguf *g);
bool rt_gguf_is_gguf(const rt_mapped_file *f);

const rt_gguf_kv *rt_gguf_find_kv(const rt_gguf *g, const char *key);
const rt_gguf_tensor *rt_gguf_find_tensor(const rt_gguf *g, const char *name);
/* GGML's name of a type id ("Q5_K", "IQ2_XS"), "unknown" for others. */
const char *rt_gguf_type_name(uint32_t type);
/* Element i of a numeric array kv (bools as 0/1). */
double rt_gguf_array_number(const rt_gguf_kv *kv, uint64_t i);
/* Walks a string array: *at starts at kv->array_data; each call gives the
 * next string (not NUL-terminated) and its length. */
const char *rt_gguf_array_next_string(const unsigned char **at, uint64_t *len);

/* Dequantizes (or converts) rows [row0, row0 + n_rows) of a tensor seen as
 * [rows][ne[0]] into out (f32). A block with a NaN or infinite scale is an
 * error naming the file (path), the tensor and the block. */
ppcc_status rt_gguf_dequantize_rows(const char *path, const rt_gguf_tensor *t, int64_t row0, int64_t n_rows,
                                   float *out, ppcc_diag *d);

#endif
