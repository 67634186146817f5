/* Helpers shared by the MLIR emitter tests (test_emit_*.c, which link
 * ppcc_emit); header-only so the other tests need not link the emitter. */
#ifndef PPCC_EMIT_SUPPORT_H
#define PPCC_EMIT_SUPPORT_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "ppcc/emit.h"
#include "test_support.h"

/* Emits into memory; returns the text (caller frees) or NULL on error, in
 * which case nothing may have been written. */
static inline char *t_emit(const ppcc_graph *g, ppcc_emit_kind kind, ppcc_status *st, ppcc_diag *d) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ppcc_diag_init(d, "test.json", NULL);
  *st = ppcc_emit(g, kind, f, d);
  fclose(f);
  if (*st == PPCC_OK) return text;
  ck_assert_msg(len == 0, "an error left %zu bytes of output", len);
  free(text);
  return NULL;
}

/* mlir-opt-19 OPTIONS accepts the text (e.g. "--irdl-file=..." or ""). */
static inline void t_expect_mlir_opt_verifies(const char *text, const char *options) {
  char path[] = "/tmp/ppcc_mlir_XXXXXX";
  int fd = mkstemp(path);
  ck_assert(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "mlir-opt-19 %s %s > /dev/null", options, path);
  int rc = system(cmd);
  unlink(path);
  ck_assert_msg(rc == 0, "mlir-opt-19 rejects the module:\n%s", text);
}

#endif
