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
  if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 || (double)(long)v->valuedouble != v->valuedouble)
    return key_error(d, path, key, "must be a positive integer");
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
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1e30)
    return key_error(d, path, key, "must be a positive number");
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

/* rope_scaling: null, {"rope_type"|"type": "linear", "factor"} or
 * {"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
 * "original_max_position_embeddings"}; other kinds are errors. */
static ppcc_status read_rope_scaling(const cJSON *root, const char *path, llama_spec *s, ppcc_diag *d) {
  const char *key = "rope_scaling";
  s->rope_factor = 1.0;
  s->rope_low = 1.0;
  s->rope_high = 4.0;
  s->rope_orig = 0;
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!rs || cJSON_IsNull(rs)) return PPCC_OK;
  if (!cJSON_IsObject(rs)) return key_error(d, path, key, "must be null or an object");
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
  if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
  if (!cJSON_IsString(type)) return key_error(d, path, key, "needs a rope_type string");
  bool llama3 = strcmp(type->valuestring, "llama3") == 0;
  if (!llama3 && strcmp(type->valuestring, "linear") != 0 && strcmp(type->valuestring, "default") != 0) {
    char msg[160];
    snprintf(msg, sizeof msg, "rope_type '%.60s' is not supported (linear, llama3)", type->valuestring);
    return key_error(d, path, key, msg);
  }
  if (strcmp(type->valuestring, "default") == 0) return PPCC_OK;
  ppcc_status st = float_key(rs, path, "factor", 0, &s->rope_factor, d);
  if (!st && !(s->rope_factor > 0)) st = key_error(d, path, "rope_scaling.factor", "missing (a positive number)");
  if (st || !llama3) return st;
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
 * for Qwen2/Qwen3 only with use_sliding_window, which this refuses (their
 * max_window_layers split is not implemented). */
static ppcc_status read_window(const cJSON *root, const char *path, const llama_family *f, llama_spec *s,
                               ppcc_diag *d) {
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
  s->window = 0;
  s->window_period = f->window_period;
  if (!sw || cJSON_IsNull(sw) || f->window == LLAMA_WINDOW_IGNORED) return PPCC_OK;
  if (f->window == LLAMA_WINDOW_FLAGGED) {
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "use_sliding_window"))) return PPCC_OK;
    char msg[120];
    snprintf(msg, sizeof msg, "true (with sliding_window %.0f): per-layer windows by max_window_layers are not supported",
             cJSON_IsNumber(sw) ? sw->valuedouble : -1.0);
    return key_error(d, path, "use_sliding_window", msg);
  }
  return int_key(root, path, "sliding_window", 0, &s->window, d);
}

/* Keys whose non-default values change the math in ways not implemented. */
static ppcc_status check_unsupported(const cJSON *root, const char *path, ppcc_diag *d) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
  if (dt && !cJSON_IsNull(dt) &&
      !(cJSON_IsString(dt) && (strcmp(dt->valuestring, "float32") == 0 || strcmp(dt->valuestring, "float16") == 0 ||
                               strcmp(dt->valuestring, "bfloat16") == 0)))
    return key_error(d, path, "torch_dtype", "must be float32, float16 or bfloat16");
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
  if (!st && s->heads % s->kv_heads != 0)
    st = key_error(d, path, "num_key_value_heads", "must divide num_attention_heads");
  if (!st && s->head_dim % 2 != 0) st = key_error(d, path, "head_dim", "must be even (rotary pairs)");
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
