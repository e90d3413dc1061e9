# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Cost of binding a constant against its size, 1 KiB .. 1 GiB.

    python benchmarks/bench_bind.py                      # 1 KiB, 16 KiB, ..., 1 GiB (x16 steps)
    python benchmarks/bench_bind.py --sizes 1KiB 64MiB   # chosen sizes
    python benchmarks/bench_bind.py --quick              # a smoke run: 1 KiB and 64 KiB, one repeat
    python benchmarks/bench_bind.py --json benchmarks/results/bind.json   # also the results as JSON

Binding a tvm Tensor holds a reference: its time must not grow with the size. A numpy array is
not a tvm Tensor and is copied once, at bind time, into 64-byte-aligned memory: its time grows
with the size, shown for contrast. Peak memory: about twice the largest size (the numpy source
and its copy).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

import numpy as np

from _common import Report, add_json_option, format_size, machine, median, parse_size

DEFAULT_SIZES = ["1KiB", "16KiB", "256KiB", "4MiB", "64MiB", "1GiB"]


def tiny_kernel():
    import tvm
    from tvm import te

    x = te.placeholder((1,), "float32", name="x")
    w = te.placeholder((1,), "float32", name="w")
    b = te.placeholder((1,), "float32", name="b")
    out = te.compute((1,), lambda i: x[i] * w[i] + b[i], name="out")
    return tvm.compile(te.create_prim_func([x, w, b, out]), target="llvm")


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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", help=f"constant sizes (default: {' '.join(DEFAULT_SIZES)})")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 1 KiB and 64 KiB, one repeat of 10 binds"
    )
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement (default 7)")
    add_json_option(parser)
    args = parser.parse_args(argv)
    rep = Report(__file__, argv)
    sizes = [parse_size(s) for s in (args.sizes or (["1KiB", "64KiB"] if args.quick else DEFAULT_SIZES))]
    repeats = args.repeats or (1 if args.quick else 7)
    binds = 10 if args.quick else 1000

    import tvm
    import tvm_ffi

    import tvm_partial

    exe = tiny_kernel()
    f = exe["main"]
    raw_partial_apply = tvm_ffi.get_global_func("runtime.PartialApply")
    b = tvm.runtime.tensor(np.ones((1,), "float32"))

    print(machine())
    print(
        f"binding w (float32, the given size) and b (4 bytes) at positions 1, 2; median of {repeats} repeats"
    )
    print(
        "columns: a tvm Tensor w through tvm_partial.partial(f, ...), through the C++ global "
        "runtime.PartialApply,\nthrough partial(exe, ...) (a partial module); then w as a numpy "
        "array (copied at bind time)\n"
    )
    rows, values = [], []
    tensor_times, raw_times = [], []
    for nbytes in sizes:
        host = np.ones((max(nbytes // 4, 1),), "float32")  # pages touched: a real, resident array
        w = tvm.runtime.tensor(host)
        gc.collect()
        t_tensor = per_bind_ns(lambda w=w: tvm_partial.partial(f, {1: w, 2: b}), binds, repeats)
        t_raw = per_bind_ns(lambda w=w: raw_partial_apply(f, {1: w, 2: b}), binds, repeats)
        t_module = per_bind_ns(lambda w=w: tvm_partial.partial(exe, {1: w, 2: b}), binds, repeats)
        tensor_times.append(t_tensor)
        raw_times.append(t_raw)
        del w
        # numpy: one copy per bind; fewer binds for large arrays.
        np_binds = max(1, min(binds, (64 << 20) // max(nbytes, 1)))
        np_repeats = repeats if nbytes < (256 << 20) else min(repeats, 3)
        t_numpy = per_bind_ns(lambda host=host: tvm_partial.partial(f, {1: host, 2: b}), np_binds, np_repeats)
        del host
        gc.collect()
        values.append(
            {
                "bytes": nbytes,
                "partial_ns": t_tensor,
                "raw_ns": t_raw,
                "module_ns": t_module,
                "numpy_ns": t_numpy,
            }
        )
        rows.append(
            [
                format_size(nbytes),
                f"{t_tensor / 1e3:.1f}",
                f"{t_raw / 1e3:.1f}",
                f"{t_module / 1e3:.1f}",
                f"{t_numpy / 1e3:,.1f}",
                f"{nbytes / t_numpy:.2f}" if nbytes >= (1 << 20) else "-",
            ]
        )

    rep.table(
        "bind",
        "",
        [
            "size",
            "partial(f) us",
            "runtime.PartialApply us",
            "partial(exe) us",
            "partial(f), numpy us",
            "numpy copy GB/s",
        ],
        rows,
        values=values,
    )
    print()
    growth = max(sizes) / min(sizes)
    for label, times in (("partial()", tensor_times), ("runtime.PartialApply", raw_times)):
        spread = max(times) / min(times)
        rep.note(
            f"tvm Tensor via {label}: slowest / fastest = {spread:.2f} while the size grew {growth:,.0f}x "
            f"({'flat: O(1)' if spread < 2 else 'NOT flat'})"
        )
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
