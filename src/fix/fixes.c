/* Fix generation (issue 17 item 3): from a placement error's site to its
 * --why chain and one to three fixes, each verified by compiling the
 * edited model (include/ppcc/fix.h). Candidates per error kind:
 *
 *   pin conflict / pinned update: transfer the odd operand to the pinned
 *     operands' (destination's) devices; unpin it where it was declared or
 *     pinned by an attribute; or transfer the other operand the other way;
 *   operands apart, none pinned: transfer the smaller operands to the
 *     largest one's devices; pin the largest where it is declared;
 *   different shard counts: transfer the unsharded operand onto the
 *     others' devices (it is replicated there);
 *   unsupported layouts: all_reduce a partial sum, all_gather a split
 *     operand, reshard_split or replicate an unsharded operand like the
 *     sharded one;
 *   memory over --device-memory: --tp doubled, one more --pp stage, or
 *     the --device-memory the unconstrained split needs;
 *   a placed model's device over its --devices-spec memory: move one
 *     block of params off the device's stage to another stage (below).
 *
 * Costs are bytes moved between devices by the edit (all devices
 * together), or for memory fixes the resulting peak bytes per device.
 * A candidate is kept only if the edited model compiles or fails later
 * with a different error; those that compile come first, then cheapest. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/devices_spec.h"
#include "ppcc/fix.h"
#include "ppcc/frontend.h"
#include "ppcc/ops.h"
#include "ppcc/partition.h"
#include "ppcc/passes.h"

#define MAX_FIXES 3
#define MAX_CANDIDATES 16
#define MAX_CHAIN_STEPS 6

ppcc_graph *ppcc_fix_compile(const cJSON *model, const ppcc_fix_options *opt, ppcc_diag *d,
                             ppcc_status *status, bool keep_failed) {
  char *text = cJSON_PrintUnformatted(model);
  if (!text) {
    *status = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
    return NULL;
  }
  ppcc_graph *g = ppcc_load_model_string(text, strlen(text), d);
  free(text);
  if (!g) {
    *status = d->errors ? PPCC_ERR_USER : PPCC_ERR_INTERNAL;
    return NULL;
  }
  if (opt) {
    g->partition.pp = opt->pp;
    g->partition.tp = opt->tp;
    g->partition.device_memory = opt->device_memory;
    g->partition.stage_tp = opt->stage_tp;
    g->partition.devices_spec = opt->devices_spec;
  }
  *status = ppcc_run_passes(g, NULL, NULL, d);
  /* A placed model against its devices spec, as the driver checks it. */
  if (*status == PPCC_OK && opt && opt->devices_spec && opt->pp == 0 && opt->tp == 0)
    *status = ppcc_devices_spec_check_memory(g, opt->devices_spec, d);
  if (*status != PPCC_OK && !keep_failed) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

/* ---------------- reading the failed graph ---------------- */

static const char *site_name(ppcc_site_kind k) {
  switch (k) {
  case PPCC_SITE_PIN_CONFLICT: return "pin_conflict";
  case PPCC_SITE_NO_PINNED: return "no_pinned_operand";
  case PPCC_SITE_SHARD_COUNTS: return "shard_count_mismatch";
  case PPCC_SITE_PINNED_UPDATE: return "pinned_update";
  case PPCC_SITE_LAYOUTS: return "unsupported_layouts";
  case PPCC_SITE_MEMORY: return "device_memory";
  default: return "error";
  }
}

/* The graph op that came from model op src (the passes may have inserted
 * ops before it). */
static const ppcc_op *graph_op(const ppcc_graph *g, int src) {
  for (int i = 0; g && src >= 0 && i < g->n_ops; i++)
    if (g->ops[i].src_index == src) return &g->ops[i];
  return NULL;
}

static const cJSON *model_op(const cJSON *model, int src) {
  return src < 0 ? NULL : cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(model, "ops"), src);
}

/* Operand k's name as the model spells it (the graph may read "x@gathered"). */
static const char *model_operand(const cJSON *model, int src, int k) {
  const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(model_op(model, src), "in"), k);
  return cJSON_IsString(in) ? in->valuestring : NULL;
}

static bool placed(const ppcc_value *v) { return v->devices != NULL; }

/* "split(dim=1, 2) on [0,1], pinned"; before pin-propagate ran (a layout
 * error) only the layout is known. */
static void placement_str(const ppcc_value *v, char *buf, size_t n) {
  char layout[64], devs[256];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  if (!placed(v)) {
    snprintf(buf, n, "%s", layout);
    return;
  }
  ppcc_devices_str(v->devices, v->layout.count, devs, sizeof devs);
  snprintf(buf, n, "%s on %s, %s", layout, devs, v->pinned ? "pinned" : "unpinned");
}

static int64_t full_bytes(const ppcc_value *v) {
  int64_t b = ppcc_value_bytes(v);
  return b < 0 ? 0 : b;
}

static int64_t shard_bytes(const ppcc_value *v) {
  int64_t b = ppcc_value_shard_bytes(v);
  return b < 0 ? 0 : b;
}

/* Bytes a transfer of v to devs (count entries) moves: the shards that
 * change device; an unsharded value sent to several devices is copied to
 * each one it is not on. */
static int64_t transfer_cost(const ppcc_value *v, const int *devs, int count) {
  int64_t bytes = 0;
  for (int i = 0; i < count; i++) {
    int from = v->layout.count == count ? v->devices[i] : v->devices[0];
    if (from != devs[i]) bytes += v->layout.count == count ? shard_bytes(v) : full_bytes(v);
  }
  return bytes;
}

/* "512 B", "4 KiB", "1.5 MiB" */
static void human(int64_t b, char *buf, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  if (u == 0 || v == (double)(int64_t)v) snprintf(buf, n, "%lld %s", (long long)v, units[u]);
  else snprintf(buf, n, "%.1f %s", v, units[u]);
}

typedef struct { char s[32]; } hbuf;
static hbuf hb(int64_t b) {
  hbuf h;
  human(b, h.s, sizeof h.s);
  return h;
}

/* ---------------- the --why chain ---------------- */

/* The operand of op that decided its result's placement: one on the same
 * devices with the same pin, else one on the same devices. */
static int deciding_operand(const ppcc_graph *g, const ppcc_op *op, const ppcc_value *result) {
  int same = -1;
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *u = &g->values[op->in[k]];
    if (!placed(u) || !placed(result) || u->layout.count != result->layout.count ||
        !ppcc_devices_equal(u->devices, result->devices, u->layout.count))
      continue;
    if (u->pinned == result->pinned) return op->in[k];
    if (same < 0) same = op->in[k];
  }
  if (same >= 0 || placed(result)) return same;
  /* Layouts only: follow the operand whose layout the result took, else a
   * sharded one, else the first. */
  int sharded = -1;
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *u = &g->values[op->in[k]];
    if (ppcc_layout_equal(u->layout, result->layout)) return op->in[k];
    if (sharded < 0 && u->layout.count > 1 && u->layout.kind != PPCC_LAYOUT_REPLICATED) sharded = op->in[k];
  }
  return sharded >= 0 ? sharded : op->n_in > 0 ? op->in[0] : -1;
}

static const char *kind_name(ppcc_value_kind k) {
  return k == PPCC_VALUE_PARAM ? "param" : k == PPCC_VALUE_INPUT ? "input" : "result";
}

/* How value v got its placement, back to a declaration: one entry per step. */
static cJSON *value_chain(const ppcc_graph *g, int v) {
  cJSON *steps = cJSON_CreateArray();
  for (int n = 0; steps && v >= 0 && n < MAX_CHAIN_STEPS; n++) {
    const ppcc_value *x = &g->values[v];
    char where[400], ref[700];
    placement_str(x, where, sizeof where);
    cJSON *s = cJSON_CreateObject();
    if (!s) break;
    cJSON_AddItemToArray(steps, s);
    cJSON_AddStringToObject(s, "value", x->name);
    cJSON_AddStringToObject(s, "kind", kind_name(x->kind));
    cJSON_AddStringToObject(s, "placement", where);
    const ppcc_op *op = x->def_op >= 0 && x->def_op < g->n_ops ? &g->ops[x->def_op] : NULL;
    char rule[300];
    if (!x->why && op) snprintf(rule, sizeof rule, "layout from the sharding rule of '%s'", op->info->name);
    else snprintf(rule, sizeof rule, "%s", x->why ? x->why : "placed as declared");
    cJSON_AddStringToObject(s, "rule", rule);
    if (!op) break;
    cJSON_AddStringToObject(s, "defined_by", ppcc_op_ref(g, op, ref, sizeof ref));
    v = deciding_operand(g, op, x);
  }
  return steps;
}

/* ---------------- candidate fixes ---------------- */

typedef struct cand {
  cJSON *fix;
  int64_t cost;
  int score; /* 2 compiles, 1 fails later with another error */
  int order; /* generation order: ties keep it */
  bool verified; /* score already set by its generator */
} cand;

typedef struct gen {
  const cJSON *model;
  const ppcc_graph *g;
  const ppcc_diag *d;
  ppcc_fix_options opt;
  int src;            /* model op index */
  const ppcc_op *op;  /* its graph op */
  cand c[MAX_CANDIDATES];
  int n;
  int fresh;          /* names handed out in this diagnosis */
  int stage;          /* memory over a devices spec: the over-full stage */
} gen;

static cJSON *new_fix(gen *x, int64_t cost, const char *cost_kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static cJSON *new_fix(gen *x, int64_t cost, const char *cost_kind, const char *fmt, ...) {
  if (x->n == MAX_CANDIDATES) return NULL;
  char text[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cJSON *f = cJSON_CreateObject();
  if (!f) return NULL;
  cJSON_AddStringToObject(f, "text", text);
  cJSON_AddNumberToObject(f, "cost_bytes", (double)cost);
  cJSON_AddStringToObject(f, "cost_kind", cost_kind);
  cJSON_AddArrayToObject(f, "edits");
  x->c[x->n] = (cand){.fix = f, .cost = cost, .order = x->n};
  x->n++;
  return f;
}

static cJSON *edits_of(cJSON *fix) { return cJSON_GetObjectItemCaseSensitive(fix, "edits"); }

/* A name no value has yet: BASE.SUFFIX, BASE.SUFFIX.2, ... */
static void fresh_name(gen *x, const char *base, const char *suffix, char *out, size_t n) {
  snprintf(out, n, "%s.%s", base, suffix);
  for (int i = 2; ppcc_find_value(x->g, out) >= 0 && i < 1000; i++) snprintf(out, n, "%s.%s.%d", base, suffix, i);
}

static cJSON *int_array(const int *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
  return a;
}

/* Edits: operand k of the failing op reads a new value computed by
 * `opname`(operand) with attrs (taken), inserted just before the op. */
static void add_insert(gen *x, cJSON *fix, int k, const char *opname, const char *out, cJSON *attrs) {
  const char *operand = model_operand(x->model, x->src, k);
  cJSON *edits = edits_of(fix);
  cJSON *set = cJSON_CreateObject(), *ins = cJSON_CreateObject(), *op = cJSON_CreateObject();
  if (!edits || !set || !ins || !op || !operand) {
    cJSON_Delete(set), cJSON_Delete(ins), cJSON_Delete(op), cJSON_Delete(attrs);
    return;
  }
  cJSON_AddStringToObject(set, "edit", "set_operand");
  cJSON_AddNumberToObject(set, "op", x->src);
  cJSON_AddNumberToObject(set, "index", k);
  cJSON_AddStringToObject(set, "value", out);
  cJSON_AddItemToArray(edits, set);
  cJSON_AddStringToObject(op, "op", opname);
  const char *in1[1] = {operand}, *out1[1] = {out};
  cJSON_AddItemToObject(op, "in", cJSON_CreateStringArray(in1, 1));
  cJSON_AddItemToObject(op, "out", cJSON_CreateStringArray(out1, 1));
  if (attrs) cJSON_AddItemToObject(op, "attrs", attrs);
  cJSON_AddStringToObject(ins, "edit", "insert_op");
  cJSON_AddNumberToObject(ins, "before", x->src);
  cJSON_AddItemToObject(ins, "op", op);
  cJSON_AddItemToArray(edits, ins);
}

static const ppcc_value *operand(const gen *x, int k) { return &x->g->values[x->op->in[k]]; }

/* Fix: insert `transfer` of operand k to devs before the op. */
static void fix_transfer(gen *x, int k, const int *devs, int count) {
  const ppcc_value *v = operand(x, k);
  const char *name = model_operand(x->model, x->src, k);
  if (!name || !placed(v) || (v->layout.count != count && v->layout.count != 1)) return;
  char dstr[256], out[PPCC_MAX_NAME + 64], suffix[300], bytes[32];
  ppcc_devices_str(devs, count, dstr, sizeof dstr);
  snprintf(suffix, sizeof suffix, "on_");
  for (int i = 0; i < count && strlen(suffix) < 200; i++)
    snprintf(suffix + strlen(suffix), sizeof suffix - strlen(suffix), "%s%d", i ? "_" : "", devs[i]);
  fresh_name(x, name, suffix, out, sizeof out);
  int64_t cost = transfer_cost(v, devs, count);
  human(cost, bytes, sizeof bytes);
  cJSON *f = new_fix(x, cost, "bytes_moved", "insert `transfer` of `%s` to %s before ops[%d] (moves %s)", name,
                     dstr, x->src, bytes);
  cJSON *attrs = cJSON_CreateObject();
  if (f && attrs) cJSON_AddItemToObject(attrs, "devices", int_array(devs, count));
  if (f) add_insert(x, f, k, "transfer", out, attrs);
  else cJSON_Delete(attrs);
}

/* The edit target that decides value v's pin: its declaration, or the op
 * that pinned it with a "pinned" attribute. NULL if neither. */
static cJSON *pin_target(gen *x, const ppcc_value *v) {
  cJSON *t = cJSON_CreateObject();
  if (!t) return NULL;
  if (v->kind != PPCC_VALUE_RESULT) {
    cJSON_AddStringToObject(t, v->kind == PPCC_VALUE_PARAM ? "param" : "input", v->name);
    return t;
  }
  const ppcc_op *def = v->def_op >= 0 ? &x->g->ops[v->def_op] : NULL;
  if (def && def->src_index >= 0 && ppcc_op_attr(def, "pinned")) {
    cJSON_AddNumberToObject(t, "op", def->src_index);
    return t;
  }
  cJSON_Delete(t);
  return NULL;
}

/* Fix: set operand k's pin (declaration or attribute); moving costs what
 * the implicit transfer then moves. */
static void fix_pin(gen *x, int k, bool pinned, int64_t cost) {
  const ppcc_value *v = operand(x, k);
  cJSON *target = pin_target(x, v);
  if (!target) return;
  cJSON *f = new_fix(x, cost, "bytes_moved", "%s `%s`%s (then a transfer moves %s)", pinned ? "pin" : "unpin",
                     v->name, v->kind == PPCC_VALUE_RESULT ? " (the pinned attribute of the op defining it)" : "",
                     hb(cost).s);
  cJSON *e = cJSON_CreateObject();
  if (!f || !e) {
    cJSON_Delete(target), cJSON_Delete(e);
    return;
  }
  cJSON_AddStringToObject(e, "edit", "set_attr");
  cJSON_AddItemToObject(e, "target", target);
  cJSON_AddStringToObject(e, "key", "pinned");
  cJSON_AddBoolToObject(e, "value", pinned);
  cJSON_AddItemToArray(edits_of(f), e);
}

static bool same_devices(const ppcc_value *a, const ppcc_value *b) {
  return placed(a) && placed(b) && a->layout.count == b->layout.count &&
         ppcc_devices_equal(a->devices, b->devices, a->layout.count);
}

/* Pin conflicts: operand `stay` keeps its devices, the others move. */
static void gen_pin_conflict(gen *x, bool inplace) {
  const ppcc_op *op = x->op;
  int stay = -1;
  for (int k = 0; k < op->n_in && stay < 0; k++)
    if (inplace ? k == 0 : operand(x, k)->pinned) stay = k;
  if (stay < 0) return;
  const ppcc_value *s = operand(x, stay);
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = operand(x, k);
    if (k == stay || same_devices(v, s) || !v->pinned) continue;
    int64_t cost = transfer_cost(v, s->devices, s->layout.count);
    fix_transfer(x, k, s->devices, s->layout.count);
    fix_pin(x, k, false, cost);
    if (!inplace) { /* or the other way round */
      fix_transfer(x, stay, v->devices, v->layout.count);
      fix_pin(x, stay, false, transfer_cost(s, v->devices, v->layout.count));
    }
    break; /* one conflict at a time; `ppcc fix` repeats */
  }
}

/* Operands apart and none pinned: the largest stays. */
static void gen_no_pinned(gen *x) {
  const ppcc_op *op = x->op;
  int stay = 0;
  for (int k = 1; k < op->n_in; k++)
    if (full_bytes(operand(x, k)) > full_bytes(operand(x, stay))) stay = k;
  const ppcc_value *s = operand(x, stay);
  int64_t total = 0;
  bool offered = false;
  for (int k = 0; k < op->n_in; k++) {
    if (k == stay || same_devices(operand(x, k), s)) continue;
    total += transfer_cost(operand(x, k), s->devices, s->layout.count);
    /* One transfer: with three tuples apart it is not enough, verification
     * drops it, and pinning the largest operand moves all the others. */
    if (!offered) fix_transfer(x, k, s->devices, s->layout.count);
    offered = true;
  }
  fix_pin(x, stay, true, total);
}

/* Different shard counts: bring an unsharded operand onto the others. */
static void gen_shard_counts(gen *x) {
  const ppcc_op *op = x->op;
  int target = -1;
  for (int k = 0; k < op->n_in && target < 0; k++)
    if (operand(x, k)->layout.count > 1 && operand(x, k)->pinned) target = k;
  for (int k = 0; k < op->n_in && target < 0; k++)
    if (operand(x, k)->layout.count > 1) target = k;
  if (target < 0) return;
  const ppcc_value *t = operand(x, target);
  for (int k = 0; k < op->n_in; k++)
    if (operand(x, k)->layout.count == 1) fix_transfer(x, k, t->devices, t->layout.count);
}

static cJSON *int_attr(const char *a, int64_t va, const char *b, int64_t vb) {
  cJSON *o = cJSON_CreateObject();
  if (o && a) cJSON_AddNumberToObject(o, a, (double)va);
  if (o && b) cJSON_AddNumberToObject(o, b, (double)vb);
  return o;
}

/* Unsupported layouts: make the refused operand fit the rule. */
static void gen_layouts(gen *x) {
  const ppcc_op *op = x->op;
  const ppcc_value *sharded = NULL;
  for (int k = 0; k < op->n_in && !sharded; k++)
    if (operand(x, k)->layout.count > 1 && operand(x, k)->layout.kind != PPCC_LAYOUT_UNREDUCED)
      sharded = operand(x, k);
  for (int k = 0; k < op->n_in; k++) {
    const ppcc_value *v = operand(x, k);
    const char *name = model_operand(x->model, x->src, k);
    char out[PPCC_MAX_NAME + 64];
    int64_t bytes = full_bytes(v);
    int count = v->layout.count;
    if (!name) continue;
    if (v->layout.kind == PPCC_LAYOUT_UNREDUCED) {
      fresh_name(x, name, "reduced", out, sizeof out);
      cJSON *f = new_fix(x, 2 * (count - 1) * bytes, "bytes_moved",
                         "all_reduce `%s` before ops[%d] (ring: moves %s)", name, x->src,
                         hb(2 * (count - 1) * bytes).s);
      if (f) add_insert(x, f, k, "all_reduce", out, NULL);
    } else if (v->layout.kind == PPCC_LAYOUT_SPLIT && count > 1) {
      fresh_name(x, name, "gathered", out, sizeof out);
      int64_t cost = (int64_t)(count - 1) * bytes;
      cJSON *f = new_fix(x, cost, "bytes_moved", "all_gather `%s` before ops[%d] (moves %s)", name, x->src, hb(cost).s);
      if (f) add_insert(x, f, k, "all_gather", out, NULL);
    } else if (count == 1 && sharded) { /* unsharded, or a count-1 layout */
      int c = sharded->layout.count;
      /* Onto the sharded operand's devices where they are known yet. */
      int *devs = calloc((size_t)c, sizeof *devs);
      if (!devs) continue;
      for (int i = 0; i < c; i++) devs[i] = placed(sharded) ? sharded->devices[i] : i;
      int src_dev = placed(v) ? v->devices[0] : 0, moved = 0;
      for (int i = 0; i < c; i++) moved += devs[i] != src_dev;
      if (sharded->layout.kind == PPCC_LAYOUT_SPLIT) {
        int dim = sharded->layout.dim - (sharded->rank - v->rank);
        if (dim >= 0 && dim < v->rank && v->shape[dim] % c == 0 && v->shape[dim] == sharded->shape[sharded->layout.dim]) {
          fresh_name(x, name, "split", out, sizeof out);
          int64_t cost = moved * (bytes / c);
          char dstr[256];
          ppcc_devices_str(devs, c, dstr, sizeof dstr);
          cJSON *f = new_fix(x, cost, "bytes_moved", "reshard_split `%s` on dim %d onto %s first (moves %s)", name, dim,
                             dstr, hb(cost).s);
          cJSON *attrs = int_attr("dim", dim, "count", c);
          if (attrs) cJSON_AddItemToObject(attrs, "devices", int_array(devs, c));
          if (f) add_insert(x, f, k, "reshard_split", out, attrs);
          else cJSON_Delete(attrs);
        }
      }
      fresh_name(x, name, "replicated", out, sizeof out);
      int64_t cost = moved * bytes;
      char dstr[256];
      ppcc_devices_str(devs, c, dstr, sizeof dstr);
      cJSON *f = new_fix(x, cost, "bytes_moved", "replicate `%s` onto %s first (moves %s)", name, dstr, hb(cost).s);
      cJSON *attrs = int_attr("count", c, NULL, 0);
      if (attrs) cJSON_AddItemToObject(attrs, "devices", int_array(devs, c));
      if (f) add_insert(x, f, k, "replicate", out, attrs);
      else cJSON_Delete(attrs);
      free(devs);
    }
  }
}

static int64_t peak_per_device(const ppcc_graph *g) {
  const ppcc_partition_summary *s = g ? g->partition_summary : NULL;
  int64_t peak = 0;
  for (int i = 0; s && i < s->pp; i++) {
    int64_t m = s->stages[i].param_bytes + s->stages[i].activation_bytes;
    if (m > peak) peak = m;
  }
  return peak;
}

static cJSON *option_fix(gen *x, const char *option, int64_t value, const char *text) {
  cJSON *f = new_fix(x, 0, "peak_bytes_per_device", "%s", text);
  cJSON *e = cJSON_CreateObject();
  if (!f || !e) {
    cJSON_Delete(e);
    return f;
  }
  cJSON_AddStringToObject(e, "edit", "set_option");
  cJSON_AddStringToObject(e, "option", option);
  cJSON_AddNumberToObject(e, "value", (double)value);
  cJSON_AddItemToArray(edits_of(f), e);
  return f;
}

/* Memory over --device-memory: more devices per stage, one more stage,
 * or the limit the unconstrained split needs. */
static void gen_memory(gen *x) {
  int pp = x->opt.pp > 0 ? x->opt.pp : 1, tp = x->opt.tp > 0 ? x->opt.tp : 1;
  char text[200];
  /* Per-stage TP sizes and a devices spec's own memories are beyond what
   * --tp/--device-memory can change: no option fix is offered for them. */
  if (x->opt.stage_tp || x->opt.devices_spec) return;
  if ((int64_t)pp * tp * 2 <= x->g->n_devices) {
    snprintf(text, sizeof text, "use --tp %d (shards every stage's weights over twice the devices)", tp * 2);
    option_fix(x, "tp", tp * 2, text);
  }
  if ((int64_t)(pp + 1) * tp <= x->g->n_devices) {
    snprintf(text, sizeof text, "use --pp %d (one more pipeline stage)", pp + 1);
    option_fix(x, "pp", pp + 1, text);
  }
  ppcc_fix_options free_opt = x->opt;
  free_opt.device_memory = 0;
  ppcc_diag quiet;
  ppcc_diag_init(&quiet, NULL, NULL);
  ppcc_status st;
  ppcc_graph *g = ppcc_fix_compile(x->model, &free_opt, &quiet, &st, false);
  int64_t need = peak_per_device(g);
  ppcc_graph_free(g);
  if (need > 0) {
    snprintf(text, sizeof text, "use --device-memory %lld (%s: what the best split needs per device)", (long long)need,
             hb(need).s);
    option_fix(x, "device-memory", need, text);
  }
}

/* ---------------- moving a block (memory over a devices spec) ----------------
 *
 * A placed model names every param's devices, so auto-partition cannot
 * help; the fix moves one block of params from the over-full device's
 * stage to another stage. The rules:
 *   - a stage is a distinct device tuple params are placed on, numbered
 *     in the order of the first model op that reads a param there;
 *   - the over-full device's stage is the tuple holding the most of its
 *     param bytes;
 *   - a block is the params whose names share the prefix up to and
 *     including the first all-digit component ("blk.7.ffn_up.weight" and
 *     "blk.7.attn_q.weight" are block 7, prefix "blk.7."), all placed on
 *     devices of that stage; params without such a component never move;
 *   - the block moves to a stage with the same number of devices and none
 *     in common, each device mapped by its position in the tuple; the
 *     stage's last block goes to the next stage, its first to the
 *     previous one (adjacent stages first, so the pipeline stays in
 *     order); farther stages only when no nearer one has room;
 *   - activations follow the pinned weights (pin-propagate and
 *     insert-transfers), so only the params' "devices" change.
 * Verification recompiles with the spec: a destination without room
 * fails the same memory check and the candidate is dropped. */

#define MAX_STAGES 64
#define MAX_BLOCKS 256

typedef struct stage {
  const int *devs;
  int count;
  int first_op;
} stage;

typedef struct block {
  char prefix[PPCC_MAX_NAME];
  long number;
  int first_op, last_op;   /* model ops reading its params */
  int64_t on_device;       /* its bytes on the over-full device */
  int64_t total;           /* its bytes on all devices */
  bool movable;            /* every param within the stage's devices */
} block;

static int first_reader(const ppcc_graph *g, int v, bool last) {
  int at = -1;
  for (int i = 0; i < g->n_ops; i++)
    for (int k = 0; k < g->ops[i].n_in; k++)
      if (g->ops[i].in[k] == v && g->ops[i].src_index >= 0 &&
          (at < 0 || (last ? g->ops[i].src_index > at : g->ops[i].src_index < at)))
        at = g->ops[i].src_index;
  return at;
}

/* "blk.7.ffn_up.weight" -> prefix "blk.7." and 7; false without one. */
static bool block_prefix(const char *name, char *prefix, size_t n, long *number) {
  const char *p = name;
  while (p && *p) {
    const char *dot = strchr(p, '.');
    if (!dot) return false;
    bool digits = dot > p;
    for (const char *q = p; q < dot; q++) digits = digits && *q >= '0' && *q <= '9';
    if (digits && p > name) {
      snprintf(prefix, n, "%.*s", (int)(dot + 1 - name), name);
      *number = strtol(p, NULL, 10);
      return true;
    }
    p = dot + 1;
  }
  return false;
}

static int device_at(const int *devs, int count, int device) {
  for (int i = 0; i < count; i++)
    if (devs[i] == device) return i;
  return -1;
}

static int stage_of(const stage *st, int n, const ppcc_value *v) {
  for (int i = 0; i < n; i++)
    if (st[i].count == v->layout.count && ppcc_devices_equal(st[i].devs, v->devices, v->layout.count)) return i;
  return -1;
}

/* The stages in pipeline order; returns how many. */
static int find_stages(const ppcc_graph *g, stage *st) {
  int n = 0;
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *x = &g->values[v];
    if (x->kind != PPCC_VALUE_PARAM || !placed(x)) continue;
    int op = first_reader(g, v, false), i = stage_of(st, n, x);
    if (i < 0 && n < MAX_STAGES) st[i = n++] = (stage){.devs = x->devices, .count = x->layout.count, .first_op = op};
    if (i >= 0 && op >= 0 && (st[i].first_op < 0 || op < st[i].first_op)) st[i].first_op = op;
  }
  for (int i = 1; i < n; i++) /* insertion sort by first op; unread last */
    for (int j = i; j > 0; j--) {
      unsigned a = (unsigned)st[j - 1].first_op, b = (unsigned)st[j].first_op;
      if (a <= b) break;
      stage t = st[j];
      st[j] = st[j - 1], st[j - 1] = t;
    }
  return n;
}

static bool within(const ppcc_value *v, const stage *s) {
  for (int i = 0; i < v->layout.count; i++)
    if (device_at(s->devs, s->count, v->devices[i]) < 0) return false;
  return true;
}

/* Fix: the params of block b placed on stage `from`'s devices move to
 * stage `to`'s, position by position. */
static void fix_move_block(gen *x, const block *b, const stage *st, int from, int to, int device) {
  const ppcc_graph *g = x->g;
  int j = device_at(st[from].devs, st[from].count, device);
  if (j < 0) return;
  char dstr[256];
  ppcc_devices_str(st[to].devs, st[to].count, dstr, sizeof dstr);
  cJSON *f = new_fix(x, b->total, "bytes_moved",
                     "move block %ld (`%s*`, ops[%d]..ops[%d]) to stage %d on %s "
                     "(\u2212%s on device %d, +%s on device %d)",
                     b->number, b->prefix, b->first_op, b->last_op, to, dstr, hb(b->on_device).s, device,
                     hb(b->on_device).s, st[to].devs[j]);
  for (int v = 0; f && v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    if (p->kind != PPCC_VALUE_PARAM || !placed(p) || strncmp(p->name, b->prefix, strlen(b->prefix)) != 0) continue;
    int *devs = malloc(sizeof(int) * (size_t)p->layout.count);
    cJSON *e = cJSON_CreateObject(), *t = cJSON_CreateObject();
    if (!devs || !e || !t) {
      free(devs), cJSON_Delete(e), cJSON_Delete(t);
      return;
    }
    for (int i = 0; i < p->layout.count; i++) /* within the stage: device_at >= 0 */
      devs[i] = st[to].devs[device_at(st[from].devs, st[from].count, p->devices[i])];
    cJSON_AddStringToObject(t, "param", p->name);
    cJSON_AddStringToObject(e, "edit", "set_attr");
    cJSON_AddItemToObject(e, "target", t);
    cJSON_AddStringToObject(e, "key", "devices");
    cJSON_AddItemToObject(e, "value", int_array(devs, p->layout.count));
    cJSON_AddItemToArray(edits_of(f), e);
    free(devs);
  }
}

static int verify(gen *x, cand *c);

static void gen_move_block(gen *x) {
  const ppcc_graph *g = x->g;
  int device = x->d->site.device;
  stage *st = calloc(MAX_STAGES, sizeof *st);
  block *bl = calloc(MAX_BLOCKS, sizeof *bl);
  int64_t *held = calloc(MAX_STAGES, sizeof *held);
  if (!st || !bl || !held) goto out;
  int ns = find_stages(g, st), from = -1, nb = 0;
  for (int v = 0; v < g->n_values; v++) { /* the stage holding most of the device's bytes */
    const ppcc_value *p = &g->values[v];
    int i = p->kind == PPCC_VALUE_PARAM && placed(p) ? stage_of(st, ns, p) : -1;
    if (i >= 0 && device_at(p->devices, p->layout.count, device) >= 0) held[i] += shard_bytes(p);
  }
  for (int i = 0; i < ns; i++)
    if (held[i] > 0 && (from < 0 || held[i] > held[from])) from = i;
  if (from < 0) goto out;
  x->stage = from;
  for (int v = 0; v < g->n_values; v++) { /* the blocks with params on the stage's devices */
    const ppcc_value *p = &g->values[v];
    char prefix[PPCC_MAX_NAME];
    long number;
    if (p->kind != PPCC_VALUE_PARAM || !placed(p) || !block_prefix(p->name, prefix, sizeof prefix, &number)) continue;
    bool touches = false;
    for (int i = 0; i < p->layout.count; i++)
      touches = touches || device_at(st[from].devs, st[from].count, p->devices[i]) >= 0;
    if (!touches) continue;
    int b = 0;
    while (b < nb && strcmp(bl[b].prefix, prefix) != 0) b++;
    if (b == nb) {
      if (nb == MAX_BLOCKS) continue;
      bl[nb++] = (block){.number = number, .first_op = -1, .last_op = -1, .movable = true};
      snprintf(bl[b].prefix, sizeof bl[b].prefix, "%s", prefix);
    }
    int a = first_reader(g, v, false), z = first_reader(g, v, true);
    if (a >= 0 && (bl[b].first_op < 0 || a < bl[b].first_op)) bl[b].first_op = a;
    if (z > bl[b].last_op) bl[b].last_op = z;
    if (device_at(p->devices, p->layout.count, device) >= 0) bl[b].on_device += shard_bytes(p);
    bl[b].total += shard_bytes(p) * p->layout.count;
    bl[b].movable = bl[b].movable && within(p, &st[from]);
  }
  /* Any param with the prefix elsewhere (another stage's devices) keeps
   * the block from moving: the edit would not cover it. */
  for (int v = 0; v < g->n_values; v++) {
    const ppcc_value *p = &g->values[v];
    for (int b = 0; p->kind == PPCC_VALUE_PARAM && placed(p) && b < nb; b++)
      if (strncmp(p->name, bl[b].prefix, strlen(bl[b].prefix)) == 0 && !within(p, &st[from])) bl[b].movable = false;
  }
  int firstb = -1, lastb = -1;
  for (int b = 0; b < nb; b++) {
    if (!bl[b].movable || bl[b].on_device == 0 || bl[b].first_op < 0) continue;
    if (firstb < 0 || bl[b].first_op < bl[firstb].first_op) firstb = b;
    if (lastb < 0 || bl[b].first_op > bl[lastb].first_op) lastb = b;
  }
  if (firstb < 0) goto out;
  for (int dist = 1; dist < ns; dist++) {
    int before = x->n;
    bool fits = false;
    for (int side = 1; side >= -1; side -= 2) {
      int to = from + side * dist;
      if (to < 0 || to >= ns || st[to].count != st[from].count) continue;
      bool apart = true;
      for (int i = 0; i < st[to].count; i++)
        apart = apart && device_at(st[from].devs, st[from].count, st[to].devs[i]) < 0;
      if (apart) fix_move_block(x, &bl[side > 0 ? lastb : firstb], st, from, to, device);
    }
    /* The nearest stages with room win: farther ones only if none fits. */
    for (int i = before; i < x->n; i++) {
      x->c[i].score = verify(x, &x->c[i]);
      x->c[i].verified = true;
      fits = fits || x->c[i].score == 2;
    }
    if (fits) break;
  }
out:
  free(st), free(bl), free(held);
}

/* After the edits the compile stops at another placement error: another
 * kind, or an op past this one (ops the fix inserted counted). An error
 * of any other sort means the fix itself is wrong. */
static bool moved_on(const gen *x, const cand *c, const ppcc_diag *after) {
  if (after->site.kind == PPCC_SITE_NONE) return false;
  if (after->site.kind != x->d->site.kind) return true;
  if (after->site.kind == PPCC_SITE_MEMORY && x->d->site.device >= 0) return false; /* a device still over */
  int inserted = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, edits_of(c->fix)) {
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "edit");
    if (cJSON_IsString(k) && strcmp(k->valuestring, "insert_op") == 0) inserted++;
  }
  return after->site.op > x->src + inserted;
}

/* Why a stage is too big: the parameters its ops use first, largest
 * first (at most 3), as chain steps. */
static cJSON *memory_chain(const gen *x) {
  const ppcc_graph *g = x->g;
  cJSON *chain = cJSON_CreateArray();
  bool *seen = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *seen);
  int top[3] = {-1, -1, -1};
  for (int i = 0; seen && i < g->n_ops; i++) {
    const ppcc_op *op = &g->ops[i];
    bool inside = op->src_index >= x->src && op->src_index < x->d->site.op_end;
    for (int k = 0; k < op->n_in; k++) {
      int v = op->in[k];
      if (seen[v] || g->values[v].kind != PPCC_VALUE_PARAM) continue;
      seen[v] = true; /* first use decides the stage */
      if (!inside || (x->d->site.device >= 0 && !(placed(&g->values[v]) &&
          device_at(g->values[v].devices, g->values[v].layout.count, x->d->site.device) >= 0)))
        continue; /* over a devices spec: the params on the device */
      for (int t = 0; t < 3; t++)
        if (top[t] < 0 || shard_bytes(&g->values[v]) > shard_bytes(&g->values[top[t]])) {
          memmove(&top[t + 1], &top[t], sizeof(int) * (size_t)(2 - t));
          top[t] = v;
          break;
        }
    }
  }
  for (int t = 0; chain && t < 3 && top[t] >= 0; t++) {
    const ppcc_value *v = &g->values[top[t]];
    char where[400], rule[300];
    placement_str(v, where, sizeof where); /* not placed (the split failed): the layout */
    if (x->d->site.device >= 0)
      snprintf(rule, sizeof rule, "%s on device %d of the %lld it needs (memory %lld), first used in stage %d",
               hb(shard_bytes(v)).s, x->d->site.device, (long long)x->d->site.bytes, (long long)x->d->site.memory,
               x->stage);
    else
      snprintf(rule, sizeof rule, "%s per device of the %lld the stage needs, first used in stage %d",
               hb(shard_bytes(v)).s, (long long)x->d->site.bytes, x->d->site.stage);
    cJSON *steps = cJSON_CreateArray(), *s = cJSON_CreateObject(), *c = cJSON_CreateObject();
    if (!steps || !s || !c) {
      cJSON_Delete(steps), cJSON_Delete(s), cJSON_Delete(c);
      break;
    }
    cJSON_AddStringToObject(s, "value", v->name);
    cJSON_AddStringToObject(s, "kind", "param");
    cJSON_AddStringToObject(s, "placement", where);
    cJSON_AddStringToObject(s, "rule", rule);
    cJSON_AddItemToArray(steps, s);
    cJSON_AddStringToObject(c, "operand", v->name);
    cJSON_AddItemToObject(c, "steps", steps);
    cJSON_AddItemToArray(chain, c);
  }
  free(seen);
  return chain;
}

/* Compiles the model with the candidate's edits: 2 compiles, 1 another
 * error, 0 the same error or the edits do not apply. */
static int verify(gen *x, cand *c) {
  cJSON *m = cJSON_Duplicate(x->model, true);
  ppcc_fix_options opt = x->opt;
  char why[300];
  int score = 0;
  if (m && ppcc_fix_apply(m, c->fix, &opt, why, sizeof why)) {
    ppcc_diag quiet;
    ppcc_diag_init(&quiet, NULL, NULL);
    ppcc_status st;
    ppcc_graph *g = ppcc_fix_compile(m, &opt, &quiet, &st, false);
    if (st == PPCC_OK) {
      score = 2;
      cJSON_AddStringToObject(c->fix, "result", "compiles");
      int64_t peak = peak_per_device(g);
      if (strcmp(cJSON_GetObjectItemCaseSensitive(c->fix, "cost_kind")->valuestring, "peak_bytes_per_device") == 0) {
        c->cost = peak;
        cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(c->fix, "cost_bytes"), (double)peak);
        char text[400];
        snprintf(text, sizeof text, "%s (peak %s per device; the failing stage needed %s)",
                 cJSON_GetObjectItemCaseSensitive(c->fix, "text")->valuestring, hb(peak).s, hb(x->d->site.bytes).s);
        cJSON_ReplaceItemInObjectCaseSensitive(c->fix, "text", cJSON_CreateString(text));
      }
    } else if (st == PPCC_ERR_USER && moved_on(x, c, &quiet)) {
      score = 1;
      char r[1100];
      snprintf(r, sizeof r, "then: %s", quiet.first);
      cJSON_AddStringToObject(c->fix, "result", r);
    }
    ppcc_graph_free(g);
  }
  cJSON_Delete(m);
  return score;
}

static int by_score_then_cost(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->score != y->score) return y->score - x->score;
  if (x->cost != y->cost) return (x->cost > y->cost) - (x->cost < y->cost);
  return x->order - y->order;
}

static void add_operands(cJSON *e, const gen *x) {
  cJSON *ops = cJSON_AddArrayToObject(e, "operands");
  cJSON *chain = cJSON_AddArrayToObject(e, "chain");
  for (int k = 0; x->op && k < x->op->n_in; k++) {
    const ppcc_value *v = operand(x, k);
    char where[400];
    placement_str(v, where, sizeof where);
    cJSON *o = cJSON_CreateObject();
    if (!o) continue;
    const char *name = model_operand(x->model, x->src, k);
    cJSON_AddStringToObject(o, "name", name ? name : v->name);
    cJSON_AddStringToObject(o, "placement", where);
    cJSON_AddItemToArray(ops, o);
    cJSON *c = cJSON_CreateObject();
    if (!c) continue;
    cJSON_AddStringToObject(c, "operand", name ? name : v->name);
    cJSON_AddItemToObject(c, "steps", value_chain(x->g, x->op->in[k]));
    cJSON_AddItemToArray(chain, c);
  }
}

cJSON *ppcc_fix_diagnose(const cJSON *model, const ppcc_graph *g, const ppcc_diag *d,
                         const ppcc_fix_options *opt) {
  cJSON *e = cJSON_CreateObject();
  if (!e) return NULL;
  ppcc_site_kind kind = g ? d->site.kind : PPCC_SITE_NONE;
  cJSON_AddStringToObject(e, "kind", site_name(kind));
  cJSON_AddStringToObject(e, "message", d->first);
  gen *x = calloc(1, sizeof *x);
  if (!x) return e;
  *x = (gen){.model = model, .g = g, .d = d, .src = d->site.op};
  if (opt) x->opt = *opt;
  x->op = graph_op(g, x->src);
  if (kind != PPCC_SITE_NONE && x->src >= 0) {
    cJSON_AddNumberToObject(e, "op", x->src);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(model_op(model, x->src), "op");
    if (cJSON_IsString(name)) cJSON_AddStringToObject(e, "op_name", name->valuestring);
  }
  bool spec_memory = kind == PPCC_SITE_MEMORY && d->site.device >= 0;
  x->stage = -1;
  if (spec_memory) gen_move_block(x); /* numbers the stages */
  if (kind == PPCC_SITE_MEMORY) {
    cJSON_AddNumberToObject(e, "op_end", d->site.op_end);
    cJSON_AddNumberToObject(e, "stage", spec_memory ? x->stage : d->site.stage);
    if (spec_memory) cJSON_AddNumberToObject(e, "device", d->site.device);
    cJSON_AddItemToObject(e, "chain", memory_chain(x));
    cJSON_AddNumberToObject(e, "needs_bytes", (double)d->site.bytes);
    cJSON_AddNumberToObject(e, "device_memory", (double)(spec_memory ? d->site.memory : x->opt.device_memory));
  } else if (x->op && model_op(model, x->src)) {
    add_operands(e, x);
  }
  if (kind == PPCC_SITE_MEMORY) {
    if (!spec_memory) gen_memory(x); /* else generated above */
  }
  else if (x->op && model_op(model, x->src)) {
    if (kind == PPCC_SITE_PIN_CONFLICT) gen_pin_conflict(x, false);
    else if (kind == PPCC_SITE_PINNED_UPDATE) gen_pin_conflict(x, true);
    else if (kind == PPCC_SITE_NO_PINNED) gen_no_pinned(x);
    else if (kind == PPCC_SITE_SHARD_COUNTS) gen_shard_counts(x);
    else if (kind == PPCC_SITE_LAYOUTS) gen_layouts(x);
  }
  for (int i = 0; i < x->n; i++)
    if (!x->c[i].verified) x->c[i].score = verify(x, &x->c[i]);
  qsort(x->c, (size_t)x->n, sizeof x->c[0], by_score_then_cost);
  cJSON *fixes = cJSON_AddArrayToObject(e, "fixes");
  for (int i = 0; i < x->n; i++) {
    if (fixes && i < MAX_FIXES && x->c[i].score > 0) cJSON_AddItemToArray(fixes, x->c[i].fix);
    else cJSON_Delete(x->c[i].fix);
  }
  free(x);
  return e;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

void ppcc_fix_print_text(const cJSON *diag, ppcc_diag *d) {
  const cJSON *c, *s, *f;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(diag, "chain")) {
    int depth = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(c, "steps")) {
      const char *def = str(s, "defined_by");
      ppcc_diag_detail(d, "note", "%*s%s'%s' (%s) %s: %s%s%s", 2 * depth, "", depth ? "from " : "", str(s, "value"),
              str(s, "kind"), str(s, "placement"), str(s, "rule"), def ? "; defined by " : "", def ? def : "");
      depth++;
    }
  }
  const cJSON *fixes = cJSON_GetObjectItemCaseSensitive(diag, "fixes");
  if (cJSON_GetArraySize(fixes) == 0 && strcmp(str(diag, "kind"), "error") != 0)
    ppcc_diag_detail(d, "note", "no machine-applicable fix found for this error");
  cJSON_ArrayForEach(f, fixes) {
    const char *result = str(f, "result");
    ppcc_diag_detail(d, "fix", "%s%s%s", str(f, "text"), result ? "; " : "", result ? result : "");
  }
}
