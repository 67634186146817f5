#!/usr/bin/env bash
# MPI backend benchmark (not a test; figures for the notes). Paired runs
# A,B,A,B (min and median of each side):
#   1. memory: per-rank peak RSS of a 4-stage model whose params are 4x one
#      rank's share (mapped .safetensors), -n 4 vs the single process;
#   2. transfers: one-way latency and bandwidth at 4 KiB and 4 MiB, the MPI
#      runtime (2 ranks) vs the threaded runtime's in-process copy;
#   3. end to end: a 4-stage pipeline with --microbatches 8, -n 2 vs one
#      process (both with the interpreter, which MPI runs use).
# Usage: bench/bench_mpi.sh BUILD_DIR [PAIRS]   (needs mpiexec and python3)
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# stats "v1 v2 ...": "min X median Y"
stats() { tr ' ' '\n' <<< "$1" | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {printf "min %8.2f median %8.2f", v[1], v[int((NR+1)/2)]}'; }
# peak RSS (MiB) of a command and its children, measured by python's getrusage
peak_mib() { python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)' "$@"; }
npy_zeros() { python3 -c 'import struct, sys
rows, cols = int(sys.argv[1]), int(sys.argv[2])
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (%d, %d), }" % (rows, cols)
h += " " * ((64 - (11 + len(h)) % 64) % 64) + "\n"
open(sys.argv[3], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + bytes(4 * rows * cols))' "$@"; }

echo "== 1. memory: 4 stages x 64 MiB of params (256 MiB), mapped .safetensors"
"$build/gen_pipeline" --blocks 16 --tp 1 --pp 4 --hidden 1024 --ffn 2048 --batch 8 -o "$tmp/m.json"
"$build/gen_safetensors" "$tmp/m.json" 1 "$tmp/w.safetensors" > /dev/null
"$build/gen_pipeline" --blocks 16 --tp 1 --pp 4 --hidden 64 --ffn 128 --batch 8 -o "$tmp/tiny.json"
"$build/gen_safetensors" "$tmp/tiny.json" 1 "$tmp/tiny.safetensors" > /dev/null
npy_zeros 8 1024 "$tmp/x.npy"
npy_zeros 8 64 "$tmp/xt.npy"
run=(run --backend=interp)
single="" ranks="" base_single="" base_ranks=""
for ((p = 0; p < pairs; p++)); do
  single+=" $(peak_mib "$build/ppcc" "${run[@]}" "$tmp/m.json" --weights "$tmp/w.safetensors" --input "x=$tmp/x.npy")"
  mpiexec -n 4 "$build/ppcc" "${run[@]}" "$tmp/m.json" --weights "$tmp/w.safetensors" --input "x=$tmp/x.npy" > "$tmp/log"
  ranks+=" $(sed -n 's/^rank .*peak RSS \([0-9.]*\) MiB$/\1/p' "$tmp/log" | sort -g | tail -1)"
  base_single+=" $(peak_mib "$build/ppcc" "${run[@]}" "$tmp/tiny.json" --weights "$tmp/tiny.safetensors" --input "x=$tmp/xt.npy")"
  mpiexec -n 4 "$build/ppcc" "${run[@]}" "$tmp/tiny.json" --weights "$tmp/tiny.safetensors" --input "x=$tmp/xt.npy" > "$tmp/logt"
  base_ranks+=" $(sed -n 's/^rank .*peak RSS \([0-9.]*\) MiB$/\1/p' "$tmp/logt" | sort -g | tail -1)"
done
grep '^rank' "$tmp/log"
echo "single process peak RSS (MiB):       $(stats "$single")   (same run, 24 KiB of params: $(stats "$base_single"))"
echo "largest rank of -n 4 peak RSS (MiB): $(stats "$ranks")   (same run, 24 KiB of params: $(stats "$base_ranks"))"

echo "== 2. transfers: ping-pong device 0 <-> device 1 (one-way time)"
for ((p = 0; p < pairs; p++)); do
  "$build/bench_mpi_comm"
  mpiexec -n 2 "$build/bench_mpi_comm"
done | sort -s -k1,1 -k2,2n

echo "== 3. end to end: 4-stage pipeline (16 blocks, hidden 512, ffn 2048, batch 64), --microbatches 8"
"$build/gen_pipeline" --blocks 16 --tp 1 --pp 4 --hidden 512 --ffn 2048 --batch 64 -o "$tmp/p.json"
one="" two="" one_wall="" two_wall=""
for ((p = 0; p < pairs; p++)); do
  s=$(date +%s.%N)
  "$build/ppcc" "${run[@]}" --threads 2 "$tmp/p.json" --random-weights 1 --microbatches 8 > "$tmp/log1"
  one_wall+=" $(echo "($(date +%s.%N) - $s) * 1000" | bc)"
  one+=" $(sed -n "s/^ran .* in \([0-9.]*\) ms$/\1/p" "$tmp/log1")"
  s=$(date +%s.%N)
  mpiexec -n 2 "$build/ppcc" "${run[@]}" --threads 1 "$tmp/p.json" --random-weights 1 --microbatches 8 > "$tmp/log2"
  two_wall+=" $(echo "($(date +%s.%N) - $s) * 1000" | bc)"
  two+=" $(sed -n "s/^ran .* in \([0-9.]*\) ms$/\1/p" "$tmp/log2")"
done
echo "one process: pipeline $(stats "$one") ms; whole command $(stats "$one_wall") ms"
echo "-n 2:        pipeline $(stats "$two") ms; whole command $(stats "$two_wall") ms"
grep -E "bubble" "$tmp/log1" | sed 's/^/  one process /'
grep -E "bubble" "$tmp/log2" | sed 's/^/  -n 2        /'
