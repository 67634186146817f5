/* `ppcc import hf DIR` / `ppcc import gguf FILE`: a checkpoint becomes a
 * model.json (DESIGN §9) whose params carry the checkpoint's own tensor
 * names; `ppcc run model.json --weights SOURCE` then reads SOURCE as is.
 * Also the shared option handling of `ppcc generate` (generate.c). */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "import_cli.h"
#include "ppcc/io.h"

static ppcc_status set_dtype(const cli_value *v) {
  if (strcmp(v->text, "f32") != 0 && strcmp(v->text, "f16") != 0 && strcmp(v->text, "bf16") != 0)
    return cli_usage_error(v->command, "--dtype must be f32, f16 or bf16, not '%s'", v->text);
  *(const char **)v->field = v->text;
  ((llama_spec *)v->args)->dtype_given = true; /* GGUF blocks converted, not kept */
  return PPCC_OK;
}

const cli_option cli_llama_options[] = {
  CLI_INT_ROW("tp", "T", llama_spec, tp, 1, 4096, "tensor-parallel degree (default 1)"),
  CLI_INT_ROW("pp", "P", llama_spec, pp, 1, 4096, "pipeline-parallel degree (default 1)"),
  CLI_CALL_ROW("dtype", "D", llama_spec, dtype, set_dtype,
               "graph dtype: f32 (default), f16 or bf16. Weights of\n"
               "another float dtype (bf16 or f16 checkpoints) are\n"
               "converted once at load; GGUF blocks (q4_k ...) stay\n"
               "quantized unless --dtype is given (then dequantized)"),
  CLI_END_ROW,
};

typedef struct import_args {
  const char *kind; /* "hf", "gguf" */
  const char *out;
  llama_spec spec;
  long long seq, cache;
  bool decode;
} import_args;

static const cli_option import_options[] = {
  CLI_TEXT_ROW("o", "FILE", import_args, out, "the model.json to write ('-' is stdout)"),
  CLI_GROUP_ROW(import_args, spec, cli_llama_options),
  CLI_INT_ROW("seq", "N", import_args, seq, 1, 1 << 20, "tokens per call (default 16; 1 with --decode)"),
  CLI_INT_ROW("batch", "B", import_args, spec.batch, 1, 1 << 20, "sequences per call (default 1)"),
  CLI_FLAG_ROW("decode", import_args, decode, "a decode graph: --seq 1"),
  CLI_FLAG_ROW("row-positions", import_args, spec.row_positions,
               "positions are i64 [B, N]: each row of the batch at its own\n"
               "positions (rotary, cache writes and masks per row), so rows\n"
               "of different lengths share a call and --microbatches can\n"
               "cut them"),
  CLI_INT_ROW("cache", "C", import_args, cache, 1, 1 << 20, "KV cache slots (default N, or 64 with --decode)"),
  CLI_END_ROW,
};

static const cli_command import_command = {
  .name = "import",
  .usage = "Usage: ppcc import hf DIR -o MODEL.json [--tp T] [--pp P] [--seq N] [--batch B]\n"
           "                          [--decode] [--cache C] [--dtype f32|f16|bf16] [--row-positions]\n"
           "       ppcc import gguf FILE.gguf -o MODEL.json [same options]\n"
           "\n"
           "Writes a decoder graph for a Hugging Face checkpoint directory (config.json of\n"
           "a family in src/import/families.c: Llama, Mistral, Qwen2/3, Gemma/Gemma 2,\n"
           "Phi-3, GPT-2; model.safetensors or shards listed in\n"
           "model.safetensors.index.json) or a GGUF file (ARCH.* metadata). The params\n"
           "keep the checkpoint's own tensor names, so 'ppcc run MODEL.json --weights DIR'\n"
           "(or --weights FILE.gguf) reads the checkpoint unchanged. Blocks are spread\n"
           "over P pipeline stages of T tensor-parallel devices (sharktank's layout).\n"
           "\n"
           "Inputs of the graph: tokens (i64 [B, N]), positions (i64 [N], the positions\n"
           "of the N tokens) and per block k/v caches [B, C, kv_heads, head_dim]. Outputs:\n"
           "logits of the last token, next_token (greedy) and the updated caches. Attention\n"
           "reads cache slots 0..position, so one graph serves every position. With fewer\n"
           "kv heads than T (MQA), each is copied to T/kv_heads devices and the caches\n"
           "have T heads (Megatron); a vocab not divisible by T is padded with zero rows\n"
           "for the split head and the pad cut off the logits.\n",
  .options = import_options,
  .help_column = 19,
};

void cli_help_import_llama(FILE *out) { cli_print_help(&import_command, out); }

ppcc_status cli_llama_finish(const char *command, const char *source, llama_spec *s, ppcc_diag *d) {
  const char *problem = llama_spec_error(s);
  if (problem) return ppcc_error(d, "%s: %s", source, problem);
  return PPCC_OK;
}

int cli_cmd_import_llama(int argc, char **argv, bool *handled) {
  *handled = argc >= 1 && (strcmp(argv[0], "hf") == 0 || strcmp(argv[0], "gguf") == 0);
  if (!*handled) return PPCC_OK;
  import_args a = {0};
  a.spec = (llama_spec){.tp = 1, .pp = 1, .batch = 1, .dtype = "f32"};
  a.kind = argv[0];
  cli_parse p = {.cmd = &import_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc - 1, argv + 1);
  if (st || p.help) return st;
  if (!a.out) return cli_usage_error("import", "missing -o MODEL.json");
  ppcc_diag d;
  ppcc_diag_init(&d, p.model_path, stderr);
  st = strcmp(a.kind, "hf") == 0 ? llama_spec_from_hf(p.model_path, &a.spec, &d)
                                 : llama_spec_from_gguf(p.model_path, &a.spec, &d);
  if (st) return st;
  a.spec.seq = a.decode ? 1 : a.seq ? a.seq : 16;
  if (a.decode && a.seq > 1) return cli_usage_error("import", "--decode means --seq 1");
  a.spec.cache = a.cache ? a.cache : a.decode ? 64 : a.spec.seq;
  st = cli_llama_finish("import", p.model_path, &a.spec, &d);
  if (st) return st;
  cli_buffer buf = {0};
  buf.data = llama_graph_json(&a.spec, &buf.len);
  if (!buf.data) return ppcc_error_status(&d, PPCC_ERR_INTERNAL, "out of memory");
  const char *paths[1] = {a.out};
  st = cli_write_outputs(paths, &buf, 1, &d);
  cli_buffer_free(&buf);
  return st;
}
