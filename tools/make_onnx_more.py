#!/usr/bin/env python3
"""Exports, with torch.onnx.export (opset 17, static shapes), the models
issue 26 names beyond tools/make_onnx_models.py / make_onnx_hf.py /
make_onnx_cnn.py, and writes ONNX Runtime's outputs as references:
  distilbert  transformers DistilBertModel (2 layers, hidden 32) on a
              padded batch of 2 (attention_mask with zeros)
  encoder     torch.nn.TransformerEncoderLayer (batch_first, d_model 32,
              4 heads) on [2, 6, 32]
  torchops    what exporters write for x[:, ::2] (Slice with a step),
              x[..., [2, 0, 3]] and x[:, 0] (Gather on a computed tensor),
              x.flip(-1) (Slice step -1), AvgPool2d(ceil_mode=True,
              count_include_pad=False) and MaxPool2d(ceil_mode=True), a
              LayerNorm over the last two dims
Run once by a developer (CI only reads the shipped files), with a venv
holding torch 1.13, transformers==4.46.3, onnx==1.17.0, onnxruntime==1.20.1:
    build/refvenv/bin/python tools/make_onnx_more.py testdata/onnx
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers


class Hidden(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]


class TorchOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.avg = torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
        self.max = torch.nn.MaxPool2d(2, 2, ceil_mode=True)
        self.norm = torch.nn.LayerNorm([5, 5])
        self.fc = torch.nn.Linear(5, 6)

    def forward(self, x):
        y = torch.relu(self.conv(x))                 # [2, 4, 9, 9]
        a = self.avg(y)                              # [2, 4, 5, 5]
        m = self.max(y)                              # [2, 4, 5, 5]
        z = self.norm(a + m)                         # over [5, 5]
        s = z[:, ::2]                                # Slice step 2: [2, 2, 5, 5]
        g = s[..., [2, 0, 3]]                        # Gather, constant indices: [2, 2, 5, 3]
        f = g.flip(-1)                               # Slice step -1
        cls = z[:, 0]                                # Gather one index: [2, 5, 5]
        return self.fc(cls) .sum(-1, keepdim=True) + f.mean(1).mean(-1, keepdim=True)


def export(out, name, model, args, names, grad=False):
    model.eval()
    path = os.path.join(out, name + ".onnx")
    with torch.set_grad_enabled(grad):
        torch.onnx.export(model, args, path, opset_version=17, input_names=names, output_names=["y"])
    m = onnx.load(path)
    onnx.checker.check_model(m)
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, feeds)
    for n, a in feeds.items():
        np.save(os.path.join(out, f"{name}.in.{n}.npy"), a)
    np.save(os.path.join(out, f"{name}.ref.y.npy"), y)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{name}: {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes, ops {ops}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/onnx"
    torch.manual_seed(0)
    cfg = transformers.DistilBertConfig(vocab_size=100, max_position_embeddings=16, dim=32, n_layers=2, n_heads=4,
                                        hidden_dim=64, attn_implementation="eager")
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0  # the second sequence is padded
    export(out, "distilbert", Hidden(transformers.DistilBertModel(cfg)), (ids, mask), ["input_ids", "attention_mask"])
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    # with gradients on, eval mode does not take the fused fast path (no ONNX export exists for it)
    export(out, "encoder", layer, (torch.randn(2, 6, 32),), ["x"], grad=True)
    torch.manual_seed(2)
    export(out, "torchops", TorchOps(), (torch.randn(2, 3, 9, 9),), ["x"])


if __name__ == "__main__":
    main()
