# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost from Python: a direct call against tvm-partial and the Python alternatives.

    python benchmarks/bench_call.py            # 7 repeats x 100,000 calls (tiny), 7 x 2,000 (conv2d)
    python benchmarks/bench_call.py --quick    # a smoke run: 1 x 1,000 and 1 x 10
    python benchmarks/bench_call.py --json benchmarks/results/call.json   # also the results as JSON

Two kernels: a tiny one (out[0] = x[0] * w[0] + b[0], shape (1,)), where dispatch is all there is
to measure, and the conv2d + bias kernel of the forum thread (tvm_partial._fixtures). Every
variant is timed once per repeat, in an order rotated from repeat to repeat, so drift touches all
alike; the tables give the median ns per call and the ratio to the direct call.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
import time
from itertools import repeat

import numpy as np

from _common import Report, add_json_option, machine, median


def _loop(arity: int):
    """A timing loop calling fn with `arity` fixed arguments and nothing else in between."""
    names = ", ".join(f"a{i}" for i in range(arity))
    src = (
        f"def loop(fn, {names}{', ' if arity else ''}n):\n"
        f"    for _ in repeat(None, n):\n"
        f"        fn({names})\n"
    )
    scope = {"repeat": repeat}
    exec(src, scope)
    return scope["loop"]


_LOOPS = {k: _loop(k) for k in range(5)}


def _empty_loop_ns(n: int) -> float:
    start = time.perf_counter_ns()
    for _ in repeat(None, n):
        pass
    return (time.perf_counter_ns() - start) / n


def _call_reordered(f, w, b, x, out):
    """functools.partial binds leading arguments only; w and b sit at positions 1 and 2."""
    return f(x, w, b, out)


def tiny_kernel():
    import tvm
    from tvm import te

    x = te.placeholder((1,), "float32", name="x")
    w = te.placeholder((1,), "float32", name="w")
    b = te.placeholder((1,), "float32", name="b")
    out = te.compute((1,), lambda i: x[i] * w[i] + b[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, b, out]), target="llvm")
    rng = np.random.default_rng(0)
    arrays = {k: rng.integers(-4, 5, size=(1,)).astype("float32") for k in ("x", "w", "b")}
    arrays["out"] = np.zeros((1,), "float32")
    return exe, arrays


def conv_kernel():
    from tvm_partial import _fixtures as fixtures

    exe, _ = fixtures.build_conv2d_bias()
    inputs = fixtures.sample_inputs()
    arrays = {
        "x": inputs["data"],
        "w": inputs["weights"],
        "b": inputs["bias"],
        "out": np.zeros(fixtures.SHAPES["result"], "float32"),
    }
    return exe, arrays


def variants(exe, arrays):
    """[(label, fn, args)]; the first is the direct call every ratio refers to."""
    import tvm

    import tvm_partial

    f = exe["main"]
    x, w, b, out = (tvm.runtime.tensor(arrays[k]) for k in ("x", "w", "b", "out"))
    xn, outn = arrays["x"].copy(), arrays["out"].copy()
    wn, bn = arrays["w"], arrays["b"]

    g = tvm_partial.partial(f, {1: w, 2: b})
    nested2 = tvm_partial.partial(tvm_partial.partial(f, {1: w}), {1: b})
    single3 = tvm_partial.partial(f, {1: w, 2: b, 3: out})
    nested3 = tvm_partial.partial(tvm_partial.partial(tvm_partial.partial(f, {1: w}), {1: b}), {1: out})
    ftp = functools.partial(_call_reordered, f, w, b)
    closure = lambda x_, out_: f(x_, w, b, out_)  # noqa: E731
    pm = tvm_partial.partial(exe, {1: w, 2: b})
    pm_main = pm["main"]

    rows = [
        ("direct f(x, w, b, out)", f, (x, w, b, out)),
        ("tvm_partial g(x, out)", g, (x, out)),
        ("functools.partial + reorder helper", ftp, (x, out)),
        ("Python closure (lambda)", closure, (x, out)),
        ("partial of partial (w, then b)", nested2, (x, out)),
        ("partial binding w, b, out: g3(x)", single3, (x,)),
        ("partial of partial of partial: g3(x)", nested3, (x,)),
        ("partial module pm['main'](x, out)", pm_main, (x, out)),
        ("partial module pm(x, out)", pm, (x, out)),
        ("direct, numpy x/out", f, (xn, w, b, outn)),
        ("tvm_partial, numpy x/out", g, (xn, outn)),
        ("direct, all numpy", f, (xn, wn, bn, outn)),
    ]
    # Every variant computes the same thing: check each once, bitwise, before timing.
    reference = tvm.runtime.empty(arrays["out"].shape, "float32")
    f(x, w, b, reference)
    expected = reference.numpy()
    if arrays["x"].shape == (1,) and not np.array_equal(expected, arrays["x"] * arrays["w"] + arrays["b"]):
        raise SystemExit("the tiny kernel disagrees with numpy")
    for label, fn, args in rows:
        out.copyfrom(np.full(arrays["out"].shape, -1, "float32"))
        outn[...] = -1
        fn(*args)
        got = outn if any(a is outn for a in args) else out.numpy()
        if not np.array_equal(got, expected):
            raise SystemExit(f"{label}: result differs from the direct call")
    return rows


def measure(rows, calls: int, repeats: int):
    """(median, min) ns per call of each row, plus the loop's own cost per iteration."""
    samples = [[] for _ in rows]
    empty = []
    for _, fn, args in rows:  # warm-up
        _LOOPS[len(args)](fn, *args, max(calls // 10, 1))
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeats):
            order = list(range(len(rows)))
            shift = rep % len(rows)
            order = order[shift:] + order[:shift]
            if rep % 2:
                order.reverse()
            for i in order:
                _, fn, args = rows[i]
                loop = _LOOPS[len(args)]
                start = time.perf_counter_ns()
                loop(fn, *args, calls)
                samples[i].append((time.perf_counter_ns() - start) / calls)
            empty.append(_empty_loop_ns(calls))
    finally:
        if gc_was_enabled:
            gc.enable()
    return [(median(s), min(s)) for s in samples], median(empty)


def report(rep, name, title, rows, stats, loop_ns, calls, repeats):
    direct = stats[0][0]
    body = []
    for (label, _, _), (ns, best) in zip(rows, stats):
        fmt = (lambda v: f"{v:,.0f}") if ns >= 1000 else (lambda v: f"{v:.1f}")
        body.append([label, fmt(ns), fmt(best), f"{ns / direct:.2f}"])
    medians = {label: ns for (label, _, _), (ns, _) in zip(rows, stats)}
    rep.table(
        name,
        f"\n{title}: {repeats} repeats x {calls:,} calls "
        f"(the timing loop itself, {loop_ns:.1f} ns/iteration, is in every row)",
        ["variant", "median ns/call", "min ns/call", "median vs direct"],
        body,
        values={"median_ns": medians, "loop_ns": loop_ns},
    )
    return medians


def targets(t: dict) -> list:
    """(statement, ratio, holds) for each target of the per-call benchmark."""
    g = t["tvm_partial g(x, out)"]
    at_most = [
        ("partial / direct <= 1.00", g / t["direct f(x, w, b, out)"], 1.00),
        ("partial / functools.partial <= 0.80", g / t["functools.partial + reorder helper"], 0.80),
        ("partial / Python closure <= 0.80", g / t["Python closure (lambda)"], 0.80),
    ]
    same = [
        ("nested (2 levels) / single == 1 (within 5%)", t["partial of partial (w, then b)"] / g),
        (
            "nested (3 levels) / single == 1 (within 5%)",
            t["partial of partial of partial: g3(x)"] / t["partial binding w, b, out: g3(x)"],
        ),
    ]
    return [(text, ratio, ratio <= limit) for text, ratio, limit in at_most] + [
        (text, ratio, abs(ratio - 1) <= 0.05) for text, ratio in same
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="few calls: check that it runs, not for figures")
    parser.add_argument("--calls", type=int, help="calls per repeat for the tiny kernel (default 100,000)")
    parser.add_argument("--conv-calls", type=int, help="calls per repeat for conv2d (default 2,000)")
    parser.add_argument("--repeats", type=int, help="repeats (default 7)")
    add_json_option(parser)
    args = parser.parse_args(argv)
    rep = Report(__file__, argv)
    repeats = args.repeats or (1 if args.quick else 7)
    tiny_calls = args.calls or (1_000 if args.quick else 100_000)
    conv_calls = args.conv_calls or (10 if args.quick else 2_000)

    print(machine())
    print("load average at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    tiny_rows = variants(*tiny_kernel())
    tiny = report(
        rep,
        "tiny",
        "tiny kernel, out = x * w + b, shape (1,)",
        tiny_rows,
        *measure(tiny_rows, tiny_calls, repeats),
        tiny_calls,
        repeats,
    )
    conv_rows = variants(*conv_kernel())
    conv = report(
        rep,
        "conv2d",
        "conv2d + bias (1,3,32,32) * (8,3,3,3)",
        conv_rows,
        *measure(conv_rows, conv_calls, repeats),
        conv_calls,
        repeats,
    )

    body = []
    for (text, ratio, holds), (_, conv_ratio, _) in zip(targets(tiny), targets(conv)):
        body.append([text, f"{ratio:.2f}", f"({conv_ratio:.2f})", "holds" if holds else "does not hold"])
    rep.table(
        "targets",
        "\ntargets (tiny kernel, where dispatch is all there is; conv2d in brackets)",
        ["target", "tiny", "conv2d", ""],
        body,
    )
    if args.quick:
        rep.note("(--quick: too few calls for figures to quote)")
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
