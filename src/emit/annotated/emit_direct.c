/* The annotated form printed straight from the graph, without building an
 * MLIR module: for big pipeline models, building, verifying and printing
 * through MLIR cost ~100 µs per op, most of it in MLIR's verifier and
 * printer. The text is the one MLIR prints for the module emit_main_func
 * builds (tests/test_emit_mlir.c compares the two byte for byte on every
 * model this path takes), so it is only taken for the ops and forms it
 * knows exactly:
 *   - all values f32, every op a 2-D matmul without local slicing, gelu on
 *     an operand of its result's shard shape, an inserted transfer, or a
 *     collective (one ppcc.* op);
 *   - names printed by MLIR as they are (module symbol a bare identifier).
 * Anything else goes through MLIR (src/emit/emit.c).
 *
 * SSA names follow MLIR's printer: results %0, %1, ... in order, constants
 * %cst, %cst_N with N from one conflict counter; a region nested in an op
 * (the linalg.generic body) continues from the counters the enclosing
 * region ended with, so the whole function is counted before it is
 * printed (two passes over the ops). */
#include <stdlib.h>
#include <string.h>
#include "annotated.h"

typedef struct dtext {
  char *data;
  size_t len, cap;
  bool oom, counting; /* counting: first pass, nothing is written */
} dtext;

static void put(dtext *t, const char *s, size_t n) {
  if (t->counting || t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1 << 20;
    while (cap < t->len + n + 1) cap *= 2;
    char *p = realloc(t->data, cap);
    if (!p) {
      t->oom = true;
      return;
    }
    t->data = p;
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
}

static void puts_(dtext *t, const char *s) { put(t, s, strlen(s)); }

static void put_int(dtext *t, long long v) {
  char digits[24], *p = digits + sizeof digits;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) *--p = '-';
  put(t, p, (size_t)(digits + sizeof digits - p));
}

/* s as an MLIR string literal's body (ppcc_escape's MLIR form). */
static void put_escaped(dtext *t, const char *s) {
  char unit[PPCC_ESCAPE_UNIT];
  const char *run = s;
  for (; *s;) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      s++;
      continue;
    }
    put(t, run, (size_t)(s - run));
    size_t m;
    s += ppcc_escape_next(s, PPCC_ESCAPE_MLIR, unit, &m);
    put(t, unit, m);
    run = s;
  }
  put(t, run, (size_t)(s - run));
}

static void put_loc(dtext *t, const char *name) {
  puts_(t, " loc(\"");
  put_escaped(t, name);
  puts_(t, "\")");
}

static void put_shard_type(dtext *t, const ppcc_value *v) {
  int64_t local[PPCC_MAX_RANK];
  ppcc_value_shard_shape(v, local);
  puts_(t, "tensor<");
  for (int i = 0; i < v->rank; i++) {
    put_int(t, local[i]);
    put(t, "x", 1);
  }
  puts_(t, "f32>");
}

static void put_device_attr(dtext *t, int device) {
  puts_(t, "{ppcc.device = ");
  put_int(t, device);
  puts_(t, " : i64}");
}

/* ---- SSA values ---- */
typedef struct dref {
  int kind; /* 0 none, 1 %argN, 2 %N, 3 %N#k, 4 constant (cst name id) */
  int id, sub;
} dref;

typedef struct direct {
  const ppcc_graph *g;
  dtext t;
  dref **shards;     /* shards[v][i] */
  long next_value;   /* %N counter of the function body */
  long next_conflict; /* MLIR's name-conflict counter */
  bool cst_used;     /* "%cst" taken in the function body */
  long body_value, body_conflict; /* counters a generic body starts from */
  bool body_cst_used;
  int maps[PPCC_MAX_RANK + 1]; /* alias number + 1 of the identity map of each rank, 0: unused */
  int n_maps;
} direct;

static void put_ref(direct *x, dref r) {
  dtext *t = &x->t;
  switch (r.kind) {
  case 1: puts_(t, "%arg"); put_int(t, r.id); break;
  case 2: put(t, "%", 1); put_int(t, r.id); break;
  case 3: put(t, "%", 1); put_int(t, r.id); put(t, "#", 1); put_int(t, r.sub); break;
  case 4:
    puts_(t, "%cst");
    if (r.id >= 0) {
      put(t, "_", 1);
      put_int(t, r.id);
    }
    break;
  default: puts_(t, "%?"); break;
  }
}

static dref new_value(direct *x) { return (dref){2, (int)x->next_value++, 0}; }

static dref new_cst(direct *x) {
  if (!x->cst_used) {
    x->cst_used = true;
    return (dref){4, -1, 0};
  }
  return (dref){4, (int)x->next_conflict++, 0};
}

static dref shard_of(direct *x, int value, int shard) {
  const ppcc_value *v = &x->g->values[value];
  return x->shards[value][v->layout.count == 1 ? 0 : shard];
}

/* ---- what this path takes ---- */
static bool same_local_shape(const ppcc_value *a, const ppcc_value *b) {
  int64_t sa[PPCC_MAX_RANK], sb[PPCC_MAX_RANK];
  if (a->rank != b->rank) return false;
  ppcc_value_shard_shape(a, sa);
  ppcc_value_shard_shape(b, sb);
  return memcmp(sa, sb, sizeof(int64_t) * (size_t)a->rank) == 0;
}

static bool is_bare_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '$' || *s == '.'))
      return false;
  return true;
}

static bool op_supported(const ppcc_graph *g, const ppcc_op *op) {
  if (op->n_out != 1 || !op->info) return false;
  const ppcc_value *out = &g->values[op->out[0]];
  switch (op->info->family) {
  case PPCC_FAMILY_TRANSFER: return op->info->id == PPCC_OP_transfer && op->n_in == 1;
  case PPCC_FAMILY_COLLECTIVE:
    switch (op->info->id) {
    case PPCC_OP_all_reduce: case PPCC_OP_all_gather: case PPCC_OP_reduce_scatter:
    case PPCC_OP_replicate: case PPCC_OP_reshard_split: case PPCC_OP_unshard: return op->n_in == 1;
    default: return false;
    }
  case PPCC_FAMILY_COMPUTE:
    if (op->info->id == PPCC_OP_gelu) return op->n_in == 1 && out->rank >= 1 && same_local_shape(&g->values[op->in[0]], out);
    if (op->info->id == PPCC_OP_matmul && op->n_in == 2) {
      const ppcc_value *a = &g->values[op->in[0]], *b = &g->values[op->in[1]];
      bool slices = out->layout.kind == PPCC_LAYOUT_UNREDUCED &&
                    ((a->layout.kind == PPCC_LAYOUT_REPLICATED && b->layout.kind == PPCC_LAYOUT_SPLIT) ||
                     (b->layout.kind == PPCC_LAYOUT_REPLICATED && a->layout.kind == PPCC_LAYOUT_SPLIT));
      return a->rank == 2 && b->rank == 2 && !slices;
    }
    return false;
  }
  return false;
}

bool emit_direct_supported(const ppcc_graph *g) {
  if (!is_bare_identifier(g->name)) return false;
  for (int i = 0; i < g->n_values; i++) {
    const ppcc_value *v = &g->values[i];
    if (v->dtype != PPCC_F32 || !v->devices || v->layout.count < 1) return false;
  }
  for (int i = 0; i < g->n_ops; i++)
    if (!op_supported(g, &g->ops[i])) return false;
  return true;
}

/* ---- ops ---- */
static void indent(direct *x, int n) { put(&x->t, "          ", (size_t)n); }

/* arith.constant 0 + tensor.empty + linalg.fill + linalg.matmul. */
static void emit_matmul(direct *x, const ppcc_op *op, int shard, int device) {
  dtext *t = &x->t;
  const ppcc_value *out = &x->g->values[op->out[0]];
  const char *loc = out->name;
  dref a = shard_of(x, op->in[0], shard), b = shard_of(x, op->in[1], shard);
  dref cst = new_cst(x), empty = new_value(x), fill = new_value(x), mm = new_value(x);
  indent(x, 4), put_ref(x, cst), puts_(t, " = arith.constant "), put_device_attr(t, device);
  puts_(t, " 0.000000e+00 : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 4), put_ref(x, empty), puts_(t, " = tensor.empty() "), put_device_attr(t, device);
  puts_(t, " : "), put_shard_type(t, out), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 4), put_ref(x, fill), puts_(t, " = linalg.fill "), put_device_attr(t, device);
  puts_(t, " ins("), put_ref(x, cst), puts_(t, " : f32) outs("), put_ref(x, empty), puts_(t, " : ");
  put_shard_type(t, out), puts_(t, ") -> "), put_shard_type(t, out), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 4), put_ref(x, mm), puts_(t, " = linalg.matmul "), put_device_attr(t, device);
  puts_(t, " ins("), put_ref(x, a), puts_(t, ", "), put_ref(x, b), puts_(t, " : ");
  put_shard_type(t, &x->g->values[op->in[0]]), puts_(t, ", "), put_shard_type(t, &x->g->values[op->in[1]]);
  puts_(t, ") outs("), put_ref(x, fill), puts_(t, " : "), put_shard_type(t, out), puts_(t, ") -> ");
  put_shard_type(t, out), put_loc(t, loc), put(t, "\n", 1);
  x->shards[op->out[0]][shard] = mm;
}

/* The identity map's alias ("#map", "#map1", ...), numbered by first use. */
static void put_map_alias(direct *x, int rank) {
  if (!x->maps[rank]) x->maps[rank] = ++x->n_maps;
  puts_(&x->t, "#map");
  if (x->maps[rank] > 1) put_int(&x->t, x->maps[rank] - 1);
}

/* gelu: tensor.empty + linalg.generic with 0.5 * x * (1 + erf(x / sqrt 2))
 * in the order lower_ops.c's gelu_of builds it. */
static void emit_gelu(direct *x, const ppcc_op *op, int shard, int device) {
  dtext *t = &x->t;
  const ppcc_value *out = &x->g->values[op->out[0]];
  const char *loc = out->name;
  dref in = shard_of(x, op->in[0], shard), empty = new_value(x), gen = new_value(x);
  indent(x, 4), put_ref(x, empty), puts_(t, " = tensor.empty() "), put_device_attr(t, device);
  puts_(t, " : "), put_shard_type(t, out), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 4), put_ref(x, gen), puts_(t, " = linalg.generic {indexing_maps = [");
  put_map_alias(x, out->rank), puts_(t, ", "), put_map_alias(x, out->rank), puts_(t, "], iterator_types = [");
  for (int i = 0; i < out->rank; i++) puts_(t, i ? ", \"parallel\"" : "\"parallel\"");
  puts_(t, "]} ins("), put_ref(x, in), puts_(t, " : "), put_shard_type(t, out), puts_(t, ") outs(");
  put_ref(x, empty), puts_(t, " : "), put_shard_type(t, out), puts_(t, ") attrs =  "), put_device_attr(t, device);
  puts_(t, " {\n");
  /* The body: its own scope, counters from the end of the function body. */
  long v = x->body_value, k = x->body_conflict;
  bool cst_taken = x->body_cst_used;
  dref c[3];
  for (int i = 0; i < 3; i++) c[i] = !cst_taken && i == 0 ? (dref){4, -1, 0} : (dref){4, (int)k++, 0};
  indent(x, 4), puts_(t, "^bb0(%in: f32"), put_loc(t, loc), puts_(t, ", %out: f32"), put_loc(t, loc), puts_(t, "):\n");
  indent(x, 6), put_ref(x, c[0]), puts_(t, " = arith.constant 0.707106769 : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put(t, "%", 1), put_int(t, v), puts_(t, " = arith.mulf %in, "), put_ref(x, c[0]);
  puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put(t, "%", 1), put_int(t, v + 1), puts_(t, " = math.erf %"), put_int(t, v);
  puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put_ref(x, c[1]), puts_(t, " = arith.constant 1.000000e+00 : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put(t, "%", 1), put_int(t, v + 2), puts_(t, " = arith.addf "), put_ref(x, c[1]);
  puts_(t, ", %"), put_int(t, v + 1), puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put_ref(x, c[2]), puts_(t, " = arith.constant 5.000000e-01 : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put(t, "%", 1), put_int(t, v + 3), puts_(t, " = arith.mulf %in, "), put_ref(x, c[2]);
  puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), put(t, "%", 1), put_int(t, v + 4), puts_(t, " = arith.mulf %"), put_int(t, v + 3);
  puts_(t, ", %"), put_int(t, v + 2), puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 6), puts_(t, "linalg.yield %"), put_int(t, v + 4), puts_(t, " : f32"), put_loc(t, loc), put(t, "\n", 1);
  indent(x, 4), puts_(t, "} -> "), put_shard_type(t, out), put_loc(t, loc), put(t, "\n", 1);
  x->shards[op->out[0]][shard] = gen;
}

static void emit_transfer(direct *x, const ppcc_op *op, int shard) {
  dtext *t = &x->t;
  const ppcc_value *in = &x->g->values[op->in[0]], *out = &x->g->values[op->out[0]];
  int from = in->devices[in->layout.count == 1 ? 0 : shard], to = out->devices[shard];
  dref v = shard_of(x, op->in[0], shard);
  if (from == to) { /* P10: already there, no op */
    x->shards[op->out[0]][shard] = v;
    return;
  }
  dref r = new_value(x);
  indent(x, 4), put_ref(x, r), puts_(t, " = \"ppcc.transfer\"("), put_ref(x, v), puts_(t, ") {source = ");
  put_int(t, from), puts_(t, " : i64, target = "), put_int(t, to), puts_(t, " : i64} : (");
  put_shard_type(t, in), puts_(t, ") -> "), put_shard_type(t, out), put_loc(t, out->name), put(t, "\n", 1);
  x->shards[op->out[0]][shard] = r;
}

static void put_devices_array(dtext *t, const int *devices, int n) {
  puts_(t, n ? "array<i64: " : "array<i64");
  for (int i = 0; i < n; i++) {
    if (i) puts_(t, ", ");
    put_int(t, devices[i]);
  }
  put(t, ">", 1);
}

/* Attributes of the ppcc op as MLIR prints them: sorted by name, as in
 * lower_collectives.c's collective_attrs. */
static void put_collective_attrs(dtext *t, const ppcc_op *op, const ppcc_value *in, const ppcc_value *out) {
  const char *mode = in->layout.kind == PPCC_LAYOUT_SPLIT ? "concat" : in->layout.kind == PPCC_LAYOUT_UNREDUCED ? "sum" : "copy";
  puts_(t, "{");
  switch (op->info->id) {
  case PPCC_OP_all_reduce:
    puts_(t, "devices = "), put_devices_array(t, in->devices, in->layout.count);
    break;
  case PPCC_OP_all_gather:
    puts_(t, "devices = "), put_devices_array(t, in->devices, in->layout.count);
    puts_(t, ", dim = "), put_int(t, in->layout.dim), puts_(t, " : i64");
    break;
  case PPCC_OP_reduce_scatter:
    puts_(t, "devices = "), put_devices_array(t, in->devices, in->layout.count);
    puts_(t, ", dim = "), put_int(t, out->layout.dim), puts_(t, " : i64");
    break;
  case PPCC_OP_replicate:
    puts_(t, "source_devices = "), put_devices_array(t, in->devices, in->layout.count);
    puts_(t, ", target_devices = "), put_devices_array(t, out->devices, out->layout.count);
    break;
  case PPCC_OP_reshard_split:
    puts_(t, "dim = "), put_int(t, out->layout.dim), puts_(t, " : i64, source_devices = ");
    put_devices_array(t, in->devices, in->layout.count);
    puts_(t, ", target_devices = "), put_devices_array(t, out->devices, out->layout.count);
    break;
  case PPCC_OP_unshard:
    puts_(t, "dim = "), put_int(t, in->layout.kind == PPCC_LAYOUT_SPLIT ? in->layout.dim : -1);
    puts_(t, " : i64, mode = \""), puts_(t, mode), puts_(t, "\", source_devices = ");
    put_devices_array(t, in->devices, in->layout.count);
    puts_(t, ", target = "), put_int(t, out->devices[0]), puts_(t, " : i64");
    break;
  default: break;
  }
  puts_(t, "}");
}

static void emit_collective(direct *x, const ppcc_op *op) {
  dtext *t = &x->t;
  const ppcc_value *in = &x->g->values[op->in[0]], *out = &x->g->values[op->out[0]];
  int n_in = in->layout.count, n_out = out->layout.count;
  dref r = new_value(x);
  indent(x, 4), put_ref(x, r);
  if (n_out > 1) put(t, ":", 1), put_int(t, n_out);
  puts_(t, " = \"ppcc."), puts_(t, op->info->name), puts_(t, "\"(");
  for (int i = 0; i < n_in; i++) {
    if (i) puts_(t, ", ");
    put_ref(x, x->shards[op->in[0]][i]);
  }
  puts_(t, ") "), put_collective_attrs(t, op, in, out), puts_(t, " : (");
  for (int i = 0; i < n_in; i++) {
    if (i) puts_(t, ", ");
    put_shard_type(t, in);
  }
  puts_(t, n_out > 1 ? ") -> (" : ") -> ");
  for (int j = 0; j < n_out; j++) {
    if (j) puts_(t, ", ");
    put_shard_type(t, out);
  }
  if (n_out > 1) put(t, ")", 1);
  put_loc(t, out->name), put(t, "\n", 1);
  for (int j = 0; j < n_out; j++) x->shards[op->out[0]][j] = n_out > 1 ? (dref){3, r.id, j} : r;
}

static void emit_ops(direct *x) {
  const ppcc_graph *g = x->g;
  for (int i = 0; i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    const ppcc_value *out = &g->values[op->out[0]];
    if (op->info->family == PPCC_FAMILY_COLLECTIVE) {
      emit_collective(x, op);
      continue;
    }
    for (int s = 0; s < out->layout.count; s++) {
      if (op->info->family == PPCC_FAMILY_TRANSFER) emit_transfer(x, op, s);
      else if (op->info->id == PPCC_OP_matmul) emit_matmul(x, op, s, out->devices[s]);
      else emit_gelu(x, op, s, out->devices[s]);
    }
  }
}

/* ---- function and module ---- */
static void put_arg_attrs(dtext *t, const ppcc_value *v, int shard) {
  char layout[64];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  puts_(t, " {ppcc.device = "), put_int(t, v->devices[shard]), puts_(t, " : i64, ppcc.layout = \"");
  put_escaped(t, layout), puts_(t, "\", ppcc.name = \""), put_escaped(t, v->name), puts_(t, "\"");
  if (v->pinned) puts_(t, ", ppcc.pinned");
  puts_(t, ", ppcc.shard = "), put_int(t, shard), puts_(t, " : i64}");
}

static bool is_argument(const ppcc_value *v) { return v->kind == PPCC_VALUE_PARAM || v->kind == PPCC_VALUE_INPUT; }

static void emit_function(direct *x) {
  dtext *t = &x->t;
  const ppcc_graph *g = x->g;
  puts_(t, "  func.func @main(");
  int n_args = 0;
  for (int i = 0; i < g->n_values; i++) {
    const ppcc_value *v = &g->values[i];
    if (!is_argument(v)) continue;
    for (int s = 0; s < v->layout.count; s++) {
      if (n_args) puts_(t, ", ");
      puts_(t, "%arg"), put_int(t, n_args), puts_(t, ": "), put_shard_type(t, v), put_arg_attrs(t, v, s);
      put_loc(t, v->name);
      x->shards[i][s] = (dref){1, n_args++, 0};
    }
  }
  puts_(t, ")");
  int n_res = 0;
  for (int i = 0; i < g->n_outputs; i++) n_res += g->values[g->outputs[i]].layout.count;
  if (n_res) {
    puts_(t, " -> (");
    int k = 0;
    for (int i = 0; i < g->n_outputs; i++) {
      const ppcc_value *v = &g->values[g->outputs[i]];
      for (int s = 0; s < v->layout.count; s++) {
        if (k++) puts_(t, ", ");
        put_shard_type(t, v), put_arg_attrs(t, v, s);
      }
    }
    puts_(t, ")");
  }
  puts_(t, " {\n");
  emit_ops(x);
  puts_(t, "    return");
  for (int pass = 0; pass < 2 && n_res; pass++) {
    puts_(t, pass ? " : " : " ");
    int k = 0;
    for (int i = 0; i < g->n_outputs; i++) {
      const ppcc_value *v = &g->values[g->outputs[i]];
      for (int s = 0; s < v->layout.count; s++) {
        if (k++) puts_(t, ", ");
        if (pass) put_shard_type(t, v);
        else put_ref(x, x->shards[g->outputs[i]][s]);
      }
    }
  }
  put_loc(t, g->name), puts_(t, "\n  }"), put_loc(t, g->name), puts_(t, "\n");
}

static void put_map_definitions(direct *x) {
  for (int n = 1; n <= x->n_maps; n++)
    for (int rank = 1; rank <= PPCC_MAX_RANK; rank++) {
      if (x->maps[rank] != n) continue;
      puts_(&x->t, "#map");
      if (n > 1) put_int(&x->t, n - 1);
      puts_(&x->t, " = affine_map<(");
      for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < rank; i++) {
          if (i) puts_(&x->t, ", ");
          puts_(&x->t, "d"), put_int(&x->t, i);
        }
        puts_(&x->t, pass ? ")>\n" : ") -> (");
      }
    }
}

static bool shards_alloc(direct *x) {
  x->shards = calloc((size_t)(x->g->n_values > 0 ? x->g->n_values : 1), sizeof *x->shards);
  if (!x->shards) return false;
  for (int v = 0; v < x->g->n_values; v++)
    if (!(x->shards[v] = calloc((size_t)x->g->values[v].layout.count, sizeof(dref)))) return false;
  return true;
}

static void shards_free(direct *x) {
  if (x->shards)
    for (int v = 0; v < x->g->n_values; v++) free(x->shards[v]);
  free(x->shards);
}

ppcc_status emit_direct(const ppcc_graph *g, FILE *out, ppcc_diag *d) {
  direct x = {.g = g};
  if (!shards_alloc(&x)) {
    shards_free(&x);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  /* Pass 1 counts the function body's values and names. */
  x.t.counting = true;
  emit_function(&x);
  x.body_value = x.next_value;
  x.body_conflict = x.next_conflict;
  x.body_cst_used = x.cst_used;
  /* Pass 2 prints; the map aliases go first, so the body is printed into
   * a second buffer once their numbering is known. */
  x.next_value = x.next_conflict = 0;
  x.cst_used = false;
  x.t.counting = false;
  dtext head = {0};
  puts_(&x.t, "module @"), puts_(&x.t, g->name), puts_(&x.t, " {\n");
  emit_function(&x);
  puts_(&x.t, "}"), put_loc(&x.t, g->name), puts_(&x.t, "\n\n");
  dtext body = x.t;
  x.t = head;
  put_map_definitions(&x);
  head = x.t;
  ppcc_status st = PPCC_OK;
  if (body.oom || head.oom)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory printing the MLIR module");
  else if (fwrite(head.data ? head.data : "", 1, head.len, out) != head.len ||
           fwrite(body.data, 1, body.len, out) != body.len)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "cannot write the MLIR output");
  free(head.data);
  free(body.data);
  shards_free(&x);
  return st;
}
