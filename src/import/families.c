/* The decoder families ppcc imports (DESIGN §9: model families are data).
 * The graph builder (llama_graph.c) reads only llama_spec fields; a family
 * is the row that says which of them its checkpoints set. */
#include <stdio.h>
#include <string.h>
#include "import.h"

static const llama_family families[] = {
  /* hf_arch               model_type  gguf_arch  qkv_bias window_flag */
  {"LlamaForCausalLM",    "llama",    "llama",   false,   false},
  {"MistralForCausalLM",  "mistral",  "llama",   false,   false},
  {"Qwen2ForCausalLM",    "qwen2",    "qwen2",   true,    true},
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
