# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Loads ``libtvm_partial.so`` (its globals reached through ``_ffi_api`` only); also the ``tvm.backends``
hook, so it imports nothing from ``tvm``: the hook runs while ``tvm`` itself is being imported."""

from __future__ import annotations

import tvm_ffi
from tvm_ffi.libinfo import load_lib_module

LIB = load_lib_module("tvm-partial", "tvm_partial")


# The C++ loader raises FileNotFoundError for a missing weights file: map it to Python's.
if "FileNotFoundError" not in tvm_ffi.core.ERROR_NAME_TO_TYPE:
    tvm_ffi.register_error("FileNotFoundError", FileNotFoundError)


def _tvm_backend_hook() -> None:
    """Entry point of the ``tvm.backends`` group: importing this module loaded the library."""
