#define _DEFAULT_SOURCE 1 /* realpath */
/* Outputs are rendered to memory first and written only when every pass
 * and renderer succeeded, each through a temporary file renamed on commit:
 * a failed run leaves no output file behind and no half-written one. */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "ppcc/io.h"

ppcc_status cli_render(cli_buffer *buf, const ppcc_graph *g, cli_render_fn render,
                       const void *arg, ppcc_diag *d) {
  buf->data = NULL;
  buf->len = 0;
  FILE *mem = open_memstream(&buf->data, &buf->len);
  if (!mem) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  ppcc_status st = render(g, mem, d, arg);
  if (fclose(mem) != 0 && st == PPCC_OK)
    st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory while rendering output");
  if (st != PPCC_OK) cli_buffer_free(buf);
  return st;
}

void cli_buffer_free(cli_buffer *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->len = 0;
}

/* A write error (full disk, file size limit) is the environment's, not a
 * bug: exit 1 with its reason. */
static ppcc_status write_buffer(ppcc_outfile *f, const cli_buffer *buf, ppcc_diag *d) {
  if (buf->len && fwrite(buf->data, 1, buf->len, f->fp) != buf->len)
    return ppcc_error(d, "cannot write '%s': %s", f->path, strerror(errno ? errno : EIO));
  return ppcc_outfile_close(f, d);
}

ppcc_status cli_write_outputs(const char *const *paths, const cli_buffer *bufs, int n,
                              ppcc_diag *d) {
  ppcc_outfile *files = calloc((size_t)(n > 0 ? n : 1), sizeof *files);
  if (!files) return ppcc_error(d, "out of memory");
  ppcc_status st = PPCC_OK;
  int opened = 0;
  for (int i = 0; i < n && st == PPCC_OK; i++) {
    st = ppcc_outfile_open(&files[i], paths[i], d);
    if (st == PPCC_OK) opened++;
    if (st == PPCC_OK) st = write_buffer(&files[i], &bufs[i], d);
  }
  /* Commit only once every file was written; otherwise drop them all. */
  if (st == PPCC_OK) st = ppcc_outfile_commit_all(files, opened, d);
  else
    for (int i = 0; i < opened; i++) ppcc_outfile_abort(&files[i]);
  free(files);
  return st;
}

/* path with its folder resolved (the file itself may not exist yet). */
static bool resolved(const char *path, char *out, size_t size) {
  const char *slash = strrchr(path, '/');
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path == 0 ? 1 : slash - path) : 1, slash ? path : ".");
  char *real = realpath(dir, NULL);
  if (!real) return false;
  snprintf(out, size, "%s/%s", real, slash ? slash + 1 : path);
  free(real);
  return true;
}

static bool same_file(const char *a, const char *b) {
  if (strcmp(a, "-") == 0 || strcmp(b, "-") == 0) return false;
  struct stat sa, sb;
  bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea || eb) return false;
  char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
  if (!resolved(a, ra, sizeof ra) || !resolved(b, rb, sizeof rb)) return strcmp(a, b) == 0;
  return strcmp(ra, rb) == 0;
}

ppcc_status cli_check_distinct_files(const cli_file_arg *files, int n, ppcc_diag *d) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (files[i].path && files[j].path && (files[i].output || files[j].output) &&
          same_file(files[i].path, files[j].path))
        return ppcc_error(d, "%s and %s name the same file '%s'%s", files[i].label, files[j].label, files[j].path,
                          files[i].output && files[j].output ? "" : ": an output would overwrite an input");
  return PPCC_OK;
}
