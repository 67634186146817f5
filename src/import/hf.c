/* Hugging Face decoder checkpoint directories: DIR/config.json of a
 * family in families.c (Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 2). The weights stay where they are
 * (DIR/model.safetensors or the shards named by
 * DIR/model.safetensors.index.json); the graph's params carry HF's own
 * tensor names so `ppcc run --weights DIR` reads them unchanged.
 *
 * Keys read: architectures/model_type, hidden_size, intermediate_size,
 * num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
 * rms_norm_eps, rope_theta, rope_scaling, tie_word_embeddings,
 * attention_bias, mlp_bias, vocab_size, torch_dtype, hidden_act (Gemma:
 * hidden_activation), sliding_window (use_sliding_window for Qwen2/3),
 * attn_logit_softcapping, final_logit_softcapping, query_pre_attn_scalar. A key that would change the math in a way ppcc does not
 * implement is an error naming it; other keys (tokenizer ids, dropout,
 * max_position_embeddings, ...) do not change a forward pass and are
 * ignored. */
#include <cjson/cJSON.h>
#include "ppcc/json_strict.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../runtime/io/io.h"
#include "import.h"
#include "ppcc/io.h"

static ppcc_status key_error(ppcc_diag *d, const char *path, const char *key, const char *what) {
  return ppcc_error(d, "%s: key '%s': %s", path, key, what);
}

/* A positive integer key; required or defaulted (dflt > 0). */
static ppcc_status int_key(const cJSON *root, const char *path, const char *key, long dflt, long *out, ppcc_diag *d) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || cJSON_IsNull(v)) {
    if (dflt <= 0) return key_error(d, path, key, "missing (a positive integer is required)");
    *out = dflt;
    return PPCC_OK;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 || (double)(long)v->valuedouble != v->valuedouble) {
    char msg[96];
    if (cJSON_IsNumber(v)) snprintf(msg, sizeof msg, "%.17g: must be a positive integer", v->valuedouble);
    else snprintf(msg, sizeof msg, "must be a positive integer");
    return key_error(d, path, key, msg);
  }
  *out = (long)v->valuedouble;
  return PPCC_OK;
}

static ppcc_status float_key(const cJSON *root, const char *path, const char *key, double dflt, double *out,
                             ppcc_diag *d) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || cJSON_IsNull(v)) {
    *out = dflt;
    return PPCC_OK;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1e30) {
    char msg[96];
    if (cJSON_IsNumber(v)) snprintf(msg, sizeof msg, "%.17g: must be a positive number", v->valuedouble);
    else snprintf(msg, sizeof msg, "must be a positive number");
    return key_error(d, path, key, msg);
  }
  *out = v->valuedouble;
  return PPCC_OK;
}

static ppcc_status bool_key(const cJSON *root, const char *path, const char *key, bool *out, ppcc_diag *d) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || cJSON_IsNull(v)) return PPCC_OK;
  if (!cJSON_IsBool(v)) return key_error(d, path, key, "must be true or false");
  *out = cJSON_IsTrue(v);
  return PPCC_OK;
}

/* The family row of architectures[0] (or of model_type without it). */
static ppcc_status check_arch(const cJSON *root, const char *path, const llama_family **family, ppcc_diag *d) {
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
  char msg[700];
  if (!arch || cJSON_IsNull(arch)) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(mt) && (*family = llama_family_of_hf(NULL, mt->valuestring))) return PPCC_OK;
    snprintf(msg, sizeof msg, "missing (one of %s expected)", llama_family_list(false));
    return key_error(d, path, "architectures", msg);
  }
  if (!cJSON_IsArray(arch) || cJSON_GetArraySize(arch) != 1 || !cJSON_IsString(arch->child))
    return key_error(d, path, "architectures", "must be a list of one name");
  if ((*family = llama_family_of_hf(arch->child->valuestring, NULL))) return PPCC_OK;
  snprintf(msg, sizeof msg, "unsupported architecture '%.80s' (%s)", arch->child->valuestring, llama_family_list(false));
  return key_error(d, path, "architectures", msg);
}

/* rope_scaling.KEY's list of head_dim / 2 positive numbers (LongRoPE's factors). */
static ppcc_status factor_list(const cJSON *rs, const char *path, const char *key, long pairs, double *out, ppcc_diag *d) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(rs, key);
  char name[64], msg[96];
  snprintf(name, sizeof name, "rope_scaling.%s", key);
  snprintf(msg, sizeof msg, "must be a list of %ld positive numbers (half the head dim)", pairs);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != pairs) return key_error(d, path, name, msg);
  long k = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, v) {
    if (!cJSON_IsNumber(item) || !(item->valuedouble > 0) || item->valuedouble > 1e30) return key_error(d, path, name, msg);
    out[k++] = item->valuedouble;
  }
  return PPCC_OK;
}

/* LongRoPE as transformers' _compute_longrope_parameters and its
 * per-forward choice: short factors while the call's longest sequence is at
 * most original_max_position_embeddings (config.json's top level, else
 * max_position_embeddings), long factors beyond; attention factor given or
 * sqrt(1 + ln(factor) / ln(orig)) with factor = max / orig when orig is
 * given. */
static ppcc_status read_longrope(const cJSON *root, const cJSON *rs, const char *path, long max_pos, llama_spec *s,
                                 ppcc_diag *d) {
  long orig = max_pos;
  double factor = 0, attention = 0;
  ppcc_status st = int_key(root, path, "original_max_position_embeddings", max_pos, &orig, d);
  if (!st) st = float_key(rs, path, "factor", 0, &factor, d);
  if (!st) st = float_key(rs, path, "attention_factor", 0, &attention, d);
  if (!st && cJSON_GetObjectItemCaseSensitive(root, "original_max_position_embeddings")) factor = (double)max_pos / (double)orig;
  if (!st && !(factor > 0)) st = key_error(d, path, "rope_scaling.factor", "missing (a positive number)");
  s->rope_pairs = (int)(s->head_dim / 2);
  if (!st) st = factor_list(rs, path, "short_factor", s->rope_pairs, s->rope_divisors, d);
  if (!st) st = factor_list(rs, path, "long_factor", s->rope_pairs, s->rope_long_divisors, d);
  s->rope_long_after = orig;
  s->rope_attention = attention > 0 ? attention : factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)orig));
  return st;
}

/* rope_scaling: null, or {"rope_type" (or "type"): default, linear
 * ("factor"), dynamic ("factor"; NTK over max_position_embeddings), yarn
 * ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow",
 * "attention_factor", "mscale", "mscale_all_dim"), longrope / su
 * ("short_factor", "long_factor", "factor", "attention_factor") or llama3
 * ("factor", "low_freq_factor", "high_freq_factor",
 * "original_max_position_embeddings")}, each as transformers'
 * modeling_rope_utils computes it. */
static ppcc_status read_rope_scaling(const cJSON *root, const char *path, llama_spec *s, ppcc_diag *d) {
  const char *key = "rope_scaling";
  llama_rope_none(s);
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!rs || cJSON_IsNull(rs)) return PPCC_OK;
  if (!cJSON_IsObject(rs)) return key_error(d, path, key, "must be null or an object");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
  if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
  if (!cJSON_IsString(type)) return key_error(d, path, key, "needs a rope_type string");
  static const char *const kinds[] = {"default", "linear", "llama3", "dynamic", "yarn", "longrope", "su"};
  int kind = 0;
  while (kind < 7 && strcmp(type->valuestring, kinds[kind]) != 0) kind++;
  if (kind == 7) {
    char msg[160];
    snprintf(msg, sizeof msg, "rope_type '%.60s' is not supported (linear, llama3, dynamic, yarn, longrope)", type->valuestring);
    return key_error(d, path, key, msg);
  }
  if (kind == 0) return PPCC_OK;
  if (s->head_dim / 2 > LLAMA_MAX_ROPE_PAIRS && kind >= 4)
    return key_error(d, path, "head_dim", "is too large for per-pair rope factors (at most 1024)");
  long max_pos = 0;
  ppcc_status st = PPCC_OK;
  if (kind >= 3) st = int_key(root, path, "max_position_embeddings", 0, &max_pos, d);
  if (!st && kind >= 5) return read_longrope(root, rs, path, max_pos, s, d);
  if (!st) st = float_key(rs, path, "factor", 0, &s->rope_factor, d);
  if (!st && !(s->rope_factor > 0)) st = key_error(d, path, "rope_scaling.factor", "missing (a positive number)");
  if (st || kind == 1) return st;
  if (kind == 3) {
    s->rope_dynamic = max_pos;
    return PPCC_OK;
  }
  if (kind == 4) { /* yarn: factor = max / orig when orig is given */
    long orig = max_pos;
    double beta_fast = 0, beta_slow = 0, attention = 0, mscale = 0, mscale_all = 0, factor = s->rope_factor;
    st = int_key(rs, path, "original_max_position_embeddings", max_pos, &orig, d);
    if (!st && cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings")) factor = (double)max_pos / (double)orig;
    if (!st) st = float_key(rs, path, "beta_fast", 32, &beta_fast, d);
    if (!st) st = float_key(rs, path, "beta_slow", 1, &beta_slow, d);
    if (!st) st = float_key(rs, path, "attention_factor", 0, &attention, d);
    if (!st) st = float_key(rs, path, "mscale", 0, &mscale, d);
    if (!st) st = float_key(rs, path, "mscale_all_dim", 0, &mscale_all, d);
    if (!st) llama_rope_yarn(s, factor, orig, beta_fast, beta_slow, attention, mscale, mscale_all);
    s->rope_factor = 1.0; /* in the divisors */
    return st;
  }
  st = float_key(rs, path, "low_freq_factor", 1.0, &s->rope_low, d);
  if (!st) st = float_key(rs, path, "high_freq_factor", 4.0, &s->rope_high, d);
  if (!st) st = int_key(rs, path, "original_max_position_embeddings", 0, &s->rope_orig, d);
  if (!st && !(s->rope_high > s->rope_low))
    st = key_error(d, path, "rope_scaling.high_freq_factor", "must exceed low_freq_factor");
  return st;
}

/* A positive number or null/absent (then 0: off). */
static ppcc_status optional_float_key(const cJSON *root, const char *path, const char *key, double *out, ppcc_diag *d) {
  return float_key(root, path, key, 0.0, out, d);
}

/* The family's activation key (hidden_act; Gemma: hidden_activation, its
 * hidden_act being ignored by transformers) as an op; the row's default
 * when absent or null. */
static ppcc_status read_activation(const cJSON *root, const char *path, const llama_family *f, llama_spec *s,
                                   ppcc_diag *d) {
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, f->act_key);
  s->act = f->act;
  if (!act || cJSON_IsNull(act)) return PPCC_OK;
  if (cJSON_IsString(act) && (s->act = llama_activation_op(act->valuestring))) return PPCC_OK;
  char msg[160];
  snprintf(msg, sizeof msg, "'%.60s' is not supported (silu, gelu, gelu_pytorch_tanh, gelu_new)",
           cJSON_IsString(act) ? act->valuestring : "?");
  return key_error(d, path, f->act_key, msg);
}

/* sliding_window as the family's transformers model reads it: a positive
 * window (Mistral; Gemma 2 on its even layers), ignored (Llama, Gemma), or
 * for Qwen2/Qwen3 only with use_sliding_window, on the layers from
 * max_window_layers on (transformers' per-layer choice; its eager/sdpa
 * mask of 4.51 windows every layer, its flash path and later versions
 * these). */
static ppcc_status read_window(const cJSON *root, const char *path, const llama_family *f, llama_spec *s,
                               ppcc_diag *d) {
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
  s->window = 0;
  s->window_from = 0;
  s->window_period = f->window_period;
  if (!sw || cJSON_IsNull(sw) || f->window == LLAMA_WINDOW_IGNORED) return PPCC_OK;
  if (f->window == LLAMA_WINDOW_FLAGGED) { /* Qwen2/3: layers from max_window_layers on */
    bool use = false;
    ppcc_status st = bool_key(root, path, "use_sliding_window", &use, d);
    if (st || !use) return st;
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(root, "max_window_layers");
    if (!cJSON_IsNumber(from) || from->valuedouble < 0 || from->valuedouble > 1e9 ||
        (double)(long)from->valuedouble != from->valuedouble)
      return key_error(d, path, "max_window_layers", "must be a non-negative integer with use_sliding_window true");
    s->window_from = (long)from->valuedouble;
  }
  return int_key(root, path, "sliding_window", 0, &s->window, d);
}

/* Keys whose non-default values change the math in ways not implemented. */
static ppcc_status check_unsupported(const cJSON *root, const char *path, ppcc_diag *d) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
  if (dt && !cJSON_IsNull(dt) &&
      !(cJSON_IsString(dt) && (strcmp(dt->valuestring, "float32") == 0 || strcmp(dt->valuestring, "float16") == 0 ||
                               strcmp(dt->valuestring, "bfloat16") == 0)))
  {
    char msg[120];
    snprintf(msg, sizeof msg, "'%.40s' is not supported (float32, float16, bfloat16)", cJSON_IsString(dt) ? dt->valuestring : "?");
    return key_error(d, path, "torch_dtype", msg);
  }
  /* transformers rotates only this share of each head (Phi-3 family:
   * Phi-4-mini's 0.75); ppcc's rotary turns whole heads */
  const cJSON *partial = cJSON_GetObjectItemCaseSensitive(root, "partial_rotary_factor");
  if (partial && !cJSON_IsNull(partial) && !(cJSON_IsNumber(partial) && partial->valuedouble == 1.0)) {
    char msg[96];
    snprintf(msg, sizeof msg, "%.17g: partial rotary is not supported (1.0 only)", cJSON_IsNumber(partial) ? partial->valuedouble : -1.0);
    return key_error(d, path, "partial_rotary_factor", msg);
  }
  /* GPT-2 without 1/sqrt(head_dim) on its scores */
  if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "scale_attn_weights")))
    return key_error(d, path, "scale_attn_weights", "false (unscaled scores) is not supported");
  return PPCC_OK;
}

/* What the family row fixes and its optional keys (Gemma 2: logit
 * soft-capping, query_pre_attn_scalar) set. */
static ppcc_status read_family_keys(const cJSON *root, const char *path, const llama_family *f, llama_spec *s,
                                    ppcc_diag *d) {
  s->qkv_bias = f->qkv_bias;
  s->norm_offset = f->hf_norm_offset;
  s->embed_scale = f->embed_scale ? (double)(float)sqrt((double)s->hidden) : 0; /* transformers: an f32 tensor */
  s->post_norms = f->post_norms;
  s->qk_norm = f->qk_norm;
  s->rope_long_recompute = f->longrope_recompute;
  s->layer_norm = f->layer_norm;
  s->plain_mlp = f->plain_mlp;
  s->attn_bias = s->attn_bias || f->all_biases;
  s->mlp_bias = s->mlp_bias || f->all_biases;
  s->block_prefix = f->hf_block_prefix;
  s->renames = f->hf_renames;
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "scale_attn_by_inverse_layer_idx")))
    return key_error(d, path, "scale_attn_by_inverse_layer_idx", "true is not supported");
  double query_scalar = 0;
  ppcc_status st = read_activation(root, path, f, s, d);
  if (!st) st = read_window(root, path, f, s, d);
  if (!st) st = optional_float_key(root, path, "attn_logit_softcapping", &s->attn_softcap, d);
  if (!st) st = optional_float_key(root, path, "final_logit_softcapping", &s->final_softcap, d);
  if (!st) st = optional_float_key(root, path, "query_pre_attn_scalar", &query_scalar, d);
  s->attn_scale = query_scalar > 0 ? 1.0 / sqrt(query_scalar) : 0;
  return st;
}

ppcc_status llama_spec_from_hf_json(const char *path, const char *json, size_t len, llama_spec *s, ppcc_diag *d) {
  cJSON *root = NULL; /* written by Python: a repeated key is its last one, with a warning */
  if (ppcc_json_parse_strict(path, json, len, PPCC_JSON_LAST_WINS, &root, d)) return PPCC_ERR_USER;
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ppcc_error(d, "%s: not a JSON object", path);
  }
  const llama_family *family = NULL;
  ppcc_status st = check_arch(root, path, &family, d);
#define KEY(name) llama_family_key(family, name) /* GPT-2's config.json says n_embd, n_layer, ... */
  if (!st) st = int_key(root, path, KEY("hidden_size"), 0, &s->hidden, d);
  if (!st) st = int_key(root, path, KEY("intermediate_size"), family->ffn_per_hidden * s->hidden, &s->ffn, d);
  if (!st) st = int_key(root, path, KEY("num_hidden_layers"), 0, &s->layers, d);
  if (!st) st = int_key(root, path, KEY("num_attention_heads"), 0, &s->heads, d);
  if (!st) st = int_key(root, path, "num_key_value_heads", s->heads, &s->kv_heads, d);
  if (!st) st = int_key(root, path, "vocab_size", 0, &s->vocab, d);
  if (!st && s->hidden % s->heads != 0 && !cJSON_GetObjectItemCaseSensitive(root, "head_dim"))
    st = key_error(d, path, "hidden_size", "is not a multiple of num_attention_heads and head_dim is not given");
  if (!st) st = int_key(root, path, "head_dim", s->hidden / s->heads, &s->head_dim, d);
  if (!st) st = float_key(root, path, KEY("rms_norm_eps"), 1e-6, &s->eps, d);
  s->learned_positions = 0;
  if (!st && family->learned_positions)
    st = int_key(root, path, KEY("max_position_embeddings"), 0, &s->learned_positions, d);
#undef KEY
  if (!st) st = float_key(root, path, "rope_theta", 10000.0, &s->theta, d);
  s->tied = true; /* transformers: an absent tie_word_embeddings is true (save_pretrained omits it then) */
  if (!st) st = bool_key(root, path, "tie_word_embeddings", &s->tied, d);
  if (!st) st = bool_key(root, path, "attention_bias", &s->attn_bias, d);
  if (!st) st = bool_key(root, path, "mlp_bias", &s->mlp_bias, d);
  if (!st) st = read_rope_scaling(root, path, s, d);
  if (!st) st = check_unsupported(root, path, d);
  if (!st) st = read_family_keys(root, path, family, s, d);
  char msg[120];
  snprintf(msg, sizeof msg, "%ld must divide num_attention_heads %ld", s->kv_heads, s->heads);
  if (!st && s->heads % s->kv_heads != 0) st = key_error(d, path, "num_key_value_heads", msg);
  snprintf(msg, sizeof msg, "%ld must be even (rotary pairs)", s->head_dim);
  if (!st && s->head_dim % 2 != 0) st = key_error(d, path, "head_dim", msg);
  s->naming = LLAMA_NAMES_HF;
  cJSON_Delete(root);
  return st;
}

ppcc_status llama_spec_from_hf(const char *dir, llama_spec *s, ppcc_diag *d) {
  size_t n = strlen(dir) + 16;
  char *path = malloc(n);
  if (!path) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  snprintf(path, n, "%s/config.json", dir);
  size_t len = 0;
  char *text = ppcc_read_file(path, &len, d);
  ppcc_status st = text ? llama_spec_from_hf_json(path, text, len, s, d) : PPCC_ERR_USER;
  free(text);
  free(path);
  s->stored_path = dir; /* f16/bf16 matrices stay as stored */
  s->stored_format = rt_source_tensor_dtype;
  return st;
}
