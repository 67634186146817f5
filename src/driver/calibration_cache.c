/* The calibration `ppcc run --check-plan` uses when none is given: out of
 * the box its predicted stage times come from this machine, not from
 * constants. Measured once per CPU model on first use (what `ppcc
 * calibrate` measures, about a minute) and cached in
 * $XDG_CACHE_HOME/ppcc (else ~/.cache/ppcc) as
 * calibration-vN-HASH.json (N the file format, PPCC_CALIBRATION_VERSION),
 * HASH of the CPU model and core count, written through the atomic-output
 * module. A cache that does not read, or that another CPU, another ppcc
 * version or an older file format wrote, is refused with a one-line
 * warning and measured again. PPCC_CALIBRATION_CACHE=0 (or
 * --calibration=none) skips it: times are then shown unchecked. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "driver.h"
#include "ppcc/test_inject.h"
#ifndef PPCC_VERSION
#define PPCC_VERSION "unknown"
#endif

void cli_cpu_model(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    const char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !colon) continue;
    const char *s = colon + 1;
    while (*s == ' ' || *s == '\t') s++;
    size_t k = 0;
    for (; *s && *s != '\n' && k + 1 < n; s++) out[k++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
    out[k] = 0;
    break;
  }
  if (f) fclose(f);
  if (!out[0]) snprintf(out, n, "unknown");
}

/* Creates dir and its parents (0700: a user's cache); true when it exists. */
static bool make_dirs(char *dir) {
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    bool ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
    *p = '/';
    if (!ok) return false;
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

/* The cache's folder: $XDG_CACHE_HOME/ppcc if that is an absolute path
 * (XDG Base Directory), else $HOME/.cache/ppcc; false when neither is set. */
static bool cache_dir(char *out, size_t n) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int len;
  if (xdg && xdg[0] == '/') len = snprintf(out, n, "%s/ppcc", xdg);
  else if (home && home[0] == '/') len = snprintf(out, n, "%s/.cache/ppcc", home);
  else return false;
  return len > 0 && (size_t)len < n;
}

static uint64_t fnv1a(const char *s, uint64_t h) {
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

/* Why the cached calibration c does not fit this machine and ppcc, NULL
 * when it does. */
static const char *mismatch(const ppcc_calibration *c, const char *cpu) {
  if (c->version != PPCC_CALIBRATION_VERSION) return "an older calibration format";
  if (strcmp(c->ppcc_version, PPCC_VERSION) != 0) return "another ppcc version wrote it";
  if (strcmp(c->cpu, cpu) != 0) return "it was measured on another CPU";
  return NULL;
}

/* Measures (or, in tests, reads the file PPCC_TEST_INJECT=calibration:FILE
 * names, so that no test depends on timing) and labels the result. */
static ppcc_status measure(ppcc_calibration *c, const char *cpu, ppcc_diag *d) {
  char injected[1024];
  if (!ppcc_test_inject("calibration", injected, sizeof injected)) return cli_calibrate_measure(c, 0, NULL, d);
  ppcc_status st = ppcc_calibration_read(injected, c, d);
  snprintf(c->cpu, sizeof c->cpu, "%s", cpu);
  snprintf(c->ppcc_version, sizeof c->ppcc_version, "%s", PPCC_VERSION);
  return st;
}

ppcc_status cli_calibration_cached(ppcc_calibration *c, ppcc_diag *d) {
  ppcc_diag say; /* notes and warnings name the command, not the model */
  ppcc_diag_init(&say, "ppcc run", d->sink);
  const char *off = getenv("PPCC_CALIBRATION_CACHE");
  if (off && strcmp(off, "0") == 0) return PPCC_OK;
  char cpu[sizeof c->cpu], dir[4096], path[4200], key[32];
  cli_cpu_model(cpu, sizeof cpu);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  snprintf(key, sizeof key, "%ld", cores);
  bool have_dir = cache_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/calibration-v%d-%016llx.json", have_dir ? dir : ".", PPCC_CALIBRATION_VERSION,
           (unsigned long long)fnv1a(key, fnv1a(cpu, 1469598103934665603ull)));
  struct stat sb;
  if (have_dir && stat(path, &sb) == 0) {
    ppcc_diag quiet;
    ppcc_diag_init(&quiet, path, NULL);
    ppcc_status rst = ppcc_calibration_read(path, c, &quiet);
    const char *why = rst ? quiet.first : mismatch(c, cpu);
    if (!why) return PPCC_OK;
    ppcc_warning(&say, "calibration cache %s refused (%s): measuring this machine again", path, why);
  }
  ppcc_note(&say, "no calibration for this CPU yet: measuring this machine once (about a minute) for the time "
               "prediction%s%s (PPCC_CALIBRATION_CACHE=0 or --calibration=none skips it)",
            have_dir ? ", cached in " : "", have_dir ? path : "");
  ppcc_status st = measure(c, cpu, d);
  if (st) {
    ppcc_calibration_defaults(c);
    return st;
  }
  if (!have_dir) {
    ppcc_warning(&say, "neither $XDG_CACHE_HOME nor $HOME is set: the calibration is kept for this run only");
    return PPCC_OK;
  }
  ppcc_diag wd;
  ppcc_diag_init(&wd, path, NULL);
  if (!make_dirs(dir) || ppcc_calibration_write(path, c, &wd))
    ppcc_warning(&say, "cannot write the calibration cache %s (%s): it is kept for this run only", path,
                 wd.errors ? wd.first : strerror(errno));
  return PPCC_OK;
}
