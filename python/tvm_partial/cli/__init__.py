# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-partial`` command: ``main`` parses arguments and returns the exit code; ``text`` formats
``inspect`` and ``verify`` output; ``demo/`` holds the demos, which import ``text`` and nothing above it."""

from .main import main

__all__ = ["main"]
