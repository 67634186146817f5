/* Outputs are rendered to memory first and written only when every pass
 * and renderer succeeded, each through a temporary file renamed on commit:
 * a failed run leaves no output file behind and no half-written one. */
#include <errno.h>
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
