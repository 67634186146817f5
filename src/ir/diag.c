#include "ppcc/diag.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

void ppcc_diag_init(ppcc_diag *d, const char *file, FILE *sink) {
  memset(d, 0, sizeof *d);
  d->file = file ? file : "ppcc";
  d->sink = sink;
  d->site.op = d->pending.op = -1;
  d->site.device = d->pending.device = -1;
}

int ppcc_utf8_char(const char *in, unsigned *cp) {
  const unsigned char *s = (const unsigned char *)in;
  if (s[0] < 0x80) return *cp = s[0], 1;
  int len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
  for (int i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if ((len == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
      (len == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
    return 0;
  unsigned c = len ? s[0] & (0x7fu >> len) : 0;
  for (int i = 1; i < len; i++) c = c << 6 | (s[i] & 0x3fu);
  *cp = c;
  return len;
}

bool ppcc_hidden_code_point(unsigned c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

size_t ppcc_escape_next(const char *in, ppcc_escape_form form, char unit[PPCC_ESCAPE_UNIT], size_t *unit_len) {
  static const char hex[] = "0123456789abcdef", HEX[] = "0123456789ABCDEF";
  const unsigned char *p = (const unsigned char *)in;
  unsigned c = *p;
  size_t used = 1;
  int n = 0;
  if (form == PPCC_ESCAPE_MLIR) { /* llvm::printEscapedString: byte by byte */
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') unit[n++] = (char)c;
    else unit[n++] = '\\', unit[n++] = HEX[c >> 4], unit[n++] = HEX[c & 15];
    *unit_len = (size_t)n;
    return used;
  }
  bool quoted = form != PPCC_ESCAPE_TEXT; /* '"' and '\' escaped: inside a JSON or DOT string */
  /* DOT labels read backslash escapes themselves: the text form's
   * backslash is doubled so the label shows "\x1b". */
  const char *bs = form == PPCC_ESCAPE_DOT ? "\\\\" : "\\";
  int nb = form == PPCC_ESCAPE_DOT ? 2 : 1;
  unsigned cp = c;
  int len = ppcc_utf8_char(in, &cp);
  if (c >= 0x20 && c < 0x7f) {
    if (quoted && (c == '"' || c == '\\')) unit[n++] = '\\';
    unit[n++] = (char)c;
  } else if (len > 0 && c >= 0x80 && !ppcc_hidden_code_point(cp)) {
    memcpy(unit, p, (size_t)len), n = len, used = (size_t)len;
  } else {
    const char *named = c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : NULL;
    if (form == PPCC_ESCAPE_JSON && !named) named = c == '\b' ? "b" : c == '\f' ? "f" : NULL;
    memcpy(unit, bs, (size_t)nb), n = nb;
    if (named) {
      unit[n++] = named[0];
    } else if (len > 0 && (c >= 0x80 || form == PPCC_ESCAPE_JSON)) { /* a code point: \uXXXX */
      unit[n++] = 'u';
      for (int sh = 12; sh >= 0; sh -= 4) unit[n++] = hex[(cp >> sh) & 15];
      used = (size_t)len;
    } else if (form == PPCC_ESCAPE_JSON) { /* a byte that is not UTF-8: valid JSON shows it as U+00XX */
      n += snprintf(unit + n, 7, "u00%c%c", hex[c >> 4], hex[c & 15]);
    } else {
      unit[n++] = 'x', unit[n++] = hex[c >> 4], unit[n++] = hex[c & 15];
    }
  }
  *unit_len = (size_t)n;
  return used;
}

size_t ppcc_escape(char *out, size_t n, const char *in, ppcc_escape_form form) {
  size_t k = 0;
  if (n == 0) return 0;
  char unit[PPCC_ESCAPE_UNIT];
  for (const char *p = in ? in : ""; *p;) {
    size_t m, used = ppcc_escape_next(p, form, unit, &m);
    if (k + m >= n) break; /* cut whole escapes only */
    memcpy(out + k, unit, m);
    k += m;
    p += used;
  }
  out[k] = 0;
  return k;
}

size_t ppcc_escape_text(char *out, size_t n, const char *in) { return ppcc_escape(out, n, in, PPCC_ESCAPE_TEXT); }

void ppcc_escape_fputs(FILE *f, const char *in, ppcc_escape_form form) {
  char unit[PPCC_ESCAPE_UNIT];
  for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p;) {
    const unsigned char *run = p; /* plain ASCII written in one go */
    while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') p++;
    if (p > run) fwrite(run, 1, (size_t)(p - run), f);
    if (!*p) break;
    size_t m, used = ppcc_escape_next((const char *)p, form, unit, &m);
    fwrite(unit, 1, m, f);
    p += used;
  }
}

/* "FILE: error: FILE/x.json: msg" names the path twice: the inner path,
 * which says more, replaces the prefix. */
static const char *inner_path(const ppcc_diag *d, const char *msg, size_t *len) {
  size_t f = strlen(d->file);
  if (strncmp(msg, d->file, f) != 0) return NULL;
  const char *colon = strstr(msg + f, ": ");
  if (!colon || (colon != msg + f && msg[f] != '/')) return NULL;
  for (const char *p = msg + f; p < colon; p++)
    if (*p == ' ' || *p == '\'') return NULL;
  *len = (size_t)(colon - msg);
  return msg;
}

static ppcc_status report(ppcc_diag *d, ppcc_status st, const char *kind,
                          const char *fmt, va_list ap) {
  char raw[1024], msg[1024];
  vsnprintf(raw, sizeof raw, fmt, ap);
  /* One line per diagnostic, whatever the message carried, and no raw
   * control character (a name holding terminal escapes) reaches the
   * terminal: they are shown escaped. */
  ppcc_escape_text(msg, sizeof msg, raw);
  if (st != PPCC_OK) {
    if (d->errors == 0) {
      memcpy(d->first, msg, sizeof msg);
      d->site = d->pending;
    }
    d->pending = (ppcc_diag_site){.kind = PPCC_SITE_NONE, .op = -1, .device = -1};
    memcpy(d->last, msg, sizeof msg);
    d->errors++;
  }
  size_t plen = 0;
  const char *path = inner_path(d, msg, &plen);
  char file[1024];
  ppcc_escape_text(file, sizeof file, d->file);
  if (d->sink && path) fprintf(d->sink, "%.*s: %s: %s\n", (int)plen, path, kind, msg + plen + 2);
  else if (d->sink) fprintf(d->sink, "%s: %s: %s\n", file, kind, msg);
  return st;
}

ppcc_status ppcc_error(ppcc_diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ppcc_status st = report(d, PPCC_ERR_USER, "error", fmt, ap);
  va_end(ap);
  return st;
}

ppcc_status ppcc_error_status(ppcc_diag *d, ppcc_status st, const char *fmt, ...) {
  /* Running out of memory is a limit of the machine, not a bug: exit 1
   * like any refusal, whichever code path ran out. */
  if (st == PPCC_ERR_INTERNAL && strncmp(fmt, "out of memory", 13) == 0) st = PPCC_ERR_USER;
  va_list ap;
  va_start(ap, fmt);
  report(d, st, "error", fmt, ap);
  va_end(ap);
  return st;
}

void ppcc_warning(ppcc_diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(d, PPCC_OK, "warning", fmt, ap);
  va_end(ap);
}

void ppcc_diag_site_set(ppcc_diag *d, ppcc_site_kind kind, int op) {
  d->pending = (ppcc_diag_site){.kind = kind, .op = op, .device = -1};
}

void ppcc_note(ppcc_diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(d, PPCC_OK, "note", fmt, ap);
  va_end(ap);
}

void ppcc_diag_detail(ppcc_diag *d, const char *kind, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char shown[1024]; /* one line each, escaped, like every diagnostic */
  ppcc_escape_text(shown, sizeof shown, msg);
  if (d->sink) fprintf(d->sink, "  %s: %s\n", kind, shown);
}
