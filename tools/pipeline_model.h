/* Writer of deep pipeline-FFN models (model.json, DESIGN §3), shared by
 * tools/gen_pipeline.c and bench/bench_compile.c. Header-only because every
 * C file in tools/ becomes its own executable.
 *
 * N blocks over P pipeline stages of T devices each (tensor parallelism):
 * block b runs on stage floor(b*P/N), stage s on devices [s*T, s*T+T-1].
 * A block is 4 ops: matmul(x, up: split dim 1) -> gelu -> matmul(down:
 * split dim 0) -> all_reduce (the row-parallel matmul leaves partial sums).
 * T = 1 keeps the same layouts with one shard, as sharktank does: the
 * all_reduce result is unpinned (P6), so the next stage's pinned weights
 * pull it over with an inserted transfer; an unsharded chain would instead
 * be a pin conflict (P4). A final unshard gathers the result onto device 0. */
#ifndef PPCC_TOOLS_PIPELINE_MODEL_H
#define PPCC_TOOLS_PIPELINE_MODEL_H
#include <stdbool.h>
#include <stdio.h>

typedef struct pipeline_config {
  long blocks, tp, pp;
  long hidden, ffn, batch;
} pipeline_config;

static const pipeline_config pipeline_defaults = {
  .blocks = 4, .tp = 2, .pp = 2, .hidden = 64, .ffn = 256, .batch = 8,
};

/* NULL if the configuration is valid, else what is wrong with it. */
static inline const char *pipeline_config_error(const pipeline_config *c) {
  if (c->blocks < 1 || c->blocks > 2500000) return "--blocks must be in [1, 2500000]";
  if (c->tp < 1 || c->pp < 1) return "--tp and --pp must be at least 1";
  if (c->tp * c->pp > 4096) return "--tp times --pp must be at most 4096 devices";
  if (c->pp > c->blocks) return "--pp must not exceed --blocks (every stage needs a block)";
  if (c->hidden < 1 || c->ffn < 1 || c->batch < 1) return "--hidden, --ffn and --batch must be positive";
  if (c->ffn % c->tp != 0) return "--ffn must be divisible by --tp";
  return NULL;
}

static inline long pipeline_stage_of(const pipeline_config *c, long block) {
  return block * c->pp / c->blocks;
}

/* ["devices": [a, b, ...]] of a stage, as JSON. */
static inline void pipeline_write_devices(FILE *out, const pipeline_config *c, long stage) {
  fputs("[", out);
  for (long t = 0; t < c->tp; t++) fprintf(out, "%s%ld", t ? ", " : "", stage * c->tp + t);
  fputs("]", out);
}

/* "shard" object of a value with T shards. */
static inline void pipeline_write_shard(FILE *out, const pipeline_config *c, const char *kind, int dim) {
  if (dim >= 0)
    fprintf(out, ", \"shard\": {\"kind\": \"%s\", \"dim\": %d, \"count\": %ld}", kind, dim, c->tp);
  else
    fprintf(out, ", \"shard\": {\"kind\": \"%s\", \"count\": %ld}", kind, c->tp);
}

static inline void pipeline_write_param(FILE *out, const pipeline_config *c, long block,
                                 const char *which, long rows, long cols, int split_dim, bool last) {
  fprintf(out, "    {\"name\": \"blk.%ld.%s.weight\", \"dtype\": \"f32\", \"shape\": [%ld, %ld]",
          block, which, rows, cols);
  pipeline_write_shard(out, c, "split", split_dim);
  fputs(", \"devices\": ", out);
  pipeline_write_devices(out, c, pipeline_stage_of(c, block));
  fputs(last ? "}\n" : "},\n", out);
}

static inline void pipeline_write_op(FILE *out, const char *op, const char *in0, const char *in1,
                              const char *result) {
  if (in1)
    fprintf(out, "    {\"op\": \"%s\", \"in\": [\"%s\", \"%s\"], \"out\": [\"%s\"]},\n", op, in0, in1, result);
  else
    fprintf(out, "    {\"op\": \"%s\", \"in\": [\"%s\"], \"out\": [\"%s\"]},\n", op, in0, result);
}

/* The 4 ops of block b; x names the block input, the output is blk.b.y. */
static inline void pipeline_write_block(FILE *out, const pipeline_config *c, long b, const char *x) {
  char up[64], down[64], h[64], a[64], p[64], y[64];
  snprintf(up, sizeof up, "blk.%ld.ffn_up.weight", b);
  snprintf(down, sizeof down, "blk.%ld.ffn_down.weight", b);
  snprintf(h, sizeof h, "blk.%ld.h", b);
  snprintf(a, sizeof a, "blk.%ld.a", b);
  snprintf(p, sizeof p, "blk.%ld.partial", b);
  snprintf(y, sizeof y, "blk.%ld.y", b);
  pipeline_write_op(out, "matmul", x, up, h);
  pipeline_write_op(out, "gelu", h, NULL, a);
  pipeline_write_op(out, "matmul", a, down, p);
  pipeline_write_op(out, "all_reduce", p, NULL, y);
}

/* Writes the whole model; the config must be valid. */
static inline void pipeline_write_model(FILE *out, const pipeline_config *c) {
  fprintf(out, "{\n  \"ppcc\": 1,\n  \"name\": \"pipeline_%ldx%ldx%ld\",\n  \"devices\": %ld,\n",
          c->blocks, c->tp, c->pp, c->tp * c->pp);
  fputs("  \"params\": [\n", out);
  for (long b = 0; b < c->blocks; b++) {
    pipeline_write_param(out, c, b, "ffn_up", c->hidden, c->ffn, 1, false);
    pipeline_write_param(out, c, b, "ffn_down", c->ffn, c->hidden, 0, b + 1 == c->blocks);
  }
  fprintf(out, "  ],\n  \"inputs\": [\n    {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [%ld, %ld]",
          c->batch, c->hidden);
  pipeline_write_shard(out, c, "replicated", -1);
  fputs(", \"devices\": ", out);
  pipeline_write_devices(out, c, 0);
  fputs("}\n  ],\n  \"ops\": [\n", out);
  char x[64] = "x";
  for (long b = 0; b < c->blocks; b++) {
    pipeline_write_block(out, c, b, x);
    snprintf(x, sizeof x, "blk.%ld.y", b);
  }
  fprintf(out, "    {\"op\": \"unshard\", \"in\": [\"%s\"], \"out\": [\"out\"], \"attrs\": {\"device\": 0}}\n",
          x);
  fputs("  ],\n  \"outputs\": [\"out\"]\n}\n", out);
}

#endif
