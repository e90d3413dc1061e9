# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""What a maintainer checks before anything else: the license, its headers, and the linters."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPDX = "SPDX-License-Identifier: Apache-2.0"
SOURCE_FOLDERS = ["cpp", "python", "tests", "benchmarks", "examples", "scripts", "fuzz", "cmake", ".ci"]
CPP_FOLDERS = ["cpp", "examples", "benchmarks", "fuzz", "tests"]


def _sources() -> list[Path]:
    found = [ROOT / "CMakeLists.txt", ROOT / ".ci" / "run"]
    for folder in SOURCE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".cc", ".h", ".sh", ".cmake"} or path.name == "CMakeLists.txt":
                found.append(path)
    return sorted(set(found))


def test_license_file_is_apache_2():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_every_source_file_carries_the_license_header():
    sources = _sources()
    assert len(sources) > 80, "the source walk found too few files"
    missing = [str(p.relative_to(ROOT)) for p in sources if SPDX not in p.read_text()[:400]]
    assert missing == []


def _tool(name: str) -> str:
    """The tool from the test extra, beside this interpreter (or on PATH)."""
    beside = Path(sys.executable).with_name(name)
    path = str(beside) if beside.exists() else shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (it is in the test extra)")
    return path


def test_ruff_check_is_clean():
    proc = subprocess.run([_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean():
    proc = subprocess.run([_tool("ruff"), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_clang_format_is_clean():
    files = [
        str(p)
        for folder in CPP_FOLDERS
        for p in sorted((ROOT / folder).rglob("*"))
        if p.suffix in {".cc", ".h"} and "build" not in p.relative_to(ROOT).parts
    ]
    assert len(files) > 20
    proc = subprocess.run(
        [_tool("clang-format"), "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
