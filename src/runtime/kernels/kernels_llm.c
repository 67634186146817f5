/* Reference kernels of the LLM ops: embedding, rms_norm, layer_norm,
 * softmax, rotary, attention, concat, slice, sum, mean, argmax. Like the
 * other kernels they see local (per-shard) contiguous row-major tensors;
 * the sharding rules in src/ir/ops.c guarantee that a shard's result only
 * needs the shard's operands (e.g. attention is split over heads, norms
 * never over the normalised dim).
 *
 * Float kernels that take only float operands (norms, softmax, attention,
 * sum, mean) compute in f32 and rely on ppcc_rt_run_kernel to convert
 * f16/bf16 around them. The others handle dtypes themselves (see
 * kernel_llm_handles_dtypes). */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include "kernels_llm.h"
#include "kernels.h"
#include "kernels_llm.h"

static int64_t numel(const ppcc_tensor *t) { return ppcc_num_elements(t->rank, t->shape); }

/* A dim attribute counted from the end when negative (validated by the
 * shape rule, so it is in range here). */
static int attr_dim(const ppcc_op *op, int64_t dflt, int rank) {
  int64_t dim = ppcc_attr_int(op, "dim", dflt);
  return (int)(dim < 0 ? dim + rank : dim);
}

/* The tensor as [outer][mid][inner] around dim. */
typedef struct around_dim {
  int64_t outer, mid, inner;
} around_dim;

static around_dim split_around(const ppcc_tensor *t, int dim) {
  around_dim a = {1, t->shape[dim], 1};
  for (int i = 0; i < dim; i++) a.outer *= t->shape[i];
  for (int i = dim + 1; i < t->rank; i++) a.inner *= t->shape[i];
  return a;
}

static int64_t index_at(const ppcc_tensor *idx, int64_t p) {
  return idx->dtype == PPCC_I64 ? ((const int64_t *)idx->data)[p] : ((const int32_t *)idx->data)[p];
}

static ppcc_status check_index_dtype(const ppcc_tensor *t, const char *what, ppcc_diag *d) {
  if (t->dtype == PPCC_I64 || t->dtype == PPCC_I32) return PPCC_OK;
  return ppcc_error(d, "%s must be i64 or i32, not %s", what, ppcc_dtype_name(t->dtype));
}

static ppcc_status oom(ppcc_diag *d) { return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory"); }

/* ---------------- embedding ---------------- */

/* out[..., :] = table[ids[...], :]; rows are copied raw (any table dtype).
 * A table split over hidden gives each shard its columns; a vocab-split
 * table (unreduced result) would need the shard's row offset, which local
 * tensors do not carry, so ids outside the local table are an error. */
ppcc_status kernel_embedding(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *ids = &in[0], *table = &in[1];
  ppcc_status st = check_index_dtype(ids, "embedding ids", d);
  if (st) return st;
  /* A vocab-split table (Megatron vocab parallel) holds rows [first,
   * first + rows) of vocab; other ids give zero rows, summed by all_reduce. */
  bool vocab_split = table->split_full > 0 && table->split_dim == 0;
  int64_t rows = table->shape[0], n = numel(ids);
  int64_t first = vocab_split ? table->split_offset : 0, vocab = vocab_split ? table->split_full : rows;
  bool quantized = ppcc_dtype_is_quantized(table->dtype); /* rows decoded to f32 */
  size_t row_bytes = (size_t)(table->shape[1] * (quantized ? 4 : ppcc_dtype_size(table->dtype)));
  bool wraps = ppcc_attr_int(op, "wrap_negative", 0) != 0; /* ONNX: a negative id counts from the end */
  for (int64_t p = 0; p < n; p++) {
    int64_t id = index_at(ids, p);
    char *dst = (char *)out->data + (size_t)p * row_bytes;
    if (id < (wraps ? -vocab : 0) || id >= vocab)
      return ppcc_error(d, "token id %lld at position %lld is out of range [%lld, %lld)", (long long)id, (long long)p,
                        (long long)(wraps ? -vocab : 0), (long long)vocab);
    if (id < 0) id += vocab;
    if (id < first || id >= first + rows)
      memset(dst, 0, row_bytes);
    else if (quantized) {
      if (!ppcc_rt_qrows_f32(table->dtype, table->data, id - first, table->shape[1], (float *)dst))
        return ppcc_error(d, "embedding: row %lld of the %s table has a NaN or infinite scale", (long long)id,
                          ppcc_dtype_name(table->dtype));
    } else
      memcpy(dst, (const char *)table->data + (size_t)(id - first) * row_bytes, row_bytes);
  }
  return PPCC_OK;
}

/* ---------------- norms ---------------- */

static float attr_eps(const ppcc_op *op) { return (float)ppcc_attr_float(op, "eps", 1e-5); }

/* A norm's rows, split among the kernel threads (rows are independent). */
typedef struct norm_job {
  const float *x, *w, *b;
  float *y, eps, offset;
  int64_t H;
} norm_job;

static norm_job norm_of(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, int64_t *rows) {
  norm_job j = {in[0].data, in[1].data, op->n_in == 3 ? in[2].data : NULL, out->data, attr_eps(op),
                (float)ppcc_attr_float(op, "weight_offset", 0.0), in[0].rank ? in[0].shape[in[0].rank - 1] : 1};
  *rows = j.H ? numel(&in[0]) / j.H : 0;
  return j;
}

/* y = x / sqrt(mean(x^2) + eps) * (w + weight_offset) over the last dim. */
static void rms_norm_rows(void *arg, int64_t r0, int64_t r1) {
  const norm_job *n = arg;
  const float *x = n->x, *w = n->w;
  float *y = n->y, offset = n->offset;
  int64_t H = n->H;
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = x + r * H;
    double ss = 0;
    for (int64_t j = 0; j < H; j++) ss += (double)xr[j] * xr[j];
    /* x * inv in f64: in f32, inv underflows to a subnormal for |x| ~ 1e19+ */
    double inv = 1.0 / sqrt(ss / (double)H + n->eps);
    for (int64_t j = 0; j < H; j++) y[r * H + j] = (float)(xr[j] * inv) * (offset + w[j]);
  }
}

ppcc_status kernel_rms_norm(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  int64_t rows;
  norm_job j = norm_of(op, in, out, &rows);
  rt_parallel_range(rows, 1, 16384 / (j.H > 0 ? j.H : 1) + 1, rms_norm_rows, &j);
  return PPCC_OK;
}

/* y = (x - mean) / sqrt(var + eps) * w (+ b) over the last dim (biased
 * variance, as torch.nn.LayerNorm). */
static void layer_norm_rows(void *arg, int64_t r0, int64_t r1) {
  const norm_job *n = arg;
  const float *x = n->x, *w = n->w, *b = n->b;
  float *y = n->y;
  int64_t H = n->H;
  for (int64_t r = r0; r < r1; r++) {
    const float *xr = x + r * H;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < H; j++) sum += xr[j];
    double mean = sum / (double)H;
    for (int64_t j = 0; j < H; j++) sq += (xr[j] - mean) * (xr[j] - mean);
    /* (x - mean) * inv in f64: in f32, x - mean overflows near the f32
     * maximum and inv underflows for |x| ~ 1e19+ */
    double inv = 1.0 / sqrt(sq / (double)H + n->eps);
    float *yr = y + r * H;
    if (b) { /* lanes do each element's very operations: the same bits */
#pragma omp simd
      for (int64_t j = 0; j < H; j++) yr[j] = (float)((xr[j] - mean) * inv) * w[j] + b[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < H; j++) yr[j] = (float)((xr[j] - mean) * inv) * w[j];
    }
  }
}

void rt_layer_norm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t H, float eps) {
  norm_job j = {x, w, b, y, eps, 0.0f, H};
  rt_parallel_range(rows, 1, 16384 / (H > 0 ? H : 1) + 1, layer_norm_rows, &j);
}

ppcc_status kernel_layer_norm(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  int64_t rows;
  norm_job j = norm_of(op, in, out, &rows);
  rt_layer_norm(j.x, j.w, j.b, j.y, rows, j.H, j.eps);
  return PPCC_OK;
}

/* ---------------- softmax ---------------- */

/* Numerically stable softmax of n elements `stride` apart. */
static void softmax_strided(const float *x, float *y, int64_t n, int64_t stride) {
  if (stride == 1) { /* a contiguous row: the vector exp */
    if (y != x) memcpy(y, x, (size_t)n * 4);
    rt_softmax_row(y, n, 1.0f, n);
    return;
  }
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; j++) mx = fmaxf(mx, x[j * stride]);
  double sum = 0;
  for (int64_t j = 0; j < n; j++) {
    float e = expf(x[j * stride] - mx);
    y[j * stride] = e;
    sum += e;
  }
  float inv = (float)(1.0 / sum);
  for (int64_t j = 0; j < n; j++) y[j * stride] *= inv;
}

ppcc_status kernel_softmax(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  if (in[0].rank == 0) { /* softmax of one element */
    *(float *)out->data = 1.0f;
    return PPCC_OK;
  }
  around_dim a = split_around(&in[0], attr_dim(op, -1, in[0].rank));
  const float *x = in[0].data;
  float *y = out->data;
  for (int64_t o = 0; o < a.outer; o++)
    for (int64_t i = 0; i < a.inner; i++) {
      int64_t base = o * a.mid * a.inner + i;
      softmax_strided(x + base, y + base, a.mid, a.inner);
    }
  return PPCC_OK;
}

/* ---------------- rotary ---------------- */

/* x[B, S, H, D] rotated by position (rotate-half / GPT-NeoX pairing, as in
 * HF Llama): for j < D/2 with angle = pos[s] * theta^(-2j/D),
 *   y[j]       = x[j] cos - x[j + D/2] sin
 *   y[j + D/2] = x[j + D/2] cos + x[j] sin
 * Heads are independent, so a head-split shard rotates its own heads. */
/* Rotary scaling (HF's rope_scaling): linear divides every frequency by
 * factor; llama3 keeps high frequencies (wavelength < orig / high), divides
 * low ones (wavelength > orig / low) and blends in between. */
typedef struct rope_scaling {
  double factor, low, high;
  int64_t orig; /* 0: linear (or none when factor is 1) */
} rope_scaling;

static double scaled_freq(const rope_scaling *r, double freq) {
  if (r->orig <= 0) return freq / r->factor;
  double wavelen = 2.0 * 3.14159265358979323846 / freq, low_wavelen = (double)r->orig / r->low,
         high_wavelen = (double)r->orig / r->high;
  if (wavelen < high_wavelen) return freq;
  if (wavelen > low_wavelen) return freq / r->factor;
  double smooth = ((double)r->orig / wavelen - r->low) / (r->high - r->low);
  return (1.0 - smooth) * freq / r->factor + smooth * freq;
}

/* One position's cos/sin per pair (f64 angle, rounded to f32), shared by
 * every head of the row: the trigonometry is most of the op's time. */
static void rotary_table(const double *freq, int64_t half, double pos, double factor, float *c, float *s) {
  for (int64_t j = 0; j < half; j++) {
    double angle = pos * freq[j];
    c[j] = (float)(cos(angle) * factor);
    s[j] = (float)(sin(angle) * factor);
  }
}

/* The call's longest sequence, its largest position + 1: transformers'
 * max(position_ids) + 1, which picks dynamic NTK's theta and LongRoPE's
 * long or short factors for the whole call. */
static double longest_sequence(const ppcc_tensor *pos) {
  int64_t most = -1;
  for (int64_t i = 0; i < numel(pos); i++)
    if (index_at(pos, i) > most) most = index_at(pos, i);
  return (double)most + 1.0;
}

/* Each pair's frequency before rope_freqs divisors: theta^(-2j/D) scaled
 * as the op's rope attributes say (see attrs_rotary in src/ir/ops.c). */
static void rotary_freqs(const ppcc_op *op, const ppcc_tensor *pos, int64_t D, double *freq) {
  double theta = ppcc_attr_float(op, "theta", 10000.0), L = longest_sequence(pos);
  rope_scaling r = {ppcc_attr_float(op, "rope_factor", 1.0), ppcc_attr_float(op, "rope_low_freq_factor", 1.0),
                    ppcc_attr_float(op, "rope_high_freq_factor", 4.0), ppcc_attr_int(op, "rope_original_max_position", 0)};
  int64_t dyn = ppcc_attr_int(op, "rope_dynamic_max_position", 0);
  if (dyn > 0) { /* dynamic NTK: the factor goes into theta */
    if (L > (double)dyn) theta *= pow(r.factor * L / (double)dyn - (r.factor - 1.0), (double)D / (double)(D - 2));
    r.factor = 1.0;
  }
  bool long_factors = ppcc_op_attr(op, "rope_long_after") && L > (double)ppcc_attr_int(op, "rope_long_after", 0);
  int n = 0;
  const double *div = ppcc_attr_floats(op, long_factors ? "rope_long_divisors" : "rope_divisors", &n);
  for (int64_t j = 0; j < D / 2; j++)
    freq[j] = scaled_freq(&r, pow(theta, -2.0 * (double)j / (double)D)) / (div && j < n ? div[j] : 1.0);
}

static void rotate_row(const float *x, float *y, int64_t half, const float *c, const float *s) {
  for (int64_t j = 0; j < half; j++) {
    float a = x[j], b = x[j + half];
    y[j] = a * c[j] - b * s[j];
    y[j + half] = b * c[j] + a * s[j];
  }
}

/* x as f32: the data itself, or a converted copy in *tmp. */
static const float *as_f32(const ppcc_tensor *t, float **tmp) {
  *tmp = NULL;
  if (t->dtype == PPCC_F32) return t->data;
  *tmp = rt_alloc(numel(t) * 4);
  if (*tmp) rt_to_f32(t->dtype, t->data, *tmp, numel(t));
  return *tmp;
}

ppcc_status kernel_rotary(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *xt = &in[0], *pos = &in[1];
  ppcc_status st = check_index_dtype(pos, "rotary positions", d);
  if (st) return st;
  if (!ppcc_dtype_is_float(xt->dtype)) return ppcc_error(d, "rotary needs a float x, not %s", ppcc_dtype_name(xt->dtype));
  float *tmp_in, *y = out->dtype == PPCC_F32 ? out->data : rt_alloc(numel(out) * 4);
  const float *x = as_f32(xt, &tmp_in);
  if (!x || !y) st = oom(d);
  int64_t B = xt->shape[0], S = xt->shape[1], H = xt->shape[2], D = xt->shape[3];
  double attention_factor = ppcc_attr_float(op, "rope_attention_factor", 1.0);
  int64_t half = D / 2;
  double *freq = rt_alloc((half > 0 ? half : 1) * 8); /* per pair, whatever the position */
  float *cs = rt_alloc((half > 0 ? half : 1) * 8);    /* cos then sin of one position */
  if (!st && (!freq || !cs)) st = oom(d);
  float *tmp_ff = NULL; /* optional per-pair divisors (llama.cpp's rope_freqs) */
  const float *ff = op->n_in > 2 && !st ? as_f32(&in[2], &tmp_ff) : NULL;
  if (op->n_in > 2 && !st && !ff) st = oom(d);
  if (!st) rotary_freqs(op, pos, D, freq);
  for (int64_t j = 0; !st && j < half; j++) freq[j] /= ff ? (double)ff[j] : 1.0;
  rt_free(tmp_ff);
  for (int64_t b = 0; b < B && !st; b++)
    for (int64_t s = 0; s < S; s++) {
      rotary_table(freq, half, (double)index_at(pos, pos->rank == 2 ? b * S + s : s), attention_factor, cs, cs + half);
      for (int64_t h = 0; h < H; h++) {
        int64_t off = ((b * S + s) * H + h) * D;
        rotate_row(x + off, y + off, half, cs, cs + half);
      }
    }
  rt_free(freq);
  rt_free(cs);
  if (!st && y != out->data) rt_from_f32(out->dtype, y, out->data, numel(out));
  if (y != out->data) rt_free(y);
  rt_free(tmp_in);
  return st;
}

/* ---------------- attention ---------------- */

typedef struct attn_dims {
  int64_t B, Hq, S, D, Hkv, T, Dv, group;
  float scale;
  bool causal;
  const ppcc_tensor *positions; /* optional [S] or [B, S]: query s sits at positions[(b,) s] */
} attn_dims;

/* The query heads of one kv head are contiguous in q and out, so each
 * (batch, kv head) pair is two GEMMs through ppcc_rt_sgemm (OpenBLAS):
 *   P[group*S, T] = Q[group*S, D] . K[T, D]^T,  scaled, masked, softmax rows,
 *   O[group*S, Dv] = P . V[T, Dv].
 * Causal rows are aligned bottom-right: query s sits at position T - S + s
 * and sees keys 0..T-S+s, so a decode step (S = 1) over a cache of T
 * positions sees all of them and a prefill (S = T) is the usual lower
 * triangle. With positions (S entries), query s sees cache slots
 * 0..positions[s] instead (later slots are not written yet), causal or
 * not, so one decode graph serves every step. A window W > 0 also masks
 * the keys at or before last - W (Mistral, Gemma 2's sliding layers); a
 * softcap c > 0 maps each scaled score x to c * tanh(x / c) before the
 * mask (Gemma 2). A pair's GEMM shapes do not depend on the batch size, so
 * microbatched runs compute every row alike. */
typedef struct attn_job {
  int64_t B, Hq, S, D, Hkv, T, Dv, group;
  float scale;
  bool causal, per_row;
  const int64_t *positions;
  const float *q, *k, *v;
  float *out;
  atomic_int failed;
  int64_t window; /* > 0: keys at or before last - window are hidden */
  float softcap;  /* > 0: scaled scores x become softcap * tanh(x / softcap) */
  bool seq_major; /* q, k, v, out as [B, S, H, D] (the rows of a head H * D apart) */
  /* floats between batches, heads and rows (query/key positions) of q, k, v, out */
  int64_t qb, qh, qs, kb, kh, kr, vb, vh, vr, ob, oh, os;
} attn_job;

/* The keys [*first, *valid) a query at position `last` sees: a prefix,
 * less a window's hidden start; none when *first >= *valid. */
static void visible_keys(const attn_job *j, int64_t last, int64_t *first, int64_t *valid) {
  int64_t T = j->T;
  *valid = last < -1 ? 0 : last + 1 > T ? T : last + 1;
  *first = j->window > 0 && last >= j->window ? last - j->window + 1 : 0;
}

/* Gemma 2's cap on scaled scores (as transformers' eager attention);
 * returns the scale still to apply. */
static float cap_scores(const attn_job *j, float *row, int64_t n, float scale) {
  if (j->softcap <= 0) return scale;
  for (int64_t t = 0; t < n; t++) row[t] = tanhf(row[t] * scale / j->softcap) * j->softcap;
  return 1.0f;
}

/* Scale, cap, mask and softmax of one score row whose query sees keys
 * [first, valid): the rest are 0, or every key NaN when none is visible
 * (softmax of all -inf, as the linalg lowering). */
static void attention_row(const attn_job *j, float *row, int64_t last) {
  int64_t T = j->T, first, valid;
  visible_keys(j, last, &first, &valid);
  if (first >= valid) {
    for (int64_t t = 0; t < T; t++) row[t] = NAN;
    return;
  }
  float scale = cap_scores(j, row + first, valid - first, j->scale);
  for (int64_t t = 0; t < first; t++) row[t] = 0.0f;
  rt_softmax_row(row + first, T - first, scale, valid - first);
}

/* The (batch, kv head) pairs of one part, each GEMMs on this thread with
 * the scale, mask and softmax fused in one pass over the scores. A pair's
 * query rows are one block [group * S, D] in q (and out) [B, H, S, D]; in
 * [B, S, H, D] one block [group, D] per query position, K and V read
 * where they lie (the cache's rows Hkv * D apart: rt_sgemm_ldb). */
static void attention_part(void *arg, int part, int parts) {
  attn_job *j = arg;
  int64_t first, end, T = j->T, S = j->S, blocks = j->seq_major ? S : 1, rows = j->group * S / blocks;
  rt_part_range(j->B * j->Hkv, 1, part, parts, &first, &end);
  if (end <= first) return;
  float *p = rt_reuse_alloc((rows * T > 0 ? rows * T : 1) * 4); /* scores: recycled, call after call */
  if (!p) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (int64_t pair = first; pair < end; pair++) {
    int64_t b = pair / j->Hkv, g = pair % j->Hkv, h0 = g * j->group;
    const int64_t *row_pos = j->positions && j->per_row ? j->positions + b * S : j->positions;
    for (int64_t s0 = 0; s0 < blocks; s0++) {
      rt_sgemm_ldb(rows, T, j->D, j->q + b * j->qb + h0 * j->qh + s0 * j->qs, j->k + b * j->kb + g * j->kh, j->kr,
                   true, p);
      for (int64_t r = 0; r < rows; r++) {
        int64_t s = j->seq_major ? s0 : r % S, last = row_pos ? row_pos[s] : j->causal ? T - S + s : T - 1;
        attention_row(j, p + r * T, last);
      }
      rt_sgemm_ldb(rows, j->Dv, T, p, j->v + b * j->vb + g * j->vh, j->vr, false,
                   j->out + b * j->ob + h0 * j->oh + s0 * j->os);
    }
  }
  rt_reuse_free(p);
}

/* Prefill on the AVX-512 tiles (gemm_tiles.c): per query head, blocks of
 * ATT_ROWS query rows (one [K, N] register tile) go through
 *   P[rows, keys] = Q[rows, D] . (scale K^T)[D, keys]   (once per kv head),
 *   exp of the scaled scores (rt_softmax_exp_rows, in L1),
 *   O[rows, Dv] = P . V[keys, Dv], each row then divided by its sum,
 * over only the keys some row of the block sees: a causal prefill computes
 * about half the square (the masked upper triangle is skipped, not
 * multiplied by zero). OpenBLAS's sgemm repacked K and V on each call. */
enum { ATT_ROWS = 6 };
/* K^T's rows T + ATT_KT_PAD floats apart: rows a power of two of bytes
 * apart (T = 128: 512 B) fell on few L1 sets (bench_attention 128 2 9:
 * attention best ~182 -> ~188 GFLOP/s, median of 4 paired runs) */
enum { ATT_KT_PAD = 16 };

static void attention_block(const attn_job *j, const int64_t *row_pos, int64_t s0, int64_t rows, const float *q,
                            const float *kt, const float *v, float *o, float *p) {
  int64_t first[ATT_ROWS], valid[ATT_ROWS], c0 = j->T, c1 = 0, S = j->S;
  for (int64_t r = 0; r < rows; r++) {
    int64_t s = s0 + r, last = row_pos ? row_pos[s] : j->causal ? j->T - S + s : j->T - 1;
    visible_keys(j, last, &first[r], &valid[r]);
    if (first[r] >= valid[r]) continue;
    c0 = first[r] < c0 ? first[r] : c0;
    c1 = valid[r] > c1 ? valid[r] : c1;
  }
  int64_t w = c1 > c0 ? c1 - c0 : 0, Dv = j->Dv;
  double sum[ATT_ROWS];
  if (w > 0) {
    int64_t lo[ATT_ROWS], hi[ATT_ROWS]; /* a row's visible keys in p */
    rt_sgemm_tiles_strided(rows, w, j->D, q + s0 * j->qs, j->qs, kt + c0, j->T + ATT_KT_PAD, p, w);
    for (int64_t r = 0; r < rows; r++) {
      float *row = p + r * w;
      lo[r] = first[r] < valid[r] ? first[r] - c0 : 0;
      hi[r] = first[r] < valid[r] ? valid[r] - c0 : 0;
      memset(row, 0, (size_t)lo[r] * 4);
      memset(row + hi[r], 0, (size_t)(w - hi[r]) * 4);
      cap_scores(j, row + lo[r], hi[r] - lo[r], 1.0f);
    }
    /* rows a few at a time: one row's exp ran on latency */
    rt_softmax_exp_rows(p, w, rows, lo, hi, sum);
    rt_sgemm_tiles_strided(rows, Dv, w, p, w, v + c0 * j->vr, j->vr, o + s0 * j->os, j->os);
  }
  for (int64_t r = 0; r < rows; r++) { /* none visible: NaN, as softmax of all -inf */
    float *orow = o + (s0 + r) * j->os, inv = first[r] < valid[r] ? (float)(1.0 / sum[r]) : NAN;
    rt_tiles_scale(orow, Dv, inv);
  }
}

/* The (batch, query head) units of one part, K transposed whenever the
 * unit's kv head changes (a part's heads run in order, so once per group). */
static void attention_part_tiles(void *arg, int part, int parts) {
  attn_job *j = arg;
  int64_t first, end, T = j->T, S = j->S, D = j->D;
  rt_part_range(j->B * j->Hq, 1, part, parts, &first, &end);
  if (end <= first) return;
  int64_t ldk = T + ATT_KT_PAD;
  float *kt = rt_reuse_alloc((D * ldk + ATT_ROWS * T > 0 ? D * ldk + ATT_ROWS * T : 1) * 4), *p = kt + D * ldk;
  if (!kt) {
    atomic_store(&j->failed, 1);
    return;
  }
  int64_t have = -1; /* the kv head now in kt */
  for (int64_t unit = first; unit < end; unit++) {
    int64_t b = unit / j->Hq, h = unit % j->Hq, g = h / j->group, kvh = b * j->Hkv + g;
    if (kvh != have) { /* scaled: the scores are too */
      rt_tiles_transpose_scaled(T, D, j->k + b * j->kb + g * j->kh, j->kr, j->scale, kt, ldk);
      have = kvh;
    }
    const int64_t *row_pos = j->positions && j->per_row ? j->positions + b * S : j->positions;
    for (int64_t s0 = 0; s0 < S; s0 += ATT_ROWS)
      attention_block(j, row_pos, s0, S - s0 < ATT_ROWS ? S - s0 : ATT_ROWS, j->q + b * j->qb + h * j->qh, kt,
                      j->v + b * j->vb + g * j->vh, j->out + b * j->ob + h * j->oh, p);
  }
  rt_reuse_free(kt);
}

int ppcc_rt_attention_f32(int64_t B, int64_t Hq, int64_t S, int64_t D, int64_t Hkv, int64_t T, int64_t Dv,
                          double scale, bool causal, int64_t window, double softcap, const int64_t *positions,
                          bool per_row, bool seq_major, const float *q, const float *k, const float *v, float *out) {
  if (Hkv <= 0 || Hq % Hkv != 0) return -1;
  /* [B, H, S, D]: a head's rows follow one another; [B, S, H, D]: a
   * position's heads do, its rows H heads apart */
  bool sm = seq_major;
  attn_job j = {B, Hq, S, D, Hkv, T, Dv, Hq / Hkv, (float)scale, causal, per_row, positions, q, k, v, out, 0,
                window, (float)softcap, sm,
                Hq * S * D, sm ? D : S * D, sm ? Hq * D : D,
                Hkv * T * D, sm ? D : T * D, sm ? Hkv * D : D,
                Hkv * T * Dv, sm ? Dv : T * Dv, sm ? Hkv * Dv : Dv,
                Hq * S * Dv, sm ? Dv : S * Dv, sm ? Hq * Dv : Dv};
  atomic_init(&j.failed, 0);
  /* pairs spread over the kernel threads (their GEMMs then run on one
   * thread each) when a pair is worth waking a worker for */
  int64_t pairs = B * Hkv, flops = j.group * S * T * (D + Dv);
  int threads = rt_kernel_threads();
  /* a prefill's rows through the tiles; a decode step's few rows (K's
   * transpose would cost what they compute) and --deterministic (one
   * summation order whatever the rows) through ppcc_rt_sgemm */
  bool tiles = S >= ATT_ROWS && rt_sgemm_tiles_in_use() && !rt_row_invariant_matmul();
  int64_t units = tiles ? B * Hq : pairs;
  int parts = units < threads ? (int)units : threads;
  /* a decode step of 8 kv heads at 64..128 keys (~0.2 MFLOP, under the
   * former 2^18) ran on one thread while the other spun: 2^16 */
  if (flops * pairs < RT_SPLIT_ATTENTION_WORK) parts = 1;
  rt_parallel_parts(parts, tiles ? attention_part_tiles : attention_part, &j);
  return atomic_load(&j.failed) ? -2 : 0;
}

/* q[B, Hq, S, D], k[B, Hkv, T, D], v[B, Hkv, T, Dv] (seq_major: q[B, S,
 * Hq, D], k and v [B, T, Hkv, D], the KV caches as they lie, and out
 * likewise); query head h reads kv head h / (Hq / Hkv) (grouped-query
 * attention). A head-split shard holds Hq/n query and Hkv/n kv heads, so
 * the grouping is the same locally. */
ppcc_status kernel_attention(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  const ppcc_tensor *q = &in[0], *k = &in[1], *v = &in[2];
  bool seq_major = ppcc_attr_bool(op, "seq_major", false);
  int hd = seq_major ? 2 : 1, sd = 3 - hd; /* the heads' dim and the positions' */
  int64_t Hq = q->shape[hd], Hkv = k->shape[hd], D = q->shape[3], S = q->shape[sd];
  if (Hkv <= 0 || Hq % Hkv != 0)
    return ppcc_error(d, "attention: %lld query heads do not group over %lld kv heads in this shard", (long long)Hq,
                      (long long)Hkv);
  double scale = ppcc_attr_float(op, "scale", D > 0 ? 1.0 / sqrt((double)D) : 1.0);
  const ppcc_tensor *positions = op->n_in == 4 ? &in[3] : NULL;
  if (positions) {
    ppcc_status st = check_index_dtype(positions, "attention positions", d);
    if (st) return st;
  }
  /* converts f16/bf16 itself (kernel_llm_handles_dtypes): the positions
   * operand is an index tensor */
  float *tq, *tk, *tv, *o = out->dtype == PPCC_F32 ? out->data : rt_alloc(numel(out) * 4);
  const float *qd = as_f32(q, &tq), *kd = as_f32(k, &tk), *vd = as_f32(v, &tv);
  int64_t n_pos = positions ? numel(positions) : 0; /* [S] or [B, S] */
  int64_t *pos = positions ? rt_alloc((n_pos > 0 ? n_pos : 1) * 8) : NULL;
  int rc = -2;
  if (o && qd && kd && vd && (!positions || pos)) {
    for (int64_t s = 0; s < n_pos; s++) pos[s] = index_at(positions, s);
    rc = ppcc_rt_attention_f32(q->shape[0], Hq, S, D, Hkv, k->shape[sd], v->shape[3], scale,
                               ppcc_attr_bool(op, "causal", false), ppcc_attr_int(op, "window", 0),
                               ppcc_attr_float(op, "softcap", 0.0), pos, positions && positions->rank == 2, seq_major,
                               qd, kd, vd, o);
  }
  if (!rc && o != out->data) rt_from_f32(out->dtype, o, out->data, numel(out));
  if (o != out->data) rt_free(o);
  rt_free(pos);
  rt_free(tq);
  rt_free(tk);
  rt_free(tv);
  return rc ? oom(d) : PPCC_OK;
}

/* ---------------- concat, slice (raw elements, any dtype) ---------------- */

ppcc_status kernel_concat(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  int dim = attr_dim(op, 0, out->rank), es = ppcc_dtype_size(out->dtype);
  around_dim a = split_around(out, dim);
  char *dst = out->data;
  for (int64_t o = 0; o < a.outer; o++)
    for (int k = 0; k < op->n_in; k++) {
      size_t chunk = (size_t)(in[k].shape[dim] * a.inner * es);
      if (chunk) memcpy(dst, (const char *)in[k].data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  return PPCC_OK;
}

ppcc_status kernel_slice(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  int dim = attr_dim(op, 0, in[0].rank), es = ppcc_dtype_size(in[0].dtype);
  around_dim a = split_around(&in[0], dim);
  int64_t start = ppcc_attr_int(op, "start", 0);
  if (start < 0) start += a.mid;
  int64_t len = out->shape[dim];
  size_t row = (size_t)(a.inner * es), chunk = (size_t)len * row;
  for (int64_t o = 0; o < a.outer; o++)
    if (chunk)
      memcpy((char *)out->data + (size_t)o * chunk, (const char *)in[0].data + ((size_t)(o * a.mid + start)) * row,
             chunk);
  return PPCC_OK;
}

/* ---------------- sum, mean ---------------- */

/* Reduced dims of sum/mean: the attribute's, or all. */
static void reduced_mask(const ppcc_op *op, int rank, bool *mask) {
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < rank; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) mask[a->ints[i] < 0 ? a->ints[i] + rank : a->ints[i]] = true;
}

/* Walks x in order and adds each element to its output slot: kept dims
 * keep their order, so keepdim does not change the output's layout. */
static ppcc_status reduce_sum(const ppcc_op *op, const ppcc_tensor *x, ppcc_tensor *y, bool mean, ppcc_diag *d) {
  bool mask[PPCC_MAX_RANK];
  reduced_mask(op, x->rank, mask);
  int64_t stride[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0}, s = 1, reduced = 1;
  for (int i = x->rank - 1; i >= 0; i--) {
    stride[i] = mask[i] ? 0 : s;
    s *= mask[i] ? 1 : x->shape[i];
    reduced *= mask[i] ? x->shape[i] : 1;
  }
  int64_t n_out = numel(y), n_in = numel(x), off = 0;
  double *acc = rt_calloc((n_out > 0 ? n_out : 1) * 8);
  if (!acc) return oom(d);
  const float *xs = x->data;
  for (int64_t j = 0; j < n_in; j++) {
    acc[off] += xs[j];
    for (int i = x->rank - 1; i >= 0; i--) {
      off += stride[i];
      if (++idx[i] < x->shape[i]) break;
      off -= stride[i] * x->shape[i];
      idx[i] = 0;
    }
  }
  float *ys = y->data;
  for (int64_t j = 0; j < n_out; j++) ys[j] = (float)(mean ? acc[j] / (double)reduced : acc[j]); /* mean of none: NaN */
  rt_free(acc);
  return PPCC_OK;
}

ppcc_status kernel_sum(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  return reduce_sum(op, &in[0], out, false, d);
}

ppcc_status kernel_mean(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  return reduce_sum(op, &in[0], out, true, d);
}

/* ---------------- argmax ---------------- */

/* Index of the first maximum; a NaN counts as the maximum (numpy, torch). */
static int64_t argmax_strided(const float *x, int64_t n, int64_t stride) {
  int64_t best = 0;
  for (int64_t j = 0; j < n; j++) {
    float v = x[j * stride];
    if (isnan(v)) return j;
    if (v > x[best * stride]) best = j;
  }
  return best;
}

ppcc_status kernel_argmax(const ppcc_op *op, const ppcc_tensor *in, ppcc_tensor *out, ppcc_diag *d) {
  if (out->dtype != PPCC_I64) return ppcc_error(d, "argmax result must be i64, not %s", ppcc_dtype_name(out->dtype));
  float *tmp;
  const float *x = as_f32(&in[0], &tmp);
  if (!x) return oom(d);
  int64_t *y = out->data;
  if (in[0].rank == 0) {
    y[0] = 0;
  } else {
    around_dim a = split_around(&in[0], attr_dim(op, -1, in[0].rank));
    for (int64_t o = 0; o < a.outer; o++)
      for (int64_t i = 0; i < a.inner; i++) y[o * a.inner + i] = argmax_strided(x + o * a.mid * a.inner + i, a.mid, a.inner);
  }
  rt_free(tmp);
  return PPCC_OK;
}

bool kernel_llm_handles_dtypes(ppcc_kernel_fn k) {
  return k == kernel_embedding || k == kernel_rotary || k == kernel_argmax || k == kernel_concat || k == kernel_slice ||
         k == kernel_attention;
}
