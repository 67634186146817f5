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

/* config.json's sliding_window: ignored by transformers' model (Llama,
 * Gemma), used (Mistral, Gemma 2), or used only when use_sliding_window is
 * true (Qwen2, Qwen3). */
typedef enum { LLAMA_WINDOW_IGNORED, LLAMA_WINDOW_USED, LLAMA_WINDOW_FLAGGED } llama_window_use;

/* What differs between decoder families, as data: one row per family in
 * families.c. config.json and GGUF metadata both start from the row. */
typedef struct llama_family {
  const char *hf_arch;    /* config.json architectures[0] */
  const char *model_type; /* config.json model_type */
  const char *gguf_arch;  /* general.architecture, also its metadata keys' prefix */
  bool qkv_bias;          /* q/k/v projections always have biases (Qwen2) */
  llama_window_use window; /* what config.json's sliding_window means for the family */
  double hf_norm_offset;  /* HF norms scale by (offset + w) (Gemma: 1; llama.cpp's converter adds it to the weights) */
  bool embed_scale;       /* embeddings times sqrt(hidden) (Gemma) */
  bool post_norms;        /* a norm after attention and after the MLP too, before each residual add (Gemma 2) */
  bool qk_norm;           /* an RMSNorm over each q and k head before rotary (Qwen3) */
  int window_period;      /* with a sliding window, only layers b % period == 0 use it (Gemma 2: 2); 0: all */
  const char *act_key;    /* config.json key of the MLP activation ("hidden_act"; Gemma: "hidden_activation") */
  const char *act;        /* the activation op when that key is absent or null (GGUF: always) */
  /* GPT-2 / Phi-3 */
  bool layer_norm;        /* LayerNorm with a bias (GPT-2) instead of RMSNorm */
  bool learned_positions; /* a position embedding table added to the token embeddings, no rotary (GPT-2) */
  bool plain_mlp;         /* up -> activation -> down, no gate (GPT-2) */
  bool all_biases;        /* every projection and norm has a bias (GPT-2) */
  const char *const *hf_keys; /* {canonical, family's} config.json key pairs, NULL-ended (GPT-2: n_embd...) */
  long ffn_per_hidden;    /* an absent intermediate size is this times the hidden size (GPT-2: 4); 0: required */
  const char *gguf_eps;   /* the GGUF eps key after ARCH. (NULL: attention.layer_norm_rms_epsilon) */
  /* tensor names: Llama's (model.layers.N.self_attn.q_proj.weight, blk.N.attn_q.weight) unless renamed by
   * {llama name, family's name} pairs, NULL-ended; a family name may end in #q, #k, #v (rows of a fused
   * qkv tensor), #gate, #up (of a fused gate_up) and carry #T (stored [in, out]: Conv1D) before those */
  const char *hf_block_prefix; /* block b's HF tensors start with this printf format (NULL: "model.layers.%ld.") */
  const char *const *hf_renames, *const *gguf_renames;
} llama_family;

/* The row of a config.json architecture or model_type / a GGUF
 * general.architecture; NULL when ppcc has none. `list` names them all. */
const llama_family *llama_family_of_hf(const char *arch, const char *model_type);
const llama_family *llama_family_of_gguf(const char *arch);
const char *llama_family_list(bool gguf);
/* config.json's name of a canonical (Llama) key for the family. */
const char *llama_family_key(const llama_family *f, const char *key);
/* A tensor name after a family's renames (llama_family.hf_renames). */
const char *llama_renamed(const char *const *renames, const char *name);
/* The op of an HF activation name (silu, gelu, gelu_pytorch_tanh...), or NULL. */
const char *llama_activation_op(const char *hf_name);

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
  double norm_offset;     /* RMSNorms scale by (w + norm_offset) */
  double embed_scale;     /* embeddings times this (0: not scaled) */
  bool post_norms, qk_norm; /* as the family row */
  const char *act;        /* the MLP's activation op: silu, gelu, gelu_tanh */
  double attn_scale;      /* scores times this (0: 1/sqrt(head_dim)) */
  double attn_softcap, final_softcap; /* x -> cap * tanh(x / cap) of scores / logits (0: none) */
  long window;            /* sliding-window attention over this many positions (0: none) */
  bool layer_norm, plain_mlp; /* as the family row */
  long learned_positions; /* rows of the position embedding table (0: rotary) */
  const char *block_prefix;   /* as the family row's hf_block_prefix for HF names (NULL: Llama's) */
  const char *const *renames; /* the family row's renames of the source's naming (NULL: none) */
  int window_period;      /* only layers b % period == 0 have the window (0: all) */
  llama_naming naming;
  /* the graph (from the command line) */
  long seq, batch, cache, tp, pp;
  bool row_positions; /* positions [batch, seq]: each row at its own positions */
  const char *dtype; /* "f32", "f16", "bf16" */
  bool dtype_given;  /* --dtype: every weight converted to dtype */
  const char *name;
  /* The source (a GGUF file or an HF directory): without --dtype its
   * quantized weights keep their stored block format (q4_k ...), except
   * where a tensor-parallel split would cut their blocks (then dtype), and
   * f16/bf16 matrices stay f16/bf16 in an f32 graph. */
  const char *stored_path;
  /* The format ("q4_k", "bf16", "f32") tensor is stored in at stored_path,
   * or NULL (rt_source_tensor_dtype: the graph builder reads no file); the
   * source stays open in *state between calls, tensor NULL closes it. */
  const char *(*stored_format)(const char *stored_path, const char *tensor, void **state);
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

/* Whether layer b attends through the sliding window. */
bool llama_layer_windowed(const llama_spec *s, long b);

/* The longest KV cache a graph may have (positions). */
enum { LLAMA_MAX_CACHE = 1000000 };
/* Checks the graph options against the model; NULL if fine. */
const char *llama_spec_error(const llama_spec *s);
/* The model.json text (malloc'd, NUL-terminated), or NULL on OOM. */
char *llama_graph_json(const llama_spec *s, size_t *len);

#endif
