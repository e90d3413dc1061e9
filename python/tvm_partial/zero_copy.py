# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy exports: tensor payloads in a data section of the artifact, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more) and go
into a 64-byte-aligned, writable data section of their own, found again through a per-export
symbol. The dynamic loader maps that section privately from the file, so loading reads nothing,
pages are read when a kernel first touches them, and writes (a bound output buffer, an in-place
weight update) go to private copy-on-write pages: the file never changes.
"""

from __future__ import annotations

import os
import platform
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import tvm_ffi

from . import _elf, _lib

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20

_with_external_payloads = tvm_ffi.get_global_func("tvm_partial.WithExternalPayloads")
_write_payload_region = tvm_ffi.get_global_func("tvm_partial.WritePayloadRegion")
_with_external_weights = tvm_ffi.get_global_func("tvm_partial.WithExternalWeights")

_STUB = """\
    .section {section},"{flags}",@progbits
    .balign 64
    .globl {symbol}
    .type {symbol}, @object
    .size {symbol}, {size}
{symbol}:
    .incbin "payloads.bin"
    .section .note.GNU-stack,"",@progbits
"""


def constant_bytes(module: tvm_ffi.Module) -> int:
    """Bytes of tensor constants a partial module holds."""
    total = 0
    for bound in _lib.partial_apply_bindings(module).values():
        for value in bound.values():
            if isinstance(value, tvm_ffi.Tensor):
                bits = tvm_ffi.dtype(str(value.dtype)).bits * tvm_ffi.dtype(str(value.dtype)).lanes
                count = 1
                for d in value.shape:
                    count *= d
                total += (count * bits + 7) // 8
    return total


def with_external_payloads(module: tvm_ffi.Module, symbol: str, link: int) -> tvm_ffi.Module:
    """A copy of partial ``module`` whose bytes leave the payloads to the region ``symbol`` that
    records ``link`` (what ``write_payload_region`` writes)."""
    return _with_external_payloads(module, symbol, link)


def write_payload_region(external: tvm_ffi.Module, path: str | os.PathLike[str], lead: int = 0) -> None:
    """Write the payload region of a module from ``with_external_payloads`` to ``path``, after
    ``lead`` zero bytes (a multiple of 64)."""
    _write_payload_region(external, os.fspath(path), lead)


def prepare(module: tvm_ffi.Module, workdir: Path) -> tuple[tvm_ffi.Module, Path]:
    """-> (the module to export, the object file to link in) for a zero-copy export."""
    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = _with_external_payloads(module, symbol, secrets.randbits(63))
    machine = _elf.MACHINES.get(platform.machine().lower())
    if machine is not None and sys.platform.startswith("linux") and sys.byteorder == "little":
        obj = workdir / "payloads.o"
        _write_object(external, obj, symbol, machine)
        return external, obj
    return external, _assemble(external, workdir, symbol)


def _write_object(external: tvm_ffi.Module, path: Path, symbol: str, machine: int) -> None:
    """A relocatable ELF64 object holding the payload region: the region streams straight into the
    file (no assembler, which would read all of it into memory), then the ELF tables go around it."""
    _write_payload_region(external, str(path), 64)  # room for the ELF header
    with open(path, "r+b") as f:
        _elf.finish_payload_object(f, symbol, machine, lead=64)


def _assemble(external: tvm_ffi.Module, workdir: Path, symbol: str) -> Path:
    """Elsewhere: an assembler stub that includes the region file."""
    region = workdir / "payloads.bin"
    _write_payload_region(external, str(region), 0)
    large = platform.machine().lower() in ("x86_64", "amd64")  # see _elf.LARGE_PAYLOAD_SECTION
    section = (_elf.LARGE_PAYLOAD_SECTION if large else _elf.PAYLOAD_SECTION).decode()
    (workdir / "payloads.S").write_text(
        _STUB.format(
            symbol=symbol, size=region.stat().st_size, section=section, flags="awl" if large else "aw"
        )
    )
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    proc = subprocess.run(
        [compiler, "-c", "payloads.S", "-o", "payloads.o"], cwd=workdir, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"assembling the payload section with {compiler} failed:\n{proc.stderr}")
    region.unlink()  # now inside payloads.o
    return workdir / "payloads.o"


def prepare_weights_file(
    module: tvm_ffi.Module, workdir: Path, weights_path: Path, name: str
) -> tuple[tvm_ffi.Module, Path]:
    """-> (the module to export, the object file to link in) for an export whose payloads go to
    the safetensors file ``weights_path`` (written here), recorded as ``name`` (relative to the
    library's folder). The library keeps only the region's 64-byte header, under its symbol."""
    from . import weights as _weights

    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = _with_external_weights(module, symbol, secrets.randbits(63), name)
    _weights.write_region_file(external, weights_path)
    with open(weights_path, "rb") as f:  # the region header, as the library's region
        start = 8 + int.from_bytes(f.read(8), "little")
        f.seek(start)
        header = f.read(64)
    machine = _elf.MACHINES.get(platform.machine().lower())
    if machine is not None and sys.platform.startswith("linux") and sys.byteorder == "little":
        obj = workdir / "payloads.o"
        with open(obj, "wb") as f:
            f.write(bytes(64) + header)
        with open(obj, "r+b") as f:
            _elf.finish_payload_object(f, symbol, machine, lead=64)
        return external, obj
    raise NotImplementedError("export_library(weights_file=...) is supported on Linux x86-64 and aarch64")
