/* Linear with block-quantized weights and f32 activations (issue 24), as
 * llama.cpp computes it: each activation row is quantized per block to 8
 * bits (q8_0: 32 values, an f16-rounded scale and the values' sum for the
 * 32-value weight formats; q8_K: 256 values, an f32 scale and the sums of
 * each 16 for the k-quants), once per call, then every weight block meets
 * its activation block in an integer dot product scaled once per block.
 *
 * Kernels: every format has integer kernels in AVX2 (quant_dot_x86.h;
 * with AVX-VNNI's dpbusd/dpwssd where the CPU has it), chosen once at run
 * time by CPU features (ppcc_rt_quant_set_isa forces one for tests). The
 * plain C set has integer kernels for q8_0, q4_0, q4_k and q6_k; for the
 * others it decodes each weight block with the block table's decoder and
 * takes its dot product with the same quantized activations in f32.
 * Prefill takes four activation rows per weight block decoded.
 *
 * Threads take chunks of output features from a shared counter, so a
 * thread the OS delays leaves its chunks to the others (run_parallel);
 * each output is one row function's, so the bits never depend on the
 * split. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ppcc/quant.h"
#include "kernels.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define QM_X86 1
#endif

/* Activation blocks. */
typedef struct act_q8_0 {
  float d; /* f16-rounded, like ggml's block_q8_0 */
  int sum; /* of qs: offsets and mins of q4_0, q5_0, q4_1, q5_1 */
  int8_t qs[32];
} act_q8_0;

typedef struct act_q8_k {
  float d;
  int8_t qs[256];
  int16_t bsums[16]; /* sums of each 16 qs */
} act_q8_k;

static float f16_at(const unsigned char *p) { return ppcc_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* ggml's quantize_row_q8_0 (its AVX2 form: id = 127 / amax, ties to even). */
static void quantize_q8_0(const float *x, int64_t nb, act_q8_0 *y) {
  for (int64_t i = 0; i < nb; i++, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    y[i].d = ppcc_f16_to_f32(ppcc_f32_to_f16(amax / 127.0f));
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += y[i].qs[j] = (int8_t)lrintf(x[j] * id);
    y[i].sum = sum;
  }
}

/* ggml's quantize_row_q8_K_ref: scale from the signed value of largest
 * magnitude (-127 / max), values clamped at 127. */
static void quantize_q8_k(const float *x, int64_t nb, act_q8_k *y) {
  for (int64_t i = 0; i < nb; i++, x += 256) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; j++)
      if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    if (amax == 0.0f) {
      memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    float iscale = -127.0f / max;
    for (int j = 0; j < 256; j++) {
      long v = lrintf(iscale * x[j]);
      y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; j++) {
      int sum = 0;
      for (int l = 0; l < 16; l++) sum += y[i].qs[16 * j + l];
      y[i].bsums[j] = (int16_t)sum;
    }
    y[i].d = 1.0f / iscale;
  }
}

/* q4_k's 8 six-bit scales and mins (ggml's get_scale_min_k4). */
static void q4_k_scales(const unsigned char *q, uint8_t *sc, uint8_t *mn) {
  for (int j = 0; j < 8; j++) {
    if (j < 4) {
      sc[j] = q[j] & 63, mn[j] = q[j + 4] & 63;
    } else {
      sc[j] = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
      mn[j] = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
  }
}

/* ---------------- plain C: one weight row . one activation row ---------------- */

static float dot_q8_0_c(const unsigned char *w, const void *act, int64_t nb) {
  const act_q8_0 *a = act;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i++, w += 34) {
    int s = 0;
    for (int j = 0; j < 32; j++) s += (int8_t)w[2 + j] * a[i].qs[j];
    sum += (float)s * (f16_at(w) * a[i].d);
  }
  return sum;
}

static float dot_q4_0_c(const unsigned char *w, const void *act, int64_t nb) {
  const act_q8_0 *a = act;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i++, w += 18) {
    int s = 0;
    for (int j = 0; j < 16; j++)
      s += ((w[2 + j] & 0xF) - 8) * a[i].qs[j] + ((w[2 + j] >> 4) - 8) * a[i].qs[j + 16];
    sum += (float)s * (f16_at(w) * a[i].d);
  }
  return sum;
}

static float dot_q4_k_c(const unsigned char *w, const void *act, int64_t nb) {
  const act_q8_k *a = act;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i++, w += 144) {
    uint8_t sc[8], mn[8];
    q4_k_scales(w + 4, sc, mn);
    const unsigned char *q = w + 16;
    const int8_t *y = a[i].qs;
    int sumi = 0, summ = 0;
    for (int c = 0; c < 4; c++, q += 32, y += 64) {
      int lo = 0, hi = 0;
      for (int l = 0; l < 32; l++) lo += (q[l] & 0xF) * y[l], hi += (q[l] >> 4) * y[l + 32];
      sumi += sc[2 * c] * lo + sc[2 * c + 1] * hi;
    }
    for (int j = 0; j < 8; j++) summ += mn[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    sum += a[i].d * f16_at(w) * (float)sumi - a[i].d * f16_at(w + 2) * (float)summ;
  }
  return sum;
}

static float dot_q6_k_c(const unsigned char *w, const void *act, int64_t nb) {
  const act_q8_k *a = act;
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i++, w += 210) {
    const unsigned char *ql = w, *qh = w + 128;
    const int8_t *sc = (const int8_t *)(w + 192), *y = a[i].qs;
    int sumi = 0;
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
      int s[8] = {0};
      for (int l = 0; l < 32; l++) {
        int is = l / 16;
        s[is + 0] += (((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32) * y[l];
        s[is + 2] += (((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32) * y[l + 32];
        s[is + 4] += (((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32) * y[l + 64];
        s[is + 6] += (((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32) * y[l + 96];
      }
      for (int k = 0; k < 8; k++) sumi += sc[k] * s[k];
    }
    sum += a[i].d * f16_at(w + 208) * (float)sumi;
  }
  return sum;
}

/* ---------------- x86: AVX2, AVX2 + AVX-VNNI (quant_dot_x86.h) ---------------- */
#ifdef QM_X86
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define VNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

AVX2 static inline float h2f(const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

AVX2 static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* A 32-value weight block in registers: u its unsigned values (q8_0: their
 * magnitudes, s the signed values), d its scale, m its min. */
typedef struct blk32 {
  __m256i u, s;
  float d, m;
} blk32;

/* Byte shuffles that spread the scales of 16-value sub-blocks 2k and
 * 2k + 1 (int16 lanes, both 128-bit halves holding the same 8) over the
 * low and the high half: row k % 4. */
static const uint8_t k_scale_shuffle[4][32] = {
#define KS(a) a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1
  {KS(0), KS(2)}, {KS(4), KS(6)}, {KS(8), KS(10)}, {KS(12), KS(14)},
#undef KS
};

#define QD_ATTR AVX2
#define QD(name) name##_avx2
#define QD_DOTU(u, y) _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1))
#define QD_KACC(acc, s, p) _mm256_add_epi32(acc, _mm256_madd_epi16(s, p))
#include "quant_dot_x86.h"
#undef QD_ATTR
#undef QD
#undef QD_DOTU
#undef QD_KACC

#define QD_ATTR VNNI
#define QD(name) name##_vnni
#define QD_DOTU(u, y) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, y)
#define QD_KACC(acc, s, p) _mm256_dpwssd_avx_epi32(acc, s, p)
#include "quant_dot_x86.h"
#undef QD_ATTR
#undef QD
#undef QD_DOTU
#undef QD_KACC
#endif

/* ---------------- every other format: decoded weight block . activations ---------------- */

/* Weight row (nb blocks of f) decoded block by block into tmp (one block),
 * times the quantized activations. */
static float dot_decoded(const ppcc_block_format *f, const unsigned char *w, const void *act, int64_t nb,
                         float *tmp) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; i++, w += f->bytes) {
    f->decode(w, tmp);
    if (f->block == 32) {
      const act_q8_0 *a = (const act_q8_0 *)act + i;
      float s = 0.0f;
      for (int j = 0; j < 32; j++) s += tmp[j] * (float)a->qs[j];
      sum += s * a->d;
    } else {
      const act_q8_k *a = (const act_q8_k *)act + i;
      float s = 0.0f;
      for (int j = 0; j < 256; j++) s += tmp[j] * (float)a->qs[j];
      sum += s * a->d;
    }
  }
  return sum;
}

/* ---------------- dispatch ---------------- */

typedef float (*dot_fn)(const unsigned char *w, const void *act, int64_t nb);

/* Four activation rows at once (NULL: four one-row calls). */
typedef void (*dot4_fn)(const unsigned char *w, const void *const *acts, int64_t nb, float *out);

/* The formats' kernels: index of each in an isa_row. */
enum { F_Q8_0, F_Q4_0, F_Q4_1, F_Q5_0, F_Q5_1, F_Q2_K, F_Q3_K, F_Q4_K, F_Q5_K, F_Q6_K, N_FMT };

static int fmt_index(ppcc_dtype t) {
  switch (t) {
    case PPCC_Q8_0: return F_Q8_0;
    case PPCC_Q4_0: return F_Q4_0;
    case PPCC_Q4_1: return F_Q4_1;
    case PPCC_Q5_0: return F_Q5_0;
    case PPCC_Q5_1: return F_Q5_1;
    case PPCC_Q2_K: return F_Q2_K;
    case PPCC_Q3_K: return F_Q3_K;
    case PPCC_Q4_K: return F_Q4_K;
    case PPCC_Q5_K: return F_Q5_K;
    case PPCC_Q6_K: return F_Q6_K;
    default: return -1;
  }
}

/* One instruction set: a one-row and a four-row kernel per format (NULL:
 * the block decoder's f32 dot product; four one-row calls). */
typedef struct isa_row {
  const char *name;
  dot_fn dot[N_FMT];
  dot4_fn dot4[N_FMT];
} isa_row;

#define X86_ROW(NAME, S)                                                                                              \
  {NAME,                                                                                                             \
   {dot_q8_0_##S, dot_q4_0_##S, dot_q4_1_##S, dot_q5_0_##S, dot_q5_1_##S, dot_q2_k_##S, dot_q3_k_##S, dot_q4_k_##S,   \
    dot_q5_k_##S, dot_q6_k_##S},                                                                                     \
   {dot4_q8_0_##S, dot4_q4_0_##S, dot4_q4_1_##S, dot4_q5_0_##S, dot4_q5_1_##S, dot4_q2_k_##S, dot4_q3_k_##S,         \
    dot4_q4_k_##S, dot4_q5_k_##S, dot4_q6_k_##S}}

static const isa_row isas[] = {
  {"c", {[F_Q8_0] = dot_q8_0_c, [F_Q4_0] = dot_q4_0_c, [F_Q4_K] = dot_q4_k_c, [F_Q6_K] = dot_q6_k_c}, {NULL}},
#ifdef QM_X86
  X86_ROW("avx2", avx2),
  X86_ROW("avx2-vnni", vnni),
#endif
};
enum { N_ISAS = sizeof isas / sizeof isas[0] };

#ifdef QM_X86
/* CPUID and XGETBV directly (clang 14's __builtin_cpu_supports knows
 * neither f16c nor avxvnni): AVX2, FMA and F16C with the OS saving the
 * YMM registers; AVX-VNNI is leaf 7, sub-leaf 1, EAX bit 4. */
static bool cpu_has(bool vnni) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  bool fma = c >> 12 & 1, osxsave = c >> 27 & 1, f16c = c >> 29 & 1;
  if (!fma || !osxsave || !f16c) return false;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return false; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b >> 5 & 1)) return false; /* AVX2 */
  return !vnni || (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1));
}
#endif

static bool isa_available(int k) {
#ifdef QM_X86
  if (k >= 1 && !cpu_has(k == 2)) return false;
#endif
  return k >= 0 && k < N_ISAS;
}

static _Atomic int chosen_isa = -1;

static const isa_row *current_isa(void) {
  int k = chosen_isa;
  if (k < 0) {
    k = N_ISAS - 1;
    while (k > 0 && !isa_available(k)) k--;
    chosen_isa = k;
  }
  return &isas[k];
}

const char *ppcc_rt_quant_isa(void) { return current_isa()->name; }

bool ppcc_rt_quant_set_isa(const char *name) {
  for (int k = 0; k < N_ISAS; k++)
    if (strcmp(isas[k].name, name) == 0) {
      if (!isa_available(k)) return false;
      chosen_isa = k;
      return true;
    }
  return false;
}

/* One qlinear's work: output features in chunks of `chunk`. */
typedef struct qjob {
  const ppcc_block_format *f;
  dot_fn dot;
  dot4_fn dot4;
  const unsigned char *w;
  const char *act;
  size_t act_size;
  int64_t M, N, nb, row_bytes, chunk;
  float *y;
} qjob;

static void run_rows(const qjob *j, int64_t n0, int64_t n1) {
  float tmp[256];
  for (int64_t n = n0; n < n1; n++) {
    const unsigned char *row = j->w + n * j->row_bytes;
    int64_t m = 0;
    for (; j->dot4 && m + 4 <= j->M; m += 4) {
      const void *a[4];
      float out[4];
      for (int r = 0; r < 4; r++) a[r] = j->act + (m + r) * j->nb * j->act_size;
      j->dot4(row, a, j->nb, out);
      for (int r = 0; r < 4; r++) j->y[(m + r) * j->N + n] = out[r];
    }
    for (; m < j->M; m++) {
      const void *a = j->act + m * j->nb * j->act_size;
      j->y[m * j->N + n] = j->dot ? j->dot(row, a, j->nb) : dot_decoded(j->f, row, a, j->nb, tmp);
    }
  }
}

/* The kernel's own workers. The caller and whichever workers are awake
 * take chunks from one counter; the caller waits only for workers that
 * joined before the chunks ran out, so a worker the OS has not scheduled
 * yet (a loaded machine) costs nothing: it finds the job closed. Workers
 * spin a while after each job (a decode step's linears come every few
 * tens of us), then sleep on a condition variable. One caller at a time;
 * a second concurrent caller (another device thread) computes alone. */
enum { MAX_WORKERS = 63, SPIN_NS = 400000 };
static struct {
  pthread_mutex_t lock, busy;
  pthread_cond_t go;
  int started, sleeping;
  atomic_uint gen;    /* bumped for each job */
  atomic_bool open;   /* the current job still has chunks */
  atomic_int active;  /* workers inside the current job */
  atomic_int_fast64_t next; /* its next feature */
  const qjob *job;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .busy = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER};

static void take_chunks(const qjob *j) {
  for (;;) {
    int64_t n0 = atomic_fetch_add(&pool.next, j->chunk);
    if (n0 >= j->N) return;
    run_rows(j, n0, n0 + j->chunk < j->N ? n0 + j->chunk : j->N);
  }
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *worker(void *arg) {
  (void)arg;
  unsigned seen = atomic_load(&pool.gen);
  for (;;) {
    int64_t until = now_ns() + SPIN_NS;
    for (int i = 1; atomic_load(&pool.gen) == seen; i++) {
      if (i % 64 == 0 && now_ns() > until) {
        pthread_mutex_lock(&pool.lock);
        pool.sleeping++;
        while (atomic_load(&pool.gen) == seen) pthread_cond_wait(&pool.go, &pool.lock);
        pool.sleeping--;
        pthread_mutex_unlock(&pool.lock);
        break;
      }
#ifdef QM_X86
      _mm_pause();
#endif
    }
    seen = atomic_load(&pool.gen);
    atomic_fetch_add(&pool.active, 1);
    /* joined: the caller now waits for us, unless the job had closed */
    if (atomic_load(&pool.gen) == seen && atomic_load(&pool.open)) take_chunks(pool.job);
    atomic_fetch_sub(&pool.active, 1);
  }
  return NULL;
}

/* Runs j on the caller and up to parts - 1 workers. */
static void run_parallel(const qjob *j, int parts) {
  if (parts > MAX_WORKERS + 1) parts = MAX_WORKERS + 1;
  if (parts < 2 || pthread_mutex_trylock(&pool.busy) != 0) {
    run_rows(j, 0, j->N);
    return;
  }
  while (pool.started < parts - 1) {
    if (!rt_pool_spawn(worker, NULL)) break;
    pool.started++;
  }
  pool.job = j;
  atomic_store(&pool.next, 0);
  atomic_store(&pool.open, true);
  atomic_fetch_add(&pool.gen, 1);
  pthread_mutex_lock(&pool.lock);
  if (pool.sleeping) pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.lock);
  take_chunks(j);
  atomic_store(&pool.open, false);
  while (atomic_load(&pool.active) > 0) {
#ifdef QM_X86
    _mm_pause();
#endif
  }
  pthread_mutex_unlock(&pool.busy);
}

bool ppcc_rt_qlinear_f32(ppcc_dtype wt, int64_t M, int64_t N, int64_t K, const float *x, const void *w, float *y) {
  const ppcc_block_format *f = ppcc_dtype_blocks(wt);
  int fi = fmt_index(wt);
  if (!f || fi < 0 || K <= 0 || K % f->block != 0 || M < 0 || N < 0) return false;
  if (M == 0 || N == 0) return true;
  int64_t nb = K / f->block;
  size_t act_size = f->block == 32 ? sizeof(act_q8_0) : sizeof(act_q8_k);
  char *act = rt_reuse_alloc(M * nb * (int64_t)act_size);
  if (!act) return false;
  for (int64_t m = 0; m < M; m++) {
    if (f->block == 32) quantize_q8_0(x + m * K, nb, (act_q8_0 *)(act + m * nb * act_size));
    else quantize_q8_k(x + m * K, nb, (act_q8_k *)(act + m * nb * act_size));
  }
  const isa_row *isa = current_isa();
  int nt = M * N * K > 65536 && N >= 2 * rt_kernel_threads() ? rt_kernel_threads() : 1;
  /* about 8 chunks a thread, at least 8 features each */
  int64_t chunk = (N + 8 * nt - 1) / (8 * nt);
  if (chunk < 8) chunk = 8;
  qjob j = {f, isa->dot[fi], isa->dot4[fi], w, act, act_size, M, N, nb, nb * f->bytes, chunk, y};
  run_parallel(&j, nt);
  rt_reuse_free(act);
  return true;
}
bool ppcc_rt_qrows_f32(ppcc_dtype wt, const void *table, int64_t row, int64_t cols, float *out) {
  const ppcc_block_format *f = ppcc_dtype_blocks(wt);
  if (!f || cols % f->block != 0) return false;
  int64_t nb = cols / f->block;
  return ppcc_block_decode(f, (const unsigned char *)table + row * nb * f->bytes, nb, out) < 0;
}
