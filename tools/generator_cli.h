/* The command line every model generator in tools/ shares: numeric
 * options "--NAME N", a few string options, "-o FILE", and the atomic write
 * of the model (include/ppcc/io.h). Header-only: each tool is one file. */
#ifndef PPCC_GENERATOR_CLI_H
#define PPCC_GENERATOR_CLI_H
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"

typedef struct gen_cli {
  const char *tool;                /* "gen_llama", for messages */
  void (*usage)(FILE *out);
  const char *const *long_names;   /* "--layers", ... */
  long *const *long_fields;        /* where each one's value goes */
  int n_longs;
  const char *const *string_names; /* "--name", ... (may be 0 of them) */
  const char **const *string_fields;
  int n_strings;
  const char *out_path;            /* -o FILE, set by gen_cli_parse */
} gen_cli;

static inline int gen_cli_usage_error(const gen_cli *cli, const char *msg, const char *arg) {
  fprintf(stderr, "%s: error: %s%s%s\n", cli->tool, msg, arg ? ": " : "", arg ? arg : "");
  cli->usage(stderr);
  return 2;
}

static inline bool gen_cli_parse_long(const char *text, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end) return false;
  *out = v;
  return true;
}

/* Returns -1 to go on, or the exit code (0 after --help, 2 on a usage
 * error). Every option takes a value. */
static inline int gen_cli_parse(gen_cli *cli, int argc, char **argv) {
  for (int i = 1; i < argc; i += 2) {
    const char *opt = argv[i];
    if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
      cli->usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) return gen_cli_usage_error(cli, "missing value or unknown option", opt);
    const char *value = argv[i + 1];
    bool known = false;
    if (strcmp(opt, "-o") == 0) {
      cli->out_path = value;
      known = true;
    }
    for (int k = 0; !known && k < cli->n_strings; k++)
      if (strcmp(opt, cli->string_names[k]) == 0) {
        *cli->string_fields[k] = value;
        known = true;
      }
    for (int k = 0; !known && k < cli->n_longs; k++)
      if (strcmp(opt, cli->long_names[k]) == 0) {
        if (!gen_cli_parse_long(value, cli->long_fields[k])) return gen_cli_usage_error(cli, "not an integer", value);
        known = true;
      }
    if (!known) return gen_cli_usage_error(cli, "unknown option", opt);
  }
  return cli->out_path ? -1 : gen_cli_usage_error(cli, "missing -o FILE", NULL);
}

/* Writes the model through a temporary file renamed on success. */
static inline int gen_cli_write(const char *out_path, void (*write)(FILE *out, const void *config),
                                const void *config) {
  ppcc_diag d;
  ppcc_diag_init(&d, out_path, stderr);
  ppcc_outfile f;
  if (ppcc_outfile_open(&f, out_path, &d) != PPCC_OK) return 1;
  write(f.fp, config);
  if (ferror(f.fp)) {
    ppcc_outfile_abort(&f);
    ppcc_error(&d, "write failed");
    return 1;
  }
  return ppcc_outfile_commit(&f, &d) == PPCC_OK ? 0 : 1;
}

#endif
