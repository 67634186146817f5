/* Linear with block-quantized weights and f32 activations (issue 24), as
 * llama.cpp computes it: each activation row is quantized per block to 8
 * bits (q8_0: 32 values and an f16-rounded scale for the 32-value weight
 * formats; q8_K: 256 values, an f32 scale and the sums of each 16 for the
 * k-quants), then every weight block meets its activation block in an
 * integer dot product scaled once per block.
 *
 * Kernels per weight format: q8_0, q4_0, q4_k, q6_k have integer kernels
 * in plain C and in AVX2 (with AVX-VNNI's dpbusd where the CPU has it),
 * chosen once at run time by CPU features (ppcc_rt_quant_set_isa forces
 * one for tests); the other formats decode each weight block with the
 * block table's decoder and take its dot product with the quantized
 * activations in f32 (same activation rounding, no integer kernel yet).
 *
 * Threads split the output features; each weight row is read once for all
 * activation rows (decode: 1 row, prefill: many). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
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
    for (int j = 0; j < 32; j++) y[i].qs[j] = (int8_t)lrintf(x[j] * id);
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

/* ---------------- AVX2 (+ AVX-VNNI) ---------------- */
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

/* Sum of 32 signed-byte products as 8 int32 (x signed, y signed). */
AVX2 static inline __m256i dot_i8_avx2(__m256i x, __m256i y) {
  __m256i ax = _mm256_sign_epi8(x, x), sy = _mm256_sign_epi8(y, x);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}
VNNI static inline __m256i dot_i8_vnni(__m256i x, __m256i y) {
  __m256i ax = _mm256_sign_epi8(x, x), sy = _mm256_sign_epi8(y, x);
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), ax, sy);
}

#define DEF_Q8_0(NAME, ATTR, DOT)                                                                  \
  ATTR static float NAME(const unsigned char *w, const void *act, int64_t nb) {                   \
    const act_q8_0 *a = act;                                                                       \
    __m256 acc = _mm256_setzero_ps();                                                              \
    for (int64_t i = 0; i < nb; i++, w += 34) {                                                    \
      __m256i x = _mm256_loadu_si256((const __m256i *)(w + 2));                                    \
      __m256i y = _mm256_loadu_si256((const __m256i *)a[i].qs);                                    \
      __m256 q = _mm256_cvtepi32_ps(DOT(x, y));                                                    \
      acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w) * a[i].d), q, acc);                           \
    }                                                                                              \
    return hsum8(acc);                                                                             \
  }

#define DEF_Q4_0(NAME, ATTR, DOT)                                                                  \
  ATTR static float NAME(const unsigned char *w, const void *act, int64_t nb) {                   \
    const act_q8_0 *a = act;                                                                       \
    __m256 acc = _mm256_setzero_ps();                                                              \
    const __m256i m4 = _mm256_set1_epi8(0xF), off = _mm256_set1_epi8(8);                          \
    for (int64_t i = 0; i < nb; i++, w += 18) {                                                    \
      __m128i t = _mm_loadu_si128((const __m128i *)(w + 2));                                       \
      __m256i x = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), m4);                 \
      x = _mm256_sub_epi8(x, off);                                                                 \
      __m256i y = _mm256_loadu_si256((const __m256i *)a[i].qs);                                    \
      __m256 q = _mm256_cvtepi32_ps(DOT(x, y));                                                    \
      acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(w) * a[i].d), q, acc);                           \
    }                                                                                              \
    return hsum8(acc);                                                                             \
  }

/* q4_k: unsigned nibbles times signed bytes (maddubs), 16-bit sums times
 * the sub-block scale (madd), mins through the activation's bsums. */
#define DEF_Q4_K(NAME, ATTR)                                                                       \
  ATTR static float NAME(const unsigned char *w, const void *act, int64_t nb) {                   \
    const act_q8_k *a = act;                                                                       \
    const __m256i m4 = _mm256_set1_epi8(0xF);                                                      \
    __m256 acc = _mm256_setzero_ps();                                                              \
    float acc_m = 0.0f;                                                                            \
    for (int64_t i = 0; i < nb; i++, w += 144) {                                                   \
      uint8_t sc[8], mn[8];                                                                        \
      q4_k_scales(w + 4, sc, mn);                                                                  \
      int summ = 0;                                                                                \
      for (int j = 0; j < 8; j++) summ += mn[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);     \
      const unsigned char *q = w + 16;                                                             \
      const int8_t *y = a[i].qs;                                                                   \
      __m256i sumi = _mm256_setzero_si256();                                                       \
      for (int c = 0; c < 4; c++, q += 32, y += 64) {                                              \
        __m256i bits = _mm256_loadu_si256((const __m256i *)q);                                     \
        __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4); \
        __m256i pl = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)y));             \
        __m256i ph = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y + 32)));      \
        pl = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * c]), pl);                                  \
        ph = _mm256_madd_epi16(_mm256_set1_epi16(sc[2 * c + 1]), ph);                              \
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));                                   \
      }                                                                                            \
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a[i].d * h2f(w)), _mm256_cvtepi32_ps(sumi), acc);    \
      acc_m += a[i].d * h2f(w + 2) * (float)summ;                                               \
    }                                                                                              \
    return hsum8(acc) - acc_m;                                                                     \
  }

/* q6_k: 6-bit values 0..63 (maddubs with the activation), minus 32 times
 * the activation (maddubs of 32s), times the 16-value scales. */
#define DEF_Q6_K(NAME, ATTR)                                                                       \
  ATTR static float NAME(const unsigned char *w, const void *act, int64_t nb) {                   \
    const act_q8_k *a = act;                                                                       \
    const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3), m32 = _mm256_set1_epi8(32); \
    __m256 acc = _mm256_setzero_ps();                                                              \
    for (int64_t i = 0; i < nb; i++, w += 210) {                                                   \
      const unsigned char *ql = w, *qh = w + 128;                                                  \
      const int8_t *sc = (const int8_t *)(w + 192), *y = a[i].qs;                                  \
      __m256i sumi = _mm256_setzero_si256();                                                       \
      for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {                \
        __m256i hb = _mm256_loadu_si256((const __m256i *)qh);                                      \
        __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4);                               \
        __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4);         \
        __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4);         \
        __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4);         \
        __m256i b1 = _mm256_loadu_si256((const __m256i *)ql);                                      \
        __m256i b2 = _mm256_loadu_si256((const __m256i *)(ql + 32));                               \
        __m256i q[4] = {_mm256_or_si256(_mm256_and_si256(b1, m4), h0),                             \
                        _mm256_or_si256(_mm256_and_si256(b2, m4), h1),                             \
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4), h2),       \
                        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4), h3)};      \
        for (int k = 0; k < 4; k++) {                                                              \
          __m256i yk = _mm256_loadu_si256((const __m256i *)(y + 32 * k));                          \
          __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], yk), _mm256_maddubs_epi16(m32, yk)); \
          __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));  \
          sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(s, p));                                  \
        }                                                                                          \
      }                                                                                            \
      acc = _mm256_fmadd_ps(_mm256_set1_ps(a[i].d * h2f(w + 208)), _mm256_cvtepi32_ps(sumi), acc); \
    }                                                                                              \
    return hsum8(acc);                                                                             \
  }

/* Four activation rows against one weight row (prefill): the weight block
 * is loaded, unpacked and sign-split once; each row's accumulation is the
 * one-row kernel's, operation for operation (the same bits). */
AVX2 static inline __m256i dot_abs_avx2(__m256i ax, __m256i sy) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}
VNNI static inline __m256i dot_abs_vnni(__m256i ax, __m256i sy) {
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), ax, sy);
}

#define X4_BODY(ABS, UNPACK, STRIDE)                                                               \
  const act_q8_0 *a[4] = {acts[0], acts[1], acts[2], acts[3]};                                      \
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()}; \
  for (int64_t i = 0; i < nb; i++, w += STRIDE) {                                                  \
    __m256i x = UNPACK;                                                                            \
    __m256i ax = _mm256_sign_epi8(x, x);                                                           \
    float dw = h2f(w);                                                                             \
    for (int r = 0; r < 4; r++) {                                                                  \
      __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)a[r][i].qs), x);          \
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a[r][i].d), _mm256_cvtepi32_ps(ABS(ax, sy)), acc[r]); \
    }                                                                                              \
  }                                                                                                \
  for (int r = 0; r < 4; r++) out[r] = hsum8(acc[r]);

#define Q4_0_UNPACK                                                                                \
  _mm256_sub_epi8(_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(_mm_loadu_si128((const __m128i *)(w + 2)), 4), \
                                                    _mm_loadu_si128((const __m128i *)(w + 2))),  \
                                   _mm256_set1_epi8(0xF)),                                         \
                  _mm256_set1_epi8(8))

AVX2 static void dot4_q8_0_avx2(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  X4_BODY(dot_abs_avx2, _mm256_loadu_si256((const __m256i *)(w + 2)), 34)
}
VNNI static void dot4_q8_0_vnni(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  X4_BODY(dot_abs_vnni, _mm256_loadu_si256((const __m256i *)(w + 2)), 34)
}
AVX2 static void dot4_q4_0_avx2(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  X4_BODY(dot_abs_avx2, Q4_0_UNPACK, 18)
}
VNNI static void dot4_q4_0_vnni(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  X4_BODY(dot_abs_vnni, Q4_0_UNPACK, 18)
}

/* q4_k, four activation rows: scales and nibbles unpacked once per block. */
AVX2 static void dot4_q4_k_avx2(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  const act_q8_k *a[4] = {acts[0], acts[1], acts[2], acts[3]};
  const __m256i m4 = _mm256_set1_epi8(0xF);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  float acc_m[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < nb; i++, w += 144) {
    uint8_t sc[8], mn[8];
    q4_k_scales(w + 4, sc, mn);
    float dw = h2f(w), dmin = h2f(w + 2);
    __m256i lo[4], hi[4], slo[4], shi[4];
    for (int c = 0; c < 4; c++) {
      __m256i bits = _mm256_loadu_si256((const __m256i *)(w + 16 + 32 * c));
      lo[c] = _mm256_and_si256(bits, m4), hi[c] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
      slo[c] = _mm256_set1_epi16(sc[2 * c]), shi[c] = _mm256_set1_epi16(sc[2 * c + 1]);
    }
    for (int r = 0; r < 4; r++) {
      const act_q8_k *ar = &a[r][i];
      int summ = 0;
      for (int j = 0; j < 8; j++) summ += mn[j] * (ar->bsums[2 * j] + ar->bsums[2 * j + 1]);
      __m256i sumi = _mm256_setzero_si256();
      for (int c = 0; c < 4; c++) {
        __m256i pl = _mm256_maddubs_epi16(lo[c], _mm256_loadu_si256((const __m256i *)(ar->qs + 64 * c)));
        __m256i ph = _mm256_maddubs_epi16(hi[c], _mm256_loadu_si256((const __m256i *)(ar->qs + 64 * c + 32)));
        pl = _mm256_madd_epi16(slo[c], pl);
        ph = _mm256_madd_epi16(shi[c], ph);
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(ar->d * dw), _mm256_cvtepi32_ps(sumi), acc[r]);
      acc_m[r] += ar->d * dmin * (float)summ;
    }
  }
  for (int r = 0; r < 4; r++) out[r] = hsum8(acc[r]) - acc_m[r];
}

/* q6_k, four activation rows: 6-bit values and scales unpacked once. */
AVX2 static void dot4_q6_k_avx2(const unsigned char *w, const void *const *acts, int64_t nb, float *out) {
  const act_q8_k *a[4] = {acts[0], acts[1], acts[2], acts[3]};
  const __m256i m4 = _mm256_set1_epi8(0xF), m2 = _mm256_set1_epi8(3), m32 = _mm256_set1_epi8(32);
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < nb; i++, w += 210) {
    __m256i q[8], s[8];
    for (int half = 0; half < 2; half++) {
      const unsigned char *ql = w + 64 * half, *qh = w + 128 + 32 * half;
      const int8_t *sc = (const int8_t *)(w + 192) + 8 * half;
      __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
      __m256i b1 = _mm256_loadu_si256((const __m256i *)ql), b2 = _mm256_loadu_si256((const __m256i *)(ql + 32));
      __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4);
      __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4);
      __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4);
      __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4);
      q[4 * half + 0] = _mm256_or_si256(_mm256_and_si256(b1, m4), h0);
      q[4 * half + 1] = _mm256_or_si256(_mm256_and_si256(b2, m4), h1);
      q[4 * half + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4), h2);
      q[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4), h3);
      for (int k = 0; k < 4; k++) s[4 * half + k] = _mm256_set_m128i(_mm_set1_epi16(sc[2 * k + 1]), _mm_set1_epi16(sc[2 * k]));
    }
    float dw = h2f(w + 208);
    for (int r = 0; r < 4; r++) {
      const act_q8_k *ar = &a[r][i];
      __m256i sumi = _mm256_setzero_si256();
      for (int k = 0; k < 8; k++) {
        __m256i yk = _mm256_loadu_si256((const __m256i *)(ar->qs + 32 * k));
        __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[k], yk), _mm256_maddubs_epi16(m32, yk));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(s[k], p));
      }
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(ar->d * dw), _mm256_cvtepi32_ps(sumi), acc[r]);
    }
  }
  for (int r = 0; r < 4; r++) out[r] = hsum8(acc[r]);
}

DEF_Q8_0(dot_q8_0_avx2, AVX2, dot_i8_avx2)
DEF_Q8_0(dot_q8_0_vnni, VNNI, dot_i8_vnni)
DEF_Q4_0(dot_q4_0_avx2, AVX2, dot_i8_avx2)
DEF_Q4_0(dot_q4_0_vnni, VNNI, dot_i8_vnni)
DEF_Q4_K(dot_q4_k_avx2, AVX2)
DEF_Q6_K(dot_q6_k_avx2, AVX2)
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

typedef struct isa_row {
  const char *name;
  dot_fn q8_0, q4_0, q4_k, q6_k;
  dot4_fn q8_0_x4, q4_0_x4, q4_k_x4, q6_k_x4;
} isa_row;

static const isa_row isas[] = {
  {"c", dot_q8_0_c, dot_q4_0_c, dot_q4_k_c, dot_q6_k_c, NULL, NULL, NULL, NULL},
#ifdef QM_X86
  {"avx2", dot_q8_0_avx2, dot_q4_0_avx2, dot_q4_k_avx2, dot_q6_k_avx2, dot4_q8_0_avx2, dot4_q4_0_avx2, dot4_q4_k_avx2,
   dot4_q6_k_avx2},
  {"avx2-vnni", dot_q8_0_vnni, dot_q4_0_vnni, dot_q4_k_avx2, dot_q6_k_avx2, dot4_q8_0_vnni, dot4_q4_0_vnni,
   dot4_q4_k_avx2, dot4_q6_k_avx2},
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

static dot_fn kernel_of(const isa_row *isa, ppcc_dtype t) {
  switch (t) {
    case PPCC_Q8_0: return isa->q8_0;
    case PPCC_Q4_0: return isa->q4_0;
    case PPCC_Q4_K: return isa->q4_k;
    case PPCC_Q6_K: return isa->q6_k;
    default: return NULL;
  }
}

/* One qlinear's work, split by output rows. */
typedef struct qjob {
  const ppcc_block_format *f;
  dot_fn dot;
  dot4_fn dot4;
  const unsigned char *w;
  const char *act;
  size_t act_size;
  int64_t M, N, nb, row_bytes;
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

/* The kernel's own workers: they wait on a condition variable after a
 * short spin (OpenMP's spinning teams starve the calling thread on a
 * loaded machine, and device threads may not open nested teams). One
 * caller at a time; a second concurrent caller computes alone. */
enum { MAX_WORKERS = 63 };
static struct {
  pthread_mutex_t lock, busy;
  pthread_cond_t go, done;
  int started;
  _Atomic uint64_t gen;
  int parts, pending;
  const qjob *job;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .busy = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
            .done = PTHREAD_COND_INITIALIZER};

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg; /* part id + 1 (the caller is part 0) */
  uint64_t seen = 0;
  for (;;) {
    for (int spin = 0; spin < 20000 && pool.gen == seen; spin++) {
#ifdef QM_X86
      _mm_pause();
#endif
    }
    pthread_mutex_lock(&pool.lock);
    while (pool.gen == seen) pthread_cond_wait(&pool.go, &pool.lock);
    seen = pool.gen;
    const qjob *j = pool.job;
    int parts = pool.parts;
    pthread_mutex_unlock(&pool.lock);
    if (id < parts) run_rows(j, j->N * id / parts, j->N * (id + 1) / parts);
    pthread_mutex_lock(&pool.lock);
    if (--pool.pending == 0) pthread_cond_signal(&pool.done);
    pthread_mutex_unlock(&pool.lock);
  }
  return NULL;
}

/* Runs j over `parts` threads (the caller and parts - 1 workers). */
static void run_parallel(const qjob *j, int parts) {
  if (parts > MAX_WORKERS + 1) parts = MAX_WORKERS + 1;
  if (parts < 2 || pthread_mutex_trylock(&pool.busy) != 0) {
    run_rows(j, 0, j->N);
    return;
  }
  while (pool.started < parts - 1) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)(intptr_t)(pool.started + 1)) != 0) break;
    pthread_detach(t);
    pool.started++;
  }
  if (parts > pool.started + 1) parts = pool.started + 1;
  pthread_mutex_lock(&pool.lock);
  pool.job = j;
  pool.parts = parts;
  pool.pending = pool.started;
  pool.gen++;
  pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.lock);
  run_rows(j, 0, j->N / parts);
  pthread_mutex_lock(&pool.lock);
  while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&pool.busy);
}

bool ppcc_rt_qlinear_f32(ppcc_dtype wt, int64_t M, int64_t N, int64_t K, const float *x, const void *w, float *y) {
  const ppcc_block_format *f = ppcc_dtype_blocks(wt);
  if (!f || K <= 0 || K % f->block != 0 || M < 0 || N < 0) return false;
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
  dot4_fn dot4 = wt == PPCC_Q8_0 ? isa->q8_0_x4 : wt == PPCC_Q4_0 ? isa->q4_0_x4 : wt == PPCC_Q4_K ? isa->q4_k_x4
                 : wt == PPCC_Q6_K ? isa->q6_k_x4 : NULL;
  qjob j = {f, kernel_of(isa, wt), dot4, w, act, act_size, M, N, nb, nb * f->bytes, y};
  int nt = rt_kernel_threads();
  run_parallel(&j, M * N * K > 65536 && N >= 2 * nt ? nt : 1);
  rt_reuse_free(act);
  return true;
}

bool ppcc_rt_qrows_f32(ppcc_dtype wt, const void *table, int64_t row, int64_t cols, float *out) {
  const ppcc_block_format *f = ppcc_dtype_blocks(wt);
  if (!f || cols % f->block != 0) return false;
  int64_t nb = cols / f->block;
  return ppcc_block_decode(f, (const unsigned char *)table + row * nb * f->bytes, nb, out) < 0;
}
