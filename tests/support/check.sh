# Sourced by the shell tests (source "$src/tests/support/check.sh"): a
# scratch folder $tmp removed on exit, and check, which records a failure
# in $fail and goes on, so one run lists every failure (end the test with
# `exit $fail`).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail=0
check() { # message, command...
  local what=$1
  shift
  if ! "$@"; then
    echo "FAIL: $what" >&2
    fail=1
  fi
}
fails() { ! "$@"; }
fails_cmp() { ! cmp -s "$@"; }
