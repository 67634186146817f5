/* `ppcc generate SOURCE`: greedy decoding of a checkpoint (HF directory or
 * GGUF file) through the same runtime as `ppcc run`. Two graphs are built
 * and compiled once: a prefill over the prompt and a decode step (one
 * token), both over a KV cache of prompt + max-new-tokens slots. Because
 * attention reads the cache up to each token's position (the `positions`
 * input), the one decode graph serves every step. Both graphs bind the
 * same resident param shards (made once at load) and the same KV caches,
 * bound as state: each step's cache outputs become the next step's cache
 * inputs on the devices, without a trip to the host.
 *
 * Prints "tokens: ID ID ..." (the generated ids), then time to first token
 * (prefill execution) and decode tokens/s (excluding compilation). */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "driver.h"
#include "import_cli.h"
#include "../import/import.h" /* and the tokenizers it includes */
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "ppcc/runtime.h"
#ifdef PPCC_HAVE_JIT
#include "ppcc/jit.h"
#endif

typedef struct generate_args {
  llama_spec spec;
  const char *prompt_text;  /* --prompt-ids */
  const char *prompt;       /* --prompt */
  bool ignore_eos;
  tokenizer *tok;           /* with --prompt: prints the continuation as text */
  int64_t eos[8];
  int n_eos;
  long long max_new;
  long long threads, microbatches;
  const char *backend;
} generate_args;

static const cli_option generate_options[] = {
  CLI_TEXT_ROW("prompt", "TEXT", generate_args, prompt,
               "the prompt as text, tokenized by SOURCE's tokenizer\n"
               "(DIR/tokenizer.json or the GGUF's tokenizer.ggml.*:\n"
               "SentencePiece-style or byte-level BPE), with the\n"
               "tokenizer's BOS as transformers adds it; one row"),
  CLI_FLAG_ROW("ignore-eos", generate_args, ignore_eos, "generate --max-new-tokens ids whatever they are"),
  CLI_TEXT_ROW("prompt-ids", "LIST", generate_args, prompt_text,
               "the prompt's token ids, separated by commas; rows of a\n"
               "batch separated by ';'. Rows may differ in length:\n"
               "with more than one row the graphs take positions\n"
               "[B, N] (ppcc import --row-positions), a shorter row is\n"
               "left-padded (its pad tokens fill cache slots that\n"
               "decoding overwrites) and decodes at its own position"),
  CLI_INT_ROW("batch", "B", generate_args, spec.batch, 1, 1 << 20,
              "rows (default: the rows given; one row is repeated)"),
  CLI_INT_ROW("microbatches", "M", generate_args, microbatches, 1, 1 << 20,
              "cut the batch into M microbatches through the pipeline\n"
              "(as ppcc run; interpreter only, B divisible by M)"),
  CLI_INT_ROW("max-new-tokens", "N", generate_args, max_new, 1, 1 << 20, "tokens to generate (default 16)"),
  CLI_GROUP_ROW(generate_args, spec, cli_llama_options),
  CLI_CALL_ROW("backend", "jit|interp", generate_args, backend, cli_set_backend,
               "as for ppcc run (default jit when built with it)"),
  CLI_INT_ROW("threads", "N", generate_args, threads, 1, 4096, "worker threads (default: the runtime's choice)"),
  CLI_END_ROW,
};

static const cli_command generate_command = {
  .name = "generate",
  .usage = "Usage: ppcc generate SOURCE (--prompt TEXT | --prompt-ids ID,ID,...) [--max-new-tokens N]\n"
           "                     [--ignore-eos] [--tp T] [--pp P] [--dtype f32|f16|bf16] [--backend=jit|interp]\n"
           "                     [--threads N] [--batch B] [--microbatches M]\n"
           "\n"
           "Greedy decoding of SOURCE, a Hugging Face checkpoint directory or a .gguf file\n"
           "(see 'ppcc import --help'). Compiles a prefill graph over the prompt and a\n"
           "decode graph for one token once, keeps each block's KV cache between steps,\n"
           "and prints the generated ids on one line, 'tokens: ID ID ...', then the time\n"
           "to first token and the decode speed. With --prompt the continuation is first\n"
           "printed as text, token by token as it is generated, then a newline.\n"
           "Generation stops after an EOS id (the tokenizer's, generation_config.json's or\n"
           "config.json's eos_token_id, or GGUF's tokenizer.ggml.eos_token_id), which\n"
           "ends the 'tokens:' line; its text is not printed.\n",
  .options = generate_options,
  .help_column = 23,
};

void cli_help_generate(FILE *out) { cli_print_help(&generate_command, out); }

/* "1,2,3;4,5" : *rows rows, row r of lens[r] ids; *ids holds them back to
 * back, *n is the longest row. */
static ppcc_status parse_prompt(const char *text, int64_t **ids, long **lens, long *n, long *rows) {
  long count = 0, in_row = 0;
  *n = 0;
  *rows = 1;
  *ids = malloc(sizeof **ids * (strlen(text) + 1));
  *lens = malloc(sizeof **lens * (strlen(text) + 1));
  if (!*ids || !*lens) return PPCC_ERR_INTERNAL;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || (*end && *end != ',' && *end != ';'))
      return cli_usage_error("generate", "--prompt-ids must be non-negative integers separated by commas, got '%s'", text);
    if (errno == ERANGE) /* strtoll clamps: 2^63 would be shown as 2^63-1 */
      return cli_usage_error("generate", "--prompt-ids: id '%.*s' is out of range", (int)(end - p), p);
    (*ids)[count++] = v;
    in_row++;
    if (*end == ';' || !*end) {
      (*lens)[*rows - 1] = in_row;
      if (in_row > *n) *n = in_row;
      in_row = 0;
      if (*end == ';') ++*rows;
    }
    p = *end ? end + 1 : end;
  }
  if (in_row || (*rows > 1 && p > text && p[-1] == ';'))
    return cli_usage_error("generate", "--prompt-ids has an empty row, got '%s'", text);
  if (count == 0 || *n == 0) return cli_usage_error("generate", "--prompt-ids is empty");
  return PPCC_OK;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One compiled graph with its loaded parameters. */
typedef struct stage_graph {
  ppcc_graph *g;
  ppcc_run_data data;
  ppcc_host_tensor *out;
#ifdef PPCC_HAVE_JIT
  ppcc_jit *jit;
#endif
} stage_graph;

static void stage_free(stage_graph *s) {
  for (int k = 0; s->out && s->g && k < s->g->n_outputs; k++) ppcc_host_tensor_free(&s->out[k]);
  free(s->out);
  ppcc_run_data_free(&s->data);
#ifdef PPCC_HAVE_JIT
  cli_jit_free(s->jit);
#endif
  ppcc_graph_free(s->g);
}

/* from: a stage already built whose params (and resident shards) this
 * one shares, or NULL. */
static ppcc_status stage_build(stage_graph *s, const llama_spec *spec, const char *source, const generate_args *a,
                               const stage_graph *from, ppcc_diag *d) {
  memset(s, 0, sizeof *s);
  size_t len;
  char *json = llama_graph_json(spec, &len);
  if (!json) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  s->g = ppcc_load_model_string(json, len, d);
  free(json);
  if (!s->g) return d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
  ppcc_status st = ppcc_run_passes(s->g, NULL, stderr, d);
  if (st) return st;
  ppcc_run_options o = {.weights_path = source, .have_random_seed = true}; /* inputs are set per step */
  st = ppcc_run_data_load_sharing(s->g, &o, from ? from->g : NULL, from ? &from->data : NULL, &s->data, d);
  for (long b = 0; b < spec->layers && !st; b++) /* the KV caches are state, zero at first */
    for (int kv = 0; kv < 2 && !st; kv++) {
      char name[64];
      snprintf(name, sizeof name, "blk.%ld.%s_cache", b, kv ? "v" : "k");
      int v = ppcc_find_value(s->g, name);
      if (v >= 0) memset(s->data.values[v].data, 0, (size_t)s->data.values[v].bytes);
      st = ppcc_run_data_bind_state(s->g, &s->data, name, s->g->values[s->g->outputs[2 + 2 * b + kv]].name, d);
    }
  if (!st) st = ppcc_run_data_make_resident(s->g, &s->data, d); /* every param and cache shard, once */
  if (st) return st;
  s->out = calloc((size_t)s->g->n_outputs, sizeof *s->out);
  if (!s->out) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
#ifdef PPCC_HAVE_JIT
  if (a->microbatches > 1 && a->backend && strcmp(a->backend, "jit") == 0)
    return ppcc_error(d, "--backend=jit does not support --microbatches (use --backend=interp)");
  if ((!a->backend || strcmp(a->backend, "jit") == 0) && a->microbatches <= 1) {
    ppcc_jit_stats t;
    st = cli_jit_compile(s->g, NULL, &s->jit, &t, d);
    if (st) return st;
  }
#else
  if (a->backend && strcmp(a->backend, "jit") == 0)
    return ppcc_error(d, "this ppcc was built without MLIR: --backend=jit is unavailable");
#endif
  return PPCC_OK;
}

/* Replaces input `name`'s tensor by t (taken over). */
static void set_input(stage_graph *s, const char *name, ppcc_host_tensor *t) {
  int v = ppcc_find_value(s->g, name);
  if (s->data.owned[v]) ppcc_host_tensor_free(&s->data.values[v]);
  s->data.values[v] = *t;
  s->data.owned[v] = true;
  memset(t, 0, sizeof *t);
}

static ppcc_status set_ids(stage_graph *s, const char *name, int rank, const int64_t *shape, const int64_t *ids,
                           ppcc_diag *d) {
  ppcc_host_tensor t;
  if (!ppcc_host_tensor_alloc(&t, PPCC_I64, rank, shape)) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  memcpy(t.data, ids, (size_t)t.bytes);
  set_input(s, name, &t);
  return PPCC_OK;
}

static ppcc_status execute(stage_graph *s, const generate_args *a, ppcc_diag *d) {
  for (int k = 0; k < s->g->n_outputs; k++) ppcc_host_tensor_free(&s->out[k]);
  ppcc_exec_options eo = {.threads = (int)a->threads, .microbatches = (int)a->microbatches};
  double ms;
#ifdef PPCC_HAVE_JIT
  if (s->jit) return cli_jit_execute(s->jit, s->g, &s->data, &eo, s->out, &ms, d);
#endif
  return ppcc_execute(s->g, &s->data, &eo, s->out, &ms, d);
}

/* A NaN or infinite logit would pick token 0 silently: an error naming
 * the step, and (the step rerun unsharded with every result captured) the
 * first value in program order that was not finite. */
static ppcc_status check_logits(stage_graph *s, const char *source, const char *step, const generate_args *a,
                                ppcc_diag *d) {
  const ppcc_host_tensor *logits = &s->out[0];
  int64_t n = logits->dtype == PPCC_F32 ? logits->bytes / 4 : 0, bad = -1;
  for (int64_t j = 0; j < n && bad < 0; j++)
    if (!isfinite(((const float *)logits->data)[j])) bad = j;
  if (bad < 0) return PPCC_OK;
  int64_t vocab = logits->shape[logits->rank - 1];
  char first[PPCC_MAX_NAME + 160] = "";
  int v = -1;
  int64_t at = -1;
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, source, NULL);
  if (!ppcc_find_first_nonfinite(s->g, &s->data, (int)a->threads, &v, &at, &quiet) && v >= 0) {
    const ppcc_value *val = &s->g->values[v];
    if (val->def_op < 0)
      snprintf(first, sizeof first, "; the first non-finite value is %s '%s' (element %lld)",
               val->kind == PPCC_VALUE_PARAM ? "weight" : "input", val->name, (long long)at);
    else
      snprintf(first, sizeof first, "; the first non-finite value is '%s' (element %lld), computed by op %d (%s)",
               val->name, (long long)at, s->g->ops[val->def_op].src_index, s->g->ops[val->def_op].info->name);
  }
  float x = ((const float *)logits->data)[bad];
  return ppcc_error(d, "%s: %s: non-finite logit %s (row %lld, token id %lld)%s", source, step,
                    isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf", (long long)(bad / vocab), (long long)(bad % vocab), first);
}

static int64_t next_token(const stage_graph *s, long row) { return ((const int64_t *)s->out[1].data)[row]; }

static bool is_eos(const generate_args *a, int64_t id) {
  for (int i = 0; !a->ignore_eos && i < a->n_eos; i++)
    if (a->eos[i] == id) return true;
  return false;
}

/* With --prompt: the text generated token `id` completes, on stdout at
 * once (id -1: the end, whatever is pending). */
static void stream_text(const generate_args *a, tok_stream *ts, int64_t id) {
  if (!a->tok || (id >= 0 && is_eos(a, id))) return;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  bool ok = id >= 0 ? tok_stream_push(ts, id, &buf, &len, &cap) : tok_stream_end(ts, &buf, &len, &cap);
  if (ok && len) {
    fwrite(buf, 1, len, stdout);
    fflush(stdout);
  }
  free(buf);
}

/* prompt: B rows of n_prompt ids (row-major), row b left-padded: its
 * lens[b] ids are the last ones. With B > 1 positions are per row
 * ([B, N]): the pads of row b take positions lens[b]..n_prompt-1 (cache
 * slots that decoding overwrites before reading them) and row b decodes at
 * lens[b], lens[b] + 1, ... */
static ppcc_status generate(const char *source, generate_args *a, const int64_t *prompt, const long *lens,
                            long n_prompt, ppcc_diag *d) {
  llama_spec pre = a->spec, dec = a->spec;
  long B = a->spec.batch;
  pre.row_positions = dec.row_positions = B > 1;
  pre.seq = n_prompt;
  pre.cache = dec.cache = n_prompt + a->max_new;
  if (pre.cache > LLAMA_MAX_CACHE) /* the cache is not the user's option here: name what they gave */
    return ppcc_error(d, "%s: a %ld-id prompt and --max-new-tokens %lld need a KV cache of %lld positions, more than %d",
                      source, n_prompt, a->max_new, (long long)pre.cache, LLAMA_MAX_CACHE);
  dec.seq = 1;
  pre.name = "prefill";
  dec.name = "decode";
  ppcc_status st = cli_llama_finish("generate", source, &pre, d);
  if (st) return st;
  for (long i = 0; i < B * n_prompt; i++)
    if (prompt[i] >= pre.vocab)
      return ppcc_error(d, "%s: prompt id %lld is outside the vocabulary [0, %ld)", source, (long long)prompt[i], pre.vocab);
  stage_graph sp, sd;
  double t_load = now_ms();
  st = stage_build(&sp, &pre, source, a, NULL, d);
  if (!st) st = stage_build(&sd, &dec, source, a, &sp, d);
  else memset(&sd, 0, sizeof sd);
  malloc_trim(0); /* what compiling took goes back before the weights' pages come in */
  t_load = now_ms() - t_load;
  int64_t copied_at_load = ppcc_rt_param_bytes_copied(), cache_at_load = ppcc_rt_state_bytes_host();
  /* tokens[i * B + b]: the i-th generated id of row b */
  int64_t *tokens = malloc(sizeof *tokens * (size_t)(a->max_new * B)), *pos = malloc(sizeof *pos * (size_t)(B * n_prompt));
  if (!st && (!tokens || !pos)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  double t0 = now_ms(), t_first = 0, t_end = 0;
  /* n_out[b]: ids of row b, up to and including its EOS; the run ends when
   * every row has met one */
  long *n_out = calloc((size_t)B, sizeof *n_out), live = B, steps = 0;
  tok_stream ts;
  if (a->tok) tok_stream_init(&ts, a->tok);
  if (!st && !n_out) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) { /* prefill: zero caches, positions 0..n-1 */
    int64_t shape[2] = {B, n_prompt};
    for (long b = 0; b < B; b++)
      for (long i = 0, pad = n_prompt - lens[b]; i < n_prompt; i++) pos[b * n_prompt + i] = i < pad ? lens[b] + i : i - pad;
    st = set_ids(&sp, "tokens", 2, shape, prompt, d);
    if (!st && B > 1) st = set_ids(&sp, "positions", 2, shape, pos, d);
    else if (!st) st = set_ids(&sp, "positions", 1, &shape[1], pos, d);
    t0 = now_ms();
    if (!st) st = execute(&sp, a, d);
    if (!st) st = check_logits(&sp, source, "prefill", a, d);
    if (!st) {
      for (long b = 0; b < B; b++) {
        tokens[b] = next_token(&sp, b);
        n_out[b] = 1;
        if (is_eos(a, tokens[b])) live--;
      }
      steps = 1;
      stream_text(a, &ts, tokens[0]);
      t_first = now_ms();
    }
  }
  for (long long i = 1; i < a->max_new && !st && live > 0; i++) {
    int64_t shape[2] = {B, 1};
    for (long b = 0; b < B; b++) pos[b] = lens[b] + i - 1;
    st = set_ids(&sd, "tokens", 2, shape, &tokens[(i - 1) * B], d);
    if (!st) st = set_ids(&sd, "positions", B > 1 ? 2 : 1, B > 1 ? shape : &shape[1], pos, d);
    if (!st) st = execute(&sd, a, d);
    if (!st) {
      char step[48];
      snprintf(step, sizeof step, "decode step %lld", i);
      st = check_logits(&sd, source, step, a, d);
    }
    if (!st) {
      for (long b = 0; b < B; b++) {
        tokens[i * B + b] = next_token(&sd, b);
        if (n_out[b] == i && !is_eos(a, tokens[(i - 1) * B + b])) {
          n_out[b]++;
          if (is_eos(a, tokens[i * B + b])) live--;
        }
      }
      steps++;
      if (n_out[0] == i + 1) stream_text(a, &ts, tokens[i * B]);
    }
  }
  t_end = now_ms();
  if (!st) {
    if (a->tok) {
      stream_text(a, &ts, -1);
      fputs("\n", stdout);
    }
    for (long b = 0; b < B; b++) {
      fputs("tokens:", stdout);
      for (long i = 0; i < n_out[b]; i++) printf(" %lld", (long long)tokens[i * B + b]);
      fputs("\n", stdout);
    }
    printf("load: %.3f ms (2 graphs compiled, %d param and cache shards resident, %.1f MiB of them made at load)\n", t_load,
           ppcc_resident_count(&sp.data), (double)ppcc_resident_owned_bytes(&sp.data) / (1 << 20));
    printf("param bytes copied after load: %lld\n", (long long)(ppcc_rt_param_bytes_copied() - copied_at_load));
    printf("KV cache bytes between host and devices after load: %lld\n",
           (long long)(ppcc_rt_state_bytes_host() - cache_at_load));
    int64_t params = 0;
    for (int v = 0; v < sp.g->n_values; v++)
      if (sp.g->values[v].kind == PPCC_VALUE_PARAM) params += ppcc_value_bytes(&sp.g->values[v]);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("memory: peak RSS %.1f MiB, params %.1f MiB, KV caches %.1f MiB\n", (double)ru.ru_maxrss / 1024,
           (double)params / (1 << 20), (double)ppcc_resident_state_bytes(&sp.data) / (1 << 20));
    printf("time to first token: %.3f ms\n", t_first - t0);
    if (steps > 1)
      printf("decode: %ld tokens in %.3f ms, %.1f tokens/s\n", (steps - 1) * B, t_end - t_first,
             (double)((steps - 1) * B) * 1e3 / (t_end - t_first));
  }
  free(n_out);
  free(tokens);
  free(pos);
  stage_free(&sd); /* it views sp's params */
  stage_free(&sp);
  return st;
}

int cli_cmd_generate(int argc, char **argv) {
  generate_args a = {.max_new = 16};
  a.spec = (llama_spec){.tp = 1, .pp = 1, .batch = 0, .dtype = "f32"};
  cli_parse p = {.cmd = &generate_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st || p.help) return st;
  if (!a.prompt_text && !a.prompt) return cli_usage_error("generate", "missing --prompt TEXT or --prompt-ids ID,ID,...");
  if (a.prompt_text && a.prompt) return cli_usage_error("generate", "give --prompt or --prompt-ids, not both");
  if (a.prompt && a.spec.batch > 1)
    return cli_usage_error("generate", "--prompt is one row (use --prompt-ids for a batch of %ld)", a.spec.batch);
  int64_t *prompt = NULL, *padded = NULL;
  long n_prompt = 0, rows = 1, *lens = NULL;
  ppcc_diag d;
  ppcc_diag_init(&d, p.model_path, stderr);
  if (a.prompt) { /* text: the source's tokenizer */
    st = llama_spec_from_source(p.model_path, &a.spec, &d);
    if (!st) st = tokenizer_load(p.model_path, &a.tok, &d);
    if (!st) st = tokenizer_encode(a.tok, a.prompt, strlen(a.prompt), true, &prompt, &n_prompt, &d);
    lens = malloc(sizeof *lens);
    if (!st && !lens) st = PPCC_ERR_INTERNAL;
    if (!st && n_prompt == 0) st = cli_usage_error("generate", "--prompt gives no tokens");
    if (!st) lens[0] = n_prompt;
    if (!st) {
      a.n_eos = a.tok->n_eos;
      memcpy(a.eos, a.tok->eos, sizeof a.eos);
    }
  } else {
    st = parse_prompt(a.prompt_text, &prompt, &lens, &n_prompt, &rows);
    if (!st) st = llama_spec_from_source(p.model_path, &a.spec, &d);
    if (!st) st = tokenizer_eos_of_source(p.model_path, a.eos, 8, &a.n_eos, &d);
  }
  if (!st && a.spec.batch && rows != 1 && rows != a.spec.batch)
    st = cli_usage_error("generate", "--batch %ld but --prompt-ids has %ld rows", a.spec.batch, rows);
  if (!st && !a.spec.batch) a.spec.batch = rows;
  if (!st && a.microbatches > 1 && a.spec.batch % a.microbatches != 0)
    st = cli_usage_error("generate", "--microbatches %lld does not divide the batch of %ld rows", a.microbatches,
                         a.spec.batch);
  if (!st) { /* B rows of n_prompt ids, left-padded; one prompt repeats for every row */
    long *all_lens = malloc(sizeof *all_lens * (size_t)a.spec.batch);
    padded = malloc(sizeof *padded * (size_t)(a.spec.batch * n_prompt));
    if (!all_lens || !padded) st = PPCC_ERR_INTERNAL;
    for (long b = 0, off = 0; !st && b < a.spec.batch; b++) {
      long r = rows == 1 ? 0 : b, len = lens[r], pad = n_prompt - len;
      if (rows > 1 && b > 0) off += lens[b - 1];
      const int64_t *row = prompt + (rows == 1 ? 0 : off);
      for (long i = 0; i < n_prompt; i++) padded[b * n_prompt + i] = i < pad ? row[0] : row[i - pad];
      all_lens[b] = len;
    }
    free(lens);
    lens = all_lens;
  }
  if (!st) st = generate(p.model_path, &a, padded, lens, n_prompt, &d);
  tokenizer_free(a.tok);
  free(prompt);
  free(padded);
  free(lens);
  return st;
}
