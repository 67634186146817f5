#ifndef PPCC_IO_H
#define PPCC_IO_H
#include <stdio.h>
#include "ppcc/diag.h"

/* Atomic output: writes go to a temporary file in the target's directory,
 * renamed over the target only on commit. Abort (or a crash) leaves the
 * target untouched and no partial file. "-" means stdout. */
typedef struct ppcc_outfile {
  FILE *fp;
  char *path;
  char *tmp_path; /* NULL for stdout */
} ppcc_outfile;

ppcc_status ppcc_outfile_open(ppcc_outfile *f, const char *path, ppcc_diag *d);
ppcc_status ppcc_outfile_commit(ppcc_outfile *f, ppcc_diag *d);
void ppcc_outfile_abort(ppcc_outfile *f);
/* Installs SIGINT/SIGTERM/SIGHUP/SIGPIPE handlers that remove every open
 * temporary before the process dies of the signal (the driver calls it). */
void ppcc_outfile_cleanup_on_signals(void);

/* Reads a whole file; NULL with a diagnostic on failure. Caller frees. */
char *ppcc_read_file(const char *path, size_t *len, ppcc_diag *d);

#endif
