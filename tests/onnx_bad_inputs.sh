#!/usr/bin/env bash
# ppcc import onnx refuses bad inputs with one line "FILE: error: ...",
# exit code 1, and no output file (an existing one is left as it was).
# Usage: onnx_bad_inputs.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$(cd "$2" && pwd)
bad=$src/testdata/onnx/bad
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "onnx_bad_inputs: $*" >&2; exit 1; }
cases=0

# expect_error MODEL PATTERN [ARGS...]
expect_error() {
  local model=$1 pattern=$2
  shift 2
  rm -f "$tmp/out.json" "$tmp/w.safetensors"
  local rc=0
  "$ppcc" import onnx "$model" -o "$tmp/out.json" --weights-out "$tmp/w.safetensors" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
  [[ $rc == 1 ]] || { cat "$tmp/stderr"; fail "$model: exit code $rc, want 1"; }
  [[ $(wc -l <"$tmp/stderr") == 1 ]] || { cat "$tmp/stderr"; fail "$model: want exactly one line on stderr"; }
  grep -q "^$model: error: .*$pattern" "$tmp/stderr" || { cat "$tmp/stderr"; fail "$model: message lacks '$pattern'"; }
  [[ ! -e $tmp/out.json && ! -e $tmp/w.safetensors ]] || fail "$model: an output file was written"
  [[ -z $(ls "$tmp" | grep -v -e '^stdout$' -e '^stderr$' -e '^link' -e '^old' -e '^outside') ]] || fail "$model: temporaries left"
  cases=$((cases + 1))
}

expect_error "$bad/truncated.onnx" "not a valid ONNX protobuf" --shape x=4,16
expect_error "$bad/unknown_op.onnx" "2 unsupported op types: Hardmax x2 (first: 'Relu_2'), Det x1 (first: 'det0')" --shape x=4,16
expect_error "$bad/missing_initializer.onnx" "input 'fc1.weight' is not a graph input, an initializer" --shape x=4,16
expect_error "$bad/opset11.onnx" "opset 11 is not supported" --shape x=4,16
expect_error "$bad/escaping_external.onnx" "'../../escape.bin' escapes the model's folder" --shape x=4,16
expect_error "$bad/short_external.onnx" "reaches past the end of 'short.bin'" --shape x=4,16
expect_error "$src/testdata/onnx/mlp.onnx" "dim 0 is symbolic ('batch'); give its static shape with --shape x="
expect_error "$src/testdata/onnx/mlp.onnx" "--shape x has rank 3, the model's input has rank 2" --shape x=1,4,16
expect_error "$src/testdata/onnx/mlp.onnx" "--shape x: dim 1 is 8, the model fixes it at 16" --shape x=4,8
# an external-data file that is a symlink out of the model's folder
mkdir "$tmp/linkdir"
cp "$bad/short_external.onnx" "$tmp/linkdir/m.onnx"
head -c 4096 /dev/zero >"$tmp/outside.bin"
ln -s "$tmp/outside.bin" "$tmp/linkdir/short.bin"
expect_error "$tmp/linkdir/m.onnx" "'short.bin' escapes the model's folder" --shape x=4,16
rm -rf "$tmp/linkdir" "$tmp/outside.bin"
# an empty file and random bytes
: >"$tmp/old_empty.onnx"
expect_error "$tmp/old_empty.onnx" "imports no version of the default ONNX opset"
head -c 3000 "$src/testdata/onnx/gpt2.onnx" | tail -c 1000 >"$tmp/old_junk.onnx"
expect_error "$tmp/old_junk.onnx" ""
# a Mul with one input feeding the GELU pattern matcher (found by fuzz_onnx:
# the matcher read a second input that was not there)
expect_error "$bad/fuzz_match_gelu_short_mul.onnx" "Mul takes 2 inputs, got 1"
# a MatMul with one input (found by fuzz_onnx: the constant-weight linear
# matcher read the second input that was not there)
expect_error "$bad/fuzz_matmul_one_input.onnx" "MatMul takes 2 inputs, got 1"
# a constant Transpose whose perm repeats an axis (found by fuzz_onnx: the
# folder read past its input)
expect_error "$bad/fuzz_transpose_perm_repeats.onnx" "(Transpose): Transpose perm repeats an axis"
# a Cast whose input name is empty (found by fuzz_onnx: refused without
# a diagnostic)
expect_error "$bad/fuzz_cast_empty_input.onnx" "node 'cast_no_input' (Cast): operand 0 is missing"
# a Softmax axis far out of range (found by fuzz_onnx: imported to a
# model.json that did not load); emit() checks what loading checks
expect_error "$bad/fuzz_softmax_axis_huge.onnx" "(Softmax): softmax's dim would hold -2305843009213693953, beyond the integers model.json holds" \
  --shape input_ids=1,8 --shape token_type_ids=1,8 --shape attention_mask=1,8
# an Expand to a dim of 3e18 (found by fuzz_onnx: an internal error, the
# imported model.json did not load): refused naming the node
expect_error "$bad/fuzz_expand_shape_huge.onnx" "(Expand): expand's shape would hold 3026418949592973312, beyond the integers model.json holds"
# a model file that is not there (crashed freeing an uninitialised result)
expect_error "$tmp/old_missing.onnx" "cannot read"

# A failed import leaves an existing output as it was.
echo keep >"$tmp/old.json"
"$ppcc" import onnx "$bad/opset11.onnx" -o "$tmp/old.json" --shape x=4,16 2>/dev/null && fail "opset11 imported"
[[ $(cat "$tmp/old.json") == keep ]] || fail "a failed import changed the existing output"
# usage errors: exit code 2
rc=0; "$ppcc" import onnx "$bad/opset11.onnx" 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "missing -o: exit code $rc, want 2"
rc=0; "$ppcc" import caffe x -o y 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "unknown source: exit code $rc, want 2"
rc=0; "$ppcc" import onnx m.onnx -o y --shape x=1,a 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "bad --shape: exit code $rc, want 2"
echo "onnx_bad_inputs: $cases bad models refused with one line and no output; usage errors exit 2"
