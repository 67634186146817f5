#!/usr/bin/env bash
# `ppcc generate` on every shipped checkpoint (testdata/llm/, made by
# tools/make_llm_refs.py with transformers) at TP {1,2} x PP {1,2} on both
# backends prints exactly the reference greedy ids, plus the timing lines.
#   generate_llm.sh PPCC SOURCE_DIR
set -u
ppcc=$1
src=$2
prompt=1,15,27,3,100,42
source "$src/tests/support/generate.sh" # pass, fail, check_error, generate_backends
backends=$(generate_backends "$src/testdata/llm/hf_untied_f32" --prompt-ids 1)
for pair in hf_untied_f32:hf_untied_f32 hf_tied_bf16:hf_tied_bf16 tiny.gguf:gguf_refs hf_rope_llama3:hf_rope_llama3 \
            hf_rope_linear:hf_rope_linear hf_qwen2:hf_qwen2 qwen2.gguf:hf_qwen2 qwen2_q8_0.gguf:qwen2_q8_0_refs \
            hf_llama_bias:hf_llama_bias \
            hf_mistral_swa:hf_mistral_swa mistral_swa.gguf:mistral_swa_gguf_refs \
            mistral_swa_q8_0.gguf:mistral_swa_q8_0_refs hf_gemma:hf_gemma gemma.gguf:hf_gemma gemma_q8_0.gguf:gemma_q8_0_refs \
            hf_gemma2:hf_gemma2 gemma2.gguf:gemma2_gguf_refs gemma2_q8_0.gguf:gemma2_q8_0_refs \
            hf_qwen3:hf_qwen3 qwen3.gguf:hf_qwen3 qwen3_q8_0.gguf:qwen3_q8_0_refs \
            hf_mqa:hf_mqa hf_llama3:hf_llama3 llama3.gguf:hf_llama3 llama3_q8_0.gguf:llama3_q8_0_refs \
            hf_phi3:hf_phi3 phi3.gguf:hf_phi3 phi3_q8_0.gguf:phi3_q8_0_refs \
            hf_gpt2:hf_gpt2 gpt2.gguf:hf_gpt2 gpt2_q8_0.gguf:gpt2_q8_0_refs \
            hf_rope_yarn:hf_rope_yarn rope_yarn.gguf:hf_rope_yarn hf_rope_dynamic:hf_rope_dynamic \
            hf_phi3_longrope:hf_phi3_longrope phi3_longrope.gguf:hf_phi3_longrope hf_qwen2_swa:hf_qwen2_swa; do
  source=$src/testdata/llm/${pair%%:*}
  refs=$src/testdata/llm/${pair##*:}
  want="tokens: $(cat "$refs/ref_ids.txt")"
  # the rope-scaling checkpoints' 18-id prompt reaches past their original 8 positions
  ids=$prompt
  [[ -f $refs/prompt.txt ]] && ids=$(cat "$refs/prompt.txt")
  # transformers' ids: GGUF blocks dequantized to f32 (quant_llama.sh checks them kept quantized vs llama.cpp)
  dtype=()
  [[ $source == *.gguf ]] && dtype=(--dtype f32)
  for tp in 1 2; do
    for pp in 1 2; do
      # the extra one-layer rope-scaling checkpoints: one stage, TP 2 only
      [[ ${pair%%:*} =~ ^hf_rope_(llama3|linear)$ && ($pp -eq 2 || $tp -eq 1) ]] && continue
      # the families of tools/make_family_refs2.py: TP1xPP1 and TP2xPP2 (test_rt_import runs all four)
      [[ ${pair%%:*} =~ mistral_swa|gemma|qwen3|yarn|dynamic|longrope|qwen2_swa && $tp -ne $pp ]] && continue
      for backend in $backends; do
        out=$("$ppcc" generate "$source" "${dtype[@]}" --tp $tp --pp $pp --backend=$backend --prompt-ids $ids \
              --max-new-tokens 8 --ignore-eos 2>&1)
        got=$(printf '%s\n' "$out" | sed -n 1p)
        # params are resident: made once at load, never copied by an execute
        if [[ $got == "$want" ]] && grep -q '^time to first token: ' <<<"$out" && grep -q 'tokens/s$' <<<"$out" &&
           grep -q '^param bytes copied after load: 0$' <<<"$out"; then
          pass=$((pass + 1))
        else
          echo "FAIL ${pair%%:*} tp$tp pp$pp $backend: want '$want', got:"
          printf '%s\n' "$out"
          fail=$((fail + 1))
        fi
      done
    done
  done
done
# Megatron's kv copies at --tp 4: 2 kv heads (each on 2 devices), 1 kv head
# (on all 4, with the vocab of 127 padded to 128): TP1's ids
for source in hf_untied_f32 hf_mqa; do
  for backend in $backends; do
    out=$("$ppcc" generate "$src/testdata/llm/$source" --tp 4 --pp 2 --backend=$backend --prompt-ids $prompt \
          --max-new-tokens 8 --ignore-eos 2>&1)
    if [[ $(sed -n 1p <<<"$out") == "tokens: $(cat "$src/testdata/llm/$source/ref_ids.txt")" ]]; then
      pass=$((pass + 1))
    else
      echo "FAIL $source tp4 pp2 $backend: $out"
      fail=$((fail + 1))
    fi
  done
done
# 10 decode steps bind the same resident param shards: no param byte is
# copied after load (split, replicated, GGUF-converted and GGUF-quantized
# shards alike),
# and the KV caches stay on their devices (state, updated in place)
for source in hf_untied_f32 tiny.gguf; do
  for backend in $backends; do
    out=$("$ppcc" generate "$src/testdata/llm/$source" --tp 2 --pp 2 --backend=$backend --prompt-ids $prompt \
          --max-new-tokens 11 2>&1)
    if grep -q '^decode: 10 tokens' <<<"$out" && grep -q '^param bytes copied after load: 0$' <<<"$out" &&
       grep -q '^KV cache bytes between host and devices after load: 0$' <<<"$out"; then
      pass=$((pass + 1))
    else
      echo "FAIL params copied per decode step ($source, $backend): $out"
      fail=$((fail + 1))
    fi
  done
done
# a batch of two prompts: each row gives its own reference ids
m=$src/testdata/llm/hf_untied_f32
row1=$("$ppcc" generate "$m" --prompt-ids 5,6,7,8,9,10 --max-new-tokens 8 --backend=interp | sed -n 1p)
for backend in $backends; do
  out=$("$ppcc" generate "$m" --tp 2 --pp 2 --backend=$backend --prompt-ids "$prompt;5,6,7,8,9,10" --max-new-tokens 8 2>&1)
  if [[ $(sed -n 1p <<<"$out") == "tokens: $(cat "$m/ref_ids.txt")" && $(sed -n 2p <<<"$out") == "$row1" ]]; then
    pass=$((pass + 1))
  else
    echo "FAIL batch of 2 ($backend): $out"
    fail=$((fail + 1))
  fi
done
# rows of different lengths (positions [B, N], left padding): each row
# decodes at its own position and gives the ids it gives alone (batch 1);
# row 0 is the reference prompt. With --microbatches 2 (interpreter) too.
short=5,6,7
row_short=$("$ppcc" generate "$m" --prompt-ids $short --max-new-tokens 8 --backend=interp | sed -n 1p)
for backend in $backends interp-mb; do
  for tp in 1 2; do
    extra=(--backend=$backend)
    [[ $backend == interp-mb ]] && extra=(--backend=interp --microbatches 2)
    out=$("$ppcc" generate "$m" --tp $tp --pp 2 "${extra[@]}" --prompt-ids "$short;$prompt;$short;$prompt" \
          --max-new-tokens 8 2>&1)
    want_long="tokens: $(cat "$m/ref_ids.txt")"
    if [[ $(sed -n 1p <<<"$out") == "$row_short" && $(sed -n 2p <<<"$out") == "$want_long" &&
          $(sed -n 3p <<<"$out") == "$row_short" && $(sed -n 4p <<<"$out") == "$want_long" ]]; then
      pass=$((pass + 1))
    else
      echo "FAIL rows of different lengths tp$tp ($backend): want '$row_short' / '$want_long', got: $out"
      fail=$((fail + 1))
    fi
  done
done
# generation crossing position 8 mid-way (crossing.txt: a 5-id prompt and
# transformers' generate() ids). Dynamic NTK and Llama's yarn: the same ids.
# LongRoPE: transformers' Phi-3 recomputes its whole cache there, refused;
# 3 new ids stay within position 8 and are transformers' first three.
for rope in hf_rope_dynamic hf_rope_yarn; do
  cross=$src/testdata/llm/$rope/crossing.txt
  for backend in $backends; do
    out=$("$ppcc" generate "$src/testdata/llm/$rope" --prompt-ids "$(sed -n 1p "$cross")" --max-new-tokens 8 --ignore-eos \
          --tp 2 --pp 2 --backend=$backend 2>&1)
    [[ $(sed -n 1p <<<"$out") == "tokens: $(sed -n 2p "$cross")" ]] && pass=$((pass + 1)) ||
      { echo "FAIL $rope crossing position 8 ($backend): $out"; fail=$((fail + 1)); }
  done
done
cross=$src/testdata/llm/hf_phi3_longrope/crossing.txt
check_error 1 "rope_scaling long_factor: a 5-id prompt and --max-new-tokens 8 cross original_max_position_embeddings 8" \
  generate "$src/testdata/llm/hf_phi3_longrope" --prompt-ids "$(sed -n 1p "$cross")" --max-new-tokens 8
out=$("$ppcc" generate "$src/testdata/llm/phi3_longrope.gguf" --prompt-ids "$(sed -n 1p "$cross")" --max-new-tokens 3 \
      --ignore-eos 2>&1)
[[ $(sed -n 1p <<<"$out") == "tokens: $(sed -n 2p "$cross" | cut -d' ' -f1-3)" ]] && pass=$((pass + 1)) ||
  { echo "FAIL longrope within position 8: $out"; fail=$((fail + 1)); }
# bad command lines and sources: one line naming the problem, exit 1 or 2
check_error 2 "--prompt-ids" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 1,x
check_error 1 "outside the vocabulary" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 1,500
check_error 1 "config.json" generate "$src/testdata/llm" --prompt-ids 1
check_error 1 "no such file" generate "$src/testdata/llm/missing.gguf" --prompt-ids 1
check_error 1 "divisible by --tp" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 1 --tp 3
check_error 2 "hf, gguf or onnx" import safetensors x -o /dev/null
check_error 2 "unknown option '----max-new-tokens' (too many dashes: did you mean '--max-new-tokens'?)" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 1 ----max-new-tokens 3
# neither --cache nor --seq was given: name what was
check_error 1 "a 1-id prompt and --max-new-tokens 1000000 need a KV cache of 1000001 positions" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 1 --max-new-tokens 1000000
check_error 2 "id '9223372036854775808' is out of range" generate "$src/testdata/llm/hf_untied_f32" --prompt-ids 9223372036854775808
check_error 1 "x: error: cannot read: No such file" import onnx x -o /dev/null
# the path once: "DIR/config.json: error: ...", not "DIR: error: DIR/config.json: ..."
err=$("$ppcc" import hf "$src/testdata/llm" -o /dev/null 2>&1)
[[ $(grep -o "testdata/llm" <<<"$err" | wc -l) -eq 1 ]] || { echo "FAIL import error names the path twice: $err"; fail=$((fail + 1)); }
check_error 2 "empty row" generate "$m" --prompt-ids "1,2;"
check_error 2 "does not divide" generate "$m" --prompt-ids "1,2;3" --microbatches 3
check_error 1 "does not support --microbatches" generate "$m" --prompt-ids "1,2;3" --microbatches 2 --backend=jit
check_error 2 "--batch 3" generate "$m" --prompt-ids "1,2;3,4" --batch 3
check_error 1 "not a GGUF file" import gguf "$src/testdata/llm/hf_untied_f32/config.json" -o /dev/null
# non-finite logits are an error naming the step and the first value that
# was not finite (they printed "tokens: 0 0 0" and exit 0): a copy of a
# checkpoint with a NaN norm weight, one whose down projection overflows
nan_dir=$(mktemp -d)
poison() { # DIR TENSOR VALUE ALL: copy hf_untied_f32 to DIR, set TENSOR's element 3 (ALL: every element)
  cp -r "$src/testdata/llm/hf_untied_f32" "$1"
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, struct, sys
d, name, value, every = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
f = d + "/" + json.load(open(d + "/model.safetensors.index.json"))["weight_map"][name]
b = bytearray(open(f, "rb").read())
n, = struct.unpack_from("<Q", b, 0)
lo, hi = json.loads(b[8:8 + n])[name]["data_offsets"]
for i in (range((hi - lo) // 4) if every else [3]):
    struct.pack_into("<f", b, 8 + n + lo + 4 * i, value)
open(f, "wb").write(b)
PY
}
poison "$nan_dir/nan" model.layers.1.post_attention_layernorm.weight nan 0
poison "$nan_dir/inf" model.layers.0.mlp.down_proj.weight 3e38 1
for backend in $backends; do
  check_error 1 "prefill: non-finite logit NaN (row 0, token id 0); the first non-finite value is weight 'model.layers.1.post_attention_layernorm.weight' (element 3)" \
    generate "$nan_dir/nan" --prompt-ids 1,2,3 --backend=$backend
  check_error 1 "the first non-finite value is 'blk.0.ffn_partial' (element 0), computed by op 22 (linear)" \
    generate "$nan_dir/inf" --prompt-ids 1,2,3 --tp 2 --backend=$backend
done
# a weight converted at load (bf16 -> f32 by --dtype) and split on its
# inner dim under --tp 2 (o_proj: 2 x 32 KiB, down_proj: 2 x 24 KiB)
# gives its whole tensor back once cut; the search for the non-finite
# value puts it together again from its shards: the NaN is found at its
# place in the whole (down_proj row 1, column 48 + 5: in shard 1)
cp -r "$src/testdata/llm/hf_tied_bf16" "$nan_dir/bf16"
python3 - "$nan_dir/bf16/model.safetensors" model.layers.0.mlp.down_proj.weight 149 <<'PY'
import json, struct, sys
f, name, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = bytearray(open(f, "rb").read())
n, = struct.unpack_from("<Q", b, 0)
e = json.loads(b[8:8 + n])[name]
assert e["dtype"] == "BF16" and e["shape"] == [64, 96], e
struct.pack_into("<H", b, 8 + n + e["data_offsets"][0] + 2 * at, 0x7fc0)  # bf16 NaN
open(f, "wb").write(b)
PY
for backend in $backends; do
  out=$("$ppcc" generate "$src/testdata/llm/hf_tied_bf16" --prompt-ids 1,2,3 --max-new-tokens 2 --tp 2 --dtype f32 \
        --backend=$backend 2>&1)
  if grep -q "^load: .*, 0.11 MiB of whole tensors given back once cut)$" <<<"$out"; then
    pass=$((pass + 1))
  else
    echo "$out"
    echo "FAIL $backend: the converted o_proj and down_proj were not given back once cut"
    fail=$((fail + 1))
  fi
  check_error 1 "prefill: non-finite logit NaN (row 0, token id 0); the first non-finite value is weight 'model.layers.0.mlp.down_proj.weight' (element 149)" \
    generate "$nan_dir/bf16" --prompt-ids 1,2,3 --tp 2 --dtype f32 --backend=$backend
done
rm -rf "$nan_dir"
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
