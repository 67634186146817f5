/* `ppcc import SOURCE ...` (DESIGN §9): dispatches to the importer of the
 * named source format. */
#include <string.h>
#include "driver.h"

void cli_help_import(FILE *out) {
  fputs("Usage: ppcc import SOURCE INPUT -o MODEL.json [OPTIONS]\n"
        "\n"
        "Sources:\n"
        "  onnx      an ONNX model (.onnx); 'ppcc import onnx --help' for its options\n\n",
        out);
  cli_help_import_onnx(out);
}

int cli_cmd_import(int argc, char **argv) {
  bool handled = false;
  int st = cli_cmd_import_onnx(argc, argv, &handled);
  if (handled) return st;
  if (argc > 0 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
    cli_help_import(stdout);
    return PPCC_OK;
  }
  return cli_usage_error("import", "unknown or missing source '%s' (use: ppcc import onnx MODEL.onnx -o MODEL.json)",
                         argc > 0 ? argv[0] : "");
}
