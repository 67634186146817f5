#!/usr/bin/env python3
"""Writes a sharded parameter archive with sharktank's naming through IREE's
own writer (iree.runtime.ParameterIndex ... create_archive_file).

The entries follow sharktank's dataset conventions (sharktank/types/tensors.py,
ShardedTensorBase / ReplicatedTensor .add_to_archive; README "Sharded
parameter archives", DESIGN §5):
  split(dim, n)   NAME.shard.K, K = 0..n-1, the K-th slice along dim
  replicated(n)   NAME.shard.0 once (every replica reads it)
  unreduced(n)    NAME.shard.K: shard 0 the value, the others zeros
  count 1         NAME, the whole tensor
The values are those of `ppcc run --random-weights SEED` (tools/ppcc_random.py),
placed as `ppcc report MODEL --format=json` places them, so `ppcc run --weights
OUT.irpa` must give the outputs of `--random-weights SEED` bit for bit.

Usage (with the build's venv python, tools/setup.sh):
  build/venv/bin/python tools/make_sharded_irpa.py MODEL.json --seed 3 -o OUT.irpa [--ppcc build/ppcc]
testdata/sharded/weights.sharded.irpa was made with
  build/venv/bin/python tools/make_sharded_irpa.py testdata/sharded/model.json --seed 3 \\
      -o testdata/sharded/weights.sharded.irpa
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

import iree.runtime as rt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ppcc_random import ppcc_random  # noqa: E402


def cut(arr, shard, i):
    """Shard i of arr under a report's shard record (DESIGN §1)."""
    kind, count = shard.get("kind", "none"), shard.get("count", 1)
    if kind == "split" and count > 1:
        return np.split(arr, count, axis=shard["dim"])[i]
    if kind == "unreduced" and i > 0:
        return np.zeros_like(arr)
    return arr


def shard_entries(placed, params):
    """{entry name: array} of the params (name -> whole array), each cut as
    placed[name]["shard"] says and named as sharktank names the parts."""
    out = {}
    for name, arr in params.items():
        shard = placed[name]["shard"]
        kind, count = shard.get("kind", "none"), shard.get("count", 1)
        if count <= 1:
            out[name] = arr
        elif kind == "replicated":
            out[f"{name}.shard.0"] = arr
        else:
            for i in range(count):
                out[f"{name}.shard.{i}"] = cut(arr, shard, i)
    return out


def write_irpa(path, entries):
    """An .irpa written by IREE's own writer, entries in the given order."""
    index = rt.ParameterIndex()
    for name, arr in entries.items():
        index.add_buffer(name, np.ascontiguousarray(arr).tobytes())
    index.create_archive_file(path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("-o", dest="out", required=True)
    ap.add_argument("--ppcc", default=os.path.join(here, "..", "build", "ppcc"))
    args = ap.parse_args()
    report = json.loads(subprocess.run([args.ppcc, "report", args.model, "--format=json"], check=True,
                                       capture_output=True, text=True).stdout)
    placed = {v["name"]: v for v in report["values"]}
    model = json.load(open(args.model))
    params = {p["name"]: ppcc_random(args.seed, p["name"], p["dtype"], p["shape"]) for p in model.get("params", [])}
    entries = shard_entries(placed, params)
    write_irpa(args.out, entries)
    print(f"wrote {args.out}: {', '.join(entries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
