# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the tests: kernels, numpy data, subprocess runners."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import tvm
from tvm import te


def compile_te(tensors, name: str = "main"):
    """tvm.compile of te.create_prim_func(tensors) for the CPU."""
    func = te.create_prim_func(tensors).with_attr("global_symbol", name)
    return tvm.compile(tvm.IRModule({name: func}), target="llvm")


def affine4_ref(a, b, c):
    return (a * np.float32(2) + b * np.float32(3) + c).astype("float32")


def ints(shape, dtype="float32", seed=0, low=-8, high=9):
    """Small integers, so float sums are exact and results compare bitwise."""
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


def tensor(array):
    return tvm.runtime.tensor(np.asarray(array))


def run_python(code: str, *args: str, env: dict | None = None, timeout: int = 300):
    """Run code in a fresh interpreter (what could crash the process runs there)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


def run_json(code: str, *args: str, env: dict | None = None):
    """Run code that prints one JSON document last; a crash or error fails the test."""
    proc = run_python(code, *args, env=env)
    assert proc.returncode == 0, f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def export_section_artifact(pm, path) -> None:
    """Export ``pm`` as tvm-partial wrote zero-copy artifacts before the payloads were appended to
    the file (format flag 1 alone): the whole payload region linked into a data section of the
    library. Such artifacts must keep loading, verifying and updating."""
    import platform
    import secrets
    import tempfile
    from pathlib import Path

    from tvm_partial import _elf, zero_copy

    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = zero_copy.with_external_payloads(pm, symbol, secrets.randbits(63))
    with tempfile.TemporaryDirectory() as workdir:
        obj = Path(workdir) / "payloads.o"
        zero_copy.write_payload_region(external, obj, lead=64)
        with open(obj, "r+b") as f:
            _elf.finish_payload_object(f, symbol, _elf.MACHINES[platform.machine().lower()], lead=64)
        external.export_library(str(path), addons=[str(obj)])


def trailer_hash(data: bytes) -> int:
    """The format's hash of ``data`` (what a zero-copy trailer records over its first 40 bytes)."""
    import tempfile

    import tvm_ffi

    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        return tvm_ffi.get_global_func("tvm_partial.HashFileRange")(f.name, 0, len(data)) & (2**64 - 1)
