/* Importers and checkpoint loading (issue 13) against shipped reference
 * data made by tools/make_llm_refs.py with Hugging Face transformers and
 * the gguf package (testdata/llm/):
 *   - config.json / GGUF metadata -> llama_spec;
 *   - prefill logits of every checkpoint at TP {1,2} x PP {1,2} (sharded
 *     run and the unsharded reference) within f32 tolerance of HF's;
 *   - one decode graph stepped through every position reproduces HF's
 *     logits at each step (attention masked by `positions`);
 *   - `ppcc run --check --backend=jit|interp` with --weights DIR/FILE.gguf;
 *   - Q4_K / Q6_K / BF16 dequantization equals the gguf package's;
 *   - every bad source is a one-line error naming the file and the
 *     tensor or key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "../src/import/import.h"
#include "../src/runtime/exec/exec.h"
#include "../src/runtime/io/io.h"
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"
#include "test_support.h"

typedef struct checkpoint {
  const char *source; /* under testdata/llm */
  const char *refs;   /* directory of the reference files */
  /* the rope depends on each call's longest sequence (dynamic NTK,
   * LongRoPE): transformers' steps follow a whole-prompt prefill, which the
   * token-at-a-time decode tests do not (generate_llm.sh checks the ids) */
  bool whole_prompt;
} checkpoint;

static const checkpoint checkpoints[] = {
  {"testdata/llm/hf_untied_f32", "testdata/llm/hf_untied_f32", false},
  {"testdata/llm/hf_tied_bf16", "testdata/llm/hf_tied_bf16", false},
  {"testdata/llm/tiny.gguf", "testdata/llm/gguf_refs", false},
  {"testdata/llm/hf_rope_llama3", "testdata/llm/hf_rope_llama3", false},
  {"testdata/llm/hf_rope_linear", "testdata/llm/hf_rope_linear", false},
  /* families beyond Llama (tools/make_family_refs.py) */
  {"testdata/llm/hf_qwen2", "testdata/llm/hf_qwen2", false},
  {"testdata/llm/qwen2.gguf", "testdata/llm/hf_qwen2", false},
  {"testdata/llm/qwen2_q8_0.gguf", "testdata/llm/qwen2_q8_0_refs", false},
  {"testdata/llm/hf_llama_bias", "testdata/llm/hf_llama_bias", false},
  /* tools/make_family_refs2.py: sliding windows, Gemma, Gemma 2, Qwen3 */
  {"testdata/llm/hf_mistral_swa", "testdata/llm/hf_mistral_swa", false},
  /* its GGUF files (llama arch) carry no window, as llama.cpp's converter writes them */
  {"testdata/llm/mistral_swa.gguf", "testdata/llm/mistral_swa_gguf_refs", false},
  {"testdata/llm/mistral_swa_q8_0.gguf", "testdata/llm/mistral_swa_q8_0_refs", false},
  {"testdata/llm/hf_gemma", "testdata/llm/hf_gemma", false},
  {"testdata/llm/gemma.gguf", "testdata/llm/hf_gemma", false},
  {"testdata/llm/gemma_q8_0.gguf", "testdata/llm/gemma_q8_0_refs", false},
  {"testdata/llm/hf_gemma2", "testdata/llm/hf_gemma2", false},
  {"testdata/llm/gemma2.gguf", "testdata/llm/gemma2_gguf_refs", false},
  {"testdata/llm/gemma2_q8_0.gguf", "testdata/llm/gemma2_q8_0_refs", false},
  {"testdata/llm/hf_qwen3", "testdata/llm/hf_qwen3", false},
  {"testdata/llm/qwen3.gguf", "testdata/llm/hf_qwen3", false},
  {"testdata/llm/qwen3_q8_0.gguf", "testdata/llm/qwen3_q8_0_refs", false},
  /* one kv head, vocab 127: at TP2 the kv head is copied, the head padded
   * (tools/make_more_family_refs.py) */
  {"testdata/llm/hf_mqa", "testdata/llm/hf_mqa", false},
  /* Llama 3 rope scaling: config.json's rope_scaling, GGUF's rope_freqs.weight */
  {"testdata/llm/hf_llama3", "testdata/llm/hf_llama3", false},
  {"testdata/llm/llama3.gguf", "testdata/llm/hf_llama3", false},
  {"testdata/llm/llama3_q8_0.gguf", "testdata/llm/llama3_q8_0_refs", false},
  /* Phi-3 (fused qkv and gate_up cut at load, vocab 421: padded at TP2) and
   * GPT-2 (LayerNorm, learned positions, gelu_new, Conv1D, tied) */
  {"testdata/llm/hf_phi3", "testdata/llm/hf_phi3", false},
  {"testdata/llm/phi3.gguf", "testdata/llm/hf_phi3", false},
  {"testdata/llm/phi3_q8_0.gguf", "testdata/llm/phi3_q8_0_refs", false},
  {"testdata/llm/hf_gpt2", "testdata/llm/hf_gpt2", false},
  {"testdata/llm/gpt2.gguf", "testdata/llm/hf_gpt2", false},
  {"testdata/llm/gpt2_q8_0.gguf", "testdata/llm/gpt2_q8_0_refs", false},
  /* rope scaling past the original 8 positions with an 18-token prompt, and
   * Qwen2's windows from max_window_layers on (tools/make_family_refs2.py) */
  {"testdata/llm/hf_rope_yarn", "testdata/llm/hf_rope_yarn", false},
  {"testdata/llm/rope_yarn.gguf", "testdata/llm/hf_rope_yarn", false},
  {"testdata/llm/hf_rope_dynamic", "testdata/llm/hf_rope_dynamic", true},
  {"testdata/llm/hf_phi3_longrope", "testdata/llm/hf_phi3_longrope", true},
  {"testdata/llm/phi3_longrope.gguf", "testdata/llm/hf_phi3_longrope", true},
  {"testdata/llm/hf_qwen2_swa", "testdata/llm/hf_qwen2_swa", false},
};
#define N_CHECKPOINTS 37

static ppcc_host_tensor read_npy(const char *rel) {
  ppcc_host_tensor t;
  ppcc_diag d;
  ppcc_diag_init(&d, rel, NULL);
  ck_assert_msg(ppcc_npy_read(t_src_path(rel), &t, &d) == PPCC_OK, "%s: %s", rel, d.first);
  return t;
}

static const char *ref_file(const checkpoint *c, const char *name) {
  static char buf[4][512];
  static int k;
  char *s = buf[k++ % 4];
  snprintf(s, 512, "%s/%s", c->refs, name);
  return s;
}

static llama_spec spec_of(const checkpoint *c, long tp, long pp, long seq, long cache) {
  /* dtype_given: GGUF blocks dequantized to f32 (as --dtype f32), to match
   * transformers on the same weights; quant_llama.sh checks them kept
   * quantized against llama.cpp. HF checkpoints keep bf16/f16 matrices as
   * stored (their references: transformers in f32 on those weights). */
  size_t n = strlen(c->source);
  bool gguf = n > 5 && strcmp(c->source + n - 5, ".gguf") == 0;
  llama_spec s = {.tp = tp, .pp = pp, .batch = 1, .dtype = "f32", .dtype_given = gguf, .seq = seq, .cache = cache};
  ppcc_diag d;
  ppcc_diag_init(&d, c->source, NULL);
  ck_assert_msg(llama_spec_from_source(t_src_path(c->source), &s, &d) == PPCC_OK, "%s", d.first);
  ck_assert_msg(llama_spec_error(&s) == NULL, "%s", llama_spec_error(&s));
  return s;
}

typedef struct loaded {
  ppcc_graph *g;
  ppcc_run_data data;
  ppcc_host_tensor out[16];
} loaded;

static void load_path(loaded *l, const char *path, const llama_spec *s) {
  memset(l, 0, sizeof *l);
  size_t len;
  char *json = llama_graph_json(s, &len);
  ck_assert_ptr_nonnull(json);
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  l->g = ppcc_load_model_string(json, len, &d);
  free(json);
  ck_assert_msg(l->g != NULL, "%s", d.first);
  ck_assert_msg(ppcc_run_passes(l->g, NULL, NULL, &d) == PPCC_OK, "%s", d.first);
  ck_assert_int_le(l->g->n_outputs, 16);
  ppcc_run_options o = {.weights_path = path, .have_random_seed = true};
  ck_assert_msg(ppcc_run_data_load(l->g, &o, &l->data, &d) == PPCC_OK, "%s", d.first);
}

static void load(loaded *l, const checkpoint *c, const llama_spec *s) { load_path(l, t_src_path(c->source), s); }

static void unload(loaded *l) {
  for (int k = 0; k < 16; k++) ppcc_host_tensor_free(&l->out[k]);
  ppcc_run_data_free(&l->data);
  ppcc_graph_free(l->g);
}

/* Input `name` := t (copied). */
static void set_input(loaded *l, const char *name, const void *data, int64_t bytes) {
  int v = ppcc_find_value(l->g, name);
  ck_assert_int_ge(v, 0);
  ck_assert_int_eq(l->data.values[v].bytes, bytes);
  memcpy(l->data.values[v].data, data, (size_t)bytes);
}

static void zero_caches(loaded *l) {
  for (int v = 0; v < l->g->n_values; v++)
    if (l->g->values[v].kind == PPCC_VALUE_INPUT && strstr(l->g->values[v].name, "_cache"))
      memset(l->data.values[v].data, 0, (size_t)l->data.values[v].bytes);
}

static void run(loaded *l, bool reference) {
  for (int k = 0; k < 16; k++) ppcc_host_tensor_free(&l->out[k]);
  ppcc_exec_options eo = {.reference = reference, .threads = 2};
  ppcc_diag d;
  ppcc_diag_init(&d, "run", NULL);
  ck_assert_msg(ppcc_execute(l->g, &l->data, &eo, l->out, NULL, &d) == PPCC_OK, "%s", d.first);
}

/* max |got - ref| / (1 + |ref|) over n f32 values. */
static double max_err(const float *got, const float *ref, int64_t n) {
  double worst = 0;
  for (int64_t j = 0; j < n; j++) {
    double e = fabs((double)got[j] - ref[j]) / (1.0 + fabs(ref[j]));
    if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
  }
  return worst;
}

/* Prefill logits of checkpoint _i at every TP x PP, sharded and reference. */
START_TEST(prefill_logits_match_transformers) {
  const checkpoint *c = &checkpoints[_i];
  ppcc_host_tensor prompt = read_npy(ref_file(c, "prompt.npy")), pos = read_npy(ref_file(c, "positions.npy"));
  ppcc_host_tensor ref = read_npy(ref_file(c, "ref_logits.npy"));
  long seq = (long)prompt.shape[1];
  for (long tp = 1; tp <= 2; tp++)
    for (long pp = 1; pp <= 2; pp++) {
      if (pp > spec_of(c, 1, 1, 1, 1).layers) continue; /* a one-layer model has one stage */
      llama_spec s = spec_of(c, tp, pp, seq, seq);
      loaded l;
      load(&l, c, &s);
      set_input(&l, "tokens", prompt.data, prompt.bytes);
      set_input(&l, "positions", pos.data, pos.bytes);
      zero_caches(&l);
      for (int reference = 0; reference < 2; reference++) {
        run(&l, reference);
        ck_assert_int_eq(l.out[0].bytes, ref.bytes);
        double err = max_err(l.out[0].data, ref.data, ref.bytes / 4);
        ck_assert_msg(err < 1e-4, "%s tp%ld pp%ld %s: logits off by %g", c->source, tp, pp,
                      reference ? "reference" : "sharded", err);
      }
      unload(&l);
    }
  ppcc_host_tensor_free(&prompt);
  ppcc_host_tensor_free(&pos);
  ppcc_host_tensor_free(&ref);
}
END_TEST

static int64_t argmax(const float *x, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; j++)
    if (x[j] > x[best]) best = j;
  return best;
}

/* One decode graph (S = 1, cache of 14 slots, zeros) fed the prompt and
 * then its own greedy tokens one position at a time: from the prompt's
 * last token on, each step's logits equal HF's. Slots past the position
 * hold zeros (or stale values) and must be masked. */
START_TEST(decode_graph_is_valid_at_every_position) {
  const checkpoint *c = &checkpoints[_i];
  if (c->whole_prompt) return;
  ppcc_host_tensor prompt = read_npy(ref_file(c, "prompt.npy")), steps = read_npy(ref_file(c, "ref_step_logits.npy"));
  int64_t n_prompt = prompt.shape[1], n_steps = steps.shape[0], V = steps.shape[1];
  llama_spec s = spec_of(c, 2, spec_of(c, 1, 1, 1, 1).layers > 1 ? 2 : 1, 1, n_prompt + n_steps);
  loaded l;
  load(&l, c, &s);
  zero_caches(&l);
  const int64_t *ids = prompt.data;
  int64_t token = ids[0];
  for (int64_t p = 0; p < n_prompt + n_steps - 1; p++) {
    set_input(&l, "tokens", &token, 8);
    set_input(&l, "positions", &p, 8);
    run(&l, false);
    for (long b = 0; b < s.layers; b++) /* the updated caches feed the next step */
      for (int kv = 0; kv < 2; kv++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%ld.%s_cache", b, kv ? "v" : "k");
        set_input(&l, name, l.out[2 + 2 * b + kv].data, l.out[2 + 2 * b + kv].bytes);
      }
    if (p + 1 < n_prompt) {
      token = ids[p + 1];
      continue;
    }
    const float *want = (const float *)steps.data + (p + 1 - n_prompt) * V;
    double err = max_err(l.out[0].data, want, V);
    ck_assert_msg(err < 1e-4, "%s: decode logits at position %lld off by %g", c->source, (long long)p, err);
    token = argmax(want, V);
    ck_assert_int_eq(((const int64_t *)l.out[1].data)[0], token);
  }
  unload(&l);
  ppcc_host_tensor_free(&prompt);
  ppcc_host_tensor_free(&steps);
}
END_TEST

/* Per-row positions (--row-positions, positions [2, 1]): a decode graph of
 * batch 2 where row 1 lags row 0 by `lag` positions (it repeats position 0
 * until it starts). Past the prompt, each row's logits equal HF's batch-1
 * logits at that row's own position, on the sharded and the reference
 * executor, and with 2 microbatches: rotary, the cache write and the mask
 * all follow the row's position. */
START_TEST(decode_rows_at_their_own_positions) {
  const checkpoint *c = &checkpoints[_i];
  if (c->whole_prompt) return;
  ppcc_host_tensor prompt = read_npy(ref_file(c, "prompt.npy")), steps = read_npy(ref_file(c, "ref_step_logits.npy"));
  int64_t n_prompt = prompt.shape[1], n_steps = steps.shape[0], V = steps.shape[1], lag = 3;
  int64_t n_pos = n_prompt + n_steps - 1; /* positions 0..n_pos-1 have a next-token reference */
  llama_spec s = spec_of(c, 2, spec_of(c, 1, 1, 1, 1).layers > 1 ? 2 : 1, 1, n_prompt + n_steps);
  s.batch = 2;
  s.row_positions = true;
  const int64_t *ids = prompt.data;
  int64_t *seq = malloc(sizeof *seq * (size_t)(n_pos + 1)); /* the prompt, then HF's greedy ids */
  ck_assert_ptr_nonnull(seq);
  for (int64_t p = 0; p <= n_pos; p++) seq[p] = p < n_prompt ? ids[p] : argmax((const float *)steps.data + (p - n_prompt) * V, V);
  for (int mode = 0; mode < 3; mode++) { /* sharded, reference, 2 microbatches */
    loaded l;
    load(&l, c, &s);
    zero_caches(&l);
    int checked = 0;
    for (int64_t step = 0; step < n_pos + lag; step++) {
      int64_t pos[2] = {step < n_pos ? step : n_pos - 1, step < lag ? 0 : step - lag}, tok[2];
      for (int r = 0; r < 2; r++) tok[r] = seq[pos[r]];
      set_input(&l, "tokens", tok, 16);
      set_input(&l, "positions", pos, 16);
      for (int k = 0; k < 16; k++) ppcc_host_tensor_free(&l.out[k]);
      ppcc_exec_options eo = {.reference = mode == 1, .threads = 2, .microbatches = mode == 2 ? 2 : 0};
      ppcc_diag d;
      ppcc_diag_init(&d, "run", NULL);
      ck_assert_msg(ppcc_execute(l.g, &l.data, &eo, l.out, NULL, &d) == PPCC_OK, "%s", d.first);
      for (long b = 0; b < s.layers; b++)
        for (int kv = 0; kv < 2; kv++) {
          char name[64];
          snprintf(name, sizeof name, "blk.%ld.%s_cache", b, kv ? "v" : "k");
          set_input(&l, name, l.out[2 + 2 * b + kv].data, l.out[2 + 2 * b + kv].bytes);
        }
      ck_assert_int_eq(l.out[0].bytes, 2 * V * 4);
      for (int r = 0; r < 2; r++) {
        if (pos[r] < n_prompt - 1 || (r == 0 && step >= n_pos)) continue;
        const float *want = (const float *)steps.data + (pos[r] + 1 - n_prompt) * V;
        double err = max_err((const float *)l.out[0].data + r * V, want, V);
        ck_assert_msg(err < 1e-4, "%s mode %d: row %d at position %lld off by %g", c->source, mode, r,
                      (long long)pos[r], err);
        ck_assert_int_eq(((const int64_t *)l.out[1].data)[r], seq[pos[r] + 1]);
        checked++;
      }
    }
    ck_assert_int_eq(checked, 2 * (n_pos - n_prompt + 1));
    unload(&l);
  }
  free(seq);
  ppcc_host_tensor_free(&prompt);
  ppcc_host_tensor_free(&steps);
}
END_TEST

/* `ppcc import` + `ppcc run --weights SOURCE --check` on both backends;
 * the written logits match the reference file. */
START_TEST(cli_import_and_run_check) {
  const checkpoint *c = &checkpoints[_i];
  const char *backends[2] = {"--backend=interp", "--backend=jit"};
  char *dir = t_make_temp_dir("import");
  char *model = t_path_join(dir, "llama.json");
  const char *kind = strstr(c->source, ".gguf") ? "gguf" : "hf";
  char source[600], refs[600]; /* t_src_path's buffer is reused */
  snprintf(source, sizeof source, "%s", t_src_path(c->source));
  snprintf(refs, sizeof refs, "%s", t_src_path(c->refs));
  const char *pp = spec_of(c, 1, 1, 1, 1).layers > 1 ? "2" : "1";
  ppcc_host_tensor prompt = read_npy(ref_file(c, "prompt.npy"));
  char seq[32];
  snprintf(seq, sizeof seq, "%lld", (long long)prompt.shape[1]);
  ppcc_host_tensor_free(&prompt);
  const char *imp[] = {"ppcc", "import", kind, source, "-o", model, "--tp", "2", "--pp", pp,
                       "--seq", seq, "--dtype", "f32", NULL};
  int status = t_run_ppcc(imp, NULL);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "import %s failed", c->source);
  for (int b = 0; b < 2; b++) {
    char in_tokens[700], in_pos[700], in_cache[8][700];
    snprintf(in_tokens, sizeof in_tokens, "tokens=%s/prompt.npy", refs);
    snprintf(in_pos, sizeof in_pos, "positions=%s/positions.npy", refs);
    const char *argv[40] = {"ppcc", "run", model, "--weights", source, "--check", backends[b],
                            "--output-dir", dir, "--input", in_tokens, "--input", in_pos};
    int n = 13;
    llama_spec sp = spec_of(c, 1, 1, 1, 1);
    for (int k = 0; k < 2 * sp.layers && k < 8; k++) {
      snprintf(in_cache[k], sizeof in_cache[k], "blk.%d.%s_cache=%s/zero_cache.npy", k / 2, k % 2 ? "v" : "k", refs);
      argv[n++] = "--input";
      argv[n++] = in_cache[k];
    }
    argv[n] = NULL;
    char *err_path = t_path_join(dir, "stderr.txt");
    status = t_run_ppcc(argv, err_path);
    char *err = t_read_text(err_path);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s %s: %s", c->source, backends[b], err);
    free(err);
    free(err_path);
    ppcc_host_tensor got, ref = read_npy(ref_file(c, "ref_logits.npy"));
    ppcc_diag d;
    ppcc_diag_init(&d, "logits", NULL);
    ck_assert(ppcc_npy_read(t_path_in(dir, "logits.npy"), &got, &d) == PPCC_OK);
    double e = max_err(got.data, ref.data, ref.bytes / 4);
    ck_assert_msg(e < 1e-4, "%s %s: logits off by %g", c->source, backends[b], e);
    ppcc_host_tensor_free(&got);
    ppcc_host_tensor_free(&ref);
  }
  t_remove_tree(dir);
  free(model);
  free(dir);
}
END_TEST

START_TEST(hf_config_is_read) {
  llama_spec s = {0};
  ppcc_diag d;
  ppcc_diag_init(&d, "cfg", NULL);
  ck_assert(llama_spec_from_hf(t_src_path("testdata/llm/hf_tied_bf16"), &s, &d) == PPCC_OK);
  ck_assert_int_eq(s.layers, 2);
  ck_assert_int_eq(s.hidden, 64);
  ck_assert_int_eq(s.heads, 4);
  ck_assert_int_eq(s.kv_heads, 2);
  ck_assert_int_eq(s.head_dim, 32); /* != hidden / heads */
  ck_assert_int_eq(s.ffn, 96);
  ck_assert_int_eq(s.vocab, 128);
  ck_assert(s.tied);
  ck_assert(fabs(s.eps - 1e-5) < 1e-12 && s.theta == 10000.0);
  /* the bf16 matrices stay bf16 in the f32 graph (views of the file), the
   * norms are converted; the embedding's bf16 rows are cast to f32 */
  s.tp = s.pp = s.batch = s.seq = s.cache = 1;
  s.dtype = "f32";
  char *json = llama_graph_json(&s, NULL);
  ck_assert(json);
  ck_assert(strstr(json, "{\"name\": \"model.layers.0.mlp.up_proj.weight\", \"dtype\": \"bf16\""));
  ck_assert(strstr(json, "{\"name\": \"model.embed_tokens.weight\", \"dtype\": \"bf16\""));
  ck_assert(strstr(json, "{\"name\": \"model.norm.weight\", \"dtype\": \"f32\""));
  ck_assert(strstr(json, "\"op\": \"cast\", \"in\": [\"embedded_bf16\"], \"out\": [\"embedded\"]"));
  free(json);
  s.dtype_given = true; /* --dtype f32: converted at load */
  json = llama_graph_json(&s, NULL);
  ck_assert(json && !strstr(json, "bf16"));
  free(json);
  memset(&s, 0, sizeof s);
  ck_assert(llama_spec_from_gguf(t_src_path("testdata/llm/tiny.gguf"), &s, &d) == PPCC_OK);
  ck_assert_int_eq(s.layers, 2);
  ck_assert_int_eq(s.head_dim, 16);
  ck_assert_int_eq(s.vocab, 128);
  ck_assert(!s.tied);
}
END_TEST

static void expect_dequant(const rt_gguf *g, const char *name, const char *npy) {
  const rt_gguf_tensor *t = rt_gguf_find_tensor(g, name);
  ck_assert_ptr_nonnull(t);
  ppcc_host_tensor ref = read_npy(npy);
  int64_t rows = ref.shape[0], cols = ref.shape[1];
  ck_assert_int_eq(t->ne[0], cols);
  float *got = malloc(sizeof(float) * (size_t)(rows * cols));
  ppcc_diag d;
  ppcc_diag_init(&d, "dequant", NULL);
  ck_assert(rt_gguf_dequantize_rows("kquants.gguf", t, 0, rows, got, &d) == PPCC_OK);
  for (int64_t j = 0; j < rows * cols; j++)
    ck_assert_msg(fabsf(got[j] - ((float *)ref.data)[j]) <= 1e-6f * (1 + fabsf(((float *)ref.data)[j])),
                  "%s[%lld]: %g vs %g", name, (long long)j, got[j], ((float *)ref.data)[j]);
  free(got);
  ppcc_host_tensor_free(&ref);
}

START_TEST(k_quants_match_the_gguf_package) {
  rt_gguf g;
  ppcc_diag d;
  ppcc_diag_init(&d, "kquants", NULL);
  ck_assert_msg(rt_gguf_open(t_src_path("testdata/llm/kquants.gguf"), &g, &d) == PPCC_OK, "%s", d.first);
  ck_assert_int_eq(g.version, 3);
  expect_dequant(&g, "q4_k", "testdata/llm/kquants_q4_k.npy");
  expect_dequant(&g, "q6_k", "testdata/llm/kquants_q6_k.npy");
  expect_dequant(&g, "bf16", "testdata/llm/kquants_bf16.npy");
  rt_gguf_close(&g);
}
END_TEST

/* ---------------- bad sources ---------------- */

/* Copies testdata/llm/hf_untied_f32's files into a temp dir. */
static char *copy_checkpoint(void) {
  char *dir = t_make_temp_dir("badhf");
  const char *files[] = {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                         "model-00002-of-00002.safetensors"};
  for (int i = 0; i < 4; i++) {
    char rel[256];
    snprintf(rel, sizeof rel, "testdata/llm/hf_untied_f32/%s", files[i]);
    size_t len;
    char *data = t_read_file(t_src_path(rel), &len);
    ck_assert_ptr_nonnull(data);
    t_write_file(t_path_in(dir, files[i]), data, len);
    free(data);
  }
  return dir;
}

/* Replaces the first `from` in DIR/file with `to`. */
static void edit(const char *dir, const char *file, const char *from, const char *to) {
  char *text = t_read_text(t_path_in(dir, file));
  char *at = strstr(text, from);
  ck_assert_msg(at != NULL, "'%s' not in %s", from, file);
  size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
  char *out = malloc(n);
  snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  t_write_text(t_path_in(dir, file), out);
  free(out);
  free(text);
}

/* The message is one line and holds every needle. */
static void expect_message(const ppcc_diag *d, const char *a, const char *b) {
  ck_assert_msg(d->errors > 0, "no error reported");
  ck_assert_msg(strchr(d->first, '\n') == NULL, "not one line: %s", d->first);
  ck_assert_msg(strstr(d->first, a) != NULL, "'%s' not in: %s", a, d->first);
  ck_assert_msg(!b || strstr(d->first, b) != NULL, "'%s' not in: %s", b, d->first);
}

static void expect_config_error(const char *from, const char *to, const char *key) {
  char *dir = copy_checkpoint();
  edit(dir, "config.json", from, to);
  llama_spec s = {0};
  ppcc_diag d;
  ppcc_diag_init(&d, dir, NULL);
  ck_assert(llama_spec_from_hf(dir, &s, &d) != PPCC_OK);
  expect_message(&d, "config.json", key);
  t_remove_tree(dir);
  free(dir);
}

START_TEST(bad_configs_name_the_key) {
  expect_config_error("LlamaForCausalLM", "FalconForCausalLM", "'architectures'");
  /* head_dim 16: LongRoPE needs 8 factors of each kind */
  expect_config_error("\"rope_scaling\": null",
                      "\"rope_scaling\": {\"type\": \"longrope\", \"factor\": 2, \"long_factor\": [1], \"short_factor\": [1]}",
                      "'rope_scaling.short_factor': must be a list of 8 positive numbers");
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"yarn\"}", "'rope_scaling.factor'");
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"mrope\", \"factor\": 2.0}",
                      "'rope_scaling': rope_type 'mrope' is not supported");
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": -2}",
                      "'factor': -2: must be a positive number");
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"linear\"}", "'rope_scaling.factor'");
  /* Phi-4-mini's partial rotary, GPT-2's unscaled scores: refused naming key and value */
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": null, \"partial_rotary_factor\": 0.75",
                      "'partial_rotary_factor': 0.75: partial rotary is not supported");
  expect_config_error("\"rope_scaling\": null", "\"rope_scaling\": null, \"scale_attn_weights\": false",
                      "'scale_attn_weights': false");
  expect_config_error("\"torch_dtype\": \"float32\"", "\"torch_dtype\": \"int8\"", "'torch_dtype': 'int8' is not supported");
  expect_config_error("\"hidden_act\": \"silu\"", "\"hidden_act\": \"relu\"", "'hidden_act'");
  expect_config_error("\"num_hidden_layers\": 2", "\"num_hidden_layers\": \"two\"", "'num_hidden_layers'");
  expect_config_error("\"vocab_size\": 128", "\"vocab\": 128", "'vocab_size'");
  expect_config_error("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3",
                      "'num_key_value_heads': 3 must divide num_attention_heads 4");
  expect_config_error("LlamaForCausalLM", "Llama\\u0000ForCausalLM", "field 'architectures': escaped NUL");
}
END_TEST

/* hf_untied_f32's config.json with `from` replaced by `to` (twice: the
 * second pair may be NULL): the spec it gives, or the error. */
static ppcc_status spec_with(const char *from, const char *to, const char *from2, const char *to2, llama_spec *s,
                             ppcc_diag *d) {
  char *dir = copy_checkpoint();
  edit(dir, "config.json", from, to);
  if (from2) edit(dir, "config.json", from2, to2);
  *s = (llama_spec){0};
  ppcc_diag_init(d, dir, NULL);
  ppcc_status st = llama_spec_from_hf(dir, s, d);
  t_remove_tree(dir);
  free(dir);
  return st;
}

/* sliding_window as each family's transformers model reads it: Mistral's
 * on every layer, Gemma 2's on even layers, Llama's ignored, Qwen2's only
 * with use_sliding_window, on the layers from max_window_layers on. */
START_TEST(sliding_window_by_family) {
  llama_spec s;
  ppcc_diag d;
  const char *bias = "\"attention_bias\": false", *window = "\"attention_bias\": false, \"sliding_window\": 4";
  ck_assert_int_eq(spec_with("LlamaForCausalLM", "MistralForCausalLM", bias, window, &s, &d), PPCC_OK);
  ck_assert_int_eq(s.window, 4);
  ck_assert(llama_layer_windowed(&s, 0) && llama_layer_windowed(&s, 1));
  ck_assert_int_eq(spec_with(bias, window, NULL, NULL, &s, &d), PPCC_OK);
  ck_assert_int_eq(s.window, 0);
  ck_assert_int_eq(spec_with("LlamaForCausalLM", "Gemma2ForCausalLM", bias, window, &s, &d), PPCC_OK);
  ck_assert(llama_layer_windowed(&s, 0) && !llama_layer_windowed(&s, 1) && llama_layer_windowed(&s, 2));
  ck_assert(s.post_norms && s.norm_offset == 1 && s.embed_scale > 0 && strcmp(s.act, "gelu_tanh") == 0);
  ck_assert_int_eq(spec_with("LlamaForCausalLM", "Qwen2ForCausalLM", bias, window, &s, &d), PPCC_OK);
  ck_assert_int_eq(s.window, 0);
  ck_assert(spec_with("LlamaForCausalLM", "Qwen2ForCausalLM", bias,
                      "\"attention_bias\": false, \"sliding_window\": 4, \"use_sliding_window\": true", &s, &d) != PPCC_OK);
  expect_message(&d, "config.json", "'max_window_layers': must be a non-negative integer");
  ck_assert_int_eq(spec_with("LlamaForCausalLM", "Qwen2ForCausalLM", bias,
                             "\"attention_bias\": false, \"sliding_window\": 4, \"use_sliding_window\": true, "
                             "\"max_window_layers\": 1", &s, &d), PPCC_OK);
  ck_assert(s.window == 4 && !llama_layer_windowed(&s, 0) && llama_layer_windowed(&s, 1));
  ck_assert(spec_with("LlamaForCausalLM", "MistralForCausalLM", bias, "\"attention_bias\": false, \"sliding_window\": 0",
                      &s, &d) != PPCC_OK);
  expect_message(&d, "config.json", "'sliding_window'");
  ck_assert(spec_with("LlamaForCausalLM", "Gemma2ForCausalLM", bias,
                      "\"attention_bias\": false, \"hidden_activation\": \"relu\"", &s, &d) != PPCC_OK);
  expect_message(&d, "config.json", "'hidden_activation'");
}
END_TEST

/* config.json is written by Python: a repeated key is its last one (cJSON
 * kept the first), with a warning naming the key. */
START_TEST(hf_config_duplicate_key_last_wins) {
  char *dir = copy_checkpoint();
  edit(dir, "config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 5, \"num_hidden_layers\": 2");
  llama_spec s = {0};
  ppcc_diag d;
  char *buf = NULL;
  size_t n = 0;
  FILE *sink = open_memstream(&buf, &n);
  ppcc_diag_init(&d, dir, sink);
  ck_assert(llama_spec_from_hf(dir, &s, &d) == PPCC_OK);
  fclose(sink);
  ck_assert_int_eq(s.layers, 2);
  ck_assert_msg(strstr(buf, "config.json: warning: key 'num_hidden_layers' appears twice; the last one is used"),
                "%s", buf);
  free(buf);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* Loads a prefill graph of the (edited) checkpoint DIR and fetches every
 * param; expects the first failure to name needle_a and needle_b. */
static void expect_weights_error(const char *dir, const llama_spec *s, const char *a, const char *b) {
  size_t len;
  char *json = llama_graph_json(s, &len);
  ppcc_diag d;
  ppcc_diag_init(&d, dir, NULL);
  ppcc_graph *g = ppcc_load_model_string(json, len, &d);
  free(json);
  ck_assert_ptr_nonnull(g);
  ck_assert(ppcc_run_passes(g, NULL, NULL, &d) == PPCC_OK);
  ppcc_run_options o = {.weights_path = dir, .have_random_seed = true};
  ppcc_run_data data;
  ck_assert(ppcc_run_data_load(g, &o, &data, &d) != PPCC_OK);
  expect_message(&d, a, b);
  ppcc_graph_free(g);
}

START_TEST(bad_checkpoints_name_file_and_tensor) {
  llama_spec s = spec_of(&checkpoints[0], 1, 1, 4, 4);
  /* a tensor missing from the index */
  char *dir = copy_checkpoint();
  edit(dir, "model.safetensors.index.json", "\"model.layers.1.mlp.up_proj.weight\"", "\"renamed.weight\"");
  expect_weights_error(dir, &s, "model.safetensors.index.json", "'model.layers.1.mlp.up_proj.weight'");
  t_remove_tree(dir);
  free(dir);
  /* a shard name cut by an escaped NUL is refused, naming the tensor (it read "model-00002-of-00002.safetensors") */
  dir = copy_checkpoint();
  edit(dir, "model.safetensors.index.json", "\"model-00002-of-00002.safetensors\"",
       "\"model-00002-of-00002.safetensors\\u0000x\"");
  expect_weights_error(dir, &s, "model.safetensors.index.json", "escaped NUL");
  t_remove_tree(dir);
  free(dir);
  /* a shard file named in the index but absent */
  dir = copy_checkpoint();
  remove(t_path_in(dir, "model-00002-of-00002.safetensors"));
  expect_weights_error(dir, &s, "model-00002-of-00002.safetensors", "absent");
  t_remove_tree(dir);
  free(dir);
  /* wrong shape: the config disagrees with the tensors */
  llama_spec wide = s;
  wide.ffn = 64;
  dir = copy_checkpoint();
  expect_weights_error(dir, &wide, "model-0000", "mlp.gate_proj.weight' has shape [96, 64]");
  t_remove_tree(dir);
  free(dir);
  /* no weights at all */
  dir = t_make_temp_dir("emptyhf");
  expect_weights_error(dir, &s, dir, "model.safetensors");
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* tiny.gguf with an edit at the tensor info of `name`: the u32 type
 * (field 0) or the u64 offset (field 1) set to value. */
static char *patched_gguf(const char *name, int field, uint64_t value, size_t truncate_to) {
  size_t len;
  unsigned char *data = (unsigned char *)t_read_file(t_src_path("testdata/llm/tiny.gguf"), &len);
  ck_assert_ptr_nonnull(data);
  if (name) {
    unsigned char *at = NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i + n < len && !at; i++) /* the name in the tensor infos (after its u64 length) */
      if (memcmp(data + i, name, n) == 0 && i >= 8 && data[i - 8] == n) at = data + i + n;
    ck_assert_ptr_nonnull(at);
    uint32_t n_dims = at[0];
    unsigned char *type = at + 4 + 8 * n_dims, *offset = type + 4;
    if (field == 0) memcpy(type, &value, 4);
    else memcpy(offset, &value, 8);
  }
  char *dir = t_make_temp_dir("badgguf");
  t_write_file(t_path_in(dir, "bad.gguf"), data, truncate_to ? truncate_to : len);
  free(data);
  return dir;
}

/* testdata/llm/FILE with the first n bytes equal to `from` replaced by `to`. */
static char *replaced_gguf_of(const char *file, const char *from, const char *to, size_t n) {
  char rel[128];
  snprintf(rel, sizeof rel, "testdata/llm/%s", file);
  size_t len;
  char *data = t_read_file(t_src_path(rel), &len);
  ck_assert_ptr_nonnull(data);
  char *at = NULL;
  for (size_t i = 0; i + n <= len && !at; i++)
    if (memcmp(data + i, from, n) == 0) at = data + i;
  ck_assert_ptr_nonnull(at);
  memcpy(at, to, n);
  char *dir = t_make_temp_dir("badgguf");
  t_write_file(t_path_in(dir, "bad.gguf"), data, len);
  free(data);
  return dir;
}

static char *replaced_gguf(const char *from, const char *to, size_t n) { return replaced_gguf_of("tiny.gguf", from, to, n); }

static void expect_gguf_error(char *dir, const char *a, const char *b) {
  rt_gguf g;
  ppcc_diag d;
  ppcc_diag_init(&d, "gguf", NULL);
  ck_assert(rt_gguf_open(t_path_in(dir, "bad.gguf"), &g, &d) != PPCC_OK);
  expect_message(&d, "bad.gguf", a);
  if (b) expect_message(&d, b, NULL);
  /* the importer and the run refuse it alike */
  llama_spec s = {0};
  ppcc_diag d2;
  ppcc_diag_init(&d2, "gguf", NULL);
  ck_assert(llama_spec_from_gguf(t_path_in(dir, "bad.gguf"), &s, &d2) != PPCC_OK);
  ck_assert_str_eq(d2.first, d.first);
  ck_assert_ptr_null(ppcc_weights_open(t_path_in(dir, "bad.gguf"), &d2));
  t_remove_tree(dir);
  free(dir);
}

START_TEST(bad_gguf_files_name_file_and_tensor) {
  expect_gguf_error(patched_gguf("blk.0.attn_q.weight", 0, 16 /* IQ2_XXS */, 0), "'blk.0.attn_q.weight'",
                    "GGUF type IQ2_XXS (16) is not supported");
  expect_gguf_error(patched_gguf("blk.0.attn_q.weight", 0, 10 /* Q2_K: 256 values a block */, 0),
                    "'blk.0.attn_q.weight'", "row length 64 is not a multiple of the Q2_K block (256)");
  expect_gguf_error(patched_gguf("blk.0.attn_k.weight", 1, 0, 0), "overlaps", NULL);
  expect_gguf_error(patched_gguf("blk.1.ffn_down.weight", 1, UINT64_C(1) << 40, 0), "'blk.1.ffn_down.weight'",
                    "past the end");
  expect_gguf_error(patched_gguf(NULL, 0, 0, 40000), "truncated", NULL);
  expect_gguf_error(patched_gguf(NULL, 0, 0, 100), "truncated", NULL);
  expect_gguf_error(patched_gguf("blk.0.attn_v.weight", 1, 3, 0), "'blk.0.attn_v.weight'", "alignment");
  /* a repeated metadata key is refused naming it (the first one used to win) */
  expect_gguf_error(replaced_gguf("llama.attention.head_count", "llama.rope.dimension_count", 26),
                    "metadata key 'llama.rope.dimension_count' appears twice", NULL);
  /* NULs in strings are refused naming the field (they were cut there) */
  expect_gguf_error(replaced_gguf("\x05\0\0\0\0\0\0\0llama", "\x05\0\0\0\0\0\0\0ll\0ma", 13),
                    "metadata key 'general.architecture': the string holds a NUL byte", NULL);
  expect_gguf_error(replaced_gguf("ppcc-tiny", "ppcc\0tiny", 9), "metadata key 'general.name'", "NUL byte");
  expect_gguf_error(replaced_gguf("general.file_type", "general.file\0type", 17), "metadata entry 12", "NUL byte");
  expect_gguf_error(replaced_gguf("blk.0.attn_q.weight", "blk.0\0attn_q.weight", 19), "tensor info", "NUL byte");
}
END_TEST

/* A rope scaling type ppcc does not compute: one line naming key and value. */
START_TEST(gguf_unknown_rope_scaling_is_named) {
  char *dir = replaced_gguf_of("rope_yarn.gguf", "\x04\0\0\0\0\0\0\0yarn", "\x04\0\0\0\0\0\0\0xarn", 12);
  llama_spec s = {0};
  ppcc_diag d;
  ppcc_diag_init(&d, "gguf", NULL);
  ck_assert(llama_spec_from_gguf(t_path_in(dir, "bad.gguf"), &s, &d) != PPCC_OK);
  expect_message(&d, "metadata key 'llama.rope.scaling.type': rope scaling 'xarn' is not supported", NULL);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

START_TEST(gguf_missing_tensor_and_wrong_arch) {
  /* a GGUF graph asks for a tensor the file lacks */
  llama_spec s = spec_of(&checkpoints[2], 1, 1, 4, 4);
  s.naming = LLAMA_NAMES_HF;
  expect_weights_error(t_src_path("testdata/llm/tiny.gguf"), &s, "tiny.gguf", "'model.embed_tokens.weight' (a parameter");
  /* architecture other than llama */
  size_t len;
  unsigned char *data = (unsigned char *)t_read_file(t_src_path("testdata/llm/tiny.gguf"), &len);
  unsigned char *at = NULL; /* the value of general.architecture */
  for (size_t i = 0; i + 5 < len && !at; i++)
    if (memcmp(data + i, "llama", 5) == 0) at = data + i;
  ck_assert_ptr_nonnull(at);
  memcpy(at, "gpt2x", 5);
  char *dir = t_make_temp_dir("archgguf");
  t_write_file(t_path_in(dir, "bad.gguf"), data, len);
  free(data);
  ppcc_diag d;
  ppcc_diag_init(&d, "gguf", NULL);
  ck_assert(llama_spec_from_gguf(t_path_in(dir, "bad.gguf"), &s, &d) != PPCC_OK);
  expect_message(&d, "'general.architecture'", "gpt2x");
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* testdata/llm/FILE with general.name 32 bytes longer, as DIR/m.gguf: the
 * data section, and with it every tensor, moves by 32 bytes (llama.cpp
 * writes at 32-byte alignment: each tensor goes from off a 64-byte line
 * onto one, or back). */
static char *shifted_gguf(const char *file) {
  char rel[128];
  snprintf(rel, sizeof rel, "testdata/llm/%s", file);
  size_t len;
  char *data = t_read_file(t_src_path(rel), &len);
  ck_assert_ptr_nonnull(data);
  static const char key[] = "general.name\x08\0\0\0"; /* then the u64 length and the string */
  char *at = NULL;
  for (size_t i = 0; i + sizeof key + 8 <= len && !at; i++)
    if (memcmp(data + i, key, sizeof key - 1) == 0) at = data + i + sizeof key - 1;
  ck_assert_ptr_nonnull(at);
  uint64_t n;
  memcpy(&n, at, 8);
  size_t head = (size_t)(at - data) + 8 + n;
  ck_assert_uint_le(head, len);
  char *out = malloc(len + 32);
  ck_assert_ptr_nonnull(out);
  memcpy(out, data, head);
  memset(out + head, 'x', 32);
  memcpy(out + head + 32, data + head, len - head);
  n += 32;
  memcpy(out + (at - data), &n, 8);
  char *dir = t_make_temp_dir("shiftgguf");
  t_write_file(t_path_in(dir, "m.gguf"), out, len + 32);
  free(out);
  free(data);
  return dir;
}

/* An f32 GGUF's weights read in full lie on 64-byte lines once resident
 * (the GEMM tiles' condition: llama.cpp's files put every tensor at 32
 * mod 64, and a 128-row prefill then went to OpenBLAS, which packs the
 * weight per call): one that lies on a line in the file is used in place,
 * one that does not is copied once at load; the token table (only looked
 * up) stays in the file. Both placements of the same file give the same
 * logits bits, at TP 1 and 2. */
START_TEST(gguf_f32_weights_resident_on_lines) {
  const checkpoint c = {"testdata/llm/llama3.gguf", "testdata/llm/hf_llama3", false};
  ppcc_host_tensor prompt = read_npy(ref_file(&c, "prompt.npy")), pos = read_npy(ref_file(&c, "positions.npy"));
  long seq = (long)prompt.shape[1];
  char *dir = shifted_gguf("llama3.gguf");
  char paths[2][4096];
  snprintf(paths[0], sizeof paths[0], "%s", t_src_path(c.source));
  snprintf(paths[1], sizeof paths[1], "%s", t_path_in(dir, "m.gguf"));
  for (long tp = 1; tp <= 2; tp++) {
    ppcc_host_tensor logits[2];
    int copied[2] = {0, 0}, in_place[2] = {0, 0};
    for (int f = 0; f < 2; f++) {
      llama_spec s = spec_of(&c, tp, 1, seq, seq);
      loaded l;
      load_path(&l, paths[f], &s);
      set_input(&l, "tokens", prompt.data, prompt.bytes);
      set_input(&l, "positions", pos.data, pos.bytes);
      zero_caches(&l);
      ppcc_diag d;
      ppcc_diag_init(&d, paths[f], NULL);
      ck_assert_msg(ppcc_run_data_make_resident(l.g, &l.data, &d) == PPCC_OK, "%s", d.first);
      for (int v = 0; v < l.g->n_values; v++) {
        const ppcc_value *p = &l.g->values[v];
        if (p->kind != PPCC_VALUE_PARAM || p->dtype != PPCC_F32 || !p->devices) continue;
        const char *full = l.data.values[v].data;
        bool table = strstr(p->name, "embed_tokens") || strstr(p->name, "token_embd");
        for (int i = 0; i < p->layout.count; i++) {
          const char *got = rt_resident_shard(&l.data, v, p, p->layout, i, rt_param_mapped(&l.data, v, true));
          ck_assert_ptr_nonnull(got);
          bool view = got >= full && got < full + ppcc_value_bytes(p);
          if (table) {
            ck_assert_msg(view, "%s: the token table was copied", p->name);
            continue;
          }
          ck_assert_msg((uintptr_t)got % 64 == 0, "%s shard %d: not on a 64-byte line", p->name, i);
          if (p->layout.count == 1 && (uintptr_t)full % 64 == 0)
            ck_assert_msg(got == full, "%s: on a line in the file, yet copied", p->name);
          if (p->layout.count == 1 && l.data.owned && !l.data.owned[v]) view ? in_place[f]++ : copied[f]++;
        }
      }
      run(&l, false);
      logits[f] = l.out[0];
      memset(&l.out[0], 0, sizeof l.out[0]);
      unload(&l);
    }
    if (tp == 1) /* each placement has weights of both kinds: the other file's */
      for (int f = 0; f < 2; f++) ck_assert(copied[f] > 0 && in_place[f] > 0 && copied[f] == in_place[1 - f]);
    ck_assert_int_eq(logits[0].bytes, logits[1].bytes);
    ck_assert_msg(memcmp(logits[0].data, logits[1].data, (size_t)logits[0].bytes) == 0,
                  "tp%ld: the shifted file's logits differ in bits", tp);
    ppcc_host_tensor_free(&logits[0]);
    ppcc_host_tensor_free(&logits[1]);
  }
  t_remove_tree(dir);
  free(dir);
  ppcc_host_tensor_free(&prompt);
  ppcc_host_tensor_free(&pos);
}
END_TEST

int main(void) {
  Suite *s = suite_create("import");
  TCase *tc = t_add_tcase(s, "import", 300);
  tcase_add_test(tc, hf_config_is_read);
  tcase_add_loop_test(tc, prefill_logits_match_transformers, 0, N_CHECKPOINTS);
  tcase_add_loop_test(tc, decode_graph_is_valid_at_every_position, 0, N_CHECKPOINTS);
  tcase_add_loop_test(tc, decode_rows_at_their_own_positions, 0, N_CHECKPOINTS);
  tcase_add_loop_test(tc, cli_import_and_run_check, 0, N_CHECKPOINTS);
  tcase_add_test(tc, k_quants_match_the_gguf_package);
  tcase_add_test(tc, bad_configs_name_the_key);
  tcase_add_test(tc, sliding_window_by_family);
  tcase_add_test(tc, gguf_unknown_rope_scaling_is_named);
  tcase_add_test(tc, hf_config_duplicate_key_last_wins);
  tcase_add_test(tc, bad_checkpoints_name_file_and_tensor);
  tcase_add_test(tc, bad_gguf_files_name_file_and_tensor);
  tcase_add_test(tc, gguf_missing_tensor_and_wrong_arch);
  tcase_add_test(tc, gguf_f32_weights_resident_on_lines);
  return t_run_suite(s);
}
