#!/usr/bin/env bash
# ONNX import never computes a different function (testdata/onnx/strict,
# made once by tools/make_onnx_strict.py with ONNX Runtime's outputs):
# valid models that are easy to misread, and attribute edge cases of the
# ops (windows: Conv/pooling, op_edges: the rest; op_matrix, op_matrix13:
# every imported op x the edge cases those leave out; op_matrix26: Gather
# from computed tensors, Slice steps, ceil_mode and count_include_pad 0
# pools, multi-axis LayerNormalization, f16 folds), run with --expect on
# both backends; hostile ones are refused with one line "FILE: error: ...",
# exit 1 and no output; names are escaped in messages; an output that is
# the same file as the model or the other output is refused.
# Usage: onnx_strict.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$(cd "$2" && pwd)
data=$src/testdata/onnx/strict
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "onnx_strict: $*" >&2; exit 1; }

backends=(interp)
"$ppcc" compile "$src/testdata/models/tp_ffn.json" --emit=mlir 2>&1 | grep -q "built without MLIR" || backends+=(jit)

runs=0
for m in reduce_noop reduce_noop18 input_override negative_index windows op_edges op_matrix op_matrix13 op_matrix26; do
  out=$("$ppcc" import onnx "$data/$m.onnx" -o "$m.json" --weights-out "$m.safetensors" 2>&1) ||
    { echo "$out"; fail "$m: import failed"; }
  args=()
  for f in "$data/$m".in.*.npy; do n=${f##*/$m.in.}; args+=(--input "${n%.npy}=$f"); done
  for f in "$data/$m".ref.*.npy; do n=${f##*/$m.ref.}; args+=(--expect "${n%.npy}=$f"); done
  for backend in "${backends[@]}"; do
    out=$("$ppcc" run "$m.json" --weights "$m.safetensors" "${args[@]}" --backend="$backend" 2>&1) ||
      { echo "$out"; fail "$m: run --backend=$backend failed"; }
    [[ $(grep -c "^expect .*: ok$" <<<"$out") == $(ls "$data/$m".ref.*.npy | wc -l) ]] ||
      { echo "$out"; fail "$m: $backend: not every output matches ONNX Runtime"; }
    runs=$((runs + 1))
  done
done
# (input_override's reference adds the b given at run time, not the
# initializer's 100s: the input overrides the initializer)

# expect_error MODEL PATTERN [ARGS...]: exit 1, one line naming the file, no output
cases=0
expect_error() {
  local model=$1 pattern=$2
  shift 2
  rm -f out.json w.safetensors
  local rc=0
  "$ppcc" import onnx "$model" -o out.json --weights-out w.safetensors "$@" >stdout 2>stderr || rc=$?
  [[ $rc == 1 ]] || { cat stderr; fail "$model: exit code $rc, want 1"; }
  [[ $(wc -l <stderr) == 1 ]] || { cat stderr; fail "$model: want exactly one line on stderr"; }
  grep -qF -- "$pattern" stderr || { cat stderr; fail "$model: message lacks '$pattern'"; }
  grep -q "^$model: error: " stderr || { cat stderr; fail "$model: message does not start with the file"; }
  [[ ! -e out.json && ! -e w.safetensors ]] || fail "$model: an output file was written"
  cases=$((cases + 1))
}
expect_error "$data/float_transb.onnx" "node 'gemm0' (Gemm): attribute 'transB' is FLOAT, Gemm's transB is INT"
expect_error "$data/concat_no_axis.onnx" "node 'cat0' (Concat): Concat needs attribute 'axis'"
expect_error "$data/split_dup.onnx" "node 'split0' (Split): result 'y' is defined twice"
expect_error "$data/input_twice.onnx" "graph input 'x' is listed twice"
expect_error "$data/nul_name.onnx" "a string of the model (NodeProto.name) contains a NUL byte"
expect_error "$data/escape_name.onnx" "node 'cat\\x1b[2J\\x1b[31m' (Concat): Concat needs attribute 'axis'"
grep -q $'\x1b' stderr && fail "escape_name: an escape byte reached the terminal"
expect_error "$data/reshape_rank10.onnx" "Reshape to rank 10 exceeds ppcc's maximum rank 8"
expect_error "$data/negative_dim.onnx" "graph input 'x': dim 0 is -3; a dim is a non-negative size"
expect_error "$data/huge_input.onnx" "graph input 'x' has more than 2^48 elements"
expect_error "$data/reduce_noop.onnx" "--shape y: the model has no graph input of that name" --shape y=3,4
expect_error "$data/range_huge.onnx" "node 'range0' (Range): the folded constant would have more than 16777216 elements"
expect_error "$data/ceil_past_end.onnx" "node 'pool0' (MaxPool): pooling with ceil_mode 1 where the last window would start past the input is not supported"
# files up to 2 GB are read (a sparse 300 MB file of zeros parses, and
# fails as a protobuf); larger ones are refused before reading
truncate -s 300M "$tmp/big.onnx"
expect_error "$tmp/big.onnx" "not a valid ONNX protobuf"
truncate -s 2049M "$tmp/huge.onnx"
expect_error "$tmp/huge.onnx" "the file is larger than 2048 MiB"
rm -f "$tmp/big.onnx" "$tmp/huge.onnx"

# an output that is the model or the other output: refused, nothing written
cp "$data/reduce_noop.onnx" model.onnx
rc=0
"$ppcc" import onnx model.onnx -o same.json --weights-out ./same.json 2>stderr >/dev/null || rc=$?
[[ $rc == 1 && ! -e same.json ]] || { cat stderr; fail "-o X --weights-out X: exit $rc"; }
grep -qF "model.onnx: error: -o and --weights-out name the same file" stderr || { cat stderr; fail "-o X --weights-out X: message"; }
rc=0
"$ppcc" import onnx model.onnx -o "$tmp/model.onnx" 2>stderr >/dev/null || rc=$?
[[ $rc == 1 ]] || { cat stderr; fail "-o MODEL: exit $rc"; }
grep -qF "the model and -o name the same file" stderr || { cat stderr; fail "-o MODEL: message"; }
cmp -s model.onnx "$data/reduce_noop.onnx" || fail "-o MODEL: the model was overwritten"
echo "onnx_strict: $runs runs match ONNX Runtime, $cases hostile models refused, same-file outputs refused"
