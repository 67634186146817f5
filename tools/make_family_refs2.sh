#!/bin/sh
# Writes the sliding-window, Gemma, Gemma 2 and Qwen3 checkpoints of
# testdata/llm/ (tools/make_family_refs2.py). Run once by a developer; CI
# never runs it. Qwen3 needs transformers >= 4.51, so REF_VENV3 is its own
# venv (default build/refvenv3, made here from PyPI with pinned versions:
# torch 2.5.1 (CPU runs; the wheel pulls ~3 GB of CUDA libraries),
# transformers 4.51.3). LLAMA_CPP_DIR as for tools/make_tokenizer_refs.sh
# (convert_hf_to_gguf.py and gguf-py), whose testdata/tokenizers spm and qwen2
# tokenizers this uses.
set -eu
cd "$(dirname "$0")/.."
VENV=${REF_VENV3:-build/refvenv3}
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q torch==2.5.1 transformers==4.51.3 safetensors==0.5.3 numpy==1.26.4 \
    sentencepiece==0.2.0 tokenizers==0.21.1 protobuf==5.29.3 pyyaml==6.0.2 tqdm==4.67.1
fi
if [ -z "${LLAMA_CPP_DIR:-}" ]; then
  echo "set LLAMA_CPP_DIR (tools/make_tokenizer_refs.sh shows how to get llama.cpp's sources)" >&2
  exit 2
fi
export LLAMA_CPP_DIR
"$VENV/bin/python" tools/make_family_refs2.py testdata/llm testdata/tokenizers
