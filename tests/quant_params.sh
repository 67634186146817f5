#!/usr/bin/env bash
# Block-quantized params in the IR (DESIGN §11): model.json declares them,
# reports and the plan count their stored bytes, splits keep whole blocks
# (placement names the param otherwise; auto-partition picks a layout that
# fits), only a linear's weight or an embedding's table may be quantized;
# run computes with them on both backends (same bytes, --check against the
# unsharded reference), the IREE and annotated forms refuse them naming
# the param and its type.
# Usage: quant_params.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "quant_params: $*" >&2; exit 1; }

# expect_error MODEL NEEDLE [ARGS...]: exit code 1 and one line holding NEEDLE
expect_error() {
  local model=$1 needle=$2
  shift 2
  if "$ppcc" "$@" "$model" > "$tmp/out" 2> "$tmp/err"; then fail "$model $*: accepted"; fi
  [[ $(wc -l < "$tmp/err") -eq 1 ]] || { cat "$tmp/err"; fail "$model $*: not one line"; }
  grep -qF -- "$needle" "$tmp/err" || { cat "$tmp/err"; fail "$model $*: '$needle' missing"; }
}

ffn=$src/testdata/quant/ffn_q4_0.json
# w1 [128, 64] split rows over 2 devices, w2 [64, 128] split along its last
# dim (64 = 2 q4_0 blocks a shard): 64 rows x 2 blocks x 18 bytes = 2304 each.
"$ppcc" compile "$ffn" --report="$tmp/r.json"
grep -q '"device": 0, "param_bytes": 4608,' "$tmp/r.json" || { cat "$tmp/r.json"; fail "stored bytes not counted"; }
grep -q '"dtype": "q4_0"' "$tmp/r.json" || fail "the report lost the dtype"

# a split cutting blocks, a quantized input, a quantized operand of silu
sed 's/"devices": 2/"devices": 8/; s/"dim": 1, "count": 2/"dim": 1, "count": 8/' "$ffn" > "$tmp/cut.json"
expect_error "$tmp/cut.json" "8 shards of 16 values along dim 1 would cut q4_0's 32-value blocks" compile
grep -qF "(param 'w2')" "$tmp/err" || fail "the split error does not name the param"
sed 's/"dtype": "f32"/"dtype": "q8_0"/' "$ffn" > "$tmp/input.json"
expect_error "$tmp/input.json" "dtype q8_0 is a block-quantized weight format: only params may have it (input 'x')" compile
sed 's/"in": \["h"\]/"in": ["w1"]/' "$ffn" > "$tmp/silu.json"
expect_error "$tmp/silu.json" "operand 'w1' is q4_0 (block-quantized): only the weight of a linear" compile
sed 's/\[128, 64\]/[128, 48]/; s/\[4, 64\]/[4, 48]/' "$ffn" > "$tmp/partial.json"
expect_error "$tmp/partial.json" "a q4_0 param needs a last dim that is a multiple of its block (32 values)" compile

# auto-partition: w2 [64, 32] cannot be split along its 32 inputs over 2
# devices (16 < one q8_0 block), so w1/w2 are no Megatron pair; w2/w3 are.
"$ppcc" compile "$src/testdata/quant/auto_q8_0.json" --tp 2 --report="$tmp/a.json"
grep -q '"name": "w2", "dtype": "q8_0", "shape": \[64, 32\], "shard": {"kind": "split", "dim": 0' "$tmp/a.json" ||
  { cat "$tmp/a.json"; fail "auto-partition split w2 across a block"; }
grep -q '"name": "w3", "dtype": "q8_0", "shape": \[64, 64\], "shard": {"kind": "split", "dim": 1' "$tmp/a.json" ||
  { cat "$tmp/a.json"; fail "auto-partition did not pair w2 with w3"; }

# an embedding's table may be quantized: its rows come out f32
cat > "$tmp/embed.json" <<'JSON'
{"ppcc": 1, "name": "qembed", "devices": 1,
 "params": [{"name": "table", "dtype": "q6_k", "shape": [10, 256]}],
 "inputs": [{"name": "ids", "dtype": "i64", "shape": [3]}],
 "ops": [{"op": "embedding", "in": ["ids", "table"], "out": ["rows"]}],
 "outputs": ["rows"]}
JSON
"$ppcc" compile "$tmp/embed.json" --report="$tmp/e.json"
grep -q '"param_bytes": 2100,' "$tmp/e.json" || { cat "$tmp/e.json"; fail "q6_k table: not 10 x 210 bytes"; }
grep -q '"name": "rows", "dtype": "f32"' "$tmp/e.json" || { cat "$tmp/e.json"; fail "embedding rows not f32"; }

# run computes with them: rows and columns split (whole blocks), both
# backends write the same bytes and agree with the unsharded reference
backends=interp
"$ppcc" run "$ffn" --random-weights 3 --backend=jit --output-dir "$tmp/jit" > "$tmp/jit.log" 2>&1 && backends="interp jit"
for backend in $backends; do
  "$ppcc" run "$ffn" --random-weights 3 --backend=$backend --check --output-dir "$tmp/$backend" > "$tmp/log" ||
    { cat "$tmp/log"; fail "$backend: run failed"; }
  grep -q "^check y: .*: ok" "$tmp/log" || { cat "$tmp/log"; fail "$backend: --check did not pass"; }
done
[[ $backends == interp ]] || cmp "$tmp/interp/y.npy" "$tmp/jit/y.npy" || fail "jit and interp differ"
"$ppcc" compile "$tmp/embed.json" > /dev/null
for backend in $backends; do
  "$ppcc" run "$tmp/embed.json" --random-weights 1 --backend=$backend --output-dir "$tmp/e_$backend" > /dev/null ||
    fail "$backend: quantized embedding failed"
done
[[ $backends == interp ]] || cmp "$tmp/e_interp/rows.npy" "$tmp/e_jit/rows.npy" || fail "embedding: jit and interp differ"
# the forms without the runtime's kernels refuse them
expect_error "$ffn" "param 'w1' is q4_0 (block-quantized): the annotated and IREE forms take f32, f16 or bf16 params" \
  compile --emit=iree
# ... unless --dtype dequantizes them
"$ppcc" compile "$ffn" --emit=iree --dtype f32 -o "$tmp/ffn.iree.mlir" > /dev/null || fail "--emit=iree --dtype f32 failed"
grep -q "\"w1.shard.0\"> : tensor<64x64xf32>" "$tmp/ffn.iree.mlir" || fail "--dtype f32 did not dequantize w1"
# (--dtype f16: f16 weights next to f32 activations, computed by the f16
# kernel that converts blocks of their rows: src/runtime/kernels/half_matmul.c)
"$ppcc" compile "$ffn" --dtype f16 --emit=mlir-exec -o "$tmp/exec16.mlir" > /dev/null || fail "--dtype f16 refused"
grep -q "ppcc_rt_hlinear_f16" "$tmp/exec16.mlir" || fail "--dtype f16: the executable form does not call the f16 kernel"
for backend in $backends; do
  "$ppcc" run "$ffn" --dtype f16 --random-weights 3 --backend=$backend --check --output-dir "$tmp/h_$backend" > "$tmp/log" ||
    { cat "$tmp/log"; fail "--dtype f16 $backend: run failed"; }
  grep -q "^check y: .*: ok" "$tmp/log" || { cat "$tmp/log"; fail "--dtype f16 $backend: --check did not pass"; }
done
[[ $backends == interp ]] || cmp "$tmp/h_interp/y.npy" "$tmp/h_jit/y.npy" || fail "--dtype f16: jit and interp differ"
"$ppcc" compile "$ffn" --dtype q4_0 > "$tmp/out" 2> "$tmp/err" && fail "--dtype q4_0 accepted"
grep -q "dtype must be f32, f16 or bf16" "$tmp/err" || { cat "$tmp/err"; fail "--dtype q4_0: wrong message"; }
"$ppcc" compile "$ffn" --emit=mlir-exec -o "$tmp/exec.mlir" > /dev/null
grep -q "ppcc_rt_qlinear_f32" "$tmp/exec.mlir" || fail "the executable form does not call the quantized kernel"
echo "quant_params: ok"
