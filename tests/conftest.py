# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Session fixtures: kernels compile once (TVM's CPU LLVM target). The device tests: those that take
`dev` run on the device ``pytest --device`` names (cpu, the default; cuda: cuda:0, skipped where TVM
sees none), marked ``device`` (``pytest --device cuda -m device`` runs them alone). And the
interpreters the tests start (run_python, run_cases, the CLI, RPC servers, benchmarks) run without
torch.

tvm_ffi imports torch at its own import whenever torch is installed (a workaround for a symbol
clash on Windows), and torch is in the test extra for the one test that binds torch tensors (in
this process). That import is 1-2.5 s of each fresh interpreter's 1.5-4 s start-up, and no test
uses torch in a subprocess, so those see a ``torch`` package that refuses to import (as where
torch is not installed) through PYTHONPATH. TVM_PARTIAL_TEST_TORCH=1 keeps the real one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import tvm
from tvm import te

from helpers import Device, compile_te
from tvm_partial import _fixtures as fixtures

_HIDDEN_TORCH: list[str] = []


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="where the tests marked device run: cpu (default), or cuda:0 (skipped where TVM sees none)",
    )


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(config, items):
    for item in items:  # a test that takes `dev` is a device test
        if "dev" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.device)


def pytest_configure(config):
    if (
        config.getoption("--device") == "cuda"
        and importlib.util.find_spec("cuda") is None
        and shutil.which("nvcc")
    ):
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")  # TVM's default, NVRTC, needs cuda-python
    if os.environ.get("TVM_PARTIAL_TEST_TORCH") == "1":
        return
    folder = tempfile.mkdtemp(prefix="tvm_partial_no_torch_")
    (Path(folder) / "torch").mkdir()
    (Path(folder) / "torch" / "__init__.py").write_text(
        'raise ImportError("torch is hidden from the interpreters the tests start (tests/conftest.py; '
        'TVM_PARTIAL_TEST_TORCH=1 keeps it)")\n'
    )
    _HIDDEN_TORCH.append(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))


def pytest_unconfigure(config):
    for folder in _HIDDEN_TORCH:
        parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in parts if p != folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def conv():
    """The forum case: (executable, signature tensors, numpy inputs, numpy expected)."""
    exe, tensors = fixtures.build_conv2d_bias()
    inputs = fixtures.sample_inputs()
    return exe, tensors, inputs, fixtures.reference(**inputs)


@pytest.fixture(scope="session")
def affine4():
    """out = 2*a + 3*b + c, four float32 tensors of shape (16,): any position can be bound."""
    a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
    out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    return compile_te([a, b, c, out]), [a, b, c, out]


@pytest.fixture(scope="session")
def dev(request) -> Device:
    """Where the device tests run: cpu:0 (llvm), or cuda:0 with --device cuda."""
    kind = request.config.getoption("--device")
    if kind == "cuda" and not tvm.cuda(0).exist:
        pytest.skip("--device cuda: TVM sees no cuda:0 here (tvm.cuda(0).exist is False)")
    return Device(kind)


@pytest.fixture(scope="session")
def affine_dev(dev):
    """affine4's out = 2*a + 3*b + c over 256 float32, compiled for `dev`: (executable, TE tensors)."""
    a, b, c = (te.placeholder((256,), "float32", name=n) for n in "abc")
    out = te.compute((256,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    return dev.compile([a, b, c, out]), [a, b, c, out]
