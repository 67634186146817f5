/* The x86 integer kernels of quant_matmul.c, written once and included
 * once per instruction set (AVX2; AVX2 with AVX-VNNI) with these macros:
 *   QD_ATTR        the functions' target attribute
 *   QD(name)       the name with the set's suffix
 *   QD_DOTU(u, y)  32 unsigned bytes u times 32 signed bytes y: 8 int32 sums
 *   QD_KACC(acc, s, p)  acc + 16 int16 p times 16 int16 s, pairwise (int32)
 * The four-row (prefill) kernels (and quant_matmul.c's 512-bit eight-row
 * ones) decode a weight block once and take it through each row; every row gets the same integer sums and the same
 * float operations as in the one-row (decode) kernel: the same bits
 * whatever the row count.
 * Needs act_q8_0, act_q8_k, blk32, k_scale_shuffle, h2f, hsum8 (simd_x86.h) and
 * QD_PREFETCH above its #include in quant_matmul.c. */

/* the AVX-512 set keeps its own 512-bit k-quant kernels (quant_matmul.c) */
#define QD_UNUSED __attribute__((unused))

/* ---- 32-value blocks: w = d * (u - off) (+ m), u unsigned, or q8_0's signed bytes ---- */

/* One row: p = sum u*y, less off * sum(y) in integer, times d * da; the
 * min (q4_1, q5_1) as m * da * sum(y). */
QD_ATTR static inline __attribute__((always_inline)) void QD(row32)(const blk32 *b, const act_q8_0 *a, int off,
                                                                    bool min, __m256 *acc, __m128 *acc_m) {
  __m256i p = QD_DOTU(b->u, _mm256_loadu_si256((const __m256i *)a->qs));
  if (off) p = _mm256_sub_epi32(p, _mm256_castsi128_si256(_mm_cvtsi32_si128(off * a->sum)));
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(b->d * a->d), _mm256_cvtepi32_ps(p), *acc);
  if (min) *acc_m = _mm_fmadd_ss(_mm_set_ss(b->m * a->d), _mm_set_ss((float)a->sum), *acc_m);
}

/* q8_0: signed weights, so the sign moves onto the activations. */
QD_ATTR static inline __attribute__((always_inline)) void QD(row_q8_0)(const blk32 *b, const act_q8_0 *a,
                                                                       __m256 *acc) {
  __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)a->qs), b->s);
  __m256i p = QD_DOTU(b->u, sy);
  *acc = _mm256_fmadd_ps(_mm256_set1_ps(b->d * a->d), _mm256_cvtepi32_ps(p), *acc);
}

/* Nibbles of 16 bytes: low nibbles are values 0..15, high 16..31. */
QD_ATTR static inline __m256i QD(nibbles32)(const unsigned char *q) {
  __m128i t = _mm_loadu_si128((const __m128i *)q);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0xF));
}

/* 16 at each byte j whose bit j of the 32 bits at p is set. */
QD_ATTR static inline __m256i QD(bits32)(const unsigned char *p) {
  uint32_t h;
  memcpy(&h, p, 4);
  const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread); /* byte j holds byte j/8 of h */
  v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(v, _mm256_set1_epi8(16));
}

QD_ATTR static inline blk32 QD(unpack_q8_0)(const unsigned char *w) {
  __m256i x = _mm256_loadu_si256((const __m256i *)(w + 2));
  return (blk32){_mm256_sign_epi8(x, x), x, h2f(w), 0.0f};
}
QD_ATTR static inline blk32 QD(unpack_q4_0)(const unsigned char *w) {
  return (blk32){QD(nibbles32)(w + 2), _mm256_setzero_si256(), h2f(w), 0.0f};
}
QD_ATTR static inline blk32 QD(unpack_q4_1)(const unsigned char *w) {
  return (blk32){QD(nibbles32)(w + 4), _mm256_setzero_si256(), h2f(w), h2f(w + 2)};
}
QD_ATTR static inline blk32 QD(unpack_q5_0)(const unsigned char *w) {
  return (blk32){_mm256_or_si256(QD(nibbles32)(w + 6), QD(bits32)(w + 2)), _mm256_setzero_si256(), h2f(w), 0.0f};
}
QD_ATTR static inline blk32 QD(unpack_q5_1)(const unsigned char *w) {
  return (blk32){_mm256_or_si256(QD(nibbles32)(w + 8), QD(bits32)(w + 4)), _mm256_setzero_si256(), h2f(w), h2f(w + 2)};
}

/* One row and four rows of a 32-value format. Even and odd blocks go to
 * two accumulators: with one, each block's fma waited for the last one's
 * (4 cycles a block, the bound of the one-row kernel in L2). The four-row
 * kernel keeps the same two per row: the same bits. */
#define QD_DEF32(T, BYTES, ROW)                                                                      \
  QD_ATTR QD_UNUSED static float QD(dot_##T)(const unsigned char *w, const void *act, int64_t nb) { \
    const act_q8_0 *a = act;                                                                         \
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                                      \
    __m128 acc_m[2] = {_mm_setzero_ps(), _mm_setzero_ps()};                                          \
    int64_t i = 0;                                                                                   \
    for (; i + 2 <= nb; i += 2, w += 2 * (BYTES)) {                                                  \
      QD_PREFETCH(w, 2 * (BYTES), 4096);                                                                   \
      blk32 b0 = QD(unpack_##T)(w), b1 = QD(unpack_##T)(w + (BYTES));                                \
      ROW(&b0, &a[i], &acc[0], &acc_m[0]);                                                           \
      ROW(&b1, &a[i + 1], &acc[1], &acc_m[1]);                                                       \
    }                                                                                                \
    if (i < nb) {                                                                                    \
      blk32 b0 = QD(unpack_##T)(w);                                                                  \
      ROW(&b0, &a[i], &acc[0], &acc_m[0]);                                                           \
    }                                                                                                \
    return hsum8(_mm256_add_ps(acc[0], acc[1])) + _mm_cvtss_f32(_mm_add_ss(acc_m[0], acc_m[1]));     \
  }                                                                                                  \
  QD_ATTR QD_UNUSED static void QD(dot4_##T)(const unsigned char *w, const void *const *acts, int64_t nb, float *out) { \
    const act_q8_0 *a[4] = {acts[0], acts[1], acts[2], acts[3]};                                     \
    __m256 acc[4][2];                                                                                \
    __m128 acc_m[4][2];                                                                              \
    for (int r = 0; r < 4; r++)                                                                      \
      for (int e = 0; e < 2; e++) acc[r][e] = _mm256_setzero_ps(), acc_m[r][e] = _mm_setzero_ps();   \
    for (int64_t i = 0; i < nb; i++, w += BYTES) {                                                   \
      blk32 b = QD(unpack_##T)(w);                                                                   \
      for (int r = 0; r < 4; r++) ROW(&b, &a[r][i], &acc[r][i % 2], &acc_m[r][i % 2]);               \
    }                                                                                                \
    for (int r = 0; r < 4; r++)                                                                      \
      out[r] = hsum8(_mm256_add_ps(acc[r][0], acc[r][1])) + _mm_cvtss_f32(_mm_add_ss(acc_m[r][0], acc_m[r][1])); \
  }

#define QD_ROW_Q8_0(b, a, acc, acc_m) QD(row_q8_0)(b, a, acc)
#define QD_ROW_Q4_0(b, a, acc, acc_m) QD(row32)(b, a, 8, false, acc, acc_m)
#define QD_ROW_Q5_0(b, a, acc, acc_m) QD(row32)(b, a, 16, false, acc, acc_m)
#define QD_ROW_MIN(b, a, acc, acc_m) QD(row32)(b, a, 0, true, acc, acc_m)
QD_DEF32(q8_0, 34, QD_ROW_Q8_0)
QD_DEF32(q4_0, 18, QD_ROW_Q4_0)
QD_DEF32(q4_1, 20, QD_ROW_MIN)
QD_DEF32(q5_0, 22, QD_ROW_Q5_0)
QD_DEF32(q5_1, 24, QD_ROW_MIN)

/* ---- 256-value k-quants: w = d * s * u - dmin * mn per 16 values, u unsigned ---- */

/* A block's scales: each 16-value sub-block's int16 scale, sub-blocks
 * 0..7 in both halves of lo2 and 8..15 in both halves of hi2; mn the min
 * of each 16 (with dmin; with d when the format's min shares it). */
typedef struct QD(khead) {
  __m256i lo2, hi2, mn;
  float d, dmin;
} QD(khead);

QD_ATTR static inline QD(khead) QD(khead_of)(__m128i lo, __m128i hi, __m256i mn, float d, float dmin) {
  return (QD(khead)){_mm256_set_m128i(lo, lo), _mm256_set_m128i(hi, hi), mn, d, dmin};
}

/* The scale vector of values 32k..32k+31: sub-block 2k's scale in the low
 * half, 2k + 1's in the high half. */
QD_ATTR static inline __m256i QD(kscale)(const QD(khead) *h, int k) {
  return _mm256_shuffle_epi8(k < 4 ? h->lo2 : h->hi2, _mm256_loadu_si256((const __m256i *)k_scale_shuffle[k % 4]));
}

/* q4_k / q5_k: 8 six-bit scales and mins per 32 values (12 packed bytes),
 * each given to both of its 16-value halves. */
QD_ATTR static inline QD(khead) QD(head_k4)(const unsigned char *w) {
  /* the 12 bytes as 32-bit words a0 a1 a2 (bytes 16..19 unused); lanes
   * a0 & m6 (scales 0-3), (a2 & m4) | ((a0 >> 6) & m2) << 4 (scales 4-7),
   * a1 & m6 (mins 0-3), ((a2 >> 4) & m4) | ((a1 >> 6) & m2) << 4 (mins
   * 4-7), made in vector lanes (5% less CPU time per q4_k/q5_k row than
   * the scalar form) */
  __m128i a = _mm_loadu_si128((const __m128i *)(w + 4));
  const __m128i m6 = _mm_set1_epi32(0x3F3F3F3F), m4 = _mm_set1_epi32(0x0F0F0F0F), m2 = _mm_set1_epi32(0x03030303);
  __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(a, _MM_SHUFFLE(2, 1, 2, 0)), _mm_set_epi32(4, 0, 0, 0));
  low = _mm_and_si128(low, _mm_blend_epi32(m6, m4, 0xA));
  __m128i high = _mm_srli_epi32(_mm_shuffle_epi32(a, _MM_SHUFFLE(1, 1, 0, 0)), 6);
  high = _mm_slli_epi32(_mm_and_si128(high, _mm_blend_epi32(_mm_setzero_si128(), m2, 0xA)), 4);
  __m128i sm = _mm_or_si128(low, high);
  __m128i s2 = _mm_unpacklo_epi8(sm, sm); /* sc0 sc0 sc1 sc1 ... */
  return QD(khead_of)(_mm_cvtepu8_epi16(s2), _mm_cvtepu8_epi16(_mm_srli_si128(s2, 8)),
                      _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)), h2f(w), h2f(w + 2));
}
#define QD_HEAD_Q4_K QD(head_k4)
#define QD_HEAD_Q5_K QD(head_k4)

QD_ATTR static inline __m256i QD(u_q4_k)(const unsigned char *w, int k) {
  __m256i q = _mm256_loadu_si256((const __m256i *)(w + 16 + 32 * (k / 2)));
  return _mm256_and_si256(k % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0xF));
}

QD_ATTR static inline __m256i QD(u_q5_k)(const unsigned char *w, int k) {
  __m256i q = _mm256_loadu_si256((const __m256i *)(w + 48 + 32 * (k / 2)));
  __m256i hb = _mm256_loadu_si256((const __m256i *)(w + 16));
  __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, k), _mm256_set1_epi8(1)), 4);
  return _mm256_or_si256(_mm256_and_si256(k % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0xF)), high);
}

/* q6_k: u = 6 bits (0..63), w = d * sc * (u - 32): the min is 32 * sc
 * with the same d. */
QD_ATTR static inline QD(khead) QD(head_q6_k)(const unsigned char *w) {
  __m128i sc = _mm_loadu_si128((const __m128i *)(w + 192));
  __m128i lo = _mm_cvtepi8_epi16(sc), hi = _mm_cvtepi8_epi16(_mm_srli_si128(sc, 8));
  float d = h2f(w + 208);
  return QD(khead_of)(lo, hi, _mm256_slli_epi16(_mm256_set_m128i(hi, lo), 5), d, d);
}
#define QD_HEAD_Q6_K QD(head_q6_k)

QD_ATTR static inline __m256i QD(u_q6_k)(const unsigned char *w, int k) {
  int h = k / 4, r = k % 4;
  __m256i q = _mm256_loadu_si256((const __m256i *)(w + 64 * h + 32 * (r % 2)));
  __m256i hb = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * h));
  __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * r), _mm256_set1_epi8(3)), 4);
  return _mm256_or_si256(_mm256_and_si256(r / 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0xF)), high);
}

/* q3_k: u = 2 low bits | high-mask bit << 2 (0..7), w = d * sc * (u - 4)
 * with sc = 6-bit scale - 32: the min is 4 * sc with the same d. */
QD_ATTR static inline QD(khead) QD(head_q3_k)(const unsigned char *w) {
  uint32_t a[3];
  memcpy(a, w + 96, 12); /* 16 scales: low 4 bits in bytes 0..7 (two per byte), high 2 in bytes 8..11 */
  const uint32_t m4 = 0x0F0F0F0F, m2 = 0x03030303;
  __m128i sc = _mm_set_epi32((int)(((a[1] >> 4) & m4) | ((a[2] >> 6) & m2) << 4),
                             (int)(((a[0] >> 4) & m4) | ((a[2] >> 4) & m2) << 4),
                             (int)((a[1] & m4) | ((a[2] >> 2) & m2) << 4), (int)((a[0] & m4) | (a[2] & m2) << 4));
  sc = _mm_sub_epi8(sc, _mm_set1_epi8(32));
  __m128i lo = _mm_cvtepi8_epi16(sc), hi = _mm_cvtepi8_epi16(_mm_srli_si128(sc, 8));
  float d = h2f(w + 108);
  return QD(khead_of)(lo, hi, _mm256_slli_epi16(_mm256_set_m128i(hi, lo), 2), d, d);
}
#define QD_HEAD_Q3_K QD(head_q3_k)

QD_ATTR static inline __m256i QD(u_q3_k)(const unsigned char *w, int k) {
  __m256i q = _mm256_loadu_si256((const __m256i *)(w + 32 + 32 * (k / 4)));
  __m256i hm = _mm256_loadu_si256((const __m256i *)w);
  __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, k), _mm256_set1_epi8(1)), 2);
  return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * (k % 4)), _mm256_set1_epi8(3)), high);
}

/* q2_k: u = 2 bits, per 16 values a 4-bit scale and a 4-bit min. */
QD_ATTR static inline QD(khead) QD(head_q2_k)(const unsigned char *w) {
  __m128i sm = _mm_loadu_si128((const __m128i *)w), m4 = _mm_set1_epi8(0xF);
  __m128i sc = _mm_and_si128(sm, m4);
  return QD(khead_of)(_mm_cvtepu8_epi16(sc), _mm_cvtepu8_epi16(_mm_srli_si128(sc, 8)),
                      _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4)), h2f(w + 80), h2f(w + 82));
}
#define QD_HEAD_Q2_K QD(head_q2_k)

QD_ATTR static inline __m256i QD(u_q2_k)(const unsigned char *w, int k) {
  __m256i q = _mm256_loadu_si256((const __m256i *)(w + 16 + 32 * (k / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (k % 4)), _mm256_set1_epi8(3));
}

/* A row's block total: sumi (the sum of s * u * y) less the mins through
 * the activation's sums of 16, in integer when they share d. */
QD_ATTR static inline __attribute__((always_inline)) void QD(finish256)(const QD(khead) *h, const act_q8_k *a,
                                                                        __m256i sumi, bool same_d, __m256 *acc,
                                                                        __m256 *acc_m) {
  __m256i mins = _mm256_madd_epi16(h->mn, _mm256_loadu_si256((const __m256i *)a->bsums));
  if (same_d) {
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(h->d * a->d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, mins)), *acc);
  } else {
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(h->d * a->d), _mm256_cvtepi32_ps(sumi), *acc);
    *acc_m = _mm256_fmadd_ps(_mm256_set1_ps(h->dmin * a->d), _mm256_cvtepi32_ps(mins), *acc_m);
  }
}

/* One row: values and scales made per 32 as they are used. Four rows:
 * made once per block, then each row's sums (integer sums are exact, so
 * the same bits as one row). Two integer accumulators halve the chain of
 * dpwssd latencies. */
#define QD_DEF256(T, HEAD, BYTES, SAME_D)                                                            \
  QD_ATTR static inline __attribute__((always_inline)) float QD(row256_##T)(const unsigned char *w,  \
                                                                          const act_q8_k *a, int64_t nb) { \
    __m256 acc = _mm256_setzero_ps(), acc_m = _mm256_setzero_ps();                                   \
    for (int64_t i = 0; i < nb; i++, w += BYTES) {                                                   \
      QD_PREFETCH(w, BYTES, 2048);                                                                   \
      QD(khead) h = HEAD(w);                                                                         \
      __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};                            \
      _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {                                          \
        __m256i y = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * k));                         \
        sumi[k % 2] = QD_KACC(sumi[k % 2], QD(kscale)(&h, k), _mm256_maddubs_epi16(QD(u_##T)(w, k), y)); \
      }                                                                                              \
      QD(finish256)(&h, &a[i], _mm256_add_epi32(sumi[0], sumi[1]), SAME_D, &acc, &acc_m);            \
    }                                                                                                \
    return hsum8(acc) - hsum8(acc_m);                                                                \
  }                                                                                                  \
  QD_ATTR QD_UNUSED static float QD(dot_##T)(const unsigned char *w, const void *act, int64_t nb) { \
    return QD(row256_##T)(w, act, nb);                                                               \
  }                                                                                                  \
  /* Four weight rows (row_bytes apart) against one activation row, one \
   * after the other, each with dot's operations (its bits): one call and \
   * one reduction setup per four rows of 4 blocks (1024 values). Rows  \
   * interleaved block by block were faster in L2 but not from memory. */ \
  QD_ATTR QD_UNUSED static void QD(dotw4_##T)(const unsigned char *w, int64_t row_bytes, const void *act, \
                                               int64_t nb, float *out) {                             \
    for (int r = 0; r < 4; r++) out[r] = QD(row256_##T)(w + r * row_bytes, act, nb);                 \
  }                                                                                                  \
  QD_ATTR QD_UNUSED static void QD(dot4_##T)(const unsigned char *w, const void *const *acts, int64_t nb, float *out) { \
    const act_q8_k *a[4] = {acts[0], acts[1], acts[2], acts[3]};                                     \
    __m256 acc[4], acc_m[4];                                                                         \
    for (int r = 0; r < 4; r++) acc[r] = acc_m[r] = _mm256_setzero_ps();                             \
    for (int64_t i = 0; i < nb; i++, w += BYTES) {                                                   \
      QD(khead) h = HEAD(w);                                                                         \
      __m256i u[8], s[8];                                                                            \
      _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) u[k] = QD(u_##T)(w, k), s[k] = QD(kscale)(&h, k); \
      for (int r = 0; r < 4; r++) {                                                                  \
        __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};                          \
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) {                                        \
          __m256i y = _mm256_loadu_si256((const __m256i *)(a[r][i].qs + 32 * k));                    \
          sumi[k % 2] = QD_KACC(sumi[k % 2], s[k], _mm256_maddubs_epi16(u[k], y));                   \
        }                                                                                            \
        QD(finish256)(&h, &a[r][i], _mm256_add_epi32(sumi[0], sumi[1]), SAME_D, &acc[r], &acc_m[r]); \
      }                                                                                              \
    }                                                                                                \
    for (int r = 0; r < 4; r++) out[r] = hsum8(acc[r]) - hsum8(acc_m[r]);                            \
  }

QD_DEF256(q2_k, QD_HEAD_Q2_K, 84, false)
QD_DEF256(q3_k, QD_HEAD_Q3_K, 110, true)
QD_DEF256(q4_k, QD_HEAD_Q4_K, 144, false)
QD_DEF256(q5_k, QD_HEAD_Q5_K, 176, false)
QD_DEF256(q6_k, QD_HEAD_Q6_K, 210, true)

#undef QD_UNUSED
#undef QD_DEF32
#undef QD_DEF256
#undef QD_ROW_Q8_0
#undef QD_ROW_Q4_0
#undef QD_ROW_Q5_0
#undef QD_ROW_MIN
#undef QD_HEAD_Q2_K
#undef QD_HEAD_Q3_K
#undef QD_HEAD_Q4_K
#undef QD_HEAD_Q5_K
#undef QD_HEAD_Q6_K
