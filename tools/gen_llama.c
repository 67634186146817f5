/* gen_llama: writes a Llama-style model.json (DESIGN §3) laid out the way
 * sharktank runs LLMs with pipeline parallelism, with the importers' one
 * graph builder (src/import/llama_graph.c: the layout, Megatron TP, the KV
 * cache and the outputs are described there):
 *
 *   gen_llama --layers L --hidden H --heads N --kv-heads K --ffn F --vocab V
 *             --seq S --tp T --pp P [--batch B] [--start P0] [--cache C]
 *             [--name NAME] [--placement sharktank|none] -o FILE
 *
 * This tool only turns its flags into a llama_spec: f32, GGUF tensor names
 * (token_embd.weight, blk.b.attn_q.weight, ...), eps 1e-5 and rope theta
 * 10000 (the ops' defaults), head dim H/N. --start P0 only sets the default
 * cache size (P0 + S): the graph reads the cache up to each token's
 * position (input `positions`, P0..P0+S-1 for a decode step), so a decode
 * step (--seq 1 --start S) takes a prefill's cache outputs as its cache
 * inputs. T = 1 keeps the sharded layouts with one shard, like
 * tools/gen_pipeline. --placement none writes the same model with no
 * placement at all (no shard/devices, transfers or collectives;
 * "devices": T*P), for auto-partition (--pp/--tp/--devices-spec) to place. */
#include "generator_cli.h"
#include "../src/import/import.h" /* llama_spec, llama_graph_json */

typedef struct llama_config {
  long layers, hidden, heads, kv_heads, ffn, vocab, seq, tp, pp;
  long batch, start, cache;
  const char *name;
  const char *placement; /* "sharktank" (default) or "none" */
} llama_config;

static const llama_config llama_defaults = {
  .layers = 2, .hidden = 64, .heads = 4, .kv_heads = 2, .ffn = 128, .vocab = 256, .seq = 8,
  .tp = 1, .pp = 1, .batch = 1, .start = 0, .cache = 0, .name = NULL, .placement = NULL,
};

static bool unplaced(const llama_config *c) { return c->placement && strcmp(c->placement, "none") == 0; }

/* What the flags mean for the graph builder. */
static llama_spec spec_of(const llama_config *c) {
  return (llama_spec){.layers = c->layers, .hidden = c->hidden, .heads = c->heads, .kv_heads = c->kv_heads,
                      .head_dim = c->heads > 0 ? c->hidden / c->heads : 0, .ffn = c->ffn, .vocab = c->vocab,
                      .eps = 1e-5, .theta = 10000, .rope_factor = 1, .naming = LLAMA_NAMES_GGUF, .seq = c->seq,
                      .batch = c->batch, .cache = c->cache, .tp = c->tp, .pp = c->pp, .dtype = "f32", .name = c->name,
                      .unplaced = unplaced(c)};
}

/* NULL if the flags are valid, else what is wrong with them: this tool's
 * own flags first, then the builder's checks. */
static const char *config_error(const llama_config *c) {
  if (c->heads < 1 || c->hidden % c->heads != 0) return "--hidden / --heads must be an even head dim";
  if (c->start < 0 || c->cache < c->start + c->seq) return "--cache must be at least --start + --seq";
  llama_spec s = spec_of(c);
  return llama_spec_error(&s);
}

/* ---------------- command line ---------------- */

static void usage(FILE *out) {
  fputs("Usage: gen_llama [--layers L] [--hidden H] [--heads N] [--kv-heads K] [--ffn F] [--vocab V]\n"
        "                 [--seq S] [--tp T] [--pp P] [--batch B] [--start P0] [--cache C]\n"
        "                 [--name NAME] [--placement sharktank|none] -o FILE\n"
        "Writes a Llama-style model: L blocks over P pipeline stages of T tensor-parallel devices,\n"
        "S new tokens at positions P0.. with a KV cache of C positions (default P0 + S).\n"
        "Defaults: --layers 2 --hidden 64 --heads 4 --kv-heads 2 --ffn 128 --vocab 256 --seq 8\n"
        "          --tp 1 --pp 1 --batch 1 --start 0. FILE '-' is stdout.\n"
        "--placement none: no placement (for ppcc's auto-partition), \"devices\": T*P.\n",
        out);
}

/* Model names become MLIR symbols and file names: keep them plain. */
static bool plain_name(const char *s) {
  if (!*s || strlen(s) > 64) return false;
  for (; *s; s++)
    if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z')))
      return false;
  return true;
}

static void write_config(FILE *out, const void *text) { fputs(text, out); }

int main(int argc, char **argv) {
  llama_config c = llama_defaults;
  c.cache = -1;
  static const char *const names[] = {"--layers", "--hidden", "--heads", "--kv-heads", "--ffn",   "--vocab",
                                      "--seq",    "--tp",     "--pp",    "--batch",    "--start", "--cache"};
  long *const fields[] = {&c.layers, &c.hidden, &c.heads, &c.kv_heads, &c.ffn,   &c.vocab,
                          &c.seq,    &c.tp,     &c.pp,    &c.batch,    &c.start, &c.cache};
  static const char *const string_names[] = {"--name", "--placement"};
  const char **const string_fields[] = {&c.name, &c.placement};
  gen_cli cli = {.tool = "gen_llama", .usage = usage, .long_names = names, .long_fields = fields, .n_longs = 12,
                 .string_names = string_names, .string_fields = string_fields, .n_strings = 2};
  int rc = gen_cli_parse(&cli, argc, argv);
  if (rc >= 0) return rc;
  if (c.cache < 0) c.cache = c.start + c.seq;
  if (c.name && !plain_name(c.name)) return gen_cli_usage_error(&cli, "--name must be 1-64 of [A-Za-z0-9_.-]", c.name);
  if (c.placement && strcmp(c.placement, "none") != 0 && strcmp(c.placement, "sharktank") != 0)
    return gen_cli_usage_error(&cli, "--placement must be sharktank or none", c.placement);
  const char *problem = config_error(&c);
  if (problem) return gen_cli_usage_error(&cli, problem, NULL);
  char name[96];
  if (!c.name) {
    snprintf(name, sizeof name, "llama_%ldl_%ldh_tp%ld_pp%ld", c.layers, c.hidden, c.tp, c.pp);
    c.name = name;
  }
  llama_spec spec = spec_of(&c);
  char *text = llama_graph_json(&spec, NULL);
  if (!text) {
    fprintf(stderr, "gen_llama: error: out of memory\n");
    return 1;
  }
  rc = gen_cli_write(cli.out_path, write_config, text);
  free(text);
  return rc;
}
