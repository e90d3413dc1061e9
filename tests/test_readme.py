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


def _commands() -> list[str]:
    return [line.split("#")[0].strip() for line in _blocks("bash")[0].strip().splitlines()]


def test_readme_starts_with_demo_and_test_commands():
    demo_command, test_command = _commands()
    assert demo_command.endswith("tvm-partial demo")
    assert test_command.endswith("-m pytest -q")
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    # .ci/run runs exactly the README's two commands, the demo's first, in a .venv it removed before.
    assert demo_command in ci and test_command in ci
    assert ci.index("rm -rf .venv") < ci.index(demo_command) < ci.index(test_command)


def test_readme_commands_share_one_virtual_environment():
    """The first command makes .venv (a system pip refuses to install: externally-managed-
    environment); the second reuses it, and neither calls a bare pip or python."""
    demo_command, test_command = _commands()
    assert demo_command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install . &&")
    assert "venv" not in test_command.replace(".venv/bin/", "")
    for command in (demo_command, test_command):
        steps = [step.strip() for step in command.split("&&")]
        assert all(step.startswith((".venv/bin/", "python3 -m venv .venv")) for step in steps), steps
    assert test_command.startswith('.venv/bin/python -m pip install ".[test]" &&')


def test_readme_says_what_the_commands_install_and_how_long_they_take():
    intro = README[: README.index("## Docs")]
    for said in (
        "makes `.venv`",
        "same `.venv`",
        "python3-venv",
        'pip install ".[torch]"',
        "Measured from a fresh clone",
    ):
        assert said in intro, said
    assert len(re.findall(r"took \d+ min", intro)) == 2, "each command's measured time"
    assert len(re.findall(r"\d+ MB", intro)) >= 2, "the size of .venv after each"
