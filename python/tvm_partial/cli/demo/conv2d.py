# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``tvm-partial demo``: the forum's conv2d + bias, weights bound once, ``out = conv(data)``, exported as
one file a fresh process loads for the same bits; then the cost per call. Copy it: ``run`` is the journey."""

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

import tvm_partial
from tvm_partial._fixtures import SHAPES, build_conv2d_bias, reference, sample_inputs
from tvm_partial._progress import format_size
from tvm_partial.cli.demo import report
from tvm_partial.cli.text import format_inspect

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
    """The whole journey; returns 0 when every check passed. ``calls=0`` leaves the timing out."""
    import tvm

    shapes = ", ".join(f"{k} {'x'.join(map(str, SHAPES[k]))}" for k in ("data", "weights", "bias"))
    echo(f"tvm-partial demo: the forum's conv2d + bias ({shapes}; float32)")
    echo(f"its code, to read and copy: {os.path.abspath(__file__)}")
    echo("")

    exe, tensors = build_conv2d_bias()  # tvm.compile(te.create_prim_func([data, weights, bias, result]))
    inputs = sample_inputs()
    expected = reference(**inputs)
    f = exe["main"]  # main(data, weights, bias, result): result is written in place
    data, w, b = (tvm.runtime.tensor(inputs[k]) for k in ("data", "weights", "bias"))

    # Bind once. With outputs="result" the kernel returns its result, allocated per call in C++.
    conv = tvm_partial.partial(f, signature=tensors, weights=w, bias=b, outputs="result")
    out = conv(data)  # what the forum asked for
    checks = {
        "out = conv(data) equals numpy's conv2d + bias, bit for bit": np.array_equal(out.numpy(), expected)
    }

    # The same binding, destination passing, against the direct call with all four arguments.
    conv_into = tvm_partial.partial(f, signature=tensors, weights=w, bias=b)
    direct_out = tvm.runtime.empty(SHAPES["result"], "float32")
    partial_out = tvm.runtime.empty(SHAPES["result"], "float32")
    f(data, w, b, direct_out)
    conv_into(data, partial_out)
    checks['conv(data, out) equals the direct call exe["main"](data, w, b, out), bit for bit'] = (
        np.array_equal(partial_out.numpy(), direct_out.numpy())
    )

    with tempfile.TemporaryDirectory() as tmp:
        folder = out_dir or tmp
        os.makedirs(folder, exist_ok=True)
        lib_path = os.path.join(folder, "conv2d_bias.so")
        # One file: the compiled code and the bound weights and bias inside it.
        pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
        tvm_partial.export_library(pm, lib_path, self_contained=self_contained)
        size = format_size(os.path.getsize(lib_path))
        checks[f"one file holds the code, the weights and the bias: {lib_path} ({size})"] = os.path.isfile(
            lib_path
        )

        # A fresh process loads that file and calls it with the data alone.
        np.save(os.path.join(folder, "data.npy"), inputs["data"])
        out_path = os.path.join(folder, "reloaded_out.npy")
        env = dict(os.environ)
        if self_contained:  # prove it: the fresh process never loads the extension
            env["TVM_DEVICE_BACKEND_AUTOLOAD"] = "0"
        reload = [sys.executable, "-c", _RELOAD_SCRIPT.format(shape=SHAPES["result"])]
        proc = subprocess.run(
            [*reload, lib_path, os.path.join(folder, "data.npy"), out_path],
            capture_output=True,
            text=True,
            env=env,
        )
        where = "a fresh process without tvm-partial" if self_contained else "a fresh process"
        checks[f"{where} loaded it (tvm.runtime.load_module) and got the same bits from (data, out)"] = (
            proc.returncode == 0 and np.array_equal(np.load(out_path), expected)
        )
        if proc.returncode != 0:
            echo(proc.stderr.strip())
        status = report(checks, echo)

        echo("")
        echo(f"what the file binds (tvm-partial inspect {lib_path}):")
        echo(format_inspect(tvm_partial.inspect(lib_path)))
    if not out_dir:
        echo("(the file was written to a temporary folder, removed now: keep it with --out DIR)")

    if not calls:
        return status
    # Per-call cost beside the direct call and Python's ways of binding, each row measured alike.
    out = tvm.runtime.empty(SHAPES["result"], "float32")
    lam = lambda x, o: f(x, w, b, o)  # noqa: E731
    ftp = functools.partial(lambda w_, b_, x, o: f(x, w_, b_, o), w, b)
    rows = [
        ('exe["main"](data, w, b, out)', "the direct call, every argument given", lambda: f(data, w, b, out)),
        ("conv(data, out)", "tvm-partial, destination passing", lambda: conv_into(data, out)),
        ("lambda x, o: f(x, w, b, o)", "a Python lambda around the direct call", lambda: lam(data, out)),
        ("functools.partial(f, ...)", "Python's partial around the direct call", lambda: ftp(data, out)),
        (
            'empty() + exe["main"](...)',
            "the direct call with a new output each call",
            lambda: f(data, w, b, tvm.runtime.empty(SHAPES["result"], "float32")),
        ),
        ("out = conv(data)", "tvm-partial, output allocated in C++", lambda: conv(data)),
    ]
    echo("")
    _timings(rows, calls, repeats, echo)
    return status


def _timings(
    rows: list[tuple[str, str, Callable[[], object]]], calls: int, repeats: int, echo: Callable[[str], object]
) -> None:
    echo(
        f"what a call costs, in this process: microseconds per call, {repeats} repeats of {calls} calls "
        "each (their\nmedian, fastest and slowest); vs direct = median / the direct call's median. "
        "Every row runs the same kernel."
    )
    echo(f"  {'call':<30}{'median':>8}{'fastest':>9}{'slowest':>9}{'vs direct':>11}  what")
    direct = None
    for label, what, fn in rows:
        fn()  # warm up: the first call of each path pays for lookups and caches
        samples = []  # microseconds per call
        for _ in range(repeats):
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            samples.append((time.perf_counter_ns() - start) / calls / 1000)
        median = statistics.median(samples)
        direct = direct or median
        echo(
            f"  {label:<30}{median:>8.2f}{min(samples):>9.2f}{max(samples):>9.2f}{median / direct:>10.2f}x  {what}"
        )
    echo(
        "rows whose fastest-to-slowest ranges overlap are equally fast; another run moves them. "
        "The repository's\nbenchmarks/ (docs/benchmarks.md) measure with more care."
    )
