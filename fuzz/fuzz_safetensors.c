/* libFuzzer target: the .safetensors loader (src/runtime/io/safetensors.c via
 * ppcc_weights_open / ppcc_weights_get); see weights_harness.h. */
#include "weights_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_weights_one(data, size, "fuzz.safetensors");
  return 0;
}
