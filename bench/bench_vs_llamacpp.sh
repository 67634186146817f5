#!/usr/bin/env bash
# `ppcc generate` against llama.cpp on issue 23's model (reference only, not
# in CI): a Llama from transformers' from_config (hidden H, 8 layers, 16
# heads / 4 kv heads, ffn 2816, vocab 8192, f32), saved as an HF directory
# and converted to an f32 GGUF by llama.cpp's own convert_hf_to_gguf.py
# (a small sentencepiece tokenizer is trained for it: the converter needs
# one; its vocabulary is padded to 8192). Rounds alternate ppcc (HF dir),
# ppcc (GGUF), llama.cpp; each prints decode tok/s, prefill-128 tok/s, time
# to first token and peak RSS, then the per-round ratios ppcc / llama.cpp
# as min and median (TTFT inverted: >= 1 is ppcc faster everywhere but RSS).
# 2 threads each. llama.cpp: llama-bench (pp128, tg32; random ids: speed
# of a dense f32 model does not depend on them), --repack 0 and
# LLAMA_NO_REPACK=1 (AMX crashes here), mmap as ppcc.
#   bench/bench_vs_llamacpp.sh [HIDDEN] [ROUNDS]
# Env: PPCC (default build/ppcc), REF_VENV (python with torch, transformers,
# sentencepiece: default build/refvenv, made with pinned versions),
# LLAMA_CPP_DIR (a llama.cpp build with bin/llama-bench: default built in
# build/llama from the llama-cpp-python 0.3.36 sdist), LLAMA_SRC (its
# sources with convert_hf_to_gguf.py and gguf-py).
set -eu
cd "$(dirname "$0")/.."
hidden=${1:-1024}
rounds=${2:-3}
ppcc=${PPCC:-build/ppcc}
work=build/bench_llamacpp
mkdir -p "$work"
venv=${REF_VENV:-build/refvenv}
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q torch==2.5.1 --index-url https://download.pytorch.org/whl/cpu
  "$venv/bin/pip" install -q transformers==4.46.3 safetensors==0.4.5 sentencepiece==0.2.0 numpy==1.26.4
fi
py=$venv/bin/python
src=${LLAMA_SRC:-}
if [[ -z $src ]]; then
  src=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
  if [[ ! -d $src ]]; then
    "$py" -m pip download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$work"
    tar -xzf "$work/llama_cpp_python-0.3.36.tar.gz" -C "$work"
  fi
fi
llama=${LLAMA_CPP_DIR:-$work/llama}
if [[ ! -x $llama/bin/llama-bench ]]; then
  cmake -S "$src" -B "$llama" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF >/dev/null
  cmake --build "$llama" -j2 --target llama-bench >/dev/null
fi
"$py" -c "import gguf" 2>/dev/null || "$py" -m pip install -q "$src/gguf-py"

model=$work/m$hidden
if [[ ! -f $model/model.safetensors ]]; then
  "$py" bench/make_llama_hf.py "$model" "$hidden"
  "$py" - "$model" <<'PY'
import random, sys, sentencepiece as spm
random.seed(0)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 8))) for _ in range(3000)]
text = "\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(4000))
open(sys.argv[1] + "/corpus.txt", "w").write(text)
spm.SentencePieceTrainer.train(input=sys.argv[1] + "/corpus.txt", model_prefix=sys.argv[1] + "/tokenizer",
                               vocab_size=1000, model_type="bpe", bos_id=1, eos_id=2, unk_id=0, pad_id=-1)
PY
fi
gguf=$model/model-f32.gguf
# the converter names torch dtypes newer than some torch builds have (unused for f32)
[[ -f $gguf ]] || "$py" - "$src/convert_hf_to_gguf.py" "$model" --outtype f32 --outfile "$gguf" >/dev/null <<'PY'
import os, runpy, sys, torch
for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
    if not hasattr(torch, name): setattr(torch, name, torch.uint8)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
PY
prompt=$("$py" -c "import random; random.seed(1); print(','.join(str(random.randrange(3, 1000)) for _ in range(128)))")

# ppcc SOURCE: "decode_tok_s prefill_tok_s ttft_ms rss_mib" (peak RSS from
# GNU time, as llama.cpp's: the whole process, teardown included)
ppcc_round() {
  OMP_NUM_THREADS=2 /usr/bin/time -f "rss %M" "$ppcc" generate "$1" --prompt-ids "$prompt" --max-new-tokens 33 \
    --threads 2 2>&1 |
    awk '/^rss / {rss=$2 / 1024} /^time to first token:/ {ttft=$5} /tokens\/s$/ {dec=$(NF-1)}
         END {printf "%s %.1f %s %.1f\n", dec, 128000 / ttft, ttft, rss}'
}
# llama.cpp: the same four from llama-bench (pp128 and tg32) and GNU time
llama_round() {
  LLAMA_NO_REPACK=1 /usr/bin/time -f "rss %M" "$llama/bin/llama-bench" -m "$gguf" -p 128 -n 32 -t 2 -r 1 \
    --repack 0 -o csv 2>"$work/time.txt" >"$work/llama.csv"
  awk -F, '{gsub(/"/, "")} NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i}
           NR > 1 {if ($col["n_prompt"] > 0) pp = $col["avg_ts"]; else tg = $col["avg_ts"]}
           END {printf "%s %s %.1f", tg, pp, 128000 / pp}' "$work/llama.csv"
  awk '/^rss/ {printf " %.1f\n", $2 / 1024}' "$work/time.txt"
}

stats() { sort -g | awk '{v[NR]=$1} END {printf "min %.2f median %.2f", v[1], v[int((NR+1)/2)]}'; }
# one unrecorded run of each ppcc source first: llama-bench warms up in its
# process before it measures (its default, --no-warmup off), so its first
# round never reads a weights file the page cache has dropped; ppcc's
# first round did (0.72x prefill once, right after a build)
ppcc_round "$model" >/dev/null
ppcc_round "$gguf" >/dev/null
: > "$work/rounds.txt"
for ((r = 0; r < rounds; r++)); do
  h=$(ppcc_round "$model")
  g=$(ppcc_round "$gguf")
  l=$(llama_round)
  echo "round $r: ppcc-hf $h | ppcc-gguf $g | llama.cpp $l (decode tok/s, prefill tok/s, TTFT ms, RSS MiB)"
  echo "$h $g $l" >> "$work/rounds.txt"
done
echo "hidden $hidden, 8 layers, 2 threads, $rounds rounds; ratios ppcc / llama.cpp per round (decode, prefill: >= 1 is"
echo "ppcc faster; TTFT: llama.cpp's / ppcc's, >= 1 is ppcc faster; RSS: ppcc's / llama.cpp's, <= 1.1 is the target)"
for src_name in hf:0 gguf:4; do
  o=${src_name#*:}
  for m in decode:1 prefill:2 ttft:3 rss:4; do
    i=${m#*:}
    printf '%-5s %-8s ' "${src_name%%:*}" "${m%%:*}"
    awk -v a=$((o + i)) -v b=$((8 + i)) -v inv=$([[ ${m%%:*} == ttft ]] && echo 1 || echo 0) \
      '{print inv ? $b / $a : $a / $b}' "$work/rounds.txt" | stats
    echo
  done
done
