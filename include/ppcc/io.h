#ifndef PPCC_IO_H
#define PPCC_IO_H
#include <stdbool.h>
#include <stdio.h>
#include "ppcc/diag.h"

/* Atomic output. A regular target (or a symbolic link's regular target:
 * links are followed, never replaced; a link to nothing is refused) is
 * written to a temporary file in its directory and renamed over it on
 * commit. A character device or FIFO (-o /dev/null) is written in place at
 * commit; other non-regular targets are refused. Abort (or a crash)
 * leaves the target untouched and no partial file. "-" means stdout. */
typedef struct ppcc_outfile {
  FILE *fp;        /* write here until close / commit */
  char *path;      /* the target as given */
  char *tmp_path;  /* NULL for stdout and in-place targets */
  char *dest;      /* what commit replaces: path, or a symlink's target */
  char *mem;       /* in-place targets: the data, written at commit */
  size_t mem_len;
  bool in_place;
  bool mode_set;   /* dest existed: the new file keeps its mode */
  unsigned mode;
  void *pending;   /* private: the signal handler's record of tmp_path */
} ppcc_outfile;

ppcc_status ppcc_outfile_open(ppcc_outfile *f, const char *path, ppcc_diag *d);
/* Done writing: flushes and closes the stream (no descriptor stays open,
 * so a run may write any number of outputs), reporting a write error with
 * its reason. The target is untouched until commit. */
ppcc_status ppcc_outfile_close(ppcc_outfile *f, ppcc_diag *d);
ppcc_status ppcc_outfile_commit(ppcc_outfile *f, ppcc_diag *d);
/* Closes and commits a set of outputs, all or none: any write error
 * aborts every file; the renames run with SIGINT/SIGTERM/... held back
 * until the whole set is in place, so an interrupted run leaves either
 * the old files or the new ones. In-place targets are written first. */
ppcc_status ppcc_outfile_commit_all(ppcc_outfile *files, int n, ppcc_diag *d);
void ppcc_outfile_abort(ppcc_outfile *f);
/* Installs SIGINT/SIGTERM/SIGHUP/SIGPIPE/SIGQUIT/SIGALRM handlers that
 * remove every open temporary (any number) before the process dies of the
 * signal, and ignores SIGXFSZ so a file-size limit (ulimit -f) is a write
 * error (EFBIG) reported like any other (the driver calls it). */
void ppcc_outfile_cleanup_on_signals(void);

/* Reads a whole file; NULL with a diagnostic on failure. Caller frees. */
char *ppcc_read_file(const char *path, size_t *len, ppcc_diag *d);
/* The same with its own size limit (ppcc_read_file's is 256 MiB). */
char *ppcc_read_file_max(const char *path, size_t max, size_t *len, ppcc_diag *d);

/* "DIR/NAME", malloc'ed (NULL when out of memory). */
char *ppcc_path_join(const char *dir, const char *name);
/* True if path names a directory (following links). */
bool ppcc_is_dir(const char *path);

#endif
