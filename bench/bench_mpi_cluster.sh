#!/usr/bin/env bash
# Pipeline over simulated hosts (tools/netns_cluster.sh; root and ip netns):
# a 4-stage gen_pipeline run by one process, 2 hosts and 4 hosts over TCP,
# links unlimited and rate-limited (tc tbf), with 1 and M microbatches.
# Prints the run's wall time as ppcc reports it ("ran ... in X ms"), min and
# median of PAIRS runs (configurations interleaved).
# Usage: bench/bench_mpi_cluster.sh BUILD_DIR [PAIRS] [MBIT] [M]   ($MPIEXEC picks the MPI)
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
mbit=${3:-100}
mb=${4:-8}
cluster=$(dirname "$0")/../tools/netns_cluster.sh
export PPCC_NETNS=b$$ PPCC_MPI_TIMEOUT=60 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap '"$cluster" down; rm -rf "$tmp"' EXIT
"$cluster" up 4
# 64 rows x 1024 floats = 256 KiB cross each stage boundary per batch
"$build/gen_pipeline" --blocks 8 --tp 1 --pp 4 --hidden 1024 --ffn 2048 --batch 64 -o "$tmp/m.json"
stats() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {printf "min %8.1f median %8.1f ms", v[1], v[int((NR+1)/2)]}'; }
ms() { sed -n 's/^ran .* in \([0-9.]*\) ms.*/\1/p' "$1" | tail -1; }
run() { # HOSTS MB -> ms
  local hosts=$1 m=$2
  if [[ $hosts -eq 1 ]]; then
    "$build/ppcc" run "$tmp/m.json" --random-weights 1 --backend=interp --threads 1 --microbatches "$m" > "$tmp/log" 2>&1
  else
    "$cluster" mpiexec "$hosts" "$build/ppcc" run "$tmp/m.json" --random-weights 1 --backend=interp --threads 1 \
      --microbatches "$m" > "$tmp/log" 2>&1 || true
  fi
  ms "$tmp/log"
}
for limit in unlimited "$mbit"; do
  if [[ $limit != unlimited ]]; then for i in 1 2 3 4; do "$cluster" link "$i" rate "$limit"; done; fi
  declare -A t=()
  for ((p = 0; p < pairs; p++)); do
    for hosts in 1 2 4; do for m in 1 "$mb"; do t[$hosts.$m]+=" $(run "$hosts" "$m")"; done; done
  done
  for hosts in 1 2 4; do for m in 1 "$mb"; do
    printf "links %-9s %d host(s) --microbatches %-2d %s\n" "$limit" "$hosts" "$m" "$(stats "${t[$hosts.$m]}")"
  done; done
done
