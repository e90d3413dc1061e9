# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost of a kernel that returns its output (``partial(..., outputs="result")``) from
Python, beside the two ways to call a destination-passing kernel directly.

    python benchmarks/bench_outputs.py           # 7 repeats x 50,000 calls (tiny), 7 x 2,000 (conv2d)
    python benchmarks/bench_outputs.py --quick   # a smoke run: 1 x 1,000 and 1 x 10
    python benchmarks/bench_outputs.py --json benchmarks/results/outputs.json   # also as JSON

Rows, per kernel: the direct call into a preallocated output; ``tvm.runtime.empty`` + the direct
call (what Python code does to get a new output per call); the returning partial ``out = g(x)``
(weights and bias bound, the output allocated in C++); and for reference the partial writing into
a preallocated output. Rows are timed in an order rotated between repeats; medians of ns per call.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from itertools import repeat

import numpy as np

from _common import Report, add_json_option, machine, median


def tiny_kernel():
    """out = x * w + b, shape (1,): all that is measured is dispatch and allocation."""
    import tvm
    from tvm import te

    x, w, b = (te.placeholder((1,), "float32", name=n) for n in ("x", "w", "b"))
    out = te.compute((1,), lambda i: x[i] * w[i] + b[i], name="out")
    tensors = [x, w, b, out]
    arrays = {k: np.full((1,), v, "float32") for k, v in (("x", 3), ("w", 2), ("b", 1))}
    return tvm.compile(te.create_prim_func(tensors), target="llvm"), tensors, arrays


def conv_kernel():
    from tvm_partial import _fixtures as fixtures

    exe, tensors = fixtures.build_conv2d_bias()
    inputs = fixtures.sample_inputs()
    return exe, tensors, {"x": inputs["data"], "w": inputs["weights"], "b": inputs["bias"]}


def variants(exe, tensors, arrays):
    import tvm

    import tvm_partial

    f = exe["main"]
    x, w, b = (tvm.runtime.tensor(arrays[k]) for k in ("x", "w", "b"))
    shape = tuple(int(d) for d in tensors[3].shape)
    out = tvm.runtime.empty(shape, "float32")
    names = {"weights" if t.op.name == "weights" else t.op.name: v for t, v in zip(tensors[1:3], (w, b))}
    g = tvm_partial.partial(f, signature=tensors, **names)
    returning = tvm_partial.partial(f, signature=tensors, outputs=tensors[3].op.name, **names)
    empty = tvm.runtime.empty

    rows = [
        ("direct f(x, w, b, out), out preallocated", lambda: f(x, w, b, out)),
        ("tvm.runtime.empty + direct f(x, w, b, out)", lambda: f(x, w, b, empty(shape, "float32"))),
        ("returning partial: out = g(x)", lambda: returning(x)),
        ("partial g(x, out), out preallocated", lambda: g(x, out)),
    ]
    f(x, w, b, out)
    if not np.array_equal(returning(x).numpy(), out.numpy()):
        raise SystemExit("the returning partial disagrees with the direct call")
    return rows


def measure(rows, calls: int, repeats: int):
    samples = [[] for _ in rows]
    for _, fn in rows:  # warm-up
        for _ in repeat(None, max(calls // 10, 1)):
            fn()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeats):
            order = list(range(len(rows)))
            order = order[rep % len(rows) :] + order[: rep % len(rows)]
            for i in order:
                fn = rows[i][1]
                start = time.perf_counter_ns()
                for _ in repeat(None, calls):
                    fn()
                samples[i].append((time.perf_counter_ns() - start) / calls)
    finally:
        if gc_was_enabled:
            gc.enable()
    return [median(s) for s in samples]


def report(rep, name, title, rows, ns, calls, repeats) -> dict:
    direct = ns[0]
    body = [
        [label, f"{v:,.0f}", f"{(v - direct) / 1000:+.2f}", f"{v / direct:.2f}"]
        for (label, _), v in zip(rows, ns)
    ]
    medians = {label: v for (label, _), v in zip(rows, ns)}
    rep.table(
        name,
        f"\n{title}: {repeats} repeats x {calls:,} calls (a Python lambda around each call is in every row)",
        ["variant", "median ns/call", "vs direct (us)", "vs direct"],
        body,
        values={"median_ns": medians},
    )
    return medians


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="few calls: check that it runs, not for figures")
    parser.add_argument("--calls", type=int, help="calls per repeat, tiny kernel (default 50,000)")
    parser.add_argument("--conv-calls", type=int, help="calls per repeat, conv2d (default 2,000)")
    parser.add_argument("--repeats", type=int, help="repeats (default 7)")
    add_json_option(parser)
    args = parser.parse_args(argv)
    rep = Report(__file__, argv)
    repeats = args.repeats or (1 if args.quick else 7)
    tiny_calls = args.calls or (1_000 if args.quick else 50_000)
    conv_calls = args.conv_calls or (10 if args.quick else 2_000)

    print(machine())
    print("load average at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    rows = variants(*tiny_kernel())
    tiny = report(
        rep,
        "tiny",
        "tiny kernel, out = x * w + b, shape (1,)",
        rows,
        measure(rows, tiny_calls, repeats),
        tiny_calls,
        repeats,
    )
    rows = variants(*conv_kernel())
    report(
        rep,
        "conv2d",
        "conv2d + bias (1, 3, 32, 32) * (8, 3, 3, 3) -> (1, 8, 30, 30)",
        rows,
        measure(rows, conv_calls, repeats),
        conv_calls,
        repeats,
    )

    ret = tiny["returning partial: out = g(x)"]
    checks = [
        (
            "returning partial / (empty + direct) <= 0.25 (tiny kernel)",
            f"{ret / tiny['tvm.runtime.empty + direct f(x, w, b, out)']:.2f}",
            ret / tiny["tvm.runtime.empty + direct f(x, w, b, out)"] <= 0.25,
        ),
        (
            "returning partial - preallocated direct <= 1 us (tiny kernel)",
            f"{(ret - tiny['direct f(x, w, b, out), out preallocated']) / 1000:+.2f} us",
            ret - tiny["direct f(x, w, b, out), out preallocated"] <= 1000,
        ),
    ]
    print()
    for text, value, holds in checks:
        rep.note(f"target: {text}: {value}, {'holds' if holds else 'does not hold'}")
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
