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

# One-process reference with the interpreter (what MPI ranks run).
single() {
  "$ppcc" run "$@" --backend=interp
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
