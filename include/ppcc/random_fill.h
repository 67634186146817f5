/* The deterministic tensor generator behind --random-weights, header-only
 * so that tools (linked without the runtime) produce the very same values.
 * Element j of tensor `name` depends only on (seed, name, j): shards can be
 * cut from the full tensor, and any writer reproduces it. */
#ifndef PPCC_RANDOM_FILL_H
#define PPCC_RANDOM_FILL_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "ppcc/graph.h"

static inline uint64_t ppcc_splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static inline uint64_t ppcc_random_key(uint64_t seed, const char *name) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the name */
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return ppcc_splitmix64(seed ^ ppcc_splitmix64(h));
}

/* Uniform in [-1, 1): 24 random bits, exact in f32. */
static inline float ppcc_random_unit(uint64_t key, int64_t j) {
  uint64_t r = ppcc_splitmix64(key + (uint64_t)j * 0xd1b54a32d192ed03ull);
  return (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform(-s, s) with s = sqrt(3 / fan_in) has variance 1 / fan_in, which
 * keeps activations O(1) through chains of matmuls. */
static inline float ppcc_random_scale(int rank, const int64_t *shape) {
  if (rank < 2 || shape[rank - 2] <= 0) return 1.0f;
  return sqrtf(3.0f / (float)shape[rank - 2]);
}

static inline uint16_t ppcc_random_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (absx < 0x38800000u) { /* subnormal or zero in f16 */
    float a;
    memcpy(&a, &absx, 4);
    return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f)); /* a / 2^-24 */
  }
  uint32_t mant = absx & 0x7fffffu, exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; /* nearest even */
  return (uint16_t)(sign | h);
}

static inline uint16_t ppcc_random_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Fills data (rank/shape/dtype as given, row-major) with the generator's
 * values. Integers: j modulo shape[0], valid indices for index_copy. */
static inline void ppcc_random_fill(uint64_t seed, const char *name, ppcc_dtype dtype, int rank,
                                    const int64_t *shape, void *data) {
  int64_t n = ppcc_num_elements(rank, shape);
  uint64_t key = ppcc_random_key(seed, name);
  float s = ppcc_random_scale(rank, shape);
  int64_t mod = rank > 0 && shape[0] > 0 ? shape[0] : 1;
  for (int64_t j = 0; j < n; j++) {
    float v = ppcc_random_unit(key, j) * s;
    switch (dtype) {
    case PPCC_F32: ((float *)data)[j] = v; break;
    case PPCC_F16: ((uint16_t *)data)[j] = ppcc_random_f32_to_f16(v); break;
    case PPCC_BF16: ((uint16_t *)data)[j] = ppcc_random_f32_to_bf16(v); break;
    case PPCC_I64: ((int64_t *)data)[j] = j % mod; break;
    case PPCC_I32: ((int32_t *)data)[j] = (int32_t)(j % mod); break;
    case PPCC_I8: ((int8_t *)data)[j] = (int8_t)(j % mod % 128); break;
    case PPCC_BOOL: ((uint8_t *)data)[j] = (uint8_t)(ppcc_random_unit(key, j) > 0); break;
    default: break;
    }
  }
}

#endif
