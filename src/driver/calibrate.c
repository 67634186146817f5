/* `ppcc calibrate [-o FILE] [--threads N]`: measures this machine's speeds
 * (src/runtime/calibrate.c) and writes the calibration file that
 * --calibration reads (include/ppcc/predict.h). No model argument. */
#include <stdio.h>
#include <string.h>
#include "driver.h"
#ifdef PPCC_HAVE_RUNTIME
#include "ppcc/runtime.h"
#endif

void cli_help_calibrate(FILE *out) {
  fputs("Usage: ppcc calibrate [-o CALIB.json] [--threads N]\n"
        "\n"
        "Measures this machine once for the time model of the placement report\n"
        "(ppcc report/compile/run --calibration=CALIB.json): GEMM GFLOP/s through\n"
        "the runtime's sgemm (OpenBLAS when built with it) for 1..N kernel threads,\n"
        "elementwise (c = a + b) and copy GB/s per thread with 1..N threads\n"
        "streaming at once, and the fixed cost of a kernel call. Best of several\n"
        "runs each; takes a few seconds.\n"
        "\n"
        "Options:\n"
        "  -o FILE        write the calibration JSON to FILE (default: stdout),\n"
        "                 atomically\n"
        "  --threads N    measure 1..N threads (default: all cores, at most 64)\n"
        "  -h, --help     show this help\n",
        out);
}

int cli_cmd_calibrate(int argc, char **argv) {
  const char *out = "-";
  long long threads = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *value = NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      cli_help_calibrate(stdout);
      return PPCC_OK;
    }
    if (strcmp(a, "-o") == 0 || strcmp(a, "--threads") == 0) {
      if (i + 1 >= argc) return cli_usage_error("calibrate", "option '%s' needs a value", a);
      value = argv[++i];
    } else if (strncmp(a, "--threads=", 10) == 0) {
      value = a + 10;
      a = "--threads";
    } else {
      return cli_usage_error("calibrate", "unexpected argument '%s'", a);
    }
    if (strcmp(a, "-o") == 0) out = value;
    else if (cli_parse_int("calibrate", "threads", value, 1, 4096, &threads)) return PPCC_ERR_USAGE;
  }
#ifdef PPCC_HAVE_RUNTIME
  ppcc_diag d;
  ppcc_diag_init(&d, "ppcc calibrate", stderr);
  ppcc_calibration c;
  ppcc_status st = ppcc_calibrate(&c, (int)threads, strcmp(out, "-") == 0 ? stderr : stdout, &d);
  if (!st) st = ppcc_calibration_write(out, &c, &d);
  return st;
#else
  fprintf(stderr, "ppcc calibrate: error: this ppcc was built without the runtime\n");
  return PPCC_ERR_USER;
#endif
}
