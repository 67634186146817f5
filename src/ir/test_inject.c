/* TEST-ONLY fault injection (include/ppcc/test_inject.h): the one place
 * that reads PPCC_TEST_INJECT. */
#include <stdlib.h>
#include <string.h>
#include "ppcc/test_inject.h"

const char *ppcc_test_inject_arg(const char *kind) {
  const char *spec = getenv("PPCC_TEST_INJECT");
  size_t n = strlen(kind);
  if (!spec || strncmp(spec, kind, n) != 0 || spec[n] != ':') return NULL;
  return spec + n + 1;
}

bool ppcc_test_inject_wrong_kernel(const char *value, int shard) {
  const char *arg = ppcc_test_inject_arg("wrong-kernel");
  const char *colon = arg ? strrchr(arg, ':') : NULL;
  if (!colon || colon[1] == '\0') return false;
  char *end;
  long s = strtol(colon + 1, &end, 10);
  return *end == '\0' && s == shard && strlen(value) == (size_t)(colon - arg) && strncmp(arg, value, (size_t)(colon - arg)) == 0;
}
