# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A Relax model with its weights, shipped three ways, side by side (docs/benchmarks.md):

- BindParams: weights folded in at compile time (`relax.transform.BindParams`), one .so;
- tutorial:   weights kept as inputs, a .so plus an .npz loaded by hand, `*params` on every call;
- tvm-partial: `partial(exe, device=..., w=...)` exported as one .so.

For each: export time, time to ship a new weight set for the same code (BindParams: compile
again; tutorial: write a new .npz; tvm-partial: load the artifact, ``rebind``, export a copy), load-to-first-result in a
fresh process, RSS held before the first call and peak RSS (both above the process's RSS after
`import tvm`), and whether the result equals the direct VM call (bitwise).

    python benchmarks/bench_relax.py [--sizes 256MiB 1GiB] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

_CHILD = r"""
import json, sys, time
import numpy as np, tvm
from tvm import relax
def status(field):
    return int(next(l for l in open("/proc/self/status") if l.startswith(field)).split()[1]) * 1024
def rss():
    return status("VmRSS:")
kind, so, npz, xfile, reffile = sys.argv[1:6]
import tvm_partial  # noqa: F401 - the same imports for every variant
x = tvm.runtime.tensor(np.load(xfile))
base = rss()
t0 = time.perf_counter()
if kind == "bindparams":
    vm = relax.VirtualMachine(tvm.runtime.load_module(so), tvm.cpu())
    held = rss() - base
    out = vm["main"](x)
elif kind == "tutorial":
    vm = relax.VirtualMachine(tvm.runtime.load_module(so), tvm.cpu())
    params = [tvm.runtime.tensor(v) for v in np.load(npz).values()]
    held = rss() - base
    out = vm["main"](x, *params)
else:
    m = tvm.runtime.load_module(so)
    held = rss() - base
    out = m(x)
result = out.numpy()
elapsed = time.perf_counter() - t0
peak = status("VmHWM:") - base  # this process's own high-water mark (ru_maxrss counts the parent's)
print(json.dumps({"load_to_first_s": elapsed, "held": held, "peak": peak,
                  "equal": bool(np.array_equal(result, np.load(reffile)))}))
"""


def _size(text: str) -> int:
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    for unit, scale in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * scale)
    return int(text)


def _model(rows: int, cols: int):
    """main(x: (cols, 1), w: (rows, cols)) = w @ x: every weight read once, in memory order, so the
    first call costs what reading the weights costs, not an untuned kernel's compute."""
    from tvm import relax
    from tvm.script import relax as R

    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((cols, 1), "float32"))
    w = relax.Var("w", R.Tensor((rows, cols), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.matmul(w, x))
        bb.emit_func_output(y)
    return bb.get()


def run(size: int, folder: str) -> dict:
    import tvm
    from tvm import relax

    import tvm_partial

    cols = 4096
    rows = size // (4 * cols)
    mod = _model(rows, cols)
    rng = np.random.default_rng(0)
    w = rng.integers(-2, 3, size=(rows, cols)).astype("float32")
    w2 = (w * 2).astype("float32")
    x = rng.integers(-2, 3, size=(cols, 1)).astype("float32")
    exe = tvm.compile(mod, target="llvm")
    ref = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    np.save(f"{folder}/x.npy", x)
    np.save(f"{folder}/ref.npy", ref)
    out = {}

    def bindparams(weights, path):
        bound = relax.transform.BindParams("main", {"w": tvm.runtime.tensor(weights)})(mod)
        tvm.compile(bound, target="llvm").export_library(path)

    def tutorial(weights, path, code=True):
        if code:
            exe.export_library(path)
        np.savez(path + ".npz", w=weights)

    def partial(weights, path):
        tvm_partial.export_library(tvm_partial.partial(exe, device=tvm.cpu(), w=weights), path)

    for kind, export in (("bindparams", bindparams), ("tutorial", tutorial), ("tvm-partial", partial)):
        path = f"{folder}/{kind}.so"
        t0 = time.perf_counter()
        export(w, path)
        export_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        if kind == "tutorial":
            tutorial(w2, f"{folder}/new.so", code=False)  # same code: only the .npz changes
        elif kind == "tvm-partial":  # no compiler: a copy of the artifact with the new constants
            loaded = tvm.runtime.load_module(path)
            tvm_partial.export_library(tvm_partial.rebind(loaded, w=w2), f"{folder}/new.so")
            del loaded
        else:  # BindParams: the weights are part of the compiled code
            export(w2, f"{folder}/new.so")
        new_set_s = time.perf_counter() - t0
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, kind, path, path + ".npz", f"{folder}/x.npy", f"{folder}/ref.npy"],
            capture_output=True,
            text=True,
            check=True,
        )
        out[kind] = {
            "export_s": export_s,
            "new_weight_set_s": new_set_s,
            **json.loads(proc.stdout.splitlines()[-1]),
        }
        for leftover in (path, path + ".npz", f"{folder}/new.so", f"{folder}/new.so.npz"):
            if os.path.exists(leftover):
                os.remove(leftover)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["256MiB"])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 64 KiB")
    args = parser.parse_args()
    for text in ["64KiB"] if args.quick else args.sizes:
        with tempfile.TemporaryDirectory(prefix="bench_relax_") as folder:
            res = run(_size(text), folder)
        mib = 2**20
        print(f"\n{text} of weights")
        print(
            f"{'':12} {'export s':>9} {'new set s':>10} {'load->1st s':>12} {'held MiB':>9} {'peak MiB':>9}  equal"
        )
        for kind, r in res.items():
            print(
                f"{kind:12} {r['export_s']:9.2f} {r['new_weight_set_s']:10.2f} {r['load_to_first_s']:12.3f} "
                f"{r['held'] / mib:9.1f} {r['peak'] / mib:9.1f}  {r['equal']}"
            )
        tp = res["tvm-partial"]
        best_load = min(res["bindparams"]["load_to_first_s"], res["tutorial"]["load_to_first_s"])
        best_peak = min(res["bindparams"]["peak"], res["tutorial"]["peak"])
        size = _size(text)
        print(
            f"targets: load->1st {tp['load_to_first_s'] / best_load:.2f}x (<= 0.5x), "
            f"peak {tp['peak'] / best_peak:.2f}x (<= 0.6x), held {100 * tp['held'] / size:.1f}% (<= 5%), "
            f"new set {res['bindparams']['new_weight_set_s'] / tp['new_weight_set_s']:.1f}x faster than "
            "recompiling (>= 10x)"
        )


if __name__ == "__main__":
    main()
