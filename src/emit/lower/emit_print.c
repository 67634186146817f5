/* Verification and printing. The module is printed by MLIR (custom op
 * forms, locations on) into a buffer; two textual touch-ups follow:
 *  - location aliases (#locN = loc("h0") at the end of the file) are put
 *    back inline, so every op shows the model name it comes from;
 *  - IREE form: the unregistered IREE ops, which MLIR can only print
 *    generically, are rewritten to IREE's custom forms:
 *    `flow.tensor.transfer %v : T to #hal.device.promise<@__device_N>`,
 *    `util.global private @"S" {stream.affinity = A} = INIT`,
 *    `util.global.load @"S" : T`.
 * Both keep the text parseable; a line that does not have the expected
 * shape is left in generic form, which IREE parses too. */
#include <stdlib.h>
#include <string.h>
#include "emit_internal.h"

void emit_buf_append(emit_buf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *q = realloc(b->data, cap);
    if (!q) {
      b->oom = true;
      return;
    }
    b->data = q;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
}

void emit_buf_print(MlirStringRef s, void *user) { emit_buf_append(user, s.data, s.length); }

static void buf_puts(emit_buf *b, const char *s) { emit_buf_append(b, s, strlen(s)); }

/* ---- location aliases ---- */
typedef struct loc_alias {
  const char *def; /* "loc(...)" text inside the printed buffer */
  size_t def_len;
} loc_alias;

/* Parses "#loc" / "#locN" at s; returns N+1 (0 for "#loc"), or -1. */
static long alias_index(const char *s, const char **end) {
  if (strncmp(s, "#loc", 4) != 0) return -1;
  s += 4;
  long n = 0;
  if (*s >= '0' && *s <= '9') {
    n = strtol(s, (char **)&s, 10) + 1;
  }
  if ((*s >= 'a' && *s <= 'z') || *s == '_') return -1;
  *end = s;
  return n;
}

/* Records the definition of the alias line at p ("#locN = loc(...)");
 * false if p does not start one. */
static bool record_alias(const char *p, const char *eol, loc_alias *aliases, long max) {
  const char *end;
  long idx = alias_index(p, &end);
  if (idx < 0 || idx >= max || strncmp(end, " = ", 3) != 0) return false;
  aliases[idx].def = end + 3;
  aliases[idx].def_len = (size_t)(eol - end - 3);
  return true;
}

/* Appends text[0, n) with every "loc(#locN)" replaced by its definition
 * (recursively: a definition may name another alias). */
static void inline_aliases(emit_buf *out, const char *text, size_t n, const loc_alias *aliases, long max,
                           int depth) {
  const char *p = text, *end = text + n;
  while (p < end) {
    const char *hit = NULL;
    for (const char *q = p; q + 4 < end; q++)
      if (q[0] == '#' && q[1] == 'l' && q[2] == 'o' && q[3] == 'c') {
        hit = q;
        break;
      }
    if (!hit) break;
    const char *after;
    long idx = alias_index(hit, &after);
    if (idx < 0 || idx >= max || !aliases[idx].def || depth > 8) {
      emit_buf_append(out, p, (size_t)(hit + 4 - p));
      p = hit + 4;
      continue;
    }
    /* "loc(#loc3)" -> "loc(\"x\")": drop the outer loc( ) around the alias. */
    const char *def = aliases[idx].def;
    size_t dlen = aliases[idx].def_len;
    bool wrapped = hit - p >= 4 && strncmp(hit - 4, "loc(", 4) == 0 && after < end && *after == ')';
    if (wrapped && strncmp(def, "loc(", 4) == 0) {
      emit_buf_append(out, p, (size_t)(hit - 4 - p));
      inline_aliases(out, def, dlen, aliases, max, depth + 1);
      p = after + 1;
    } else {
      emit_buf_append(out, p, (size_t)(hit - p));
      inline_aliases(out, def, dlen, aliases, max, depth + 1);
      p = after;
    }
  }
  emit_buf_append(out, p, (size_t)(end - p));
}

/* MLIR prints location aliases as lines "#locN = loc(...)" at the top or
 * the end of the module; they are dropped and their uses inlined. */
static bool inline_locations(emit_buf *b) {
  long max = 2;
  for (const char *p = b->data; (p = strstr(p, "#loc")); p++) max++;
  loc_alias *aliases = calloc((size_t)max, sizeof *aliases);
  if (!aliases) return false;
  const char *p = b->data, *end = b->data + b->len;
  for (; p < end; p++) { /* pass 1: definitions */
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    record_alias(p, eol, aliases, max);
    p = eol;
  }
  emit_buf out = {0};
  for (p = b->data; p < end; p++) { /* pass 2: every other line, inlined */
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    const char *ignored;
    if (alias_index(p, &ignored) < 0) {
      inline_aliases(&out, p, (size_t)(eol - p), aliases, max, 0);
      emit_buf_append(&out, "\n", 1);
    }
    p = eol;
  }
  free(aliases);
  if (out.oom) {
    free(out.data);
    return false;
  }
  free(b->data);
  *b = out;
  return true;
}

/* ---- IREE: flow.tensor.transfer in custom form ---- */
/* `"flow.tensor.transfer"(%0) {target = T} : (TY) -> TY loc(...)` becomes
 * `flow.tensor.transfer %0 : TY to T loc(...)`. */
static bool rewrite_transfer_line(emit_buf *out, const char *line, size_t n) {
  static const char head[] = "\"flow.tensor.transfer\"(";
  const char *end = line + n, *p = strstr(line, head);
  if (!p || p >= end) return false;
  const char *operand = p + sizeof head - 1, *operand_end = memchr(operand, ')', (size_t)(end - operand));
  if (!operand_end || strncmp(operand_end, ") {target = ", 12) != 0) return false;
  const char *target = operand_end + 12, *target_end = strstr(target, "} : (");
  if (!target_end || target_end > end) return false;
  const char *type = target_end + 5, *type_end = strstr(type, ") -> ");
  if (!type_end || type_end > end) return false;
  const char *rest = type_end + 5;
  while (rest < end && *rest != ' ') rest++; /* skip the result type */
  emit_buf_append(out, line, (size_t)(p - line));
  buf_puts(out, "flow.tensor.transfer ");
  emit_buf_append(out, operand, (size_t)(operand_end - operand));
  buf_puts(out, " : ");
  emit_buf_append(out, type, (size_t)(type_end - type));
  buf_puts(out, " to ");
  emit_buf_append(out, target, (size_t)(target_end - target));
  emit_buf_append(out, rest, (size_t)(end - rest));
  return true;
}

/* Returns the first occurrence of `needle` in [p, end), or NULL. */
static const char *find_in(const char *p, const char *end, const char *needle) {
  size_t n = strlen(needle);
  for (; p + n <= end; p++)
    if (memcmp(p, needle, n) == 0) return p;
  return NULL;
}

/* `"util.global"() {initial_value = INIT, stream.affinity = A, sym_name = "S",
 *  sym_visibility = "private", type = T} : () -> () loc(...)` becomes
 * `util.global private @"S" {stream.affinity = A} = INIT loc(...)`. INIT is
 * `#flow.parameter.named<"model"::"KEY"> : T`; KEY and S are printed
 * escaped, so they hold no raw quote. */
static bool rewrite_global_line(emit_buf *out, const char *line, size_t n) {
  static const char head[] = "\"util.global\"() {initial_value = ";
  const char *end = line + n, *p = find_in(line, end, head);
  if (!p) return false;
  const char *init = p + sizeof head - 1, *key = find_in(init, end, "::\"");
  const char *key_end = key ? memchr(key + 3, '"', (size_t)(end - key - 3)) : NULL;
  const char *init_end = key_end ? find_in(key_end, end, ", stream.affinity = ") : NULL;
  const char *aff = init_end ? init_end + 20 : NULL, *aff_end = aff ? find_in(aff, end, ", sym_name = \"") : NULL;
  const char *sym = aff_end ? aff_end + 14 : NULL, *sym_end = sym ? memchr(sym, '"', (size_t)(end - sym)) : NULL;
  const char *tail = sym_end ? find_in(sym_end, end, "} : () -> ()") : NULL;
  if (!tail || !find_in(sym_end, tail, "sym_visibility = \"private\"")) return false;
  emit_buf_append(out, line, (size_t)(p - line));
  buf_puts(out, "util.global private @\"");
  emit_buf_append(out, sym, (size_t)(sym_end - sym));
  buf_puts(out, "\" {stream.affinity = ");
  emit_buf_append(out, aff, (size_t)(aff_end - aff));
  buf_puts(out, "} = ");
  emit_buf_append(out, init, (size_t)(init_end - init));
  emit_buf_append(out, tail + 12, (size_t)(end - tail - 12));
  return true;
}

/* `"util.global.load"() {global = @S} : () -> T loc(...)` becomes
 * `util.global.load @S : T loc(...)`. */
static bool rewrite_load_line(emit_buf *out, const char *line, size_t n) {
  static const char head[] = "\"util.global.load\"() {global = ";
  const char *end = line + n, *p = find_in(line, end, head);
  if (!p) return false;
  const char *sym = p + sizeof head - 1, *sym_end = find_in(sym, end, "} : () -> ");
  if (!sym_end) return false;
  emit_buf_append(out, line, (size_t)(p - line));
  buf_puts(out, "util.global.load ");
  emit_buf_append(out, sym, (size_t)(sym_end - sym));
  buf_puts(out, " : ");
  emit_buf_append(out, sym_end + 10, (size_t)(end - sym_end - 10));
  return true;
}

static bool rewrite_iree_line(emit_buf *out, const char *line, size_t n) {
  return rewrite_transfer_line(out, line, n) || rewrite_global_line(out, line, n) || rewrite_load_line(out, line, n);
}

static bool rewrite_iree_transfers(emit_buf *b) {
  emit_buf out = {0};
  const char *p = b->data, *end = b->data + b->len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((eol ? eol : end) - p);
    if (!rewrite_iree_line(&out, p, n)) emit_buf_append(&out, p, n);
    if (eol) emit_buf_append(&out, "\n", 1);
    p += n + (eol ? 1 : 0);
  }
  if (out.oom) {
    free(out.data);
    return false;
  }
  free(b->data);
  *b = out;
  return true;
}

ppcc_status emit_render(ppcc_emit_ctx *c, char **text, size_t *len) {
  MlirOperation module = mlirModuleGetOperation(c->module);
  if (!mlirOperationVerify(module))
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "the emitted MLIR module does not verify (see above)");
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOpPrintingFlagsAssumeVerified(flags);
  emit_buf b = {0};
  mlirOperationPrintWithFlags(module, flags, emit_buf_print, &b);
  mlirOpPrintingFlagsDestroy(flags);
  emit_buf_append(&b, "\n", 1);
  bool ok = !b.oom && inline_locations(&b);
  if (ok && c->kind == PPCC_EMIT_IREE) ok = rewrite_iree_transfers(&b);
  if (!ok) {
    free(b.data);
    return ppcc_error_status(c->d, PPCC_ERR_INTERNAL, "out of memory printing the MLIR module");
  }
  *text = b.data;
  *len = b.len;
  return PPCC_OK;
}
