# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark scripts still run (quick mode): figures are for docs/benchmarks.md, not asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize(
    "script,expected",
    [
        ("bench_call.py", "partial / direct"),
        ("bench_load.py", "tvm_partial (zero_copy=True)"),
        ("bench_outputs.py", "returning partial: out = g(x)"),
        ("bench_rpc.py", "vs 1 server"),  # starts a tracker and two rpc_servers on 127.0.0.1: ~20 s
        ("bench_relax.py", "targets: load->1st"),
        ("bench_weights.py", "two processes mapping one weights file"),
        ("bench_gpu_load.py", "target host memory held <= 5%"),  # no GPU: cpu, 4 MiB, in-process, ~5 s
    ],
)
def test_benchmark_runs(script, expected):
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert expected in proc.stdout
