/* Runs the real `ppcc run` on every case of the runtime bad-input corpus
 * (testdata/bad_run/expected.tsv: MODEL<TAB>ARGS<TAB>SUBSTRING) and checks
 * the user-facing contract of the loaders and runtime: exit code 1, exactly
 * one line "MODEL: error: ..." on stderr containing the expected text, which
 * names the offending file, tensor, input, op or option, and no file left in
 * the output directory.
 *
 * Each case runs `ppcc run SRC/MODEL --output-dir TMP/out ARGS` with the
 * source dir as working directory, so the paths in ARGS (and in the
 * diagnostics) are relative to it; a row may give its own --output-dir,
 * which wins. ARGS are split at spaces. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test_support.h"

#define MIN_CORPUS_ROWS 25
#define MAX_ROWS 512
#define MAX_ARGS 32
#define CORPUS_DIR "testdata/bad_run"

typedef struct {
  char model[256];
  char args[1024];
  char want[768];
} manifest_row;

static manifest_row rows[MAX_ROWS];
static int n_rows;
static char manifest_error[512];

/* Reads MODEL<TAB>ARGS<TAB>SUBSTRING lines; '#' and blank lines are comments. */
static void read_manifest(void) {
  const char *path = t_src_path(CORPUS_DIR "/expected.tsv");
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(manifest_error, sizeof manifest_error, "cannot open %s: %s", path, strerror(errno));
    return;
  }
  char line[4096];
  int line_no = 0;
  while (fgets(line, sizeof line, f)) {
    line_no++;
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] == '#' || line[0] == 0) continue;
    char *t1 = strchr(line, '\t');
    char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t1 || !t2 || t1 == line || t2[1] == 0 || strchr(t2 + 1, '\t') || n_rows == MAX_ROWS ||
        strlen(line) >= sizeof rows[0].args) {
      snprintf(manifest_error, sizeof manifest_error, "expected.tsv:%d: expected MODEL<TAB>ARGS<TAB>SUBSTRING",
               line_no);
      break;
    }
    *t1 = *t2 = 0;
    manifest_row *r = &rows[n_rows++];
    snprintf(r->model, sizeof r->model, "%s", line);
    snprintf(r->args, sizeof r->args, "%s", t1 + 1);
    snprintf(r->want, sizeof r->want, "%s", t2 + 1);
  }
  fclose(f);
}

/* Splits a copy of args at spaces into argv[first..]; returns the new count. */
static int split_args(char *copy, char **argv, int first) {
  int n = first;
  for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
    ck_assert_msg(n < MAX_ARGS, "too many arguments in [%s]", copy);
    argv[n++] = tok;
  }
  argv[n] = NULL;
  return n;
}

/* The path an argument names: the argument itself or what follows NAME=. */
static const char *arg_path(const char *arg) {
  const char *eq = strchr(arg, '=');
  return eq && strncmp(arg, "--", 2) != 0 ? eq + 1 : arg;
}

/* Is `file` (a name in CORPUS_DIR) a model of, or an argument of, some row? */
static bool referenced(const char *file) {
  char rel[512];
  snprintf(rel, sizeof rel, CORPUS_DIR "/%s", file);
  for (int i = 0; i < n_rows; i++) {
    if (strcmp(rows[i].model, rel) == 0) return true;
    char copy[1024], *argv[MAX_ARGS + 1];
    snprintf(copy, sizeof copy, "%s", rows[i].args);
    int n = split_args(copy, argv, 0);
    for (int k = 0; k < n; k++)
      if (strcmp(arg_path(argv[k]), rel) == 0) return true;
  }
  return false;
}

START_TEST(test_manifest_is_complete) {
  ck_assert_msg(manifest_error[0] == 0, "%s", manifest_error);
  ck_assert_msg(n_rows >= MIN_CORPUS_ROWS, "only %d cases in " CORPUS_DIR "/expected.tsv (need at least %d)",
                n_rows, MIN_CORPUS_ROWS);
  for (int i = 0; i < n_rows; i++)
    ck_assert_msg(access(t_src_path(rows[i].model), R_OK) == 0, "model %s is listed but missing", rows[i].model);
  /* Every corpus file is used: none can be added and forgotten. */
  DIR *dir = opendir(t_src_path(CORPUS_DIR));
  ck_assert_ptr_nonnull(dir);
  struct dirent *e;
  while ((e = readdir(dir))) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "expected.tsv") == 0) continue;
    ck_assert_msg(referenced(e->d_name), CORPUS_DIR "/%s is neither a model nor an argument of any case",
                  e->d_name);
  }
  closedir(dir);
}
END_TEST

/* Runs `ppcc run SRC/MODEL --output-dir OUT ARGS` from the source dir with
 * stdout to /dev/null and stderr into err_path; returns the wait status. */
static int run_ppcc(const char *model, const char *out, const char *args, const char *err_path) {
  char model_path[4096], copy[1024];
  snprintf(model_path, sizeof model_path, "%s", t_src_path(model));
  snprintf(copy, sizeof copy, "%s", args);
  char *argv[MAX_ARGS + 1] = {(char *)PPCC_BINARY, "run", model_path, "--output-dir", (char *)out};
  split_args(copy, argv, 5);
  return t_wait(t_spawn_ppcc((const char *const *)argv, PPCC_SOURCE_DIR, NULL, err_path));
}

/* The expected text must say what is wrong where: a quoted name ('x',
 * 'w1', an op) or one of the paths the row passes. */
static bool names_offender(const manifest_row *row) {
  if (strchr(row->want, '\'')) return true;
  char copy[1024], *argv[MAX_ARGS + 1];
  snprintf(copy, sizeof copy, "%s", row->args);
  int n = split_args(copy, argv, 0);
  for (int k = 0; k < n; k++)
    if (strchr(arg_path(argv[k]), '/') && strstr(row->want, arg_path(argv[k]))) return true;
  return false;
}

START_TEST(test_bad_run) {
  ck_assert_msg(_i < n_rows, "manifest row %d missing", _i);
  const manifest_row *row = &rows[_i];
  char out[512], err_path[512];
  char *work = t_make_temp_dir("bad_run_out");
  char *err_dir = t_make_temp_dir("bad_run_err");
  snprintf(out, sizeof out, "%s/out", work);
  snprintf(err_path, sizeof err_path, "%s/stderr", err_dir);

  int status = run_ppcc(row->model, out, row->args, err_path);
  char *err = t_read_text(err_path);
  /* Clean up before asserting: a failed check must not litter /tmp. */
  int leftovers = t_remove_tree(work);
  t_remove_tree(err_dir);
  free(work);
  free(err_dir);

  const char *what = row->args;
  ck_assert_msg(names_offender(row), "%s [%s]: expected text \"%s\" names no quoted name nor path of the case",
                row->model, what, row->want);
  ck_assert_msg(WIFEXITED(status), "%s [%s]: ppcc died (signal %d); stderr: %s", row->model, what,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0, err);
  ck_assert_msg(WEXITSTATUS(status) == 1, "%s [%s]: exit code %d, want 1; stderr: %s", row->model, what,
                WEXITSTATUS(status), err);
  size_t len = strlen(err);
  const char *newline = strchr(err, '\n');
  ck_assert_msg(len > 0 && newline == err + len - 1, "%s [%s]: stderr is not exactly one line: [%s]", row->model,
                what, err);
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s: error: ", t_src_path(row->model));
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s [%s]: stderr does not start with \"%s\": [%s]",
                row->model, what, prefix, err);
  ck_assert_msg(strstr(err, row->want) != NULL, "%s [%s]: diagnostic lacks \"%s\": [%s]", row->model, what,
                row->want, err);
  ck_assert_msg(leftovers == 0, "%s [%s]: %d files left in the output directory", row->model, what, leftovers);
  free(err);
}
END_TEST

/* Runs a case expected to succeed; returns the bytes of OUT/NAME (or NULL). */
static char *run_ok(const char *model, const char *args, const char *output, size_t *size) {
  char out[512], err_path[512], file[640];
  char *work = t_make_temp_dir("bad_run_ok");
  snprintf(out, sizeof out, "%s/out", work);
  snprintf(err_path, sizeof err_path, "%s/stderr", work);
  int status = run_ppcc(model, out, args, err_path);
  char *err = t_read_text(err_path);
  snprintf(file, sizeof file, "%s/%s", out, output);
  char *bytes = t_read_file(file, size);
  t_remove_tree(work);
  free(work);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s [%s]: exit status %d; stderr: %s", model, args,
                status, err);
  ck_assert_msg(bytes != NULL, "%s [%s]: %s was not written", model, args, output);
  free(err);
  return bytes;
}

/* The corpus is meaningful only if its models and good files work: each
 * bad case then fails for the one thing it breaks. */
START_TEST(test_good_files_run) {
  const char *tiny = CORPUS_DIR "/tiny.json";
  size_t n1 = 0, n2 = 0;
  char *a = run_ok(tiny, "--weights " CORPUS_DIR "/good.safetensors --input x=" CORPUS_DIR "/x_good.npy", "y.npy",
                   &n1);
  char *b = run_ok(tiny, "--weights " CORPUS_DIR "/good.irpa --input x=" CORPUS_DIR "/x_good.npy", "y.npy", &n2);
  bool same = n1 == n2 && memcmp(a, b, n1) == 0;
  free(a);
  free(b);
  ck_assert_msg(same, "good.safetensors and good.irpa give different outputs");
  for (int i = 0; i < n_rows; i++) {
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) seen = strcmp(rows[j].model, rows[i].model) == 0;
    if (seen) continue;
    char out[512], err_path[512];
    char *work = t_make_temp_dir("bad_run_ok");
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(err_path, sizeof err_path, "%s/stderr", work);
    int status = run_ppcc(rows[i].model, out, "--random-weights 1", err_path);
    char *err = t_read_text(err_path);
    t_remove_tree(work);
    free(work);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s does not run: status %d; stderr: %s",
                  rows[i].model, status, err);
    free(err);
  }
}
END_TEST

/* ---------------- limits and FIFOs (issue 11) ---------------- */

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

/* Starts ppcc (from the source dir, stderr into err_path) under an
 * address-space limit (0: none) and waits at most `seconds`: returns the
 * wait status, or -1 if it had to be killed (a hang). */
static int run_bounded(const char *const *argv, rlim_t as_limit, const char *err_path, int seconds) {
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    struct rlimit r = {as_limit, as_limit};
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_RDWR);
    if (err < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0 ||
        chdir(PPCC_SOURCE_DIR) != 0 || (as_limit && setrlimit(RLIMIT_AS, &r) != 0))
      _exit(127);
    execv(PPCC_BINARY, (char *const *)argv);
    _exit(127);
  }
  for (int tenth = 0; tenth < seconds * 10; tenth++) {
    int status;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  t_wait(pid);
  return -1;
}

/* Under `ulimit -v` 400-700 MB a run finishes (OpenBLAS's workers used to
 * spin on a failing malloc, and exit waited for them forever). */
START_TEST(test_address_space_limit) {
#ifdef ASAN_BUILD
  fprintf(stderr, "test_address_space_limit: skipped (ASan reserves more address space than any limit)\n");
#else
  static const rlim_t limits_mb[] = {400, 550, 700};
  char *work = t_make_temp_dir("bad_run_as");
  char out[512], err_path[512], y[600];
  snprintf(out, sizeof out, "%s/out", work);
  snprintf(err_path, sizeof err_path, "%s/stderr", work);
  snprintf(y, sizeof y, "%s/y.npy", out);
  for (size_t i = 0; i < sizeof limits_mb / sizeof limits_mb[0]; i++) {
    const char *argv[] = {"ppcc", "run", CORPUS_DIR "/tiny.json", "--weights", CORPUS_DIR "/good.safetensors",
                          "--input", "x=" CORPUS_DIR "/x_good.npy", "--output-dir", out, NULL};
    int status = run_bounded(argv, limits_mb[i] << 20, err_path, 90);
    char *err = t_read_text(err_path);
    ck_assert_msg(status != -1, "ulimit -v %d MB: ppcc hung (killed after 90 s); stderr: %s", (int)limits_mb[i], err);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "ulimit -v %d MB: status %d; stderr: %s",
                  (int)limits_mb[i], status, err);
    ck_assert_msg(access(y, R_OK) == 0, "ulimit -v %d MB: no output", (int)limits_mb[i]);
    unlink(y);
    free(err);
  }
  t_remove_tree(work);
  free(work);
#endif
}
END_TEST

/* A FIFO as --input is refused at once (it used to block in open()). */
START_TEST(test_fifo_input) {
  char *work = t_make_temp_dir("bad_run_fifo");
  char fifo[512], err_path[512], arg[600];
  snprintf(fifo, sizeof fifo, "%s/x.npy", work);
  snprintf(err_path, sizeof err_path, "%s/stderr", work);
  snprintf(arg, sizeof arg, "x=%s", fifo);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  const char *argv[] = {"ppcc", "run", CORPUS_DIR "/tiny.json", "--input", arg, NULL};
  int status = run_bounded(argv, 0, err_path, 60);
  char *err = t_read_text(err_path);
  ck_assert_msg(status != -1, "a FIFO as --input blocked ppcc (killed after 60 s)");
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(err, "x.npy: not a regular file"),
                "status %d; stderr: %s", status, err);
  free(err);
  t_remove_tree(work);
  free(work);
}
END_TEST

/* Every other file argument goes through the same reader: a FIFO as
 * model.json, an HF config.json, --devices-spec or --calibration is refused
 * naming it, without blocking (each used to hang forever). */
START_TEST(test_fifo_file_arguments) {
  char *work = t_make_temp_dir("bad_run_fifo_args");
  char fifo[512], hf[512], config[600], err_path[512], spec[600], calib[600];
  snprintf(fifo, sizeof fifo, "%s/model.json", work);
  snprintf(hf, sizeof hf, "%s/hf", work);
  snprintf(config, sizeof config, "%s/config.json", hf);
  snprintf(spec, sizeof spec, "--devices-spec=%s", fifo);
  snprintf(calib, sizeof calib, "--calibration=%s", fifo);
  snprintf(err_path, sizeof err_path, "%s/stderr", work);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  ck_assert_int_eq(mkdir(hf, 0700), 0);
  ck_assert_int_eq(mkfifo(config, 0600), 0);
  const char *model[] = {"ppcc", "run", fifo, NULL};
  const char *import[] = {"ppcc", "import", "hf", hf, "-o", "/dev/null", NULL};
  const char *devices[] = {"ppcc", "report", "testdata/models/ppffn.json", spec, NULL};
  const char *calibration[] = {"ppcc", "report", "testdata/models/ppffn.json", calib, NULL};
  const char *const *runs[] = {model, import, devices, calibration};
  const char *names[] = {"model.json", "config.json", "model.json", "model.json"};
  for (int i = 0; i < 4; i++) {
    int status = run_bounded(runs[i], 0, err_path, 60);
    char *err = t_read_text(err_path);
    char want[64];
    snprintf(want, sizeof want, "%s: ", names[i]);
    ck_assert_msg(status != -1, "a FIFO as %s (%s) blocked ppcc (killed after 60 s)", names[i], runs[i][1]);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(err, want) &&
                      strstr(err, "not a regular file") && !strchr(strchr(err, '\n') + 1, '\n'),
                  "%s %s: status %d; stderr: %s", runs[i][1], names[i], status, err);
    /* the path once: "DIR/config.json: error: ...", not "DIR: error: DIR/config.json: ..." */
    const char *once = i == 1 ? hf : fifo;
    ck_assert_msg(!strstr(strstr(err, once) + strlen(once), once), "path printed twice: %s", err);
    free(err);
  }
  t_remove_tree(work);
  free(work);
}
END_TEST

/* A value bigger than the machine is refused before anything is
 * allocated, naming it and its bytes; running out of memory part way is
 * exit 1 "out of memory" on every path and backend (it was 1 or 3). */
START_TEST(test_memory_refusals) {
  char *work = t_make_temp_dir("bad_run_mem");
  char model[512], err_path[512];
  snprintf(model, sizeof model, "%s/huge.json", work);
  snprintf(err_path, sizeof err_path, "%s/stderr", work);
  t_write_text(model, "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", "
                      "\"shape\": [1000000, 1000000]}], \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}],"
                      " \"outputs\": [\"y\"]}");
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", NULL};
  int status = run_bounded(argv, 0, err_path, 120);
  char *err = t_read_text(err_path);
  ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
                    strstr(err, "value 'x' (f32[1000000, 1000000]) needs 4000000000000 bytes, more than"),
                "status %d; stderr: %s", status, err);
  free(err);
#ifndef ASAN_BUILD
  /* Four 128 MiB inputs under 700 MB / 1 GB of address space. */
  t_write_text(model, "{\"ppcc\": 1, \"devices\": 1, \"inputs\": ["
                      "{\"name\": \"x0\", \"dtype\": \"f32\", \"shape\": [33554432]},"
                      "{\"name\": \"x1\", \"dtype\": \"f32\", \"shape\": [33554432]},"
                      "{\"name\": \"x2\", \"dtype\": \"f32\", \"shape\": [33554432]},"
                      "{\"name\": \"x3\", \"dtype\": \"f32\", \"shape\": [33554432]}],"
                      "\"ops\": [{\"op\": \"add\", \"in\": [\"x0\", \"x1\"], \"out\": [\"a\"]},"
                      "{\"op\": \"add\", \"in\": [\"x2\", \"x3\"], \"out\": [\"b\"]},"
                      "{\"op\": \"add\", \"in\": [\"a\", \"b\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}");
  static const char *const backends[] = {"--backend=interp", "--backend=jit"};
  static const rlim_t limits_mb[] = {700, 1000};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 2; i++) {
      const char *argv_b[] = {"ppcc", "run", model, backends[b], NULL};
      status = run_bounded(argv_b, limits_mb[i] << 20, err_path, 120);
      err = t_read_text(err_path);
      bool no_jit = WIFEXITED(status) && WEXITSTATUS(status) == 2 && strstr(err, "without MLIR");
      if (!no_jit)
        ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1 && strstr(err, "out of memory"),
                      "%s, ulimit -v %d MB: status %d; stderr: %s", backends[b], (int)limits_mb[i], status, err);
      free(err);
    }
#endif
  t_remove_tree(work);
  free(work);
}
END_TEST

int main(void) {
  read_manifest();
  Suite *s = suite_create("bad_run");
  TCase *manifest = t_add_tcase(s, "manifest", 0);
  tcase_add_test(manifest, test_manifest_is_complete);
  TCase *good = t_add_tcase(s, "good", 120);
  tcase_add_test(good, test_good_files_run);
  TCase *corpus = t_add_tcase(s, "corpus", 60);
  /* At least one iteration, so a missing manifest fails loudly. */
  tcase_add_loop_test(corpus, test_bad_run, 0, n_rows > 0 ? n_rows : 1);
  TCase *limits = t_add_tcase(s, "limits", 300);
  tcase_add_test(limits, test_address_space_limit);
  tcase_add_test(limits, test_fifo_input);
  tcase_add_test(limits, test_fifo_file_arguments);
  tcase_add_test(limits, test_memory_refusals);
  return t_run_suite(s);
}
