#!/usr/bin/env bash
# ppcc run prints load, first call and steady state apart (issue 23): a
# "load:" line (weights, inputs and resident param shards, before any
# compute), a "first call:" line (the whole call beside its device
# programs) and, with --repeat N, the device programs' and the whole
# call's min and median over the N more forwards. Checked on both backends
# for presence and consistency (a whole call is never shorter than its
# device programs), never against a time limit.
# Usage: run_timings.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { cat "$tmp/log" >&2; echo "run_timings: $*" >&2; exit 1; }
backends="interp"
help=$("$ppcc" run --help)
grep -q 'backend=jit|interp' <<<"$help" && backends="interp jit"
for backend in $backends; do
  "$ppcc" run "$src/testdata/models/tiny_llama.json" --random-weights 3 --repeat 3 --threads 2 \
    --backend=$backend > "$tmp/log" 2>&1 || fail "$backend: run failed"
  python3 - "$tmp/log" "$backend" <<'PY' || fail "$backend: timing lines wrong"
import re, sys
log, backend = open(sys.argv[1]).read(), sys.argv[2]
num = r"([0-9]+\.[0-9]+)"
def one(pattern):
    m = re.findall(pattern, log, re.M)
    assert len(m) == 1, f"{backend}: {len(m)} lines match {pattern!r}"
    return [float(x) for x in (m[0] if isinstance(m[0], tuple) else (m[0],))]
# order: load before the first call before the steady state
order = [log.index(k) for k in ("load: ", "ran 'tiny_llama'", "first call: ", "forward (steady state", "call (steady state")]
assert order == sorted(order), f"{backend}: lines out of order"
load, shards, made = one(r"^load: " + num + r" ms \(weights and inputs; ([0-9]+) param shards resident, " + num + r" MiB")
assert load >= 0 and shards >= 4, f"{backend}: load line {load} ms, {shards} shards"
(ran,) = one(r"^ran 'tiny_llama' on 4 devices in " + num + " ms")
call, dev, rest = one(r"^first call: " + num + r" ms \(device programs " + num + r" ms; leaves bound and outputs collected (-?[0-9]+\.[0-9]+) ms\)")
assert dev == ran and call >= dev and abs(call - dev - rest) < 0.002, f"{backend}: first call {call}, {dev}, {rest}"
fmin, fmed = one(r"^forward \(steady state, 3 runs\): min " + num + " ms, median " + num + " ms")
cmin, cmed = one(r"^call \(steady state, 3 runs\): min " + num + " ms, median " + num + " ms \(whole call")
assert 0 < fmin <= fmed and fmin <= cmin <= cmed and fmed <= cmed, f"{backend}: steady {fmin} {fmed} {cmin} {cmed}"
print(f"run_timings: {backend}: load {load} ms ({shards} shards), first call {call} ms (device {dev}), "
      f"steady forward {fmin}/{fmed} ms, call {cmin}/{cmed} ms")
PY
done
