#!/usr/bin/env bash
# ppcc run --deterministic: outputs with --microbatches 1, 2, 4 and 8 are the
# same files byte for byte (and each run passes --check).
# Usage: run_deterministic.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for model in ppffn tp_ffn; do
  for m in 1 2 4 8; do
    "$ppcc" run "$src/testdata/models/$model.json" --random-weights 7 --input "x=$src/testdata/inputs/x.npy" \
      --microbatches "$m" --deterministic --check --output-dir "$tmp/$model.m$m" > "$tmp/log" ||
      { cat "$tmp/log"; echo "run_deterministic: $model --microbatches $m failed" >&2; exit 1; }
  done
  for m in 2 4 8; do
    for f in "$tmp/$model.m1"/*.npy; do
      cmp "$f" "$tmp/$model.m$m/$(basename "$f")" ||
        { echo "run_deterministic: $model: $(basename "$f") differs between --microbatches 1 and $m" >&2; exit 1; }
    done
  done
done
echo "run_deterministic: ppffn and tp_ffn identical for --microbatches 1, 2, 4, 8"
