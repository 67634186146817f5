/* Command-line parsing shared by every ppcc command. */
#include <errno.h>
#include <stdarg.h>
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

static const cli_option *find_option(const cli_option *options, const char *name, size_t len) {
  for (const cli_option *o = options; o->name; o++)
    if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
  return NULL;
}

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
  const char *arg = argv[*i] + 2;
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  const cli_option *o = find_option(p->options, arg, len);
  if (!o) {
    /* "----name": the name with its dashes is unknown, the name without them may not be */
    const char *bare = arg;
    while (*bare == '-') bare++;
    size_t bare_len = len - (size_t)(bare - arg);
    const cli_option *meant = bare != arg ? find_option(p->options, bare, bare_len) : NULL;
    if (meant)
      return cli_usage_error(p->command, "unknown option '--%.*s' (too many dashes: did you mean '--%s'?)", (int)len,
                             arg, meant->name);
    return cli_usage_error(p->command, "unknown option '--%.*s'", (int)len, arg);
  }
  const char *value = NULL;
  if (o->takes_value) {
    if (eq) {
      value = eq + 1;
    } else if (*i + 1 < argc) {
      value = argv[++*i];
    } else {
      return cli_usage_error(p->command, "option '--%s' needs a value", o->name);
    }
  } else if (eq) {
    return cli_usage_error(p->command, "option '--%s' takes no value", o->name);
  }
  return p->on_option(p->ctx, o->name, value);
}

/* "-o FILE" or "-oFILE": single-letter options, all of which take a value. */
static ppcc_status parse_short(cli_parse *p, int argc, char **argv, int *i) {
  const char *arg = argv[*i] + 1;
  const cli_option *o = find_option(p->options, arg, 1);
  if (!o || !o->takes_value) return cli_usage_error(p->command, "unknown option '-%s'", arg);
  const char *value = arg[1] ? arg + 1 : NULL;
  if (!value) {
    if (*i + 1 >= argc) return cli_usage_error(p->command, "option '-%c' needs a value", arg[0]);
    value = argv[++*i];
  }
  return p->on_option(p->ctx, o->name, value);
}

static ppcc_status take_positional(cli_parse *p, const char *arg) {
  if (p->model_path)
    return cli_usage_error(p->command, "unexpected argument '%s' (one model file expected)", arg);
  p->model_path = arg;
  return PPCC_OK;
}

ppcc_status cli_parse_args(cli_parse *p, int argc, char **argv) {
  p->model_path = NULL;
  p->help = wants_help(argc, argv);
  if (p->help) return PPCC_OK;
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
  if (!p->model_path) return cli_usage_error(p->command, "missing the model file (MODEL.json)");
  return PPCC_OK;
}

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
