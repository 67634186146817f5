/* TEST-ONLY fault injection (include/ppcc/test_inject.h): the one place
 * that reads PPCC_TEST_INJECT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ppcc/test_inject.h"

bool ppcc_test_inject(const char *kind, char *arg, size_t n) {
  const char *spec = getenv("PPCC_TEST_INJECT");
  size_t k = strlen(kind);
  for (const char *s = spec; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
    size_t len = strcspn(s, ",");
    if (len < k || strncmp(s, kind, k) != 0 || (len > k && s[k] != ':')) continue;
    const char *a = len > k ? s + k + 1 : s + k;
    if (arg && n > 0) snprintf(arg, n, "%.*s", (int)(s + len - a), a);
    return true;
  }
  return false;
}

bool ppcc_test_inject_wrong_kernel(const char *value, int shard, bool jit) {
  char arg[512];
  bool asked = ppcc_test_inject("wrong-kernel", arg, sizeof arg) ||
               (jit && ppcc_test_inject("wrong-kernel-jit", arg, sizeof arg));
  if (!asked) return false;
  char *colon = strrchr(arg, ':'), *end;
  if (!colon || colon[1] == '\0') return false;
  long s = strtol(colon + 1, &end, 10);
  *colon = '\0';
  return *end == '\0' && s == shard && strcmp(arg, value) == 0;
}
