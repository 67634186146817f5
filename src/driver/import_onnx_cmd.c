/* `ppcc import onnx MODEL.onnx -o model.json [--weights-out W.safetensors]
 * [--shape NAME=D0,D1,...]... [--tp T --pp P]` (DESIGN §9). The imported
 * graph is checked by running every pass (with the auto-partition request
 * when --tp/--pp are given) before anything is written. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "driver.h"
#include "ppcc/frontend.h"
#include "ppcc/import_onnx.h"
#include "ppcc/passes.h"

typedef struct import_args {
  const char *out_path, *weights_out;
  ppcc_onnx_shape *shapes;
  char **shape_text; /* copies the shapes' names point into */
  int n_shapes;
  long long devices; /* --devices, 0: T*P */
  cli_partition partition;
} import_args;

static ppcc_status add_shape(const cli_value *v) {
  import_args *a = v->args;
  char *copy = strdup(v->text);
  if (!copy) return PPCC_ERR_INTERNAL;
  a->shape_text[a->n_shapes] = copy;
  if (!ppcc_onnx_parse_shape(copy, &a->shapes[a->n_shapes]))
    return cli_usage_error("import", "--shape needs NAME=D0,D1,... (non-negative dims, at most %d), got '%s'",
                           PPCC_MAX_RANK, v->text);
  a->n_shapes++;
  return PPCC_OK;
}

static const cli_option import_options[] = {
  CLI_TEXT_ROW("o", "FILE", import_args, out_path, "the model.json to write (required)"),
  CLI_TEXT_ROW("weights-out", "FILE", import_args, weights_out, "write the params as safetensors"),
  CLI_CALL_ROW("shape", "NAME=DIMS", import_args, shapes, add_shape,
               "static shape of a graph input with symbolic dims"),
  CLI_INT_ROW("devices", "N", import_args, devices, 1, PPCC_MAX_DEVICES,
              "devices the model declares (default T*P, or 1), so an\n"
              "unplaced model can be auto-partitioned later"),
  CLI_GROUP_ROW(import_args, partition, cli_partition_options),
  CLI_END_ROW,
};

static const cli_command import_onnx_command = {
  .name = "import",
  .usage = "Usage: ppcc import onnx MODEL.onnx -o MODEL.json [--weights-out W.safetensors]\n"
           "                        [--shape NAME=D0,D1,...]... [--tp=T --pp=P]\n"
           "\n"
           "Reads an ONNX model (opsets 13 to 18; external-data tensors from files in\n"
           "the model's folder) and writes a ppcc model.json; its initializers become\n"
           "params, written to --weights-out. Nodes whose operands are all constant\n"
           "(shapes, masks, rotary tables) are evaluated at import by the runtime's\n"
           "kernels; RMSNorm, erf GELU, SiLU and scaled-dot-product attention become\n"
           "fused ppcc ops; BatchNormalization folds into the Conv before it.\n"
           "Attributes are checked against each op's ONNX schema.\n",
  .options = import_options,
  .epilog = "\n"
            "With --tp/--pp the model declares T*P devices; the placement is checked\n"
            "here, and ppcc report/run take the same flags.\n",
};

void cli_help_import_onnx(FILE *out) { cli_print_help(&import_onnx_command, out); }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Runs the passes up to and including auto-partition on g. */
static ppcc_status run_until_partition(ppcc_graph *g, ppcc_diag *d) {
  int n = 0;
  const ppcc_pass_info *passes = ppcc_pass_list(&n);
  for (int i = 0; i < n; i++) {
    ppcc_status st = passes[i].run(g, d);
    if (st || strcmp(passes[i].name, "auto-partition") == 0) return st;
  }
  return PPCC_OK;
}

static ppcc_status load_and_check(const ppcc_onnx_result *r, ppcc_diag *d) {
  ppcc_graph *g = ppcc_load_model_string(r->model_json, r->model_len, d);
  if (!g) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "internal error: the imported model.json does not load");
  ppcc_status st = ppcc_run_passes(g, NULL, NULL, d);
  ppcc_graph_free(g);
  return st;
}

/* With --tp/--pp the written model is the placed one (auto-partition's
 * layouts, devices and inserted ops); either way it must load and pass
 * every pass before anything is written. */
static ppcc_status place_and_check(ppcc_onnx_result *r, const cli_partition *req, ppcc_diag *d) {
  if (req->pp <= 0 && req->tp <= 0) return load_and_check(r, d);
  ppcc_graph *g = ppcc_load_model_string(r->model_json, r->model_len, d);
  if (!g) return ppcc_error_status(d, PPCC_ERR_INTERNAL, "internal error: the imported model.json does not load");
  cli_apply_partition(g, req);
  ppcc_status st = run_until_partition(g, d);
  if (!st) st = ppcc_onnx_write_placed(g, r, d);
  ppcc_graph_free(g);
  return st ? st : load_and_check(r, d);
}

static int import_onnx(int argc, char **argv) {
  import_args a = {0};
  a.shapes = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.shapes);
  a.shape_text = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a.shape_text);
  if (!a.shapes || !a.shape_text) return PPCC_ERR_INTERNAL;
  cli_parse p = {.cmd = &import_onnx_command, .args = &a};
  ppcc_status st = cli_parse_args(&p, argc, argv);
  if (!st && !p.help && !a.out_path) st = cli_usage_error("import", "-o MODEL.json is required");
  if (!st && !p.help) st = cli_check_partition("import", &a.partition);
  if (!st && !p.help) {
    ppcc_diag d;
    ppcc_diag_init(&d, p.model_path, stderr);
    ppcc_onnx_options opts = {.shapes = a.shapes, .n_shapes = a.n_shapes,
                              .devices = a.devices > 0 ? (int)a.devices : cli_partition_devices(&a.partition)};
    ppcc_onnx_result r = {0};
    cli_file_arg files[3] = {{"the model", p.model_path, false}, {"-o", a.out_path, true},
                             {"--weights-out", a.weights_out, true}};
    st = cli_check_distinct_files(files, 3, &d);
    double t0 = now_ms();
    if (!st) st = ppcc_import_onnx_file(p.model_path, &opts, &r, &d);
    double t1 = now_ms();
    if (!st) st = place_and_check(&r, &a.partition, &d);
    if (!st) {
      const char *paths[2] = {a.out_path, a.weights_out};
      cli_buffer bufs[2] = {{r.model_json, r.model_len}, {(char *)r.weights, r.weights_len}};
      st = cli_write_outputs(paths, bufs, a.weights_out ? 2 : 1, &d);
    }
    if (!st)
      printf("imported %d ONNX nodes -> %d ppcc ops, %d params (%zu bytes of weights) in %.1f ms\n", r.n_nodes, r.n_ops,
             r.n_params, r.weights_len, t1 - t0);
    ppcc_onnx_result_free(&r);
  }
  for (int i = 0; i < argc; i++) free(a.shape_text[i]);
  free(a.shape_text);
  free(a.shapes);
  return st;
}

/* `ppcc import SOURCE ...`: the ONNX source; other importers add theirs. */
int cli_cmd_import_onnx(int argc, char **argv, bool *handled) {
  *handled = argc > 0 && strcmp(argv[0], "onnx") == 0;
  return *handled ? import_onnx(argc - 1, argv + 1) : PPCC_OK;
}
