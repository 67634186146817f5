/* Atomic outputs (DESIGN §8, io.h): runs the ppcc binary and checks that
 *   - a failing compile / run leaves an existing target byte-identical and
 *     no temporary file in the directory;
 *   - when one of several outputs cannot be written, none is written;
 *   - a compile killed with SIGKILL (or interrupted with SIGINT/SIGTERM) at
 *     any moment never leaves a partial target: the target is either the
 *     old file or the complete new one.
 * SIGINT/SIGTERM remove the temporary in a handler; SIGKILL cannot be
 * caught, so its temporary file (".NAME.XXXXXX", hidden,
 * in the target's directory) may stay behind; the test checks that any
 * such leftover is a hidden temporary and never the target itself. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ppcc/io.h"
#include "test_support.h"

#define ORIGINAL "original contents: must survive a failed compile\n"

/* ---------------- helpers ---------------- */

static bool file_equals(const char *path, const char *data, size_t len) {
  size_t n;
  char *got = t_read_file(path, &n);
  bool same = got && n == len && memcmp(got, data, len) == 0;
  free(got);
  return same;
}

/* Number of directory entries other than the names in keep[]; their names
 * go to stderr. */
static int count_other_files(const char *dir, const char *const *keep, int n_keep, bool remove_them) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int others = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    bool kept = false;
    for (int i = 0; i < n_keep; i++) kept |= strcmp(e->d_name, keep[i]) == 0;
    if (kept) continue;
    others++;
    if (remove_them) {
      char *p = t_path_join(dir, e->d_name);
      unlink(p);
      free(p);
    } else {
      fprintf(stderr, "test_atomic_output: unexpected file '%s' in %s\n", e->d_name, dir);
    }
  }
  closedir(d);
  return others;
}

/* Runs ppcc to completion; returns its exit code (or 128 + signal). */
static int run_ppcc(const char *const argv[]) {
  int status = t_run_ppcc(argv, NULL);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_seconds(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static bool binary_has_mlir(const char *dir) {
  char *model = t_path_join(dir, "probe.json");
  char *out = t_path_join(dir, "probe.mlir");
  t_write_text(model, "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", "
                      "\"shape\": [2]}], \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], "
                      "\"outputs\": [\"y\"]}");
  const char *argv[] = {"ppcc", "compile", model, "-o", out, NULL};
  bool ok = run_ppcc(argv) == 0;
  unlink(model);
  unlink(out);
  free(model);
  free(out);
  return ok;
}

#define GOOD_MODEL                                                                                     \
  "{\"ppcc\": 1, \"devices\": 2, \"params\": [{\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [4, 4], " \
  "\"devices\": [1]}], \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 4]}], "         \
  "\"ops\": [{\"op\": \"matmul\", \"in\": [\"x\", \"w\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}"

/* Each way a compile can fail: frontend error, pass error (pin conflict),
 * missing model. */
static const char *const bad_models[] = {
  "{\"ppcc\": 1, \"devices\": 2, \"ops\": [], \"outputs\": [\"nope\"]}",
  "{\"ppcc\": 1, \"devices\": 2, \"params\": [{\"name\": \"a\", \"dtype\": \"f32\", \"shape\": [4, 4], "
  "\"devices\": [0]}, {\"name\": \"b\", \"dtype\": \"f32\", \"shape\": [4, 4], \"devices\": [1]}], "
  "\"ops\": [{\"op\": \"matmul\", \"in\": [\"a\", \"b\"], \"out\": [\"y\"]}], \"outputs\": [\"y\"]}",
  NULL, /* the model file does not exist */
};

/* ---------------- failed compiles ---------------- */

START_TEST(test_failed_compile_keeps_target) {
  char *dir = t_make_temp_dir("atomic");
  bool mlir = binary_has_mlir(dir);
  const char *targets[] = {"out.json", "out.txt", "out.dot", "out.mlir"};
  for (int m = 0; m < 3; m++) {
    char *model = t_path_join(dir, "model.json");
    if (bad_models[m])
      t_write_file(model, bad_models[m], strlen(bad_models[m]));
    else
      unlink(model);
    for (int t = 0; t < 4; t++) {
      if (t == 3 && !mlir) continue;
      char *target = t_path_join(dir, targets[t]);
      t_write_file(target, ORIGINAL, strlen(ORIGINAL));
      char report_opt[4096];
      snprintf(report_opt, sizeof report_opt, "--report=%s", target);
      const char *argv_report[] = {"ppcc", "compile", model, report_opt, NULL};
      const char *argv_mlir[] = {"ppcc", "compile", model, "-o", target, NULL};
      int rc = run_ppcc(t == 3 ? argv_mlir : argv_report);
      ck_assert_msg(rc == 1, "model %d, target %s: exit %d, expected 1", m, targets[t], rc);
      ck_assert_msg(file_equals(target, ORIGINAL, strlen(ORIGINAL)), "model %d: %s was modified", m,
                    targets[t]);
      const char *keep[] = {"model.json", targets[t]};
      ck_assert_int_eq(count_other_files(dir, keep, 2, false), 0);
      unlink(target);
      free(target);
    }
    free(model);
  }
  t_remove_tree(dir);
  free(dir);
}
END_TEST

START_TEST(test_failed_compile_creates_nothing) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, bad_models[1], strlen(bad_models[1]));
  char *target = t_path_join(dir, "new.json");
  char report_opt[4096];
  snprintf(report_opt, sizeof report_opt, "--report=%s", target);
  const char *argv[] = {"ppcc", "compile", model, report_opt, NULL};
  ck_assert_int_eq(run_ppcc(argv), 1);
  const char *keep[] = {"model.json"};
  ck_assert_int_eq(count_other_files(dir, keep, 1, false), 0);
  free(target);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* Two outputs, the second one unwritable: neither may appear or change. */
START_TEST(test_all_or_nothing) {
  char *dir = t_make_temp_dir("atomic");
  if (!binary_has_mlir(dir)) {
    fprintf(stderr, "test_all_or_nothing: skipped, ppcc built without MLIR (one output only)\n");
    t_remove_tree(dir);
    free(dir);
    return;
  }
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *mlir = t_path_join(dir, "out.mlir");
  t_write_file(mlir, ORIGINAL, strlen(ORIGINAL));
  char report_opt[4096];
  snprintf(report_opt, sizeof report_opt, "--report=%s/no/such/dir/r.json", dir);
  const char *argv[] = {"ppcc", "compile", model, "-o", mlir, report_opt, NULL};
  ck_assert_int_eq(run_ppcc(argv), 1);
  ck_assert(file_equals(mlir, ORIGINAL, strlen(ORIGINAL)));
  const char *keep[] = {"model.json", "out.mlir"};
  ck_assert_int_eq(count_other_files(dir, keep, 2, false), 0);
  /* And the same command with a writable report succeeds and writes both. */
  snprintf(report_opt, sizeof report_opt, "--report=%s/r.json", dir);
  ck_assert_int_eq(run_ppcc(argv), 0);
  ck_assert(!file_equals(mlir, ORIGINAL, strlen(ORIGINAL)));
  free(model);
  free(mlir);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* A target that is a directory, or in a read-only directory: an error,
 * nothing else touched. */
START_TEST(test_unwritable_target) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *sub = t_path_join(dir, "sub.json");
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  char report_opt[4096];
  snprintf(report_opt, sizeof report_opt, "--report=%s", sub);
  const char *argv[] = {"ppcc", "compile", model, report_opt, NULL};
  ck_assert_int_eq(run_ppcc(argv), 1);
  struct stat st;
  ck_assert_int_eq(stat(sub, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  const char *keep[] = {"model.json", "sub.json"};
  ck_assert_int_eq(count_other_files(dir, keep, 2, false), 0);
  free(sub);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ---------------- failed runs (.npy outputs) ---------------- */

START_TEST(test_failed_run_keeps_outputs) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *out_dir = t_path_join(dir, "out");
  ck_assert_int_eq(mkdir(out_dir, 0755), 0);
  char *y = t_path_join(out_dir, "y.npy");
  t_write_file(y, ORIGINAL, strlen(ORIGINAL));
  /* Weights that are not a weights file: the run must fail before any
   * output is written. */
  char *weights = t_path_join(dir, "w.safetensors");
  t_write_file(weights, "garbage", 7);
  const char *argv[] = {"ppcc", "run", model, "--weights", weights, "--output-dir", out_dir, NULL};
  int rc = run_ppcc(argv);
  ck_assert_msg(rc == 1, "exit %d, expected 1", rc);
  ck_assert(file_equals(y, ORIGINAL, strlen(ORIGINAL)));
  const char *keep[] = {"y.npy"};
  ck_assert_int_eq(count_other_files(out_dir, keep, 1, false), 0);
  /* With random weights it succeeds and replaces y.npy. */
  const char *argv_ok[] = {"ppcc", "run", model, "--random-weights", "1", "--output-dir", out_dir, NULL};
  rc = run_ppcc(argv_ok);
  if (rc == 0) {
    ck_assert(!file_equals(y, ORIGINAL, strlen(ORIGINAL)));
    ck_assert_int_eq(count_other_files(out_dir, keep, 1, false), 0);
  } else {
    /* Built without the runtime: a clean error, nothing written. */
    ck_assert_msg(rc == 1, "'ppcc run' with random weights exits %d", rc);
    ck_assert(file_equals(y, ORIGINAL, strlen(ORIGINAL)));
    fprintf(stderr, "test_failed_run_keeps_outputs: 'ppcc run' exits 1 (runtime not built?)\n");
  }
  free(weights);
  free(y);
  free(out_dir);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ---------------- interrupted compiles ---------------- */

/* A pipeline model big enough that compiling and writing its reports
 * takes a measurable time: blocks x (matmul, gelu, matmul, add) over
 * 4 stages of 2 devices, with the transfers between stages. */
static void write_big_model(const char *path, int blocks) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"ppcc\": 1, \"name\": \"big\", \"devices\": 8, \"params\": [\n");
  for (int b = 0; b < blocks; b++) {
    int stage = b * 4 / blocks;
    fprintf(f,
            "%s{\"name\": \"up%d\", \"dtype\": \"f32\", \"shape\": [16, 32], \"shard\": {\"kind\": \"split\", "
            "\"dim\": 1, \"count\": 2}, \"devices\": [%d, %d]},\n"
            "{\"name\": \"down%d\", \"dtype\": \"f32\", \"shape\": [32, 16], \"shard\": {\"kind\": \"split\", "
            "\"dim\": 0, \"count\": 2}, \"devices\": [%d, %d]}",
            b ? ",\n" : "", b, 2 * stage, 2 * stage + 1, b, 2 * stage, 2 * stage + 1);
  }
  fprintf(f, "],\n\"inputs\": [{\"name\": \"h0\", \"dtype\": \"f32\", \"shape\": [8, 16], "
             "\"shard\": {\"kind\": \"replicated\", \"count\": 2}}],\n\"ops\": [\n");
  for (int b = 0; b < blocks; b++) {
    fprintf(f,
            "%s{\"op\": \"matmul\", \"in\": [\"h%d\", \"up%d\"], \"out\": [\"u%d\"]},\n"
            "{\"op\": \"gelu\", \"in\": [\"u%d\"], \"out\": [\"g%d\"]},\n"
            "{\"op\": \"matmul\", \"in\": [\"g%d\", \"down%d\"], \"out\": [\"p%d\"]},\n"
            "{\"op\": \"all_reduce\", \"in\": [\"p%d\"], \"out\": [\"h%d\"]}",
            b ? ",\n" : "", b, b, b, b, b, b, b, b, b, b + 1);
  }
  fprintf(f, "],\n\"outputs\": [\"h%d\"]}\n", blocks);
  ck_assert_int_eq(fclose(f), 0);
}

static void interrupt_at_many_points(int sig) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "big.json");
  char *target = t_path_join(dir, "out.json");
  char report_opt[4096];
  snprintf(report_opt, sizeof report_opt, "--report=%s", target);
  const char *argv[] = {"ppcc", "compile", model, report_opt, NULL};

  /* Grow the model until a full compile takes at least 0.3 s. */
  int blocks = 2000;
  double full = 0;
  for (;;) {
    write_big_model(model, blocks);
    unlink(target);
    double t0 = now_seconds();
    int rc = run_ppcc(argv);
    full = now_seconds() - t0;
    ck_assert_msg(rc == 0, "the big model does not compile (exit %d)", rc);
    if (full >= 0.3 || blocks >= 64000) break;
    blocks *= 2;
  }
  size_t ref_len;
  char *ref = t_read_file(target, &ref_len);
  ck_assert_ptr_nonnull(ref);
  ck_assert_uint_gt(ref_len, 0);

  enum { POINTS = 24 };
  int old_kept = 0, new_written = 0, leftovers = 0;
  for (int i = 0; i < POINTS; i++) {
    t_write_file(target, ORIGINAL, strlen(ORIGINAL));
    /* Spread the kills over the whole run, a little past its end. */
    double delay = full * (0.02 + 1.1 * i / (POINTS - 1));
    pid_t pid = t_spawn_ppcc(argv, NULL, NULL, NULL);
    sleep_seconds(delay);
    kill(pid, sig);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    bool old = file_equals(target, ORIGINAL, strlen(ORIGINAL));
    bool complete = file_equals(target, ref, ref_len);
    ck_assert_msg(old || complete, "signal %d after %.3f s left a partial or foreign %s", sig, delay, target);
    old_kept += old;
    new_written += complete;
    /* Anything else in the directory must be a hidden temporary of the
     * target (".out.json.XXXXXX"); remove it for the next round. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "big.json") ||
          !strcmp(e->d_name, "out.json"))
        continue;
      ck_assert_msg(strncmp(e->d_name, ".out.json.", 10) == 0, "unexpected file '%s' after signal %d", e->d_name,
                    sig);
      leftovers++;
    }
    closedir(d);
    const char *keep[] = {"big.json", "out.json"};
    count_other_files(dir, keep, 2, true);
  }
  fprintf(stderr,
          "test_atomic_output: signal %d, %d blocks (%.2f s a compile): %d kills kept the old target, "
          "%d came after the rename, %d left a hidden temporary\n",
          sig, blocks, full, old_kept, new_written, leftovers);
  /* The kills must have landed during the compile at least once. */
  ck_assert_int_gt(old_kept, 0);
  free(ref);
  free(target);
  free(model);
  t_remove_tree(dir);
  free(dir);
}

/* A signal that lands while an output is open (the window is too short to
 * hit from outside) removes the temporary, then kills the process. */
static void signal_while_writing(int sig) {
  char *dir = t_make_temp_dir("atomic");
  char *target = t_path_join(dir, "out.json");
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ppcc_outfile_cleanup_on_signals();
    ppcc_diag d;
    ppcc_diag_init(&d, "test", NULL);
    ppcc_outfile f;
    if (ppcc_outfile_open(&f, target, &d) != PPCC_OK) _exit(3);
    fputs("{\"partial\": ", f.fp);
    fflush(f.fp);
    raise(sig);
    _exit(4); /* not reached: the handler re-raises with the default action */
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == sig, "child status %d", status);
  const char *keep[] = {NULL};
  ck_assert_int_eq(count_other_files(dir, keep, 0, false), 0);
  free(target);
  t_remove_tree(dir);
  free(dir);
}

START_TEST(test_signal_handler_removes_temporary) {
  signal_while_writing(SIGINT);
  signal_while_writing(SIGTERM);
}
END_TEST

START_TEST(test_sigkill_never_leaves_partial_target) { interrupt_at_many_points(SIGKILL); }
END_TEST

START_TEST(test_sigint_never_leaves_partial_target) { interrupt_at_many_points(SIGINT); }
END_TEST

START_TEST(test_sigterm_never_leaves_partial_target) { interrupt_at_many_points(SIGTERM); }
END_TEST

/* ---------------- targets that are not plain files (issue 11) ---------------- */

/* kind: 'l' symlink, 'c' character device, 'p' FIFO. */
static bool is_kind(const char *path, char kind) {
  struct stat st;
  if (lstat(path, &st) != 0) return false;
  return kind == 'l' ? S_ISLNK(st.st_mode) : kind == 'c' ? S_ISCHR(st.st_mode) : S_ISFIFO(st.st_mode);
}

/* Runs argv with stderr into DIR/err.txt; returns the exit code and the
 * stderr text in *err (malloc'd). */
static int run_capture(const char *dir, const char *const argv[], char **err) {
  char *err_path = t_path_join(dir, "err.txt");
  int status = t_run_ppcc(argv, err_path);
  *err = t_read_text(err_path);
  unlink(err_path);
  free(err_path);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* -o /dev/null and a FIFO are written in place, never replaced by a file. */
START_TEST(test_device_and_fifo_written_in_place) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *err;
  /* /dev/null has no .json extension: go through a symlink named r.json. */
  char *link = t_path_join(dir, "r.json");
  ck_assert_int_eq(symlink("/dev/null", link), 0);
  char opt[4096];
  snprintf(opt, sizeof opt, "--report=%s", link);
  const char *argv[] = {"ppcc", "compile", model, opt, NULL};
  int rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 0, "report to a link to /dev/null: exit %d: %s", rc, err);
  free(err);
  ck_assert_msg(is_kind(link, 'l'), "the symlink to /dev/null was replaced");
  ck_assert(is_kind("/dev/null", 'c'));
  unlink(link);

  /* A FIFO with a reader: the reader gets the report, the FIFO stays. */
  char *fifo = t_path_join(dir, "fifo.json");
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  char *got = t_path_join(dir, "got.txt");
  fflush(NULL);
  pid_t reader = fork();
  ck_assert_int_ge(reader, 0);
  if (reader == 0) {
    FILE *in = fopen(fifo, "r"), *out = fopen(got, "w");
    if (!in || !out) _exit(1);
    int c;
    while ((c = fgetc(in)) != EOF) fputc(c, out);
    _exit(fclose(out) == 0 ? 0 : 1);
  }
  snprintf(opt, sizeof opt, "--report=%s", fifo);
  rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 0, "report to a FIFO: exit %d: %s", rc, err);
  free(err);
  ck_assert_int_eq(t_wait(reader), 0);
  ck_assert_msg(is_kind(fifo, 'p'), "the FIFO was replaced by a regular file");
  char *text = t_read_text(got);
  ck_assert_msg(strstr(text, "\"devices\"") != NULL, "the FIFO's reader got [%s]", text);
  free(text);
  free(got);
  free(fifo);
  free(link);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* A symlink to a file is followed (the link stays, its target changes); a
 * dangling one is refused and nothing is created through it. */
START_TEST(test_symlink_followed_or_refused) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *real = t_path_join(dir, "real.json"), *link = t_path_join(dir, "link.json");
  t_write_text(real, ORIGINAL);
  ck_assert_int_eq(symlink("real.json", link), 0);
  char opt[4096], *err;
  snprintf(opt, sizeof opt, "--report=%s", link);
  const char *argv[] = {"ppcc", "compile", model, opt, NULL};
  int rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  ck_assert_msg(is_kind(link, 'l'), "the symlink was replaced by a file");
  ck_assert_msg(!file_equals(real, ORIGINAL, strlen(ORIGINAL)), "the link's target was not written");
  const char *keep[] = {"model.json", "real.json", "link.json"};
  ck_assert_int_eq(count_other_files(dir, keep, 3, false), 0);

  unlink(real);
  rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 1 && strstr(err, "symbolic link to a missing file"), "dangling link: exit %d: %s", rc, err);
  free(err);
  ck_assert_msg(access(real, F_OK) != 0, "a file was created through a dangling symlink");
  ck_assert(is_kind(link, 'l'));
  free(real);
  free(link);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* A write error (here /dev/full: ENOSPC) is exit 1 with its reason. */
START_TEST(test_full_device_is_a_user_error) {
  char *dir = t_make_temp_dir("atomic");
  if (access("/dev/full", W_OK) != 0) {
    fprintf(stderr, "test_full_device_is_a_user_error: no writable /dev/full here\n");
    t_remove_tree(dir);
    free(dir);
    return;
  }
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *link = t_path_join(dir, "full.json");
  ck_assert_int_eq(symlink("/dev/full", link), 0);
  char opt[4096], *err;
  snprintf(opt, sizeof opt, "--report=%s", link);
  const char *argv[] = {"ppcc", "compile", model, opt, NULL};
  int rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 1 && strstr(err, "No space left on device"), "exit %d: %s", rc, err);
  ck_assert(is_kind("/dev/full", 'c'));
  free(err);
  free(link);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ---------------- --trace (issue 11) ---------------- */

/* A planted TRACE.tmp symlink is never written through; a run that fails
 * after executing leaves no trace. */
START_TEST(test_trace_is_atomic) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json");
  t_write_file(model, GOOD_MODEL, strlen(GOOD_MODEL));
  char *trace = t_path_join(dir, "trace.json"), *victim = t_path_join(dir, "victim.txt");
  char *planted = t_path_join(dir, "trace.json.tmp");
  t_write_text(victim, ORIGINAL);
  ck_assert_int_eq(symlink(victim, planted), 0);
  char *err;
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", "--trace", trace, NULL};
  int rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  ck_assert_msg(file_equals(victim, ORIGINAL, strlen(ORIGINAL)), "the trace overwrote the planted link's target");
  char *text = t_read_text(trace);
  ck_assert_msg(strstr(text, "traceEvents"), "no trace written");
  free(text);
  const char *keep[] = {"model.json", "trace.json", "victim.txt", "trace.json.tmp"};
  ck_assert_int_eq(count_other_files(dir, keep, 4, false), 0);
  unlink(trace);

  /* The run fails after executing (the output dir is a file). */
  char *not_dir = t_path_join(dir, "not_a_dir");
  t_write_text(not_dir, "x");
  const char *argv_fail[] = {"ppcc", "run", model, "--backend=interp", "--trace", trace, "--output-dir", not_dir, NULL};
  rc = run_capture(dir, argv_fail, &err);
  ck_assert_msg(rc == 1, "exit %d: %s", rc, err);
  free(err);
  ck_assert_msg(access(trace, F_OK) != 0, "a failed run left its trace");
  const char *keep2[] = {"model.json", "victim.txt", "trace.json.tmp", "not_a_dir"};
  ck_assert_int_eq(count_other_files(dir, keep2, 4, false), 0);
  free(not_dir);
  free(planted);
  free(victim);
  free(trace);
  free(model);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ---------------- many outputs, names, limits (issue 11) ---------------- */

/* A model with n outputs o<k> = neg(x), named by name(k) (NULL: "o<k>"). */
static void write_outputs_model(const char *path, int n, const char *const *names) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4]}],\n"
             "\"ops\": [");
  for (int k = 0; k < n; k++) {
    if (names) fprintf(f, "%s{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"%s\"]}", k ? ",\n" : "", names[k]);
    else fprintf(f, "%s{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"o%04d\"]}", k ? ",\n" : "", k);
  }
  fprintf(f, "],\n\"outputs\": [");
  for (int k = 0; k < n; k++) {
    if (names) fprintf(f, "%s\"%s\"", k ? ", " : "", names[k]);
    else fprintf(f, "%s\"o%04d\"", k ? ", " : "", k);
  }
  fprintf(f, "]}\n");
  ck_assert_int_eq(fclose(f), 0);
}

/* Runs argv under a soft resource limit (set here, inherited by the
 * child, restored). */
static int run_limited(const char *dir, const char *const argv[], int resource, rlim_t soft, char **err) {
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(resource, &old), 0);
  lim = old;
  lim.rlim_cur = soft;
  ck_assert_int_eq(setrlimit(resource, &lim), 0);
  int rc = run_capture(dir, argv, err);
  ck_assert_int_eq(setrlimit(resource, &old), 0);
  return rc;
}

/* 300 outputs under a 40-file descriptor limit: written. */
START_TEST(test_more_outputs_than_open_files) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json"), *out = t_path_join(dir, "out");
  write_outputs_model(model, 300, NULL);
  char *err;
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", "--output-dir", out, NULL};
  int rc = run_limited(dir, argv, RLIMIT_NOFILE, 40, &err);
  ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
  free(err);
  ck_assert_int_eq(t_count_entries(out), 300);
  free(model);
  free(out);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* ulimit -f: a write error (EFBIG) with its reason, exit 1, no temporary
 * (not death by SIGXFSZ with the temporary left). */
START_TEST(test_file_size_limit) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json"), *out = t_path_join(dir, "out");
  const char *big = "{\"ppcc\": 1, \"devices\": 1, \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", "
                    "\"shape\": [64, 1024]}], \"ops\": [{\"op\": \"neg\", \"in\": [\"x\"], \"out\": [\"y\"]}], "
                    "\"outputs\": [\"y\"]}";
  t_write_text(model, big);
  ck_assert_int_eq(mkdir(out, 0755), 0);
  char *err;
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", "--output-dir", out, NULL};
  int rc = run_limited(dir, argv, RLIMIT_FSIZE, 64 * 1024, &err);
  ck_assert_msg(rc == 1 && strstr(err, "File too large"), "exit %d: %s", rc, err);
  free(err);
  ck_assert_int_eq(t_count_entries(out), 0);
  free(model);
  free(out);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* Output names that would give the same file are refused (none written);
 * names up to the format's 256 bytes are written. */
START_TEST(test_output_file_names) {
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json"), *out = t_path_join(dir, "out");
  const char *clash[] = {"a/b", "a_b"};
  write_outputs_model(model, 2, clash);
  char *err;
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", "--output-dir", out, NULL};
  int rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 1 && strstr(err, "outputs 'a/b' and 'a_b' would both be written to a_b.npy"), "exit %d: %s",
                rc, err);
  free(err);
  ck_assert_int_eq(t_count_entries(out), 0);
  const char *accents[] = {"\xc3\xa9", "\xc3\xbc"}; /* é and ü */
  write_outputs_model(model, 2, accents);
  rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 1 && strstr(err, "would both be written"), "exit %d: %s", rc, err);
  free(err);
  ck_assert_int_eq(t_count_entries(out), 0);

  /* 256-byte names (the format's maximum), two that differ only at the end. */
  char long1[257], long2[257];
  memset(long1, 'n', 256);
  long1[256] = 0;
  memcpy(long2, long1, sizeof long1);
  long2[255] = 'm';
  const char *longs[] = {long1, long2};
  write_outputs_model(model, 2, longs);
  rc = run_capture(dir, argv, &err);
  ck_assert_msg(rc == 0, "256-byte output names: exit %d: %s", rc, err);
  free(err);
  ck_assert_int_eq(t_count_entries(out), 2);
  free(model);
  free(out);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* All or none for --output-dir: SIGINT as soon as the first new file
 * appears (in the middle of 1500 renames) leaves the old set or the new
 * one, and no temporary. */
START_TEST(test_interrupted_output_set) {
  enum { N = 1500 };
  char *dir = t_make_temp_dir("atomic");
  char *model = t_path_join(dir, "model.json"), *out = t_path_join(dir, "out");
  write_outputs_model(model, N, NULL);
  ck_assert_int_eq(mkdir(out, 0755), 0);
  char name[32];
  for (int k = 0; k < N; k++) {
    snprintf(name, sizeof name, "o%04d.npy", k);
    t_write_text(t_path_in(out, name), "old");
  }
  const char *argv[] = {"ppcc", "run", model, "--backend=interp", "--output-dir", out, NULL};
  pid_t pid = t_spawn_ppcc(argv, NULL, NULL, NULL);
  /* o1499 is renamed last, o0000 first: wait for any new file. */
  bool seen = false;
  double start = now_seconds();
  while (!seen && now_seconds() - start < 120) {
    for (int k = 0; k < N && !seen; k += N / 8) {
      snprintf(name, sizeof name, "o%04d.npy", k);
      char *text = t_read_text(t_path_in(out, name));
      seen = strcmp(text, "old") != 0;
      free(text);
    }
  }
  kill(pid, SIGINT);
  int status = t_wait(pid);
  ck_assert_msg(seen, "no output ever appeared (status %d)", status);
  int old = 0, fresh = 0;
  for (int k = 0; k < N; k++) {
    snprintf(name, sizeof name, "o%04d.npy", k);
    char *text = t_read_text(t_path_in(out, name));
    if (strcmp(text, "old") == 0) old++;
    else fresh++;
    free(text);
  }
  ck_assert_msg(old == 0 || fresh == 0, "interrupted commit left %d old and %d new outputs", old, fresh);
  ck_assert_int_eq(t_count_entries(out), N); /* no temporaries */
  free(model);
  free(out);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

/* Many temporaries (more than the old 64-entry table) are all removed by
 * the signal handler. */
START_TEST(test_signal_removes_many_temporaries) {
  char *dir = t_make_temp_dir("atomic");
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ppcc_outfile_cleanup_on_signals();
    ppcc_diag d;
    ppcc_diag_init(&d, "test", NULL);
    static ppcc_outfile files[200];
    char name[32];
    for (int k = 0; k < 200; k++) {
      snprintf(name, sizeof name, "o%03d.npy", k);
      if (ppcc_outfile_open(&files[k], t_path_in(dir, name), &d) != PPCC_OK) _exit(3);
      fputs("partial", files[k].fp);
      if (ppcc_outfile_close(&files[k], &d) != PPCC_OK) _exit(3);
    }
    raise(SIGINT);
    _exit(4);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "child status %d", status);
  ck_assert_int_eq(t_count_entries(dir), 0);
  t_remove_tree(dir);
  free(dir);
}
END_TEST

Suite *atomic_suite(void) {
  Suite *s = suite_create("atomic_output");
  TCase *fail = t_add_tcase(s, "failures", 300);
  tcase_add_test(fail, test_failed_compile_keeps_target);
  tcase_add_test(fail, test_failed_compile_creates_nothing);
  tcase_add_test(fail, test_all_or_nothing);
  tcase_add_test(fail, test_unwritable_target);
  tcase_add_test(fail, test_failed_run_keeps_outputs);
  TCase *targets = t_add_tcase(s, "targets", 300);
  tcase_add_test(targets, test_device_and_fifo_written_in_place);
  tcase_add_test(targets, test_symlink_followed_or_refused);
  tcase_add_test(targets, test_full_device_is_a_user_error);
  tcase_add_test(targets, test_trace_is_atomic);
  tcase_add_test(targets, test_more_outputs_than_open_files);
  tcase_add_test(targets, test_file_size_limit);
  tcase_add_test(targets, test_output_file_names);
  tcase_add_test(targets, test_interrupted_output_set);
  tcase_add_test(targets, test_signal_removes_many_temporaries);
  TCase *kill_tc = t_add_tcase(s, "interrupts", 600);
  tcase_add_test(kill_tc, test_signal_handler_removes_temporary);
  tcase_add_test(kill_tc, test_sigkill_never_leaves_partial_target);
  tcase_add_test(kill_tc, test_sigint_never_leaves_partial_target);
  tcase_add_test(kill_tc, test_sigterm_never_leaves_partial_target);
  return s;
}

int main(void) { return t_run_suite(atomic_suite()); }
