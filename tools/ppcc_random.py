"""The tensors of `ppcc run --random-weights SEED`, in numpy: a port of
include/ppcc/random_fill.h (element j of tensor NAME depends only on SEED,
NAME and j), so Python tools can write weights files and inputs with the
very values ppcc generates. bf16 tensors are numpy uint16 bit patterns
(numpy has no bf16).
"""
import numpy as np

NUMPY_DTYPE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i64": np.int64,
               "i32": np.int32, "i8": np.int8, "bool": np.bool_}
M64 = (1 << 64) - 1


# ---- the generator behind --random-weights (include/ppcc/random_fill.h) ----

def _splitmix64_int(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _splitmix64(x):
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _random_key(seed, name):
    h = 1469598103934665603  # FNV-1a
    for b in name.encode():
        h = ((h ^ b) * 1099511628211) & M64
    return _splitmix64_int((seed ^ _splitmix64_int(h)) & M64)


def _bf16_bits(f32):
    x = f32.view(np.uint32)
    nan = (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounded = (x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(nan, (x >> np.uint32(16)) | np.uint32(0x40), rounded).astype(np.uint16)


def ppcc_random(seed, name, dtype, shape):
    """The tensor `ppcc run --random-weights seed` uses for `name` (bf16 as
    its uint16 bit patterns: numpy has no bf16)."""
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    j = np.arange(n, dtype=np.uint64)
    mod = shape[0] if shape and shape[0] > 0 else 1
    if dtype in ("i64", "i32", "i8"):
        v = np.arange(n, dtype=np.int64) % mod
        if dtype == "i8":
            v %= 128
        return v.astype(NUMPY_DTYPE[dtype]).reshape(shape)
    with np.errstate(over="ignore"):
        r = _splitmix64(np.uint64(_random_key(seed, name)) + j * np.uint64(0xD1B54A32D192ED03))
    unit = (r >> np.uint64(40)).astype(np.float32) * np.float32(2.0 / 16777216.0) - np.float32(1.0)
    if dtype == "bool":
        return (unit > 0).reshape(shape)
    scale = np.float32(1.0)
    if len(shape) >= 2 and shape[-2] > 0:
        scale = np.sqrt(np.float32(3.0) / np.float32(shape[-2]), dtype=np.float32)
    v = (unit * scale).astype(np.float32).reshape(shape)
    if dtype == "f16":
        return v.astype(np.float16)
    if dtype == "bf16":
        return _bf16_bits(v)
    return v


def as_float(a, dtype):
    """f32 view of a tensor for comparisons (bf16 bits widened)."""
    if dtype == "bf16" and a.dtype == np.uint16:
        return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return a.astype(np.float64) if a.dtype.kind == "f" else a
