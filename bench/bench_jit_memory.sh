#!/usr/bin/env bash
# JIT memory by model depth (issue 12: a liveness-planned arena per
# device). `ppcc run --check-plan` measures each device's peak on the JIT:
# the argument shards it holds for the run (params, inputs, output
# buffers) plus the high-water mark of what the compiled code allocates
# (src/runtime/jit/jit_arena.c). This prints, per depth, the measured peak,
# the arguments (from the model and `ppcc report`'s value shapes) and
# their difference: the compiled code's high-water mark, which should stay
# about flat in depth when buffers are freed after their last use (and
# grows by every layer's buffers when they are freed at the end). With a
# second build directory, the same for it (e.g. a build before a change).
# Deterministic (no timing): one run per model and build.
#
#   bench/bench_jit_memory.sh [BUILD_DIR [BASE_BUILD_DIR]]   (default: build)
#   env: LAYERS ("4 8 16 32")  hidden-256 gen_llama depths
#        EXTRA ("")            more gen_llama flags, e.g. "--tp 2" or "--pp 2"
#
# Models: gen_llama --hidden 256 --heads 8 --kv-heads 4 --ffn 704
# --vocab 4096 --seq 128 --layers L (as bench/bench_jit_compile.sh).
set -u
export PPCC_CALIBRATION_CACHE=0 # memory only: no calibration measured or cached
A=${1:-build}
B=${2:-}
LAYERS=${LAYERS:-"4 8 16 32"}
EXTRA=${EXTRA:-}
for d in "$A" $B; do
  [ -x "$d/ppcc" ] || { echo "bench_jit_memory: no $d/ppcc (build first)" >&2; exit 1; }
done
[ -x "$A/gen_llama" ] || { echo "bench_jit_memory: no $A/gen_llama" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# args MODEL REPORT_JSON: "dev bytes" per device: param, input and output
# shards (a split value's shard is its bytes / count; others whole).
args() {
  python3 - "$1" "$2" <<'PY'
import json, sys
from math import prod
model, report = (json.load(open(p)) for p in sys.argv[1:3])
size = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "bool": 1}
vals = {v["name"]: v for v in report["values"]}
names = [v["name"] for v in model["params"] + model["inputs"]] + model["outputs"]
per = {}
for n in names:
    v = vals[n]
    b = prod(v["shape"]) * size[v["dtype"]]
    cnt = v["shard"]["count"]
    if v["shard"]["kind"] == "split":
        b //= cnt
    for d in v["devices"][:cnt]:
        per[d] = per.get(d, 0) + b
for d in sorted(per):
    print(d, per[d])
PY
}

printf "%-6s %-5s %-4s %16s %16s %16s\n" layers build dev "measured (B)" "arguments (B)" "compiled code (B)"
for L in $LAYERS; do
  m="$TMP/llama$L.json"
  # shellcheck disable=SC2086
  "$A/gen_llama" --hidden 256 --heads 8 --kv-heads 4 --ffn 704 --vocab 4096 --seq 128 --layers "$L" $EXTRA -o "$m" >/dev/null ||
    { echo "bench_jit_memory: gen_llama failed" >&2; exit 1; }
  "$A/ppcc" report "$m" --format=json >"$TMP/r.json" || exit 1
  args "$m" "$TMP/r.json" >"$TMP/args"
  tag=new
  for d in "$A" $B; do
    out=$("$d/ppcc" run "$m" --backend=jit --check-plan --plan-memory-tolerance=100 --plan-time-tolerance=1e6 \
          --threads 2 2>&1) || { echo "$out" >&2; echo "bench_jit_memory: $d/ppcc run failed" >&2; exit 1; }
    awk '/predicted peak/{on=1; next} /stage  devices/{on=0} on && NF>=3 {print $1, $3}' <<<"$out" >"$TMP/meas"
    awk -v L="$L" -v tag="$tag" 'NR == FNR {arg[$1] = $2; next}
         {printf "%-6s %-5s %-4s %16d %16d %16d\n", L, tag, $1, $2, arg[$1], $2 - arg[$1]}' "$TMP/args" "$TMP/meas"
    tag=base
  done
done
