#!/bin/sh
# Writes more family checkpoints of testdata/llm/ (tools/make_more_family_refs.py).
# Run once by a developer; CI never runs it. REF_VENV and LLAMA_CPP_DIR as
# for tools/make_tokenizer_refs.sh (which makes them when unset).
set -eu
cd "$(dirname "$0")/.."
VENV=${REF_VENV:-build/venv-ref}
if [ ! -x "$VENV/bin/python" ] || [ -z "${LLAMA_CPP_DIR:-}" ]; then
  echo "set REF_VENV and LLAMA_CPP_DIR (tools/make_tokenizer_refs.sh shows how to make them)" >&2
  exit 2
fi
"$VENV/bin/python" tools/make_more_family_refs.py testdata/llm
