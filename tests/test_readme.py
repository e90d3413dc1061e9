# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The README's commands and snippets are what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import run_python

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_readme_starts_with_demo_and_test_commands():
    commands = [line.split("#")[0].strip() for line in _blocks("bash")[0].strip().splitlines()]
    assert commands[0].endswith("tvm-partial demo")
    test_command = commands[1]
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert test_command in ci  # .ci/run runs exactly the README's test command


def test_readme_python_snippets_run(tmp_path):
    code = "\n".join(_blocks("python"))
    proc = run_python(f"import os\nos.chdir({str(tmp_path)!r})\n" + code)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "axpb.so").exists()
