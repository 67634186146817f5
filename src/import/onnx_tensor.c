#define _DEFAULT_SOURCE 1 /* realpath */
/* ONNX constant tensors: decoding initializers (inline or external data,
 * bounds-checked and confined to the model's folder) and folding the ops
 * that exporters use to compute shapes and masks (Shape, ConstantOfShape,
 * Range, Trilu, Where, ...), so that static-shape graphs carry no shape
 * arithmetic into ppcc. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "onnx_internal.h"
#include "ppcc/runtime.h"

/* ---------------- tensors ---------------- */

bool ox_tensor_alloc(ox_tensor *t, ppcc_dtype dtype, int rank, const int64_t *shape) {
  memset(t, 0, sizeof *t);
  if (rank < 0 || rank > PPCC_MAX_RANK) return false;
  t->dtype = dtype;
  t->rank = rank;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0 || (shape[i] > 0 && n > OX_MAX_CONST_ELEMENTS / shape[i])) return false;
    t->shape[i] = shape[i];
    n *= shape[i];
  }
  if (n > OX_MAX_CONST_ELEMENTS) return false;
  t->n = n;
  t->data = calloc((size_t)(n > 0 ? n : 1), (size_t)ppcc_dtype_size(dtype));
  return t->data != NULL;
}

void ox_tensor_free(ox_tensor *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}

bool ox_tensor_copy(ox_tensor *dst, const ox_tensor *src) {
  if (!ox_tensor_alloc(dst, src->dtype, src->rank, src->shape)) return false;
  memcpy(dst->data, src->data, (size_t)src->n * (size_t)ppcc_dtype_size(src->dtype));
  return true;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) f = ldexpf((float)man, -24);
  else if (exp == 31) f = man ? NAN : INFINITY;
  else f = ldexpf((float)(man | 0x400), (int)exp - 25);
  return sign ? -f : f;
}

double ox_get(const ox_tensor *t, int64_t i) {
  switch (t->dtype) {
  case PPCC_F32: return ((const float *)t->data)[i];
  case PPCC_I64: return (double)((const int64_t *)t->data)[i];
  case PPCC_I32: return ((const int32_t *)t->data)[i];
  case PPCC_I8: return ((const int8_t *)t->data)[i];
  case PPCC_BOOL: return ((const uint8_t *)t->data)[i] != 0;
  case PPCC_F16: return half_to_float(((const uint16_t *)t->data)[i]);
  case PPCC_BF16: {
    uint32_t bits = (uint32_t)((const uint16_t *)t->data)[i] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  default: return 0;
  }
}

static int64_t to_int(double v) {
  if (isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return (int64_t)v;
}

int64_t ox_get_int(const ox_tensor *t, int64_t i) { return to_int(ox_get(t, i)); }

void ox_set(ox_tensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case PPCC_F32: ((float *)t->data)[i] = (float)v; break;
  case PPCC_I64: ((int64_t *)t->data)[i] = to_int(v); break;
  case PPCC_I32: ((int32_t *)t->data)[i] = (int32_t)(to_int(v) > INT32_MAX ? INT32_MAX : to_int(v) < INT32_MIN ? INT32_MIN : to_int(v)); break;
  case PPCC_I8: ((int8_t *)t->data)[i] = (int8_t)to_int(v); break;
  case PPCC_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
  /* a fold of f16/bf16 constants (Transpose, Gather, Neg...) keeps their dtype */
  case PPCC_F16: ((uint16_t *)t->data)[i] = ppcc_f32_to_f16((float)v); break;
  case PPCC_BF16: ((uint16_t *)t->data)[i] = ppcc_f32_to_bf16((float)v); break;
  default: break;
  }
}

bool ox_dtype_from_onnx(int32_t onnx_type, ppcc_dtype *out) {
  switch (onnx_type) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = PPCC_F32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = PPCC_F16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = PPCC_BF16; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = PPCC_I64; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = PPCC_I32; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = PPCC_I8; return true;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = PPCC_BOOL; return true;
  default: return false;
  }
}

/* ---------------- external data ---------------- */

static const char *external_key(const Onnx__TensorProto *t, const char *key) {
  for (size_t i = 0; i < t->n_external_data; i++)
    if (t->external_data[i]->key && strcmp(t->external_data[i]->key, key) == 0) return t->external_data[i]->value;
  return NULL;
}

static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || s[0] == '-') return false;
  *out = v;
  return true;
}

/* A relative path with no ".." component, resolving (symlinks too) to a
 * file inside dir. */
static ppcc_status open_inside(const char *dir, const char *location, const char *what, FILE **fp, ppcc_diag *d) {
  const char *el = location ? location : ""; /* the diagnostic escapes it */
  if (!dir) return ppcc_error(d, "tensor '%s': external data is not available for a model read from memory", what);
  if (!location || !*location || location[0] == '/')
    return ppcc_error(d, "tensor '%s': external data location '%s' must be a relative path inside the model's folder",
                      what, el);
  for (const char *p = location; *p;) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return ppcc_error(d, "tensor '%s': external data location '%s' escapes the model's folder", what, el);
    p += len + (slash ? 1 : 0);
  }
  size_t n = strlen(dir) + strlen(location) + 2;
  char *path = malloc(n);
  if (!path) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  snprintf(path, n, "%s/%s", dir, location);
  const char *ep = path;
  char *real_dir = realpath(dir, NULL), *real_file = realpath(path, NULL);
  ppcc_status st = PPCC_OK;
  if (!real_file) st = ppcc_error(d, "tensor '%s': cannot open external data '%s': %s", what, ep, strerror(errno));
  else if (!real_dir || strncmp(real_file, real_dir, strlen(real_dir)) != 0 || real_file[strlen(real_dir)] != '/')
    st = ppcc_error(d, "tensor '%s': external data location '%s' escapes the model's folder", what, el);
  if (!st) {
    struct stat sb;
    *fp = fopen(real_file, "rb");
    if (!*fp) st = ppcc_error(d, "tensor '%s': cannot open external data '%s': %s", what, ep, strerror(errno));
    else if (fstat(fileno(*fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
      fclose(*fp);
      *fp = NULL;
      st = ppcc_error(d, "tensor '%s': external data '%s' is not a regular file", what, ep);
    }
  }
  free(path);
  free(real_dir);
  free(real_file);
  return st;
}

static ppcc_status read_external(const Onnx__TensorProto *t, const char *dir, const char *what, void *buf,
                                 uint64_t want, ppcc_diag *d) {
  uint64_t offset = 0, length = want;
  const char *off_s = external_key(t, "offset"), *len_s = external_key(t, "length");
  if ((off_s && !parse_u64(off_s, &offset)) || (len_s && !parse_u64(len_s, &length)))
    return ppcc_error(d, "tensor '%s': external data offset/length are not non-negative integers", what);
  if (length != want)
    return ppcc_error(d, "tensor '%s': external data length %llu differs from the %llu bytes its shape needs", what,
                      (unsigned long long)length, (unsigned long long)want);
  FILE *fp = NULL;
  ppcc_status st = open_inside(dir, external_key(t, "location"), what, &fp, d);
  if (st) return st;
  struct stat sb;
  if (fstat(fileno(fp), &sb) != 0 || offset > (uint64_t)sb.st_size || length > (uint64_t)sb.st_size - offset)
    st = ppcc_error(d, "tensor '%s': external data [%llu, %llu) reaches past the end of '%s' (%lld bytes)", what,
                    (unsigned long long)offset, (unsigned long long)(offset + length), external_key(t, "location"),
                    (long long)sb.st_size);
  else if (fseeko(fp, (off_t)offset, SEEK_SET) != 0 || fread(buf, 1, (size_t)length, fp) != (size_t)length)
    st = ppcc_error(d, "tensor '%s': cannot read external data from '%s'", what, external_key(t, "location"));
  fclose(fp);
  return st;
}

/* ---------------- decoding ---------------- */

ppcc_status ox_tensor_from_proto(const Onnx__TensorProto *t, const char *dir, const char *what, ox_tensor *out,
                                 ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  int32_t type = t->has_data_type ? t->data_type : 0;
  bool is_double = type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  ppcc_dtype dtype = PPCC_F32;
  if (!is_double && !ox_dtype_from_onnx(type, &dtype))
    return ppcc_error(d, "tensor '%s': ONNX data type %d is not supported (f32, f16, bf16, f64, i64, i32, i8, bool)",
                      what, (int)type);
  if (t->n_dims > PPCC_MAX_RANK)
    return ppcc_error(d, "tensor '%s': rank %zu exceeds the maximum %d", what, t->n_dims, PPCC_MAX_RANK);
  if (!ox_tensor_alloc(out, dtype, (int)t->n_dims, t->dims))
    return ppcc_error(d, "tensor '%s': invalid shape or more than %lld elements", what,
                      (long long)OX_MAX_CONST_ELEMENTS);
  uint64_t n = (uint64_t)out->n, elem = is_double ? 8 : (uint64_t)ppcc_dtype_size(dtype);
  double *dbl = NULL;
  void *dst = out->data;
  if (is_double && !(dst = dbl = malloc((size_t)(n ? n : 1) * 8))) {
    ox_tensor_free(out);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  ppcc_status st = PPCC_OK;
  bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (external) {
    st = read_external(t, dir, what, dst, n * elem, d);
  } else if (t->has_raw_data) {
    if (t->raw_data.len != n * elem)
      st = ppcc_error(d, "tensor '%s': raw_data has %zu bytes, its shape needs %llu", what, t->raw_data.len,
                      (unsigned long long)(n * elem));
    else if (n) memcpy(dst, t->raw_data.data, (size_t)(n * elem));
  } else if (is_double) {
    if (t->n_double_data != n) st = ppcc_error(d, "tensor '%s': %zu values for %llu elements", what, t->n_double_data, (unsigned long long)n);
    else if (n) memcpy(dst, t->double_data, (size_t)n * 8);
  } else if (dtype == PPCC_F32) {
    if (t->n_float_data != n) st = ppcc_error(d, "tensor '%s': %zu values for %llu elements", what, t->n_float_data, (unsigned long long)n);
    else if (n) memcpy(dst, t->float_data, (size_t)n * 4);
  } else if (dtype == PPCC_I64) {
    if (t->n_int64_data != n) st = ppcc_error(d, "tensor '%s': %zu values for %llu elements", what, t->n_int64_data, (unsigned long long)n);
    else if (n) memcpy(dst, t->int64_data, (size_t)n * 8);
  } else {
    /* i32, i8, bool, f16 and bf16 (as bit patterns) live in int32_data */
    if (t->n_int32_data != n) st = ppcc_error(d, "tensor '%s': %zu values for %llu elements", what, t->n_int32_data, (unsigned long long)n);
    for (uint64_t i = 0; !st && i < n; i++) {
      int32_t v = t->int32_data[i];
      if (dtype == PPCC_I32) ((int32_t *)dst)[i] = v;
      else if (dtype == PPCC_F16 || dtype == PPCC_BF16) ((uint16_t *)dst)[i] = (uint16_t)v;
      else ((uint8_t *)dst)[i] = (uint8_t)(dtype == PPCC_BOOL ? v != 0 : v);
    }
  }
  if (!st && dtype == PPCC_BOOL)
    for (uint64_t i = 0; i < n; i++) ((uint8_t *)out->data)[i] = ((uint8_t *)out->data)[i] != 0;
  if (!st && is_double)
    for (uint64_t i = 0; i < n; i++) ((float *)out->data)[i] = (float)dbl[i];
  free(dbl);
  if (st) ox_tensor_free(out);
  return st;
}

/* ---------------- attributes ---------------- */

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a && a->has_i ? a->i : dflt;
}

float ox_attr_float(const Onnx__NodeProto *n, const char *name, float dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a && a->has_f ? a->f : dflt;
}

/* ---------------- names in messages ---------------- */

/* ---------------- folding ---------------- */

static ppcc_status fold_error(ppcc_diag *d, const char *who, const char *msg) {
  return ppcc_error(d, "%s: %s", who, msg);
}

static ppcc_status alloc_or_fail(ox_tensor *t, ppcc_dtype dt, int rank, const int64_t *shape, const char *who,
                                 ppcc_diag *d) {
  if (rank > PPCC_MAX_RANK || !ox_tensor_alloc(t, dt, rank, shape))
    return fold_error(d, who, "folded constant is too large or has an invalid shape");
  return PPCC_OK;
}

/* alloc_or_fail for a fold whose result size comes from values or
 * broadcasting rather than from one operand (ConstantOfShape, Range,
 * Expand, broadcasts, Gather): at most OX_MAX_GROWN_ELEMENTS elements or
 * as many as its operands hold, so a few bytes of a hostile model cannot
 * make the importer fill gigabytes. */
static ppcc_status alloc_grown(ox_tensor *t, ppcc_dtype dt, int rank, const int64_t *shape, int64_t operands,
                               const char *who, ppcc_diag *d) {
  int64_t cap = operands > OX_MAX_GROWN_ELEMENTS ? operands : OX_MAX_GROWN_ELEMENTS, n = 1;
  for (int i = 0; i < rank && rank <= PPCC_MAX_RANK; i++) {
    if (shape[i] > 0 && n > cap / shape[i]) {
      memset(t, 0, sizeof *t);
      return ppcc_error(d, "%s: the folded constant would have more than %lld elements (2^24, or as many as its "
                           "operands)", who, (long long)cap);
    }
    n *= shape[i] > 0 ? shape[i] : 1;
  }
  return alloc_or_fail(t, dt, rank, shape, who, d);
}

/* Broadcast shape of a and b (numpy rules). */
static bool broadcast_shape(const ox_tensor *a, const ox_tensor *b, int *rank, int64_t *shape) {
  *rank = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < *rank; i++) {
    int ia = i - (*rank - a->rank), ib = i - (*rank - b->rank);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    shape[i] = da == 1 ? db : da;
  }
  return true;
}

/* Flat index into t of the element at out-index idx (broadcast). */
static int64_t broadcast_index(const ox_tensor *t, int rank, const int64_t *idx) {
  int64_t off = 0;
  for (int i = 0; i < t->rank; i++) {
    int64_t k = idx[i + rank - t->rank];
    off = off * t->shape[i] + (t->shape[i] == 1 ? 0 : k);
  }
  return off;
}

static void next_index(int rank, const int64_t *shape, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < shape[i]) return;
    idx[i] = 0;
  }
}

typedef double (*binary_fn)(double, double);
static double b_add(double a, double b) { return a + b; }
static double b_sub(double a, double b) { return a - b; }
static double b_mul(double a, double b) { return a * b; }
static double b_div(double a, double b) { return b == 0 ? (a == 0 ? NAN : a > 0 ? INFINITY : -INFINITY) : a / b; }
static double b_idiv(double a, double b) { return b == 0 ? 0 : trunc(a / b); }
static double b_pow(double a, double b) { return pow(a, b); }
static double b_eq(double a, double b) { return a == b; }
static double b_lt(double a, double b) { return a < b; }
static double b_gt(double a, double b) { return a > b; }
static double b_and(double a, double b) { return a != 0 && b != 0; }
static double b_or(double a, double b) { return a != 0 || b != 0; }
static double b_max(double a, double b) { return a > b ? a : b; }
static double b_min(double a, double b) { return a < b ? a : b; }

typedef double (*unary_fn)(double);
static double u_neg(double x) { return -x; }
static double u_recip(double x) { return 1.0 / x; }
static double u_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double u_relu(double x) { return x > 0 ? x : 0; }
static double u_not(double x) { return x == 0; }

static const struct { const char *name; unary_fn fn; } unary_ops[] = {
  {"Neg", u_neg}, {"Sqrt", sqrt}, {"Reciprocal", u_recip}, {"Exp", exp}, {"Log", log}, {"Erf", erf},
  {"Tanh", tanh}, {"Sigmoid", u_sigmoid}, {"Relu", u_relu}, {"Cos", cos}, {"Sin", sin}, {"Floor", floor},
  {"Ceil", ceil}, {"Abs", fabs}, {"Not", u_not},
};
static const struct { const char *name; binary_fn fn; bool to_bool; } binary_ops[] = {
  {"Add", b_add, false}, {"Sub", b_sub, false}, {"Mul", b_mul, false}, {"Div", b_div, false},
  {"Pow", b_pow, false}, {"Equal", b_eq, true}, {"Less", b_lt, true}, {"Greater", b_gt, true},
  {"And", b_and, true}, {"Or", b_or, true}, {"Max", b_max, false}, {"Min", b_min, false},
};
static const char *const other_ops[] = {
  "Constant", "Identity", "Cast", "ConstantOfShape", "Range", "Trilu", "Where", "Unsqueeze", "Squeeze",
  "Reshape", "Flatten", "Concat", "Gather", "Slice", "Expand", "Transpose", "Dropout", NULL,
};
#define N_OF(a) (int)(sizeof(a) / sizeof((a)[0]))

bool ox_foldable(const char *op) {
  for (int i = 0; i < N_OF(unary_ops); i++) if (strcmp(unary_ops[i].name, op) == 0) return true;
  for (int i = 0; i < N_OF(binary_ops); i++) if (strcmp(binary_ops[i].name, op) == 0) return true;
  for (int i = 0; other_ops[i]; i++) if (strcmp(other_ops[i], op) == 0) return true;
  return false;
}

static ppcc_status fold_binary(binary_fn fn, bool to_bool, bool int_div, const ox_tensor *a, const ox_tensor *b,
                               const char *who, ox_tensor *out, ppcc_diag *d) {
  int rank;
  int64_t shape[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0};
  if (a->rank > PPCC_MAX_RANK || b->rank > PPCC_MAX_RANK || !broadcast_shape(a, b, &rank, shape))
    return fold_error(d, who, "operand shapes do not broadcast");
  ppcc_status st = alloc_grown(out, to_bool ? PPCC_BOOL : a->dtype, rank, shape, a->n + b->n, who, d);
  if (st) return st;
  bool ints = !ppcc_dtype_is_float(a->dtype);
  for (int64_t i = 0; i < out->n; i++) {
    double x = ox_get(a, broadcast_index(a, rank, idx)), y = ox_get(b, broadcast_index(b, rank, idx));
    ox_set(out, i, int_div && ints ? b_idiv(x, y) : fn(x, y));
    next_index(rank, shape, idx);
  }
  return PPCC_OK;
}

/* Reads a constant int64 list (axes, shape, starts...). */
static bool int_list(const ox_tensor *t, int64_t *v, int max, int *n) {
  if (!t || t->n > max || ppcc_dtype_is_float(t->dtype)) return false;
  for (int64_t i = 0; i < t->n; i++) v[i] = ox_get_int(t, i);
  *n = (int)t->n;
  return true;
}

static bool norm_axis(int64_t *axis, int rank) {
  if (*axis < 0) *axis += rank;
  return *axis >= 0 && *axis < rank;
}

static ppcc_status fold_reshape_like(const ox_tensor *x, int rank, const int64_t *shape, const char *who, ox_tensor *out,
                                     ppcc_diag *d) {
  ppcc_status st = alloc_or_fail(out, x->dtype, rank, shape, who, d);
  if (st) return st;
  if (out->n != x->n) {
    ox_tensor_free(out);
    return fold_error(d, who, "reshape changes the element count");
  }
  memcpy(out->data, x->data, (size_t)x->n * (size_t)ppcc_dtype_size(x->dtype));
  return PPCC_OK;
}

static ppcc_status fold_constant(const Onnx__NodeProto *n, const char *who, ox_tensor *out, ppcc_diag *d) {
  const Onnx__AttributeProto *a;
  if ((a = ox_attr(n, "value")) && a->t) return ox_tensor_from_proto(a->t, NULL, who, out, d);
  int64_t one = 1;
  if ((a = ox_attr(n, "value_float")) && a->has_f) {
    ppcc_status st = alloc_or_fail(out, PPCC_F32, 0, &one, who, d);
    if (!st) ox_set(out, 0, a->f);
    return st;
  }
  if ((a = ox_attr(n, "value_int")) && a->has_i) {
    ppcc_status st = alloc_or_fail(out, PPCC_I64, 0, &one, who, d);
    if (!st) ox_set(out, 0, (double)a->i);
    return st;
  }
  if ((a = ox_attr(n, "value_ints")) || (a = ox_attr(n, "value_floats"))) {
    bool ints = a->n_ints > 0 || a->n_floats == 0;
    int64_t len = ints ? (int64_t)a->n_ints : (int64_t)a->n_floats;
    ppcc_status st = alloc_or_fail(out, ints ? PPCC_I64 : PPCC_F32, 1, &len, who, d);
    for (int64_t i = 0; !st && i < len; i++) ox_set(out, i, ints ? (double)a->ints[i] : a->floats[i]);
    return st;
  }
  return fold_error(d, who, "Constant has no value attribute ppcc reads (value, value_float, value_int(s), value_floats)");
}

static ppcc_status fold_slice(const ox_tensor *x, ox_tensor *const *in, int n_in, const char *who, ox_tensor *out,
                              ppcc_diag *d) {
  int64_t starts[PPCC_MAX_RANK], ends[PPCC_MAX_RANK], axes[PPCC_MAX_RANK], steps[PPCC_MAX_RANK];
  int ns, ne, na, nst;
  if (n_in < 3 || !int_list(in[1], starts, PPCC_MAX_RANK, &ns) || !int_list(in[2], ends, PPCC_MAX_RANK, &ne) || ns != ne)
    return fold_error(d, who, "Slice needs constant starts and ends of one length");
  na = ns;
  for (int i = 0; i < ns; i++) axes[i] = i, steps[i] = 1;
  if (n_in > 3 && in[3] && (!int_list(in[3], axes, PPCC_MAX_RANK, &na) || na != ns))
    return fold_error(d, who, "Slice axes must be constant and as long as starts");
  if (n_in > 4 && in[4] && (!int_list(in[4], steps, PPCC_MAX_RANK, &nst) || nst != ns))
    return fold_error(d, who, "Slice steps must be constant and as long as starts");
  int64_t lo[PPCC_MAX_RANK], step[PPCC_MAX_RANK], shape[PPCC_MAX_RANK];
  for (int i = 0; i < x->rank; i++) lo[i] = 0, step[i] = 1, shape[i] = x->shape[i];
  for (int i = 0; i < ns; i++) {
    int64_t ax = axes[i], dim;
    if (!norm_axis(&ax, x->rank) || steps[i] == 0 || steps[i] > OX_MAX_CONST_ELEMENTS ||
        steps[i] < -OX_MAX_CONST_ELEMENTS)
      return fold_error(d, who, "Slice axis out of range, or step 0 or out of range");
    dim = x->shape[ax];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (steps[i] > 0) {
      s = s < 0 ? 0 : s > dim ? dim : s;
      e = e < 0 ? 0 : e > dim ? dim : e;
      shape[ax] = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s; /* ONNX: [0, dim - 1] counting down */
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      shape[ax] = dim > 0 && s > e ? (s - e + (-steps[i]) - 1) / (-steps[i]) : 0;
    }
    lo[ax] = s;
    step[ax] = steps[i];
  }
  ppcc_status st = alloc_or_fail(out, x->dtype, x->rank, shape, who, d);
  int64_t idx[PPCC_MAX_RANK] = {0};
  for (int64_t i = 0; !st && i < out->n; i++) {
    int64_t off = 0;
    for (int k = 0; k < x->rank; k++) off = off * x->shape[k] + lo[k] + idx[k] * step[k];
    ox_set(out, i, ox_get(x, off));
    next_index(x->rank, shape, idx);
  }
  return st;
}

static ppcc_status fold_gather(const Onnx__NodeProto *n, const ox_tensor *x, const ox_tensor *ind, const char *who,
                               ox_tensor *out, ppcc_diag *d) {
  int64_t axis = ox_attr_int(n, "axis", 0);
  if (!norm_axis(&axis, x->rank) || x->rank + ind->rank - 1 > PPCC_MAX_RANK)
    return fold_error(d, who, "Gather axis out of range");
  int64_t shape[PPCC_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < axis; i++) shape[rank++] = x->shape[i];
  for (int i = 0; i < ind->rank; i++) shape[rank++] = ind->shape[i];
  for (int i = (int)axis + 1; i < x->rank; i++) shape[rank++] = x->shape[i];
  ppcc_status st = alloc_grown(out, x->dtype, rank, shape, x->n + ind->n, who, d);
  if (st) return st;
  int64_t outer = 1, inner = 1, dim = x->shape[axis];
  for (int i = 0; i < axis; i++) outer *= x->shape[i];
  for (int i = (int)axis + 1; i < x->rank; i++) inner *= x->shape[i];
  int64_t o = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t j = 0; j < ind->n; j++) {
      int64_t k = ox_get_int(ind, j);
      if (k < 0) k += dim;
      if (k < 0 || k >= dim) {
        ox_tensor_free(out);
        return fold_error(d, who, "Gather index out of range");
      }
      for (int64_t b = 0; b < inner; b++) ox_set(out, o++, ox_get(x, (a * dim + k) * inner + b));
    }
  return PPCC_OK;
}

static ppcc_status fold_transpose(const Onnx__NodeProto *n, const ox_tensor *x, const char *who, ox_tensor *out,
                                  ppcc_diag *d) {
  int64_t perm[PPCC_MAX_RANK], shape[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0}, stride[PPCC_MAX_RANK];
  const Onnx__AttributeProto *a = ox_attr(n, "perm");
  if (a && (int)a->n_ints != x->rank) return fold_error(d, who, "Transpose perm does not match the rank");
  unsigned seen = 0; /* a repeated axis would read past the input */
  for (int i = 0; i < x->rank; i++) {
    perm[i] = a ? a->ints[i] : x->rank - 1 - i;
    if (perm[i] < 0 || perm[i] >= x->rank) return fold_error(d, who, "Transpose perm out of range");
    if (seen & (1u << perm[i])) return fold_error(d, who, "Transpose perm repeats an axis");
    seen |= 1u << perm[i];
    shape[i] = x->shape[perm[i]];
  }
  int64_t s = 1;
  for (int i = x->rank - 1; i >= 0; i--) stride[i] = s, s *= x->shape[i];
  ppcc_status st = alloc_or_fail(out, x->dtype, x->rank, shape, who, d);
  for (int64_t i = 0; !st && i < out->n; i++) {
    int64_t off = 0;
    for (int k = 0; k < x->rank; k++) off += idx[k] * stride[perm[k]];
    ox_set(out, i, ox_get(x, off));
    next_index(x->rank, shape, idx);
  }
  return st;
}

static ppcc_status fold_trilu(const Onnx__NodeProto *n, ox_tensor *const *in, int n_in, const char *who,
                              ox_tensor *out, ppcc_diag *d) {
  const ox_tensor *x = in[0];
  if (x->rank < 2) return fold_error(d, who, "Trilu needs rank >= 2");
  int64_t k = n_in > 1 && in[1] && in[1]->n == 1 ? ox_get_int(in[1], 0) : 0;
  bool upper = ox_attr_int(n, "upper", 1) != 0;
  if (!ox_tensor_copy(out, x)) return fold_error(d, who, "out of memory");
  int64_t R = x->shape[x->rank - 2], C = x->shape[x->rank - 1];
  for (int64_t i = 0; i < x->n; i++) {
    int64_t c = i % C, r = (i / C) % R;
    if (upper ? c - r < k : c - r > k) ox_set(out, i, 0);
  }
  return PPCC_OK;
}

static ppcc_status fold_where(ox_tensor *const *in, const char *who, ox_tensor *out, ppcc_diag *d) {
  int r1, r2;
  int64_t s1[PPCC_MAX_RANK] = {0}, s2[PPCC_MAX_RANK] = {0}, idx[PPCC_MAX_RANK] = {0};
  ox_tensor tmp = {.rank = 0};
  if (!broadcast_shape(in[1], in[2], &r1, s1)) return fold_error(d, who, "Where operands do not broadcast");
  tmp.rank = r1;
  memcpy(tmp.shape, s1, sizeof s1);
  if (!broadcast_shape(in[0], &tmp, &r2, s2)) return fold_error(d, who, "Where operands do not broadcast");
  ppcc_status st = alloc_grown(out, in[1]->dtype, r2, s2, in[0]->n + in[1]->n + in[2]->n, who, d);
  for (int64_t i = 0; !st && i < out->n; i++) {
    bool c = ox_get(in[0], broadcast_index(in[0], r2, idx)) != 0;
    const ox_tensor *src = c ? in[1] : in[2];
    ox_set(out, i, ox_get(src, broadcast_index(src, r2, idx)));
    next_index(r2, s2, idx);
  }
  return st;
}

static ppcc_status fold_expand(const ox_tensor *x, const ox_tensor *shape_t, const char *who, ox_tensor *out,
                               ppcc_diag *d) {
  int64_t s[PPCC_MAX_RANK], shape[PPCC_MAX_RANK], idx[PPCC_MAX_RANK] = {0};
  int ns, rank;
  if (!int_list(shape_t, s, PPCC_MAX_RANK, &ns)) return fold_error(d, who, "Expand needs a constant shape");
  ox_tensor tmp = {.rank = ns};
  memcpy(tmp.shape, s, sizeof s);
  if (!broadcast_shape(x, &tmp, &rank, shape)) return fold_error(d, who, "Expand shape does not broadcast");
  ppcc_status st = alloc_grown(out, x->dtype, rank, shape, x->n, who, d);
  for (int64_t i = 0; !st && i < out->n; i++) {
    ox_set(out, i, ox_get(x, broadcast_index(x, rank, idx)));
    next_index(rank, shape, idx);
  }
  return st;
}

static ppcc_status fold_concat(const Onnx__NodeProto *n, ox_tensor *const *in, int n_in, const char *who,
                               ox_tensor *out, ppcc_diag *d) {
  int64_t axis = ox_attr_int(n, "axis", 0), shape[PPCC_MAX_RANK];
  const ox_tensor *x = in[0];
  if (!norm_axis(&axis, x->rank)) return fold_error(d, who, "Concat axis out of range");
  memcpy(shape, x->shape, sizeof shape);
  shape[axis] = 0;
  for (int k = 0; k < n_in; k++) {
    if (!in[k] || in[k]->rank != x->rank) return fold_error(d, who, "Concat operands differ in rank");
    for (int i = 0; i < x->rank; i++)
      if (i != axis && in[k]->shape[i] != x->shape[i]) return fold_error(d, who, "Concat operands differ in shape");
    shape[axis] += in[k]->shape[axis];
  }
  ppcc_status st = alloc_or_fail(out, x->dtype, x->rank, shape, who, d);
  if (st) return st;
  int64_t outer = 1, inner = 1, o = 0;
  for (int i = 0; i < axis; i++) outer *= shape[i];
  for (int i = (int)axis + 1; i < x->rank; i++) inner *= shape[i];
  for (int64_t a = 0; a < outer; a++)
    for (int k = 0; k < n_in; k++) {
      int64_t block = in[k]->shape[axis] * inner;
      for (int64_t j = 0; j < block; j++) ox_set(out, o++, ox_get(in[k], a * block + j));
    }
  return PPCC_OK;
}

/* Unsqueeze/Squeeze/Reshape/Flatten shapes; shared with the importer's
 * handling of computed tensors through ox_fold's reshape-like path. */
static ppcc_status fold_shape_op(const Onnx__NodeProto *n, ox_tensor *const *in, int n_in, const char *who,
                                 ox_tensor *out, ppcc_diag *d) {
  const ox_tensor *x = in[0];
  const char *op = n->op_type;
  int64_t shape[PPCC_MAX_RANK * 2], axes[PPCC_MAX_RANK * 2];
  int rank = 0, na = 0;
  if (strcmp(op, "Reshape") == 0) {
    int ns;
    if (n_in < 2 || !int_list(in[1], shape, PPCC_MAX_RANK, &ns)) return fold_error(d, who, "Reshape needs a constant shape");
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < ns; i++) {
      if (shape[i] == 0) shape[i] = i < x->rank ? x->shape[i] : 0;
      if (shape[i] == -1) infer = i;
      else if (shape[i] < 0) return fold_error(d, who, "Reshape shape has a negative dim");
      else if (shape[i] > 0 && known > OX_MAX_CONST_ELEMENTS / shape[i]) return fold_error(d, who, "Reshape shape is too large");
      else known *= shape[i];
    }
    if (infer >= 0) shape[infer] = known ? x->n / known : 0;
    return fold_reshape_like(x, ns, shape, who, out, d);
  }
  if (strcmp(op, "Flatten") == 0) {
    int64_t axis = ox_attr_int(n, "axis", 1), a = 1;
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank) return fold_error(d, who, "Flatten axis out of range");
    for (int i = 0; i < axis; i++) a *= x->shape[i];
    shape[0] = a;
    shape[1] = a ? x->n / a : 0;
    return fold_reshape_like(x, 2, shape, who, out, d);
  }
  const Onnx__AttributeProto *attr = ox_attr(n, "axes");
  if (n_in > 1 && in[1]) {
    if (!int_list(in[1], axes, PPCC_MAX_RANK, &na)) return fold_error(d, who, "axes must be a constant int list");
  } else if (attr) {
    if (attr->n_ints > PPCC_MAX_RANK) return fold_error(d, who, "too many axes");
    na = (int)attr->n_ints;
    for (int i = 0; i < na; i++) axes[i] = attr->ints[i];
  }
  bool mark[PPCC_MAX_RANK * 2] = {false};
  if (strcmp(op, "Unsqueeze") == 0) {
    int out_rank = x->rank + na;
    if (out_rank > PPCC_MAX_RANK) return fold_error(d, who, "Unsqueeze result exceeds the maximum rank");
    for (int i = 0; i < na; i++) {
      if (!norm_axis(&axes[i], out_rank) || mark[axes[i]]) return fold_error(d, who, "Unsqueeze axes out of range or repeated");
      mark[axes[i]] = true;
    }
    for (int i = 0, k = 0; i < out_rank; i++) shape[rank++] = mark[i] ? 1 : x->shape[k++];
    return fold_reshape_like(x, rank, shape, who, out, d);
  }
  /* Squeeze */
  for (int i = 0; i < na; i++) {
    if (!norm_axis(&axes[i], x->rank) || x->shape[axes[i]] != 1) return fold_error(d, who, "Squeeze axis out of range or not of size 1");
    mark[axes[i]] = true;
  }
  for (int i = 0; i < x->rank; i++)
    if (!(na ? mark[i] : x->shape[i] == 1)) shape[rank++] = x->shape[i];
  return fold_reshape_like(x, rank, shape, who, out, d);
}

ppcc_status ox_fold(const Onnx__NodeProto *node, const char *who, ox_tensor *const *in, int n_in, ox_tensor *out,
                    bool *handled, ppcc_diag *d) {
  const char *op = node->op_type;
  *handled = true;
  memset(out, 0, sizeof *out);
  if (strcmp(op, "Constant") == 0) return fold_constant(node, who, out, d);
  if (n_in < 1 || !in[0]) {
    *handled = false;
    return PPCC_OK;
  }
  const ox_tensor *x = in[0];
  for (int i = 0; i < N_OF(unary_ops); i++)
    if (strcmp(unary_ops[i].name, op) == 0) {
      if (!ox_tensor_copy(out, x)) return fold_error(d, who, "out of memory");
      for (int64_t k = 0; k < x->n; k++) ox_set(out, k, unary_ops[i].fn(ox_get(x, k)));
      return PPCC_OK;
    }
  for (int i = 0; i < N_OF(binary_ops); i++)
    if (strcmp(binary_ops[i].name, op) == 0) {
      if (n_in < 2 || !in[1]) return fold_error(d, who, "needs two operands");
      return fold_binary(binary_ops[i].fn, binary_ops[i].to_bool, binary_ops[i].fn == b_div, x, in[1], who, out, d);
    }
  if (strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0) {
    if (!ox_tensor_copy(out, x)) return fold_error(d, who, "out of memory");
    return PPCC_OK;
  }
  if (strcmp(op, "Cast") == 0) {
    ppcc_dtype to;
    int64_t t = ox_attr_int(node, "to", 0);
    if (t == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) to = PPCC_F32;
    else if (!ox_dtype_from_onnx((int32_t)t, &to) || to == PPCC_F16 || to == PPCC_BF16)
      return fold_error(d, who, "Cast to this type is not folded (f32, i64, i32, i8, bool)");
    ppcc_status st = alloc_or_fail(out, to, x->rank, x->shape, who, d);
    for (int64_t k = 0; !st && k < x->n; k++) ox_set(out, k, ox_get(x, k));
    return st;
  }
  if (strcmp(op, "ConstantOfShape") == 0) {
    int64_t shape[PPCC_MAX_RANK];
    int ns;
    if (!int_list(x, shape, PPCC_MAX_RANK, &ns)) return fold_error(d, who, "ConstantOfShape needs a constant shape of rank <= 8");
    ox_tensor value = {0};
    const Onnx__AttributeProto *a = ox_attr(node, "value");
    ppcc_status st = PPCC_OK;
    if (a && a->t) st = ox_tensor_from_proto(a->t, NULL, who, &value, d);
    if (st) return st;
    st = alloc_grown(out, a && a->t ? value.dtype : PPCC_F32, ns, shape, x->n, who, d);
    double v = a && a->t && value.n > 0 ? ox_get(&value, 0) : 0.0;
    for (int64_t k = 0; !st && k < out->n; k++) ox_set(out, k, v);
    ox_tensor_free(&value);
    return st;
  }
  if (strcmp(op, "Range") == 0) {
    if (n_in < 3 || !in[1] || !in[2] || x->n != 1 || in[1]->n != 1 || in[2]->n != 1)
      return fold_error(d, who, "Range needs scalar start, limit and delta");
    double s = ox_get(x, 0), l = ox_get(in[1], 0), dl = ox_get(in[2], 0);
    if (dl == 0) return fold_error(d, who, "Range delta is 0");
    double cnt = ceil((l - s) / dl);
    int64_t len = cnt > 0 ? (int64_t)(cnt < 1e12 ? cnt : 1e12) : 0;
    ppcc_status st = alloc_grown(out, x->dtype, 1, &len, 3, who, d);
    for (int64_t k = 0; !st && k < len; k++) ox_set(out, k, s + (double)k * dl);
    return st;
  }
  if (strcmp(op, "Trilu") == 0) return fold_trilu(node, in, n_in, who, out, d);
  if (strcmp(op, "Where") == 0) {
    if (n_in < 3 || !in[1] || !in[2]) return fold_error(d, who, "Where needs three operands");
    return fold_where(in, who, out, d);
  }
  if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0 || strcmp(op, "Reshape") == 0 ||
      strcmp(op, "Flatten") == 0)
    return fold_shape_op(node, in, n_in, who, out, d);
  if (strcmp(op, "Concat") == 0) return fold_concat(node, in, n_in, who, out, d);
  if (strcmp(op, "Gather") == 0) {
    if (n_in < 2 || !in[1]) return fold_error(d, who, "Gather needs indices");
    return fold_gather(node, x, in[1], who, out, d);
  }
  if (strcmp(op, "Slice") == 0) return fold_slice(x, in, n_in, who, out, d);
  if (strcmp(op, "Expand") == 0) {
    if (n_in < 2 || !in[1]) return fold_error(d, who, "Expand needs a shape");
    return fold_expand(x, in[1], who, out, d);
  }
  if (strcmp(op, "Transpose") == 0) return fold_transpose(node, x, who, out, d);
  *handled = false;
  return PPCC_OK;
}
