/* Atomic output files and bounded whole-file reads (include/ppcc/io.h). */
#include "ppcc/io.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_READ_BYTES ((size_t)256 << 20)

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* "dir/name" -> "dir/.name.XXXXXX": same directory, so rename is atomic. */
static char *temp_path_for(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = path + dir_len;
  size_t n = dir_len + 1 + strlen(base) + 8 + 1;
  char *tmp = malloc(n);
  if (tmp) snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
  return tmp;
}

/* mkstemp creates 0600; give the result the mode a plain fopen would. */
static mode_t default_file_mode(void) {
  mode_t mask = umask(022);
  umask(mask);
  return 0666 & ~mask;
}

/* Temporaries not yet renamed or removed, for the signal handler: a
 * fixed table of paths, so the handler only reads memory and calls the
 * async-signal-safe unlink. */
#define MAX_PENDING 64
static char *volatile pending[MAX_PENDING];

static void pending_add(char *tmp) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (!pending[i]) {
      pending[i] = tmp;
      return;
    }
}

static void pending_remove(const char *tmp) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (pending[i] == tmp) pending[i] = NULL;
}

static void remove_pending_and_reraise(int sig) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (pending[i]) unlink(pending[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

void ppcc_outfile_cleanup_on_signals(void) {
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = remove_pending_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &sa, NULL);
}

static void outfile_clear(ppcc_outfile *f) {
  if (f->tmp_path) pending_remove(f->tmp_path);
  free(f->path);
  free(f->tmp_path);
  f->fp = NULL;
  f->path = NULL;
  f->tmp_path = NULL;
}

ppcc_status ppcc_outfile_open(ppcc_outfile *f, const char *path, ppcc_diag *d) {
  memset(f, 0, sizeof *f);
  f->path = dup_string(path);
  if (!f->path) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  if (strcmp(path, "-") == 0) {
    f->fp = stdout;
    return PPCC_OK;
  }
  if (path[0] == 0 || path[strlen(path) - 1] == '/') {
    outfile_clear(f);
    return ppcc_error(d, "cannot write '%s': not a file name", path);
  }
  f->tmp_path = temp_path_for(path);
  if (!f->tmp_path) {
    outfile_clear(f);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "out of memory");
  }
  int fd = mkstemp(f->tmp_path);
  if (fd < 0) {
    int err = errno;
    outfile_clear(f);
    return ppcc_error(d, "cannot create '%s': %s", path, strerror(err));
  }
  pending_add(f->tmp_path);
  (void)fchmod(fd, default_file_mode()); /* best effort: the data is what matters */
  f->fp = fdopen(fd, "w");
  if (!f->fp) {
    int err = errno;
    close(fd);
    unlink(f->tmp_path);
    outfile_clear(f);
    return ppcc_error(d, "cannot create '%s': %s", path, strerror(err));
  }
  return PPCC_OK;
}

ppcc_status ppcc_outfile_commit(ppcc_outfile *f, ppcc_diag *d) {
  if (!f->fp) {
    outfile_clear(f);
    return ppcc_error_status(d, PPCC_ERR_INTERNAL, "commit of an output file that is not open");
  }
  if (!f->tmp_path) { /* stdout */
    bool ok = fflush(f->fp) == 0 && !ferror(f->fp);
    outfile_clear(f);
    return ok ? PPCC_OK : ppcc_error(d, "cannot write to standard output: %s", strerror(errno));
  }
  bool write_failed = fflush(f->fp) != 0 || ferror(f->fp);
  int err = errno;
  if (fclose(f->fp) != 0 && !write_failed) {
    write_failed = true;
    err = errno;
  }
  f->fp = NULL;
  if (!write_failed && rename(f->tmp_path, f->path) == 0) {
    outfile_clear(f);
    return PPCC_OK;
  }
  if (!write_failed) err = errno;
  unlink(f->tmp_path);
  ppcc_status st = ppcc_error(d, "cannot write '%s': %s", f->path, strerror(err));
  outfile_clear(f);
  return st;
}

void ppcc_outfile_abort(ppcc_outfile *f) {
  if (f->tmp_path) {
    if (f->fp) fclose(f->fp);
    unlink(f->tmp_path);
  } else if (f->fp) {
    fflush(f->fp); /* stdout: nothing to take back */
  }
  outfile_clear(f);
}

/* Reads up to MAX_READ_BYTES + 1 so an oversized pipe is detected too. */
static char *read_all(int fd, size_t *len, int *err) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) {
    *err = ENOMEM;
    return NULL;
  }
  while (n <= MAX_READ_BYTES) {
    if (n == cap) {
      size_t new_cap = cap * 2 > MAX_READ_BYTES + 1 ? MAX_READ_BYTES + 1 : cap * 2;
      char *p = realloc(buf, new_cap + 1);
      if (!p) {
        free(buf);
        *err = ENOMEM;
        return NULL;
      }
      buf = p;
      cap = new_cap;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *err = errno;
      free(buf);
      return NULL;
    }
    if (got == 0) break;
    n += (size_t)got;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

char *ppcc_read_file(const char *path, size_t *len, ppcc_diag *d) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    ppcc_error(d, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      close(fd);
      ppcc_error(d, "cannot read '%s': %s", path, strerror(EISDIR));
      return NULL;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > MAX_READ_BYTES) {
      close(fd);
      ppcc_error(d, "cannot read '%s': the file is larger than 256 MiB", path);
      return NULL;
    }
  }
  int err = 0;
  size_t n = 0;
  char *buf = read_all(fd, &n, &err);
  close(fd);
  if (!buf) {
    ppcc_error(d, "cannot read '%s': %s", path, strerror(err));
    return NULL;
  }
  if (n > MAX_READ_BYTES) {
    free(buf);
    ppcc_error(d, "cannot read '%s': the file is larger than 256 MiB", path);
    return NULL;
  }
  if (len) *len = n;
  return buf;
}
