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
  op_matrix       every op ppcc imports x the attribute edge cases the two
                  above leave out (opset 18): unary kernels, Identity/Dropout,
                  binary broadcasts (both sides, 0-d, reversed), batched and
                  1-D MatMul, Gemm transA/alpha/beta/C shapes, default and
                  middle Softmax, LayerNormalization with bias, reduces with
                  negative/empty axes, keepdims 0, noop_with_empty_axes,
                  Reshape/Flatten/Squeeze/Unsqueeze/Transpose/Concat/Slice
                  (clamped and 2-axis)/Split (sizes, num_outputs) forms, Gather
                  and GatherElements with negative indices from an input,
                  Expand both ways, Where/Less/Equal/Cast, the fold-only ops
                  (Cos/Sin/Max/Min/Floor/Ceil/Abs/Trilu/Not/And/Or/Shape/
                  ConstantOfShape/Range) feeding a runtime op, depthwise,
                  1x1, VALID and BatchNormalization-folded Conv, pools with
                  default strides, SAME_UPPER and 1-D; `--matrix-only`
                  writes only these two
  op_matrix13     opset 13 forms: axes attributes of ReduceMean/ReduceMax,
                  axes inputs of ReduceSum/Squeeze/Unsqueeze, Split by sizes
  op_matrix26     the forms that issue 26's second round added (opset 18):
                  Gather from a computed tensor (constant vector and matrix
                  indices, indices from an input, a constant integer table),
                  Slice with steps (2, -1 reversing, -2 next to a step-1 axis,
                  clamped starts), MaxPool/AveragePool with ceil_mode (a
                  window past the end dropped), AveragePool over padding
                  with count_include_pad 0 and 1, LayerNormalization over
                  two and all axes, folds of f16 constants (Transpose, Neg,
                  Gather) that keep their values, Constant nodes of each
                  value attribute; `--matrix26-only` writes
                  only this one, ceil_past_end and range_huge
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
  ceil_past_end   MaxPool whose ceil_mode window would start past the input
                  (ONNX drops it, ONNX Runtime 1.20 gives -FLT_MAX)
  range_huge      a Range of 2^30 elements from three scalars
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


def save_cases(out, name, cases, inputs, inits, feeds):
    """One opset-18 graph of the cases ((output names, nodes) each), each
    node named after its first result, saved with ONNX Runtime's outputs."""
    nodes, outs = [], []
    for names, ns in cases:
        nodes += ns
        outs += names
    for n in nodes:
        n.name = "n_" + n.output[0]
    g = helper.make_graph(nodes, name, inputs, [helper.make_value_info(o, onnx.TypeProto()) for o in outs],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    fill_outputs(m)
    save_valid(out, name, m, feeds)


def matrix_models(out):
    """op_matrix (opset 18) and op_matrix13 (opset 13): every op ppcc
    imports x its attribute edge cases not already in op_edges/windows,
    one graph output per case, on tensors computed from the inputs (so the
    runtime's kernels run, not the import-time folding), plus the
    fold-only ops on constants feeding a runtime op."""
    r = np.random.default_rng(20261204)
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    mk = helper.make_node
    arr = lambda shape, lo=None: (r.standard_normal(shape) if lo is None else r.random(shape) + lo).astype(np.float32)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    fl = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)
    feeds = {"t": arr((2, 3, 4)), "p": arr((2, 3, 4), 0.5), "v": arr(4), "c": arr((3, 1)), "m": arr((3, 4)),
             "k": arr((4, 5)), "tk": arr((2, 4, 5)), "a": arr((4, 3)), "img": arr((1, 4, 7, 6)),
             "seq": arr((1, 2, 9)), "idx": np.array([[-1, 0], [2, -3]], np.int64)}
    inputs = [helper.make_tensor_value_info(n, I64 if n == "idx" else F, list(a.shape)) for n, a in feeds.items()]
    cases = []  # (output name, nodes ending in it)

    def case(name, *nodes, outs=None):
        cases.append((outs or [name], list(nodes)))
    # unary kernels, identity and inference-mode dropout
    for op, x in (("Relu", "t"), ("Tanh", "t"), ("Sigmoid", "t"), ("Exp", "t"), ("Neg", "t"), ("Sqrt", "p"),
                  ("Reciprocal", "p"), ("Erf", "t"), ("Log", "p")):
        case(op.lower(), mk(op, [x], [op.lower()]))
    case("identity", mk("Identity", ["t"], ["identity"]))
    case("dropout", mk("Dropout", ["t"], ["dropout"]))
    # binary ops over broadcast shapes (both sides, 0-d, 1-d, reversed)
    case("add_v", mk("Add", ["t", "v"], ["add_v"]))
    case("sub_c", mk("Sub", ["t", "c"], ["sub_c"]))
    case("mul_rev", mk("Mul", ["c", "t"], ["mul_rev"]))
    case("div_p", mk("Div", ["t", "p"], ["div_p"]))
    case("pow_tensor", mk("Pow", ["p", "t"], ["pow_tensor"]))
    case("add_scalar", mk("Add", ["t", "s0"], ["add_scalar"]))
    case("add_both", mk("Add", ["c", "v"], ["add_both"]))
    case("mul_vm", mk("Mul", ["v", "m"], ["mul_vm"]))
    # MatMul: batched by a 2-D weight, batched by batched, 1-D on either side
    case("matmul_b2", mk("MatMul", ["t", "k"], ["matmul_b2"]))
    case("matmul_bb", mk("MatMul", ["t", "tk"], ["matmul_bb"]))
    case("matmul_vec_l", mk("MatMul", ["v", "k"], ["matmul_vec_l"]))
    case("matmul_vec_r", mk("MatMul", ["m", "v"], ["matmul_vec_r"]))
    # Gemm: transA, alpha, beta, C of every broadcastable shape
    case("gemm_ta", mk("Gemm", ["a", "k", "gc5"], ["gemm_ta"], transA=1, alpha=0.5, beta=2.0))
    case("gemm_c31", mk("Gemm", ["m", "k", "gc31"], ["gemm_c31"], beta=-1.0))
    case("gemm_c0", mk("Gemm", ["m", "k", "gc0"], ["gemm_c0"], alpha=2.0))
    case("gemm_cfull", mk("Gemm", ["m", "kt", "gc35"], ["gemm_cfull"], transB=1, beta=0.5))
    case("gemm_tatb", mk("Gemm", ["a", "kt"], ["gemm_tatb"], transA=1, transB=1, alpha=-1.5))
    # Softmax default axis, LayerNormalization with bias and explicit axis
    case("softmax_def", mk("Softmax", ["t"], ["softmax_def"]))
    case("softmax_mid", mk("Softmax", ["t"], ["softmax_mid"], axis=1))
    case("layernorm_b", mk("LayerNormalization", ["t", "ln_w", "ln_b"], ["layernorm_b"], axis=-1))
    case("layernorm_2d", mk("LayerNormalization", ["m", "ln_w"], ["layernorm_2d"], axis=1, epsilon=0.5))
    # reductions (opset 18: axes as an input)
    case("sum_neg_k0", mk("ReduceSum", ["t", "ax_m1"], ["sum_neg_k0"], keepdims=0))
    case("sum_empty_all", mk("ReduceSum", ["t", "ax_none"], ["sum_empty_all"], keepdims=1))
    case("mean_0m1", mk("ReduceMean", ["t", "ax_0m1"], ["mean_0m1"]))
    case("mean_all_k0", mk("ReduceMean", ["t"], ["mean_all_k0"], keepdims=0))
    case("max_1_k0", mk("ReduceMax", ["t", "ax_1"], ["max_1_k0"], keepdims=0))
    case("max_noop", mk("ReduceMax", ["t", "ax_none"], ["max_noop"], noop_with_empty_axes=1))
    # shapes
    case("reshape_flat", mk("Reshape", ["t", "rs_flat"], ["reshape_flat"]))
    case("reshape_mid", mk("Reshape", ["t", "rs_mid"], ["reshape_mid"]))
    case("reshape_4d", mk("Reshape", ["t", "rs_4d"], ["reshape_4d"]))
    case("flatten_def", mk("Flatten", ["t"], ["flatten_def"]))
    case("squeeze_axes", mk("ReduceSum", ["t", "ax_1"], ["sq_in"], keepdims=1),
         mk("Squeeze", ["sq_in", "ax_1"], ["squeeze_axes"]))
    case("squeeze_all", mk("ReduceSum", ["t", "ax_02"], ["sq_in2"], keepdims=1), mk("Squeeze", ["sq_in2"], ["squeeze_all"]))
    case("unsqueeze2", mk("Unsqueeze", ["m", "ax_0m1"], ["unsqueeze2"]))
    case("transpose_102", mk("Transpose", ["t"], ["transpose_102"], perm=[1, 0, 2]))
    case("transpose_201", mk("Transpose", ["t"], ["transpose_201"], perm=[2, 0, 1]))
    case("concat0", mk("Concat", ["t", "p"], ["concat0"], axis=0))
    case("concat3", mk("Relu", ["m"], ["m2"]), mk("Concat", ["m", "m2", "m"], ["concat3"], axis=0))
    case("slice_clamp", mk("Slice", ["t", "sc_s", "sc_e"], ["slice_clamp"]))
    case("slice_2ax", mk("Slice", ["t", "s2_s", "s2_e", "s2_a", "s2_st"], ["slice_2ax"]))
    case("split_sizes", mk("Split", ["t", "sp_sizes"], ["split_sizes_a", "split_sizes_b"], axis=-1),
         outs=["split_sizes_a", "split_sizes_b"])
    case("split3", mk("Split", ["tk"], ["split3_a", "split3_b", "split3_c"], axis=2, num_outputs=3),
         outs=["split3_a", "split3_b", "split3_c"])
    # gathers with negative indices from an input
    case("gather_idx0", mk("Gather", ["table", "idx"], ["gather_idx0"], axis=0))
    case("gather_scalar", mk("Gather", ["t", "g_s"], ["gather_scalar"], axis=-1))
    case("ge_last", mk("GatherElements", ["m", "ge_i"], ["ge_last"], axis=-1))
    case("expand_c", mk("Expand", ["c", "ex_234"], ["expand_c"]))
    case("expand_lower", mk("Expand", ["t", "ex_4"], ["expand_lower"]))
    # comparisons, Where with three broadcast operands, Cast round trips
    case("where_bc", mk("Greater", ["t", "c"], ["gt_tc"]), mk("Where", ["gt_tc", "t", "v"], ["where_bc"]))
    case("less_f", mk("Less", ["t", "p"], ["lt_tp"]), mk("Cast", ["lt_tp"], ["less_f"], to=F))
    case("equal_i", mk("Equal", ["idx", "eq_c"], ["eq_ii"]), mk("Cast", ["eq_ii"], ["equal_i"], to=F))
    case("cast_i64", mk("Mul", ["t", "three"], ["t3"]), mk("Cast", ["t3"], ["t3i"], to=I64),
         mk("Cast", ["t3i"], ["cast_i64"], to=F))
    case("cast_f16", mk("Cast", ["t"], ["t16"], to=TensorProto.FLOAT16), mk("Cast", ["t16"], ["cast_f16"], to=F))
    # fold-only ops (constants at import, evaluated by ppcc's kernels) feeding a runtime op
    case("fold_trig", mk("Cos", ["cv"], ["cos_c"]), mk("Sin", ["cv"], ["sin_c"]), mk("Max", ["cos_c", "sin_c"], ["mx_c"]),
         mk("Add", ["t", "mx_c"], ["fold_trig"]))
    case("fold_round", mk("Floor", ["cv3"], ["fl_c"]), mk("Ceil", ["cv3"], ["ce_c"]), mk("Abs", ["fl_c"], ["ab_c"]),
         mk("Min", ["ab_c", "ce_c"], ["mn_c"]), mk("Mul", ["v", "mn_c"], ["fold_round"]))
    case("fold_mask", mk("Trilu", ["ones34"], ["tri_c"], upper=0), mk("Greater", ["cv", "zero"], ["pos_c"]),
         mk("Not", ["pos_c"], ["npos_c"]), mk("And", ["pos_c", "npos_c"], ["none_c"]), mk("Or", ["none_c", "pos_c"], ["any_c"]),
         mk("Cast", ["any_c"], ["any_f"], to=F), mk("Mul", ["tri_c", "any_f"], ["mask_c"]), mk("Add", ["m", "mask_c"], ["fold_mask"]))
    case("fold_shape", mk("Shape", ["t"], ["shp"], start=-2), mk("ConstantOfShape", ["shp"], ["cos2"],
         value=helper.make_tensor("v", F, [1], [2.0])), mk("Range", ["r0", "r4", "r1"], ["rng_i"]),
         mk("Cast", ["rng_i"], ["rng_f"], to=F), mk("Add", ["cos2", "rng_f"], ["sh_c"]), mk("Mul", ["m", "sh_c"], ["fold_shape"]))
    # windows not in `windows`: depthwise, 1x1 strided, VALID, Conv + BatchNormalization folded,
    # pools with default strides, SAME_UPPER, 1-D stride 2, GlobalAveragePool 1-D
    case("conv_dw", mk("Conv", ["img", "w_dw"], ["conv_dw"], group=4, pads=[1, 1, 1, 1]))
    case("conv_1x1", mk("Conv", ["img", "w_11", "b_11"], ["conv_1x1"], strides=[2, 2]))
    case("conv_valid", mk("Conv", ["img", "w_33"], ["conv_valid"], auto_pad="VALID", dilations=[2, 2]))
    case("conv_bn", mk("Conv", ["img", "w_33"], ["cb_conv"], pads=[1, 1, 1, 1]),
         mk("BatchNormalization", ["cb_conv", "bn_s", "bn_b", "bn_m", "bn_v"], ["conv_bn"]))
    case("conv1d_s2", mk("Conv", ["seq", "w_1d", "b_1d"], ["conv1d_s2"], strides=[2], pads=[1, 2]))
    case("maxpool_def", mk("MaxPool", ["img"], ["maxpool_def"], kernel_shape=[2, 2], storage_order=0))
    case("maxpool_same", mk("MaxPool", ["img"], ["maxpool_same"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"))
    case("avgpool_nopad", mk("AveragePool", ["img"], ["avgpool_nopad"], kernel_shape=[3, 2], strides=[2, 2]))
    case("avgpool1d", mk("AveragePool", ["seq"], ["avgpool1d"], kernel_shape=[3], strides=[2], pads=[1, 1],
                         count_include_pad=1))
    case("gap1d", mk("GlobalAveragePool", ["seq"], ["gap1d"]))
    inits = [fl("table", arr((3, 4))), fl("s0", 1.5), fl("three", 3.0), fl("zero", 0.0), fl("gc5", arr(5)), fl("gc31", arr((3, 1))), fl("gc0", 0.25),
             fl("gc35", arr((3, 5))), fl("kt", arr((5, 4))), fl("ln_w", arr(4)), fl("ln_b", arr(4)), fl("cv", arr(4)),
             fl("cv3", arr(4) * 3), fl("ones34", np.ones((3, 4))), fl("w_dw", arr((4, 1, 3, 3))),
             fl("w_11", arr((3, 4, 1, 1))), fl("b_11", arr(3)), fl("w_33", arr((2, 4, 3, 3))), fl("bn_s", arr(2)),
             fl("bn_b", arr(2)), fl("bn_m", arr(2)), fl("bn_v", arr(2, 0.5)), fl("w_1d", arr((3, 2, 4))), fl("b_1d", arr(3)),
             i64("ax_m1", [-1]), i64("ax_none", np.zeros(0, np.int64)), i64("ax_0m1", [0, -1]), i64("ax_1", [1]),
             i64("ax_02", [0, 2]), i64("rs_flat", [-1]), i64("rs_mid", [3, -1, 2]), i64("rs_4d", [2, 3, 4, 1]),
             i64("sc_s", [-100]), i64("sc_e", [np.iinfo(np.int64).max]), i64("s2_s", [0, -3]), i64("s2_e", [-1, 4]),
             i64("s2_a", [2, -2]), i64("s2_st", [1, 1]), i64("sp_sizes", [1, 3]), i64("g_s", -1),
             i64("ge_i", [[-1, 0], [3, -4], [1, 1]]), i64("ex_234", [2, 3, 4]), i64("ex_4", [4]), i64("eq_c", [[-1], [2]]),
             i64("r0", 0), i64("r4", 4), i64("r1", 1)]
    save_cases(out, "op_matrix", cases, inputs, inits, feeds)
    # opset 13: axes as attributes (ReduceMean/ReduceMax) or inputs (ReduceSum, Squeeze, Unsqueeze), Split by sizes
    f13 = {"t": feeds["t"]}
    nodes = [mk("ReduceMean", ["t"], ["mean_attr"], axes=[-1], keepdims=0),
             mk("ReduceMax", ["t"], ["max_attr"], axes=[0, 2]),
             mk("ReduceMean", ["t"], ["mean13_all"]),
             mk("ReduceSum", ["t", "ax13"], ["sum13"], keepdims=0),
             mk("ReduceSum", ["t"], ["sum13_all"], keepdims=0),
             mk("Split", ["t", "sp13"], ["split13_a", "split13_b"], axis=1),
             mk("Unsqueeze", ["t", "ax13"], ["unsq13"]),
             mk("Squeeze", ["unsq13", "ax13"], ["sq13"]),
             mk("Softmax", ["t"], ["softmax13"])]
    for n in nodes:
        n.name = "n_" + n.output[0]
    outs = ["mean_attr", "max_attr", "mean13_all", "sum13", "sum13_all", "split13_a", "split13_b", "sq13", "softmax13"]
    g = helper.make_graph(nodes, "op_matrix13", [helper.make_tensor_value_info("t", F, [2, 3, 4])],
                          [helper.make_value_info(o, onnx.TypeProto()) for o in outs],
                          initializer=[i64("ax13", [1]), i64("sp13", [2, 1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    fill_outputs(m)
    save_valid(out, "op_matrix13", m, f13)


def matrix26_model(out):
    """op_matrix26: see the module's docstring."""
    r = np.random.default_rng(20261226)
    F, I64, F16 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.FLOAT16
    mk = helper.make_node
    arr = lambda shape: r.standard_normal(shape).astype(np.float32)
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    feeds = {"t": arr((2, 3, 4)), "m": arr((3, 4)), "img": arr((1, 2, 7, 6)), "s5": arr((1, 2, 5)),
             "gi": np.array([-1, 0, 2, -4], np.int64)}
    inputs = [helper.make_tensor_value_info(n, I64 if n == "gi" else F, list(a.shape)) for n, a in feeds.items()]
    cases = []

    def case(name, *nodes):
        cases.append(([name], list(nodes)))
    big = np.iinfo(np.int64)
    # Gather from a computed tensor
    case("gather_vec", mk("Relu", ["t"], ["t_r"]), mk("Gather", ["t_r", "g_vec"], ["gather_vec"], axis=1))
    case("gather_mat", mk("Gather", ["t", "g_mat"], ["gather_mat"], axis=-1))
    case("gather_in", mk("Gather", ["t", "gi"], ["gather_in"], axis=2))
    case("gather_first", mk("Gather", ["m", "g_vec"], ["gather_first"], axis=0))
    case("gather_itab", mk("Gather", ["itab", "gi"], ["gi_t"], axis=1), mk("Cast", ["gi_t"], ["gather_itab"], to=F))
    # Slice with steps
    case("slice_step2", mk("Slice", ["t", "z0", "e4", "a2", "st2"], ["slice_step2"]))
    case("slice_rev", mk("Slice", ["t", "m1", "minf", "a2", "stm1"], ["slice_rev"]))
    case("slice_mixed", mk("Slice", ["t", "sm_s", "sm_e", "sm_a", "sm_st"], ["slice_mixed"]))
    case("slice_clamp3", mk("Slice", ["t", "m100", "pinf", "a2", "st3"], ["slice_clamp3"]))
    # pools: ceil_mode, padding counted or not
    case("maxpool_ceil", mk("MaxPool", ["img"], ["maxpool_ceil"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1))
    case("maxpool_ceil_1d", mk("MaxPool", ["s5"], ["maxpool_ceil_1d"], kernel_shape=[2], strides=[2], ceil_mode=1))
    case("avgpool_ceil_excl", mk("AveragePool", ["s5"], ["avgpool_ceil_excl"], kernel_shape=[3], strides=[2],
                                 pads=[1, 0], ceil_mode=1))
    case("avgpool_ceil_incl", mk("AveragePool", ["s5"], ["avgpool_ceil_incl"], kernel_shape=[3], strides=[2], pads=[1, 0],
                                 ceil_mode=1, count_include_pad=1))
    case("avgpool_excl", mk("AveragePool", ["img"], ["avgpool_excl"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1]))
    case("avgpool_ceil2d", mk("AveragePool", ["img"], ["avgpool_ceil2d"], kernel_shape=[3, 2], strides=[2, 2],
                              pads=[0, 1, 1, 0], ceil_mode=1, count_include_pad=1))
    # LayerNormalization over several axes
    case("layernorm_2ax", mk("LayerNormalization", ["t", "ln_w34", "ln_b34"], ["layernorm_2ax"], axis=1))
    case("layernorm_all", mk("LayerNormalization", ["t", "ln_w234"], ["layernorm_all"], axis=0, epsilon=0.1))
    case("layernorm_m2", mk("LayerNormalization", ["t", "ln_w34"], ["layernorm_m2"], axis=-2))
    # folds of f16 constants
    case("fold_f16", mk("Transpose", ["h43"], ["h34"], perm=[1, 0]), mk("Neg", ["h34"], ["hn"]),
         mk("Gather", ["hn", "g_vec"], ["hg"], axis=0), mk("Cast", ["hg"], ["hf"], to=F),
         mk("Add", ["m", "hf"], ["fold_f16"]))
    # Constant nodes of each value attribute feeding runtime ops
    case("const_forms", mk("Constant", [], ["k_f"], value_float=2.5), mk("Mul", ["t", "k_f"], ["cf1"]),
         mk("Constant", [], ["k_fs"], value_floats=[1.0, -2.0, 0.5, 4.0]), mk("Add", ["cf1", "k_fs"], ["cf2"]),
         mk("Constant", [], ["k_i"], value_int=1), mk("Gather", ["cf2", "k_i"], ["cf3"], axis=1),
         mk("Constant", [], ["k_is"], value_ints=[4, -1]), mk("Reshape", ["cf3", "k_is"], ["const_forms"]))
    inits = [i64("g_vec", [2, -1, 0]), i64("g_mat", [[0, -1], [3, 1]]),
             i64("itab", r.integers(-50, 50, (3, 4))), i64("z0", [0]), i64("e4", [4]), i64("a2", [2]),
             i64("st2", [2]), i64("m1", [-1]), i64("minf", [big.min]), i64("stm1", [-1]), i64("sm_s", [3, 0]),
             i64("sm_e", [0, 2]), i64("sm_a", [2, 1]), i64("sm_st", [-2, 1]), i64("m100", [-100]),
             i64("pinf", [big.max]), i64("st3", [3]),
             numpy_helper.from_array(arr((3, 4)), "ln_w34"), numpy_helper.from_array(arr((3, 4)), "ln_b34"),
             numpy_helper.from_array(arr((2, 3, 4)), "ln_w234"),
             numpy_helper.from_array(arr((4, 3)).astype(np.float16), "h43")]
    save_cases(out, "op_matrix26", cases, inputs, inits, feeds)
    # refused: ceil_mode's last window would start past the input (ONNX drops it, ONNX Runtime 1.20 gives -FLT_MAX/NaN)
    m = model([mk("MaxPool", ["x"], ["y"], name="pool0", kernel_shape=[2], strides=[2], pads=[1, 1], ceil_mode=1)],
              [f32("x", [1, 2, 5])], [f32("y", [1, 2, 3])], opset=18)
    onnx.save_model(m, os.path.join(out, "ceil_past_end.onnx"))
    # refused: a Range of 2^30 elements from three scalars (the fold would fill 8 GiB)
    m = model([mk("Range", ["r0", "rbig", "r1"], ["r"], name="range0"), mk("Cast", ["r"], ["rf"], to=F),
               mk("Add", ["x", "rf"], ["y"], name="add0")], [f32("x", [1])], [f32("y", [1 << 30])],
              inits=[i64("r0", 0), i64("rbig", 1 << 30), i64("r1", 1)], opset=18)
    onnx.save_model(m, os.path.join(out, "range_huge.onnx"))


def fill_outputs(m):
    """Gives each graph output the type and shape ONNX's shape inference finds."""
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in m.graph.output:
        if o.name in known and known[o.name].type.HasField("tensor_type"):
            o.type.CopyFrom(known[o.name].type)


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
    if "--matrix-only" in sys.argv:
        matrix_models(out)
        return
    if "--matrix26-only" in sys.argv:
        matrix26_model(out)
        return
    valid_models(out)
    matrix_models(out)
    matrix26_model(out)
    for name, data in hostile_models(out).items():
        for path in (os.path.join(out, name + ".onnx"), os.path.join(seeds, "strict_" + name + ".onnx")):
            with open(path, "wb") as f:
                f.write(data)
    print(f"wrote {out} and fuzz seeds in {seeds}")


if __name__ == "__main__":
    main()
