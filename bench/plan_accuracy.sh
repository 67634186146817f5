#!/usr/bin/env bash
# Predicted vs measured (issue 17): for 5 models, each device's peak
# memory and each stage's busy time from `ppcc run --check-plan` (the
# report's prediction against the interpreter's accounting and timeline),
# and for a 4-stage pipeline the predicted vs measured bubble for
# M = 1, 2, 4, 8 microbatches. Not a test: figures for the notes.
#   bench/plan_accuracy.sh [PPCC] [ROUNDS] [CALIB.json]
# Each model runs ROUNDS times (default 3; every run is 1 cold + 10 warm
# forwards, busy times are the warm median), printed as the min and
# median over rounds of the measured figure. The rounds go one after the
# other over all models, PLAN_GAP seconds apart (default 10). Measured bubble =
# 1 - sum over stages of the stage's busy time (slowest device) /
# (stages x wall of the device programs), the same definition as the
# prediction's. Without CALIB.json, `ppcc calibrate` runs first.
# Two threads at most (--threads 2). PLAN_BACKEND=jit measures the JIT
# (M = 1 only: the JIT runs no microbatches, those rows run interp),
# PLAN_BACKEND=both each backend in turn; default interp. PLAN_REPEAT=N:
# N warm forwards per run (default 40: stage times of microseconds need
# that many to settle; --check-plan alone runs 10). PLAN_ALL=1: every
# shipped model (testdata/models) and three 4-stage gen_llama pipelines
# instead. Per stage two statistics of the measured busy time: the
# median over rounds of each run's median forward (what --check-plan
# checks), and the fastest forward of all rounds (the machine at its
# quietest: other processes only ever add time); a count of the stages
# within 25 % of each follows. The runs column is the largest run median
# over the smallest: the machine's own spread between identical runs.
# Beyond 1.25 / 0.75 = 1.67x no one prediction is within 25 % of every
# run, so the last line counts those stages: their misses are the
# machine's (on this project's shared 2-vCPU VM a core ran at 40-54 % of
# its speed for seconds at a time in a fifth of 1160 probes), not the
# time model's.
# The machine's load (uptime) is printed before and after: the time
# model is calibrated and checked on the same, possibly shared, machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ppcc=${1:-build/ppcc}
rounds=${2:-3}
calib=${3:-}
bin=$(dirname "$ppcc")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "plan_accuracy: load before: $(uptime)"
if [[ -z $calib ]]; then
  calib=$tmp/calib.json
  "$ppcc" calibrate --threads 2 -o "$calib"
fi

"$bin/gen_llama" --layers 4 --pp 4 --hidden 256 --ffn 512 --vocab 512 --seq 32 -o "$tmp/llama_pp4.json"
"$bin/gen_pipeline" --blocks 8 --tp 2 --pp 2 --batch 16 --hidden 256 --ffn 1024 -o "$tmp/pipe_tp2pp2.json"
"$bin/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 16 --hidden 256 --ffn 1024 -o "$tmp/pipe_pp4.json"

# run MODEL LABEL [ARGS...]: queues ROUNDS check-plan runs, kept as
# $tmp/LABEL.N; run_queued makes them round after round (every model
# once, then again), so that each model's rounds sample the machine minutes
# apart: its speed moves over seconds to minutes, and back-to-back rounds
# would all see one moment of it.
queued=()
run() { # each job quoted (%q), so a path with spaces stays one argument
  local job
  printf -v job '%q ' "${BACKEND:-${PLAN_BACKEND:-interp}}" "$@"
  queued+=("$job")
}
run_queued() {
  local r job backend model label args
  for ((r = 0; r < rounds; r++)); do
    for job in "${queued[@]}"; do
      eval "args=($job)"
      backend=${args[0]} model=${args[1]} label=${args[2]}
      args=("${args[@]:3}")
      [[ " ${args[*]} " == *" --microbatches "* && " ${args[*]} " != *" --microbatches 1 "* ]] && backend=interp
      # a failed check (the process's RSS has no tolerance here) still
      # printed the tables: said, not fatal
      "$ppcc" run "$model" --backend="$backend" --check-plan --plan-time-tolerance=1e6 --plan-memory-tolerance=1e6 --threads 2 \
        --calibration "$calib" --repeat "${PLAN_REPEAT:-40}" "${args[@]}" >"$tmp/$label.$r" 2>"$tmp/err" ||
        echo "plan_accuracy: $label round $r ($backend): $(tail -1 "$tmp/err")"
    done
    ((r + 1 < rounds)) && sleep "${PLAN_GAP:-10}"
  done
  queued=()
}

summarize() { # LABEL...: the tables
  python3 - "$tmp" "$rounds" "$@" <<'PY'
import re, statistics, sys
tmp, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def parse(text):
    dev, stage, bubble, sect = {}, {}, None, None
    for line in text.splitlines():
        if "predicted peak (B)" in line: sect = "dev"; continue
        if "measured busy (ms)" in line: sect = "stage"; continue
        m = re.match(r"\s+bubble: predicted ([\d.]+), measured ([\d.-]+)", line)
        if m: bubble = (float(m[1]), float(m[2])); sect = None; continue
        f = line.split()
        if sect == "dev" and len(f) >= 3 and f[0].isdigit(): dev[int(f[0])] = (int(f[1]), int(f[2]))
        if sect == "stage" and len(f) >= 4 and f[0].isdigit():
            lo = float(f[5].split("-")[0]) if len(f) >= 6 else float(f[3])
            stage[int(f[0])] = (f[1], float(f[2]), float(f[3]), lo)
    return dev, stage, bubble
for label in labels:
    runs = [parse(open(f"{tmp}/{label}.{r}").read()) for r in range(rounds)]
    if label.startswith("bubble"):
        continue
    dev0, st0, _ = runs[0]
    print(f"\n{label}")
    print(f"  {'device':>6}  {'predicted peak':>14}  {'measured peak':>13}  {'error':>7}")
    for d, (p, m) in sorted(dev0.items()):
        ms = [r[0][d][1] for r in runs]
        print(f"  {d:>6}  {p:>14}  {max(ms):>13}  {100*(p-max(ms))/max(ms):>+6.2f}%")
    print(f"  {'stage':>5}  {'devices':<9}  {'predicted ms':>12}  {'median':>8}  {'fastest':>8}  {'runs':>6}  {'error(median)':>13}  {'error(fastest)':>14}")
    for s, (devs, p, _, _) in sorted(st0.items()):
        meds = [r[1][s][2] for r in runs]
        med = statistics.median(meds)
        fast = min(r[1][s][3] for r in runs)
        spread = max(meds) / min(meds) if min(meds) > 0 else float("inf")
        print(f"  {s:>5}  {devs:<9}  {p:>12.4f}  {med:>8.4f}  {fast:>8.4f}  {spread:>5.2f}x  {100*(p-med)/med:>+12.1f}%  {100*(p-fast)/fast:>+13.1f}%")
bub = [l for l in labels if l.startswith("bubble")]
if bub:
    print("\n4-stage pipeline (gen_pipeline --blocks 4 --tp 1 --pp 4 --batch 16 --hidden 256 --ffn 1024)")
    print(f"  {'M':>3}  {'predicted bubble':>16}  {'measured min':>12}  {'median':>7}  {'GPipe (p-1)/(M+p-1)':>20}"
          f"  {'stage ms: predicted':>19}  {'measured median':>15}  {'worst stage error':>17}")
    for label in bub:
        m = int(label.split("_M")[1])
        runs = [parse(open(f"{tmp}/{label}.{r}").read()) for r in range(rounds)]
        meas = [r[2][1] for r in runs]
        st0 = runs[0][1]
        pred = [p for _, p, _, _ in st0.values()]
        med = [statistics.median([r[1][s][2] for r in runs]) for s in st0]
        worst = max((100 * (p - q) / q for p, q in zip(pred, med)), key=abs)
        print(f"  {m:>3}  {runs[0][2][0]:>16.3f}  {min(meas):>12.3f}  {statistics.median(meas):>7.3f}  {3/(m+3):>20.3f}"
              f"  {min(pred):>8.4f}-{max(pred):<10.4f}  {min(med):>6.4f}-{max(med):<8.4f}  {worst:>+16.1f}%")
PY
}

if [[ ${PLAN_ALL:-0} == 1 ]]; then
  # every shipped model and 4-stage gen_llama pipelines (prefill and decode)
  "$bin/gen_llama" --layers 4 --pp 4 --hidden 128 --ffn 256 --vocab 256 --seq 8 -o "$tmp/llama_pp4_small.json"
  "$bin/gen_llama" --layers 4 --pp 4 --hidden 256 --ffn 512 --vocab 512 --seq 1 --start 16 -o "$tmp/llama_pp4_decode.json"
  backends=${PLAN_BACKEND:-interp}
  [[ $backends == both ]] && backends="interp jit"
  for BACKEND in $backends; do
    labels=()
    for m in testdata/models/*.json; do
      label=$(basename "$m" .json)
      run "$m" "$label"
      labels+=("$label")
    done
    run "$tmp/llama_pp4.json" gen_llama_L4_pp4
    run "$tmp/llama_pp4_small.json" gen_llama_L4_pp4_h128
    run "$tmp/llama_pp4_decode.json" gen_llama_L4_pp4_decode
    labels+=(gen_llama_L4_pp4 gen_llama_L4_pp4_h128 gen_llama_L4_pp4_decode)
    run_queued
    echo
    echo "plan_accuracy: backend $BACKEND, $rounds rounds per row of ${PLAN_REPEAT:-40} warm forwards each"
    summarize "${labels[@]}" | tee "$tmp/summary"
    awk -v backend="$BACKEND" '/error\(median\)/{on=1; next} /^$|device/{on=0}
         on && NF>=8 && $NF ~ /%$/ { n++; for (k = 0; k < 2; k++) { e = $(NF - 1 + k); sub("%", "", e); e += 0; if (e < 0) e = -e; if (e <= 25) ok[k]++ }
                                     x = $(NF - 2); sub("x", "", x); if (x + 0 > 1.25 / 0.75) wide++ }
         END { printf "plan_accuracy: %s: %d of %d stages within 25%% of the measured median, %d of the fastest forward\n", backend, ok[0], n, ok[1]
               printf "plan_accuracy: %s: %d of %d stages with run medians more than 1.67x apart (runs: largest / smallest), which no one prediction meets within 25%%\n", backend, wide, n }' "$tmp/summary"
  done
else
run testdata/models/tiny_llama.json tiny_llama
run testdata/models/ppffn_sharktank.json ppffn_sharktank
run testdata/models/tp_ffn.json tp_ffn
run "$tmp/llama_pp4.json" gen_llama_L4_pp4
run "$tmp/pipe_tp2pp2.json" gen_pipeline_tp2pp2
for m in 1 2 4 8; do run "$tmp/pipe_pp4.json" "bubble_M$m" --microbatches "$m"; done
run_queued
echo "plan_accuracy: $rounds rounds per row, calibration $(tr -d '\n ' <"$calib")"
summarize tiny_llama ppffn_sharktank tp_ffn gen_llama_L4_pp4 gen_pipeline_tp2pp2 bubble_M1 bubble_M2 bubble_M4 bubble_M8
fi
echo "plan_accuracy: load after: $(uptime)"
