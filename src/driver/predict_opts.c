/* --microbatches and --calibration of `ppcc compile` and `ppcc report`
 * (the prediction in the report), also read by `ppcc run --check-plan`. */
#include <string.h>
#include "driver.h"

const cli_option cli_predict_options[] = {
  CLI_INT_ROW("microbatches", "M", cli_predict, opts.microbatches, 1, 1 << 20,
              "the report's prediction (peak memory per device, time\n"
              "per stage, pipeline bubble) for M microbatches (default 1)"),
  CLI_TEXT_ROW("calibration", "FILE", cli_predict, calibration_path,
               "speeds measured by 'ppcc calibrate' (default, and the\n"
               "report then says \"uncalibrated\"; also --calibration=none;\n"
               "run --check-plan then measures this machine once and\n"
               "caches it in $XDG_CACHE_HOME/ppcc or ~/.cache/ppcc,\n"
               "unless PPCC_CALIBRATION_CACHE=0): GEMM 20 GFLOP/s,\n"
               "elementwise 5 GB/s and 1 GFLOP/s, 2 us per op and 2 us\n"
               "more per GEMM, a core per device). Stage time = the\n"
               "slowest device's compute ops, each op max(FLOPs/rate,\n"
               "bytes/bandwidth) + its fixed cost. Predicted peak\n"
               "memory = params + activations of the microbatches in\n"
               "flight + KV cache + transfer buffers: exactly the value\n"
               "buffers the interpreter holds (params resident, a\n"
               "buffer freed after its last reader, transfer\n"
               "destinations; include/ppcc/predict.h)"),
  CLI_END_ROW,
};

ppcc_status cli_predict_load(cli_predict *p, ppcc_diag *d) {
  ppcc_calibration_defaults(&p->calib);
  p->opts.calib = &p->calib;
  if (!p->calibration_path || strcmp(p->calibration_path, "none") == 0) return PPCC_OK;
  ppcc_diag_init(d, NULL, stderr);
  ppcc_status st = ppcc_calibration_read(p->calibration_path, &p->calib, d);
  return st == PPCC_OK ? PPCC_OK : PPCC_ERR_USER;
}
