/* `ppcc import hf DIR` / `ppcc import gguf FILE`: a checkpoint becomes a
 * model.json (DESIGN §9) whose params carry the checkpoint's own tensor
 * names; `ppcc run model.json --weights SOURCE` then reads SOURCE as is.
 * Also the shared option handling of `ppcc generate` (generate.c). */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "import_cli.h"
#include "ppcc/io.h"

ppcc_status cli_llama_option(const char *command, llama_spec *s, const char *name, const char *value, bool *handled) {
  long long v;
  ppcc_status st = PPCC_OK;
  *handled = true;
  if (strcmp(name, "tp") == 0) {
    st = cli_parse_int(command, "--tp", value, 1, 4096, &v);
    s->tp = (long)v;
  } else if (strcmp(name, "pp") == 0) {
    st = cli_parse_int(command, "--pp", value, 1, 4096, &v);
    s->pp = (long)v;
  } else if (strcmp(name, "batch") == 0) {
    st = cli_parse_int(command, "--batch", value, 1, 1 << 20, &v);
    s->batch = (long)v;
  } else if (strcmp(name, "dtype") == 0) {
    if (strcmp(value, "f32") != 0 && strcmp(value, "f16") != 0 && strcmp(value, "bf16") != 0)
      return cli_usage_error(command, "--dtype must be f32, f16 or bf16, not '%s'", value);
    s->dtype = value;
  } else if (strcmp(name, "row-positions") == 0) {
    s->row_positions = true;
  } else {
    *handled = false;
  }
  return st;
}

typedef struct import_args {
  const char *kind; /* "hf", "gguf" */
  const char *out;
  llama_spec spec;
  long long seq, cache;
  bool decode;
} import_args;

static const cli_option import_options[] = {
  {"o", true}, {"tp", true}, {"pp", true}, {"seq", true}, {"batch", true}, {"decode", false}, {"row-positions", false},
  {"cache", true}, {"dtype", true}, {NULL, false},
};

static ppcc_status on_import_option(void *ctx, const char *name, const char *value) {
  import_args *a = ctx;
  bool handled;
  ppcc_status st = cli_llama_option("import", &a->spec, name, value, &handled);
  if (handled) return st;
  if (strcmp(name, "o") == 0) a->out = value;
  else if (strcmp(name, "seq") == 0) return cli_parse_int("import", "--seq", value, 1, 1 << 20, &a->seq);
  else if (strcmp(name, "cache") == 0) return cli_parse_int("import", "--cache", value, 1, 1 << 20, &a->cache);
  else if (strcmp(name, "decode") == 0) a->decode = true;
  return PPCC_OK;
}

void cli_help_import_llama(FILE *out) {
  fputs("Usage: ppcc import hf DIR -o MODEL.json [--tp T] [--pp P] [--seq N] [--batch B]\n"
        "                          [--decode] [--cache C] [--dtype f32|f16|bf16] [--row-positions]\n"
        "       ppcc import gguf FILE.gguf -o MODEL.json [same options]\n"
        "\n"
        "Writes a Llama graph for a Hugging Face checkpoint directory (config.json of a\n"
        "LlamaForCausalLM or MistralForCausalLM, model.safetensors or shards listed in\n"
        "model.safetensors.index.json) or a GGUF file (llama.* metadata). The params\n"
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
        "for the split head and the pad cut off the logits.\n"
        "\n"
        "Options:\n"
        "  -o FILE          the model.json to write ('-' is stdout)\n"
        "  --tp T, --pp P   tensor- and pipeline-parallel degrees (default 1, 1)\n"
        "  --seq N          tokens per call (default 16; 1 with --decode)\n"
        "  --batch B        sequences per call (default 1)\n"
        "  --decode         a decode graph: --seq 1\n"
        "  --row-positions  positions are i64 [B, N]: each row of the batch at its own\n"
        "                   positions (rotary, cache writes and masks per row), so rows\n"
        "                   of different lengths share a call and --microbatches can\n"
        "                   cut them\n"
        "  --cache C        KV cache slots (default N, or 64 with --decode)\n"
        "  --dtype D        graph dtype (default f32). Weights of another float dtype\n"
        "                   (bf16 or f16 checkpoints, dequantized GGUF blocks) are\n"
        "                   converted once when ppcc run loads them\n"
        "  -h, --help       show this help\n",
        out);
}

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
  cli_parse p = {.command = "import", .options = import_options, .on_option = on_import_option, .ctx = &a};
  ppcc_status st = cli_parse_args(&p, argc - 1, argv + 1);
  if (st) return st;
  if (p.help) {
    cli_help_import_llama(stdout);
    return PPCC_OK;
  }
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
