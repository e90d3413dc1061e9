# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights onto the GPU at the speed of the bus: tvm-partial's load of an artifact with CUDA-bound
weights, side by side with the bus itself and the other ways to get the same weights there.

    python benchmarks/bench_gpu_load.py                        # 1 GiB and 8 GiB onto cuda:0
    python benchmarks/bench_gpu_load.py --sizes 1GiB --repeats 5 --json out.json
    python benchmarks/bench_gpu_load.py --device cpu --quick   # the same code with CPU tensors (smoke)

Target: tvm-partial's bytes per second >= 80 % of the floor (a), ahead of (c) and (d), with the
host memory it holds after the load <= 5 % of the weights. The verdicts are printed (and in the
JSON), not asserted. No GPU was lent when this was written: the figures are the lent device's.

Per size, float32 weights of small integers (a random block of a prime length, repeated) in one
tensor, and a kernel out = x * w[n - 1] + b, so the first result costs nothing beyond having the
weights on the device. Each route loads in a fresh process (`--repeats` times; medians) whose
imports and CUDA context are made before the clock starts:

(a)  the floor: a copy from pinned host memory (TVM's `cuda_host` device: cudaMallocHost) into a
     device tensor with TVM's device API (`copyfrom`, then `sync`), repeated in one process; and
     the same with torch (`pin_memory=True`, `copy_(non_blocking=True)`) where torch has CUDA;
     and, for reference, from ordinary (pageable) numpy memory;
(b)  tvm-partial: `tvm.runtime.load_module` of the exported artifact (the default export: the
     payloads appended to the library, mapped at load) and the first call, and the same with the
     weights in a safetensors file beside it (`weights_file=`);
(c)  `safetensors.torch.load_file(that safetensors file, device="cuda")` and the first result
     (`w[-1] * x + b` in torch), where torch has CUDA;
(d)  TVM's own ways: `tvm.runtime.load_param_dict` of a `save_param_dict` file, then `copyto`
     the device; and `numpy.load` of an `.npz` into `tvm.runtime.tensor(..., device=)`; each
     then calling the plain compiled kernel with them.

For each: time to the first result, bytes per second (weights / time), the ratio to the floor,
host RSS held after the first result (psutil: RSS then minus RSS before loading) and the peak
RSS during the load (VmHWM, reset before loading). At the first size, variants of tvm-partial's
copy (storage/device_copy.h, set through the environment: staging, piece size, threads; one
piece copied directly is the copy before the chunked one; at most 2 loads each) and the weights
in 64 tensors.

Files are written under --workdir (default: the system's temporary folder), one route's at a
time, and removed after its loads; the page cache holds them when they load. `--device cpu`
runs the same code with CPU tensors (no bus: figures of a host copy, not of a GPU); `--quick`
(a smoke run, default tiny sizes, one repeat) runs every route in this process. Without
--device, cuda where TVM sees a CUDA device, else cpu.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Report, format_ns, format_size, machine, median, parse_size

DEFAULT_SIZES = {"cuda": ["1GiB", "8GiB"], "cpu": ["64MiB"]}
QUICK_SIZES = {"cuda": ["64MiB"], "cpu": ["4MiB"]}
VARIANTS = {  # label -> environment of the loading process (storage/device_copy.h)
    "default (auto: pinned where offered, 16 MiB pieces, 4 threads)": {},
    "one piece, direct (the copy before the chunked one)": {
        "TVM_PARTIAL_COPY_STAGING": "direct",
        "TVM_PARTIAL_COPY_CHUNK_MIB": "0",
    },
    "16 MiB pieces, direct (pageable)": {"TVM_PARTIAL_COPY_STAGING": "direct"},
    "pinned, 1 thread": {"TVM_PARTIAL_COPY_THREADS": "1"},
    "pinned, 8 threads": {"TVM_PARTIAL_COPY_THREADS": "8"},
    "pinned, 64 MiB pieces": {"TVM_PARTIAL_COPY_CHUNK_MIB": "64"},
}
MANY = 64  # tensors of the many-tensor variant
BLOCK = 1_000_003  # elements of the repeated random block


# --- the loading side: runs in a fresh process (or, with --quick, in this one) -----------------


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _reset_peak() -> int:
    """Restart VmHWM from the current RSS (Linux); -> it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _peak()


def _peak() -> int:
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


def _sync(dev) -> None:
    dev.sync()


def load_route(spec: dict) -> dict:
    """One measurement `spec["route"]` (see the module docstring); -> its figures."""
    import numpy as np
    import tvm

    import tvm_partial  # registers the loader, as a user's import does

    dev = tvm.device(spec["device"], 0)
    tvm.runtime.empty((1,), "float32", dev).numpy()  # the CUDA context, before the clock
    route = spec["route"]
    if route in ("floor_tvm", "pageable_tvm", "floor_torch"):
        return _floor(route, spec, dev)
    if route == "safetensors":
        import torch
        from safetensors.torch import load_file

        torch.empty(1, device=spec["torch_device"]).cpu()  # its context too
    x = tvm.runtime.tensor(np.full((1,), 2.0, "float32"), device=dev)
    out = tvm.runtime.empty((1,), "float32", dev)
    gc.collect()
    base_rss, base_peak = _rss(), _reset_peak()
    t0 = time.perf_counter_ns()
    if route == "partial":
        m = tvm.runtime.load_module(spec["path"])
        m(x, out)
        value = float(out.numpy()[0])
    elif route == "safetensors":
        weights = load_file(spec["path"], device=spec["torch_device"])
        w, b = (next(t for k, t in weights.items() if k.split("/")[-1] == name) for name in "wb")  # main/w
        xt = torch.full((1,), 2.0, device=spec["torch_device"])
        value = float((xt * w[-1] + b).cpu()[0])
    else:  # param_dict, npz: the weights as TVM's own formats give them, then the plain kernel
        if route == "param_dict":
            with open(spec["path"], "rb") as f:
                params = tvm.runtime.load_param_dict(f.read())
            w, b = (params[k].copyto(dev) for k in ("w", "b"))
        else:
            with np.load(spec["path"]) as arrays:
                w, b = (tvm.runtime.tensor(arrays[k], device=dev) for k in ("w", "b"))
        tvm.runtime.load_module(spec["kernel"])["main"](x, w, b, out)
        value = float(out.numpy()[0])
    t1 = time.perf_counter_ns()
    held, peak = _rss() - base_rss, _peak() - base_peak
    result = {"ns": t1 - t0, "value": value, "held_bytes": max(held, 0), "peak_bytes": max(peak, 0)}
    if spec.get("sample") and route == "partial":  # after the clock: the weights are the exported ones
        w = tvm_partial.bindings(m)["main"][1].numpy()
        result["sample_ok"] = bool(np.array_equal(w[:: spec["sample"]], _weights(w.size)[:: spec["sample"]]))
    return result


def _floor(route: str, spec: dict, dev) -> dict:
    """The bus alone: `repeats` copies of nbytes into one device tensor, in this process."""
    import numpy as np
    import tvm

    nbytes, times = spec["nbytes"], []
    if route == "floor_torch":
        import torch

        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        dst = torch.empty(nbytes, dtype=torch.uint8, device=spec["torch_device"])
        for _ in range(spec["repeats"] + 1):  # the first warms up
            t0 = time.perf_counter_ns()
            dst.copy_(host, non_blocking=True)
            torch.cuda.synchronize()
            times.append(time.perf_counter_ns() - t0)
        return {"ns": median(times[1:]), "samples_ns": times[1:]}
    if route == "floor_tvm":
        pinned = dev.dlpack_device_type() == 2  # cuda: its pinned host memory, TVM's cuda_host
        host = tvm.runtime.empty((nbytes,), "uint8", tvm.device(3, 0) if pinned else tvm.cpu(0))
        host.copyfrom(np.ones(nbytes, "uint8"))  # every page resident
    else:
        host = np.ones(nbytes, "uint8")
    dst = tvm.runtime.empty((nbytes,), "uint8", dev)
    for _ in range(spec["repeats"] + 1):
        t0 = time.perf_counter_ns()
        dst.copyfrom(host)
        _sync(dev)
        times.append(time.perf_counter_ns() - t0)
    return {"ns": median(times[1:]), "samples_ns": times[1:]}


def _weights(n: int):
    import numpy as np

    block = np.random.default_rng(7).integers(-8, 9, size=BLOCK).astype("float32")
    w = np.resize(block, n)
    w[-1] = 3.0  # out = 2 * 3 + 1
    return w


# --- the exporting side -----------------------------------------------------------------------


def _build(device: str, shapes: list[int]):
    """The kernel out = x * w_last[-1] + b over weight tensors of `shapes` elements, for the
    device (CUDA: its one output element is one GPU thread)."""
    import tvm
    from tvm import te

    x, b = te.placeholder((1,), "float32", name="x"), te.placeholder((1,), "float32", name="b")
    ws = [
        te.placeholder((n,), "float32", name="w" if len(shapes) == 1 else f"w{i}")
        for i, n in enumerate(shapes)
    ]
    last = ws[-1]
    out = te.compute((1,), lambda i: x[i] * last[shapes[-1] - 1] + b[i], name="out")
    tensors = [x, *ws, b, out]
    sch = tvm.s_tir.Schedule(te.create_prim_func(tensors))
    if device == "cuda":
        (loop,) = sch.get_loops(sch.get_sblock("out"))
        sch.bind(loop, "threadIdx.x")
    target = tvm.target.Target.from_device(tvm.cuda(0)) if device == "cuda" else "llvm"
    return tvm.compile(sch.mod, target=target), tensors


class Runner:
    """Runs load_route specs: each in a fresh process, or in this one (--quick)."""

    def __init__(self, in_process: bool):
        self.in_process = in_process

    def __call__(self, spec: dict, env: dict | None = None) -> dict:
        if self.in_process:
            saved = {k: os.environ.get(k) for k in env or {}}
            os.environ.update(env or {})
            try:
                return load_route(spec)
            except Exception as err:
                return {"error": f"{type(err).__name__}: {err}".splitlines()[0][:300]}
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=900,
        )
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
            return {"error": (lines or [f"exit status {proc.returncode}"])[-1][:300]}
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _summarise(label: str, runs: list[dict], nbytes: int, expected: float = 7.0) -> dict:
    failed = [r for r in runs if "error" in r]
    if failed:
        return {"label": label, "error": failed[0]["error"]}
    wrong = [r["value"] for r in runs if "value" in r and r["value"] != expected]
    if wrong or not all(r.get("sample_ok", True) for r in runs):
        return {"label": label, "error": f"wrong result: {wrong[:1] or 'the loaded weights differ'}"}
    if "samples_ns" in runs[0]:  # a floor: one process, its own repeats
        ns = runs[0]["ns"]
        return {
            "label": label,
            "ns": ns,
            "bytes_per_s": nbytes / ns * 1e9,
            "samples_ns": runs[0]["samples_ns"],
        }
    ns = median([r["ns"] for r in runs])
    return {
        "label": label,
        "ns": ns,
        "bytes_per_s": nbytes / ns * 1e9,
        "held_bytes": median([r["held_bytes"] for r in runs]),
        "peak_bytes": median([r["peak_bytes"] for r in runs]),
        "samples_ns": [r["ns"] for r in runs],
    }


def measure(
    device: str, nbytes: int, repeats: int, work: Path, run: Runner, variants: bool, torch_cuda: bool
):
    """-> {key: summary} for one size."""
    import numpy as np
    import tvm

    import tvm_partial

    n = nbytes // 4
    w, b = _weights(n), np.ones(1, "float32")
    exe, tensors = _build(device, [n])
    base = {"device": device, "nbytes": nbytes, "torch_device": "cuda" if device == "cuda" else "cpu"}
    out: dict[str, dict] = {}

    def loads(key, label, spec, env=None, count=repeats):
        out[key] = _summarise(label, [run({**base, **spec}, env) for _ in range(count)], nbytes)
        _report(out[key], out.get("floor_tvm"))

    loads(
        "floor_tvm",
        "(a) floor: pinned host -> device, TVM" if device == "cuda" else "(a) floor: host -> cpu tensor, TVM",
        {"route": "floor_tvm", "repeats": max(repeats, 5)},
        count=1,
    )
    if torch_cuda:
        loads(
            "floor_torch",
            "(a) floor: pinned host -> device, torch",
            {"route": "floor_torch", "repeats": max(repeats, 5)},
            count=1,
        )
    loads(
        "pageable_tvm",
        "    pageable numpy -> device, TVM",
        {"route": "pageable_tvm", "repeats": max(repeats, 5)},
        count=1,
    )

    pm = tvm_partial.partial(exe, signature=tensors, w=w, b=b, device=device)
    artifact = work / "artifact.so"
    tvm_partial.export_library(pm, artifact)  # past 16 MiB: zero-copy, appended to the library
    sample = max(1, n // 100_000)
    loads(
        "partial",
        "(b) tvm-partial: load_module + 1st call",
        {"route": "partial", "path": str(artifact), "sample": sample},
    )
    if variants:
        for i, (label, env) in enumerate(list(VARIANTS.items())[1:]):
            spec = {"route": "partial", "path": str(artifact)}
            loads(f"variant{i + 1}", f"    copy: {label}", spec, env, count=min(repeats, 2))
    artifact.unlink()

    # Each export its own name: a process that loaded a library keeps that file for the name.
    artifact = work / "artifact_weights_file.so"
    weights_file = work / "weights.safetensors"
    tvm_partial.export_library(pm, artifact, weights_file=weights_file)
    loads(
        "partial_weights_file", "(b) tvm-partial, weights_file=", {"route": "partial", "path": str(artifact)}
    )
    if torch_cuda or (device == "cpu" and _has("torch")):
        loads(
            "safetensors",
            "(c) safetensors.torch.load_file",
            {"route": "safetensors", "path": str(weights_file)},
        )
    artifact.unlink()
    weights_file.unlink()
    del pm
    gc.collect()

    kernel = work / "kernel.so"
    exe.export_library(str(kernel))
    params = work / "params.bin"
    tvm.runtime.save_param_dict_to_file({"w": tvm.runtime.tensor(w), "b": tvm.runtime.tensor(b)}, str(params))
    loads(
        "param_dict",
        "(d) TVM load_param_dict + copyto",
        {"route": "param_dict", "path": str(params), "kernel": str(kernel)},
    )
    params.unlink()
    npz = work / "weights.npz"
    np.savez(npz, w=w, b=b)
    loads(
        "npz",
        "(d) numpy .npz + tvm.runtime.tensor",
        {"route": "npz", "path": str(npz), "kernel": str(kernel)},
    )
    npz.unlink()

    if variants:
        exe_many, tensors_many = _build(device, [n // MANY] * MANY)
        parts = {f"w{i}": w[i * (n // MANY) : (i + 1) * (n // MANY)].copy() for i in range(MANY)}
        parts[f"w{MANY - 1}"][-1] = 3.0
        pm_many = tvm_partial.partial(exe_many, signature=tensors_many, b=b, device=device, **parts)
        artifact = work / "artifact_many.so"
        tvm_partial.export_library(pm_many, artifact)
        del pm_many, parts
        label = f"    {MANY} tensors of {format_size(nbytes // MANY)}, default copy"
        out["many"] = _summarise(
            label, [run({**base, "route": "partial", "path": str(artifact)}) for _ in range(repeats)], nbytes
        )
        _report(out["many"], out.get("floor_tvm"))
        artifact.unlink()
        kernel.unlink()
    return out


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _report(row: dict, floor: dict | None) -> None:
    if "error" in row:
        print(f"  {row['label']}: failed: {row['error']}", flush=True)
        return
    ratio = (
        f", {row['bytes_per_s'] / floor['bytes_per_s']:.2f} x the floor"
        if floor and "bytes_per_s" in floor
        else ""
    )
    print(f"  {row['label']}: {format_ns(row['ns'])}, {row['bytes_per_s'] / 1e9:.2f} GB/s{ratio}", flush=True)


def _rows(results: dict, nbytes: int) -> list[list[str]]:
    floor = results.get("floor_tvm", {}).get("bytes_per_s")
    rows = []
    for row in results.values():
        if "error" in row:
            rows.append([f"{row['label']} -- failed: {row['error'][:80]}", "", "", "", "", ""])
            continue
        held = (
            f"{format_size(row['held_bytes'])} ({row['held_bytes'] / nbytes:.1%})"
            if "held_bytes" in row
            else "-"
        )
        peak = format_size(row["peak_bytes"]) if "peak_bytes" in row else "-"
        ratio = f"{row['bytes_per_s'] / floor:.2f}" if floor else "-"
        rows.append(
            [row["label"], format_ns(row["ns"]), f"{row['bytes_per_s'] / 1e9:.2f}", ratio, held, peak]
        )
    return rows


def targets(results: dict, nbytes: int) -> dict:
    """The docstring's targets at one size -> {name: {"value", "met"}} (None: not measured)."""
    ours, floor = results.get("partial", {}), results.get("floor_tvm", {})
    out = {}
    if "bytes_per_s" in ours and "bytes_per_s" in floor:
        ratio = ours["bytes_per_s"] / floor["bytes_per_s"]
        out[">= 80% of the floor"] = {"value": f"{ratio:.0%} of it", "met": ratio >= 0.8}
    for key, name in (
        ("safetensors", "ahead of (c) safetensors"),
        ("param_dict", "ahead of (d) param dict"),
        ("npz", "ahead of (d) .npz"),
    ):
        other = results.get(key, {})
        if "ns" in ours and "ns" in other:
            out[name] = {"value": f"{other['ns'] / ours['ns']:.2f}x as fast", "met": ours["ns"] < other["ns"]}
    if "held_bytes" in ours:
        share = ours["held_bytes"] / nbytes
        out["host memory held <= 5%"] = {
            "value": f"{share:.1%} ({format_size(ours['held_bytes'])})",
            "met": share <= 0.05,
        }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--device", choices=["cuda", "cpu"], help="default: cuda where TVM sees a CUDA device, else cpu"
    )
    parser.add_argument("--sizes", nargs="+", help="weight sizes (default: 1GiB 8GiB on cuda, 64MiB on cpu)")
    parser.add_argument("--repeats", type=int, help="fresh-process loads per route (median; default 3)")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: tiny sizes, one repeat, in this process"
    )
    parser.add_argument(
        "--no-variants", action="store_true", help="leave out the copy variants at the first size"
    )
    parser.add_argument("--workdir", type=Path, help="where the files go (default: the temporary folder)")
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the results there (after every size)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(load_route(json.loads(args.child))))
        return 0

    import tvm

    device = args.device or ("cuda" if tvm.cuda(0).exist else "cpu")
    if device == "cuda" and not tvm.cuda(0).exist:
        parser.error("--device cuda: TVM sees no CUDA device here (tvm.cuda(0).exist is False)")
    sizes = [parse_size(s) for s in (args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)[device])]
    repeats = args.repeats or (1 if args.quick else 3)
    torch_cuda = False
    if device == "cuda" and _has("torch"):
        import torch

        torch_cuda = torch.cuda.is_available()
    print(machine())
    if device == "cpu":
        print(
            "device cpu: the same code with CPU tensors; no bus, no GPU figures (a smoke run of the script)"
        )
    else:
        print(
            f"device cuda:0: {tvm.cuda(0).device_name}; torch with CUDA: {'yes' if torch_cuda else 'no ((a) torch, (c) not run)'}"
        )
    print(
        f"{', '.join(format_size(s) for s in sizes)} of float32 weights; {repeats} fresh-process loads per route (median)"
        + (" -- quick: in this process" if args.quick else ""),
        flush=True,
    )
    # The common fields every benchmark's JSON has (_common.Report), and this one's own results.
    rep = Report(__file__, argv)
    document = rep.data
    document.update({"device": device, "repeats": repeats, "sizes": {}})
    run = Runner(in_process=args.quick)
    with tempfile.TemporaryDirectory(prefix="tvm-partial-gpu-bench-", dir=args.workdir) as work:
        for i, nbytes in enumerate(sizes):
            print(f"\n{format_size(nbytes)}:", flush=True)
            results = measure(
                device,
                nbytes,
                repeats,
                Path(work),
                run,
                variants=i == 0 and not args.no_variants,
                torch_cuda=torch_cuda,
            )
            verdicts = targets(results, nbytes)
            if device == "cpu":  # CPU tensors view the mapping: nothing is copied, no bus to judge
                verdicts = {k: {**v, "met": None} for k, v in verdicts.items()}
            document["sizes"][format_size(nbytes)] = {
                "nbytes": nbytes,
                "routes": results,
                "targets": verdicts,
            }
            print(
                f"\n{format_size(nbytes)} onto {device}: time to the first result, GB/s = 1e9 bytes/s; RSS held: after the first result, above before the load"
            )
            rep.table(
                f"gpu-load-{format_size(nbytes)}",
                "",
                ["route", "time", "GB/s", "vs floor", "host RSS held", "peak RSS"],
                _rows(results, nbytes),
            )
            for name, v in verdicts.items():
                verdict = {True: "met", False: "NOT met", None: "not judged on cpu (no bus)"}[v["met"]]
                print(f"target {name}: {v['value']}: {verdict}")
            rep.write(args.json)  # after every size: a run cut short keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
