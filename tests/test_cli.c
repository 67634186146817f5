/* Command-line tests: run the ppcc binary (PPCC_BINARY) and check exit
 * codes, messages and output files (DESIGN §8). */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_support.h"

/* ---------------- running the binary ---------------- */

typedef struct run_result {
  int exit_code; /* -1 if killed by a signal */
  char *out;     /* whole stdout, NUL-terminated */
  char *err;
} run_result;

static char *scratch; /* per-test temp dir, made by the fixture (each test forks) */

static void make_scratch(void) { scratch = t_make_temp_dir("cli"); }

static void remove_scratch(void) {
  t_remove_tree(scratch);
  free(scratch);
  scratch = NULL;
}

static const char *in_scratch(const char *name) { return t_path_in(scratch, name); }

/* Runs ppcc with the NULL-terminated arguments; stdout and stderr are
 * captured in the scratch dir (as hidden files the listing ignores). */
static run_result run_ppcc(const char *arg, ...) {
  const char *argv[64] = {PPCC_BINARY};
  int argc = 1;
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a && argc < 63; a = va_arg(ap, const char *)) argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  char out_path[512], err_path[512];
  snprintf(out_path, sizeof out_path, "%s/..stdout", scratch);
  snprintf(err_path, sizeof err_path, "%s/..stderr", scratch);
  int status = t_wait(t_spawn_ppcc(argv, NULL, out_path, err_path));
  run_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, t_read_text(out_path), t_read_text(err_path)};
  unlink(out_path);
  unlink(err_path);
  return r;
}

static void free_result(run_result *r) {
  free(r->out);
  free(r->err);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Files in the scratch dir other than the captured output. */
static int count_scratch_files(void) {
  DIR *dir = opendir(scratch);
  ck_assert_ptr_nonnull(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));)
    if (strncmp(e->d_name, "..", 2) != 0 && strcmp(e->d_name, ".") != 0) n++;
  closedir(dir);
  return n;
}

#define ASSERT_EXIT(r, code)                                                                  \
  ck_assert_msg((r).exit_code == (code), "exit code %d, expected %d\nstdout: %s\nstderr: %s", \
                (r).exit_code, (code), (r).out, (r).err)
#define ASSERT_CONTAINS(text, what) \
  ck_assert_msg(strstr((text), (what)), "expected '%s' in:\n%s", (what), (text))

static const char *model(const char *name) {
  static char buf[4][1024];
  static int next;
  char *p = buf[next++ % 4];
  char rel[256];
  snprintf(rel, sizeof rel, "testdata/models/%s.json", name);
  snprintf(p, sizeof buf[0], "%s", t_src_path(rel));
  return p;
}

static void assert_file_matches_golden(const char *path, const char *golden_rel) {
  char *got = t_read_text(path), *want = t_read_text(t_src_path(golden_rel));
  ck_assert_msg(strcmp(got, want) == 0, "%s differs from %s", path, golden_rel);
  free(got);
  free(want);
}

/* ---------------- help and version ---------------- */

START_TEST(test_help) {
  run_result r = run_ppcc("--help", NULL);
  ASSERT_EXIT(r, 0);
  ASSERT_CONTAINS(r.out, "Usage: ppcc");
  ASSERT_CONTAINS(r.out, "compile");
  free_result(&r);
}
END_TEST

START_TEST(test_version) {
  run_result r = run_ppcc("--version", NULL);
  ASSERT_EXIT(r, 0);
  ck_assert_msg(strncmp(r.out, "ppcc ", 5) == 0 && strlen(r.out) > 6, "bad version line: %s", r.out);
  free_result(&r);
}
END_TEST

static const char *const commands[] = {"compile", "report", "run"};

START_TEST(test_command_help) {
  run_result r = run_ppcc(commands[_i], "--help", NULL);
  ASSERT_EXIT(r, 0);
  char want[64];
  snprintf(want, sizeof want, "Usage: ppcc %s", commands[_i]);
  ASSERT_CONTAINS(r.out, want);
  free_result(&r);
}
END_TEST

/* Every command's --help is printed from its option table, and every
 * option it lists reaches the parser: "--name=x" (or "-ox") may be a bad
 * value or a flag given a value, never an unknown option. */
typedef struct help_command {
  const char *words[2]; /* "import", "onnx" */
  bool positional;      /* takes a model argument */
} help_command;

static const help_command help_commands[] = {
  {{"compile", NULL}, true}, {{"report", NULL}, true},   {{"run", NULL}, true},
  {{"fix", NULL}, true},     {{"shard-weights", NULL}, true}, {{"calibrate", NULL}, false},
  {{"generate", NULL}, true}, {{"import", "onnx"}, true}, {{"import", "hf"}, true},
};

START_TEST(test_listed_options_parse) {
  const help_command *c = &help_commands[_i];
  const char *w1 = c->words[1];
  run_result h = w1 ? run_ppcc(c->words[0], w1, "--help", NULL) : run_ppcc(c->words[0], "--help", NULL);
  if (h.exit_code == 2 && strstr(h.err, "unknown")) { /* a command this build has not */
    free_result(&h);
    return;
  }
  ASSERT_EXIT(h, 0);
  ASSERT_CONTAINS(h.out, "Usage: ppcc ");
  ASSERT_CONTAINS(h.out, "\nOptions:\n");
  ASSERT_CONTAINS(h.out, "  -h, --help ");
  int listed = 0;
  for (const char *line = h.out; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, "  -", 3) != 0 || strncmp(line, "  -h,", 5) == 0) continue;
    char opt[64];
    size_t n = strcspn(line + 2, " \n");
    ck_assert_uint_lt(n, sizeof opt - 3);
    snprintf(opt, sizeof opt, "%.*s%s", (int)n, line + 2, line[3] == '-' ? "=x" : "x");
    /* no model for commands that take one; an extra argument for calibrate */
    run_result r = w1 ? run_ppcc(c->words[0], w1, opt, c->positional ? NULL : "extra", NULL)
                      : run_ppcc(c->words[0], opt, c->positional ? NULL : "extra", NULL);
    ASSERT_EXIT(r, 2);
    ck_assert_msg(!strstr(r.err, "unknown option"), "%s %s: %s", c->words[0], opt, r.err);
    ck_assert_msg(!strstr(r.err, "'----"), "%s %s: option named with four dashes: %s", c->words[0], opt, r.err);
    free_result(&r);
    listed++;
  }
  ck_assert_msg(listed > 0, "%s --help lists no option", c->words[0]);
  free_result(&h);
}
END_TEST

/* ---------------- usage errors: exit 2 with a hint ---------------- */

static void assert_usage_error(run_result r, const char *message_part) {
  ASSERT_EXIT(r, 2);
  ASSERT_CONTAINS(r.err, "error:");
  ASSERT_CONTAINS(r.err, "--help");
  if (message_part) ASSERT_CONTAINS(r.err, message_part);
  free_result(&r);
}

START_TEST(test_usage_errors) {
  const char *m = model("tp_ffn");
  assert_usage_error(run_ppcc(NULL), "missing a command");
  assert_usage_error(run_ppcc("frobnicate", m, NULL), "unknown command");
  assert_usage_error(run_ppcc("compile", NULL), "missing the model");
  assert_usage_error(run_ppcc("compile", m, "--bogus", NULL), "--bogus");
  assert_usage_error(run_ppcc("compile", m, m, NULL), "unexpected argument");
  assert_usage_error(run_ppcc("compile", m, "--report", NULL), "needs a value");
  assert_usage_error(run_ppcc("compile", m, "--emit=llvm", NULL), "llvm");
  assert_usage_error(run_ppcc("compile", m, "--dump-after=nope", NULL), "insert-transfers");
  assert_usage_error(run_ppcc("report", m, "--format=xml", NULL), "xml");
  assert_usage_error(run_ppcc("run", m, "--threads=abc", NULL), "--threads");
  assert_usage_error(run_ppcc("run", m, "--weights", "w.safetensors", "--random-weights", "1", NULL),
                     "exclude");
  assert_usage_error(run_ppcc("run", m, "--input", "x", NULL), "NAME=FILE");
}
END_TEST

START_TEST(test_bad_report_extension) {
  const char *out = in_scratch("r.xml");
  char opt[600];
  snprintf(opt, sizeof opt, "--report=%s", out);
  assert_usage_error(run_ppcc("compile", model("tp_ffn"), opt, NULL), ".xml");
  ck_assert(!exists(out));
}
END_TEST

/* ---------------- outputs ---------------- */

START_TEST(test_compile_writes_reports) {
  static const char *const exts[] = {"json", "txt", "dot"};
  for (int k = 0; k < 3; k++) {
    char name[32], opt[600], golden[128];
    snprintf(name, sizeof name, "ppffn.%s", exts[k]);
    snprintf(opt, sizeof opt, "--report=%s", in_scratch(name));
    run_result r = run_ppcc("compile", model("ppffn"), opt, NULL);
    ASSERT_EXIT(r, 0);
    ck_assert_msg(r.out[0] == '\0', "nothing expected on stdout, got: %s", r.out);
    snprintf(golden, sizeof golden, "testdata/golden/ppffn.report.%s", exts[k]);
    assert_file_matches_golden(in_scratch(name), golden);
    free_result(&r);
  }
}
END_TEST

START_TEST(test_option_value_as_next_argument) {
  const char *out = in_scratch("tp.json");
  run_result r = run_ppcc("compile", model("tp_ffn"), "--report", out, NULL);
  ASSERT_EXIT(r, 0);
  assert_file_matches_golden(out, "testdata/golden/tp_ffn.report.json");
  free_result(&r);
}
END_TEST

START_TEST(test_compile_prints_text_report) {
  run_result r = run_ppcc("compile", model("ppffn"), NULL);
  ASSERT_EXIT(r, 0);
  char *want = t_read_text(t_src_path("testdata/golden/ppffn.report.txt"));
  ck_assert_str_eq(r.out, want);
  free(want);
  free_result(&r);
}
END_TEST

START_TEST(test_report_formats_to_stdout) {
  static const char *const formats[] = {"json", "text", "dot"};
  static const char *const goldens[] = {"json", "txt", "dot"};
  for (int k = 0; k < 3; k++) {
    char opt[64], golden[128];
    snprintf(opt, sizeof opt, "--format=%s", formats[k]);
    run_result r = run_ppcc("report", model("pp_chain"), opt, NULL);
    ASSERT_EXIT(r, 0);
    snprintf(golden, sizeof golden, "testdata/golden/pp_chain.report.%s", goldens[k]);
    char *want = t_read_text(t_src_path(golden));
    ck_assert_msg(strcmp(r.out, want) == 0, "report --format=%s differs from %s", formats[k], golden);
    free(want);
    free_result(&r);
  }
}
END_TEST

START_TEST(test_dump_after_goes_to_stderr) {
  run_result r = run_ppcc("report", model("tp_ffn"), "--dump-after", "insert-transfers", NULL);
  ASSERT_EXIT(r, 0);
  ck_assert_msg(r.err[0] != '\0', "expected a graph dump on stderr");
  free_result(&r);
}
END_TEST

/* ---------------- failures leave no output ---------------- */

static const char bad_model[] =
    "{\"ppcc\": 1, \"name\": \"bad\", \"devices\": 2, \"params\": [], \"inputs\": [],\n"
    " \"ops\": [{\"op\": \"gelu\", \"in\": [\"missing\"], \"out\": [\"y\"]}],\n"
    " \"outputs\": [\"y\"]}\n";

START_TEST(test_bad_model_leaves_no_output) {
  const char *bad = in_scratch("bad.json");
  t_write_text(bad, bad_model);
  const char *keep = in_scratch("keep.json");
  t_write_text(keep, "precious\n");
  char opt_new[600], opt_keep[600];
  snprintf(opt_new, sizeof opt_new, "--report=%s", in_scratch("new.json"));
  snprintf(opt_keep, sizeof opt_keep, "--report=%s", keep);

  run_result r = run_ppcc("compile", bad, opt_new, NULL);
  ASSERT_EXIT(r, 1);
  char prefix[600];
  snprintf(prefix, sizeof prefix, "%s: error: ", bad);
  ASSERT_CONTAINS(r.err, prefix);
  free_result(&r);

  r = run_ppcc("compile", bad, opt_keep, NULL);
  ASSERT_EXIT(r, 1);
  free_result(&r);

  char *kept = t_read_text(keep);
  ck_assert_str_eq(kept, "precious\n");
  free(kept);
  ck_assert(!exists(in_scratch("new.json")));
  ck_assert_int_eq(count_scratch_files(), 2); /* bad.json, keep.json: no temp files left */
}
END_TEST

START_TEST(test_missing_model_is_user_error) {
  run_result r = run_ppcc("compile", in_scratch("nope.json"), NULL);
  ASSERT_EXIT(r, 1);
  ASSERT_CONTAINS(r.err, "nope.json: error:");
  free_result(&r);
}
END_TEST

/* Works either way the binary was built: writes the MLIR, or says clearly
 * that MLIR is missing and writes nothing. */
START_TEST(test_emit_output_or_clear_error) {
  const char *out = in_scratch("tp.mlir");
  run_result r = run_ppcc("compile", model("tp_ffn"), "-o", out, NULL);
  if (r.exit_code == 0) {
    ck_assert(exists(out));
  } else {
    ASSERT_EXIT(r, 1);
    ASSERT_CONTAINS(r.err, "without MLIR");
    ck_assert(!exists(out));
  }
  free_result(&r);
}
END_TEST

static Suite *cli_suite(void) {
  Suite *s = suite_create("cli");
  TCase *help = t_add_tcase(s, "help", 0);
  tcase_add_checked_fixture(help, make_scratch, remove_scratch);
  tcase_add_test(help, test_help);
  tcase_add_test(help, test_version);
  tcase_add_loop_test(help, test_command_help, 0, 3);
  tcase_add_loop_test(help, test_listed_options_parse, 0, (int)(sizeof help_commands / sizeof *help_commands));
  TCase *usage = t_add_tcase(s, "usage", 0);
  tcase_add_checked_fixture(usage, make_scratch, remove_scratch);
  tcase_add_test(usage, test_usage_errors);
  tcase_add_test(usage, test_bad_report_extension);
  TCase *out = t_add_tcase(s, "outputs", 0);
  tcase_add_checked_fixture(out, make_scratch, remove_scratch);
  tcase_add_test(out, test_compile_writes_reports);
  tcase_add_test(out, test_option_value_as_next_argument);
  tcase_add_test(out, test_compile_prints_text_report);
  tcase_add_test(out, test_report_formats_to_stdout);
  tcase_add_test(out, test_dump_after_goes_to_stderr);
  tcase_add_test(out, test_bad_model_leaves_no_output);
  tcase_add_test(out, test_missing_model_is_user_error);
  tcase_add_test(out, test_emit_output_or_clear_error);
  return s;
}

int main(void) { return t_run_suite(cli_suite()); }
