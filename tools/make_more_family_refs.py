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
The greedy ids are also checked against transformers' own
generate(do_sample=False)."""
import os
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/llm"
saved_argv, sys.argv = sys.argv, sys.argv[:1]
import make_llm_refs as llm  # noqa: E402  (write_refs: the shared reference format)
import make_family_refs as fam  # noqa: E402  (scaled: trained-like weights)
sys.argv = saved_argv


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


def main():
    torch.set_num_threads(1)
    hf_mqa()


if __name__ == "__main__":
    main()
