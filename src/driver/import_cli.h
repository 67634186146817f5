/* Shared by `ppcc import` and `ppcc generate`. */
#ifndef PPCC_DRIVER_IMPORT_CLI_H
#define PPCC_DRIVER_IMPORT_CLI_H
#include "../import/import.h"
#include "driver.h"

/* Rows of --tp, --pp and --dtype (fields in a llama_spec). */
extern const cli_option cli_llama_options[];
/* Validates the spec; a one-line error naming the source. */
ppcc_status cli_llama_finish(const char *command, const char *source, llama_spec *s, ppcc_diag *d);

int cli_cmd_import(int argc, char **argv);
void cli_help_import(FILE *out);
int cli_cmd_generate(int argc, char **argv);
void cli_help_generate(FILE *out);

#endif
