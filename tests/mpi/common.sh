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
# A rank that waits longer than this aborts the run (tests must never hang).
export PPCC_MPI_TIMEOUT=20
# Sanitizer builds (tools/ci_sanitize.sh): full malloc stacks, so that
# tools/lsan.supp can name the MPI library's own leak (MPI_Init -> hwloc).
[[ -z ${ASAN_OPTIONS:-} ]] || export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
name=$(basename "$0" .sh)

fail() {
  echo "$name: $*" >&2
  exit 1
}

# mpirun N ARGS...: ppcc run on N ranks, killed after 60 s; exit status kept.
mpirun() {
  local n=$1
  shift
  timeout -k 5 60 "$mpiexec" -n "$n" "$ppcc" run "$@"
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
