# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights onto the GPU at the speed of the bus (docs/benchmarks.md): tvm-partial's load of
CUDA-bound weights to the first result, beside (a) the floor, pinned host -> device copies, (b) its
weights_file= placement, (c) safetensors' load_file(device="cuda"), (d) TVM's .npz + copy; at the
first size the chunked copy's variants (TVM_PARTIAL_COPY_*) and 64 tensors. Fresh processes, medians.

    python benchmarks/bench_gpu_load.py [--device cuda] [--sizes 1GiB 8GiB] [--repeats 3] [--json PATH]
    python benchmarks/bench_gpu_load.py --device cpu --quick   # the same code with CPU tensors: a smoke run
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import _common as c

VARIANTS = {  # label -> environment of the loading process (TVM_PARTIAL_COPY_...)
    "one piece, direct (the copy before the chunked one)": {"STAGING": "direct", "CHUNK_MIB": "0"},
    "16 MiB pieces, direct (pageable)": {"STAGING": "direct"},
    "pinned, 1 thread": {"THREADS": "1"},
    "pinned, 8 threads": {"THREADS": "8"},
    "pinned, 64 MiB pieces": {"CHUNK_MIB": "64"},
}
MANY = 64  # tensors of the many-tensor variant
CHILD = "from bench_gpu_load import load_route\nprint(json.dumps(load_route(json.loads(sys.argv[1]))))"


def _weights(n: int):
    """Small integers (a random block of a prime length, repeated); w[-1] = 3, so out = 2 * 3 + 1."""
    import numpy as np

    w = np.resize(np.random.default_rng(7).integers(-8, 9, size=1_000_003).astype("float32"), n)
    w[-1] = 3.0
    return w


def load_route(spec: dict) -> dict:
    """One measurement (in a fresh process) -> its figures."""
    import numpy as np
    import tvm

    import tvm_partial  # registers the loader, as a user's import does

    dev, route, folder = tvm.device(spec["device"], 0), spec["route"], os.path.dirname(spec.get("path", ""))
    tvm.runtime.empty((1,), "float32", dev).numpy()  # the CUDA context, before the clock
    if route in ("floor", "pageable"):  # the bus alone: copies into one device tensor, the 1st warms up
        host, times = np.ones(spec["nbytes"], "uint8"), []
        if route == "floor":  # on CUDA from its pinned host memory (cuda_host, 3: cudaMallocHost)
            host = tvm.runtime.tensor(host, device=tvm.device(3 if spec["device"] == "cuda" else 1, 0))
        dst = tvm.runtime.empty((spec["nbytes"],), "uint8", dev)
        for _ in range(6):
            t0 = time.perf_counter_ns()
            dst.copyfrom(host)
            dev.sync()
            times.append(time.perf_counter_ns() - t0)
        return {"ns": c.median(times[1:]), "samples_ns": times[1:]}
    if route == "safetensors":
        import torch
        from safetensors.torch import load_file

        torch.empty(1, device=spec["torch_device"]).cpu()  # its context too
    x = tvm.runtime.tensor(np.full((1,), 2.0, "float32"), device=dev)
    out = tvm.runtime.empty((1,), "float32", dev)
    c.reset_peak()
    rss, peak = c.status("VmRSS"), c.status("VmHWM")
    t0 = time.perf_counter_ns()
    if route == "partial":
        m = tvm.runtime.load_module(spec["path"])
        m(x, out)
    elif route == "safetensors":
        weights = load_file(spec["path"], device=spec["torch_device"])
        w, b = (next(t for k, t in weights.items() if k.split("/")[-1] == name) for name in "wb")  # main/w
        out = (torch.full((1,), 2.0, device=spec["torch_device"]) * w[-1] + b).cpu()
    else:  # TVM's tutorial way: an .npz, copied to the device, passed to the plain kernel
        with np.load(spec["path"]) as arrays:
            w, b = (tvm.runtime.tensor(arrays[k], device=dev) for k in "wb")
        tvm.runtime.load_module(f"{folder}/kernel.so")["main"](x, w, b, out)
    result = {"value": float(out.numpy()[0]), "ns": time.perf_counter_ns() - t0}
    result.update(held_bytes=max(c.status("VmRSS") - rss, 0), peak_bytes=max(c.status("VmHWM") - peak, 0))
    if spec.get("sample"):  # after the clock: the loaded weights are the exported ones
        w = tvm_partial.bindings(m)["main"][1].numpy()
        result["sample_ok"] = bool(np.array_equal(w[:: spec["sample"]], _weights(w.size)[:: spec["sample"]]))
    return result


def _build(device: str, shapes: list[int]):
    """out = x * w_last[-1] + b over weight tensors of `shapes` elements (CUDA: one GPU thread)."""
    import tvm
    from tvm import te

    x, b = te.placeholder((1,), "float32", name="x"), te.placeholder((1,), "float32", name="b")
    ws = [
        te.placeholder((n,), "float32", name=f"w{i}" if len(shapes) > 1 else "w")
        for i, n in enumerate(shapes)
    ]
    out = te.compute((1,), lambda i: x[i] * ws[-1][shapes[-1] - 1] + b[i], name="out")
    sch = tvm.s_tir.Schedule(te.create_prim_func([x, *ws, b, out]))
    if device == "cuda":
        sch.bind(sch.get_loops(sch.get_sblock("out"))[0], "threadIdx.x")
    target = tvm.target.Target.from_device(tvm.cuda(0)) if device == "cuda" else "llvm"
    return tvm.compile(sch.mod, target=target), [x, *ws, b, out]


def measure(device: str, nbytes: int, repeats: int, work: Path, variants: bool, torch_cuda: bool):
    """{key: figures} of every route at one size. Each artifact has a name of its own (a process
    that loaded a library keeps that file for the name), each removed after its loads."""
    import numpy as np

    import tvm_partial

    n, out = nbytes // 4, {}
    w, b = _weights(n), np.ones(1, "float32")
    exe, tensors = _build(device, [n])
    pm = tvm_partial.partial(exe, signature=tensors, w=w, b=b, device=device)
    base = {"device": device, "nbytes": nbytes, "torch_device": "cuda" if device == "cuda" else "cpu"}

    def route(key, label, spec, env=None, count=repeats):
        env = {f"TVM_PARTIAL_COPY_{k}": v for k, v in (env or {}).items()}
        runs = [c.child(CHILD, json.dumps({**base, **spec}), env=env, fail_ok=True) for _ in range(count)]
        failed = [r["error"] for r in runs if "error" in r]
        failed += [f"wrong result {r['value']}" for r in runs if r.get("value", 7.0) != 7.0]
        failed += ["the loaded weights differ" for r in runs if not r.get("sample_ok", True)]
        ns = c.median(r.get("ns", 0) for r in runs)
        out[key] = (
            {"label": label, "error": failed[0]} if failed else {"label": label, "ns": ns, "samples": runs}
        )
        if not failed:
            out[key].update(
                {k: c.median(r[k] for r in runs) for k in ("held_bytes", "peak_bytes") if k in runs[0]}
            )
        print(f"  {label}: {failed[0] if failed else f'{ns / 1e6:,.2f} ms'}", flush=True)

    def clean():
        for leftover in work.iterdir():
            leftover.unlink()

    route(
        "floor",
        f"(a) floor: {'pinned ' * (device == 'cuda')}host -> {device}, TVM",
        {"route": "floor"},
        count=1,
    )
    route("pageable", "    pageable numpy -> device, TVM", {"route": "pageable"}, count=1)
    ours, path = {"route": "partial"}, f"{work}/appended.so"
    tvm_partial.export_library(pm, path)  # past 16 MiB: zero-copy, appended to the library
    route(
        "partial", "(b) tvm-partial: load_module + 1st call", {**ours, "path": path, "sample": 1 + n // 10**5}
    )
    for i, (label, env) in enumerate(VARIANTS.items() if variants else []):
        route(f"variant{i + 1}", f"    copy: {label}", {**ours, "path": path}, env, min(repeats, 2))
    clean()
    path, weights = f"{work}/weights_file.so", f"{work}/w.safetensors"
    tvm_partial.export_library(pm, path, weights_file=weights)
    route("partial_weights_file", "(b) tvm-partial, weights_file=", {**ours, "path": path})
    if torch_cuda or (device == "cpu" and importlib.util.find_spec("torch")):
        route("safetensors", "(c) safetensors.torch.load_file", {"route": "safetensors", "path": weights})
    clean()
    exe.export_library(str(work / "kernel.so"))
    np.savez(work / "w.npz", w=w, b=b)
    route(
        "npz", "(d) TVM's tutorial way: .npz + tvm.runtime.tensor", {"route": "npz", "path": f"{work}/w.npz"}
    )
    clean()
    if variants:
        exe, tensors = _build(device, [n // MANY] * MANY)
        parts = {f"w{i}": part.copy() for i, part in enumerate(np.split(w[: n // MANY * MANY], MANY))}
        parts[f"w{MANY - 1}"][-1] = 3.0
        pm, path = tvm_partial.partial(exe, signature=tensors, b=b, device=device, **parts), f"{work}/many.so"
        tvm_partial.export_library(pm, path)
        route("many", f"    {MANY} tensors of {c.format_size(nbytes // MANY)}", {**ours, "path": path})
        clean()
    return out


def report(rep, device: str, nbytes: int, r: dict) -> dict:
    """Print and record one size's table; print its targets -> {target: (value, met: None on cpu)}."""
    rows, floor, size = [], r["floor"].get("ns"), c.format_size(nbytes).replace(" ", "")
    for f in r.values():
        if "error" in f:
            rows.append([f"{f['label']} -- failed: {f['error'][:80]}", "", "", "", "", ""])
            continue
        vs, held, peak = f"{floor / f['ns']:.2f}" if floor else "-", "-", "-"
        if "held_bytes" in f:  # not for a floor
            peak = c.format_size(f["peak_bytes"])
            held = f"{c.format_size(f['held_bytes'])} ({f['held_bytes'] / nbytes:.1%})"
        rows.append([f["label"], f"{f['ns'] / 1e6:,.2f} ms", f"{nbytes / f['ns']:.2f}", vs, held, peak])
    title = f"\n{size} onto {device}: time to the first result, GB/s = 1e9 bytes/s; RSS held after it"
    rep.table(f"gpu-load-{size}", title, "route|time|GB/s|vs floor|host RSS held|peak RSS", rows)
    ours, targets = r["partial"], {}
    if "ns" in ours and floor:
        targets[">= 80% of the floor"] = (f"{floor / ours['ns']:.0%} of it", floor / ours["ns"] >= 0.8)
    for key in ("safetensors", "npz"):
        if "ns" in ours and "ns" in r.get(key, {}):
            ratio = r[key]["ns"] / ours["ns"]
            targets[f"ahead of {r[key]['label']}"] = (f"{ratio:.2f}x as fast", ratio > 1)
    if "held_bytes" in ours:
        share = ours["held_bytes"] / nbytes
        targets["host memory held <= 5%"] = (f"{share:.1%}", share <= 0.05)
    met = {True: "met", False: "NOT met", None: "not judged on cpu (no bus)"}
    for name, (value, ok) in targets.items():
        print(f"target {name}: {value}: {met[None if device == 'cpu' else ok]}")
    return {k: (v, None if device == "cpu" else ok) for k, (v, ok) in targets.items()}


def main(argv=None) -> int:
    p = c.parser(__doc__)
    p.add_argument("--device", choices=["cuda", "cpu"], help="default: cuda where TVM sees one, else cpu")
    p.add_argument("--sizes", nargs="+", help="weight sizes (default: 1GiB 8GiB on cuda, 64MiB on cpu)")
    p.add_argument("--repeats", type=int, help="fresh-process loads per route (median; default 3)")
    p.add_argument("--no-variants", action="store_true", help="leave out the variants at the first size")
    p.add_argument("--workdir", type=Path, help="where the files go (default: the temporary folder)")
    args = p.parse_args(argv)
    import tvm

    device = args.device or ("cuda" if tvm.cuda(0).exist else "cpu")
    if device == "cuda" and not tvm.cuda(0).exist:
        p.error("--device cuda: TVM sees no CUDA device here (tvm.cuda(0).exist is False)")
    default = {"cuda": ["1GiB", "8GiB"], "cpu": ["64MiB"]}[device] if not args.quick else ["4MiB"]
    sizes = [c.parse_size(s) for s in args.sizes or default]
    repeats = args.repeats or (1 if args.quick else 3)
    torch_cuda = device == "cuda" and importlib.util.find_spec("torch") is not None
    if torch_cuda:
        import torch

        torch_cuda = torch.cuda.is_available()
    print(c.machine())
    print(f"cuda:0: {tvm.cuda(0).device_name}" if device == "cuda" else "cpu: no bus, no GPU figures")
    rep = c.Report(__file__, argv)
    rep.data.update({"device": device, "torch_cuda": torch_cuda, "repeats": repeats, "sizes": {}})
    with tempfile.TemporaryDirectory(prefix="tvm-partial-gpu-bench-", dir=args.workdir) as work:
        for i, nbytes in enumerate(sizes):
            size, variants = c.format_size(nbytes), i == 0 and not (args.no_variants or args.quick)
            print(f"\n{size} of float32 weights, {repeats} loads per route:", flush=True)
            r = measure(device, nbytes, repeats, Path(work), variants, torch_cuda)
            targets = report(rep, device, nbytes, r)
            rep.data["sizes"][size] = {"nbytes": nbytes, "routes": r, "targets": targets}
            rep.write(args.json)  # after every size: a run cut short keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
