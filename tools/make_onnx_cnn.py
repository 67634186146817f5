#!/usr/bin/env python3
"""Exports a tiny ViT (transformers ViTForImageClassification from a config)
and a tiny ResNet-18-style CNN (torch.nn: conv/BatchNorm/ReLU stem, max
pool, two basic blocks, one strided with a 1x1 downsample, global average
pool, linear head) with torch.onnx.export, opset 17, static shapes, and
writes ONNX Runtime's outputs on a fixed image as the reference:
  vit      patch embedding by a strided Conv, 2 encoder layers, logits
  resnet   Conv+BatchNormalization (folded at import), MaxPool,
           GlobalAveragePool, Flatten, Gemm
Run once by a developer (CI only reads the shipped files), with a venv
holding torch 1.13, transformers==4.46.3, onnx==1.17.0, onnxruntime==1.20.1:
    build/refvenv/bin/python tools/make_onnx_cnn.py testdata/onnx
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers


class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(8),
                                        torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1))
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, pixels):
        y = self.layer2(self.layer1(self.stem(pixels)))
        return self.fc(torch.flatten(self.pool(y), 1))


class Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        return self.m(pixel_values=pixel_values, return_dict=False)[0]


def randomize_bn(model):
    g = torch.Generator().manual_seed(3)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def export(out, name, model, pixels, fold=True):
    model.eval()
    path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(model, (pixels,), path, opset_version=17, input_names=["pixel_values"],
                          output_names=["logits"], do_constant_folding=fold,
                          training=torch.onnx.TrainingMode.EVAL if fold else torch.onnx.TrainingMode.PRESERVE)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"pixel_values": pixels.numpy()})
    np.save(os.path.join(out, f"{name}.in.pixel_values.npy"), pixels.numpy())
    np.save(os.path.join(out, f"{name}.ref.logits.npy"), logits)
    ops = sorted({n.op_type for n in m.graph.node})
    print(f"{name}: {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes, ops {ops}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/onnx"
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=64, num_labels=10, attn_implementation="eager")
    export(out, "vit", Logits(transformers.ViTForImageClassification(cfg)), torch.randn(2, 3, 16, 16))
    torch.manual_seed(1)
    resnet = ResNet()
    randomize_bn(resnet)
    # no constant folding: the BatchNormalization nodes stay for the importer to fold
    export(out, "resnet", resnet, torch.randn(2, 3, 16, 16), fold=False)


if __name__ == "__main__":
    main()
