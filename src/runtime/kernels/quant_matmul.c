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
 * Prefill takes four activation rows per weight block decoded (eight on
 * AVX-512); these give a row the same bits whatever the row count. On
 * AVX-512 VNNI every format also has a GEMM of 8 weight rows by 16
 * activation rows (kgemm, qgemm32): the same integer sums, the float
 * sums in another order, so like the BLAS it is off when matmuls must be
 * row-invariant (--deterministic).
 *
 * Threads take chunks of output features from a shared counter, so a
 * thread the OS delays leaves its chunks to the others (run_parallel);
 * each output is one row function's, so the bits never depend on the
 * split. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/quant.h"
#include "kernels.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include "simd_x86.h"
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

/* The one-row (decode) kernels read each weight byte once, from memory
 * or L3: the hardware prefetcher alone kept a core at 7-9 GB/s there
 * (2816 x 1024 matrices, 40 of them in turn), prefetching the bytes 4 KiB
 * ahead of each block 12-18 GB/s. The distance: 4 KiB for the 32-value
 * formats (q8_0: 1 and 2 KiB measured less), 2 KiB for the k-quants
 * (q4_k 86-87 us per call against 92 at 4 KiB, bench_qmatvec, 1 thread;
 * q6_k the same either way). */
#define QD_PREFETCH(w, BYTES, DIST)                                                                 \
  do {                                                                                              \
    for (int pf_ = 0; pf_ < (BYTES); pf_ += 64) _mm_prefetch((const char *)(w) + (DIST) + pf_, _MM_HINT_T0); \
  } while (0)

AVX2 static inline float h2f(const unsigned char *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
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

/* The activation quantizers in AVX2, with the plain C ones' results: the
 * same max, scale and products, rounded to nearest even by cvtps (as
 * lrintf in the default rounding mode); the sums of bytes through psadbw
 * on the bytes + 128. */
AVX2 static inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

/* 32 floats times scale, rounded, at most 127, as 32 bytes in order. */
AVX2 static inline __m256i round32_avx2(const float *x, __m256 scale) {
  __m256i v[4];
  for (int k = 0; k < 4; k++)
    v[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), scale)),
                            _mm256_set1_epi32(127));
  __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Sums of the signed bytes 0..7, 8..15, 16..23, 24..31 of q (int64 lanes). */
AVX2 static inline __m256i byte_sums8(__m256i q) {
  return _mm256_sub_epi64(_mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256()),
                          _mm256_set1_epi64x(8 * 128));
}

/* One block: its scale, values and their sum. */
AVX2 static inline __attribute__((always_inline)) void q8_0_block_avx2(const float *x, float *d, int *sum,
                                                                      int8_t *qs) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 4; k++) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask));
  float amax = hmax8(m);
  *d = ppcc_f16_to_f32(ppcc_f32_to_f16(amax / 127.0f));
  float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  __m256i q = round32_avx2(x, _mm256_set1_ps(id));
  _mm256_storeu_si256((__m256i *)qs, q);
  __m256i s = byte_sums8(q);
  s = _mm256_add_epi64(s, _mm256_srli_si256(s, 8));
  *sum = (int)(_mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 2));
}

AVX2 static void quantize_q8_0_avx2(const float *x, int64_t nb, act_q8_0 *y) {
  for (int64_t i = 0; i < nb; i++, x += 32) q8_0_block_avx2(x, &y[i].d, &y[i].sum, y[i].qs);
}

/* The same into soa32's layout (the bytes of nb act_q8_0). */
AVX2 static void quantize_q8_0_soa_avx2(const float *x, int64_t nb, void *row) {
  int8_t *qs = row;
  float *d = (float *)(qs + 32 * nb);
  int *sum = (int *)(d + nb);
  for (int64_t i = 0; i < nb; i++, x += 32) q8_0_block_avx2(x, &d[i], &sum[i], qs + 32 * i);
}

AVX2 static void quantize_q8_k_avx2(const float *x, int64_t nb, act_q8_k *y) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t i = 0; i < nb; i++, x += 256) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; k++) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask));
    float amax = hmax8(m);
    if (amax == 0.0f) {
      memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    int first = 0; /* the first value of that magnitude gives the sign, as in the C loop */
    for (int k = 0; k < 32; k++) {
      __m256 eq = _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask), _mm256_set1_ps(amax), _CMP_EQ_OQ);
      int bits = _mm256_movemask_ps(eq);
      if (bits) {
        first = 8 * k + __builtin_ctz((unsigned)bits);
        break;
      }
    }
    float iscale = -127.0f / x[first];
    for (int c = 0; c < 8; c++) {
      __m256i q = round32_avx2(x + 32 * c, _mm256_set1_ps(iscale));
      _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * c), q);
      __m256i s = byte_sums8(q);
      s = _mm256_add_epi64(s, _mm256_srli_si256(s, 8)); /* lanes 0 and 2: the two sums of 16 */
      y[i].bsums[2 * c] = (int16_t)_mm256_extract_epi64(s, 0);
      y[i].bsums[2 * c + 1] = (int16_t)_mm256_extract_epi64(s, 2);
    }
    y[i].d = 1.0f / iscale;
  }
}

#define QD_ATTR VNNI
#define QD(name) name##_vnni
#define QD_DOTU(u, y) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, y)
#define QD_KACC(acc, s, p) _mm256_dpwssd_avx_epi32(acc, s, p)
#include "quant_dot_x86.h"
#undef QD_ATTR
#undef QD
#undef QD_DOTU
#undef QD_KACC

/* AVX-512 (F, BW, VL, VNNI): the same kernels with the EVEX forms and 32
 * registers, and for prefill the k-quants two 32-value chunks per 512-bit
 * register (decode measured no faster so): their integer sums fold back
 * to the 256-bit ones lane for lane, so they give the one-row kernels'
 * bits. */
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define QD_ATTR AVX512
#define QD(name) name##_avx512
#define QD_DOTU(u, y) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y)
#define QD_KACC(acc, s, p) _mm256_dpwssd_epi32(acc, s, p)
#include "quant_dot_x86.h"
#undef QD_ATTR
#undef QD
#undef QD_DOTU
#undef QD_KACC

AVX512 static inline __m512i pair512(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
AVX512 static inline __m256i fold512(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

#define DEF_K512(T, HEAD, BYTES, SAME_D)                                                             \
  AVX512 static void dot8_##T##_z(const unsigned char *w, const void *const *acts, int64_t nb, float *out) { \
    __m256 acc[8], acc_m[8];                                                                         \
    for (int r = 0; r < 8; r++) acc[r] = acc_m[r] = _mm256_setzero_ps();                             \
    for (int64_t i = 0; i < nb; i++, w += BYTES) {                                                   \
      khead_avx512 h = HEAD(w);                                                                      \
      __m512i u[4], s[4];                                                                            \
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {                                          \
        u[j] = pair512(u_##T##_avx512(w, 2 * j), u_##T##_avx512(w, 2 * j + 1));                      \
        s[j] = pair512(kscale_avx512(&h, 2 * j), kscale_avx512(&h, 2 * j + 1));                      \
      }                                                                                              \
      for (int r = 0; r < 8; r++) {                                                                  \
        const act_q8_k *a = (const act_q8_k *)acts[r] + i;                                           \
        __m512i sumi[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};                          \
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {                                        \
          __m512i y = _mm512_loadu_si512(a->qs + 64 * j);                                            \
          sumi[j % 2] = _mm512_dpwssd_epi32(sumi[j % 2], s[j], _mm512_maddubs_epi16(u[j], y));       \
        }                                                                                            \
        finish256_avx512(&h, a, fold512(_mm512_add_epi32(sumi[0], sumi[1])), SAME_D, &acc[r], &acc_m[r]); \
      }                                                                                              \
    }                                                                                                \
    for (int r = 0; r < 8; r++) out[r] = hsum8(acc[r]) - hsum8(acc_m[r]);                            \
  }

DEF_K512(q2_k, head_q2_k_avx512, 84, false)
DEF_K512(q3_k, head_q3_k_avx512, 110, true)
DEF_K512(q4_k, head_k4_avx512, 144, false)
DEF_K512(q5_k, head_k4_avx512, 176, false)
DEF_K512(q6_k, head_q6_k_avx512, 210, true)
#undef DEF_K512

/* Prefill GEMM for the k-quants (AVX-512 VNNI): 16 activation rows side
 * by side, each 512-bit register holding 4 consecutive values of all 16
 * (kpack, made once per call), meet 8 weight rows whose values are
 * broadcast 4 at a time: one dpbusd makes 64 products. Per weight row and
 * sub-block the integer sums (exact as floats) are scaled in float
 * (cvt + fma: one uop on dpbusd's port where an integer pmulld takes two;
 * 10% faster, the block's sum rounded), the mins come from the
 * activations' sums of 16 (dpwssd on pairs) in integer; each block's one
 * float product per output (the one-row kernels keep 8 lanes). */
typedef struct kpack {
  int8_t q[64][16][4];     /* [values 4g..4g+3][activation row] */
  int16_t bs[8][16][2];    /* [sub-blocks 2p, 2p+1][activation row] */
  int16_t bs32[4][16][2];  /* the same for sums of 32 (q4_k, q5_k: a min per 32) */
  float d[16];
} kpack;

/* A block of 8 weight rows decoded: values, int32 scales and int16 mins
 * per 16 values, d and dmin. */
typedef struct kwtile {
  uint8_t u[8][256];
  float sc[8][16]; /* the integer scales, exact as floats */
  int16_t mn[8][16];
  float d[8], dmin[8];
} kwtile;

static void kpack_rows(const act_q8_k *act, int64_t M, int64_t nb, kpack *kp) {
  for (int64_t jt = 0; jt * 16 < M; jt++)
    for (int64_t i = 0; i < nb; i++) {
      kpack *p = &kp[jt * nb + i];
      memset(p, 0, sizeof *p);
      for (int j = 0; j < 16 && jt * 16 + j < M; j++) {
        const act_q8_k *a = &act[(jt * 16 + j) * nb + i];
        for (int g = 0; g < 64; g++) memcpy(p->q[g][j], a->qs + 4 * g, 4);
        for (int s = 0; s < 16; s++) p->bs[s / 2][j][s % 2] = a->bsums[s], p->bs32[s / 4][j][s / 2 % 2] += a->bsums[s];
        p->d[j] = a->d;
      }
    }
}

#define DEF_KUNPACK(T, HEAD)                                                                         \
  AVX512 static void kunpack_##T(const unsigned char *w, kwtile *t, int r) {                         \
    khead_avx512 h = HEAD(w);                                                                        \
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)                                              \
      _mm256_storeu_si256((__m256i *)(t->u[r] + 32 * k), u_##T##_avx512(w, k));                      \
    _mm512_storeu_ps(t->sc[r], _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(                               \
                                   _mm256_set_m128i(_mm256_castsi256_si128(h.hi2), _mm256_castsi256_si128(h.lo2))))); \
    _mm256_storeu_si256((__m256i *)t->mn[r], h.mn);                                                  \
    t->d[r] = h.d, t->dmin[r] = h.dmin;                                                              \
  }
DEF_KUNPACK(q2_k, head_q2_k_avx512)
DEF_KUNPACK(q3_k, head_q3_k_avx512)
DEF_KUNPACK(q4_k, head_k4_avx512)
DEF_KUNPACK(q5_k, head_k4_avx512)
DEF_KUNPACK(q6_k, head_q6_k_avx512)
#undef DEF_KUNPACK

typedef void (*kunpack_fn)(const unsigned char *w, kwtile *t, int r);

/* The GEMMs read 8 weight rows (contiguous: 8 * row_bytes from w) block
 * by block; while at block i of nb they prefetch the i-th nb-th of the
 * next 8 rows, which otherwise come from L3 or memory as the unpack
 * first touches them (a third of the GEMM's time at 64 rows). Past the
 * end of the weight a prefetch does nothing. */
AVX512 static inline void prefetch_next_rows(const unsigned char *w, int64_t row_bytes, int64_t i, int64_t nb) {
  const char *next = (const char *)w + 8 * row_bytes;
  for (int64_t off = (8 * row_bytes * i / nb) & ~63, end = 8 * row_bytes * (i + 1) / nb; off < end; off += 64)
    _mm_prefetch(next + off, _MM_HINT_T0);
}

/* One weight block of 8 rows (t) against one tile of 16 activation rows
 * (p), added to ac / am ([8][16] floats). STEP: 16-value sub-blocks per
 * scale (q4_k, q5_k: 2). Inlined with constant arguments and unrolled so
 * that the 8 rows' sums stay in registers (at -O2 GCC otherwise keeps
 * them in memory, half the speed). */
AVX512 static inline __attribute__((always_inline)) void ktile(const kwtile *t, const kpack *p, int step, bool same_d,
                                                               float *ac, float *am) {
  __m512 s1[8];
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) s1[r] = _mm512_setzero_ps();
  for (int s = 0; s < 16; s += step) {
    __m512i raw[8];
    _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) raw[r] = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int k = 0; k < 4 * step; k++) {
      int g = 4 * s + k;
      __m512i codes = _mm512_loadu_si512(p->q[g]);
      _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
        int32_t u4;
        memcpy(&u4, t->u[r] + 4 * g, 4);
        raw[r] = _mm512_dpbusd_epi32(raw[r], _mm512_set1_epi32(u4), codes);
      }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++)
      s1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(raw[r]), _mm512_set1_ps(t->sc[r][s]), s1[r]);
  }
  __m512 da = _mm512_loadu_ps(p->d);
  /* the mins: with one per 32 values (step 2, each twice in mn) a pair
   * of them meets the sums of 32, half the dpwssd */
  __m512i bs[8];
  _Pragma("GCC unroll 8") for (int q = 0; q < 8 / step; q++)
    bs[q] = _mm512_loadu_si512(step == 2 ? (const void *)p->bs32[q] : (const void *)p->bs[q]);
  _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
    __m512i m = _mm512_setzero_si512();
    _Pragma("GCC unroll 8") for (int q = 0; q < 8 / step; q++) {
      uint32_t pair = (uint16_t)t->mn[r][2 * step * q] | (uint32_t)(uint16_t)t->mn[r][2 * step * q + step] << 16;
      m = _mm512_dpwssd_epi32(m, _mm512_set1_epi32((int32_t)pair), bs[q]);
    }
    __m512 dd = _mm512_mul_ps(_mm512_set1_ps(t->d[r]), da), a = _mm512_loadu_ps(ac + 16 * r);
    if (same_d) {
      a = _mm512_fmadd_ps(dd, _mm512_sub_ps(s1[r], _mm512_cvtepi32_ps(m)), a);
    } else {
      a = _mm512_fmadd_ps(dd, s1[r], a);
      __m512 dm = _mm512_mul_ps(_mm512_set1_ps(t->dmin[r]), da);
      _mm512_storeu_ps(am + 16 * r, _mm512_fmadd_ps(dm, _mm512_cvtepi32_ps(m), _mm512_loadu_ps(am + 16 * r)));
    }
    _mm512_storeu_ps(ac + 16 * r, a);
  }
}

/* Weight rows n..n+rows (rows <= 8) against jts tiles of 16 activation
 * rows (kp: jts * nb packs): acc/acc_m get [jts][8][16] floats. */
AVX512 static void kgemm(kunpack_fn unpack, bool same_d, const unsigned char *w, int64_t row_bytes, int64_t bytes,
                         int rows, const kpack *kp, int64_t jts, int64_t nb, float *acc, float *acc_m) {
  kwtile t;
  bool pairs = !same_d && unpack != kunpack_q2_k; /* q4_k, q5_k: one scale per 32 values */
  for (int r = rows; r < 8; r++) {
    memset(t.u[r], 0, sizeof t.u[r]), memset(t.sc[r], 0, sizeof t.sc[r]), memset(t.mn[r], 0, sizeof t.mn[r]);
    t.d[r] = t.dmin[r] = 0.0f;
  }
  memset(acc, 0, sizeof(float) * (size_t)(jts * 128));
  memset(acc_m, 0, sizeof(float) * (size_t)(jts * 128));
  for (int64_t i = 0; i < nb; i++) {
    prefetch_next_rows(w, row_bytes, i, nb);
    for (int r = 0; r < rows; r++) unpack(w + r * row_bytes + i * bytes, &t, r);
    for (int64_t jt = 0; jt < jts; jt++) {
      const kpack *p = &kp[jt * nb + i];
      float *ac = acc + jt * 128, *am = acc_m + jt * 128;
      if (pairs) ktile(&t, p, 2, false, ac, am);
      else if (same_d) ktile(&t, p, 1, true, ac, am);
      else ktile(&t, p, 1, false, ac, am);
    }
  }
}

/* The same GEMM for the 32-value formats: qpack32 holds 16 activation
 * rows' values 4 at a time, their sums and scales; weight values are
 * unsigned (q8_0's signed bytes + 128, an offset of 128 through the
 * activation sums), the offset (q4_0 8, q5_0 16) taken off in integer and
 * the min (q4_1, q5_1) as m * da * sum(y). */
typedef struct qpack32 {
  int8_t q[8][16][4]; /* [values 4g..4g+3][activation row] */
  int32_t sum[16];
  float d[16];
} qpack32;

typedef struct wtile32 {
  uint8_t u[8][32];
  float d[8], m[8];
} wtile32;

static void qpack32_rows(const act_q8_0 *act, int64_t M, int64_t nb, qpack32 *kp) {
  for (int64_t jt = 0; jt * 16 < M; jt++)
    for (int64_t i = 0; i < nb; i++) {
      qpack32 *p = &kp[jt * nb + i];
      memset(p, 0, sizeof *p);
      for (int j = 0; j < 16 && jt * 16 + j < M; j++) {
        const act_q8_0 *a = &act[(jt * 16 + j) * nb + i];
        for (int g = 0; g < 8; g++) memcpy(p->q[g][j], a->qs + 4 * g, 4);
        p->sum[j] = a->sum;
        p->d[j] = a->d;
      }
    }
}

#define DEF_WUNPACK32(T)                                                                             \
  AVX512 static void wunpack32_##T(const unsigned char *w, wtile32 *t, int r) {                      \
    blk32 b = unpack_##T##_avx512(w);                                                                \
    _mm256_storeu_si256((__m256i *)t->u[r], b.u);                                                    \
    t->d[r] = b.d, t->m[r] = b.m;                                                                    \
  }
DEF_WUNPACK32(q4_0)
DEF_WUNPACK32(q4_1)
DEF_WUNPACK32(q5_0)
DEF_WUNPACK32(q5_1)
#undef DEF_WUNPACK32
AVX512 static void wunpack32_q8_0(const unsigned char *w, wtile32 *t, int r) {
  _mm256_storeu_si256((__m256i *)t->u[r],
                      _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(w + 2)), _mm256_set1_epi8((char)0x80)));
  t->d[r] = h2f(w), t->m[r] = 0.0f;
}

typedef void (*wunpack32_fn)(const unsigned char *w, wtile32 *t, int r);

AVX512 static void qgemm32(wunpack32_fn unpack, int off, bool min, const unsigned char *w, int64_t row_bytes,
                           int64_t bytes, int rows, const qpack32 *kp, int64_t jts, int64_t nb, float *acc,
                           float *acc_m) {
  wtile32 t;
  for (int r = rows; r < 8; r++) memset(t.u[r], 0, sizeof t.u[r]), t.d[r] = t.m[r] = 0.0f;
  memset(acc, 0, sizeof(float) * (size_t)(jts * 128));
  memset(acc_m, 0, sizeof(float) * (size_t)(jts * 128));
  for (int64_t i = 0; i < nb; i++) {
    prefetch_next_rows(w, row_bytes, i, nb);
    for (int r = 0; r < rows; r++) unpack(w + r * row_bytes + i * bytes, &t, r);
    for (int64_t jt = 0; jt < jts; jt++) {
      const qpack32 *p = &kp[jt * nb + i];
      float *ac = acc + jt * 128, *am = acc_m + jt * 128;
      __m512i raw[8]; /* unrolled: in registers (as ktile) */
      _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) raw[r] = _mm512_setzero_si512();
      _Pragma("GCC unroll 8") for (int g = 0; g < 8; g++) {
        __m512i codes = _mm512_loadu_si512(p->q[g]);
        _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
          int32_t u4;
          memcpy(&u4, t.u[r] + 4 * g, 4);
          raw[r] = _mm512_dpbusd_epi32(raw[r], _mm512_set1_epi32(u4), codes);
        }
      }
      __m512i sum = _mm512_loadu_si512(p->sum), osum = _mm512_mullo_epi32(sum, _mm512_set1_epi32(off));
      __m512 da = _mm512_loadu_ps(p->d), sumf = _mm512_cvtepi32_ps(sum);
      _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) {
        __m512 dd = _mm512_mul_ps(_mm512_set1_ps(t.d[r]), da);
        _mm512_storeu_ps(ac + 16 * r, _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_sub_epi32(raw[r], osum)),
                                                      _mm512_loadu_ps(ac + 16 * r)));
        if (min)
          _mm512_storeu_ps(am + 16 * r, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(t.m[r]), da), sumf,
                                                        _mm512_loadu_ps(am + 16 * r)));
      }
    }
  }
}

/* ---- AVX-512 one-row kernels of q4_0 and q8_0 ----
 * The 256-bit ones spend 5 port-5 uops a block (nibble insert, scale's
 * f16 insert and broadcast, offset's movd): 4.7 cycles a q4_0 block in L1,
 * the one-row kernel's bound. These take two blocks per 512-bit register
 * and the scales of 16 blocks as one vector (each pair's picked out by a
 * permute), on activations laid out by row (soa32: the values of all
 * blocks, then their scales, then their sums; the bytes of nb act_q8_0,
 * in another order). The weights' offset (q4_0: 8; q8_0: 128, its bytes
 * made unsigned) comes off in float, once per 16 blocks: OFF * the sum
 * of d * da * (sum of the activation block). The four-row kernel does the
 * same float operations per row: the same bits. */
typedef struct soa32 {
  const int8_t *qs;
  const float *d;
  const int32_t *sum;
} soa32;

static inline soa32 soa32_of(const void *act, int64_t nb) {
  const int8_t *qs = act;
  const float *d = (const float *)(qs + 32 * nb);
  return (soa32){qs, d, (const int32_t *)(d + nb)};
}

/* Lane indices of blocks 2p (low 8 lanes) and 2p + 1 (high 8) in the
 * scales dd (0..15) and dd / 16 (16..31): HI picks dd / 16 for lanes 4..7
 * of each block, whose values q4_0 keeps 16 times as large (its high
 * nibbles in place). */
#define PL(p, HI) {2 * p, 2 * p, 2 * p, 2 * p, 2 * p + HI, 2 * p + HI, 2 * p + HI, 2 * p + HI, \
                   2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1 + HI, 2 * p + 1 + HI, 2 * p + 1 + HI, 2 * p + 1 + HI}
static const int32_t pair_lanes_q8_0[8][16] = {PL(0, 0), PL(1, 0), PL(2, 0), PL(3, 0), PL(4, 0), PL(5, 0), PL(6, 0), PL(7, 0)};
static const int32_t pair_lanes_q4_0[8][16] = {PL(0, 16), PL(1, 16), PL(2, 16), PL(3, 16),
                                               PL(4, 16), PL(5, 16), PL(6, 16), PL(7, 16)};
#undef PL

/* The unsigned values of blocks w (low 256 bits, in the activations'
 * order) and w + BYTES (high; with !two w's again, against zero
 * activations). q4_0's high nibbles stay where they are, 16 times their
 * value (no shift on the port that multiplies; the scale of those lanes
 * is d / 16, exact). */
AVX512 static inline __m512i u2_q4_0(const unsigned char *w, bool two) {
  __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(w + 2)));
  if (two) z = _mm512_mask_broadcast_i32x4(z, 0xFF00, _mm_loadu_si128((const __m128i *)(w + 20)));
  const int64_t lo = 0x0F0F0F0F0F0F0F0F, hi = (int64_t)0xF0F0F0F0F0F0F0F0;
  return _mm512_and_si512(z, _mm512_set_epi64(hi, hi, lo, lo, hi, hi, lo, lo));
}
AVX512 static inline __m512i u2_q8_0(const unsigned char *w, bool two) {
  __m512i z = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 2)));
  if (two) z = _mm512_mask_broadcast_i64x4(z, 0xF0, _mm256_loadu_si256((const __m256i *)(w + 36)));
  return _mm512_xor_si512(z, _mm512_set1_epi8((char)0x80));
}

/* The weight scales of blocks 0..g-1 at w (zero past g). */
AVX512 static inline __m512 group_scales(const unsigned char *w, int bytes, int g) {
  /* one gather (16 scalar stores then a vector load stalled on store
   * forwarding: 5.5 cycles a block; GCC's inserts: 15 port-5 uops) */
  __m512i at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                  _mm512_set1_epi32(bytes));
  __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), (__mmask16)((1u << g) - 1), at, w, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

/* One group of g <= 16 blocks of ROWS activation rows (d * da in dd[r]):
 * pair by pair, into acc[r][pair % 2]. */
#define SOA32_PAIRS(T, BYTES, ROWS, g)                                                               \
  for (int p = 0; 2 * p < (g); p++) {                                                                \
    const unsigned char *wp = w + 2 * p * (BYTES);                                                   \
    QD_PREFETCH(wp, 2 * (BYTES), 4096);                                                              \
    bool two = 2 * p + 1 < (g);                                                                      \
    __m512i u = u2_##T(wp, two), lanes = _mm512_loadu_si512(pair_lanes_##T[p]);                      \
    for (int r = 0; r < (ROWS); r++) {                                                               \
      const int8_t *q = a[r].qs + 32 * (i0 + 2 * p);                                                 \
      __m512i y = two ? _mm512_loadu_si512(q) : _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)q)); \
      __m512i P = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);                                 \
      __m512 sc = _mm512_permutex2var_ps(dd[r], lanes, _mm512_mul_ps(dd[r], _mm512_set1_ps(1.0f / 16))); \
      acc[r][p % 2] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(P), sc, acc[r][p % 2]);                    \
    }                                                                                                \
  }

#define DEF_SOA32(T, BYTES, OFF, ROWS, NAME)                                                         \
  AVX512 static inline __attribute__((always_inline)) void NAME##_rows(const unsigned char *w, const soa32 *a, \
                                                                       int64_t nb, float *out) {     \
    __m512 acc[ROWS][2], corr[ROWS], dd[ROWS];                                                       \
    for (int r = 0; r < (ROWS); r++) acc[r][0] = acc[r][1] = corr[r] = _mm512_setzero_ps();          \
    for (int64_t i0 = 0; i0 < nb; i0 += 16, w += 16 * (BYTES)) {                                     \
      int g = nb - i0 < 16 ? (int)(nb - i0) : 16;                                                    \
      __mmask16 m = (__mmask16)((1u << g) - 1);                                                      \
      __m512 dw = g == 16 ? group_scales(w, BYTES, 16) : group_scales(w, BYTES, g);                  \
      for (int r = 0; r < (ROWS); r++) {                                                             \
        dd[r] = _mm512_mul_ps(dw, _mm512_maskz_loadu_ps(m, a[r].d + i0));                            \
        corr[r] = _mm512_fmadd_ps(dd[r], _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, a[r].sum + i0)), corr[r]); \
      }                                                                                              \
      if (g == 16) {                                                                                 \
        _Pragma("GCC unroll 8") SOA32_PAIRS(T, BYTES, ROWS, 16)                                      \
      } else {                                                                                       \
        SOA32_PAIRS(T, BYTES, ROWS, g)                                                               \
      }                                                                                              \
    }                                                                                                \
    for (int r = 0; r < (ROWS); r++)                                                                 \
      out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1])) - (OFF) * _mm512_reduce_add_ps(corr[r]); \
  }

DEF_SOA32(q4_0, 18, 8.0f, 1, q4_0_z)
DEF_SOA32(q8_0, 34, 128.0f, 1, q8_0_z)
DEF_SOA32(q4_0, 18, 8.0f, 4, q4_0_z4)
DEF_SOA32(q8_0, 34, 128.0f, 4, q8_0_z4)
#undef DEF_SOA32
#undef SOA32_PAIRS
#undef QD_PREFETCH

/* One row; four rows, the weights unpacked once, each row's float
 * operations as in the one-row kernel. */
#define DEF_SOA32_DOTS(NAME)                                                                         \
  AVX512 static float dot_##NAME(const unsigned char *w, const void *act, int64_t nb) {             \
    soa32 a = soa32_of(act, nb);                                                                     \
    float out;                                                                                       \
    NAME##_rows(w, &a, nb, &out);                                                                    \
    return out;                                                                                      \
  }                                                                                                  \
  AVX512 static void dot4_##NAME(const unsigned char *w, const void *const *acts, int64_t nb, float *out) { \
    soa32 a[4];                                                                                      \
    for (int r = 0; r < 4; r++) a[r] = soa32_of(acts[r], nb);                                        \
    NAME##4_rows(w, a, nb, out);                                                                     \
  }                                                                                                  \
  AVX512 static void dotw4_##NAME(const unsigned char *w, int64_t row_bytes, const void *act, int64_t nb, \
                                  float *out) {                                                      \
    soa32 a = soa32_of(act, nb);                                                                     \
    for (int r = 0; r < 4; r++) NAME##_rows(w + r * row_bytes, &a, nb, &out[r]);                     \
  }
DEF_SOA32_DOTS(q4_0_z)
DEF_SOA32_DOTS(q8_0_z)
#undef DEF_SOA32_DOTS
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

/* Several activation rows at once (isa_row.rows of them; NULL: one-row
 * calls). */
typedef void (*dotn_fn)(const unsigned char *w, const void *const *acts, int64_t nb, float *out);

/* Four weight rows (row_bytes apart) against one activation row, each
 * output dot's bits (NULL: four dot calls). */
typedef void (*dotw_fn)(const unsigned char *w, int64_t row_bytes, const void *act, int64_t nb, float *out);

/* The formats' kernels: index of each in an isa_row. */
enum { F_Q8_0, F_Q4_0, F_Q4_1, F_Q5_0, F_Q5_1, F_Q2_K, F_Q3_K, F_Q4_K, F_Q5_K, F_Q6_K, N_FMT };

#ifdef QM_X86
/* The avx512-vnni set's GEMM block decoder of a k-quant, and whether its
 * mins share d. */
static kunpack_fn kunpack_of(int fi, bool *same_d) {
  *same_d = fi == F_Q3_K || fi == F_Q6_K;
  switch (fi) {
    case F_Q2_K: return kunpack_q2_k;
    case F_Q3_K: return kunpack_q3_k;
    case F_Q4_K: return kunpack_q4_k;
    case F_Q5_K: return kunpack_q5_k;
    case F_Q6_K: return kunpack_q6_k;
    default: return NULL;
  }
}
#endif

#ifdef QM_X86
/* The avx512-vnni set's GEMM block decoder of a 32-value format, its
 * offset and whether it has a min. */
static wunpack32_fn wunpack32_of(int fi, int *off, bool *min) {
  *off = fi == F_Q8_0 ? 128 : fi == F_Q4_0 ? 8 : fi == F_Q5_0 ? 16 : 0;
  *min = fi == F_Q4_1 || fi == F_Q5_1;
  switch (fi) {
    case F_Q8_0: return wunpack32_q8_0;
    case F_Q4_0: return wunpack32_q4_0;
    case F_Q4_1: return wunpack32_q4_1;
    case F_Q5_0: return wunpack32_q5_0;
    case F_Q5_1: return wunpack32_q5_1;
    default: return NULL;
  }
}
#endif

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
  dotn_fn dotn[N_FMT];
  unsigned char rows[N_FMT]; /* dotn's activation rows */
  bool soa[N_FMT];           /* dot and dotn take soa32 rows */
  dotw_fn dotw[N_FMT];
} isa_row;

#define X86_ROW(NAME, S)                                                                                              \
  {NAME,                                                                                                             \
   {dot_q8_0_##S, dot_q4_0_##S, dot_q4_1_##S, dot_q5_0_##S, dot_q5_1_##S, dot_q2_k_##S, dot_q3_k_##S, dot_q4_k_##S,   \
    dot_q5_k_##S, dot_q6_k_##S},                                                                                     \
   {dot4_q8_0_##S, dot4_q4_0_##S, dot4_q4_1_##S, dot4_q5_0_##S, dot4_q5_1_##S, dot4_q2_k_##S, dot4_q3_k_##S,         \
    dot4_q4_k_##S, dot4_q5_k_##S, dot4_q6_k_##S},                                                    \
   {4, 4, 4, 4, 4, 4, 4, 4, 4, 4},                                                                                   \
   {0},                                                                                                              \
   {NULL}}

static const isa_row isas[] = {
  {"c", {[F_Q8_0] = dot_q8_0_c, [F_Q4_0] = dot_q4_0_c, [F_Q4_K] = dot_q4_k_c, [F_Q6_K] = dot_q6_k_c}, {NULL}, {0}, {0},
   {NULL}},
#ifdef QM_X86
  X86_ROW("avx2", avx2),
  X86_ROW("avx2-vnni", vnni),
  {"avx512-vnni",
   {dot_q8_0_z, dot_q4_0_z, dot_q4_1_avx512, dot_q5_0_avx512, dot_q5_1_avx512, dot_q2_k_avx512,
    dot_q3_k_avx512, dot_q4_k_avx512, dot_q5_k_avx512, dot_q6_k_avx512},
   {dot4_q8_0_z, dot4_q4_0_z, dot4_q4_1_avx512, dot4_q5_0_avx512, dot4_q5_1_avx512, dot8_q2_k_z,
    dot8_q3_k_z, dot8_q4_k_z, dot8_q5_k_z, dot8_q6_k_z},
   {4, 4, 4, 4, 4, 8, 8, 8, 8, 8},
   {[F_Q8_0] = true, [F_Q4_0] = true},
   {[F_Q8_0] = dotw4_q8_0_z, [F_Q4_0] = dotw4_q4_0_z, [F_Q2_K] = dotw4_q2_k_avx512, [F_Q3_K] = dotw4_q3_k_avx512,
    [F_Q4_K] = dotw4_q4_k_avx512, [F_Q5_K] = dotw4_q5_k_avx512, [F_Q6_K] = dotw4_q6_k_avx512}},
#endif
};
enum { N_ISAS = sizeof isas / sizeof isas[0] };

#ifdef QM_X86
/* CPUID and XGETBV directly (clang 14's __builtin_cpu_supports knows
 * neither f16c nor avxvnni). Level 1: AVX2, FMA and F16C with the OS
 * saving the YMM registers; 2: and AVX-VNNI (leaf 7, sub-leaf 1, EAX bit
 * 4); 3: AVX-512 F, BW, VL and VNNI (leaf 7 EBX bits 16, 30, 31, ECX bit
 * 11) with the OS saving the opmask and ZMM registers. */
static bool cpu_has(int level) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  bool fma = c >> 12 & 1, osxsave = c >> 27 & 1, f16c = c >> 29 & 1;
  if (!fma || !osxsave || !f16c) return false;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return false; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b >> 5 & 1)) return false; /* AVX2 */
  if (level == 3)
    return (lo & 0xE0) == 0xE0 && (b >> 16 & 1) && (b >> 30 & 1) && (b >> 31 & 1) && (c >> 11 & 1);
  return level < 2 || (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1));
}
#endif

static bool isa_available(int k) {
#ifdef QM_X86
  if (k >= 1 && !cpu_has(k)) return false;
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

/* One qlinear's work: output features in chunks of a share of what is
 * left (a 2 * parts-th), at least `chunk`. */
typedef struct qjob {
  const ppcc_block_format *f;
  dot_fn dot;
  dotn_fn dotn;
  dotw_fn dotw;
  int rows;
  const unsigned char *w;
  const char *act;
  size_t act_size;
  int64_t M, N, nb, row_bytes, chunk;
  int parts;
  float *y;
  /* the first phase (prep): N counts units of 16 activation rows, each
   * quantized from x (row stride K) and, for whole tiles with the GEMM
   * on, packed into kp */
  bool prep;
  const isa_row *isa;
  bool soa; /* the one- and four-row kernels take soa32 rows */
  const float *x;
  int64_t K;
#ifdef QM_X86
  /* the 512-bit GEMM for the first jts * 16 rows: a k-quant's unpack or a
   * 32-value format's unpack32 (the other NULL) */
  kunpack_fn unpack;
  wunpack32_fn unpack32;
  bool same_d, min;
  int off;
  const void *kp;
  int64_t jts;
#endif
} qjob;

#ifdef QM_X86
/* The GEMM's sums of g tiles ([g][8 weight rows][16 activation rows] in
 * acc and acc_m) to y (row stride N): acc + sign * acc_m, transposed 8
 * outputs of an activation row at a time. */
AVX512 static void store_tiles(const float *acc, const float *acc_m, float sign, int64_t g, int rows, float *y,
                               int64_t N) {
  const __m256i across = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
  for (int64_t jt = 0; jt < g; jt++, acc += 128, acc_m += 128) {
    float t[128];
    for (int r = 0; r < 8; r++)
      _mm512_storeu_ps(t + 16 * r, _mm512_fmadd_ps(_mm512_set1_ps(sign), _mm512_loadu_ps(acc_m + 16 * r),
                                                    _mm512_loadu_ps(acc + 16 * r)));
    for (int c = 0; c < 16; c++) {
      float *yr = y + (jt * 16 + c) * N;
      if (rows == 8) {
        _mm256_storeu_ps(yr, _mm256_i32gather_ps(t + c, across, 4));
      } else {
        for (int r = 0; r < rows; r++) yr[r] = t[16 * r + c];
      }
    }
  }
}

/* The GEMM's share of rows n0..n1: 8 weight rows at a time against up to
 * 8 tiles of 16 activation rows. */
static void run_gemm(const qjob *j, int64_t n0, int64_t n1) {
  float acc[8 * 128], acc_m[8 * 128];
  for (int64_t n = n0; n < n1; n += 8) {
    int rows = n1 - n < 8 ? (int)(n1 - n) : 8;
    const unsigned char *w = j->w + n * j->row_bytes;
    for (int64_t jg = 0; jg < j->jts; jg += 8) {
      int64_t g = j->jts - jg < 8 ? j->jts - jg : 8;
      if (j->unpack)
        kgemm(j->unpack, j->same_d, w, j->row_bytes, j->f->bytes, rows, (const kpack *)j->kp + jg * j->nb, g, j->nb,
              acc, acc_m);
      else
        qgemm32(j->unpack32, j->off, j->min, w, j->row_bytes, j->f->bytes, rows, (const qpack32 *)j->kp + jg * j->nb,
                g, j->nb, acc, acc_m);
      float sign = j->unpack ? -1.0f : 1.0f; /* k-quants take the mins off, q4_1/q5_1 add theirs */
      store_tiles(acc, acc_m, sign, g, rows, j->y + jg * 16 * j->N + n, j->N);
    }
  }
}
#endif

/* Activation rows m0..m1 quantized per block (q8_0 or q8_K). */
static void quantize_rows(const qjob *j, int64_t m0, int64_t m1) {
  for (int64_t m = m0; m < m1; m++) {
    const float *xm = j->x + m * j->K;
    void *am = (char *)j->act + m * j->nb * (int64_t)j->act_size;
#ifdef QM_X86
    if (j->isa != &isas[0]) {
      if (j->soa && !(j->unpack32 && m < j->jts * 16)) quantize_q8_0_soa_avx2(xm, j->nb, am); /* not the GEMM's */
      else if (j->f->block == 32) quantize_q8_0_avx2(xm, j->nb, am);
      else quantize_q8_k_avx2(xm, j->nb, am);
      continue;
    }
#endif
    if (j->f->block == 32) quantize_q8_0(xm, j->nb, am);
    else quantize_q8_k(xm, j->nb, am);
  }
}

/* The prep phase's units u0..u1 (16 activation rows each). */
static void prep_units(const qjob *j, int64_t u0, int64_t u1) {
  for (int64_t u = u0; u < u1; u++) {
    int64_t m0 = 16 * u, m1 = m0 + 16 < j->M ? m0 + 16 : j->M;
    quantize_rows(j, m0, m1);
#ifdef QM_X86
    if (u < j->jts && j->unpack)
      kpack_rows((const act_q8_k *)j->act + m0 * j->nb, 16, j->nb, (kpack *)j->kp + u * j->nb);
    if (u < j->jts && j->unpack32)
      qpack32_rows((const act_q8_0 *)j->act + m0 * j->nb, 16, j->nb, (qpack32 *)j->kp + u * j->nb);
#endif
  }
}

static void run_rows(const qjob *j, int64_t n0, int64_t n1) {
  float tmp[256];
  int64_t m0 = 0;
  if (j->prep) {
    prep_units(j, n0, n1);
    return;
  }
#ifdef QM_X86
  if (j->unpack || j->unpack32) {
    run_gemm(j, n0, n1);
    m0 = j->jts * 16;
  }
#endif
  int64_t n = n0;
  if (j->dotw && j->M - m0 == 1) /* one activation row left: four weight rows a call */
    for (; n + 4 <= n1; n += 4) {
      float out[4];
      j->dotw(j->w + n * j->row_bytes, j->row_bytes, j->act + m0 * j->nb * j->act_size, j->nb, out);
      memcpy(j->y + m0 * j->N + n, out, sizeof out);
    }
  for (; n < n1; n++) {
    const unsigned char *row = j->w + n * j->row_bytes;
    int64_t m = m0;
    for (; j->dotn && m + j->rows <= j->M; m += j->rows) {
      const void *a[8];
      float out[8];
      for (int r = 0; r < j->rows; r++) a[r] = j->act + (m + r) * j->nb * j->act_size;
      j->dotn(row, a, j->nb, out);
      for (int r = 0; r < j->rows; r++) j->y[(m + r) * j->N + n] = out[r];
    }
    for (; m < j->M; m++) {
      const void *a = j->act + m * j->nb * j->act_size;
      j->y[m * j->N + n] = j->dot ? j->dot(row, a, j->nb) : dot_decoded(j->f, row, a, j->nb, tmp);
    }
  }
}

/* The threads: the kernels' pool (thread_pool.c), each part taking
 * chunks from one counter, so a part the OS delays leaves its chunks to
 * the others. (A pool of its own spun beside that pool's workers: with
 * both spinning between a decode step's products, more threads than
 * cores.) */
typedef struct qrun {
  const qjob *j;
  atomic_int_fast64_t next; /* the next feature */
} qrun;

/* Big chunks first, small ones last, so the threads finish together. */
static void take_chunks(void *arg, int part, int parts) {
  (void)part, (void)parts;
  qrun *q = arg;
  const qjob *j = q->j;
  int_fast64_t n0 = atomic_load(&q->next), size;
  for (;;) {
    do {
      if (n0 >= j->N) return;
      size = (j->N - n0) / (2 * j->parts);
      if (size < j->chunk) size = j->chunk;
      if (!j->prep) size = (size + 7) / 8 * 8; /* whole GEMM tiles */
    } while (!atomic_compare_exchange_weak(&q->next, &n0, n0 + size));
    run_rows(j, n0, n0 + size < j->N ? n0 + size : j->N);
    n0 = atomic_load(&q->next);
  }
}

/* Runs j on the caller and up to parts - 1 of the pool's workers. */
static void run_parallel(const qjob *j, int parts) {
  if (parts < 2) {
    run_rows(j, 0, j->N);
    return;
  }
  qrun q = {.j = j};
  atomic_init(&q.next, 0);
  rt_parallel_parts(parts, take_chunks, &q);
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
  const isa_row *isa = current_isa();
  int nt = M * N * K > 65536 && N >= 2 * rt_kernel_threads() ? rt_kernel_threads() : 1;
  /* the last chunks: 4 features for prefill, 16 for decode */
  int64_t chunk = M >= 4 ? 4 : 16;
  qjob j = {.f = f, .dot = isa->dot[fi], .dotn = isa->dotn[fi], .dotw = isa->dotw[fi], .rows = isa->rows[fi], .w = w,
            .act = act, .act_size = act_size, .M = M, .N = N, .nb = nb, .row_bytes = nb * f->bytes, .chunk = chunk, .parts = nt,
            .y = y, .isa = isa, .soa = isa->soa[fi], .x = x, .K = K};
#ifdef QM_X86
  void *kp = NULL;
  if (isa == &isas[N_ISAS - 1] && M >= 16 && !rt_row_invariant_matmul()) {
    j.unpack = kunpack_of(fi, &j.same_d);
    j.unpack32 = wunpack32_of(fi, &j.off, &j.min);
    j.jts = M / 16;
    size_t pack = j.unpack ? sizeof(kpack) : sizeof(qpack32);
    if ((j.unpack || j.unpack32) && !(kp = rt_reuse_alloc(j.jts * nb * (int64_t)pack))) {
      rt_reuse_free(act);
      return false;
    }
    j.kp = kp;
  }
#endif
  /* first the activations, quantized (and packed for the GEMM) by the
   * same threads 16 rows at a time, then the product */
  qjob prep = j;
  prep.prep = true, prep.N = (M + 15) / 16, prep.chunk = 1;
  if (M >= 32 && nt > 1) run_parallel(&prep, nt);
  else prep_units(&prep, 0, prep.N);
  run_parallel(&j, nt);
#ifdef QM_X86
  if (kp) rt_reuse_free(kp);
#endif
  rt_reuse_free(act);
  return true;
}
bool ppcc_rt_qrows_f32(ppcc_dtype wt, const void *table, int64_t row, int64_t cols, float *out) {
  const ppcc_block_format *f = ppcc_dtype_blocks(wt);
  if (!f || cols % f->block != 0) return false;
  int64_t nb = cols / f->block;
  return ppcc_block_decode(f, (const unsigned char *)table + row * nb * f->bytes, nb, out) < 0;
}
