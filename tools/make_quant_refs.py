#!/usr/bin/env python3
"""Reference blocks for ppcc's block decoders (include/ppcc/quant.h).

Run once by a developer (CI only reads the file it writes):

    tools/make_quant_refs.sh      # makes build/venv-quant (or uses REF_VENV)

Writes testdata/quant/blocks.gguf holding, for every block format ppcc
reads, the tensors
  <type>.random     2 rows x 2 blocks of random bytes with finite random
                    scales (one subnormal), so every bit of every field is
                    exercised (the K types have no quantizer in gguf-py)
  <type>.quantized  (types gguf-py can quantize) normal random values
                    quantized by gguf-py
and beside each an F32 tensor <name>.expect: gguf-py's
quants.dequantize of the stored blocks. tests/test_rt_quant.c decodes every
tensor with ppcc and compares bit for bit.
Also testdata/quant/iq4_nl.gguf: one IQ4_NL tensor (a type ppcc does not
read: the error must name it)."""
import os
import sys

import numpy as np
import gguf

OUT = sys.argv[1] if len(sys.argv) > 1 else "testdata/quant"
T = gguf.GGMLQuantizationType
# type -> byte offsets of its f16 scales (as in src/ir/quant.c's table)
SCALES = {T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q2_K: [80, 82],
          T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}
QUANTIZABLE = [T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1]


def f16_bytes(x):
    return np.frombuffer(np.float16(x).tobytes(), np.uint8)


def random_blocks(rng, qt):
    block, size = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, size=(2, 2 * size), dtype=np.uint8)
    k = 0
    for r in range(2):
        for b in range(2):
            blk = raw[r, b * size:(b + 1) * size]
            for off in SCALES[qt]:
                # sign and size vary; the very first scale is subnormal
                x = 3e-6 if k == 0 else float(rng.choice([-1, 1]) * rng.uniform(1e-3, 0.2))
                blk[off:off + 2] = f16_bytes(x)
                k += 1
    return raw, 2 * block


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(24)
    path = os.path.join(OUT, "blocks.gguf")
    w = gguf.GGUFWriter(path, "quant-refs")
    for qt in SCALES:
        raw, cols = random_blocks(rng, qt)
        name = qt.name.lower()
        w.add_tensor(f"{name}.random", raw, raw_dtype=qt)
        w.add_tensor(f"{name}.random.expect", gguf.quants.dequantize(raw, qt).reshape(2, cols).astype(np.float32))
    for qt in QUANTIZABLE:
        x = (rng.standard_normal((3, 64)) * 0.5).astype(np.float32)
        x[0, :32] = 0  # an all-zero block (d = 0)
        q = gguf.quants.quantize(x, qt)
        name = qt.name.lower()
        w.add_tensor(f"{name}.quantized", q, raw_dtype=qt)
        w.add_tensor(f"{name}.quantized.expect", gguf.quants.dequantize(q, qt).reshape(3, 64).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    w = gguf.GGUFWriter(os.path.join(OUT, "iq4_nl.gguf"), "quant-refs")
    w.add_tensor("blk.0.ffn_up.weight", rng.integers(0, 256, size=(2, 18), dtype=np.uint8), raw_dtype=T.IQ4_NL)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path)} bytes; gguf {getattr(gguf, '__version__', '?')}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
