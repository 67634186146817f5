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

/* A [head_dim / 2] tensor of per-pair rope factors (Phi-3's
 * rope_factors_long/short.weight), read as f32 into out. */
static ppcc_status rope_factors(const rt_gguf *g, const char *name, const llama_spec *s, double *out, ppcc_diag *d) {
  const rt_gguf_tensor *t = rt_gguf_find_tensor(g, name);
  long pairs = s->head_dim / 2;
  if (!t || t->n_dims != 1 || t->ne[0] != pairs || pairs > LLAMA_MAX_ROPE_PAIRS)
    return ppcc_error(d, "%s: tensor '%s' must be [%ld] (half the head dim, at most %d)", g->file.path, name, pairs,
                      (int)LLAMA_MAX_ROPE_PAIRS);
  float v[LLAMA_MAX_ROPE_PAIRS];
  ppcc_status st = rt_gguf_dequantize_rows(g->file.path, t, 0, 1, v, d);
  for (long j = 0; !st && j < pairs; j++) {
    if (!(v[j] > 0) || v[j] > 1e30f) return ppcc_error(d, "%s: tensor '%s': factor %ld must be positive", g->file.path, name, j);
    out[j] = v[j];
  }
  return st;
}

/* ARCH.rope.scaling.* as llama.cpp's converter writes it: type linear
 * (factor) or yarn (factor, original_context_length, yarn_beta_fast,
 * yarn_beta_slow, yarn_attn_factor: transformers' attention_factor), and
 * LongRoPE (Phi-3) as the tensors rope_factors_short/long.weight with
 * original_context_length and attn_factor. Computed as transformers does
 * (llama_rope_yarn; hf.c's LongRoPE). Dynamic NTK is not written by the
 * converter. */
static ppcc_status read_rope_scaling(const rt_gguf *g, const char *a, llama_spec *s, ppcc_diag *d) {
  const char *path = g->file.path, *scaling_key = akey(a, "rope.scaling.type");
  llama_rope_none(s);
  const rt_gguf_kv *scaling = rt_gguf_find_kv(g, scaling_key);
  const char *type = scaling && scaling->string ? scaling->string : scaling ? "?" : "none";
  bool longrope = rt_gguf_find_tensor(g, "rope_factors_long.weight") || rt_gguf_find_tensor(g, "rope_factors_short.weight");
  if (strcmp(type, "none") != 0 && strcmp(type, "linear") != 0 && strcmp(type, "yarn") != 0 &&
      !(strcmp(type, "longrope") == 0 && longrope))
    return ppcc_error(d, "%s: metadata key '%s': rope scaling '%.40s' is not supported (linear, yarn, longrope with "
                      "rope_factors_long/short.weight)", path, scaling_key, type);
  ppcc_status st = PPCC_OK;
  if (strcmp(type, "linear") == 0) return need_number(g, akey(a, "rope.scaling.factor"), true, 1.0, &s->rope_factor, d);
  if (strcmp(type, "yarn") == 0) {
    double factor = 1, beta_fast = 32, beta_slow = 1, attention = 0, orig = 0, ctx = 0;
    /* llama.cpp's own YaRN knobs, not transformers' (DeepSeek's mscale_all_dim, extrapolation_factor) */
    const char *knobs[] = {"rope.scaling.yarn_log_multiplier", "rope.scaling.yarn_ext_factor"};
    for (int k = 0; k < 2; k++) {
      const rt_gguf_kv *kv = rt_gguf_find_kv(g, akey(a, knobs[k]));
      if (kv && !(k == 1 && kv->type != GGUF_KV_STRING && kv->type != GGUF_KV_ARRAY && kv->number == 1.0))
        return ppcc_error(d, "%s: metadata key '%s': %g is not supported with yarn", path, akey(a, knobs[k]),
                          kv->type == GGUF_KV_STRING || kv->type == GGUF_KV_ARRAY ? -1.0 : kv->number);
    }
    st = need_number(g, akey(a, "rope.scaling.factor"), true, 1.0, &factor, d);
    if (!st) st = need_number(g, akey(a, "context_length"), false, 0, &ctx, d);
    if (!st) st = need_number(g, akey(a, "rope.scaling.original_context_length"), ctx <= 0, ctx, &orig, d);
    if (!st) st = need_number(g, akey(a, "rope.scaling.yarn_beta_fast"), false, 32, &beta_fast, d);
    if (!st) st = need_number(g, akey(a, "rope.scaling.yarn_beta_slow"), false, 1, &beta_slow, d);
    if (!st) st = need_number(g, akey(a, "rope.scaling.yarn_attn_factor"), false, 0, &attention, d);
    if (!st && s->head_dim / 2 > LLAMA_MAX_ROPE_PAIRS)
      st = ppcc_error(d, "%s: metadata key '%s': yarn with more than %d rotary pairs is not supported", path, scaling_key,
                      (int)LLAMA_MAX_ROPE_PAIRS);
    if (!st) llama_rope_yarn(s, factor, (long)orig, beta_fast, beta_slow, attention, 0, 0);
    return st;
  }
  if (!longrope) return PPCC_OK;
  double orig = 0, attention = 1;
  st = need_number(g, akey(a, "rope.scaling.original_context_length"), true, 0, &orig, d);
  if (!st) st = need_number(g, akey(a, "rope.scaling.attn_factor"), false, 1.0, &attention, d);
  if (!st) st = rope_factors(g, "rope_factors_short.weight", s, s->rope_divisors, d);
  if (!st) st = rope_factors(g, "rope_factors_long.weight", s, s->rope_long_divisors, d);
  s->rope_pairs = (int)(s->head_dim / 2);
  s->rope_long_after = (long)orig;
  s->rope_attention = attention;
  return st;
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
  s->rope_long_recompute = family->longrope_recompute;
  s->act = family->act;
  s->window_period = family->window_period;
  s->window_from = 0;
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
  st = read_rope_scaling(g, a, s, d);
  if (st) return st;
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
