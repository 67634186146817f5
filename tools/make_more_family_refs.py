#!/usr/bin/env python3
"""More reference checkpoints for issue 25, in the format of
tools/make_llm_refs.py (prompt.npy, positions.npy, ref_logits.npy,
ref_step_logits.npy, zero_cache.npy, ref_ids.txt), made with transformers
(from_config, save_pretrained):

    REF_VENV=... LLAMA_CPP_DIR=... tools/make_more_family_refs.sh

Writes under testdata/llm/:
  hf_mqa/   LlamaForCausalLM with one kv head (MQA) and an odd vocab of
            127, untied, 2 layers, hidden 32: at --tp 2 the kv head is
            copied to both devices and the head is padded to 128 rows.
            zero_cache.npy has the TP2 graph's cache shape [1, 6, 2, 8].
  hf_llama3/        LlamaForCausalLM, rope_scaling llama3 (factor 8, original
                    context 64: all three frequency bands), 2 layers, hidden
                    32, with testdata/tokenizers/llama3's tokenizer (Llama 3's
                    regex, ignore_merges; GGUF pre llama-bpe)
  llama3.gguf       hf_llama3 by convert_hf_to_gguf.py, f32: llama.cpp keeps
                    the rope scaling only as the tensor rope_freqs.weight
                    (references: hf_llama3's)
  llama3_q8_0.gguf  the same as q8_0; references in llama3_q8_0_refs/ from
                    the gguf package's dequantization of it in the HF model
  hf_phi3/, phi3.gguf, phi3_q8_0.gguf(+_refs)
                    Phi3ForCausalLM: fused qkv_proj and gate_up_proj, 4 heads
                    / 2 kv heads, untied, testdata/tokenizers/spm's tokenizer
                    with 3 added special tokens (643) and a model vocabulary
                    of 645 (odd: padded at --tp 2; the GGUF's [PAD] tokens)
  hf_gpt2/, gpt2.gguf, gpt2_q8_0.gguf(+_refs)
                    GPT2LMHeadModel: LayerNorm with bias, learned positions,
                    gelu_new (tanh), Conv1D [in, out] weights, tied head,
                    with testdata/tokenizers/gpt2's tokenizer (GPT-2's regex)
  qwen2_q8_0.gguf(+_refs)  hf_qwen2 (tools/make_family_refs.py) as q8_0
  ref_text.json     in hf_llama3, hf_phi3, hf_gpt2, hf_qwen2 and the q8_0
                    references: text in, text out (tools/make_tokenizer_refs.py's
                    write_text_refs) for the HF directory, its f32 GGUF and q8_0
The greedy ids are also checked against transformers' own
generate(do_sample=False)."""
import json
import os
import shutil
import sys

import numpy as np
import torch
from transformers import (AutoTokenizer, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Phi3Config,
                          Phi3ForCausalLM, Qwen2ForCausalLM)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/llm"
saved_argv, sys.argv = sys.argv, sys.argv[:1]
import make_llm_refs as llm  # noqa: E402  (write_refs: the shared reference format)
import make_family_refs as fam  # noqa: E402  (scaled: trained-like weights)
import make_tokenizer_refs as tokrefs  # noqa: E402  (convert: convert_hf_to_gguf.py)
sys.argv = saved_argv
import gguf  # noqa: E402  (LLAMA_CPP_DIR's gguf-py, on the path by make_tokenizer_refs)
TOKENIZERS = os.path.join(os.path.dirname(HERE), "testdata", "tokenizers")


def dequantized_model(path, model, arch):
    """model with the tensors of the GGUF file at path, dequantized by the
    gguf package and mapped back to HF names (llama's q/k rows permuted back
    from llama.cpp's interleaved-rotary order)."""
    cfg = model.config
    tmap = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    tensors = {t.name: t for t in gguf.GGUFReader(path).tensors}
    state = {}
    for key, ref in model.state_dict().items():
        name = tmap.get_name(key, try_suffixes=(".weight", ".bias"))
        if name is None or name not in tensors:
            assert key == "lm_head.weight" and cfg.tie_word_embeddings, f"{path}: no tensor for {key}"
            name = "token_embd.weight"
        t = tensors[name]
        data = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(ref.shape)
        if arch == gguf.MODEL_ARCH.GPT2 and key.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            data = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(ref.shape[::-1]).T
        if arch == gguf.MODEL_ARCH.LLAMA and key.endswith(("q_proj.weight", "k_proj.weight")):
            heads = cfg.num_attention_heads if "q_proj" in key else cfg.num_key_value_heads
            data = llm.llama_cpp_unpermute(data, heads)
        state[key] = torch.from_numpy(np.ascontiguousarray(data))
    out = type(model)(cfg).eval()
    out.load_state_dict(state)
    kinds = sorted({t.tensor_type.name for t in tensors.values()})
    print(f"{path}: {len(tensors)} tensors, types {kinds}")
    return out


def with_tokenizer(d, model, name="qwen2", tokenizer_class=None):
    """save_pretrained plus a shipped tokenizer (convert_hf_to_gguf needs one)."""
    model.save_pretrained(d, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZERS, name, f), os.path.join(d, f))
    if tokenizer_class:  # the converter's choice of vocab reader (Phi-3: GPT2Tokenizer -> BPE)
        path = os.path.join(d, "tokenizer_config.json")
        cfg = json.load(open(path))
        cfg["tokenizer_class"] = tokenizer_class
        json.dump(cfg, open(path, "w"), indent=2)


def gguf_pair(d, model, stem, arch, pre="qwen2"):
    """STEM.gguf (f32, the HF references apply) and STEM_q8_0.gguf with its
    own references from the dequantized model; text references for both
    (ref_text.json, with d's tokenizer)."""
    tok = AutoTokenizer.from_pretrained(d)
    tokrefs.write_text_refs(d, model, tok, llm.NEW_TOKENS)
    tokrefs.convert(d, os.path.join(OUT, stem + ".gguf"), pre)
    q8 = os.path.join(OUT, stem + "_q8_0.gguf")
    tokrefs.convert(d, q8, pre, "q8_0")
    refs = os.path.join(OUT, stem + "_q8_0_refs")
    os.makedirs(refs, exist_ok=True)
    deq = dequantized_model(q8, model, arch)
    llm.write_refs(refs, deq, llm.PROMPT)
    check_generate(refs, deq)
    tokrefs.write_text_refs(refs, deq, tok, llm.NEW_TOKENS)


@torch.no_grad()
def check_generate(d, model):
    """ref_ids.txt equals transformers' generate(do_sample=False)."""
    import transformers.generation.utils as gen_utils  # Debian's torch 1.13 fails to import fsdp on Python 3.11
    gen_utils.is_fsdp_managed_module = lambda module: False
    prompt = np.load(os.path.join(d, "prompt.npy"))
    want = [int(t) for t in open(os.path.join(d, "ref_ids.txt")).read().split()]
    out = model.generate(torch.from_numpy(prompt), do_sample=False, max_new_tokens=len(want), min_new_tokens=len(want),
                         pad_token_id=0)
    got = out[0, prompt.shape[1]:].tolist()
    assert got == want, f"{d}: generate gives {got}, the cached greedy loop {want}"


def hf_mqa():
    d = os.path.join(OUT, "hf_mqa")
    os.makedirs(d, exist_ok=True)
    cfg = LlamaConfig(vocab_size=127, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=1, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                      tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    model = fam.scaled(LlamaForCausalLM(cfg), 13)
    model.save_pretrained(d, safe_serialization=True)
    llm.write_refs(d, model, llm.PROMPT)
    check_generate(d, model)
    # the cache of the TP2 graph: the one kv head copied to both devices
    np.save(os.path.join(d, "zero_cache.npy"), np.zeros((1, len(llm.PROMPT), 2, 8), dtype=np.float32))


def hf_llama3():
    d = os.path.join(OUT, "hf_llama3")
    os.makedirs(d, exist_ok=True)
    cfg = LlamaConfig(vocab_size=420, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                      rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                      tie_word_embeddings=False, bos_token_id=0, eos_token_id=1)
    model = fam.scaled(LlamaForCausalLM(cfg), 14)
    with_tokenizer(d, model, "llama3")
    llm.write_refs(d, model, llm.PROMPT)
    check_generate(d, model)
    gguf_pair(d, model, "llama3", gguf.MODEL_ARCH.LLAMA, "llama-bpe")


def hf_phi3():
    """Phi-3 as Microsoft ships it: a Llama-style SentencePiece tokenizer
    (testdata/tokenizers/spm) with added special tokens after its vocabulary
    and a model vocabulary padded past them (the converter fills the rest
    with [PADi] tokens); EOS a list, as Phi-3's generation config."""
    d = os.path.join(OUT, "hf_phi3")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    tok = AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, "spm"))
    tok.add_special_tokens({"additional_special_tokens": ["<|endoftext|>", "<|assistant|>", "<|end|>"]})
    end_of_text, end = tok.convert_tokens_to_ids(["<|endoftext|>", "<|end|>"])
    cfg = Phi3Config(vocab_size=len(tok) + 2, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                     original_max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                     tie_word_embeddings=False, sliding_window=None, bos_token_id=tok.bos_token_id,
                     eos_token_id=[end_of_text, end], pad_token_id=0)
    model = fam.scaled(Phi3ForCausalLM(cfg), 16)
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    os.remove(os.path.join(d, "special_tokens_map.json"))
    llm.write_refs(d, model, llm.PROMPT)
    check_generate(d, model)
    gguf_pair(d, model, "phi3", gguf.MODEL_ARCH.PHI3, "llama-spm")
    # decode of ids past the tokenizer (the GGUF's [PAD] tokens), its added
    # specials and <unk>: transformers skips them all
    path = os.path.join(d, "ref_text.json")
    refs = json.load(open(path, encoding="utf-8"))
    refs["decode_ids"] = [len(tok), 441, cfg.vocab_size - 1, end, tok.unk_token_id, 448, end_of_text, 426]
    refs["decode_text"] = tok.decode(refs["decode_ids"], skip_special_tokens=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(refs, f, ensure_ascii=False, indent=1)
        f.write("\n")


def hf_gpt2():
    d = os.path.join(OUT, "hf_gpt2")
    os.makedirs(d, exist_ok=True)
    cfg = GPT2Config(vocab_size=420, n_positions=64, n_embd=32, n_layer=2, n_head=4, activation_function="gelu_new",
                     layer_norm_epsilon=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(cfg).eval()
    torch.manual_seed(16)
    with torch.no_grad():  # trained-like scales; Conv1D weights are [in, out]
        for name, p in model.named_parameters():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn_like(p))
            elif "wte" in name or "wpe" in name:
                p.copy_(torch.randn_like(p) * (0.5 if "wte" in name else 1.0))
            else:
                p.copy_(torch.randn_like(p) * 1.5 / p.shape[0] ** 0.5)
    with_tokenizer(d, model, "gpt2")
    path = os.path.join(d, "config.json")  # n_ctx as OpenAI's gpt2 config has it (the converter reads it)
    saved = json.load(open(path))
    saved["n_ctx"] = cfg.n_positions
    json.dump(saved, open(path, "w"), indent=2)
    model.config.num_key_value_heads = cfg.n_head  # (after saving) for write_refs' zero_cache.npy
    llm.write_refs(d, model, llm.PROMPT)
    check_generate(d, model)
    gguf_pair(d, model, "gpt2", gguf.MODEL_ARCH.GPT2, "gpt-2")


def qwen2_gguf():
    """hf_qwen2 (made by tools/make_family_refs.py) as q8_0 too, and text references."""
    d = os.path.join(OUT, "hf_qwen2")
    gguf_pair(d, Qwen2ForCausalLM.from_pretrained(d).eval(), "qwen2", gguf.MODEL_ARCH.QWEN2)


def main():
    torch.set_num_threads(1)
    which = sys.argv[2:] or ["mqa", "llama3", "phi3", "gpt2", "qwen2"]
    if "mqa" in which:
        hf_mqa()
    if "llama3" in which:
        hf_llama3()
    if "phi3" in which:
        hf_phi3()
    if "gpt2" in which:
        hf_gpt2()
    if "qwen2" in which:
        qwen2_gguf()


if __name__ == "__main__":
    main()
