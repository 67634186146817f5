#!/usr/bin/env bash
# Bounded libFuzzer runs of every fuzz target (fuzz/), for CI.
#
#   tools/run_fuzz.sh [SECONDS] [TARGET...]     (default: 60 s, all targets)
#
# Builds build-fuzz with clang-14 (-DPPCC_FUZZ=ON, ASan + UBSan, MLIR on:
# fuzz_run runs the JIT next to the interpreter), then for each target:
#   1. replays its seed corpus testdata/fuzz/<name>/ and the matching
#      regression inputs of testdata/bad/ once (a fixed crash stays fixed);
#   2. fuzzes for SECONDS from a scratch copy of the seed corpus plus those
#      regression inputs (the checked-in files are never modified).
# Prints the executions per target. Exits non-zero if any target crashed,
# leaked, hung or hit a sanitizer report; the crashing input is saved in
# build-fuzz/crashes/<target>/ (copy it to testdata/bad/ as a regression
# input once the bug is fixed).
#
# Environment: BUILD_DIR (default build-fuzz), CC (default clang-14),
# JOBS (build parallelism, default 2), FUZZ_TIMEOUT (seconds per input
# before libFuzzer calls it a hang, default 10).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[0-9]+$ ]]; then
  echo "usage: tools/run_fuzz.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
all_targets=(fuzz_model fuzz_npy fuzz_safetensors fuzz_irpa fuzz_run fuzz_gguf fuzz_hf_config fuzz_onnx
             fuzz_devices_spec fuzz_quant fuzz_tokenizer_json fuzz_calibration)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all_targets[@]}")

build=${BUILD_DIR:-build-fuzz}
cc=${CC:-clang-14}
cxx=${CXX:-clang++-14}
jobs=${JOBS:-2}
timeout_per_input=${FUZZ_TIMEOUT:-10}

echo "run_fuzz: configuring $build with $cc"
mkdir -p "$build"
if ! CC=$cc CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPPCC_FUZZ=ON -DPPCC_SANITIZE=ON -DPPCC_WITH_MLIR=ON -DBUILD_TESTING=OFF >"$build/configure.log" 2>&1; then
  cat "$build/configure.log" >&2
  echo "run_fuzz: configure failed" >&2
  exit 1
fi
if ! cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  echo "run_fuzz: build failed" >&2
  exit 1
fi

# Regression inputs of testdata/bad/ each target replays.
bad_inputs() {
  case $1 in
    fuzz_model) find testdata/bad testdata/fix -type f -name '*.json' ;;
    fuzz_npy) find testdata/bad -type f -name '*.npy' ;;
    fuzz_safetensors) find testdata/bad -type f -name '*.safetensors' ;;
    fuzz_irpa) find testdata/bad -type f -name '*.irpa' ;;
    fuzz_gguf) find testdata/bad -type f -name '*.gguf' ;;
    fuzz_hf_config) find testdata/bad -type f -name 'config*.json' ;;
    fuzz_onnx) find testdata/onnx/bad -type f -name '*.onnx' ;;
    fuzz_devices_spec) find testdata/bad_devices_spec -type f -name '*.json' ;;
  esac 2>/dev/null | sort
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
summary=()
for t in "${targets[@]}"; do
  exe=$build/fuzz/$t
  name=${t#fuzz_}
  seeds=testdata/fuzz/$name
  if [[ ! -x $exe ]]; then
    echo "run_fuzz: $t was not built (is the runtime library missing?)" >&2
    summary+=("$t: NOT BUILT")
    status=1
    continue
  fi
  crashes=$build/crashes/$t
  work=$build/corpus/$t
  rm -rf "$work"
  mkdir -p "$crashes" "$work"
  [[ -d $seeds ]] && cp "$seeds"/* "$work"/ 2>/dev/null
  # The regression inputs seed the error paths too.
  bad_inputs "$t" | while read -r f; do cp "$f" "$work/bad_${f##*/}"; done
  flags=(-timeout="$timeout_per_input" -rss_limit_mb=2048 -malloc_limit_mb=1024
         -artifact_prefix="$crashes/" -print_final_stats=1)
  [[ -f fuzz/$t.dict ]] && flags+=(-dict="fuzz/$t.dict")
  [[ $t == fuzz_model ]] && flags+=(-max_len=16384)
  [[ $t == fuzz_onnx ]] && flags+=(-max_len=65536)
  log=$build/$t.log

  # 1. replay seeds and regression inputs once
  mapfile -t replay < <( { [[ -d $seeds ]] && find "$seeds" -type f; bad_inputs "$t"; } | sort)
  if [[ ${#replay[@]} -gt 0 ]]; then
    if ! "$exe" "${flags[@]}" "${replay[@]}" >"$log.replay" 2>&1; then
      echo "run_fuzz: $t FAILED on a seed or regression input:" >&2
      tail -n 40 "$log.replay" >&2
      summary+=("$t: FAILED replaying ${#replay[@]} inputs (see $log.replay)")
      status=1
      continue
    fi
  fi

  # 2. bounded fuzzing
  echo "run_fuzz: $t for ${seconds}s (${#replay[@]} inputs replayed)"
  "$exe" "${flags[@]}" -max_total_time="$seconds" "$work" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  corpus=$(find "$work" -type f | wc -l)
  if [[ $rc -ne 0 ]]; then
    echo "run_fuzz: $t CRASHED (exit $rc); input saved in $crashes/:" >&2
    ls -1 "$crashes" >&2
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz[a-z_ ]*:' "$log" >&2
    tail -n 60 "$log" >&2
    summary+=("$t: CRASH after ${execs:-?} execs (see $log)")
    status=1
  else
    summary+=("$t: ${execs:-?} execs in ${seconds}s, corpus $corpus files, no crash")
  fi
done

echo "run_fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit $status
