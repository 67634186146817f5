#include "ppcc/diag.h"
#include <stdarg.h>
#include <string.h>

void ppcc_diag_init(ppcc_diag *d, const char *file, FILE *sink) {
  memset(d, 0, sizeof *d);
  d->file = file ? file : "ppcc";
  d->sink = sink;
  d->site.op = d->pending.op = -1;
  d->site.device = d->pending.device = -1;
}

static ppcc_status report(ppcc_diag *d, ppcc_status st, const char *kind,
                          const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  /* One line per diagnostic, whatever the message carried. */
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  if (st != PPCC_OK) {
    if (d->errors == 0) {
      memcpy(d->first, msg, sizeof msg);
      d->site = d->pending;
    }
    d->pending = (ppcc_diag_site){.kind = PPCC_SITE_NONE, .op = -1, .device = -1};
    memcpy(d->last, msg, sizeof msg);
    d->errors++;
  }
  if (d->sink) fprintf(d->sink, "%s: %s: %s\n", d->file, kind, msg);
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
  for (char *p = msg; *p; p++) /* one line each, like every diagnostic */
    if (*p == '\n' || *p == '\r') *p = ' ';
  if (d->sink) fprintf(d->sink, "  %s: %s\n", kind, msg);
}
