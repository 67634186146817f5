/* `ppcc shard-weights MODEL.json --weights SRC -o OUT.irpa|OUT.safetensors`:
 * the sharded parameter archive the IREE form references (DESIGN §5). */
#include <string.h>
#include "driver.h"
#ifdef PPCC_HAVE_RUNTIME
#include "ppcc/runtime.h"
#endif

typedef struct shard_args {
  const char *weights;
  const char *out_path;
  cli_partition partition;
} shard_args;

static const cli_option shard_options[] = {
  CLI_TEXT_ROW("weights", "SRC", shard_args, weights,
               "the whole tensors: .safetensors, .irpa, .gguf, or a Hugging Face\n"
               "checkpoint directory (as `ppcc run --weights`)"),
  CLI_TEXT_ROW("o", "OUT", shard_args, out_path,
               "the archive, .irpa (IREE parameter archive) or .safetensors;\n"
               "written only when complete (a failure leaves no file). Reads one\n"
               "source tensor at a time: memory stays near the largest tensor"),
  CLI_GROUP_ROW(shard_args, partition, cli_partition_options),
  CLI_GROUP_ROW(shard_args, partition, cli_diagnostics_options),
  CLI_END_ROW,
};

static const cli_command shard_command = {
  .name = "shard-weights",
  .usage = "Usage: ppcc shard-weights MODEL.json --weights SRC -o OUT.irpa|OUT.safetensors\n"
           "                           [--pp=P] [--tp=T] [--device-memory=BYTES] [--devices-spec=FILE.json]\n"
           "\n"
           "Writes the sharded parameter archive that `ppcc compile --emit=iree` references:\n"
           "one entry per shard, named as sharktank names them (README, \"Sharded parameter\n"
           "archives\"): NAME.shard.K for each shard of a split or unreduced param,\n"
           "NAME.shard.0 once for a replicated one, NAME for an unsharded one; each in the\n"
           "param's dtype. Give the same partition options as to `compile`.\n",
  .options = shard_options,
  .epilog = "\nExample:\n"
            "  ppcc shard-weights testdata/models/tp_ffn.json --weights w.safetensors -o tp_ffn.irpa\n",
};

void cli_help_shard_weights(FILE *out) { cli_print_help(&shard_command, out); }

static ppcc_status check_shard_args(shard_args *a) {
  if (!a->weights) return cli_usage_error("shard-weights", "missing --weights SRC (the whole tensors)");
  if (!a->out_path) return cli_usage_error("shard-weights", "missing -o OUT.irpa or -o OUT.safetensors");
  size_t n = strlen(a->out_path);
  bool irpa = n > 5 && strcmp(a->out_path + n - 5, ".irpa") == 0;
  bool st = n > 12 && strcmp(a->out_path + n - 12, ".safetensors") == 0;
  if (!irpa && !st)
    return cli_usage_error("shard-weights", "-o must name an .irpa or a .safetensors file, got '%s'", a->out_path);
  return cli_check_partition("shard-weights", &a->partition);
}

int cli_cmd_shard_weights(int argc, char **argv) {
  shard_args a = {0};
  cli_parse p = {.cmd = &shard_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st != PPCC_OK || p.help) return st;
  st = check_shard_args(&a);
  if (st != PPCC_OK) return st;
  ppcc_diag d;
  ppcc_graph *g = cli_load_and_compile_partitioned(p.model_path, NULL, &a.partition, &d, &st);
  if (!g) return st;
#ifdef PPCC_HAVE_RUNTIME
  st = ppcc_shard_weights(g, a.weights, a.out_path, &d);
#else
  st = ppcc_error(&d, "this ppcc was built without the runtime: shard-weights is unavailable");
#endif
  ppcc_graph_free(g);
  return st;
}
