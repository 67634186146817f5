#!/usr/bin/env bash
# Sharded parameter archives (DESIGN §5, README "Sharded parameter
# archives"): `ppcc shard-weights` writes them, `ppcc run --weights` reads
# them shard by shard.
#  - testdata/sharded/model.json places a split f32, a split f16, a
#    replicated, an unreduced and an unsharded param on 2 devices;
#    shard-weights from the whole .irpa and .safetensors of
#    testdata/real_writers-style files (made here by tools/gen_safetensors)
#    to .irpa and .safetensors; both backends' outputs with each archive are
#    byte-identical to --random-weights 3, and so with
#    testdata/sharded/weights.sharded.irpa (sharktank's naming, written by
#    IREE's own writer: tools/make_sharded_irpa.py);
#  - shard-weights from a sharded HF directory and a GGUF file: the same
#    outputs as the source;
#  - bad command lines and sources: one-line diagnostics, exit codes, no
#    output file (and an existing one untouched);
#  - archives whose shards disagree with the placement: one line naming
#    the param.
# Usage: bash shard_weights.sh PPCC_BINARY SOURCE_DIR (gen_safetensors is
# built next to ppcc)
set -uo pipefail
ppcc=$1
src=$2
gen=$(dirname "$ppcc")/gen_safetensors
dir=$src/testdata/sharded
model=$dir/model.json
source "$src/tests/support/check.sh" # $tmp, check, fails, fails_cmp
mkdir "$tmp/out"

inputs=(--input "x32=$src/testdata/real_writers/x32.npy" --input "x16=$src/testdata/real_writers/x16.npy")
"$gen" --irpa "$model" 3 "$tmp/whole.irpa" >/dev/null || { echo "FAIL: gen_safetensors --irpa" >&2; exit 1; }
"$gen" "$model" 3 "$tmp/whole.safetensors" >/dev/null || { echo "FAIL: gen_safetensors" >&2; exit 1; }
for whole in whole.irpa whole.safetensors; do
  for ext in irpa safetensors; do
    check "shard-weights $whole -> .$ext" \
      "$ppcc" shard-weights "$model" --weights "$tmp/$whole" -o "$tmp/$whole.sharded.$ext"
  done
done

for backend in jit interp; do
  check "$backend: --random-weights 3 runs" \
    "$ppcc" run "$model" --backend=$backend --random-weights 3 "${inputs[@]}" --output-dir "$tmp/$backend.random"
  for archive in "$tmp"/*.sharded.* "$dir/weights.sharded.irpa"; do
    out=$tmp/out/$backend.$(basename "$archive")
    check "$backend: --weights $(basename "$archive") runs" \
      "$ppcc" run "$model" --backend=$backend --weights "$archive" "${inputs[@]}" --output-dir "$out"
    for o in y32 y16; do
      check "$backend: $o with $(basename "$archive") is byte-identical to --random-weights 3" \
        cmp "$tmp/$backend.random/$o.npy" "$out/$o.npy"
    done
  done
done
# The comparison has teeth: another seed gives other outputs.
"$ppcc" run "$model" --random-weights 4 "${inputs[@]}" --output-dir "$tmp/seed4" >/dev/null 2>&1
check "--random-weights 4 differs" fails_cmp "$tmp/seed4/y32.npy" "$tmp/jit.random/y32.npy"

# Every source ppcc reads: a sharded Hugging Face directory and a GGUF file
# (imported with --tp 2 [--pp 2]); the sharded archive gives the outputs of
# the source itself, bit for bit.
llm=$src/testdata/llm
hf=$llm/hf_untied_f32
llm_inputs=(--input "tokens=$hf/prompt.npy" --input "positions=$hf/positions.npy")
for b in 0 1; do llm_inputs+=(--input "blk.$b.k_cache=$hf/zero_cache.npy" --input "blk.$b.v_cache=$hf/zero_cache.npy"); done
check "import hf" "$ppcc" import hf "$hf" -o "$tmp/hf.json" --tp 2 --pp 2 --seq 6
check "import gguf" "$ppcc" import gguf "$llm/tiny.gguf" -o "$tmp/gguf.json" --tp 2 --seq 6
for pair in "hf:$hf:irpa" "gguf:$llm/tiny.gguf:safetensors"; do
  IFS=: read -r name source ext <<<"$pair"
  check "shard-weights from $name" "$ppcc" shard-weights "$tmp/$name.json" --weights "$source" -o "$tmp/$name.sharded.$ext"
  check "$name: run with the source" "$ppcc" run "$tmp/$name.json" --weights "$source" "${llm_inputs[@]}" \
    --output-dir "$tmp/out/$name.source"
  check "$name: run with the sharded archive" "$ppcc" run "$tmp/$name.json" --weights "$tmp/$name.sharded.$ext" \
    "${llm_inputs[@]}" --output-dir "$tmp/out/$name.sharded"
  for o in logits next_token blk.1.v_cache_new; do
    check "$name: $o from the sharded archive is byte-identical" \
      cmp "$tmp/out/$name.source/$o.npy" "$tmp/out/$name.sharded/$o.npy"
  done
done

# The archive holds one entry per stored shard, named as sharktank does.
names=$(grep -ao '"[a-z]\(\.shard\.[0-9]\)\?":{' "$tmp/whole.irpa.sharded.safetensors" | tr -d '":{' | sort | tr '\n' ' ')
check "entry names: '$names'" test "$names" = "r.shard.0 s u.shard.0 u.shard.1 v.shard.0 v.shard.1 w.shard.0 w.shard.1 "

# expect_error STATUS PATTERN command...: exits STATUS, one stderr line matching PATTERN
expect_error() {
  local want=$1 pattern=$2
  shift 2
  "$@" >"$tmp/stdout" 2>"$tmp/err"
  local rc=$?
  local first
  first=$(head -n 1 "$tmp/err")
  check "'$*' exits $want (got $rc)" test "$rc" = "$want"
  check "'$*' says /$pattern/ (got: $first)" grep -q -- "$pattern" <<<"$first"
  if [[ $want == 1 ]]; then
    check "'$*': one line on stderr" test "$(wc -l <"$tmp/err")" = 1
  fi
}

sw=("$ppcc" shard-weights "$model")
expect_error 2 "missing --weights" "${sw[@]}" -o "$tmp/o.irpa"
expect_error 2 "missing -o" "${sw[@]}" --weights "$tmp/whole.irpa"
expect_error 2 "must name an .irpa or a .safetensors" "${sw[@]}" --weights "$tmp/whole.irpa" -o "$tmp/o.bin"
expect_error 1 "nothing.irpa" "${sw[@]}" --weights "$tmp/nothing.irpa" -o "$tmp/o.irpa"
check "no output after a missing source" test ! -e "$tmp/o.irpa"
# variant NAME PARAM...: a 4-device model holding these params, each
# through a relu (keeps its layout), as $tmp/NAME.json
variant() {
  local name=$1 ops="" outs="" sep=""
  shift
  local params
  params=$(IFS=,; echo "$*")
  for p in "$@"; do
    local n
    n=$(sed 's/.*"name": "\([a-z]*\)".*/\1/' <<<"$p")
    ops+="$sep{\"op\": \"neg\", \"in\": [\"$n\"], \"out\": [\"o_$n\"]}"
    outs+="$sep\"o_$n\""
    sep=", "
  done
  echo "{\"ppcc\": 1, \"name\": \"$name\", \"devices\": 4, \"params\": [$params], \"ops\": [$ops], \"outputs\": [$outs]}" >"$tmp/$name.json"
}
W='{"name": "w", "dtype": "f32", "shape": [16, 8], "shard": {"kind": "split", "dim": 1, "count": 2}, "devices": [0, 1]}'
V='{"name": "v", "dtype": "f16", "shape": [16, 4], "shard": {"kind": "split", "dim": 0, "count": 2}, "devices": [0, 1]}'
R='{"name": "r", "dtype": "f32", "shape": [4, 8], "shard": {"kind": "replicated", "count": 2}, "devices": [0, 1]}'
U='{"name": "u", "dtype": "f32", "shape": [4, 8], "shard": {"kind": "unreduced", "count": 2}, "devices": [0, 1]}'
# a source missing a param: one line naming it, the existing output untouched
variant no_s "$W" "$V" "$R" "$U"
"$gen" --irpa "$tmp/no_s.json" 3 "$tmp/no_s.irpa" >/dev/null
echo keep >"$tmp/existing.irpa"
expect_error 1 "tensor 's'.*missing" "${sw[@]}" --weights "$tmp/no_s.irpa" -o "$tmp/existing.irpa"
check "an existing output is untouched by a failed run" test "$(cat "$tmp/existing.irpa")" = keep
check "no temporary left" test "$(ls -a "$tmp" | grep -c '^\.existing')" = 0
expect_error 1 "o.irpa" "${sw[@]}" --weights "$tmp/whole.irpa" -o "$tmp/no/such/dir/o.irpa"

# Archives that disagree with the placement: one line naming the param.
run=("$ppcc" run "$model" "${inputs[@]}" --output-dir "$tmp/bad.out")
# shard (as shard-weights) a variant: variant_archive NAME EXT PARAM...
variant_archive() {
  local name=$1 ext=$2
  shift 2
  variant "$name" "$@"
  check "shard-weights of variant $name" "$ppcc" shard-weights "$tmp/$name.json" --weights "$tmp/whole.irpa" \
    -o "$tmp/$name.$ext"
}
S='{"name": "s", "dtype": "f32", "shape": [4, 8], "devices": [0]}'
# w split in 4 instead of 2
variant_archive w4 irpa "${W/\"count\": 2\}, \"devices\": \[0, 1\]/\"count\": 4\}, \"devices\": [0, 1, 2, 3]}" "$V" "$R" "$U" "$S"
expect_error 1 "param 'w' is stored in more shards (w.shard.2 exists) than the 2" "${run[@]}" --weights "$tmp/w4.irpa"
check "no outputs after a bad archive" test ! -e "$tmp/bad.out"
# w split along dim 0 instead of 1: the shards' shape differs (.safetensors records it)
variant_archive wrows safetensors "${W/\"dim\": 1/\"dim\": 0}" "$V" "$R" "$U" "$S"
expect_error 1 "tensor 'w.shard.0' has shape \[8, 8\] but the graph declares \[16, 4\]" "${run[@]}" \
  --weights "$tmp/wrows.safetensors"
# r split instead of replicated: the archive's r.shard.0 has half the bytes
variant_archive rsplit irpa "$W" "$V" "${R/\"kind\": \"replicated\"/\"kind\": \"split\", \"dim\": 1}" "$U" "$S"
expect_error 1 "tensor 'r.shard.0' has 64 bytes but" "${run[@]}" --weights "$tmp/rsplit.irpa"
# s unsharded in the model, stored in shards
variant_archive srep irpa "$W" "$V" "$R" "$U" "${S/\"devices\": \[0\]/\"shard\": {\"kind\": \"replicated\", \"count\": 2\}, \"devices\": [0, 1]}"
expect_error 1 "param 's' is stored in shards (s.shard.0) but the model places it unsharded" "${run[@]}" \
  --weights "$tmp/srep.irpa"
# w replicated in the archive: w.shard.1 is missing
variant_archive wrep safetensors "${W/\"kind\": \"split\", \"dim\": 1/\"kind\": \"replicated\"}" "$V" "$R" "$U" "$S"
expect_error 1 "param 'w' is stored in shards but 'w.shard.1' is missing" "${run[@]}" --weights "$tmp/wrep.safetensors"
# --check needs whole tensors
expect_error 1 "param 'w' is stored in shards; --check" "${run[@]}" --weights "$dir/weights.sharded.irpa" --check
exit $fail
