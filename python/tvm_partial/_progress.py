# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Progress lines for long work (export, verifying large weights) on a terminal; sizes in human units."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

#: Work smaller than this finishes before a progress line would help: nothing is shown.
MIN_BYTES = 64 * 2**20
MAX_UPDATES_PER_SECOND = 10

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")

#: What ``verify(path, progress=...)`` and the export loop call: ``(done_bytes, total_bytes)``.
ProgressCallback = Callable[[int, int], None]


def format_size(nbytes: int) -> str:
    """``12 B``, ``19 KiB``, ``256.0 MiB``, ``1.0 GiB``: bytes and KiB as whole numbers, MiB and
    larger with one decimal; a value that would show as 1024 of a unit shows as 1 of the next."""
    nbytes = int(nbytes)
    if nbytes < 1024:
        return f"{nbytes} B"
    value = float(nbytes)
    for unit in _UNITS:
        value /= 1024
        shown = f"{value:.0f}" if unit == "KiB" else f"{value:.1f}"
        if float(shown) < 1024:
            break
    return f"{shown} {unit}"


class Progress:
    """``with Progress("verify model.so", total) as progress: ... progress(done, total)`` redraws
    ``label: 37% (380.0 MiB of 1.0 GiB)`` on one line of ``stream`` (default stderr) only when it is a
    tty, ``quiet`` is not True and the total a call passes (0 until known) reaches ``MIN_BYTES``."""

    def __init__(
        self, label: str, total_bytes: int, quiet: bool | None = None, stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.total_bytes = int(total_bytes)
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        # Whether anyone watches; the size is checked per call (a caller may learn the total late).
        self.active = quiet is not True and callable(isatty) and bool(isatty())
        self._last_draw = float("-inf")
        self._done = 0

    def __call__(self, done_bytes: int, total_bytes: int) -> None:
        if not self.active or total_bytes < MIN_BYTES:
            return
        self._done, self.total_bytes = int(done_bytes), int(total_bytes)
        now = time.monotonic()
        if now - self._last_draw >= 1.0 / MAX_UPDATES_PER_SECOND:
            self._last_draw = now
            self._draw()

    def _draw(self) -> None:  # only for a total of MIN_BYTES or more
        percent = min(100, self._done * 100 // self.total_bytes)
        self.stream.write(
            f"\r{self.label}: {percent:3d}% ({format_size(self._done)} of {format_size(self.total_bytes)})"
        )
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (once; only where something was shown)."""
        if self.active and self._last_draw > float("-inf"):  # something was drawn
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
        self.active = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
