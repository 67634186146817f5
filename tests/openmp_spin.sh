#!/usr/bin/env bash
# libgomp's spin (ppcc_rt_tame_threads): ppcc runs itself again with
# GOMP_SPINCOUNT=1000 where neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is
# set (libgomp's default spin left a TP1 PP2 decode 20x slower on 2
# cores), and leaves a user's setting alone. Read from the running
# process's environment (/proc/PID/environ: after the re-execution, the
# new program's).
# Usage: openmp_spin.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# environ_of ENV_ARGS...: the environment of a long `ppcc run` started with
# `env ENV_ARGS...`, read once it has used 0.2 s of CPU (long past its
# start, where it re-executes itself: it is running forwards by then)
environ_of() {
  env "$@" "$ppcc" run "$src/testdata/models/pp_chain.json" --random-weights 1 --backend=interp \
    --repeat 1048576 > "$tmp/out" 2> "$tmp/err" &
  pid=$!
  local ticks=0
  for ((i = 0; i < 1200 && ticks < 20; i++)); do
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/err"; echo "openmp_spin: ppcc run exited early" >&2; exit 1; }
    sleep 0.05
    ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
  done
  ((ticks >= 20)) || { echo "openmp_spin: ppcc run made no progress in 60 s" >&2; exit 1; }
  tr '\0' '\n' < "/proc/$pid/environ" > "$tmp/environ"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
}

environ_of -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY
grep -qx "GOMP_SPINCOUNT=1000" "$tmp/environ" ||
  { echo "openmp_spin: the running ppcc has no GOMP_SPINCOUNT=1000" >&2; exit 1; }

environ_of -u OMP_WAIT_POLICY GOMP_SPINCOUNT=7
grep -qx "GOMP_SPINCOUNT=7" "$tmp/environ" ||
  { echo "openmp_spin: a user's GOMP_SPINCOUNT=7 was not kept" >&2; exit 1; }

environ_of -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive
grep -qx "OMP_WAIT_POLICY=passive" "$tmp/environ" && ! grep -q "^GOMP_SPINCOUNT=" "$tmp/environ" ||
  { echo "openmp_spin: a user's OMP_WAIT_POLICY=passive was not left alone" >&2; exit 1; }
echo "openmp_spin: ok"
