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
#include <unistd.h>
#include "driver.h"
#include "import_cli.h"
#include "../import/import.h" /* and the tokenizers it includes */
#include "ppcc/frontend.h"
#include "ppcc/mpi.h"
#include "ppcc/passes.h"
#include "ppcc/predict.h"
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
  const char *ranks_map;    /* --ranks-map (MPI) */
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
  CLI_TEXT_ROW("ranks-map", "R,R,...", generate_args, ranks_map,
               "under mpiexec -n R: the rank of each device (as ppcc\n"
               "run's; default: whole pipeline stages per rank). Each\n"
               "rank loads and keeps only its devices' param shards\n"
               "and KV caches; rank 0 prints, and sends each step's\n"
               "ids to the others"),
  CLI_END_ROW,
};

static const cli_command generate_command = {
  .name = "generate",
  .usage = "Usage: ppcc generate SOURCE (--prompt TEXT | --prompt-ids ID,ID,...) [--max-new-tokens N]\n"
           "                     [--ignore-eos] [--tp T] [--pp P] [--dtype f32|f16|bf16] [--backend=jit|interp]\n"
           "                     [--threads N] [--batch B] [--microbatches M] [--ranks-map R,R,...]\n"
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

/* The stage's outputs and loaded data (params, caches); then, with
 * compiled_too, its compiled code and graph. */
static void stage_free(stage_graph *s, bool compiled_too) {
  for (int k = 0; s->out && s->g && k < s->g->n_outputs; k++) ppcc_host_tensor_free(&s->out[k]);
  free(s->out);
  s->out = NULL;
  ppcc_run_data_free(&s->data);
  if (!compiled_too) return;
#ifdef PPCC_HAVE_JIT
  cli_jit_free(s->jit);
#endif
  ppcc_graph_free(s->g);
}

/* The graph of a stage, through the passes. */
static ppcc_status stage_graph_build(stage_graph *s, const llama_spec *spec, ppcc_diag *d) {
  size_t len;
  char *json = llama_graph_json(spec, &len);
  if (!json) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  s->g = ppcc_load_model_string(json, len, d);
  free(json);
  if (!s->g) return d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
  return ppcc_run_passes(s->g, NULL, stderr, d);
}

/* Loads a stage's params (under MPI: its rank's devices' only) and binds
 * its caches; from: a stage already loaded whose params (and resident
 * shards) this one shares, or NULL. */
static ppcc_status stage_load(stage_graph *s, const llama_spec *spec, const char *source, const stage_graph *from,
                              ppcc_diag *d) {
  ppcc_run_options o = {.weights_path = source, .have_random_seed = true}; /* inputs are set per step */
  ppcc_status st = ppcc_run_data_load_sharing(s->g, &o, from ? from->g : NULL, from ? &from->data : NULL, &s->data, d);
  for (long b = 0; b < spec->layers && !st; b++) /* the KV caches are state, zero at first */
    for (int kv = 0; kv < 2 && !st; kv++) {
      char name[64];
      snprintf(name, sizeof name, "blk.%ld.%s_cache", b, kv ? "v" : "k");
      int v = ppcc_find_value(s->g, name);
      if (v >= 0 && s->data.values[v].data) memset(s->data.values[v].data, 0, (size_t)s->data.values[v].bytes);
      st = ppcc_run_data_bind_state(s->g, &s->data, name, s->g->values[s->g->outputs[2 + 2 * b + kv]].name, d);
    }
  /* a weight cut into copies gives its whole tensor back (the search for
   * a non-finite value puts it together again from the shards) */
  s->data.release_cut = true;
  if (!st) st = ppcc_run_data_make_resident(s->g, &s->data, d); /* every param and cache shard, once */
  if (st) return st;
  s->out = calloc((size_t)s->g->n_outputs, sizeof *s->out);
  if (!s->out) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  return PPCC_OK;
}

/* The stage's JIT (unless the interpreter runs it), before any weight is
 * loaded: what compiling holds is then part of the process measured
 * before the weights. */
static ppcc_status stage_compile(stage_graph *s, const generate_args *a, ppcc_diag *d) {
  ppcc_status st = PPCC_OK;
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
  return st;
}

/* MPI: each rank holds the devices of --ranks-map or of the default stage
 * map (as ppcc run's), the same for the prefill and the decode graph. */
static ppcc_status distribute(const stage_graph *sp, const stage_graph *sd, const char *spec, bool *local,
                              ppcc_diag *d) {
  size_t n = (size_t)(sp->g->n_devices > 0 ? sp->g->n_devices : 1);
  int *rank_of = malloc(sizeof(int) * n), *dec = malloc(sizeof(int) * n);
  ppcc_status st = rank_of && dec ? PPCC_OK : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (!st) st = ppcc_rank_map(sp->g, ppcc_mpi_size(), spec, rank_of, d);
  if (!st && sd->g->n_devices != sp->g->n_devices)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "the prefill and decode graphs have different devices");
  if (!st) st = ppcc_rank_map(sd->g, ppcc_mpi_size(), spec, dec, d);
  if (!st && memcmp(rank_of, dec, sizeof(int) * n) != 0)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "the prefill and decode graphs map their devices to ranks differently");
  if (!st) st = ppcc_mpi_distribute(sp->g, rank_of, d);
  for (size_t dev = 0; !st && dev < n; dev++) local[dev] = rank_of[dev] == ppcc_mpi_rank();
  free(rank_of);
  free(dec);
  return st;
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
  /* the search reruns the graph in this process: not over MPI */
  if (ppcc_mpi_size() == 1 && !ppcc_find_first_nonfinite(s->g, &s->data, (int)a->threads, &v, &at, &quiet) && v >= 0) {
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

/* The plan's memory of the loaded model here (src/plan: params and KV
 * caches once for both graphs, the larger graph's working set). */
static ppcc_status predict_memory(const stage_graph *sp, const stage_graph *sd, const bool *local, ppcc_loaded_memory *m,
                                  ppcc_diag *d) {
  const stage_graph *s[2] = {sp, sd};
  const ppcc_graph *graphs[2] = {sp->g, sd->g};
  bool *state[2] = {NULL, NULL}, *views[2] = {NULL, NULL}, jit = false;
#ifdef PPCC_HAVE_JIT
  jit = sp->jit != NULL;
#endif
  ppcc_status st = PPCC_OK;
  for (int k = 0; k < 2 && !st; k++) {
    state[k] = calloc((size_t)s[k]->g->n_values + 1, sizeof *state[k]);
    views[k] = jit ? ppcc_rt_jit_view_ops(s[k]->g) : ppcc_rt_view_ops(s[k]->g);
    if (!state[k] || !views[k]) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    for (int v = 0; !st && v < s[k]->g->n_values; v++) state[k][v] = s[k]->data.state_of[v] >= 0;
  }
  /* a param converted at load is in memory whole, even a table only looked up */
  const bool *held_whole[2] = {sp->data.owned, sd->data.owned};
  if (!st)
    st = ppcc_predict_loaded_memory(graphs, (const bool *const *)state, (const bool *const *)views, held_whole, 2, local,
                                    jit, m, d);
  for (int k = 0; k < 2; k++) free(state[k]), free(views[k]);
  return st;
}

/* MPI: the worst status of every rank's load, on every rank (one that
 * failed has printed why; the others stop too, before any step). */
static ppcc_status agree(ppcc_status st, ppcc_diag *d) {
  int ranks = ppcc_mpi_size();
  double mine = st, *all = ppcc_mpi_rank() == 0 ? calloc((size_t)ranks, sizeof *all) : NULL;
  ppcc_mpi_gather(&mine, 1, all);
  int64_t worst = st;
  for (int r = 0; all && r < ranks; r++)
    if (all[r] > (double)worst) worst = (int64_t)all[r];
  free(all);
  ppcc_mpi_broadcast(&worst, sizeof worst);
  if (st || !worst) return st;
  return ppcc_error_status(d, (ppcc_status)worst, "another rank failed to load");
}

/* The step's next id of each of the B rows into ids. In one process they
 * are read from the outputs; over MPI rank 0 collects the outputs, so it
 * sends them to every rank with its status (mine: its logits check), so
 * that every rank feeds the next step the same ids and stops at the same
 * step. msg: room for B + 1 ids. */
static ppcc_status next_tokens(const stage_graph *s, long B, ppcc_status mine, int64_t *msg, int64_t *ids,
                               ppcc_diag *d) {
  bool root = ppcc_mpi_rank() == 0;
  msg[0] = mine;
  for (long b = 0; b < B; b++) msg[1 + b] = root && !mine ? ((const int64_t *)s->out[1].data)[b] : 0;
  if (ppcc_mpi_size() > 1) ppcc_mpi_broadcast(msg, (int64_t)sizeof *msg * (B + 1));
  if (msg[0] != PPCC_OK)
    return root ? (ppcc_status)msg[0] : ppcc_error_status(d, (ppcc_status)msg[0], "rank 0 stopped the generation");
  memcpy(ids, msg + 1, sizeof *ids * (size_t)B);
  return PPCC_OK;
}

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
  if (pre.rope_long_recompute && pre.rope_long_after > 0 && n_prompt <= pre.rope_long_after && pre.cache > pre.rope_long_after)
    return ppcc_error(d, "%s: rope_scaling long_factor: a %ld-id prompt and --max-new-tokens %lld cross "
                      "original_max_position_embeddings %ld, where transformers' Phi-3 recomputes the whole cache with the "
                      "long factors (not supported): give a prompt of more than %ld ids, or %ld positions in all",
                      source, n_prompt, a->max_new, pre.rope_long_after, pre.rope_long_after, pre.rope_long_after);
  for (long i = 0; i < B * n_prompt; i++)
    if (prompt[i] >= pre.vocab)
      return ppcc_error(d, "%s: prompt id %lld is outside the vocabulary [0, %ld)", source, (long long)prompt[i], pre.vocab);
  stage_graph sp, sd;
  memset(&sp, 0, sizeof sp);
  memset(&sd, 0, sizeof sd);
  bool root = ppcc_mpi_rank() == 0, mpi = ppcc_mpi_size() > 1;
  bool *local = NULL; /* MPI: the devices this rank holds */
  double t_load = now_ms(), rss_before = 0, peak_before = 0;
  st = stage_graph_build(&sp, &pre, d);
  if (!st) st = stage_graph_build(&sd, &dec, d);
  if (!st && mpi) {
    local = calloc((size_t)sp.g->n_devices + 1, sizeof *local);
    st = local ? distribute(&sp, &sd, a->ranks_map, local, d) : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  if (!st) st = stage_compile(&sp, a, d);
  if (!st) st = stage_compile(&sd, a, d);
  malloc_trim(0); /* what compiling took goes back before the weights' pages come in */
  rss_before = cli_rss_now(), peak_before = cli_peak_rss();
  if (!st) st = stage_load(&sp, &pre, source, NULL, d);
  if (!st) st = stage_load(&sd, &dec, source, &sp, d);
  if (mpi) st = agree(st, d);
  t_load = now_ms() - t_load;
  ppcc_loaded_memory plan = {0};
  if (!st) st = predict_memory(&sp, &sd, local, &plan, d);
  int64_t copied_at_load = ppcc_rt_param_bytes_copied(), cache_at_load = ppcc_rt_state_bytes_host();
  /* tokens[i * B + b]: the i-th generated id of row b */
  int64_t *tokens = malloc(sizeof *tokens * (size_t)(a->max_new * B)), *pos = malloc(sizeof *pos * (size_t)(B * n_prompt));
  int64_t *msg = malloc(sizeof *msg * (size_t)(B + 1));
  if (!st && (!tokens || !pos || !msg)) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
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
    if (!st) st = execute(&sp, a, d); /* over MPI every rank fails alike */
    if (!st) st = next_tokens(&sp, B, root ? check_logits(&sp, source, "prefill", a, d) : PPCC_OK, msg, tokens, d);
    if (!st) {
      for (long b = 0; b < B; b++) {
        n_out[b] = 1;
        if (is_eos(a, tokens[b])) live--;
      }
      steps = 1;
      if (root) stream_text(a, &ts, tokens[0]);
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
      st = next_tokens(&sd, B, root ? check_logits(&sd, source, step, a, d) : PPCC_OK, msg, &tokens[i * B], d);
    }
    if (!st) {
      for (long b = 0; b < B; b++)
        if (n_out[b] == i && !is_eos(a, tokens[(i - 1) * B + b])) {
          n_out[b]++;
          if (is_eos(a, tokens[i * B + b])) live--;
        }
      steps++;
      if (root && n_out[0] == i + 1) stream_text(a, &ts, tokens[i * B]);
    }
  }
  t_end = now_ms();
  /* each rank's figures (one process: its own): load time, resident
   * shards, param and cache bytes its devices hold, peak RSS, and the
   * param and cache bytes it copied after load */
  /* and the plan's prediction of its peak RSS: the process before the
   * weights (measured: code, libraries, compiled graphs) plus the loaded
   * model's params, caches and working set, or the compile's own peak
   * when that was higher */
  enum { F_LOAD, F_SHARDS, F_MADE, F_PARAMS, F_CACHES, F_RSS, F_COPIED, F_HOST, F_BEFORE, F_PLAN_PARAMS,
         F_PLAN_STATE, F_PLAN_WORK, F_PREDICTED, F_RELEASED, N_FIGURES };
  double rss = cli_peak_rss(), predicted = rss_before + (double)plan.total_bytes;
  double mine[N_FIGURES] = {t_load, ppcc_resident_count(&sp.data), (double)ppcc_resident_owned_bytes(&sp.data),
                            (double)ppcc_resident_param_bytes(&sp.data),
                            (double)ppcc_resident_state_bytes(&sp.data), rss,
                            (double)(ppcc_rt_param_bytes_copied() - copied_at_load),
                            (double)(ppcc_rt_state_bytes_host() - cache_at_load), rss_before,
                            (double)plan.param_bytes, (double)plan.state_bytes, (double)plan.activation_bytes,
                            predicted > peak_before ? predicted : peak_before,
                            (double)ppcc_resident_released_bytes(&sp.data)};
  int ranks = ppcc_mpi_size();
  double *all = root ? calloc((size_t)ranks * N_FIGURES, sizeof *all) : NULL;
  if (mpi && !st) ppcc_mpi_gather(mine, N_FIGURES, all);
  else if (all) memcpy(all, mine, sizeof mine);
  if (!st && root && all) {
    if (a->tok) {
      stream_text(a, &ts, -1);
      fputs("\n", stdout);
    }
    for (long b = 0; b < B; b++) {
      fputs("tokens:", stdout);
      for (long i = 0; i < n_out[b]; i++) printf(" %lld", (long long)tokens[i * B + b]);
      fputs("\n", stdout);
    }
    double sum[N_FIGURES] = {0}, most[N_FIGURES] = {0};
    for (int r = 0; r < ranks; r++)
      for (int f = 0; f < N_FIGURES; f++) {
        sum[f] += all[r * N_FIGURES + f];
        if (all[r * N_FIGURES + f] > most[f]) most[f] = all[r * N_FIGURES + f];
      }
    printf("load: %.3f ms (2 graphs compiled, %.0f param and cache shards resident, %.1f MiB of them made at load, "
           "%.2f MiB of whole tensors given back once cut)\n",
           most[F_LOAD], sum[F_SHARDS], sum[F_MADE] / (1 << 20), sum[F_RELEASED] / (1 << 20));
    printf("param bytes copied after load: %.0f\n", sum[F_COPIED]);
    printf("KV cache bytes between host and devices after load: %.0f\n", sum[F_HOST]);
    int64_t params = 0;
    for (int v = 0; v < sp.g->n_values; v++)
      if (sp.g->values[v].kind == PPCC_VALUE_PARAM) params += ppcc_value_bytes(&sp.g->values[v]);
    printf("memory: peak RSS %.1f MiB, params %.1f MiB, KV caches %.1f MiB\n", most[F_RSS] / (1 << 20),
           (double)params / (1 << 20), sum[F_CACHES] / (1 << 20));
    for (int r = 0; mpi && r < ranks; r++) /* MPI: what each rank holds */
      printf("rank %d: %.0f param and cache shards resident (params %.1f MiB, KV caches %.1f MiB), peak RSS %.1f MiB\n",
             r, all[r * N_FIGURES + F_SHARDS], all[r * N_FIGURES + F_PARAMS] / (1 << 20),
             all[r * N_FIGURES + F_CACHES] / (1 << 20), all[r * N_FIGURES + F_RSS] / (1 << 20));
    for (int r = 0; r < ranks; r++) { /* the plan against the measurement, per process */
      const double *f = &all[r * N_FIGURES];
      char who[32] = "";
      if (mpi) snprintf(who, sizeof who, " (rank %d)", r);
      printf("memory plan%s: predicted peak RSS %.1f MiB = %.1f MiB before the weights + params %.1f MiB (%.0f B, "
             "once for both graphs) + KV caches %.1f MiB (%.0f B, state) + working set %.1f MiB (%s graph); measured "
             "%.1f MiB (%+.1f %%)\n",
             who, f[F_PREDICTED] / (1 << 20), f[F_BEFORE] / (1 << 20), f[F_PLAN_PARAMS] / (1 << 20), f[F_PLAN_PARAMS],
             f[F_PLAN_STATE] / (1 << 20), f[F_PLAN_STATE], f[F_PLAN_WORK] / (1 << 20),
             plan.peak_graph == 1 ? "decode" : "prefill",
             f[F_RSS] / (1 << 20), 100.0 * (f[F_PREDICTED] - f[F_RSS]) / f[F_RSS]);
    }
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's shadow memory and quarantine are RSS no plan
     * models (as run --check-plan says): the figures above are not a check */
    printf("memory plan vs measured: not checked in an AddressSanitizer build\n");
#endif
    printf("time to first token: %.3f ms\n", t_first - t0);
    if (steps > 1)
      printf("decode: %ld tokens in %.3f ms, %.1f tokens/s\n", (steps - 1) * B, t_end - t_first,
             (double)((steps - 1) * B) * 1e3 / (t_end - t_first));
  }
  free(all);
  free(msg);
  free(local);
  free(n_out);
  free(tokens);
  free(pos);
  /* the weights first (sd views sp's params): destroying the JIT runs
   * LLVM's code again, whose pages come back (~15 MiB), after them */
  stage_free(&sd, false);
  stage_free(&sp, false);
  stage_free(&sd, true);
  stage_free(&sp, true);
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
  if (a.ranks_map && !ppcc_mpi_launched())
    return cli_usage_error("generate", "--ranks-map needs an MPI run (mpiexec -n R ppcc generate ...)");
  if (a.prompt && a.spec.batch > 1)
    return cli_usage_error("generate", "--prompt is one row (use --prompt-ids for a batch of %ld)", a.spec.batch);
  int64_t *prompt = NULL, *padded = NULL;
  long n_prompt = 0, rows = 1, *lens = NULL;
  ppcc_diag d;
  ppcc_diag_init(&d, p.model_path, stderr);
  /* mpiexec -n R ppcc generate ...: each rank holds its stages' devices
   * (every message says which rank printed it) */
  bool mpi = ppcc_mpi_launched();
  char label[4096];
  if (mpi) {
    st = ppcc_mpi_init(NULL, NULL, &d);
    if (st) return st;
    snprintf(label, sizeof label, "%s [rank %d]", p.model_path, ppcc_mpi_rank());
    d.file = label;
  }
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
  if (mpi) ppcc_mpi_finalize(st);
  tokenizer_free(a.tok);
  free(prompt);
  free(padded);
  free(lens);
  return st;
}
