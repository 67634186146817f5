/* TEST-ONLY fault injection, so tests can prove that `ppcc run --check`
 * names the first divergent value (tests/run_divergence.sh). The switch is
 * the environment variable PPCC_TEST_INJECT, a comma-separated list of the
 * specs below, read only in src/ir/test_inject.c; unset (the normal case)
 * it changes nothing.
 *   partial-as-replicated:VALUE   a wrong sharding rule: the op computing
 *       VALUE declares its partial sums (unreduced) replicated, so the
 *       all_reduce after it has nothing left to reduce (both backends);
 *   wrong-kernel:VALUE:SHARD      a wrong kernel: shard SHARD of VALUE (a
 *       float compute result) comes out doubled (both backends, sharded
 *       runs only);
 *   wrong-kernel-jit:VALUE:SHARD  the same on the JIT only;
 *   jit-no-capture                the JIT refuses --check's capture run
 *       (the interpreter captures instead);
 *   calibration:FILE              the calibration `run --check-plan`
 *       measures and caches on first use is FILE's (no test depends on
 *       timing: src/driver/calibration_cache.c). */
#ifndef PPCC_TEST_INJECT_H
#define PPCC_TEST_INJECT_H
#include <stdbool.h>
#include <stddef.h>

/* Whether injection `kind` is asked; its argument (the text after
 * "kind:", "" if none) is copied into arg when arg is not NULL. */
bool ppcc_test_inject(const char *kind, char *arg, size_t n);
/* Whether shard `shard` of the value named `value` gets a wrong kernel on
 * this backend (jit: the JIT, else the interpreter). */
bool ppcc_test_inject_wrong_kernel(const char *value, int shard, bool jit);

#endif
