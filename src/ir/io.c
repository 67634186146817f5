/* Atomic output files and bounded whole-file reads (include/ppcc/io.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "ppcc/io.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <limits.h>
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

/* Bytes of the target's name kept in its temporary's name: the name may
 * be up to NAME_MAX itself, and the temporary must fit too. */
#define TEMP_BASE_MAX 96

/* "dir/name" -> "dir/.name.XXXXXX": same directory, so rename is atomic. */
static char *temp_path_for(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  const char *base = path + dir_len;
  size_t base_len = strlen(base) < TEMP_BASE_MAX ? strlen(base) : TEMP_BASE_MAX;
  size_t n = dir_len + 1 + base_len + 8 + 1;
  char *tmp = malloc(n);
  if (tmp) snprintf(tmp, n, "%.*s.%.*s.XXXXXX", (int)dir_len, path, (int)base_len, base);
  return tmp;
}

/* mkstemp creates 0600; give the result the mode a plain fopen would. */
static mode_t default_file_mode(void) {
  mode_t mask = umask(022);
  umask(mask);
  return 0666 & ~mask;
}

/* ---------------- temporaries and signals ----------------
 * The temporaries not yet renamed or removed form a list the signal
 * handler unlinks before the process dies. The list only changes inside a
 * "section"; a signal that lands in one (on any thread) is held back and
 * acted on when the section ends, so the handler never sees a list being
 * changed and a set of renames is never cut in the middle. section_state:
 * 0 idle, 1 in a section, 2 dying (the handler owns the list). */
typedef struct pending_tmp {
  struct pending_tmp *prev, *next;
  const char *path;
} pending_tmp;

static pending_tmp *pending_head;
static atomic_int section_state;
static atomic_int held_signal;

static void unlink_pending(void) {
  for (pending_tmp *p = pending_head; p; p = p->next) unlink(p->path);
}

static void die_of(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
}

static void on_signal(int sig) {
  atomic_store(&held_signal, sig);
  int idle = 0;
  if (atomic_compare_exchange_strong(&section_state, &idle, 2)) {
    unlink_pending();
    die_of(sig);
  }
  /* In a section: its owner dies of held_signal when it ends. Dying:
   * another thread is already removing the temporaries. */
}

static void section_enter(void) {
  for (;;) {
    int idle = 0;
    if (atomic_compare_exchange_weak(&section_state, &idle, 1)) return;
    if (idle == 2)
      for (;;) pause(); /* the handler's thread ends the process */
  }
}

static void section_leave(void) {
  atomic_store(&section_state, 0);
  int sig = atomic_load(&held_signal);
  if (!sig) return;
  int idle = 0;
  if (atomic_compare_exchange_strong(&section_state, &idle, 2)) {
    unlink_pending();
    die_of(sig);
  }
  for (;;) pause();
}

/* Both inside a section. */
static pending_tmp *pending_add(const char *path) {
  pending_tmp *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->path = path;
  p->next = pending_head;
  if (pending_head) pending_head->prev = p;
  pending_head = p;
  return p;
}

static void pending_remove(pending_tmp *p) {
  if (!p) return;
  if (p->prev) p->prev->next = p->next;
  else pending_head = p->next;
  if (p->next) p->next->prev = p->prev;
  free(p);
}

void ppcc_outfile_cleanup_on_signals(void) {
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGALRM};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) sigaction(signals[i], &sa, NULL);
  signal(SIGXFSZ, SIG_IGN); /* past ulimit -f, write() fails with EFBIG instead */
}

/* ---------------- output files ---------------- */

static void outfile_clear(ppcc_outfile *f) {
  free(f->path);
  free(f->tmp_path);
  free(f->dest);
  free(f->mem);
  memset(f, 0, sizeof *f);
}

/* Removes the temporary (if any) and forgets it. */
static void drop_temporary(ppcc_outfile *f) {
  if (!f->tmp_path) return;
  section_enter();
  unlink(f->tmp_path);
  pending_remove(f->pending);
  f->pending = NULL;
  section_leave();
}

static bool is_stdout(const ppcc_outfile *f) { return f->path && !f->tmp_path && !f->in_place; }

static ppcc_status open_error(ppcc_outfile *f, ppcc_diag *d, const char *fmt, const char *path, int err) {
  outfile_clear(f);
  return ppcc_error(d, fmt, path, strerror(err));
}

/* Decides what commit replaces: f->dest (a regular file, or where one is
 * created), or an in-place target. */
static ppcc_status resolve_target(ppcc_outfile *f, const char *path, ppcc_diag *d) {
  struct stat st, lst;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return open_error(f, d, "cannot write '%s': %s", path, EISDIR);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      f->in_place = true;
      return PPCC_OK;
    }
    if (!S_ISREG(st.st_mode)) {
      outfile_clear(f);
      return ppcc_error(d, "cannot write '%s': not a regular file, character device or FIFO", path);
    }
    f->mode_set = true;
    f->mode = st.st_mode & 0777;
    bool link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    f->dest = link ? realpath(path, NULL) : dup_string(path);
    if (!f->dest) return open_error(f, d, "cannot resolve '%s': %s", path, errno);
    return PPCC_OK;
  }
  int err = errno;
  if (err == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    outfile_clear(f);
    return ppcc_error(d, "cannot write '%s': it is a symbolic link to a missing file (not followed)", path);
  }
  if (err != ENOENT) return open_error(f, d, "cannot create '%s': %s", path, err);
  f->dest = dup_string(path);
  if (!f->dest) return open_error(f, d, "cannot create '%s': %s", path, ENOMEM);
  return PPCC_OK;
}

ppcc_status ppcc_outfile_open(ppcc_outfile *f, const char *path, ppcc_diag *d) {
  memset(f, 0, sizeof *f);
  f->path = dup_string(path);
  if (!f->path) return ppcc_error(d, "out of memory");
  if (strcmp(path, "-") == 0) {
    f->fp = stdout;
    return PPCC_OK;
  }
  if (path[0] == 0 || path[strlen(path) - 1] == '/') {
    outfile_clear(f);
    return ppcc_error(d, "cannot write '%s': not a file name", path);
  }
  ppcc_status st = resolve_target(f, path, d);
  if (st) return st;
  if (f->in_place) { /* buffered until commit: a failed run writes nothing there */
    f->fp = open_memstream(&f->mem, &f->mem_len);
    return f->fp ? PPCC_OK : open_error(f, d, "cannot write '%s': %s", path, errno);
  }
  f->tmp_path = temp_path_for(f->dest);
  if (!f->tmp_path) return open_error(f, d, "cannot create '%s': %s", path, ENOMEM);
  section_enter(); /* the temporary exists only once the handler knows it */
  int fd = mkstemp(f->tmp_path);
  int err = errno;
  if (fd >= 0) {
    f->pending = pending_add(f->tmp_path);
    if (!f->pending) {
      unlink(f->tmp_path);
      close(fd);
      fd = -1;
      err = ENOMEM;
    }
  }
  section_leave();
  if (fd < 0) return open_error(f, d, "cannot create '%s': %s", path, err);
  (void)fchmod(fd, f->mode_set ? (mode_t)f->mode : default_file_mode()); /* best effort */
  f->fp = fdopen(fd, "w");
  if (!f->fp) {
    err = errno;
    close(fd);
    drop_temporary(f);
    return open_error(f, d, "cannot create '%s': %s", path, err);
  }
  return PPCC_OK;
}

static ppcc_status write_error(const ppcc_outfile *f, int err, ppcc_diag *d) {
  if (f->tmp_path == NULL && !f->in_place)
    return ppcc_error(d, "cannot write to standard output: %s", strerror(err ? err : EIO));
  return ppcc_error(d, "cannot write '%s': %s", f->path, strerror(err ? err : EIO));
}

ppcc_status ppcc_outfile_close(ppcc_outfile *f, ppcc_diag *d) {
  if (!f->fp) return PPCC_OK;
  errno = 0;
  bool failed = fflush(f->fp) != 0 || ferror(f->fp);
  int err = errno;
  if (is_stdout(f)) {
    f->fp = NULL;
    return failed ? write_error(f, err, d) : PPCC_OK;
  }
  errno = 0;
  if (fclose(f->fp) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  f->fp = NULL;
  return failed ? write_error(f, err, d) : PPCC_OK;
}

/* Writes the buffered data into a device or FIFO (opened only now, so a
 * FIFO's reader sees nothing from a failed run). */
static ppcc_status write_in_place(ppcc_outfile *f, ppcc_diag *d) {
  int fd = open(f->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return write_error(f, errno, d);
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    close(fd);
    return ppcc_error(d, "cannot write '%s': it changed into a regular file or directory", f->path);
  }
  size_t done = 0;
  while (done < f->mem_len) {
    ssize_t n = write(fd, f->mem + done, f->mem_len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      return write_error(f, err, d);
    }
    done += (size_t)n;
  }
  if (close(fd) != 0 && errno != EINTR) return write_error(f, errno, d);
  return PPCC_OK;
}

ppcc_status ppcc_outfile_commit_all(ppcc_outfile *files, int n, ppcc_diag *d) {
  ppcc_status st = PPCC_OK;
  for (int i = 0; i < n && !st; i++) {
    if (!files[i].path) st = ppcc_error_status(d, PPCC_ERR_INTERNAL, "commit of an output file that is not open");
    else st = ppcc_outfile_close(&files[i], d);
  }
  for (int i = 0; i < n && !st; i++)
    if (files[i].in_place) st = write_in_place(&files[i], d);
  if (!st) {
    section_enter(); /* the renames: all of them before any signal acts */
    for (int i = 0; i < n; i++) {
      ppcc_outfile *f = &files[i];
      if (!f->tmp_path) continue;
      if (!st && rename(f->tmp_path, f->dest) != 0) st = write_error(f, errno, d);
      if (st) unlink(f->tmp_path);
      pending_remove(f->pending);
      f->pending = NULL;
      free(f->tmp_path);
      f->tmp_path = NULL;
    }
    section_leave();
  }
  for (int i = 0; i < n; i++) {
    if (st) ppcc_outfile_abort(&files[i]);
    else outfile_clear(&files[i]);
  }
  return st;
}

ppcc_status ppcc_outfile_commit(ppcc_outfile *f, ppcc_diag *d) { return ppcc_outfile_commit_all(f, 1, d); }

void ppcc_outfile_abort(ppcc_outfile *f) {
  if (f->fp && is_stdout(f)) fflush(f->fp); /* stdout: nothing to take back */
  else if (f->fp) fclose(f->fp);
  f->fp = NULL;
  drop_temporary(f);
  outfile_clear(f);
}

/* Reads up to max + 1 bytes so an oversized pipe is detected too. */
static char *read_all(int fd, size_t max, size_t *len, int *err) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) {
    *err = ENOMEM;
    return NULL;
  }
  while (n <= max) {
    if (n == cap) {
      size_t new_cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
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

char *ppcc_read_file_max(const char *path, size_t max, size_t *len, ppcc_diag *d) {
  /* O_NONBLOCK: a FIFO or device given as any file argument is refused
   * below instead of blocking in open() or read(). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    ppcc_error(d, "%s: cannot read: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    ppcc_error(d, "%s: cannot read: %s", path, strerror(err));
    return NULL;
  }
  {
    if (S_ISDIR(st.st_mode)) {
      close(fd);
      ppcc_error(d, "%s: cannot read: %s", path, strerror(EISDIR));
      return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
      close(fd);
      ppcc_error(d, "%s: not a regular file", path);
      return NULL;
    }
    if ((uint64_t)st.st_size > max) {
      close(fd);
      ppcc_error(d, "%s: cannot read: the file is larger than %zu MiB", path, max >> 20);
      return NULL;
    }
  }
  int err = 0;
  size_t n = 0;
  char *buf = read_all(fd, max, &n, &err);
  close(fd);
  if (!buf) {
    ppcc_error(d, "%s: cannot read: %s", path, strerror(err));
    return NULL;
  }
  if (n > max) {
    free(buf);
    ppcc_error(d, "%s: cannot read: the file is larger than %zu MiB", path, max >> 20);
    return NULL;
  }
  if (len) *len = n;
  return buf;
}

char *ppcc_read_file(const char *path, size_t *len, ppcc_diag *d) { return ppcc_read_file_max(path, MAX_READ_BYTES, len, d); }

char *ppcc_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/%s", dir, name);
  return s;
}

bool ppcc_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
