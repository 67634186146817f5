#!/usr/bin/env python3
"""PyTorch eager reference of the forward that tools/gen_llama writes.

Same architecture and op order as gen_llama's model.json: token embedding,
per block RMSNorm -> Q/K/V linear -> rotary (half-split, theta 10000) ->
KV-cache write -> causal grouped-query attention -> output projection ->
residual -> RMSNorm -> SwiGLU FFN -> residual; final RMSNorm, the last
position's logits and their argmax. float32 throughout.

  torch_llama_ref.py --layers 4 --hidden 512 --heads 8 --kv-heads 4 \
      --ffn 1408 --vocab 4096 --seq 128 [--threads 2] [--repeat 10]
      [--weights W.safetensors] [--compare LOGITS.npy] [--save LOGITS.npy]

Prints one line per timed forward set:
  torch forward (steady state, N runs): min X ms, median Y ms
after one warm-up forward. Inputs are those of `ppcc run` with random
inputs: tokens all 0 (integers are j mod shape[0], and shape[0] is the
batch of 1), positions 0..S-1. With --weights (written by
tools/gen_safetensors with the seed ppcc run used) the weights are the
same as ppcc's, and --compare checks ppcc's logits.npy against torch's
(|got - ref| <= 1e-3 * (1 + |ref|)); exit 1 when they differ.
Without --weights the weights are random (timing only). --save writes
torch's logits (how testdata/reference/ was made: see its README).
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {info['dtype']}, expected F32")
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype=np.float32).reshape(info["shape"]).copy())
    return out


def random_weights(c):
    g = torch.Generator().manual_seed(0)
    D = c.hidden // c.heads

    def w(rows, cols):
        s = (3.0 / rows) ** 0.5
        return (torch.rand(rows, cols, generator=g) * 2 - 1) * s

    W = {"token_embd.weight": w(c.vocab, c.hidden), "output_norm.weight": torch.rand(c.hidden, generator=g),
         "output.weight": w(c.vocab, c.hidden)}
    for b in range(c.layers):
        p = f"blk.{b}."
        W[p + "attn_norm.weight"] = torch.rand(c.hidden, generator=g)
        W[p + "ffn_norm.weight"] = torch.rand(c.hidden, generator=g)
        W[p + "attn_q.weight"] = w(c.heads * D, c.hidden)
        W[p + "attn_k.weight"] = w(c.kv_heads * D, c.hidden)
        W[p + "attn_v.weight"] = w(c.kv_heads * D, c.hidden)
        W[p + "attn_output.weight"] = w(c.hidden, c.heads * D)
        W[p + "ffn_gate.weight"] = w(c.ffn, c.hidden)
        W[p + "ffn_up.weight"] = w(c.ffn, c.hidden)
        W[p + "ffn_down.weight"] = w(c.hidden, c.ffn)
    return W


def rms_norm(x, w, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotary(x, cos, sin):
    # x [B, S, H, D]; half-split pairs (j, j + D/2), as ppcc's rotary.
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def forward(c, W, tokens, positions, caches, cos, sin):
    B, S = tokens.shape
    D = c.hidden // c.heads
    group = c.heads // c.kv_heads
    scale = 1.0 / D ** 0.5
    mask = torch.full((S, S), float("-inf")).triu(1)
    x = torch.nn.functional.embedding(tokens, W["token_embd.weight"])
    for b in range(c.layers):
        p = f"blk.{b}."
        h = rms_norm(x, W[p + "attn_norm.weight"])
        q = torch.nn.functional.linear(h, W[p + "attn_q.weight"]).view(B, S, c.heads, D)
        k = torch.nn.functional.linear(h, W[p + "attn_k.weight"]).view(B, S, c.kv_heads, D)
        v = torch.nn.functional.linear(h, W[p + "attn_v.weight"]).view(B, S, c.kv_heads, D)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        kc, vc = caches[b]
        kc = kc.index_copy(1, positions, k)
        vc = vc.index_copy(1, positions, v)
        qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
        if group > 1:
            kt = kt.repeat_interleave(group, dim=1)
            vt = vt.repeat_interleave(group, dim=1)
        scores = torch.matmul(qt, kt.transpose(-1, -2)) * scale + mask
        attn = torch.matmul(torch.softmax(scores, dim=-1), vt)
        attn = attn.transpose(1, 2).reshape(B, S, c.heads * D)
        x = x + torch.nn.functional.linear(attn, W[p + "attn_output.weight"])
        h = rms_norm(x, W[p + "ffn_norm.weight"])
        gate = torch.nn.functional.linear(h, W[p + "ffn_gate.weight"])
        up = torch.nn.functional.linear(h, W[p + "ffn_up.weight"])
        x = x + torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, W[p + "ffn_down.weight"])
    last = rms_norm(x, W["output_norm.weight"])[:, S - 1:S]
    logits = torch.nn.functional.linear(last, W["output.weight"])
    return logits, logits.argmax(-1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in [("layers", 2), ("hidden", 64), ("heads", 4), ("kv-heads", 2), ("ffn", 128), ("vocab", 256),
                          ("seq", 8), ("batch", 1), ("threads", 2), ("repeat", 10)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--weights")
    ap.add_argument("--compare")
    ap.add_argument("--save")
    c = ap.parse_args()
    torch.set_num_threads(c.threads)
    W = load_safetensors(c.weights) if c.weights else random_weights(c)
    D = c.hidden // c.heads
    tokens = torch.zeros(c.batch, c.seq, dtype=torch.long)
    positions = torch.arange(c.seq)
    caches = [(torch.zeros(c.batch, c.seq, c.kv_heads, D), torch.zeros(c.batch, c.seq, c.kv_heads, D))
              for _ in range(c.layers)]
    freq = torch.exp(torch.arange(D // 2, dtype=torch.float32) * (-2.0 * np.log(10000.0) / D))
    angle = positions.to(torch.float32)[:, None] * freq[None, :]  # [S, D/2]
    cos, sin = torch.cos(angle)[None, :, None, :], torch.sin(angle)[None, :, None, :]
    with torch.no_grad():
        logits, _ = forward(c, W, tokens, positions, caches, cos, sin)  # warm-up
        ms = []
        for _ in range(c.repeat):
            t0 = time.perf_counter()
            forward(c, W, tokens, positions, caches, cos, sin)
            ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    n = len(ms)
    median = ms[n // 2] if n % 2 else 0.5 * (ms[n // 2 - 1] + ms[n // 2])
    print(f"torch {torch.__version__} forward (steady state, {n} runs, {c.threads} threads): "
          f"min {ms[0]:.3f} ms, median {median:.3f} ms")
    if c.save:
        np.save(c.save, logits.numpy())
    if c.compare:
        got = np.load(c.compare)
        ref = logits.numpy()
        err = np.abs(got - ref)
        ok = bool(got.shape == ref.shape and np.all(err <= 1e-3 * (1 + np.abs(ref))))
        print(f"compare {c.compare}: max abs error {err.max():.3g}: {'ok' if ok else 'FAIL'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
