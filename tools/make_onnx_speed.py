#!/usr/bin/env python3
"""Writes the two ONNX models of bench/bench_vs_onnxruntime.sh (onnx helper
API, random weights; no reference outputs, the bench only times them):
  mlp   x [8, 1024] -> 4 x (MatMul 1024x1024, Add bias, Relu)      (weights 16 MiB)
  bert  x [1, 128, 768] -> 4 BERT-base-sized encoder layers (12 heads,
        FFN 3072, biases, erf GELU, LayerNormalization, no mask)     (7.4 GFLOP)
    PYTHON tools/make_onnx_speed.py OUT_DIR   (needs numpy and onnx)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx_models as mm  # noqa: E402  (its Builder and layer pieces)


def mlp(out):
    b = mm.Builder("mlp_speed")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 1024]))
    x = "x"
    for i in range(4):
        x = b.op("Relu", [mm.linear(b, x, 1024, 1024, f"fc{i}")])
    b.nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    b.outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 1024]))
    onnx.save_model(b.model(17), os.path.join(out, "mlp.onnx"))


def bert(out):
    H, NH, D, S, F = 768, 12, 64, 128, 3072
    b = mm.Builder("bert_speed")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, H]))
    x = "x"
    for i in range(4):
        p = f"encoder.{i}"
        q = mm.heads(b, mm.linear(b, x, H, H, p + ".q"), NH, D)
        k = mm.heads(b, mm.linear(b, x, H, H, p + ".k"), NH, D)
        v = mm.heads(b, mm.linear(b, x, H, H, p + ".v"), NH, D)
        a = mm.merge_heads(b, mm.attention(b, q, k, v, D, None), H)
        x = mm.layer_norm(b, b.op("Add", [x, mm.linear(b, a, H, H, p + ".o")]), H, p + ".ln_attn")
        f = mm.linear(b, mm.erf_gelu(b, mm.linear(b, x, H, F, p + ".ffn.up")), F, H, p + ".ffn.down")
        x = mm.layer_norm(b, b.op("Add", [x, f]), H, p + ".ln_ffn")
    b.nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    b.outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, H]))
    onnx.save_model(b.model(17), os.path.join(out, "bert.onnx"))


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlp(out)
    bert(out)
    x = np.random.default_rng(0)
    np.save(os.path.join(out, "mlp.x.npy"), x.standard_normal((8, 1024)).astype(np.float32))
    np.save(os.path.join(out, "bert.x.npy"), x.standard_normal((1, 128, 768)).astype(np.float32))
