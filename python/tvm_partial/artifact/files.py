# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Files an export writes: staged under a new name and renamed into place (``new_file``), and where
they will lie (``real_path``)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator

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
