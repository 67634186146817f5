#!/usr/bin/env python3
"""Times ONNX Runtime's forward the way `ppcc run --repeat N` times ppcc's:
one warm-up run, then N runs; prints "forward (steady state, N runs): min
X ms, median Y ms". For bench/bench_vs_onnxruntime.sh.
    PYTHON tools/ort_time.py MODEL.onnx INPUT.npy N THREADS"""
import sys
import time

import numpy as np
import onnxruntime as ort

model, x, n, threads = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feed = {sess.get_inputs()[0].name: x}
sess.run(None, feed)
times = []
for _ in range(n):
    t0 = time.perf_counter()
    sess.run(None, feed)
    times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print(f"forward (steady state, {n} runs): min {times[0]:.3f} ms, median {times[n // 2]:.3f} ms")
