#!/usr/bin/env bash
# Installs everything ppcc needs to build and test, on Debian 12, as root.
# Idempotent: re-running only checks that the packages are there.
# Also makes the Python venv of the IREE test (tools/requirements-iree.txt,
# pinned) at $PPCC_VENV (default build/venv, inside the build tree that
# CI and the README use); the system Python is never touched.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${PPCC_VENV:-$root/build/venv}
requirements=$root/tools/requirements-iree.txt

packages=(
  cmake gcc g++ make pkg-config      # build
  libcjson-dev                       # model.json parsing
  check                              # unit tests
  libmlir-19-dev mlir-19-tools llvm-19-dev  # MLIR emitter (C API) and mlir-opt-19
  libopenblas-dev                    # runtime kernels
  clang-14 libclang-rt-14-dev        # sanitizer and fuzzing builds
  graphviz                           # tests check that DOT reports render
  openmpi-bin libopenmpi-dev         # distributed runs (MPI backend, tests/mpi): Open MPI, see below
  python3-venv                       # venv of the IREE test (PyPI packages)
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev  # ppcc import onnx: protobuf-c code from Debian's onnx.proto
)
# The PyTorch reference of bench/bench_vs_torch.sh (tools/torch_llama_ref.py)
# is large and only the benchmark needs it: PPCC_BENCH=1 adds it.
if [[ ${PPCC_BENCH:-0} == 1 ]]; then
  packages+=(python3-torch python3-numpy)
fi

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
else
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
  echo "setup.sh: installed ${missing[*]}"
fi
# Open MPI is the MPI that CMake finds (README, "Distributed runs": it
# passes the 4-host tests every time; Debian's MPICH 4.0.2 over UCX's TCP
# hangs in MPI_Finalize in about half of the multi-host runs). On a fresh
# machine its alternatives (mpi, mpirun, mpi-x86_64-linux-gnu) are the only
# ones. Where MPICH is installed too, Debian's alternatives pick Open MPI by
# priority unless someone chose MPICH: that choice is left alone, because
# build trees configured with it keep /usr/bin/mpiexec in their cache and
# would then start their MPICH ranks with Open MPI's launcher.

# The venv is current when it holds a copy of the requirements it was made
# from and its packages import.
stamp=$venv/ppcc-requirements.txt
if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp" &&
   "$venv/bin/python" -c 'import iree.compiler, iree.runtime, numpy, safetensors' 2>/dev/null; then
  echo "setup.sh: IREE venv $venv up to date"
  exit 0
fi
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
cp "$requirements" "$stamp"
echo "setup.sh: IREE venv $venv installed ($(grep -v '^#' "$requirements" | tr '\n' ' '))"
