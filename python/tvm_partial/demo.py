# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``tvm-partial demo``: the forum case end to end, a conv2d + bias kernel (``_fixtures``) whose
weights and bias are bound once, called, timed, exported and reloaded."""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from ._fixtures import SHAPES, build_conv2d_bias, reference, sample_inputs


def _median_ns(fn: Callable[[], object], calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


_RELOAD_SCRIPT = """
import sys, numpy as np, tvm
lib = tvm.runtime.load_module(sys.argv[1])
data = tvm.runtime.tensor(np.load(sys.argv[2]))
out = tvm.runtime.empty({shape}, "float32")
lib(data, out)
np.save(sys.argv[3], out.numpy())
"""


def run(
    out_dir: str | None = None,
    calls: int = 2000,
    repeats: int = 5,
    self_contained: bool = False,
    echo: Callable[[str], object] = print,
) -> int:
    """The whole journey; returns the exit status (0 when every check passed)."""
    import tvm

    import tvm_partial as _export

    from .partial import partial

    exe, tensors = build_conv2d_bias()
    inputs = sample_inputs()
    expected = reference(**inputs)
    f = exe["main"]
    data = tvm.runtime.tensor(inputs["data"])
    w = tvm.runtime.tensor(inputs["weights"])
    b = tvm.runtime.tensor(inputs["bias"])
    direct_out = tvm.runtime.empty(SHAPES["result"], "float32")
    partial_out = tvm.runtime.empty(SHAPES["result"], "float32")

    conv = partial(f, signature=tensors, weights=w, bias=b)
    f(data, w, b, direct_out)
    conv(data, partial_out)
    checks = {
        "partial == numpy (bitwise)": np.array_equal(partial_out.numpy(), expected),
        "partial == direct call (bitwise)": np.array_equal(partial_out.numpy(), direct_out.numpy()),
    }
    # The forum's calling convention: the kernel returns its output, allocated per call in C++.
    returning = partial(f, signature=tensors, weights=w, bias=b, outputs="result")
    out = returning(data)  # output = conv(data)
    checks["out = conv(data) == numpy (bitwise)"] = np.array_equal(out.numpy(), expected)

    # Per-call time, all in one run.
    lam = lambda x, out: f(x, w, b, out)  # noqa: E731
    ftp = functools.partial(lambda w_, b_, x, out: f(x, w_, b_, out), w, b)
    rows = [
        ("direct f(x, w, b, out)", lambda: f(data, w, b, direct_out)),
        ("tvm_partial g(x, out)", lambda: conv(data, partial_out)),
        ("Python lambda", lambda: lam(data, partial_out)),
        ("functools.partial", lambda: ftp(data, partial_out)),
        ("empty + direct f(...)", lambda: f(data, w, b, tvm.runtime.empty(SHAPES["result"], "float32"))),
        ("tvm_partial out = g(x)", lambda: returning(data)),
    ]
    times = [(label, _median_ns(fn, calls, repeats)) for label, fn in rows]
    direct_ns = times[0][1]
    echo(
        f"conv2d + bias {SHAPES['data']} * {SHAPES['weights']}: median per call over {repeats} x {calls} calls"
    )
    echo(f"{'call':<26}{'us/call':>10}{'vs direct':>11}")
    for label, ns in times:
        echo(f"{label:<26}{ns / 1000:>10.2f}{ns / direct_ns:>10.2f}x")

    # Export, reload in a fresh process, compare bitwise.
    with tempfile.TemporaryDirectory() as tmp:
        folder = out_dir or tmp
        os.makedirs(folder, exist_ok=True)
        lib_path = os.path.join(folder, "conv2d_bias.so")
        pm = partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
        _export.export_library(pm, lib_path, self_contained=self_contained)
        np.save(os.path.join(folder, "data.npy"), inputs["data"])
        out_path = os.path.join(folder, "reloaded_out.npy")
        script = _RELOAD_SCRIPT.format(shape=SHAPES["result"])
        env = dict(os.environ)
        if self_contained:  # prove it: the fresh process never loads the extension
            env["TVM_DEVICE_BACKEND_AUTOLOAD"] = "0"
        proc = subprocess.run(
            [sys.executable, "-c", script, lib_path, os.path.join(folder, "data.npy"), out_path],
            capture_output=True,
            text=True,
            env=env,
        )
        reloaded_ok = proc.returncode == 0 and np.array_equal(np.load(out_path), expected)
        where = "without tvm-partial" if self_contained else "in a fresh process"
        checks[f"reloaded {where} == numpy (bitwise)"] = reloaded_ok
        if proc.returncode != 0:
            echo(proc.stderr.strip())
        echo("")
        echo(f"exported {lib_path}" + ("" if out_dir else " (temporary; keep it with --out DIR)"))
        from .cli import format_inspect

        echo(format_inspect(_export.inspect(lib_path)))

    echo("")
    return report(checks, echo)


def report(checks: dict[str, bool], echo: Callable[[str], object] = print) -> int:
    """Print each check as [ok] or [FAIL]; the exit code: 0 when all passed."""
    for label, ok in checks.items():
        echo(f"[{'ok' if ok else 'FAIL'}] {label}")
    return 0 if all(checks.values()) else 1
