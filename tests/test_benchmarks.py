# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The benchmark scripts still run (--quick: tiny sizes and counts, a smoke run) and write what they
print as JSON (--json): figures are for docs/benchmarks.md, not asserted. Those that start several
fresh interpreters (loads are timed in fresh processes, RPC servers are processes) take 5-15 s here
even so: `slow` (.ci/run runs them)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
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
        # a 2-worker disco session (4 MiB)
        pytest.param(
            "bench_disco.py", [], "target per-worker RSS after the first call", id="disco", marks=SLOW
        ),
        # no GPU: cpu, 4 MiB, in-process, ~5 s
        pytest.param("bench_gpu_load.py", [], "target host memory held <= 5%", id="gpu-load"),
        # torch models: 9 fresh processes that import torch, 4 compiles
        pytest.param(
            "bench_torch.py",
            [],
            "tvm-partial: load(path, weights_file=v2.safetensors)",
            id="torch",
            marks=SLOW,
        ),
    ],
)
def test_benchmark_runs(script, flags, expected, tmp_path):
    out = tmp_path / "result.json"
    env = dict(os.environ)
    if script == "bench_torch.py":
        pytest.importorskip("torch")
        # The interpreters the tests start see no torch (conftest.py); this benchmark's do.
        kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if "tvm_partial_no_torch_" not in p]
        env["PYTHONPATH"] = os.pathsep.join(kept)
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *flags, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH,
        env=env,
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


def _renderer():
    spec = importlib.util.spec_from_file_location(
        "render_benchmarks", ROOT / "scripts" / "render_benchmarks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmarks_page_is_what_the_committed_results_render():
    """docs/benchmarks.md's figures are those of benchmarks/results/*.json, rendered by the script."""
    render = _renderer()
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert render.render(page, render.load_results()) == page, (
        "docs/benchmarks.md is out of date: run python scripts/render_benchmarks.py"
    )


def test_every_result_is_dated_and_on_the_page():
    render = _renderer()
    results = render.load_results()
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert results, "benchmarks/results/ holds no results"
    for name, result in results.items():
        assert f"<!-- benchmark: {name}" in page, f"benchmarks/results/{name}.json is not on the page"
        assert result["date"] and result["machine"]["cpu"] and result["command"].count(f"results/{name}.json")
        assert "--quick" not in result["command"], f"{name}: a smoke run is not a figure to quote"


def test_render_fills_a_region_from_a_result(tmp_path):
    render = _renderer()
    result = {
        "command": "python benchmarks/bench_x.py --json benchmarks/results/x.json",
        "date": "2026-12-01T10:00:00+00:00",
        "wall_s": 12.0,
        "load_average_start": [1.5, 1, 1],
        "load_average_end": [2.0, 1, 1],
        "machine": {"cores": 2, "cpu": "CPU"},
        "tables": [
            {
                "name": "t",
                "title": "# a table",  # printed as a comment line
                "header": ["a", "b"],
                "rows": [["x", "1|2"]],
                "aligns": ["<", ">"],
            },
            {"name": "out", "text": "raw output"},
        ],
        "notes": ["target: holds"],
    }
    page = "intro\n<!-- benchmark: x -->\nold figures\n<!-- end benchmark -->\nafter\n"
    new = render.render(page, {"x": result})
    assert new.startswith("intro\n<!-- benchmark: x -->\n\n`python benchmarks/bench_x.py")
    assert "2026-12-01 10:00:00 UTC, 12 s, load average 1.5 at the start, 2.0 at the end" in new
    assert (
        "*a table*" in new
        and "| a | b |\n| --- | ---: |\n| x | 1\\|2 |" in new
        and "```text\nraw output\n```" in new
    )
    assert (
        "- target: holds" in new
        and "old figures" not in new
        and new.endswith("<!-- end benchmark -->\nafter\n")
    )
    assert render.render(new, {"x": result}) == new  # rendering again changes nothing
    only = render.render("<!-- benchmark: x out -->\n<!-- end benchmark -->\n", {"x": result})
    assert "raw output" in only and "a table" not in only and "target: holds" not in only
