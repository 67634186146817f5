#!/usr/bin/env bash
# A gen_llama model auto-partitioned over stage TP sizes 4,1,2,1 with a
# devices spec (tests/devices_spec.sh) gives, on 4 MPI ranks (one stage
# each, the TP-4 and TP-2 collectives inside a rank, the unshard/transfer
# crossings between ranks), the same bytes as one process.
source "$(dirname "$0")/common.sh"

"$tools/gen_llama" --layers 8 --kv-heads 4 --tp 1 --pp 8 --placement none -o "$tmp/l8.json" ||
  fail "gen_llama failed"
args=(--tp 4,1,2,1 --devices-spec "$src/testdata/devices_spec/mixed8.json" --random-weights 7 --backend=interp)
single "$tmp/l8.json" "${args[@]}" --output-dir "$tmp/one" > /dev/null || fail "one-process run failed"
mpirun 4 "$tmp/l8.json" "${args[@]}" --output-dir "$tmp/four" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "4 ranks failed"; }
n=0
for f in "$tmp/one"/*.npy; do
  cmp -s "$f" "$tmp/four/$(basename "$f")" || fail "$(basename "$f") differs between 1 process and 4 ranks"
  n=$((n + 1))
done
[[ $n -eq 18 ]] || fail "$n outputs, want 18"
echo "$name: tp 4,1,2,1 on 4 ranks: $n outputs bit-identical to one process"

# Links between ranks: `ppcc calibrate --links` on 2 ranks writes a spec
# (a device per rank on host = rank, one measured link), and a 2-stage
# pipeline run with it prints the prediction over that link next to the
# measured wall; a links spec with hosts given per device is used as is.
timeout -k 5 "$run_limit" "$mpiexec" -n 2 "$ppcc" calibrate --links -o "$tmp/links.json" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "calibrate --links on 2 ranks failed"; }
grep -qE '^\{"devices": \[\{"host": 0\}, \{"host": 1\}\],$' "$tmp/links.json" &&
  grep -qE '^   \{"hosts": \[0, 1\], "bandwidth": [0-9.e+]+, "latency": [0-9.e+-]+\}\]\}$' "$tmp/links.json" &&
  grep -q "^link rank 0 - rank 1: .* Mbit/s, latency .* us$" "$tmp/log" ||
  { cat "$tmp/links.json" "$tmp/log"; fail "calibrate --links: unexpected spec"; }
rc=0
"$ppcc" calibrate --links > "$tmp/log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "error: --links measures between MPI ranks" "$tmp/log" ||
  { cat "$tmp/log"; fail "calibrate --links without mpiexec is not a usage error"; }
"$tools/gen_pipeline" --blocks 2 --tp 1 --pp 2 --batch 8 -o "$tmp/pipe.json" || fail "gen_pipeline failed"
mpirun 2 "$tmp/pipe.json" --random-weights 3 --backend=interp --microbatches 2 --devices-spec "$tmp/links.json" \
  > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "2 ranks with the measured links failed"; }
grep -qE "^predicted over the devices spec's links \(2 microbatches, uncalibrated\): wall [0-9.]+ ms, unoverlapped [0-9.]+ ms$" \
  "$tmp/log" && grep -q "^ran .* over 2 MPI ranks in" "$tmp/log" ||
  { cat "$tmp/log"; fail "no prediction over the links next to the run"; }
echo "$name: calibrate --links on 2 ranks, its spec predicts a 2-rank pipeline: $(grep -o 'wall [0-9.]* ms, unoverlapped [0-9.]* ms' "$tmp/log")"
