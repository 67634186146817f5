# Sourced by tools/make_quant_llama_refs.sh and bench/bench_quant_vs_llamacpp.sh
# (from the repository root): a Python venv with transformers and gguf, the
# llama.cpp sources and a build of them (never committed, never part of
# ppcc's build), and convert_hf_to_gguf / llama-quantize helpers.
# Environment: REF_VENV (a venv with torch, transformers, sentencepiece,
# numpy; default build/venv-ref, made with Debian's torch and pinned PyPI
# packages), LLAMA_CPP_DIR (llama.cpp sources; default: the PyPI sdist of
# llama-cpp-python 0.3.36 unpacked under build/), LLAMA_BUILD (its CMake
# build tree with llama-quantize, llama-bench and the static libraries;
# default: built under build/llama-build).
llama_venv=${REF_VENV:-build/venv-ref}
if [[ ! -x $llama_venv/bin/python ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$llama_venv"
  "$llama_venv/bin/pip" install -q transformers==4.45.2 safetensors==0.4.5 sentencepiece==0.2.0 numpy==1.26.4
fi
llama_src=${LLAMA_CPP_DIR:-}
if [[ -z $llama_src ]]; then
  if [[ ! -d build/llama_cpp_python-0.3.36 ]]; then
    "$llama_venv/bin/pip" download -q --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d build/
    tar -xzf build/llama_cpp_python-0.3.36.tar.gz -C build/
  fi
  llama_src=$PWD/build/llama_cpp_python-0.3.36/vendor/llama.cpp
fi
llama_bld=${LLAMA_BUILD:-}
if [[ -z $llama_bld ]]; then
  llama_bld=$PWD/build/llama-build
  cmake -S "$llama_src" -B "$llama_bld" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF > /dev/null
  cmake --build "$llama_bld" -j2 --target llama-quantize llama-bench llama > /dev/null
fi

# llama_logits OUT_BINARY: tools/llamacpp/llama_logits.c against llama.cpp,
# its static libraries (the default build above) or, for a LLAMA_BUILD made
# with BUILD_SHARED_LIBS=ON, its shared ones in bin/ (found through rpath)
build_llama_logits() {
  if [[ -f $llama_bld/src/libllama.a ]]; then
    gcc -O1 -I"$llama_src/include" -I"$llama_src/ggml/include" tools/llamacpp/llama_logits.c -o "$1" \
      "$llama_bld/src/libllama.a" "$llama_bld/ggml/src/libggml.a" "$llama_bld/ggml/src/libggml-cpu.a" \
      "$llama_bld/ggml/src/libggml-base.a" -lstdc++ -lgomp -lpthread -lm
  else
    gcc -O1 -I"$llama_src/include" -I"$llama_src/ggml/include" tools/llamacpp/llama_logits.c -o "$1" \
      -L"$llama_bld/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$llama_bld/bin"
  fi
}

# convert_f16 HF_DIR OUT.gguf: convert_hf_to_gguf.py --outtype f16. It names
# torch's float8/uint dtypes in a table; torch before 2.1 lacks them, so
# they get placeholders (never used for a Llama).
convert_f16() {
  PYTHONPATH="$llama_src/gguf-py:$llama_src" "$llama_venv/bin/python" - "$llama_src/convert_hf_to_gguf.py" "$1" \
    --outtype f16 --outfile "$2" <<'PY' > "$2.convert.log" 2>&1
import runpy, sys, torch
for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, object())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
PY
}

# quantize IN.gguf OUT.gguf TYPE
quantize() { "$llama_bld/bin/llama-quantize" "$1" "$2" "$3" 1 > "$2.quantize.log" 2>&1; }
