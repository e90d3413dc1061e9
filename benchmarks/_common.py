# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the benchmark scripts: the machine, medians, tables, sizes, and the JSON
that ``--json PATH`` writes (``scripts/render_benchmarks.py`` turns it into docs/benchmarks.md)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path


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


def machine_info() -> dict:
    """The machine and software of a run, as data: what docs/benchmarks.md says they ran on."""
    info = {"cores": os.cpu_count(), "cpu": "unknown CPU", "memory_gib": None}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), info["cpu"]
            )
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        info["memory_gib"] = round(kib / 2**20, 1)
    except (OSError, StopIteration):
        pass
    info["system"] = f"{platform.system()} {platform.release()}"
    info["python"] = platform.python_version()
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("apache-tvm", "apache-tvm-ffi", "tvm-partial"):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = None
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        # Changes to the code measured (not to the docs written meanwhile) mark the commit.
        code = ["cpp", "python", "benchmarks", "CMakeLists.txt", "pyproject.toml"]
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", *code],
            capture_output=True,
            text=True,
        ).stdout.strip()
        info["commit"] = (commit + ("+changes" if dirty else "")) or None
    except OSError:
        info["commit"] = None
    return info


class Report:
    """What a benchmark prints, kept as data for ``--json PATH``: each table is printed as it is
    added (so the printed output stays as it was) and recorded with the run's machine, date,
    command, wall time and load average."""

    def __init__(self, script: str, argv: list | None = None, command: str | None = None):
        argv = sys.argv[1:] if argv is None else list(argv)
        self._start = time.monotonic()
        self.data = {
            "benchmark": Path(script).stem,
            "command": command or shlex.join(["python", f"benchmarks/{Path(script).name}", *argv]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "load_average_start": [round(v, 2) for v in os.getloadavg()],
            "tables": [],
            "notes": [],
        }

    def table(self, name: str, title: str, header, rows, aligns=None, values=None) -> None:
        """Print `title` and the table; record both. `values`: the raw numbers behind the cells
        (medians in ns or s, ratios), for other tools."""
        if title:
            print(title)
        print(table(header, rows, aligns))
        self.data["tables"].append(
            {
                "name": name,
                "title": title.strip(),
                "header": list(header),
                "rows": [[str(c) for c in r] for r in rows],
                "aligns": list(aligns or ["<"] + [">"] * (len(header) - 1)),
                **({"values": values} if values is not None else {}),
            }
        )

    def text(self, name: str, text: str) -> None:
        """Print a program's output as it is and record it (the C++ benchmarks print their own
        tables): rendered as a text block."""
        print(text, end="" if text.endswith("\n") else "\n")
        self.data["tables"].append({"name": name, "text": text.rstrip("\n")})

    def note(self, text: str) -> None:
        """Print a line of the result (a verdict, a failure) and record it."""
        print(text)
        self.data["notes"].append(text)

    def write(self, path: str | None) -> None:
        """Write the JSON to `path` (nothing when None), with the wall time of the whole run."""
        if path is None:
            return
        self.data["wall_s"] = round(time.monotonic() - self._start, 1)
        self.data["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(self.data, indent=1) + "\n")


def add_json_option(parser) -> None:
    parser.add_argument(
        "--json",
        metavar="PATH",
        help="also write the results as JSON (machine, date, command, tables) for scripts/render_benchmarks.py",
    )


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


if __name__ == "__main__":
    # run_cpp.sh --json PATH: `python _common.py PATH NAME COMMAND -- PROGRAM ARGS...` runs the
    # program, prints its output and writes it with the machine and date to PATH.
    path, name, command, dash, *program = sys.argv[1:]
    assert dash == "--", "usage: _common.py PATH NAME COMMAND -- PROGRAM [ARGS...]"
    report = Report(name, command=command)
    proc = subprocess.run(program, stdout=subprocess.PIPE, text=True)
    report.text("output", proc.stdout)
    if proc.returncode == 0:
        report.write(path)
    sys.exit(proc.returncode)
