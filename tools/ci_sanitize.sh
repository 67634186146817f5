#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (+ LeakSanitizer), for CI.
#
#   tools/ci_sanitize.sh            # configure + build build-asan, run ctest
#
# Fails if the build fails, if any test fails, or if any process wrote a
# sanitizer report -- including ppcc child processes whose exit code a CLI
# test checks: every report goes to a log file in build-asan/sanitizer-logs/
# (ASAN/UBSAN/LSAN log_path) and the script fails if one exists, so a
# report can never hide behind an expected "exit 1".
#
# MLIR is ON by default (the emitter is ours and must be checked too); its
# prebuilt libraries are not instrumented, which ASan tolerates (it
# intercepts malloc/new globally). Set PPCC_WITH_MLIR=OFF to skip it.
#
# Environment: BUILD_DIR (default build-asan), JOBS (default 2),
# PPCC_WITH_MLIR (default ON), CC (default: the system cc; gcc or clang).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build-asan}
jobs=${JOBS:-2}
with_mlir=${PPCC_WITH_MLIR:-ON}
logs=$root/$build/sanitizer-logs

echo "ci_sanitize: configuring $build (PPCC_SANITIZE=ON, PPCC_WITH_MLIR=$with_mlir)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPCC_SANITIZE=ON \
  -DPPCC_WITH_MLIR="$with_mlir" || { echo "ci_sanitize: configure failed" >&2; exit 1; }
cmake --build "$build" -j "$jobs" || { echo "ci_sanitize: build failed" >&2; exit 1; }

rm -rf "$logs"
mkdir -p "$logs"
# abort_on_error: a report kills the process (SIGABRT), never exit 1.
# check_printf=0: the __vsnprintf_chk interceptor of GCC 12's libsanitizer
# crashes on valid calls (seen in Check's _ck_assert_failed).
common="abort_on_error=1:halt_on_error=1:log_path=$logs/report:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1:check_printf=0:strict_string_checks=1:check_initialization_order=1:detect_invalid_pointer_pairs=0:$common"
export UBSAN_OPTIONS="$common"
export LSAN_OPTIONS="log_path=$logs/report:suppressions=$root/tools/lsan.supp:print_suppressions=0"

ctest --test-dir "$build" --output-on-failure -j "$jobs"
ctest_rc=$?

reports=$(find "$logs" -type f -size +0 | sort)
# LeakSanitizer's stop-the-world cannot always ptrace a thread (a thread
# exiting, or a sandbox that restricts ptrace); it then prints "Unable to
# get registers from thread N." and scans that thread's whole stack as
# reachable, which is conservative: a warning, not a finding. A report
# file holding nothing else is set aside; any other line still fails.
# Likewise its tracer itself may crash while stopping the threads ("Tracer
# caught signal 11", then "LeakSanitizer has encountered a fatal error" and
# two HINT lines, nothing else): seen in CI rehearsals in MPI runs whose
# UCX/watchdog threads were ending. LSan then checks nothing for that
# process; ASan and UBSan stay on, and any other line still fails.
benign='^(==[0-9]+==Unable to get registers from thread [0-9]+\.|Tracer caught signal 11: addr=0x[0-9a-f]+ pc=0x[0-9a-f]+ sp=0x[0-9a-f]+|==[0-9]+==LeakSanitizer has encountered a fatal error\.|==[0-9]+==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1|==[0-9]+==HINT: LeakSanitizer does not work under ptrace \(strace, gdb, etc\))$'
kept=
for r in $reports; do
  if grep -qvE "$benign" "$r"; then
    kept+="$r"$'\n'
  else
    echo "ci_sanitize: ignoring LSan stop-the-world warning only ($r): $(head -c 200 "$r" | tr '\n' ' ')" >&2
  fi
done
reports=$kept
# GCC's UBSan prints to stderr even with log_path: scan the tests' output
# too (ctest keeps it all in LastTest*.log). A UBSan report also aborts the
# process (-fno-sanitize-recover=all), so a ppcc child whose stderr a test
# swallows still fails that test through its exit code (134, not 1).
pattern='runtime error:|ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)'
for f in "$build"/Testing/Temporary/LastTest*.log; do
  [[ -f $f ]] || continue
  if grep -qE "$pattern" "$f"; then
    cp "$f" "$logs/ctest-output.log"
    grep -nE "$pattern" "$f" | sort -u -t: -k3 | head -n 20 > "$logs/ctest-output.summary"
    reports+=$'\n'"$logs/ctest-output.summary"
  fi
done
reports=$(echo "$reports" | grep . || true)
if [[ -n $reports ]]; then
  echo "ci_sanitize: sanitizer reports:" >&2
  for r in $reports; do
    echo "==== $r" >&2
    head -n 60 "$r" >&2
  done
fi
if [[ $ctest_rc -ne 0 || -n $reports ]]; then
  echo "ci_sanitize: FAILED (ctest exit $ctest_rc, $(echo "$reports" | grep -c .) sanitizer report file(s))" >&2
  exit 1
fi
echo "ci_sanitize: all tests passed with no sanitizer report"
