# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The README's commands are what CI runs (its snippets run in tests/test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

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
