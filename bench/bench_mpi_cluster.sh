#!/usr/bin/env bash
# Pipeline over simulated hosts (tools/netns_cluster.sh; root and ip netns):
# a 4-stage gen_pipeline passing 4 MiB per batch between stages, run by one
# process, 2 hosts and 4 hosts over TCP, links unlimited and rate-limited
# (tc tbf), with 1 and M microbatches; predicted against measured wall time.
# Measured: the run's own "ran ... in X ms" (min and median of PAIRS runs,
# configurations interleaved). Predicted: one process, the report's
# pipeline wall (`ppcc report --calibration`); on hosts, what rank 0 prints
# over the links that `ppcc calibrate --links` measured just before (each
# rank a host); "unoverlapped" = every stage and transfer in turn.
# Usage: bench/bench_mpi_cluster.sh BUILD_DIR [PAIRS] [MBIT] [M]
#   $MPIEXEC picks the MPI (the one BUILD_DIR was built with); $CALIB: a
#   calibration file of this machine (default: `ppcc calibrate`, ~90 s).
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
# 256 rows x 4096 floats = 4 MiB cross each stage boundary per batch
# (42 ms per microbatch of 8 at 100 Mbit); little compute
"$build/gen_pipeline" --blocks 4 --tp 1 --pp 4 --hidden 4096 --ffn 128 --batch 256 -o "$tmp/m.json"
calib=${CALIB:-$tmp/calib.json}
[[ -n ${CALIB:-} ]] || "$build/ppcc" calibrate -o "$calib" 2> /dev/null
args=(--random-weights 1 --backend=interp --calibration "$calib")
stats() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {printf "%8.1f %8.1f", v[1], v[int((NR+1)/2)]}'; }
median() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
run() { # HOSTS MB: measured ms; the prediction goes to $tmp/pred.HOSTS.MB
  local hosts=$1 m=$2
  if [[ $hosts -eq 1 ]]; then
    "$build/ppcc" run "$tmp/m.json" "${args[@]}" --microbatches "$m" > "$tmp/log" 2>&1
    "$build/ppcc" report "$tmp/m.json" --calibration "$calib" --microbatches "$m" |
      sed -n 's/.*(pipeline wall \([0-9.]*\) ms).*/\1 -/p' > "$tmp/pred.$hosts.$m"
  else
    # a kernel thread per rank: the simulated hosts share this machine's cores
    "$cluster" mpiexec "$hosts" "$build/ppcc" run "$tmp/m.json" "${args[@]}" --microbatches "$m" --threads 1 \
      --devices-spec "$tmp/spec.json" > "$tmp/log" 2>&1 || true
    sed -n 's/^predicted over .*: wall \([0-9.]*\) ms, unoverlapped \([0-9.]*\) ms$/\1 \2/p' "$tmp/log" > "$tmp/pred.$hosts.$m"
  fi
  sed -n 's/^ran .* in \([0-9.]*\) ms.*/\1/p' "$tmp/log" | tail -1
}
printf "%-9s %5s %3s %12s %12s %17s %8s\n" links hosts M predicted unoverlapped "measured min/med" "error"
for limit in unlimited "$mbit"; do
  for i in 1 2 3 4; do
    if [[ $limit == unlimited ]]; then "$cluster" link "$i" undrop; else "$cluster" link "$i" rate "$limit"; fi
  done
  # the links as measured between the ranks; each device on its rank's host
  "$cluster" mpiexec 4 "$build/ppcc" calibrate --links -o "$tmp/links.json" > /dev/null 2>&1
  sed '1s/.*/{"devices": [{}, {}, {}, {}],/' "$tmp/links.json" > "$tmp/spec.json"
  declare -A t=()
  for ((p = 0; p < pairs; p++)); do
    for hosts in 1 2 4; do for m in 1 "$mb"; do t[$hosts.$m]+=" $(run "$hosts" "$m")"; done; done
  done
  for hosts in 1 2 4; do for m in 1 "$mb"; do
    read -r pred unover < "$tmp/pred.$hosts.$m"
    med=$(median "${t[$hosts.$m]}")
    printf "%-9s %5d %3d %12.1f %12s %17s %+7.1f%%\n" "$limit" "$hosts" "$m" "$pred" "$unover" \
      "$(stats "${t[$hosts.$m]}")" "$(awk -v p="$pred" -v m="$med" 'BEGIN {print 100 * (m - p) / p}')"
  done; done
  unset t
done
