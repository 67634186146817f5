#!/usr/bin/env bash
# `mpiexec -n 2 ppcc generate` gives the same greedy ids as one process and
# as transformers (the shipped reference ids) on a shipped checkpoint: PP2
# with the default stage map (a stage per rank), and TP2 with --ranks-map
# 0,1 (the all_reduce across ranks), on both backends; the other shipped
# checkpoints' reference ids on the interpreter. Each rank holds only
# its devices' resident param shards and KV caches (rank 0 prints each
# rank's), and no param byte is copied after load on any rank.
source "$(dirname "$0")/common.sh"

model=$src/testdata/llm/hf_untied_f32
prompt=1,15,27,3,100,42
want="tokens: $(cat "$model/ref_ids.txt")"
gen() { # gen RANKS ARGS...: ppcc generate on RANKS ranks, bounded
  local n=$1
  shift
  timeout -k 5 "$run_limit" "$mpiexec" -n "$n" "$ppcc" generate "$model" --prompt-ids $prompt \
    --max-new-tokens 8 --ignore-eos "$@"
}
backends=(interp)
if have_jit; then backends+=(jit); fi
for backend in "${backends[@]}"; do
  one=$("$ppcc" generate "$model" --tp 2 --pp 2 --prompt-ids $prompt --max-new-tokens 8 --ignore-eos \
        --backend=$backend | sed -n 1p)
  [[ $one == "$want" ]] || fail "$backend: one process gave '$one', want '$want'"
  for split in "--pp 2" "--tp 2 --ranks-map 0,1"; do
    # shellcheck disable=SC2086
    gen 2 $split --backend=$backend > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$backend $split: -n 2 failed"; }
    [[ $(sed -n 1p "$tmp/log") == "$one" ]] || { cat "$tmp/log"; fail "$backend $split: ids differ from one process"; }
    [[ $(grep -c '^tokens: ' "$tmp/log") -eq 1 ]] || { cat "$tmp/log"; fail "$backend $split: not one tokens line"; }
    grep -q '^param bytes copied after load: 0$' "$tmp/log" || { cat "$tmp/log"; fail "$backend $split: params copied"; }
    grep -q '^KV cache bytes between host and devices after load: 0$' "$tmp/log" ||
      { cat "$tmp/log"; fail "$backend $split: KV caches left their devices"; }
    # each rank holds shards of its own: params and KV caches, both > 0
    for r in 0 1; do
      grep -Eq "^rank $r: [1-9][0-9]* param and cache shards resident \(params 0\.[1-9] MiB, KV caches 0\.0 MiB\)" \
        "$tmp/log" || { cat "$tmp/log"; fail "$backend $split: no resident shards line for rank $r"; }
    done
    # the plan's memory per rank beside its measured peak RSS
    for r in 0 1; do
      grep -Eq "^memory plan \(rank $r\): predicted peak RSS [0-9.]+ MiB = .* measured [0-9.]+ MiB \([-+][0-9.]+ %\)$" \
        "$tmp/log" || { cat "$tmp/log"; fail "$backend $split: no memory plan line for rank $r"; }
    done
    echo "$backend $split -n 2: ids identical to one process and transformers; shards per rank"
  done
done
# the other shipped checkpoints (bf16 kept as stored, GGUF, Qwen2's
# q/k/v biases, Llama's attention/MLP biases): the reference ids at PP2
# and TP2 over 2 ranks (interpreter: the JIT's MPI path is checked above)
for pair in hf_tied_bf16:hf_tied_bf16 tiny.gguf:gguf_refs hf_qwen2:hf_qwen2 qwen2.gguf:hf_qwen2 \
            hf_llama_bias:hf_llama_bias; do
  ref="tokens: $(cat "$src/testdata/llm/${pair##*:}/ref_ids.txt")"
  # transformers' ids: GGUF blocks dequantized (--dtype f32), as generate_llm.sh
  dtype=()
  [[ ${pair%%:*} == *.gguf ]] && dtype=(--dtype f32)
  for split in "--pp 2" "--tp 2 --ranks-map 0,1"; do
    # shellcheck disable=SC2086
    got=$(timeout -k 5 "$run_limit" "$mpiexec" -n 2 "$ppcc" generate "$src/testdata/llm/${pair%%:*}" "${dtype[@]}" $split \
          --backend=interp --prompt-ids $prompt --max-new-tokens 8 --ignore-eos 2>&1) ||
      { echo "$got"; fail "${pair%%:*} $split: -n 2 failed"; }
    [[ $(sed -n 1p <<<"$got") == "$ref" ]] || { echo "$got"; fail "${pair%%:*} $split: want '$ref'"; }
  done
  echo "${pair%%:*} -n 2 (PP2, TP2): reference ids"
done
# a bad map is refused on every rank, before anything runs
gen 2 --pp 2 --ranks-map 0,2 > "$tmp/log" 2>&1 && fail "--ranks-map 0,2 ran"
[[ $(grep -c "error: .*rank" "$tmp/log") -ge 2 ]] || { cat "$tmp/log"; fail "--ranks-map 0,2: no error on each rank"; }
! grep -q '^tokens:' "$tmp/log" || fail "--ranks-map 0,2: ids printed after the error"
"$ppcc" generate "$model" --prompt-ids 1 --ranks-map 0 > "$tmp/log" 2>&1 && fail "--ranks-map without MPI ran"
grep -q "needs an MPI run" "$tmp/log" || { cat "$tmp/log"; fail "--ranks-map without MPI: no usage error"; }
echo "mpi_generate: ok"
