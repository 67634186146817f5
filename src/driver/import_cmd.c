/* `ppcc import SOURCE ...` (DESIGN §9): dispatches to the importer of the
 * named source format. */
#include <string.h>
#include "driver.h"

void cli_help_import(FILE *out) {
  fputs("Usage: ppcc import SOURCE INPUT -o MODEL.json [OPTIONS]\n"
        "\n"
        "Sources:\n"
        "  hf        a Hugging Face decoder checkpoint directory (Llama, Qwen, Gemma,\n"
        "            Phi-3, GPT-2, ...)\n"
        "  gguf      a GGUF file (llama.cpp / sharktank)\n"
        "  onnx      an ONNX model (.onnx); 'ppcc import onnx --help' for its options\n\n",
        out);
#ifdef PPCC_HAVE_RUNTIME
  cli_help_import_llama(out);
  fputs("\n", out);
#endif
  cli_help_import_onnx(out);
}

int cli_cmd_import(int argc, char **argv) {
  bool handled = false;
  int st = cli_cmd_import_onnx(argc, argv, &handled);
  if (handled) return st;
#ifdef PPCC_HAVE_RUNTIME
  st = cli_cmd_import_llama(argc, argv, &handled);
  if (handled) return st;
#endif
  if (argc > 0 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
    cli_help_import(stdout);
    return PPCC_OK;
  }
  return cli_usage_error("import", "unknown or missing source '%s' (use hf, gguf or onnx)",
                         argc > 0 ? argv[0] : "");
}
