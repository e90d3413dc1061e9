# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Files read without loading them (that runs a library's code): opened once here (never blocking on a
FIFO), read by C++ by the loader's rules, answers made plain (``read_file``); an export's files staged
under a new name, renamed into place (``new_file``), where they will lie (``real_path``)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from typing import Any

import tvm_ffi

from .._typing import PathLike


def real_path(path: PathLike) -> str:
    """``path`` with the symlinks of its folders resolved (not a symlink at its last component:
    an export replaces that name, link or not): where the file written there will lie."""
    full = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))


@contextlib.contextmanager
def new_file(path: str) -> Iterator[str]:
    """``with new_file(path) as staged``: write ``staged`` (a new name, same folder and suffix),
    then rename it onto ``path``: never changed in place, so a process mapping it (a zero-copy
    artifact) keeps the old bytes; on failure nothing is left and ``path`` is as it was."""
    folder, name = os.path.split(os.path.abspath(path))
    stem, dot, suffix = name.partition(".")
    staged = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.tmp{dot}{suffix}")
    try:
        yield staged
        os.replace(staged, path)
    finally:
        if os.path.exists(staged):
            os.remove(staged)


def _refuse_non_regular(path: str, mode: int, what: str) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", path)
    if not stat.S_ISREG(mode):
        kinds = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device"}
        kind = kinds.get(stat.S_IFMT(mode), "a device" if stat.S_ISBLK(mode) else "not a regular file")
        raise ValueError(f"{what} {path} is {kind}, not a regular file; give the path of a file")


@contextlib.contextmanager
def open_regular(path: str, what: str = "artifact") -> Iterator[int]:
    """``with open_regular(path) as fd``: a descriptor of the regular file at ``path`` (checked
    before and after it is opened, so a FIFO never blocks the open), closed after."""
    _refuse_non_regular(path, os.stat(path).st_mode, what)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _refuse_non_regular(path, os.fstat(fd).st_mode, what)
        yield fd
    finally:
        os.close(fd)


def read_file(ask: Callable[..., Any], path: str, *args: Any, what: str = "artifact") -> Any:
    """``ask(path, fd, *args)`` (a C++ global) with the regular file at ``path`` open once as
    ``fd`` (every read is of that file), its answer as plain lists, dicts, ints and strs."""
    with open_regular(path, what) as fd:
        return plain(ask(path, fd, *args))


def plain(value: Any) -> Any:
    """ffi containers -> Python lists, dicts, ints, strs (for JSON)."""
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (tvm_ffi.Map, dict)):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)
    return value


def rank_world_of(shard: object) -> tuple[int, int] | None:
    """``shard=`` as C++ takes it: (rank, world), two int64s, or None; C++ checks the rank range."""
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
    if not (-(2**63) <= world and -(2**63) <= rank <= 2**63 - 1):
        raise ValueError(f"shard=({rank}, {world}): past what 64 bits hold; give the rank and world")
    return rank, world
