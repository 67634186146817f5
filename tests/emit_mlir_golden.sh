#!/usr/bin/env bash
# MLIR output of every shipped model (DESIGN §5):
#  - `ppcc compile M -o F` (--emit=mlir, the default) and --emit=iree match
#    testdata/golden/<model>.mlir / <model>.iree.mlir byte for byte;
#  - every annotated module verifies with mlir-opt-19 and the shipped ppcc
#    dialect (src/emit/annotated/ppcc.irdl.mlir), without --allow-unregistered-dialect;
#  - a failing emission leaves no output file.
# Usage: bash emit_mlir_golden.sh PPCC_BINARY SOURCE_DIR
# Skipped (exit 0) when ppcc is built without MLIR. Regenerate goldens with
# tools/update_goldens.sh and review the diff.
set -uo pipefail
ppcc=$1
src=$2
irdl=$src/src/emit/annotated/ppcc.irdl.mlir
mlir_opt=${MLIR_OPT:-mlir-opt-19}
source "$src/tests/support/check.sh" # $tmp, check, fails, fails_cmp
cd "$src" || exit 1

if ! "$ppcc" compile testdata/models/tp_ffn.json --emit=mlir -o "$tmp/probe.mlir" 2>/dev/null; then
  echo "emit_mlir_golden: skipped (ppcc built without MLIR)"
  exit 0
fi

for model in testdata/models/*.json; do
  name=$(basename "$model" .json)
  check "$name: compile --emit=mlir" "$ppcc" compile "$model" -o "$tmp/$name.mlir"
  check "$name: compile --emit=iree" "$ppcc" compile "$model" --emit=iree -o "$tmp/$name.iree.mlir"
  check "$name.mlir matches its golden" cmp "testdata/golden/$name.mlir" "$tmp/$name.mlir"
  check "$name.iree.mlir matches its golden" cmp "testdata/golden/$name.iree.mlir" "$tmp/$name.iree.mlir"
  check "$name.mlir verifies with $mlir_opt --irdl-file" \
    "$mlir_opt" --irdl-file="$irdl" "$tmp/$name.mlir" -o /dev/null
done

# The check has teeth: a transfer without its source device does not verify.
sed 's/"ppcc.transfer"(\(%[0-9#]*\)) {source = [0-9]* : i64, /"ppcc.transfer"(\1) {/' \
  "$tmp/pp_chain.mlir" > "$tmp/tampered.mlir"
check "tampered module differs" fails cmp -s "$tmp/pp_chain.mlir" "$tmp/tampered.mlir"
check "tampered module is rejected" fails "$mlir_opt" --irdl-file="$irdl" "$tmp/tampered.mlir" -o /dev/null 2>/dev/null

# A lowering error (gelu has no integer form) leaves no output behind.
cat > "$tmp/bad.json" <<'JSON'
{"ppcc": 1, "name": "bad", "devices": 1, "params": [],
 "inputs": [{"name": "x", "dtype": "i32", "shape": [4]}],
 "ops": [{"op": "gelu", "in": ["x"], "out": ["y"]}], "outputs": ["y"]}
JSON
"$ppcc" compile "$tmp/bad.json" -o "$tmp/bad.mlir" 2> "$tmp/bad.err"
rc=$?
check "bad model exits 1 (got $rc)" test "$rc" -eq 1
check "bad model leaves no output" test ! -e "$tmp/bad.mlir"
check "bad model names the op and dtype" grep -q "gelu.*no MLIR lowering for dtype i32" "$tmp/bad.err"

exit $fail
