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
