#!/usr/bin/env bash
# Placement errors with fixes (issue 17 item 3), on the broken models of
# testdata/fix/ (expected.tsv) and an auto-partition over --device-memory:
#   - the text error keeps its one line first, then the --why chain
#     ("  note:") and the fixes ("  fix:");
#   - --diagnostics=json is one JSON document on stderr with the error kind,
#     op, operands, chain and fixes as structured edits with their cost;
#   - `ppcc fix --pick=N` applies each proposed fix in turn; every result
#     compiles and passes `ppcc run --check` on both backends;
#   - a fix that only changes the command line is shown, not applied, and
#     `ppcc fix` then fails writing nothing.
# Usage: fix_models.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
dir=$src/testdata/fix
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "fix_models: $*" >&2; exit 1; }

# JSON field access without jq: python3's json module (Debian's python3).
json() { # FILE EXPR -> prints the value of EXPR over d (the parsed document)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

check_runs() { # MODEL LABEL [OPTIONS...]
  local model=$1 label=$2
  shift 2
  for backend in jit interp; do
    "$ppcc" run "$model" "$@" --random-weights 1 --check --backend="$backend" > "$tmp/run.log" 2>&1 ||
      { cat "$tmp/run.log"; fail "$label: run --check --backend=$backend failed"; }
    grep -q ": ok" "$tmp/run.log" || { cat "$tmp/run.log"; fail "$label --backend=$backend: no output checked"; }
    if grep -q "FAIL" "$tmp/run.log"; then cat "$tmp/run.log"; fail "$label --backend=$backend: check failed"; fi
  done
}

rows=0
while IFS=$'\t' read -r file kind first_fix first_edit spec; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  rows=$((rows + 1))
  model=$dir/$file
  # Optional 5th column: a devices spec (testdata/devices_spec/) every
  # command of the row gets, for errors that only it raises.
  opts=()
  [[ -n "${spec:-}" ]] && opts=(--devices-spec "$src/testdata/devices_spec/$spec")

  # Text: the error line first, then notes (the chain) and fixes.
  if "$ppcc" compile "$model" ${opts[@]+"${opts[@]}"} > /dev/null 2> "$tmp/text"; then fail "$file compiles; it should not"; fi
  head -n 1 "$tmp/text" | grep -q "^$model: error: " || { cat "$tmp/text"; fail "$file: first line is not the error"; }
  tail -n +2 "$tmp/text" | grep -qv '^  \(note\|fix\): ' && { cat "$tmp/text"; fail "$file: a line after the error is neither note nor fix"; }
  grep -q "^  note: '" "$tmp/text" || { cat "$tmp/text"; fail "$file: no --why chain"; }
  grep -qF "  fix: $first_fix" "$tmp/text" || { cat "$tmp/text"; fail "$file: first fix '$first_fix' missing"; }

  # JSON: one document on stderr, nothing else there.
  if "$ppcc" compile "$model" ${opts[@]+"${opts[@]}"} --diagnostics=json > /dev/null 2> "$tmp/diag.json"; then
    fail "$file compiles (json)"
  fi
  [[ "$(json "$tmp/diag.json" "d['errors'][0]['kind']")" == "$kind" ]] || { cat "$tmp/diag.json"; fail "$file: kind is not $kind"; }
  json "$tmp/diag.json" "d['errors'][0]['fixes'][0]['text']" | grep -qF "$first_fix" ||
    { cat "$tmp/diag.json"; fail "$file: JSON first fix is not '$first_fix'"; }
  [[ "$(json "$tmp/diag.json" "d['errors'][0]['fixes'][0]['edits'][-1]['edit']")" == "$first_edit" ]] ||
    { cat "$tmp/diag.json"; fail "$file: first fix's last edit is not $first_edit"; }
  [[ "$(json "$tmp/diag.json" "all(f['cost_bytes'] > 0 and f['result'] for f in d['errors'][0]['fixes'])")" == True ]] ||
    { cat "$tmp/diag.json"; fail "$file: a fix without cost or result"; }
  [[ "$(json "$tmp/diag.json" "len(d['errors'][0]['chain']) > 0 and isinstance(d['errors'][0]['op'], int)")" == True ]] ||
    { cat "$tmp/diag.json"; fail "$file: no chain or op index"; }
  n_fixes=$(json "$tmp/diag.json" "len(d['errors'][0]['fixes'])")
  (( n_fixes >= 1 && n_fixes <= 3 )) || fail "$file: $n_fixes fixes, want 1 to 3"

  # Every proposed fix, applied by `ppcc fix`, gives a model that runs right.
  for ((pick = 1; pick <= n_fixes; pick++)); do
    out=$tmp/fixed_${file%.json}_$pick.json
    "$ppcc" fix "$model" ${opts[@]+"${opts[@]}"} -o "$out" --pick="$pick" > "$tmp/fix.log" 2>&1 ||
      { cat "$tmp/fix.log"; fail "$file: ppcc fix --pick=$pick failed"; }
    grep -q "^applied: " "$tmp/fix.log" || { cat "$tmp/fix.log"; fail "$file: ppcc fix applied nothing"; }
    "$ppcc" compile "$out" ${opts[@]+"${opts[@]}"} > /dev/null 2> "$tmp/err" ||
      { cat "$tmp/err"; fail "$file: fixed model (pick $pick) does not compile"; }
    check_runs "$out" "$file fix $pick" ${opts[@]+"${opts[@]}"}
  done
done < "$dir/expected.tsv"
(( rows >= 10 )) || fail "only $rows models in $dir/expected.tsv"

# Two errors in one model: ppcc fix applies a fix to each in turn.
"$ppcc" fix "$dir/two_errors.json" -o "$tmp/two.json" > "$tmp/fix.log" 2>&1 || { cat "$tmp/fix.log"; fail "two_errors"; }
[[ $(grep -c "^applied: " "$tmp/fix.log") -eq 2 ]] || { cat "$tmp/fix.log"; fail "two_errors: want 2 fixes applied"; }

# Memory over --device-memory: fixes are command-line options, each checked.
auto=$src/testdata/auto/auto_ffn.json
opts=(--pp 2 --tp 1 --device-memory 300K)
if "$ppcc" compile "$auto" "${opts[@]}" > /dev/null 2> "$tmp/text"; then fail "auto_ffn fits 300K"; fi
grep -q "^  note: 'blk.2.ffn_up.weight' (param)" "$tmp/text" || { cat "$tmp/text"; fail "memory: no chain"; }
grep -q "^  fix: use --tp 2 " "$tmp/text" || { cat "$tmp/text"; fail "memory: no --tp fix"; }
"$ppcc" report "$auto" "${opts[@]}" --diagnostics=json > /dev/null 2> "$tmp/diag.json" && fail "report: auto_ffn fits 300K"
[[ "$(json "$tmp/diag.json" "d['errors'][0]['kind']")" == device_memory ]] || { cat "$tmp/diag.json"; fail "memory: kind"; }
n_fixes=$(json "$tmp/diag.json" "len(d['errors'][0]['fixes'])")
(( n_fixes == 3 )) || { cat "$tmp/diag.json"; fail "memory: $n_fixes fixes, want 3"; }
for ((i = 0; i < n_fixes; i++)); do
  option=$(json "$tmp/diag.json" "d['errors'][0]['fixes'][$i]['edits'][0]['option']")
  value=$(json "$tmp/diag.json" "d['errors'][0]['fixes'][$i]['edits'][0]['value']")
  peak=$(json "$tmp/diag.json" "d['errors'][0]['fixes'][$i]['cost_bytes']")
  fixed=(--pp 2 --tp 1 --device-memory 300K "--$option" "$value")
  "$ppcc" report "$auto" "${fixed[@]}" --format=json > "$tmp/report.json" ||
    fail "memory fix --$option $value does not compile"
  check_runs "$auto" "memory fix --$option $value" "${fixed[@]}"
  (( peak > 0 )) || fail "memory fix --$option: no peak"
done
# `ppcc fix` cannot put an option into the model: it fails, writing nothing.
if "$ppcc" fix "$auto" "${opts[@]}" -o "$tmp/auto_fixed.json" > "$tmp/fix.log" 2>&1; then fail "ppcc fix applied an option"; fi
[[ ! -e "$tmp/auto_fixed.json" ]] || fail "ppcc fix wrote a model it could not fix"
grep -q "changes the command line" "$tmp/fix.log" || { cat "$tmp/fix.log"; fail "ppcc fix: no reason given"; }

# run takes --diagnostics=json too.
if "$ppcc" run "$dir/no_pinned.json" --random-weights 1 --diagnostics=json > /dev/null 2> "$tmp/diag.json"; then
  fail "run: no_pinned ran"
fi
[[ "$(json "$tmp/diag.json" "d['errors'][0]['kind']")" == no_pinned_operand ]] || { cat "$tmp/diag.json"; fail "run: kind"; }

# A model that compiles is written back unchanged in meaning; a bad input
# that is not a placement error fails with its one line and no output.
"$ppcc" fix "$src/testdata/models/ppffn.json" -o "$tmp/same.json" > "$tmp/fix.log" || fail "fix of a good model failed"
grep -q "^0 fixes applied" "$tmp/fix.log" || { cat "$tmp/fix.log"; fail "fix of a good model applied something"; }
"$ppcc" report "$src/testdata/models/ppffn.json" > "$tmp/a.txt"
"$ppcc" report "$tmp/same.json" > "$tmp/b.txt"
diff "$tmp/a.txt" "$tmp/b.txt" > /dev/null || fail "fix changed a good model"
if "$ppcc" fix "$src/testdata/bad/cycle.json" -o "$tmp/cycle.json" 2> "$tmp/err"; then fail "fix of a cycle succeeded"; fi
[[ $(wc -l < "$tmp/err") -eq 1 && ! -e "$tmp/cycle.json" ]] || { cat "$tmp/err"; fail "fix of a cycle: not one line"; }
"$ppcc" compile "$src/testdata/bad/cycle.json" --diagnostics=json 2> "$tmp/diag.json" > /dev/null && fail "cycle compiled"
[[ "$(json "$tmp/diag.json" "d['errors'][0]['kind']")" == error ]] || { cat "$tmp/diag.json"; fail "cycle: kind"; }
echo "fix_models: $rows models, every fix checked on both backends"
