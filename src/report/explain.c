/* `ppcc report --why VALUE`: the chain of rules that placed a value. For
 * the value, then every value it was computed from (each once, depth
 * first, up to params and inputs): its layout, devices and pin, the rule
 * that decided them (value->why), the op that defined it (with op->why for
 * inserted ops) and the operands that decided it: pinned operands, and
 * operands brought over by a transfer with where it came from. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/ops.h"
#include "ppcc/report.h"
#include "../plan/plan.h"

typedef struct explain_ctx {
  const ppcc_graph *g;
  FILE *out;
  int *buf; /* PPCC_MAX_DEVICES scratch */
} explain_ctx;

/* One line of the explanation, escaped whole like a diagnostic (names,
 * rules and op references all hold names). */
static void say(explain_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(explain_ctx *x, const char *fmt, ...) {
  char raw[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  ppcc_escape_fputs(x->out, raw, PPCC_ESCAPE_TEXT);
  putc('\n', x->out);
}

static const char *placement(explain_ctx *x, const ppcc_value *v, char *s, size_t n) {
  int count = v->layout.count > 0 ? v->layout.count : 1;
  if (count > PPCC_MAX_DEVICES) count = PPCC_MAX_DEVICES;
  for (int i = 0; i < count; i++) x->buf[i] = rep_shard_device(v, i);
  char layout[64], devs[256];
  ppcc_layout_str(v->layout, layout, sizeof layout);
  ppcc_devices_str(x->buf, count, devs, sizeof devs);
  snprintf(s, n, "%s on %s, %s", layout, devs, v->pinned ? "pinned" : "unpinned");
  return s;
}

static const char *kind_name(ppcc_value_kind k) {
  return k == PPCC_VALUE_PARAM ? "param" : k == PPCC_VALUE_INPUT ? "input" : "result";
}

static bool is_transfer_op(const ppcc_graph *g, int op) {
  return op >= 0 && rep_is_transfer(&g->ops[op]);
}

/* One operand of the defining op, saying how it took part in the decision. */
static void explain_operand(explain_ctx *x, const ppcc_value *u) {
  char a[400], b[400];
  const ppcc_graph *g = x->g;
  if (is_transfer_op(g, u->def_op) && g->ops[u->def_op].inserted) {
    const ppcc_value *src = &g->values[g->ops[u->def_op].in[0]];
    say(x, "  operand '%s' is '%s' (%s) brought to it by an inserted transfer (%s)", u->name, src->name,
            placement(x, src, a, sizeof a), placement(x, u, b, sizeof b));
    return;
  }
  say(x, "  %soperand '%s' (%s)", u->pinned ? "pinned " : "", u->name, placement(x, u, a, sizeof a));
}

static void explain_def(explain_ctx *x, const ppcc_value *v) {
  const ppcc_graph *g = x->g;
  const ppcc_op *op = &g->ops[v->def_op];
  char ref[700];
  ppcc_op_ref(g, op, ref, sizeof ref);
  if (op->why) say(x, "  defined by %s: %s", ref, op->why);
  else say(x, "  defined by %s", ref);
  if (rep_is_transfer(op)) {
    char bytes[32];
    rep_human_bytes(rep_transfer_bytes(g, op), bytes, sizeof bytes);
    say(x, "  moves '%s' shard by shard (%s)", g->values[op->in[0]].name, bytes);
  }
  for (int k = 0; k < op->n_in; k++) explain_operand(x, &g->values[op->in[k]]);
}

static void explain_value(explain_ctx *x, int idx) {
  const ppcc_value *v = &x->g->values[idx];
  char s[400];
  say(x, "'%s': %s %s", v->name, kind_name(v->kind), placement(x, v, s, sizeof s));
  say(x, "  rule: %s", v->why ? v->why : "(not placed yet)");
  if (v->def_op >= 0 && v->def_op < x->g->n_ops) explain_def(x, v);
}

void ppcc_explain_value(const ppcc_graph *g, int v, FILE *out) {
  int buf[PPCC_MAX_DEVICES];
  explain_ctx x = {.g = g, .out = out, .buf = buf};
  if (v >= 0 && v < g->n_values) explain_value(&x, v);
}

/* Depth first from the asked value, each value once. */
static bool explain_chain(explain_ctx *x, int root) {
  const ppcc_graph *g = x->g;
  size_t cap = 64, n = 0;
  int *stack = malloc(sizeof(int) * cap);
  bool *seen = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof(bool));
  bool ok = stack && seen;
  if (ok) stack[n++] = root;
  while (ok && n > 0) {
    int v = stack[--n];
    if (seen[v]) continue;
    seen[v] = true;
    explain_value(x, v);
    int def = g->values[v].def_op;
    if (def < 0 || def >= g->n_ops) continue;
    const ppcc_op *op = &g->ops[def];
    for (int k = op->n_in - 1; ok && k >= 0; k--) {
      if (seen[op->in[k]]) continue;
      if (n == cap) {
        int *s = realloc(stack, sizeof(int) * (cap *= 2));
        if (!s) ok = false;
        else stack = s;
      }
      if (ok) stack[n++] = op->in[k];
    }
  }
  free(stack);
  free(seen);
  return ok;
}

ppcc_status ppcc_explain(const ppcc_graph *g, const char *value, FILE *out, ppcc_diag *d) {
  int idx = ppcc_find_value(g, value);
  if (idx < 0) return ppcc_error(d, "--why: no value named '%s' in model '%s'", value, g->name);
  explain_ctx x = {.g = g, .out = out, .buf = malloc(sizeof(int) * PPCC_MAX_DEVICES)};
  bool ok = x.buf && explain_chain(&x, idx);
  free(x.buf);
  if (!ok) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory explaining '%s'", value);
  return ferror(out) ? ppcc_error_status(d, PPCC_ERR_INTERNAL, "write error explaining '%s'", value) : PPCC_OK;
}
