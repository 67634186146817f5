/* The decoder families ppcc imports (DESIGN §9: model families are data).
 * The graph builder (llama_graph.c) reads only llama_spec fields; a family
 * is the row that says which of them its checkpoints set. */
#include <stdio.h>
#include <string.h>
#include "import.h"

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

bool llama_layer_windowed(const llama_spec *s, long b) {
  return s->window > 0 && (s->window_period <= 1 || b % s->window_period == 0);
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
