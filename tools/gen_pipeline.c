/* gen_pipeline: writes a deep pipeline-FFN model.json of any size, for
 * benchmarks and stress tests (see tools/pipeline_model.h for its shape).
 *
 *   gen_pipeline --blocks N --tp T --pp P [--hidden H] [--ffn F] [--batch B] -o FILE
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/io.h"
#include "pipeline_model.h"

static void usage(FILE *out) {
  fputs("Usage: gen_pipeline --blocks N --tp T --pp P [--hidden H] [--ffn F] [--batch B] -o FILE\n"
        "Writes a model of N pipeline-FFN blocks (4 ops each) over P stages of T devices.\n"
        "Defaults: --blocks 4 --tp 2 --pp 2 --hidden 64 --ffn 256 --batch 8. FILE '-' is stdout.\n",
        out);
}

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "gen_pipeline: error: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
  usage(stderr);
  return 2;
}

static bool parse_long(const char *text, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end) return false;
  *out = v;
  return true;
}

/* The option's target field, or NULL if the name is not a numeric option. */
static long *numeric_option(pipeline_config *c, const char *name) {
  if (strcmp(name, "--blocks") == 0) return &c->blocks;
  if (strcmp(name, "--tp") == 0) return &c->tp;
  if (strcmp(name, "--pp") == 0) return &c->pp;
  if (strcmp(name, "--hidden") == 0) return &c->hidden;
  if (strcmp(name, "--ffn") == 0) return &c->ffn;
  if (strcmp(name, "--batch") == 0) return &c->batch;
  return NULL;
}

int main(int argc, char **argv) {
  pipeline_config c = pipeline_defaults;
  const char *out_path = NULL;
  for (int i = 1; i < argc; i += 2) { /* every option takes a value */
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) return usage_error("missing value or unknown option", argv[i]);
    long *field = numeric_option(&c, argv[i]);
    if (strcmp(argv[i], "-o") == 0)
      out_path = argv[i + 1];
    else if (!field)
      return usage_error("unknown option", argv[i]);
    else if (!parse_long(argv[i + 1], field))
      return usage_error("not an integer", argv[i + 1]);
  }
  if (!out_path) return usage_error("missing -o FILE", NULL);
  const char *problem = pipeline_config_error(&c);
  if (problem) return usage_error(problem, NULL);

  ppcc_diag d;
  ppcc_diag_init(&d, out_path, stderr);
  ppcc_outfile f;
  if (ppcc_outfile_open(&f, out_path, &d) != PPCC_OK) return 1;
  pipeline_write_model(f.fp, &c);
  if (ferror(f.fp)) {
    ppcc_outfile_abort(&f);
    ppcc_error(&d, "write failed");
    return 1;
  }
  return ppcc_outfile_commit(&f, &d) == PPCC_OK ? 0 : 1;
}
