# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Every snippet in README.md and docs/*.md runs, or says why not.

A file's ```python blocks run in order in one namespace (a block may use what an earlier one made),
in a fresh interpreter in an empty folder; its ```bash / ```sh / ```console blocks run there too, in
their place among the Python blocks (a `tvm-partial` command on an artifact an earlier block wrote).
A block that cannot run here is preceded by `<!-- not run: REASON -->`; C++ and CMake blocks always
are (the reason names the test that compiles the same code, if one does). Text blocks (``` or
```text: outputs, formats, signatures) are not code. docs/errors.md rows run in test_errors_doc.py.

Snippets stay fast: one that builds GiB-size weights is either marked not run, or preceded by
`<!-- scaled in the test: NAME = EXPR -->`, which runs it with its line `NAME = ...` replaced by
`NAME = EXPR` (`SIZE = 16 * 2**20` for a `SIZE = 2**30` the reader sees).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from helpers import run_json

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PYTHON = {"python"}
SHELL = {"bash", "sh", "console"}
COMPILED = {"cpp", "c", "cmake"}
TEXT = {"", "text"}

_FENCE = re.compile(r"^```(\S*)\n(.*?)^```[ \t]*$", flags=re.S | re.M)
_MARK = re.compile(r"<!-- not run: ((?:(?!-->).)*?)\s*-->\s*\Z", flags=re.S)
_SCALED = re.compile(r"<!-- scaled in the test: (\w+) = ((?:(?!-->).)*?)\s*-->\s*\Z", flags=re.S)


def blocks(path: Path) -> list:
    """[{"line", "lang", "code", "not_run", "scaled"}] for each fenced block: "not_run" the marker's
    reason, "scaled" the (NAME, EXPR) of a scaled-in-the-test marker."""
    text = path.read_text()
    out = []
    for m in _FENCE.finditer(text):
        mark = _MARK.search(text[: m.start()])
        scaled = _SCALED.search(text[: m.start()])
        out.append(
            {
                "line": text.count("\n", 0, m.start()) + 2,  # the block's first line of code
                "lang": m.group(1),
                "code": m.group(2),
                "not_run": " ".join(mark.group(1).split()) if mark else None,
                "scaled": (scaled.group(1), " ".join(scaled.group(2).split())) if scaled else None,
            }
        )
    return out


def _scale(block: dict) -> dict:
    """The block as the test runs it: its `NAME = ...` line replaced as its marker says."""
    if block["scaled"] is None:
        return block
    name, expr = block["scaled"]
    code, n = re.subn(
        rf"^{name} = .*$", f"{name} = {expr}  # scaled in the test", block["code"], count=1, flags=re.M
    )
    assert n == 1, f"line {block['line']}: the block has no line `{name} = ...` for its scaled marker"
    return {**block, "code": code}


def _runnable(path: Path) -> list:
    return [_scale(b) for b in blocks(path) if b["lang"] in PYTHON | SHELL and b["not_run"] is None]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# Runs in the fresh interpreter: argv[1] is the file's name, argv[2] a JSON file of its blocks.
_DRIVER = r"""
import json, subprocess, sys

name, todo = sys.argv[1], json.load(open(sys.argv[2]))
namespace = {"__name__": "__main__"}
ran = []
for block in todo:
    if block["lang"] == "python":
        # Padded so that a traceback names the line of the Markdown file.
        code = "\n" * (block["line"] - 1) + block["code"]
        exec(compile(code, name, "exec"), namespace)
    else:
        code = block["code"]
        if block["lang"] == "console":  # the commands are the lines after the prompt
            code = "\n".join(l[2:] for l in code.splitlines() if l.startswith("$ "))
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True)
        sys.stderr.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            sys.exit(f"{name}:{block['line']}: the {block['lang']} block exited with {proc.returncode}")
    ran.append(block["line"])
print(json.dumps(ran))
"""


@pytest.mark.slow  # each page's snippets in a fresh interpreter: 47 s of the default run's 330 here
@pytest.mark.parametrize("path", [p for p in FILES if _runnable(p)], ids=_name)
def test_doc_snippets_run(path, tmp_path):
    todo = _runnable(path)
    # The shell blocks run as a newcomer types them after the README's commands: in a fresh shell,
    # nothing activated, the environment the README made at .venv (here: this interpreter's).
    bindir = os.path.dirname(sys.executable)
    env = {"PATH": os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bindir)}
    if any(re.search(r"^import torch$", b["code"], flags=re.M) for b in todo):
        pytest.importorskip("torch")  # an optional extra: its page runs where it is installed
        # The interpreters the tests start see no torch (conftest.py); this page's does.
        kept = [
            p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if "tvm_partial_no_torch_" not in p
        ]
        env["PYTHONPATH"] = os.pathsep.join(kept)
    (tmp_path / "blocks.json").write_text(json.dumps(todo))
    work = tmp_path / "work"  # the snippets' folder: what they write, and nothing else
    work.mkdir()
    (work / ".venv").symlink_to(Path(bindir).parent)
    ran = run_json(
        f"import os\nos.chdir({str(work)!r})\n" + _DRIVER, _name(path), str(tmp_path / "blocks.json"), env=env
    )
    assert ran == [b["line"] for b in todo]  # every block without a marker ran, in order


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_block_runs_or_says_why_not(path):
    indented = re.search(r"^(?:[ \t]+```|[ \t]*~~~)", path.read_text(), flags=re.M)
    assert not indented, f"{_name(path)}: an indented or ~~~ fence is not seen here: start blocks at column 0"
    for block in blocks(path):
        where = f"{_name(path)}:{block['line']}"
        lang = block["lang"]
        assert lang in PYTHON | SHELL | COMPILED | TEXT, (
            f"{where}: ```{lang}: add it to a kind in test_docs.py"
        )
        if lang in COMPILED:
            assert block["not_run"], f"{where}: a ```{lang} block needs <!-- not run: REASON -->"
        if block["not_run"] is not None:
            assert len(block["not_run"]) > 10, f"{where}: say why the block is not run"


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_every_marker_stands_before_a_block(path):
    text = path.read_text()
    for m in re.finditer(r"<!-- (?:not run|scaled in the test):.*?-->", text, flags=re.S):
        assert re.match(r"\s*\n```", text[m.end() :]), (
            f"{_name(path)}: {m.group(0)[:60]} is not before a block"
        )


def test_parser_sees_markers_and_languages(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("a\n\n```python\nx = 1\n```\n\n<!-- not run: needs a\n GPU here -->\n```bash\nls\n```\n")
    assert blocks(doc) == [
        {"line": 4, "lang": "python", "code": "x = 1\n", "not_run": None, "scaled": None},
        {"line": 10, "lang": "bash", "code": "ls\n", "not_run": "needs a GPU here", "scaled": None},
    ]


def test_scaled_marker_replaces_the_named_line(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("<!-- scaled in the test: SIZE = 16 * 2**20 -->\n```python\nSIZE = 2**30\nw = SIZE\n```\n")
    (block,) = blocks(doc)
    assert block["scaled"] == ("SIZE", "16 * 2**20")
    assert _scale(block)["code"] == "SIZE = 16 * 2**20  # scaled in the test\nw = SIZE\n"
    doc.write_text("<!-- scaled in the test: N = 1 -->\n```python\nSIZE = 2**30\n```\n")
    with pytest.raises(AssertionError, match=r"no line `N = \.\.\.`"):
        _scale(blocks(doc)[0])


def test_readme_index_links_every_doc():
    readme = (ROOT / "README.md").read_text()
    index = readme[readme.index("## Docs") : readme.index("## First use")]
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", index))
    assert linked == {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}


@pytest.mark.skipif(
    not (ROOT / "python" / "tvm_partial").is_dir(),
    reason="the package's source is not in this tree (CI's run against the installed wheel)",
)
def test_design_names_every_global_and_only_those():
    """docs/design.md's page of verbs names each global the library registers, and no other."""
    text = (ROOT / "docs" / "design.md").read_text()
    page = text[text.index("## Layers and verbs") :]
    page = page[: page.index("\n## ", 3)]
    named = set(re.findall(r"\b((?:runtime|tvm_partial)\.[A-Z]\w+)", page))
    registered = set(_registered())
    assert named == registered, (sorted(named - registered), sorted(registered - named))


def _registered() -> list[str]:
    import tvm_ffi

    import tvm_partial  # noqa: F401  (registers the globals)

    prefixes = ("tvm_partial.", "runtime.PartialApply")
    skip = ("tvm_partial.embedded_copy.",)
    return [
        n
        for n in tvm_ffi.registry.list_global_func_names()
        if n.startswith(prefixes) and not n.startswith(skip)
    ]


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set:
    text = _FENCE.sub("", path.read_text())  # a "# comment" in a code block is no heading
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_slug_is_githubs():
    assert _slug("Relax models: BindParams, `.so` + `.npz`, tvm-partial (`bench_relax.py`)") == (
        "relax-models-bindparams-so--npz-tvm-partial-bench_relaxpy"
    )


@pytest.mark.parametrize("path", [*FILES, ROOT / "CHANGELOG.md"], ids=_name)
def test_links_reach_their_page_and_heading(path):
    """Every relative link of the page names a file that exists, and a heading of it after `#`."""
    text = re.sub(r"`[^`]*`", "", _FENCE.sub("", path.read_text()))  # code is not a link
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{_name(path)} links {target}: no such file"
        if anchor:
            assert anchor in _anchors(linked), f"{_name(path)} links {target}: no such heading"
