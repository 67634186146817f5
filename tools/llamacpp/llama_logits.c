/* Reference logits and greedy ids from llama.cpp itself
 * (tools/make_quant_llama_refs.sh builds this against a llama.cpp build
 * tree; it is never part of ppcc's build).
 *
 *   llama_logits MODEL.gguf OUT.f32 ID,ID,... NEW_TOKENS [GAPS.txt]
 *
 * Runs the prompt ids as one batch (CPU, 1 thread), writes n_tokens x
 * n_vocab little-endian f32 logits (every prompt position) to OUT.f32, then
 * decodes NEW_TOKENS greedily and prints their ids on one line; GAPS.txt
 * gets, per greedy step, the margin of the chosen logit over the runner-up
 * (a near tie there may go either way under other rounding). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"

int main(int argc, char **argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: llama_logits MODEL.gguf OUT.f32 ID,ID,... NEW_TOKENS [GAPS.txt]\n");
    return 2;
  }
  llama_token ids[512];
  int n = 0;
  for (char *p = argv[3]; *p && n < 512;) {
    ids[n++] = (llama_token)strtol(p, &p, 10);
    if (*p == ',') p++;
  }
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false; /* no weight repacking (its AMX path crashes on some CPUs) */
  struct llama_model *model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  struct llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  struct llama_batch b = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; i++) {
    b.token[i] = ids[i];
    b.pos[i] = i;
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b) != 0) return 1;
  int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE *f = fopen(argv[2], "wb");
  if (!f) return 1;
  for (int i = 0; i < n; i++) fwrite(llama_get_logits_ith(ctx, i), sizeof(float), (size_t)vocab, f);
  fclose(f);
  int pos = n, new_tokens = atoi(argv[4]);
  FILE *gaps = argc == 6 ? fopen(argv[5], "w") : NULL;
  if (argc == 6 && !gaps) return 1;
  const float *last = llama_get_logits_ith(ctx, n - 1);
  for (int t = 0; t < new_tokens; t++) {
    llama_token best = 0;
    for (int v = 1; v < vocab; v++)
      if (last[v] > last[best]) best = v;
    printf("%s%d", t ? " " : "", best);
    float second = -1e30f;
    for (int v = 0; v < vocab; v++)
      if (v != best && last[v] > second) second = last[v];
    if (gaps) fprintf(gaps, "%s%.4f", t ? " " : "", last[best] - second);
    b.n_tokens = 1;
    b.token[0] = best;
    b.pos[0] = pos++;
    if (llama_decode(ctx, b) != 0) return 1;
    last = llama_get_logits_ith(ctx, 0);
  }
  printf("\n");
  if (gaps) {
    fprintf(gaps, "\n");
    fclose(gaps);
  }
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
