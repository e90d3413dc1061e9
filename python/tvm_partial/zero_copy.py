"""Zero-copy exports: tensor payloads in a data section of the artifact, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more) and go
into a 64-byte-aligned, writable data section of their own, found again through a per-export
symbol. The dynamic loader maps that section privately from the file, so loading reads nothing,
pages are read when a kernel first touches them, and writes (a bound output buffer, an in-place
weight update) go to private copy-on-write pages: the file never changes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
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


def prepare(module, workdir: Path):
    """-> (the module to export, the object file to link in) for a zero-copy export."""
    symbol = "__tvm_partial_payload_" + secrets.token_hex(8)
    external = _with_external_payloads(module, symbol, secrets.randbits(63))
    region = workdir / "payloads.bin"
    _write_payload_region(external, str(region))
    (workdir / "payloads.S").write_text(_STUB.format(symbol=symbol, size=region.stat().st_size))
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    proc = subprocess.run([compiler, "-c", "payloads.S", "-o", "payloads.o"], cwd=workdir,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"assembling the payload section with {compiler} failed:\n{proc.stderr}")
    region.unlink()  # now inside payloads.o
    return external, workdir / "payloads.o"
