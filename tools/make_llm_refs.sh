#!/bin/sh
# Makes build/venv-ref (Debian's python3-torch through --system-site-packages,
# pinned PyPI packages for the rest) and writes testdata/llm/ with
# tools/make_llm_refs.py. Run once by a developer; CI never runs it.
# Needs: apt-get install python3-torch python3-venv python3-numpy
set -eu
cd "$(dirname "$0")/.."
VENV=build/venv-ref
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q transformers==4.45.2 safetensors==0.4.5 gguf==0.10.0 sentencepiece==0.2.0
fi
"$VENV/bin/python" tools/make_llm_refs.py testdata/llm
