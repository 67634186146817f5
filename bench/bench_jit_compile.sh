#!/usr/bin/env bash
# JIT compile time (issue 12): `ppcc run --backend=jit` prints the
# compile's wall time and the process CPU time it took ("jit: compiled
# ... in W ms (...; CPU C ms)"); this prints min and median of both over
# PAIRS runs per model, and the 32-layer / 4-layer ratio. With a second
# build directory it alternates the two builds run by run (A, B, A, B,
# ...), so load from other users of the machine hits both alike, and
# prints B / A. CPU time is the steadier figure on a loaded machine.
#
#   bench/bench_jit_compile.sh [BUILD_DIR [BASE_BUILD_DIR]]   (default: build)
#   env: PAIRS (3)     runs per model and build
#        LAYERS ("4 8 16 32")  hidden-256 gen_llama depths
#        FULL=1        also the 2.5k, 5k and 10k-op pipelines (gen_pipeline
#                      --blocks B --tp 2 --pp 2: 4 devices, 4 ops a block)
#                      and the 10k / 2.5k ratio (linear: 4)
#        PIPE_BLOCKS ("625 1250 2500")  their --blocks
#        PIPE_PAIRS (1)  runs per pipeline and build
#
# Models: gen_llama --hidden 256 --heads 8 --kv-heads 4 --ffn 704
# --vocab 4096 --seq 128 --layers L. One ppcc at a time (the compile is
# single-threaded; the run after it uses at most the devices' threads).
set -u
A=${1:-build}
B=${2:-}
PAIRS=${PAIRS:-3}
LAYERS=${LAYERS:-"4 8 16 32"}
FULL=${FULL:-0}
PIPE_BLOCKS=${PIPE_BLOCKS:-"625 1250 2500"}
PIPE_PAIRS=${PIPE_PAIRS:-1}
for d in "$A" $B; do
  [ -x "$d/ppcc" ] || { echo "bench_jit_compile: no $d/ppcc (build first)" >&2; exit 1; }
done
[ -x "$A/gen_llama" ] && [ -x "$A/gen_pipeline" ] || { echo "bench_jit_compile: no $A/gen_llama or gen_pipeline" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# stats FILE: "min median" of the numbers in FILE (one per line)
stats() { sort -g "$1" | awk '{v[NR]=$1} END {if (NR==0) {print "nan nan"; exit}
  m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.1f %.1f\n", v[1], m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b+0 == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.2f", a / b}'; }

# compile BUILD MODEL TAG: appends the wall and CPU ms of one JIT compile
# to $TMP/TAG.wall and $TMP/TAG.cpu (CPU: the jit line's, else the whole
# process's user+sys from /usr/bin/time, for builds that do not print it).
compile() {
  local out w c
  out=$( { /usr/bin/time -f "proc %U %S" "$1/ppcc" run "$2" --backend=jit 2>&1; } 2>&1)
  w=$(echo "$out" | sed -n 's/^jit: compiled .* in \([0-9.]*\) ms.*/\1/p')
  c=$(echo "$out" | sed -n 's/^jit: compiled .*CPU \([0-9.]*\) ms.*/\1/p')
  [ -n "$c" ] || c=$(echo "$out" | awk '/^proc /{printf "%.1f", ($2 + $3) * 1000}')
  if [ -z "$w" ]; then
    echo "bench_jit_compile: $1/ppcc did not compile $2:" >&2
    echo "$out" | tail -3 >&2
    return 1
  fi
  echo "$w" >>"$TMP/$3.wall"
  echo "$c" >>"$TMP/$3.cpu"
}

# measure MODEL NAME RUNS: RUNS runs per build, alternating; prints a line per build
measure() {
  local i
  for ((i = 0; i < $3; i++)); do
    compile "$A" "$1" "$2.A" || return 1
    [ -z "$B" ] || compile "$B" "$1" "$2.B" || return 1
  done
  read -r wmin wmed < <(stats "$TMP/$2.A.wall")
  read -r cmin cmed < <(stats "$TMP/$2.A.cpu")
  printf "%-22s %-6s wall min %9.1f ms (median %9.1f)  CPU min %9.1f ms (median %9.1f)\n" "$2" A "$wmin" "$wmed" "$cmin" "$cmed"
  if [ -n "$B" ]; then
    read -r bwmin bwmed < <(stats "$TMP/$2.B.wall")
    read -r bcmin bcmed < <(stats "$TMP/$2.B.cpu")
    printf "%-22s %-6s wall min %9.1f ms (median %9.1f)  CPU min %9.1f ms (median %9.1f)  B/A wall %s CPU %s\n" \
      "$2" B "$bwmin" "$bwmed" "$bcmin" "$bcmed" "$(ratio "$bwmin" "$wmin")" "$(ratio "$bcmin" "$cmin")"
  fi
}

echo "A = $A${B:+, B = $B}; $PAIRS run(s) per model and build; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== JIT compile, hidden-256 llama =="
H256="--hidden 256 --heads 8 --kv-heads 4 --ffn 704 --vocab 4096 --seq 128"
for L in $LAYERS; do
  "$A/gen_llama" $H256 --layers "$L" -o "$TMP/l$L.json" || exit 1
  measure "$TMP/l$L.json" "layers_$L" "$PAIRS" || exit 1
done
first=${LAYERS%% *}
last=${LAYERS##* }
if [ "$first" != "$last" ]; then
  for t in A ${B:+B}; do
    w=$(ratio "$(stats "$TMP/layers_$last.$t.wall" | cut -d' ' -f1)" "$(stats "$TMP/layers_$first.$t.wall" | cut -d' ' -f1)")
    c=$(ratio "$(stats "$TMP/layers_$last.$t.cpu" | cut -d' ' -f1)" "$(stats "$TMP/layers_$first.$t.cpu" | cut -d' ' -f1)")
    echo "$t: compile $last layers / $first layers (min): wall $w, CPU $c"
  done
fi

if [ "$FULL" = 1 ]; then
  echo "== JIT compile, 2.5k / 5k / 10k-op pipelines (gen_pipeline --blocks B --tp 2 --pp 2, B = ${PIPE_BLOCKS}) =="
  for b in $PIPE_BLOCKS; do
    "$A/gen_pipeline" --blocks "$b" --tp 2 --pp 2 -o "$TMP/p$b.json" || exit 1
    measure "$TMP/p$b.json" "pipeline_$((b * 4))ops" "$PIPE_PAIRS" || exit 1
  done
  pfirst=${PIPE_BLOCKS%% *}
  plast=${PIPE_BLOCKS##* }
  if [ "$pfirst" != "$plast" ]; then
    for t in A ${B:+B}; do
      w=$(ratio "$(stats "$TMP/pipeline_$((plast * 4))ops.$t.wall" | cut -d' ' -f1)" "$(stats "$TMP/pipeline_$((pfirst * 4))ops.$t.wall" | cut -d' ' -f1)")
      c=$(ratio "$(stats "$TMP/pipeline_$((plast * 4))ops.$t.cpu" | cut -d' ' -f1)" "$(stats "$TMP/pipeline_$((pfirst * 4))ops.$t.cpu" | cut -d' ' -f1)")
      echo "$t: compile $((plast * 4)) ops / $((pfirst * 4)) ops (min; linear: $(ratio "$plast" "$pfirst")): wall $w, CPU $c"
    done
  fi
fi
