#!/usr/bin/env bash
# Weights files written by the real writers load in `ppcc run` (DESIGN §7):
# testdata/real_writers/weights.irpa (written by IREE's own writer,
# iree.runtime ParameterIndex + create_archive_file) and weights.safetensors
# (written by the `safetensors` package) hold the values of
# --random-weights 3 (f32 and f16 params, split over 2 devices); the outputs
# of both backends with either file are byte-identical to --random-weights 3.
# The files were made by tools/make_real_writer_weights.py.
# Usage: bash real_writer_weights.sh PPCC_BINARY SOURCE_DIR
set -uo pipefail
ppcc=$1
src=$2
dir=$src/testdata/real_writers
source "$src/tests/support/check.sh" # $tmp, check, fails, fails_cmp


inputs=(--input "x32=$dir/x32.npy" --input "x16=$dir/x16.npy")
for backend in jit interp; do
  check "$backend: --random-weights 3 runs" \
    "$ppcc" run "$dir/model.json" --backend=$backend --random-weights 3 "${inputs[@]}" --output-dir "$tmp/$backend.random"
  for file in weights.irpa weights.safetensors; do
    out=$tmp/$backend.$file
    check "$backend: --weights $file runs" \
      "$ppcc" run "$dir/model.json" --backend=$backend --weights "$dir/$file" "${inputs[@]}" --output-dir "$out"
    for o in y32 y16; do
      check "$backend: $o with $file is byte-identical to --random-weights 3" \
        cmp "$tmp/$backend.random/$o.npy" "$out/$o.npy"
    done
  done
done

# The comparison has teeth: another seed gives other outputs.
"$ppcc" run "$dir/model.json" --random-weights 4 "${inputs[@]}" --output-dir "$tmp/seed4" >/dev/null 2>&1
check "--random-weights 4 differs from the irpa's values" fails_cmp "$tmp/seed4/y32.npy" "$tmp/jit.weights.irpa/y32.npy"
exit $fail
