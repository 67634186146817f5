#!/usr/bin/env bash
# The plan's memory of a loaded model (ppcc_predict_loaded_memory, printed
# by `ppcc generate` as "memory plan: ...") counts what the process holds:
# on the shipped hf_untied_f32 checkpoint, params once for the prefill and
# decode graphs and however the devices split them (TP1, TP2, PP2: the
# checkpoint's bytes, the token embedding only where looked up: prompt +
# decode rows), and the KV caches as state (layers x 2 x kv heads x head
# dim x (prompt + new tokens) x 4 B, twice on the JIT, which writes the next
# state beside the current one). Exact bytes, no timing.
#   generate_memory_plan.sh PPCC SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
model=$src/testdata/llm/hf_untied_f32
fail() { echo "generate_memory_plan: $*" >&2; exit 1; }
backends="interp"
"$ppcc" generate "$model" --prompt-ids 1 --max-new-tokens 1 --backend=jit > /dev/null 2>&1 && backends="interp jit"
# expected: params (all tensors, the embedding only for 6 prompt rows + 1
# decode row: the last decode step's token is never fed back) and caches
read -r want_params want_cache < <(python3 - "$model" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
cfg = json.load(open(os.path.join(d, "config.json")))
total = 0
for f in sorted(os.listdir(d)):
    if f.endswith(".safetensors"):
        with open(os.path.join(d, f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            h = json.loads(fh.read(n))
        total += sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in h.items() if k != "__metadata__")
H, V = cfg["hidden_size"], cfg["vocab_size"]
embed = V * H * 4
params = total - embed + min(embed, (6 + 1) * H * 4)
head_dim = cfg.get("head_dim") or H // cfg["num_attention_heads"]
cache = cfg["num_hidden_layers"] * 2 * cfg["num_key_value_heads"] * head_dim * (6 + 2) * 4
print(params, cache)
PY
)
n=0
for backend in $backends; do
  for split in "" "--tp 2" "--pp 2" "--tp 2 --pp 2"; do
    # shellcheck disable=SC2086
    out=$("$ppcc" generate "$model" $split --backend=$backend --prompt-ids 1,15,27,3,100,42 --max-new-tokens 2 \
          --ignore-eos 2>&1) || { echo "$out"; fail "$backend $split: generate failed"; }
    line=$(grep '^memory plan: ' <<<"$out") || { echo "$out"; fail "$backend $split: no memory plan line"; }
    params=$(sed -n 's/.* params [0-9.]* MiB (\([0-9]*\) B, once for both graphs).*/\1/p' <<<"$line")
    cache=$(sed -n 's/.* KV caches [0-9.]* MiB (\([0-9]*\) B, state).*/\1/p' <<<"$line")
    [[ $params == "$want_params" ]] || fail "$backend $split: params $params B, want $want_params B: $line"
    # once on the JIT too: its index_copy updates each cache in place
    [[ $cache == "$want_cache" ]] || fail "$backend $split: KV caches $cache B, want $want_cache B: $line"
    n=$((n + 1))
  done
done
echo "generate_memory_plan: params $want_params B once and KV caches $want_cache B as state (once on both backends) in $n runs"
