#!/usr/bin/env bash
# ppcc against llama.cpp on the same quantized GGUF files (issue 24): decode
# and prefill tokens/s and peak RSS for F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, both at
# THREADS threads, in paired rounds (ppcc, llama.cpp, ppcc, llama.cpp ...),
# printing min and median of each.
#
#   bench/bench_quant_vs_llamacpp.sh [ROUNDS]     (default 3)
#
# The model: a Llama made with transformers (LAYERS, HIDDEN, FFN, HEADS,
# KV_HEADS; default 8, 1024, 2816, 16, 8), converted by llama.cpp's
# convert_hf_to_gguf.py and quantized by llama-quantize (tools/llamacpp/
# setup.sh: REF_VENV, LLAMA_CPP_DIR, LLAMA_BUILD), all under build/.
# ppcc: `ppcc generate FILE.gguf --backend=BACKEND --ignore-eos` (default
# interp; the weights stay in their GGUF block formats and compute through
# src/runtime/kernels/quant_matmul.c; F16 matrices stay f16 and compute
# through src/runtime/kernels/half_matmul.c), prefill =
# PROMPT / time to first token, decode from its decode line; llama.cpp:
# llama-bench -p PROMPT -n GEN with LLAMA_NO_REPACK=1 and --repack 0.
# TYPES (default "F16 Q8_0 Q4_0 Q4_K_M Q5_K_M") picks the files. Besides min and
# median of each program, the ratios ppcc / llama.cpp of each paired round
# (min and median). Peak RSS of each process by /usr/bin/time. On a shared machine the
# numbers are noisy (the load average is printed first): compare medians
# of paired rounds, and both programs' spinning worker threads suffer when
# the cores are oversubscribed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
threads=${THREADS:-2}
prompt_len=${PROMPT:-64}
gen=${GEN:-32}
ppcc=${PPCC:-build/ppcc}
backend=${BACKEND:-interp}
work=build/bench-quant
mkdir -p "$work"
source tools/llamacpp/setup.sh
sizes="${LAYERS:-8} ${HIDDEN:-1024} ${FFN:-2816} ${HEADS:-16} ${KV_HEADS:-8}"
tag=$(tr ' ' _ <<< "$sizes")
if [[ ! -f $work/$tag/F16.gguf ]]; then
  "$llama_venv/bin/python" tools/make_quant_llama_refs.py "$work/$tag" $sizes > /dev/null
  convert_f16 "$work/$tag/hf" "$work/$tag/F16.gguf"
fi
types=${TYPES:-F16 Q8_0 Q4_0 Q4_K_M Q5_K_M}
for t in $types; do
  [[ $t == F16 || -f $work/$tag/$t.gguf ]] || quantize "$work/$tag/F16.gguf" "$work/$tag/$t.gguf" "$t"
done
ids=$(seq -s, 3 $((prompt_len + 2)))

# stats NUMBERS...: "min X median Y"
stats() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "min %.1f median %.1f", a[1], m}'; }
rss_mb() { awk '/Maximum resident set size/ {printf "%.0f", $NF / 1024}' "$1"; }

echo "model: layers/hidden/ffn/heads/kv_heads $sizes; prompt $prompt_len, $gen new tokens, $threads threads, $rounds paired rounds"
echo "ppcc backend $backend; load average before: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: noisy)"
# ratios A[i] / B[i] of paired rounds: "min X median Y"
ratios() {
  local -n a=$1 b=$2
  local r=()
  for ((i = 0; i < ${#a[@]}; i++)); do r+=("$(awk -v x="${a[i]}" -v y="${b[i]}" 'BEGIN {printf "%.3f", (y > 0 ? x / y : 0)}')"); done
  printf '%s\n' "${r[@]}" | sort -g | awk '{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "min %.2f median %.2f", a[1], m}'
}
for t in $types; do
  f=$work/$tag/$t.gguf
  pd=() pp=() pr=() ld=() lp=() lr=()
  for ((r = 0; r < rounds; r++)); do
    /usr/bin/time -v "$ppcc" generate "$f" --backend="$backend" --threads "$threads" --prompt-ids "$ids" \
      --max-new-tokens "$gen" --ignore-eos \
      > "$work/ppcc.out" 2> "$work/ppcc.time"
    ttft=$(awk '/^time to first token:/ {print $5}' "$work/ppcc.out")
    pp+=("$(awk -v n="$prompt_len" -v ms="$ttft" 'BEGIN {printf "%.2f", n * 1000 / ms}')")
    pd+=("$(awk '/^decode:/ {print $(NF - 1)}' "$work/ppcc.out")")
    pr+=("$(rss_mb "$work/ppcc.time")")
    LLAMA_NO_REPACK=1 /usr/bin/time -v "$llama_bld/bin/llama-bench" -m "$f" -t "$threads" -p "$prompt_len" -n "$gen" -r 1 --repack 0 \
      -o csv > "$work/llama.out" 2> "$work/llama.time"
    lp+=("$(awk -F, -v n="$prompt_len" 'NR > 1 && $0 ~ "\"" n "\",\"0\"" {gsub(/"/, "", $(NF - 1)); v = $(NF - 1)} END {print v}' "$work/llama.out")")
    ld+=("$(awk -F, -v n="$gen" 'NR > 1 && $0 ~ "\"0\",\"" n "\"" {gsub(/"/, "", $(NF - 1)); v = $(NF - 1)} END {print v}' "$work/llama.out")")
    lr+=("$(rss_mb "$work/llama.time")")
  done
  echo "$t ($(du -k "$f" | cut -f1) KiB):"
  echo "  decode tok/s   ppcc $(stats "${pd[@]}")   llama.cpp $(stats "${ld[@]}")"
  echo "  prefill tok/s  ppcc $(stats "${pp[@]}")   llama.cpp $(stats "${lp[@]}")"
  echo "  peak RSS MiB   ppcc $(stats "${pr[@]}")   llama.cpp $(stats "${lr[@]}")"
  echo "  ppcc / llama.cpp per round: decode $(ratios pd ld), prefill $(ratios pp lp), RSS $(ratios pr lr)"
done
