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
  {"weights", true}, {"o", true}, {"pp", true}, {"tp", true}, {"device-memory", true}, {"devices-spec", true},
  CLI_DIAGNOSTICS_OPTION, {NULL, false},
};

static ppcc_status on_shard_option(void *ctx, const char *name, const char *value) {
  shard_args *a = ctx;
  bool handled;
  ppcc_status st = cli_partition_option("shard-weights", &a->partition, name, value, &handled);
  if (handled) return st;
  if (strcmp(name, "weights") == 0) a->weights = value;
  if (strcmp(name, "o") == 0) a->out_path = value;
  return PPCC_OK;
}

void cli_help_shard_weights(FILE *out) {
  fputs("Usage: ppcc shard-weights MODEL.json --weights SRC -o OUT.irpa|OUT.safetensors\n"
        "                           [--pp=P] [--tp=T] [--device-memory=BYTES] [--devices-spec=FILE.json]\n"
        "\n"
        "Writes the sharded parameter archive that `ppcc compile --emit=iree` references:\n"
        "one entry per shard, named as sharktank names them (README, \"Sharded parameter\n"
        "archives\"): NAME.shard.K for each shard of a split or unreduced param,\n"
        "NAME.shard.0 once for a replicated one, NAME for an unsharded one; each in the\n"
        "param's dtype. Give the same partition options as to `compile`.\n"
        "\n"
        "Options:\n"
        "  --weights SRC   the whole tensors: .safetensors, .irpa, .gguf, or a Hugging Face\n"
        "                  checkpoint directory (as `ppcc run --weights`)\n"
        "  -o OUT          the archive, .irpa (IREE parameter archive) or .safetensors;\n"
        "                  written only when complete (a failure leaves no file). Reads one\n"
        "                  source tensor at a time: memory stays near the largest tensor\n",
        out);
  fputs(cli_partition_help, out);
  fputs(cli_diagnostics_help, out);
  fputs("\nExample:\n"
        "  ppcc shard-weights testdata/models/tp_ffn.json --weights w.safetensors -o tp_ffn.irpa\n",
        out);
}

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
  cli_parse p = {.command = "shard-weights", .options = shard_options, .on_option = on_shard_option, .ctx = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (st != PPCC_OK) return st;
  if (p.help) {
    cli_help_shard_weights(stdout);
    return PPCC_OK;
  }
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
