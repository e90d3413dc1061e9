# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The benchmarks' harness: the machine, interleaved timing with medians, fresh processes, tables,
and the JSON that ``--json PATH`` writes (scripts/render_benchmarks.py renders docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from itertools import repeat
from pathlib import Path

median = statistics.median
HERE = Path(__file__).resolve().parent


def status(key: str, pid: int | str = "self") -> int:
    """A /proc/PID/status field in bytes (VmRSS, VmHWM, RssAnon, RssFile), 0 where missing."""
    with open(f"/proc/{pid}/status") as f:
        return next((int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":")), 0)


def reset_peak(pid: int | str = "self") -> None:
    """Restart VmHWM from the current RSS (Linux >= 4.0), so earlier peaks do not count."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def child(code: str, *argv, env: dict | None = None, fail_ok: bool = False) -> dict:
    """The JSON `code` prints last, run in a fresh interpreter with json, sys, time, status and
    reset_peak imported. A failure ends the run, or with `fail_ok` is {"error": its own line}."""
    code = "import json, sys, time\nfrom _common import reset_peak, status\n" + code
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True, env=env
    )
    if proc.returncode == 0:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    if not fail_ok:
        raise SystemExit(f"a fresh process failed ({argv[:1]}):\n{proc.stderr[-3000:]}")
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()] or [f"exit {proc.returncode}"]
    how = [line for line in lines if "relocation truncated" in line or "Error" in line][-1:] or lines[-1:]
    return {"error": (f"killed by signal {-proc.returncode}: " if proc.returncode < 0 else "") + how[0][:300]}


def _loop(arity: int):
    """A timing loop that calls fn with `arity` fixed arguments and nothing else in between."""
    names, scope = "".join(f"a{i}, " for i in range(arity)), {"repeat": repeat}
    exec(f"def loop(fn, {names}n):\n    for _ in repeat(None, n):\n        fn({names[:-2]})\n", scope)
    return scope["loop"]


_LOOPS = [_loop(k) for k in range(5)]


def interleaved(rows, calls: int, repeats: int) -> tuple[list[list[float]], float]:
    """ns per call of each row (label, fn, args), `repeats` samples of `calls` calls: every row once a
    repeat, in an order rotated (reversed every other repeat), gc off; and the empty loop's ns."""
    samples: list[list[float]] = [[] for _ in rows]
    empty = []
    for _, fn, args in rows:  # warm-up
        _LOOPS[len(args)](fn, *args, max(calls // 10, 1))
    enabled = gc.isenabled()
    gc.disable()
    try:
        for rep in range(repeats):
            order = [*range(rep % len(rows), len(rows)), *range(rep % len(rows))]
            for i in reversed(order) if rep % 2 else order:
                _, fn, args = rows[i]
                start = time.perf_counter_ns()
                _LOOPS[len(args)](fn, *args, calls)
                samples[i].append((time.perf_counter_ns() - start) / calls)
            start = time.perf_counter_ns()
            for _ in repeat(None, calls):
                pass
            empty.append((time.perf_counter_ns() - start) / calls)
    finally:
        if enabled:
            gc.enable()
    return samples, median(empty)


def machine_info() -> dict:
    """The machine and software of a run, as docs/benchmarks.md lists them."""
    proc = {}
    for name in ("cpuinfo", "meminfo"):
        with open(f"/proc/{name}") as f:
            fields = [[v.strip() for v in line.split(":", 1)] for line in f if ":" in line]
            proc.update(reversed(fields))  # the first of each: "model name" of CPU 0
    info = {"cores": os.cpu_count(), "cpu": proc.get("model name", platform.processor() or "unknown CPU")}
    info["memory_gib"] = round(int(proc["MemTotal"].split()[0]) / 2**20, 1)
    info.update(system=f"{platform.system()} {platform.release()}", python=platform.python_version())
    for dist in ("apache-tvm", "apache-tvm-ffi", "tvm-partial"):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = None
    git = ["git", "-C", str(HERE.parent)]
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    # A change to the code measured marks the commit, not the docs or results written meanwhile.
    code = ["cpp", "python", "benchmarks", ":!benchmarks/results", "CMakeLists.txt", "pyproject.toml"]
    changed = subprocess.run(
        [*git, "status", "--porcelain", "-uno", "--", *code], capture_output=True, text=True
    )
    info["commit"] = (head + ("+changes" if changed.stdout.strip() else "")) or None
    return info


def machine() -> str:
    """One line for the head of a run's output."""
    m = machine_info()
    return f"{m['cores']} cores, {m['cpu']}, Python {m['python']}, apache-tvm {m['apache-tvm']}"


def parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every benchmark takes: --quick (a smoke run) and --json PATH."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny sizes and counts: a smoke run, not figures")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON (for render_benchmarks.py)")
    return p


class Report:
    """What a benchmark prints, kept as data for ``--json PATH`` with the run's machine, date,
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

    def table(self, name: str, title: str, header: str, rows, aligns=None, values=None) -> None:
        """Print `title` and the table (`header`: its cells split by "|"); record both, and `values`,
        the numbers behind the cells."""
        cells = header.split("|")
        aligns = list(aligns or ["<"] + [">"] * (len(cells) - 1))
        rows = [[str(c) for c in r] for r in rows]
        widths = [max(len(c) for c in col) for col in zip(cells, *rows)]
        print(f"{title}\n" if title else "", end="")
        for line in (cells, ["-" * w for w in widths], *rows):
            print("  ".join(f"{c:{a}{w}}" for c, a, w in zip(line, aligns, widths)).rstrip())
        table = {"name": name, "title": title.strip(), "header": cells, "rows": rows, "aligns": aligns}
        self.data["tables"].append({**table, **({"values": values} if values is not None else {})})

    def text(self, name: str, text: str) -> None:
        """Print a program's output as it is (the C++ benchmark prints its own tables); record it."""
        print(text, end="" if text.endswith("\n") else "\n")
        self.data["tables"].append({"name": name, "text": text.rstrip("\n")})

    def note(self, text: str) -> None:
        """Print a line of the result (a verdict, a failure) and record it."""
        print(text)
        self.data["notes"].append(text)

    def write(self, path: str | None) -> None:
        """Write the JSON to `path` (nothing when None), with the wall time of the whole run."""
        if path is not None:
            self.data["wall_s"] = round(time.monotonic() - self._start, 1)
            self.data["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(self.data, indent=1) + "\n")


def verdict(holds: bool) -> str:
    return "holds" if holds else "does not hold"


def parse_size(text: str) -> int:
    """'1KiB', '16M', '1GiB', '4096' -> bytes (binary units)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(I?B)?\s*", text.upper())
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 1KiB, 16MiB, 1GiB)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def format_size(nbytes: float) -> str:
    unit, scale = next(
        ((u, s) for u, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)) if nbytes >= s), ("B", 1)
    )
    value = nbytes / scale
    return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"


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
