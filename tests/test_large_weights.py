# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy artifacts past 2 GiB (issue 13): the payloads link into a large data section.

The 3 GiB test writes about 6 GiB to disk (the payload object, then the artifact) and removes it
afterwards; the exporting process stays small (the weights are mostly untouched zero pages), the
linker it runs holds about the weights. It is `slow` (.ci/run runs it), and skipped where the
machine lacks the room.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tvm
from tvm import te

import tvm_partial
from helpers import compile_te, run_json

GIB = 2**30
SIZE = 3 * GIB + 4096  # past 2 GiB and past 3 GiB: the case that failed to link in .data
COUNT = SIZE // 4  # float32 weights
STRIDE = 1 << 20  # one sample per 4 MiB
SAMPLES = (COUNT - 1) // STRIDE + 2  # the last sample reads the last weight


def _room(path) -> bool:
    try:
        with open("/proc/meminfo") as f:
            available = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}["MemAvailable"]
    except (OSError, KeyError):
        return False
    return shutil.disk_usage(path).free >= 3 * SIZE and available >= 2 * SIZE


@pytest.mark.slow
@pytest.mark.skipif(not os.uname().sysname == "Linux", reason="ELF artifacts")
def test_zero_copy_past_3_gib_default_settings(tmp_path):
    if not _room(tmp_path):
        pytest.skip("needs 10 GiB of free disk and 7 GiB of available memory")
    w = te.placeholder((COUNT,), "float32", name="weights")
    x = te.placeholder((SAMPLES,), "float32", name="x")
    y = te.compute((SAMPLES,), lambda i: w[tvm.tirx.min(i * STRIDE, COUNT - 1)] + x[i], name="y")
    exe = compile_te([x, w, y])
    weights = tvm.runtime.empty((COUNT,), "float32")  # 64-byte aligned: bound without a copy
    view = np.from_dlpack(weights)
    view[::STRIDE] = np.arange(1, SAMPLES, dtype="float32")  # the rest stays zero pages
    view[-1] = -7.0
    lib = tmp_path / "big.so"
    try:
        pm = tvm_partial.partial(exe, weights=weights, signature=[x, w, y])
        tvm_partial.export_library(pm, lib)  # default settings: zero-copy by size
        del pm, weights, view
        info = tvm_partial.inspect(lib)
        assert info["payloads"].startswith("region ") and info["constant_bytes"] == COUNT * 4
        assert lib.stat().st_size >= COUNT * 4
        got = run_json(
            """
            import json, sys
            import numpy as np, tvm, tvm_partial
            def rss():
                with open("/proc/self/status") as f:
                    return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
            start = rss()
            lib = tvm_partial.load(sys.argv[1])
            held = rss() - start
            n = int(sys.argv[2])
            x = tvm.runtime.tensor(np.arange(n, dtype="float32") * 1000)
            out = tvm.runtime.empty((n,), "float32")
            lib(x, out)
            print(json.dumps({"out": out.numpy().tolist(), "held": held}))
            """,
            str(lib),
            str(SAMPLES),
        )
    finally:
        lib.unlink(missing_ok=True)
    sampled = np.append(np.arange(1, SAMPLES, dtype="float32"), np.float32(-7.0))
    expected = sampled + np.arange(SAMPLES, dtype="float32") * 1000
    assert np.array_equal(np.array(got["out"], "float32"), expected)
    # The weights stay in the file: loading added under 1% of them to the fresh process's RSS.
    assert got["held"] < SIZE // 100
