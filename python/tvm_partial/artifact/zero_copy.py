# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy exports: tensor payloads appended to the artifact's file, mapped at load time.

The payloads leave the bytes TVM embeds for the module (which its loader copies twice more). Once
the library is linked, the region (its 64-byte header and the payloads) is appended to the file
in one sequential write, at a 64 KiB-aligned offset, followed by a 64-byte trailer that locates
it (cpp/storage/appended_region.h); the metadata records the region's size and a random link
number that its header repeats. Loading maps the region privately from the very file the
library was loaded from (cpp/storage/loaded_library.h), so loading reads nothing, pages are read
when a kernel first touches them, and writes (a bound output buffer, an in-place weight update)
go to private copy-on-write pages: the file never changes.
"""

from __future__ import annotations

import os
from pathlib import Path

import tvm_ffi

from .. import _ffi_api
from .._progress import ProgressCallback

#: Exports whose constants reach this many bytes go zero-copy unless told otherwise.
THRESHOLD_BYTES = 16 * 2**20


def with_appended_payloads(
    module: tvm_ffi.Module, symbol: str | None = None, link: int | None = None
) -> tvm_ffi.Module:
    """A copy of partial ``module`` whose bytes leave the payloads to a region appended to the
    library file (what ``append_payload_region`` writes), named ``symbol``. C++ draws the name
    and the link unless given (a re-export keeps the recorded ones)."""
    return _ffi_api.WithAppendedPayloads(module, symbol, link)


def append_payload_region(
    external: tvm_ffi.Module, path: str | os.PathLike[str], progress: ProgressCallback | None = None
) -> None:
    """Append the payload region of ``external`` (from ``prepare``) to the library at ``path``,
    linked with its bytes: one write of the payloads, hashed as they are written, then the trailer;
    then C++ patches the payload hashes into the partial module's bytes in the library (same
    length, found through TVM's module tree). ``progress(done_bytes, total_bytes)`` is called as
    the region is written (every 64 MiB at most, and once at the end)."""
    _ffi_api.AppendPayloadRegion(external, os.fspath(path), progress)


def write_payload_region(external: tvm_ffi.Module, path: str | os.PathLike[str], lead: int = 0) -> None:
    """Write the payload region of ``external`` (from ``with_appended_payloads``) to ``path``,
    after ``lead`` zero bytes (a multiple of 64)."""
    _ffi_api.WritePayloadRegion(external, os.fspath(path), lead)


def prepare(module: tvm_ffi.Module) -> tvm_ffi.Module:
    """The module to export for a zero-copy export: its bytes leave the payloads to the region
    that ``append_payload_region(module, library)`` appends once the library is linked."""
    return _ffi_api.WithZeroPayloadHashes(with_appended_payloads(module))


def prepare_weights_file(module: tvm_ffi.Module, weights_path: Path, name: str) -> tvm_ffi.Module:
    """The module to export for an export whose payloads go to the safetensors file
    ``weights_path`` (written here), recorded as ``name`` (relative to the library's folder)."""
    external = _ffi_api.WithExternalWeights(module, None, None, name)
    _ffi_api.WriteWeightsRegionFile(external, os.fspath(weights_path))
    return external
