#!/usr/bin/env python3
"""Reference data for the decoder families beyond Llama (issue 25), in the
format of tools/make_llm_refs.py (prompt.npy, positions.npy, ref_logits.npy,
ref_step_logits.npy, zero_cache.npy, ref_ids.txt), made with transformers
(from_config, save_pretrained) and llama.cpp's convert_hf_to_gguf.py:

    REF_VENV=... LLAMA_CPP_DIR=... tools/make_family_refs.sh

Writes under testdata/llm/:
  hf_qwen2/       Qwen2ForCausalLM, 2 layers, hidden 32, 4 heads / 2 kv
                  heads, q/k/v biases, tied embeddings, f32, with the tiny
                  Qwen2-style tokenizer of testdata/tokenizers/qwen2
  qwen2.gguf      hf_qwen2 converted to GGUF f32 (arch qwen2; its q/k rows are
                  not permuted); references: hf_qwen2's
  hf_llama_bias/  LlamaForCausalLM with attention_bias and mlp_bias (q/k/v/o
                  and gate/up/down biases), 2 layers, hidden 32, untied"""
import os
import shutil
import sys

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/llm"
TOKENIZERS = sys.argv[2] if len(sys.argv) > 2 else "testdata/tokenizers"
saved_argv, sys.argv = sys.argv, sys.argv[:1]
import make_llm_refs as llm  # noqa: E402  (write_refs: the shared reference format)
import make_tokenizer_refs as tokrefs  # noqa: E402  (convert: convert_hf_to_gguf.py)
sys.argv = saved_argv


def scaled(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.5 * torch.randn_like(p))
            elif p.dim() == 2:
                p.copy_(torch.randn_like(p) * (1.0 if "embed" in name else 1.5 / p.shape[1] ** 0.5))
    return model.eval()


def main():
    # Qwen2: q/k/v biases, tied, its own tokenizer
    d = os.path.join(OUT, "hf_qwen2")
    os.makedirs(d, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "qwen2"))
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6,
                      rope_theta=10000.0, tie_word_embeddings=True, use_sliding_window=False,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = scaled(Qwen2ForCausalLM(cfg), 11)
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    for f in ("special_tokens_map.json",):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    llm.write_refs(d, model, llm.PROMPT)
    tokrefs.convert(d, os.path.join(OUT, "qwen2.gguf"), "qwen2")
    # Llama with every projection bias
    d = os.path.join(OUT, "hf_llama_bias")
    os.makedirs(d, exist_ok=True)
    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                      tie_word_embeddings=False, attention_bias=True, mlp_bias=True, bos_token_id=1, eos_token_id=2)
    model = scaled(LlamaForCausalLM(cfg), 12)
    model.save_pretrained(d, safe_serialization=True)
    llm.write_refs(d, model, llm.PROMPT)


if __name__ == "__main__":
    main()
