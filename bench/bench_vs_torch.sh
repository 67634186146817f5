#!/usr/bin/env bash
# ppcc against PyTorch eager (issue 12's "Done means"), from paired runs in
# one invocation: every measured pair alternates the commands (A, B, A,
# B, ...) and the figures are the min and the median over the pairs, so
# load from other users of the machine hits both sides alike.
#
#   bench/bench_vs_torch.sh [BUILD_DIR]          (default: build)
#   env: PAIRS (5)    pairs per forward figure
#        REPEAT (5)   steady-state forwards per process (min taken)
#        FULL=1       also the long ones: JIT compile of the 32-layer and
#                     10k-op models, emission of 100k ops, report of 1M ops
#        TORCH_THREADS (2) torch.set_num_threads
#        PYTHON       a python with torch (default: the first of
#                     BUILD_DIR/venv/bin/python3, /usr/bin/python3, python3
#                     that imports torch)
#
# What is compared: the steady-state forward. `ppcc run --repeat N` prints
# the min/median wall time of N forwards after the first (the device
# programs only: no JIT compile, no weight loading, weights already cut
# into shards); tools/torch_llama_ref.py does the same forward
# (same ops, float32, 2 threads) after one warm-up. Model:
#   gen_llama --layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1408
#             --vocab 4096 --seq 128   (3.17 GFLOP)
# at TP1PP1, TP2PP1 and TP1PP2 on 2 cores: TP2 runs 2 devices with 1
# kernel thread each; PP2 with one microbatch runs its stages one after
# the other, each with 2 kernel threads (ppcc_concurrent_devices). Never
# more than 2 busy threads.
#
# On a shared machine, torch's 2-thread OpenMP forward suffers most from
# other users' load (its threads spin-wait: 2 s instead of 0.05-0.2 s at
# load 13 here); TORCH_THREADS=1 gives a second, less load-sensitive
# reference. JIT compile figures give the process CPU time too, which load
# inflates less than wall time.
set -u
BUILD=${1:-build}
PAIRS=${PAIRS:-5}
REPEAT=${REPEAT:-5}
FULL=${FULL:-0}
SRC=$(cd "$(dirname "$0")/.." && pwd)
PPCC=$BUILD/ppcc
[ -x "$PPCC" ] || { echo "bench_vs_torch: no $PPCC (build first)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [ -z "${PYTHON:-}" ]; then
  for py in "$BUILD/venv/bin/python3" /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then PYTHON=$py; break; fi
  done
fi
PYTHON=${PYTHON:-}
[ -n "$PYTHON" ] || echo "note: no python with torch (tools/setup.sh installs python3-torch): torch column skipped"

LLAMA="--layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1408 --vocab 4096 --seq 128"

# stats FILE: "min median" of the numbers in FILE (one per line)
stats() { sort -g "$1" | awk '{v[NR]=$1} END {if (NR==0) {print "nan nan"; exit}
  m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f %.3f\n", v[1], m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b+0 == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.2f", a / b}'; }
# forward_min < OUTPUT: the min of a "forward (steady state ...): min X ms"
# line; for a ppcc without --repeat (an older build, for before/after),
# the one run's "ran 'M' on N devices in X ms".
forward_min() {
  awk '/forward \(steady state/ {for (i = 1; i < NF; i++) if ($i == "min") s = $(i + 1)}
       /^ran .* devices in / {for (i = 1; i < NF; i++) if ($i == "in") r = $(i + 1)}
       END {print (s != "" ? s : r)}'
}
# Without --repeat support, run once (first forward, cold).
REPEAT_ARG="--repeat $REPEAT"
"$PPCC" run --help 2>/dev/null | grep -q -- --repeat || { REPEAT_ARG=""; echo "note: $PPCC has no --repeat: first-run times"; }

echo "== steady-state forward vs torch (${PAIRS} pairs, min of ${REPEAT} forwards each; ms) =="
for cfg in "1 1" "2 1" "1 2"; do
  set -- $cfg
  m=$TMP/tp$1pp$2.json
  "$BUILD/gen_llama" $LLAMA --tp "$1" --pp "$2" -o "$m" || exit 1
  : >"$TMP/jit" ; : >"$TMP/interp" ; : >"$TMP/torch"
  for p in $(seq "$PAIRS"); do
    "$PPCC" run "$m" --backend=jit $REPEAT_ARG 2>/dev/null | forward_min >>"$TMP/jit"
    "$PPCC" run "$m" --backend=interp $REPEAT_ARG 2>/dev/null | forward_min >>"$TMP/interp"
    [ -n "$PYTHON" ] && "$PYTHON" "$SRC/tools/torch_llama_ref.py" $LLAMA --threads "${TORCH_THREADS:-2}" --repeat "$REPEAT" | forward_min >>"$TMP/torch"
  done
  read -r jmin jmed < <(stats "$TMP/jit")
  read -r imin imed < <(stats "$TMP/interp")
  echo "$jmin" >"$TMP/jit_tp$1pp$2"
  if [ -n "$PYTHON" ]; then
    read -r tmin tmed < <(stats "$TMP/torch")
    printf "TP%sPP%s  jit min %8.1f med %8.1f | interp min %8.1f med %8.1f | torch min %8.1f med %8.1f\n" \
      "$1" "$2" "$jmin" "$jmed" "$imin" "$imed" "$tmin" "$tmed"
    printf "TP%sPP%s  ratio ppcc/torch: jit %s (median %s), interp %s (median %s)\n" "$1" "$2" \
      "$(ratio "$jmin" "$tmin")" "$(ratio "$jmed" "$tmed")" "$(ratio "$imin" "$tmin")" "$(ratio "$imed" "$tmed")"
  else
    printf "TP%sPP%s  jit min %8.1f med %8.1f | interp min %8.1f med %8.1f | torch: skipped\n" \
      "$1" "$2" "$jmin" "$jmed" "$imin" "$imed"
  fi
done
echo "TP=2 speed-up over TP=1 (jit, min forward t(TP1)/t(TP2), 2 cores both): $(ratio "$(cat "$TMP/jit_tp1pp1")" "$(cat "$TMP/jit_tp2pp1")")"

echo "== linear layers vs OpenBLAS sgemm at the same shapes (interp trace of a steady-state forward, TP1PP1) =="
NUMPY_PY=""
for py in "$PYTHON" python3; do
  [ -n "$py" ] && "$py" -c 'import numpy' >/dev/null 2>&1 && { NUMPY_PY=$py; break; }
done
if [ -n "$NUMPY_PY" ] && [ -n "$REPEAT_ARG" ]; then
  "$PPCC" run "$TMP/tp1pp1.json" --backend=interp --repeat 2 --trace "$TMP/trace.json" >/dev/null 2>&1
  OPENBLAS_NUM_THREADS=2 "$NUMPY_PY" "$SRC/bench/linear_gflops.py" "$TMP/tp1pp1.json" "$TMP/trace.json"
else
  echo "skipped (needs a python with numpy and a ppcc with --repeat)"
fi

echo "== 2-stage pipeline on 2 cores, 4 microbatches vs 1 (interp) =="
# The pipelined model is tools/gen_pipeline's FFN stack: 8 blocks over 2
# stages, 256 rows.
# One thread budget for both (ppcc_concurrent_devices): with 1 microbatch
# the stages take turns and each gets both cores (2 kernel threads); with
# 4 both stages compute at once, 1 kernel thread each. So this is the
# pipeline against a 1-microbatch run that already uses every core, not
# against one that leaves a core idle.
"$BUILD/gen_pipeline" --blocks 8 --tp 1 --pp 2 --hidden 512 --ffn 2048 --batch 256 -o "$TMP/pp2.json" || exit 1
: >"$TMP/mb1" ; : >"$TMP/mb4"
for p in $(seq "$PAIRS"); do
  "$PPCC" run "$TMP/pp2.json" --backend=interp $REPEAT_ARG 2>/dev/null | forward_min >>"$TMP/mb1"
  "$PPCC" run "$TMP/pp2.json" --backend=interp --microbatches 4 $REPEAT_ARG 2>/dev/null | forward_min >>"$TMP/mb4"
done
read -r m1 m1med < <(stats "$TMP/mb1")
read -r m4 m4med < <(stats "$TMP/mb4")
echo "1 microbatch min $m1 ms (median $m1med), 4 microbatches min $m4 ms (median $m4med): speed-up $(ratio "$m1" "$m4")"

echo "== start-up (wall ms, ${PAIRS}x2 pairs) =="
: >"$TMP/ver" ; : >"$TMP/rep"
for p in $(seq $((PAIRS * 2))); do
  s=$(date +%s%N); "$PPCC" --version >/dev/null; e=$(date +%s%N); echo "$(( (e - s) / 1000 ))e-3" | awk '{print $1+0}' >>"$TMP/ver"
  s=$(date +%s%N); "$PPCC" report "$SRC/testdata/models/ppffn.json" >/dev/null; e=$(date +%s%N)
  echo "$(( (e - s) / 1000 ))e-3" | awk '{print $1+0}' >>"$TMP/rep"
done
read -r vmin vmed < <(stats "$TMP/ver")
read -r rmin rmed < <(stats "$TMP/rep")
echo "ppcc --version min $vmin ms (median $vmed); ppcc report ppffn.json min $rmin ms (median $rmed)"

# jit_compile MODEL: "wall_ms cpu_s" of a JIT compile (ppcc run prints the
# compile's wall time; CPU is the whole process's user+sys).
jit_compile() {
  local out
  out=$( { /usr/bin/time -f "cpu %U %S" "$PPCC" run "$1" --backend=jit 2>&1; } 2>&1)
  local w c
  w=$(echo "$out" | sed -n 's/^jit: compiled .* in \([0-9.]*\) ms.*/\1/p')
  c=$(echo "$out" | awk '/^cpu /{printf "%.2f", $2 + $3}')
  echo "${w:-nan} ${c:-nan}"
}

echo "== JIT compile time, hidden-256 llama (wall ms; process CPU s incl. the run) =="
H256="--hidden 256 --heads 8 --kv-heads 4 --ffn 704 --vocab 4096 --seq 128"
layers="4 8"
[ "$FULL" = 1 ] && layers="4 8 32"
for L in $layers; do
  "$BUILD/gen_llama" $H256 --layers "$L" -o "$TMP/h256_l$L.json" || exit 1
  read -r w c < <(jit_compile "$TMP/h256_l$L.json")
  echo "$w" >"$TMP/compile_l$L"
  echo "layers $L: compile $w ms wall, process CPU $c s"
done
echo "compile 8 layers / 4 layers: $(ratio "$(cat "$TMP/compile_l8")" "$(cat "$TMP/compile_l4")")"
[ "$FULL" = 1 ] && echo "compile 32 layers / 4 layers: $(ratio "$(cat "$TMP/compile_l32")" "$(cat "$TMP/compile_l4")")"

if [ "$FULL" = 1 ]; then
  echo "== long figures =="
  "$BUILD/gen_pipeline" --blocks 2500 --tp 2 --pp 2 -o "$TMP/p10k.json" || exit 1
  read -r w c < <(jit_compile "$TMP/p10k.json")
  echo "10k-op pipeline JIT compile: $w ms wall, process CPU $c s"
  "$BUILD/gen_pipeline" --blocks 25000 --tp 2 --pp 2 -o "$TMP/p100k.json" || exit 1
  s=$(date +%s%N); "$PPCC" compile "$TMP/p100k.json" --emit=mlir -o "$TMP/p100k.mlir"; e=$(date +%s%N)
  awk -v ns=$((e - s)) 'BEGIN {printf "annotated MLIR, 100k ops: %.0f ms = %.1f us/op\n", ns / 1e6, ns / 1e8}'
  "$BUILD/gen_pipeline" --blocks 250000 --tp 2 --pp 2 -o "$TMP/p1m.json" || exit 1
  /usr/bin/time -f "report-only compile, 1M ops: %e s wall, %M KB max RSS" "$PPCC" report "$TMP/p1m.json" >/dev/null
fi
