#!/usr/bin/env bash
# The executable MLIR form (DESIGN §5, --emit=mlir-exec):
#  - ppffn's module matches testdata/golden/ppffn.exec.mlir byte for byte;
#  - every shipped model's module verifies with plain mlir-opt-19 (upstream
#    dialects only: no --irdl-file, no --allow-unregistered-dialect);
#  - `ppcc run --backend=jit --check` matches the reference on every model.
# Usage: bash emit_exec_golden.sh PPCC_BINARY SOURCE_DIR
# Skipped (exit 0) when ppcc is built without MLIR. Regenerate the golden
# with tools/update_goldens.sh and review the diff.
set -uo pipefail
ppcc=$1
src=$2
mlir_opt=${MLIR_OPT:-mlir-opt-19}
source "$src/tests/support/check.sh" # $tmp, check, fails, fails_cmp
cd "$src" || exit 1

if ! "$ppcc" compile testdata/models/tp_ffn.json --emit=mlir-exec -o "$tmp/probe.mlir" 2>/dev/null; then
  echo "emit_exec_golden: skipped (ppcc built without MLIR)"
  exit 0
fi

check "ppffn: compile --emit=mlir-exec" "$ppcc" compile testdata/models/ppffn.json --emit=mlir-exec -o "$tmp/ppffn.exec.mlir"
check "ppffn.exec.mlir matches its golden" cmp testdata/golden/ppffn.exec.mlir "$tmp/ppffn.exec.mlir"

for model in testdata/models/*.json; do
  name=$(basename "$model" .json)
  check "$name: compile --emit=mlir-exec" "$ppcc" compile "$model" --emit=mlir-exec -o "$tmp/$name.exec.mlir"
  check "$name.exec.mlir verifies with $mlir_opt" "$mlir_opt" "$tmp/$name.exec.mlir" -o /dev/null
  check "$name: run --backend=jit --check" "$ppcc" run "$model" --random-weights 7 --backend=jit --check > "$tmp/$name.run.txt"
done

exit $fail
