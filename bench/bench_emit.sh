#!/usr/bin/env bash
# Emission and front-end speed (issue 12) on pipeline-FFN models
# (tools/gen_pipeline, tp=2 pp=4), in one invocation:
#   - annotated MLIR, `ppcc compile M -o out.mlir`: µs per model op at 10k and 100k ops;
#   - executable MLIR, `--emit=mlir-exec`: µs per op at 10k ops (100k with EXEC_100K=1);
#   - report-only compile of 1M ops, `ppcc report M` and `ppcc compile M --report=r.json`:
#     seconds and peak RSS.
# Wall and CPU (user+sys) time and peak RSS come from /usr/bin/time. With
# a second binary A (e.g. a build of the previous commit) runs are paired
# A,B,A,B,... and both outputs are checked to be byte-identical; each
# figure is the min and median over the rounds.
#   bench/bench_emit.sh [PPCC_B] [PPCC_A] [ROUNDS]
# Defaults: build/ppcc, no A, 3 rounds. GEN=path/to/gen_pipeline, TMP=dir.
set -euo pipefail
cd "$(dirname "$0")/.."
b=${1:-build/ppcc}
a=${2:-}
rounds=${3:-3}
gen=${GEN:-build/gen_pipeline}
tmp=${TMP:-$(mktemp -d)}
[[ -x /usr/bin/time ]] || { echo "bench_emit: needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
[[ -x $gen && -x $b ]] || { echo "bench_emit: build $gen and $b first" >&2; exit 1; }
[[ -z $a || -x $a ]] || { echo "bench_emit: $a is not executable" >&2; exit 1; }
[[ -n ${TMP:-} ]] || trap 'rm -rf "$tmp"' EXIT

declare -A blocks=([10k]=2500 [100k]=25000 [1M]=250000)
for size in 10k 100k 1M; do
  [[ -s $tmp/$size.json ]] || "$gen" --blocks "${blocks[$size]}" --tp 2 --pp 4 -o "$tmp/$size.json"
done
ops() { echo $((${blocks[$1]} * 4 + 1)); }

# run TAG OUTFILE CMD...: appends "wall cpu rss_kb" of one run to $tmp/TAG.
run() {
  local tag=$1 out=$2
  shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time.txt" "$@" > "$out"
  awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$tmp/time.txt" >> "$tmp/$tag"
}

# stats FILE COLUMN SCALE: "min X median Y" of column (1 wall, 2 cpu, 3 rss) times SCALE.
stats() {
  awk -v c="$2" '{print $c}' "$1" | sort -g |
    awk -v s="$3" '{v[NR] = $1 * s} END {printf "min %9.2f  median %9.2f", v[1], v[int((NR + 1) / 2)]}'
}

cases=(emit10k emit100k exec10k report1M reportjson1M)
[[ ${EXEC_100K:-0} == 1 ]] && cases+=(exec100k)
one_case() { # which binary case
  local bin=$1 which=$2 c=$3
  case $c in
  emit10k) run "$which.$c" /dev/null "$bin" compile "$tmp/10k.json" -o "$tmp/$which.$c.mlir" ;;
  emit100k) run "$which.$c" /dev/null "$bin" compile "$tmp/100k.json" -o "$tmp/$which.$c.mlir" ;;
  exec10k) run "$which.$c" /dev/null "$bin" compile "$tmp/10k.json" --emit=mlir-exec -o "$tmp/$which.$c.mlir" ;;
  exec100k) run "$which.$c" /dev/null "$bin" compile "$tmp/100k.json" --emit=mlir-exec -o "$tmp/$which.$c.mlir" ;;
  report1M) run "$which.$c" "$tmp/$which.$c.txt" "$bin" report "$tmp/1M.json" ;;
  reportjson1M) run "$which.$c" /dev/null "$bin" compile "$tmp/1M.json" --report="$tmp/$which.$c.json" ;;
  esac
}

for ((r = 0; r < rounds; r++)); do
  for c in "${cases[@]}"; do
    [[ -n $a ]] && one_case "$a" A "$c"
    one_case "$b" B "$c"
  done
done

echo "pipeline FFN models, tp=2 pp=4; $rounds round(s)${a:+, paired A,B,A,B}; A=${a:-none} B=$b"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (wall times stretch under load; CPU = user+sys)"
for c in "${cases[@]}"; do
  case $c in
  emit10k | exec10k) n=$(ops 10k) ;;
  emit100k | exec100k) n=$(ops 100k) ;;
  *) n=$(ops 1M) ;;
  esac
  for which in A B; do
    f=$tmp/$which.$c
    [[ -s $f ]] || continue
    if [[ $c == report* ]]; then
      printf "%-13s %s  wall s %s | CPU s %s | peak RSS MB %s\n" "$c" "$which" "$(stats "$f" 1 1)" \
        "$(stats "$f" 2 1)" "$(stats "$f" 3 0.0009765625)"
    else
      printf "%-13s %s  wall us/op %s | CPU us/op %s | peak RSS MB %s\n" "$c" "$which" \
        "$(stats "$f" 1 "$(awk -v n="$n" 'BEGIN {print 1e6 / n}')")" \
        "$(stats "$f" 2 "$(awk -v n="$n" 'BEGIN {print 1e6 / n}')")" "$(stats "$f" 3 0.0009765625)"
    fi
  done
  if [[ -n $a ]]; then
    for ext in mlir txt json; do
      [[ -e $tmp/A.$c.$ext ]] || continue
      if cmp -s "$tmp/A.$c.$ext" "$tmp/B.$c.$ext"; then echo "  $c: A and B outputs identical"
      else echo "  $c: A and B OUTPUTS DIFFER" >&2; fi
    done
  fi
done
