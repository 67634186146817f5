/* Import of a large GGUF: `ppcc import gguf` on a 32-layer, hidden-4096
 * Llama (Llama-3-8B shapes, Q4_0 matrices, Q6_K output, F32 norms) whose
 * data section is a hole (sparse file: header, metadata and tensor infos
 * only on disk). Measures the wall time and the child's peak RSS
 * (wait4 rusage), 5 runs each of TP1/PP1 and TP2/PP2, alternated (A, B,
 * A, B ...), min and median.
 *
 *   bench_import [PPCC_BINARY] [WORK_DIR]     (default: ./ppcc next to this
 *                                              program, /tmp) */
#define _DEFAULT_SOURCE /* wait4 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void str(FILE *f, const char *s) {
  u64(f, strlen(s));
  fwrite(s, 1, strlen(s), f);
}
static void kv_u32(FILE *f, const char *k, uint32_t v) { str(f, k), u32(f, 4), u32(f, v); }
static void kv_f32(FILE *f, const char *k, float v) { str(f, k), u32(f, 6), fwrite(&v, 4, 1, f); }
static void kv_str(FILE *f, const char *k, const char *v) { str(f, k), u32(f, 8), str(f, v); }

enum { T_F32 = 0, T_Q4_0 = 2, T_Q6_K = 14 };
enum { HIDDEN = 4096, FFN = 14336, LAYERS = 32, HEADS = 32, KV_HEADS = 8, VOCAB = 32000 };

static uint64_t bytes_of(uint32_t type, uint64_t n) {
  return type == T_F32 ? n * 4 : type == T_Q4_0 ? n / 32 * 18 : n / 256 * 210;
}

typedef struct tinfo {
  char name[64];
  int n_dims;
  uint64_t ne[2];
  uint32_t type;
} tinfo;

static int n_infos;
static tinfo infos[LAYERS * 9 + 3];

static void add(const char *name, int n_dims, uint64_t ne0, uint64_t ne1, uint32_t type) {
  tinfo *t = &infos[n_infos++];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->n_dims = n_dims;
  t->ne[0] = ne0;
  t->ne[1] = ne1;
  t->type = type;
}

static uint64_t write_gguf(const char *path) {
  char name[64];
  add("token_embd.weight", 2, HIDDEN, VOCAB, T_Q4_0);
  for (int b = 0; b < LAYERS; b++) {
    const struct { const char *n; int dims; uint64_t ne0, ne1; uint32_t t; } w[9] = {
      {"attn_norm.weight", 1, HIDDEN, 1, T_F32},        {"attn_q.weight", 2, HIDDEN, HIDDEN, T_Q4_0},
      {"attn_k.weight", 2, HIDDEN, HIDDEN / 4, T_Q4_0}, {"attn_v.weight", 2, HIDDEN, HIDDEN / 4, T_Q4_0},
      {"attn_output.weight", 2, HIDDEN, HIDDEN, T_Q4_0}, {"ffn_norm.weight", 1, HIDDEN, 1, T_F32},
      {"ffn_gate.weight", 2, HIDDEN, FFN, T_Q4_0},      {"ffn_up.weight", 2, HIDDEN, FFN, T_Q4_0},
      {"ffn_down.weight", 2, FFN, HIDDEN, T_Q4_0},
    };
    for (int k = 0; k < 9; k++) {
      snprintf(name, sizeof name, "blk.%d.%s", b, w[k].n);
      add(name, w[k].dims, w[k].ne0, w[k].ne1, w[k].t);
    }
  }
  add("output_norm.weight", 1, HIDDEN, 1, T_F32);
  add("output.weight", 2, HIDDEN, VOCAB, T_Q6_K);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite("GGUF", 1, 4, f);
  u32(f, 3);
  u64(f, (uint64_t)n_infos);
  u64(f, 10);
  kv_str(f, "general.architecture", "llama");
  kv_u32(f, "llama.embedding_length", HIDDEN);
  kv_u32(f, "llama.feed_forward_length", FFN);
  kv_u32(f, "llama.block_count", LAYERS);
  kv_u32(f, "llama.attention.head_count", HEADS);
  kv_u32(f, "llama.attention.head_count_kv", KV_HEADS);
  kv_f32(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  kv_f32(f, "llama.rope.freq_base", 500000.0f);
  kv_u32(f, "llama.rope.dimension_count", HIDDEN / HEADS);
  kv_u32(f, "general.alignment", 32);
  uint64_t offset = 0;
  for (int i = 0; i < n_infos; i++) {
    tinfo *t = &infos[i];
    str(f, t->name);
    u32(f, (uint32_t)t->n_dims);
    for (int k = 0; k < t->n_dims; k++) u64(f, t->ne[k]);
    u32(f, t->type);
    u64(f, offset);
    uint64_t n = t->ne[0] * (t->n_dims == 2 ? t->ne[1] : 1);
    offset += (bytes_of(t->type, n) + 31) / 32 * 32;
  }
  long pos = ftell(f);
  uint64_t data_start = ((uint64_t)pos + 31) / 32 * 32, total = data_start + offset;
  fclose(f);
  if (truncate(path, (off_t)total) != 0) return 0; /* a hole: nothing written */
  return total;
}

/* Runs ppcc; returns wall ms, *rss_kb the child's peak RSS. */
static double run_import(const char *ppcc, const char *gguf, const char *out, const char *tp, const char *pp, long *rss_kb) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid = fork();
  if (pid == 0) {
    if (!gguf) execl(ppcc, ppcc, "--version", (char *)NULL); /* baseline: start-up only */
    else execl(ppcc, ppcc, "import", "gguf", gguf, "-o", out, "--tp", tp, "--pp", pp, "--seq", "16", (char *)NULL);
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench_import: %s import failed\n", ppcc);
    exit(1);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  *rss_kb = ru.ru_maxrss;
  return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int main(int argc, char **argv) {
  char ppcc[4096];
  if (argc > 1) snprintf(ppcc, sizeof ppcc, "%s", argv[1]);
  else {
    snprintf(ppcc, sizeof ppcc, "%s", argv[0]);
    char *slash = strrchr(ppcc, '/');
    snprintf(slash ? slash + 1 : ppcc, sizeof ppcc - (size_t)(slash ? slash + 1 - ppcc : 0), "ppcc");
  }
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  char gguf[4096], out[4096];
  snprintf(gguf, sizeof gguf, "%s/bench_import_%d.gguf", dir, (int)getpid());
  snprintf(out, sizeof out, "%s/bench_import_%d.json", dir, (int)getpid());
  uint64_t size = write_gguf(gguf);
  if (!size) {
    fprintf(stderr, "bench_import: cannot write %s\n", gguf);
    return 1;
  }
  printf("sparse GGUF: %d layers, hidden %d, %d tensors, %.2f GiB apparent size\n", LAYERS, HIDDEN, n_infos,
         (double)size / (1 << 30));
  enum { RUNS = 5 };
  const char *cfg[2][2] = {{"1", "1"}, {"2", "2"}};
  double ms[2][RUNS];
  long rss[2][RUNS];
  for (int r = 0; r < RUNS; r++)
    for (int c = 0; c < 2; c++) ms[c][r] = run_import(ppcc, gguf, out, cfg[c][0], cfg[c][1], &rss[c][r]);
  double base_ms[RUNS];
  long base_rss = 0, r_kb;
  for (int r = 0; r < RUNS; r++) {
    base_ms[r] = run_import(ppcc, NULL, NULL, NULL, NULL, &r_kb);
    base_rss = r_kb > base_rss ? r_kb : base_rss;
  }
  qsort(base_ms, RUNS, sizeof(double), cmp);
  printf("baseline ppcc --version: min %.1f ms, median %.1f ms, peak RSS %.1f MiB (start-up, shared libraries)\n",
         base_ms[0], base_ms[RUNS / 2], (double)base_rss / 1024);
  for (int c = 0; c < 2; c++) {
    long max_rss = 0;
    for (int r = 0; r < RUNS; r++) max_rss = rss[c][r] > max_rss ? rss[c][r] : max_rss;
    qsort(ms[c], RUNS, sizeof(double), cmp);
    printf("ppcc import gguf --tp %s --pp %s: min %.1f ms, median %.1f ms, peak RSS %.1f MiB (%d runs)\n", cfg[c][0],
           cfg[c][1], ms[c][0], ms[c][RUNS / 2], (double)max_rss / 1024, RUNS);
  }
  unlink(gguf);
  unlink(out);
  return 0;
}
