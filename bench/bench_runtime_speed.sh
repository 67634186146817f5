#!/usr/bin/env bash
# Runtime speed figures of issue 12 from paired runs in one invocation
# (A, B, A, B, ...; min and median over the pairs), never more than 2 busy
# threads (--threads 2 everywhere):
#   - TP=2 / TP=1 with the same cores: the Llama model of bench_vs_torch.sh
#     as 1 device x 2 kernel threads against 2 devices x 1 thread, both
#     backends; the figure is wall(TP1) / wall(TP2) (>= 0.95 wanted);
#   - a 2-stage pipeline on 2 cores, 4 microbatches against 1 (interp):
#     wall(1) / wall(4) (>= 1.5 wanted);
#   - arenas off / on: PPCC_NO_ARENA=1 makes both backends allocate every
#     op result and temporary on the heap again (as before the arenas);
#   - with BASE=OLD_PPCC, the same forwards of an older ppcc against this
#     one (before/after of a change), each row OLD then NEW (the binary
#     must find its own libppcc_mlir.so: give one in its build directory).
#
#   bench/bench_runtime_speed.sh [BUILD_DIR]        (default: build)
#   env: PAIRS (5), REPEAT (5) steady-state forwards per process (min taken),
#        BASE  an older ppcc binary to compare with
set -u
BUILD=${1:-build}
PAIRS=${PAIRS:-5}
REPEAT=${REPEAT:-5}
BASE=${BASE:-}
PPCC=$BUILD/ppcc
[ -x "$PPCC" ] || { echo "bench_runtime_speed: no $PPCC (build first)" >&2; exit 1; }
for t in gen_llama gen_pipeline; do
  [ -x "$BUILD/$t" ] || { echo "bench_runtime_speed: no $BUILD/$t (cmake --build $BUILD --target $t)" >&2; exit 1; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

LLAMA="--layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1408 --vocab 4096 --seq 128"
"$BUILD/gen_llama" $LLAMA --tp 1 --pp 1 -o "$TMP/tp1.json" || exit 1
"$BUILD/gen_llama" $LLAMA --tp 2 --pp 1 -o "$TMP/tp2.json" || exit 1
"$BUILD/gen_pipeline" --blocks 8 --tp 1 --pp 2 --hidden 512 --ffn 2048 --batch 256 -o "$TMP/pp2.json" || exit 1

# forward_min < OUTPUT: the min of "forward (steady state ...): min X ms"
forward_min() { sed -n 's/.*steady state.*: min \([0-9.]*\) ms.*/\1/p'; }
stats() { sort -g "$1" | awk '{v[NR]=$1} END {if (NR==0) {print "nan nan"; exit}
  m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.3f %.3f\n", v[1], m}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b+0 == 0 || a == "nan" || b == "nan") print "n/a"; else printf "%.2f", a / b}'; }

# pair NAME_A NAME_B "CMD A" "CMD B": paired forwards, one line of figures
pair() {
  : >"$TMP/a"; : >"$TMP/b"
  for p in $(seq "$PAIRS"); do
    eval "$3" 2>/dev/null | forward_min >>"$TMP/a"
    eval "$4" 2>/dev/null | forward_min >>"$TMP/b"
  done
  read -r amin amed < <(stats "$TMP/a")
  read -r bmin bmed < <(stats "$TMP/b")
  printf "  %-14s min %8s ms (median %8s) | %-14s min %8s ms (median %8s) | %s/%s: min %s, median %s\n" \
    "$1" "$amin" "$amed" "$2" "$bmin" "$bmed" "$1" "$2" "$(ratio "$amin" "$bmin")" "$(ratio "$amed" "$bmed")"
}

R="--repeat $REPEAT --threads 2"
echo "== TP=2 / TP=1 with the same 2 cores (wall TP1 / wall TP2; >= 0.95 wanted) =="
for be in interp jit; do
  echo " backend $be:"
  pair TP1 TP2 "\"$PPCC\" run \"$TMP/tp1.json\" --backend=$be $R" "\"$PPCC\" run \"$TMP/tp2.json\" --backend=$be $R"
done

echo "== 2-stage pipeline on 2 cores, 1 microbatch / 4 microbatches (interp; >= 1.5 wanted) =="
pair mb1 mb4 "\"$PPCC\" run \"$TMP/pp2.json\" --backend=interp $R" \
  "\"$PPCC\" run \"$TMP/pp2.json\" --backend=interp --microbatches 4 $R"

echo "== arenas off (PPCC_NO_ARENA=1: heap buffers per op) / on =="
for be in interp jit; do
  for m in tp1 tp2; do
    echo " $m backend $be:"
    pair heap arena "PPCC_NO_ARENA=1 \"$PPCC\" run \"$TMP/$m.json\" --backend=$be $R" "\"$PPCC\" run \"$TMP/$m.json\" --backend=$be $R"
  done
done
echo " pipeline, 4 microbatches, interp:"
pair heap arena "PPCC_NO_ARENA=1 \"$PPCC\" run \"$TMP/pp2.json\" --backend=interp --microbatches 4 $R" \
  "\"$PPCC\" run \"$TMP/pp2.json\" --backend=interp --microbatches 4 $R"

if [ -n "$BASE" ]; then
  echo "== before ($BASE) / after ($PPCC) =="
  for be in interp jit; do
    for m in tp1 tp2; do
      echo " $m backend $be:"
      pair before after "\"$BASE\" run \"$TMP/$m.json\" --backend=$be $R" "\"$PPCC\" run \"$TMP/$m.json\" --backend=$be $R"
    done
  done
  for mb in 1 4; do
    echo " pipeline, $mb microbatch(es), interp:"
    pair before after "\"$BASE\" run \"$TMP/pp2.json\" --backend=interp --microbatches $mb $R" \
      "\"$PPCC\" run \"$TMP/pp2.json\" --backend=interp --microbatches $mb $R"
  done
fi
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg); figures from a shared machine move with it)"
