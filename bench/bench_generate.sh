#!/usr/bin/env bash
# `ppcc generate` decode speed on the tiny checkpoint against a PyTorch
# greedy loop (transformers' LlamaForCausalLM with its KV cache) on the same
# weights, in one run: rounds alternate ppcc, torch, ppcc, torch ...; prints
# min and median tokens/s of each and the ratio of the medians. Both use
# one thread. Needs build/venv-ref (tools/make_llm_refs.sh makes it).
#   bench/bench_generate.sh [PPCC] [ROUNDS] [NEW_TOKENS] [BACKEND]
set -eu
cd "$(dirname "$0")/.."
ppcc=${1:-build/ppcc}
rounds=${2:-3}
new=${3:-32}
backend=${4:-jit}
py=${PY:-build/venv-ref/bin/python}
model=testdata/llm/hf_untied_f32
prompt=1,15,27,3,100,42
[[ -x $py ]] || { echo "bench_generate: $py missing (run tools/make_llm_refs.sh)" >&2; exit 1; }

torch_rate() {
  OMP_NUM_THREADS=1 "$py" - "$model" "$prompt" "$new" <<'PY' 2>/dev/null
import sys, time, torch
from transformers import LlamaForCausalLM
torch.set_num_threads(1)
model = LlamaForCausalLM.from_pretrained(sys.argv[1], torch_dtype=torch.float32).eval()
prompt = [int(x) for x in sys.argv[2].split(",")]
n = int(sys.argv[3])
with torch.no_grad():
    out = model(torch.tensor([prompt]), use_cache=True)
    past, tok = out.past_key_values, int(out.logits[0, -1].argmax())
    toks = [tok]
    t0 = time.perf_counter()
    for _ in range(n - 1):
        out = model(torch.tensor([[tok]]), past_key_values=past, use_cache=True)
        past, tok = out.past_key_values, int(out.logits[0, -1].argmax())
        toks.append(tok)
    dt = time.perf_counter() - t0
print(f"{(n - 1) / dt:.1f}", " ".join(map(str, toks)))
PY
}

ppcc_rate() {
  OMP_NUM_THREADS=1 "$ppcc" generate "$model" --prompt-ids "$prompt" --max-new-tokens "$new" \
    --backend="$backend" --threads 1 | awk '/^tokens:/ {sub(/^tokens: /, ""); ids=$0} /tokens\/s$/ {print $(NF-1), ids}'
}

stats() { sort -g | awk '{v[NR]=$1} END {printf "min %.1f median %.1f", v[1], v[int((NR+1)/2)]}'; }

p_rates=() t_rates=()
for ((r = 0; r < rounds; r++)); do
  p=$(ppcc_rate)
  t=$(torch_rate)
  p_rates+=("${p%% *}")
  t_rates+=("${t%% *}")
  [[ ${p#* } == "${t#* }" ]] || echo "bench_generate: ids differ: ppcc ${p#* } torch ${t#* }" >&2
done
p_med=$(printf '%s\n' "${p_rates[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
t_med=$(printf '%s\n' "${t_rates[@]}" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
echo "model $model, prompt $prompt, $new new tokens, 1 thread, $rounds rounds (ppcc, torch alternated)"
echo "ppcc generate --backend=$backend decode tokens/s: $(printf '%s\n' "${p_rates[@]}" | stats)"
echo "torch greedy loop decode tokens/s:          $(printf '%s\n' "${t_rates[@]}" | stats)"
awk -v a="$p_med" -v b="$t_med" 'BEGIN {printf "ratio ppcc/torch (medians): %.2f\n", a / b}'
