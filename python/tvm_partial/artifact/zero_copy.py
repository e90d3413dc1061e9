# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy exports: tensor payloads appended to the artifact's file, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more). The
library is linked with only the payload region's 64-byte header, in a data section of its own
under a per-export symbol; then the region (header and payloads) is appended to the linked file
in one sequential write, at a 64 KiB-aligned offset, followed by a 64-byte trailer that locates
it (cpp/storage/appended_region.h). Loading maps the region privately from the very file the
library was loaded from (cpp/storage/loaded_library.h), so loading reads nothing, pages are read
when a kernel first touches them, and writes (a bound output buffer, an in-place weight update)
go to private copy-on-write pages: the file never changes.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import tvm_ffi

from .. import _ffi_api
from .._progress import ProgressCallback
from . import _elf

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20

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
    """Bytes of tensor constants a partial module holds, each tensor once (a tensor bound in
    several places is stored once), as the format counts them."""
    return int(_ffi_api.ConstantBytes(module))


def with_appended_payloads(
    module: tvm_ffi.Module, symbol: str | None = None, link: int | None = None
) -> tvm_ffi.Module:
    """A copy of partial ``module`` whose bytes leave the payloads to a region appended to the
    library file (what ``append_payload_region`` writes); the library keeps only the region
    header, under ``symbol``. C++ draws the symbol and the link unless given (a re-export keeps
    the recorded ones)."""
    return _ffi_api.WithAppendedPayloads(module, symbol, link)


def append_payload_region(
    external: tvm_ffi.Module, path: str | os.PathLike[str], progress: ProgressCallback | None = None
) -> None:
    """Append the payload region of ``external`` (from ``prepare``) to the library at ``path``,
    linked with its bytes: one write of the payloads, hashed as they are written, then the trailer;
    then C++ patches the payload hashes into the partial module's bytes in the library (same
    length, found through TVM's module tree). ``progress(done_bytes, total_bytes)`` is called as the region is written (every
    64 MiB at most, and once at the end)."""
    _ffi_api.AppendPayloadRegion(external, os.fspath(path), progress)


def write_payload_region(external: tvm_ffi.Module, path: str | os.PathLike[str], lead: int = 0) -> None:
    """Write the payload region of ``external`` (from ``with_appended_payloads``) to ``path``,
    after ``lead`` zero bytes (a multiple of 64)."""
    _ffi_api.WritePayloadRegion(external, os.fspath(path), lead)


def prepare(module: tvm_ffi.Module, workdir: Path) -> tuple[tvm_ffi.Module, Path]:
    """-> (the module to export, the object file to link in) for a zero-copy export. The object
    holds the region header only; after linking, ``append_payload_region(module, library)``
    appends the payloads."""
    external = _ffi_api.WithPayloadHashes(with_appended_payloads(module), None)
    return external, region_object(external, workdir)


def prepare_weights_file(
    module: tvm_ffi.Module, workdir: Path, weights_path: Path, name: str
) -> tuple[tvm_ffi.Module, Path]:
    """-> (the module to export, the object file to link in) for an export whose payloads go to
    the safetensors file ``weights_path`` (written here), recorded as ``name`` (relative to the
    library's folder). The library keeps only the region's 64-byte header, under its symbol."""
    external = _ffi_api.WithExternalWeights(module, None, None, name)
    _ffi_api.WriteWeightsRegionFile(external, os.fspath(weights_path))
    return external, region_object(external, workdir)


def region_object(external: tvm_ffi.Module, workdir: Path) -> Path:
    """The object file defining the region header of ``external`` under its symbol."""
    region = _ffi_api.PayloadRegionHeader(external)
    return header_object(bytes(region["header"]), workdir, str(region["symbol"]))


def header_object(header: bytes, workdir: Path, symbol: str) -> Path:
    """A relocatable object defining ``symbol``: the 64-byte region ``header`` in a data section.
    Written directly as ELF on Linux x86-64 and aarch64, through the C compiler's assembler
    elsewhere."""
    machine = _elf.MACHINES.get(platform.machine().lower())
    if machine is not None and sys.platform.startswith("linux") and sys.byteorder == "little":
        obj = workdir / "payloads.o"
        with open(obj, "wb") as f:
            f.write(bytes(64) + header)  # room for the ELF header, then the section's bytes
        with open(obj, "r+b") as f:
            _elf.finish_payload_object(f, symbol, machine, lead=64)
        return obj
    (workdir / "payloads.bin").write_bytes(header)
    return _assemble(workdir, symbol)


def _assemble(workdir: Path, symbol: str) -> Path:
    """Elsewhere: an assembler stub that includes ``payloads.bin``."""
    region = workdir / "payloads.bin"
    (workdir / "payloads.S").write_text(
        _STUB.format(
            symbol=symbol, size=region.stat().st_size, section=_elf.PAYLOAD_SECTION.decode(), flags="aw"
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
