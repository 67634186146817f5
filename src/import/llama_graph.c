/* The one Llama graph builder of the importers: a llama_spec becomes
 * model.json text. Layout as tools/gen_llama (sharktank's pipeline
 * parallelism):
 * - block b runs on stage floor(b*P/L), stage s being devices
 *   [s*T, s*T+T-1]; the embedding lives on stage 0, the head on stage P-1,
 *   and an explicit transfer moves the residual stream to a new stage;
 * - Megatron TP: q/k/v, gate, up split over output rows, o and down over
 *   input columns, each followed by an all_reduce; vocab-parallel head;
 * - KV cache: inputs blk.b.k_cache / v_cache [B, C, Hkv, D] pinned on the
 *   block's devices; index_copy writes the S new positions (input
 *   `positions`) and attention reads the whole cache with `positions` as
 *   its fourth operand: a query at position p sees cache slots 0..p, so
 *   slots not yet written are masked and one compiled decode graph
 *   (S = 1) serves every step. Attention is seq_major: it reads q, the
 *   caches and writes its output as [B, S, H, D], where they lie (a
 *   permuted copy of each cache cost O(cache) bytes per layer per step).
 * Params keep the source's tensor names (HF or GGUF). A tied head reuses
 * the embedding table: moved to the last stage (pinned) and split over
 * vocab rows there. An unplaced spec writes the same graph without any
 * placement (no shards, devices, transfers or collectives). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "import.h"
#include "ppcc/quant.h"

static long stage_of(const llama_spec *s, long block) { return block * s->pp / s->layers; }

/* Megatron with fewer kv heads than T (MQA): every kv head is copied to
 * the T/kv_heads devices whose query heads read it, so each device holds
 * one kv head in its cache; 1 when the kv heads split evenly. */
static long kv_copies(const llama_spec *s) { return !s->unplaced && s->kv_heads % s->tp ? s->tp / s->kv_heads : 1; }
/* The vocab padded to a multiple of T (Megatron): the head's pad rows are
 * zero and their logits are cut off after the all_gather. */
static long padded_vocab(const llama_spec *s) { return s->unplaced ? s->vocab : (s->vocab + s->tp - 1) / s->tp * s->tp; }

bool llama_layer_windowed(const llama_spec *s, long b) {
  return s->window > 0 && b >= s->window_from && (s->window_period <= 1 || b % s->window_period == 0);
}

const char *llama_spec_error(const llama_spec *s) {
  if (s->layers < 1 || s->layers > 100000) return "the model needs 1 to 100000 layers";
  if (s->tp < 1 || s->pp < 1 || s->tp * s->pp > 4096) return "--tp and --pp must be >= 1, with tp*pp <= 4096";
  if (s->pp > s->layers) return "--pp must not exceed the number of layers (every stage needs a block)";
  if (s->hidden < 1 || s->heads < 1 || s->kv_heads < 1 || s->ffn < 1 || s->vocab < 1 || s->head_dim < 2)
    return "hidden size, heads, kv heads, intermediate size, vocab and head dim must be positive";
  if (s->hidden > (1L << 20) || s->ffn > (1L << 22) || s->vocab > (1L << 24) || s->heads > 4096 || s->head_dim > 4096)
    return "the model is larger than ppcc accepts";
  if (s->head_dim % 2 != 0) return "the head dim must be even (rotary pairs)";
  if (s->heads % s->kv_heads != 0) return "num_attention_heads must be a multiple of num_key_value_heads";
  if (s->heads % s->tp != 0) return "the attention heads must be divisible by --tp";
  if (s->kv_heads % s->tp != 0 && s->tp % s->kv_heads != 0)
    return "the kv heads must be divisible by --tp or divide it (then each is copied to tp/kv_heads devices)";
  if (kv_copies(s) > 16) return "--tp may copy each kv head to at most 16 devices";
  if (s->ffn % s->tp != 0) return "the intermediate size must be divisible by --tp";
  if (padded_vocab(s) - s->vocab > s->vocab) return "the vocab must be at least --tp - 1";
  if (s->seq < 1 || s->batch < 1 || s->seq > 1000000 || s->batch > 1000000) return "--seq and --batch must be positive";
  if (s->cache < s->seq) return "--cache must be at least --seq";
  if (s->cache > LLAMA_MAX_CACHE) return "--cache must be at most 1000000";
  if (s->learned_positions > 0 && s->cache > s->learned_positions)
    return "--cache exceeds the model's learned positions (n_positions / context_length)";
  if (!(s->eps > 0) || !(s->theta > 0)) return "rms_norm_eps and rope_theta must be positive";
  if (s->rope_pairs != 0 && s->rope_pairs != s->head_dim / 2) return "the per-pair rope factors must be half the head dim";
  return NULL;
}

typedef struct writer {
  FILE *out;
  const llama_spec *s;
  bool first;
  bool keep_stored;     /* weights kept in their stored formats */
  void *stored_state;   /* the spec's stored_format's open file */
  char *rotary;         /* every rotary op's attributes (rotary_attrs) */
} writer;

static void item(writer *w) {
  fputs(w->first ? "    " : ",\n    ", w->out);
  w->first = false;
}

static void open_array(writer *w, const char *key) {
  fprintf(w->out, "  \"%s\": [\n", key);
  w->first = true;
}

static void close_array(writer *w) { fputs("\n  ],\n", w->out); }

static void devices_of_stage(writer *w, long stage) {
  fputs("[", w->out);
  for (long t = 0; t < w->s->tp; t++) fprintf(w->out, "%s%ld", t ? ", " : "", stage * w->s->tp + t);
  fputs("]", w->out);
}

/* A param or input on a stage: split along split_dim, or replicated (-1). */
static void tensor_decl(writer *w, const char *name, const char *dtype, int rank, const long *shape, int split_dim,
                        long stage, bool pinned_input) {
  item(w);
  fprintf(w->out, "{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", name, dtype);
  for (int i = 0; i < rank; i++) fprintf(w->out, "%s%ld", i ? ", " : "", shape[i]);
  if (w->s->unplaced) {
    fputs("]}", w->out);
    return;
  }
  if (split_dim >= 0)
    fprintf(w->out, "], \"shard\": {\"kind\": \"split\", \"dim\": %d, \"count\": %ld}, \"devices\": ", split_dim, w->s->tp);
  else
    fprintf(w->out, "], \"shard\": {\"kind\": \"replicated\", \"count\": %ld}, \"devices\": ", w->s->tp);
  devices_of_stage(w, stage);
  fputs(pinned_input ? ", \"pinned\": true}" : "}", w->out);
}

/* A matrix keeps its stored block format (a linear's weight or the
 * embedding table) unless a split along its columns would cut blocks;
 * f16/bf16 ones stay as stored in an f32 graph (the kernels convert rows). */
static const char *matrix_dtype(writer *w, const char *name, long cols, int split_dim) {
  const char *stored = w->keep_stored ? w->s->stored_format(w->s->stored_path, name, &w->stored_state) : NULL;
  const ppcc_block_format *f = stored ? ppcc_block_format_named(stored) : NULL;
  if (f && f->block == 1) return strcmp(w->s->dtype, "f32") == 0 ? f->name : w->s->dtype;
  if (!f) return w->s->dtype;
  if (split_dim == 1 && (cols % w->s->tp != 0 || (cols / w->s->tp) % f->block != 0)) return w->s->dtype;
  return f->name;
}

static void param2(writer *w, const char *name, long rows, long cols, int split_dim, long stage) {
  long shape[2] = {rows, cols};
  tensor_decl(w, name, matrix_dtype(w, name, cols, split_dim), 2, shape, split_dim, stage, false);
}

static void param1(writer *w, const char *name, long n, long stage) {
  tensor_decl(w, name, w->s->dtype, 1, &n, -1, stage, false);
}

/* A bias split like its column-parallel projection's output rows. */
static void param1_split(writer *w, const char *name, long n, long stage) {
  tensor_decl(w, name, w->s->dtype, 1, &n, 0, stage, false);
}

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
#define OP4(w, kind, a, b, c3, d4, res, attrs) op(w, kind, (const char *const[]){a, b, c3, d4, NULL}, res, attrs)

/* ---------------- names ---------------- */

typedef enum {
  W_ATTN_NORM, W_Q, W_K, W_V, W_O, W_FFN_NORM, W_GATE, W_UP, W_DOWN,
  B_Q, B_K, B_V, B_O, B_GATE, B_UP, B_DOWN, W_POST_ATTN_NORM, W_POST_FFN_NORM, W_Q_NORM, W_K_NORM,
  B_ATTN_NORM, B_FFN_NORM, W_COUNT
} block_weight;

static const char *const hf_block[W_COUNT] = {
  "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
  "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
  "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight",
  "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias",
  "mlp.gate_proj.bias", "mlp.up_proj.bias", "mlp.down_proj.bias",
  "post_attention_layernorm.weight", "post_feedforward_layernorm.weight", "self_attn.q_norm.weight",
  "self_attn.k_norm.weight", "input_layernorm.bias", "post_attention_layernorm.bias",
};
static const char *const gguf_block[W_COUNT] = {
  "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
  "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
  "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias",
  "post_attention_norm.weight", "post_ffw_norm.weight", "attn_q_norm.weight", "attn_k_norm.weight",
  "attn_norm.bias", "ffn_norm.bias",
};

/* Rotating buffers for names used within one statement. */
typedef struct names {
  char buf[16][160];
  int n;
} names;

/* `name` after a family's renames (pairs, NULL-ended), or name itself. */
const char *llama_renamed(const char *const *renames, const char *name) {
  for (int i = 0; renames && renames[i]; i += 2)
    if (strcmp(renames[i], name) == 0) return renames[i + 1];
  return name;
}

/* A family's part of a fused tensor, "#q" ... "#up" ending a renamed
 * name, as the rows the weights loader cuts ("#a:b"); out holds the name. */
static void fused_rows(const llama_spec *s, char *out, size_t size) {
  static const char *const parts[] = {"#q", "#k", "#v", "#gate", "#up"};
  long qd = s->heads * s->head_dim, kvd = s->kv_heads * s->head_dim;
  long start[] = {0, qd, qd + kvd, 0, s->ffn}, len[] = {qd, kvd, kvd, s->ffn, s->ffn};
  size_t n = strlen(out);
  for (int i = 0; i < 5; i++) {
    size_t k = strlen(parts[i]);
    if (n > k && strcmp(out + n - k, parts[i]) == 0) {
      snprintf(out + n - k, size - (n - k), "#%ld:%ld", start[i], start[i] + len[i]);
      return;
    }
  }
}

static const char *weight_name(names *n, const llama_spec *s, long b, block_weight k) {
  char *out = n->buf[n->n++ % 16], prefix[64];
  const size_t size = sizeof n->buf[0];
  const char *base = s->naming == LLAMA_NAMES_HF ? hf_block[k] : gguf_block[k];
  /* with post-norms (Gemma 2) HF's post_attention_layernorm follows
   * attention and pre_feedforward_layernorm leads the MLP */
  if (s->naming == LLAMA_NAMES_HF && s->post_norms && k == W_FFN_NORM) base = "pre_feedforward_layernorm.weight";
  const char *format = s->naming == LLAMA_NAMES_GGUF ? "blk.%ld." : s->block_prefix ? s->block_prefix : "model.layers.%ld.";
  snprintf(prefix, sizeof prefix, format, b);
  snprintf(out, size, "%s%s", prefix, llama_renamed(s->renames, base));
  fused_rows(s, out, size);
  return out;
}

/* A whole-model tensor by its Llama name (HF, GGUF), renamed for the family. */
static const char *global_name(const llama_spec *s, const char *hf, const char *gguf) {
  return llama_renamed(s->renames, s->naming == LLAMA_NAMES_HF ? hf : gguf);
}
static const char *embd_name(const llama_spec *s) { return global_name(s, "model.embed_tokens.weight", "token_embd.weight"); }
static const char *pos_embd_name(const llama_spec *s) {
  return global_name(s, "model.embed_positions.weight", "position_embd.weight");
}
static const char *norm_name(const llama_spec *s) { return global_name(s, "model.norm.weight", "output_norm.weight"); }
static const char *norm_bias_name(const llama_spec *s) { return global_name(s, "model.norm.bias", "output_norm.bias"); }
static const char *head_name(const llama_spec *s) { return global_name(s, "lm_head.weight", "output.weight"); }

/* Values of block b: "blk.<b>.<what>" (activations and caches). */
static const char *nm(names *n, long b, const char *what) {
  char *out = n->buf[n->n++ % 16];
  snprintf(out, sizeof n->buf[0], "blk.%ld.%s", b, what);
  return out;
}

/* ---------------- params and inputs ---------------- */

static void write_params(writer *w) {
  const llama_spec *s = w->s;
  long qd = s->heads * s->head_dim, kvd = s->kv_heads * s->head_dim;
  open_array(w, "params");
  param2(w, embd_name(s), s->vocab, s->hidden, -1, 0);
  if (s->learned_positions > 0) param2(w, pos_embd_name(s), s->learned_positions, s->hidden, -1, 0);
  for (long b = 0; b < s->layers; b++) {
    long st = stage_of(s, b);
    names n = {.n = 0};
    param1(w, weight_name(&n, s, b, W_ATTN_NORM), s->hidden, st);
    param2(w, weight_name(&n, s, b, W_Q), qd, s->hidden, 0, st);
    int kv_split = kv_copies(s) > 1 ? -1 : 0; /* copied kv heads: whole K/V on every device */
    param2(w, weight_name(&n, s, b, W_K), kvd, s->hidden, kv_split, st);
    param2(w, weight_name(&n, s, b, W_V), kvd, s->hidden, kv_split, st);
    param2(w, weight_name(&n, s, b, W_O), s->hidden, qd, 1, st);
    param1(w, weight_name(&n, s, b, W_FFN_NORM), s->hidden, st);
    if (s->layer_norm) {
      param1(w, weight_name(&n, s, b, B_ATTN_NORM), s->hidden, st);
      param1(w, weight_name(&n, s, b, B_FFN_NORM), s->hidden, st);
    }
    if (!s->plain_mlp) param2(w, weight_name(&n, s, b, W_GATE), s->ffn, s->hidden, 0, st);
    param2(w, weight_name(&n, s, b, W_UP), s->ffn, s->hidden, 0, st);
    param2(w, weight_name(&n, s, b, W_DOWN), s->hidden, s->ffn, 1, st);
    if (s->post_norms) {
      param1(w, weight_name(&n, s, b, W_POST_ATTN_NORM), s->hidden, st);
      param1(w, weight_name(&n, s, b, W_POST_FFN_NORM), s->hidden, st);
    }
    if (s->qk_norm) {
      param1(w, weight_name(&n, s, b, W_Q_NORM), s->head_dim, st);
      param1(w, weight_name(&n, s, b, W_K_NORM), s->head_dim, st);
    }
    if (s->qkv_bias || s->attn_bias) {
      param1_split(w, weight_name(&n, s, b, B_Q), qd, st);
      tensor_decl(w, weight_name(&n, s, b, B_K), s->dtype, 1, &kvd, kv_split, st, false);
      tensor_decl(w, weight_name(&n, s, b, B_V), s->dtype, 1, &kvd, kv_split, st, false);
    }
    if (s->attn_bias) param1(w, weight_name(&n, s, b, B_O), s->hidden, st); /* added after the all_reduce */
    if (s->mlp_bias) {
      if (!s->plain_mlp) param1_split(w, weight_name(&n, s, b, B_GATE), s->ffn, st);
      param1_split(w, weight_name(&n, s, b, B_UP), s->ffn, st);
      param1(w, weight_name(&n, s, b, B_DOWN), s->hidden, st);
    }
  }
  if (s->rope_freqs) param1(w, "rope_freqs.weight", s->head_dim / 2, 0); /* moved along with the positions */
  param1(w, norm_name(s), s->hidden, s->pp - 1);
  if (s->layer_norm) param1(w, norm_bias_name(s), s->hidden, s->pp - 1);
  if (!s->tied) param2(w, head_name(s), s->vocab, s->hidden, padded_vocab(s) == s->vocab ? 0 : -1, s->pp - 1);
  close_array(w);
}

static void write_inputs(writer *w) {
  const llama_spec *s = w->s;
  open_array(w, "inputs");
  long tokens[2] = {s->batch, s->seq}, cache[4] = {s->batch, s->cache, s->kv_heads * kv_copies(s), s->head_dim};
  tensor_decl(w, "tokens", "i64", 2, tokens, -1, 0, false);
  long row_pos[2] = {s->batch, s->seq}; /* per row: rotary, cache writes and masks per row */
  if (s->row_positions) tensor_decl(w, "positions", "i64", 2, row_pos, -1, 0, false);
  else tensor_decl(w, "positions", "i64", 1, &s->seq, -1, 0, false);
  names n = {.n = 0};
  for (long b = 0; b < s->layers; b++) {
    tensor_decl(w, nm(&n, b, "k_cache"), s->dtype, 4, cache, 2, stage_of(s, b), true);
    tensor_decl(w, nm(&n, b, "v_cache"), s->dtype, 4, cache, 2, stage_of(s, b), true);
  }
  close_array(w);
}

/* ---------------- ops ---------------- */

/* The batch dim is -1 (inferred), so the graph runs on microbatches too. */
static void reshape_attr(char *buf, size_t n, long a, long b, long c3, long d4) {
  (void)a;
  if (d4 > 0) snprintf(buf, n, "\"shape\": [-1, %ld, %ld, %ld]", b, c3, d4);
  else snprintf(buf, n, "\"shape\": [-1, %ld, %ld]", b, c3);
}


/* rms_norm's attributes: eps, and the weight offset of (1 + w) norms. */
static const char *norm_attrs(const llama_spec *s, char *buf, size_t n) {
  if (s->norm_offset != 0) snprintf(buf, n, "\"eps\": %.17g, \"weight_offset\": %.17g", s->eps, s->norm_offset);
  else snprintf(buf, n, "\"eps\": %.17g", s->eps);
  return buf;
}

/* The family's norm of x: RMSNorm, or LayerNorm with its bias (GPT-2). */
static void norm(writer *w, const char *x, const char *weight, const char *bias, const char *result) {
  char attrs[128];
  if (w->s->layer_norm) {
    snprintf(attrs, sizeof attrs, "\"eps\": %.17g", w->s->eps);
    OP3(w, "layer_norm", x, weight, bias, result, attrs);
  } else {
    OP2(w, "rms_norm", x, weight, result, norm_attrs(w->s, attrs, sizeof attrs));
  }
}

/* x -> cap * tanh(x / cap) as ops (Gemma 2's final logits). */
static void soft_cap(writer *w, const char *x, double cap, const char *result) {
  char attrs[64], scaled[96], capped[96];
  snprintf(scaled, sizeof scaled, "%s_over_cap", result);
  snprintf(capped, sizeof capped, "%s_tanh", result);
  snprintf(attrs, sizeof attrs, "\"value\": %.17g", 1.0 / cap);
  OP1(w, "scale", x, scaled, attrs);
  OP1(w, "tanh", scaled, capped, NULL);
  snprintf(attrs, sizeof attrs, "\"value\": %.17g", cap);
  OP1(w, "scale", capped, result, attrs);
}

/* A column-parallel projection, with its bias when the spec has one. */
static void projection(writer *w, names *n, long b, const char *x, block_weight weight, block_weight bias, bool has_bias,
                       const char *result) {
  if (has_bias) OP3(w, "linear", x, weight_name(n, w->s, b, weight), weight_name(n, w->s, b, bias), result, NULL);
  else OP2(w, "linear", x, weight_name(n, w->s, b, weight), result, NULL);
}

/* A row-parallel projection: partial sums all-reduced, then the
 * (replicated) bias added once. */
static void row_projection(writer *w, names *n, long b, const char *x, block_weight weight, block_weight bias,
                           bool has_bias, const char *partial, const char *reduced, const char *result) {
  const char *sum = has_bias ? reduced : result;
  OP2(w, "linear", x, weight_name(n, w->s, b, weight), w->s->unplaced ? sum : partial, NULL);
  if (!w->s->unplaced) OP1(w, "all_reduce", partial, sum, NULL);
  if (has_bias) OP2(w, "add", reduced, weight_name(n, w->s, b, bias), result, NULL);
}

/* [B, S, kv*D] -> [B, S, kv, D], split over heads; with copied kv heads
 * (kv_copies > 1) the whole projection is on every device, each head is
 * repeated next to itself ([B, S, kv, copies, D], a concat) and every
 * device keeps its own copy (reshard_split: a local slice). */
static void kv_heads(writer *w, names *n, long b, const char *x, const char *result) {
  const llama_spec *s = w->s;
  long copies = kv_copies(s), D = s->head_dim;
  char attrs[160];
  if (copies == 1) {
    reshape_attr(attrs, sizeof attrs, s->batch, s->seq, s->kv_heads, D);
    OP1(w, "reshape", x, result, attrs);
    return;
  }
  char one[96], many[96], flat[96];
  snprintf(one, sizeof one, "%s_one", result);
  snprintf(many, sizeof many, "%s_copies", result);
  snprintf(flat, sizeof flat, "%s_all", result);
  snprintf(attrs, sizeof attrs, "\"shape\": [-1, %ld, %ld, 1, %ld]", s->seq, s->kv_heads, D);
  OP1(w, "reshape", x, one, attrs);
  const char *in[17];
  for (long k = 0; k < copies; k++) in[k] = one;
  in[copies] = NULL;
  op(w, "concat", in, many, "\"dim\": 3");
  reshape_attr(attrs, sizeof attrs, s->batch, s->seq, s->kv_heads * copies, D);
  OP1(w, "reshape", many, flat, attrs);
  OP1(w, "reshard_split", flat, result, "\"dim\": 2");
  (void)n;
  (void)b;
}

static void divisor_list(FILE *f, const char *key, const double *v, int n) {
  fprintf(f, ", \"%s\": [", key);
  for (int j = 0; j < n; j++) fprintf(f, "%s%.17g", j ? ", " : "", v[j]);
  fputs("]", f);
}

/* The rotary op's attributes: theta and the spec's rope scaling (malloc'd
 * text, NULL on OOM). */
static char *rotary_attrs(const llama_spec *s) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) return NULL;
  fprintf(f, "\"theta\": %.17g", s->theta);
  if (s->rope_factor > 0 && s->rope_factor != 1.0) fprintf(f, ", \"rope_factor\": %.17g", s->rope_factor);
  if (s->rope_orig > 0)
    fprintf(f, ", \"rope_low_freq_factor\": %.17g, \"rope_high_freq_factor\": %.17g, \"rope_original_max_position\": %ld",
            s->rope_low, s->rope_high, s->rope_orig);
  if (s->rope_dynamic > 0) fprintf(f, ", \"rope_dynamic_max_position\": %ld", s->rope_dynamic);
  if (s->rope_pairs > 0) divisor_list(f, "rope_divisors", s->rope_divisors, s->rope_pairs);
  if (s->rope_pairs > 0 && s->rope_long_after > 0) {
    divisor_list(f, "rope_long_divisors", s->rope_long_divisors, s->rope_pairs);
    fprintf(f, ", \"rope_long_after\": %ld", s->rope_long_after);
  }
  if (s->rope_attention > 0 && s->rope_attention != 1.0) fprintf(f, ", \"rope_attention_factor\": %.17g", s->rope_attention);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static void write_attention(writer *w, long b, const char *h, const char *pos, const char *freqs) {
  const llama_spec *s = w->s;
  long D = s->head_dim;
  char attrs[160];
  const char *theta = w->rotary;
  names n = {.n = 0};
  bool qkv_bias = s->qkv_bias || s->attn_bias;
  projection(w, &n, b, h, W_Q, B_Q, qkv_bias, nm(&n, b, "q"));
  projection(w, &n, b, h, W_K, B_K, qkv_bias, nm(&n, b, "k"));
  projection(w, &n, b, h, W_V, B_V, qkv_bias, nm(&n, b, "v"));
  reshape_attr(attrs, sizeof attrs, s->batch, s->seq, s->heads, D);
  OP1(w, "reshape", nm(&n, b, "q"), nm(&n, b, "q_heads"), attrs);
  kv_heads(w, &n, b, nm(&n, b, "k"), nm(&n, b, "k_heads"));
  kv_heads(w, &n, b, nm(&n, b, "v"), nm(&n, b, "v_heads"));
  const char *q_heads = nm(&n, b, "q_heads"), *k_heads = nm(&n, b, "k_heads");
  if (s->qk_norm) { /* Qwen3: each head normalised over its D dims */
    norm_attrs(s, attrs, sizeof attrs);
    OP2(w, "rms_norm", q_heads, weight_name(&n, s, b, W_Q_NORM), nm(&n, b, "q_normed"), attrs);
    OP2(w, "rms_norm", k_heads, weight_name(&n, s, b, W_K_NORM), nm(&n, b, "k_normed"), attrs);
    q_heads = nm(&n, b, "q_normed");
    k_heads = nm(&n, b, "k_normed");
  }
  char q_rot[160], k_rot[160]; /* the heads as the cache and attention meet them */
  snprintf(q_rot, sizeof q_rot, "%s", s->learned_positions > 0 ? q_heads : nm(&n, b, "q_rot"));
  snprintf(k_rot, sizeof k_rot, "%s", s->learned_positions > 0 ? k_heads : nm(&n, b, "k_rot"));
  if (s->learned_positions > 0) {
    /* GPT-2: the positions were added to the embeddings, no rotary */
  } else if (s->rope_freqs) {
    OP3(w, "rotary", q_heads, pos, freqs, nm(&n, b, "q_rot"), theta);
    OP3(w, "rotary", k_heads, pos, freqs, nm(&n, b, "k_rot"), theta);
  } else {
    OP2(w, "rotary", q_heads, pos, nm(&n, b, "q_rot"), theta);
    OP2(w, "rotary", k_heads, pos, nm(&n, b, "k_rot"), theta);
  }
  OP3(w, "index_copy", nm(&n, b, "k_cache"), pos, k_rot, nm(&n, b, "k_cache_new"), "\"dim\": 1");
  OP3(w, "index_copy", nm(&n, b, "v_cache"), pos, nm(&n, b, "v_heads"), nm(&n, b, "v_cache_new"), "\"dim\": 1");
  int len = snprintf(attrs, sizeof attrs, "\"causal\": true, \"seq_major\": true");
  if (s->attn_scale > 0) len += snprintf(attrs + len, sizeof attrs - (size_t)len, ", \"scale\": %.17g", s->attn_scale);
  if (llama_layer_windowed(s, b)) len += snprintf(attrs + len, sizeof attrs - (size_t)len, ", \"window\": %ld", s->window);
  if (s->attn_softcap > 0) snprintf(attrs + len, sizeof attrs - (size_t)len, ", \"softcap\": %.17g", s->attn_softcap);
  OP4(w, "attention", q_rot, nm(&n, b, "k_cache_new"), nm(&n, b, "v_cache_new"), pos, nm(&n, b, "attn"), attrs);
  reshape_attr(attrs, sizeof attrs, s->batch, s->seq, s->heads * D, 0);
  OP1(w, "reshape", nm(&n, b, "attn"), nm(&n, b, "attn_flat"), attrs);
  row_projection(w, &n, b, nm(&n, b, "attn_flat"), W_O, B_O, s->attn_bias, nm(&n, b, "attn_partial"),
                 nm(&n, b, "attn_reduced"), nm(&n, b, "attn_out"));
}

static void write_ffn(writer *w, long b, const char *h) {
  const llama_spec *s = w->s;
  names n = {.n = 0};
  if (s->plain_mlp) { /* GPT-2: down(act(up(x))) */
    projection(w, &n, b, h, W_UP, B_UP, s->mlp_bias, nm(&n, b, "up"));
    OP1(w, s->act ? s->act : "silu", nm(&n, b, "up"), nm(&n, b, "swiglu"), NULL);
  } else {
    projection(w, &n, b, h, W_GATE, B_GATE, s->mlp_bias, nm(&n, b, "gate"));
    projection(w, &n, b, h, W_UP, B_UP, s->mlp_bias, nm(&n, b, "up"));
    OP1(w, s->act ? s->act : "silu", nm(&n, b, "gate"), nm(&n, b, "gate_act"), NULL);
    OP2(w, "mul", nm(&n, b, "gate_act"), nm(&n, b, "up"), nm(&n, b, "swiglu"), NULL);
  }
  row_projection(w, &n, b, nm(&n, b, "swiglu"), W_DOWN, B_DOWN, s->mlp_bias, nm(&n, b, "ffn_partial"),
                 nm(&n, b, "ffn_reduced"), nm(&n, b, "ffn_out"));
}

static void stage_devices_attr(writer *w, long stage, char *buf, size_t size, bool pinned) {
  size_t off = (size_t)snprintf(buf, size, "\"devices\": [");
  for (long t = 0; t < w->s->tp && off < size; t++)
    off += (size_t)snprintf(buf + off, size - off, "%s%ld", t ? ", " : "", stage * w->s->tp + t);
  if (off < size) snprintf(buf + off, size - off, "]%s", pinned ? ", \"pinned\": true" : "");
}

/* Block b reads the residual stream `x` and the positions `pos`. A block
 * that starts a new stage gets both by explicit transfers: activations are
 * unpinned (DESIGN P4), so the stage's copy of the positions is what its
 * rotary, cache writes and attention meet (sharktank hands positions to
 * every stage too). `pos` is updated to the stage's copy; so are the
 * rope frequency divisors `freqs` where the model has them. */
static void write_block(writer *w, long b, const char *x, char *pos, char *freqs, size_t len) {
  const llama_spec *s = w->s;
  names n = {.n = 0};
  char eps[128], x_in[96];
  norm_attrs(s, eps, sizeof eps);
  snprintf(x_in, sizeof x_in, "%s", x);
  if (b > 0 && stage_of(s, b) != stage_of(s, b - 1) && !s->unplaced) {
    char devices[256];
    stage_devices_attr(w, stage_of(s, b), devices, sizeof devices, false);
    OP1(w, "transfer", x, nm(&n, b, "in"), devices);
    snprintf(x_in, sizeof x_in, "blk.%ld.in", b);
    OP1(w, "transfer", pos, nm(&n, b, "positions"), devices);
    snprintf(pos, len, "blk.%ld.positions", b);
    if (s->rope_freqs) {
      OP1(w, "transfer", freqs, nm(&n, b, "rope_freqs"), devices);
      snprintf(freqs, len, "blk.%ld.rope_freqs", b);
    }
  }
  norm(w, x_in, weight_name(&n, s, b, W_ATTN_NORM), weight_name(&n, s, b, B_ATTN_NORM), nm(&n, b, "attn_in"));
  write_attention(w, b, nm(&n, b, "attn_in"), pos, freqs);
  const char *attn_out = nm(&n, b, "attn_out"), *ffn_out = nm(&n, b, "ffn_out");
  if (s->post_norms) { /* Gemma 2: each branch normalised again before its residual add */
    OP2(w, "rms_norm", attn_out, weight_name(&n, s, b, W_POST_ATTN_NORM), nm(&n, b, "attn_post"), eps);
    attn_out = nm(&n, b, "attn_post");
  }
  OP2(w, "add", x_in, attn_out, nm(&n, b, "mid"), NULL);
  norm(w, nm(&n, b, "mid"), weight_name(&n, s, b, W_FFN_NORM), weight_name(&n, s, b, B_FFN_NORM), nm(&n, b, "ffn_in"));
  write_ffn(w, b, nm(&n, b, "ffn_in"));
  if (s->post_norms) {
    OP2(w, "rms_norm", ffn_out, weight_name(&n, s, b, W_POST_FFN_NORM), nm(&n, b, "ffn_post"), eps);
    ffn_out = nm(&n, b, "ffn_post");
  }
  OP2(w, "add", nm(&n, b, "mid"), ffn_out, nm(&n, b, "out"), NULL);
}

/* The head [V, hidden] (whole, on the last stage) padded with zero rows to
 * a multiple of T, then split over vocab rows: head_weight. The zero rows
 * are a slice of the table minus itself (the weights are finite). */
static void head_pad(writer *w, const char *table) {
  const llama_spec *s = w->s;
  char attrs[96];
  snprintf(attrs, sizeof attrs, "\"dim\": 0, \"start\": 0, \"end\": %ld", padded_vocab(s) - s->vocab);
  OP1(w, "slice", table, "head_pad_rows", attrs);
  OP2(w, "sub", "head_pad_rows", "head_pad_rows", "head_pad", NULL);
  OP2(w, "concat", table, "head_pad", "head_padded", "\"dim\": 0");
  OP1(w, "reshard_split", "head_padded", "head_weight", "\"dim\": 0");
}

/* result = rows `ids` of table; an f16/bf16 table kept as stored gives its
 * rows in that dtype, cast to the graph's. */
static void embed(writer *w, const char *ids, const char *table, const char *result) {
  const char *dt = matrix_dtype(w, table, w->s->hidden, -1);
  const ppcc_block_format *f = ppcc_block_format_named(dt);
  if (strcmp(dt, w->s->dtype) == 0 || !f || f->block > 1) { /* quantized rows come out decoded */
    OP2(w, "embedding", ids, table, result, NULL);
    return;
  }
  char rows[96], attrs[64];
  snprintf(rows, sizeof rows, "%s_%s", result, dt);
  snprintf(attrs, sizeof attrs, "\"dtype\": \"%s\"", w->s->dtype);
  OP2(w, "embedding", ids, table, rows, NULL);
  OP1(w, "cast", rows, result, attrs);
}

static void write_ops(writer *w) {
  const llama_spec *s = w->s;
  open_array(w, "ops");
  char x[64] = "embedded", pos[64] = "positions", freqs[64] = "rope_freqs.weight", attrs[256];
  if (s->embed_scale > 0) { /* Gemma: embeddings times sqrt(hidden) */
    embed(w, "tokens", embd_name(s), "embedded_rows");
    snprintf(attrs, sizeof attrs, "\"value\": %.17g", s->embed_scale);
    OP1(w, "scale", "embedded_rows", "embedded", attrs);
  } else if (s->learned_positions > 0) { /* GPT-2: plus the rows of the positions */
    embed(w, "tokens", embd_name(s), "token_rows");
    embed(w, "positions", pos_embd_name(s), "position_rows");
    OP2(w, "add", "token_rows", "position_rows", "embedded", NULL);
  } else {
    embed(w, "tokens", embd_name(s), "embedded");
  }
  for (long b = 0; b < s->layers; b++) {
    write_block(w, b, x, pos, freqs, sizeof pos);
    snprintf(x, sizeof x, "blk.%ld.out", b);
  }
  norm(w, x, norm_name(s), norm_bias_name(s), "final_norm");
  snprintf(attrs, sizeof attrs, "\"dim\": 1, \"start\": %ld, \"end\": %ld", s->seq - 1, s->seq);
  OP1(w, "slice", "final_norm", "last_hidden", attrs);
  const char *head = head_name(s);
  if (s->tied && s->unplaced) {
    head = embd_name(s);
  } else if (s->tied) { /* the embedding table, on the last stage, split over vocab */
    const char *table = embd_name(s);
    if (s->pp > 1) {
      stage_devices_attr(w, s->pp - 1, attrs, sizeof attrs, true);
      OP1(w, "transfer", table, "head_table", attrs);
      table = "head_table";
    }
    if (padded_vocab(s) == s->vocab) OP1(w, "reshard_split", table, "head_weight", "\"dim\": 0");
    else head_pad(w, table);
    head = "head_weight";
  } else if (padded_vocab(s) != s->vocab) {
    head_pad(w, head);
    head = "head_weight";
  }
  /* Gemma 2 soft-caps the logits (elementwise, so on the vocab shards);
   * a padded vocab's pad columns are cut off after the all_gather */
  bool padded = padded_vocab(s) != s->vocab;
  const char *shards = s->unplaced ? "logits" : padded ? "logits_padded_shards" : "logits_shards";
  OP2(w, "linear", "last_hidden", head, s->final_softcap > 0 ? "raw_logits" : shards, NULL);
  if (s->final_softcap > 0) soft_cap(w, "raw_logits", s->final_softcap, shards);
  if (!s->unplaced && padded) {
    OP1(w, "all_gather", shards, "logits_padded", NULL);
    snprintf(attrs, sizeof attrs, "\"dim\": 2, \"start\": 0, \"end\": %ld", s->vocab);
    OP1(w, "slice", "logits_padded", "logits", attrs);
  } else if (!s->unplaced) {
    OP1(w, "all_gather", shards, "logits", NULL);
  }
  OP1(w, "argmax", "logits", "next_token", "\"dim\": -1");
  fputs("\n  ],\n", w->out);
}

static void write_outputs(writer *w) {
  fputs("  \"outputs\": [\"logits\", \"next_token\"", w->out);
  for (long b = 0; b < w->s->layers; b++) fprintf(w->out, ", \"blk.%ld.k_cache_new\", \"blk.%ld.v_cache_new\"", b, b);
  fputs("]\n", w->out);
}

char *llama_graph_json(const llama_spec *s, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *out = open_memstream(&buf, &n);
  if (!out) return NULL;
  bool keep = s->stored_path && s->stored_format && !s->dtype_given;
  writer w = {out, s, true, keep, NULL, rotary_attrs(s)};
  if (!w.rotary) {
    fclose(out);
    free(buf);
    return NULL;
  }
  fputs("{\n  \"ppcc\": 1,\n", out);
  fprintf(out, "  \"name\": \"%s\",\n", s->name ? s->name : "llama");
  fprintf(out, "  \"devices\": %ld,\n", s->tp * s->pp);
  write_params(&w);
  write_inputs(&w);
  write_ops(&w);
  write_outputs(&w);
  fputs("}\n", out);
  if (keep) s->stored_format(s->stored_path, NULL, &w.stored_state);
  free(w.rotary);
  if (fclose(out) != 0) {
    free(buf);
    return NULL;
  }
  if (len) *len = n;
  return buf;
}
