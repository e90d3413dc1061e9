# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``tvm-partial demo``: ``conv2d`` (the forum's conv2d + bias) and ``relax`` (a frontend.nn model), each one
file meant to be read and copied, printing its own path; ``report`` prints the checks they share."""

from __future__ import annotations

from collections.abc import Callable


def report(checks: dict[str, bool], echo: Callable[[str], object] = print) -> int:
    """Print each check as [ok] or [FAIL]; the exit code: 0 when all passed."""
    for label, ok in checks.items():
        echo(f"[{'ok' if ok else 'FAIL'}] {label}")
    return 0 if all(checks.values()) else 1
