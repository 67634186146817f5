#!/usr/bin/env python3
"""Writes the strict-parser cases of testdata/bad_run/ (issue 11): weights
and .npy files that a lax reader accepted. Run from the source dir:

    python3 tools/gen_bad_run_strict.py

Standard library only; the files are checked in, CI never runs this.
Each file breaks one rule for tiny.json (w1, w2: f32[4, 4]; x: f32[2, 4]).
"""
import struct

D = "testdata/bad_run/"


def safetensors(name, header, data_bytes):
    h = header.encode()
    with open(D + name, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(data_bytes))


def ent(begin, end):
    return '{"dtype":"F32","shape":[4,4],"data_offsets":[%d,%d]}' % (begin, end)


safetensors("st_duplicate_name.safetensors",
            '{"w1":%s,"w1":%s,"w2":%s}' % (ent(0, 64), ent(64, 128), ent(128, 192)), 192)
safetensors("st_trailing_data.safetensors", '{"w1":%s,"w2":%s}' % (ent(0, 64), ent(64, 128)), 144)
safetensors("st_header_trailing_garbage.safetensors",
            '{"w1":%s,"w2":%s}  xyz' % (ent(0, 64), ent(64, 128)), 128)
safetensors("st_overlapping_offsets.safetensors", '{"w1":%s,"w2":%s}' % (ent(0, 64), ent(32, 96)), 96)
safetensors("st_gap.safetensors", '{"w1":%s,"w2":%s}' % (ent(0, 64), ent(96, 160)), 160)
safetensors("st_nul_key.safetensors", '{"w1\\u0000junk":%s,"w2":%s}' % (ent(0, 64), ent(64, 128)), 128)
safetensors("st_raw_nul_key.safetensors", '{"w1\0junk":%s,"w2":%s}' % (ent(0, 64), ent(64, 128)), 128)


def npy(name, header, data_bytes=32):
    h = header.encode("latin1")
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    with open(D + name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + bytes(data_bytes))


GOOD_REST = "'fortran_order': False, 'shape': (2, 4), }"
npy("npy_decoy_key.npy", "{'junk': \"'descr': '<f4'\", 'descr': '<f8', " + GOOD_REST, 64)
npy("npy_descr_twice.npy", "{'descr': '<f4', 'descr': '<f8', " + GOOD_REST, 64)
npy("npy_missing_brace.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), ")
npy("npy_falsey.npy", "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 4), }")
npy("npy_missing_comma.npy", "{'descr': '<f4' " + GOOD_REST)
npy("npy_missing_shape_comma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2 4), }")
npy("npy_int_not_tuple.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (8), }")
npy("npy_long_descr.npy", "{'descr': '<f4_this_descr_is_longer_than_31_chars', " + GOOD_REST)
npy("npy_nul_in_header.npy", "{'descr': '<f4', " + GOOD_REST + "\0")
npy("npy_text_after_dict.npy", "{'descr': '<f4', " + GOOD_REST + " junk")


def irpa(name, names, sizes):
    """IRPA v0 (src/runtime/io/irpa.c): header, DATA entries, names, storage."""
    entries = meta = storage = b""
    for n, size in zip(names, sizes):
        e = struct.pack("<QIQQQQQQQQ", 76, 2, 0, len(meta), len(n), 0, 0, 16, len(storage), size)
        entries += e + bytes(4)
        meta += n.encode()
        storage += bytes(size)
    entry_off = 96
    meta_off = (entry_off + len(entries) + 15) // 16 * 16
    store_off = (meta_off + len(meta) + 63) // 64 * 64
    header = struct.pack("<IHHQQQQQQQQQQ", 0x41505249, 0, 0, 88, 0, 0, len(names), entry_off, len(entries),
                         meta_off, len(meta), store_off, len(storage))
    buf = bytearray(store_off + len(storage))
    buf[0:88] = header
    buf[entry_off:entry_off + len(entries)] = entries
    buf[meta_off:meta_off + len(meta)] = meta
    buf[store_off:] = storage
    with open(D + name, "wb") as f:
        f.write(bytes(buf))


irpa("irpa_duplicate_name.irpa", ["w1", "w2", "w1"], [64, 64, 64])
irpa("irpa_nul_in_name.irpa", ["w1", "w2\0x"], [64, 64])
