/* Shared by `ppcc import` and `ppcc generate`. */
#ifndef PPCC_DRIVER_IMPORT_CLI_H
#define PPCC_DRIVER_IMPORT_CLI_H
#include "../import/import.h"

/* --tp, --pp, --batch, --dtype into the spec (*handled when it was one). */
ppcc_status cli_llama_option(const char *command, llama_spec *s, const char *name, const char *value, bool *handled);
/* Validates the spec; a one-line error naming the source. */
ppcc_status cli_llama_finish(const char *command, const char *source, llama_spec *s, ppcc_diag *d);

int cli_cmd_import(int argc, char **argv);
void cli_help_import(FILE *out);
int cli_cmd_generate(int argc, char **argv);
void cli_help_generate(FILE *out);

#endif
