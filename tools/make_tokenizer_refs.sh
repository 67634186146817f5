#!/bin/sh
# Writes testdata/tokenizers/ with tools/make_tokenizer_refs.py. Run once by a
# developer; CI never runs it. REF_VENV: a Python venv with torch,
# transformers, tokenizers and sentencepiece (default: build/venv-ref, made
# here with pinned PyPI versions over Debian's python3-torch);
# LLAMA_CPP_DIR: llama.cpp sources with convert_hf_to_gguf.py and gguf-py
# (default: the llama-cpp-python 0.3.36 sdist from PyPI, unpacked in build/).
set -eu
cd "$(dirname "$0")/.."
VENV=${REF_VENV:-build/venv-ref}
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q transformers==4.46.3 tokenizers==0.20.3 safetensors==0.4.5 sentencepiece==0.2.0
fi
if [ -z "${LLAMA_CPP_DIR:-}" ]; then
  if [ ! -d build/llama_cpp_python-0.3.36 ]; then
    "$VENV/bin/pip" download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d build
    tar -xzf build/llama_cpp_python-0.3.36.tar.gz -C build
  fi
  LLAMA_CPP_DIR=$PWD/build/llama_cpp_python-0.3.36/vendor/llama.cpp
fi
export LLAMA_CPP_DIR
rm -rf testdata/tokenizers
"$VENV/bin/python" tools/make_tokenizer_refs.py testdata/tokenizers
