#!/usr/bin/env bash
# Placement faithful to sharktank (DESIGN §2 v2): the models whose placement
# comes from P4/P5/P8/P11 and the count-1 rules run with --check on both
# backends, and so do gen_llama decode graphs at TP=1 (batch 1 and 2), whose
# count-1 layouts must behave as unsharded.
# Usage: run_placement.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
gen_llama=$(dirname "$ppcc")/gen_llama
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # MODEL_FILE LABEL
  for backend in jit interp; do
    "$ppcc" run "$1" --random-weights 3 --check --backend="$backend" > "$tmp/log" 2>&1 ||
      { cat "$tmp/log"; echo "run_placement: $2 --backend=$backend failed" >&2; exit 1; }
    grep -q ": ok" "$tmp/log" || { cat "$tmp/log"; echo "run_placement: $2: no output checked" >&2; exit 1; }
    if grep -q "check .*: FAIL\|mismatch" "$tmp/log"; then cat "$tmp/log"; exit 1; fi
  done
}

for model in ppffn_sharktank pp_chain inserted_collectives; do
  check "$src/testdata/models/$model.json" "$model"
done

# Auto-partition pairs a row-parallel linear with its bias: shard 0 adds the
# bias to its partial sum, so the all_reduce counts it once.
for backend in jit interp; do
  "$ppcc" run "$src/testdata/auto/auto_linear_bias.json" --tp=2 --pp=2 --random-weights 3 --check \
    --backend="$backend" > "$tmp/log" 2>&1 ||
    { cat "$tmp/log"; echo "run_placement: auto_linear_bias --backend=$backend failed" >&2; exit 1; }
done

# The stage-crossing activations pipeline by microbatches (interpreter).
for model in ppffn_sharktank pp_chain; do
  "$ppcc" run "$src/testdata/models/$model.json" --random-weights 3 --check --microbatches 2 --backend=interp \
    > "$tmp/log" 2>&1 || { cat "$tmp/log"; echo "run_placement: $model --microbatches 2 failed" >&2; exit 1; }
done

# A count-1 value may do what an unsharded one may: replicate, reshard_split
# and transfer onto several devices (all three backends' collectives treat
# one shard as a whole value).
cat > "$tmp/count1.json" <<'JSON'
{"ppcc": 1, "name": "count1_create", "devices": 4,
 "params": [{"name": "w", "dtype": "f32", "shape": [16, 8], "shard": {"kind": "split", "dim": 1, "count": 2}, "devices": [2, 3]}],
 "inputs": [{"name": "x", "dtype": "f32", "shape": [4, 16], "shard": {"kind": "split", "dim": 0, "count": 1}, "devices": [1]}],
 "ops": [{"op": "replicate", "in": ["x"], "out": ["xr"], "attrs": {"count": 2, "devices": [2, 3]}},
         {"op": "matmul", "in": ["xr", "w"], "out": ["h"]},
         {"op": "reshard_split", "in": ["x"], "out": ["xs"], "attrs": {"dim": 0, "count": 2, "devices": [0, 1]}},
         {"op": "gelu", "in": ["xs"], "out": ["g"]},
         {"op": "transfer", "in": ["x"], "out": ["xt"], "attrs": {"devices": [0, 3]}}],
 "outputs": ["h", "g", "xt"]}
JSON
check "$tmp/count1.json" count1_create
"$ppcc" compile "$tmp/count1.json" --emit=iree -o "$tmp/count1.iree.mlir"

for batch in 1 2; do
  for pp in 1 2; do
    "$gen_llama" --layers 2 --hidden 32 --heads 4 --kv-heads 2 --ffn 32 --vocab 64 --tp 1 --pp "$pp" \
      --seq 1 --start 8 --batch "$batch" -o "$tmp/decode.json"
    check "$tmp/decode.json" "gen_llama decode --tp 1 --pp $pp --batch $batch"
  done
done
# P11 v3: x must move to w's devices and be gathered: its shards move
# (384 B), then the all_gather runs on [2,3] (the gathered x was moved:
# 768 B); and replicate of a split weight (P5 v3, an all_gather) runs.
cat > "$tmp/move_gather.json" <<'JSON'
{"ppcc": 1, "name": "move_gather", "devices": 4,
 "params": [{"name": "w", "dtype": "f32", "shape": [8, 16], "shard": {"kind": "split", "dim": 0, "count": 2}, "devices": [2, 3]},
            {"name": "v", "dtype": "f32", "shape": [8, 6], "shard": {"kind": "split", "dim": 0, "count": 2}, "devices": [2, 3]}],
 "inputs": [{"name": "x", "dtype": "f32", "shape": [16, 6], "shard": {"kind": "split", "dim": 1, "count": 2}, "devices": [0, 1]}],
 "ops": [{"op": "matmul", "in": ["w", "x"], "out": ["y"]}, {"op": "replicate", "in": ["v"], "out": ["v_all"]},
         {"op": "replicate", "in": ["y"], "out": ["y_all"]}, {"op": "add", "in": ["y_all", "v_all"], "out": ["z"]}],
 "outputs": ["z"]}
JSON
check "$tmp/move_gather.json" "move then gather on the destination"
"$ppcc" report "$tmp/move_gather.json" > "$tmp/r.txt"
grep -q "^transfers: 1, 384 B" "$tmp/r.txt" || { cat "$tmp/r.txt"; echo "run_placement: x@gathered moved instead of x's shards" >&2; exit 1; }
grep -Eq "^ +[0-9]+  all_gather\*  x@gathered  replicated\(2\)  +\[2,3\]" "$tmp/r.txt" ||
  { cat "$tmp/r.txt"; echo "run_placement: x not gathered on [2,3]" >&2; exit 1; }
grep -Eq "^ +[0-9]+  replicate  +v_all .*\[2,3\]  +no" "$tmp/r.txt" ||
  { cat "$tmp/r.txt"; echo "run_placement: replicate of split v is pinned" >&2; exit 1; }
echo "run_placement: sharktank-style models and TP=1 decode graphs pass --check on jit and interp"
