#!/usr/bin/env bash
# Quantized GGUF files against llama.cpp itself (issue 24): a 2-layer Llama
# converted by convert_hf_to_gguf.py (F16) and quantized by llama-quantize
# to Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, with llama.cpp's logits, greedy ids and
# each step's top-2 margin (testdata/quant/llama/, made once by
# tools/make_quant_llama_refs.sh). ppcc keeps the weights in their block
# formats and computes as llama.cpp does (activations quantized per block
# to q8_0 / q8_K, integer dot products: src/runtime/kernels/quant_matmul.c).
#  - logits of the 32-token prompt's last position: max |ppcc - llama.cpp|
#    <= 0.2 and rms <= 0.06 (logits' std is ~1.6), same argmax unless
#    llama.cpp's own margin there is a near tie (< 0.05). Measured max 0.084
#    (Q8_0) to 0.125 (Q6_K), rms 0.031 to 0.041 (with weights dequantized to
#    f32 and f32 activations it was 0.108 to 0.20). Why not closer: llama.cpp
#    keeps an f16 KV cache and runs attention in f16, and an 8-bit
#    activation step (amax/127 of a block) is flipped by upstream rounding
#    differences far smaller than itself; the F16 file of the same model
#    differs by 0.0065 only.
#  - F16 (f16 matrices kept as stored, rows converted by
#    src/runtime/kernels/half_matmul.c): max 0.03, rms 0.01 (measured
#    0.0099 / 0.0027: llama.cpp's f16 KV cache and attention), and within
#    1e-4 of the same graph run with --dtype f32 (weights converted at load;
#    only the summation order differs); the same for a BF16 file made from
#    it here (f16 values rounded to bf16), on both backends.
#  - greedy ids (ppcc generate --ignore-eos) equal to llama.cpp's at
#    TP {1,2} x PP {1,2}, both backends, up to llama.cpp's first near tie
#    (margin < 0.05, where either token is a faithful greedy choice), after
#    two prompts. Prompt 1 (the logits' prompt, 8 ids) meets near ties early:
#    Q8_0 the first 5 (step 6's margin is 0.0016), Q4_0 none (step 1:
#    0.017), Q4_K_M 6 (step 7: 0.011), Q5_K_M 8, Q6_K 7 (step 8: 0.018),
#    F16 all 8. Prompt 2 (prompt2.ids, 12 ids) is chosen by the tool's fixed
#    rule (the first seeded prompt whose first 7 steps have margins >= 0.1
#    for every type: seed 379): F16 all 12 (smallest margin compared 0.086),
#    Q8_0 12 (0.105), Q4_0 11 (0.078; step 12: 0.042), Q4_K_M 7 (0.143; step
#    8: 0.032), Q5_K_M 10 (0.102; step 11: 0.0495, where ppcc takes the
#    other id), Q6_K 12 (0.154). Per type 11 (Q4_0) to 20 (F16) ids; the
#    test fails below 7 (min_ids).
#   quant_llama.sh PPCC SOURCE_DIR
set -euo pipefail
ppcc=$1
dir=$2/testdata/quant/llama
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "quant_llama: $*" >&2; exit 1; }

# reads an .npy of little-endian f4 or i8 (C order) with python3's stdlib
npy() {
  python3 - "$@" <<'PY'
import array, ast, struct, sys
def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    a = array.array({"<f4": "f", "<i8": "q"}[h["descr"]])
    a.frombytes(b[10 + n:])
    return a
if sys.argv[1] == "ids":
    print(",".join(str(x) for x in load(sys.argv[2])))
else:
    got, want = load(sys.argv[2]), load(sys.argv[3])
    assert len(got) == len(want), (len(got), len(want))
    d = [abs(x - y) for x, y in zip(got, want)]
    rms = (sum(x * x for x in d) / len(d)) ** 0.5
    am = lambda a: max(range(len(a)), key=a.__getitem__)
    print(f"max {max(d):.4f} rms {rms:.4f} argmax {am(got)} {am(want)}")
    near_tie = float(sys.argv[4]) < 0.05  # llama.cpp's own top-2 margin
    tol_max, tol_rms = (float(x) for x in sys.argv[5:7]) if len(sys.argv) > 6 else (0.2, 0.06)
    sys.exit(0 if max(d) <= tol_max and rms <= tol_rms and (am(got) == am(want) or near_tie) else 1)
PY
}

# bf16_of F16.gguf OUT.gguf: the file with every F16 tensor rounded to
# BF16 (same sizes, so every offset stays; type ids patched in place)
bf16_of() {
  python3 - "$@" <<'PY'
import array, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
at = 24
n_tensors, n_kv = struct.unpack_from("<QQ", b, 8)
def string():
    global at
    n = struct.unpack_from("<Q", b, at)[0]
    at += 8 + n
    return bytes(b[at - n:at])
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def value(t):
    global at
    if t == 8:
        string()
    elif t == 9:
        et, count = struct.unpack_from("<IQ", b, at)
        at += 12
        for _ in range(count):
            value(et)
    else:
        at += SIZES[t]
align = 32
for _ in range(n_kv):
    key = string()
    t = struct.unpack_from("<I", b, at)[0]
    at += 4
    if key == b"general.alignment":
        align = struct.unpack_from("<I", b, at)[0]
    value(t)
infos = []
for _ in range(n_tensors):
    string()
    nd = struct.unpack_from("<I", b, at)[0]
    dims = struct.unpack_from(f"<{nd}Q", b, at + 4)
    at += 4 + 8 * nd
    t, off = struct.unpack_from("<IQ", b, at)
    n = 1
    for x in dims:
        n *= x
    if t == 1:
        struct.pack_into("<I", b, at, 30)
        infos.append((off, n))
    at += 12
data = (at + align - 1) // align * align
for off, n in infos:
    lo = data + off
    h = array.array("H", bytes(b[lo:lo + 2 * n]))
    f = array.array("f", [struct.unpack("<e", struct.pack("<H", x))[0] for x in h])
    u = array.array("I", f.tobytes())
    r = array.array("H", [((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF for x in u])  # nearest even
    b[lo:lo + 2 * n] = r.tobytes()
open(sys.argv[2], "wb").write(b)
PY
}

prompt=$(npy ids "$dir/prompt.npy")
prompt2=$(cat "$dir/prompt2.ids")
min_ids=7 # greedy ids compared per type, both prompts together
k=0
backends="interp"
"$ppcc" generate "$dir/Q8_0.gguf" --prompt-ids 1 --max-new-tokens 1 --backend=jit > /dev/null 2>&1 && backends="interp jit"
caches=()
for b in 0 1; do caches+=(--input "blk.$b.k_cache=$dir/cache_zeros.npy" --input "blk.$b.v_cache=$dir/cache_zeros.npy"); done
for t in F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K; do
  "$ppcc" import gguf "$dir/$t.gguf" -o "$tmp/$t.json" --seq 32 --cache 32 > /dev/null
  grep -q '"dtype": "\(q[0-9]_[0k]\|f16\)"' "$tmp/$t.json" || fail "$t: import did not keep the stored formats"
  for backend in $backends; do
    "$ppcc" run "$tmp/$t.json" --weights "$dir/$t.gguf" --backend=$backend --input "tokens=$dir/prompt.npy" \
      --input "positions=$dir/positions.npy" "${caches[@]}" --output-dir "$tmp/$t.$backend" > /dev/null
    tol=()
    [[ $t == F16 ]] && tol=(0.03 0.01) # no activation quantization: only llama.cpp's f16 KV cache and attention
    line=$(npy logits "$tmp/$t.$backend/logits.npy" "$dir/$t.logits.npy" "$(cut -d' ' -f1 "$dir/$t.gaps")" "${tol[@]}") ||
      fail "$t $backend: logits beyond the tolerance: $line"
    echo "$t $backend logits vs llama.cpp: $line"
  done
  # F16 kept as stored computes what the f32 graph of the same weights does
  # (import --dtype f32: converted at load), up to the summation order
  if [[ $t == F16 ]]; then
    "$ppcc" import gguf "$dir/$t.gguf" -o "$tmp/$t.f32.json" --seq 32 --cache 32 --dtype f32 > /dev/null
    grep -q '"dtype": "f16"' "$tmp/$t.f32.json" && fail "F16: import --dtype f32 kept f16 params"
    "$ppcc" run "$tmp/$t.f32.json" --weights "$dir/$t.gguf" --backend=interp --input "tokens=$dir/prompt.npy" \
      --input "positions=$dir/positions.npy" "${caches[@]}" --output-dir "$tmp/$t.f32" > /dev/null
    line=$(npy logits "$tmp/$t.interp/logits.npy" "$tmp/$t.f32/logits.npy" 1 1e-4 1e-5) ||
      fail "F16 as stored vs --dtype f32: $line"
    echo "F16 as stored vs --dtype f32: $line"
    # the same file with its f16 matrices rounded to bf16 (GGUF type 30):
    # kept as stored on both backends = converted at load (--dtype f32)
    bf16_of "$dir/F16.gguf" "$tmp/BF16.gguf"
    "$ppcc" import gguf "$tmp/BF16.gguf" -o "$tmp/BF16.json" --seq 32 --cache 32 > /dev/null
    grep -q '"dtype": "bf16"' "$tmp/BF16.json" || fail "BF16: import did not keep bf16 params"
    "$ppcc" import gguf "$tmp/BF16.gguf" -o "$tmp/BF16.f32.json" --seq 32 --cache 32 --dtype f32 > /dev/null
    for m in BF16 BF16.f32; do
      for backend in $backends; do
        "$ppcc" run "$tmp/$m.json" --weights "$tmp/BF16.gguf" --backend=$backend --input "tokens=$dir/prompt.npy" \
          --input "positions=$dir/positions.npy" "${caches[@]}" --output-dir "$tmp/$m.$backend" > /dev/null
      done
    done
    for backend in $backends; do
      line=$(npy logits "$tmp/BF16.$backend/logits.npy" "$tmp/BF16.f32.interp/logits.npy" 1 1e-4 1e-5) ||
        fail "BF16 $backend as stored vs --dtype f32: $line"
      echo "BF16 $backend as stored vs --dtype f32: $line"
    done
  fi
  # --dtype f32 dequantizes at load: the same bytes as a graph imported with --dtype f32
  if [[ $t == Q4_K_M ]]; then
    "$ppcc" import gguf "$dir/$t.gguf" -o "$tmp/$t.f32.json" --seq 32 --cache 32 --dtype f32 > /dev/null
    for m in "$tmp/$t.f32.json" "$tmp/$t.json --dtype f32"; do
      # shellcheck disable=SC2086
      "$ppcc" run $m --weights "$dir/$t.gguf" --backend=interp --input "tokens=$dir/prompt.npy" \
        --input "positions=$dir/positions.npy" "${caches[@]}" --output-dir "$tmp/deq.$((++k))" > /dev/null
    done
    cmp "$tmp/deq.1/logits.npy" "$tmp/deq.2/logits.npy" || fail "run --dtype f32 differs from import --dtype f32"
  fi
  # the ids before llama.cpp's first near tie, after each prompt
  counts=()
  for p in 1 2; do
    if [[ $p == 1 ]]; then ids=$prompt suffix=""; else ids=$prompt2 suffix=2; fi
    n=0
    for gap in $(cat "$dir/$t.gaps$suffix"); do
      awk -v g="$gap" 'BEGIN { exit !(g < 0.05) }' && break
      n=$((n + 1))
    done
    counts+=("$n")
    [[ $n -gt 0 ]] || continue
    want=$(cut -d' ' -f1-$n "$dir/$t.ids$suffix")
    for tp in 1 2; do
      for pp in 1 2; do
        for backend in $backends; do
          got=$("$ppcc" generate "$dir/$t.gguf" --tp $tp --pp $pp --backend=$backend --prompt-ids "$ids" \
                --max-new-tokens $n --ignore-eos 2>&1 | sed -n 1p)
          [[ $(cut -d' ' -f2-$((n + 1)) <<< "$got") == "$want" ]] ||
            fail "$t prompt $p tp$tp pp$pp $backend: llama.cpp's ids '$want', ppcc '$got'"
        done
      done
    done
  done
  echo "$t greedy ids equal to llama.cpp's at tp{1,2} x pp{1,2} ($backends): ${counts[0]} (prompt 1) + ${counts[1]} (prompt 2)"
  [[ $((counts[0] + counts[1])) -ge $min_ids ]] ||
    fail "$t: only $((counts[0] + counts[1])) greedy ids compared before llama.cpp's near ties (minimum $min_ids)"
done
echo "quant_llama: ok ($backends)"
