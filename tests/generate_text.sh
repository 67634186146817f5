#!/usr/bin/env bash
# `ppcc generate --prompt TEXT`: text in, text out, against transformers
# (testdata/tokenizers/refs.json, made by tools/make_tokenizer_refs.py): the
# prompt tokenized by the checkpoint's tokenizer (tokenizer.json or the GGUF's
# tokenizer.ggml.*), the greedy ids, and the streamed continuation equal to
# transformers' decode; generation stops at the config's EOS unless
# --ignore-eos. Both backends.
#   generate_text.sh PPCC SOURCE_DIR
set -u
ppcc=$1
src=$2
dir=$src/testdata/tokenizers
source "$src/tests/support/generate.sh" # pass, fail, check_error, generate_backends
backends=$(generate_backends "$dir/spm" --prompt hi)
ref() { python3 -c "import json,sys; g=json.load(open('$dir/refs.json'))['generate']['$1']; v=g['$2']
print(' '.join(map(str, v)) if isinstance(v, list) else v, end='')"; }
check() { # label source want_text want_ids args...
  local label=$1 source=$2 want_text=$3 want_ids=$4
  shift 4
  local out
  out=$("$ppcc" generate "$source" "$@" 2>&1)
  local tokens_line
  tokens_line=$(grep -n '^tokens:' <<<"$out" | head -1 | cut -d: -f1)
  local text
  text=$(head -n $((tokens_line - 1)) <<<"$out")
  if [[ $text == "$want_text" && $(sed -n "${tokens_line}p" <<<"$out") == "tokens: $want_ids" ]] &&
     grep -q '^time to first token: ' <<<"$out"; then
    pass=$((pass + 1))
  else
    echo "FAIL $label: want text '$want_text' and 'tokens: $want_ids', got:"
    printf '%s\n' "$out"
    fail=$((fail + 1))
  fi
}
prompt=$(ref spm prompt)
for backend in $backends; do
  for s in spm spm.gguf; do
    check "$s $backend" "$dir/$s" "$(ref spm text)" "$(ref spm ids)" --prompt "$prompt" --max-new-tokens 20 --backend=$backend
  done
  # gpt2/: config.json's EOS is a later greedy id: generation stops there
  # (the EOS ends the ids, its text is not printed) ...
  eos_ids=$(ref gpt2 ids_to_eos)
  check "gpt2 eos $backend" "$dir/gpt2" "$(ref gpt2 text_to_eos)" "$eos_ids" --prompt "$prompt" --max-new-tokens 12 \
    --backend=$backend
  [[ ${eos_ids##* } == $(ref gpt2 eos) && $eos_ids != "$(ref gpt2 ids)" ]] || { echo "FAIL: bad EOS reference"; fail=$((fail + 1)); }
  # ... unless --ignore-eos; the GGUF (made before that EOS was set) runs on
  check "gpt2 ignore-eos $backend" "$dir/gpt2" "$(ref gpt2 text)" "$(ref gpt2 ids)" --prompt "$prompt" \
    --max-new-tokens 12 --ignore-eos --backend=$backend
  check "gpt2.gguf $backend" "$dir/gpt2.gguf" "$(ref gpt2 text)" "$(ref gpt2 ids)" --prompt "$prompt" \
    --max-new-tokens 12 --backend=$backend
done
# a GGUF's EOS is its tokenizer.ggml.eos_token_id: spm.gguf with that key set
# to a later greedy id stops there (text a prefix of the full continuation),
# and runs on with --ignore-eos
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eos=$(python3 - "$dir/spm.gguf" "$tmp/spm_eos.gguf" "$dir/refs.json" <<'PY'
import json, struct, sys
ids = json.load(open(sys.argv[3]))["generate"]["spm"]["ids"]
eos = [t for i, t in enumerate(ids) if i >= 3 and t not in ids[:i]][0]
b = bytearray(open(sys.argv[1], "rb").read())
key = b"tokenizer.ggml.eos_token_id"
at = b.index(struct.pack("<Q", len(key)) + key) + 8 + len(key)
assert struct.unpack_from("<I", b, at)[0] == 4  # a u32 value
struct.pack_into("<I", b, at + 4, eos)
open(sys.argv[2], "wb").write(b)
print(" ".join(map(str, ids[:ids.index(eos) + 1])))
PY
)
for backend in $backends; do
  out=$("$ppcc" generate "$tmp/spm_eos.gguf" --prompt "$prompt" --max-new-tokens 20 --backend=$backend 2>&1)
  full=$(ref spm text)
  text=$(sed -n '/^tokens:/q;p' <<<"$out")
  if [[ -n $eos && $(grep '^tokens:' <<<"$out") == "tokens: $eos" && $full == "$text"* && ${#text} -lt ${#full} ]]; then
    pass=$((pass + 1))
  else
    echo "FAIL spm_eos.gguf $backend: want 'tokens: $eos' and a prefix of '$full', got: $out"
    fail=$((fail + 1))
  fi
  check "spm_eos.gguf ignore-eos $backend" "$tmp/spm_eos.gguf" "$full" "$(ref spm ids)" --prompt "$prompt" \
    --max-new-tokens 20 --ignore-eos --backend=$backend
done
# every family x {HF dir, GGUF f32, GGUF q8_0}: text in, text out
# (ref_text.json beside each reference, made by tools/make_family_refs2.py
# and tools/make_more_family_refs.py): the prompt through the checkpoint's
# own tokenizer (tokenizer.json or the GGUF's tokenizer.ggml.*), the greedy
# ids and their decode equal transformers'; EOS ignored as transformers' loop
# did; q8_0 against the gguf-dequantized model (--dtype f32)
fam_ref() { python3 -c "import json; v=json.load(open('$1/ref_text.json'))['$2']
print(' '.join(map(str, v)) if isinstance(v, list) else v, end='')"; }
families="hf_mistral_swa:hf_mistral_swa mistral_swa.gguf:mistral_swa_gguf_refs
  mistral_swa_q8_0.gguf:mistral_swa_q8_0_refs hf_gemma:hf_gemma gemma.gguf:hf_gemma gemma_q8_0.gguf:gemma_q8_0_refs
  hf_gemma2:hf_gemma2 gemma2.gguf:gemma2_gguf_refs gemma2_q8_0.gguf:gemma2_q8_0_refs
  hf_qwen3:hf_qwen3 qwen3.gguf:hf_qwen3 qwen3_q8_0.gguf:qwen3_q8_0_refs
  hf_qwen2:hf_qwen2 qwen2.gguf:hf_qwen2 qwen2_q8_0.gguf:qwen2_q8_0_refs
  hf_llama3:hf_llama3 llama3.gguf:hf_llama3 llama3_q8_0.gguf:llama3_q8_0_refs
  hf_phi3:hf_phi3 phi3.gguf:hf_phi3 phi3_q8_0.gguf:phi3_q8_0_refs
  hf_gpt2:hf_gpt2 gpt2.gguf:hf_gpt2 gpt2_q8_0.gguf:gpt2_q8_0_refs"
for backend in $backends; do
  for pair in $families; do
    r=$src/testdata/llm/${pair##*:}
    dtype=()
    [[ $pair == *.gguf:* ]] && dtype=(--dtype f32)
    check "${pair%%:*} $backend" "$src/testdata/llm/${pair%%:*}" "$(fam_ref "$r" text)" "$(fam_ref "$r" ids)" \
      --prompt "$(fam_ref "$r" prompt)" --max-new-tokens 8 --ignore-eos "${dtype[@]}" --backend=$backend
  done
done
# --prompt-ids stops at the EOS too
out=$("$ppcc" generate "$dir/gpt2" --prompt-ids "$(ref gpt2 prompt_ids | tr ' ' ,)" --max-new-tokens 12 --backend=interp)
if [[ $(sed -n 1p <<<"$out") == "tokens: $(ref gpt2 ids_to_eos)" ]]; then pass=$((pass + 1)); else
  echo "FAIL --prompt-ids EOS stop: $out"; fail=$((fail + 1)); fi
check_error 1 "tokenizer.json" generate "$src/testdata/llm/hf_untied_f32" --prompt "hi"
check_error 1 "'tokenizer.ggml.model'" generate "$src/testdata/llm/tiny.gguf" --prompt "hi"
check_error 2 "not both" generate "$dir/spm" --prompt "hi" --prompt-ids 1
check_error 2 "one row" generate "$dir/spm" --prompt "hi" --batch 2
check_error 2 "missing --prompt" generate "$dir/spm"
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
