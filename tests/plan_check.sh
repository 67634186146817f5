#!/usr/bin/env bash
# Issue 17: the report's prediction against the run (ppcc run --check-plan).
#  - predicted peak memory per device equals the runtime's accounting
#    exactly (tolerance 0) on every shipped model, a generated 4-stage
#    pipeline at 1, 2, 4 and 8 microbatches, a gen_llama prefill (4 layers,
#    --pp 4) and a TP decode with a KV cache;
#    (all on the interpreter: --backend=interp);
#  - on the JIT (default backend) the predicted peak is within the default
#    10 % of the measurement on every shipped model but one and generated
#    pipelines (TP+PP, llama prefill and decode), exact on those where no
#    unmodelled kernel temporary is live at the high-water mark and within
#    3 % on the others (inserted_collectives: 20 %, below); the JIT check
#    fails on an injected mismatch and a 0 time tolerance;
#  - stage times are printed but not asserted (no timed assertions in
#    tests: bench/plan_accuracy.sh reports their accuracy);
#  - the check fails when a tolerance is 0 (time) or a mismatch is injected
#    (memory), naming the stage or device, so it would fail if it checked
#    nothing;
#  - ppcc calibrate writes a file that --calibration reads, with a cost
#    per op kind of the LLM and FFN op set (tests/test_predict.c checks
#    the new fields round-trip and change the prediction); bad files are
#    refused with one line naming the file and the field;
#  - out of the box (issue 27 item 12) --check-plan calibrates once per
#    CPU and caches it under $XDG_CACHE_HOME/ppcc: written once, then
#    reused; a corrupt or old cache is refused with one warning line and
#    redone; PPCC_CALIBRATION_CACHE=0 and --calibration=none skip it (the
#    measurement is the file above, injected: no timing in the test).
# Usage: plan_check.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
bin=$(dirname "$ppcc")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "plan_check: $*" >&2; exit 1; }
# No calibration cache of the user's (and no minute of measuring) unless a
# check below asks for it with its own XDG_CACHE_HOME.
export PPCC_CALIBRATION_CACHE=0

# Memory exact; time not asserted (tolerance huge).
exact() {
  local model=$1; shift
  local out
  out=$("$ppcc" run "$model" --backend=interp --check-plan --plan-memory-tolerance=0 --plan-time-tolerance=1e6 --threads 2 "$@" 2>&1) ||
    { echo "$out"; fail "$(basename "$model") $*: predicted memory differs from the measurement"; }
  grep -q "predicted peak (B)  measured peak (B)" <<<"$out" || { echo "$out"; fail "$model: no plan check table"; }
  grep -q "^plan check backend: interp" <<<"$out" || { echo "$out"; fail "$model: not measured on the interpreter"; }
  # measured in the steady state: unmeasured forwards first (PPCC_CHECK_PLAN_WARMUP_MS)
  grep -q "^warm-up: [1-9][0-9]* forwards in [0-9.]* ms, not measured" <<<"$out" || { echo "$out"; fail "$model: no warm-up before the measured forwards"; }
  # every device row: predicted == measured, and not 0
  awk '/predicted peak/{on=1; next} /stage  devices/{on=0} on && NF>=3 { if ($2 != $3 || $2 == 0) bad=1; n++ }
       END { exit !(n > 0 && !bad) }' <<<"$out" || { echo "$out"; fail "$model $*: a device row differs or is empty"; }
}

n=0
for model in "$src"/testdata/models/*.json; do
  exact "$model"
  n=$((n + 1))
done

"$bin/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 16 --hidden 64 --ffn 128 -o "$tmp/pipe.json"
for m in 1 2 4 8; do exact "$tmp/pipe.json" --microbatches "$m"; done
"$bin/gen_pipeline" --blocks 4 --tp 2 --pp 2 --batch 8 --hidden 64 --ffn 128 -o "$tmp/pipe_tp.json"
exact "$tmp/pipe_tp.json" --microbatches 4
"$bin/gen_llama" --layers 4 --pp 4 --hidden 64 --ffn 128 --vocab 128 --seq 8 -o "$tmp/llama.json"
exact "$tmp/llama.json"
"$bin/gen_llama" --layers 2 --tp 2 --pp 2 --hidden 64 --ffn 128 --vocab 128 --seq 1 --start 8 -o "$tmp/decode.json"
exact "$tmp/decode.json"

# The report's prediction equals what --check-plan predicted (one model).
"$ppcc" report "$tmp/pipe.json" --format=json --microbatches 4 >"$tmp/pipe.report.json"
python3 - "$tmp/pipe.report.json" <<'PY' || fail "JSON prediction fields"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["prediction"]
assert p["microbatches"] == 4 and p["calibrated"] is False, p
for d in p["devices"]:
    assert d["peak_bytes"] == d["param_bytes"] + d["activation_bytes"] + d["kv_cache_bytes"] + d["transfer_bytes"], d
    assert d["peak_bytes"] > 0 and d["microbatches_in_flight"] >= 1, d
assert len(p["stages"]) == 4 and all(s["time_ms"] > 0 for s in p["stages"]), p["stages"]
assert 0 < p["bubble"] < 1, p
assert "device_summary" in r  # existing fields stay
PY

# Out of the box (no calibration, no tolerance given): memory is checked,
# stage times are shown but said to be unchecked, and the run passes (the
# constants' times were 5x off on a fresh machine, and it failed).
out=$("$ppcc" run "$src/testdata/models/ppffn.json" --random-weights 1 --input x="$src/testdata/inputs/x.npy" --check-plan 2>&1) ||
  { echo "$out"; fail "--check-plan without a calibration failed on uncalibrated times"; }
grep -q "stage times UNCHECKED (uncalibrated" <<<"$out" || { echo "$out"; fail "uncalibrated --check-plan does not say times are unchecked"; }
! grep -q "  OFF" <<<"$out" || { echo "$out"; fail "uncalibrated --check-plan marks a time OFF"; }

# Failing checks: a 0 time tolerance, an injected memory mismatch.
set +e
out=$("$ppcc" run "$tmp/pipe.json" --backend=interp --check-plan --plan-time-tolerance=0 2>&1); rc=$?
set -e
[[ $rc == 1 ]] || { echo "$out"; fail "--plan-time-tolerance=0 passed (exit $rc)"; }
grep -q "error: --check-plan: stage [0-9]* time is off" <<<"$out" || { echo "$out"; fail "time failure names no stage"; }
set +e
out=$(PPCC_INJECT_PLAN_MEMORY=2:4096 "$ppcc" run "$tmp/pipe.json" --backend=interp --check-plan --plan-memory-tolerance=0 \
      --plan-time-tolerance=1e6 2>&1); rc=$?
set -e
[[ $rc == 1 ]] || { echo "$out"; fail "injected memory mismatch passed (exit $rc)"; }
grep -q "error: --check-plan: device 2 peak memory is off" <<<"$out" || { echo "$out"; fail "memory failure names no device"; }
# 4 KiB on ~40 KiB is inside a 0.5 tolerance: the tolerance is applied
PPCC_INJECT_PLAN_MEMORY=2:64 "$ppcc" run "$tmp/pipe.json" --backend=interp --check-plan --plan-memory-tolerance=0.5 \
  --plan-time-tolerance=1e6 >/dev/null 2>&1 || fail "a small injected mismatch failed a 0.5 tolerance"


# The JIT: memory within the default tolerance (0.10), or exact where given.
have_jit=false
if "$ppcc" run "$tmp/pipe.json" --backend=jit >/dev/null 2>&1; then have_jit=true; fi
jit_check() {
  local model=$1 tol=$2; shift 2
  local out
  out=$("$ppcc" run "$model" --backend=jit --check-plan --plan-memory-tolerance="$tol" --plan-time-tolerance=1e6 \
        --threads 2 "$@" 2>&1) ||
    { echo "$out"; fail "JIT $(basename "$model") $*: predicted memory off by more than $tol"; }
  grep -q "^plan check backend: jit" <<<"$out" || { echo "$out"; fail "$model: not measured on the JIT"; }
  grep -q "^warm-up: [1-9][0-9]* forwards in [0-9.]* ms, not measured" <<<"$out" || { echo "$out"; fail "JIT $model: no warm-up before the measured forwards"; }
  awk -v tol="$tol" '/predicted peak/{on=1; next} /stage  devices/{on=0}
       on && NF>=3 { d = $2 - $3; if (d < 0) d = -d; if ($3 == 0 || d > tol * $3) bad=1; n++ }
       END { exit !(n > 0 && !bad) }' <<<"$out" || { echo "$out"; fail "JIT $model: a device row is off or empty"; }
}
n_jit=0
if $have_jit; then
  for model in "$src"/testdata/models/*.json; do
    [[ $(basename "$model") == inserted_collectives.json ]] && continue
    jit_check "$model" 0.10
    n_jit=$((n_jit + 1))
  done
  # exact where no unmodelled kernel temporary is live at the high-water
  # mark (a replicated operand's slice is modelled: ppffn_sharktank); else
  # within 3 % (the llamas: < 700 B). The JIT frees each buffer after its
  # last use, so the peak of inserted_collectives' device 2 is during a
  # biased linear, whose kernel stages the product before adding the bias
  # (1536 B of 9696, not modelled): within 20 %.
  for model in explicit_transfer pp_chain ppffn ppffn_sharktank tp_ffn; do
    jit_check "$src/testdata/models/$model.json" 0
  done
  jit_check "$src/testdata/models/inserted_collectives.json" 0.20
  n_jit=$((n_jit + 1))
  jit_check "$src/testdata/models/tiny_llama.json" 0.03
  jit_check "$tmp/pipe.json" 0
  jit_check "$tmp/pipe_tp.json" 0
  jit_check "$tmp/llama.json" 0.03
  jit_check "$tmp/decode.json" 0.03
  set +e
  out=$(PPCC_INJECT_PLAN_MEMORY=1:4096 "$ppcc" run "$src/testdata/models/pp_chain.json" --backend=jit --check-plan \
        --plan-memory-tolerance=0 --plan-time-tolerance=1e6 2>&1); rc=$?
  set -e
  [[ $rc == 1 ]] || { echo "$out"; fail "JIT: injected memory mismatch passed (exit $rc)"; }
  grep -q "error: --check-plan: device 1 peak memory is off" <<<"$out" || { echo "$out"; fail "JIT: memory failure names no device"; }
  set +e
  out=$("$ppcc" run "$tmp/pipe_tp.json" --backend=jit --check-plan --plan-time-tolerance=0 2>&1); rc=$?
  set -e
  [[ $rc == 1 ]] || { echo "$out"; fail "JIT: --plan-time-tolerance=0 passed (exit $rc)"; }
  grep -q "error: --check-plan: stage [0-9]* time is off" <<<"$out" || { echo "$out"; fail "JIT: time failure names no stage"; }
  # by default (no --backend) --check-plan runs on the JIT
  "$ppcc" run "$tmp/pipe_tp.json" --check-plan --plan-time-tolerance=1e6 2>&1 | grep -q "^plan check backend: jit" ||
    fail "--check-plan without --backend did not measure the JIT"
fi
set +e
out=$("$ppcc" run "$tmp/pipe.json" --plan-time-tolerance=abc 2>&1); rc=$?
set -e
[[ $rc == 2 ]] || { echo "$out"; fail "bad tolerance accepted (exit $rc)"; }

# Calibration: written (atomically) then read.
# an output path that cannot be created is refused before measuring: no
# measurement line on stdout, one error line (it came after ~50 s)
rc=0
"$ppcc" calibrate -o "$tmp/no/such/dir/calib.json" --threads 1 >"$tmp/cal.out" 2>"$tmp/cal.err" || rc=$?
[[ $rc -eq 1 && ! -s $tmp/cal.out && $(wc -l <"$tmp/cal.err") -eq 1 ]] &&
  grep -q "cannot create '.*calib.json'" "$tmp/cal.err" || fail "calibrate -o into a missing folder: $(cat "$tmp/cal.out" "$tmp/cal.err")"
"$ppcc" calibrate -o "$tmp/calib.json" --threads 1 >"$tmp/cal.log"
# the wait costs are fitted in fresh processes, as runs measure (in one
# process the later fits drifted to the costs runs see one time in three)
grep -q "^wait costs: each fit in a process of its own" "$tmp/cal.log" ||
  fail "calibrate fits the wait costs in its own process: $(grep -i wait "$tmp/cal.log")"
grep -Eq "^device threads sharing a core: [1-7] fits \(resume/start, us\):( -?[0-9.]+/-?[0-9.]+)+$" "$tmp/cal.log" ||
  fail "calibrate does not log each wait fit: $(grep -i fits "$tmp/cal.log")"
# every op-cost sample is taken in the steady state --check-plan measures:
# each workload (and each JIT variant with its base) after 50 ms of
# unmeasured forwards (taken from the first forwards after loading, a
# decode stage's linears were priced 25-50 % too slow)
grep -Eq "^per-op workloads: [1-9][0-9]*, each measured after 50 ms of unmeasured forwards \([1-9][0-9]* to [1-9][0-9]*\)" "$tmp/cal.log" ||
  fail "calibrate does not warm its per-op workloads up: $(grep -i workloads "$tmp/cal.log")"
# and spread over several passes, each sample the median of its passes
# (one pass's few seconds may all fall in a slow phase of the machine)
grep -Eq "^per-op samples: the median of [3-9] passes over the workloads" "$tmp/cal.log" ||
  fail "calibrate takes its op samples in one pass: $(grep -i samples "$tmp/cal.log")"
if [[ $have_jit == true ]]; then
  grep -Eq "^JIT workloads and their variants \(pairs\): [1-9][0-9]*, each measured after 50 ms of unmeasured forwards" "$tmp/cal.log" ||
    fail "calibrate does not warm its JIT workloads up: $(grep -i workloads "$tmp/cal.log")"
fi
# that child mode: one fit printed as "resume start"; a placement the
# calibration's threads cannot run, a bad spec or file: one error line
fit=$("$ppcc" calibrate --wait-fit "interp,0,$tmp/calib.json") || fail "--wait-fit interp,0 failed"
python3 -c "import math, sys; r, s = map(float, sys.argv[1].split()); assert math.isfinite(r) and math.isfinite(s)" "$fit" ||
  fail "--wait-fit printed '$fit'"
if [[ $have_jit == true ]]; then
  fit=$("$ppcc" calibrate --wait-fit "jit,0,$tmp/calib.json") && [[ $(wc -w <<<"$fit") == 2 ]] || fail "--wait-fit jit,0: '$fit'"
fi
for bad in "interp,1,$tmp/calib.json:1:wait fit for placement 1 failed" "interp,3,$tmp/calib.json:1:wait fit for placement 3 failed" "gpu,0,$tmp/calib.json:2:--wait-fit wants" \
           "interp,4,$tmp/calib.json:2:--wait-fit wants" "interp,0:2:--wait-fit wants" \
           "interp,0,$tmp/none.json:1:none.json: cannot read"; do
  IFS=: read -r spec want msg <<<"$bad"
  rc=0
  "$ppcc" calibrate --wait-fit "$spec" >"$tmp/fit.out" 2>"$tmp/fit.err" || rc=$?
  [[ $rc == "$want" && ! -s $tmp/fit.out && $(grep -c . "$tmp/fit.err") -le 2 ]] && grep -q -- "$msg" "$tmp/fit.err" ||
    fail "--wait-fit $spec: exit $rc, $(cat "$tmp/fit.out" "$tmp/fit.err")"
done
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
assert c['ppcc_calibration'] == 7 and len(c['gemm_gflops']) == 1 and c['gemm_gflops'][0] > 0
assert c['cache_bytes'] >= 1024, c.get('cache_bytes')  # a core's cache (format 3)
# the costs around waits: residuals of the model (never exactly 0), one thread: none spread (format 4)
assert isinstance(c['resume_us'], (int, float)) and 'resume_spread_us' not in c and 'start_spread_us' not in c, c
assert 'start_own_core_us' not in c and 'jit_start_own_core_us' not in c, c  # nor a core each (format 5)
assert not any(k.endswith('_wide_us') for k in c), c  # nor four a core (format 6)
# per-op costs measured through the interpreter for the LLM and FFN op set,
# and the GEMV and small-GEMM kernels' own (format 2)
ops = c['op_costs']
for op in ('linear', 'matmul', 'rotary', 'attention', 'silu', 'gelu', 'rms_norm', 'layer_norm', 'softmax', 'embedding',
           'linear.rows1', 'linear.rows16', 'matmul.rows1', 'matmul.rows16'):
    k = ops[op]
    assert set(k) == {'call_us', 'ns_per_flop', 'ns_per_byte', 'ns_per_weight_byte', 'ns_per_cold_weight_byte'} and min(k.values()) >= 0 and max(k.values()) > 0, (op, k)
    assert k['ns_per_cold_weight_byte'] >= k['ns_per_weight_byte'], (op, k)
# with the JIT: its own per-op costs (jit_op_costs) for the same op set
if sys.argv[2] == 'true':
    jit = c['jit_op_costs']
    assert isinstance(c['jit_resume_us'], (int, float)) and 'jit_resume_spread_us' not in c, c
    for op in ('linear', 'matmul', 'rotary', 'attention', 'silu', 'gelu', 'rms_norm', 'layer_norm', 'softmax',
               'linear.rows1', 'linear.rows16', 'matmul.rows1', 'matmul.rows16'):
        k = jit[op]
        assert set(k) == {'call_us', 'ns_per_flop', 'ns_per_byte', 'ns_per_weight_byte', 'ns_per_cold_weight_byte'} and min(k.values()) >= 0 and max(k.values()) > 0, ('jit', op, k)
    # the JIT's own kernels (no GEMM) are fitted without the weights' share
    # beyond the cache (calibrate.c, sample_jit_workload): no dearer cold bytes
    for op in ('rotary', 'silu', 'gelu', 'rms_norm', 'layer_norm', 'softmax'):
        assert jit[op]['ns_per_cold_weight_byte'] == jit[op]['ns_per_weight_byte'], ('jit cold', op, jit[op])
    # no JIT threads factor: its GEMMs scale as the interpreter's kernels
    assert 'jit_threads_factor' not in c and 'jit_threads_factors' not in c, c
else:
    assert 'jit_op_costs' not in c
" "$tmp/calib.json" "$have_jit" || fail "calibration file"
out=$("$ppcc" report "$tmp/pipe.json" --calibration "$tmp/calib.json")
grep -q "prediction (1 microbatch, calibrated)" <<<"$out" || fail "report --calibration does not say calibrated"
out=$("$ppcc" report "$tmp/pipe.json")
grep -q "prediction (1 microbatch, uncalibrated" <<<"$out" || fail "report without --calibration does not say uncalibrated"
"$ppcc" compile "$tmp/pipe.json" --calibration "$tmp/calib.json" --microbatches 2 --report="$tmp/r.txt"
grep -q "prediction (2 microbatches, calibrated)" "$tmp/r.txt" || fail "compile --calibration --microbatches"
exact "$tmp/pipe.json" --calibration "$tmp/calib.json" --microbatches 2

# The calibration cache of --check-plan without --calibration.
cache=$tmp/xdg
cached_run() {
  env -u PPCC_CALIBRATION_CACHE XDG_CACHE_HOME="$cache" PPCC_TEST_INJECT="calibration:$tmp/calib.json" \
    "$ppcc" run "$src/testdata/models/ppffn.json" --random-weights 1 --input x="$src/testdata/inputs/x.npy" \
    --check-plan --plan-time-tolerance=1e6 "$@" >"$tmp/cache.out" 2>"$tmp/cache.err"
}
cache_state() { stat -c '%i %Y %s' "$cache"/ppcc/calibration-v7-*.json; }
cached_run || fail "first cached --check-plan: $(cat "$tmp/cache.err")"
grep -q "note: no calibration for this CPU yet: measuring this machine once" "$tmp/cache.err" ||
  fail "first use does not say it calibrates: $(cat "$tmp/cache.err")"
[[ $(ls "$cache/ppcc" | wc -l) == 1 ]] || fail "not one cache file: $(ls -a "$cache/ppcc")"
grep -q "plan check (1 microbatch, calibrated" "$tmp/cache.out" || fail "first use: not calibrated: $(cat "$tmp/cache.out")"
python3 -c "
import json, sys
c, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c['cpu'] and c['ppcc_version'] and c['gemm_gflops'] == ref['gemm_gflops'], c
" "$cache"/ppcc/calibration-v7-*.json "$tmp/calib.json" || fail "the cache does not hold the measured calibration"
before=$(cache_state)
cached_run || fail "second cached --check-plan: $(cat "$tmp/cache.err")"
! grep -q "calibration" "$tmp/cache.err" || fail "second use measured again: $(cat "$tmp/cache.err")"
grep -q "plan check (1 microbatch, calibrated" "$tmp/cache.out" || fail "second use: not calibrated"
[[ $(cache_state) == "$before" ]] || fail "second use rewrote the cache"
# a corrupt cache, an old one, one of an older file format: one warning
# line each, measured again, rewritten
for spoil in corrupt old format; do
  f=$(echo "$cache"/ppcc/calibration-v7-*.json)
  if [[ $spoil == corrupt ]]; then printf '{"ppcc_calibration": 1, "cores": ' >"$f"
  elif [[ $spoil == old ]]; then sed -i 's/"ppcc_version": "[^"]*"/"ppcc_version": "0.0.0-old"/' "$f"
  else # format 2: no cache nor costs of weights beyond it, nor costs around waits per placement (they would not read in it)
    python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
c['ppcc_calibration'] = 2
c['ppcc_version'] = '0.0.0-old'
del c['cache_bytes']
for k in ('resume_us', 'resume_spread_us', 'start_spread_us', 'jit_resume_us', 'jit_resume_spread_us', 'jit_start_spread_us',
          'start_own_core_us', 'jit_start_own_core_us'):
    c.pop(k, None)
c.pop('pool_wake_us', None)
for t in ('op_costs', 'jit_op_costs', 'op_costs_multithreaded'):
    for k in c.get(t, {}).values(): del k['ns_per_cold_weight_byte']
json.dump(c, open(sys.argv[1], 'w'))
" "$f"
  fi
  cached_run || fail "$spoil cache: $(cat "$tmp/cache.err")"
  [[ $(grep -c "warning: calibration cache .* refused" "$tmp/cache.err") == 1 ]] ||
    fail "$spoil cache: no one-line warning: $(cat "$tmp/cache.err")"
  grep -q "plan check (1 microbatch, calibrated" "$tmp/cache.out" || fail "$spoil cache: not calibrated"
  python3 -c "import json, sys; assert json.load(open(sys.argv[1]))['ppcc_version'] != '0.0.0-old'" "$f" ||
    fail "$spoil cache was not rewritten"
  reason=; [[ $spoil == old ]] && reason="another ppcc version wrote it"; [[ $spoil == format ]] && reason="an older calibration format"
  [[ -z $reason ]] || grep -q "$reason" "$tmp/cache.err" || fail "$spoil cache: reason not given: $(cat "$tmp/cache.err")"
done
# switched off: no measuring, no file, times unchecked
rm -rf "$cache"
for off in PPCC_CALIBRATION_CACHE=0 --calibration=none; do
  flag=; var=PPCC_CALIBRATION_CACHE=1
  if [[ $off == --* ]]; then flag=$off; else var=$off; fi
  env XDG_CACHE_HOME="$cache" PPCC_TEST_INJECT="calibration:$tmp/calib.json" "$var" "$ppcc" run \
    "$src/testdata/models/ppffn.json" --random-weights 1 --input x="$src/testdata/inputs/x.npy" --check-plan $flag \
    >"$tmp/cache.out" 2>"$tmp/cache.err" || fail "cache off ($off)"
  [[ ! -e $cache ]] || fail "cache off ($off): $cache written"
  grep -q "stage times UNCHECKED" "$tmp/cache.out" || fail "cache off ($off): times not unchecked"
done
# a cache folder that cannot be made: a warning, the run still calibrated
touch "$tmp/afile"
env -u PPCC_CALIBRATION_CACHE XDG_CACHE_HOME="$tmp/afile" PPCC_TEST_INJECT="calibration:$tmp/calib.json" \
  "$ppcc" run "$src/testdata/models/ppffn.json" --random-weights 1 --input x="$src/testdata/inputs/x.npy" \
  --check-plan --plan-time-tolerance=1e6 >"$tmp/cache.out" 2>"$tmp/cache.err" || fail "unwritable cache: $(cat "$tmp/cache.err")"
grep -q "warning: cannot write the calibration cache" "$tmp/cache.err" || fail "unwritable cache: $(cat "$tmp/cache.err")"
grep -q "plan check (1 microbatch, calibrated" "$tmp/cache.out" || fail "unwritable cache: not calibrated"

# Bad calibration files: exit 1, one line naming the file and the field, no report.
bad() {
  local field=$1 text=$2
  printf '%s' "$text" >"$tmp/bad.json"
  for cmd in report run compile; do
    set +e
    out=$("$ppcc" "$cmd" "$tmp/pipe.json" --calibration "$tmp/bad.json" 2>&1 >"$tmp/bad.out"); rc=$?
    set -e
    [[ $rc == 1 ]] || { echo "$out"; fail "$cmd: bad calibration ($field) gave exit $rc"; }
    [[ $(wc -l <<<"$out") == 1 ]] || { echo "$out"; fail "$cmd: bad calibration ($field): not one line"; }
    grep -q "$tmp/bad.json" <<<"$out" && grep -q "$field" <<<"$out" ||
      { echo "$out"; fail "$cmd: bad calibration: message names neither the file nor '$field'"; }
    [[ ! -s $tmp/bad.out ]] || fail "$cmd: bad calibration still wrote a report"
  done
}
good='"cores": 2, "gemm_gflops": [50], "elementwise_gbps": [10], "elementwise_gflops": [1], "copy_gbps": [10], "op_overhead_us": 1, "gemm_call_us": 1'
bad "ppcc_calibration" "{$good}"
bad "ppcc_calibration" "{\"ppcc_calibration\": 8, $good}"
bad "start_spread_us" "{\"ppcc_calibration\": 6, $good, \"start_spread_us\": -0.5}" # a cost before format 7
bad "start_wide_us" "{\"ppcc_calibration\": 5, $good, \"start_wide_us\": 1}"
bad "pool_wake_us" "{\"ppcc_calibration\": 3, $good, \"pool_wake_us\": 20}"
bad "cache_bytes" "{\"ppcc_calibration\": 2, $good, \"cache_bytes\": 1048576}"
bad "gemm_gflops" '{"ppcc_calibration": 1, "cores": 2, "elementwise_gbps": [10], "elementwise_gflops": [1], "copy_gbps": [10], "op_overhead_us": 1, "gemm_call_us": 1}'
bad "gemm_call_us" "{\"ppcc_calibration\": 1, ${good/\"gemm_call_us\": 1/\"gemm_call_us\": -3}}"
bad "gemm_gflops" "{\"ppcc_calibration\": 1, ${good/\[50\]/[-1]}}"
bad "copy_gbps" "{\"ppcc_calibration\": 1, ${good/\"copy_gbps\": \[10\]/\"copy_gbps\": [10, 20]}}"
bad "op_overhead_us" "{\"ppcc_calibration\": 1, ${good/\"op_overhead_us\": 1/\"op_overhead_us\": \"x\"}}"
bad "cores" "{\"ppcc_calibration\": 1, ${good/\"cores\": 2/\"cores\": 0.5}}"
bad "not valid JSON" '{"ppcc_calibration": 1,'
bad "cpu" "{\"ppcc_calibration\": 4, $good, \"cpu\": \"I"$'\xe4'"ntel\"}" # Latin-1, not UTF-8: would not round-trip
printf '{"ppcc_calibration": 1, %s}' "$good" >"$tmp/good.json"
printf '{"ppcc_calibration": 2, %s}' "$good" >"$tmp/good2.json"
"$ppcc" report "$tmp/pipe.json" --calibration "$tmp/good2.json" >/dev/null || fail "a valid hand-written calibration of format 2 was refused"
"$ppcc" report "$tmp/pipe.json" --calibration "$tmp/good.json" >/dev/null || fail "a valid hand-written calibration was refused"
set +e
out=$("$ppcc" report "$tmp/pipe.json" --calibration "$tmp/missing.json" 2>&1); rc=$?
out2=$("$ppcc" report "$tmp/pipe.json" --microbatches 3 2>&1); rc2=$?
set -e
[[ $rc == 1 ]] && grep -q "missing.json" <<<"$out" || { echo "$out"; fail "missing calibration file"; }
[[ $rc2 == 1 ]] && grep -q "does not divide into 3 microbatches" <<<"$out2" || { echo "$out2"; fail "--microbatches 3"; }

echo "plan_check: JIT memory within 10 % on $((n_jit - 1)) shipped models and 20 % on one (exact on 5, 3 % on 1) and 4 generated graphs (2 exact, 2 within 3 %); interpreter: memory exact on $n shipped models, a 4-stage pipeline (M = 1, 2, 4, 8), TP pipeline, gen_llama prefill and decode; failing checks, calibration files"
