# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-partial`` command (``python -m tvm_partial``): ``main`` parses the arguments and
returns the exit code (``main.py``); ``text`` formats what ``inspect`` and ``verify`` print;
``demo/`` holds the demos (``conv2d``, ``relax``), which import ``text`` and nothing above it."""

from .main import main

__all__ = ["main"]
