# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the benchmark scripts: the machine, medians, tables, sizes."""

from __future__ import annotations

import os
import platform
import re
import statistics


def machine() -> str:
    """'N cores, CPU model, Python x.y, tvm a.b, tvm-ffi c.d' for the header of every table."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = []
    for dist in ("apache-tvm", "apache-tvm-ffi", "tvm-partial"):
        try:
            from importlib.metadata import version

            versions.append(f"{dist} {version(dist)}")
        except Exception:  # not installed: leave it out
            pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, " + ", ".join(versions)


def median(samples) -> float:
    return statistics.median(samples)


def table(header, rows, aligns=None) -> str:
    """A plain-text table; `rows` are lists of already formatted cells."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    aligns = aligns or ["<"] + [">"] * (len(header) - 1)

    def line(cells):
        return "  ".join(f"{c!s:{a}{w}}" for c, a, w in zip(cells, aligns, widths)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    return "\n".join(out)


_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "MIB": 1 << 20,
    "G": 1 << 30,
    "GB": 1 << 30,
    "GIB": 1 << 30,
}


def parse_size(text: str) -> int:
    """'1KiB', '16M', '1GiB', '4096' -> bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 1KiB, 16MiB, 1GiB)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def format_size(nbytes: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{nbytes:.0f} B"


def format_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"
