#!/usr/bin/env bash
# Each rank holds only its own weights: a 4-stage model with 64 MiB of
# params (16 MiB per stage) run on 4 ranks from a mapped .safetensors file;
# every rank's peak RSS above the same run of a tiny model (the process's
# own footprint: libraries, MPI, buffers) must stay within its 16 MiB share
# + 20% (+2 MiB for activations and noise): it never holds other ranks'
# params, nor its own twice (file pages are released while shards are cut).
source "$(dirname "$0")/common.sh"

# zeros.npy SHAPE0 SHAPE1 FILE: a float32 .npy of zeros (header padded to 64).
zeros_npy() {
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': ($1, $2), }"
  local total=$(((10 + ${#header} + 1 + 63) / 64 * 64))
  header=$(printf "%-$((total - 11))s" "$header")
  { printf '\x93NUMPY\x01\x00'"\\x$(printf %02x $((total - 10)))"'\x00%s\n' "$header"; head -c $(($1 * $2 * 4)) /dev/zero; } > "$3"
}

# peak_rss HIDDEN FFN: prints "rank params_mib rss_mib" for each rank.
peak_rss() {
  "$tools/gen_pipeline" --blocks 8 --tp 1 --pp 4 --hidden "$1" --ffn "$2" --batch 8 -o "$tmp/m$1.json"
  "$tools/gen_safetensors" "$tmp/m$1.json" 1 "$tmp/w$1.safetensors" > /dev/null
  zeros_npy 8 "$1" "$tmp/x$1.npy"
  mpirun 4 "$tmp/m$1.json" --backend=interp --weights "$tmp/w$1.safetensors" --input "x=$tmp/x$1.npy" > "$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; fail "run with hidden $1 failed"; }
  sed -n 's/^rank \([0-9]*\): params \([0-9.]*\) MiB, peak RSS \([0-9.]*\) MiB$/\1 \2 \3/p' "$tmp/log"
}

peak_rss 64 256 > "$tmp/tiny"
peak_rss 512 2048 > "$tmp/big"
[[ $(wc -l < "$tmp/big") -eq 4 && $(wc -l < "$tmp/tiny") -eq 4 ]] || fail "no per-rank memory lines"
paste "$tmp/big" "$tmp/tiny" | while read -r rank params rss _ _ base; do
  awk -v r="$rank" -v p="$params" -v rss="$rss" -v base="$base" 'BEGIN {
    extra = rss - base
    printf "rank %d: share %.1f MiB of 64 MiB, peak RSS %.1f MiB = footprint %.1f + %.1f MiB (%.2fx share)\n", r, p, rss, base, extra, extra / p
    if (p < 15.9 || p > 16.1) { print "expected a 16 MiB share"; exit 1 }
    if (extra > 1.2 * p + 2) { print "more than the share + 20% (+2 MiB of activations and noise)"; exit 1 }
  }' || fail "rank $rank"
done
