/* GGUF files (llama.cpp / sharktank): general.architecture names a family
 * of families.c (llama, qwen2, qwen3, gemma, gemma2); its ARCH.* metadata fills the same
 * llama_spec as an HF config. Tensors keep GGUF's names (token_embd.weight,
 * blk.N.attn_q.weight, ...), read by `ppcc run --weights FILE.gguf`, which
 * dequantizes them and permutes attn_q/attn_k rows back from llama.cpp's
 * interleaved-rotary order (src/runtime/io/weights_sources.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "../runtime/io/io.h"
#include "import.h"
#include "ppcc/quant.h"

static ppcc_status need_number(const rt_gguf *g, const char *key, bool required, double dflt, double *out,
                               ppcc_diag *d) {
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  if (!kv) {
    if (required) return ppcc_error(d, "%s: metadata key '%s' is missing", g->file.path, key);
    *out = dflt;
    return PPCC_OK;
  }
  if (kv->type == GGUF_KV_STRING || kv->type == GGUF_KV_ARRAY || kv->type == GGUF_KV_BOOL || !(kv->number > 0) ||
      kv->number > 1e12)
    return ppcc_error(d, "%s: metadata key '%s' must be a positive number", g->file.path, key);
  *out = kv->number;
  return PPCC_OK;
}

static ppcc_status need_int(const rt_gguf *g, const char *key, bool required, long dflt, long *out, ppcc_diag *d) {
  double v = 0;
  ppcc_status st = need_number(g, key, required, (double)dflt, &v, d);
  if (st) return st;
  if (v != (double)(long)v || v > 1e9) return ppcc_error(d, "%s: metadata key '%s' must be an integer", g->file.path, key);
  *out = (long)v;
  return PPCC_OK;
}

/* A sliding window: absent or 0 (llama.cpp writes 0 for none) is none. */
static ppcc_status window_of(const rt_gguf *g, const char *key, long *out, ppcc_diag *d) {
  const rt_gguf_kv *kv = rt_gguf_find_kv(g, key);
  *out = 0;
  if (!kv || (kv->type != GGUF_KV_STRING && kv->type != GGUF_KV_ARRAY && kv->number == 0)) return PPCC_OK;
  return need_int(g, key, false, 0, out, d);
}

/* "ARCH.suffix": the family's metadata key */
static const char *akey(const char *arch, const char *suffix) {
  static char buf[4][128];
  static int k;
  char *out = buf[k++ % 4];
  snprintf(out, sizeof buf[0], "%s.%s", arch, suffix);
  return out;
}

static ppcc_status spec_from_parsed(const rt_gguf *g, llama_spec *s, ppcc_diag *d) {
  const char *path = g->file.path;
  const rt_gguf_kv *arch_kv = rt_gguf_find_kv(g, "general.architecture");
  if (!arch_kv || !arch_kv->string) return ppcc_error(d, "%s: metadata key 'general.architecture' is missing", path);
  const llama_family *family = llama_family_of_gguf(arch_kv->string);
  if (!family)
    return ppcc_error(d, "%s: metadata key 'general.architecture': unsupported architecture '%.80s' (%s)", path,
                      arch_kv->string, llama_family_list(true));
  const char *a = family->gguf_arch;
  s->qkv_bias = family->qkv_bias;
  /* llama.cpp's converter stores Gemma's norms as 1 + w: no offset here */
  s->norm_offset = 0;
  s->post_norms = family->post_norms;
  s->qk_norm = family->qk_norm;
  s->act = family->act;
  s->window_period = family->window_period;
  s->layer_norm = family->layer_norm;
  s->plain_mlp = family->plain_mlp;
  s->block_prefix = NULL;
  s->renames = family->gguf_renames;
  s->attn_scale = 0; /* llama.cpp: 1/sqrt(key_length) (query_pre_attn_scalar is not stored) */
  ppcc_status st = need_int(g, akey(a, "embedding_length"), true, 0, &s->hidden, d);
  if (!st) st = need_int(g, akey(a, "feed_forward_length"), true, 0, &s->ffn, d);
  if (!st) st = need_int(g, akey(a, "block_count"), true, 0, &s->layers, d);
  if (!st) st = need_int(g, akey(a, "attention.head_count"), true, 0, &s->heads, d);
  if (!st) st = need_int(g, akey(a, "attention.head_count_kv"), false, s->heads, &s->kv_heads, d);
  if (!st)
    st = need_number(g, akey(a, family->gguf_eps ? family->gguf_eps : "attention.layer_norm_rms_epsilon"), false, 1e-5,
                     &s->eps, d);
  s->learned_positions = 0;
  if (!st && family->learned_positions) st = need_int(g, akey(a, "context_length"), true, 0, &s->learned_positions, d);
  if (!st) st = need_number(g, akey(a, "rope.freq_base"), false, 10000.0, &s->theta, d);
  if (!st) st = need_number(g, akey(a, "attn_logit_softcapping"), false, 0, &s->attn_softcap, d);
  if (!st) st = need_number(g, akey(a, "final_logit_softcapping"), false, 0, &s->final_softcap, d);
  if (!st) st = window_of(g, akey(a, "attention.sliding_window"), &s->window, d);
  if (st) return st;
  s->embed_scale = family->embed_scale ? (double)(float)sqrt((double)s->hidden) : 0;
  s->rope_factor = 1.0;
  s->rope_low = 1.0;
  s->rope_high = 4.0;
  s->rope_orig = 0;
  const char *scaling_key = akey(a, "rope.scaling.type");
  const rt_gguf_kv *scaling = rt_gguf_find_kv(g, scaling_key);
  if (scaling && !(scaling->string && (strcmp(scaling->string, "linear") == 0 || strcmp(scaling->string, "none") == 0)))
    return ppcc_error(d, "%s: metadata key '%s': rope scaling '%.40s' is not supported (linear, none)", path, scaling_key,
                      scaling->string ? scaling->string : "?");
  if (scaling && strcmp(scaling->string, "linear") == 0) {
    st = need_number(g, akey(a, "rope.scaling.factor"), true, 1.0, &s->rope_factor, d);
    if (st) return st;
  }
  /* the head dim: key_length where given (it may differ from hidden/heads) */
  long value_len = 0;
  if (!rt_gguf_find_kv(g, akey(a, "attention.key_length")) && s->hidden % s->heads != 0)
    return ppcc_error(d, "%s: metadata key '%s' is not a multiple of the head count and '%s' is not given", path,
                      akey(a, "embedding_length"), akey(a, "attention.key_length"));
  st = need_int(g, akey(a, "attention.key_length"), false, s->hidden / s->heads, &s->head_dim, d);
  if (!st) st = need_int(g, akey(a, "attention.value_length"), false, s->head_dim, &value_len, d);
  if (st) return st;
  if (value_len != s->head_dim)
    return ppcc_error(d, "%s: metadata key '%s': value heads of %ld differ from key heads of %ld (not supported)", path,
                      akey(a, "attention.value_length"), value_len, s->head_dim);
  long rope_dims = s->head_dim;
  st = need_int(g, akey(a, "rope.dimension_count"), false, s->head_dim, &rope_dims, d);
  if (st) return st;
  if (rope_dims != s->head_dim)
    return ppcc_error(d, "%s: metadata key '%s': partial rotary (%ld of %ld head dims) is not supported", path,
                      akey(a, "rope.dimension_count"), rope_dims, s->head_dim);
  if (rt_gguf_find_tensor(g, "rope_factors_long.weight"))
    return ppcc_error(d, "%s: tensor 'rope_factors_long.weight': longrope scaling (Phi-3 128k) is not supported", path);
  /* Llama 3 in GGUF: the rope scaling as per-pair divisors of the frequencies */
  const rt_gguf_tensor *freqs = rt_gguf_find_tensor(g, "rope_freqs.weight");
  if (freqs && (freqs->n_dims != 1 || (long)freqs->ne[0] != s->head_dim / 2))
    return ppcc_error(d, "%s: tensor 'rope_freqs.weight' must be [%ld] (half the head dim)", path, s->head_dim / 2);
  s->rope_freqs = freqs != NULL;
  const rt_gguf_tensor *embd = rt_gguf_find_tensor(g, "token_embd.weight");
  if (!embd) return ppcc_error(d, "%s: tensor 'token_embd.weight' is missing", path);
  if (embd->n_dims != 2 || embd->ne[0] != s->hidden)
    return ppcc_error(d, "%s: tensor 'token_embd.weight' must be [vocab, %ld]", path, s->hidden);
  s->vocab = (long)embd->ne[1];
  long vocab = s->vocab;
  st = need_int(g, akey(a, "vocab_size"), false, s->vocab, &vocab, d);
  if (!st && vocab != s->vocab)
    st = ppcc_error(d, "%s: metadata key '%s' (%ld) disagrees with token_embd.weight (%ld rows)", path,
                    akey(a, "vocab_size"), vocab, s->vocab);
  s->tied = rt_gguf_find_tensor(g, "output.weight") == NULL;
  /* biases are present or not (llama.cpp writes what the checkpoint has) */
  s->qkv_bias = s->qkv_bias || rt_gguf_find_tensor(g, "blk.0.attn_q.bias") != NULL;
  s->attn_bias = family->all_biases || rt_gguf_find_tensor(g, "blk.0.attn_output.bias") != NULL;
  s->mlp_bias = family->all_biases || rt_gguf_find_tensor(g, "blk.0.ffn_down.bias") != NULL;
  s->naming = LLAMA_NAMES_GGUF;
  return st;
}

ppcc_status llama_spec_from_gguf(const char *path, llama_spec *s, ppcc_diag *d) {
  rt_gguf g;
  ppcc_status st = rt_gguf_open(path, &g, d);
  if (st) return st;
  st = spec_from_parsed(&g, s, d);
  s->stored_path = path;
  s->stored_format = rt_source_tensor_dtype;
  rt_gguf_close(&g);
  return st;
}

ppcc_status llama_spec_from_source(const char *source, llama_spec *s, ppcc_diag *d) {
  struct stat st;
  if (stat(source, &st) != 0) return ppcc_error(d, "%s: no such file or directory", source);
  if (S_ISDIR(st.st_mode)) return llama_spec_from_hf(source, s, d);
  return llama_spec_from_gguf(source, s, d);
}
