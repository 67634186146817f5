/* gen_llama: writes a Llama-style model.json (DESIGN §3) laid out the way
 * sharktank runs LLMs with pipeline parallelism:
 *
 *   gen_llama --layers L --hidden H --heads N --kv-heads K --ffn F --vocab V
 *             --seq S --tp T --pp P [--batch B] [--start P0] [--cache C]
 *             [--name NAME] -o FILE
 *
 * - Block b runs on stage floor(b*P/L); stage s is the TP group of devices
 *   [s*T, s*T+T-1]. The embedding lives on stage 0, the output head on
 *   stage P-1. Where a block starts a new stage, explicit transfers move
 *   the residual stream and the positions over (sharktank's transfer
 *   between blocks).
 * - Megatron tensor parallelism: Q/K/V, gate and up are column-parallel
 *   (weights split over their output rows), attn_output and ffn_down are
 *   row-parallel (split over their input columns), each followed by an
 *   all_reduce. Attention and rotary run on the local heads.
 * - KV cache: per block, inputs blk.b.k_cache / blk.b.v_cache
 *   [B, C, K, D] split over kv heads, pinned on the block's devices (P7:
 *   the cache never moves). index_copy writes the S new positions
 *   (input `positions`, P0..P0+S-1) and attention reads positions
 *   0..P0+S-1 of the updated cache. The updated caches are outputs
 *   (blk.b.k_cache_new ...), so a decode step (--seq 1 --start S) takes a
 *   prefill's cache outputs as its cache inputs.
 * - Outputs: the last position's logits [B, 1, V] (vocab-parallel head,
 *   all_gather), next_token = argmax(logits) [B, 1] and the caches.
 * T = 1 keeps the sharded layouts with one shard, like tools/gen_pipeline.
 * --placement none writes the same model with no placement at all (no
 * shard/devices, transfers or collectives; "devices": T*P), for
 * auto-partition (--pp/--tp/--devices-spec) to place. */
#include "generator_cli.h"

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

static long head_dim(const llama_config *c) { return c->hidden / c->heads; }
static long stage_of(const llama_config *c, long block) { return block * c->pp / c->layers; }

/* NULL if the configuration is valid, else what is wrong with it. */
static const char *config_error(const llama_config *c) {
  if (c->layers < 1 || c->layers > 100000) return "--layers must be in [1, 100000]";
  if (c->tp < 1 || c->pp < 1 || c->tp * c->pp > 4096) return "--tp and --pp must be >= 1, with tp*pp <= 4096";
  if (c->pp > c->layers) return "--pp must not exceed --layers (every stage needs a block)";
  if (c->hidden < 1 || c->heads < 1 || c->kv_heads < 1 || c->ffn < 1 || c->vocab < 1 || c->seq < 1 || c->batch < 1)
    return "--hidden, --heads, --kv-heads, --ffn, --vocab, --seq and --batch must be positive";
  if (c->hidden % c->heads != 0 || head_dim(c) % 2 != 0) return "--hidden / --heads must be an even head dim";
  if (c->heads % c->kv_heads != 0) return "--heads must be a multiple of --kv-heads";
  if (c->kv_heads % c->tp != 0 || c->heads % c->tp != 0) return "--heads and --kv-heads must be divisible by --tp";
  if (c->ffn % c->tp != 0 || c->vocab % c->tp != 0) return "--ffn and --vocab must be divisible by --tp";
  if (c->start < 0 || c->cache < c->start + c->seq) return "--cache must be at least --start + --seq";
  return NULL;
}

/* ---------------- JSON writing ---------------- */

typedef struct writer {
  FILE *out;
  const llama_config *c;
  bool first; /* no comma before the next array item */
} writer;

static void item(writer *w) {
  fputs(w->first ? "    " : ",\n    ", w->out);
  w->first = false;
}

static void open_array(writer *w, const char *key) {
  fprintf(w->out, "  \"%s\": [\n", key);
  w->first = true;
}

static void close_array(writer *w, bool last) { fprintf(w->out, "\n  ]%s\n", last ? "" : ","); }

static void devices_of_stage(writer *w, long stage) {
  fputs("[", w->out);
  for (long t = 0; t < w->c->tp; t++) fprintf(w->out, "%s%ld", t ? ", " : "", stage * w->c->tp + t);
  fputs("]", w->out);
}

/* A param or input on a stage: split along split_dim, or replicated (-1). */
static void tensor_decl(writer *w, const char *name, const char *dtype, int rank, const long *shape, int split_dim,
                        long stage, bool pinned_input) {
  item(w);
  fprintf(w->out, "{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", name, dtype);
  for (int i = 0; i < rank; i++) fprintf(w->out, "%s%ld", i ? ", " : "", shape[i]);
  if (unplaced(w->c)) {
    fputs("]}", w->out);
    return;
  }
  if (split_dim >= 0)
    fprintf(w->out, "], \"shard\": {\"kind\": \"split\", \"dim\": %d, \"count\": %ld}, \"devices\": ", split_dim, w->c->tp);
  else
    fprintf(w->out, "], \"shard\": {\"kind\": \"replicated\", \"count\": %ld}, \"devices\": ", w->c->tp);
  devices_of_stage(w, stage);
  fputs(pinned_input ? ", \"pinned\": true}" : "}", w->out);
}

static void param2(writer *w, const char *name, long rows, long cols, int split_dim, long stage) {
  long shape[2] = {rows, cols};
  tensor_decl(w, name, "f32", 2, shape, split_dim, stage, false);
}

static void param1(writer *w, const char *name, long n, long stage) {
  tensor_decl(w, name, "f32", 1, &n, -1, stage, false);
}

/* {"op": OP, "in": [...], "out": [RESULT], "attrs": {ATTRS}}; in is a
 * NULL-terminated list, attrs raw JSON or NULL. */
static void op(writer *w, const char *kind, const char *const *in, const char *result, const char *attrs) {
  item(w);
  fprintf(w->out, "{\"op\": \"%s\", \"in\": [", kind);
  for (int k = 0; in[k]; k++) fprintf(w->out, "%s\"%s\"", k ? ", " : "", in[k]);
  fprintf(w->out, "], \"out\": [\"%s\"]", result);
  if (attrs) fprintf(w->out, ", \"attrs\": {%s}", attrs);
  fputs("}", w->out);
}

#define OP1(w, kind, a, res, attrs) op(w, kind, (const char *const[]){a, NULL}, res, attrs)
#define OP2(w, kind, a, b, res, attrs) op(w, kind, (const char *const[]){a, b, NULL}, res, attrs)
#define OP3(w, kind, a, b, c3, res, attrs) op(w, kind, (const char *const[]){a, b, c3, NULL}, res, attrs)

/* Names of block b's values: "blk.<b>.<what>". */
typedef struct names {
  char buf[32][64];
  int n;
} names;

static const char *nm(names *n, long b, const char *what) {
  char *s = n->buf[n->n++ % 32];
  snprintf(s, 64, "blk.%ld.%s", b, what);
  return s;
}

/* ---------------- params and inputs ---------------- */

static void write_block_params(writer *w, long b) {
  const llama_config *c = w->c;
  long s = stage_of(c, b), qd = c->heads * head_dim(c), kvd = c->kv_heads * head_dim(c);
  names n = {.n = 0};
  param1(w, nm(&n, b, "attn_norm.weight"), c->hidden, s);
  param2(w, nm(&n, b, "attn_q.weight"), qd, c->hidden, 0, s);
  param2(w, nm(&n, b, "attn_k.weight"), kvd, c->hidden, 0, s);
  param2(w, nm(&n, b, "attn_v.weight"), kvd, c->hidden, 0, s);
  param2(w, nm(&n, b, "attn_output.weight"), c->hidden, qd, 1, s);
  param1(w, nm(&n, b, "ffn_norm.weight"), c->hidden, s);
  param2(w, nm(&n, b, "ffn_gate.weight"), c->ffn, c->hidden, 0, s);
  param2(w, nm(&n, b, "ffn_up.weight"), c->ffn, c->hidden, 0, s);
  param2(w, nm(&n, b, "ffn_down.weight"), c->hidden, c->ffn, 1, s);
}

static void write_params(writer *w) {
  const llama_config *c = w->c;
  open_array(w, "params");
  param2(w, "token_embd.weight", c->vocab, c->hidden, -1, 0);
  for (long b = 0; b < c->layers; b++) write_block_params(w, b);
  param1(w, "output_norm.weight", c->hidden, c->pp - 1);
  param2(w, "output.weight", c->vocab, c->hidden, 0, c->pp - 1);
  close_array(w, false);
}

static void write_inputs(writer *w) {
  const llama_config *c = w->c;
  open_array(w, "inputs");
  long tokens[2] = {c->batch, c->seq}, cache[4] = {c->batch, c->cache, c->kv_heads, head_dim(c)};
  tensor_decl(w, "tokens", "i64", 2, tokens, -1, 0, false);
  tensor_decl(w, "positions", "i64", 1, &c->seq, -1, 0, false);
  names n = {.n = 0};
  for (long b = 0; b < c->layers; b++) {
    tensor_decl(w, nm(&n, b, "k_cache"), "f32", 4, cache, 2, stage_of(c, b), true);
    tensor_decl(w, nm(&n, b, "v_cache"), "f32", 4, cache, 2, stage_of(c, b), true);
  }
  close_array(w, false);
}

/* ---------------- ops ---------------- */

static void reshape_attr(char *buf, size_t n, long a, long b, long c3, long d4) {
  if (d4 > 0) snprintf(buf, n, "\"shape\": [%ld, %ld, %ld, %ld]", a, b, c3, d4);
  else snprintf(buf, n, "\"shape\": [%ld, %ld, %ld]", a, b, c3);
}

static const char *const perm_bshd = "\"perm\": [0, 2, 1, 3]"; /* [B,S,H,D] <-> [B,H,S,D] */

/* Self-attention of block b on the normed input h; the result (after the
 * row-parallel output projection and all_reduce) is blk.b.attn_out. */
static void write_attention(writer *w, long b, const char *h, const char *pos) {
  const llama_config *c = w->c;
  long D = head_dim(c), visible = c->start + c->seq;
  char attrs[160];
  names n = {.n = 0};
  OP2(w, "linear", h, nm(&n, b, "attn_q.weight"), nm(&n, b, "q"), NULL);
  OP2(w, "linear", h, nm(&n, b, "attn_k.weight"), nm(&n, b, "k"), NULL);
  OP2(w, "linear", h, nm(&n, b, "attn_v.weight"), nm(&n, b, "v"), NULL);
  reshape_attr(attrs, sizeof attrs, c->batch, c->seq, c->heads, D);
  OP1(w, "reshape", nm(&n, b, "q"), nm(&n, b, "q_heads"), attrs);
  reshape_attr(attrs, sizeof attrs, c->batch, c->seq, c->kv_heads, D);
  OP1(w, "reshape", nm(&n, b, "k"), nm(&n, b, "k_heads"), attrs);
  OP1(w, "reshape", nm(&n, b, "v"), nm(&n, b, "v_heads"), attrs);
  OP2(w, "rotary", nm(&n, b, "q_heads"), pos, nm(&n, b, "q_rot"), NULL);
  OP2(w, "rotary", nm(&n, b, "k_heads"), pos, nm(&n, b, "k_rot"), NULL);
  OP3(w, "index_copy", nm(&n, b, "k_cache"), pos, nm(&n, b, "k_rot"), nm(&n, b, "k_cache_new"), "\"dim\": 1");
  OP3(w, "index_copy", nm(&n, b, "v_cache"), pos, nm(&n, b, "v_heads"), nm(&n, b, "v_cache_new"), "\"dim\": 1");
  const char *keys = nm(&n, b, "k_cache_new"), *values = nm(&n, b, "v_cache_new");
  if (visible < c->cache) { /* read only the positions written so far */
    snprintf(attrs, sizeof attrs, "\"dim\": 1, \"start\": 0, \"end\": %ld", visible);
    OP1(w, "slice", keys, nm(&n, b, "k_seen"), attrs);
    OP1(w, "slice", values, nm(&n, b, "v_seen"), attrs);
    keys = nm(&n, b, "k_seen");
    values = nm(&n, b, "v_seen");
  }
  OP1(w, "permute", nm(&n, b, "q_rot"), nm(&n, b, "q_t"), perm_bshd);
  OP1(w, "permute", keys, nm(&n, b, "k_t"), perm_bshd);
  OP1(w, "permute", values, nm(&n, b, "v_t"), perm_bshd);
  OP3(w, "attention", nm(&n, b, "q_t"), nm(&n, b, "k_t"), nm(&n, b, "v_t"), nm(&n, b, "attn"), "\"causal\": true");
  OP1(w, "permute", nm(&n, b, "attn"), nm(&n, b, "attn_bshd"), perm_bshd);
  reshape_attr(attrs, sizeof attrs, c->batch, c->seq, c->heads * D, 0);
  OP1(w, "reshape", nm(&n, b, "attn_bshd"), nm(&n, b, "attn_flat"), attrs);
  bool whole = unplaced(c);
  OP2(w, "linear", nm(&n, b, "attn_flat"), nm(&n, b, "attn_output.weight"), nm(&n, b, whole ? "attn_out" : "attn_partial"),
      NULL);
  if (!whole) OP1(w, "all_reduce", nm(&n, b, "attn_partial"), nm(&n, b, "attn_out"), NULL);
}

/* SwiGLU feed-forward of block b on the normed input h -> blk.b.ffn_out. */
static void write_ffn(writer *w, long b, const char *h) {
  names n = {.n = 0};
  OP2(w, "linear", h, nm(&n, b, "ffn_gate.weight"), nm(&n, b, "gate"), NULL);
  OP2(w, "linear", h, nm(&n, b, "ffn_up.weight"), nm(&n, b, "up"), NULL);
  OP1(w, "silu", nm(&n, b, "gate"), nm(&n, b, "gate_act"), NULL);
  OP2(w, "mul", nm(&n, b, "gate_act"), nm(&n, b, "up"), nm(&n, b, "swiglu"), NULL);
  bool whole = unplaced(w->c);
  OP2(w, "linear", nm(&n, b, "swiglu"), nm(&n, b, "ffn_down.weight"), nm(&n, b, whole ? "ffn_out" : "ffn_partial"), NULL);
  if (!whole) OP1(w, "all_reduce", nm(&n, b, "ffn_partial"), nm(&n, b, "ffn_out"), NULL);
}

/* Block b reads the residual stream `x` and the positions `pos` and leaves
 * the stream in blk.b.out. A new stage gets both by explicit transfers:
 * activations are unpinned (P4), so the stage's copy of the positions is
 * what its rotary and cache writes meet (sharktank passes positions to
 * every stage too). `pos` is updated to the stage's copy. */
static void write_block(writer *w, long b, const char *x, char *pos, size_t pos_len) {
  const llama_config *c = w->c;
  names n = {.n = 0};
  char devices[64] = "\"devices\": ";
  if (b > 0 && stage_of(c, b) != stage_of(c, b - 1) && !unplaced(c)) { /* a new pipeline stage */
    size_t off = strlen(devices);
    for (long t = 0; t < c->tp; t++)
      off += (size_t)snprintf(devices + off, sizeof devices - off, "%s%ld%s", t ? ", " : "[", stage_of(c, b) * c->tp + t,
                              t + 1 == c->tp ? "]" : "");
    OP1(w, "transfer", x, nm(&n, b, "in"), devices);
    x = nm(&n, b, "in");
    OP1(w, "transfer", pos, nm(&n, b, "positions"), devices);
    snprintf(pos, pos_len, "blk.%ld.positions", b);
  }
  char x_in[64];
  snprintf(x_in, sizeof x_in, "%s", x);
  OP2(w, "rms_norm", x_in, nm(&n, b, "attn_norm.weight"), nm(&n, b, "attn_in"), NULL);
  write_attention(w, b, nm(&n, b, "attn_in"), pos);
  OP2(w, "add", x_in, nm(&n, b, "attn_out"), nm(&n, b, "mid"), NULL);
  OP2(w, "rms_norm", nm(&n, b, "mid"), nm(&n, b, "ffn_norm.weight"), nm(&n, b, "ffn_in"), NULL);
  write_ffn(w, b, nm(&n, b, "ffn_in"));
  OP2(w, "add", nm(&n, b, "mid"), nm(&n, b, "ffn_out"), nm(&n, b, "out"), NULL);
}

static void write_ops(writer *w) {
  const llama_config *c = w->c;
  open_array(w, "ops");
  OP2(w, "embedding", "tokens", "token_embd.weight", "embedded", NULL);
  char x[64] = "embedded", pos[64] = "positions", attrs[96];
  for (long b = 0; b < c->layers; b++) {
    write_block(w, b, x, pos, sizeof pos);
    snprintf(x, sizeof x, "blk.%ld.out", b);
  }
  OP2(w, "rms_norm", x, "output_norm.weight", "final_norm", NULL);
  snprintf(attrs, sizeof attrs, "\"dim\": 1, \"start\": %ld, \"end\": %ld", c->seq - 1, c->seq);
  OP1(w, "slice", "final_norm", "last_hidden", attrs); /* only the last position's logits */
  OP2(w, "linear", "last_hidden", "output.weight", unplaced(c) ? "logits" : "logits_shards", NULL);
  if (!unplaced(c)) OP1(w, "all_gather", "logits_shards", "logits", NULL);
  OP1(w, "argmax", "logits", "next_token", "\"dim\": -1");
  close_array(w, false);
}

static void write_outputs(writer *w) {
  fputs("  \"outputs\": [\"logits\", \"next_token\"", w->out);
  for (long b = 0; b < w->c->layers; b++) fprintf(w->out, ", \"blk.%ld.k_cache_new\", \"blk.%ld.v_cache_new\"", b, b);
  fputs("]\n", w->out);
}

static void write_model(FILE *out, const llama_config *c) {
  writer w = {out, c, true};
  fputs("{\n  \"ppcc\": 1,\n", out);
  if (c->name) fprintf(out, "  \"name\": \"%s\",\n", c->name);
  else fprintf(out, "  \"name\": \"llama_%ldl_%ldh_tp%ld_pp%ld\",\n", c->layers, c->hidden, c->tp, c->pp);
  fprintf(out, "  \"devices\": %ld,\n", c->tp * c->pp);
  write_params(&w);
  write_inputs(&w);
  write_ops(&w);
  write_outputs(&w);
  fputs("}\n", out);
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

static void write_config(FILE *out, const void *config) { write_model(out, config); }

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
  return gen_cli_write(cli.out_path, write_config, &c);
}
