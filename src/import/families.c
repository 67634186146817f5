/* The decoder families ppcc imports (DESIGN §9: model families are data).
 * The graph builder (llama_graph.c) reads only llama_spec fields; a family
 * is the row that says which of them its checkpoints set. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "import.h"

/* Phi-3: fused q/k/v and gate/up tensors, cut into Llama's parts at load */
static const char *const phi3_hf[] = {
  "self_attn.q_proj.weight", "self_attn.qkv_proj.weight#q", "self_attn.k_proj.weight", "self_attn.qkv_proj.weight#k",
  "self_attn.v_proj.weight", "self_attn.qkv_proj.weight#v", "mlp.gate_proj.weight", "mlp.gate_up_proj.weight#gate",
  "mlp.up_proj.weight", "mlp.gate_up_proj.weight#up", NULL};
static const char *const phi3_gguf[] = {
  "attn_q.weight", "attn_qkv.weight#q", "attn_k.weight", "attn_qkv.weight#k", "attn_v.weight", "attn_qkv.weight#v",
  "ffn_gate.weight", "ffn_up.weight#gate", "ffn_up.weight", "ffn_up.weight#up", NULL};
/* GPT-2: its own HF names, Conv1D weights stored [in, out], fused c_attn */
static const char *const gpt2_hf[] = {
  "model.embed_tokens.weight", "transformer.wte.weight", "model.embed_positions.weight", "transformer.wpe.weight",
  "model.norm.weight", "transformer.ln_f.weight", "model.norm.bias", "transformer.ln_f.bias",
  "input_layernorm.weight", "ln_1.weight", "input_layernorm.bias", "ln_1.bias",
  "self_attn.q_proj.weight", "attn.c_attn.weight#T#q", "self_attn.k_proj.weight", "attn.c_attn.weight#T#k",
  "self_attn.v_proj.weight", "attn.c_attn.weight#T#v", "self_attn.q_proj.bias", "attn.c_attn.bias#q",
  "self_attn.k_proj.bias", "attn.c_attn.bias#k", "self_attn.v_proj.bias", "attn.c_attn.bias#v",
  "self_attn.o_proj.weight", "attn.c_proj.weight#T", "self_attn.o_proj.bias", "attn.c_proj.bias",
  "post_attention_layernorm.weight", "ln_2.weight", "post_attention_layernorm.bias", "ln_2.bias",
  "mlp.up_proj.weight", "mlp.c_fc.weight#T", "mlp.up_proj.bias", "mlp.c_fc.bias",
  "mlp.down_proj.weight", "mlp.c_proj.weight#T", "mlp.down_proj.bias", "mlp.c_proj.bias", NULL};
static const char *const gpt2_gguf[] = {
  "attn_q.weight", "attn_qkv.weight#q", "attn_k.weight", "attn_qkv.weight#k", "attn_v.weight", "attn_qkv.weight#v",
  "attn_q.bias", "attn_qkv.bias#q", "attn_k.bias", "attn_qkv.bias#k", "attn_v.bias", "attn_qkv.bias#v", NULL};
static const char *const gpt2_keys[] = {
  "hidden_size", "n_embd", "num_hidden_layers", "n_layer", "num_attention_heads", "n_head",
  "intermediate_size", "n_inner", "rms_norm_eps", "layer_norm_epsilon", "max_position_embeddings", "n_positions", NULL};

static const llama_family families[] = {
  {.hf_arch = "LlamaForCausalLM", .model_type = "llama", .gguf_arch = "llama", .act_key = "hidden_act", .act = "silu"},
  {.hf_arch = "MistralForCausalLM", .model_type = "mistral", .gguf_arch = "llama", .window = LLAMA_WINDOW_USED,
   .act_key = "hidden_act", .act = "silu"},
  {.hf_arch = "Qwen2ForCausalLM", .model_type = "qwen2", .gguf_arch = "qwen2", .qkv_bias = true, .window = LLAMA_WINDOW_FLAGGED,
   .act_key = "hidden_act", .act = "silu"},
  {.hf_arch = "Qwen3ForCausalLM", .model_type = "qwen3", .gguf_arch = "qwen3", .qk_norm = true, .window = LLAMA_WINDOW_FLAGGED,
   .act_key = "hidden_act", .act = "silu"},
  {.hf_arch = "GemmaForCausalLM", .model_type = "gemma", .gguf_arch = "gemma", .hf_norm_offset = 1, .embed_scale = true,
   .act_key = "hidden_activation", .act = "gelu_tanh"},
  {.hf_arch = "Gemma2ForCausalLM", .model_type = "gemma2", .gguf_arch = "gemma2", .hf_norm_offset = 1,
   .embed_scale = true, .post_norms = true, .window = LLAMA_WINDOW_USED, .window_period = 2, .act_key = "hidden_activation", .act = "gelu_tanh"},
  {.hf_arch = "Phi3ForCausalLM", .model_type = "phi3", .gguf_arch = "phi3", .window = LLAMA_WINDOW_USED, .longrope_recompute = true,
   .act_key = "hidden_act", .act = "silu", .hf_renames = phi3_hf, .gguf_renames = phi3_gguf},
  {.hf_arch = "GPT2LMHeadModel", .model_type = "gpt2", .gguf_arch = "gpt2", .window = LLAMA_WINDOW_IGNORED,
   .act_key = "activation_function", .act = "gelu_tanh", .layer_norm = true, .learned_positions = true,
   .plain_mlp = true, .all_biases = true, .hf_keys = gpt2_keys, .ffn_per_hidden = 4,
   .gguf_eps = "attention.layer_norm_epsilon", .hf_block_prefix = "transformer.h.%ld.", .hf_renames = gpt2_hf,
   .gguf_renames = gpt2_gguf},
};
#define N_FAMILIES (sizeof families / sizeof *families)

const llama_family *llama_family_of_hf(const char *arch, const char *model_type) {
  for (size_t i = 0; i < N_FAMILIES; i++)
    if ((arch && strcmp(arch, families[i].hf_arch) == 0) || (!arch && model_type && strcmp(model_type, families[i].model_type) == 0))
      return &families[i];
  return NULL;
}

const llama_family *llama_family_of_gguf(const char *arch) {
  for (size_t i = 0; arch && i < N_FAMILIES; i++)
    if (strcmp(arch, families[i].gguf_arch) == 0) return &families[i];
  return NULL;
}

/* The activation op of an HF hidden_act / hidden_activation value, or NULL. */
const char *llama_activation_op(const char *hf_name) {
  static const char *const names[][2] = {
    {"silu", "silu"}, {"swish", "silu"}, {"gelu", "gelu"}, {"gelu_pytorch_tanh", "gelu_tanh"}, {"gelu_new", "gelu_tanh"},
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(hf_name, names[i][0]) == 0) return names[i][1];
  return NULL;
}

/* The family's name of config.json key `key` (GPT-2: n_embd for hidden_size). */
const char *llama_family_key(const llama_family *f, const char *key) {
  for (int i = 0; f->hf_keys && f->hf_keys[i]; i += 2)
    if (strcmp(f->hf_keys[i], key) == 0) return f->hf_keys[i + 1];
  return key;
}

const char *llama_family_list(bool gguf) {
  static char list[2][512];
  char *out = list[gguf];
  size_t n = 0;
  out[0] = 0;
  for (size_t i = 0; i < N_FAMILIES; i++) {
    const char *name = gguf ? families[i].gguf_arch : families[i].hf_arch;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = strcmp(name, gguf ? families[j].gguf_arch : families[j].hf_arch) == 0;
    if (!seen && n < sizeof list[0]) n += (size_t)snprintf(out + n, sizeof list[0] - n, "%s%s", n ? ", " : "", name);
  }
  return out;
}

void llama_rope_none(llama_spec *s) {
  s->rope_factor = 1.0;
  s->rope_low = 1.0;
  s->rope_high = 4.0;
  s->rope_orig = 0;
  s->rope_dynamic = 0;
  s->rope_pairs = 0;
  s->rope_long_after = 0;
  s->rope_attention = 1.0;
}

/* transformers' get_mscale */
static double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0; }

/* The pair index at which `rotations` full turns fit in orig positions
 * (transformers' find_correction_dim). */
static double yarn_correction_dim(double rotations, double dim, double base, double orig) {
  return dim * log(orig / (rotations * 2 * 3.14159265358979323846)) / (2 * log(base));
}

void llama_rope_yarn(llama_spec *s, double factor, long orig_max, double beta_fast, double beta_slow,
                     double attention_factor, double mscale, double mscale_all_dim) {
  double dim = (double)s->head_dim;
  double low = floor(yarn_correction_dim(beta_fast, dim, s->theta, (double)orig_max));
  double high = ceil(yarn_correction_dim(beta_slow, dim, s->theta, (double)orig_max));
  low = low < 0 ? 0 : low;
  high = high > dim - 1 ? dim - 1 : high;
  if (low == high) high += 0.001; /* as transformers: no division by zero */
  s->rope_pairs = (int)(s->head_dim / 2);
  /* inv_freq = freq / factor * ramp + freq * (1 - ramp) */
  for (int j = 0; j < s->rope_pairs; j++) {
    double ramp = ((double)j - low) / (high - low);
    ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
    s->rope_divisors[j] = 1.0 / (ramp / factor + (1.0 - ramp));
  }
  if (attention_factor > 0) s->rope_attention = attention_factor;
  else if (mscale > 0 && mscale_all_dim > 0) s->rope_attention = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all_dim);
  else s->rope_attention = yarn_mscale(factor, 1.0);
}
