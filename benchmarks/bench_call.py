# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost from Python (docs/benchmarks.md): the direct call against tvm-partial, the Python
alternatives and a partial returning its output, on a tiny kernel and on the forum's conv2d + bias.

    python benchmarks/bench_call.py [--calls N] [--conv-calls N] [--repeats N] [--quick] [--json PATH]
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

from _common import Report, interleaved, machine, median, parser, verdict


def kernels():
    """(name, title, executable, TE tensors, numpy x, w, b) of the tiny kernel and of conv2d + bias."""
    import tvm
    from tvm import te

    from tvm_partial import _fixtures as fixtures

    x, w, b = (te.placeholder((1,), "float32", name=n) for n in "xwb")
    tiny = [x, w, b, te.compute((1,), lambda i: x[i] * w[i] + b[i], name="out")]
    exe = tvm.compile(te.create_prim_func(tiny), target="llvm")
    rng = np.random.default_rng(0)
    xwb = [rng.integers(-4, 5, size=(1,)).astype("float32") for _ in range(3)]
    conv, conv_tensors = fixtures.build_conv2d_bias()
    inputs = [fixtures.sample_inputs()[k] for k in ("data", "weights", "bias")]
    conv_title = "conv2d + bias (1, 3, 32, 32) * (8, 3, 3, 3) -> (1, 8, 30, 30)"
    return [
        ("tiny", "tiny kernel, out = x * w + b, shape (1,)", exe, tiny, xwb),
        ("conv2d", conv_title, conv, conv_tensors, inputs),
    ]


def _reordered(f, w, b, x, out):
    """functools.partial binds leading arguments only; w and b sit at positions 1 and 2."""
    return f(x, w, b, out)


def variants(exe, tensors, arrays):
    """[(label, fn, args)], each checked bitwise against the direct call (the first row)."""
    import tvm

    from tvm_partial import partial

    f, empty = exe["main"], tvm.runtime.empty
    shape = tuple(int(d) for d in tensors[3].shape)
    x, w, b = (tvm.runtime.tensor(a) for a in arrays)
    out = empty(shape, "float32")
    xn, outn = arrays[0].copy(), np.zeros(shape, "float32")
    g = partial(f, {1: w, 2: b})
    pm = partial(exe, {1: w, 2: b})
    names = {t.op.name: v for t, v in zip(tensors[1:3], (w, b))}
    returning = partial(f, signature=tensors, outputs=tensors[3].op.name, **names)
    nested3 = partial(partial(partial(f, {1: w}), {1: b}), {1: out})

    def fresh(x_):  # what Python code does for a new output per call
        result = empty(shape, "float32")
        f(x_, w, b, result)
        return result

    rows = [
        ("direct f(x, w, b, out)", f, (x, w, b, out)),
        ("tvm_partial g(x, out)", g, (x, out)),
        ("functools.partial + reorder helper", functools.partial(_reordered, f, w, b), (x, out)),
        ("Python closure (lambda)", lambda x_, out_: f(x_, w, b, out_), (x, out)),
        ("partial of partial (w, then b)", partial(partial(f, {1: w}), {1: b}), (x, out)),
        ("partial binding w, b, out: g3(x)", partial(f, {1: w, 2: b, 3: out}), (x,)),
        ("partial of partial of partial: g3(x)", nested3, (x,)),
        ("partial module pm['main'](x, out)", pm["main"], (x, out)),
        ("partial module pm(x, out)", pm, (x, out)),
        ("direct, numpy x/out", f, (xn, w, b, outn)),
        ("tvm_partial, numpy x/out", g, (xn, outn)),
        ("direct, all numpy", f, (xn, *arrays[1:], outn)),
        ("returning partial: out = g(x)", returning, (x,)),
        ("tvm.runtime.empty + direct, in a function", fresh, (x,)),
    ]
    f(x, w, b, out)
    expected = out.numpy()
    if shape == (1,) and not np.array_equal(expected, arrays[0] * arrays[1] + arrays[2]):
        raise SystemExit("the tiny kernel disagrees with numpy")
    for label, fn, args in rows:
        out.copyfrom(np.full(shape, -1, "float32"))
        outn[...] = -1
        got = fn(*args)
        got = outn if any(a is outn for a in args) else out if got is None else got
        if not np.array_equal(got if isinstance(got, np.ndarray) else got.numpy(), expected):
            raise SystemExit(f"{label}: result differs from the direct call")
    return rows


def targets(t: dict) -> list:
    """(statement, value, holds) for each target at one kernel."""
    g, ret = t["tvm_partial g(x, out)"], t["returning partial: out = g(x)"]
    nested2 = t["partial of partial (w, then b)"] / g
    nested3 = t["partial of partial of partial: g3(x)"] / t["partial binding w, b, out: g3(x)"]
    fresh = t["tvm.runtime.empty + direct, in a function"]
    ratios = [
        ("partial / direct <= 1.00", g / t["direct f(x, w, b, out)"], 1.00),
        ("partial / functools.partial <= 0.80", g / t["functools.partial + reorder helper"], 0.80),
        ("partial / Python closure <= 0.80", g / t["Python closure (lambda)"], 0.80),
        ("returning partial / (empty + direct) <= 0.25", ret / fresh, 0.25),
    ]
    added = (ret - t["direct f(x, w, b, out)"]) / 1000
    return [
        *((s, f"{r:.2f}", r <= limit) for s, r, limit in ratios),
        ("returning partial - direct (preallocated) <= 1 us", f"{added:+.2f} us", added <= 1),
        ("nested (2 levels) / single == 1 (within 5%)", f"{nested2:.2f}", abs(nested2 - 1) <= 0.05),
        ("nested (3 levels) / single == 1 (within 5%)", f"{nested3:.2f}", abs(nested3 - 1) <= 0.05),
    ]


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--calls", type=int, help="calls per repeat, tiny kernel (default 100,000)")
    p.add_argument("--conv-calls", type=int, help="calls per repeat, conv2d (default 2,000)")
    p.add_argument("--repeats", type=int, help="repeats (default 7)")
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    repeats = args.repeats or (1 if args.quick else 7)
    calls = [
        args.calls or (1_000 if args.quick else 100_000),
        args.conv_calls or (10 if args.quick else 2_000),
    ]
    print(machine())
    print("load average at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    medians = []
    for (name, title, *kernel), n in zip(kernels(), calls):
        rows = variants(*kernel)
        samples, loop_ns = interleaved(rows, n, repeats)
        ns = {label: median(s) for (label, _, _), s in zip(rows, samples)}
        fmt = [("{:,.0f}" if v >= 1000 else "{:.1f}").format for v in ns.values()]
        body = [
            [k, f(v), f(min(s)), f"{v / ns[rows[0][0]]:.2f}"]
            for (k, v), s, f in zip(ns.items(), samples, fmt)
        ]
        loop = f"the timing loop itself, {loop_ns:.1f} ns/iteration, is in every row"
        title = f"\n{title}: {repeats} repeats x {n:,} calls ({loop})"
        header = "variant|median ns/call|min ns/call|median vs direct"
        rep.table(name, title, header, body, values={"median_ns": ns, "loop_ns": loop_ns})
        medians.append(ns)
    body = [
        [s, v, f"({conv})", verdict(holds)] for (s, v, holds), (_, conv, _) in zip(*map(targets, medians))
    ]
    title = "\ntargets (tiny kernel, where dispatch is all there is; conv2d in brackets)"
    rep.table("targets", title, "target|tiny|conv2d|", body)
    if args.quick:
        rep.note("(--quick: too few calls for figures to quote)")
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
