#!/usr/bin/env python3
"""Runs ppcc's IREE form in IREE and compares it with `ppcc run`.

For each MODEL.json:
  1. writes the model's weights (the values of `ppcc run --random-weights SEED`)
     whole with IREE's own writer (iree.runtime.ParameterIndex ...
     create_archive_file, an .irpa) and with the `safetensors` package;
  2. `ppcc run` with each file, and with --random-weights SEED: the three
     outputs must be bit-identical (the real writers' files load in ppcc);
  3. the sharded archives the IREE form references (DESIGN §5, README
     "Sharded parameter archives": one entry NAME.shard.K per shard, a
     replicated param once as NAME.shard.0): one written by
     `ppcc shard-weights` from the whole .irpa, one by IREE's writer from
     shards cut here with numpy; `ppcc run` reads both, bit-identical;
  4. `ppcc compile MODEL --emit=iree`, checks that no parameter is sliced
     (no tensor.extract_slice of a util.global.load) and that each device's
     globals hold exactly the report's param_bytes of that device, then
     `iree-compile --iree-hal-target-device=local[0] ... local[N-1]
      --iree-hal-local-target-device-backends=llvm-cpu`: one target device per
     logical device; params stay `#flow.parameter.named` references;
  5. loads the module in iree.runtime with N local CPU devices and the
     parameters from each sharded archive (scope "model"), feeds it the same
     inputs as `ppcc run` (cut into shards as the report places them), joins
     the output shards and compares them with ppcc's within the dtype's
     tolerance (that of `ppcc run --check`: |got-ref| <= tol*(1+|ref|),
     f32 1e-4, f16 1e-2, bf16 5e-2, integers exact).
Exits 1 if any model fails. --measure adds, per model: iree-compile time,
module size with params referenced vs inlined (iree-compile
--iree-parameter-import), and IREE run time vs `ppcc run` time.

Usage (with the build's venv python, see tools/setup.sh):
  build/venv/bin/python tools/iree_run.py testdata/models      # every model
  build/venv/bin/python tools/iree_run.py MODEL.json --vmfb M.vmfb --weights W.irpa
      (a module compiled by hand: steps 3-4 only, params and reference from W)
Inputs are the values ppcc generates for SEED (tools/ppcc_random.py), passed
to `ppcc run` as .npy files.
"""
import argparse
import gc
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import iree.runtime as rt
from safetensors.numpy import save_file as save_safetensors

from ppcc_random import as_float, ppcc_random
from make_sharded_irpa import cut, shard_entries, write_irpa

SCOPE = "model"  # the scope ppcc's IREE form gives every parameter reference
TOLERANCE = {"f32": 1e-4, "f16": 1e-2, "bf16": 5e-2}
# ---- the IREE module's parameter globals ----

GLOBAL_RE = re.compile(r'util\.global private @"?([^" ]+)"? \{stream\.affinity = #hal\.device\.promise<@__device_(\d+)>\}'
                       r' = #flow\.parameter\.named<"[^"]*"::"([^"]*)"> : tensor<([^>]*)>')
ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1, "f64": 8}


def check_module_params(mlir_text, report):
    """(problems, per-device bytes): no tensor.extract_slice of a loaded
    global, and each device's globals sum to the report's param_bytes."""
    problems = []
    loads = set(re.findall(r"(%[\w]+) = util\.global\.load", mlir_text))
    for ln in mlir_text.splitlines():
        m = re.search(r"tensor\.extract_slice (%[\w]+)\[", ln)
        if m and m.group(1) in loads:
            problems.append(f"a parameter is sliced: {ln.strip()[:120]}")
    per_device = {}
    for sym, dev, entry, ty in GLOBAL_RE.findall(mlir_text):
        *dims, elem = ty.split("x")
        n = int(np.prod([int(d) for d in dims], dtype=np.int64)) if dims else 1
        per_device[int(dev)] = per_device.get(int(dev), 0) + n * ELEM_BYTES[elem]
    for row in report["device_summary"]:
        got = per_device.get(row["device"], 0)
        if got != row["param_bytes"]:
            problems.append(f"device {row['device']}: globals hold {got} bytes, the report's param_bytes is "
                            f"{row['param_bytes']}")
    return problems, per_device


def write_safetensors(path, params):
    """A .safetensors written by the safetensors package."""
    save_safetensors({k: np.ascontiguousarray(v) for k, v in params.items()}, path)


# ---- ppcc ----

def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def ppcc_run(ppcc, model, weights, inputs, out_dir):
    cmd = [ppcc, "run", model, "--output-dir", out_dir]
    cmd += ["--weights", weights] if isinstance(weights, str) else ["--random-weights", str(weights)]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    log = run(cmd)
    m = re.search(r"ran '.*' on \d+ devices in ([0-9.]+) ms", log)
    return (float(m.group(1)) if m else float("nan")), log


# ---- shards (DESIGN §1: shard i of split(dim, n) is the i-th slice) ----

def join(parts, shard, dtype):
    kind = shard.get("kind", "none")
    if kind == "split" and len(parts) > 1:
        return np.concatenate(parts, axis=shard["dim"])
    if kind == "unreduced" and len(parts) > 1:
        total = sum(as_float(p, dtype) for p in parts)
        return total
    return parts[0]


# ---- IREE ----

def iree_tool(name):
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else shutil.which(name)


def target_flags(n_devices, cpu):
    flags = [f"--iree-hal-target-device=local[{i}]" for i in range(n_devices)]
    return flags + ["--iree-hal-local-target-device-backends=llvm-cpu", f"--iree-llvmcpu-target-cpu={cpu}"]


def iree_compile(mlir, vmfb, n_devices, cpu, extra=()):
    t0 = time.perf_counter()
    run([iree_tool("iree-compile"), mlir, "-o", vmfb, *target_flags(n_devices, cpu), *extra])
    return time.perf_counter() - t0


class IreeModel:
    """The compiled module on n local CPU devices, params from one file."""

    def __init__(self, vmfb, n_devices, weights, driver):
        self.instance = rt.VmInstance()
        drv = rt.get_driver(driver)
        self.devices = [drv.create_default_device() for _ in range(n_devices)]
        index = rt.ParameterIndex()
        index.load(weights)
        params = rt.create_io_parameters_module(self.instance, index.create_provider(scope=SCOPE))
        hal = rt.create_hal_module(self.instance, devices=self.devices)
        module = rt.VmModule.mmap(self.instance, vmfb)
        config = rt.Config(device=self.devices[0])
        self.config = config
        self.modules = rt.load_vm_modules(params, hal, module, config=config)
        self.main = self.modules[-1].main

    def _arg(self, arr, dtype, device):
        if dtype != "bf16":
            return arr  # numpy dtypes map to IREE's element types
        dev = self.devices[device]  # bf16: the uint16 bits, typed bf16
        return dev.allocator.allocate_buffer_copy(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                                  allowed_usage=rt.BufferUsage.DEFAULT, device=dev, buffer=arr,
                                                  element_type=rt.HalElementType.BFLOAT_16)

    def __call__(self, args):
        """args: (numpy array, dtype name, device index) per shard. Results
        are host copies: nothing returned keeps a device buffer mapped."""
        res = self.main(*[self._arg(*a) for a in args])
        res = res if isinstance(res, (list, tuple)) else [res]
        out = [np.array(r.to_host(), copy=True) for r in res]
        del res
        return out

    def close(self):
        """Releases the runtime objects in dependency order (function,
        modules, devices, instance); left to the garbage collector, the
        order is arbitrary and the runtime may crash at exit."""
        for attr in ("main", "modules", "config", "devices", "instance"):
            if hasattr(self, attr):
                delattr(self, attr)
        gc.collect()


def close_enough(got, ref, dtype):
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return False, f"shape {got.shape} != {ref.shape}"
    if dtype not in TOLERANCE:
        bad = int(np.count_nonzero(got != ref))
        return bad == 0, f"{bad} elements differ (exact)"
    g, r = as_float(got, dtype).astype(np.float64), as_float(ref, dtype).astype(np.float64)
    err = np.abs(g - r)
    ok = bool(np.all(err <= TOLERANCE[dtype] * (1 + np.abs(r))))
    return ok, f"max abs error {err.max() if err.size else 0:.3g} (tol {TOLERANCE[dtype]:g}*(1+|ref|))"


def output_slots(outputs, placed):
    """(name, first result index, shard count) of each output."""
    k, slots = 0, []
    for o in outputs:
        count = placed[o]["shard"].get("count", 1)
        slots.append((o, k, count))
        k += count
    return slots


def check_known_limit(args, model_path, work):
    """A model ppcc runs but IREE rejects (README, Limitations): ppcc run
    --check and ppcc compile --emit=iree succeed, iree-compile fails with
    the documented message. Fails when IREE starts accepting it, so the
    limitation note cannot outlive the limitation."""
    model = json.load(open(model_path))
    name = model.get("name") or os.path.splitext(os.path.basename(model_path))[0]
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    report = json.loads(run([args.ppcc, "report", model_path, "--format=json"]))
    run([args.ppcc, "run", model_path, "--check", "--random-weights", str(args.seed)])
    mlir, vmfb = os.path.join(d, f"{name}.iree.mlir"), os.path.join(d, f"{name}.vmfb")
    run([args.ppcc, "compile", model_path, "--emit=iree", "-o", mlir])
    p = subprocess.run([iree_tool("iree-compile"), mlir, "-o", vmfb, *target_flags(report["devices"], args.cpu)],
                       capture_output=True, text=True)
    rejected = p.returncode != 0 and re.search(args.expect_iree_error, p.stderr) is not None
    first = next((ln for ln in p.stderr.splitlines() if "error" in ln), "(no error)")
    print(f"{name}: {'ok' if rejected else 'FAILED'}")
    print(f"  ppcc run --check and ppcc compile --emit=iree: ok")
    if rejected:
        print(f"  iree-compile rejects it as documented: {first.strip()}")
    elif p.returncode == 0:
        print("  iree-compile now ACCEPTS it: move the model to testdata/iree/ and drop its README limitation")
    else:
        print(f"  iree-compile fails differently from /{args.expect_iree_error}/: {first.strip()}")
    return rejected


def check_model(args, model_path, work):
    model = json.load(open(model_path))
    name = model.get("name") or os.path.splitext(os.path.basename(model_path))[0]
    report = json.loads(run([args.ppcc, "report", model_path, "--format=json"]))
    placed = {v["name"]: v for v in report["values"]}
    n_devices = report["devices"]
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    lines, ok = [], True

    params = {p["name"]: ppcc_random(args.seed, p["name"], p["dtype"], p["shape"]) for p in model.get("params", [])}
    inputs, input_files = {}, {}
    for x in model.get("inputs", []):
        arr = ppcc_random(args.seed, x["name"], x["dtype"], x["shape"])
        inputs[x["name"]] = arr
        input_files[x["name"]] = os.path.join(d, f"in.{x['name']}.npy")
        np.save(input_files[x["name"]], as_float(arr, x["dtype"]).astype(np.float32) if x["dtype"] == "bf16" else arr)

    outputs = model["outputs"]
    if args.sharded_weights:
        # A given sharded archive (e.g. tools/make_sharded_irpa.py, sharktank's
        # naming): ppcc run and IREE both read it as it is.
        ref_dir = os.path.join(d, "ppcc.sharded")
        ppcc_ms, _ = ppcc_run(args.ppcc, model_path, args.sharded_weights, input_files, ref_dir)
        ref = {o: np.load(os.path.join(ref_dir, f"{o}.npy")) for o in outputs}
        weights = {f"given sharded archive {os.path.basename(args.sharded_weights)}": args.sharded_weights}
        lines.append(f"  ppcc run --weights {args.sharded_weights}: ok (reference for IREE)")
    elif args.weights:
        # A given weights file: ppcc run reads it; IREE the archive
        # `ppcc shard-weights` makes of it.
        ref_dir = os.path.join(d, "ppcc.weights")
        ppcc_ms, _ = ppcc_run(args.ppcc, model_path, args.weights, input_files, ref_dir)
        ref = {o: np.load(os.path.join(ref_dir, f"{o}.npy")) for o in outputs}
        weights = {"sharded by ppcc shard-weights": os.path.join(d, f"{name}.sharded.irpa")}
        run([args.ppcc, "shard-weights", model_path, "--weights", args.weights, "-o",
             weights["sharded by ppcc shard-weights"]])
    else:
        whole = {"irpa": os.path.join(d, f"{name}.irpa")}
        write_irpa(whole["irpa"], params)
        if all(p["dtype"] != "bf16" for p in model.get("params", [])):
            whole["safetensors"] = os.path.join(d, f"{name}.safetensors")
            write_safetensors(whole["safetensors"], params)
        else:
            lines.append("  safetensors: not written (numpy has no bf16; the safetensors package's numpy API cannot)")
        weights = {"sharded by iree.runtime": os.path.join(d, f"{name}.iree-sharded.irpa")}
        write_irpa(weights["sharded by iree.runtime"], shard_entries(placed, params))
        if args.shard_weights:
            weights["sharded by ppcc shard-weights"] = os.path.join(d, f"{name}.sharded.irpa")
            run([args.ppcc, "shard-weights", model_path, "--weights", whole["irpa"], "-o",
                 weights["sharded by ppcc shard-weights"]])
        # ppcc run: random weights, and each real writer's file, bit for bit.
        ref_dir = os.path.join(d, "ppcc.random")
        ppcc_ms, _ = ppcc_run(args.ppcc, model_path, args.seed, input_files, ref_dir)
        ref = {o: np.load(os.path.join(ref_dir, f"{o}.npy")) for o in outputs}
        files = list(whole.items()) + (list(weights.items()) if args.read_sharded else [])
        for fmt, path in files:
            out_dir = os.path.join(d, f"ppcc.{len(os.listdir(d))}")
            ppcc_run(args.ppcc, model_path, path, input_files, out_dir)
            same = all(np.array_equal(np.load(os.path.join(out_dir, f"{o}.npy")), ref[o], equal_nan=True)
                       for o in outputs)
            writer = {"irpa": "whole, by iree.runtime", "safetensors": "whole, by safetensors"}.get(fmt, fmt)
            lines.append(f"  ppcc run --weights {os.path.basename(path)} ({writer}) == --random-weights "
                         f"{args.seed}: {'bit-identical' if same else 'DIFFERENT'}")
            ok &= same

    mlir = os.path.join(d, f"{name}.iree.mlir")
    if args.vmfb:
        vmfb = args.vmfb
        lines.append(f"  module {vmfb}: {os.path.getsize(vmfb)} bytes, {n_devices} devices")
    else:
        # The IREE form, compiled with one llvm-cpu device per logical device.
        vmfb = os.path.join(d, f"{name}.vmfb")
        run([args.ppcc, "compile", model_path, "--emit=iree", "-o", mlir])
        problems, per_device = check_module_params(open(mlir).read(), report)
        ok &= not problems
        lines += [f"  MODULE: {p}" for p in problems]
        lines.append(f"  module params: no slices, per-device bytes {dict(sorted(per_device.items()))} "
                     f"== the report's" if not problems else "  module params: FAILED")
        compile_s = iree_compile(mlir, vmfb, n_devices, args.cpu)
        lines.append(f"  iree-compile: {compile_s:.2f} s, {n_devices} devices, module {os.path.getsize(vmfb)} bytes "
                     f"(params referenced)")

    call_args = []
    for x in model.get("inputs", []):
        v = placed[x["name"]]
        for i in range(v["shard"].get("count", 1)):
            call_args.append((np.ascontiguousarray(cut(inputs[x["name"]], v["shard"], i)), v["dtype"], v["devices"][i]))
    iree_ms = None
    for fmt, path in weights.items():
        m = IreeModel(vmfb, n_devices, path, args.driver)
        t0 = time.perf_counter()
        results = m(call_args)
        first_ms = (time.perf_counter() - t0) * 1e3
        slots = output_slots(outputs, placed)
        for o, k, count in slots:
            v = placed[o]
            got = join(results[k:k + count], v["shard"], v["dtype"])
            good, why = close_enough(got, ref[o], v["dtype"])
            ok &= good
            lines.append(f"  IREE ({fmt} params) output {o} {v['dtype']}{list(v['shape'])}: "
                         f"{'ok' if good else 'MISMATCH'}, {why}")
        expected = sum(c for _, _, c in slots)
        if expected != len(results):
            ok = False
            lines.append(f"  IREE returned {len(results)} shards, the report places {expected}")
        if fmt == "sharded by iree.runtime":
            # Control: the same module with other weights must not match, so
            # a comparison that always passes cannot go unnoticed.
            other = os.path.join(d, f"{name}.seed{args.seed + 1}.irpa")
            write_irpa(other, shard_entries(placed, {p["name"]: ppcc_random(args.seed + 1, p["name"], p["dtype"],
                                                                                 p["shape"])
                                                    for p in model.get("params", [])}))
            wrong_model = IreeModel(vmfb, n_devices, other, args.driver)
            wrong = wrong_model(call_args)
            wrong_model.close()
            differs = params and any(not close_enough(join(wrong[k:k + c], placed[o]["shard"], placed[o]["dtype"]),
                                                      ref[o], placed[o]["dtype"])[0]
                                     for o, k, c in output_slots(outputs, placed))
            lines.append(f"  control: IREE with seed-{args.seed + 1} weights differs from ppcc: "
                         f"{'yes' if differs else 'NO'}")
            ok &= bool(differs) or not params
        if iree_ms is None:
            best = first_ms
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                m(call_args)
                best = min(best, (time.perf_counter() - t0) * 1e3)
            iree_ms = (first_ms, best)
        m.close()

    if args.measure and not args.vmfb and not args.weights and not args.sharded_weights:
        # ppcc run's own figure ("ran ... in X ms": execution only, no JIT),
        # best of three runs like IREE's best call.
        for k in range(2):
            ppcc_ms = min(ppcc_ms, ppcc_run(args.ppcc, model_path, args.seed, input_files, os.path.join(d, "again"))[0])
        inl = os.path.join(d, f"{name}.inlined.vmfb")
        param_bytes = sum(a.nbytes for a in params.values())
        imports = [f"--iree-parameter-import={SCOPE}={weights['sharded by iree.runtime']}",
                   "--iree-parameter-import-maximum-size=1099511627776"]
        try:
            inl_s = iree_compile(mlir, inl, n_devices, args.cpu, imports)
            note = ""
        except RuntimeError as e:  # a measurement only: report it, do not fail the model
            first = next((ln for ln in str(e).splitlines() if "error" in ln or "#4 " in ln), "")
            lines.append(f"  inlining the params crashes iree-compile: {first.strip()[:160]}")
            inl_s = iree_compile(mlir, inl, n_devices, args.cpu, imports + ["--iree-opt-const-eval=false"])
            note = ", with --iree-opt-const-eval=false"
        lines.append(f"  module size: {os.path.getsize(vmfb)} bytes referenced, {os.path.getsize(inl)} bytes "
                     f"inlined (iree-compile {inl_s:.2f} s{note}); params {param_bytes} bytes")
        lines.append(f"  run time: IREE {iree_ms[0]:.3f} ms first call, {iree_ms[1]:.3f} ms best of "
                     f"{args.repeat + 1}; ppcc run {ppcc_ms:.3f} ms best of 3; IREE/ppcc {iree_ms[1] / ppcc_ms:.2f}")
    print(f"{name}: {'ok' if ok else 'FAILED'}")
    print("\n".join(lines))
    return ok


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="model.json files, or directories of them (every *.json)")
    ap.add_argument("--ppcc", default=os.path.join(here, "..", "build", "ppcc"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cpu", default="host", help="--iree-llvmcpu-target-cpu (default host)")
    ap.add_argument("--driver", default="local-task", help="IREE HAL driver of each device")
    ap.add_argument("--workdir", help="keep the files here (default: a temporary directory)")
    ap.add_argument("--vmfb", help="run this compiled module (one model) instead of compiling it")
    ap.add_argument("--weights", help="params from this .irpa/.safetensors (ppcc run reads it too) "
                    "instead of files written here with --seed's values")
    ap.add_argument("--sharded-weights", metavar="ARCHIVE",
                    help="a sharded archive (NAME.shard.K entries) that both `ppcc run` and IREE read as it is")
    ap.add_argument("--expect-iree-error", metavar="REGEX",
                    help="known limitation: ppcc accepts each model, iree-compile must fail matching REGEX")
    ap.add_argument("--no-shard-weights", dest="shard_weights", action="store_false",
                    help="do not run IREE from an archive written by `ppcc shard-weights`")
    ap.add_argument("--no-read-sharded", dest="read_sharded", action="store_false",
                    help="do not check that `ppcc run` reads the sharded archives")
    ap.add_argument("--measure", action="store_true", help="also compile with params inlined and time runs")
    ap.add_argument("--repeat", type=int, default=4, help="extra timed IREE calls (best is reported)")
    args = ap.parse_args()
    if not iree_tool("iree-compile"):
        print("iree_run: iree-compile not found (install tools/requirements-iree.txt)", file=sys.stderr)
        return 2
    models = []
    for m in args.models:
        models += sorted(glob.glob(os.path.join(m, "*.json"))) if os.path.isdir(m) else [m]
    args.models = models
    if (args.vmfb or args.weights or args.sharded_weights) and len(models) != 1:
        ap.error("--vmfb, --weights and --sharded-weights run one model")
    work = args.workdir or tempfile.mkdtemp(prefix="ppcc-iree.")
    failed = []
    try:
        for model in args.models:
            try:
                check = check_known_limit if args.expect_iree_error else check_model
                if not check(args, model, work):
                    failed.append(model)
            except Exception as e:  # one model's failure must not hide the others'
                print(f"{os.path.basename(model)}: FAILED\n  {type(e).__name__}: {e}")
                failed.append(model)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"iree_run: {len(args.models) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
