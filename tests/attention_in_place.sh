#!/usr/bin/env bash
# Issue 23: attention reads the KV caches where they lie. The Llama graph
# (gen_llama, the importers' llama_graph.c) has no permute of a cache, of
# q or of attention's output: its attention ops are seq_major ([B, S, H,
# D] operands). The same graph rewritten to the old form (permutes to
# [B, H, S, D] around a plain attention) computes the same outputs, on a
# prefill through the tiles (S = 8), a short prefill (S = 3) and a decode
# step (S = 1), at TP1 and TP2 x PP2, on both backends: the same bytes
# with --deterministic, within 1e-5 without.
#   attention_in_place.sh PPCC SOURCE_DIR
set -u
ppcc=$1
gen=$(dirname "$ppcc")/gen_llama
[[ -x $gen ]] || { echo "attention_in_place: no gen_llama next to $ppcc" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
backends=interp
"$gen" --seq 1 --cache 4 -o "$tmp/probe.json" && "$ppcc" run "$tmp/probe.json" --backend=jit > /dev/null 2>&1 &&
  backends="interp jit"

# The old form of every seq_major attention line of model.json $1, to $2.
old_form() {
  python3 - "$1" "$2" << 'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
out = []
perm = {"perm": [0, 2, 1, 3]}
for line in open(src):
    s = line.strip()
    if '"op": "attention"' in s and '"seq_major": true' in s:
        op = json.loads(s.rstrip(","))
        q, k, v = op["in"][:3]
        o = op["out"][0]
        ind = line[: len(line) - len(line.lstrip())]
        for x in (q, k, v):
            out.append(ind + json.dumps({"op": "permute", "in": [x], "out": [x + ".old_t"], "attrs": perm}) + ",\n")
        attrs = {a: b for a, b in op["attrs"].items() if a != "seq_major"}
        out.append(ind + json.dumps({"op": "attention", "in": [q + ".old_t", k + ".old_t", v + ".old_t"] + op["in"][3:],
                                     "out": [o + ".old_t"], "attrs": attrs}) + ",\n")
        out.append(ind + json.dumps({"op": "permute", "in": [o + ".old_t"], "out": [o], "attrs": perm})
                   + ("," if s.endswith(",") else "") + "\n")
    else:
        out.append(line)
open(dst, "w").writelines(out)
PY
}

# Every .npy of dirs $1 and $2 within tolerance $3 (0: the same bytes).
same_outputs() {
  python3 - "$1" "$2" "$3" << 'PY'
import os, struct, sys
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
def load(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<H", raw[8:10])[0]
    head = raw[10:10 + n].decode()
    body = raw[10 + n:]
    if "'<f4'" not in head:
        return head, body, None
    return head, body, struct.unpack("<%df" % (len(body) // 4), body)
names = sorted(os.listdir(a))
if names != sorted(os.listdir(b)) or not names:
    sys.exit("outputs differ: %s vs %s" % (names, sorted(os.listdir(b))))
for n in names:
    ha, ra, fa = load(os.path.join(a, n))
    hb, rb, fb = load(os.path.join(b, n))
    if ha != hb:
        sys.exit("%s: headers differ" % n)
    if tol == 0 or fa is None:
        if ra != rb:
            sys.exit("%s: bytes differ" % n)
        continue
    for i, (x, y) in enumerate(zip(fa, fb)):
        if not abs(x - y) <= tol * (1 + abs(y)):
            sys.exit("%s[%d]: %r vs %r" % (n, i, x, y))
PY
}

for shape in "--seq 8 --cache 12" "--seq 3 --cache 9 --start 2" "--seq 1 --cache 12 --start 7"; do
  for par in "--tp 1 --pp 1" "--tp 2 --pp 2"; do
    # GQA (8 query over 4 kv heads, split over TP) and MQA (copied kv head)
    for heads in "--heads 8 --kv-heads 4" "--heads 4 --kv-heads 1"; do
      what="$shape $par $heads"
      # shellcheck disable=SC2086
      "$gen" --layers 2 --hidden 64 --ffn 96 --vocab 128 $heads $shape $par -o "$tmp/new.json" || {
        echo "FAIL gen_llama $what"
        fail=$((fail + 1))
        continue
      }
      if python3 - "$tmp/new.json" << 'PY'
import json, sys
m = json.load(open(sys.argv[1]))
bad = [o for o in m["ops"] if o["op"] in ("permute", "transpose", "copy")
       or (o["op"] == "attention" and not o.get("attrs", {}).get("seq_major"))]
sys.exit(1 if bad or not any(o["op"] == "attention" for o in m["ops"]) else 0)
PY
      then :; else
        echo "FAIL $what: the graph permutes (or its attention is not seq_major)"
        fail=$((fail + 1))
      fi
      old_form "$tmp/new.json" "$tmp/old.json"
      for backend in $backends; do
        for det in "--deterministic:0" ":1e-5"; do
          for form in new old; do
            rm -rf "$tmp/out.$form"
            # shellcheck disable=SC2086
            "$ppcc" run "$tmp/$form.json" --random-weights 5 --threads 2 --backend=$backend ${det%%:*} \
              --output-dir "$tmp/out.$form" > "$tmp/log.$form" 2>&1 || {
              echo "FAIL run $form $what $backend ${det%%:*}"
              cat "$tmp/log.$form"
              fail=$((fail + 1))
            }
          done
          if msg=$(same_outputs "$tmp/out.new" "$tmp/out.old" "${det##*:}" 2>&1); then
            echo "ok $what $backend ${det%%:*}"
          else
            echo "FAIL $what $backend ${det%%:*}: in place vs permuted: $msg"
            fail=$((fail + 1))
          fi
        done
      done
    done
  done
done
[[ $fail -eq 0 ]] || { echo "$fail failure(s)"; exit 1; }
echo "attention_in_place: all passed"
