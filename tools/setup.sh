#!/usr/bin/env bash
# Installs everything ppcc needs to build and test, on Debian 12, as root.
# Idempotent: re-running only checks that the packages are there.
set -euo pipefail

packages=(
  cmake gcc g++ make pkg-config      # build
  libcjson-dev                       # model.json parsing
  check                              # unit tests
  libmlir-19-dev mlir-19-tools llvm-19-dev  # MLIR emitter (C API) and mlir-opt-19
  libopenblas-dev                    # runtime kernels
  clang-14 libclang-rt-14-dev        # sanitizer and fuzzing builds
  graphviz                           # tests check that DOT reports render
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev  # ppcc import onnx: protobuf-c code from Debian's onnx.proto
)

if [[ $(id -u) -ne 0 ]]; then
  echo "setup.sh: run as root (sudo bash tools/setup.sh)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup.sh: all packages already installed"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
echo "setup.sh: installed ${missing[*]}"
