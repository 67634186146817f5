/* Command-line parsing shared by every ppcc command: each command declares
 * one option table (name, value, help line, field or handler; driver.h),
 * and this file parses argv against it and prints its --help. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"

ppcc_status cli_usage_error(const char *command, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "ppcc%s%s: error: ", command ? " " : "", command ? command : "");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'ppcc%s%s --help' for more information.\n", command ? " " : "",
          command ? command : "");
  return PPCC_ERR_USAGE;
}

/* ---------------- the table ---------------- */

/* An option found in a table, with the struct its field lives in (a
 * group's rows are relative to the group's struct). */
typedef struct found_option {
  const cli_option *o;
  char *args;
} found_option;

static bool find_in(const cli_option *rows, char *args, const char *name, size_t len, found_option *out) {
  for (const cli_option *o = rows; o->kind != CLI_END; o++) {
    if (o->kind == CLI_GROUP) {
      if (find_in(o->group, args + o->offset, name, len, out)) return true;
    } else if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
      *out = (found_option){o, args};
      return true;
    }
  }
  return false;
}

static const cli_option *find_option(const cli_parse *p, const char *name, size_t len, found_option *out) {
  found_option f;
  if (!find_in(p->cmd->options, p->args, name, len, &f)) return NULL;
  if (out) *out = f;
  return f.o;
}

/* A name given twice in one command's table (two groups with the same
 * option, say) would make one of them unreachable. */
static int count_named(const cli_option *rows, const char *name) {
  int n = 0;
  for (const cli_option *o = rows; o->kind != CLI_END; o++)
    n += o->kind == CLI_GROUP ? count_named(o->group, name) : strcmp(o->name, name) == 0;
  return n;
}

static const char *duplicate_in(const cli_option *rows, const cli_option *all) {
  for (const cli_option *o = rows; o->kind != CLI_END; o++) {
    const char *dup = o->kind == CLI_GROUP ? duplicate_in(o->group, all) : count_named(all, o->name) > 1 ? o->name : NULL;
    if (dup) return dup;
  }
  return NULL;
}

static bool takes_value(const cli_option *o) { return o->arg != NULL; }

static void store_int(void *field, size_t size, long long v) {
  if (size == sizeof(int32_t)) {
    int32_t x = (int32_t)v;
    memcpy(field, &x, sizeof x);
  } else {
    int64_t x = v;
    memcpy(field, &x, sizeof x);
  }
}

static ppcc_status apply_option(const cli_parse *p, const found_option *f, const char *value) {
  const cli_option *o = f->o;
  void *field = f->args + o->offset;
  switch (o->kind) {
  case CLI_FLAG:
    *(bool *)field = true;
    return PPCC_OK;
  case CLI_TEXT:
    *(const char **)field = value;
    return PPCC_OK;
  case CLI_INT: {
    long long v = 0;
    ppcc_status st = cli_parse_int(p->cmd->name, o->name, value, o->min, o->max, &v);
    if (st == PPCC_OK) store_int(field, o->size, v);
    return st;
  }
  case CLI_CALL: {
    cli_value v = {.command = p->cmd->name, .name = o->name, .text = value, .args = f->args, .field = field};
    return o->call(&v);
  }
  default:
    return PPCC_ERR_INTERNAL;
  }
}

/* ---------------- parsing ---------------- */

/* --help wins over everything else on the line, so that
 * "ppcc compile --bogus --help" still shows the help. */
static bool wants_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) return false;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
  }
  return false;
}

/* "--name=value" or "--name value"; *i is advanced past a separate value. */
static ppcc_status parse_long(cli_parse *p, int argc, char **argv, int *i) {
  const char *command = p->cmd->name;
  const char *arg = argv[*i] + 2;
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  found_option f;
  const cli_option *o = find_option(p, arg, len, &f);
  if (!o) {
    /* "----name": the name with its dashes is unknown, the name without them may not be */
    const char *bare = arg;
    while (*bare == '-') bare++;
    size_t bare_len = len - (size_t)(bare - arg);
    const cli_option *meant = bare != arg ? find_option(p, bare, bare_len, NULL) : NULL;
    if (meant)
      return cli_usage_error(command, "unknown option '--%.*s' (too many dashes: did you mean '--%s'?)", (int)len,
                             arg, meant->name);
    return cli_usage_error(command, "unknown option '--%.*s'", (int)len, arg);
  }
  const char *value = NULL;
  if (takes_value(o)) {
    if (eq) {
      value = eq + 1;
    } else if (*i + 1 < argc) {
      value = argv[++*i];
    } else {
      return cli_usage_error(command, "option '--%s' needs a value", o->name);
    }
  } else if (eq) {
    return cli_usage_error(command, "option '--%s' takes no value", o->name);
  }
  return apply_option(p, &f, value);
}

/* "-o FILE" or "-oFILE": single-letter options, all of which take a value. */
static ppcc_status parse_short(cli_parse *p, int argc, char **argv, int *i) {
  const char *arg = argv[*i] + 1;
  found_option f;
  const cli_option *o = find_option(p, arg, 1, &f);
  if (!o || !takes_value(o)) return cli_usage_error(p->cmd->name, "unknown option '-%s'", arg);
  const char *value = arg[1] ? arg + 1 : NULL;
  if (!value) {
    if (*i + 1 >= argc) return cli_usage_error(p->cmd->name, "option '-%c' needs a value", arg[0]);
    value = argv[++*i];
  }
  return apply_option(p, &f, value);
}

static ppcc_status take_positional(cli_parse *p, const char *arg) {
  if (p->cmd->no_positional) return cli_usage_error(p->cmd->name, "unexpected argument '%s'", arg);
  if (p->model_path)
    return cli_usage_error(p->cmd->name, "unexpected argument '%s' (one model file expected)", arg);
  p->model_path = arg;
  return PPCC_OK;
}

ppcc_status cli_parse_args(cli_parse *p, int argc, char **argv) {
  p->model_path = NULL;
  const char *dup = duplicate_in(p->cmd->options, p->cmd->options);
  if (dup) {
    fprintf(stderr, "ppcc %s: internal error: its option table names '%s' twice\n", p->cmd->name, dup);
    return PPCC_ERR_INTERNAL;
  }
  p->help = wants_help(argc, argv);
  if (p->help) {
    cli_print_help(p->cmd, stdout);
    return PPCC_OK;
  }
  bool options_done = false;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    ppcc_status st;
    if (options_done || arg[0] != '-' || arg[1] == '\0') {
      st = take_positional(p, arg);
    } else if (strcmp(arg, "--") == 0) {
      options_done = true;
      st = PPCC_OK;
    } else if (arg[1] == '-') {
      st = parse_long(p, argc, argv, &i);
    } else {
      st = parse_short(p, argc, argv, &i);
    }
    if (st != PPCC_OK) return st;
  }
  if (!p->model_path && !p->cmd->no_positional)
    return cli_usage_error(p->cmd->name, "missing the model file (MODEL.json)");
  return PPCC_OK;
}

/* ---------------- --help ---------------- */

/* "  --name ARG" or "  -o ARG", then the help text from column `col`; a
 * label too long for the column puts the text on the next line, and each
 * '\n' of the text starts a new line at the column. */
static void print_rows(const cli_option *rows, int col, FILE *out) {
  for (const cli_option *o = rows; o->kind != CLI_END; o++) {
    if (o->kind == CLI_GROUP) {
      print_rows(o->group, col, out);
      continue;
    }
    if (!o->help) continue; /* not listed */
    int n = fprintf(out, "  %s%s%s%s", o->name[1] ? "--" : "-", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    if (n > col - 2) { /* at least two spaces before the help */
      fputc('\n', out);
      n = 0;
    }
    fprintf(out, "%*s", col - n, "");
    for (const char *t = o->help; *t; t++) {
      fputc(*t, out);
      if (*t == '\n') fprintf(out, "%*s", col, "");
    }
    fputc('\n', out);
  }
}

void cli_print_help(const cli_command *c, FILE *out) {
  int col = c->help_column > 0 ? c->help_column : 22;
  fputs(c->usage, out);
  fputs("\nOptions:\n", out);
  print_rows(c->options, col, out);
  fprintf(out, "  -h, --help%*sshow this help\n", col - 12, "");
  if (c->epilog) fputs(c->epilog, out);
}

/* ---------------- values ---------------- */

ppcc_status cli_parse_int(const char *command, const char *option, const char *text,
                          long long min, long long max, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < min || v > max)
    return cli_usage_error(command, "option '--%s' needs an integer in [%lld, %lld], got '%s'",
                           option, min, max, text);
  *out = v;
  return PPCC_OK;
}

ppcc_status cli_parse_u64(const char *command, const char *option, const char *text,
                          unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  /* strtoull accepts "-1" and wraps it; a seed is never negative. */
  unsigned long long v = text[0] == '-' ? 0 : strtoull(text, &end, 10);
  if (text[0] == '-' || errno || end == text || *end != '\0')
    return cli_usage_error(command, "option '--%s' needs a non-negative integer, got '%s'",
                           option, text);
  *out = v;
  return PPCC_OK;
}

ppcc_status cli_set_backend(const cli_value *v) {
  if (strcmp(v->text, "jit") != 0 && strcmp(v->text, "interp") != 0)
    return cli_usage_error(v->command, "unknown --backend '%s' (use jit or interp)", v->text);
  *(const char **)v->field = v->text;
  return PPCC_OK;
}
