#!/usr/bin/env bash
# Runs across hosts, simulated (tools/netns_cluster.sh: network namespaces
# joined by a bridge, hydra's ssh launcher entering them, UCX over TCP):
# outputs byte-identical to one process on 2 and 4 hosts, and every fault
# (a rank killed or stopped, a link down or dropping every packet mid-run or
# from the start, a kernel error) ends every rank non-zero within
# PPCC_MPI_TIMEOUT plus the exit margin, with no output and no process left.
# Needs root and `ip netns` (CI runs as root); skipped otherwise.
source "$(dirname "$0")/common.sh"
# Under the sanitizers every rank is several times slower and an MPICH
# finalize hang costs hydra's whole timeout per run (a CI rehearsal ran past
# 7 minutes): the sanitized suite checks these code paths on localhost
# (mpi_models, mpi_faults), so the simulated cluster runs in the plain
# build only.
if [[ -n ${ASAN_OPTIONS:-} ]]; then
  echo "$name: SKIPPED under the sanitizers (mpi_models and mpi_faults cover the same paths on localhost)"
  exit 77
fi
cluster=$src/tools/netns_cluster.sh
export MPIEXEC=$mpiexec # the cluster launcher uses the same MPI as the build
export PPCC_NETNS=c$$
if [[ $(id -u) -ne 0 ]] || ! ip netns add "${PPCC_NETNS}probe" 2> /dev/null; then
  echo "$name: SKIPPED: needs root and network namespaces (ip netns) to simulate hosts"
  exit 77
fi
ip netns del "${PPCC_NETNS}probe"
trap '"$cluster" down; rm -rf "$tmp"' EXIT
"$cluster" up 4
# Short bounds: a fault ends the job in about PPCC_MPI_TIMEOUT + margin.
export PPCC_MPI_TIMEOUT=6 PPCC_MPI_EXIT_MARGIN=4
# the ranks end within PPCC_MPI_TIMEOUT + margin (+ start-up, the test's
# 2 s pause); mpiexec within MPIEXEC_TIMEOUT (a proxy that cannot reach it)
bound=$((PPCC_MPI_TIMEOUT + PPCC_MPI_EXIT_MARGIN + 24))
# Sanitizer builds (tools/ci_sanitize.sh) start each rank several times
# slower: they run the identical-output part only (mpi_faults.sh runs the
# same fault paths under the sanitizers on localhost).
sanitizer=${ASAN_OPTIONS:+1}
if [[ -n $sanitizer ]]; then
  export PPCC_MPI_TIMEOUT=120
  bound=300
  # LeakSanitizer's stop-the-world tracer crashed (signal 11) in a rank
  # whose UCX threads were still ending over TCP between namespaces; leaks
  # on these code paths are checked by mpi_models/mpi_faults on localhost.
  export ASAN_OPTIONS="${ASAN_OPTIONS}:detect_leaks=0"
fi
# hydra's bound on the whole job: what is left when a proxy cannot reach
# mpiexec (the ranks end by themselves within bound)
export MPIEXEC_TIMEOUT=$((bound - 14))

# on_hosts N ARGS...: ppcc run on N hosts, one rank each; every rank prints
# "exit status S" (its own status: hydra's may differ when a rank's
# MPI_Finalize hung and the watchdog ended it). Leaves the log in $tmp/log.
on_hosts() {
  local n=$1
  shift
  timeout -k 5 "$run_limit" "$cluster" mpiexec "$n" bash -c '"$@"; echo "exit status $?" >&2' _ \
    "$ppcc" run "$@" > "$tmp/log" 2>&1 || true
}
ranks_exited() { grep -c "exit status $1" "$tmp/log" || true; }
# no_process_left: nothing runs in any host namespace (waits up to 2 x
# bound for processes still ending).
no_process_left() {
  local i t left
  for ((t = 0; t < 4 * bound; t++)); do
    left=""
    for ((i = 1; i <= 4; i++)); do left+="$(ip netns pids "${PPCC_NETNS}h$i" | tr '\n' ' ')"; done
    [[ -n ${left// /} ]] || return 0
    sleep 0.5
  done
  ps -o pid,args -p "$(echo $left | tr ' ' ,)" || true
  return 1
}

# identical N NAME MODEL ARGS...: N hosts vs one process, same bytes.
identical() {
  local n=$1 what=$2 model=$3
  shift 3
  [[ -d $tmp/$what.one ]] || single "$model" --output-dir "$tmp/$what.one" "$@" > /dev/null 2>&1 || fail "$what: one process failed"
  rm -rf "$tmp/out"
  # A good run takes seconds, but after the watchdog ended a rank hung in
  # MPICH's MPI_Finalize, hydra itself may wait for its timeout: keep it short.
  local limit=15
  [[ -z $sanitizer ]] || limit=$MPIEXEC_TIMEOUT
  MPIEXEC_TIMEOUT=$limit on_hosts "$n" "$model" --output-dir "$tmp/out" "$@"
  # Every rank exits 0, but MPICH over UCX's TCP sometimes hangs in
  # MPI_Finalize: the watchdog ends that rank (with 0, and a note), and
  # hydra, which saw it leave unfinalized, may drop the last lines of the
  # others (in a CI rehearsal every rank's "exit status" line was lost
  # after two ranks' watchdogs fired). So: no rank failed, no error, a rank
  # reported 0 or a watchdog ended a finalize hang, and (below) the outputs
  # are complete and byte-identical.
  local ended=$(ranks_exited 0)
  grep -q "MPI_Finalize did not return" "$tmp/log" && ended=$((ended + 1))
  [[ $(ranks_exited '[1-9]') -eq 0 && $ended -ge 1 ]] && ! grep -q "error:" "$tmp/log" ||
    { cat "$tmp/log"; fail "$what on $n hosts: a rank failed"; }
  same_files "$tmp/$what.one" "$tmp/out" || fail "$what on $n hosts: outputs differ from one process"
  no_process_left || fail "$what on $n hosts: processes left"
  echo "$what on $n hosts over TCP: identical"
}

for m in ppffn pp_chain tiny_llama ppffn_sharktank explicit_transfer inserted_collectives; do
  identical 2 "$m" "$models/$m.json" --random-weights 7 --backend=interp
done
single "$models/tp_ffn.json" --random-weights 7 --backend=interp --output-dir "$tmp/tp_ffn.one" > /dev/null 2>&1
identical 2 tp_ffn "$models/tp_ffn.json" --random-weights 7 --backend=interp --ranks-map=0,1 # one stage: split it
"$tools/gen_llama" --tp 2 --pp 2 --layers 2 -o "$tmp/llama.json"
identical 2 llama_tp2pp2 "$tmp/llama.json" --random-weights 3 --backend=interp
identical 4 llama_tp2pp2 "$tmp/llama.json" --random-weights 3 --backend=interp --ranks-map=0,1,2,3
"$tools/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 16 -o "$tmp/pipe.json"
identical 4 pipeline_mb8 "$tmp/pipe.json" --random-weights 5 --backend=interp --microbatches 8
if have_jit; then identical 4 pipeline_jit "$tmp/pipe.json" --random-weights 5 --backend=jit; fi

if [[ -n $sanitizer ]]; then
  echo "$name: sanitizer build: faults skipped (covered by mpi_faults on localhost)"
  exit 0
fi

# fault WHAT ARGS...: 4 hosts, a 4-stage pipeline; every rank that ran ends
# non-zero (or killed) within the bound, no output, nothing left running.
fault() {
  local what=$1
  shift
  rm -rf "$tmp/out" "$tmp/mark"
  local start=$SECONDS
  on_hosts 4 "$tmp/pipe.json" --random-weights 5 --backend=interp --microbatches 4 --output-dir "$tmp/out" "$@"
  no_process_left || fail "$what: processes left"
  local took=$((SECONDS - start)) # until the last process in any host ended
  [[ $took -le $bound ]] || { cat "$tmp/log"; fail "$what: took $took s (bound $bound s)"; }
  [[ $(ranks_exited 0) -eq 0 ]] || { cat "$tmp/log"; fail "$what: a rank exited 0"; }
  [[ ! -e $tmp/out ]] || fail "$what: an output was written"
  echo "$what: ended in ${took}s, $(ranks_exited '[1-9]') ranks non-zero: $(grep -m1 -o 'error: .*' "$tmp/log" | cut -c1-150)"
}
# cut_when_marked HOST ACTION: once rank HOST-1 marks that it runs, its link goes.
cut_when_marked() {
  rm -f "$tmp/mark"
  (for ((t = 0; t < 200; t++)); do [[ -e $tmp/mark ]] && break; sleep 0.1; done; "$cluster" link "$1" "$2") &
}

PPCC_INJECT_FAULT=3:13 fault "kernel error on host 4"
PPCC_INJECT_KILL=1 PPCC_INJECT_FAULT=2:9 fault "rank 2 killed"
PPCC_INJECT_KILL=stop PPCC_INJECT_FAULT=2:9 fault "rank 2 stopped (SIGSTOP)"
# The rank that gives up first names the rank it waited for (rank 0 waits
# for the last stage's outputs, which waits for rank 2).
silent="no answer from rank [0-9]\|(rank [0-9]) sent nothing for"
grep -q "$silent" "$tmp/log" || { cat "$tmp/log"; fail "SIGSTOP: no rank named a silent one"; }
for cut in down:up drop:undrop; do
  cut_when_marked 3 "${cut%:*}"
  PPCC_INJECT_KILL=mark:$tmp/mark PPCC_INJECT_FAULT=2:9 fault "host 3's link ${cut%:*} mid-run"
  wait
  grep -q "$silent" "$tmp/log" || { cat "$tmp/log"; fail "link ${cut%:*}: no rank named a silent one"; }
  "$cluster" up 4 # a fresh cluster: hydra's next start must not see the cut
done
"$cluster" link 4 drop
fault "host 4 dropping every packet from the start"
