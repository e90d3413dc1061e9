# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Does the work grow linearly with the table (docs/benchmarks.md)? Merging n bindings into a
partial that binds n (function and module paths), and loading, describing, saving and merging into
a module of n functions, each timed at n and 8n: linear work takes 8 times as long, quadratic 64.

    python benchmarks/bench_scale.py [--bindings 20000] [--functions 25000] [--repeats 5] [--quick] [--json PATH]
"""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path

import tvm_ffi

from _common import Report, machine, parser

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from blob_writer import make_blob  # the tests' independent writer of the format

#: Between linear (8x) and quadratic (64x) growth from n to 8n.
BOUND = 40


def least_cpu_seconds(call, repeats: int) -> float:
    """The least CPU time of `repeats` calls: another process on the machine only adds time."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return min(times)


def merges(n: int) -> dict:
    """Merging n bindings (the odd positions) into a partial that binds n (the even ones)."""
    apply = tvm_ffi.get_global_func("runtime.PartialApply")
    apply_module = tvm_ffi.get_global_func("runtime.PartialApplyModule")
    even = {2 * i: i for i in range(n)}
    inner_f = apply(tvm_ffi.get_global_func("ffi.String"), even)
    inner_m = apply_module(_empty_module(), {"main": even})
    outer = tvm_ffi.convert({i: -i for i in range(n)})  # converted once: the merge is timed
    outer_m = tvm_ffi.convert({"main": outer})
    return {
        "merge n into n (function)": lambda: apply(inner_f, outer),
        "merge n into n (module)": lambda: apply_module(inner_m, outer_m),
    }


def _empty_module():
    """A partial module restored from bytes alone: no code to look functions up in."""
    load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
    return load(make_blob([("main", [], [struct.pack("<qBq", 0, 1, 0)])]))


def tables(n: int) -> dict:
    """A module of n functions (one bound int each): load, describe, save, merge one, merge all."""
    load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
    describe = tvm_ffi.get_global_func("tvm_partial.Describe")
    save = tvm_ffi.get_global_func("tvm_partial.SaveToBytes")
    apply_module = tvm_ffi.get_global_func("runtime.PartialApplyModule")
    blob = make_blob([(f"f{i}", [], [struct.pack("<qBq", 0, 1, i)]) for i in range(n)])
    module = load(blob)
    one = tvm_ffi.convert({f"f{n - 1}": {1: 5}, "g": {0: 1}})
    every = tvm_ffi.convert({f"f{i}": {1: 5} for i in range(n)})
    return {
        "load n functions": lambda: load(blob),
        "describe them": lambda: describe(blob, ""),
        "save them": lambda: save(module),
        "merge one into n": lambda: apply_module(module, one),
        "merge n into n": lambda: apply_module(module, every),
    }


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--bindings", type=int, default=20_000)
    p.add_argument("--functions", type=int, default=25_000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    if args.quick:
        args.bindings, args.functions, args.repeats = 500, 500, 2
    report = Report(__file__, argv)
    print(machine())
    rows, values, worst = [], {}, 0.0
    for what, n, make in (("bindings", args.bindings, merges), ("functions", args.functions, tables)):
        small, large = make(n), make(8 * n)
        for step in small:
            t_small = least_cpu_seconds(small[step], args.repeats)
            t_large = least_cpu_seconds(large[step], args.repeats)
            ratio = t_large / max(t_small, 1e-9)
            worst = max(worst, ratio)
            rows.append(
                [step, f"{n:,} {what}", f"{t_small * 1e3:.2f}", f"{t_large * 1e3:.2f}", f"{ratio:.1f}x"]
            )
            values[step] = {"n": n, "seconds_n": t_small, "seconds_8n": t_large, "ratio": ratio}
    report.table(
        "scale",
        f"CPU time, the least of {args.repeats} calls; linear growth is 8x, quadratic 64x",
        "step|n|n: ms|8n: ms|8n / n",
        rows,
        values=values,
    )
    report.note(
        f"the largest growth from n to 8n: {worst:.1f}x (target < {BOUND}x: {'holds' if worst < BOUND else 'does not hold'})"
    )
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
