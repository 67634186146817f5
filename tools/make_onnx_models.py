#!/usr/bin/env python3
"""Writes the small ONNX test models of testdata/onnx/ with the `onnx`
helper API, fixed inputs, and ONNX Runtime's outputs on them (.npy).

Run once by a developer (CI only reads the shipped files):
    python3 -m venv build/venv-onnx
    build/venv-onnx/bin/pip install onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4
    build/venv-onnx/bin/python tools/make_onnx_models.py testdata/onnx
    build/venv-onnx/bin/python tools/make_onnx_models.py testdata/onnx --only select  # one model

Models (tiny sizes so the repository stays small):
  mlp      opset 13: Gemm(transB) -> Relu -> MatMul -> Add, symbolic batch
  llama    opset 18: RMSNorm (Pow/ReduceMean/Sqrt/Reciprocal), q/k/v, rotary
           by rotate_half (Slice/Neg/Concat) with cos/sin tables, causal
           attention (mask from Shape/ConstantOfShape/Trilu), SwiGLU MLP
  gpt2     opset 17: 2 blocks; token + position (Range) embeddings,
           LayerNormalization, fused qkv + Split, causal mask by Trilu/Equal/
           Where folded at import, erf GELU, tied-free lm head
  bert     opset 17: 2 blocks; word/type/position embeddings, an additive
           attention mask from an input, biases, erf GELU
  ops      opset 18: Sqrt, Reciprocal, Log, Erf, Pow, Tanh on computed
           tensors, a LayerNorm spelt out (ReduceMean/Sub/Pow/Sqrt/Div),
           Unsqueeze/Squeeze, Softmax, ReduceSum, Gather of one index,
           Split(num_outputs) and Concat; three outputs
  select   opset 18: Pow with a tensor, a non-special scalar and an int64 exponent,
           Greater/Less/Equal and Where on computed tensors, Cast
           between bool, f32, i64 and f16, Expand, ReduceMax,
           GatherElements; two outputs
  mlp_ext  the mlp with its weights in an external-data file
Bad inputs for the importer's error tests go to testdata/onnx/bad/.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

rng = np.random.default_rng(20261202)


class Builder:
    def __init__(self, name):
        self.name = name
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = 0

    def fresh(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name, shape, scale=None):
        fan_in = shape[0] if len(shape) > 1 else 1
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.init(name, (rng.standard_normal(shape) * s).astype(np.float32))

    def const(self, array, hint="c"):
        return self.init(self.fresh(hint), np.asarray(array))

    def op(self, op_type, inputs, n_out=1, name=None, **attrs):
        name = name or self.fresh(op_type)
        outs = [f"{name}_out{i}" if n_out > 1 else f"{name}_out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def model(self, opset):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ppcc-tools")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


# ---------------- shared pieces ----------------

def rms_norm(b, x, hidden, prefix):
    w = b.init(prefix + ".weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    sq = b.op("Pow", [x, b.const(np.float32(2.0), "two")])
    axes = b.const(np.array([-1], np.int64), "axes")
    var = b.op("ReduceMean", [sq, axes], keepdims=1)
    eps = b.op("Add", [var, b.const(np.float32(1e-6), "eps")])
    inv = b.op("Reciprocal", [b.op("Sqrt", [eps])])
    return b.op("Mul", [b.op("Mul", [x, inv]), w])


def layer_norm(b, x, hidden, prefix):
    w = b.init(prefix + ".weight", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    bias = b.init(prefix + ".bias", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
    return b.op("LayerNormalization", [x, w, bias], axis=-1, epsilon=1e-5)


def erf_gelu(b, x):
    t = b.op("Div", [x, b.const(np.float32(np.sqrt(2.0)), "sqrt2")])
    t = b.op("Add", [b.op("Erf", [t]), b.const(np.float32(1.0), "one")])
    return b.op("Mul", [b.op("Mul", [x, t]), b.const(np.float32(0.5), "half")])


def linear(b, x, n_in, n_out, prefix, bias=True):
    y = b.op("MatMul", [x, b.weight(prefix + ".weight", [n_in, n_out])])
    if bias:
        y = b.op("Add", [y, b.init(prefix + ".bias", (0.1 * rng.standard_normal(n_out)).astype(np.float32))])
    return y


def heads(b, x, n_heads, head_dim):
    """[B, S, H*D] -> [B, H, S, D]"""
    r = b.op("Reshape", [x, b.const(np.array([0, 0, n_heads, head_dim], np.int64), "shape")])
    return b.op("Transpose", [r], perm=[0, 2, 1, 3])


def merge_heads(b, x, hidden):
    t = b.op("Transpose", [x], perm=[0, 2, 1, 3])
    return b.op("Reshape", [t, b.const(np.array([0, 0, hidden], np.int64), "shape")])


def seq_len(b, x, axis=1):
    """Shape(x)[axis] as a 1-element int64 tensor (folded by the importer)."""
    s = b.op("Shape", [x])
    return b.op("Gather", [s, b.const(np.array([axis], np.int64), "idx")], axis=0)


def causal_mask_trilu(b, x):
    """Additive [S, S] mask: -1e9 above the diagonal (ConstantOfShape + Trilu)."""
    s = seq_len(b, x)
    ss = b.op("Concat", [s, s], axis=0)
    full = b.op("ConstantOfShape", [ss], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-1e9]))
    return b.op("Trilu", [full, b.const(np.array(1, np.int64), "k")], upper=1)


def causal_mask_where(b, x):
    """Additive mask by Trilu/Equal/Where on ones (GPT-2 exporters' shape)."""
    s = seq_len(b, x)
    ss = b.op("Concat", [s, s], axis=0)
    ones = b.op("ConstantOfShape", [ss], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
    lower = b.op("Trilu", [ones], upper=0)
    keep = b.op("Cast", [lower], to=TensorProto.BOOL)
    return b.op("Where", [keep, b.const(np.float32(0.0), "zero"), b.const(np.float32(-1e9), "neg")])


def attention(b, q, k, v, head_dim, mask):
    kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
    s = b.op("MatMul", [q, kt])
    s = b.op("Div", [s, b.const(np.float32(np.sqrt(head_dim)), "scale")])
    if mask is not None:
        s = b.op("Add", [s, mask])
    p = b.op("Softmax", [s], axis=-1)
    return b.op("MatMul", [p, v])


# ---------------- models ----------------

def mlp():
    b = Builder("mlp")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]))
    w1 = b.weight("fc1.weight", [32, 16])
    b1 = b.init("fc1.bias", (0.1 * rng.standard_normal(32)).astype(np.float32))
    h = b.op("Gemm", ["x", w1, b1], transB=1)
    h = b.op("Relu", [h])
    y = linear(b, h, 32, 8, "fc2")
    b.nodes.append(helper.make_node("Identity", [y], ["y"], name="out"))
    b.outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8]))
    inputs = {"x": rng.standard_normal((4, 16)).astype(np.float32)}
    return b.model(13), inputs, "x=4,16"


def llama():
    H, NH, D, F, S = 16, 2, 8, 32, 8
    b = Builder("llama_block")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", H]))
    pos = np.arange(S, dtype=np.float64)
    inv = 1.0 / (10000.0 ** (np.arange(0, D, 2) / D))
    ang = np.outer(pos, inv)
    ang = np.concatenate([ang, ang], axis=-1)
    cos = b.init("rope.cos", np.cos(ang).astype(np.float32))
    sin = b.init("rope.sin", np.sin(ang).astype(np.float32))

    def rope(t):
        x1 = b.op("Slice", [t, b.const(np.array([0], np.int64)), b.const(np.array([D // 2], np.int64)),
                            b.const(np.array([3], np.int64))])
        x2 = b.op("Slice", [t, b.const(np.array([D // 2], np.int64)), b.const(np.array([D], np.int64)),
                            b.const(np.array([-1], np.int64))])
        rot = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
        return b.op("Add", [b.op("Mul", [t, cos]), b.op("Mul", [rot, sin])])

    h = rms_norm(b, "x", H, "attn_norm")
    q = rope(heads(b, linear(b, h, H, H, "attn.q", bias=False), NH, D))
    k = rope(heads(b, linear(b, h, H, H, "attn.k", bias=False), NH, D))
    v = heads(b, linear(b, h, H, H, "attn.v", bias=False), NH, D)
    a = attention(b, q, k, v, D, causal_mask_trilu(b, "x"))
    o = linear(b, merge_heads(b, a, H), H, H, "attn.o", bias=False)
    r = b.op("Add", ["x", o])
    h2 = rms_norm(b, r, H, "ffn_norm")
    gate = linear(b, h2, H, F, "ffn.gate", bias=False)
    up = linear(b, h2, H, F, "ffn.up", bias=False)
    act = b.op("Mul", [gate, b.op("Sigmoid", [gate])])
    down = linear(b, b.op("Mul", [act, up]), F, H, "ffn.down", bias=False)
    b.nodes.append(helper.make_node("Add", [r, down], ["y"], name="residual_out"))
    b.outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", H]))
    inputs = {"x": rng.standard_normal((1, S, H)).astype(np.float32)}
    return b.model(18), inputs, f"x=1,{S},{H}"


def gpt2():
    H, NH, D, V, S, P = 16, 2, 8, 32, 8, 16
    b = Builder("gpt2")
    b.inputs.append(helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"]))
    wte = b.weight("wte", [V, H], 0.5)
    wpe = b.weight("wpe", [P, H], 0.1)
    tok = b.op("Gather", [wte, "input_ids"], axis=0)
    n = b.op("Squeeze", [seq_len(b, "input_ids"), b.const(np.array([0], np.int64))])
    positions = b.op("Range", [b.const(np.array(0, np.int64)), n, b.const(np.array(1, np.int64))])
    x = b.op("Add", [tok, b.op("Gather", [wpe, positions], axis=0)])
    mask = causal_mask_where(b, "input_ids")
    for i in range(2):
        p = f"h.{i}"
        h = layer_norm(b, x, H, p + ".ln_1")
        qkv = linear(b, h, H, 3 * H, p + ".attn.c_attn")
        q, k, v = b.op("Split", [qkv, b.const(np.array([H, H, H], np.int64))], n_out=3, axis=-1)
        a = attention(b, heads(b, q, NH, D), heads(b, k, NH, D), heads(b, v, NH, D), D, mask)
        x = b.op("Add", [x, linear(b, merge_heads(b, a, H), H, H, p + ".attn.c_proj")])
        h = layer_norm(b, x, H, p + ".ln_2")
        m = linear(b, erf_gelu(b, linear(b, h, H, 4 * H, p + ".mlp.c_fc")), 4 * H, H, p + ".mlp.c_proj")
        x = b.op("Add", [x, m])
    x = layer_norm(b, x, H, "ln_f")
    logits = linear(b, x, H, V, "lm_head", bias=False)
    b.nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
    b.outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", V]))
    inputs = {"input_ids": rng.integers(0, V, (1, S)).astype(np.int64)}
    return b.model(17), inputs, f"input_ids=1,{S}"


def bert():
    H, NH, D, V, S, F = 16, 2, 8, 32, 8, 32
    b = Builder("bert")
    b.inputs.append(helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, S]))
    b.inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, [1, S]))
    b.inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1, S]))
    words = b.op("Gather", [b.weight("embeddings.word", [V, H], 0.5), "input_ids"], axis=0)
    types = b.op("Gather", [b.weight("embeddings.type", [2, H], 0.5), "token_type_ids"], axis=0)
    pos_ids = b.init("embeddings.position_ids", np.arange(S, dtype=np.int64).reshape(1, S))
    positions = b.op("Gather", [b.weight("embeddings.position", [S, H], 0.1), pos_ids], axis=0)
    x = b.op("Add", [b.op("Add", [words, types]), positions])
    x = layer_norm(b, x, H, "embeddings.ln")
    m = b.op("Unsqueeze", ["attention_mask", b.const(np.array([1, 2], np.int64))])
    m = b.op("Mul", [b.op("Sub", [b.const(np.float32(1.0), "one"), m]), b.const(np.float32(-10000.0), "big")])
    for i in range(2):
        p = f"encoder.{i}"
        q = heads(b, linear(b, x, H, H, p + ".q"), NH, D)
        k = heads(b, linear(b, x, H, H, p + ".k"), NH, D)
        v = heads(b, linear(b, x, H, H, p + ".v"), NH, D)
        a = merge_heads(b, attention(b, q, k, v, D, m), H)
        x = layer_norm(b, b.op("Add", [x, linear(b, a, H, H, p + ".o")]), H, p + ".ln_attn")
        f = linear(b, erf_gelu(b, linear(b, x, H, F, p + ".ffn.up")), F, H, p + ".ffn.down")
        x = layer_norm(b, b.op("Add", [x, f]), H, p + ".ln_ffn")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    b.outputs.append(helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, S, H]))
    mask = np.ones((1, S), np.float32)
    mask[0, -2:] = 0.0  # padding at the end
    inputs = {"input_ids": rng.integers(0, V, (1, S)).astype(np.int64),
              "token_type_ids": np.array([[0] * (S // 2) + [1] * (S - S // 2)], np.int64),
              "attention_mask": mask}
    return b.model(17), inputs, ""


def ops():
    b = Builder("ops")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]))
    e = b.op("Exp", ["x"])
    terms = [b.op("Sqrt", [e]), b.op("Reciprocal", [b.op("Sqrt", [e])]),
             b.op("Log", [b.op("Add", [e, b.const(np.float32(1.0), "one")])]), b.op("Erf", ["x"]),
             b.op("Pow", [e, b.const(np.float32(0.5), "half")]), b.op("Tanh", ["x"])]
    a = terms[0]
    for t in terms[1:]:
        a = b.op("Add", [a, t])
    axes = b.const(np.array([-1], np.int64), "axes")
    m = b.op("ReduceMean", [a, axes], keepdims=1)
    dev = b.op("Sub", [a, m])
    var = b.op("ReduceMean", [b.op("Pow", [dev, b.const(np.float32(2.0), "two")]), axes], keepdims=1)
    n = b.op("Div", [dev, b.op("Sqrt", [b.op("Add", [var, b.const(np.float32(1e-5), "eps")])])])
    u = b.op("Unsqueeze", [n, b.const(np.array([0], np.int64))])
    sq = b.op("Squeeze", [u, b.const(np.array([0], np.int64))])
    sm = b.op("Softmax", [sq], axis=-1)
    b.nodes.append(helper.make_node("ReduceSum", [sm, b.const(np.array([1], np.int64))], ["z"], keepdims=0, name="z"))
    b.nodes.append(helper.make_node("Gather", [sq, b.const(np.array(1, np.int64))], ["w"], axis=0, name="w"))
    lo, hi = b.op("Split", [sq], n_out=2, axis=1, num_outputs=2)
    b.nodes.append(helper.make_node("Concat", [hi, lo], ["y"], axis=1, name="y"))
    for name, shape in (("y", [2, 8]), ("z", [2]), ("w", [8])):
        b.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    inputs = {"x": rng.standard_normal((2, 8)).astype(np.float32)}
    return b.model(18), inputs, ""


def select():
    b = Builder("select")
    b.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]))
    e, t = b.op("Exp", ["x"]), b.op("Tanh", ["x"])
    p = b.op("Pow", [e, t])  # a tensor exponent
    p2 = b.op("Pow", [b.op("Sigmoid", ["x"]), b.const(np.float32(1.5), "p15")])  # a non-special scalar one
    zero = b.const(np.float32(0.0), "zero")
    g = b.op("Greater", ["x", b.op("Mul", [t, b.const(np.float32(0.1), "tenth")])])  # computed on both sides
    lt = b.op("Less", [t, b.const(np.float32(0.3), "third")])
    q = b.op("Equal", [b.op("Relu", ["x"]), zero])
    w = b.op("Where", [g, p, b.op("Neg", [p2])])
    w2 = b.op("Where", [lt, w, b.const(np.float32(0.25), "quarter")])
    b.nodes.append(helper.make_node("Where", [q, b.op("Mul", [w2, b.const(np.float32(2.0), "two")]), w2], ["y"],
                                    name="y"))
    # Cast: bool -> f32, f32 -> i64 (truncation) -> f32, f32 -> f16 -> f32
    ti = b.op("Cast", [b.op("Cast", [b.op("Mul", ["x", b.const(np.float32(10.0), "ten")])], to=TensorProto.INT64)],
              to=TensorProto.FLOAT)
    h = b.op("Cast", [b.op("Cast", ["x"], to=TensorProto.FLOAT16)], to=TensorProto.FLOAT)
    # Expand of a computed [2, 1] row mean to [2, 8]
    ex = b.op("Expand", [b.op("ReduceMean", ["x", b.const(np.array([-1], np.int64), "axes")], keepdims=1),
                         b.const(np.array([2, 8], np.int64), "shape")])
    zs = b.op("Add", [b.op("Add", [ti, h]), b.op("Cast", [g], to=TensorProto.FLOAT)])
    # ReduceMax of a computed tensor over the last axis, kept, then broadcast back by Add
    rm = b.op("ReduceMax", [t, b.const(np.array([-1], np.int64), "axes_max")], keepdims=1)
    # GatherElements along axis 1 of a computed tensor, with a constant index
    ge = b.op("GatherElements", [e, b.const(np.array([[7, 0, 3, 3, 1, 6, 2, 5], [0, 0, 1, 7, 4, 4, 2, 6]], np.int64),
                                            "gidx")], axis=1)
    # Pow with an int64 exponent (ONNX lets its dtype differ): a cast to f32 first
    p3 = b.op("Pow", [b.op("Sigmoid", ["x"]), b.const(np.int64(3), "three")])
    b.nodes.append(helper.make_node("Add", [b.op("Add", [b.op("Add", [b.op("Add", [zs, ex]), rm]), ge]), p3], ["z"],
                                    name="z"))
    for name in ("y", "z"):
        b.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 8]))
    # its own generator: `--only select` and a full run give the same inputs
    inputs = {"x": (np.random.default_rng(14).standard_normal((2, 8)) * 0.5).astype(np.float32)}
    return b.model(18), inputs, ""


def save_case(out, name, model, inputs):
    onnx.save_model(model, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(os.path.join(out, name + ".onnx"), providers=["CPUExecutionProvider"])
    results = sess.run(None, inputs)
    for k, v in inputs.items():
        np.save(os.path.join(out, f"{name}.in.{k}.npy"), v)
    for o, r in zip(sess.get_outputs(), results):
        np.save(os.path.join(out, f"{name}.ref.{o.name}.npy"), r)
    print(f"{name}: {len(model.graph.node)} nodes, outputs {[o.name for o in sess.get_outputs()]}")


def bad_models(out, good):
    bad = os.path.join(out, "bad")
    os.makedirs(bad, exist_ok=True)
    # an op ppcc does not know, twice, plus another one
    m = onnx.ModelProto()
    m.CopyFrom(good)
    m.graph.node[1].op_type = "Hardmax"
    m.graph.node.append(helper.make_node("Det", ["y"], ["det"], name="det0"))
    m.graph.node.append(helper.make_node("Hardmax", ["y"], ["hm2"], name="hm2"))
    onnx.save_model(m, os.path.join(bad, "unknown_op.onnx"))
    # a node reading a name that no input, initializer or node defines
    m = onnx.ModelProto()
    m.CopyFrom(good)
    del m.graph.initializer[0]
    onnx.save_model(m, os.path.join(bad, "missing_initializer.onnx"))
    # opset out of 13..18
    m = onnx.ModelProto()
    m.CopyFrom(good)
    m.opset_import[0].version = 11
    onnx.save_model(m, os.path.join(bad, "opset11.onnx"))
    # external data pointing outside the model's folder
    m = onnx.ModelProto()
    m.CopyFrom(good)
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../escape.bin"), ("offset", "0"), ("length", "2048")):
        e = t.external_data.add()
        e.key, e.value = k, v
    with open(os.path.join(bad, "escaping_external.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    # external data reaching past its file's end
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    m2.graph.initializer[0].external_data[0].value = "short.bin"
    with open(os.path.join(bad, "short.bin"), "wb") as f:
        f.write(b"\0" * 100)
    with open(os.path.join(bad, "short_external.onnx"), "wb") as f:
        f.write(m2.SerializeToString())
    # truncated protobuf
    data = good.SerializeToString()
    with open(os.path.join(bad, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])


MODELS = (("mlp", mlp), ("llama", llama), ("gpt2", gpt2), ("bert", bert), ("ops", ops), ("select", select))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/onnx"
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) > 3 and sys.argv[2] == "--only":  # regenerate one model's files, nothing else
        model, inputs, _ = dict(MODELS)[sys.argv[3]]()
        save_case(out, sys.argv[3], model, inputs)
        return
    shapes = []
    for name, make in MODELS:
        model, inputs, shape = make()
        save_case(out, name, model, inputs)
        shapes.append(f"{name} {shape}")
        if name == "mlp":
            mlp_model = model
    # the mlp again with its weights in a side file (models over 2 GB do this)
    ext = os.path.join(out, "mlp_ext")
    os.makedirs(ext, exist_ok=True)
    m = onnx.ModelProto()
    m.CopyFrom(mlp_model)
    onnx.save_model(m, os.path.join(ext, "mlp_ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mlp_ext.weights", size_threshold=0)
    bad_models(out, mlp_model)
    with open(os.path.join(out, "shapes.txt"), "w") as f:
        f.write("\n".join(shapes) + "\n")


if __name__ == "__main__":
    main()
