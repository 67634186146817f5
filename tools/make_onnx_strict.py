#!/usr/bin/env python3
"""Writes testdata/onnx/strict/: small ONNX models that are valid but easy
to misread (each must import to the function ONNX Runtime computes, with
ONNX Runtime's outputs as .npy references) and hostile ones the importer
must refuse (tests/onnx_strict.sh). Copies of the hostile ones are fuzz
seeds (testdata/fuzz/onnx/strict_*.onnx).

Run once by a developer (CI only reads the shipped files):
    python3 -m venv build/venv-onnx
    build/venv-onnx/bin/pip install onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4
    build/venv-onnx/bin/python tools/make_onnx_strict.py testdata/onnx/strict testdata/fuzz/onnx

Valid models (run with --expect):
  reduce_noop     ReduceSum with an empty axes tensor and
                  noop_with_empty_axes=1 is the identity; without axes it
                  sums everything (ONNX Runtime 1.20 fails a ReduceSum with
                  no axes operand and noop=1, so that form has no reference)
  reduce_noop18   the same with ReduceMean of opset 18
  input_override  a graph input that also has an initializer: the input
                  given at run time overrides the initializer
  negative_index  GatherElements and Gather (an embedding lookup) with
                  negative indices from inputs
  windows         Conv (groups, strides, asymmetric pads, dilations, bias,
                  SAME_UPPER/SAME_LOWER, 1-D), MaxPool (2-D with pads, 1-D
                  dilated), AveragePool counting padding, GlobalAveragePool,
                  a BatchNormalization on its own
  op_edges        the other ops' attribute edge cases (opset 18): Softmax
                  and Concat on negative/first axes, Transpose without perm,
                  Slice with negative starts/ends/axes, Gather by scalar and
                  negative indices, GatherElements with negative indices,
                  reduces with keepdims 0, several axes or none, Unsqueeze of
                  a negative axis, Flatten at 0 and -1, Reshape by 0 and -1,
                  Expand, LayerNormalization without bias, Gemm with and
                  without transB/bias, Split by num_outputs (uneven)
Hostile models (refused, one line, exit 1):
  float_transb    Gemm whose transB is a FLOAT
  concat_no_axis  Concat without its required axis
  split_dup       Split whose two results are both named y
  input_twice     two graph inputs named x
  nul_name        a node name holding a NUL byte
  escape_name     a node named with a terminal escape sequence (and no axis)
  reshape_rank10  Reshape to rank 10
  negative_dim    a graph input with dim -3
  huge_input      a graph input of 2^50 elements
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

rng = np.random.default_rng(20261203)


def model(nodes, inputs, outputs, inits=(), opset=13, name="strict"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save_valid(out, name, m, feeds):
    path = os.path.join(out, name + ".onnx")
    onnx.checker.check_model(m)
    onnx.save_model(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for o, r in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.save(os.path.join(out, f"{name}.ref.{o.name}.npy"), r)
    for k, v in feeds.items():
        np.save(os.path.join(out, f"{name}.in.{k}.npy"), v)


def valid_models(out):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    empty = numpy_helper.from_array(np.zeros((0,), np.int64), "no_axes")
    m = model([helper.make_node("ReduceSum", ["x", "no_axes"], ["y"], name="noop", noop_with_empty_axes=1),
               helper.make_node("ReduceSum", ["x"], ["z"], name="all", keepdims=1)],
              [f32("x", [3, 4])], [f32("y", [3, 4]), f32("z", [1, 1])], inits=[empty])
    save_valid(out, "reduce_noop", m, {"x": x})
    m = model([helper.make_node("ReduceMean", ["x", "no_axes"], ["y"], name="noop18", noop_with_empty_axes=1),
               helper.make_node("ReduceMean", ["x", "no_axes"], ["z"], name="all18", keepdims=0)],
              [f32("x", [3, 4])], [f32("y", [3, 4]), f32("z", [])], inits=[empty], opset=18)
    save_valid(out, "reduce_noop18", m, {"x": x})
    b_default = numpy_helper.from_array(np.full((4,), 100.0, np.float32), "b")
    m = model([helper.make_node("Add", ["x", "b"], ["y"], name="add_b")],
              [f32("x", [3, 4]), f32("b", [4])], [f32("y", [3, 4])], inits=[b_default])
    save_valid(out, "input_override", m, {"x": x, "b": rng.standard_normal(4).astype(np.float32)})
    table = numpy_helper.from_array(rng.standard_normal((5, 3)).astype(np.float32), "table")
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=1),
               helper.make_node("Gather", ["table", "j"], ["z"], name="lookup", axis=0)],
              [f32("x", [3, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [3, 2]),
               helper.make_tensor_value_info("j", TensorProto.INT64, [2, 2])], [f32("y", [3, 2]), f32("z", [2, 2, 3])],
              inits=[table])
    save_valid(out, "negative_index", m, {"x": x, "i": np.array([[-1, 0], [-4, 3], [2, -2]], np.int64),
                                          "j": np.array([[-1, 0], [-5, 4]], np.int64)})

    # convolution and pooling attribute edge cases against ONNX Runtime
    img = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    seq = rng.standard_normal((2, 3, 11)).astype(np.float32)
    f = lambda name, shape, scale=0.3: numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
    bn = [f("bn_scale", (4,)), f("bn_bias", (4,)), f("bn_mean", (4,)),
          numpy_helper.from_array((rng.random(4) + 0.5).astype(np.float32), "bn_var")]
    m = model([helper.make_node("Conv", ["img", "wg", "bg"], ["grouped"], name="grouped", group=2, strides=[2, 1],
                                pads=[1, 0, 2, 1], dilations=[1, 2]),
               helper.make_node("Conv", ["img", "ws"], ["same"], name="same", auto_pad="SAME_UPPER", strides=[2, 2]),
               helper.make_node("Conv", ["img", "ws"], ["same_lower"], name="same_lower", auto_pad="SAME_LOWER",
                                strides=[2, 3]),
               helper.make_node("Conv", ["seq", "w1"], ["conv1d"], name="conv1d", pads=[2, 1], dilations=[2]),
               helper.make_node("MaxPool", ["img"], ["maxpool"], name="maxpool", kernel_shape=[3, 2], strides=[2, 2],
                                pads=[1, 1, 1, 0]),
               helper.make_node("MaxPool", ["seq"], ["maxpool1d"], name="maxpool1d", kernel_shape=[3], dilations=[2]),
               helper.make_node("AveragePool", ["img"], ["avgpool"], name="avgpool", kernel_shape=[2, 3],
                                pads=[1, 1, 0, 1], count_include_pad=1),
               helper.make_node("GlobalAveragePool", ["img"], ["gap"], name="gap"),
               helper.make_node("BatchNormalization", ["img", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"],
                                name="bn", epsilon=1e-3)],
              [f32("img", [2, 4, 9, 8]), f32("seq", [2, 3, 11])],
              [f32(n, list("nchw")) for n in ("grouped", "same", "same_lower", "maxpool", "avgpool", "gap", "bn")] +
              [f32(n, list("ncw")) for n in ("conv1d", "maxpool1d")],
              inits=[f("wg", (6, 2, 3, 2)), f("bg", (6,)), f("ws", (5, 4, 3, 3)), f("w1", (2, 3, 3))] + bn)
    save_valid(out, "windows", m, {"img": img, "seq": seq})
    # the other ops' attribute edge cases on computed tensors
    t = rng.standard_normal((2, 3, 4)).astype(np.float32)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    cases = [
        ("softmax0", helper.make_node("Softmax", ["t"], ["softmax0"], axis=0), [2, 3, 4]),
        ("softmax1", helper.make_node("Softmax", ["t"], ["softmax1"], axis=-2), [2, 3, 4]),
        ("transpose", helper.make_node("Transpose", ["t"], ["transpose"]), [4, 3, 2]),
        ("concat", helper.make_node("Concat", ["t", "t"], ["concat"], axis=-1), [2, 3, 8]),
        ("slice", helper.make_node("Slice", ["t", "sl_s", "sl_e", "sl_a"], ["slice"]), [2, 2, 3]),
        ("gather1", helper.make_node("Gather", ["t", "g_i"], ["gather1"], axis=1), [2, 4]),
        ("gather_neg", helper.make_node("Gather", ["t", "g_n"], ["gather_neg"], axis=-1), [2, 3, 1]),
        ("ge0", helper.make_node("GatherElements", ["t", "ge_i"], ["ge0"], axis=0), [1, 3, 4]),
        ("mean_k0", helper.make_node("ReduceMean", ["t", "ax_last"], ["mean_k0"], keepdims=0), [2, 3]),
        ("sum_axes", helper.make_node("ReduceSum", ["t", "ax_02"], ["sum_axes"], keepdims=1), [1, 3, 1]),
        ("max_all", helper.make_node("ReduceMax", ["t"], ["max_all"], keepdims=0), []),
        ("unsqueeze", helper.make_node("Unsqueeze", ["t", "ax_neg"], ["unsqueeze"]), [2, 3, 4, 1]),
        ("flatten0", helper.make_node("Flatten", ["t"], ["flatten0"], axis=0), [1, 24]),
        ("flatten2", helper.make_node("Flatten", ["t"], ["flatten2"], axis=-1), [6, 4]),
        ("reshape", helper.make_node("Reshape", ["t", "rs"], ["reshape"]), [2, 12]),
        ("expand", helper.make_node("Expand", ["t", "ex"], ["expand"]), [2, 2, 3, 4]),
        ("layernorm", helper.make_node("LayerNormalization", ["t", "ln_w"], ["layernorm"], epsilon=1e-3), [2, 3, 4]),
        ("gemm", helper.make_node("Gemm", ["m", "gw", "gb"], ["gemm"], transB=1), [3, 5]),
        ("gemm_nob", helper.make_node("Gemm", ["m", "gw2"], ["gemm_nob"]), [3, 5]),
    ]
    split = helper.make_node("Split", ["t"], ["split_a", "split_b"], axis=1, num_outputs=2)
    inits = [i64("sl_s", [1, -3]), i64("sl_e", [100, -1]), i64("sl_a", [-1, 1]), i64("g_i", 2), i64("g_n", [-1]),
             i64("ge_i", [[[1, 0, -1, -2], [0, 1, 1, 0], [-1, -1, 0, 1]]]), i64("ax_last", [-1]), i64("ax_02", [0, 2]),
             i64("ax_neg", [-1]), i64("rs", [0, -1]), i64("ex", [2, 1, 1, 1]),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "ln_w"),
             numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "gw"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "gb"),
             numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "gw2")]
    nodes = [split] + [n for _, n, _ in cases]
    for n in nodes:
        n.name = n.output[0]
    outputs = [f32(name, shape) for name, _, shape in cases] + [f32("split_a", [2, 2, 4]), f32("split_b", [2, 1, 4])]
    m = model(nodes, [f32("t", [2, 3, 4]), f32("m", [3, 4])], outputs, inits=inits, opset=18)
    save_valid(out, "op_edges", m, {"t": t, "m": rng.standard_normal((3, 4)).astype(np.float32)})


def hostile_models(out):
    w = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w")
    gemm = helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm0")
    gemm.attribute.append(helper.make_attribute("transB", 1.0))
    cases = {
        "float_transb": model([gemm], [f32("x", [3, 4])], [f32("y", [3, 8])], inits=[w]),
        "concat_no_axis": model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat0")],
                                [f32("x", [3, 4])], [f32("y", [6, 4])]),
        "split_dup": model([helper.make_node("Split", ["x"], ["y", "y"], name="split0", axis=0)],
                           [f32("x", [4, 4])], [f32("y", [2, 4])]),
        "input_twice": model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                             [f32("x", [3, 4]), f32("x", [3, 4])], [f32("y", [3, 4])]),
        "nul_name": model([helper.make_node("Relu", ["x"], ["y"], name="re\0lu")],
                          [f32("x", [3, 4])], [f32("y", [3, 4])]),
        "escape_name": model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat\x1b[2J\x1b[31m")],
                             [f32("x", [3, 4])], [f32("y", [6, 4])]),
        "reshape_rank10": model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape0")],
                                [f32("x", [1, 4])], [f32("y", [1] * 9 + [4])],
                                inits=[numpy_helper.from_array(np.array([1] * 9 + [4], np.int64), "s")]),
        "negative_dim": model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                              [f32("x", [-3, 4])], [f32("y", [3, 4])]),
        "huge_input": model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                            [f32("x", [1 << 25, 1 << 25])], [f32("y", [1 << 25, 1 << 25])]),
    }
    return {k: v.SerializeToString() for k, v in cases.items()}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/onnx/strict"
    seeds = sys.argv[2] if len(sys.argv) > 2 else "testdata/fuzz/onnx"
    os.makedirs(out, exist_ok=True)
    valid_models(out)
    for name, data in hostile_models(out).items():
        for path in (os.path.join(out, name + ".onnx"), os.path.join(seeds, "strict_" + name + ".onnx")):
            with open(path, "wb") as f:
                f.write(data)
    print(f"wrote {out} and fuzz seeds in {seeds}")


if __name__ == "__main__":
    main()
