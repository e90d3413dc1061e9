# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Print the test extra's requirements (pyproject.toml), one a line, without the packages named
on the command line: what a CI stage installs when the tests it runs never import those.
    python3 scripts/test_deps.py ruff mypy ..."""

import re
import sys
from pathlib import Path

import tomllib

pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
extra = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]["test"]
unused = set(sys.argv[1:])
print("\n".join(d for d in extra if re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0] not in unused))
