/* libFuzzer target: the calibration file reader (ppcc_calibration_parse,
 * src/plan/predict.c) and its writer. A refusal must come with a one-line
 * diagnostic; whatever the reader accepts, the writer must write a file
 * the reader accepts again, and that file must be a fixed point (read and
 * written again, the same bytes): `ppcc calibrate` output is never
 * refused by `--calibration`. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ppcc/diag.h"
#include "ppcc/io.h"
#include "ppcc/predict.h"

static char dir[64];

static void remove_dir(void) {
  char p[96];
  snprintf(p, sizeof p, "%s/a.json", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/b.json", dir);
  unlink(p);
  rmdir(dir);
}

/* The file the writer just wrote (ppcc_read_file: the readers' own). */
static char *slurp(const char *path, size_t *len) {
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  char *text = ppcc_read_file(path, len, &d);
  if (!text) abort();
  return text;
}

static void write_or_die(const char *path, const ppcc_calibration *c) {
  ppcc_diag d;
  ppcc_diag_init(&d, path, NULL);
  if (ppcc_calibration_write(path, c, &d) != PPCC_OK) {
    fprintf(stderr, "fuzz: writing an accepted calibration failed: %s\n", d.first);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/ppcc_fuzz_calib.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) abort();
    atexit(remove_dir);
  }
  ppcc_diag d;
  ppcc_diag_init(&d, "calib.json", NULL);
  static ppcc_calibration c, again;
  if (ppcc_calibration_parse("calib.json", (const char *)data, size, &c, &d) != PPCC_OK) {
    if (d.errors == 0 || strchr(d.first, '\n')) {
      fprintf(stderr, "fuzz: calibration refused without a one-line diagnostic: '%s'\n", d.first);
      abort();
    }
    return 0;
  }
  char a[96], b[96];
  snprintf(a, sizeof a, "%s/a.json", dir);
  snprintf(b, sizeof b, "%s/b.json", dir);
  write_or_die(a, &c);
  size_t la = 0, lb = 0;
  char *ta = slurp(a, &la);
  ppcc_diag_init(&d, a, NULL);
  if (ppcc_calibration_parse(a, ta, la, &again, &d) != PPCC_OK) {
    fprintf(stderr, "fuzz: the writer's own file is refused: %s\n--- file:\n%s\n", d.first, ta);
    abort();
  }
  write_or_die(b, &again);
  char *tb = slurp(b, &lb);
  if (la != lb || memcmp(ta, tb, la) != 0) {
    fprintf(stderr, "fuzz: written twice, the calibration changed:\n--- first:\n%s\n--- second:\n%s\n", ta, tb);
    abort();
  }
  free(ta);
  free(tb);
  return 0;
}
