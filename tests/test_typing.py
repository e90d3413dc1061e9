# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Types: the package is typed (py.typed, the public API annotated), the typed stubs of the
registered globals name exactly what the library registers, and mypy is clean on the package
and the tests. mypy's cache lives in build/ (pyproject's [tool.mypy]), so a rerun takes seconds."""

from __future__ import annotations

import ast
import difflib
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tvm_ffi
from tvm_ffi.registry import get_global_func_metadata, list_global_func_names

import tvm_partial
from tvm_partial import _ffi_api, config

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "tvm_partial"


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed (it is in the test extra)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_package_ships_py_typed():
    # scikit-build-core puts every file of the folders in wheel.packages into the wheel.
    assert (PACKAGE / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'wheel.packages = ["python/tvm_partial"]' in pyproject
    assert "wheel.exclude" not in pyproject


def test_an_installed_copy_is_typed_through_py_typed(tmp_path):
    """PEP 561: a checker reads an installed package's annotations only when it carries
    py.typed. The package is copied into the site-packages of an empty virtual environment
    (what installing the wheel does), with and without the marker."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    (site / "tvm_ffi").symlink_to(Path(tvm_ffi.__file__).parent)
    shutil.copytree(PACKAGE, site / "tvm_partial", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "use.py").write_text(
        "import tvm_ffi\nimport tvm_partial\n\n\n"
        "def use(f: tvm_ffi.Function) -> None:\n    reveal_type(tvm_partial.partial(f, {1: 2.0}))\n"
    )

    def revealed() -> str:
        proc = _mypy(
            "--python-executable",
            str(tmp_path / "venv" / "bin" / "python"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-incremental",  # discovery must not come from an earlier run's cache
            str(tmp_path / "use.py"),
        )
        found = re.findall(r'Revealed type is "(.*)"', proc.stdout)
        assert len(found) == 1, proc.stdout + proc.stderr
        return found[0]

    assert revealed() == "tvm_ffi.core.Function"
    (site / "tvm_partial" / "py.typed").unlink()
    assert revealed() == "Any"  # without the marker the package is untyped to the checker


def test_ffi_api_names_every_global_the_library_registers():
    stubbed = {
        node.name
        for node in ast.walk(ast.parse(Path(_ffi_api.__file__).read_text()))
        if isinstance(node, ast.FunctionDef)
    }
    names = set(list_global_func_names())
    own = {n.split(".", 1)[1] for n in names if n.startswith("tvm_partial.") and n.count(".") == 1}
    assert stubbed == own | set(_ffi_api.OTHER_GLOBALS)
    assert set(_ffi_api.OTHER_GLOBALS.values()) <= names
    for name in stubbed:  # each is bound at run time to the registered global
        assert isinstance(getattr(_ffi_api, name), tvm_ffi.Function), name
    assert tvm_partial._ffi_api.PartialApply is _ffi_api.PartialApply


def _stubgen() -> Path:
    stubgen = Path(sys.executable).with_name("tvm-ffi-stubgen")
    if not stubgen.is_file():
        found = shutil.which("tvm-ffi-stubgen")
        if found is None:
            pytest.skip("the tvm-ffi-stubgen entry point (apache-tvm-ffi) is not installed")
        stubgen = Path(found)
    return stubgen


def test_ffi_api_stubs_are_what_stubgen_generates(tmp_path):
    """The stub blocks of _ffi_api.py are tvm-ffi-stubgen's output for the library as built: run
    it (docs/typing.md's command) on a copy and compare. Fails when a registration changes and
    the stubs were not regenerated, or when the registrations lose their type schema. A second
    file asks for a global/runtime block: stubgen accepts the hand-written schema of the packed
    globals and can say no more than their return type, which is why they are typed by hand."""
    library = config.libdir() / "libtvm_partial.so"
    copy = tmp_path / "_ffi_api.py"
    shutil.copyfile(_ffi_api.__file__, copy)
    runtime = tmp_path / "runtime_api.py"
    runtime.write_text("# tvm-ffi-stubgen(begin): global/runtime\n# tvm-ffi-stubgen(end)\n")
    proc = subprocess.run(
        [str(_stubgen()), "--dlls", str(library), str(copy), str(runtime)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no type schema: tvm_partial." not in proc.stdout, proc.stdout
    assert "no type schema: runtime.PartialApply" not in proc.stdout, proc.stdout
    source = Path(_ffi_api.__file__).read_text()
    diff = "".join(difflib.unified_diff(source.splitlines(True), copy.read_text().splitlines(True)))
    assert diff == "", "regenerate the stubs (docs/typing.md):\n" + diff
    generated = runtime.read_text()
    assert "    def PartialApply(*args: Any) -> Callable[..., Any]: ...\n" in generated, generated
    assert "    def PartialApplyModule(*args: Any) -> Module: ...\n" in generated, generated
    # every tvm_partial.* global is in the generated block, with its parameters' types
    block = source.split("# tvm-ffi-stubgen(begin): global/tvm_partial")[1].split("# tvm-ffi-stubgen(end)")[0]
    own = {n.split(".", 1)[1] for n in list_global_func_names() if re.fullmatch(r"tvm_partial\.\w+", n)}
    assert set(re.findall(r"^    def (\w+)\(", block, re.M)) == own
    assert "    def SaveToBytes(_0: Module, /) -> bytes: ...\n" in block


def test_registrations_carry_their_type_schema():
    """What stubgen reads: every global of the library records its signature, the typed ones
    with their parameters, the packed runtime.PartialApply(Module) with the return type alone."""
    names = [f"tvm_partial.{n}" for n in dir(_ffi_api) if isinstance(getattr(_ffi_api, n), tvm_ffi.Function)]
    names = [n for n in names if n.split(".")[1] not in _ffi_api.OTHER_GLOBALS]
    names += list(_ffi_api.OTHER_GLOBALS.values())
    assert len(names) >= 15  # the globals found, not an empty list by mistake
    schemas = {n: json.loads(get_global_func_metadata(n)["type_schema"]) for n in names}
    assert schemas["tvm_partial.SaveToBytes"] == {
        "type": "ffi.Function",
        "named_args": {"return": [{"type": "ffi.Bytes"}], "params": [{"type": "ffi.Module"}]},
    }
    assert schemas["runtime.PartialApply"] == {
        "type": "ffi.Function",
        "named_args": {"return": [{"type": "ffi.Function"}]},
    }
    assert schemas["runtime.PartialApplyModule"]["named_args"] == {"return": [{"type": "ffi.Module"}]}
    packed = {"runtime.PartialApply", "runtime.PartialApplyModule"}
    assert all("params" in schemas[n]["named_args"] for n in names if n not in packed)


# A user's code against the public API: what each call gives, to the type checker.
GOOD = """
import numpy as np
import tvm_ffi
import tvm_partial


def use(exe: tvm_ffi.Module, f: tvm_ffi.Function, w: np.ndarray) -> None:
    g = tvm_partial.partial(f, {1: w})
    pm = tvm_partial.partial(exe, {"weights": w}, signature=["x", "weights", "out"])
    reveal_type(g)  # R: tvm_ffi.core.Function
    reveal_type(pm)  # R: tvm_ffi.module.Module
    reveal_type(tvm_partial.bindings(g))  # R: dict[int, Any]
    reveal_type(tvm_partial.bindings(pm))  # R: dict[str, dict[int, Any]]
    reveal_type(tvm_partial.param_names(g))  # R: list[str]
    reveal_type(tvm_partial.param_names(pm))  # R: dict[str, list[str]]
    reveal_type(tvm_partial.rebind(pm, weights=w))  # R: tvm_ffi.module.Module
    reveal_type(tvm_partial.load("deploy.so"))  # R: tvm_ffi.module.Module
    reveal_type(tvm_partial.save_to_bytes(pm))  # R: bytes
    reveal_type(tvm_partial.inspect("deploy.so"))  # R: dict[str, Any]
    params: dict[str, np.ndarray] = {"weights": w}
    tvm_partial.partial(exe, device="cpu", **params)
    tvm_partial.partial(exe, **tvm_partial.open_weights("w.safetensors"))
    tvm_partial.partial(lambda x, y: None, {1: 2.0})
    tvm_partial.export_library(pm, "deploy.so", self_contained=True)
    tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(pm), wrapped=exe)
"""

# Wrong uses the annotations can express: each marked line must be flagged with that code.
BAD = """
import numpy as np
import tvm_ffi
import tvm_partial


def misuse(f: tvm_ffi.Function, w: np.ndarray) -> None:
    tvm_partial.partial("main", {1: w})  # E: call-overload
    tvm_partial.partial(f, {1.5: w})  # E: arg-type
    tvm_partial.export_library("model.so", "deploy.so")  # E: arg-type
    tvm_partial.save_to_bytes(f)  # E: arg-type
    tvm_partial.rebind(f, {1: w})  # E: arg-type
    tvm_partial.load(42)  # E: arg-type
    pm: tvm_ffi.Module = tvm_partial.partial(f, {1: w})  # E: assignment
"""


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One mypy run, with pyproject's [tool.mypy] (and its cache), on the files it names and the
    two snippets (user code: default strictness, tvm without types)."""
    files = re.search(r"^files = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert files is not None
    folder = tmp_path_factory.mktemp("snippets")
    (folder / "snippet_good.py").write_text(textwrap.dedent(GOOD))
    (folder / "snippet_bad.py").write_text(textwrap.dedent(BAD))
    snippets = [str(folder / "snippet_good.py"), str(folder / "snippet_bad.py")]
    proc = _mypy(*re.findall(r'"([^"]+)"', files[1]), *snippets)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 1: errors found, 2: a crash
    return proc


def _reported(proc: subprocess.CompletedProcess[str], name: str) -> list[tuple[int, str, str]]:
    """[(line, "error" or "note", text)] that mypy reported for snippet ``name``."""
    found = []
    for line in proc.stdout.splitlines():
        m = re.match(rf".*[/\\]snippet_{name}\.py:(\d+): (error|note): (.*)$", line)
        if m:
            found.append((int(m[1]), m[2], m[3]))
    return found


def test_mypy_is_clean_on_the_package_and_the_tests(mypy_run):
    proc = mypy_run
    assert proc.stderr == ""  # no configuration warnings
    checked = re.search(r"\(checked (\d+) source files\)", proc.stdout)
    assert checked is not None and int(checked[1]) >= 40, proc.stdout  # the whole package and tests
    # (mypy may name a snippet by the folder of the run that cached it: match the file's name)
    outside = [
        line
        for line in proc.stdout.splitlines()
        if ": error:" in line and not re.match(r".*[/\\]snippet_(good|bad)\.py:", line)
    ]
    assert outside == [], proc.stdout


def _marked(source: str, marker: str) -> dict[int, str]:
    lines = textwrap.dedent(source).splitlines()
    return {i + 1: line.split(marker, 1)[1].strip() for i, line in enumerate(lines) if marker in line}


def test_user_code_type_checks_with_precise_types(mypy_run):
    reported = _reported(mypy_run, "good")
    assert [e for e in reported if e[1] == "error"] == []
    revealed = {line: text for line, kind, text in reported if text.startswith("Revealed type")}
    expected = _marked(GOOD, "# R:")
    assert {line: f'Revealed type is "{t}"' for line, t in expected.items()} == revealed


def test_wrong_uses_are_flagged(mypy_run):
    flagged = {
        (line, re.findall(r"\[([a-z-]+)\]$", text)[0])
        for line, kind, text in _reported(mypy_run, "bad")
        if kind == "error"
    }
    assert flagged == set(_marked(BAD, "# E:").items())
