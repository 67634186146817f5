#!/bin/sh
# Writes testdata/quant/blocks.gguf with tools/make_quant_refs.py (gguf-py's
# quantize/dequantize). Run once by a developer; CI never runs it.
# REF_VENV: a Python venv that already has numpy and gguf (e.g. the lead's
# /work/cache/refvenv); otherwise build/venv-quant is made with pinned
# PyPI packages.
set -eu
cd "$(dirname "$0")/.."
VENV=${REF_VENV:-build/venv-quant}
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q numpy==1.26.4 gguf==0.17.1
fi
"$VENV/bin/python" tools/make_quant_refs.py testdata/quant
