# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bind time against the constant's size, 1 KiB .. 1 GiB (docs/benchmarks.md): a tvm Tensor is held
by reference; a numpy array is copied once (for contrast). Peak memory: about twice the largest size.
With torch installed, also a torch model's whole state_dict (300 tensors, 100 MiB): bound through
tvm_partial.from_exported_program, and through signature= with TVM's import compiling it all in.

    python benchmarks/bench_bind.py [--sizes 1KiB 64MiB ...] [--repeats N] [--quick] [--json PATH]
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np

from _common import Report, format_size, machine, median, parse_size, parser

DEFAULT_SIZES = ["1KiB", "16KiB", "256KiB", "4MiB", "64MiB", "1GiB"]


def per_bind_ns(bind, binds: int, repeats: int) -> float:
    """Median over repeats of the mean time of `binds` binds (each result dropped at once)."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(binds):
            bind()
        samples.append((time.perf_counter_ns() - start) / binds)
    return median(samples)


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--sizes", nargs="+", help=f"constant sizes (default: {' '.join(DEFAULT_SIZES)})")
    p.add_argument("--repeats", type=int, help="repeats per measurement (default 7)")
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    sizes = [parse_size(s) for s in (args.sizes or (["1KiB", "64KiB"] if args.quick else DEFAULT_SIZES))]
    repeats, binds = args.repeats or (1 if args.quick else 7), 10 if args.quick else 1000

    import tvm
    import tvm_ffi
    from tvm import te

    from tvm_partial import partial

    x, w, b = (te.placeholder((1,), "float32", name=n) for n in "xwb")
    out = te.compute((1,), lambda i: x[i] * w[i] + b[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, b, out]), target="llvm")
    f, raw = exe["main"], tvm_ffi.get_global_func("runtime.PartialApply")
    bias = tvm.runtime.tensor(np.ones((1,), "float32"))
    print(machine())
    print(f"binding w (float32, the size given) and b (4 bytes) at positions 1, 2; medians of {repeats}")
    rows, values = [], []
    for nbytes in sizes:
        host = np.ones((max(nbytes // 4, 1),), "float32")  # pages touched: a real, resident array
        t = tvm.runtime.tensor(host)
        gc.collect()
        v = {
            "bytes": nbytes,
            "partial_ns": per_bind_ns(lambda t=t: partial(f, {1: t, 2: bias}), binds, repeats),
            "raw_ns": per_bind_ns(lambda t=t: raw(f, {1: t, 2: bias}), binds, repeats),
            "module_ns": per_bind_ns(lambda t=t: partial(exe, {1: t, 2: bias}), binds, repeats),
        }
        del t
        # numpy: one copy per bind; fewer binds and repeats for large arrays.
        np_binds = max(1, min(binds, (64 << 20) // nbytes))
        np_repeats = repeats if nbytes < 256 << 20 else min(repeats, 3)
        v["numpy_ns"] = per_bind_ns(lambda host=host: partial(f, {1: host, 2: bias}), np_binds, np_repeats)
        del host
        gc.collect()
        values.append(v)
        rate = f"{nbytes / v['numpy_ns']:.2f}" if nbytes >= 1 << 20 else "-"
        us = [f"{v[k] / 1e3:.1f}" for k in ("partial_ns", "raw_ns", "module_ns")]
        rows.append([format_size(nbytes), *us, f"{v['numpy_ns'] / 1e3:,.1f}", rate])
    header = "size|partial(f) us|runtime.PartialApply us|partial(exe) us|partial(f), numpy us|numpy copy GB/s"
    rep.table("bind", "", header, rows, values=values)
    print()
    growth = max(sizes) / min(sizes)
    for label, key in (("partial()", "partial_ns"), ("runtime.PartialApply", "raw_ns")):
        spread = max(v[key] for v in values) / min(v[key] for v in values)
        flat = "flat: O(1)" if spread < 2 else "NOT flat"
        grew = f"while the size grew {growth:,.0f}x ({flat})"
        rep.note(f"tvm Tensor via {label}: slowest / fastest = {spread:.2f} {grew}")
    model_bind(rep, 2 if args.quick else 150, 32 if args.quick else 416, repeats)
    rep.write(args.json)
    return 0


def model_bind(rep, layers: int, width: int, repeats: int) -> None:
    """A stack of `layers` Linear(width, width): 2 * layers tensors; the time to bind its
    state_dict, against the time to copy its bytes once (torch's clone of each tensor)."""
    try:
        import torch
    except ImportError:
        rep.note("torch is not installed: no model bind times")
        return
    import tvm
    from tvm.relax.frontend.torch import from_exported_program

    import tvm_partial

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    torch.manual_seed(0)
    model = Stack().eval()
    state = model.state_dict()
    nbytes = sum(t.numel() * t.element_size() for t in state.values())
    program = torch.export.export(model, (torch.ones(1, width),))
    imported = tvm.compile(tvm_partial.from_exported_program(program), target="llvm")
    compiled_in = tvm.compile(from_exported_program(program), target="llvm")  # every tensor a constant
    rows = {
        "copy its bytes (torch clone)": lambda: [t.clone() for t in state.values()],
        "partial(exe, **state), from_exported_program": lambda: tvm_partial.partial(imported, **state),
        "partial(exe, signature=ep, **state), all compiled in": lambda: tvm_partial.partial(
            compiled_in, signature=program, **state
        ),
    }
    seconds = {name: median(_timed(f) for _ in range(repeats)) for name, f in rows.items()}
    copy = seconds["copy its bytes (torch clone)"]
    table = [[name, f"{s * 1e3:.1f}", f"{s / copy:.2f}x"] for name, s in seconds.items()]
    title = f"\na model's state_dict: {len(state)} tensors, {format_size(nbytes)}; medians of {repeats}"
    rep.table("model", title, "bind|ms|of the copy", table, values=seconds)
    imported_ratio = seconds["partial(exe, **state), from_exported_program"] / copy
    rep.note(
        f"through the import: {imported_ratio:.2f}x the copy (target <= 2x: {'holds' if imported_ratio <= 2 else 'MISSED'})"
    )


def _timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
