/* libFuzzer target: the IREE parameter archive loader (src/runtime/io/irpa.c
 * via ppcc_weights_open / ppcc_weights_get); see weights_harness.h.
 * Inputs without the "IRPA" magic would go to the safetensors loader,
 * which has its own target, so they are skipped here. */
#include "weights_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4 || memcmp(data, "IRPA", 4) != 0) return 0;
  fuzz_weights_one(data, size, "fuzz.irpa");
  return 0;
}
