# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""scripts/cuda_check.py, the GPU acceptance run, as far as a machine without a GPU can check it:
its CPU dry run (every check a CPU can run, through the same code) passes and writes well-formed
JSON; the runner reports each check's failure or error and goes on; the CUDA kernels the checks
and the C++ example use compile through TVM's CUDA codegen (and nvcc, where it is installed)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import without_sanitizer

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cuda_check.py"
# tests/test_deploy.py runs examples/cpp_deploy/run.py on the CPU already (~15 s more here).
LEFT_OUT = ["cpp_deploy"]


def _torch_in_subprocesses() -> bool:
    """Whether the interpreters this test starts can import torch (tests/conftest.py hides it
    from them unless TVM_PARTIAL_TEST_TORCH=1)."""
    hidden = any("tvm_partial_no_torch_" in p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep))
    return importlib.util.find_spec("torch") is not None and not hidden


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cuda_check():
    return _module("cuda_check", SCRIPT)


@pytest.mark.slow
def test_cpu_dry_run_passes_every_check_a_cpu_can_run(tmp_path, cuda_check):
    out = tmp_path / "results.json"
    skip = [arg for name in LEFT_OUT for arg in ("--skip", name)]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--cpu-dry-run", *skip, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    document = json.loads(out.read_text())
    assert document["mode"] == "cpu-dry-run" and document["device"] == "cpu:0"
    expected = [c.name for c in cuda_check.CHECKS if c.name not in LEFT_OUT]
    assert [r["name"] for r in document["checks"]] == expected
    for result in document["checks"]:
        assert set(result) == {"name", "status", "detail", "seconds"}
        check = next(c for c in cuda_check.CHECKS if c.name == result["name"])
        if check.on_cpu:
            assert (result["status"], result["detail"]) == ("not run", check.on_cpu)
        elif result["name"] == "bind_dlpack_by_reference" and not _torch_in_subprocesses():
            assert (result["status"], result["detail"]) == ("skip", "torch is not installed")
        else:
            assert result["status"] == "ok", result
    assert document["counts"]["FAIL"] == document["counts"]["ERROR"] == 0
    # Every line says it is the dry run: nothing reads as a CUDA result.
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("CPU DRY RUN:") and "says nothing about CUDA" in lines[0]
    check_lines = [line for line in lines if line.startswith("[")]
    assert len(check_lines) == len(expected)
    assert all(line.startswith("[cpu-dry-run]") for line in check_lines)
    assert lines[-1].startswith("CPU dry run: ") and lines[-1] == document["summary"]


def test_one_check_failing_or_raising_never_stops_the_run(tmp_path, cuda_check, capsys):
    def fails(p):
        raise cuda_check.Failed("the result differs")

    def raises(p):
        raise KeyError("missing")

    def skips(p):
        raise cuda_check.Skipped("no tool")

    checks = [
        cuda_check.Check("fails", fails, "", None),
        cuda_check.Check("raises", raises, "", None),
        cuda_check.Check("skips", skips, "", None),
        cuda_check.Check("gpu_only", fails, "", "needs a GPU"),
        cuda_check.Check("passes", lambda p: "fine", "", None),
    ]
    results = cuda_check.run_checks(cuda_check.make_platform("cpu", tmp_path), checks)
    assert [(r["name"], r["status"]) for r in results] == [
        ("fails", "FAIL"),
        ("raises", "ERROR"),
        ("skips", "skip"),
        ("gpu_only", "not run"),
        ("passes", "ok"),
    ]
    assert results[0]["detail"] == "the result differs"
    assert results[1]["detail"].startswith("KeyError: 'missing' (at test_cuda_check.py:")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("[cpu-dry-run]    FAIL  fails: the result differs (")


def test_only_runs_the_checks_named(tmp_path, cuda_check, capsys):
    out = tmp_path / "one.json"
    assert cuda_check.main(["--device", "cpu", "--only", "bind_host_arrays", "--json", str(out)]) == 0
    assert [r["name"] for r in json.loads(out.read_text())["checks"]] == ["bind_host_arrays"]
    with pytest.raises(SystemExit):
        cuda_check.main(["--only", "no_such_check"])
    assert "no check named no_such_check; the checks: device, bind_host_arrays" in capsys.readouterr().err


def test_list_marks_what_the_dry_run_leaves_out(cuda_check, capsys):
    assert cuda_check.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == [c.name for c in cuda_check.CHECKS]
    gpu_only = [line.split()[0] for line in listed if "[not in the CPU dry run:" in line]
    assert gpu_only == ["missing_device"]


def _cuda_sources(module) -> list[str]:
    found = [m.inspect_source("cuda") for m in module.imports if m.kind == "cuda"]
    return found + [s for m in module.imports for s in _cuda_sources(m)]


def test_the_cuda_kernels_compile_without_a_gpu(tmp_path, cuda_check):
    """TVM's CUDA codegen needs no GPU: every kernel the acceptance run and the C++ example
    compile for CUDA is built here with their own code (the schedules bind every loop to GPU
    threads, or the build would refuse them), and the affine kernel's source compiles with nvcc
    for sm_90 where nvcc is installed. That they run right is for the GPU."""
    p = cuda_check.make_platform("cuda", tmp_path)
    if p.dev.exist:
        pytest.skip("a GPU is here: the acceptance run itself covers this")
    run = _module("cpp_deploy_run", ROOT / "examples" / "cpp_deploy" / "run.py")
    affine, _ = cuda_check.build_affine(p)
    conv, _ = run.build_cuda_conv2d_bias(p.target)
    mlp = cuda_check.build_mlp(p)[0]
    kernels = {
        "affine": _cuda_sources(affine.mod),
        "last": _cuda_sources(cuda_check.build_last(p, 1000).mod),
        "conv2d_bias": _cuda_sources(conv.mod),
        "mlp": _cuda_sources(mlp.mod),
    }
    for name, sources in kernels.items():
        assert sources and all("__global__" in s for s in sources), name  # device kernels
    assert all("threadIdx.x" in kernels[name][0] for name in ("affine", "conv2d_bias"))
    affine.export_library(str(tmp_path / "affine.so"))  # a CUDA module exports without a GPU
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA sources were generated, not compiled")
    source = tmp_path / "affine.cu"
    source.write_text(kernels["affine"][0])
    proc = subprocess.run(
        ["nvcc", "--fatbin", "-arch=sm_90", "-o", str(tmp_path / "affine.fatbin"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env=without_sanitizer(),  # nvcc crashes with the sanitizer run's preloaded ASan runtime
    )
    assert proc.returncode == 0, proc.stderr
