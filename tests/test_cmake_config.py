# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``find_package(tvm_partial)``: the docs/deploy.md snippet gets libtvm_runtime without being told
(an empty TVM_RUNTIME_LIBRARY linked a program that crashed in its first parallel kernel), or
configuring fails with a message that says what to pass."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from helpers import cmake_package_dirs

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")

# The snippet of docs/deploy.md, configured only (nothing is compiled).
_PROJECT = """
cmake_minimum_required(VERSION 3.18)
project(snippet LANGUAGES CXX)
find_package(tvm_partial CONFIG REQUIRED)
file(WRITE "${CMAKE_BINARY_DIR}/runtime.txt" "${TVM_RUNTIME_LIBRARY}")
"""


def _configure(tmp_path, *defines: str):
    (tmp_path / "CMakeLists.txt").write_text(_PROJECT)
    return subprocess.run(
        [
            "cmake",
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "build"),
            *cmake_package_dirs(),
            *defines,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runtime_library_found(tmp_path):
    import tvm.libinfo

    proc = _configure(tmp_path, f"-DPython_EXECUTABLE={sys.executable}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = (tmp_path / "build" / "runtime.txt").read_text()
    assert found == str(tvm.libinfo.find_libtvm_runtime()) and found.endswith(".so")


def test_runtime_library_missing_fails_at_configure(tmp_path):
    # A Python that has no tvm wheel: this one, isolated from its site-packages.
    python = tmp_path / "python_without_tvm"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    python.chmod(0o755)
    proc = _configure(tmp_path, f"-DPython_EXECUTABLE={python}")
    assert proc.returncode != 0
    assert (
        "tvm_partial: cannot find libtvm_runtime" in proc.stderr and "-DTVM_RUNTIME_LIBRARY=" in proc.stderr
    )
    assert not (tmp_path / "build" / "runtime.txt").exists()
