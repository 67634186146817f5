#!/usr/bin/env bash
# `ppcc run --check` down to the first divergent value (issue 17 item 4).
# Faults are injected with the test-only switch PPCC_TEST_INJECT
# (include/ppcc/test_inject.h) into mid-graph values of a Llama with
# --tp 2 --pp 2 (tools/gen_llama) and of tp_ffn; the notes after the failing
# output must name exactly that value, its op and its shard, on both
# backends (the JIT when this ppcc has it), never an output. Correct models
# print no divergence and pass.
#   run_divergence.sh PPCC SOURCE_DIR
set -u
ppcc=$1
src=$2
gen_llama=$(dirname "$ppcc")/gen_llama
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pass=0

if [[ ! -x $gen_llama ]]; then
  echo "FAIL: $gen_llama is missing (build the gen_llama target)"
  exit 1
fi
"$gen_llama" --tp 2 --pp 2 -o "$tmp/llama.json" || { echo "FAIL: gen_llama"; exit 1; }
llama=$tmp/llama.json
tp_ffn=$src/testdata/models/tp_ffn.json

backends="interp"
"$ppcc" run --help | grep -q 'backend=jit|interp' && "$ppcc" run "$tp_ffn" --backend=jit >/dev/null 2>&1 &&
  backends="interp jit"
label() { [[ $1 == jit ]] && echo jit || echo interpreter; }

# run NAME INJECT MODEL BACKEND: the run's stderr in $tmp/err, its status in rc
run() {
  PPCC_TEST_INJECT=$2 "$ppcc" run "$3" --check --backend="$4" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# expect NAME PATTERN...: every fixed-string PATTERN is in the run's stderr
expect() {
  local name=$1 ok=1
  shift
  [[ $rc -ne 0 ]] || { echo "FAIL $name: exit status 0 with a fault injected"; ok=0; }
  for pat in "$@"; do
    grep -qF -- "$pat" "$tmp/err" || { echo "FAIL $name: no '$pat' in:"; cat "$tmp/err"; ok=0; break; }
  done
  if [[ $ok == 1 ]]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

for b in $backends; do
  l=$(label "$b")
  # correct models: --check passes and no divergence is reported
  for m in "$llama" "$tp_ffn"; do
    run "correct $b" "" "$m" "$b"
    if [[ $rc -eq 0 ]] && ! grep -q 'divergen' "$tmp/err" "$tmp/out"; then
      pass=$((pass + 1))
    else
      echo "FAIL correct $(basename "$m") on $b: status $rc"; cat "$tmp/err"; fail=$((fail + 1))
    fi
  done

  # a wrong sharding rule (partial sums declared replicated: the all_reduce
  # does nothing): named at the linear, not at the logits
  run rule "partial-as-replicated:blk.0.ffn_partial" "$llama" "$b"
  expect "wrong rule, llama, $b" "error: output 'logits' differs" \
    "note: first divergent value (program order, $l): 'blk.0.ffn_partial' shard 0 on device 0 (2 of its 2 shards differ)" \
    "op #22 of the compiled program: ops[22] 'linear' (-> 'blk.0.ffn_partial'), a compute op; operands 'blk.0.swiglu' split(dim=2, 2) on [0,1], 'blk.0.ffn_down.weight' split(dim=1, 2) on [0,1]; result 'blk.0.ffn_partial' replicated(2) on [0,1]" \
    "shard vs whole reference (replicated(2))" \
    "why:   rule: " "TEST-ONLY PPCC_TEST_INJECT: wrong sharding rule"
  run rule "partial-as-replicated:partial" "$tp_ffn" "$b"
  expect "wrong rule, tp_ffn, $b" "note: first divergent value (program order, $l): 'partial' shard 0 on device 0"

  # every shipped model: a wrong kernel on shard 0 of its first computed value
  for mv in explicit_transfer:h0 inserted_collectives:y pp_chain:stage.0.h ppffn:blk.0.h \
            ppffn_sharktank:blk.0.partial tiny_llama:embedded tp_ffn:h; do
    run kernel "wrong-kernel:${mv#*:}:0" "$src/testdata/models/${mv%%:*}.json" "$b"
    expect "wrong kernel, ${mv%%:*}, $b" "note: first divergent value (program order, $l): '${mv#*:}'"
  done

  # a wrong kernel on one shard of a split value (stage 1): that shard
  run kernel "wrong-kernel:blk.1.up:1" "$llama" "$b"
  expect "wrong kernel, split shard, $b" \
    "note: first divergent value (program order, $l): 'blk.1.up' shard 1 on device 3 (1 of its 2 shards differ)" \
    "ops[45] 'linear' (-> 'blk.1.up')" "shard vs its slice of the reference (split(dim=2, 2))" "got 1.90648, ref 0.953241"
  # ... on one replica of a replicated value: compared per shard
  run kernel "wrong-kernel:blk.0.mid:1" "$llama" "$b"
  expect "wrong kernel, replica, $b" \
    "note: first divergent value (program order, $l): 'blk.0.mid' shard 1 on device 1 (1 of its 2 shards differ)" \
    "ops[16] 'add' (-> 'blk.0.mid')"
  # ... on one partial sum: the sum of the shards is what is wrong
  run kernel "wrong-kernel:blk.0.attn_partial:1" "$llama" "$b"
  expect "wrong kernel, partial sum, $b" \
    "note: first divergent value (program order, $l): 'blk.0.attn_partial', the sum of its 2 partial-sum shards on [0,1]" \
    "sum of shards vs reference (unreduced(2))"
done

if [[ $backends == *jit* ]]; then
  # the JIT refusing to capture: the interpreter captures and says whether
  # it diverges too
  run jit-only "wrong-kernel-jit:blk.1.up:1,jit-no-capture" "$llama" jit
  expect "JIT-only fault" "the JIT cannot capture intermediate values" \
    "note: the divergence is JIT-only: output 'logits' differs on the JIT, but every value of the interpreter's sharded run matches the reference"
  run both "wrong-kernel:blk.1.up:1,jit-no-capture" "$llama" jit
  expect "fault on both, captured on the interpreter" \
    "note: first divergent value (program order, captured on the interpreter): 'blk.1.up' shard 1 on device 3" \
    "note: the interpreter diverges too"
  # the JIT-only fault leaves the interpreter's run correct
  run interp-unaffected "wrong-kernel-jit:blk.1.up:1" "$llama" interp
  if [[ $rc -eq 0 ]]; then pass=$((pass + 1)); else echo "FAIL: wrong-kernel-jit changed the interpreter"; fail=$((fail + 1)); fi
fi

echo "run_divergence: $pass passed, $fail failed (backends: $backends)"
[[ $fail -eq 0 ]]
