#!/usr/bin/env bash
# Quantized GGUF files with llama.cpp's own logits and greedy ids, for
# tests/quant_llama.sh (issue 24). Run once by a developer; CI only reads
# what this writes under testdata/quant/llama/:
#   <TYPE>.gguf        TYPE in Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K: a 2-layer Llama
#                      (tools/make_quant_llama_refs.py, transformers)
#                      converted by llama.cpp's convert_hf_to_gguf.py (F16)
#                      and quantized by llama-quantize
#   <TYPE>.ids         llama.cpp's 8 greedy ids after the prompt
#   <TYPE>.logits.npy  llama.cpp's logits at the prompt's last position
#   prompt.npy, positions.npy: the 32-token prompt and its positions
# llama.cpp runs through tools/llamacpp/llama_logits.c, built here against its
# libraries (CPU, 1 thread, no weight repacking).
# Environment: REF_VENV (a venv with torch, transformers, sentencepiece,
# numpy, gguf; default: build/venv-ref made like tools/make_llm_refs.sh, plus
# sentencepiece), LLAMA_CPP_DIR (llama.cpp sources; default: the sdist of
# llama-cpp-python 0.3.36 from PyPI, unpacked under build/), LLAMA_BUILD
# (its CMake build tree with llama-quantize and the static libraries;
# default: built under build/llama-build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=testdata/quant/llama
work=build/quant-llama
mkdir -p "$out" "$work"
venv=${REF_VENV:-build/venv-ref}
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q transformers==4.45.2 safetensors==0.4.5 sentencepiece==0.2.0 numpy==1.26.4
fi
src=${LLAMA_CPP_DIR:-}
if [[ -z $src ]]; then
  if [[ ! -d build/llama_cpp_python-0.3.36 ]]; then
    "$venv/bin/pip" download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d build/
    tar -xzf build/llama_cpp_python-0.3.36.tar.gz -C build/
  fi
  src=$root/build/llama_cpp_python-0.3.36/vendor/llama.cpp
fi
bld=${LLAMA_BUILD:-}
if [[ -z $bld ]]; then
  bld=$root/build/llama-build
  cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF > /dev/null
  cmake --build "$bld" -j2 --target llama-quantize llama > /dev/null
fi
gcc -O1 -I"$src/include" -I"$src/ggml/include" tools/llamacpp/llama_logits.c -o "$work/llama_logits" \
  "$bld/src/libllama.a" "$bld/ggml/src/libggml.a" "$bld/ggml/src/libggml-cpu.a" "$bld/ggml/src/libggml-base.a" \
  -lstdc++ -lgomp -lpthread -lm

"$venv/bin/python" tools/make_quant_llama_refs.py "$work"
# convert_hf_to_gguf names torch's float8/uint dtypes in a table; torch
# before 2.1 lacks them, so they get placeholders (never used here).
PYTHONPATH="$src/gguf-py:$src" "$venv/bin/python" - "$src/convert_hf_to_gguf.py" "$work/hf" --outtype f16 \
  --outfile "$work/F16.gguf" <<'PY' > "$work/convert.log" 2>&1
import runpy, sys, torch
for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, object())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
PY
prompt=$("$venv/bin/python" -c "import numpy as np; r = np.random.default_rng(5); print(','.join(str(x) for x in [1] + list(r.integers(3, 256, 31))))")
"$venv/bin/python" - "$out" "$prompt" <<'PY'
import sys, numpy as np
ids = [int(x) for x in sys.argv[2].split(",")]
np.save(f"{sys.argv[1]}/prompt.npy", np.array([ids], dtype=np.int64))
np.save(f"{sys.argv[1]}/positions.npy", np.arange(len(ids), dtype=np.int64))
PY
for t in Q8_0 Q4_0 Q4_K_M Q5_K_M Q6_K; do
  "$bld/bin/llama-quantize" "$work/F16.gguf" "$out/$t.gguf" "$t" 1 > "$work/quantize_$t.log" 2>&1
  "$work/llama_logits" "$out/$t.gguf" "$work/$t.logits" "$prompt" 8 2> "$work/llama_$t.log" > "$out/$t.ids"
  "$venv/bin/python" - "$work/$t.logits" "$out/$t.logits.npy" <<'PY'
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype="<f4").reshape(32, -1)
np.save(sys.argv[2], x[-1:].reshape(1, 1, -1))
PY
  echo "$out/$t.gguf: llama.cpp greedy ids $(cat "$out/$t.ids")"
done
