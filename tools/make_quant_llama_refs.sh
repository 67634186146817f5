#!/usr/bin/env bash
# Quantized GGUF files with llama.cpp's own logits and greedy ids, for
# tests/quant_llama.sh (issue 24). Run once by a developer; CI only reads
# what this writes under testdata/quant/llama/:
#   <TYPE>.gguf        TYPE in F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K: a 2-layer
#                      Llama (tools/make_quant_llama_refs.py, transformers)
#                      converted by llama.cpp's convert_hf_to_gguf.py (F16)
#                      and quantized by llama-quantize
#   <TYPE>.ids         llama.cpp's 8 greedy ids after the prompt
#   <TYPE>.gaps        at each of those steps, llama.cpp's margin of the
#                      chosen logit over the runner-up (near ties)
#   <TYPE>.logits.npy  llama.cpp's logits at the prompt's last position
#   prompt.npy, positions.npy: the 32-token prompt and its positions;
#   cache_zeros.npy: empty k/v caches for `ppcc run` (--cache 32)
# llama.cpp runs through tools/llamacpp/llama_logits.c, built here against its
# libraries (CPU, 1 thread, no weight repacking). Environment: REF_VENV,
# LLAMA_CPP_DIR, LLAMA_BUILD (see tools/llamacpp/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=testdata/quant/llama
work=build/quant-llama
mkdir -p "$out" "$work"
source tools/llamacpp/setup.sh
venv=$llama_venv
build_llama_logits "$work/llama_logits"

"$venv/bin/python" tools/make_quant_llama_refs.py "$work"
convert_f16 "$work/hf" "$work/F16.gguf"
prompt=$("$venv/bin/python" -c "import numpy as np; r = np.random.default_rng(5); print(','.join(str(x) for x in [1] + list(r.integers(3, 256, 31))))")
"$venv/bin/python" - "$out" "$prompt" <<'PY'
import sys, numpy as np
ids = [int(x) for x in sys.argv[2].split(",")]
np.save(f"{sys.argv[1]}/prompt.npy", np.array([ids], dtype=np.int64))
np.save(f"{sys.argv[1]}/positions.npy", np.arange(len(ids), dtype=np.int64))
np.save(f"{sys.argv[1]}/cache_zeros.npy", np.zeros((1, 32, 2, 64), dtype=np.float32))  # k/v caches, --cache 32
PY
for t in F16 Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K; do
  if [[ $t == F16 ]]; then
    cp "$work/F16.gguf" "$out/F16.gguf" # as converted: f16 matrices (kept as stored by ppcc), f32 norms
  else
    quantize "$work/F16.gguf" "$out/$t.gguf" "$t"
    mv "$out/$t.gguf.quantize.log" "$work/"
  fi
  LLAMA_NO_REPACK=1 "$work/llama_logits" "$out/$t.gguf" "$work/$t.logits" "$prompt" 8 "$out/$t.gaps" \
    2> "$work/llama_$t.log" > "$out/$t.ids"
  "$venv/bin/python" - "$work/$t.logits" "$out/$t.logits.npy" <<'PY'
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype="<f4").reshape(32, -1)
np.save(sys.argv[2], x[-1:].reshape(1, 1, -1))
PY
  echo "$out/$t.gguf: llama.cpp greedy ids $(cat "$out/$t.ids")"
done
