#!/usr/bin/env bash
# Import time and peak RSS of `ppcc import onnx` on generated chains of
# 1,000 and 10,000 nodes (tools/make_onnx_bench.py; needs the venv of
# tools/make_onnx_models.py). Runs A,B,A,B... (5 each), prints min and
# median wall time and the peak RSS (GNU time).
# Usage: bench/bench_onnx_import.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
py=$build/venv-onnx/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1000 10000; do "$py" "$root/tools/make_onnx_bench.py" "$tmp/chain$n.onnx" "$n" >/dev/null; done
declare -A times rss
for rep in 1 2 3 4 5; do
  for n in 1000 10000; do
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$build/ppcc" import onnx "$tmp/chain$n.onnx" -o "$tmp/o.json" \
      --weights-out "$tmp/o.safetensors" >/dev/null
    read -r s kb <"$tmp/t"
    times[$n]+="$s "
    rss[$n]=$kb
  done
done
for n in 1000 10000; do
  sorted=$(tr ' ' '\n' <<<"${times[$n]}" | grep . | sort -g)
  min=$(head -1 <<<"$sorted")
  med=$(sed -n 3p <<<"$sorted")
  printf "import onnx %5d nodes (%s bytes): min %.3f s, median %.3f s, peak RSS %d KiB\n" "$n" \
    "$(stat -c %s "$tmp/chain$n.onnx")" "$min" "$med" "${rss[$n]}"
done
