#!/usr/bin/env bash
# The JIT frees each buffer after its last reader (src/emit/exec/
# exec_dealloc.c), so what its compiled code allocates stays flat in model
# depth and its peak stays within the interpreter's: gen_llama at 2 and 8
# layers, each device's measured peak (ppcc run --check-plan: the argument
# shards plus the high-water mark of the compiled code's allocations, in
# bytes) on both backends. Were every buffer kept to the end of the device
# function, the compiled code's part would grow by six layers' activations
# (about 4x here). Bytes, not time.
# Usage: jit_memory_depth.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
bin=$(dirname "$ppcc")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "jit_memory_depth: $*" >&2; exit 1; }
help=$("$ppcc" run --help)
grep -q 'backend=jit|interp' <<<"$help" || { echo "jit_memory_depth: no JIT in this build: skipped"; exit 0; }
"$ppcc" run "$(dirname "$0")/../testdata/models/tp_ffn.json" --backend=jit > "$tmp/log" 2>&1 ||
  { grep -q "built without MLIR" "$tmp/log" && { echo "jit_memory_depth: no JIT: skipped"; exit 0; }; cat "$tmp/log"; fail "jit run failed"; }

# peak MODEL BACKEND: "dev bytes" per device, measured
peak() {
  "$ppcc" run "$1" --backend="$2" --check-plan --calibration=none --plan-memory-tolerance=100 --plan-time-tolerance=1e6 --threads 2 \
    > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$1 $2: run failed"; }
  awk '/predicted peak/{on=1; next} /stage  devices/{on=0} on && NF>=3 {print $1, $3}' "$tmp/log"
}
# args MODEL: "dev bytes" per device: the param, input and output shards it holds
args() {
  "$ppcc" report "$1" --format=json > "$tmp/r.json"
  python3 - "$1" "$tmp/r.json" <<'PY'
import json, sys
from math import prod
model, report = (json.load(open(p)) for p in sys.argv[1:3])
size = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "bool": 1}
vals = {v["name"]: v for v in report["values"]}
per = {}
for n in [v["name"] for v in model["params"] + model["inputs"]] + model["outputs"]:
    v = vals[n]
    b = prod(v["shape"]) * size[v["dtype"]]
    if v["shard"]["kind"] == "split":
        b //= v["shard"]["count"]
    for d in v["devices"][:v["shard"]["count"]]:
        per[d] = per.get(d, 0) + b
for d in sorted(per):
    print(d, per[d])
PY
}
for extra in "" "--tp 2"; do
  for L in 2 8; do
    # shellcheck disable=SC2086
    "$bin/gen_llama" --hidden 128 --heads 4 --kv-heads 2 --ffn 352 --vocab 512 --seq 32 --layers $L $extra \
      -o "$tmp/l$L.json" > /dev/null
    peak "$tmp/l$L.json" jit > "$tmp/jit$L"
    peak "$tmp/l$L.json" interp > "$tmp/interp$L"
    args "$tmp/l$L.json" > "$tmp/args$L"
  done
  python3 - "$tmp" "$extra" <<'PY' || fail "${extra:-1 device}: JIT memory grows with depth or exceeds the interpreter's"
import sys
tmp, extra = sys.argv[1], sys.argv[2] or "1 device"
def table(name):
    return {int(l.split()[0]): int(l.split()[1]) for l in open(f"{tmp}/{name}") if l.strip()}
for dev in sorted(table("jit2")):
    code = {L: table(f"jit{L}")[dev] - table(f"args{L}")[dev] for L in (2, 8)}
    for L in (2, 8):
        jit, interp = table(f"jit{L}")[dev], table(f"interp{L}")[dev]
        assert jit <= 1.05 * interp, f"{extra} dev {dev} L{L}: JIT peak {jit} B > interpreter's {interp} B + 5 %"
    assert 0 < code[2] and code[8] <= 1.10 * code[2], \
        f"{extra} dev {dev}: compiled code's high-water mark {code[2]} B at 2 layers, {code[8]} B at 8"
    print(f"jit_memory_depth: {extra} dev {dev}: compiled code {code[2]} B at 2 layers, {code[8]} B at 8; "
          f"peak JIT/interp {table('jit8')[dev]}/{table('interp8')[dev]} B at 8 layers")
PY
done
