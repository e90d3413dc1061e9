# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy exports: tensor payloads appended to the artifact's file, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more). The
library is linked with only the payload region's 64-byte header, in a data section of its own
under a per-export symbol; then the region (header and payloads) is appended to the linked file
in one sequential write, at a 64 KiB-aligned offset, followed by a 64-byte trailer that locates
it. Loading finds the library's file from the symbol, reads the trailer and maps the region
privately by file offset, so loading reads nothing, pages are read when a kernel first touches
them, and writes (a bound output buffer, an in-place weight update) go to private copy-on-write
pages: the file never changes. Artifacts written before (the whole region in the data section)
still load (docs/large_constants.md).
"""

from __future__ import annotations

import mmap
import os
import platform
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import tvm_ffi

from . import _elf, _lib
from ._progress import ProgressCallback

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20

_with_external_payloads = tvm_ffi.get_global_func("tvm_partial.WithExternalPayloads")
_with_appended_payloads = tvm_ffi.get_global_func("tvm_partial.WithAppendedPayloads")
_region_header = tvm_ffi.get_global_func("tvm_partial.PayloadRegionHeader")
_append_payload_region = tvm_ffi.get_global_func("tvm_partial.AppendPayloadRegion")
_with_payload_hashes = tvm_ffi.get_global_func("tvm_partial.WithPayloadHashes")
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


def with_appended_payloads(module: tvm_ffi.Module, symbol: str, link: int) -> tvm_ffi.Module:
    """Like ``with_external_payloads``, for a region appended to the library file (what
    ``append_payload_region`` writes); the library's region holds only the region header."""
    return _with_appended_payloads(module, symbol, link)


def append_payload_region(
    external: tvm_ffi.Module, path: str | os.PathLike[str], progress: ProgressCallback | None = None
) -> None:
    """Append the payload region of ``external`` (from ``prepare``) to the library at ``path``,
    linked with its bytes: one write of the payloads, hashed as they are written, then the trailer;
    then the payload hashes are patched into the partial module's bytes in the library (same
    length). ``progress(done_bytes, total_bytes)`` is called as the region is written (every
    64 MiB at most, and once at the end)."""
    path = os.fspath(path)
    hashes = _append_payload_region(external, path, progress)
    linked = bytes(_lib.save_to_bytes(external))
    final = bytes(_lib.save_to_bytes(_with_payload_hashes(external, hashes)))
    with open(path, "r+b") as f:
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            found = [m for m in _elf.ElfFile(data, path).embedded_modules() if m.kind == "partial_apply"]
            at = found[0].offset if len(found) == 1 else -1
            if at < 0 or len(final) != len(linked) or data[at : at + len(linked)] != linked:
                raise RuntimeError(f"export_library: cannot find the partial module's bytes in {path}")
        f.seek(at)
        f.write(final)


def write_payload_region(external: tvm_ffi.Module, path: str | os.PathLike[str], lead: int = 0) -> None:
    """Write the payload region of a module from ``with_external_payloads`` to ``path``, after
    ``lead`` zero bytes (a multiple of 64)."""
    _write_payload_region(external, os.fspath(path), lead)


def prepare(module: tvm_ffi.Module, workdir: Path) -> tuple[tvm_ffi.Module, Path]:
    """-> (the module to export, the object file to link in) for a zero-copy export. The object
    holds the region header only; after linking, ``append_payload_region(module, library)``
    appends the payloads."""
    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = _with_payload_hashes(_with_appended_payloads(module, symbol, secrets.randbits(63)), None)
    return external, header_object(bytes(_region_header(external)), workdir, symbol)


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
    machine = _elf.MACHINES.get(platform.machine().lower())
    if machine is None or not sys.platform.startswith("linux") or sys.byteorder != "little":
        raise NotImplementedError("export_library(weights_file=...) is supported on Linux x86-64 and aarch64")
    return external, header_object(bytes(_region_header(external)), workdir, symbol)
