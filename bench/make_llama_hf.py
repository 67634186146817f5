"""Writes a random Llama checkpoint (transformers from_config, f32
safetensors) for the bench scripts: the model of issue 23.
  python make_llama_hf.py OUT_DIR [HIDDEN] [LAYERS] [HEADS] [KV_HEADS] [FFN] [VOCAB]"""
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM

out = sys.argv[1]
hidden, layers, heads, kv, ffn, vocab = (int(a) for a in (sys.argv[2:] + ["1024", "8", "16", "4", "2816", "8192"][len(sys.argv) - 2:]))
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                  intermediate_size=ffn, vocab_size=vocab, max_position_embeddings=2048, tie_word_embeddings=False,
                  torch_dtype="float32")
model = LlamaForCausalLM(cfg).to(torch.float32).eval()
model.save_pretrained(out, safe_serialization=True)
