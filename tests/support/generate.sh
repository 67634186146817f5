# Sourced by the `ppcc generate` tests (source "$src/tests/support/generate.sh"
# after setting $ppcc): pass/fail counters, check_error, and the backends
# to run. End the test with: echo "$pass passed, $fail failed"; [[ $fail -eq 0 ]]
pass=0
fail=0

check_error() { # expected-exit needle args...: one diagnostic, its first line holds needle
  local code=$1 needle=$2
  shift 2
  local err
  err=$("$ppcc" "$@" 2>&1 >/dev/null)
  local rc=$?
  if [[ $rc -eq $code && $(head -1 <<<"$err") == *"$needle"* ]]; then
    pass=$((pass + 1))
  else
    echo "FAIL ppcc $*: want exit $code and '$needle', got $rc: $err"
    fail=$((fail + 1))
  fi
}

# "interp jit" when this ppcc generates with the JIT (SOURCE and prompt
# options as arguments), else "interp".
generate_backends() {
  if "$ppcc" generate "$@" --max-new-tokens 1 --backend=jit >/dev/null 2>&1; then echo "interp jit"; else echo "interp"; fi
}
