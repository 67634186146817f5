/* Diagnostics: the one module every error goes through. Library code never
 * exits; it reports here and returns a status up to the driver. */
#ifndef PPCC_DIAG_H
#define PPCC_DIAG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
  PPCC_OK = 0,
  PPCC_ERR_USER = 1,     /* bad input: model, weights, flags' values */
  PPCC_ERR_USAGE = 2,    /* bad command line */
  PPCC_ERR_INTERNAL = 3  /* a bug or an environment failure */
} ppcc_status;

/* Where a placement error arose, so that the fix generator (src/fix/) can
 * explain it and propose edits. The pass that reports the error sets it
 * just before (ppcc_diag_site_set); only the first error's site is kept. */
typedef enum {
  PPCC_SITE_NONE,
  PPCC_SITE_PIN_CONFLICT,   /* pinned operands on different devices (P4) */
  PPCC_SITE_NO_PINNED,      /* operands on different devices, none pinned */
  PPCC_SITE_SHARD_COUNTS,   /* a move between different shard counts */
  PPCC_SITE_PINNED_UPDATE,  /* in-place update from a pinned operand elsewhere (P7) */
  PPCC_SITE_LAYOUTS,        /* a sharding rule refused the operands' layouts */
  PPCC_SITE_MEMORY          /* auto-partition: no split fits --device-memory;
                             * or a placed model's device over its
                             * --devices-spec memory (device >= 0) */
} ppcc_site_kind;

typedef struct ppcc_diag_site {
  ppcc_site_kind kind;
  int op;            /* index in the model's "ops" (src_index), -1 if none */
  int op_end;        /* MEMORY: the stage's ops are [op, op_end) */
  int stage;         /* MEMORY: the stage that does not fit */
  long long bytes;   /* MEMORY: bytes per device it needs */
  int device;        /* MEMORY over a devices spec: the device, else -1 */
  long long memory;  /* MEMORY over a devices spec: that device's memory */
} ppcc_diag_site;

typedef struct ppcc_diag {
  const char *file;  /* prefix of every message: "FILE: error: MSG" */
  FILE *sink;        /* NULL: keep messages quiet (tests) */
  int errors;
  char first[1024];  /* first error message (without prefix), for tests */
  char last[1024];
  ppcc_diag_site site; /* of the first error, if it was a placement error */
  ppcc_diag_site pending; /* set by ppcc_diag_site_set for the next error */
} ppcc_diag;

/* The one escaping of names (and any text from a file) shown to a user,
 * in the form of where it is printed. Every form escapes control
 * characters, bytes that are not UTF-8, C1 controls and the invisible
 * characters that reorder text (bidi controls, line separators):
 *   TEXT  terminal text (diagnostics, text reports): \n \r \t, \xNN for
 *         a byte, \uXXXX for a hidden code point; '"' and '\' as is.
 *   JSON  inside a JSON string: '"' and '\' escaped, controls and hidden
 *         code points as \uXXXX (a byte that is not UTF-8 as \u00NN),
 *         so the file stays valid JSON.
 *   DOT   inside a double-quoted DOT string: '"' escaped, and the TEXT
 *         form with its backslashes doubled (the label shows "\x1b").
 *   MLIR  an MLIR string literal (llvm::printEscapedString): printable
 *         ASCII but '"' and '\' as is, every other byte as \XX. */
/* Length of the valid UTF-8 sequence at in (1 for ASCII; overlong forms,
 * surrogates and code points above U+10FFFF are invalid), else 0; *cp
 * gets its code point. */
int ppcc_utf8_char(const char *in, unsigned *cp);
/* C1 controls, and the invisible characters that reorder or break the
 * text around them (bidi controls, line separators, BOM): shown, they
 * make a line say something other than what is there. */
bool ppcc_hidden_code_point(unsigned c);
typedef enum ppcc_escape_form { PPCC_ESCAPE_TEXT, PPCC_ESCAPE_JSON, PPCC_ESCAPE_DOT, PPCC_ESCAPE_MLIR } ppcc_escape_form;
#define PPCC_ESCAPE_UNIT 16
/* The escaped form of the character at in (not at its end): written to
 * unit, its length to *unit_len; returns the bytes of in it stands for. */
size_t ppcc_escape_next(const char *in, ppcc_escape_form form, char unit[PPCC_ESCAPE_UNIT], size_t *unit_len);
/* Copies `in` escaped into out[n], cut at a whole escape if out is too
 * small; returns the length written. */
size_t ppcc_escape(char *out, size_t n, const char *in, ppcc_escape_form form);
/* ppcc_escape(.., PPCC_ESCAPE_TEXT): what every diagnostic goes through. */
size_t ppcc_escape_text(char *out, size_t n, const char *in);
/* `in` escaped, written to f (no length limit). */
void ppcc_escape_fputs(FILE *f, const char *in, ppcc_escape_form form);

void ppcc_diag_init(ppcc_diag *d, const char *file, FILE *sink);
/* Reports "FILE: error: MSG" and returns PPCC_ERR_USER. */
ppcc_status ppcc_error(ppcc_diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Same with another status (internal errors, usage errors). A message
 * that starts with "out of memory" is a user error (exit 1) whatever
 * status is passed. */
ppcc_status ppcc_error_status(ppcc_diag *d, ppcc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the next error as a placement error at model op `op`. */
void ppcc_diag_site_set(ppcc_diag *d, ppcc_site_kind kind, int op);
/* "FILE: warning: MSG": accepted, but the user should know. */
void ppcc_warning(ppcc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ppcc_note(ppcc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line that belongs to the error before it, "  KIND: MSG" (KIND is
 * "note" or "fix"): the --why chain and fixes of a placement error. */
void ppcc_diag_detail(ppcc_diag *d, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
