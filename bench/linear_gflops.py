#!/usr/bin/env python3
"""GFLOP/s of a model's own linear layers in a `ppcc run --trace` against
OpenBLAS sgemm (numpy's float32 matmul) at the same shapes and threads.

  linear_gflops.py MODEL.json TRACE.json

MODEL.json is the model as written (gen_llama); TRACE.json the Chrome trace
of an interpreter run (events carry the op's result name). Prints per shape
the traced GFLOP/s (best of the occurrences) and numpy's (best of 20), and
the total: sum of FLOPs / sum of traced time vs the same at numpy's speed.
Run with OPENBLAS_NUM_THREADS set to the kernel threads ppcc used.
"""
import json
import sys
import time

import numpy as np


def main():
    model = json.load(open(sys.argv[1]))
    trace = json.load(open(sys.argv[2]))
    shapes = {v["name"]: v["shape"] for v in model.get("params", []) + model.get("inputs", [])}
    linears = {}
    for op in model["ops"]:  # shapes of linear operands: x [..., K] . w[N, K]^T
        out = op["out"][0]
        if op["op"] == "linear" and op["in"][1] in shapes:
            linears[out] = (op["in"][0], shapes[op["in"][1]])
    # activation shapes: [B, S, K] for every linear in gen_llama models but the head
    per_shape = {}
    for e in trace["traceEvents"]:
        if e.get("name") != "linear" or e.get("ph") != "X":
            continue
        value = e["args"]["value"]
        if value not in linears:
            continue
        x, (n, k) = linears[value]
        b, s = model["inputs"][0]["shape"][:2]
        m = b if value.startswith("logits") else b * s
        per_shape.setdefault((m, n, k), []).append(e["dur"] * 1e-6)
    total_flops = total_t = total_ref = 0.0
    for (m, n, k), ts in sorted(per_shape.items()):
        flops = 2.0 * m * n * k
        a = np.random.rand(m, k).astype(np.float32)
        w = np.random.rand(n, k).astype(np.float32)
        best = 1e9
        for _ in range(20):
            t0 = time.perf_counter()
            a @ w.T
            best = min(best, time.perf_counter() - t0)
        print(f"linear M={m} N={n} K={k}: ppcc {flops / min(ts) / 1e9:7.1f} GFLOP/s (x{len(ts)}), "
              f"OpenBLAS via numpy {flops / best / 1e9:7.1f} GFLOP/s")
        total_flops += flops * len(ts)
        total_t += sum(ts)
        total_ref += best * len(ts)
    if total_t > 0:
        print(f"all linear layers: ppcc {total_flops / total_t / 1e9:.1f} GFLOP/s, OpenBLAS {total_flops / total_ref / 1e9:.1f}"
              f" GFLOP/s: {100 * total_ref / total_t:.0f} % of OpenBLAS")


if __name__ == "__main__":
    main()
