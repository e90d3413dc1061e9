# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the tests: kernels, numpy data, subprocess runners."""

from __future__ import annotations

import json
import os
import struct
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


# The format's 64-bit hash (cpp/hash.{h,cc}), written again here, independently of the C++ one:
# tests reseal deliberately altered blobs with it, and check it against what the library records.
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_M64 = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _lane(acc: int, word: int) -> int:
    return _rotl((acc + word * _P2) & _M64, 31) * _P1 & _M64


def format_hash(data: bytes) -> int:
    """The payload and metadata hash of the partial_apply format, as an unsigned 64-bit int."""
    data = bytes(data)
    acc = [(_P1 + _P2) & _M64, _P2, 0, -_P1 & _M64]
    whole = len(data) - len(data) % 32
    for at in range(0, whole, 32):
        for k in range(4):
            acc[k] = _lane(acc[k], int.from_bytes(data[at + 8 * k : at + 8 * k + 8], "little"))
    h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M64
    h ^= len(data) * _P3 & _M64
    tail = data[whole:]
    for i in range(0, len(tail) - 7, 8):
        h = (_rotl(h ^ _lane(0, int.from_bytes(tail[i : i + 8], "little")), 27) * _P1 + _P3) & _M64
    for byte in tail[len(tail) - len(tail) % 8 :]:
        h = _rotl(h ^ (byte * _P3 & _M64), 11) * _P1 & _M64
    h ^= h >> 33
    h = h * _P2 & _M64
    h ^= h >> 29
    h = h * _P3 & _M64
    h ^= h >> 32
    return h


def reseal(blob: bytes) -> bytes:
    """A blob with its metadata hash recomputed (over the first 32 header bytes and the metadata),
    so a test can reach the structural checks behind the checksum."""
    blob = bytes(blob)
    if len(blob) < 40:
        raise ValueError("too short to reseal")
    (meta_size,) = struct.unpack_from("<Q", blob, 24)
    if meta_size > len(blob) - 40:
        raise ValueError("metadata size past the end; cannot reseal")
    digest = format_hash(blob[:32] + blob[40 : 40 + meta_size])
    return blob[:32] + struct.pack("<Q", digest) + blob[40:]


def trailer_hash(data: bytes) -> int:
    """The format's hash of ``data`` (what a zero-copy trailer records over its first 40 bytes)."""
    return format_hash(data)
