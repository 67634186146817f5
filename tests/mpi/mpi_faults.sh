#!/usr/bin/env bash
# Failures in distributed runs: every rank exits non-zero with a message
# naming the failing rank (and device and op), within seconds, and no output
# file is written. Bad rank maps and too many ranks are refused on every rank.
source "$(dirname "$0")/common.sh"

"$tools/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 8 -o "$tmp/pipe.json"
model="$tmp/pipe.json"

# expect_failure N WHAT PATTERN ARGS...: the run fails on all N ranks (each
# rank prints PATTERN once and exits non-zero), quickly, writing nothing.
expect_failure() {
  local n=$1 what=$2 pattern=$3
  shift 3
  local start=$SECONDS status=0
  rm -rf "$tmp/out"
  timeout -k 5 "$run_limit" "$mpiexec" -n "$n" bash -c '"$@"; echo "exit status $?" >&2' _ "$ppcc" run "$model" \
    --output-dir "$tmp/out" "$@" > "$tmp/log" 2>&1 || status=$?
  local took=$((SECONDS - start))
  [[ $took -lt $run_limit ]] || fail "$what: timed out (hang)"
  [[ $took -le 30 ]] || fail "$what: took $took s"
  [[ $(grep -c "exit status [1-9]" "$tmp/log") -eq $n ]] || { cat "$tmp/log"; fail "$what: not every rank exited non-zero"; }
  [[ $(grep -c -- "$pattern" "$tmp/log") -eq $n ]] || { cat "$tmp/log"; fail "$what: not every rank printed '$pattern'"; }
  [[ ! -e "$tmp/out" ]] || fail "$what: an output directory was written"
  echo "$what: all $n ranks failed in ${took}s with: $(grep -m1 -- "$pattern" "$tmp/log")"
}

# who R: matches the failing rank's own message ("[rank R]: error: ...") and
# the others' ("error: rank R: ...").
who() { echo "\(\[rank $1\]: error: \|error: rank $1: \)"; }

# A kernel error on device 3 (rank 1 of 2, rank 3 of 4) in the middle of a
# microbatched pipeline: the other ranks are waiting on it or already done.
for n in 2 4; do
  PPCC_INJECT_FAULT=3:13 expect_failure "$n" "-n $n: device 3 fails at op 13" \
    "$(who $((3 * n / 4)))device 3: ops\[[0-9]*\] .*injected failure" --random-weights 1 --microbatches 4 --backend=interp
  PPCC_INJECT_FAULT=0:0 expect_failure "$n" "-n $n: device 0 fails at its first op" \
    "$(who 0)device 0: ops\[[0-9]*\] .*injected failure" --random-weights 1 --backend=interp
done
# The JIT backend (its fault hook fails a device before its first op).
if have_jit; then
  PPCC_INJECT_FAULT=2:0 expect_failure 2 "-n 2 --backend=jit: device 2 fails" \
    "$(who 1)device 2: injected failure" --random-weights 1 --backend=jit
fi

# A bad weights slice: the file lacks a param of the last stage only, so
# only the last rank fails (while loading) and the others wait on it.
"$tools/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 8 -o - | sed 's/"blk\.3\.ffn_up\.weight"/"renamed"/' > "$tmp/other.json"
"$tools/gen_safetensors" "$tmp/other.json" 1 "$tmp/w.safetensors" > /dev/null
grep -q '"blk.3.ffn_up.weight"' "$model" || fail "the model has no param blk.3.ffn_up.weight"
for n in 2 4; do
  expect_failure "$n" "-n $n: last stage's weights slice missing" \
    "$(who $((n - 1))).*w.safetensors: tensor 'blk.3.ffn_up.weight' .*is missing" \
    --weights "$tmp/w.safetensors" --input "x=$src/testdata/inputs/x.npy"
done

# Bad maps and too many ranks: the same clear error on every rank.
expect_failure 2 "-n 2: map names rank 2" "device 1 is mapped to rank 2, but only 2 ranks" --ranks-map 0,2,1,1 --random-weights 1
expect_failure 2 "-n 2: map too short" "has 3 entries but the model has 4 devices" --ranks-map 0,0,1 --random-weights 1
expect_failure 2 "-n 2: map not numbers" "entry 1 is not a rank number" --ranks-map 0,x,1,1 --random-weights 1
expect_failure 2 "-n 2: rank 0 without a device" "gives rank 0 no device" --ranks-map 1,1,1,1 --random-weights 1
model="$src/testdata/models/tp_ffn.json"
expect_failure 4 "-n 4: more ranks than devices" "4 MPI ranks for a model with 2 devices" --random-weights 1
model="$tmp/pipe.json"

# A rank killed mid-pipeline (SIGKILL, no message of its own): the launcher
# or the other ranks' timeout ends the job, non-zero, writing nothing.
start=$SECONDS
status=0
PPCC_INJECT_KILL=1 PPCC_INJECT_FAULT=2:9 timeout -k 5 "$run_limit" "$mpiexec" -n 2 "$ppcc" run "$model" --random-weights 1 \
  --microbatches 4 --output-dir "$tmp/out" > "$tmp/log" 2>&1 || status=$?
# (Open MPI's mpiexec exits 137 itself when a rank was killed: the time
# tells a hang, which timeout(1) ends at run_limit, from that)
[[ $status -ne 0 && $((SECONDS - start)) -lt $run_limit ]] || { cat "$tmp/log"; fail "killed rank: exit status $status"; }
[[ $((SECONDS - start)) -le 30 && ! -e "$tmp/out" ]] || fail "killed rank: too slow or output written"
echo "-n 2: rank 1 killed mid-pipeline: the job ended with status $status in $((SECONDS - start))s, no output"

# A rank that hangs mid-pipeline (SIGSTOP): the others give up after
# PPCC_MPI_TIMEOUT seconds of waiting, name the silent device and rank, and
# MPI_Abort ends the job (the hung rank included) within one timeout plus
# the exit margin (10 s), not two timeouts (receive, then agreement).
hang_timeout=12
[[ -z ${ASAN_OPTIONS:-} ]] || hang_timeout=60
start=$SECONDS
status=0
PPCC_MPI_TIMEOUT=$hang_timeout PPCC_INJECT_KILL=stop PPCC_INJECT_FAULT=2:9 timeout -k 5 "$run_limit" "$mpiexec" -n 2 \
  "$ppcc" run "$model" --random-weights 1 --microbatches 4 --backend=interp --output-dir "$tmp/out" > "$tmp/log" 2>&1 || status=$?
took=$((SECONDS - start))
[[ $status -ne 0 && $took -lt $run_limit ]] || { cat "$tmp/log"; fail "hung rank: exit status $status"; }
grep -q "rank 0\]: error: device [01]: waiting for a message: device [23] (rank 1) sent nothing for $hang_timeout s" "$tmp/log" ||
  { cat "$tmp/log"; fail "hung rank: no message naming it"; }
grep -q "ppcc: rank 0: error: running: no answer from rank 1 for $hang_timeout s" "$tmp/log" ||
  { cat "$tmp/log"; fail "hung rank: rank 0 did not give up at once naming rank 1"; }
[[ ! -e "$tmp/out" ]] || fail "hung rank: output written"
[[ $took -lt $((2 * hang_timeout)) ]] || fail "hung rank: took $took s, two timeouts ($hang_timeout s each) or more"
echo "-n 2: rank 1 hung mid-pipeline: the job ended with status $status in ${took}s (PPCC_MPI_TIMEOUT $hang_timeout), no output"

# MPI_Finalize hanging after a good run (MPICH over UCX's TCP does, at
# random): the watchdog ends that rank with the run's status 0 within the
# exit margin (10 s); the output is complete. The launcher may then report
# its own error (the rank left without finalizing), so the status is each
# rank's, and so is the time: Open MPI's mpiexec then often crashes in
# PMIx_server_finalize and now and then hangs there, after both ranks
# exited at 10 s (seen in CI rehearsals under load: the job ran into
# run_limit), which is the launcher's teardown, not ppcc's exit.
rm -rf "$tmp/out"
PPCC_INJECT_FINALIZE_HANG=1 timeout -k 5 "$run_limit" "$mpiexec" -n 2 bash -c '"$@"; echo "exit status $? after $SECONDS s" >&2' _ \
  "$ppcc" run "$model" --random-weights 1 --output-dir "$tmp/out" > "$tmp/log" 2>&1 || job=$?
took=$(sed -n 's/^exit status [0-9]* after \([0-9]*\) s$/\1/p' "$tmp/log" | sort -n | tail -n 1)
[[ -n $took ]] || { cat "$tmp/log"; fail "finalize hang: no rank exited"; }
# a launcher that ran into the limit: only after every rank exited
[[ ${job:-0} != 124 && ${job:-0} != 137 ]] || [[ $(grep -c "^exit status [0-9]* after" "$tmp/log") -eq 2 ]] ||
  { cat "$tmp/log"; fail "finalize hang: the job ran into the ${run_limit} s limit with a rank still running"; }
# Both ranks hang; the first watchdog to fire ends its rank, and the
# launcher may then kill the other before its own watchdog speaks (seen
# under load with MPICH's hydra: rank 1 killed, signal 9): one note suffices.
grep -q "ppcc: rank [01]: note: MPI_Finalize did not return within 10 s; exiting with the run's status 0" "$tmp/log" ||
  { cat "$tmp/log"; fail "finalize hang: no rank's watchdog note"; }
[[ $(grep -c "exit status 0" "$tmp/log") -ge 1 && -s "$tmp/out/out.npy" ]] ||
  { cat "$tmp/log"; fail "finalize hang: rank status or output wrong"; }
[[ $took -lt 45 ]] || fail "finalize hang: a rank took $took s to exit"
echo "-n 2: rank 1 hung in MPI_Finalize: it exited 0 after the 10 s margin (ranks done in ${took}s), output complete"
