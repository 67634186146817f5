/* gen_pipeline: writes a deep pipeline-FFN model.json of any size, for
 * benchmarks and stress tests (see tools/pipeline_model.h for its shape).
 *
 *   gen_pipeline --blocks N --tp T --pp P [--hidden H] [--ffn F] [--batch B] -o FILE
 */
#include "generator_cli.h"
#include "pipeline_model.h"

static void usage(FILE *out) {
  fputs("Usage: gen_pipeline --blocks N --tp T --pp P [--hidden H] [--ffn F] [--batch B] -o FILE\n"
        "Writes a model of N pipeline-FFN blocks (4 ops each) over P stages of T devices.\n"
        "Defaults: --blocks 4 --tp 2 --pp 2 --hidden 64 --ffn 256 --batch 8. FILE '-' is stdout.\n",
        out);
}

static void write_config(FILE *out, const void *config) { pipeline_write_model(out, config); }

int main(int argc, char **argv) {
  pipeline_config c = pipeline_defaults;
  static const char *const names[] = {"--blocks", "--tp", "--pp", "--hidden", "--ffn", "--batch"};
  long *const fields[] = {&c.blocks, &c.tp, &c.pp, &c.hidden, &c.ffn, &c.batch};
  gen_cli cli = {.tool = "gen_pipeline", .usage = usage, .long_names = names, .long_fields = fields, .n_longs = 6};
  int rc = gen_cli_parse(&cli, argc, argv);
  if (rc >= 0) return rc;
  const char *problem = pipeline_config_error(&c);
  if (problem) return gen_cli_usage_error(&cli, problem, NULL);
  return gen_cli_write(cli.out_path, write_config, &c);
}
