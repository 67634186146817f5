#!/usr/bin/env python3
"""Reference data for ppcc's tokenizers (src/import/tokenizer*.c).

Run once by a developer (CI only reads what it writes):

    REF_VENV=/path/to/venv LLAMA_CPP_DIR=/path/to/llama.cpp tools/make_tokenizer_refs.sh

Trains tiny tokenizers (so the shipped files stay small) and writes under
testdata/tokenizers/:
  spm/        a SentencePiece BPE model with byte fallback (Llama style),
              as transformers' LlamaTokenizerFast saves it (tokenizer.json,
              tokenizer.model), beside a tiny LlamaForCausalLM of its vocab
  spm.gguf    the same directory converted by llama.cpp's convert_hf_to_gguf.py
              (tokenizer.ggml.model "llama": tokens, scores, token types)
  gpt2/       a byte-level BPE (GPT-2 pre-tokenizer regex) in tokenizer.json
              beside a tiny LlamaForCausalLM of its vocab
  gpt2.gguf   that directory converted (tokenizer.ggml.model "gpt2", pre "gpt-2")
  qwen2/      a byte-level BPE with Qwen2's Split regex and NFC normalizer,
              beside a tiny Qwen2ForCausalLM
  qwen2.gguf  converted (pre "qwen2")
  gemma/      a SentencePiece BPE model as Gemma's (no dummy prefix, <pad>
              <eos> <bos> <unk> at ids 0-3, user-defined <start_of_turn>
              <end_of_turn>), as GemmaTokenizerFast saves it
  gemma.gguf  converted beside a tiny GemmaForCausalLM (the converter writes
              add_space_prefix false for Gemma, as GemmaTokenizerFast does)
  llama3/     a byte-level BPE as Llama 3's (its Split regex, ignore_merges,
              BOS added by a TemplateProcessing post-processor)
  llama3.gguf converted (pre "llama-bpe")
and testdata/tokenizers/refs.json: for every text line (the last ones not
in NFC, listed in "not_nfc"), the ids of
AutoTokenizer(text) (special tokens added as the tokenizer does by default)
and decode(ids, skip_special_tokens=True) for each tokenizer; "decode": id
sequences that cut characters (prefixes of the lines' ids, random ids with
byte tokens) and their decode(skip_special_tokens=True); plus, for
spm/ and gpt2/, a greedy generation from a text prompt (ids and text). In
gpt2/ the config's eos_token_id is then set to a later generated id (after
its GGUF was made), so that generation stops early there.
qwen2/, gemma/ and llama3/ keep only their tokenizer files (their models are
only for the GGUF files)."""
import json
import os
import random
import subprocess
import sys
import unicodedata

import torch
from transformers import (AutoTokenizer, GemmaConfig, GemmaForCausalLM, GemmaTokenizerFast, LlamaConfig,
                          LlamaForCausalLM, LlamaTokenizerFast, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM)
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers, Regex
import sentencepiece as spm

OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/tokenizers"
LLAMA_CPP = os.environ["LLAMA_CPP_DIR"]

WORDS = ("the quick brown fox jumps over lazy dog model token graph tensor pipeline stage device shard "
         "compile kernel weight cache prompt decode attention layer norm rotary bias vocab merge byte").split()
UNICODE = ["café", "naïve", "Straße", "Ελληνικά", "русский язык", "中文字符", "日本語のテキスト", "한국어",
           "العربية", "हिन्दी", "ñandú", "Ångström", "œuvre", "ﬁne", "µs", "½ ¾", "①②③", "٣٤٥", "Ⅻ"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🚀🚀", "❤️", "🇩🇪", "✅", "🦙"]
PUNCT = ["!", "?", "...", ",", ";", ":", "--", "()", "[x]", "{y}", "'", '"', "#", "$5", "100%", "a+b=c", "<tag>", "@me"]
CONTRACTIONS = ["don't", "I'm", "you're", "we've", "she'll", "he'd", "it's", "'s", "I'LL", "WE'VE", "O'Neil"]
# every tokenizer's special tokens written in text (matched first, as transformers does)
SPECIAL_LINES = ["<|endoftext|>hello<|im_start|>", " <|endoftext|> x", "<start_of_turn>user\nhi<end_of_turn>\n",
                 "<|begin_of_text|>x<|eot_id|>", "<bos>a<eos> <pad>", "</s>b<unk> <s>c"]
# text that is not NFC (decomposed, marks out of canonical order, Hangul jamo,
# singletons, composition exclusions): Qwen2's NFC normalizer changes it
NFC_LINES = ["cafe\u0301 au lait", "A\u030angstro\u0308m \u212b \u212a \u2126", "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165",
             "\uac00\u11a8 \u1100\u1161\u0301", "a\u0323\u0307 vs a\u0307\u0323 q\u0307\u0323", "\u0958 \u0915\u093c \u0f73 \U0001d15e",
             "e\u0301\u0301 \u00e9\u0327 o\u0308\u0304", "\u0301leading mark \u0344\u0340",
             "Z\u0351\u036b\u0343a\u0310\u0313l\u0352g\u0346o\u0315", "\U0001f44d\u0301 n\u0303andu\u0301 1\u20e3",
             "\u0391\u0313\u0301\u0345 \u03c9\u0342\u0345", "I\u0307stanbul S\u0327ehir \u0130"]
SPACES = ["  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\t\t", "    \n"]


def make_lines(rng, n):
    lines = ["", " ", "a", "Hello world", " Hello world", "Hello  world ", "hello\nworld", "3.14159 and 1,000,000",
             "12345678901234567890", "The year 2024; 42 apples", "x = f(y) + 3 * z", "def f(x):\n    return x + 1\n",
             "<s> not special", "line one\r\nline two", "   leading spaces", "trailing spaces   ", "tab\there",
             "emoji 😀 in text", "mixed 中文 and English", "ﬁ ligature", "ALL CAPS TEXT", "don't stop",
             "I'VE SEEN IT", "we'Ve a'lL"]
    pools = [WORDS, UNICODE, EMOJI, PUNCT, CONTRACTIONS]
    while len(lines) < n:
        parts = []
        for _ in range(rng.randint(1, 9)):
            pool = rng.choice(pools + [WORDS, WORDS])
            parts.append(rng.choice(pool))
            parts.append(rng.choice([" ", " ", " ", "", rng.choice(SPACES)]))
            if rng.random() < 0.15:
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 7))))
        lines.append("".join(parts))
    return lines


def training_text(rng):
    return make_lines(rng, 3000)


def train_spm(path, text, gemma=False):
    """Llama's settings, or Gemma's: no dummy prefix, its special pieces."""
    ids = (dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
                unk_piece="<unk>", user_defined_symbols=["<start_of_turn>", "<end_of_turn>"]) if gemma else
           dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1))
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_prefix=path, model_type="bpe", vocab_size=640,
                                   byte_fallback=True, character_coverage=0.98, split_digits=True,
                                   add_dummy_prefix=not gemma, remove_extra_whitespaces=False,
                                   allow_whitespace_only_pieces=True, normalization_rule_name="identity", **ids,
                                   num_threads=2, minloglevel=2)


def train_bpe(text, qwen, llama3=False):
    tok = Tokenizer(models.BPE(ignore_merges=llama3))
    if qwen or llama3:
        pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}" + ("{1,3}" if llama3 else "") +
                   r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
        if qwen:
            tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        special = (["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"] if llama3 else
                   ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        special = ["<|endoftext|>"]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(text, trainer)
    if llama3:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                          special_tokens=[("<|begin_of_text|>", 0)])])
        return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                                       unk_token=None)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token=None)
    return fast


def scale_weights(model):
    """Std-0.02 init gives flat logits; scale like a trained model (as tools/make_llm_refs.py)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            elif "bias" in name:
                p.copy_(0.1 * torch.randn_like(p))
            elif p.dim() == 2:
                p.copy_(torch.randn_like(p) * (1.0 if "embed" in name else 1.5 / p.shape[1] ** 0.5))


def tiny_model(kind, vocab, tok):
    torch.manual_seed(7)
    common = dict(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    if kind == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common, rms_norm_eps=1e-6, use_sliding_window=False))
    elif kind == "gemma":
        model = GemmaForCausalLM(GemmaConfig(**{**common, "tie_word_embeddings": True}, head_dim=8, rms_norm_eps=1e-6))
    else:
        model = LlamaForCausalLM(LlamaConfig(**common, rms_norm_eps=1e-5))
    model = model.eval()
    scale_weights(model)
    return model


def convert(src, dst, pre, outtype="f32"):
    """llama.cpp's convert_hf_to_gguf.py (f32, or outtype: q8_0...). A tiny
    trained BPE has no known pre-tokenizer hash, so the converter is told
    which one it is."""
    code = ("import sys, runpy; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import torch\n"  # an older torch lacks dtypes the converter names in a table
            "for n in ('float8_e4m3fn', 'float8_e5m2', 'uint16', 'uint32', 'uint64'):\n"
            "    hasattr(torch, n) or setattr(torch, n, type(n, (), {}))\n"
            "import conversion.base as b\n"
            "b.TextModel.get_vocab_base_pre = lambda self, tok: %r\n"
            "sys.argv = ['convert_hf_to_gguf.py', %r, '--outfile', %r, '--outtype', %r]\n"
            "runpy.run_path(%r, run_name='__main__')\n") % (
        LLAMA_CPP, os.path.join(LLAMA_CPP, "gguf-py"), pre, src, dst, outtype, os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"))
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)


def decode_cases(rng, lines, ids, tok):
    """Id sequences for decode: prefixes of the non-ASCII lines' ids (a
    generation stopping inside a character), then random ids, half of them
    tokens that are no whole character alone (byte tokens, byte-level
    pieces of a character), with special tokens among them. No token that
    decodes to a NUL (the C test reads the texts as C strings)."""
    cases = [i[:rng.randint(1, len(i) - 1)] for line, i in zip(lines, ids) if len(i) > 1 and max(line) > "\x7f"][:80]
    pieces = [tok.decode([i]) for i in range(len(tok))]
    partial = [i for i, p in enumerate(pieces) if "\ufffd" in p]
    other = [i for i, p in enumerate(pieces) if "\x00" not in p]
    for _ in range(80):
        cases.append([rng.choice(partial) if rng.random() < 0.5 else rng.choice(other)
                      for _ in range(rng.randint(1, 10))])
    if tok.unk_token_id is not None:
        cases.append([tok.unk_token_id] + cases[-1] + [tok.unk_token_id])
    return cases


@torch.no_grad()
def greedy_text(model, tok, prompt, n):
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    seq = ids[0].tolist()  # greedy, one full forward per step, EOS not stopping
    gen = []
    for _ in range(n):
        gen.append(int(torch.argmax(model(torch.tensor([seq + gen])).logits[0, -1])))
    return {"prompt": prompt, "prompt_ids": ids[0].tolist(), "ids": gen, "text": tok.decode(gen, skip_special_tokens=True)}


# the prompt of the families' text references (ref_text.json)
PROMPT_TEXT = "the quick brown fox, café 42 😀 jumps over"


def write_text_refs(d, model, tok, n):
    """d/ref_text.json: text in, text out: PROMPT_TEXT through the
    checkpoint's tokenizer, n greedy ids (EOS not stopping) and
    transformers' decode of them."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "ref_text.json"), "w", encoding="utf-8") as f:
        json.dump(greedy_text(model, tok, PROMPT_TEXT, n), f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    rng = random.Random(25)
    os.makedirs(OUT, exist_ok=True)
    train = training_text(random.Random(1))
    decode_lines = make_lines(rng, 300) + SPECIAL_LINES  # the NFC lines came later: decode cases as before
    lines = decode_lines + NFC_LINES
    # the lines NFC changes (a GGUF tokenizer does not normalize, as llama.cpp)
    refs = {"lines": lines, "not_nfc": [i for i, line in enumerate(lines) if unicodedata.normalize("NFC", line) != line],
            "tokenizers": {}, "generate": {}}
    made = {}
    # SentencePiece (Llama style)
    d = os.path.join(OUT, "spm")
    os.makedirs(d, exist_ok=True)
    train_spm(os.path.join(OUT, "spm_train"), train)
    tok = LlamaTokenizerFast(vocab_file=os.path.join(OUT, "spm_train.model"), from_slow=True, legacy=True,
                             add_prefix_space=True)
    os.remove(os.path.join(OUT, "spm_train.vocab"))
    os.replace(os.path.join(OUT, "spm_train.model"), os.path.join(d, "tokenizer.model"))
    made["spm"] = (tok, "llama", "llama", 20)
    made["gpt2"] = (train_bpe(train, qwen=False), "llama", "gpt-2", 12)
    made["qwen2"] = (train_bpe(train, qwen=True), "qwen2", "qwen2", 0)
    d = os.path.join(OUT, "gemma")
    os.makedirs(d, exist_ok=True)
    train_spm(os.path.join(OUT, "gemma_train"), train, gemma=True)
    tok = GemmaTokenizerFast(vocab_file=os.path.join(OUT, "gemma_train.model"))
    os.remove(os.path.join(OUT, "gemma_train.vocab"))
    os.replace(os.path.join(OUT, "gemma_train.model"), os.path.join(d, "tokenizer.model"))
    made["gemma"] = (tok, "gemma", "default", 0)
    made["llama3"] = (train_bpe(train, qwen=False, llama3=True), "llama", "llama-bpe", 0)
    refs["decode"] = {}
    for name, (tok, kind, pre, gen_len) in made.items():
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        tok.save_pretrained(d)
        for f in ("special_tokens_map.json",):
            p = os.path.join(d, f)
            if os.path.exists(p):
                os.remove(p)
        model = tiny_model(kind, len(tok), tok)
        model.save_pretrained(d, safe_serialization=True)
        convert(d, os.path.join(OUT, name + ".gguf"), pre)
        auto = AutoTokenizer.from_pretrained(d)
        ids = [auto(line)["input_ids"] for line in lines]
        refs["tokenizers"][name] = {"ids": ids, "decoded": [auto.decode(i, skip_special_tokens=True) for i in ids]}
        cases = decode_cases(random.Random(len(refs["decode"])), decode_lines, ids, auto)
        refs["decode"][name] = {"ids": cases, "text": [auto.decode(c, skip_special_tokens=True) for c in cases]}
        if gen_len:
            g = greedy_text(model, auto, "Hello world, the model", gen_len)
            if name == "gpt2":  # a model whose EOS comes up: generation stops there
                fresh = [t for i, t in enumerate(g["ids"]) if i >= 1 and t not in g["ids"][:i]]
                eos = ([t for t in fresh if g["ids"].index(t) >= 3] or fresh)[0]
                for f in ("config.json", "generation_config.json"):
                    with open(os.path.join(d, f)) as fh:
                        cfg = json.load(fh)
                    cfg["eos_token_id"] = eos
                    with open(os.path.join(d, f), "w") as fh:
                        json.dump(cfg, fh, indent=2)
                g["eos"] = eos
                g["ids_to_eos"] = g["ids"][:g["ids"].index(eos) + 1]
                g["text_to_eos"] = auto.decode(g["ids"][:g["ids"].index(eos)], skip_special_tokens=True)
            refs["generate"][name] = g
    for name in ("qwen2", "gemma", "llama3"):
        for f in ("model.safetensors", "generation_config.json", "config.json"):
            if name != "qwen2" or f != "config.json":
                os.remove(os.path.join(OUT, name, f))
    with open(os.path.join(OUT, "refs.json"), "w", encoding="utf-8") as f:
        json.dump(refs, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
