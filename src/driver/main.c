/* ppcc: the command-line driver (DESIGN §8). Dispatches to one command;
 * every command returns the process exit code: 0 ok, 1 user error,
 * 2 usage error, 3 internal error. */
#include <string.h>
#include "driver.h"
#ifdef PPCC_HAVE_RUNTIME
#include "import_cli.h"
#endif
#include "ppcc/io.h"
#ifdef PPCC_HAVE_RUNTIME
#include "ppcc/runtime.h"
#endif

#ifndef PPCC_VERSION
#define PPCC_VERSION "unknown"
#endif

typedef struct command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
  void (*help)(FILE *out);
} command;

static const command commands[] = {
  {"compile", "place a model on its devices; write MLIR and/or a placement report",
   cli_cmd_compile, cli_help_compile},
  {"report", "print the placement report (text, JSON or DOT)", cli_cmd_report, cli_help_report},
  {"run", "execute a model on its logical devices", cli_cmd_run, cli_help_run},
  {"fix", "apply the first proposed fix of each placement error until the model compiles", cli_cmd_fix,
   cli_help_fix},
  {"shard-weights", "write the sharded parameter archive (.irpa/.safetensors) the IREE form reads",
   cli_cmd_shard_weights, cli_help_shard_weights},
  {"import", "turn a model of another format (HF checkpoint, GGUF, ONNX) into model.json", cli_cmd_import,
   cli_help_import},
#ifdef PPCC_HAVE_RUNTIME
  {"calibrate", "measure this machine's GEMM, elementwise and copy speeds for the report's prediction",
   cli_cmd_calibrate, cli_help_calibrate},
  {"generate", "greedy decoding of a checkpoint (HF directory or GGUF)", cli_cmd_generate, cli_help_generate},
#endif
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void print_help(FILE *out) {
  fputs("Usage: ppcc COMMAND MODEL.json [OPTIONS]\n"
        "\n"
        "ppcc compiles a graph of tensor ops (model.json) for several devices: it\n"
        "propagates shardings and device placements (pipeline and tensor\n"
        "parallelism), inserts the transfers between devices, and emits MLIR.\n"
        "\n"
        "Commands:\n",
        out);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-13s %s\n", commands[i].name, commands[i].summary);
  fputs("\n"
        "Options:\n"
        "  -h, --help     show this help; 'ppcc COMMAND --help' shows a command's\n"
        "  --version      print the version\n"
        "\n"
        "Example:\n"
        "  ppcc compile testdata/models/ppffn.json --report=ppffn.report.json\n"
        "\n"
        "Exit codes: 0 ok, 1 bad input (FILE: error: MESSAGE on stderr),\n"
        "2 bad command line, 3 internal error.\n",
        out);
}

static const command *find_command(const char *name) {
  for (int i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

int main(int argc, char **argv) {
#ifdef PPCC_HAVE_RUNTIME
  ppcc_rt_tame_threads(argv); /* libgomp's spins, OpenBLAS under ulimit -v: set before they load */
#endif
  ppcc_outfile_cleanup_on_signals(); /* an interrupted run leaves no temporaries */
  if (argc < 2) return cli_usage_error(NULL, "missing a command (compile, report, run, import or generate)");
  const char *first = argv[1];
  if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0 || strcmp(first, "help") == 0) {
    const command *about = argc > 2 ? find_command(argv[2]) : NULL; /* ppcc help compile */
    if (about)
      about->help(stdout);
    else
      print_help(stdout);
    return PPCC_OK;
  }
  if (strcmp(first, "--version") == 0) {
    printf("ppcc %s\n", PPCC_VERSION);
    return PPCC_OK;
  }
  const command *cmd = find_command(first);
  if (!cmd) return cli_usage_error(NULL, "unknown command '%s' (compile, report, run, import or generate)", first);
  return cmd->run(argc - 2, argv + 2);
}
