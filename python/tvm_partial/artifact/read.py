# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Reading a file without loading it: what kind of file it is, and where an artifact's parts lie.

An artifact is a shared library; loading it runs its code, so inspecting it must not. The ELF
reader (``_elf``) finds where the partial module's embedded bytes and the library's copy of its
region header lie in the file; from there on the C++ reader (``tvm_partial.InspectArtifact``,
``VerifyArtifact``) applies exactly the rules the loader applies: the same parser, the same
decision of where the payloads lie (cpp/storage/payload_source.h).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from typing import Any, NamedTuple

from .. import _ffi_api
from . import _elf


def _refuse_non_regular(path: str, mode: int, what: str) -> None:
    kinds = [
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    ]
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in kinds if test(mode)), "not a regular file")
        if kind == "a folder":
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", path)
        raise ValueError(f"{what} {path} is {kind}, not a regular file; give the path of a file")


def open_regular(path: str, what: str = "artifact") -> int:
    """A descriptor of the regular file at ``path`` (checked before and after it is opened, so a
    FIFO never blocks the open); the caller closes it."""
    _refuse_non_regular(path, os.stat(path).st_mode, what)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _refuse_non_regular(path, os.fstat(fd).st_mode, what)
    except BaseException:
        os.close(fd)
        raise
    return fd


class mapped:
    """``with mapped(path) as data``: the regular file at ``path`` mapped read-only (an empty
    file: b""). Anything else (a FIFO, a device, a folder) is refused before it is opened for
    reading, so opening never blocks."""

    def __init__(self, path: str, what: str = "artifact") -> None:
        self.path = path
        self.what = what

    def __enter__(self) -> bytes | mmap.mmap:
        _refuse_non_regular(self.path, os.stat(self.path).st_mode, self.what)
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            _refuse_non_regular(self.path, st.st_mode, self.what)
            self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if st.st_size else None
        finally:
            os.close(fd)
        return self._map if self._map is not None else b""

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            self._map.close()


def file_kind(path: str) -> str:
    """The kind of file at ``path``, from its first bytes as C++ tells it (``FileKind``):
    ``library`` (an ELF file), ``save_to_bytes`` or ``weights file`` (a path the weights reader
    takes for an index of several files too); anything else is ``unknown``."""
    fd = open_regular(path)
    try:
        return str(_ffi_api.FileKind(path, fd))
    finally:
        os.close(fd)


def not_an_artifact(path: str) -> ValueError:
    return ValueError(
        f"{path} is not a tvm-partial artifact: not an ELF shared library (nor save_to_bytes "
        "output, nor a safetensors weights file)"
    )


def rank_world_of(shard: object) -> tuple[int, int] | None:
    """``shard=`` checked: (rank, world) with 0 <= rank < world, or None."""
    if shard is None:
        return None
    if (
        not isinstance(shard, tuple)
        or len(shard) != 2
        or any(isinstance(v, bool) or not isinstance(v, int) for v in shard)
    ):
        raise TypeError(f"shard= must be (rank, world), two ints, got {shard!r}")
    rank, world = shard
    if world > 2**63 - 1:  # what a call into C++ can carry; no artifact records as many ranks
        raise ValueError(
            f"shard=({rank}, {world}): the world is past 2**63 - 1 ranks; give the world the artifact records"
        )
    # The rule is C++'s; values past int64 are clamped to ones it refuses alike.
    problem = _ffi_api.RankProblem(min(max(rank, -1), 2**63 - 1), max(world, 0))
    if problem:
        raise ValueError(f"shard=({rank}, {world}): {problem}")
    return rank, world


class Located(NamedTuple):
    """Where a partial module's bytes lie in a file, and the library's copy of its region
    header (-1: none)."""

    path: str
    kind: str  # "library" or "save_to_bytes"
    blob_offset: int
    blob_size: int
    header_offset: int
    elf: _elf.ElfFile | None

    def inspect(self) -> dict[str, Any]:
        """The C++ reader's description (InspectArtifact): the format's description, where the
        payloads lie (``payload_entries``) or why they cannot be found (``problem``)."""
        return dict(_ffi_api.InspectArtifact(self.path, self.blob_offset, self.blob_size, self.header_offset))

    def verify(self, progress: Any = None, shard: tuple[int, int] | None = None) -> dict[str, Any]:
        """Every payload hashed where the loader would read it (VerifyArtifact); with ``shard``
        (rank, world), a sharded tensor's range of that rank only."""
        rank, world = shard if shard is not None else (-1, 0)
        return dict(
            _ffi_api.VerifyArtifact(
                self.path, self.blob_offset, self.blob_size, self.header_offset, progress, rank, world
            )
        )


def locate(path: str, data: bytes | mmap.mmap, kind: str = "library") -> Located:
    """Where the partial module's bytes lie in the file ``path`` (mapped as ``data``) of ``kind``
    (``file_kind``): a library (its embedded partial_apply module, found by the ELF reader) or
    ``save_to_bytes`` output."""
    if kind == "save_to_bytes":
        return Located(path, "save_to_bytes", 0, -1, -1, None)
    elf = _elf.ElfFile(data, path)
    modules = elf.embedded_modules()
    partial = [m for m in modules if m.kind == "partial_apply"]
    if not partial:
        kinds = ", ".join(m.kind for m in modules) or "none"
        raise ValueError(
            f"{path} is not a tvm-partial artifact: it embeds no partial_apply module "
            f"(embedded modules: {kinds})"
        )
    blob = partial[0]  # the root (TVM writes the module tree root first)
    header_offset = -1
    try:
        described = _ffi_api.DescribeBytes(bytes(data[blob.offset : blob.offset + blob.size]))
    except ValueError as err:  # the format's reader: say which file
        raise ValueError(f"{path}: {err}") from err
    if "region_symbol" in described:
        found = elf.symbol(str(described["region_symbol"]).encode())
        if found is not None and found[1] == 64:
            header_offset = found[0]
    return Located(path, "library", blob.offset, blob.size, header_offset, elf)


def report(path: str, payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``verify`` returns, from the payloads it checked (each with ``intact`` and ``bytes``)."""
    damaged = [p for p in payloads if not p["intact"]]
    return {
        "path": path,
        "intact": not damaged,
        "checked": len(payloads),
        "bytes": sum(p["bytes"] for p in payloads),
        "payloads": payloads,
        "damaged": damaged,
    }
