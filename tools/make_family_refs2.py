#!/usr/bin/env python3
"""Reference data for the sliding-window, Gemma, Gemma 2 and Qwen3 decoders
(issue 25), in the format of tools/make_llm_refs.py (prompt.npy,
positions.npy, ref_logits.npy, ref_step_logits.npy, zero_cache.npy,
ref_ids.txt). It needs transformers >= 4.51 (Qwen3), hence its own venv:

    REF_VENV3=... LLAMA_CPP_DIR=... tools/make_family_refs2.sh

Writes under testdata/llm/ (FAM: mistral_swa, gemma, gemma2, qwen3):
  hf_mistral_swa/  MistralForCausalLM, sliding_window 4 (shorter than the
                   6-token prompt and its 8 generated tokens), 2 layers, with
                   testdata/tokenizers/spm (Llama style, as Mistral's); its
                   GGUF files (arch llama) carry no window, as llama.cpp's
                   converter writes them: mistral_swa_gguf_refs/ and
                   mistral_swa_q8_0_refs/ are the model without the window
  hf_FAM/          the family at hidden 32, 2 layers, head_dim 16 (not
                   hidden/heads), 4 heads / 2 kv heads, tied, f32, with a
                   tokenizer of testdata/tokenizers (gemma for Gemma, the
                   qwen2 BPE for Qwen3)
  FAM.gguf         hf_FAM converted by llama.cpp's convert_hf_to_gguf.py
                   (f32); references in FAM_gguf_refs/ when they differ
                   from hf_FAM's (Gemma 2: see below), else hf_FAM's
  hf_FAM/ref_text.json  text in, text out: a prompt through the checkpoint's
                   tokenizer, the greedy ids and transformers' decode of them
                   (also in FAM_gguf_refs/ and FAM_q8_0_refs/, from their models)
  FAM_q8_0.gguf    converted with --outtype q8_0; references FAM_q8_0_refs/
                   from the same transformers model loaded with the file's
                   tensors dequantized by the gguf package (Gemma's norms
                   minus the 1 the converter added)
Gemma 2's hf_gemma2 has query_pre_attn_scalar 32 (not head_dim 16): GGUF
has no key for it and llama.cpp scales by 1/sqrt(head_dim), so the
references of its GGUF files use query_pre_attn_scalar = head_dim.

Step logits come from one full forward per step (no KV cache, so no cache
class's window handling is involved); the greedy ids are also checked
against model.generate(do_sample=False)."""
import os
import shutil
import sys

import numpy as np
import torch

LLAMA_CPP = os.environ["LLAMA_CPP_DIR"]
sys.path.insert(0, os.path.join(LLAMA_CPP, "gguf-py"))
import gguf  # noqa: E402
from transformers import (AutoTokenizer, Gemma2Config, Gemma2ForCausalLM, GemmaConfig, GemmaForCausalLM,  # noqa: E402
                          MistralConfig, MistralForCausalLM, Qwen3Config, Qwen3ForCausalLM)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/llm"
TOKENIZERS = sys.argv[2] if len(sys.argv) > 2 else "testdata/tokenizers"
saved_argv, sys.argv = sys.argv, sys.argv[:1]
import make_llm_refs as llm  # noqa: E402  (PROMPT, NEW_TOKENS, llama_cpp_unpermute)
import make_tokenizer_refs as tokrefs  # noqa: E402  (convert: convert_hf_to_gguf.py)
from make_family_refs import scaled  # noqa: E402  (trained-like weight scales)
sys.argv = saved_argv


@torch.no_grad()
def write_refs(d, model, prompt):
    """make_llm_refs.write_refs's files, from uncached forwards."""
    seq, steps, toks = list(prompt), [], []
    for i in range(llm.NEW_TOKENS + 1):
        logits = model(torch.tensor([seq])).logits[0, -1].float()
        steps.append(logits.numpy())
        if i < llm.NEW_TOKENS:
            toks.append(int(torch.argmax(logits)))
            seq.append(toks[-1])
    eos, model.generation_config.eos_token_id = model.generation_config.eos_token_id, None  # as --ignore-eos
    gen = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=llm.NEW_TOKENS,
                         pad_token_id=0)[0, len(prompt):].tolist()
    model.generation_config.eos_token_id = eos
    assert gen == toks, f"{d}: generate() gave {gen}, uncached greedy {toks}"
    steps = np.stack(steps)
    top2 = np.sort(steps, axis=-1)[:, -2:]
    os.makedirs(d, exist_ok=True)
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
    print(f"{d}: ids {toks} (smallest top-1 margin {float(np.min(top2[:, 1] - top2[:, 0])):.4f})")


def save_dir(name, model, tok):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model.save_pretrained(d, safe_serialization=True)
    if tok is not None:
        tok.save_pretrained(d)
        for f in ("special_tokens_map.json", "added_tokens.json"):
            if os.path.exists(os.path.join(d, f)):
                os.remove(os.path.join(d, f))
    return d


def dequantized(path, like, arch, norm_shift):
    """A copy of model `like` holding the GGUF file's tensors (dequantized)."""
    cfg = like.config
    tmap = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    state = {}
    for hf, ref in like.state_dict().items():
        name = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
        if name is None or name not in tensors:
            assert hf == "lm_head.weight", f"{path}: no tensor for {hf} ({name})"
            continue
        t = tensors[name]
        data = gguf.quants.dequantize(t.data, t.tensor_type).reshape(tuple(ref.shape)).astype(np.float32)
        if arch == gguf.MODEL_ARCH.LLAMA and hf.endswith(("q_proj.weight", "k_proj.weight")):
            heads = cfg.num_attention_heads if "q_proj" in hf else cfg.num_key_value_heads
            data = llm.llama_cpp_unpermute(data, heads)
        if norm_shift and hf.endswith("norm.weight"):
            data = data - np.float32(1.0)
        state[hf] = torch.from_numpy(np.ascontiguousarray(data))
    if cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model = type(like)(cfg).eval()
    model.load_state_dict(state)
    kinds = sorted({t.tensor_type.name for t in tensors.values()})
    print(f"{path}: {len(tensors)} tensors, types {kinds}")
    return model


def family(name, cls, cfg, tok, pre, arch, seed, norm_shift=False, gguf_cfg=None, embed=1.0):
    """hf_NAME, NAME.gguf, NAME_q8_0.gguf and their references. gguf_cfg:
    config changes for what the GGUF files compute (Gemma 2's scalar);
    embed: the embeddings' scale (Gemma 2's residual stream would else be
    its scaled embedding, every greedy id the last token's)."""
    model = scaled(cls(cfg), seed)
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(embed)
    d = save_dir("hf_" + name, model, tok)
    write_refs(d, model, llm.PROMPT)
    tokrefs.write_text_refs(d, model, tok, llm.NEW_TOKENS)
    ref_model = model
    if gguf_cfg:
        ref_model = cls(type(cfg)(**{**cfg.to_dict(), **gguf_cfg, "attn_implementation": "eager"})).eval()
        ref_model.load_state_dict(model.state_dict())
        write_refs(os.path.join(OUT, name + "_gguf_refs"), ref_model, llm.PROMPT)
        tokrefs.write_text_refs(os.path.join(OUT, name + "_gguf_refs"), ref_model, tok, llm.NEW_TOKENS)
    f32 = os.path.join(OUT, name + ".gguf")
    tokrefs.convert(d, f32, pre)
    q8 = os.path.join(OUT, name + "_q8_0.gguf")
    tokrefs.convert(d, q8, pre, "q8_0")
    exact = dequantized(f32, ref_model, arch, norm_shift)
    for (k, a), b in zip(ref_model.state_dict().items(), exact.state_dict().values()):
        assert torch.allclose(a, b, rtol=0, atol=1e-6), f"{f32}: {k} differs from the checkpoint"
    q8_model = dequantized(q8, ref_model, arch, norm_shift)
    write_refs(os.path.join(OUT, name + "_q8_0_refs"), q8_model, llm.PROMPT)
    tokrefs.write_text_refs(os.path.join(OUT, name + "_q8_0_refs"), q8_model, tok, llm.NEW_TOKENS)


def main():
    torch.set_num_threads(1)
    spm_tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "spm"))
    qwen_tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "qwen2"))
    common = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0)
    # Mistral with a window shorter than the sequence and Mistral's (Llama-style)
    # tokenizer. Its GGUF files are llama arch without a window (llama.cpp's
    # converter writes none, llama.cpp attends to everything): their references
    # are the same weights without the window
    family("mistral_swa", MistralForCausalLM,
           MistralConfig(vocab_size=len(spm_tok), **common, head_dim=8, rms_norm_eps=1e-5, sliding_window=4,
                         tie_word_embeddings=False, bos_token_id=spm_tok.bos_token_id,
                         eos_token_id=spm_tok.eos_token_id, attn_implementation="eager"),
           spm_tok, "llama-spm", gguf.MODEL_ARCH.LLAMA, 21, gguf_cfg={"sliding_window": None})
    gemma_tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "gemma"))
    ids = dict(bos_token_id=gemma_tok.bos_token_id, eos_token_id=gemma_tok.eos_token_id, pad_token_id=0)
    family("gemma", GemmaForCausalLM,
           GemmaConfig(vocab_size=len(gemma_tok), **common, head_dim=16, rms_norm_eps=1e-6,
                       hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True, **ids,
                       attn_implementation="eager"),
           gemma_tok, "llama-spm", gguf.MODEL_ARCH.GEMMA, 22, norm_shift=True)
    family("gemma2", Gemma2ForCausalLM,
           Gemma2Config(vocab_size=len(gemma_tok), **common, head_dim=16, rms_norm_eps=1e-6,
                        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=32, sliding_window=4,
                        attn_logit_softcapping=10.0, final_logit_softcapping=30.0, tie_word_embeddings=True, **ids,
                        attn_implementation="eager"),
           gemma_tok, "llama-spm", gguf.MODEL_ARCH.GEMMA2, 23, norm_shift=True, gguf_cfg={"query_pre_attn_scalar": 16},
           embed=0.25)
    family("qwen3", Qwen3ForCausalLM,
           Qwen3Config(vocab_size=len(qwen_tok), **common, head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=True,
                       use_sliding_window=False, bos_token_id=qwen_tok.bos_token_id,
                       eos_token_id=qwen_tok.eos_token_id, attn_implementation="eager"),
           qwen_tok, "qwen2", gguf.MODEL_ARCH.QWEN3, 24)
    print("versions: torch", torch.__version__, "transformers", __import__("transformers").__version__,
          "numpy", np.__version__)


if __name__ == "__main__":
    main()
