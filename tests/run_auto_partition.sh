#!/usr/bin/env bash
# ppcc run on a model without placement, auto-partitioned with --pp/--tp:
# every split runs and matches the unsharded reference (--check).
# Usage: run_auto_partition.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
model=$2/testdata/auto/auto_ffn.json
for split in "--pp 2 --tp 2" "--pp 4 --tp 1" "--pp 1 --tp 4"; do
  # shellcheck disable=SC2086 # the split is two options
  out=$("$ppcc" run "$model" $split --check --random-weights 3 --backend=interp 2>&1) ||
    { echo "$out"; echo "run_auto_partition: $split failed" >&2; exit 1; }
  grep -q "): ok" <<<"$out" || { echo "$out"; echo "run_auto_partition: $split: no check line" >&2; exit 1; }
done
echo "run_auto_partition: auto_ffn runs and checks for pp2xtp2, pp4xtp1, pp1xtp4"
