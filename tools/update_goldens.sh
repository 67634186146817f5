#!/usr/bin/env bash
# Regenerates testdata/golden/ from testdata/models/ with the ppcc binary:
#   <model>.report.json, <model>.report.txt, <model>.report.dot for every model,
#   and, when ppcc was built with MLIR, <model>.mlir and <model>.iree.mlir,
#   and ppffn.exec.mlir (the executable form, --emit=mlir-exec).
# Usage: tools/update_goldens.sh [BUILD_DIR]   (default: build)
# Review the diff (git diff testdata/golden) before committing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
ppcc=$build/ppcc
if [[ ! -x $ppcc ]]; then
  echo "update_goldens: no ppcc binary at $ppcc (build first, or pass BUILD_DIR)" >&2
  exit 2
fi

# Run from the source root with relative model paths, so that nothing
# machine-specific can end up in a golden.
cd "$root"
mkdir -p testdata/golden

# MLIR goldens only if this binary has the emitter.
with_mlir=0
if "$ppcc" compile testdata/models/tp_ffn.json --emit=mlir >/dev/null 2>&1; then
  with_mlir=1
fi

count=0
for model in testdata/models/*.json; do
  name=$(basename "$model" .json)
  out=testdata/golden/$name
  "$ppcc" compile "$model" --report="$out.report.json"
  "$ppcc" compile "$model" --report="$out.report.txt"
  "$ppcc" compile "$model" --report="$out.report.dot"
  if [[ $with_mlir == 1 ]]; then
    "$ppcc" compile "$model" -o "$out.mlir" --emit=mlir
    "$ppcc" compile "$model" -o "$out.iree.mlir" --emit=iree
  fi
  count=$((count + 1))
done
if [[ $with_mlir == 1 ]]; then
  "$ppcc" compile testdata/models/ppffn.json -o testdata/golden/ppffn.exec.mlir --emit=mlir-exec
fi
echo "update_goldens: regenerated goldens of $count models (MLIR: $([[ $with_mlir == 1 ]] && echo yes || echo no))"
