/* Diagnostics: the one module every error goes through. Library code never
 * exits; it reports here and returns a status up to the driver. */
#ifndef PPCC_DIAG_H
#define PPCC_DIAG_H
#include <stdio.h>

typedef enum {
  PPCC_OK = 0,
  PPCC_ERR_USER = 1,     /* bad input: model, weights, flags' values */
  PPCC_ERR_USAGE = 2,    /* bad command line */
  PPCC_ERR_INTERNAL = 3  /* a bug or an environment failure */
} ppcc_status;

typedef struct ppcc_diag {
  const char *file;  /* prefix of every message: "FILE: error: MSG" */
  FILE *sink;        /* NULL: keep messages quiet (tests) */
  int errors;
  char first[1024];  /* first error message (without prefix), for tests */
  char last[1024];
} ppcc_diag;

void ppcc_diag_init(ppcc_diag *d, const char *file, FILE *sink);
/* Reports "FILE: error: MSG" and returns PPCC_ERR_USER. */
ppcc_status ppcc_error(ppcc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same with another status (internal errors, usage errors). A message
 * that starts with "out of memory" is a user error (exit 1) whatever
 * status is passed. */
ppcc_status ppcc_error_status(ppcc_diag *d, ppcc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ppcc_note(ppcc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
