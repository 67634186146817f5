#!/usr/bin/env bash
# ppcc against ONNX Runtime (issue 26's "Done means"): the same ONNX model
# imported by `ppcc import onnx` and run by `ppcc run --repeat N`, and run
# by onnxruntime (tools/ort_time.py) with 2 intra-op threads, from paired
# runs (ppcc, ort, ppcc, ort, ...): the min and the median over the pairs
# of each process's fastest steady-state forward.
#
#   bench/bench_vs_onnxruntime.sh [BUILD_DIR]          (default: build)
#   env: PAIRS (5)     pairs per figure
#        REPEAT (10)   steady-state forwards per process (min taken)
#        THREADS (2)   ppcc --threads and onnxruntime intra_op_num_threads
#        REF_VENV      a venv with numpy, onnx and onnxruntime; default
#                      BUILD_DIR/ortvenv, made from PyPI with pinned versions
#                      (onnx 1.17.0, onnxruntime 1.20.1, numpy 1.26.4)
#
# Models (tools/make_onnx_speed.py): MLP batch 8 hidden 1024 (4 layers,
# 16 MiB of weights: bound by streaming the weights) and 4 BERT-base-sized
# encoder layers on 128 tokens (7.4 GFLOP: bound by GEMMs). Reference
# only: not run by CI.
set -u
BUILD=${1:-build}
PAIRS=${PAIRS:-5}
REPEAT=${REPEAT:-10}
THREADS=${THREADS:-2}
SRC=$(cd "$(dirname "$0")/.." && pwd)
PPCC=$BUILD/ppcc
[ -x "$PPCC" ] || { echo "bench_vs_onnxruntime: no $PPCC (build first)" >&2; exit 1; }
VENV=${REF_VENV:-$BUILD/ortvenv}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4 ||
    { echo "bench_vs_onnxruntime: cannot make $VENV" >&2; exit 1; }
fi
PY=$VENV/bin/python
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" "$SRC/tools/make_onnx_speed.py" "$TMP" || exit 1

stats() { sort -g "$1" | awk '{v[NR]=$1} END {if (NR==0) {print "nan nan"; exit}
  m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f %.3f\n", v[1], m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b+0 == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.2f", a / b}'; }
forward_min() { awk '/forward \(steady state/ {for (i = 1; i < NF; i++) if ($i == "min") s = $(i + 1)} END {print s}'; }

echo "== steady-state forward, ppcc vs onnxruntime ($PAIRS pairs, min of $REPEAT forwards each, $THREADS threads; ms) =="
printf "%-6s %-8s %10s %10s   %s\n" model backend "min" "median" "ratio to ort (min, median)"
for m in mlp bert; do
  "$PPCC" import onnx "$TMP/$m.onnx" -o "$TMP/$m.json" --weights-out "$TMP/$m.safetensors" >/dev/null || exit 1
  : >"$TMP/jit" ; : >"$TMP/interp" ; : >"$TMP/ort"
  for p in $(seq "$PAIRS"); do
    for be in jit interp; do
      "$PPCC" run "$TMP/$m.json" --weights "$TMP/$m.safetensors" --input "x=$TMP/$m.x.npy" --backend=$be \
        --threads "$THREADS" --repeat "$REPEAT" 2>/dev/null | forward_min >>"$TMP/$be"
    done
    "$PY" "$SRC/tools/ort_time.py" "$TMP/$m.onnx" "$TMP/$m.x.npy" "$REPEAT" "$THREADS" | forward_min >>"$TMP/ort"
  done
  read -r omin omed < <(stats "$TMP/ort")
  for be in jit interp; do
    read -r mn md < <(stats "$TMP/$be")
    printf "%-6s %-8s %10s %10s   %s, %s\n" "$m" "ppcc-$be" "$mn" "$md" "$(ratio "$mn" "$omin")" "$(ratio "$md" "$omed")"
  done
  printf "%-6s %-8s %10s %10s\n" "$m" "ort" "$omin" "$omed"
done
