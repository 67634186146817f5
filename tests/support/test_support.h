/* Helpers shared by the Check test programs. */
#ifndef PPCC_TEST_SUPPORT_H
#define PPCC_TEST_SUPPORT_H
#include <check.h>
#include <stddef.h>
#include <sys/types.h>
#include "ppcc/diag.h"
#include "ppcc/graph.h"

/* Loads a model from a JSON string and runs every pass. Returns the graph
 * (caller frees) or NULL; d receives the diagnostics (quiet). */
ppcc_graph *t_compile(const char *json, ppcc_diag *d);
/* Compiles a model assembled from its params, inputs, ops and outputs
 * lists, written with single quotes for readability (turned into double
 * quotes). NULL on error, with the diagnostics in d. */
ppcc_graph *t_model(int devices, const char *params, const char *inputs, const char *ops, const char *outputs,
                    ppcc_diag *d);
/* tools/pipeline_model.h's FFN with pp blocks over pp stages of tp
 * devices and the given batch, compiled; fails the test on an error. */
ppcc_graph *t_pipeline_graph(long tp, long pp, long batch);
/* Same, from a path relative to the source dir (e.g. "testdata/models/x.json"). */
ppcc_graph *t_compile_file(const char *rel_path, ppcc_diag *d);
/* Path under the source dir, in a static buffer. */
const char *t_src_path(const char *rel);
/* Value by name, failing the test if missing. */
const ppcc_value *t_value(const ppcc_graph *g, const char *name);
/* Runs a Check suite and returns the process exit code. */
int t_run_suite(Suite *s);
/* Creates a test case, adds it to s and returns it (add its tests after).
 * timeout in seconds; 0 keeps Check's default (CK_DEFAULT_TIMEOUT). */
TCase *t_add_tcase(Suite *s, const char *name, double timeout);

/* ---- files and directories (each fails the test on a setup error) ---- */

/* A new empty directory /tmp/ppcc_TAG.XXXXXX; the path is malloc'd. */
char *t_make_temp_dir(const char *tag);
/* "DIR/NAME", malloc'd. */
char *t_path_join(const char *dir, const char *name);
/* "DIR/NAME" in one of 8 rotating static buffers: valid until 8 more calls. */
const char *t_path_in(const char *dir, const char *name);
/* Removes dir and everything below it. Returns how many files (entries
 * that are not directories, at any depth) were removed; 0 if dir is
 * missing. */
int t_remove_tree(const char *dir);
/* Entries in dir other than "." and ".."; 0 if dir cannot be opened. */
int t_count_entries(const char *dir);
/* The whole file, malloc'd and NUL-terminated (the terminator is not
 * counted in *len; len may be NULL). NULL if it cannot be read. */
char *t_read_file(const char *path, size_t *len);
/* Same, but "" (still malloc'd) if the file cannot be read. */
char *t_read_text(const char *path);
/* Writes exactly len bytes to path (created or truncated). */
void t_write_file(const char *path, const void *data, size_t len);
/* Writes a NUL-terminated string to path. */
void t_write_text(const char *path, const char *text);

/* ---- running the ppcc binary (PPCC_BINARY) and its sibling tools ---- */

/* Path of a program built next to the ppcc binary (e.g. "gen_llama"), in a
 * static buffer. */
const char *t_tool_path(const char *name);
/* Starts PPCC_BINARY with argv (NULL-terminated; argv[0] is passed as
 * given) in directory cwd (NULL: the current one), stdin from /dev/null
 * and stdout / stderr into the given files (NULL: /dev/null). Returns the
 * pid, for t_wait. */
pid_t t_spawn_ppcc(const char *const *argv, const char *cwd, const char *stdout_path, const char *stderr_path);
/* Waits for pid; returns its raw wait status (WIFEXITED etc.). */
int t_wait(pid_t pid);
/* Runs PPCC_BINARY to completion with stdout to /dev/null and stderr into
 * stderr_path (NULL: /dev/null); returns the raw wait status. */
int t_run_ppcc(const char *const *argv, const char *stderr_path);

#endif
