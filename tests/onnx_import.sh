#!/usr/bin/env bash
# ppcc import onnx on the shipped models of testdata/onnx (made once by
# tools/make_onnx_models.py; references from ONNX Runtime): each imports,
# reports (goldens in testdata/golden/onnx), emits verified MLIR and runs
# with --expect against ONNX Runtime's outputs on both backends, unsharded
# and at --tp 2 --pp 2: both the placed model `import --tp 2 --pp 2` writes
# and the unplaced one auto-partitioned by `run --tp 2 --pp 2`. hf_llama and
# hf_qwen2 are torch.onnx.export outputs of transformers models
# (tools/make_onnx_hf.py): their rotary tables fold at import by the
# runtime's kernels. vit (transformers ViT: a strided Conv patch embedding)
# and resnet (a ResNet-18-style CNN: Conv + BatchNormalization folded at
# import, MaxPool, GlobalAveragePool, Flatten) come from
# tools/make_onnx_cnn.py. distilbert (a padded batch), encoder
# (nn.TransformerEncoderLayer) and torchops (what torch writes for strided
# and reversed slices, indexing by a list, ceil_mode pools without padding
# counted, a LayerNorm over two dims) come from tools/make_onnx_more.py.
# The mlp whose weights live in an external-data file
# imports to the same weights.
# Usage: onnx_import.sh PPCC_BINARY SOURCE_DIR [--update]
#   --update rewrites the report goldens (tools/update_onnx_goldens.sh).
set -euo pipefail
ppcc=$1
src=$(cd "$2" && pwd)
update=${3:-}
data=$src/testdata/onnx
gold=$src/testdata/golden/onnx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
fail() { echo "onnx_import: $*" >&2; exit 1; }

jit=1
if "$ppcc" compile "$src/testdata/models/tp_ffn.json" --emit=mlir 2>&1 | grep -q "built without MLIR"; then
  jit=0
  echo "onnx_import: this ppcc has no MLIR: JIT runs and MLIR emission are not checked"
fi

runs=0
models=(mlp llama gpt2 bert ops select hf_llama hf_qwen2 vit resnet distilbert encoder torchops)
for m in "${models[@]}"; do
  shape=$(awk -v m="$m" '$1 == m {print $2}' "$data/shapes.txt")
  shape_opt=()
  [[ -n $shape ]] && shape_opt=(--shape "$shape")
  out=$("$ppcc" import onnx "$data/$m.onnx" -o "$m.json" --weights-out "$m.safetensors" "${shape_opt[@]}" 2>&1) ||
    { echo "$out"; fail "$m: import failed"; }
  "$ppcc" import onnx "$data/$m.onnx" -o "$m.tp.json" --tp 2 --pp 2 "${shape_opt[@]}" >/dev/null ||
    fail "$m: import --tp 2 --pp 2 failed"
  "$ppcc" import onnx "$data/$m.onnx" -o "$m.auto.json" --devices 4 "${shape_opt[@]}" >/dev/null ||
    fail "$m: import --devices 4 failed"
  if [[ $update == --update ]]; then
    mkdir -p "$gold"
    "$ppcc" report "$m.json" > "$gold/$m.report.txt"
    "$ppcc" report "$m.tp.json" > "$gold/$m.tp2pp2.report.txt"
    continue
  fi
  # A MatMul by a constant weight imports as linear (the weight transposed
  # once at import to [N, K], read in place by the GEMMs) with the Add of a
  # constant bias fused: no matmul reads a param, no add a bias.
  n_linear=$(python3 - "$m.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
params = {p["name"]: p for p in m["params"]}
made_by = {o: op for op in m["ops"] for o in op["out"]}
for op in m["ops"]:
    if op["op"] == "matmul" and any(i in params for i in op["in"]):
        sys.exit("matmul %s reads a constant weight" % op["out"][0])
    if op["op"] == "add" and any(made_by.get(i, {}).get("op") == "linear" and len(made_by[i]["in"]) == 2
                                 for i in op["in"]) and any(len(params.get(i, {}).get("shape", [0, 0])) == 1
                                                            for i in op["in"]):
        sys.exit("add %s adds a bias to a linear outside it" % op["out"][0])
print(sum(op["op"] == "linear" for op in m["ops"]))
PY
) || fail "$m: constant-weight MatMul not imported as linear"
  case $m in ops | select) ;; *) [[ $n_linear -gt 0 ]] || fail "$m: no linear op" ;; esac
  "$ppcc" report "$m.json" > "$m.report.txt"
  diff -u "$gold/$m.report.txt" "$m.report.txt" || fail "$m: report differs from its golden"
  "$ppcc" report "$m.tp.json" > "$m.tp2pp2.report.txt"
  diff -u "$gold/$m.tp2pp2.report.txt" "$m.tp2pp2.report.txt" || fail "$m: --tp 2 --pp 2 report differs from its golden"
  grep -q '"devices":[[:space:]]*\[2, 3\]' "$m.tp.json" || fail "$m: the placed model puts nothing on stage 1"
  if [[ $jit == 1 ]]; then
    "$ppcc" compile "$m.json" -o "$m.mlir" --emit=mlir || fail "$m: MLIR emission failed"
    "$ppcc" compile "$m.tp.json" -o "$m.tp.mlir" --emit=mlir || fail "$m: sharded MLIR emission failed"
    grep -q "ppcc.device" "$m.tp.mlir" || fail "$m: sharded MLIR has no device annotations"
  fi
  inputs=()
  for f in "$data/$m".in.*.npy; do
    name=${f##*/$m.in.}
    inputs+=(--input "${name%.npy}=$f")
  done
  expects=()
  for f in "$data/$m".ref.*.npy; do
    name=${f##*/$m.ref.}
    expects+=(--expect "${name%.npy}=$f")
  done
  backends=(interp)
  [[ $jit == 1 ]] && backends+=(jit)
  for backend in "${backends[@]}"; do
    for form in unsharded placed auto; do
      model=$m.json split=""
      [[ $form == placed ]] && model=$m.tp.json
      [[ $form == auto ]] && model=$m.auto.json split="--tp 2 --pp 2"
      # shellcheck disable=SC2086 # the split is two options
      out=$("$ppcc" run "$model" $split --weights "$m.safetensors" "${inputs[@]}" "${expects[@]}" \
        --backend="$backend" 2>&1) || { echo "$out"; fail "$m: run --backend=$backend $form failed"; }
      grep -q "^expect .*: ok$" <<<"$out" || { echo "$out"; fail "$m: $backend $form: no expect line"; }
      runs=$((runs + 1))
    done
  done
done
[[ $update == --update ]] && { echo "onnx_import: goldens written to $gold"; exit 0; }

# The same mlp with its weights in a side file imports to the same weights.
"$ppcc" import onnx "$data/mlp_ext/mlp_ext.onnx" -o ext.json --weights-out ext.safetensors --shape x=4,16 >/dev/null ||
  fail "mlp_ext: import failed"
cmp -s ext.safetensors mlp.safetensors || fail "mlp_ext: external-data weights differ from the inline ones"
out=$("$ppcc" run ext.json --weights ext.safetensors --input "x=$data/mlp.in.x.npy" --expect "y=$data/mlp.ref.y.npy" \
  --backend=interp 2>&1) || { echo "$out"; fail "mlp_ext: run failed"; }

# --expect fails beyond the criterion: the gpt2 logits are not the mlp's.
if "$ppcc" run mlp.json --weights mlp.safetensors --input "x=$data/mlp.in.x.npy" --expect "y=$data/llama.ref.y.npy" \
  --backend=interp >out.txt 2>err.txt; then
  fail "--expect with a wrong reference passed"
fi
grep -q "error: --expect y: output is f32\[4, 8\]" err.txt || { cat err.txt; fail "--expect shape mismatch message"; }
# A Mul/Div by a NaN or Inf scalar (found by fuzz_onnx) stays a mul/div by
# the constant: a scale op's value would be written as JSON null.
"$ppcc" import onnx "$src/testdata/fuzz/onnx/regress_nonfinite_scale.onnx" -o "$tmp/nonfinite.json" \
  --shape input_ids=1,8 --shape token_type_ids=1,8 --shape attention_mask=1,8 >/dev/null 2>err.txt ||
  { cat err.txt; fail "a Mul by a non-finite scalar does not import"; }
"$ppcc" compile "$tmp/nonfinite.json" >/dev/null 2>err.txt || { cat err.txt; fail "the imported non-finite Mul does not compile"; }
# An ONNX graph name that is not valid UTF-8 (found by fuzz_onnx) only
# labels the model: it becomes "onnx" and the model loads. A tensor name
# that is not valid UTF-8 names the tensors of the model: refused, naming
# the node, with no output file.
"$ppcc" import onnx "$src/testdata/fuzz/onnx/regress_invalid_utf8_graph_name.onnx" -o "$tmp/badgraph.json" \
  --shape x=4,16 >/dev/null 2>err.txt ||
  { cat err.txt; fail "an invalid UTF-8 graph name does not import"; }
grep -q '"name":[[:space:]]*"onnx"' "$tmp/badgraph.json" || fail "an invalid UTF-8 graph name was not replaced by onnx"
"$ppcc" compile "$tmp/badgraph.json" >/dev/null 2>err.txt || { cat err.txt; fail "the model of an invalid graph name does not compile"; }
python3 -c "
import sys
d = open(sys.argv[1], 'rb').read()
assert d.count(b'fc1.weight') == 2
open(sys.argv[2], 'wb').write(d.replace(b'fc1.weight', b'fc1.w\\xedight'))
" "$src/testdata/fuzz/onnx/mlp.onnx" "$tmp/badname.onnx"
set +e
"$ppcc" import onnx "$tmp/badname.onnx" -o "$tmp/badname.json" --shape x=4,16 >/dev/null 2>err.txt; rc=$?
set -e
[[ $rc == 1 && $(wc -l <err.txt) == 1 && ! -e $tmp/badname.json ]] || { cat err.txt; fail "an invalid UTF-8 tensor name: exit $rc"; }
grep -q "badname.onnx: error: node 'Gemm_1' (Gemm): a tensor's name is not valid UTF-8 (byte 5)" err.txt ||
  { cat err.txt; fail "an invalid UTF-8 tensor name: message"; }
echo "onnx_import: ${#models[@]} models imported, reports match goldens, $runs runs match ONNX Runtime (--expect), external data ok"
