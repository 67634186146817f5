#!/usr/bin/env bash
# --devices-spec and per-stage TP sizes (issue 17): bad spec files are
# refused with one diagnostic and no output; a faster device's stage gets
# more blocks, a smaller memory fewer; a gen_llama model split over stage
# TP sizes 4,1,2,1 runs and matches the unsharded reference (--check) on
# the interpreter and, when built, the JIT.
# Usage: devices_spec.sh PPCC_BINARY SOURCE_DIR
set -uo pipefail
ppcc=$1
src=$2
gen=$(dirname "$ppcc")/gen_llama
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "devices_spec: FAIL: $*"; fail=1; }

[[ -x $gen ]] || { echo "devices_spec: no gen_llama next to $ppcc" >&2; exit 1; }
"$gen" --layers 6 --kv-heads 4 --tp 1 --pp 2 --placement none -o "$tmp/l6.json" || exit 1
"$gen" --layers 8 --kv-heads 4 --tp 1 --pp 8 --placement none -o "$tmp/l8.json" || exit 1

# ---- bad spec files: exit 1, one line naming the file, no report ----
while IFS=$'\t' read -r file want; do
  [[ -z $file || $file == \#* ]] && continue
  spec=$src/testdata/bad_devices_spec/$file
  "$ppcc" compile "$tmp/l6.json" --pp 2 --devices-spec "$spec" --report "$tmp/r.txt" 2>"$tmp/err" >/dev/null
  rc=$?
  lines=$(wc -l <"$tmp/err")
  [[ $rc -eq 1 ]] || bad "$file: exit $rc, want 1"
  # one error line; a placement error may add its --why chain and fixes
  # as indented note:/fix: lines (issue 17), nothing else
  [[ $lines -ge 1 ]] && ! tail -n +2 "$tmp/err" | grep -qvE '^  (note|fix): ' ||
    bad "$file: want one error line (then only note:/fix: lines): $(cat "$tmp/err")"
  grep -qF -- "$file" "$tmp/err" || bad "$file: the diagnostic does not name the file: $(cat "$tmp/err")"
  grep -qF -- "error: " "$tmp/err" || bad "$file: no 'error: ' in $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || bad "$file: want '$want', got: $(cat "$tmp/err")"
  [[ ! -e $tmp/r.txt ]] || { bad "$file: a report was written"; rm -f "$tmp/r.txt"; }
done <"$src/testdata/bad_devices_spec/expected.tsv"
"$ppcc" import onnx "$src/testdata/onnx/mlp.onnx" -o "$tmp/m.json" --devices-spec "$src/testdata/devices_spec/fast_first.json" \
  >/dev/null 2>&1
[[ $? -eq 2 && ! -e $tmp/m.json ]] || bad "import --devices-spec without --pp/--tp is not a usage error"
# a placed model (no --pp/--tp): each device's params + peak activations
# (36864 bytes on device 2 of ppffn) must fit its spec memory (36863); the
# error line comes first, then (a placement error) its chain and fixes
"$ppcc" compile "$src/testdata/models/ppffn.json" --devices-spec "$src/testdata/devices_spec/ppffn_small.json" \
  --report "$tmp/r.txt" 2>"$tmp/err" >/dev/null
rc=$?
[[ $rc -eq 1 && ! -e $tmp/r.txt ]] &&
  head -n 1 "$tmp/err" | grep -q "ppffn.json: error: device 2 needs 36864 bytes (params 32768 + peak activations 4096), more than its memory 36863 (devices spec '.*ppffn_small.json')" &&
  ! tail -n +2 "$tmp/err" | grep -qv '^  \(note\|fix\): ' &&
  grep -q "^  fix: move block 2 " "$tmp/err" ||
  bad "placed model over its spec memory: exit $rc: $(cat "$tmp/err")"
# fewer entries than the placed model's 4 devices: one line, exit 1 (the
# missing devices went unchecked, exit 0)
"$ppcc" compile "$src/testdata/models/ppffn.json" --devices-spec "$src/testdata/devices_spec/fast_first.json" \
  --report "$tmp/r.txt" 2>"$tmp/err" >/dev/null
rc=$?
[[ $rc -eq 1 && ! -e $tmp/r.txt && $(wc -l <"$tmp/err") -eq 1 ]] &&
  grep -q "error: devices spec '.*fast_first.json' describes 2 devices, the placed model uses 4" "$tmp/err" ||
  bad "placed model with a 2-device spec: exit $rc: $(cat "$tmp/err")"
json=$("$ppcc" report "$src/testdata/models/ppffn.json" --devices-spec "$src/testdata/devices_spec/mixed8.json" \
       --format=json) || bad "placed model within its spec memory refused"
grep -q '{"device": 4, "memory": 536870912, "speed": 2, "stage": -1}' <<<"$json" ||
  bad "placed model: no devices_spec entry for device 4 in the JSON report"
# links between hosts: ppffn's devices 0,1 on host 0 and 2,3 on host 1,
# 1 MB/s + 1 ms: each of the two transfers into stage 1 and the gather of
# 'out' back to device 0 moves 1 KiB per microbatch (M = 2): 2.024 ms
links=$src/testdata/devices_spec/ppffn_links.json
text=$("$ppcc" report "$src/testdata/models/ppffn.json" --devices-spec "$links" --microbatches 2) ||
  bad "report with links refused"
[[ $(grep -cE '^ +(8|17) +[^ ]+ +[0-9] \([01]\) +[0-9] \([01]\) +1024 +2\.0240$' <<<"$text") -eq 3 ]] &&
  grep -qE '^  pipeline wall [0-9.]+ ms with links; unoverlapped' <<<"$text" ||
  bad "report with links: want 3 transfers of 1024 B in 2.0240 ms and the wall line: $text"
json=$("$ppcc" report "$src/testdata/models/ppffn.json" --devices-spec "$links" --format=json) ||
  bad "JSON report with links refused"
grep -q '{"op": 17, "from_device": 2, "to_device": 0, "from_host": 1, "to_host": 0, "bytes": 2048, "ms": 3.048}' \
  <<<"$json" && grep -q '"unoverlapped_ms": ' <<<"$json" || bad "JSON report with links: $json"
"$ppcc" report "$tmp/l8.json" --pp 3 --tp 4,1,2,1 >/dev/null 2>&1
[[ $? -eq 2 ]] || bad "--pp 3 with 4 stage TP sizes is not a usage error"
"$ppcc" report "$tmp/l8.json" --devices-spec "$tmp/missing.json" --pp 2 2>"$tmp/err" >/dev/null
[[ $? -eq 1 ]] && grep -q "missing.json: error: cannot read" "$tmp/err" || bad "a missing spec file: $(cat "$tmp/err")"

# ---- blocks per stage (each block has one blk.K.attn_in) ----
blocks() { # REPORT_ARGS... -> "b0 b1 ..."
  "$ppcc" report "$@" | awk '/^stage [0-9]+: devices/ { s = $2 + 0; n[s] += 0; if (s > m) m = s }
                             / blk\.[0-9]+\.attn_in / { n[s]++ }
                             END { for (i = 0; i <= m; i++) printf "%s%d", i ? " " : "", n[i] }'
}
read -r b0 b1 <<<"$(blocks "$tmp/l6.json" --pp 2)"
[[ $b0 -eq 3 && $b1 -eq 3 ]] || bad "uniform devices: blocks $b0,$b1, want 3,3"
read -r f0 f1 <<<"$(blocks "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/fast_first.json")"
# twice as fast: about twice the blocks (the embedding rides with stage 0)
((f0 >= 2 * f1 - 1 && f0 <= 2 * f1 + 1 && f0 + f1 == 6)) || bad "device 0 twice as fast: blocks $f0,$f1, want about 2:1"
read -r g0 g1 <<<"$(blocks "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/fast_second.json")"
((g1 >= 2 * g0 - 1 && g1 <= 2 * g0 + 1 && g0 + g1 == 6)) || bad "device 1 twice as fast: blocks $g0,$g1, want about 1:2"
read -r m0 m1 <<<"$(blocks "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/small_first.json")"
((m0 < b0 && m0 + m1 == 6)) || bad "device 0 with small memory: blocks $m0,$m1, want fewer than $b0 on stage 0"
mem0=$("$ppcc" report "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/small_first.json" |
       awk '/^auto-partition:/ { p = 1 } /slowest stage/ { p = 0 } p && $1 == "0" && $2 == "[0]" { gsub(/[()]/, "", $NF); print $NF }')
((mem0 > 0 && mem0 <= 450000)) || bad "stage 0 memory $mem0 over device 0's 450000 bytes"
json=$("$ppcc" report "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/fast_first.json" --format=json)
grep -q '"devices_spec": {"file": ".*fast_first.json", "devices": \[' <<<"$json" || bad "no devices_spec in the JSON report"
grep -q '{"device": 0, "memory": null, "speed": 2, "stage": 0}' <<<"$json" || bad "no device 0 in the JSON devices_spec"
text=$("$ppcc" report "$tmp/l6.json" --pp 2 --devices-spec "$src/testdata/devices_spec/fast_first.json")
grep -q '^  0       0      (unlimited)           2$' <<<"$text" || bad "no devices spec table in the text report"

# ---- stage TP sizes 4,1,2,1 over 8 devices ----
rep=$("$ppcc" report "$tmp/l8.json" --tp 4,1,2,1)
grep -q '^auto-partition: 4 stages of TP sizes 4,1,2,1' <<<"$rep" || bad "no mixed-TP summary line"
for d in 'stage 0: devices \[0,1,2,3\]' 'stage 1: devices \[4\]' 'stage 2: devices \[5,6\]' 'stage 3: devices \[7\]'; do
  grep -q "^$d" <<<"$rep" || bad "tp 4,1,2,1: no '$d'"
done
"$ppcc" compile "$tmp/l8.json" --tp 4,1,2,1 --devices-spec "$src/testdata/devices_spec/mixed8_last_tiny.json" \
  --report "$tmp/r.txt" 2>"$tmp/err" >/dev/null
rc=$?
[[ $rc -eq 1 && ! -e $tmp/r.txt ]] && grep -q "error: auto-partition: stage 3 (.*) needs [0-9]* bytes per device, more than device 7's memory 100" "$tmp/err" ||
  bad "tp 4,1,2,1 with device 7 of 100 bytes: exit $rc: $(cat "$tmp/err")"
backends="interp"
help=$("$ppcc" run --help) # (grep -q on a pipe would SIGPIPE ppcc under pipefail)
grep -q 'backend=jit|interp' <<<"$help" && backends="interp jit"
for spec in "" "--devices-spec $src/testdata/devices_spec/mixed8.json"; do
  for backend in $backends; do
    # shellcheck disable=SC2086 # spec is empty or two words
    out=$("$ppcc" run "$tmp/l8.json" --tp 4,1,2,1 $spec --check --random-weights 3 --backend=$backend 2>&1)
    rc=$?
    n_ok=$(grep -c '): ok$' <<<"$out")
    if [[ $rc -ne 0 || $n_ok -ne 18 ]] || grep -q 'FAIL\|mismatch' <<<"$out"; then
      bad "tp 4,1,2,1 $spec --backend=$backend: exit $rc, $n_ok of 18 outputs ok"
      echo "$out" | tail -20
    fi
  done
done
# ---- import onnx takes them too: gpt2 placed over TP sizes 2,1,1 with a
# spec matches onnxruntime's logits (testdata/onnx) ----
onnx=$src/testdata/onnx
if "$ppcc" import onnx "$onnx/gpt2.onnx" -o "$tmp/g.json" --weights-out "$tmp/g.safetensors" --shape input_ids=1,8 \
     >/dev/null 2>&1 &&
   "$ppcc" import onnx "$onnx/gpt2.onnx" -o "$tmp/gmix.json" --tp 2,1,1 --shape input_ids=1,8 \
     --devices-spec "$src/testdata/devices_spec/mixed8.json" >/dev/null 2>"$tmp/err"; then
  for backend in $backends; do
    out=$("$ppcc" run "$tmp/gmix.json" --weights "$tmp/g.safetensors" --input "input_ids=$onnx/gpt2.in.input_ids.npy" \
          --expect "logits=$onnx/gpt2.ref.logits.npy" --backend=$backend 2>&1)
    grep -q '^expect logits: .*: ok$' <<<"$out" || { bad "gpt2 imported at tp 2,1,1 ($backend)"; echo "$out" | tail -5; }
  done
else
  bad "import onnx --tp 2,1,1 --devices-spec failed: $(cat "$tmp/err")"
fi

# ---- the report's predicted device time follows the spec's speeds ----
printf '{"devices": [{"speed": 1}, {"speed": 1}, {"speed": 2}, {"speed": 2}]}\n' >"$tmp/speed.json"
compute_ms() { # DEVICE REPORT_ARGS...
  local dev=$1; shift
  "$ppcc" report "$@" --format=json | grep -o "{\"device\": $dev, \"peak_bytes\"[^}]*" |
    sed -n 's/.*"compute_ms": \([0-9.e+-]*\).*/\1/p'
}
base=$(compute_ms 2 "$src/testdata/models/ppffn.json")
fast=$(compute_ms 2 "$src/testdata/models/ppffn.json" --devices-spec "$tmp/speed.json")
slow0=$(compute_ms 0 "$src/testdata/models/ppffn.json" --devices-spec "$tmp/speed.json")
base0=$(compute_ms 0 "$src/testdata/models/ppffn.json")
awk -v b="$base" -v f="$fast" -v b0="$base0" -v s0="$slow0" \
  'BEGIN { exit !(b > 0 && f > 0 && (f * 2 - b) ^ 2 < (b * 1e-6) ^ 2 && s0 == b0) }' ||
  bad "predicted compute time does not follow the spec's speed: device 2 $base -> $fast ms at speed 2, device 0 $base0 -> $slow0 ms"

[[ $fail -eq 0 ]] && echo "devices_spec: bad specs refused; speed 2:1 -> blocks $f0:$f1, 1:2 -> $g0:$g1, small memory -> $m0:$m1 (uniform $b0:$b1); tp 4,1,2,1 checks on: $backends"
exit $fail
