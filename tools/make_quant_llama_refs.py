#!/usr/bin/env python3
"""Tiny Llama checkpoint for the quantized-GGUF accuracy tests (issue 24).

Run by tools/make_quant_llama_refs.sh (which then converts it with
llama.cpp's convert_hf_to_gguf.py, quantizes it with llama-quantize and
records llama.cpp's logits and greedy ids). Writes OUT_DIR/hf/: a
LlamaForCausalLM (2 layers, hidden 256 so the K formats' 256-value blocks
fit every row, GQA 4/2 heads, ffn 256) and a SentencePiece tokenizer of
256 pieces trained on generated text (convert_hf_to_gguf needs one)."""
import os
import sys

import numpy as np
import sentencepiece as spm
import torch
from transformers import LlamaConfig, LlamaForCausalLM

OUT = sys.argv[1]
# optional sizes (bench/bench_quant_vs_llamacpp.sh): LAYERS HIDDEN FFN HEADS KV_HEADS
LAYERS, HIDDEN, FFN, HEADS, KV_HEADS = (int(x) for x in (sys.argv[2:7] if len(sys.argv) >= 7 else (2, 256, 256, 4, 2)))
VOCAB = 256


def tokenizer(hf):
    rng = np.random.default_rng(24)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, size=rng.integers(2, 8))) for _ in range(400)]
    text = os.path.join(OUT, "corpus.txt")
    with open(text, "w") as f:
        for _ in range(3000):
            f.write(" ".join(rng.choice(words, size=12)) + "\n")
    spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(hf, "tokenizer"), vocab_size=VOCAB,
                                   model_type="bpe", character_coverage=1.0, bos_id=1, eos_id=2, unk_id=0,
                                   pad_id=-1, minloglevel=2)
    os.remove(os.path.join(hf, "tokenizer.vocab"))


def main():
    hf = os.path.join(OUT, "hf")
    os.makedirs(hf, exist_ok=True)
    tokenizer(hf)
    torch.manual_seed(24)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=128 if len(sys.argv) < 7 else 512,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                      bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg).eval()
    # scaled like a trained model (peaky logits: greedy ids do not hinge on
    # rounding), as tools/make_llm_refs.py does
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif p.dim() == 2:
                p.copy_(torch.randn_like(p) * (1.0 if "embed" in name else 1.5 / p.shape[1] ** 0.5))
    model.save_pretrained(hf, safe_serialization=True)
    print(f"{hf}: written")


if __name__ == "__main__":
    main()
