#include "test_support.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ppcc/frontend.h"
#include "ppcc/passes.h"
#include "../../tools/pipeline_model.h"

ppcc_graph *t_compile(const char *json, ppcc_diag *d) {
  ppcc_diag_init(d, "test.json", NULL);
  ppcc_graph *g = ppcc_load_model_string(json, strlen(json), d);
  if (!g) return NULL;
  if (ppcc_run_passes(g, NULL, NULL, d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

ppcc_graph *t_pipeline_graph(long tp, long pp, long batch) {
  pipeline_config c = pipeline_defaults;
  c.blocks = pp, c.tp = tp, c.pp = pp, c.batch = batch;
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  ck_assert_ptr_nonnull(f);
  pipeline_write_model(f, &c);
  fclose(f);
  ppcc_diag d;
  ppcc_graph *g = t_compile(json, &d);
  ck_assert_msg(g != NULL, "%s", d.first);
  free(json);
  return g;
}

ppcc_graph *t_model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs,
                    ppcc_diag *d) {
  size_t n = strlen(params) + strlen(inputs) + strlen(ops) + strlen(outputs) + 256;
  char *json = malloc(n);
  ck_assert_ptr_nonnull(json);
  snprintf(json, n, "{'ppcc': 1, 'name': 't', 'devices': %d, 'params': [%s], 'inputs': [%s], 'ops': [%s], 'outputs': [%s]}",
           devices, params, inputs, ops, outputs);
  for (char *p = json; *p; p++)
    if (*p == '\'') *p = '"';
  ppcc_graph *g = t_compile(json, d);
  free(json);
  return g;
}

const char *t_src_path(const char *rel) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", PPCC_SOURCE_DIR, rel);
  return buf;
}

ppcc_graph *t_compile_file(const char *rel_path, ppcc_diag *d) {
  const char *path = t_src_path(rel_path);
  ppcc_diag_init(d, path, NULL);
  ppcc_graph *g = ppcc_load_model_file(path, d);
  if (!g) return NULL;
  if (ppcc_run_passes(g, NULL, NULL, d) != PPCC_OK) {
    ppcc_graph_free(g);
    return NULL;
  }
  return g;
}

const ppcc_value *t_value(const ppcc_graph *g, const char *name) {
  int i = ppcc_find_value(g, name);
  ck_assert_msg(i >= 0, "value '%s' not found", name);
  return &g->values[i];
}

int t_run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

TCase *t_add_tcase(Suite *s, const char *name, double timeout) {
  TCase *tc = tcase_create(name);
  if (timeout > 0) tcase_set_timeout(tc, timeout);
  suite_add_tcase(s, tc);
  return tc;
}

/* ---------------- files and directories ---------------- */

char *t_make_temp_dir(const char *tag) {
  size_t n = strlen(tag) + 32;
  char *path = malloc(n);
  ck_assert_ptr_nonnull(path);
  snprintf(path, n, "/tmp/ppcc_%s.XXXXXX", tag);
  ck_assert_msg(mkdtemp(path) != NULL, "cannot create %s: %s", path, strerror(errno));
  return path;
}

char *t_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  ck_assert_ptr_nonnull(p);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

const char *t_path_in(const char *dir, const char *name) {
  static char bufs[8][4096];
  static int next;
  char *buf = bufs[next++ % 8];
  int n = snprintf(buf, sizeof bufs[0], "%s/%s", dir, name);
  ck_assert_msg(n >= 0 && (size_t)n < sizeof bufs[0], "path too long: %s/%s", dir, name);
  return buf;
}

int t_remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *p = t_path_join(dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      files += t_remove_tree(p);
    } else {
      files++;
      unlink(p);
    }
    free(p);
  }
  closedir(d);
  rmdir(dir);
  return files;
}

int t_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

char *t_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  while ((got = fread(buf + n, 1, cap - 1 - n, f)) > 0) {
    n += got;
    if (n == cap - 1) {
      buf = realloc(buf, cap *= 2);
      ck_assert_ptr_nonnull(buf);
    }
  }
  bool failed = ferror(f) != 0;
  fclose(f);
  if (failed) { /* e.g. a directory */
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

char *t_read_text(const char *path) {
  char *text = t_read_file(path, NULL);
  if (!text) {
    text = strdup("");
    ck_assert_ptr_nonnull(text);
  }
  return text;
}

void t_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

void t_write_text(const char *path, const char *text) { t_write_file(path, text, strlen(text)); }

/* ---------------- running programs ---------------- */

const char *t_tool_path(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s", PPCC_BINARY);
  char *slash = strrchr(path, '/');
  ck_assert_ptr_nonnull(slash);
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", name);
  return path;
}

/* In the child: opens path (or /dev/null) onto fd; false on failure. */
static bool redirect(int fd, const char *path, int flags) {
  int f = path ? open(path, flags, 0644) : open("/dev/null", flags & O_ACCMODE);
  if (f < 0 || dup2(f, fd) < 0) return false;
  if (f != fd) close(f);
  return true;
}

pid_t t_spawn_ppcc(const char *const *argv, const char *cwd, const char *stdout_path, const char *stderr_path) {
  fflush(NULL); /* nothing buffered may be written twice */
  pid_t pid = fork();
  ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    int out_flags = O_WRONLY | O_CREAT | O_TRUNC;
    if (!redirect(0, NULL, O_RDONLY) || !redirect(1, stdout_path, out_flags) ||
        !redirect(2, stderr_path, out_flags) || (cwd && chdir(cwd) != 0))
      _exit(127);
    execv(PPCC_BINARY, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

int t_wait(pid_t pid) {
  int status;
  while (waitpid(pid, &status, 0) < 0) ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
  return status;
}

int t_run_ppcc(const char *const *argv, const char *stderr_path) {
  return t_wait(t_spawn_ppcc(argv, NULL, NULL, stderr_path));
}
