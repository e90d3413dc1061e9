# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Reading a file without loading it: what kind of file it is, and where an artifact's parts lie.

An artifact is a shared library; loading it runs its code, so inspecting it must not. C++ reads
the file: where TVM's embedded modules and the partial module's bytes lie
(``tvm_partial.LibraryModules``, the parser the loaders check the module tree with), then
(``tvm_partial.InspectArtifact``, ``VerifyArtifact``) exactly the rules the loader applies: the
same format parser, the same decision of where the payloads lie (cpp/storage/payload_source.h).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from typing import Any, NamedTuple

from .. import _ffi_api


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
    """``with mapped(path) as view``: the regular file at ``path``, open (``view.fd``) and mapped
    read-only (``view.data``; an empty file: b""). Anything else (a FIFO, a device, a folder) is
    refused before it is opened for reading, so opening never blocks."""

    def __init__(self, path: str, what: str = "artifact") -> None:
        self.path = path
        self.what = what
        self._map: mmap.mmap | None = None

    def __enter__(self) -> mapped:
        self.fd = open_regular(self.path, self.what)
        try:
            size = os.fstat(self.fd).st_size
            self._map = mmap.mmap(self.fd, 0, access=mmap.ACCESS_READ) if size else None
        except BaseException:
            os.close(self.fd)
            raise
        self.data: bytes | mmap.mmap = self._map if self._map is not None else b""
        return self

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            self._map.close()
        os.close(self.fd)


def file_kind(view: mapped) -> str:
    """The kind of the file ``view`` (``mapped``), from its first bytes as C++ tells it
    (``FileKind``): ``library`` (an ELF file), ``save_to_bytes`` or ``weights file`` (a path the
    weights reader takes for an index of several files too); anything else is ``unknown``."""
    return str(_ffi_api.FileKind(view.path, view.fd))


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
    """Where a partial module's bytes lie in a file; for a library, what TVM embedded in it.
    Read through ``fd`` (the ``mapped`` view's, open while it is)."""

    path: str
    fd: int
    kind: str  # "library" or "save_to_bytes"
    blob_offset: int
    blob_size: int
    modules: list[dict[str, Any]]  # {"kind", "offset", "size"} of each embedded module
    library_bin: tuple[int, int] | None  # [offset, end) of TVM's embedded blob

    def inspect(self) -> dict[str, Any]:
        """The C++ reader's description (InspectArtifact): the format's description, where the
        payloads lie (``payload_entries``) or why they cannot be found (``problem``)."""
        return dict(_ffi_api.InspectArtifact(self.path, self.fd, self.blob_offset, self.blob_size))

    def verify(self, progress: Any = None, shard: tuple[int, int] | None = None) -> dict[str, Any]:
        """Every payload hashed where the loader would read it (VerifyArtifact); with ``shard``
        (rank, world), a sharded tensor's range of that rank only."""
        rank, world = shard if shard is not None else (-1, 0)
        return dict(
            _ffi_api.VerifyArtifact(
                self.path, self.fd, self.blob_offset, self.blob_size, progress, rank, world
            )
        )


def locate(view: mapped, kind: str = "library") -> Located:
    """Where the partial module's bytes lie in the file ``view`` (``mapped``) of ``kind``
    (``file_kind``): a library (its embedded partial_apply module, found by C++'s reader,
    ``LibraryModules``) or ``save_to_bytes`` output."""
    if kind == "save_to_bytes":
        return Located(view.path, view.fd, "save_to_bytes", 0, -1, [], None)
    found = _ffi_api.LibraryModules(view.path, view.fd)
    modules = [{str(k): v for k, v in m.items()} for m in found["modules"]]
    at, end = found["library_bin"]
    return Located(
        view.path, view.fd, "library", int(found["blob_offset"]), int(found["blob_size"]), modules, (at, end)
    )


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
