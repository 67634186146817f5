/* Block formats (see include/ppcc/quant.h): the one table and the decoders.
 *
 * Layouts (ggml's block structs, little-endian; d, m, dmin are f16):
 *   q8_0  32: d, 32 x i8                          y = d * q
 *   q4_0  32: d, 16 nibble bytes                  y = d * (q - 8)
 *   q4_1  32: d, m, 16 nibble bytes               y = d * q + m
 *   q5_0  32: d, u32 high bits, 16 nibble bytes   y = d * (q - 16)
 *   q5_1  32: d, m, u32 high bits, 16 bytes       y = d * q + m
 *         (nibble bytes: low nibbles are values 0..15, high 16..31)
 *   q2_k 256: 16 scale bytes (low 4 bits scale, high 4 min), 64 bytes of
 *             2-bit q, d, dmin                    y = d*sc*q - dmin*m per 16
 *   q3_k 256: 32 bytes high-bit mask, 64 bytes 2-bit q, 12 bytes of
 *             6-bit scales, d                     y = d*(sc-32)*(q - 4*!hbit)
 *   q4_k 256: d, dmin, 12 bytes of 6-bit scales/mins, 128 nibble bytes
 *                                                 y = d*sc*q - dmin*m per 32
 *   q5_k 256: d, dmin, 12 scale bytes, 32 bytes high bits, 128 nibble bytes
 *   q6_k 256: 128 bytes low 4 bits, 64 bytes high 2 bits, 16 x i8 scales, d
 *                                                 y = d*sc*(q - 32) per 16
 * The float operations follow gguf-py's quants.py order (scale products
 * first, then times q, then the min), so results agree bit for bit. */
#include "ppcc/quant.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

float ppcc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = (float)mant * (1.0f / 16777216.0f); /* subnormal: mant * 2^-24 */
    return sign ? -f : f;
  }
  uint32_t x = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  memcpy(&f, &x, 4);
  return f;
}

float ppcc_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t u16_at(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static float f16_at(const unsigned char *p) { return ppcc_f16_to_f32(u16_at(p)); }
static uint32_t u32_at(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void dec_f32(const unsigned char *b, float *y) { memcpy(y, b, 4); }
static void dec_f16(const unsigned char *b, float *y) { *y = f16_at(b); }
static void dec_bf16(const unsigned char *b, float *y) { *y = ppcc_bf16_to_f32(u16_at(b)); }

static void dec_q8_0(const unsigned char *b, float *y) {
  float d = f16_at(b);
  for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* The 32 4-bit values of a 16-byte nibble array (low nibbles first). */
static void nibbles32(const unsigned char *qs, int *q) {
  for (int j = 0; j < 16; j++) {
    q[j] = qs[j] & 0xF;
    q[j + 16] = qs[j] >> 4;
  }
}

static void dec_q4_0(const unsigned char *b, float *y) {
  int q[32];
  float d = f16_at(b);
  nibbles32(b + 2, q);
  for (int j = 0; j < 32; j++) y[j] = d * (float)(q[j] - 8);
}

static void dec_q4_1(const unsigned char *b, float *y) {
  int q[32];
  float d = f16_at(b), m = f16_at(b + 2);
  nibbles32(b + 4, q);
  for (int j = 0; j < 32; j++) y[j] = d * (float)q[j] + m;
}

/* 5-bit values: nibbles plus bit j of the u32 at hb. */
static void fives32(const unsigned char *hb, const unsigned char *qs, int *q) {
  uint32_t h = u32_at(hb);
  nibbles32(qs, q);
  for (int j = 0; j < 32; j++) q[j] |= (int)((h >> j) & 1) << 4;
}

static void dec_q5_0(const unsigned char *b, float *y) {
  int q[32];
  float d = f16_at(b);
  fives32(b + 2, b + 6, q);
  for (int j = 0; j < 32; j++) y[j] = d * (float)(q[j] - 16);
}

static void dec_q5_1(const unsigned char *b, float *y) {
  int q[32];
  float d = f16_at(b), m = f16_at(b + 2);
  fives32(b + 4, b + 8, q);
  for (int j = 0; j < 32; j++) y[j] = d * (float)q[j] + m;
}

static void dec_q2_k(const unsigned char *b, float *y) {
  const unsigned char *scales = b, *qs = b + 16;
  float d = f16_at(b + 80), dmin = f16_at(b + 82);
  for (int i = 0; i < 256; i++) { /* value i: byte 32*(i/128) + i%32, shift 2*((i/32)%4) */
    int q = (qs[32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3, s = i / 16;
    float dl = d * (float)(scales[s] & 0xF), ml = dmin * (float)(scales[s] >> 4);
    y[i] = dl * (float)q - ml;
  }
}

static void dec_q3_k(const unsigned char *b, float *y) {
  const unsigned char *hmask = b, *qs = b + 32, *sc = b + 96;
  float d = f16_at(b + 108);
  float dl[16];
  for (int s = 0; s < 16; s++) {
    int lo = (s < 8 ? sc[s] : sc[s - 8] >> 4) & 0xF, hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    dl[s] = d * (float)((lo | hi << 4) - 32);
  }
  for (int i = 0; i < 256; i++) {
    int low = (qs[32 * (i / 128) + i % 32] >> (2 * ((i / 32) % 4))) & 3;
    int hbit = (hmask[i % 32] >> (i / 32)) & 1;
    y[i] = dl[i / 16] * (float)(low - ((hbit ^ 1) << 2));
  }
}

/* Scale and min of sub-block j (0..7) from q4_k/q5_k's 12 packed bytes. */
static void scale_min_k4(int j, const unsigned char *q, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* q4_k and q5_k: 8 sub-blocks of 32; high bits (q5_k) from bit s of qh. */
static void dec_k_nibbles(const unsigned char *b, const unsigned char *qh, const unsigned char *qs, float *y) {
  float d = f16_at(b), dmin = f16_at(b + 2);
  for (int s = 0; s < 8; s++) {
    int sc, m;
    scale_min_k4(s, b + 4, &sc, &m);
    float ds = d * (float)sc, dm = dmin * (float)m;
    for (int l = 0; l < 32; l++) {
      int q = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
      if (qh) q |= ((qh[l] >> s) & 1) << 4;
      y[32 * s + l] = ds * (float)q - dm;
    }
  }
}

static void dec_q4_k(const unsigned char *b, float *y) { dec_k_nibbles(b, NULL, b + 16, y); }
static void dec_q5_k(const unsigned char *b, float *y) { dec_k_nibbles(b, b + 16, b + 48, y); }

static void dec_q6_k(const unsigned char *b, float *y) {
  const unsigned char *ql = b, *qh = b + 128;
  const int8_t *sc = (const int8_t *)(b + 192);
  float d = f16_at(b + 208);
  for (int i = 0; i < 256; i++) { /* half h = i/128, quarter r = (i%128)/32 */
    int h = i / 128, r = (i % 128) / 32, l = i % 32;
    int low = (ql[64 * h + 32 * (r % 2) + l] >> (4 * (r / 2))) & 0xF;
    int high = (qh[32 * h + l] >> (2 * r)) & 3;
    y[i] = d * (float)sc[i / 16] * (float)((low | high << 4) - 32);
  }
}

static const ppcc_block_format formats[] = {
  {"f32", "F32", 0, 1, 4, {-1}, dec_f32},
  {"f16", "F16", 1, 1, 2, {-1}, dec_f16},
  {"bf16", "BF16", 30, 1, 2, {-1}, dec_bf16},
  {"q8_0", "Q8_0", 8, 32, 34, {0, -1}, dec_q8_0},
  {"q4_0", "Q4_0", 2, 32, 18, {0, -1}, dec_q4_0},
  {"q4_1", "Q4_1", 3, 32, 20, {0, 2, -1}, dec_q4_1},
  {"q5_0", "Q5_0", 6, 32, 22, {0, -1}, dec_q5_0},
  {"q5_1", "Q5_1", 7, 32, 24, {0, 2, -1}, dec_q5_1},
  {"q2_k", "Q2_K", 10, 256, 84, {80, 82, -1}, dec_q2_k},
  {"q3_k", "Q3_K", 11, 256, 110, {108, -1}, dec_q3_k},
  {"q4_k", "Q4_K", 12, 256, 144, {0, 2, -1}, dec_q4_k},
  {"q5_k", "Q5_K", 13, 256, 176, {0, 2, -1}, dec_q5_k},
  {"q6_k", "Q6_K", 14, 256, 210, {208, -1}, dec_q6_k},
};
#define N_FORMATS (int)(sizeof formats / sizeof *formats)

const ppcc_block_format *ppcc_block_format_of_ggml(int ggml_type) {
  for (int i = 0; i < N_FORMATS; i++)
    if (formats[i].ggml_type == ggml_type) return &formats[i];
  return NULL;
}

const ppcc_block_format *ppcc_block_format_named(const char *name) {
  for (int i = 0; i < N_FORMATS; i++)
    if (strcmp(formats[i].name, name) == 0) return &formats[i];
  return NULL;
}

const char *ppcc_ggml_type_name(int ggml_type) {
  static const char *const names[] = {
    "F32", "F16", "Q4_0", "Q4_1", NULL, NULL, "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
    "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16",
    "I32", "I64", "F64", "IQ1_M", "BF16", NULL, NULL, NULL, "TQ1_0", "TQ2_0", NULL, NULL, NULL, "MXFP4", "NVFP4",
    "Q1_0", "Q2_0"};
  return ggml_type >= 0 && ggml_type < (int)(sizeof names / sizeof *names) ? names[ggml_type] : NULL;
}

void ppcc_block_format_list(char *buf, size_t n, bool gguf_names) {
  size_t at = 0;
  if (n) buf[0] = 0;
  for (int i = 0; i < N_FORMATS && at < n; i++) {
    int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", gguf_names ? formats[i].gguf_name : formats[i].name);
    if (w < 0) break;
    at += (size_t)w;
  }
}

int64_t ppcc_block_bytes(const ppcc_block_format *f, int64_t n_values) {
  if (n_values < 0 || n_values % f->block != 0 || n_values / f->block > INT64_MAX / f->bytes) return -1;
  return n_values / f->block * f->bytes;
}

int64_t ppcc_block_decode(const ppcc_block_format *f, const unsigned char *src, int64_t n_blocks, float *out) {
  for (int64_t k = 0; k < n_blocks; k++) {
    const unsigned char *b = src + k * f->bytes;
    for (int s = 0; s < 3 && f->scale_at[s] >= 0; s++)
      if (!isfinite(f16_at(b + f->scale_at[s]))) return k;
    f->decode(b, out + k * f->block);
  }
  return -1;
}
