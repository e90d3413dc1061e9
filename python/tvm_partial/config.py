# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Where the installed C++ parts are: ``python -m tvm_partial.config --cmakedir`` and friends.

Used by C++ projects: ``cmake -Dtvm_partial_DIR=$(python -m tvm_partial.config --cmakedir)``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path


def libdir() -> Path:
    """The folder holding ``libtvm_partial.so``, found in the installed distribution's file list."""
    for file in metadata.distribution("tvm-partial").files or []:
        if file.name == "libtvm_partial.so":
            return Path(file.locate()).resolve().parent
    raise RuntimeError("libtvm_partial.so is not in the installed tvm-partial distribution")


def includedir() -> Path:
    return libdir().parent / "include"


def cmakedir() -> Path:
    return libdir() / "cmake" / "tvm_partial"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tvm_partial.config", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--cmakedir", action="store_true", help="folder of tvm_partial-config.cmake")
    group.add_argument("--includedir", action="store_true", help="folder holding tvm_partial/partial_apply.h")
    group.add_argument("--libdir", action="store_true", help="folder holding libtvm_partial.so")
    args = parser.parse_args(argv)
    print(cmakedir() if args.cmakedir else includedir() if args.includedir else libdir())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
