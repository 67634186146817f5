#!/usr/bin/env python3
"""Generates ONNX graphs of N nodes for bench/bench_onnx_import.sh: a chain
of blocks MatMul(64x64 weight) -> Add(bias) -> Relu -> Mul(scale), so the
importer sees initializers, weight matmuls and elementwise ops.
    build/venv-onnx/bin/python tools/make_onnx_bench.py OUT.onnx N"""
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
nodes, inits, x = [], [], "x"
for i in range(n):
    kind = i % 4
    y = f"v{i}"
    if kind == 0:
        w = f"w{i}"
        inits.append(numpy_helper.from_array((rng.standard_normal((64, 64)) * 0.1).astype(np.float32), w))
        nodes.append(helper.make_node("MatMul", [x, w], [y], name=f"n{i}"))
    elif kind == 1:
        b = f"b{i}"
        inits.append(numpy_helper.from_array(np.zeros(64, np.float32), b))
        nodes.append(helper.make_node("Add", [x, b], [y], name=f"n{i}"))
    elif kind == 2:
        nodes.append(helper.make_node("Relu", [x], [y], name=f"n{i}"))
    else:
        s = f"s{i}"
        inits.append(numpy_helper.from_array(np.array(0.5, np.float32), s))
        nodes.append(helper.make_node("Mul", [x, s], [y], name=f"n{i}"))
    x = y
g = helper.make_graph(nodes, f"chain{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 64])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(m, out)
print(f"{out}: {n} nodes")
