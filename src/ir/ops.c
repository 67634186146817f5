/* The IR columns of the op table (include/ppcc/op_list.h): attribute
 * schemas, shape rules, sharding rules (DESIGN §4) and FLOP counts. */
#include <float.h>
#include "ppcc/ops.h"
#include <stdio.h>
#include <string.h>

/* ---------------- attribute schemas ---------------- */
static const ppcc_attr_spec attrs_none[] = {{NULL, 0, false}};
static const ppcc_attr_spec attrs_scale[] = {{"value", PPCC_ATTR_FLOAT, true}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_perm[] = {{"perm", PPCC_ATTR_INTS, true}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_perm_opt[] = {{"perm", PPCC_ATTR_INTS, false}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_shape[] = {{"shape", PPCC_ATTR_INTS, true}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_dim[] = {{"dim", PPCC_ATTR_INT, true}, {NULL, 0, false}};
/* conv / max_pool geometry (ppcc_conv_geom_read) */
static const ppcc_attr_spec attrs_conv[] = {{"group", PPCC_ATTR_INT, false},   {"strides", PPCC_ATTR_INTS, false},
                                            {"pads", PPCC_ATTR_INTS, false},   {"dilations", PPCC_ATTR_INTS, false},
                                            {NULL, 0, false}};
static const ppcc_attr_spec attrs_pool[] = {{"kernel", PPCC_ATTR_INTS, true}, {"strides", PPCC_ATTR_INTS, false},
                                            {"pads", PPCC_ATTR_INTS, false},  {"dilations", PPCC_ATTR_INTS, false},
                                            {NULL, 0, false}};
/* wrap_negative: an id in [-vocab, 0) counts from the end (ONNX Gather) */
static const ppcc_attr_spec attrs_embedding[] = {{"wrap_negative", PPCC_ATTR_BOOL, false}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_replicate[] = {{"count", PPCC_ATTR_INT, false},
                                                 {"devices", PPCC_ATTR_INTS, false},
                                                 {"pinned", PPCC_ATTR_BOOL, false},
                                                 {NULL, 0, false}};
static const ppcc_attr_spec attrs_reshard[] = {{"dim", PPCC_ATTR_INT, true},
                                               {"count", PPCC_ATTR_INT, false},
                                               {"devices", PPCC_ATTR_INTS, false},
                                               {"pinned", PPCC_ATTR_BOOL, false},
                                               {NULL, 0, false}};
static const ppcc_attr_spec attrs_unshard[] = {{"device", PPCC_ATTR_INT, false}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_transfer[] = {{"devices", PPCC_ATTR_INTS, true},
                                                {"pinned", PPCC_ATTR_BOOL, false},
                                                {NULL, 0, false}};

static const ppcc_attr_spec attrs_eps[] = {{"eps", PPCC_ATTR_FLOAT, false}, {NULL, 0, false}};
/* weight_offset: y = x / rms * (w + offset); Gemma's checkpoints store w - 1 */
static const ppcc_attr_spec attrs_rms_norm[] = {{"eps", PPCC_ATTR_FLOAT, false},
                                                {"weight_offset", PPCC_ATTR_FLOAT, false},
                                                {NULL, 0, false}};
static const ppcc_attr_spec attrs_cast[] = {{"dtype", PPCC_ATTR_STRING, true}, {NULL, 0, false}};
static const ppcc_attr_spec attrs_dim_opt[] = {{"dim", PPCC_ATTR_INT, false}, {NULL, 0, false}};
/* rope_factor alone: linear scaling (positions / factor); with
 * rope_original_max_position too: Llama 3's per-frequency scaling; with
 * rope_dynamic_max_position m instead: dynamic NTK, theta times
 * (factor L / m - factor + 1)^(D / (D - 2)) when the call's longest
 * sequence L (its largest position + 1) exceeds m, plain rotary otherwise.
 * rope_divisors [D/2]: each pair's frequency divided by its entry (YaRN's
 * ramp, LongRoPE's short factors); rope_long_divisors replace them when L
 * exceeds rope_long_after (LongRoPE's long factors); cos and sin are
 * multiplied by rope_attention_factor (YaRN, LongRoPE). All as transformers'
 * modeling_rope_utils. */
static const ppcc_attr_spec attrs_rotary[] = {{"theta", PPCC_ATTR_FLOAT, false},
                                              {"rope_factor", PPCC_ATTR_FLOAT, false},
                                              {"rope_low_freq_factor", PPCC_ATTR_FLOAT, false},
                                              {"rope_high_freq_factor", PPCC_ATTR_FLOAT, false},
                                              {"rope_original_max_position", PPCC_ATTR_INT, false},
                                              {"rope_dynamic_max_position", PPCC_ATTR_INT, false},
                                              {"rope_divisors", PPCC_ATTR_FLOATS, false},
                                              {"rope_long_divisors", PPCC_ATTR_FLOATS, false},
                                              {"rope_long_after", PPCC_ATTR_INT, false},
                                              {"rope_attention_factor", PPCC_ATTR_FLOAT, false},
                                              {NULL, 0, false}};
/* window: a query sees only its last `window` key positions (sliding-window
 * attention); softcap: scores x become softcap * tanh(x / softcap);
 * seq_major: q, k, v and out are [B, S, H, D], as projections and KV
 * caches lie, so attention reads a cache in place (no permuted copy of it
 * each decode step). */
static const ppcc_attr_spec attrs_attention[] = {{"causal", PPCC_ATTR_BOOL, false},
                                                 {"scale", PPCC_ATTR_FLOAT, false},
                                                 {"window", PPCC_ATTR_INT, false},
                                                 {"softcap", PPCC_ATTR_FLOAT, false},
                                                 {"seq_major", PPCC_ATTR_BOOL, false},
                                                 {NULL, 0, false}};
static const ppcc_attr_spec attrs_slice[] = {{"dim", PPCC_ATTR_INT, true},
                                             {"start", PPCC_ATTR_INT, true},
                                             {"end", PPCC_ATTR_INT, true},
                                             {NULL, 0, false}};
static const ppcc_attr_spec attrs_reduce[] = {{"dim", PPCC_ATTR_INTS, false},
                                              {"keepdim", PPCC_ATTR_BOOL, false},
                                              {NULL, 0, false}};

/* ---------------- helpers ---------------- */
#define IN(k) (&g->values[op->in[k]])
#define OUT(k) (&g->values[op->out[k]])

const char *ppcc_op_ref(const ppcc_graph *g, const ppcc_op *op, char *buf, size_t n) {
  const char *out = op->n_out > 0 ? g->values[op->out[0]].name : "?";
  if (op->src_index >= 0)
    snprintf(buf, n, "ops[%d] '%s' (-> '%s')", op->src_index, op->info->name, out);
  else
    snprintf(buf, n, "inserted '%s' (-> '%s')", op->info->name, out);
  return buf;
}

static ppcc_status op_error(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, const char *what) {
  char ref[PPCC_MAX_NAME * 2 + 64];
  return ppcc_error(d, "%s: %s", ppcc_op_ref(g, op, ref, sizeof ref), what);
}

/* "[8, 64]", cut to n - 1 characters as snprintf would. Shape rules call
 * it up front for their messages, once per op: no printf machinery. */
static void shape_str(const ppcc_value *v, char *buf, size_t n) {
  char full[PPCC_MAX_RANK * 22 + 4], *p = full;
  *p++ = '[';
  for (int i = 0; i < v->rank && i < PPCC_MAX_RANK; i++) {
    if (i) {
      *p++ = ',';
      *p++ = ' ';
    }
    char digits[24], *q = digits + sizeof digits;
    long long x = (long long)v->shape[i];
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do *--q = (char)('0' + u % 10); while ((u /= 10) != 0);
    if (x < 0) *--q = '-';
    size_t len = (size_t)(digits + sizeof digits - q);
    memcpy(p, q, len);
    p += len;
  }
  *p++ = ']';
  if (n == 0) return;
  size_t len = (size_t)(p - full) < n - 1 ? (size_t)(p - full) : n - 1;
  memcpy(buf, full, len);
  buf[len] = 0;
}

static ppcc_status layouts_error(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, const char *why) {
  char msg[1024], l[64];
  ppcc_diag_site_set(d, PPCC_SITE_LAYOUTS, op->src_index); /* src/fix/ proposes fixes */
  size_t off = (size_t)snprintf(msg, sizeof msg, "unsupported layouts (");
  for (int k = 0; k < op->n_in && off < sizeof msg; k++) {
    ppcc_layout_str(IN(k)->layout, l, sizeof l);
    off += (size_t)snprintf(msg + off, sizeof msg - off, "%s'%s' %s", k ? ", " : "", IN(k)->name, l);
  }
  if (off < sizeof msg) snprintf(msg + off, sizeof msg - off, ")%s%s", why ? ": " : "", why ? why : "");
  return op_error(g, op, d, msg);
}

static void set_result(ppcc_value *out, const ppcc_value *like) {
  out->dtype = like->dtype;
  out->rank = like->rank;
  memcpy(out->shape, like->shape, sizeof out->shape);
}

static ppcc_layout split_layout(int dim, int count) {
  return (ppcc_layout){PPCC_LAYOUT_SPLIT, dim, count};
}

bool ppcc_layout_equal(ppcc_layout a, ppcc_layout b) {
  return a.kind == b.kind && a.count == b.count &&
         (a.kind != PPCC_LAYOUT_SPLIT || a.dim == b.dim);
}

bool ppcc_value_is_sharded(const ppcc_value *v) {
  return v->layout.kind != PPCC_LAYOUT_UNSHARDED;
}

static ppcc_status check_same_dtype(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  for (int k = 1; k < op->n_in; k++)
    if (IN(k)->dtype != IN(0)->dtype) {
      char msg[PPCC_MAX_NAME * 2 + 128];
      snprintf(msg, sizeof msg, "dtype mismatch: '%s' is %s but '%s' is %s", IN(0)->name,
               ppcc_dtype_name(IN(0)->dtype), IN(k)->name, ppcc_dtype_name(IN(k)->dtype));
      return op_error(g, op, d, msg);
    }
  return PPCC_OK;
}

static ppcc_status check_float(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int k) {
  if (ppcc_dtype_is_float(IN(k)->dtype)) return PPCC_OK;
  char msg[PPCC_MAX_NAME + 128];
  snprintf(msg, sizeof msg, "operand '%s' must be a float tensor, not %s", IN(k)->name,
           ppcc_dtype_name(IN(k)->dtype));
  return op_error(g, op, d, msg);
}

/* ---------------- shape rules ---------------- */
static ppcc_status shape_same(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  set_result(OUT(0), IN(0));
  return PPCC_OK;
}

static ppcc_status shape_matmul(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *a = IN(0), *b = IN(1);
  char msg[512], sa[128], sb[128];
  ppcc_status st = check_same_dtype(g, op, d);
  if (!st) st = check_float(g, op, d, 0);
  if (st) return st;
  shape_str(a, sa, sizeof sa);
  shape_str(b, sb, sizeof sb);
  if (a->rank < 2 || b->rank < 2 || (b->rank != 2 && b->rank != a->rank)) {
    snprintf(msg, sizeof msg, "matmul needs rank >= 2 operands and a rank-2 or equal-rank right operand, got %s x %s", sa, sb);
    return op_error(g, op, d, msg);
  }
  if (a->shape[a->rank - 1] != b->shape[b->rank - 2]) {
    snprintf(msg, sizeof msg, "shape mismatch: %s x %s (contracting dims %lld and %lld differ)", sa, sb,
             (long long)a->shape[a->rank - 1], (long long)b->shape[b->rank - 2]);
    return op_error(g, op, d, msg);
  }
  for (int i = 0; b->rank > 2 && i < a->rank - 2; i++)
    if (a->shape[i] != b->shape[i]) {
      snprintf(msg, sizeof msg, "shape mismatch: batch dims of %s and %s differ", sa, sb);
      return op_error(g, op, d, msg);
    }
  ppcc_value *o = OUT(0);
  set_result(o, a);
  o->shape[o->rank - 1] = b->shape[b->rank - 1];
  return PPCC_OK;
}

/* linear: x[..., K] . w[N, K]^T (+ bias[N]), weights stored [out, in]. */
/* A block-quantized weight (operand k), or an f16/bf16 one next to f32
 * operands (a weight kept as stored), computes in the other operands'
 * float dtype; everything else must agree in dtype. */
static ppcc_status check_dtypes_with_weight(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int k) {
  bool quantized = ppcc_dtype_is_quantized(IN(k)->dtype);
  if (!quantized && !ppcc_dtype_is_stored_half(IN(k)->dtype, IN(k == 0 ? 1 : 0)->dtype))
    return check_same_dtype(g, op, d);
  if (quantized) op->quantized_ok |= 1u << k;
  for (int i = 0; i < op->n_in; i++)
    if (i != k && IN(i)->dtype != IN(k == 0 ? 1 : 0)->dtype) return check_same_dtype(g, op, d);
  return PPCC_OK;
}

static ppcc_status shape_linear(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0), *w = IN(1);
  char msg[512], sx[128], sw[128];
  ppcc_status st = check_dtypes_with_weight(g, op, d, 1);
  if (!st) st = check_float(g, op, d, 0);
  if (st) return st;
  shape_str(x, sx, sizeof sx);
  shape_str(w, sw, sizeof sw);
  if (x->rank < 1 || w->rank != 2 || x->shape[x->rank - 1] != w->shape[1]) {
    snprintf(msg, sizeof msg, "shape mismatch: linear needs x[..., K] and weight [N, K], got %s and %s", sx, sw);
    return op_error(g, op, d, msg);
  }
  if (op->n_in == 3) {
    const ppcc_value *b = IN(2);
    if (b->rank != 1 || b->shape[0] != w->shape[0]) {
      shape_str(b, sx, sizeof sx);
      snprintf(msg, sizeof msg, "shape mismatch: bias must be [%lld], got %s", (long long)w->shape[0], sx);
      return op_error(g, op, d, msg);
    }
  }
  ppcc_value *o = OUT(0);
  set_result(o, x);
  o->shape[o->rank - 1] = w->shape[0];
  return PPCC_OK;
}

static ppcc_status shape_broadcast(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *a = IN(0), *b = IN(1);
  ppcc_status st = check_same_dtype(g, op, d);
  if (st) return st;
  int rank = a->rank > b->rank ? a->rank : b->rank;
  ppcc_value *o = OUT(0);
  o->dtype = a->dtype;
  o->rank = rank;
  for (int i = 0; i < rank; i++) {
    int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char msg[512], sa[128], sb[128];
      shape_str(a, sa, sizeof sa);
      shape_str(b, sb, sizeof sb);
      snprintf(msg, sizeof msg, "shape mismatch: %s and %s do not broadcast (dim %d: %lld vs %lld)", sa, sb,
               i, (long long)da, (long long)db);
      return op_error(g, op, d, msg);
    }
    o->shape[i] = da == 1 ? db : da;
  }
  return PPCC_OK;
}

/* Integer division is refused on every backend: truncation vs torch's true
 * division is ambiguous, and x/0 or INT_MIN/-1 would trap in JIT code. */
static ppcc_status shape_div(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_status st = check_float(g, op, d, 0);
  return st ? st : shape_broadcast(g, op, d);
}

/* pow: float operands only on every backend, numpy broadcasting. */
static ppcc_status shape_float_broadcast(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shape_div(g, op, d); }

/* equal/less/greater: same-dtype operands broadcast, a bool result. */
static ppcc_status shape_compare(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_status st = shape_broadcast(g, op, d);
  if (!st) OUT(0)->dtype = PPCC_BOOL;
  return st;
}

/* cast: the operand's shape in attrs.dtype (any dtype ppcc knows). */
static ppcc_status shape_cast(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_attr *a = ppcc_op_attr(op, "dtype");
  ppcc_dtype t;
  if (!a || !a->s || !ppcc_dtype_from_name(a->s, &t) || ppcc_dtype_is_quantized(t)) {
    char msg[200];
    snprintf(msg, sizeof msg, "attrs.dtype '%.64s' is not a dtype ppcc can cast to", a && a->s ? a->s : "");
    return op_error(g, op, d, msg);
  }
  set_result(OUT(0), IN(0));
  OUT(0)->dtype = t;
  return PPCC_OK;
}

/* expand: the operand broadcast (numpy rules) to exactly attrs.shape. */
static ppcc_status shape_expand(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_attr *a = ppcc_op_attr(op, "shape");
  const ppcc_value *x = IN(0);
  char msg[256], sx[128];
  shape_str(x, sx, sizeof sx);
  if (!a || a->n < x->rank || a->n > PPCC_MAX_RANK) {
    snprintf(msg, sizeof msg, "attrs.shape must have rank %d..%d to expand %s", x->rank, PPCC_MAX_RANK, sx);
    return op_error(g, op, d, msg);
  }
  for (int i = 0; i < a->n; i++) {
    int xi = i - (a->n - x->rank);
    int64_t dx = xi >= 0 ? x->shape[xi] : 1;
    if (a->ints[i] < 0 || (dx != 1 && dx != a->ints[i])) {
      snprintf(msg, sizeof msg, "%s does not broadcast to attrs.shape (dim %d: %lld vs %lld)", sx, i, (long long)dx,
               (long long)a->ints[i]);
      return op_error(g, op, d, msg);
    }
  }
  ppcc_value *o = OUT(0);
  o->dtype = x->dtype;
  o->rank = a->n;
  for (int i = 0; i < a->n; i++) o->shape[i] = a->ints[i];
  return PPCC_OK;
}

/* where(cond, x, y): a bool cond, x and y of one dtype, all three broadcast. */
static ppcc_status shape_where(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  char msg[PPCC_MAX_NAME * 2 + 128];
  if (IN(0)->dtype != PPCC_BOOL) {
    snprintf(msg, sizeof msg, "condition '%s' must be bool, not %s", IN(0)->name, ppcc_dtype_name(IN(0)->dtype));
    return op_error(g, op, d, msg);
  }
  if (IN(1)->dtype != IN(2)->dtype) {
    snprintf(msg, sizeof msg, "dtype mismatch: '%s' is %s but '%s' is %s", IN(1)->name, ppcc_dtype_name(IN(1)->dtype),
             IN(2)->name, ppcc_dtype_name(IN(2)->dtype));
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  int rank = 0;
  for (int k = 0; k < 3; k++) rank = IN(k)->rank > rank ? IN(k)->rank : rank;
  o->dtype = IN(1)->dtype;
  o->rank = rank;
  for (int i = 0; i < rank; i++) {
    int64_t size = 1;
    for (int k = 0; k < 3; k++) {
      int ik = i - (rank - IN(k)->rank);
      int64_t dk = ik >= 0 ? IN(k)->shape[ik] : 1;
      if (dk != 1 && size != 1 && dk != size) {
        snprintf(msg, sizeof msg, "shape mismatch: operands do not broadcast (dim %d: %lld vs %lld)", i,
                 (long long)size, (long long)dk);
        return op_error(g, op, d, msg);
      }
      if (dk != 1) size = dk;
    }
    o->shape[i] = size;
  }
  return PPCC_OK;
}

/* perm of a transpose: the attribute, or the last two dims swapped. */
static bool transpose_perm(const ppcc_op *op, int rank, int *perm) {
  const ppcc_attr *a = ppcc_op_attr(op, "perm");
  if (!a) {
    if (rank < 2) return false;
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    return true;
  }
  if (a->n != rank) return false;
  bool seen[PPCC_MAX_RANK] = {false};
  for (int i = 0; i < rank; i++) {
    if (a->ints[i] < 0 || a->ints[i] >= rank || seen[a->ints[i]]) return false;
    seen[a->ints[i]] = true;
    perm[i] = (int)a->ints[i];
  }
  return true;
}

static ppcc_status shape_transpose(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int perm[PPCC_MAX_RANK];
  const ppcc_value *x = IN(0);
  if (!transpose_perm(op, x->rank, perm)) {
    char msg[128];
    snprintf(msg, sizeof msg, "attrs.perm is not a permutation of the %d dims of '%s'", x->rank, x->name);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  set_result(o, x);
  for (int i = 0; i < x->rank; i++) o->shape[i] = x->shape[perm[i]];
  return PPCC_OK;
}

static ppcc_status shape_reshape(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_attr *a = ppcc_op_attr(op, "shape");
  const ppcc_value *x = IN(0);
  char msg[256];
  if (a->n > PPCC_MAX_RANK) {
    snprintf(msg, sizeof msg, "attrs.shape has rank %d, more than the maximum %d", a->n, PPCC_MAX_RANK);
    return op_error(g, op, d, msg);
  }
  int infer = -1;
  int64_t known = 1, total = ppcc_num_elements(x->rank, x->shape);
  ppcc_value *o = OUT(0);
  o->dtype = x->dtype;
  o->rank = a->n;
  for (int i = 0; i < a->n; i++) {
    int64_t s = a->ints[i];
    if (s == -1 && infer < 0) {
      infer = i;
      continue;
    }
    if (s < 0 || (s != 0 && known > PPCC_MAX_ELEMENTS / s)) {
      snprintf(msg, sizeof msg, "attrs.shape[%d] = %lld is invalid (one -1 allowed, others >= 0)", i, (long long)s);
      return op_error(g, op, d, msg);
    }
    known *= s;
    o->shape[i] = s;
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      snprintf(msg, sizeof msg, "cannot infer attrs.shape[%d]: %lld elements do not divide by %lld", infer,
               (long long)total, (long long)known);
      return op_error(g, op, d, msg);
    }
    o->shape[infer] = total / known;
    known = total;
  }
  if (known != total) {
    snprintf(msg, sizeof msg, "shape mismatch: reshape of '%s' with %lld elements to %lld elements", x->name,
             (long long)total, (long long)known);
    return op_error(g, op, d, msg);
  }
  return PPCC_OK;
}

/* index_copy(dest, index, src) along dim (index_put: dim 0). */
static int index_dim(const ppcc_op *op) { return (int)ppcc_attr_int(op, "dim", 0); }

static ppcc_status shape_index_copy(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *dst = IN(0), *idx = IN(1), *src = IN(2);
  char msg[512];
  int dim = index_dim(op);
  if (dim < 0 || dim >= dst->rank) {
    snprintf(msg, sizeof msg, "attrs.dim = %d is out of range for rank %d", dim, dst->rank);
    return op_error(g, op, d, msg);
  }
  /* index [L], or per row [B, L] when dim is 1 (a KV-cache write where
   * every batch row sits at its own positions) */
  bool per_row = idx->rank == 2 && dim == 1 && idx->shape[0] == dst->shape[0];
  if ((idx->rank != 1 && !per_row) || (idx->dtype != PPCC_I64 && idx->dtype != PPCC_I32)) {
    snprintf(msg, sizeof msg, "index '%s' must be a 1-D i64 or i32 tensor (or [batch, L] with dim 1)", idx->name);
    return op_error(g, op, d, msg);
  }
  if (src->dtype != dst->dtype || src->rank != dst->rank) {
    snprintf(msg, sizeof msg, "source '%s' must have the dtype and rank of destination '%s'", src->name, dst->name);
    return op_error(g, op, d, msg);
  }
  for (int i = 0; i < dst->rank; i++) {
    int64_t want = i == dim ? idx->shape[idx->rank - 1] : dst->shape[i];
    if (src->shape[i] != want) {
      snprintf(msg, sizeof msg, "shape mismatch: source '%s' dim %d is %lld, expected %lld", src->name, i,
               (long long)src->shape[i], (long long)want);
      return op_error(g, op, d, msg);
    }
  }
  set_result(OUT(0), dst);
  return PPCC_OK;
}

/* ---------------- sharding rules ---------------- */
static bool is_kind(const ppcc_value *v, ppcc_layout_kind k) { return v->layout.kind == k; }

static ppcc_status check_divisible(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, const ppcc_value *v,
                                   int dim, int count) {
  if (dim >= 0 && dim < v->rank && count > 0 && v->shape[dim] % count == 0) return PPCC_OK;
  char msg[256];
  snprintf(msg, sizeof msg, "'%s' dim %d (size %lld) cannot be split evenly into %d shards", v->name, dim,
           dim >= 0 && dim < v->rank ? (long long)v->shape[dim] : -1LL, count);
  return op_error(g, op, d, msg);
}

static ppcc_status shard_same(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  OUT(0)->layout = IN(0)->layout;
  return PPCC_OK;
}

/* Linear maps commute with partial sums: neg(a+b) = neg(a)+neg(b). */
static ppcc_status shard_linear_unary(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  return shard_same(g, op, d);
}

static ppcc_status shard_nonlinear(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  if (is_kind(IN(0), PPCC_LAYOUT_UNREDUCED))
    return layouts_error(g, op, d, "a nonlinear op on partial sums is wrong; all_reduce first");
  return shard_same(g, op, d);
}

/* Broadcasting elementwise: a split operand's dim, shifted to the result's
 * rank; -1 if the operand is not split. */
static int result_split_dim(const ppcc_value *in, const ppcc_value *out) {
  return is_kind(in, PPCC_LAYOUT_SPLIT) ? in->layout.dim + (out->rank - in->rank) : -1;
}

/* Shared by every elementwise binary op. allow_unreduced: 0 none, 1 both
 * unreduced (add/sub), 2 only the first operand unreduced with the second
 * replicated (mul/div scale partial sums). */
static ppcc_status shard_binary(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int allow_unreduced) {
  const ppcc_value *a = IN(0), *b = IN(1);
  ppcc_value *o = OUT(0);
  ppcc_layout la = a->layout, lb = b->layout;
  bool a_sh = la.kind != PPCC_LAYOUT_UNSHARDED, b_sh = lb.kind != PPCC_LAYOUT_UNSHARDED;
  if (!a_sh && !b_sh) {
    o->layout = ppcc_layout_unsharded();
    return PPCC_OK;
  }
  if (a_sh != b_sh)
    return layouts_error(g, op, d, "mixing an unsharded and a sharded operand; replicate or reshard_split the unsharded one first");
  if (la.count != lb.count) return layouts_error(g, op, d, "shard counts differ");
  int count = la.count;
  if (la.kind == PPCC_LAYOUT_UNREDUCED || lb.kind == PPCC_LAYOUT_UNREDUCED) {
    bool both = la.kind == PPCC_LAYOUT_UNREDUCED && lb.kind == PPCC_LAYOUT_UNREDUCED;
    bool scale = la.kind == PPCC_LAYOUT_UNREDUCED && lb.kind == PPCC_LAYOUT_REPLICATED;
    if ((allow_unreduced == 1 && both) || (allow_unreduced == 2 && scale)) {
      o->layout = (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, count};
      return PPCC_OK;
    }
    return layouts_error(g, op, d, "this op cannot combine these partial sums; all_reduce first");
  }
  int da = result_split_dim(a, o), db = result_split_dim(b, o);
  if (da < 0 && db < 0) {
    o->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, count};
    return PPCC_OK;
  }
  if (da >= 0 && db >= 0 && da != db) return layouts_error(g, op, d, "operands are split along different dims");
  int dim = da >= 0 ? da : db;
  /* A split operand broadcast along its split dim would need its data
   * everywhere: refuse rather than compute garbage. */
  const ppcc_value *sp = da >= 0 ? a : b;
  if (sp->shape[sp->layout.dim] != o->shape[dim])
    return layouts_error(g, op, d, "the split dim is broadcast");
  o->layout = split_layout(dim, count);
  return PPCC_OK;
}

static ppcc_status shard_elementwise(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  return shard_binary(g, op, d, 0);
}

/* expand copies: partial sums stay partial, a split dim moves with the
 * new leading dims and must not be one that is broadcast. */
static ppcc_status shard_expand(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  ppcc_value *o = OUT(0);
  ppcc_layout l = x->layout;
  if (l.kind == PPCC_LAYOUT_SPLIT) {
    if (x->shape[l.dim] != o->shape[l.dim + (o->rank - x->rank)]) return layouts_error(g, op, d, "the split dim is broadcast");
    l.dim += o->rank - x->rank;
  }
  o->layout = l;
  return PPCC_OK;
}

/* where: unsharded, or all sharded alike (no partial sums), split dims
 * agreeing after broadcasting; a split dim is never broadcast. */
static ppcc_status shard_where(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_value *o = OUT(0);
  int n_sharded = 0, count = 0, dim = -1;
  for (int k = 0; k < 3; k++) {
    const ppcc_value *v = IN(k);
    if (v->layout.kind == PPCC_LAYOUT_UNSHARDED) continue;
    if (v->layout.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "where of partial sums is wrong; all_reduce first");
    if (n_sharded++ && v->layout.count != count) return layouts_error(g, op, d, "shard counts differ");
    count = v->layout.count;
    int dk = result_split_dim(v, o);
    if (dk < 0) continue;
    if (dim >= 0 && dk != dim) return layouts_error(g, op, d, "operands are split along different dims");
    if (v->shape[v->layout.dim] != o->shape[dk]) return layouts_error(g, op, d, "the split dim is broadcast");
    dim = dk;
  }
  if (n_sharded == 0) {
    o->layout = ppcc_layout_unsharded();
    return PPCC_OK;
  }
  if (n_sharded != 3)
    return layouts_error(g, op, d, "mixing unsharded and sharded operands; replicate or reshard_split the unsharded ones first");
  o->layout = dim >= 0 ? split_layout(dim, count) : (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, count};
  return PPCC_OK;
}
static ppcc_status shard_add(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shard_binary(g, op, d, 1); }
static ppcc_status shard_mul(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  /* mul is symmetric: replicated * unreduced scales partial sums too. */
  if (is_kind(IN(1), PPCC_LAYOUT_UNREDUCED) && is_kind(IN(0), PPCC_LAYOUT_REPLICATED)) {
    OUT(0)->layout = IN(1)->layout;
    return PPCC_OK;
  }
  return shard_binary(g, op, d, 2);
}
static ppcc_status shard_div(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shard_binary(g, op, d, 2); }

/* matmul a[..., M, K] x b[..., K, N] (DESIGN §4). bt: b is stored [N, K]
 * (linear), so b's "last" and "contracting" dims are swapped. */
static ppcc_status shard_contract(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, bool bt) {
  const ppcc_value *a = IN(0), *b = IN(1);
  ppcc_value *o = OUT(0);
  ppcc_layout la = a->layout, lb = b->layout;
  int a_k = a->rank - 1;
  int b_k = bt ? 1 : b->rank - 2, b_n = bt ? 0 : b->rank - 1;
  if (la.kind == PPCC_LAYOUT_UNSHARDED && lb.kind == PPCC_LAYOUT_UNSHARDED) {
    o->layout = ppcc_layout_unsharded();
    return PPCC_OK;
  }
  if (la.kind == PPCC_LAYOUT_UNSHARDED || lb.kind == PPCC_LAYOUT_UNSHARDED)
    return layouts_error(g, op, d, "mixing an unsharded and a sharded operand; replicate or reshard_split the unsharded one first");
  if (la.count != lb.count) return layouts_error(g, op, d, "shard counts differ");
  int count = la.count;
  bool a_rep = la.kind == PPCC_LAYOUT_REPLICATED, b_rep = lb.kind == PPCC_LAYOUT_REPLICATED;
  bool a_spl = la.kind == PPCC_LAYOUT_SPLIT, b_spl = lb.kind == PPCC_LAYOUT_SPLIT;
  bool a_unr = la.kind == PPCC_LAYOUT_UNREDUCED, b_unr = lb.kind == PPCC_LAYOUT_UNREDUCED;
  ppcc_layout res;
  if (a_rep && b_rep) {
    res = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, count};
  } else if (a_rep && b_spl && lb.dim == b_n) {
    res = split_layout(o->rank - 1, count); /* column parallel */
  } else if ((a_spl || a_rep) && (b_spl || b_rep) && (a_rep || la.dim == a_k) && (b_rep || lb.dim == b_k)) {
    /* row parallel; a replicated operand next to a split one is sliced
     * locally along its contracting dim (sharktank's PPFFN:
     * all_reduce(linear(x, w)) with w split on its input features) */
    res = (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, count};
  } else if (a_spl && la.dim < a_k && (b_rep || (b->rank > 2 && b_spl && lb.dim == la.dim && la.dim < a->rank - 2))) {
    res = split_layout(la.dim, count); /* batch / rows */
  } else if (a_spl && la.dim < a_k && b_spl && lb.dim == b_n) {
    /* rows x columns: the right operand is all-gathered first (P11); the
     * pass inserts the all_gather and applies this rule again. One shard
     * is already whole. */
    if (count > 1) op->gather_operands |= 1u << 1;
    res = split_layout(la.dim, count);
  } else if ((a_unr && b_rep) || (a_rep && b_unr)) {
    res = (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, count}; /* linear in each operand */
  } else {
    return layouts_error(g, op, d, NULL);
  }
  if (op->n_in == 3) { /* linear bias: must line up with the result shards */
    const ppcc_value *bias = IN(2);
    /* On partial sums a replicated bias is added by shard 0 only, so it
     * counts exactly once in the all_reduce. */
    bool ok = (res.kind == PPCC_LAYOUT_SPLIT && res.dim == o->rank - 1 && is_kind(bias, PPCC_LAYOUT_SPLIT) &&
               bias->layout.dim == 0 && bias->layout.count == count) ||
              (res.kind != PPCC_LAYOUT_SPLIT && is_kind(bias, PPCC_LAYOUT_REPLICATED) && bias->layout.count == count) ||
              (res.kind == PPCC_LAYOUT_SPLIT && res.dim != o->rank - 1 && is_kind(bias, PPCC_LAYOUT_REPLICATED) &&
               bias->layout.count == count);
    if (!ok)
      return layouts_error(g, op, d, "the bias layout does not match the result's");
  }
  o->layout = res;
  return PPCC_OK;
}

static ppcc_status shard_matmul(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shard_contract(g, op, d, false); }
static ppcc_status shard_linear(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shard_contract(g, op, d, true); }

static ppcc_status shard_transpose(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int perm[PPCC_MAX_RANK];
  transpose_perm(op, IN(0)->rank, perm); /* validated by the shape rule */
  ppcc_layout l = IN(0)->layout;
  if (l.kind == PPCC_LAYOUT_SPLIT)
    for (int i = 0; i < IN(0)->rank; i++)
      if (perm[i] == l.dim) {
        l.dim = i;
        break;
      }
  OUT(0)->layout = l;
  return PPCC_OK;
}

/* A split survives a reshape when the dims before it keep their product and
 * the result dim divides evenly: then each shard is still one contiguous
 * slice per outer index. */
static ppcc_status shard_reshape(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  ppcc_value *o = OUT(0);
  ppcc_layout l = x->layout;
  if (l.kind != PPCC_LAYOUT_SPLIT) {
    o->layout = l;
    return PPCC_OK;
  }
  int64_t before = 1;
  for (int i = 0; i < l.dim; i++) before *= x->shape[i];
  int64_t prod = 1;
  /* the same dim index where it starts at the same offset: [1, 1, 8]
   * split(2, 1) -> [1, 1, 1, 8] (one kv head) splits the heads dim 2 like
   * any other head count, not the head dim */
  for (int j = 0; j < o->rank && j <= l.dim; j++) {
    if (j == l.dim && prod == before && o->shape[j] % l.count == 0 && o->shape[j] >= l.count) {
      o->layout = split_layout(j, l.count);
      return PPCC_OK;
    }
    prod *= o->shape[j];
  }
  prod = 1;
  for (int j = 0; j < o->rank; j++) {
    /* a size-1 dim is skipped when a later one starts at the same offset:
     * [1, 1, 32] split(2, 1) -> [1, 1, 2, 16] splits dim 2, not dim 0 */
    bool later = o->shape[j] == 1 && j + 1 < o->rank;
    if (prod == before && !later && o->shape[j] >= l.count && o->shape[j] % l.count == 0) {
      o->layout = split_layout(j, l.count);
      return PPCC_OK;
    }
    prod *= o->shape[j];
    if (prod > before && before != 0) break;
  }
  return layouts_error(g, op, d, "the reshape moves data across shard boundaries; all_gather first");
}

/* A collective over one shard is the identity, whatever the layout: with
 * count-1 layouts behaving as unsharded (DESIGN §1), a TP=1 graph's
 * all_reduce may meet a value that a rule made unsharded. */
static bool one_shard(const ppcc_value *v) { return v->layout.count == 1; }

static ppcc_status shard_all_reduce(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  if (!is_kind(IN(0), PPCC_LAYOUT_UNREDUCED) && !one_shard(IN(0))) return layouts_error(g, op, d, "all_reduce needs an unreduced operand");
  OUT(0)->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, IN(0)->layout.count};
  return PPCC_OK;
}

static ppcc_status shard_all_gather(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  if (!is_kind(IN(0), PPCC_LAYOUT_SPLIT) && !one_shard(IN(0))) return layouts_error(g, op, d, "all_gather needs a split operand");
  OUT(0)->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, IN(0)->layout.count};
  return PPCC_OK;
}

static ppcc_status check_dim_attr(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int64_t dim) {
  if (dim >= 0 && dim < IN(0)->rank) return PPCC_OK;
  char msg[128];
  snprintf(msg, sizeof msg, "attrs.dim = %lld is out of range for rank %d", (long long)dim, IN(0)->rank);
  return op_error(g, op, d, msg);
}

static ppcc_status shard_reduce_scatter(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int64_t dim = ppcc_attr_int(op, "dim", 0);
  if (!is_kind(IN(0), PPCC_LAYOUT_UNREDUCED) && !one_shard(IN(0)))
    return layouts_error(g, op, d, "reduce_scatter needs an unreduced operand");
  ppcc_status st = check_dim_attr(g, op, d, dim);
  if (!st) st = check_divisible(g, op, d, IN(0), (int)dim, IN(0)->layout.count);
  if (st) return st;
  OUT(0)->layout = split_layout((int)dim, IN(0)->layout.count);
  return PPCC_OK;
}

/* count attribute of replicate/reshard_split: needed for an unsharded
 * operand; for a sharded one it must match (P5: it keeps its devices). */
static ppcc_status create_count(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int *count) {
  const ppcc_value *x = IN(0);
  const ppcc_attr *c = ppcc_op_attr(op, "count");
  char msg[160];
  if (!ppcc_value_is_sharded(x)) {
    if (!c) return op_error(g, op, d, "attrs.count is required for an unsharded operand");
    if (c->i < 1 || c->i > PPCC_MAX_DEVICES) {
      snprintf(msg, sizeof msg, "attrs.count = %lld is out of range [1, %d]", (long long)c->i, PPCC_MAX_DEVICES);
      return op_error(g, op, d, msg);
    }
    *count = (int)c->i;
    return PPCC_OK;
  }
  if (c && c->i != x->layout.count) {
    snprintf(msg, sizeof msg, "attrs.count = %lld differs from the operand's %d shards", (long long)c->i,
             x->layout.count);
    return op_error(g, op, d, msg);
  }
  *count = x->layout.count;
  return PPCC_OK;
}

static ppcc_status shard_replicate(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int count;
  ppcc_status st = create_count(g, op, d, &count);
  if (st) return st;
  OUT(0)->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, count};
  return PPCC_OK;
}

static ppcc_status shard_reshard_split(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int count;
  int64_t dim = ppcc_attr_int(op, "dim", 0);
  ppcc_status st = create_count(g, op, d, &count);
  if (!st) st = check_dim_attr(g, op, d, dim);
  if (!st) st = check_divisible(g, op, d, IN(0), (int)dim, count);
  if (st) return st;
  if (is_kind(IN(0), PPCC_LAYOUT_SPLIT) && IN(0)->layout.dim != dim)
    return layouts_error(g, op, d, "resplitting along another dim (all-to-all) is not supported; all_gather first");
  OUT(0)->layout = split_layout((int)dim, count);
  return PPCC_OK;
}

static ppcc_status shard_unshard(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  OUT(0)->layout = ppcc_layout_unsharded();
  return PPCC_OK;
}

/* P8: an unsharded (or count-1) value sent to n > 1 devices is replicated
 * onto them; otherwise shard i simply moves. */
static ppcc_status shard_transfer(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_attr *devices = ppcc_op_attr(op, "devices");
  if (IN(0)->layout.count == 1 && devices && devices->n > 1) {
    OUT(0)->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, devices->n};
    return PPCC_OK;
  }
  return shard_same(g, op, d);
}

/* In place (P7): the result is the destination. The source must be sharded
 * like the destination, or replicated, split on the same non-indexed dim. */
static ppcc_status shard_index_copy(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *dst = IN(0), *idx = IN(1), *src = IN(2);
  ppcc_layout l = dst->layout;
  int dim = index_dim(op);
  if (l.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "the destination holds partial sums");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim == dim)
    return layouts_error(g, op, d, "the destination is split along the indexed dim");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim == 0 && idx->rank == 2)
    return layouts_error(g, op, d, "a per-row index [batch, L] needs the destination's batch rows whole");
  bool sharded = l.kind != PPCC_LAYOUT_UNSHARDED;
  bool idx_ok = sharded ? (is_kind(idx, PPCC_LAYOUT_REPLICATED) && idx->layout.count == l.count)
                        : !ppcc_value_is_sharded(idx);
  bool src_ok = sharded ? (ppcc_layout_equal(src->layout, l) ||
                           (l.kind == PPCC_LAYOUT_SPLIT && is_kind(src, PPCC_LAYOUT_REPLICATED) &&
                            src->layout.count == l.count))
                        : !ppcc_value_is_sharded(src);
  if (!idx_ok || !src_ok)
    return layouts_error(g, op, d, "index must be replicated and source laid out like the destination");
  OUT(0)->layout = l;
  return PPCC_OK;
}

/* ---------------- LLM ops: shape and sharding rules ---------------- */
/* A dim attribute, negative counting from the end; -1 if out of range. */
static int norm_dim(int64_t dim, int rank) {
  if (dim < 0) dim += rank;
  return dim >= 0 && dim < rank ? (int)dim : -1;
}

static ppcc_status dim_error(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, const char *attr, int64_t dim, int rank) {
  char msg[160];
  snprintf(msg, sizeof msg, "attrs.%s = %lld is out of range for rank %d", attr, (long long)dim, rank);
  return op_error(g, op, d, msg);
}

/* embedding(ids[...], table[V, H]) -> [..., H] */
static ppcc_status shape_embedding(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *ids = IN(0), *table = IN(1);
  char msg[256];
  if (ids->dtype != PPCC_I64 && ids->dtype != PPCC_I32) {
    snprintf(msg, sizeof msg, "ids '%s' must be i64 or i32, not %s", ids->name, ppcc_dtype_name(ids->dtype));
    return op_error(g, op, d, msg);
  }
  bool quantized = ppcc_dtype_is_quantized(table->dtype);
  ppcc_status st = quantized ? PPCC_OK : check_float(g, op, d, 1);
  if (st) return st;
  if (quantized) op->quantized_ok |= 1u << 1;
  if (table->rank != 2 || ids->rank + 1 > PPCC_MAX_RANK) {
    snprintf(msg, sizeof msg, "shape mismatch: table '%s' must be [vocab, hidden]", table->name);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  set_result(o, ids);
  o->dtype = quantized ? PPCC_F32 : table->dtype; /* quantized rows are looked up dequantized */
  o->shape[o->rank++] = table->shape[1];
  return PPCC_OK;
}

static ppcc_status shard_embedding(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *ids = IN(0), *table = IN(1);
  ppcc_layout li = ids->layout, lt = table->layout;
  ppcc_value *o = OUT(0);
  if (li.kind == PPCC_LAYOUT_UNSHARDED && lt.kind == PPCC_LAYOUT_UNSHARDED) {
    o->layout = ppcc_layout_unsharded();
    return PPCC_OK;
  }
  if (li.count != lt.count || li.kind == PPCC_LAYOUT_UNSHARDED || lt.kind == PPCC_LAYOUT_UNSHARDED)
    return layouts_error(g, op, d, "ids and table must be sharded over the same count");
  if (li.kind == PPCC_LAYOUT_REPLICATED && lt.kind == PPCC_LAYOUT_REPLICATED)
    o->layout = (ppcc_layout){PPCC_LAYOUT_REPLICATED, -1, li.count};
  else if (li.kind == PPCC_LAYOUT_REPLICATED && lt.kind == PPCC_LAYOUT_SPLIT && lt.dim == 1)
    o->layout = split_layout(o->rank - 1, li.count);
  else if (li.kind == PPCC_LAYOUT_REPLICATED && lt.kind == PPCC_LAYOUT_SPLIT && lt.dim == 0)
    o->layout = (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, li.count}; /* vocab parallel: zeros off-shard */
  else if (li.kind == PPCC_LAYOUT_SPLIT && lt.kind == PPCC_LAYOUT_REPLICATED)
    o->layout = split_layout(li.dim, li.count);
  else
    return layouts_error(g, op, d, NULL);
  return PPCC_OK;
}

/* rms_norm(x[..., H], w[H]), layer_norm(x, w[H], b[H]) over the last dim. */
static ppcc_status shape_norm(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  ppcc_status st = check_same_dtype(g, op, d);
  if (!st) st = check_float(g, op, d, 0);
  if (st) return st;
  double eps = ppcc_attr_float(op, "eps", 1e-5), offset = ppcc_attr_float(op, "weight_offset", 0);
  if (!(eps >= 0 && eps <= DBL_MAX)) { /* a negative eps makes 1/sqrt(mean + eps) NaN */
    char msg[128];
    snprintf(msg, sizeof msg, "attrs.eps must be a finite number >= 0, got %g", eps);
    return op_error(g, op, d, msg);
  }
  if (!(offset >= -FLT_MAX && offset <= FLT_MAX)) {
    char msg[128];
    snprintf(msg, sizeof msg, "attrs.weight_offset must be a finite number (in f32 range), got %g", offset);
    return op_error(g, op, d, msg);
  }
  for (int k = 1; k < op->n_in; k++)
    if (x->rank < 1 || IN(k)->rank != 1 || IN(k)->shape[0] != x->shape[x->rank - 1]) {
      char msg[256];
      snprintf(msg, sizeof msg, "shape mismatch: '%s' must be [%lld], the last dim of '%s'", IN(k)->name,
               x->rank ? (long long)x->shape[x->rank - 1] : 0LL, x->name);
      return op_error(g, op, d, msg);
    }
  set_result(OUT(0), x);
  return PPCC_OK;
}

/* Params of a norm follow x: unsharded with unsharded, else replicated. */
static bool params_follow(ppcc_graph *g, ppcc_op *op, int first) {
  const ppcc_value *x = IN(0);
  for (int k = first; k < op->n_in; k++) {
    const ppcc_value *p = IN(k);
    if (x->layout.kind == PPCC_LAYOUT_UNSHARDED ? ppcc_value_is_sharded(p)
                                                : !(is_kind(p, PPCC_LAYOUT_REPLICATED) && p->layout.count == x->layout.count))
      return false;
  }
  return true;
}

static ppcc_status shard_norm(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  if (is_kind(x, PPCC_LAYOUT_UNREDUCED)) return layouts_error(g, op, d, "a norm of partial sums is wrong; all_reduce first");
  if (is_kind(x, PPCC_LAYOUT_SPLIT) && x->layout.dim == x->rank - 1)
    return layouts_error(g, op, d, "normalising over a split dim needs the whole row; all_gather first");
  if (!params_follow(g, op, 1)) return layouts_error(g, op, d, "the norm's weights must be replicated like its input");
  OUT(0)->layout = x->layout;
  return PPCC_OK;
}

static ppcc_status shard_softmax(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  int64_t raw = ppcc_attr_int(op, "dim", -1);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  if (is_kind(x, PPCC_LAYOUT_UNREDUCED)) return layouts_error(g, op, d, "softmax of partial sums is wrong; all_reduce first");
  if (is_kind(x, PPCC_LAYOUT_SPLIT) && x->layout.dim == dim)
    return layouts_error(g, op, d, "softmax over a split dim needs the whole row; all_gather first");
  OUT(0)->layout = x->layout;
  return PPCC_OK;
}

static ppcc_status check_rope_scaling(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int64_t half);

/* rotary(x[B, S, H, D], positions[S] or per row [B, S]) */
static ppcc_status shape_rotary(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0), *pos = IN(1);
  ppcc_status st = check_float(g, op, d, 0);
  if (st) return st;
  double theta = ppcc_attr_float(op, "theta", 10000.0);
  if (!(theta > 0 && theta <= DBL_MAX)) { /* theta^(-2j/D) needs a finite positive base */
    char msg[128];
    snprintf(msg, sizeof msg, "attrs.theta must be a finite number > 0, got %g", theta);
    return op_error(g, op, d, msg);
  }
  bool pos_ok = pos->rank == 1 || (pos->rank == 2 && x->rank == 4 && pos->shape[0] == x->shape[0]);
  if (x->rank != 4 || x->shape[3] % 2 != 0 || !pos_ok || pos->shape[pos->rank - 1] != x->shape[1] ||
      (pos->dtype != PPCC_I64 && pos->dtype != PPCC_I32)) {
    char msg[256];
    snprintf(msg, sizeof msg, "shape mismatch: rotary needs x [batch, seq, heads, even head_dim] and i64 positions [seq] or [batch, seq] ('%s', '%s')",
             x->name, pos->name);
    return op_error(g, op, d, msg);
  }
  st = check_rope_scaling(g, op, d, x->shape[3] / 2);
  if (st) return st;
  /* a third operand: per-pair frequency divisors [head_dim / 2] (llama.cpp's
   * rope_freqs, Llama 3 in GGUF) */
  const ppcc_value *ff = op->n_in > 2 ? IN(2) : NULL;
  if (ff && (ff->rank != 1 || ff->shape[0] != x->shape[3] / 2 || !ppcc_dtype_is_float(ff->dtype))) {
    char msg[256];
    snprintf(msg, sizeof msg, "shape mismatch: rotary's frequency factors '%s' must be float [%lld] (half the head dim)",
             ff->name, (long long)(x->shape[3] / 2));
    return op_error(g, op, d, msg);
  }
  set_result(OUT(0), x);
  return PPCC_OK;
}

/* Per-pair divisors: none, or `half` positive numbers. */
static bool divisors_ok(const ppcc_op *op, const char *name, int64_t half) {
  int n = 0;
  const double *v = ppcc_attr_floats(op, name, &n);
  if (!ppcc_op_attr(op, name)) return true;
  if (n != half) return false;
  for (int i = 0; i < n; i++)
    if (!(v[i] > 0) || v[i] > 1e30) return false;
  return true;
}

static ppcc_status check_rope_scaling(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, int64_t half) {
  double factor = ppcc_attr_float(op, "rope_factor", 1.0), lo = ppcc_attr_float(op, "rope_low_freq_factor", 1.0),
         hi = ppcc_attr_float(op, "rope_high_freq_factor", 4.0), af = ppcc_attr_float(op, "rope_attention_factor", 1.0);
  int64_t orig = ppcc_attr_int(op, "rope_original_max_position", 0),
          dyn = ppcc_attr_int(op, "rope_dynamic_max_position", 0), after = ppcc_attr_int(op, "rope_long_after", 0);
  if (!(factor > 0) || !(lo > 0) || !(hi > lo) || orig < 0 || dyn < 0 || after < 0 || !(af > 0) || af > 1e30 ||
      (dyn > 0 && (orig > 0 || half < 2)))
    return op_error(g, op, d, "rope scaling needs rope_factor > 0, 0 < rope_low_freq_factor < rope_high_freq_factor, "
                              "rope_original_max_position, rope_dynamic_max_position (not both, head dim > 2) and "
                              "rope_long_after >= 0, rope_attention_factor > 0");
  if (!divisors_ok(op, "rope_divisors", half) || !divisors_ok(op, "rope_long_divisors", half) ||
      (ppcc_op_attr(op, "rope_long_divisors") != NULL) != (ppcc_op_attr(op, "rope_long_after") != NULL)) {
    char msg[200];
    snprintf(msg, sizeof msg, "rope_divisors and rope_long_divisors must hold %lld positive numbers (half the head dim); "
             "rope_long_divisors goes with rope_long_after", (long long)half);
    return op_error(g, op, d, msg);
  }
  return PPCC_OK;
}

static ppcc_status shard_rotary(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  if (is_kind(x, PPCC_LAYOUT_UNREDUCED)) return layouts_error(g, op, d, "rotary of partial sums is wrong; all_reduce first");
  if (is_kind(x, PPCC_LAYOUT_SPLIT) && (x->layout.dim == 1 || x->layout.dim == 3))
    return layouts_error(g, op, d, "rotary needs whole sequences and head dims; split over batch or heads");
  if (is_kind(x, PPCC_LAYOUT_SPLIT) && x->layout.dim == 0 && IN(1)->rank == 2)
    return layouts_error(g, op, d, "per-row positions [batch, seq] need whole batch rows; split over heads");
  if (!params_follow(g, op, 1)) return layouts_error(g, op, d, "positions and frequency factors must be replicated like x");
  OUT(0)->layout = x->layout;
  return PPCC_OK;
}

/* attention(q[B, Hq, S, D], k[B, Hkv, T, D], v[B, Hkv, T, Dv]) -> [B, Hq, S, Dv];
 * seq_major: q[B, S, Hq, D], k and v [B, T, Hkv, D] -> [B, S, Hq, Dv]. */
static int attention_heads_dim(const ppcc_op *op) { return ppcc_attr_bool(op, "seq_major", false) ? 2 : 1; }

static ppcc_status shape_attention(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *q = IN(0), *k = IN(1), *v = IN(2);
  int hd = attention_heads_dim(op), sd = 3 - hd; /* the heads' dim and the positions' */
  int n_in = op->n_in;
  op->n_in = 3; /* q, k, v share a dtype; positions are indices */
  ppcc_status st = check_same_dtype(g, op, d);
  op->n_in = n_in;
  if (!st) st = check_float(g, op, d, 0);
  if (st) return st;
  bool ok = q->rank == 4 && k->rank == 4 && v->rank == 4 && q->shape[0] == k->shape[0] && k->shape[0] == v->shape[0] &&
            k->shape[hd] == v->shape[hd] && k->shape[hd] > 0 && q->shape[hd] % k->shape[hd] == 0 &&
            k->shape[sd] == v->shape[sd] && q->shape[3] == k->shape[3] && q->shape[sd] <= k->shape[sd];
  if (ok && op->n_in == 4) { /* positions[S] or [B, S]: query s of row b sees keys 0..positions[b, s] */
    const ppcc_value *pos = IN(3);
    bool rank_ok = pos->rank == 1 || (pos->rank == 2 && pos->shape[0] == q->shape[0]);
    if (!rank_ok || pos->shape[pos->rank - 1] != q->shape[sd] || (pos->dtype != PPCC_I64 && pos->dtype != PPCC_I32)) {
      char msg[256];
      snprintf(msg, sizeof msg, "shape mismatch: attention positions '%s' must be i64 [S] or [B, S] (S = %lld, q's dim %d)",
               pos->name, (long long)q->shape[sd], sd);
      return op_error(g, op, d, msg);
    }
  }
  if (!ok) {
    char msg[256];
    snprintf(msg, sizeof msg, "shape mismatch: attention needs q %s, k and v %s with Hq a multiple of Hkv and S <= T",
             hd == 1 ? "[B, Hq, S, D]" : "[B, S, Hq, D]", hd == 1 ? "[B, Hkv, T, D]" : "[B, T, Hkv, D]");
    return op_error(g, op, d, msg);
  }
  int64_t window = ppcc_attr_int(op, "window", 0);
  double softcap = ppcc_attr_float(op, "softcap", 0);
  if (window < 0 || !(softcap >= 0 && softcap <= DBL_MAX)) { /* 0: no window, no cap */
    char msg[160];
    snprintf(msg, sizeof msg, "attrs.window must be >= 0 and attrs.softcap a finite number >= 0, got %lld and %g",
             (long long)window, softcap);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  set_result(o, q);
  o->shape[3] = v->shape[3];
  return PPCC_OK;
}

static ppcc_status shard_attention(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *q = IN(0);
  for (int k = 1; k < 3; k++)
    if (!ppcc_layout_equal(IN(k)->layout, q->layout))
      return layouts_error(g, op, d, "q, k and v must share one layout");
  if (op->n_in == 4 && !params_follow(g, op, 3)) return layouts_error(g, op, d, "positions must be replicated like q");
  ppcc_layout l = q->layout;
  if (l.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "attention over partial sums is wrong; all_reduce first");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim != 0 && l.dim != attention_heads_dim(op))
    return layouts_error(g, op, d, "attention splits over batch or heads only");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim == 0 && op->n_in == 4 && IN(3)->rank == 2)
    return layouts_error(g, op, d, "per-row positions [B, S] need whole batch rows; split over heads");
  OUT(0)->layout = l;
  return PPCC_OK;
}

static ppcc_status shape_concat(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  int64_t raw = ppcc_attr_int(op, "dim", 0);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  ppcc_status st = check_same_dtype(g, op, d);
  if (st) return st;
  ppcc_value *o = OUT(0);
  set_result(o, x);
  for (int k = 1; k < op->n_in; k++) {
    const ppcc_value *y = IN(k);
    bool ok = y->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = i == dim || y->shape[i] == x->shape[i];
    if (!ok) {
      char msg[256];
      snprintf(msg, sizeof msg, "shape mismatch: '%s' and '%s' differ outside the concat dim %d", x->name, y->name, dim);
      return op_error(g, op, d, msg);
    }
    o->shape[dim] += y->shape[dim];
  }
  return PPCC_OK;
}

static ppcc_status shard_concat(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int dim = norm_dim(ppcc_attr_int(op, "dim", 0), IN(0)->rank);
  for (int k = 1; k < op->n_in; k++)
    if (!ppcc_layout_equal(IN(k)->layout, IN(0)->layout)) return layouts_error(g, op, d, "operands must share one layout");
  if (is_kind(IN(0), PPCC_LAYOUT_SPLIT) && IN(0)->layout.dim == dim && IN(0)->layout.count > 1) {
    /* Shard-by-shard concat would interleave shards: gather every operand,
     * concat whole, re-split along dim (P11; the pass inserts the ops). */
    op->gather_operands |= (1u << op->n_in) - 1;
    op->resplit = true;
    op->resplit_dim = dim;
  }
  OUT(0)->layout = IN(0)->layout;
  return PPCC_OK;
}

static ppcc_status shape_slice(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  int64_t raw = ppcc_attr_int(op, "dim", 0);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  int64_t size = x->shape[dim], start = ppcc_attr_int(op, "start", 0), end = ppcc_attr_int(op, "end", 0);
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0 || end > size || start > end) {
    char msg[200];
    snprintf(msg, sizeof msg, "slice [%lld, %lld) is out of range for dim %d of size %lld",
             (long long)ppcc_attr_int(op, "start", 0), (long long)ppcc_attr_int(op, "end", 0), dim, (long long)size);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  set_result(o, x);
  o->shape[dim] = end - start;
  return PPCC_OK;
}

static ppcc_status shard_slice(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  int dim = norm_dim(ppcc_attr_int(op, "dim", 0), IN(0)->rank);
  if (is_kind(IN(0), PPCC_LAYOUT_SPLIT) && IN(0)->layout.dim == dim)
    return layouts_error(g, op, d, "slicing along the split dim; all_gather first");
  OUT(0)->layout = IN(0)->layout;
  return PPCC_OK;
}

/* Reduced dims of sum/mean as a mask; all dims when the attr is absent. */
static bool reduced_dims(const ppcc_op *op, int rank, bool *mask) {
  const ppcc_attr *a = ppcc_op_attr(op, "dim");
  for (int i = 0; i < rank; i++) mask[i] = a == NULL;
  for (int i = 0; a && i < a->n; i++) {
    int dim = norm_dim(a->ints[i], rank);
    if (dim < 0 || mask[dim]) return false;
    mask[dim] = true;
  }
  return true;
}

static ppcc_status shape_reduce(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  bool mask[PPCC_MAX_RANK];
  if (!reduced_dims(op, x->rank, mask)) {
    char msg[128];
    snprintf(msg, sizeof msg, "attrs.dim must list distinct dims of the rank-%d operand", x->rank);
    return op_error(g, op, d, msg);
  }
  bool keep = ppcc_attr_bool(op, "keepdim", false);
  ppcc_value *o = OUT(0);
  o->dtype = x->dtype;
  o->rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (!mask[i]) o->shape[o->rank++] = x->shape[i];
    else if (keep) o->shape[o->rank++] = 1;
  return PPCC_OK;
}

/* Summing over the split dim leaves partial sums; a mean would divide by
 * the local size, so it needs the whole dim. */
static ppcc_status shard_reduce(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  ppcc_layout l = x->layout;
  bool mask[PPCC_MAX_RANK];
  reduced_dims(op, x->rank, mask);
  if (l.kind != PPCC_LAYOUT_SPLIT) {
    OUT(0)->layout = l;
    return PPCC_OK;
  }
  if (mask[l.dim]) {
    if (op->info->id == PPCC_OP_mean)
      return layouts_error(g, op, d, "mean over the split dim needs the whole dim; all_gather first");
    OUT(0)->layout = (ppcc_layout){PPCC_LAYOUT_UNREDUCED, -1, l.count};
    return PPCC_OK;
  }
  int dim = l.dim;
  if (!ppcc_attr_bool(op, "keepdim", false))
    for (int i = 0; i < l.dim; i++) dim -= mask[i];
  OUT(0)->layout = split_layout(dim, l.count);
  return PPCC_OK;
}

/* ---- conv, max_pool: x [N, C, spatial...] with 1 or 2 spatial dims ---- */

bool ppcc_conv_geom_read(const ppcc_op *op, int rank, const int64_t *kernel, ppcc_conv_geom *gm) {
  memset(gm, 0, sizeof *gm);
  int s = rank - 2;
  if (s < 1 || s > 2) return false;
  gm->spatial = s;
  gm->group = ppcc_attr_int(op, "group", 1);
  const ppcc_attr *st = ppcc_op_attr(op, "strides"), *pd = ppcc_op_attr(op, "pads"), *dl = ppcc_op_attr(op, "dilations");
  const ppcc_attr *ks = ppcc_op_attr(op, "kernel");
  if ((st && st->n != s) || (pd && pd->n != 2 * s) || (dl && dl->n != s) || (ks && ks->n != s)) return false;
  for (int i = 0; i < s; i++) {
    gm->kernel[i] = ks ? ks->ints[i] : kernel[i];
    gm->stride[i] = st ? st->ints[i] : 1;
    gm->dilation[i] = dl ? dl->ints[i] : 1;
    gm->pad_begin[i] = pd ? pd->ints[i] : 0;
    gm->pad_end[i] = pd ? pd->ints[s + i] : 0;
    if (gm->kernel[i] < 1 || gm->stride[i] < 1 || gm->dilation[i] < 1 || gm->pad_begin[i] < 0 || gm->pad_end[i] < 0 ||
        gm->kernel[i] > (INT64_C(1) << 24) || gm->stride[i] > (INT64_C(1) << 24) || gm->dilation[i] > (INT64_C(1) << 24) ||
        gm->pad_begin[i] > (INT64_C(1) << 24) || gm->pad_end[i] > (INT64_C(1) << 24))
      return false;
  }
  return gm->group >= 1;
}

int64_t ppcc_conv_out_dim(const ppcc_conv_geom *gm, int i, int64_t in) {
  int64_t span = gm->dilation[i] * (gm->kernel[i] - 1) + 1, padded = in + gm->pad_begin[i] + gm->pad_end[i];
  return padded < span ? 0 : (padded - span) / gm->stride[i] + 1;
}

/* The result [N, F, out...] of a conv (F = filters) or max_pool (F = C). */
static ppcc_status shape_window(ppcc_graph *g, ppcc_op *op, ppcc_diag *d, bool conv) {
  const ppcc_value *x = IN(0), *w = conv ? IN(1) : NULL;
  char msg[256];
  ppcc_status st = check_float(g, op, d, 0);
  if (!st && conv) st = check_same_dtype(g, op, d);
  if (st) return st;
  ppcc_conv_geom gm;
  if (x->rank < 3 || x->rank > 4 || (conv && w->rank != x->rank)) {
    snprintf(msg, sizeof msg, "needs x [N, C, W] or [N, C, H, W]%s", conv ? " and a weight [F, C/group, kernel...] of its rank" : "");
    return op_error(g, op, d, msg);
  }
  if (!ppcc_conv_geom_read(op, x->rank, conv ? w->shape + 2 : NULL, &gm))
    return op_error(g, op, d, "kernel, strides, pads, dilations or group are invalid (one per spatial dim, pads twice; positive)");
  if (conv && (x->shape[1] % gm.group != 0 || w->shape[0] % gm.group != 0 || w->shape[1] * gm.group != x->shape[1])) {
    snprintf(msg, sizeof msg, "channels do not match: x has %lld, weight [%lld, %lld, ...] with group %lld",
             (long long)x->shape[1], (long long)w->shape[0], (long long)w->shape[1], (long long)gm.group);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  set_result(o, x);
  if (conv) o->shape[1] = w->shape[0];
  for (int i = 0; i < gm.spatial; i++) {
    o->shape[2 + i] = ppcc_conv_out_dim(&gm, i, x->shape[2 + i]);
    if (o->shape[2 + i] < 1) return op_error(g, op, d, "the window is larger than the padded input");
  }
  return PPCC_OK;
}
static ppcc_status shape_conv(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shape_window(g, op, d, true); }
static ppcc_status shape_max_pool(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) { return shape_window(g, op, d, false); }

/* conv: the batch split (x split on dim 0, weight replicated) or the
 * filters split (x replicated, weight split on dim 0: each shard computes
 * its output channels; group 1, where every filter reads every channel). */
static ppcc_status shard_conv(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_layout lx = IN(0)->layout, lw = IN(1)->layout;
  ppcc_value *o = OUT(0);
  if (lx.kind == PPCC_LAYOUT_UNSHARDED && lw.kind == PPCC_LAYOUT_UNSHARDED) o->layout = lx;
  else if (lx.count != lw.count) return layouts_error(g, op, d, "x and weight must be sharded over the same count");
  else if (lx.kind == PPCC_LAYOUT_REPLICATED && lw.kind == PPCC_LAYOUT_REPLICATED) o->layout = lx;
  else if (lx.kind == PPCC_LAYOUT_SPLIT && lx.dim == 0 && lw.kind == PPCC_LAYOUT_REPLICATED) o->layout = lx;
  else if (lx.kind == PPCC_LAYOUT_REPLICATED && lw.kind == PPCC_LAYOUT_SPLIT && lw.dim == 0 &&
           ppcc_attr_int(op, "group", 1) == 1)
    o->layout = split_layout(1, lw.count);
  else
    return layouts_error(g, op, d, "conv splits the batch (x on dim 0) or the filters (weight on dim 0, group 1)");
  return PPCC_OK;
}

/* max_pool: each channel and batch row on its own; spatial dims whole. */
static ppcc_status shard_max_pool(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_layout l = IN(0)->layout;
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim >= 2) return layouts_error(g, op, d, "max_pool needs whole spatial dims");
  if (l.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "the max of partial sums is not the max");
  OUT(0)->layout = l;
  return PPCC_OK;
}

/* gather_elements(data, index): out[i..] = data[i.. with dim replaced by
 * index[i..]]; same ranks, an i64/i32 index no larger than data off dim. */
static ppcc_status shape_gather_elements(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0), *ix = IN(1);
  int64_t raw = ppcc_attr_int(op, "dim", 0);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  char msg[512], sx[128], si[128];
  shape_str(x, sx, sizeof sx);
  shape_str(ix, si, sizeof si);
  if (ix->dtype != PPCC_I64 && ix->dtype != PPCC_I32) {
    snprintf(msg, sizeof msg, "index '%.64s' must be i64 or i32, not %s", ix->name, ppcc_dtype_name(ix->dtype));
    return op_error(g, op, d, msg);
  }
  bool ok = ix->rank == x->rank;
  for (int i = 0; ok && i < x->rank; i++) ok = i == dim || ix->shape[i] <= x->shape[i];
  if (!ok) {
    snprintf(msg, sizeof msg, "index %s must have data %s's rank and no larger dims off dim %d", si, sx, dim);
    return op_error(g, op, d, msg);
  }
  set_result(OUT(0), ix);
  OUT(0)->dtype = x->dtype;
  return PPCC_OK;
}

/* Whole operands only: unsharded, or both replicated. */
static ppcc_status shard_gather_elements(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_layout a = IN(0)->layout, b = IN(1)->layout;
  if (a.kind == PPCC_LAYOUT_UNSHARDED && b.kind == PPCC_LAYOUT_UNSHARDED) {
    OUT(0)->layout = a;
    return PPCC_OK;
  }
  if (a.kind == PPCC_LAYOUT_REPLICATED && b.kind == PPCC_LAYOUT_REPLICATED && a.count == b.count) {
    OUT(0)->layout = a;
    return PPCC_OK;
  }
  return layouts_error(g, op, d, "gather_elements needs both operands unsharded or replicated; all_gather first");
}

/* gather(data, index): numpy's take along dim (ONNX Gather): the result is
 * data's dims before dim, index's dims, data's dims after dim; an i64/i32
 * index of any rank (a negative one counts from the end). */
static ppcc_status shape_gather(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0), *ix = IN(1);
  int64_t raw = ppcc_attr_int(op, "dim", 0);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  char msg[256];
  if (ix->dtype != PPCC_I64 && ix->dtype != PPCC_I32) {
    snprintf(msg, sizeof msg, "index '%.64s' must be i64 or i32, not %s", ix->name, ppcc_dtype_name(ix->dtype));
    return op_error(g, op, d, msg);
  }
  if (x->rank + ix->rank - 1 > PPCC_MAX_RANK) {
    snprintf(msg, sizeof msg, "the result would have rank %d, more than %d", x->rank + ix->rank - 1, PPCC_MAX_RANK);
    return op_error(g, op, d, msg);
  }
  ppcc_value *o = OUT(0);
  int r = 0;
  for (int i = 0; i < dim; i++) o->shape[r++] = x->shape[i];
  for (int i = 0; i < ix->rank; i++) o->shape[r++] = ix->shape[i];
  for (int i = dim + 1; i < x->rank; i++) o->shape[r++] = x->shape[i];
  o->rank = r;
  o->dtype = x->dtype;
  return PPCC_OK;
}

/* Whole operands (both unsharded, or both replicated), or data split off
 * the gathered dim with the index replicated: each shard gathers its own
 * part, the result split on the same dim (shifted past the index's dims). */
static ppcc_status shard_gather(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_layout a = IN(0)->layout, b = IN(1)->layout;
  int dim = norm_dim(ppcc_attr_int(op, "dim", 0), IN(0)->rank);
  if (a.kind == PPCC_LAYOUT_UNSHARDED && b.kind == PPCC_LAYOUT_UNSHARDED) {
    OUT(0)->layout = a;
    return PPCC_OK;
  }
  if (b.kind == PPCC_LAYOUT_REPLICATED && a.count == b.count) {
    if (a.kind == PPCC_LAYOUT_REPLICATED) {
      OUT(0)->layout = a;
      return PPCC_OK;
    }
    if (a.kind == PPCC_LAYOUT_SPLIT && a.dim != dim) {
      OUT(0)->layout = split_layout(a.dim < dim ? a.dim : a.dim + IN(1)->rank - 1, a.count);
      return PPCC_OK;
    }
  }
  return layouts_error(g, op, d, "gather needs the index whole (replicated) and the data whole or split off the gathered dim");
}

/* reduce_max: float only on every backend (the JIT lowers floats). */
static ppcc_status shape_reduce_max(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_status st = check_float(g, op, d, 0);
  return st ? st : shape_reduce(g, op, d);
}

/* The max of partial sums or of part of a dim is not the max: both need
 * the whole tensor first. */
static ppcc_status shard_reduce_max(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  bool mask[PPCC_MAX_RANK];
  reduced_dims(op, x->rank, mask);
  if (x->layout.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "the max of partial sums is wrong; all_reduce first");
  if (x->layout.kind == PPCC_LAYOUT_SPLIT && mask[x->layout.dim])
    return layouts_error(g, op, d, "max over the split dim needs the whole dim; all_gather first");
  return shard_reduce(g, op, d);
}

static ppcc_status shape_argmax(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  ppcc_status st = check_float(g, op, d, 0); /* the JIT lowers float argmax only; refuse ints alike */
  if (st) return st;
  int64_t raw = ppcc_attr_int(op, "dim", -1);
  int dim = norm_dim(raw, x->rank);
  if (dim < 0) return dim_error(g, op, d, "dim", raw, x->rank);
  ppcc_value *o = OUT(0);
  o->dtype = PPCC_I64;
  o->rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (i != dim) o->shape[o->rank++] = x->shape[i];
  return PPCC_OK;
}

static ppcc_status shard_argmax(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  const ppcc_value *x = IN(0);
  int dim = norm_dim(ppcc_attr_int(op, "dim", -1), x->rank);
  ppcc_layout l = x->layout;
  if (l.kind == PPCC_LAYOUT_UNREDUCED) return layouts_error(g, op, d, "argmax of partial sums is wrong; all_reduce first");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim == dim)
    return layouts_error(g, op, d, "argmax over the split dim needs the whole dim; all_gather first");
  if (l.kind == PPCC_LAYOUT_SPLIT && l.dim > dim) l.dim--;
  OUT(0)->layout = l;
  return PPCC_OK;
}

/* ---------------- FLOP counts ---------------- */
static double numel_out(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *o = &g->values[op->out[0]];
  return (double)ppcc_num_elements(o->rank, o->shape);
}
static double flops_zero(const ppcc_graph *g, const ppcc_op *op) { return 0; }
/* 2 * out * (C/group) * kernel volume */
static double flops_conv(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *w = &g->values[op->in[1]];
  double per = 2.0;
  for (int i = 1; i < w->rank; i++) per *= (double)w->shape[i];
  return numel_out(g, op) * per;
}
static double flops_pool(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_attr *k = ppcc_op_attr(op, "kernel");
  double per = 1.0;
  for (int i = 0; k && i < k->n; i++) per *= (double)k->ints[i];
  return numel_out(g, op) * per;
}
static double flops_elem1(const ppcc_graph *g, const ppcc_op *op) { return numel_out(g, op); }
static double flops_elem4(const ppcc_graph *g, const ppcc_op *op) { return 4 * numel_out(g, op); }
static double flops_elem8(const ppcc_graph *g, const ppcc_op *op) { return 8 * numel_out(g, op); }
static double flops_matmul(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *a = &g->values[op->in[0]];
  return 2.0 * numel_out(g, op) * (double)a->shape[a->rank - 1];
}
static double flops_linear(const ppcc_graph *g, const ppcc_op *op) {
  return flops_matmul(g, op) + (op->n_in == 3 ? numel_out(g, op) : 0);
}
static double flops_reduce(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *x = &g->values[op->in[0]];
  return x->layout.kind == PPCC_LAYOUT_UNREDUCED ? numel_out(g, op) * (x->layout.count - 1) : 0;
}

static double flops_reduce_in(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *x = &g->values[op->in[0]];
  return (double)ppcc_num_elements(x->rank, x->shape);
}
static double flops_attention(const ppcc_graph *g, const ppcc_op *op) {
  const ppcc_value *q = &g->values[op->in[0]], *k = &g->values[op->in[1]], *v = &g->values[op->in[2]];
  int sd = 3 - attention_heads_dim(op); /* Hq * S either way; T at k's positions dim */
  double scores = (double)q->shape[0] * (double)q->shape[1] * (double)q->shape[2] * (double)k->shape[sd];
  return scores * (2.0 * (double)q->shape[3] + 2.0 * (double)v->shape[3] + 4.0);
}

/* ---------------- batch rules (microbatching) ----------------
 * Called when some operand carries the batch in dim 0 (carries[v]); NULL
 * when the op keeps dim-0 rows apart, so running it on row chunks and
 * concatenating equals running it whole; else the reason it does not. */
#define CARRIES(k) (carries[op->in[k]])

/* Moves and layout conversions copy shards whole; reshape is checked by
 * the microbatch shape rule (dim 0 must scale with the batch). */
static const char *batch_any(const ppcc_graph *g, const ppcc_op *op, const bool *carries) { return NULL; }

static const char *batch_rowwise(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 0; k < op->n_in; k++)
    if (CARRIES(k) && IN(k)->rank != OUT(0)->rank) return "broadcasting moves the batch dim away from dim 0";
  return NULL;
}

/* matmul/linear: the activation's rows, or the batch of a batched matmul. */
static const char *batch_contract(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 0; k < op->n_in; k++) {
    bool ok = k == 0 ? IN(0)->rank >= 2 : k == 1 && IN(1)->rank >= 3;
    if (CARRIES(k) && !ok) return "it contracts over the batch dim";
  }
  return NULL;
}

static const char *batch_norm(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 0; k < op->n_in; k++)
    if (CARRIES(k) && (k != 0 || IN(0)->rank < 2)) return "it normalises over the batch dim";
  return NULL;
}

/* embedding ids, rotary x: the other operand (table, positions) is shared. */
/* conv, max_pool: rows of dim 0 apart; the weight is shared. */
static const char *batch_window(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  return op->n_in > 1 && CARRIES(1) ? "its weight would depend on the batch" : NULL;
}

static const char *batch_first_only(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 1; k < op->n_in; k++)
    if (CARRIES(k)) return "only its first operand may depend on the batch";
  return NULL;
}

/* rotary: per-row positions [B, S] carry the batch with x; [S] are shared. */
static const char *batch_rotary(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  if (CARRIES(1) && IN(1)->rank != 2) return "its positions [seq] would depend on the batch";
  if (op->n_in > 2 && CARRIES(2)) return "its frequency factors would depend on the batch";
  return NULL;
}

static const char *batch_all(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  for (int k = 0; k < op->n_in && k < 3; k++) /* attention's positions: shared [S] or per row [B, S] */
    if (!CARRIES(k)) return "all its operands must carry the batch";
  if (op->n_in == 4 && CARRIES(3) && IN(3)->rank != 2) return "its positions [S] would depend on the batch";
  return NULL;
}

static const char *along_dim(const ppcc_op *op, const bool *carries, const ppcc_graph *g, int64_t dflt) {
  return norm_dim(ppcc_attr_int(op, "dim", dflt), IN(0)->rank) != 0 ? NULL : "it works along the batch dim";
}
static const char *batch_dim_first(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  return along_dim(op, carries, g, 0);
}
static const char *batch_dim_last(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  return along_dim(op, carries, g, -1);
}

static const char *batch_reduce(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  bool mask[PPCC_MAX_RANK];
  reduced_dims(op, IN(0)->rank, mask);
  return IN(0)->rank > 0 && mask[0] ? "it reduces over the batch dim" : NULL;
}

/* gather_elements: row j of the index reads row j of the data, so both
 * carry the batch (or neither), and it does not gather along dim 0. */
static const char *batch_gather_elements(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  if (CARRIES(0) != CARRIES(1)) return "only one of data and index depends on the batch";
  return norm_dim(ppcc_attr_int(op, "dim", 0), IN(0)->rank) == 0 ? "it gathers along the batch dim" : NULL;
}

/* gather: the data's batch rows stay apart when it gathers along another
 * dim with an index that does not depend on the batch. */
static const char *batch_gather(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  if (CARRIES(1)) return "its index would depend on the batch";
  return CARRIES(0) && norm_dim(ppcc_attr_int(op, "dim", 0), IN(0)->rank) == 0 ? "it gathers along the batch dim" : NULL;
}

static const char *batch_transpose(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  int perm[PPCC_MAX_RANK];
  return transpose_perm(op, IN(0)->rank, perm) && perm[0] == 0 ? NULL : "it moves the batch dim away from dim 0";
}

/* P7 updates: batch rows may be written into a batch-carrying destination
 * along a non-batch dim; the index never depends on the batch. */
static const char *batch_inplace(const ppcc_graph *g, const ppcc_op *op, const bool *carries) {
  if (CARRIES(1) && (IN(1)->rank != 2 || !CARRIES(0))) return "the index would depend on the batch";
  if (CARRIES(2) && !CARRIES(0)) return "it writes batch rows into a batch-independent tensor";
  return index_dim(op) != 0 ? NULL : "it indexes along the batch dim";
}
#undef CARRIES

/* ---------------- the table ---------------- */
#define PPCC_FAMILY(f) PPCC_FAMILY_##f
#define PPCC_PIN(p) PPCC_PIN_##p
static const ppcc_op_info op_table[] = {
#define PPCC_OP(name, min_in, max_in, n_out, attrs, family, shape, shard, pin, flops, batch, kernel, lower) \
  {PPCC_OP_##name, #name, min_in, max_in, n_out, attrs, PPCC_FAMILY(family), shape, shard, PPCC_PIN(pin), flops, batch},
#include "ppcc/op_list.h"
#undef PPCC_OP
};

const ppcc_op_info *ppcc_op_table(int *count) {
  *count = PPCC_OP_COUNT;
  return op_table;
}

const ppcc_op_info *ppcc_op_lookup(const char *name) {
  for (int i = 0; i < PPCC_OP_COUNT; i++)
    if (strcmp(op_table[i].name, name) == 0) return &op_table[i];
  return NULL;
}

const ppcc_op_info *ppcc_op_info_by_id(ppcc_op_id id) {
  return (unsigned)id < PPCC_OP_COUNT ? &op_table[id] : NULL;
}

/* A split/replicated/unreduced layout with count 1 behaves as unsharded
 * (DESIGN §1): if the rule refuses the op as laid out, it is asked again
 * with count-1 operands seen as unsharded; the first refusal is the one
 * reported. Kept out of line: the common path stays a scan and a call. */
enum { MAX_RETRY_IN = 16 };

static ppcc_status apply_with_count1_operands(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, d->file, NULL);
  if (op->info->shard_rule(g, op, &quiet) == PPCC_OK) return PPCC_OK;
  ppcc_layout saved[MAX_RETRY_IN];
  for (int k = 0; k < op->n_in; k++) {
    saved[k] = IN(k)->layout;
    if (saved[k].count == 1) IN(k)->layout = ppcc_layout_unsharded();
  }
  op->gather_operands = 0;
  op->resplit = false;
  ppcc_status st = op->info->shard_rule(g, op, &quiet);
  for (int k = op->n_in - 1; k >= 0; k--) IN(k)->layout = saved[k]; /* reverse: an operand may repeat */
  return st == PPCC_OK ? PPCC_OK : op->info->shard_rule(g, op, d);
}

ppcc_status ppcc_apply_shard_rule(ppcc_graph *g, ppcc_op *op, ppcc_diag *d) {
  bool any_count1 = false;
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_layout *l = &IN(k)->layout;
    any_count1 |= l->count == 1 && l->kind != PPCC_LAYOUT_UNSHARDED;
  }
  return any_count1 && op->n_in <= MAX_RETRY_IN ? apply_with_count1_operands(g, op, d)
                                                : op->info->shard_rule(g, op, d);
}
