/* TEST-ONLY fault injection, so tests can prove that `ppcc run --check`
 * names the first divergent value (tests/run_divergence.sh). The switch is
 * the environment variable PPCC_TEST_INJECT, read only in
 * src/ir/test_inject.c; unset (the normal case) it changes nothing.
 *   partial-as-replicated:VALUE   a wrong sharding rule: the op computing
 *       VALUE declares its partial sums (unreduced) replicated, so the
 *       all_reduce after it has nothing left to reduce (both backends);
 *   wrong-kernel:VALUE:SHARD      a wrong kernel: shard SHARD of VALUE is
 *       computed as twice its value (both backends; sharded runs only). */
#ifndef PPCC_TEST_INJECT_H
#define PPCC_TEST_INJECT_H
#include <stdbool.h>

/* The argument of injection `kind` ("partial-as-replicated"), or NULL. */
const char *ppcc_test_inject_arg(const char *kind);
/* Whether wrong-kernel names shard `shard` of the value named `value`. */
bool ppcc_test_inject_wrong_kernel(const char *value, int shard);

#endif
