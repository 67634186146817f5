#!/usr/bin/env bash
# Regenerates testdata/golden/onnx/ (placement reports of the imported ONNX
# test models, unsharded and at --tp 2 --pp 2). Review `git diff` first.
# Usage: tools/update_onnx_goldens.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
exec bash "$root/tests/onnx_import.sh" "$build/ppcc" "$root" --update
