# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Files an export writes: staged under a new name and renamed into place (``new_file``), and where
they will lie (``real_path``)."""

from __future__ import annotations

import os
import secrets
from types import TracebackType

from .._typing import PathLike


def real_path(path: PathLike) -> str:
    """``path`` with the symlinks of its folders resolved (not a symlink at its last component:
    an export replaces that name, link or not): where the file written there will lie."""
    full = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))


class new_file:
    """``with new_file(path) as staged``: write ``staged`` (a new name, same folder and suffix),
    then rename it onto ``path``: never changed in place, so a process mapping it (a zero-copy
    artifact) keeps the old bytes; on failure nothing is left and ``path`` is as it was."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder, name = os.path.split(os.path.abspath(path))
        stem, dot, suffix = name.partition(".")
        self.staged = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.tmp{dot}{suffix}")

    def __enter__(self) -> str:
        return self.staged

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                os.replace(self.staged, self.path)
        finally:
            if os.path.exists(self.staged):
                os.remove(self.staged)
