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
import struct
import subprocess
import sys
from pathlib import Path

import tvm_ffi

from . import _lib

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20

_with_external_payloads = tvm_ffi.get_global_func("tvm_partial.WithExternalPayloads")
_write_payload_region = tvm_ffi.get_global_func("tvm_partial.WritePayloadRegion")

_STUB = """\
    .section .data.tvm_partial_payload,"aw",@progbits
    .balign 64
    .globl {symbol}
    .type {symbol}, @object
    .size {symbol}, {size}
{symbol}:
    .incbin "payloads.bin"
    .section .note.GNU-stack,"",@progbits
"""


def constant_bytes(module) -> int:
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


#: ELF machine numbers of the hosts whose object files are written directly (else: assembler).
_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
_SECTION = b".data.tvm_partial_payload"


def prepare(module, workdir: Path):
    """-> (the module to export, the object file to link in) for a zero-copy export."""
    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = _with_external_payloads(module, symbol, secrets.randbits(63))
    machine = _ELF_MACHINES.get(platform.machine().lower())
    if machine is not None and sys.platform.startswith("linux") and sys.byteorder == "little":
        obj = workdir / "payloads.o"
        _write_object(external, obj, symbol, machine)
        return external, obj
    return external, _assemble(external, workdir, symbol)


def _write_object(external, path: Path, symbol: str, machine: int) -> None:
    """A relocatable ELF64 object holding the payload region in a writable, 64-byte-aligned data
    section under a global symbol: the region streams straight into the file (no assembler, which
    would read all of it into memory)."""
    _write_payload_region(external, str(path), 64)  # room for the ELF header
    size = path.stat().st_size - 64
    strtab = b"\0" + symbol.encode() + b"\0"
    names = [b"", _SECTION, b".symtab", b".strtab", b".shstrtab", b".note.GNU-stack"]
    shstrtab, name_at = b"", []
    for name in names:
        name_at.append(len(shstrtab))
        shstrtab += name + b"\0"
    symtab = bytes(24) + struct.pack("<IBBHQQ", 1, 0x11, 0, 1, 0, size)  # GLOBAL OBJECT in section 1
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        pos = f.tell()
        pad = (-pos) % 8
        f.write(bytes(pad))
        symtab_at = pos + pad
        f.write(symtab)
        strtab_at = f.tell()
        f.write(strtab)
        shstrtab_at = f.tell()
        f.write(shstrtab)
        f.write(bytes((-f.tell()) % 8))
        headers_at = f.tell()
        sections = [
            (0, 0, 0, 0, 0, 0, 0, 0, 0),
            (1, 0x3, 64, size, 0, 0, 64, 0, name_at[1]),                        # PROGBITS, WRITE|ALLOC
            (2, 0, symtab_at, len(symtab), 3, 1, 8, 24, name_at[2]),            # SYMTAB -> .strtab
            (3, 0, strtab_at, len(strtab), 0, 0, 1, 0, name_at[3]),             # STRTAB
            (3, 0, shstrtab_at, len(shstrtab), 0, 0, 1, 0, name_at[4]),         # STRTAB (names)
            (1, 0, shstrtab_at, 0, 0, 0, 1, 0, name_at[5]),                     # no executable stack
        ]
        for sh_type, flags, offset, length, link, info, align, entsize, name in sections:
            f.write(struct.pack("<IIQQQQIIQQ", name, sh_type, flags, 0, offset, length, link, info, align, entsize))
        f.seek(0)
        f.write(b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)                   # 64-bit, little-endian
                + struct.pack("<HHIQQQIHHHHHH", 1, machine, 1, 0, 0, headers_at, 0, 64, 0, 0, 64,
                              len(sections), 4))


def _assemble(external, workdir: Path, symbol: str) -> Path:
    """Elsewhere: an assembler stub that includes the region file."""
    region = workdir / "payloads.bin"
    _write_payload_region(external, str(region), 0)
    (workdir / "payloads.S").write_text(_STUB.format(symbol=symbol, size=region.stat().st_size))
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    proc = subprocess.run([compiler, "-c", "payloads.S", "-o", "payloads.o"], cwd=workdir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"assembling the payload section with {compiler} failed:\n{proc.stderr}")
    region.unlink()  # now inside payloads.o
    return workdir / "payloads.o"
