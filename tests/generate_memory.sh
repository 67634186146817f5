#!/usr/bin/env bash
# `ppcc generate` holds a checkpoint's weights once: on a ~400 MB f32 Llama
# (hidden 1024, 8 layers, ffn 2816, vocab 8192: the model of issue 23,
# written here with constant weights) its peak RSS (getrusage, printed by
# generate) stays within params + KV caches + 64 MiB, at TP1 and TP2 in one
# process, and the plan's prediction of it ("memory plan:") is within 10 %.
# Memory, not time.
#   generate_memory.sh PPCC SOURCE_DIR
set -eu
ppcc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp/m" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
os.makedirs(out)
H, L, NH, KV, F, V = 1024, 8, 16, 4, 2816, 8192
D = H // NH
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "num_hidden_layers": L,
       "num_attention_heads": NH, "num_key_value_heads": KV, "head_dim": D, "intermediate_size": F,
       "vocab_size": V, "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
       "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32"}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
shapes = [("model.embed_tokens.weight", [V, H])]
for b in range(L):
    p = f"model.layers.{b}."
    shapes += [(p + "input_layernorm.weight", [H]), (p + "post_attention_layernorm.weight", [H]),
               (p + "self_attn.q_proj.weight", [H, H]), (p + "self_attn.k_proj.weight", [KV * D, H]),
               (p + "self_attn.v_proj.weight", [KV * D, H]), (p + "self_attn.o_proj.weight", [H, H]),
               (p + "mlp.gate_proj.weight", [F, H]), (p + "mlp.up_proj.weight", [F, H]),
               (p + "mlp.down_proj.weight", [H, F])]
shapes += [("model.norm.weight", [H]), ("lm_head.weight", [V, H])]
header, off = {}, 0
for name, shape in shapes:
    n = 4
    for s in shape: n *= s
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
    off += n
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
chunk = struct.pack("<f", 0.01) * (1 << 18)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for _ in range(off // len(chunk)): f.write(chunk)
    f.write(chunk[:off % len(chunk)])
PY
# TP1, and TP2 in one process: the row-parallel shards copied at load
# release the mapped pages they came from, so the weights are held once
for tp in 1 2; do
  out=$("$ppcc" generate "$tmp/m" --tp $tp --backend=interp --prompt-ids 1,2,3,4,5,6,7,8 --max-new-tokens 4 2>&1) ||
    { echo "$out"; exit 1; }
  echo "$out" | grep -v '^tokens'
  line=$(grep '^memory: ' <<<"$out") || { echo "generate_memory: no memory line"; exit 1; }
  awk -v tp=$tp '{ rss = $4; params = $7; caches = $10
         if (params < 400 || params > 420) { print "generate_memory: expected ~408 MiB of params, got " params; exit 1 }
         if (rss > params + caches + 64) { print "generate_memory: tp " tp ": peak RSS " rss " MiB > params + KV caches + 64 MiB"; exit 1 } }' <<<"$line"
  # the plan's prediction of the peak RSS (params once, caches as state,
  # the larger graph's working set, the process before the weights) is
  # within 10 % of the measurement
  plan=$(grep '^memory plan: ' <<<"$out") || { echo "generate_memory: no memory plan line"; exit 1; }
  err=$(sed -n 's/.*measured [0-9.]* MiB (\([-+][0-9.]*\) %)$/\1/p' <<<"$plan")
  awk -v e="$err" 'BEGIN { exit !(e != "" && e >= -10 && e <= 10) }' ||
    { echo "generate_memory: tp $tp: the plan is off by ${err:-?} %: $plan"; exit 1; }
done
echo "generate_memory: ok"
