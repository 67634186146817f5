#!/usr/bin/env python3
"""Writes testdata/real_writers/: the weights of model.json (the values of
`ppcc run --random-weights 3`) as weights.irpa, written by IREE's own writer
(iree.runtime.ParameterIndex.add_buffer + create_archive_file), and as
weights.safetensors, written by the `safetensors` package; plus the inputs
x32.npy and x16.npy (the values ppcc would generate for them with seed 3).
tests/real_writer_weights.sh checks that `ppcc run` gives bit-identical
outputs with either file and with --random-weights 3.

Run with the build's venv python (tools/setup.sh):
  build/venv/bin/python tools/make_real_writer_weights.py
"""
import json
import os
import sys

import numpy as np
import iree.runtime as rt
from safetensors.numpy import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ppcc_random import ppcc_random  # noqa: E402

SEED = 3
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "real_writers")
model = json.load(open(os.path.join(out, "model.json")))
params = {p["name"]: ppcc_random(SEED, p["name"], p["dtype"], p["shape"]) for p in model["params"]}

index = rt.ParameterIndex()
for name, arr in params.items():
    index.add_buffer(name, arr.tobytes())
index.create_archive_file(os.path.join(out, "weights.irpa"))
save_file(params, os.path.join(out, "weights.safetensors"))
for x in model["inputs"]:
    np.save(os.path.join(out, f"{x['name']}.npy"), ppcc_random(SEED, x["name"], x["dtype"], x["shape"]))
print(f"wrote {out}: weights.irpa ({rt.__name__}), weights.safetensors, "
      + ", ".join(f"{x['name']}.npy" for x in model["inputs"]))
