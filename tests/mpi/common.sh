# Shared by the MPI tests: arguments, temp dir, and a bounded mpiexec.
# Usage of every test: TEST.sh PPCC SOURCE_DIR MPIEXEC TOOLS_DIR
set -euo pipefail
ppcc=$1
src=$2
mpiexec=$3
tools=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models="$src/testdata/models"
# A rank that waits longer than this aborts the run (tests must never hang);
# each mpiexec is killed after run_limit seconds. Sanitizer builds run
# several times slower (every malloc unwinds its stack), so they get more.
export PPCC_MPI_TIMEOUT=20
run_limit=60
if [[ -n ${ASAN_OPTIONS:-} ]]; then
  export PPCC_MPI_TIMEOUT=120
  run_limit=300
fi
# Sanitizer builds (tools/ci_sanitize.sh): ASan and UBSan check every
# access, but leak checking is off here: the MPI library leaks at MPI_Init
# (hwloc), and naming that leak for tools/lsan.supp needs full malloc
# stacks, which made each rank's start-up minutes long on 2 cores. The
# runtime code these tests run is leak-checked by every other suite.
[[ -z ${ASAN_OPTIONS:-} ]] || export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
name=$(basename "$0" .sh)
# Open MPI (ignored by MPICH): CI runs as root, and the tests start more
# ranks than this machine has cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

fail() {
  echo "$name: $*" >&2
  exit 1
}

# mpirun N ARGS...: ppcc run on N ranks, killed after run_limit s; exit status kept.
mpirun() {
  local n=$1
  shift
  timeout -k 5 "$run_limit" "$mpiexec" -n "$n" "$ppcc" run "$@"
}

# One-process reference (pass the same --backend as the MPI run).
single() {
  "$ppcc" run "$@"
}

# same_files DIR_A DIR_B: every .npy of A is in B with the same bytes.
same_files() {
  local f n=0
  for f in "$1"/*.npy; do
    cmp -s "$f" "$2/$(basename "$f")" || return 1
    n=$((n + 1))
  done
  [[ $n -gt 0 && $(ls "$2" | wc -l) -eq $n ]]
}

# Whether this ppcc has the JIT backend (a build without MLIR has not).
have_jit() {
  local out
  out=$("$ppcc" run "$src/testdata/models/tp_ffn.json" --backend=jit 2>&1 || true)
  [[ $out != *"built without MLIR"* ]]
}
