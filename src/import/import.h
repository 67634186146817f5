/* Importers (DESIGN §9): a Hugging Face Llama checkpoint directory or a GGUF
 * file becomes a llama_spec, and one graph builder (llama_graph.c) turns a
 * spec into model.json text laid out the sharktank way (block b on stage
 * floor(b*P/L), Megatron TP inside a stage), the same layout as
 * tools/gen_llama. Params keep the source's own tensor names, so
 * `ppcc run --weights SOURCE` reads the source unchanged. */
#ifndef PPCC_IMPORT_H
#define PPCC_IMPORT_H
#include <stdbool.h>
#include <stddef.h>
#include "ppcc/diag.h"
#include "tokenizer.h" /* text <-> ids for generate */

typedef enum { LLAMA_NAMES_HF, LLAMA_NAMES_GGUF } llama_naming;

/* What differs between decoder families, as data: one row per family in
 * families.c. config.json and GGUF metadata both start from the row. */
typedef struct llama_family {
  const char *hf_arch;    /* config.json architectures[0] */
  const char *model_type; /* config.json model_type */
  const char *gguf_arch;  /* general.architecture, also its metadata keys' prefix */
  bool qkv_bias;          /* q/k/v projections always have biases (Qwen2) */
  bool window_flag;       /* sliding_window applies only when use_sliding_window is true (Qwen2) */
} llama_family;

/* The row of a config.json architecture or model_type / a GGUF
 * general.architecture; NULL when ppcc has none. `list` names them all. */
const llama_family *llama_family_of_hf(const char *arch, const char *model_type);
const llama_family *llama_family_of_gguf(const char *arch);
const char *llama_family_list(bool gguf);

typedef struct llama_spec {
  /* the model (from config.json or GGUF metadata) */
  long layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
  double eps, theta;
  /* rope_scaling: factor 1 = none; orig_max_pos 0 = linear, else llama3 */
  double rope_factor, rope_low, rope_high;
  long rope_orig;
  bool rope_freqs;  /* GGUF tensor rope_freqs.weight [head_dim/2]: per-pair frequency divisors (Llama 3) */
  bool tied;        /* the output head reuses the embedding table */
  bool attn_bias;   /* q/k/v/o projections have biases */
  bool qkv_bias;    /* q/k/v projections have biases (o has none) */
  bool mlp_bias;    /* gate/up/down have biases */
  llama_naming naming;
  /* the graph (from the command line) */
  long seq, batch, cache, tp, pp;
  bool row_positions; /* positions [batch, seq]: each row at its own positions */
  const char *dtype; /* "f32", "f16", "bf16" */
  const char *name;
  bool unplaced;     /* no placement at all (no shards, devices, transfers or
                        collectives) for auto-partition to place: gen_llama
                        --placement none */
} llama_spec;

/* Reads DIR/config.json. Errors name the file and the key. */
ppcc_status llama_spec_from_hf(const char *dir, llama_spec *s, ppcc_diag *d);
/* Same from JSON text (fuzzing); path names it in messages. */
ppcc_status llama_spec_from_hf_json(const char *path, const char *json, size_t len, llama_spec *s, ppcc_diag *d);
/* Reads a GGUF file's llama.* metadata. */
ppcc_status llama_spec_from_gguf(const char *path, llama_spec *s, ppcc_diag *d);
/* Fills the model part of s from whatever SOURCE is: a directory (HF) or a
 * GGUF file. */
ppcc_status llama_spec_from_source(const char *source, llama_spec *s, ppcc_diag *d);

/* The longest KV cache a graph may have (positions). */
enum { LLAMA_MAX_CACHE = 1000000 };
/* Checks the graph options against the model; NULL if fine. */
const char *llama_spec_error(const llama_spec *s);
/* The model.json text (malloc'd, NUL-terminated), or NULL on OOM. */
char *llama_graph_json(const llama_spec *s, size_t *len);

#endif
