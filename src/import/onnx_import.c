/* ONNX -> ppcc graph. Every ONNX tensor name maps to an entry: a constant
 * (initializer, Constant node, or folded on static shapes) or a ppcc value.
 * Nodes are translated in order onto rows of the op table; constants that
 * reach a computing op become params (the weights file). Fused ppcc ops are
 * recognised where the exporter spelt them out (RMSNorm, erf GELU, SiLU,
 * scaled-dot-product attention): the pattern's last node emits the fused
 * op, and the primitive ops emitted for its inner nodes die unused (dead
 * ops are dropped when the model is written). An inner node that ppcc can
 * only run as part of such a pattern (Sqrt, Erf... of a computed tensor)
 * is an error only if something else reads it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_internal.h"
#include "ppcc/frontend.h"
#include "ppcc/io.h"
#include "ppcc/ops.h"
#include "ppcc/runtime.h"

/* Translators keep entry pointers across emit(), own_const() and bind(),
 * which add entries: the table is a list of fixed blocks, so an entry never
 * moves (a realloc'd array made such pointers dangle: heap use-after-free
 * found by fuzz_onnx). Values are read by copy (V). */
#define ENTRY_BLOCK 256
typedef struct entry {
  const char *name;
  int index;          /* in the entry table (param_entry holds it) */
  bool is_const;
  ox_tensor c;
  int value;          /* ppcc value; -1: none yet (const) or deferred */
  int producer;       /* ONNX node index, -1 for inputs/initializers */
  const char *defer;  /* why this computed tensor has no ppcc value */
  bool hidden;        /* not found by name: an initializer a graph input
                         overrides, or a constant of the importer's own */
  int transposed;     /* a [K, N] weight: its [N, K] entry's index + 1, 0 none yet */
} entry;

typedef struct importer {
  ppcc_graph *g;
  ppcc_diag *d;
  const Onnx__GraphProto *graph;
  const char *dir;
  const ppcc_onnx_options *opts;
  entry **blocks; /* ENTRY_BLOCK entries each: an entry never moves */
  int n_e, n_blocks;
  int *slots; /* open-addressing hash of entry indices, -1 empty */
  int n_slots;
  int *param_entry; /* per ppcc value: the entry holding a param's data, or -1
                       (an index: the entry array moves as it grows) */
  int cap_param_data;
  const Onnx__NodeProto *node; /* node being translated, for messages */
  int node_index;
  int64_t opset;
  bool *bn_folded; /* per ONNX node: a BatchNormalization folded into the Conv before it */
  char who[PPCC_MAX_NAME * 4 + 64];
} importer;

static ppcc_status oom(importer *I) { return ppcc_error_status(I->d, PPCC_ERR_INTERNAL, "out of memory"); }

/* ---------------- entries ---------------- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

static entry *entry_at(const importer *I, int k) { return &I->blocks[k / ENTRY_BLOCK][k % ENTRY_BLOCK]; }

static entry *find(importer *I, const char *name) {
  if (!name || !I->n_slots) return NULL;
  for (uint64_t h = hash_str(name) & (uint64_t)(I->n_slots - 1);; h = (h + 1) & (uint64_t)(I->n_slots - 1)) {
    int k = I->slots[h];
    if (k < 0) return NULL;
    if (strcmp(entry_at(I, k)->name, name) == 0) return entry_at(I, k);
  }
}

static bool rehash(importer *I, int n_slots) {
  int *slots = malloc(sizeof(int) * (size_t)n_slots);
  if (!slots) return false;
  for (int i = 0; i < n_slots; i++) slots[i] = -1;
  for (int k = 0; k < I->n_e; k++) {
    if (entry_at(I, k)->hidden) continue;
    uint64_t h = hash_str(entry_at(I, k)->name) & (uint64_t)(n_slots - 1);
    while (slots[h] >= 0) h = (h + 1) & (uint64_t)(n_slots - 1);
    slots[h] = k;
  }
  free(I->slots);
  I->slots = slots;
  I->n_slots = n_slots;
  return true;
}

/* A new entry that no name finds (hidden), or NULL when out of memory. */
static entry *add_hidden_entry(importer *I, const char *name) {
  if (I->n_e == I->n_blocks * ENTRY_BLOCK) { /* a new block; the others stay where they are */
    entry **b = realloc(I->blocks, sizeof(entry *) * (size_t)(I->n_blocks + 1));
    if (!b) return NULL;
    I->blocks = b;
    if (!(b[I->n_blocks] = malloc(sizeof(entry) * ENTRY_BLOCK))) return NULL;
    I->n_blocks++;
  }
  entry *x = entry_at(I, I->n_e++);
  memset(x, 0, sizeof *x);
  x->name = name;
  x->index = I->n_e - 1;
  x->value = -1;
  x->producer = I->node ? I->node_index : -1;
  x->hidden = true;
  return x;
}

/* A new entry for name (ONNX names are SSA: defined once). */
static entry *add_entry(importer *I, const char *name) {
  if ((I->n_e + 1) * 2 > I->n_slots && !rehash(I, I->n_slots ? I->n_slots * 2 : 512)) return NULL;
  entry *x = add_hidden_entry(I, name);
  if (!x) return NULL;
  x->hidden = false;
  uint64_t h = hash_str(name) & (uint64_t)(I->n_slots - 1);
  while (I->slots[h] >= 0) h = (h + 1) & (uint64_t)(I->n_slots - 1);
  I->slots[h] = x->index;
  return x;
}

/* ---------------- ppcc values ---------------- */

static bool grow_param_data(importer *I) {
  if (I->g->n_values <= I->cap_param_data) return true;
  int cap = I->g->n_values * 2 + 64;
  int *p = realloc(I->param_entry, sizeof(int) * (size_t)cap);
  if (!p) return false;
  for (int i = I->cap_param_data; i < cap; i++) p[i] = -1;
  I->param_entry = p;
  I->cap_param_data = cap;
  return true;
}

/* A value name not yet taken: base, else base#2, base#3... */
static int add_named_value(importer *I, const char *base, ppcc_value_kind kind, ppcc_dtype dt, int rank,
                           const int64_t *shape) {
  if (strlen(base) > PPCC_MAX_NAME - 12) {
    char cut[48];
    snprintf(cut, sizeof cut, "%.40s", base);
    ppcc_error(I->d, "%s: tensor name '%s...' is longer than %d characters", I->who, cut, PPCC_MAX_NAME - 12);
    return -2;
  }
  char why[PPCC_MAX_NAME + 128];
  if (!ppcc_name_check(base, true, why, sizeof why)) { /* '@' is renamed when written (onnx_write.c) */
    ppcc_error(I->d, "%s: a tensor's %s", I->who, why);
    return -2;
  }
  char name[PPCC_MAX_NAME + 16];
  snprintf(name, sizeof name, "%s", base);
  for (int k = 2; ppcc_find_value(I->g, name) >= 0; k++) snprintf(name, sizeof name, "%s#%d", base, k);
  int v = ppcc_add_value(I->g, name, kind, dt, rank, shape);
  if (v < 0 || !grow_param_data(I)) return -1;
  return v;
}

/* The ppcc value of an entry; a constant becomes a param on first use. */
static int value_of(importer *I, entry *x) {
  if (x->value >= 0) return x->value;
  if (x->defer) {
    ppcc_error(I->d, "%s", x->defer);
    return -2;
  }
  if (x->c.rank > PPCC_MAX_RANK) {
    ppcc_error(I->d, "%s: constant '%s' has rank %d", I->who, x->name, x->c.rank);
    return -2;
  }
  int v = add_named_value(I, x->name, PPCC_VALUE_PARAM, x->c.dtype, x->c.rank, x->c.shape);
  if (v < 0) return v;
  I->g->values[v].pinned = true;
  I->param_entry[v] = x->index;
  x->value = v;
  return v;
}

/* Operand k of the current node as a ppcc value; <0 after an error. */
static int operand(importer *I, int k) {
  if (k >= (int)I->node->n_input || !I->node->input[k][0]) {
    ppcc_error(I->d, "%s: operand %d is missing", I->who, k);
    return -2;
  }
  return value_of(I, find(I, I->node->input[k]));
}

static entry *in_entry(importer *I, int k) {
  return k < (int)I->node->n_input && I->node->input[k][0] ? find(I, I->node->input[k]) : NULL;
}

static const ox_tensor *in_const(importer *I, int k) {
  entry *x = in_entry(I, k);
  return x && x->is_const ? &x->c : NULL;
}

/* Appends op `name` and infers its result (named out_name) with the op
 * table's shape rule. Returns the result value, <0 after an error. */
static int emit(importer *I, const char *op_name, int n_in, const int *in, const char *out_name, int n_attrs,
                const ppcc_attr *attrs) {
  const ppcc_op_info *info = ppcc_op_lookup(op_name);
  for (int k = 0; k < n_in; k++)
    if (in[k] < 0) return -2;
  if (!info) return oom(I), -1;
  for (int k = 0; k < n_attrs; k++) /* model.json numbers are finite (JSON has no NaN or Inf) */
    if (attrs[k].type == PPCC_ATTR_FLOAT && !isfinite(attrs[k].f))
      return ppcc_error(I->d, "%s: %s's %s would be %g: ppcc needs a finite number", I->who, op_name, attrs[k].name,
                        attrs[k].f),
             -2;
  for (int k = 0; k < n_attrs; k++) /* model.json integers are exact up to 2^53 */
    for (int j = 0; j < (attrs[k].type == PPCC_ATTR_INTS ? attrs[k].n : attrs[k].type == PPCC_ATTR_INT); j++) {
      int64_t v = attrs[k].type == PPCC_ATTR_INTS ? attrs[k].ints[j] : attrs[k].i;
      if (v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53))
        return ppcc_error(I->d, "%s: %s's %s would hold %lld, beyond the integers model.json holds (2^53)", I->who,
                          op_name, attrs[k].name, (long long)v),
               -2;
    }
  int out = add_named_value(I, out_name, PPCC_VALUE_RESULT, I->g->values[in[0]].dtype, 0, NULL);
  if (out < 0) return out == -1 ? (oom(I), -1) : -2;
  I->g->values[out].def_op = I->g->n_ops;
  int idx = ppcc_add_op(I->g, info, n_in, in, 1, &out, n_attrs, attrs);
  if (idx < 0) return ppcc_error(I->d, "%s: the graph exceeds ppcc's op limit", I->who), -2;
  for (int k = 0; k < n_attrs; k++) { /* ppcc_add_op copies the attrs, not their lists */
    ppcc_attr *a = &I->g->ops[idx].attrs[k];
    if (a->type != PPCC_ATTR_INTS) continue;
    int64_t *copy = ppcc_alloc(I->g, sizeof(int64_t) * (size_t)(a->n > 0 ? a->n : 1));
    if (!copy) return oom(I), -1;
    memcpy(copy, a->ints, sizeof(int64_t) * (size_t)a->n);
    a->ints = copy;
  }
  /* the checks loading model.json makes: the shape rule, and the sharding
   * rule on the unsharded operands (a softmax dim out of range...) */
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  if (info->infer_shape(I->g, &I->g->ops[idx], &quiet) != PPCC_OK ||
      info->shard_rule(I->g, &I->g->ops[idx], &quiet) != PPCC_OK) {
    ppcc_error(I->d, "%s: %s", I->who, quiet.first);
    return -2;
  }
  const ppcc_value *y = &I->g->values[out];
  int64_t n = 1;
  for (int i = 0; i < y->rank; i++) { /* as loading model.json checks */
    if (y->shape[i] > 0 && n > PPCC_MAX_ELEMENTS / y->shape[i])
      return ppcc_error(I->d, "%s: the result would have more than 2^48 elements", I->who), -2;
    n *= y->shape[i] > 0 ? y->shape[i] : 1;
  }
  return out;
}

/* Binds ONNX output k of the current node to value v. */
static ppcc_status bind(importer *I, int k, int v) {
  if (v < 0) return v == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  if (k >= (int)I->node->n_output || !I->node->output[k][0]) return PPCC_OK;
  entry *x = add_entry(I, I->node->output[k]);
  if (!x) return oom(I);
  x->value = v;
  return PPCC_OK;
}

static const char *out_name(importer *I, int k) { return k < (int)I->node->n_output ? I->node->output[k] : "out"; }

/* Name of an intermediate value of a node translated into several ops, so
 * the node's result keeps its ONNX name. */
static const char *tmp_name(importer *I) {
  const char *base = out_name(I, 0);
  size_t n = strlen(base) + 8;
  char *s = ppcc_alloc(I->g, n);
  if (s) snprintf(s, n, "%s.part", base);
  return s ? s : base;
}

static ppcc_attr attr_int(const char *name, int64_t v) { return (ppcc_attr){.name = name, .type = PPCC_ATTR_INT, .i = v}; }
static ppcc_attr attr_float(const char *name, double v) { return (ppcc_attr){.name = name, .type = PPCC_ATTR_FLOAT, .f = v}; }
static ppcc_attr attr_bool(const char *name, bool v) { return (ppcc_attr){.name = name, .type = PPCC_ATTR_BOOL, .i = v}; }
static ppcc_attr attr_ints(const char *name, int n, int64_t *v) {
  return (ppcc_attr){.name = name, .type = PPCC_ATTR_INTS, .n = n, .ints = v};
}

/* A value's dtype and shape, by copy: emit() and value_of() grow the value
 * table (realloc), so no translator keeps a pointer into it. */
typedef struct vshape {
  ppcc_dtype dtype;
  int rank;
  int64_t shape[PPCC_MAX_RANK];
} vshape;

static vshape V(const importer *I, int v) {
  const ppcc_value *x = &I->g->values[v];
  vshape r = {.dtype = x->dtype, .rank = x->rank};
  memcpy(r.shape, x->shape, sizeof r.shape);
  return r;
}

/* A reshape of v to shape (a view); v itself when the shape is the same. */
static int reshape_to(importer *I, int v, int rank, int64_t *shape, const char *name) {
  if (v < 0) return v;
  const vshape x = V(I, v);
  if (x.rank == rank && memcmp(x.shape, shape, sizeof(int64_t) * (size_t)rank) == 0) return v;
  ppcc_attr a = attr_ints("shape", rank, shape);
  return emit(I, "reshape", 1, &v, name, 1, &a);
}

/* ---------------- pattern matching (on ONNX nodes) ---------------- */

/* The inputs a pattern may read of a node of this type: the binary ones
 * have two, the rest at least one. A node with fewer (hostile or broken
 * input) matches no pattern. */
static size_t pattern_arity(const char *op_type) {
  static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "MatMul"};
  for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
    if (strcmp(op_type, binary[i]) == 0) return 2;
  return 1;
}

static const Onnx__NodeProto *producer(importer *I, const char *name, const char *op_type) {
  entry *x = find(I, name);
  if (!x || x->producer < 0) return NULL;
  const Onnx__NodeProto *n = I->graph->node[x->producer];
  return strcmp(n->op_type, op_type) == 0 && n->n_input >= pattern_arity(op_type) ? n : NULL;
}

static bool scalar_const(importer *I, const char *name, double *v) {
  entry *x = find(I, name);
  if (!x || !x->is_const || x->c.n != 1) return false;
  *v = ox_get(&x->c, 0);
  return true;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-3 * fabs(b); }

/* Is `name` x*x or Pow(x, 2)? */
static bool is_square_of(importer *I, const char *name, const char **x) {
  const Onnx__NodeProto *n;
  double p;
  if ((n = producer(I, name, "Pow")) && scalar_const(I, n->input[1], &p) && p == 2.0) {
    *x = n->input[0];
    return true;
  }
  if ((n = producer(I, name, "Mul")) && n->n_input == 2 && strcmp(n->input[0], n->input[1]) == 0) {
    *x = n->input[0];
    return true;
  }
  return false;
}

/* ReduceMean over the last axis, keepdims: the axes from the attribute
 * (opset < 18) or the constant second operand. */
static bool reduces_last_axis(importer *I, const Onnx__NodeProto *n, int rank) {
  if (ox_attr_int(n, "keepdims", 1) != 1) return false;
  const Onnx__AttributeProto *a = ox_attr(n, "axes");
  int64_t axis;
  if (a && a->n_ints == 1) axis = a->ints[0];
  else if (n->n_input > 1) {
    entry *x = find(I, n->input[1]);
    if (!x || !x->is_const || x->c.n != 1) return false;
    axis = ox_get_int(&x->c, 0);
  } else return false;
  return axis == -1 || axis == rank - 1;
}

/* rsqrt(mean(x^2) + eps) as Reciprocal(Sqrt(.)): x and eps. */
static bool is_rms_scale(importer *I, const char *name, bool reciprocal, const char **x, double *eps) {
  const Onnx__NodeProto *n = reciprocal ? producer(I, name, "Reciprocal") : NULL;
  const char *s = n ? n->input[0] : name;
  if (reciprocal && !n) return false;
  const Onnx__NodeProto *sq = producer(I, s, "Sqrt"), *add, *mean;
  if (!sq || !(add = producer(I, sq->input[0], "Add"))) return false;
  const char *m = NULL;
  for (int k = 0; k < 2 && !m; k++)
    if (scalar_const(I, add->input[1 - k], eps)) m = add->input[k];
  if (!m || !(mean = producer(I, m, "ReduceMean")) || !is_square_of(I, mean->input[0], x)) return false;
  entry *xe = find(I, *x);
  return xe && !xe->is_const && xe->value >= 0 && reduces_last_axis(I, mean, V(I, xe->value).rank);
}

/* Mul(Mul(x, Reciprocal(Sqrt(...))), w) or Mul(Div(x, Sqrt(...)), w) -> rms_norm(x, w, eps). */
static int match_rms_norm(importer *I) {
  const Onnx__NodeProto *n = I->node;
  if (n->n_input < 2) return -3;
  for (int k = 0; k < 2; k++) {
    const ox_tensor *w = in_const(I, 1 - k);
    if (!w || w->rank != 1) continue;
    const Onnx__NodeProto *inner;
    const char *x = NULL, *x2 = NULL;
    double eps = 0;
    if ((inner = producer(I, n->input[k], "Mul"))) {
      for (int j = 0; j < 2 && !x2; j++)
        if (is_rms_scale(I, inner->input[1 - j], true, &x2, &eps)) x = inner->input[j];
    } else if ((inner = producer(I, n->input[k], "Div")) && is_rms_scale(I, inner->input[1], false, &x2, &eps)) {
      x = inner->input[0];
    }
    if (!x || strcmp(x, x2) != 0) continue;
    int in[2] = {value_of(I, find(I, x)), operand(I, 1 - k)};
    ppcc_attr a = attr_float("eps", eps);
    return emit(I, "rms_norm", 2, in, out_name(I, 0), 1, &a);
  }
  return -3;
}

/* x * 0.5 * (1 + erf(x / sqrt(2))) in either association -> gelu(x). */
static bool is_erf_term(importer *I, const char *name, const char **x) {
  const Onnx__NodeProto *add = producer(I, name, "Add"), *erf, *div;
  double one, c;
  if (!add) return false;
  for (int k = 0; k < 2; k++) {
    if (!scalar_const(I, add->input[1 - k], &one) || one != 1.0 || !(erf = producer(I, add->input[k], "Erf"))) continue;
    if ((div = producer(I, erf->input[0], "Div")) && scalar_const(I, div->input[1], &c) && near(c, sqrt(2.0))) {
      *x = div->input[0];
      return true;
    }
    if ((div = producer(I, erf->input[0], "Mul")) && scalar_const(I, div->input[1], &c) && near(c, sqrt(0.5))) {
      *x = div->input[0];
      return true;
    }
  }
  return false;
}

static int match_gelu(importer *I) {
  const Onnx__NodeProto *n = I->node, *m;
  if (n->n_input < 2) return -3;
  double half;
  const char *x = NULL, *x2 = NULL;
  for (int k = 0; k < 2 && !x; k++) {
    /* Mul(Mul(x, erf_term), 0.5) */
    if (scalar_const(I, n->input[1 - k], &half) && half == 0.5 && (m = producer(I, n->input[k], "Mul")))
      for (int j = 0; j < 2 && !x; j++)
        if (is_erf_term(I, m->input[1 - j], &x2)) x = m->input[j];
    /* Mul(Mul(x, 0.5), erf_term) */
    if (!x && (m = producer(I, n->input[k], "Mul")) && is_erf_term(I, n->input[1 - k], &x2))
      for (int j = 0; j < 2 && !x; j++)
        if (scalar_const(I, m->input[1 - j], &half) && half == 0.5) x = m->input[j];
  }
  if (!x || strcmp(x, x2) != 0) return -3;
  int in = value_of(I, find(I, x));
  return emit(I, "gelu", 1, &in, out_name(I, 0), 0, NULL);
}

static int match_silu(importer *I) {
  const Onnx__NodeProto *n = I->node, *s;
  if (n->n_input < 2) return -3;
  for (int k = 0; k < 2; k++)
    if ((s = producer(I, n->input[1 - k], "Sigmoid")) && strcmp(s->input[0], n->input[k]) == 0) {
      int in = operand(I, k);
      return emit(I, "silu", 1, &in, out_name(I, 0), 0, NULL);
    }
  return -3;
}

/* An additive [S, T] (or [1, 1, S, T]) mask that is 0 where key <= query
 * (aligned to the end) and <= -1e4 above: a causal mask. */
static bool is_causal_mask(const ox_tensor *m, int64_t S, int64_t T) {
  if (!ppcc_dtype_is_float(m->dtype) || m->rank < 2 || m->shape[m->rank - 2] != S || m->shape[m->rank - 1] != T ||
      m->n != S * T)
    return false;
  for (int64_t i = 0; i < S; i++)
    for (int64_t j = 0; j < T; j++) {
      double v = ox_get(m, i * T + j);
      if (j <= i + (T - S) ? v != 0.0 : v > -1e4) return false;
    }
  return true;
}

/* MatMul(Softmax((q @ Transpose(k)) / c [+ causal mask]), v) -> attention. */
static int match_attention(importer *I) {
  const Onnx__NodeProto *n = I->node, *sm, *scaled, *mm, *kt, *add = NULL;
  if (n->n_input < 2 || !(sm = producer(I, n->input[0], "Softmax"))) return -3;
  const char *s = sm->input[0];
  bool causal = false;
  if ((add = producer(I, s, "Add"))) {
    entry *m = find(I, add->input[1]);
    if (!m || !m->is_const) return -3;
    s = add->input[0];
    causal = true; /* checked once the shapes are known */
  }
  double scale = 1.0, c;
  if ((scaled = producer(I, s, "Div")) && scalar_const(I, scaled->input[1], &c) && c != 0) {
    scale = 1.0 / c;
    s = scaled->input[0];
  } else if ((scaled = producer(I, s, "Mul")) && scalar_const(I, scaled->input[1], &c)) {
    scale = c;
    s = scaled->input[0];
  }
  if (!(mm = producer(I, s, "MatMul")) || !(kt = producer(I, mm->input[1], "Transpose"))) return -3;
  const Onnx__AttributeProto *perm = ox_attr(kt, "perm");
  if (!perm || perm->n_ints != 4 || perm->ints[0] != 0 || perm->ints[1] != 1 || perm->ints[2] != 3 || perm->ints[3] != 2)
    return -3;
  int64_t axis = ox_attr_int(sm, "axis", -1);
  entry *qe = find(I, mm->input[0]), *ke = find(I, kt->input[0]), *ve = in_entry(I, 1);
  if (!qe || !ke || !ve || qe->value < 0 || ke->value < 0 || ve->value < 0) return -3;
  const vshape q = V(I, qe->value), k = V(I, ke->value), v = V(I, ve->value);
  if (q.rank != 4 || k.rank != 4 || v.rank != 4 || (axis != -1 && axis != 3) || q.shape[1] != k.shape[1])
    return -3;
  if (causal && !is_causal_mask(&find(I, add->input[1])->c, q.shape[2], k.shape[2])) return -3;
  int in[3] = {qe->value, ke->value, ve->value};
  ppcc_attr attrs[2] = {attr_bool("causal", causal), attr_float("scale", scale)};
  return emit(I, "attention", 3, in, out_name(I, 0), 2, attrs);
}

/* A constant f32 weight [K, N] as the linear row's [N, K]: the GEMMs then
 * read it in place every call (gemm_tiles.c), where a [K, N] matmul
 * operand had OpenBLAS repack it on every call. Transposed once at import,
 * shared by every node reading the weight, and named after it. NULL: not
 * such a weight, or no memory for the copy (the node stays a matmul). */
static entry *linear_weight(importer *I, const char *name, int64_t K) {
  static const char suffix[] = ".T";
  entry *w = find(I, name);
  if (!w || !w->is_const || w->c.dtype != PPCC_F32 || w->c.rank != 2 || w->c.shape[0] != K || K == 0 ||
      w->c.shape[1] == 0)
    return NULL;
  if (w->transposed) return entry_at(I, w->transposed - 1);
  size_t len = strlen(w->name) + sizeof suffix;
  if (len > PPCC_MAX_NAME - 12) return NULL; /* too long a param name */
  int64_t N = w->c.shape[1];
  char *tname = ppcc_alloc(I->g, len);
  ox_tensor t;
  if (!tname || !ox_tensor_alloc(&t, PPCC_F32, 2, (int64_t[]){N, K})) return NULL;
  snprintf(tname, len, "%s%s", w->name, suffix);
  const float *src = w->c.data;
  float *dst = t.data;
  for (int64_t k0 = 0; k0 < K; k0 += 64) /* 64 rows of the source at a time stay in cache */
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = k0; k < K && k < k0 + 64; k++) dst[n * K + k] = src[k * N + n];
  entry *x = add_hidden_entry(I, tname); /* no ONNX name can alias it */
  if (!x) {
    ox_tensor_free(&t);
    return NULL;
  }
  x->is_const = true;
  x->c = t;
  w->transposed = x->index + 1;
  return x;
}

/* linear(x, W^T [, bias]) for x [..., K] (computed, f32) times the
 * constant weight named w; -3 where that is not the case. */
static int linear_of(importer *I, int x, const char *w, int bias) {
  if (x < 0 || V(I, x).dtype != PPCC_F32 || V(I, x).rank < 2) return -3;
  entry *wt = linear_weight(I, w, V(I, x).shape[V(I, x).rank - 1]);
  if (!wt) return -3;
  int in[3] = {x, value_of(I, wt), bias};
  return emit(I, "linear", bias >= 0 ? 3 : 2, in, out_name(I, 0), 0, NULL);
}

/* Add(MatMul(x, W), b) (either order) with constant W [K, N] and b [N]
 * -> linear(x, W^T, b): the bias added in the GEMM's pass over the result. */
static int match_linear_bias(importer *I) {
  const Onnx__NodeProto *mm;
  for (int k = 0; k < 2; k++) {
    const ox_tensor *b = in_const(I, 1 - k);
    if (!b || b->rank != 1 || b->dtype != PPCC_F32 || !(mm = producer(I, I->node->input[k], "MatMul"))) continue;
    entry *xe = find(I, mm->input[0]), *we = find(I, mm->input[1]);
    if (!xe || xe->is_const || xe->value < 0 || !we || !we->is_const || we->c.rank != 2 ||
        we->c.shape[1] != b->shape[0])
      continue;
    int bias = operand(I, 1 - k);
    if (bias < 0) return bias;
    return linear_of(I, xe->value, mm->input[1], bias);
  }
  return -3;
}

/* ---------------- node translations ---------------- */

typedef ppcc_status (*node_fn)(importer *I);

static ppcc_status defer_node(importer *I, const char *why) {
  for (size_t k = 0; k < I->node->n_output; k++) {
    if (!I->node->output[k][0]) continue;
    entry *x = add_entry(I, I->node->output[k]);
    size_t len = strlen(I->who) + strlen(why) + 4;
    char *msg = ppcc_alloc(I->g, len);
    if (!x || !msg) return oom(I);
    if (strncmp(why, "node ", 5) == 0) snprintf(msg, len, "%s", why); /* carried from an operand */
    else snprintf(msg, len, "%s: %s", I->who, why);
    x->defer = msg;
  }
  return PPCC_OK;
}

static ppcc_status tr_unary(importer *I) {
  static const char *const map[][2] = {{"Relu", "relu"}, {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Exp", "exp"},
                                       {"Neg", "neg"},   {"Sqrt", "sqrt"}, {"Reciprocal", "reciprocal"},
                                       {"Erf", "erf"},   {"Log", "log"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i][0], I->node->op_type) == 0) {
      int in = operand(I, 0);
      return bind(I, 0, emit(I, map[i][1], 1, &in, out_name(I, 0), 0, NULL));
    }
  return defer_node(I, "unreachable");
}

static ppcc_status tr_alias(importer *I) {
  entry *x = in_entry(I, 0);
  if (!x) return ppcc_error(I->d, "%s: operand 0 is missing", I->who);
  if (x->defer) return defer_node(I, x->defer);
  return bind(I, 0, value_of(I, x));
}

static ppcc_status tr_cast(importer *I) {
  entry *x = in_entry(I, 0);
  ppcc_dtype to;
  if (!x) return ppcc_error(I->d, "%s: operand 0 is missing", I->who);
  int v = value_of(I, x);
  if (v < 0) return v == -1 ? oom(I) : PPCC_ERR_USER;
  if (ox_dtype_from_onnx((int32_t)ox_attr_int(I->node, "to", 0), &to) && to == V(I, v).dtype) return bind(I, 0, v);
  if (!ox_dtype_from_onnx((int32_t)ox_attr_int(I->node, "to", 0), &to))
    return defer_node(I, "Cast to a dtype ppcc does not have");
  ppcc_attr a = {.name = "dtype", .type = PPCC_ATTR_STRING, .s = ppcc_dtype_name(to)};
  return bind(I, 0, emit(I, "cast", 1, &v, out_name(I, 0), 1, &a));
}

static ppcc_status tr_binary(importer *I) {
  const char *op = I->node->op_type;
  int r;
  if (I->node->n_input != 2)
    return ppcc_error(I->d, "%s: %s takes 2 inputs, got %zu", I->who, op, I->node->n_input);
  if (strcmp(op, "Mul") == 0) {
    if ((r = match_rms_norm(I)) != -3 || (r = match_gelu(I)) != -3 || (r = match_silu(I)) != -3) return bind(I, 0, r);
  }
  if (strcmp(op, "Add") == 0 && (r = match_linear_bias(I)) != -3) return bind(I, 0, r);
  double c;
  int x0 = operand(I, 0);
  if (x0 < 0) return x0 == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  /* x * c or x / c by a finite scalar is one scale (a model.json number
   * cannot hold NaN or Inf: those stay a Mul/Div by the constant) */
  if ((strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0) && scalar_const(I, I->node->input[1], &c) &&
      in_const(I, 1)->rank <= V(I, x0).rank && ppcc_dtype_is_float(in_const(I, 1)->dtype) &&
      isfinite(strcmp(op, "Div") == 0 ? 1.0 / c : c)) {
    if (strcmp(op, "Div") == 0) c = 1.0 / c;
    int in = x0;
    ppcc_attr a = attr_float("value", c);
    return bind(I, 0, emit(I, "scale", 1, &in, out_name(I, 0), 1, &a));
  }
  if (strcmp(op, "Pow") == 0) {
    if (scalar_const(I, I->node->input[1], &c) && c == 2.0) {
      int in[2] = {operand(I, 0), operand(I, 0)};
      return bind(I, 0, emit(I, "mul", 2, in, out_name(I, 0), 0, NULL));
    }
    if (scalar_const(I, I->node->input[1], &c) && (c == 0.5 || c == -1.0 || c == 1.0)) {
      int in = x0;
      if (c == 1.0) return bind(I, 0, x0);
      return bind(I, 0, emit(I, c == 0.5 ? "sqrt" : "reciprocal", 1, &in, out_name(I, 0), 0, NULL));
    }
    int in[2] = {x0, operand(I, 1)}; /* a general exponent: the pow row */
    if (in[1] >= 0 && V(I, in[1]).dtype != V(I, x0).dtype) { /* ONNX lets the exponent's dtype differ */
      ppcc_attr a = {.name = "dtype", .type = PPCC_ATTR_STRING, .s = ppcc_dtype_name(V(I, x0).dtype)};
      in[1] = emit(I, "cast", 1, &in[1], tmp_name(I), 1, &a);
    }
    return bind(I, 0, emit(I, "pow", 2, in, out_name(I, 0), 0, NULL));
  }
  const char *name = strcmp(op, "Add") == 0 ? "add" : strcmp(op, "Sub") == 0 ? "sub" : strcmp(op, "Mul") == 0 ? "mul" : "div";
  int in[2] = {operand(I, 0), operand(I, 1)};
  return bind(I, 0, emit(I, name, 2, in, out_name(I, 0), 0, NULL));
}

/* MatMul; a 1-D operand (numpy's rule) is a [1, K] or [K, 1] matrix whose
 * extra dim the result drops. A constant weight: linear (linear_weight). */
static ppcc_status tr_matmul(importer *I) {
  if (I->node->n_input != 2) /* the matchers below read input[1] */
    return ppcc_error(I->d, "%s: MatMul takes 2 inputs, got %zu", I->who, I->node->n_input);
  int r = match_attention(I);
  if (r != -3) return bind(I, 0, r);
  entry *xe = in_entry(I, 0);
  if (xe && !xe->is_const && (r = linear_of(I, xe->value, I->node->input[1], -3)) != -3) return bind(I, 0, r);
  int in[2] = {operand(I, 0), operand(I, 1)};
  if (in[0] < 0 || in[1] < 0) return PPCC_ERR_USER;
  bool vec_l = V(I, in[0]).rank == 1, vec_r = V(I, in[1]).rank == 1;
  if (vec_l) in[0] = reshape_to(I, in[0], 2, (int64_t[]){1, V(I, in[0]).shape[0]}, tmp_name(I));
  if (vec_r) in[1] = reshape_to(I, in[1], 2, (int64_t[]){V(I, in[1]).shape[0], 1}, tmp_name(I));
  if (in[0] >= 0 && in[1] >= 0 && V(I, in[1]).rank > 2 && V(I, in[1]).rank != V(I, in[0]).rank)
    return defer_node(I, "MatMul broadcasting a right operand of rank > 2 against a different rank is not supported");
  int y = emit(I, "matmul", 2, in, vec_l || vec_r ? tmp_name(I) : out_name(I, 0), 0, NULL);
  if (y < 0 || !(vec_l || vec_r)) return bind(I, 0, y);
  int64_t shape[PPCC_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < V(I, y).rank; i++)
    if (!((vec_l && i == V(I, y).rank - 2) || (vec_r && i == V(I, y).rank - 1))) shape[rank++] = V(I, y).shape[i];
  ppcc_attr a = attr_ints("shape", rank, shape);
  return bind(I, 0, emit(I, "reshape", 1, &y, out_name(I, 0), 1, &a));
}

/* Gemm: alpha * A' B' + beta * C, A' = A or its transpose (transA), B'
 * likewise (transB); one linear when transB with a 1-D bias (or none)
 * and alpha = beta = 1, else matmul, scale and add. */
static ppcc_status tr_gemm(importer *I) {
  double alpha = ox_attr_float(I->node, "alpha", 1.0f), beta = ox_attr_float(I->node, "beta", 1.0f);
  int x = operand(I, 0), w = operand(I, 1);
  int b = I->node->n_input > 2 && I->node->input[2][0] ? operand(I, 2) : -3;
  if (x < 0 || w < 0 || b == -2 || b == -1) return PPCC_ERR_USER;
  if (ox_attr_int(I->node, "transA", 0)) x = emit(I, "transpose", 1, &x, tmp_name(I), 0, NULL);
  bool bias1 = b >= 0 && V(I, b).rank == 1, trans_b = ox_attr_int(I->node, "transB", 0) != 0;
  if (trans_b && alpha == 1 && (b < 0 || (bias1 && beta == 1))) {
    int in[3] = {x, w, b};
    return bind(I, 0, emit(I, "linear", b >= 0 ? 3 : 2, in, out_name(I, 0), 0, NULL));
  }
  int r; /* a constant [K, N] B: transposed once at import (linear_weight) */
  if (!trans_b && alpha == 1 && (b < 0 || (bias1 && beta == 1)) && !in_entry(I, 0)->is_const &&
      (b < 0 || V(I, b).shape[0] == V(I, w).shape[1]) && (r = linear_of(I, x, I->node->input[1], b)) != -3)
    return bind(I, 0, r);
  if (trans_b) w = emit(I, "transpose", 1, &w, tmp_name(I), 0, NULL);
  int in[2] = {x, w};
  bool more = alpha != 1 || b >= 0;
  int y = emit(I, "matmul", 2, in, more ? tmp_name(I) : out_name(I, 0), 0, NULL);
  if (alpha != 1) {
    ppcc_attr a = attr_float("value", alpha);
    y = emit(I, "scale", 1, &y, b >= 0 ? tmp_name(I) : out_name(I, 0), 1, &a);
  }
  if (b >= 0 && y >= 0) {
    if (beta != 1) {
      ppcc_attr a = attr_float("value", beta);
      b = emit(I, "scale", 1, &b, tmp_name(I), 1, &a);
    }
    int in2[2] = {y, b};
    y = emit(I, "add", 2, in2, out_name(I, 0), 0, NULL);
  }
  return bind(I, 0, y);
}

static ppcc_status tr_softmax(importer *I) {
  int in = operand(I, 0);
  ppcc_attr a = attr_int("dim", ox_attr_int(I->node, "axis", -1));
  return bind(I, 0, emit(I, "softmax", 1, &in, out_name(I, 0), 1, &a));
}

/* LayerNormalization over the axes from `axis` on: the layer_norm row over
 * the last dim; over several, x is flattened to [..., prod(normalized)]
 * (a view) with the scale and bias expanded to the normalized dims and
 * flattened too, and the result reshaped back. */
static ppcc_status tr_layer_norm(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  const vshape xs = V(I, x);
  int64_t axis = ox_attr_int(I->node, "axis", -1);
  if (axis < 0) axis += xs.rank;
  if (axis < 0 || axis >= xs.rank)
    return ppcc_error(I->d, "%s: LayerNormalization axis %lld is out of range for rank %d", I->who,
                      (long long)ox_attr_int(I->node, "axis", -1), xs.rank);
  int in[3] = {x, operand(I, 1), I->node->n_input > 2 && I->node->input[2][0] ? operand(I, 2) : -3};
  int n_in = in[2] == -3 ? 2 : 3;
  ppcc_attr a = attr_float("eps", ox_attr_float(I->node, "epsilon", 1e-5f));
  if (axis == xs.rank - 1) return bind(I, 0, emit(I, "layer_norm", n_in, in, out_name(I, 0), 1, &a));
  int64_t flat[PPCC_MAX_RANK], inner = 1;
  int nd = xs.rank - (int)axis;
  for (int i = (int)axis; i < xs.rank; i++) inner *= xs.shape[i];
  memcpy(flat, xs.shape, sizeof(int64_t) * (size_t)axis);
  flat[axis] = inner;
  in[0] = reshape_to(I, x, (int)axis + 1, flat, tmp_name(I));
  for (int k = 1; k < n_in; k++) { /* scale, bias: broadcast to the normalized dims, then one dim */
    if (in[k] < 0) return PPCC_ERR_USER;
    vshape ws = V(I, in[k]);
    if (ws.rank != nd || memcmp(ws.shape, xs.shape + axis, sizeof(int64_t) * (size_t)nd) != 0) {
      ppcc_attr e = attr_ints("shape", nd, (int64_t *)xs.shape + axis);
      in[k] = emit(I, "expand", 1, &in[k], tmp_name(I), 1, &e);
    }
    in[k] = reshape_to(I, in[k], 1, &inner, tmp_name(I));
  }
  int y = emit(I, "layer_norm", n_in, in, tmp_name(I), 1, &a);
  return bind(I, 0, reshape_to(I, y, xs.rank, (int64_t *)xs.shape, out_name(I, 0)));
}

static ppcc_status tr_reduce(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return PPCC_ERR_USER;
  int64_t axes[PPCC_MAX_RANK];
  int n = 0;
  const Onnx__AttributeProto *a = ox_attr(I->node, "axes");
  const ox_tensor *t = in_const(I, 1);
  if (a) {
    if (a->n_ints > PPCC_MAX_RANK) return ppcc_error(I->d, "%s: too many axes", I->who);
    for (size_t i = 0; i < a->n_ints; i++) axes[n++] = a->ints[i];
  } else if (t) {
    if (t->n > PPCC_MAX_RANK) return ppcc_error(I->d, "%s: too many axes", I->who);
    for (int64_t i = 0; i < t->n; i++) axes[n++] = ox_get_int(t, i);
  } else if (in_entry(I, 1)) {
    return defer_node(I, "reduction axes must be constant");
  }
  /* ONNX: no (or empty) axes reduce every axis, unless noop_with_empty_axes
   * makes the op the identity. */
  if (n == 0 && ox_attr_int(I->node, "noop_with_empty_axes", 0)) return bind(I, 0, x);
  ppcc_attr attrs[2] = {attr_bool("keepdim", ox_attr_int(I->node, "keepdims", 1) != 0), attr_ints("dim", n, axes)};
  const char *t_op = I->node->op_type;
  const char *op = strcmp(t_op, "ReduceMean") == 0 ? "mean" : strcmp(t_op, "ReduceMax") == 0 ? "reduce_max" : "sum";
  return bind(I, 0, emit(I, op, 1, &x, out_name(I, 0), n > 0 ? 2 : 1, attrs));
}

/* Reshape-like ops on computed tensors: compute the static result shape
 * by folding the op on a stand-in constant of the value's shape. */
static ppcc_status tr_reshape_like(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return PPCC_ERR_USER;
  const vshape v = V(I, x);
  int64_t shape[PPCC_MAX_RANK * 2];
  int rank = 0;
  const char *op = I->node->op_type;
  if (strcmp(op, "Reshape") == 0) {
    const ox_tensor *s = in_const(I, 1);
    if (s && s->n > PPCC_MAX_RANK)
      return ppcc_error(I->d, "%s: Reshape to rank %lld exceeds ppcc's maximum rank %d", I->who, (long long)s->n,
                        PPCC_MAX_RANK);
    if (!s) return defer_node(I, "Reshape needs a constant shape (give --shape for symbolic inputs)");
    int64_t known = 1, total = ppcc_num_elements(v.rank, v.shape);
    int infer = -1;
    bool allowzero = ox_attr_int(I->node, "allowzero", 0) != 0;
    for (int64_t i = 0; i < s->n; i++) {
      int64_t dim = ox_get_int(s, i);
      if (dim == 0 && !allowzero) dim = i < v.rank ? v.shape[i] : 0;
      if (dim == -1 && infer < 0) infer = (int)i;
      else if (dim < 0 || (dim > 0 && known > PPCC_MAX_ELEMENTS / dim))
        return ppcc_error(I->d, "%s: Reshape shape has an invalid dim %lld", I->who, (long long)dim);
      else known *= dim;
      shape[rank++] = dim;
    }
    if (infer >= 0) shape[infer] = known ? total / known : 0;
  } else if (strcmp(op, "Flatten") == 0) {
    int64_t axis = ox_attr_int(I->node, "axis", 1), a = 1;
    if (axis < 0) axis += v.rank;
    if (axis < 0 || axis > v.rank) return ppcc_error(I->d, "%s: Flatten axis out of range", I->who);
    for (int i = 0; i < axis; i++) a *= v.shape[i];
    shape[rank++] = a;
    shape[rank++] = a ? ppcc_num_elements(v.rank, v.shape) / a : 0;
  } else {
    /* Unsqueeze / Squeeze: fold on an empty stand-in of the same shape */
    ox_tensor stand = {.dtype = PPCC_I8, .rank = v.rank};
    memcpy(stand.shape, v.shape, sizeof stand.shape);
    ox_tensor *ins[2] = {&stand, (ox_tensor *)in_const(I, 1)};
    if (in_entry(I, 1) && !ins[1]) return defer_node(I, "axes must be constant");
    /* the fold would copy data: give it a zero-size tensor of that shape */
    ox_tensor zero = stand;
    int64_t n = 1;
    for (int i = 0; i < v.rank; i++) n *= v.shape[i];
    zero.n = n;
    zero.data = calloc((size_t)(n > 0 && n < OX_MAX_CONST_ELEMENTS ? n : 1), 1);
    if (!zero.data) return oom(I);
    ins[0] = &zero;
    ox_tensor out;
    bool handled;
    ppcc_status st = ox_fold(I->node, I->who, ins, ins[1] ? 2 : 1, &out, &handled, I->d);
    free(zero.data);
    if (st) return st;
    rank = out.rank;
    memcpy(shape, out.shape, sizeof(int64_t) * (size_t)rank);
    ox_tensor_free(&out);
  }
  if (rank > PPCC_MAX_RANK) return ppcc_error(I->d, "%s: result rank %d exceeds the maximum %d", I->who, rank, PPCC_MAX_RANK);
  ppcc_attr a = attr_ints("shape", rank, shape);
  return bind(I, 0, emit(I, "reshape", 1, &x, out_name(I, 0), 1, &a));
}

static ppcc_status tr_transpose(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return PPCC_ERR_USER;
  int rank = V(I, x).rank;
  int64_t perm[PPCC_MAX_RANK];
  const Onnx__AttributeProto *a = ox_attr(I->node, "perm");
  if (a && (int)a->n_ints != rank) return ppcc_error(I->d, "%s: perm has %zu entries for rank %d", I->who, a->n_ints, rank);
  for (int i = 0; i < rank; i++) perm[i] = a ? a->ints[i] : rank - 1 - i;
  ppcc_attr at = attr_ints("perm", rank, perm);
  return bind(I, 0, emit(I, "permute", 1, &x, out_name(I, 0), 1, &at));
}

static ppcc_status tr_concat(importer *I) {
  int n = (int)I->node->n_input, in[16];
  if (n < 1 || n > 16) return defer_node(I, "Concat of more than 16 operands is not supported");
  for (int k = 0; k < n; k++)
    if ((in[k] = operand(I, k)) < 0) return PPCC_ERR_USER;
  ppcc_attr a = attr_int("dim", ox_attr_int(I->node, "axis", 0));
  return bind(I, 0, emit(I, "concat", n, in, out_name(I, 0), 1, &a));
}

/* A constant entry of the importer's own (folded weights), named after the
 * node's result; its value a param on first use. Takes t. */
static entry *own_const(importer *I, const char *suffix, ox_tensor *t) {
  size_t n = strlen(out_name(I, 0)) + strlen(suffix) + 1;
  char *name = ppcc_alloc(I->g, n);
  entry *x = name ? (snprintf(name, n, "%s%s", out_name(I, 0), suffix), add_entry(I, name)) : NULL;
  if (!x) {
    ox_tensor_free(t);
    return NULL;
  }
  x->is_const = true;
  x->c = *t;
  *t = (ox_tensor){0};
  return x;
}

static int slice_dim(importer *I, int x, int64_t axis, int64_t start, int64_t end, const char *name) {
  ppcc_attr a[3] = {attr_int("dim", axis), attr_int("start", start), attr_int("end", end)};
  return emit(I, "slice", 1, &x, name, 3, a);
}

/* Clamped [start, end) of ONNX slicing semantics for a dim of size n. */
static void clamp_range(int64_t n, int64_t *s, int64_t *e) {
  if (*s < 0) *s += n;
  if (*e < 0) *e += n;
  *s = *s < 0 ? 0 : *s > n ? n : *s;
  *e = *e < *s ? *s : *e > n ? n : *e;
}

/* The gather row along axis by a constant i64 index list (a param named
 * after the node's result). */
static int gather_const(importer *I, int x, int64_t axis, int64_t n, const int64_t *index, const char *suffix,
                        const char *name) {
  ox_tensor t;
  if (!ox_tensor_alloc(&t, PPCC_I64, 1, &n)) return ppcc_error(I->d, "%s: index list too long", I->who), -2;
  if (n) memcpy(t.data, index, sizeof(int64_t) * (size_t)n);
  entry *ix = own_const(I, suffix, &t);
  int in[2] = {x, ix ? value_of(I, ix) : (oom(I), -1)};
  ppcc_attr a = attr_int("dim", axis);
  return emit(I, "gather", 2, in, name, 1, &a);
}

/* Slice: the slice row per axis with step 1; another step (negative ones
 * count down) gathers the positions s, s + step, ... (ONNX's clamping). */
static ppcc_status tr_slice(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return PPCC_ERR_USER;
  const ox_tensor *st = in_const(I, 1), *en = in_const(I, 2), *ax = in_const(I, 3), *sp = in_const(I, 4);
  if (!st || !en || st->n != en->n || st->n > PPCC_MAX_RANK || (in_entry(I, 3) && (!ax || ax->n != st->n)) ||
      (in_entry(I, 4) && (!sp || sp->n != st->n)))
    return defer_node(I, "Slice needs constant starts, ends, axes and steps");
  int rank = V(I, x).rank;
  for (int64_t i = 0; i < st->n; i++) {
    int64_t axis = ax ? ox_get_int(ax, i) : i, step = sp ? ox_get_int(sp, i) : 1;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return ppcc_error(I->d, "%s: Slice axis out of range", I->who);
    if (step == 0) return ppcc_error(I->d, "%s: Slice step 0", I->who);
    const int64_t big = INT64_C(1) << 62; /* past any dim: the same slice, and -step cannot overflow */
    step = step > big ? big : step < -big ? -big : step;
    int64_t s = ox_get_int(st, i), e = ox_get_int(en, i), dim = V(I, x).shape[axis];
    const char *name = i + 1 < st->n ? tmp_name(I) : out_name(I, 0);
    if (step == 1) {
      clamp_range(dim, &s, &e);
      x = slice_dim(I, x, axis, s, e, name);
    } else {
      if (s < 0) s += dim; /* no overflow: dim >= 0 */
      if (e < 0) e += dim;
      if (step > 0) { /* ONNX: starts into [0, dim] ([0, dim - 1] counting down), ends [0, dim] ([-1, dim - 1]) */
        s = s > dim ? dim : s < 0 ? 0 : s;
        e = e > dim ? dim : e < 0 ? 0 : e;
      } else {
        s = s > dim - 1 ? dim - 1 : s < 0 ? 0 : s;
        e = e > dim - 1 ? dim - 1 : e < -1 ? -1 : e;
      }
      int64_t n = dim == 0 ? 0 : step > 0 ? (e > s ? (e - s - 1) / step + 1 : 0) : (s > e ? (s - e - 1) / -step + 1 : 0);
      if (n == 0) {
        x = slice_dim(I, x, axis, 0, 0, name);
      } else {
        int64_t *index = malloc(sizeof(int64_t) * (size_t)n);
        if (!index) return oom(I);
        for (int64_t k = 0; k < n; k++) index[k] = s + k * step;
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".step%lld", (long long)i);
        x = gather_const(I, x, axis, n, index, suffix, name);
        free(index);
      }
    }
    if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  }
  return bind(I, 0, x);
}

static ppcc_status tr_split(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return PPCC_ERR_USER;
  int rank = V(I, x).rank, n_out = (int)I->node->n_output;
  int64_t axis = ox_attr_int(I->node, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ppcc_error(I->d, "%s: Split axis out of range", I->who);
  int64_t dim = V(I, x).shape[axis], sizes[64];
  if (n_out < 1 || n_out > 64) return ppcc_error(I->d, "%s: Split into %d results is not supported", I->who, n_out);
  const ox_tensor *s = in_const(I, 1);
  const Onnx__AttributeProto *num = ox_attr(I->node, "num_outputs");
  if (num && num->i != n_out)
    return ppcc_error(I->d, "%s: num_outputs is %lld, the node has %d results", I->who, (long long)num->i, n_out);
  if (num && s) return ppcc_error(I->d, "%s: Split takes either split sizes or num_outputs, not both", I->who);
  if (s) {
    if (s->n != n_out) return ppcc_error(I->d, "%s: %lld split sizes for %d results", I->who, (long long)s->n, n_out);
    for (int k = 0; k < n_out; k++) sizes[k] = ox_get_int(s, k);
  } else if (in_entry(I, 1)) {
    return defer_node(I, "Split sizes must be constant");
  } else {
    int64_t chunk = (dim + n_out - 1) / n_out;
    for (int k = 0; k < n_out; k++) sizes[k] = dim - chunk * k < chunk ? dim - chunk * k : chunk;
  }
  int64_t start = 0;
  for (int k = 0; k < n_out; k++) {
    if (sizes[k] < 0 || start + sizes[k] > dim) return ppcc_error(I->d, "%s: split sizes exceed dim %lld", I->who, (long long)dim);
    ppcc_status st = bind(I, k, slice_dim(I, x, axis, start, start + sizes[k], out_name(I, k)));
    if (st) return st;
    start += sizes[k];
  }
  return start == dim ? PPCC_OK : ppcc_error(I->d, "%s: split sizes add up to %lld, not %lld", I->who, (long long)start, (long long)dim);
}

/* Gather: an embedding lookup (constant float [vocab, hidden] table, axis
 * 0), a slice (one constant index), else the gather row (numpy take) on
 * any data and index, constant or computed. */
static ppcc_status tr_gather(importer *I) {
  int64_t axis = ox_attr_int(I->node, "axis", 0);
  entry *data = in_entry(I, 0);
  const ox_tensor *idx = in_const(I, 1);
  if (data && data->is_const && data->c.rank == 2 && ppcc_dtype_is_float(data->c.dtype) && (axis == 0 || axis == -2)) {
    int in[2] = {operand(I, 1), operand(I, 0)};
    ppcc_attr a = attr_bool("wrap_negative", true); /* ONNX indices may count from the end */
    return bind(I, 0, emit(I, "embedding", 2, in, out_name(I, 0), 1, &a));
  }
  int x = operand(I, 0);
  if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  int rank = V(I, x).rank;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ppcc_error(I->d, "%s: Gather axis out of range", I->who);
  if (idx && idx->n == 1 && idx->rank <= 1) {
    int64_t k = ox_get_int(idx, 0), n = V(I, x).shape[axis];
    if (k < 0) k += n;
    if (k < 0 || k >= n) return ppcc_error(I->d, "%s: Gather index out of range", I->who);
    int y = slice_dim(I, x, axis, k, k + 1, idx->rank == 0 ? tmp_name(I) : out_name(I, 0));
    if (y >= 0 && idx->rank == 0) {
      int64_t shape[PPCC_MAX_RANK];
      int r = 0;
      for (int i = 0; i < rank; i++)
        if (i != axis) shape[r++] = V(I, y).shape[i];
      y = reshape_to(I, y, r, shape, out_name(I, 0));
    }
    return bind(I, 0, y);
  }
  int in[2] = {x, operand(I, 1)};
  ppcc_attr a = attr_int("dim", axis);
  return bind(I, 0, emit(I, "gather", 2, in, out_name(I, 0), 1, &a));
}

static ppcc_status tr_expand(importer *I) {
  int x = operand(I, 0);
  const ox_tensor *s = in_const(I, 1);
  if (x < 0) return PPCC_ERR_USER;
  const vshape v = V(I, x);
  if (s && s->n <= v.rank) {
    bool same = true;
    for (int64_t i = 0; i < s->n; i++) {
      int64_t want = ox_get_int(s, i), have = v.shape[v.rank - s->n + i];
      same = same && (want == have || want == 1);
    }
    if (same) return bind(I, 0, x);
  }
  if (!s || s->rank != 1 || s->n > PPCC_MAX_RANK)
    return defer_node(I, "Expand of a computed tensor needs a constant rank-1 shape");
  /* the result is the broadcast of both shapes (a 1 in either gives way) */
  int rank = (int)s->n > v.rank ? (int)s->n : v.rank;
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    int si = i - (rank - (int)s->n), vi = i - (rank - v.rank);
    int64_t want = si >= 0 ? ox_get_int(s, si) : 1, have = vi >= 0 ? v.shape[vi] : 1;
    shape[i] = want == 1 ? have : want;
  }
  ppcc_attr a = attr_ints("shape", rank, shape);
  return bind(I, 0, emit(I, "expand", 1, &x, out_name(I, 0), 1, &a));
}

/* Equal/Less/Greater/Where on computed tensors: the op-table rows. */
static ppcc_status tr_compare(importer *I) {
  const char *op = I->node->op_type;
  const char *name = strcmp(op, "Equal") == 0 ? "equal" : strcmp(op, "Less") == 0 ? "less" : "greater";
  int in[2] = {operand(I, 0), operand(I, 1)};
  return bind(I, 0, emit(I, name, 2, in, out_name(I, 0), 0, NULL));
}

static ppcc_status tr_where(importer *I) {
  int in[3] = {operand(I, 0), operand(I, 1), operand(I, 2)};
  return bind(I, 0, emit(I, "where", 3, in, out_name(I, 0), 0, NULL));
}

static ppcc_status tr_gather_elements(importer *I) {
  int in[2] = {operand(I, 0), operand(I, 1)};
  ppcc_attr a = attr_int("dim", ox_attr_int(I->node, "axis", 0));
  return bind(I, 0, emit(I, "gather_elements", 2, in, out_name(I, 0), 1, &a));
}

/* ---------------- convolutions and pooling ---------------- */

static bool attr_string_is(const Onnx__AttributeProto *a, const char *s) {
  return a && a->s.len == strlen(s) && memcmp(a->s.data, s, a->s.len) == 0;
}

/* strides, dilations and pads (begins then ends) of a Conv/MaxPool/
 * AveragePool over s spatial dims of x with kernel k, auto_pad included. */
static ppcc_status window_attrs(importer *I, const vshape *x, int s, const int64_t *k, int64_t *strides,
                                int64_t *dilations, int64_t *pads) {
  const Onnx__AttributeProto *st = ox_attr(I->node, "strides"), *dl = ox_attr(I->node, "dilations"),
                             *pd = ox_attr(I->node, "pads"), *ap = ox_attr(I->node, "auto_pad");
  if ((st && (int)st->n_ints != s) || (dl && (int)dl->n_ints != s) || (pd && (int)pd->n_ints != 2 * s))
    return ppcc_error(I->d, "%s: strides, dilations and pads need one entry per spatial dim (pads two)", I->who);
  for (int i = 0; i < s; i++) {
    strides[i] = st ? st->ints[i] : 1;
    dilations[i] = dl ? dl->ints[i] : 1;
    pads[i] = pd ? pd->ints[i] : 0;
    pads[s + i] = pd ? pd->ints[s + i] : 0;
  }
  if (ap && !attr_string_is(ap, "NOTSET")) {
    bool upper = attr_string_is(ap, "SAME_UPPER"), lower = attr_string_is(ap, "SAME_LOWER");
    if (!upper && !lower && !attr_string_is(ap, "VALID"))
      return ppcc_error(I->d, "%s: auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID", I->who);
    if (pd) return ppcc_error(I->d, "%s: pads and auto_pad are both given", I->who);
    for (int i = 0; i < s && (upper || lower); i++) {
      if (strides[i] < 1) break; /* refused by the op's shape rule */
      int64_t in = x->shape[2 + i], out = (in + strides[i] - 1) / strides[i];
      int64_t total = (out - 1) * strides[i] + (k[i] - 1) * dilations[i] + 1 - in;
      if (total < 0) total = 0;
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[s + i] = total - pads[i];
    }
  }
  return PPCC_OK;
}

/* The sole reader of the node's result when it is a BatchNormalization
 * with constant parameters (inference mode), else NULL. */
static const Onnx__NodeProto *folding_batch_norm(importer *I, int *index) {
  const Onnx__GraphProto *gr = I->graph;
  const char *y = out_name(I, 0);
  const Onnx__NodeProto *bn = NULL;
  for (size_t k = 0; k < gr->n_output; k++)
    if (gr->output[k]->name && strcmp(gr->output[k]->name, y) == 0) return NULL;
  for (size_t j = 0; j < gr->n_node; j++)
    for (size_t k = 0; k < gr->node[j]->n_input; k++)
      if (strcmp(gr->node[j]->input[k], y) == 0) {
        if (bn || (int)j <= I->node_index || k != 0 || strcmp(gr->node[j]->op_type, "BatchNormalization") != 0) return NULL;
        bn = gr->node[j];
        *index = (int)j;
      }
  if (!bn || bn->n_input != 5 || bn->n_output != 1 || ox_attr_int(bn, "training_mode", 0)) return NULL;
  for (int k = 1; k < 5; k++) {
    entry *p = find(I, bn->input[k]);
    if (!p || !p->is_const || p->c.rank != 1 || !ppcc_dtype_is_float(p->c.dtype)) return NULL;
  }
  return bn;
}

/* Per-channel scale s = gamma / sqrt(var + eps) and shift beta - mean * s
 * of a BatchNormalization's constant operands, over C channels. */
static bool batch_norm_affine(importer *I, const Onnx__NodeProto *bn, int64_t C, double *s, double *t) {
  const ox_tensor *p[4];
  for (int k = 0; k < 4; k++) {
    p[k] = &find(I, bn->input[k + 1])->c;
    if (p[k]->n != C) return false;
  }
  double eps = ox_attr_float(bn, "epsilon", 1e-5f);
  for (int64_t c = 0; c < C; c++) {
    s[c] = ox_get(p[0], c) / sqrt(ox_get(p[3], c) + eps);
    t[c] = ox_get(p[1], c) - ox_get(p[2], c) * s[c];
  }
  return true;
}

/* A [C, 1, ...] constant of rank `rank` (per-channel, broadcast over N and
 * the spatial dims) from C values. */
static int channel_const(importer *I, const char *suffix, const double *v, int64_t C, int rank) {
  int64_t shape[PPCC_MAX_RANK] = {C, 1, 1};
  ox_tensor t;
  if (!ox_tensor_alloc(&t, PPCC_F32, rank - 1, shape)) return oom(I), -1;
  for (int64_t c = 0; c < C; c++) ox_set(&t, c, v[c]);
  entry *x = own_const(I, suffix, &t);
  return x ? value_of(I, x) : (oom(I), -1);
}

/* Conv (1-D/2-D, groups, strides, pads, dilations, auto_pad): the conv row,
 * then the bias per output channel. A BatchNormalization that is the only
 * reader of the result, with constant weights, folds into the filters and
 * bias here (W * s per filter, (b - mean) * s + beta). */
static ppcc_status tr_conv(importer *I) {
  int x = operand(I, 0), w = operand(I, 1);
  if (x < 0 || w < 0) return x == -1 || w == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  const vshape xv = V(I, x), wv = V(I, w);
  const int rank = xv.rank;
  int s = xv.rank - 2;
  if (s < 1 || s > 2 || wv.rank != xv.rank)
    return defer_node(I, "Conv is supported over 1 or 2 spatial dims ([N, C, W] or [N, C, H, W])");
  const Onnx__AttributeProto *ks = ox_attr(I->node, "kernel_shape");
  for (int i = 0; ks && i < s; i++)
    if ((int)ks->n_ints != s || ks->ints[i] != wv.shape[2 + i])
      return ppcc_error(I->d, "%s: kernel_shape differs from the weight's spatial dims", I->who);
  int64_t strides[2], dilations[2], pads[4], F = wv.shape[0];
  ppcc_status st = window_attrs(I, &xv, s, wv.shape + 2, strides, dilations, pads);
  if (st) return st;
  entry *we = in_entry(I, 1), *be = in_entry(I, 2);
  int bn_index = -1;
  const Onnx__NodeProto *bn = we->is_const && (!be || be->is_const) && ppcc_dtype_is_float(we->c.dtype)
                                  ? folding_batch_norm(I, &bn_index) : NULL;
  double *scale = NULL, *shift = NULL;
  if (bn) {
    scale = calloc((size_t)F, sizeof(double)), shift = calloc((size_t)F, sizeof(double));
    if (!scale || !shift) {
      free(scale), free(shift);
      return oom(I);
    }
    if (!batch_norm_affine(I, bn, F, scale, shift) || (be && be->c.n != F)) bn = NULL;
  }
  if (bn) { /* folded filters and bias */
    ox_tensor fw;
    if (!ox_tensor_copy(&fw, &we->c)) return free(scale), free(shift), oom(I);
    int64_t per = fw.n / (F ? F : 1);
    for (int64_t i = 0; i < fw.n; i++) ox_set(&fw, i, ox_get(&fw, i) * scale[i / per]);
    for (int64_t f = 0; f < F; f++) shift[f] += (be ? ox_get(&be->c, f) : 0.0) * scale[f];
    entry *fe = own_const(I, ".bn_weight", &fw);
    w = fe ? value_of(I, fe) : -1;
    I->bn_folded[bn_index] = true;
  }
  ppcc_attr attrs[4] = {attr_int("group", ox_attr_int(I->node, "group", 1)), attr_ints("strides", s, strides),
                        attr_ints("dilations", s, dilations), attr_ints("pads", 2 * s, pads)};
  bool biased = bn || be;
  int in[2] = {x, w};
  int y = emit(I, "conv", 2, in, biased ? tmp_name(I) : out_name(I, 0), 4, attrs);
  if (y >= 0 && biased) {
    int b;
    be = bn ? NULL : in_entry(I, 2);
    if (bn) b = channel_const(I, ".bn_bias", shift, F, rank);
    else if (be->is_const && be->c.n == F) {
      double *v = malloc(sizeof(double) * (size_t)(F ? F : 1));
      if (!v) return oom(I);
      for (int64_t f = 0; f < F; f++) v[f] = ox_get(&be->c, f);
      b = channel_const(I, ".bias", v, F, rank);
      free(v);
    } else {
      int64_t shape[3] = {F, 1, 1};
      b = reshape_to(I, operand(I, 2), rank - 1, shape, tmp_name(I));
    }
    int in2[2] = {y, b};
    y = emit(I, "add", 2, in2, out_name(I, 0), 0, NULL);
  }
  free(scale);
  free(shift);
  return bind(I, 0, y);
}

/* BatchNormalization (inference): folded into the Conv before it, or
 * x * s + t per channel. */
static ppcc_status tr_batch_norm(importer *I) {
  if (I->bn_folded[I->node_index]) return tr_alias(I);
  const Onnx__NodeProto *n = I->node;
  if (ox_attr_int(n, "training_mode", 0) || n->n_output > 1)
    return defer_node(I, "BatchNormalization in training mode is not supported");
  int x = operand(I, 0);
  if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  int64_t C = V(I, x).rank >= 2 ? V(I, x).shape[1] : 0;
  for (int k = 1; k < 5; k++) {
    const ox_tensor *p = in_const(I, k);
    if (!p || p->rank != 1 || p->n != C || !ppcc_dtype_is_float(p->dtype))
      return defer_node(I, "BatchNormalization needs constant scale, bias, mean and variance of the channel count");
  }
  double *s = calloc((size_t)(C ? C : 1), sizeof(double)), *t = calloc((size_t)(C ? C : 1), sizeof(double));
  if (!s || !t || !batch_norm_affine(I, n, C, s, t)) {
    free(s), free(t);
    return oom(I);
  }
  int in[2] = {x, channel_const(I, ".bn_scale", s, C, V(I, x).rank)};
  int y = emit(I, "mul", 2, in, tmp_name(I), 0, NULL);
  int in2[2] = {y, channel_const(I, ".bn_shift", t, C, V(I, x).rank)};
  free(s);
  free(t);
  return bind(I, 0, emit(I, "add", 2, in2, out_name(I, 0), 0, NULL));
}

/* MaxPool: the max_pool row; AveragePool: a depthwise conv. ceil_mode
 * rounds the output size up: the end pads grow to reach that size
 * (max_pool never reads padding). An AveragePool divides by the window's
 * volume with count_include_pad (as ONNX Runtime, also where ceil_mode's
 * last window reaches past the pads): a conv by 1/volume; without it, by
 * the positions inside the input: a conv by ones times a constant
 * 1/count per output position. */
static ppcc_status tr_pool(importer *I) {
  const Onnx__NodeProto *n = I->node;
  bool max = strcmp(n->op_type, "MaxPool") == 0;
  int x = operand(I, 0);
  if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  const vshape xv = V(I, x);
  int s = xv.rank - 2;
  const Onnx__AttributeProto *ks = ox_attr(n, "kernel_shape"), *ap = ox_attr(n, "auto_pad");
  if (s < 1 || s > 2 || !ks || (int)ks->n_ints != s)
    return defer_node(I, "pooling is supported over 1 or 2 spatial dims, kernel_shape one entry each");
  bool ceil_mode = ox_attr_int(n, "ceil_mode", 0) != 0;
  if (ceil_mode && ap && !attr_string_is(ap, "NOTSET"))
    return defer_node(I, "pooling with ceil_mode 1 and auto_pad is not supported");
  if (n->n_output > 1 && n->output[1][0]) return defer_node(I, "MaxPool's Indices result is not supported");
  int64_t strides[2], dilations[2], pads[4], kernel[2], out[2];
  for (int i = 0; i < s; i++) kernel[i] = ks->ints[i];
  ppcc_status st = window_attrs(I, &xv, s, kernel, strides, dilations, pads);
  if (st) return st;
  for (int i = 0; i < s; i++) {
    const int64_t lim = INT64_C(1) << 24;
    int64_t in = xv.shape[2 + i], span, padded;
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 || pads[s + i] < 0 || kernel[i] > lim ||
        strides[i] > lim || dilations[i] > lim || pads[i] > lim || pads[s + i] > lim)
      return ppcc_error(I->d, "%s: kernel_shape, strides and dilations must be positive, pads non-negative", I->who);
    span = dilations[i] * (kernel[i] - 1) + 1, padded = in + pads[i] + pads[s + i];
    if (padded < span) return ppcc_error(I->d, "%s: the pooling window is larger than the padded input", I->who);
    out[i] = (padded - span) / strides[i] + 1;
    if (ceil_mode) {
      int64_t up = (padded - span + strides[i] - 1) / strides[i] + 1;
      if (up > out[i] && (up - 1) * strides[i] >= in + pads[i]) /* ONNX drops it; ONNX Runtime 1.20 does not */
        return defer_node(I, "pooling with ceil_mode 1 where the last window would start past the input is not "
                             "supported (ONNX and ONNX Runtime disagree on it)");
      if (up > out[i]) pads[s + i] += (up - 1) * strides[i] + span - padded;
      out[i] = up;
    }
  }
  if (max) {
    ppcc_attr attrs[4] = {attr_ints("kernel", s, kernel), attr_ints("strides", s, strides),
                          attr_ints("dilations", s, dilations), attr_ints("pads", 2 * s, pads)};
    return bind(I, 0, emit(I, "max_pool", 1, &x, out_name(I, 0), 4, attrs));
  }
  /* positions each output's window counts, per spatial dim (AveragePool has no dilations) */
  bool include = ox_attr_int(n, "count_include_pad", 0) != 0, uniform = true;
  int64_t vol = kernel[0] * (s > 1 ? kernel[1] : 1), oshape[2] = {out[0], s > 1 ? out[1] : 1};
  ox_tensor inv;
  if (!ox_tensor_alloc(&inv, PPCC_F32, s, oshape)) return ppcc_error(I->d, "%s: invalid pooling window", I->who);
  for (int64_t o0 = 0; o0 < oshape[0]; o0++)
    for (int64_t o1 = 0; o1 < oshape[1]; o1++) {
      int64_t count = 1, o[2] = {o0, o1};
      for (int i = 0; i < s; i++) {
        int64_t in = xv.shape[2 + i], lo = o[i] * strides[i] - pads[i], hi = lo + kernel[i];
        if (!include) lo = lo < 0 ? 0 : lo, hi = hi < in ? hi : in;
        count *= hi > lo ? hi - lo : 0;
      }
      uniform &= count == vol;
      ox_set(&inv, o0 * oshape[1] + o1, 1.0 / (double)count);
    }
  int64_t C = xv.shape[1], wshape[4] = {C, 1, kernel[0], s > 1 ? kernel[1] : 1};
  ox_tensor k;
  if (!ox_tensor_alloc(&k, PPCC_F32, xv.rank, wshape)) {
    ox_tensor_free(&inv);
    return ppcc_error(I->d, "%s: invalid pooling window", I->who);
  }
  for (int64_t i = 0; i < k.n; i++) ox_set(&k, i, uniform ? 1.0 / (double)vol : 1.0);
  entry *ke = own_const(I, ".window", &k);
  int in[2] = {x, ke ? value_of(I, ke) : -1};
  ppcc_attr attrs[4] = {attr_int("group", C), attr_ints("strides", s, strides), attr_ints("dilations", s, dilations),
                        attr_ints("pads", 2 * s, pads)};
  int y = emit(I, "conv", 2, in, uniform ? out_name(I, 0) : tmp_name(I), 4, attrs);
  if (uniform || y < 0) {
    ox_tensor_free(&inv);
    return bind(I, 0, y);
  }
  entry *ce = own_const(I, ".per_count", &inv);
  int in2[2] = {y, ce ? value_of(I, ce) : -1};
  return bind(I, 0, emit(I, "mul", 2, in2, out_name(I, 0), 0, NULL));
}

/* GlobalAveragePool: the mean over the spatial dims, kept. */
static ppcc_status tr_global_pool(importer *I) {
  int x = operand(I, 0);
  if (x < 0) return x == -1 ? PPCC_ERR_INTERNAL : PPCC_ERR_USER;
  int r = V(I, x).rank;
  if (r < 3) return defer_node(I, "GlobalAveragePool needs [N, C, spatial...]");
  int64_t dims[PPCC_MAX_RANK];
  for (int i = 2; i < r; i++) dims[i - 2] = i;
  ppcc_attr attrs[2] = {attr_bool("keepdim", true), attr_ints("dim", r - 2, dims)};
  return bind(I, 0, emit(I, "mean", 1, &x, out_name(I, 0), 2, attrs));
}

static ppcc_status tr_const_only(importer *I) {
  return defer_node(I, "ppcc evaluates this op only on constants and static shapes (give --shape for symbolic inputs)");
}

/* The attributes ONNX defines for an op (opsets 13 to 18): every
 * attribute of a node must be one of them, of its type, within its opset
 * range; required ones must be there. A wrong type would otherwise read
 * as the default (a FLOAT transB is no transpose): a different function. */
enum { A_F = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, A_I = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT,
       A_S = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, A_T = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR,
       A_FS = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, A_IS = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS,
       A_SS = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS,
       A_ST = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR };
enum { REQUIRED = 1, ONE_OF = 2 }; /* ONE_OF: exactly one attribute of the group (Constant's value) */

typedef struct attr_schema {
  const char *name;
  int type;
  int flags;
  int since, until; /* opsets; 0: unbounded */
} attr_schema;

typedef struct translation {
  const char *op_type;
  node_fn fn;
  attr_schema attrs[8];
} translation;

#define NO_ATTRS {{NULL, 0, 0, 0, 0}}
static const translation translations[] = {
  {"Relu", tr_unary, NO_ATTRS}, {"Tanh", tr_unary, NO_ATTRS}, {"Sigmoid", tr_unary, NO_ATTRS},
  {"Exp", tr_unary, NO_ATTRS}, {"Neg", tr_unary, NO_ATTRS}, {"Sqrt", tr_unary, NO_ATTRS},
  {"Reciprocal", tr_unary, NO_ATTRS}, {"Erf", tr_unary, NO_ATTRS}, {"Log", tr_unary, NO_ATTRS},
  {"Identity", tr_alias, NO_ATTRS},
  {"Dropout", tr_alias, {{"seed", A_I, 0, 0, 0}}},
  {"Cast", tr_cast, {{"to", A_I, REQUIRED, 0, 0}}},
  {"Add", tr_binary, NO_ATTRS}, {"Sub", tr_binary, NO_ATTRS}, {"Mul", tr_binary, NO_ATTRS},
  {"Div", tr_binary, NO_ATTRS}, {"Pow", tr_binary, NO_ATTRS}, {"MatMul", tr_matmul, NO_ATTRS},
  {"Gemm", tr_gemm, {{"alpha", A_F, 0, 0, 0}, {"beta", A_F, 0, 0, 0}, {"transA", A_I, 0, 0, 0}, {"transB", A_I, 0, 0, 0}}},
  {"Softmax", tr_softmax, {{"axis", A_I, 0, 0, 0}}},
  {"LayerNormalization", tr_layer_norm, {{"axis", A_I, 0, 0, 0}, {"epsilon", A_F, 0, 0, 0}, {"stash_type", A_I, 0, 0, 0}}},
  {"ReduceMean", tr_reduce, {{"keepdims", A_I, 0, 0, 0}, {"axes", A_IS, 0, 0, 17}, {"noop_with_empty_axes", A_I, 0, 18, 0}}},
  {"ReduceMax", tr_reduce, {{"keepdims", A_I, 0, 0, 0}, {"axes", A_IS, 0, 0, 17}, {"noop_with_empty_axes", A_I, 0, 18, 0}}},
  {"ReduceSum", tr_reduce, {{"keepdims", A_I, 0, 0, 0}, {"noop_with_empty_axes", A_I, 0, 0, 0}}},
  {"Reshape", tr_reshape_like, {{"allowzero", A_I, 0, 14, 0}}},
  {"Flatten", tr_reshape_like, {{"axis", A_I, 0, 0, 0}}},
  {"Unsqueeze", tr_reshape_like, NO_ATTRS}, {"Squeeze", tr_reshape_like, NO_ATTRS},
  {"Transpose", tr_transpose, {{"perm", A_IS, 0, 0, 0}}},
  {"Concat", tr_concat, {{"axis", A_I, REQUIRED, 0, 0}}},
  {"Slice", tr_slice, NO_ATTRS},
  {"Split", tr_split, {{"axis", A_I, 0, 0, 0}, {"num_outputs", A_I, 0, 18, 0}}},
  {"Gather", tr_gather, {{"axis", A_I, 0, 0, 0}}},
  {"Expand", tr_expand, NO_ATTRS},
  {"GatherElements", tr_gather_elements, {{"axis", A_I, 0, 0, 0}}},
  {"Where", tr_where, NO_ATTRS}, {"Equal", tr_compare, NO_ATTRS}, {"Less", tr_compare, NO_ATTRS},
  {"Greater", tr_compare, NO_ATTRS},
  {"Trilu", tr_const_only, {{"upper", A_I, 0, 0, 0}}},
  {"Range", tr_const_only, NO_ATTRS},
  {"ConstantOfShape", tr_const_only, {{"value", A_T, 0, 0, 0}}},
  {"Shape", tr_const_only, {{"start", A_I, 0, 15, 0}, {"end", A_I, 0, 15, 0}}},
  {"Constant", tr_const_only,
   {{"value", A_T, ONE_OF, 0, 0}, {"sparse_value", A_ST, ONE_OF, 0, 0}, {"value_float", A_F, ONE_OF, 0, 0},
    {"value_floats", A_FS, ONE_OF, 0, 0}, {"value_int", A_I, ONE_OF, 0, 0}, {"value_ints", A_IS, ONE_OF, 0, 0},
    {"value_string", A_S, ONE_OF, 0, 0}, {"value_strings", A_SS, ONE_OF, 0, 0}}},
  {"Not", tr_const_only, NO_ATTRS}, {"And", tr_const_only, NO_ATTRS}, {"Or", tr_const_only, NO_ATTRS},
  {"Max", tr_const_only, NO_ATTRS}, {"Min", tr_const_only, NO_ATTRS}, {"Cos", tr_const_only, NO_ATTRS},
  {"Sin", tr_const_only, NO_ATTRS}, {"Floor", tr_const_only, NO_ATTRS}, {"Ceil", tr_const_only, NO_ATTRS},
  {"Abs", tr_const_only, NO_ATTRS},
  {"Conv", tr_conv,
   {{"auto_pad", A_S, 0, 0, 0}, {"dilations", A_IS, 0, 0, 0}, {"group", A_I, 0, 0, 0}, {"kernel_shape", A_IS, 0, 0, 0},
    {"pads", A_IS, 0, 0, 0}, {"strides", A_IS, 0, 0, 0}}},
  {"BatchNormalization", tr_batch_norm,
   {{"epsilon", A_F, 0, 0, 0}, {"momentum", A_F, 0, 0, 0}, {"training_mode", A_I, 0, 14, 0}}},
  {"MaxPool", tr_pool,
   {{"auto_pad", A_S, 0, 0, 0}, {"ceil_mode", A_I, 0, 0, 0}, {"dilations", A_IS, 0, 0, 0},
    {"kernel_shape", A_IS, REQUIRED, 0, 0}, {"pads", A_IS, 0, 0, 0}, {"storage_order", A_I, 0, 0, 0},
    {"strides", A_IS, 0, 0, 0}}},
  {"AveragePool", tr_pool,
   {{"auto_pad", A_S, 0, 0, 0}, {"ceil_mode", A_I, 0, 0, 0}, {"count_include_pad", A_I, 0, 0, 0},
    {"kernel_shape", A_IS, REQUIRED, 0, 0}, {"pads", A_IS, 0, 0, 0}, {"strides", A_IS, 0, 0, 0}}},
  {"GlobalAveragePool", tr_global_pool, NO_ATTRS},
};
#define N_TRANSLATIONS (int)(sizeof translations / sizeof translations[0])

static const translation *translation_row(const char *op_type) {
  for (int i = 0; i < N_TRANSLATIONS; i++)
    if (strcmp(translations[i].op_type, op_type) == 0) return &translations[i];
  return NULL;
}

static const char *attr_type_name(int type) {
  switch (type) {
  case A_F: return "FLOAT";
  case A_I: return "INT";
  case A_S: return "STRING";
  case A_T: return "TENSOR";
  case A_FS: return "FLOATS";
  case A_IS: return "INTS";
  case A_SS: return "STRINGS";
  case A_ST: return "SPARSE_TENSOR";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
  case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED: return "UNDEFINED";
  default: return "an unknown type";
  }
}

/* Does the attribute carry a value of its declared type? */
static bool attr_has_value(const Onnx__AttributeProto *a) {
  switch ((int)a->type) {
  case A_F: return a->has_f;
  case A_I: return a->has_i;
  case A_S: return a->has_s;
  case A_T: return a->t != NULL;
  case A_ST: return a->sparse_tensor != NULL;
  default: return true; /* a list may be empty */
  }
}

/* The node's attributes against its op's schema (translation row). */
static ppcc_status check_attributes(importer *I) {
  const Onnx__NodeProto *n = I->node;
  const translation *t = translation_row(n->op_type);
  int one_of = 0;
  bool has_one_of = false;
  for (size_t i = 0; i < n->n_attribute; i++) {
    const Onnx__AttributeProto *a = n->attribute[i];
    if (!a->name || !a->name[0]) return ppcc_error(I->d, "%s: attribute #%zu has no name", I->who, i);
    const char *esc = a->name; /* the diagnostic escapes it */
    for (size_t j = 0; j < i; j++)
      if (n->attribute[j]->name && strcmp(n->attribute[j]->name, a->name) == 0)
        return ppcc_error(I->d, "%s: attribute '%s' is given twice", I->who, esc);
    if (a->ref_attr_name && a->ref_attr_name[0])
      return ppcc_error(I->d, "%s: attribute '%s' refers to a function attribute (only valid inside a function)",
                        I->who, esc);
    const attr_schema *s = NULL;
    for (int k = 0; t && k < 8 && t->attrs[k].name && !s; k++)
      if (strcmp(t->attrs[k].name, a->name) == 0) s = &t->attrs[k];
    if (!s || (s->since && I->opset < s->since) || (s->until && I->opset > s->until))
      return ppcc_error(I->d, "%s: %s has no attribute '%s' in opset %lld", I->who, n->op_type, esc,
                        (long long)I->opset);
    if ((int)a->type != s->type)
      return ppcc_error(I->d, "%s: attribute '%s' is %s, %s's %s is %s", I->who, esc, attr_type_name((int)a->type),
                        n->op_type, s->name, attr_type_name(s->type));
    if (!attr_has_value(a)) return ppcc_error(I->d, "%s: attribute '%s' has no value", I->who, esc);
    one_of += (s->flags & ONE_OF) != 0;
  }
  for (int k = 0; t && k < 8 && t->attrs[k].name; k++) {
    const attr_schema *s = &t->attrs[k];
    has_one_of |= (s->flags & ONE_OF) != 0;
    if (!(s->flags & REQUIRED) || (s->since && I->opset < s->since) || (s->until && I->opset > s->until)) continue;
    if (!ox_attr(n, s->name)) return ppcc_error(I->d, "%s: %s needs attribute '%s'", I->who, n->op_type, s->name);
  }
  if (has_one_of && one_of != 1)
    return ppcc_error(I->d, "%s: %s needs exactly one value attribute, got %d", I->who, n->op_type, one_of);
  return PPCC_OK;
}

static node_fn translation_of(const char *op_type) {
  const translation *t = translation_row(op_type);
  return t ? t->fn : NULL;
}

/* ---------------- the model ---------------- */

static ppcc_status check_opset(importer *I, const Onnx__ModelProto *m) {
  int64_t version = -1;
  for (size_t i = 0; i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = m->opset_import[i];
    if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) version = o->has_version ? o->version : -1;
  }
  if (version < 0) return ppcc_error(I->d, "the model imports no version of the default ONNX opset");
  if (version < 13 || version > 18)
    return ppcc_error(I->d, "opset %lld is not supported (ppcc imports opsets 13 to 18; re-export with one of them)",
                      (long long)version);
  I->opset = version;
  return PPCC_OK;
}

/* One error listing every op type no translation knows. */
static ppcc_status check_op_types(importer *I) {
  const Onnx__GraphProto *gr = I->graph;
  char msg[900] = "";
  size_t off = 0;
  int kinds = 0;
  for (size_t i = 0; i < gr->n_node; i++) {
    const char *t = gr->node[i]->op_type ? gr->node[i]->op_type : "";
    const char *dom = gr->node[i]->domain;
    bool custom = dom && dom[0] && strcmp(dom, "ai.onnx") != 0;
    if (!custom && translation_of(t)) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) {
      const Onnx__NodeProto *o = gr->node[j];
      bool ocustom = o->domain && o->domain[0] && strcmp(o->domain, "ai.onnx") != 0;
      seen = strcmp(o->op_type ? o->op_type : "", t) == 0 && (ocustom || !translation_of(t));
    }
    if (seen) continue;
    int count = 0;
    for (size_t j = i; j < gr->n_node; j++) count += strcmp(gr->node[j]->op_type ? gr->node[j]->op_type : "", t) == 0;
    const char *name = gr->node[i]->name && gr->node[i]->name[0] ? gr->node[i]->name : "(unnamed)";
    if (off < sizeof msg - 100)
      off += (size_t)snprintf(msg + off, sizeof msg - off, "%s%.60s%s%.40s x%d (first: '%.60s')", kinds ? ", " : "", t,
                              custom ? "@" : "", custom ? dom : "", count, name);
    kinds++;
  }
  if (kinds) return ppcc_error(I->d, "%d unsupported op type%s: %s", kinds, kinds > 1 ? "s" : "", msg);
  return PPCC_OK;
}

static const ppcc_onnx_shape *given_shape(importer *I, const char *name) {
  for (int i = 0; i < I->opts->n_shapes; i++)
    if (strcmp(I->opts->shapes[i].name, name) == 0) return &I->opts->shapes[i];
  return NULL;
}

static ppcc_status add_input(importer *I, const Onnx__ValueInfoProto *in, const ox_tensor *init) {
  const char *name = in->name ? in->name : "", *en = name;
  const Onnx__TypeProto *t = in->type;
  if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type)
    return ppcc_error(I->d, "graph input '%s': only tensor inputs are supported", en);
  ppcc_dtype dt;
  if (!ox_dtype_from_onnx(t->tensor_type->has_elem_type ? t->tensor_type->elem_type : 0, &dt))
    return ppcc_error(I->d, "graph input '%s': ONNX data type %d is not supported", en, (int)t->tensor_type->elem_type);
  const Onnx__TensorShapeProto *sh = t->tensor_type->shape;
  const ppcc_onnx_shape *given = given_shape(I, name);
  if (init && init->dtype != dt)
    return ppcc_error(I->d, "graph input '%s' is %s, its initializer %s", en, ppcc_dtype_name(dt), ppcc_dtype_name(init->dtype));
  ppcc_onnx_shape from_init = {.name = name, .rank = init ? init->rank : 0};
  if (init && !sh && !given) { /* the initializer's shape is the input's */
    memcpy(from_init.dims, init->shape, sizeof(int64_t) * (size_t)init->rank);
    given = &from_init;
  }
  int rank = sh ? (int)sh->n_dim : 0;
  if (!sh && !given) return ppcc_error(I->d, "graph input '%s' has no shape; give --shape %s=D0,D1,...", en, en);
  if (given && sh && given->rank != rank)
    return ppcc_error(I->d, "--shape %s has rank %d, the model's input has rank %d", en, given->rank, rank);
  if (given) rank = given->rank;
  if (rank > PPCC_MAX_RANK) return ppcc_error(I->d, "graph input '%s' has rank %d (max %d)", en, rank, PPCC_MAX_RANK);
  int64_t shape[PPCC_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    const Onnx__TensorShapeProto__Dimension *dim = sh ? sh->dim[i] : NULL;
    bool fixed = dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    if (given) {
      if (fixed && dim->dim_value != given->dims[i])
        return ppcc_error(I->d, "--shape %s: dim %d is %lld, the model fixes it at %lld", en, i,
                          (long long)given->dims[i], (long long)dim->dim_value);
      shape[i] = given->dims[i];
    } else if (fixed && dim->dim_value >= 0) {
      shape[i] = dim->dim_value;
    } else if (fixed) {
      return ppcc_error(I->d, "graph input '%s': dim %d is %lld; a dim is a non-negative size", en, i,
                        (long long)dim->dim_value);
    } else if (init && init->rank == rank) { /* a symbolic dim of an input with a default: the default's */
      shape[i] = init->shape[i];
    } else {
      const char *sym = dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dim->dim_param : "?";
      return ppcc_error(I->d, "graph input '%s': dim %d is symbolic ('%s'); give its static shape with --shape %s=D0,D1,...",
                        en, i, sym, en);
    }
  }
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] > 0 && n > PPCC_MAX_ELEMENTS / shape[i])
      return ppcc_error(I->d, "graph input '%s' has more than 2^48 elements, more than ppcc handles", en);
    n *= shape[i];
  }
  if (init && (init->rank != rank || memcmp(init->shape, shape, sizeof(int64_t) * (size_t)rank) != 0))
    return ppcc_error(I->d, "graph input '%s': its initializer's shape differs from the input's", en);
  entry *x = add_entry(I, name);
  if (!x) return oom(I);
  int v = add_named_value(I, name, PPCC_VALUE_INPUT, dt, rank, shape);
  if (v < 0) return v == -1 ? oom(I) : PPCC_ERR_USER;
  x->value = v;
  return PPCC_OK;
}

static void set_who(importer *I, int index) {
  const Onnx__NodeProto *n = I->node;
  /* names as they are: the diagnostic escapes the whole message */
  const char *op = n->op_type ? n->op_type : "";
  if (n->name && n->name[0]) snprintf(I->who, sizeof I->who, "node '%.*s' (%.60s)", PPCC_MAX_NAME * 4, n->name, op);
  else snprintf(I->who, sizeof I->who, "node #%d (%.60s)", index, op);
}

/* Folds the node when all its operands are constant (or it is Shape of a
 * statically shaped value). *done: the outputs are bound. */
static ppcc_status try_fold(importer *I, bool *done) {
  const Onnx__NodeProto *n = I->node;
  *done = false;
  ox_tensor out;
  if (strcmp(n->op_type, "Shape") == 0) {
    entry *x = in_entry(I, 0);
    if (!x || (!x->is_const && x->value < 0)) return PPCC_OK;
    vshape xs = x->is_const ? (vshape){.rank = x->c.rank} : V(I, x->value);
    if (x->is_const) memcpy(xs.shape, x->c.shape, sizeof(int64_t) * (size_t)x->c.rank);
    int rank = xs.rank;
    const int64_t *shape = xs.shape;
    int64_t r = rank, start = ox_attr_int(n, "start", 0), end = ox_attr_int(n, "end", rank);
    clamp_range(rank, &start, &end);
    r = end - start;
    if (!ox_tensor_alloc(&out, PPCC_I64, 1, &r)) return oom(I);
    for (int64_t i = 0; i < r; i++) ox_set(&out, i, (double)shape[start + i]);
  } else {
    if (!ox_foldable(n->op_type) || n->n_input > 64) return PPCC_OK;
    ox_tensor *in[64] = {NULL};
    for (size_t k = 0; k < n->n_input; k++) {
      if (!n->input[k][0]) continue;
      entry *x = find(I, n->input[k]);
      if (!x || !x->is_const) return PPCC_OK;
      in[k] = &x->c;
    }
    bool handled;
    ppcc_status st = ox_fold(n, I->who, in, (int)n->n_input, &out, &handled, I->d);
    if (st || !handled) return st;
  }
  if (n->n_output < 1 || !n->output[0][0]) {
    ox_tensor_free(&out);
    return PPCC_OK;
  }
  entry *y = add_entry(I, n->output[0]);
  if (!y) {
    ox_tensor_free(&out);
    return oom(I);
  }
  y->is_const = true;
  y->c = out;
  *done = true;
  return PPCC_OK;
}

/* The ppcc_tensor view of a folded or constant tensor. */
static ppcc_tensor tensor_view(const ox_tensor *t) {
  ppcc_tensor x = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
  memcpy(x.shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  return x;
}

/* Constant folding by the runtime's kernels: when the ops a node was
 * translated into read only constants (params of initializers, Constant
 * nodes, earlier folds), they are evaluated here with ppcc_rt_run_kernel
 * (the interpreter's kernels) and the node's results become constants;
 * the ops then die unused. So exporter preludes (the rotary tables' Cos
 * and Sin of a MatMul of constants, masks, position ids) fold whatever ops
 * they use. Results over OX_MAX_FOLD_ELEMENTS, or ops over OX_MAX_FOLD_FLOPS,
 * stay computed at run time. */
static ppcc_status fold_emitted(importer *I, int first) {
  ppcc_graph *g = I->g;
  int n = g->n_ops - first;
  if (n <= 0) return PPCC_OK;
  int64_t total = 0;
  for (int i = first; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    if (op->n_out != 1 || op->n_in > 8 || !ppcc_rt_kernel(op->info->id)) return PPCC_OK;
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k], def = g->values[v].def_op;
      bool here = def >= first && def < i, constant = v < I->cap_param_data && I->param_entry[v] >= 0;
      if (!here && !constant) return PPCC_OK;
    }
    const ppcc_value *y = &g->values[op->out[0]];
    total += ppcc_num_elements(y->rank, y->shape);
    if (total > OX_MAX_FOLD_ELEMENTS || op->info->flops(g, op) > OX_MAX_FOLD_FLOPS) return PPCC_OK;
  }
  ox_tensor *res = calloc((size_t)n, sizeof *res);
  if (!res) return oom(I);
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  bool ok = true;
  for (int i = 0; i < n && ok; i++) {
    const ppcc_op *op = &g->ops[first + i];
    ppcc_tensor in[8], out;
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k], def = g->values[v].def_op;
      in[k] = tensor_view(def >= first ? &res[def - first] : &entry_at(I, I->param_entry[v])->c);
    }
    const ppcc_value *y = &g->values[op->out[0]];
    ok = ox_tensor_alloc(&res[i], y->dtype, y->rank, y->shape);
    out = tensor_view(&res[i]);
    ok = ok && ppcc_rt_run_kernel(op, in, &out, &quiet) == PPCC_OK;
  }
  /* a kernel that fails here (an index out of range...) fails the run the
   * same way: the ops stay computed */
  for (size_t k = 0; ok && k < I->node->n_output; k++) {
    entry *x = I->node->output[k][0] ? find(I, I->node->output[k]) : NULL;
    int def = x && x->value >= 0 ? g->values[x->value].def_op : -1;
    if (!x || def < first) continue;
    x->is_const = true;
    x->c = res[def - first];
    res[def - first] = (ox_tensor){0};
    x->value = -1;
  }
  for (int i = 0; i < n; i++) ox_tensor_free(&res[i]);
  free(res);
  return PPCC_OK;
}

static ppcc_status translate_node(importer *I, int index) {
  I->node = I->graph->node[index];
  I->node_index = index;
  set_who(I, index);
  const Onnx__NodeProto *n = I->node;
  for (size_t k = 0; k < n->n_input; k++)
    if (n->input[k][0] && !find(I, n->input[k]))
      return ppcc_error(I->d, "%s: input '%s' is not a graph input, an initializer or the result of an earlier node", I->who,
                        n->input[k]);
  for (size_t k = 0; k < n->n_output; k++) {
    bool again = n->output[k][0] && find(I, n->output[k]);
    for (size_t j = 0; j < k && !again; j++) again = n->output[k][0] && strcmp(n->output[j], n->output[k]) == 0;
    if (again) return ppcc_error(I->d, "%s: result '%s' is defined twice", I->who, n->output[k]);
  }
  ppcc_status ast = check_attributes(I);
  if (ast) return ast;
  bool done;
  ppcc_status st = try_fold(I, &done);
  if (st || done) return st;
  /* A deferred operand: only a pattern's last node can absorb it; any
   * other node is deferred too, carrying the first reason along. */
  for (size_t k = 0; k < n->n_input; k++) {
    entry *x = n->input[k][0] ? find(I, n->input[k]) : NULL;
    if (!x || !x->defer) continue;
    int r = -3;
    if (strcmp(n->op_type, "Mul") == 0 && (r = match_rms_norm(I)) == -3) r = match_gelu(I);
    if (r != -3) return bind(I, 0, r);
    return defer_node(I, x->defer);
  }
  /* Every translation reads at least input 0; only Constant has none. */
  if (n->n_input == 0 && strcmp(n->op_type, "Constant") != 0)
    return ppcc_error(I->d, "%s: %s has no inputs", I->who, n->op_type);
  int first = I->g->n_ops;
  st = translation_of(n->op_type)(I);
  return st ? st : fold_emitted(I, first);
}

/* Graph outputs keep their ONNX names (an identity reshape where the
 * value computing them has another name). */
static ppcc_status add_outputs(importer *I) {
  const Onnx__GraphProto *gr = I->graph;
  if (gr->n_output == 0) return ppcc_error(I->d, "the graph has no outputs");
  I->g->outputs = ppcc_alloc(I->g, sizeof(int) * gr->n_output);
  if (!I->g->outputs) return oom(I);
  snprintf(I->who, sizeof I->who, "graph output");
  for (size_t k = 0; k < gr->n_output; k++) {
    const char *name = gr->output[k]->name ? gr->output[k]->name : "";
    entry *x = find(I, name);
    if (!x) return ppcc_error(I->d, "graph output '%s' is not computed by any node", name);
    int v = value_of(I, x);
    if (v < 0) return v == -1 ? oom(I) : PPCC_ERR_USER;
    const ppcc_value *y = &I->g->values[v];
    if (strcmp(y->name, name) != 0 || y->kind != PPCC_VALUE_RESULT || y->is_output) {
      vshape ys = V(I, v);
      ppcc_attr a = attr_ints("shape", ys.rank, ys.shape);
      v = emit(I, "reshape", 1, &v, name, 1, &a);
      if (v < 0) return v == -1 ? oom(I) : PPCC_ERR_USER;
    }
    I->g->values[v].is_output = true;
    I->g->outputs[I->g->n_outputs++] = v;
  }
  return PPCC_OK;
}

/* Ops reaching an output, and the values they read. */
static void mark_live(const ppcc_graph *g, bool *live_op, bool *live_value) {
  for (int k = 0; k < g->n_outputs; k++) live_value[g->outputs[k]] = true;
  for (int i = g->n_ops - 1; i >= 0; i--) {
    const ppcc_op *op = &g->ops[i];
    for (int k = 0; k < op->n_out && !live_op[i]; k++) live_op[i] = live_value[op->out[k]];
    if (!live_op[i]) continue;
    for (int k = 0; k < op->n_in; k++) live_value[op->in[k]] = true;
  }
}

static ppcc_status import_graph(importer *I, const Onnx__ModelProto *m, ppcc_onnx_result *out) {
  ppcc_status st = check_opset(I, m);
  if (st) return st;
  if (!m->graph) return ppcc_error(I->d, "the model has no graph");
  I->graph = m->graph;
  const Onnx__GraphProto *gr = m->graph;
  for (size_t i = 0; i < gr->n_node; i++)
    if (!gr->node[i]->op_type) return ppcc_error(I->d, "node #%zu has no op_type", i);
  if ((st = check_op_types(I))) return st;
  /* the graph's name only labels the model: one that model.json cannot carry becomes "onnx" */
  bool named = gr->name && ppcc_name_check(gr->name, false, NULL, 0);
  I->g = ppcc_graph_new(named ? gr->name : "onnx", I->opts->devices > 0 ? I->opts->devices : 1);
  if (!I->g) return oom(I);
  for (size_t i = 0; i < gr->n_initializer; i++) {
    const Onnx__TensorProto *t = gr->initializer[i];
    const char *name = t->name ? t->name : "";
    if (find(I, name)) return ppcc_error(I->d, "initializer '%s' is defined twice", name);
    entry *x = add_entry(I, name);
    if (!x) return oom(I);
    x->is_const = true;
    if ((st = ox_tensor_from_proto(t, I->dir, name, &x->c, I->d))) return st;
  }
  /* A graph input with an initializer of its name is an input (ONNX: the
   * input overrides the initializer, which is only its default). */
  for (size_t i = 0; i < gr->n_input; i++) {
    const char *name = gr->input[i]->name ? gr->input[i]->name : "";
    for (size_t j = 0; j < i; j++)
      if (strcmp(gr->input[j]->name ? gr->input[j]->name : "", name) == 0)
        return ppcc_error(I->d, "graph input '%s' is listed twice", name);
    entry *init = find(I, name);
    if (init) {
      init->hidden = true; /* its name now belongs to the input */
      if (!rehash(I, I->n_slots)) return oom(I);
    }
    if ((st = add_input(I, gr->input[i], init ? &init->c : NULL))) return st;
  }
  for (int i = 0; i < I->opts->n_shapes && !I->opts->shapes_may_miss; i++) {
    bool known = false;
    for (size_t j = 0; j < gr->n_input && !known; j++)
      known = gr->input[j]->name && strcmp(gr->input[j]->name, I->opts->shapes[i].name) == 0;
    if (!known) return ppcc_error(I->d, "--shape %s: the model has no graph input of that name", I->opts->shapes[i].name);
  }
  I->bn_folded = calloc(gr->n_node + 1, sizeof(bool));
  if (!I->bn_folded) return oom(I);
  for (size_t i = 0; i < gr->n_node; i++)
    if ((st = translate_node(I, (int)i))) return st;
  I->node = NULL;
  if ((st = add_outputs(I))) return st;
  size_t nv = (size_t)I->g->n_values + 1, no = (size_t)I->g->n_ops + 1;
  bool *live_value = calloc(nv, 1), *live_op = calloc(no, 1);
  if (!live_value || !live_op) st = oom(I);
  if (!st) {
    mark_live(I->g, live_op, live_value);
    if (!grow_param_data(I)) st = oom(I);
  }
  if (!st) st = ox_write_model(I->g, live_op, live_value, false, out, I->d);
  ox_tensor **param_data = st ? NULL : calloc(nv, sizeof(ox_tensor *));
  if (!st && !param_data) st = oom(I);
  for (int v = 0; !st && v < I->g->n_values; v++)
    if (I->param_entry[v] >= 0) param_data[v] = &entry_at(I, I->param_entry[v])->c;
  if (!st) st = ox_write_weights(I->g, live_value, param_data, out, I->d);
  free(param_data);
  out->n_nodes = (int)gr->n_node;
  free(live_value);
  free(live_op);
  return st;
}

static void importer_free(importer *I) {
  for (int k = 0; k < I->n_e; k++)
    if (entry_at(I, k)->is_const) ox_tensor_free(&entry_at(I, k)->c);
  for (int b = 0; b < I->n_blocks; b++) free(I->blocks[b]);
  free(I->blocks);
  free(I->slots);
  free(I->param_entry);
  free(I->bn_folded);
  ppcc_graph_free(I->g);
}

void ppcc_onnx_result_free(ppcc_onnx_result *r) {
  free(r->model_json);
  free(r->weights);
  memset(r, 0, sizeof *r);
}

/* protobuf-c allocates a string field of n bytes as n + 1 and cuts it at
 * the first NUL when read as C text: an allocator that records each size
 * finds the strings a NUL byte would silently shorten. */
#define SIZED_HEADER 16
static void *sized_alloc(void *data, size_t size) {
  (void)data;
  char *p = size < SIZE_MAX - SIZED_HEADER ? malloc(size + SIZED_HEADER) : NULL;
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  return p + SIZED_HEADER;
}
static void sized_free(void *data, void *ptr) {
  (void)data;
  if (ptr) free((char *)ptr - SIZED_HEADER);
}
static size_t sized_size(const void *ptr) {
  size_t size;
  memcpy(&size, (const char *)ptr - SIZED_HEADER, sizeof size);
  return size;
}

/* The first string field (message.field) holding a NUL byte, or NULL. */
static const char *string_with_nul(const ProtobufCMessage *m, char *where, size_t size) {
  const ProtobufCMessageDescriptor *desc = m->descriptor;
  for (unsigned i = 0; i < desc->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &desc->fields[i];
    if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *member = (const char *)m + f->offset;
    size_t n = 1;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      uint32_t which;
      memcpy(&which, (const char *)m + f->quantifier_offset, sizeof which);
      if (which != f->id) continue;
    }
    void *const *items = (void *const *)(const void *)member;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      memcpy(&n, (const char *)m + f->quantifier_offset, sizeof n);
      items = *(void *const *const *)(const void *)member;
    }
    for (size_t k = 0; k < n && items; k++) {
      const void *item = items[k];
      if (!item) continue;
      if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const char *w = string_with_nul(item, where, size);
        if (w) return w;
      } else if (item != (const void *)protobuf_c_empty_string && item != f->default_value &&
                 strlen(item) + 1 != sized_size(item)) {
        snprintf(where, size, "%s.%s", desc->short_name, f->name);
        return where;
      }
    }
  }
  return NULL;
}

ppcc_status ppcc_import_onnx_memory(const uint8_t *data, size_t len, const char *dir, const ppcc_onnx_options *opts,
                                    ppcc_onnx_result *out, ppcc_diag *d) {
  memset(out, 0, sizeof *out);
  ProtobufCAllocator sized = {sized_alloc, sized_free, NULL};
  Onnx__ModelProto *m = onnx__model_proto__unpack(&sized, len, data);
  if (!m) return ppcc_error(d, "not a valid ONNX protobuf (truncated or corrupt ModelProto)");
  char where[128];
  if (string_with_nul(&m->base, where, sizeof where)) {
    onnx__model_proto__free_unpacked(m, &sized);
    return ppcc_error(d, "a string of the model (%s) contains a NUL byte", where);
  }
  ppcc_onnx_options none = {0};
  importer I = {.d = d, .dir = dir, .opts = opts ? opts : &none};
  ppcc_status st = import_graph(&I, m, out);
  importer_free(&I);
  onnx__model_proto__free_unpacked(m, &sized);
  if (st) ppcc_onnx_result_free(out);
  return st;
}

ppcc_status ppcc_import_onnx_file(const char *path, const ppcc_onnx_options *opts, ppcc_onnx_result *out,
                                  ppcc_diag *d) {
  memset(out, 0, sizeof *out); /* the caller frees it even when the file does not read */
  size_t len;
  char *data = ppcc_read_file_max(path, OX_MAX_FILE_BYTES, &len, d);
  if (!data) return d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path == 0 ? 1 : slash - path)) : strdup(".");
  ppcc_status st = dir ? ppcc_import_onnx_memory((const uint8_t *)data, len, dir, opts, out, d)
                       : ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  free(dir);
  free(data);
  return st;
}

int ppcc_onnx_parse_shape(char *text, ppcc_onnx_shape *s) {
  char *eq = strrchr(text, '=');
  if (!eq || eq == text) return 0;
  *eq = '\0';
  s->name = text;
  s->rank = 0;
  char *p = eq + 1;
  if (!*p) return 1; /* a scalar */
  for (;;) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || s->rank >= PPCC_MAX_RANK) return 0;
    s->dims[s->rank++] = v;
    if (*end == '\0') return 1;
    if (*end != ',') return 0;
    p = end + 1;
  }
}
