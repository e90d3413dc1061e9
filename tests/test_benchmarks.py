# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark scripts still run (--quick: tiny sizes and counts, a smoke run) and write what they
print as JSON (--json): figures are for docs/benchmarks.md, not asserted. Those that start several
fresh interpreters (loads are timed in fresh processes, RPC servers are processes) take 5-15 s here
even so: `slow` (.ci/run runs them)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    "script,flags,expected",
    [
        pytest.param("bench_bind.py", [], "tvm Tensor via partial(): slowest / fastest", id="bind"),
        pytest.param("bench_call.py", [], "partial / direct", id="call"),
        pytest.param("bench_outputs.py", [], "returning partial: out = g(x)", id="outputs"),
        # 12 fresh processes (an export and a load per route)
        pytest.param("bench_load.py", [], "tvm_partial (zero_copy=True)", id="load", marks=SLOW),
        pytest.param("bench_load.py", ["--read-all"], "bitwise identical", id="load-read-all", marks=SLOW),
        pytest.param("bench_rpc.py", [], "vs 1 server", id="rpc", marks=SLOW),  # a tracker, two servers
        pytest.param(
            "bench_relax.py", [], "targets: load->1st", id="relax", marks=SLOW
        ),  # 3 loads, 3 compiles
        pytest.param(
            "bench_weights.py", [], "two processes mapping one weights file", id="weights", marks=SLOW
        ),
    ],
)
def test_benchmark_runs(script, flags, expected, tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *flags, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert expected in proc.stdout
    result = json.loads(out.read_text())
    assert result["benchmark"] == script[: -len(".py")]
    assert result["command"] == shlex.join(
        ["python", f"benchmarks/{script}", "--quick", *flags, "--json", str(out)]
    )
    assert result["machine"]["cores"] >= 1 and result["machine"]["apache-tvm"]
    assert result["date"].endswith("+00:00") and result["wall_s"] > 0
    # every printed table is in the JSON, cell for cell
    for table in result["tables"]:
        assert table["rows"] and all(len(row) == len(table["header"]) for row in table["rows"])
        for row in table["rows"]:
            assert all(cell in proc.stdout for cell in row)
