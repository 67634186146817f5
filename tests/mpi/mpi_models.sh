#!/usr/bin/env bash
# Distributed runs give the same bytes as one process with the same backend:
# every shipped model at 2 and 4 ranks with the interpreter, two of them and
# gen_llama with the JIT (default stage map where the model has enough stages, a
# map splitting stages otherwise, the clear error where it has fewer devices
# than ranks), a gen_llama TP2xPP2 model with default and custom maps
# (collectives across ranks included), and --microbatches with --trace.
source "$(dirname "$0")/common.sh"

n_devices() { sed -n 's/.*"devices": *\([0-9]*\),.*/\1/p' "$1" | head -1; }
n_stages_error() { grep -q "pipeline stage" "$1"; }

# check MODEL N BACKEND: one process vs N ranks, same bytes (or the error
# on every rank when the model has fewer devices than ranks).
check() {
  local model=$1 n=$2 backend=$3 m
  m=$(basename "$model" .json).$backend
  local one="$tmp/$m.one" out="$tmp/$m.n$n"
  [[ -d $one ]] || single "$model" --random-weights 7 --output-dir "$one" --backend="$backend" > /dev/null ||
    fail "$m: one-process run failed"
  local devices
  devices=$(n_devices "$model")
  if [[ $devices -lt $n ]]; then
    mpirun "$n" "$model" --random-weights 7 --output-dir "$out" --backend="$backend" > "$tmp/log" 2>&1 &&
      fail "$m: $n ranks for $devices devices ran"
    [[ $(grep -c "$n MPI ranks for a model with $devices device" "$tmp/log") -eq $n ]] ||
      { cat "$tmp/log"; fail "$m: -n $n: no error on every rank"; }
    [[ ! -e $out ]] || fail "$m: -n $n: output written after the error"
    echo "$m -n $n: refused on every rank ($devices devices)"
    return
  fi
  local map=()
  if ! mpirun "$n" "$model" --random-weights 7 --output-dir "$out" --backend="$backend" > "$tmp/log" 2>&1; then
    n_stages_error "$tmp/log" || { cat "$tmp/log"; fail "$m: -n $n failed"; }
    # Fewer stages than ranks: split them (contiguous devices per rank).
    local spec d
    spec=$(for ((d = 0; d < devices; d++)); do printf ',%d' $((d * n / devices)); done)
    map=(--ranks-map "${spec#,}")
    mpirun "$n" "$model" --random-weights 7 --output-dir "$out" --backend="$backend" "${map[@]}" > "$tmp/log" 2>&1 ||
      { cat "$tmp/log"; fail "$m: -n $n ${map[*]} failed"; }
  fi
  same_files "$one" "$out" || fail "$m: -n $n ${map[*]}: outputs differ from one process"
  echo "$m -n $n ${map[*]:-(default map)}: identical"
}

backends=(interp)
if have_jit; then backends+=(jit); else echo "note: this ppcc has no JIT (built without MLIR): interpreter only"; fi
for model in "$models"/*.json; do
  check "$model" 2 interp
  check "$model" 4 interp
done
# The JIT backend (compiled on every rank, so a few models keep CI short).
[[ ${#backends[@]} -eq 1 ]] || for m in ppffn tiny_llama; do check "$models/$m.json" 2 jit; done

# gen_llama TP2 x PP2: default map (a stage per rank), one device per rank
# (tensor-parallel all_reduce/all_gather across ranks), and a scrambled map.
"$tools/gen_llama" --tp 2 --pp 2 --layers 2 -o "$tmp/llama.json"
for backend in "${backends[@]}"; do
  single "$tmp/llama.json" --random-weights 3 --output-dir "$tmp/llama.$backend" --backend=$backend > /dev/null ||
    fail "llama: one-process run failed"
done
for run in "2 interp" "4 interp --ranks-map=0,1,2,3" "4 interp --ranks-map=3,1,0,2" "2 interp --ranks-map=1,0,1,0" \
  "2 jit" "4 jit --ranks-map=0,1,2,3"; do
  read -r n backend opt <<< "$run"
  [[ $backend == interp || ${#backends[@]} -eq 2 ]] || continue
  rm -rf "$tmp/llama.mpi"
  mpirun "$n" "$tmp/llama.json" --random-weights 3 --output-dir "$tmp/llama.mpi" --backend=$backend $opt > "$tmp/log" 2>&1 ||
    { cat "$tmp/log"; fail "llama -n $run failed"; }
  same_files "$tmp/llama.$backend" "$tmp/llama.mpi" || fail "llama -n $run: outputs differ from one process"
  echo "llama TP2xPP2 -n $run: identical"
done

# A 4-stage pipeline with 8 microbatches over 2 ranks, traced: same bytes,
# and the trace has a process per rank holding that rank's devices.
"$tools/gen_pipeline" --blocks 4 --tp 1 --pp 4 --batch 16 -o "$tmp/pipe.json"
single "$tmp/pipe.json" --random-weights 5 --microbatches 8 --output-dir "$tmp/pipe.one" --backend=interp > /dev/null
mpirun 2 "$tmp/pipe.json" --random-weights 5 --microbatches 8 --output-dir "$tmp/pipe.mpi" --trace "$tmp/t.json" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "pipeline --microbatches 8 -n 2 failed"; }
same_files "$tmp/pipe.one" "$tmp/pipe.mpi" || fail "pipeline --microbatches 8 -n 2: outputs differ"
grep -q "4 stages, 8 microbatches" "$tmp/log" || fail "no pipeline summary from rank 0"
for pair in "0 0" "0 1" "1 2" "1 3"; do
  read -r pid dev <<< "$pair"
  grep -q "\"pid\": $pid, \"tid\": $dev, \"args\": {\"name\": \"device $dev\"" "$tmp/t.json" || fail "trace: device $dev not in process $pid"
  grep -q "\"ph\": \"X\", \"pid\": $pid, \"tid\": $dev," "$tmp/t.json" || fail "trace: no events of device $dev (rank $pid)"
done
grep -q '"name": "rank 1"' "$tmp/t.json" || fail "trace: no process named rank 1"
echo "pipeline --microbatches 8 -n 2: identical; trace has a process per rank"

# --repeat N runs N more forwards on every rank (it was accepted and
# ignored): rank 0 prints the load, first-call and steady-state lines once,
# the outputs are the first forward's
rm -rf "$tmp/pipe.mpi"
mpirun 2 "$tmp/pipe.json" --random-weights 5 --microbatches 8 --repeat 3 --output-dir "$tmp/pipe.mpi" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "pipeline --repeat 3 -n 2 failed"; }
[[ $(grep -c "forward (steady state, 3 runs): min " "$tmp/log") -eq 1 ]] || { cat "$tmp/log"; fail "--repeat 3 over MPI: no steady-state line"; }
for line in "^load: " "^first call: " "^call (steady state, 3 runs): min "; do
  [[ $(grep -c "$line" "$tmp/log") -eq 1 ]] || { cat "$tmp/log"; fail "--repeat 3 over MPI: not one '$line' line"; }
done
same_files "$tmp/pipe.one" "$tmp/pipe.mpi" || fail "pipeline --repeat 3 -n 2: outputs differ"
echo "pipeline --repeat 3 -n 2: steady-state line, identical outputs"
