# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Write the figures of docs/benchmarks.md from the JSON the benchmarks wrote (benchmarks/results/).

    python scripts/render_benchmarks.py          # rewrite the generated parts of docs/benchmarks.md
    python scripts/render_benchmarks.py --check  # exit 1 when docs/benchmarks.md is out of date

The page's prose is written by hand; its figures are not. Each generated part sits between

    <!-- benchmark: NAME [TABLE,TABLE...] -->
    ...
    <!-- end benchmark -->

and is rendered from benchmarks/results/NAME.json (every table of it, or the ones named): the
command that ran, its date, wall time and load average, then each table as the script printed it
and the script's verdict lines. `<!-- benchmark machines -->` ... `<!-- end benchmark -->` lists
the machine and software of every result file. So the figures on the page are those of the
committed runs, and cannot contradict each other (tests/test_benchmarks.py checks the page is what
this script writes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results"

_REGION = re.compile(
    r"(<!-- benchmark(?:: (?P<name>[\w-]+)(?: (?P<tables>[\w,]+))?| (?P<machines>machines)) -->\n)"
    r"(?P<body>.*?)"
    r"(<!-- end benchmark -->)",
    flags=re.S,
)


def load_results(folder: Path = RESULTS) -> dict:
    """{name: the JSON of benchmarks/results/NAME.json}."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def markdown_table(t: dict) -> str:
    header = "| " + " | ".join(_cell(h) for h in t["header"]) + " |"
    rule = "| " + " | ".join("---:" if a == ">" else "---" for a in t["aligns"]) + " |"
    rows = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t["rows"]]
    return "\n".join([header, rule, *rows])


def _when(result: dict) -> str:
    date = result["date"].replace("T", " ").replace("+00:00", " UTC")
    start, end = result["load_average_start"][0], result.get("load_average_end", [None])[0]
    load = f"load average {start:.1f} at the start" + (f", {end:.1f} at the end" if end is not None else "")
    return f"{date}, {result['wall_s']:,.0f} s, {load}"


def render_result(name: str, result: dict, tables: list | None) -> str:
    """The generated part for one result file: its command and date, its tables, its notes."""
    chosen = [t for t in result["tables"] if tables is None or t["name"] in tables]
    missing = set(tables or []) - {t["name"] for t in result["tables"]} - {"notes"}
    if missing:
        raise SystemExit(f"benchmarks/results/{name}.json has no table {sorted(missing)}")
    out = [f"`{result['command']}` ({_when(result)}):", ""]
    for t in chosen:
        if "text" in t:
            out += ["```text", t["text"], "```", ""]
            continue
        if t["title"]:
            out += [f"*{t['title'].removeprefix('# ')}*", ""]  # a title printed as a comment line
        out += [markdown_table(t), ""]
    if tables is None or "notes" in (tables or []):
        out += [f"- {note}" for note in result["notes"]]
        if result["notes"]:
            out.append("")
    return "\n".join(out)


def render_machines(results: dict) -> str:
    """One row per distinct machine and software of the result files."""
    keys = ["cores", "cpu", "memory_gib", "system", "python", "apache-tvm", "apache-tvm-ffi", "commit"]
    seen: dict = {}
    for name, result in results.items():
        m = result["machine"]
        seen.setdefault(tuple(m.get(k) for k in keys), []).append(name)
    out = [
        "| results | cores | CPU | memory | system | Python | apache-tvm | apache-tvm-ffi | tvm-partial at |",
        "| --- | ---: | --- | ---: | --- | --- | --- | --- | --- |",
    ]
    for values, names in seen.items():
        cores, cpu, mem, system, python, tvm, ffi, commit = values
        out.append(
            f"| {', '.join(names)} | {cores} | {cpu} | {mem} GiB | {system} | {python} | {tvm} | {ffi} | {commit} |"
        )
    return "\n".join(out) + "\n"


def render(text: str, results: dict) -> str:
    """`text` with every generated part rendered from `results`."""

    def replace(m: re.Match) -> str:
        if m.group("machines"):
            body = render_machines(results)
        else:
            name = m.group("name")
            if name not in results:
                raise SystemExit(
                    f"docs/benchmarks.md refers to benchmarks/results/{name}.json, which is missing"
                )
            tables = m.group("tables").split(",") if m.group("tables") else None
            body = render_result(name, results[name], tables)
        return m.group(1) + "\n" + body + "\n" + m.group(6)

    return _REGION.sub(replace, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is out of date")
    args = parser.parse_args(argv)
    text = PAGE.read_text()
    new = render(text, load_results())
    if args.check:
        if new != text:
            print(
                "docs/benchmarks.md is out of date: run python scripts/render_benchmarks.py", file=sys.stderr
            )
            return 1
        return 0
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
