#!/usr/bin/env python3
"""Reference data for `ppcc import` / `ppcc generate` (issue 13).

Run once by a developer (CI only reads the files it writes):

    tools/make_llm_refs.sh        # makes build/venv-ref, then runs this

Writes under testdata/llm/:
  hf_untied_f32/   2 layers, hidden 64, GQA 4/2 heads, untied head, f32,
                   sharded into two files through model.safetensors.index.json
  hf_tied_bf16/    the same shape with head_dim 32 (!= hidden/heads), tied
                   embeddings, bf16 weights, one model.safetensors
  hf_rope_llama3/  one layer, bf16, rope_scaling llama3 (factor 8, original
                   context 64, so all three frequency bands occur)
  hf_rope_linear/  one layer, bf16, tied, rope_scaling linear (factor 4)
  tiny.gguf        hf_untied_f32's weights as GGUF v3: F32 norms, F16
                   token_embd, Q8_0 attention and output, Q4_0 feed-forward;
                   q/k rows in llama.cpp's interleaved-rotary order
and beside each: prompt.npy (i64 [1, S]), positions.npy (i64 [S]),
ref_logits.npy (f32 [1, 1, V], the prompt's last position), ref_ids.txt
(greedy ids, one line) and ref_step_logits.npy (f32 [N, V], every step).

The references come from Hugging Face transformers' LlamaForCausalLM (f32
compute). For GGUF the tensors are dequantized with the gguf package and the
q/k rows permuted back before they go into the same HF model."""
import json
import os
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM
import gguf

OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/llm"
PROMPT = [1, 15, 27, 3, 100, 42]
NEW_TOKENS = 8


def make_model(seed, head_dim, tied, layers=2, rope_scaling=None):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim,
                      max_position_embeddings=64 if rope_scaling is None else 256,
                      rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=rope_scaling,
                      tie_word_embeddings=tied, attention_bias=False, mlp_bias=False,
                      bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg).eval()
    # HF's std-0.02 init gives nearly flat logits (greedy ids would hinge
    # on rounding); scale like a trained model instead.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif p.dim() == 2:
                fan_in = p.shape[1]
                p.copy_(torch.randn_like(p) * (1.0 if "embed" in name else 1.5 / fan_in ** 0.5))
    return model


@torch.no_grad()
def greedy(model, prompt):
    """Greedy ids with HF's KV cache; logits of every step."""
    ids = torch.tensor([prompt])
    out = model(ids, use_cache=True)
    past, logits = out.past_key_values, out.logits[:, -1, :]
    steps, toks = [logits[0].float().numpy()], []
    for _ in range(NEW_TOKENS):
        nxt = int(torch.argmax(logits, dim=-1))
        toks.append(nxt)
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[:, -1, :]
        steps.append(logits[0].float().numpy())
    # the same ids from one full forward per step (no cache), as a cross-check
    seq = list(prompt)
    for t in toks:
        full = model(torch.tensor([seq])).logits[0, -1]
        assert int(torch.argmax(full)) == t, "cached and uncached greedy disagree"
        seq.append(t)
    steps = np.stack(steps)
    top2 = np.sort(steps, axis=-1)[:, -2:]
    return toks, steps, float(np.min(top2[:, 1] - top2[:, 0]))


def write_refs(d, model, prompt):
    toks, steps, margin = greedy(model, prompt)
    np.save(os.path.join(d, "prompt.npy"), np.array([prompt], dtype=np.int64))
    np.save(os.path.join(d, "positions.npy"), np.arange(len(prompt), dtype=np.int64))
    np.save(os.path.join(d, "ref_logits.npy"), steps[0][None, None, :].astype(np.float32))
    np.save(os.path.join(d, "ref_step_logits.npy"), steps.astype(np.float32))
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    np.save(os.path.join(d, "zero_cache.npy"),
            np.zeros((1, len(prompt), cfg.num_key_value_heads, head_dim), dtype=np.float32))
    with open(os.path.join(d, "ref_ids.txt"), "w") as f:
        f.write(" ".join(str(t) for t in toks) + "\n")
    print(f"{d}: ids {toks} (smallest top-1 margin {margin:.4f})")


def hf_untied(root):
    d = os.path.join(root, "hf_untied_f32")
    os.makedirs(d, exist_ok=True)
    model = make_model(1, 16, False)
    model.save_pretrained(d, safe_serialization=True, max_shard_size="200KB")
    idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    assert len(set(idx["weight_map"].values())) == 2, "want exactly two shard files"
    write_refs(d, model, PROMPT)
    return model


def hf_tied_bf16(root):
    d = os.path.join(root, "hf_tied_bf16")
    os.makedirs(d, exist_ok=True)
    model = make_model(2, 32, True).to(torch.bfloat16)
    model.save_pretrained(d, safe_serialization=True)
    # reference: f32 compute on the bf16 weights (ppcc converts them once at
    # load); a fresh f32 model, so the rotary inv_freq buffer stays f32
    ref = make_model(2, 32, True)
    ref.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    write_refs(d, ref.eval(), PROMPT)


def hf_rope_scaled(root, name, seed, tied, rope_scaling):
    """One layer, bf16 weights, a scaled rotary embedding (f32 reference)."""
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    model = make_model(seed, 16, tied, 1, rope_scaling).to(torch.bfloat16)
    model.save_pretrained(d, safe_serialization=True)
    ref = make_model(seed, 16, tied, 1, rope_scaling)
    ref.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    write_refs(d, ref.eval(), PROMPT)


def llama_cpp_permute(w, n_head):
    """llama.cpp's convert_hf_to_gguf: rotate-half rows -> interleaved pairs."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def llama_cpp_unpermute(w, n_head):
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


GGUF_NAMES = {
    "model.embed_tokens.weight": ("token_embd.weight", gguf.GGMLQuantizationType.F16),
    "model.norm.weight": ("output_norm.weight", gguf.GGMLQuantizationType.F32),
    "lm_head.weight": ("output.weight", gguf.GGMLQuantizationType.Q8_0),
}
BLOCK_NAMES = {
    "input_layernorm.weight": ("attn_norm.weight", gguf.GGMLQuantizationType.F32),
    "self_attn.q_proj.weight": ("attn_q.weight", gguf.GGMLQuantizationType.Q8_0),
    "self_attn.k_proj.weight": ("attn_k.weight", gguf.GGMLQuantizationType.Q8_0),
    "self_attn.v_proj.weight": ("attn_v.weight", gguf.GGMLQuantizationType.Q8_0),
    "self_attn.o_proj.weight": ("attn_output.weight", gguf.GGMLQuantizationType.Q8_0),
    "post_attention_layernorm.weight": ("ffn_norm.weight", gguf.GGMLQuantizationType.F32),
    "mlp.gate_proj.weight": ("ffn_gate.weight", gguf.GGMLQuantizationType.Q4_0),
    "mlp.up_proj.weight": ("ffn_up.weight", gguf.GGMLQuantizationType.Q4_0),
    "mlp.down_proj.weight": ("ffn_down.weight", gguf.GGMLQuantizationType.Q4_0),
}


def gguf_name(hf):
    if hf in GGUF_NAMES:
        return GGUF_NAMES[hf]
    parts = hf.split(".")  # model.layers.N.rest
    name, qt = BLOCK_NAMES[".".join(parts[3:])]
    return f"blk.{parts[2]}.{name}", qt


def write_gguf(root, model):
    cfg = model.config
    path = os.path.join(root, "tiny.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("ppcc-tiny")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    deq_model = make_model(1, 16, False)
    deq = {}
    for hf, t in model.state_dict().items():
        data = t.float().numpy()
        if hf.endswith("q_proj.weight"):
            data = llama_cpp_permute(data, cfg.num_attention_heads)
        elif hf.endswith("k_proj.weight"):
            data = llama_cpp_permute(data, cfg.num_key_value_heads)
        name, qt = gguf_name(hf)
        if qt == gguf.GGMLQuantizationType.F32:
            stored = data.astype(np.float32)
            back = stored
        elif qt == gguf.GGMLQuantizationType.F16:
            stored = data.astype(np.float16)
            back = stored.astype(np.float32)
        else:
            stored = gguf.quants.quantize(data, qt)
            back = gguf.quants.dequantize(stored, qt).reshape(data.shape).astype(np.float32)
        w.add_tensor(name, stored, raw_dtype=qt)
        if hf.endswith("q_proj.weight"):
            back = llama_cpp_unpermute(back, cfg.num_attention_heads)
        elif hf.endswith("k_proj.weight"):
            back = llama_cpp_unpermute(back, cfg.num_key_value_heads)
        deq[hf] = torch.from_numpy(np.ascontiguousarray(back))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    deq_model.load_state_dict(deq)
    d = os.path.join(root, "gguf_refs")
    os.makedirs(d, exist_ok=True)
    write_refs(d, deq_model.eval(), PROMPT)
    # check the file with the package's own reader
    r = gguf.GGUFReader(path)
    kinds = sorted({t.tensor_type.name for t in r.tensors})
    print(f"{path}: {len(r.tensors)} tensors, types {kinds}")


def write_kquants(root):
    """Q4_K, Q6_K and BF16 blocks (random bytes, sane scales) and the gguf
    package's dequantization of them, for the reader's unit test."""
    rng = np.random.default_rng(7)
    path = os.path.join(root, "kquants.gguf")
    w = gguf.GGUFWriter(path, "llama")
    expect = {}
    for name, qt, block, size in (("q4_k", gguf.GGMLQuantizationType.Q4_K, 256, 144),
                                  ("q6_k", gguf.GGMLQuantizationType.Q6_K, 256, 210)):
        raw = rng.integers(0, 256, size=(2, 2 * size), dtype=np.uint8)
        for r in range(2):
            for b in range(2):
                blk = raw[r, b * size:(b + 1) * size]
                if qt == gguf.GGMLQuantizationType.Q4_K:  # d, dmin first
                    blk[0:2] = np.frombuffer(np.float16(0.01 * (r + 1)).tobytes(), np.uint8)
                    blk[2:4] = np.frombuffer(np.float16(0.02 * (b + 1)).tobytes(), np.uint8)
                else:  # d last
                    blk[208:210] = np.frombuffer(np.float16(0.003 * (r + b + 1)).tobytes(), np.uint8)
        w.add_tensor(name, raw, raw_dtype=qt)
        expect[name] = gguf.quants.dequantize(raw, qt).reshape(2, 2 * block).astype(np.float32)
    bf = (rng.standard_normal((3, 8)).astype(np.float32))
    bf_bits = (bf.view(np.uint32) >> 16).astype(np.uint16)  # truncation: exact in bf16
    w.add_tensor("bf16", bf_bits, raw_dtype=gguf.GGMLQuantizationType.BF16)
    expect["bf16"] = (bf_bits.astype(np.uint32) << 16).view(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for name, arr in expect.items():
        np.save(os.path.join(root, f"kquants_{name}.npy"), arr)
    print(f"{path}: Q4_K, Q6_K, BF16 with their dequantized values")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    untied = hf_untied(OUT)
    hf_tied_bf16(OUT)
    write_gguf(OUT, untied)
    write_kquants(OUT)
    hf_rope_scaled(OUT, "hf_rope_llama3", 3, False,
                   {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 64})
    hf_rope_scaled(OUT, "hf_rope_linear", 4, True, {"rope_type": "linear", "factor": 4.0})
    print("versions: torch", torch.__version__, "transformers", __import__("transformers").__version__,
          "gguf", getattr(gguf, "__version__", "?"), "numpy", np.__version__)


if __name__ == "__main__":
    main()
