#include "ppcc/diag.h"
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

void ppcc_diag_init(ppcc_diag *d, const char *file, FILE *sink) {
  memset(d, 0, sizeof *d);
  d->file = file ? file : "ppcc";
  d->sink = sink;
  d->site.op = d->pending.op = -1;
  d->site.device = d->pending.device = -1;
}

size_t ppcc_escape_text(char *out, size_t n, const char *in) {
  static const char hex[] = "0123456789abcdef";
  size_t k = 0;
  if (n == 0) return 0;
  for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p; p++) {
    char e[5] = {(char)*p, 0};
    if (*p == '\n') memcpy(e, "\\n", 3);
    else if (*p == '\r') memcpy(e, "\\r", 3);
    else if (*p == '\t') memcpy(e, "\\t", 3);
    else if (*p < 0x20 || *p == 0x7f) e[0] = '\\', e[1] = 'x', e[2] = hex[*p >> 4], e[3] = hex[*p & 15], e[4] = 0;
    size_t m = strlen(e);
    if (k + m >= n) break; /* cut whole escapes only */
    memcpy(out + k, e, m);
    k += m;
  }
  out[k] = 0;
  return k;
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
