/* Runs the real `ppcc compile` on every file of the bad-input corpus
 * (testdata/bad/expected.tsv) and checks the user-facing contract:
 * exit code 1, one line "FILE: error: ..." on stderr containing the
 * expected text, and no report file (nor temporary file) left behind. A
 * placement error may be followed by its --why chain and fixes (issue 17),
 * each an indented "  note: " or "  fix: " line; nothing else may follow. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_support.h"

#define MIN_CORPUS_ROWS 60
#define MAX_ROWS 1024

typedef struct {
  char file[256];
  char want[768];
} manifest_row;

static manifest_row rows[MAX_ROWS];
static int n_rows;
static char manifest_error[512];

/* Reads FILE<TAB>SUBSTRING lines; '#' lines and blank lines are comments. */
static void read_manifest(void) {
  const char *path = t_src_path("testdata/bad/expected.tsv");
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(manifest_error, sizeof manifest_error, "cannot open %s: %s", path, strerror(errno));
    return;
  }
  char line[2048];
  int line_no = 0;
  while (fgets(line, sizeof line, f)) {
    line_no++;
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] == '#' || line[0] == 0) continue;
    char *tab = strchr(line, '\t');
    if (!tab || tab == line || tab[1] == 0 || n_rows == MAX_ROWS) {
      snprintf(manifest_error, sizeof manifest_error, "expected.tsv:%d: expected FILE<TAB>SUBSTRING", line_no);
      break;
    }
    *tab = 0;
    snprintf(rows[n_rows].file, sizeof rows[n_rows].file, "%s", line);
    snprintf(rows[n_rows].want, sizeof rows[n_rows].want, "%s", tab + 1);
    n_rows++;
  }
  fclose(f);
}

static bool listed(const char *file) {
  for (int i = 0; i < n_rows; i++)
    if (strcmp(rows[i].file, file) == 0) return true;
  return false;
}

START_TEST(test_manifest_is_complete) {
  ck_assert_msg(manifest_error[0] == 0, "%s", manifest_error);
  ck_assert_msg(n_rows >= MIN_CORPUS_ROWS, "only %d bad inputs in expected.tsv (need at least %d)", n_rows,
                MIN_CORPUS_ROWS);
  char path[512];
  for (int i = 0; i < n_rows; i++) {
    snprintf(path, sizeof path, "testdata/bad/%s", rows[i].file);
    ck_assert_msg(access(t_src_path(path), R_OK) == 0, "%s is listed but missing", rows[i].file);
  }
  /* Every corpus file is checked: none can be added and forgotten. */
  DIR *dir = opendir(t_src_path("testdata/bad"));
  ck_assert_ptr_nonnull(dir);
  struct dirent *e;
  while ((e = readdir(dir))) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "expected.tsv") == 0) continue;
    ck_assert_msg(listed(e->d_name), "testdata/bad/%s is not in expected.tsv", e->d_name);
  }
  closedir(dir);
}
END_TEST

/* Runs `ppcc compile MODEL --report=REPORT` with stderr into err_path;
 * returns the raw wait status. */
static int run_compile(const char *model, const char *report, const char *err_path) {
  char report_arg[600];
  snprintf(report_arg, sizeof report_arg, "--report=%s", report);
  const char *argv[] = {PPCC_BINARY, "compile", model, report_arg, NULL};
  return t_run_ppcc(argv, err_path);
}

START_TEST(test_bad_input) {
  ck_assert_msg(_i < n_rows, "manifest row %d missing", _i);
  const manifest_row *row = &rows[_i];
  char rel[512], model[4096], report[512], err_path[512];
  snprintf(rel, sizeof rel, "testdata/bad/%s", row->file);
  snprintf(model, sizeof model, "%s", t_src_path(rel));
  char *out_dir = t_make_temp_dir("bad_out");
  char *err_dir = t_make_temp_dir("bad_err");
  snprintf(report, sizeof report, "%s/out.json", out_dir);
  snprintf(err_path, sizeof err_path, "%s/stderr", err_dir);

  int status = run_compile(model, report, err_path);
  char *err = t_read_file(err_path, NULL);
  bool report_written = access(report, F_OK) == 0;
  int leftovers = t_count_entries(out_dir);
  /* Clean up before asserting: a failed check must not litter /tmp. */
  t_remove_tree(out_dir);
  t_remove_tree(err_dir);
  free(out_dir);
  free(err_dir);

  ck_assert_msg(err != NULL, "%s: cannot read the captured stderr", row->file);
  ck_assert_msg(WIFEXITED(status), "%s: ppcc died (signal %d); stderr: %s", row->file,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0, err);
  ck_assert_msg(WEXITSTATUS(status) == 1, "%s: exit code %d, want 1; stderr: %s", row->file, WEXITSTATUS(status),
                err);
  size_t len = strlen(err);
  char *newline = strchr(err, '\n');
  ck_assert_msg(len > 0 && err[len - 1] == '\n' && newline, "%s: stderr is not whole lines: [%s]", row->file, err);
  for (const char *line = newline + 1; *line; line = strchr(line, '\n') + 1)
    ck_assert_msg(strncmp(line, "  note: ", 8) == 0 || strncmp(line, "  fix: ", 7) == 0,
                  "%s: a line after the error is neither a note nor a fix: [%s]", row->file, err);
  *newline = '\0'; /* the error line alone from here on */
  char prefix[4200];
  snprintf(prefix, sizeof prefix, "%s: error: ", model);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s: stderr does not start with \"%s\": [%s]", row->file,
                prefix, err);
  ck_assert_msg(strstr(err, row->want) != NULL, "%s: diagnostic lacks \"%s\": [%s]", row->file, row->want, err);
  ck_assert_msg(!report_written, "%s: %s was written despite the error", row->file, report);
  ck_assert_msg(leftovers == 0, "%s: %d files left behind in the report directory", row->file, leftovers);
  free(err);
}
END_TEST

int main(void) {
  read_manifest();
  Suite *s = suite_create("bad_inputs");
  TCase *manifest = t_add_tcase(s, "manifest", 0);
  tcase_add_test(manifest, test_manifest_is_complete);
  TCase *corpus = t_add_tcase(s, "corpus", 60);
  /* At least one iteration, so a missing manifest fails loudly. */
  tcase_add_loop_test(corpus, test_bad_input, 0, n_rows > 0 ? n_rows : 1);
  return t_run_suite(s);
}
