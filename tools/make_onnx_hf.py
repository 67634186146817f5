#!/usr/bin/env python3
"""Exports tiny Hugging Face causal LMs (random weights from a config, no
download) with torch.onnx.export, opset 17, static shapes, and writes
ONNX Runtime's logits on fixed token ids as the reference:
  hf_llama  LlamaForCausalLM (RMSNorm, rotary tables computed by the
            exporter's prelude: Cos/Sin of a MatMul of constants, GQA, SwiGLU)
  hf_qwen2  Qwen2ForCausalLM (the same with q/k/v biases)
Run once by a developer (CI only reads the shipped files), with a venv
holding torch 1.13, transformers==4.46.3, onnx==1.17.0, onnxruntime==1.20.1:
    python3 -m venv build/refvenv
    build/refvenv/bin/pip install torch==1.13.1 transformers==4.46.3 onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4
    build/refvenv/bin/python tools/make_onnx_hf.py testdata/onnx
The tests list these models in tests/onnx_import.sh (goldens:
tools/update_onnx_goldens.sh).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers

SEQ = 8


def tiny(config_cls, **extra):
    return config_cls(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      rms_norm_eps=1e-6, tie_word_embeddings=False, use_cache=False,
                      attn_implementation="eager", **extra)


class Logits(torch.nn.Module):
    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def export(out, name, model):
    torch.manual_seed(0)
    model.eval()
    ids = torch.tensor([[3, 17, 5, 60, 41, 8, 22, 1]], dtype=torch.int64)
    path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(Logits(model), (ids,), path, opset_version=17, input_names=["input_ids"],
                          output_names=["logits"], do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"input_ids": ids.numpy()})
    np.save(os.path.join(out, f"{name}.in.input_ids.npy"), ids.numpy())
    np.save(os.path.join(out, f"{name}.ref.logits.npy"), logits)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{name}: {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes, ops {ops}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/onnx"
    torch.manual_seed(0)
    export(out, "hf_llama", transformers.LlamaForCausalLM(tiny(transformers.LlamaConfig)))
    torch.manual_seed(1)
    export(out, "hf_qwen2", transformers.Qwen2ForCausalLM(tiny(transformers.Qwen2Config)))


if __name__ == "__main__":
    main()
