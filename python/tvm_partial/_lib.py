# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Loading ``libtvm_partial.so``; the ``tvm.backends`` hook that loads it at ``import tvm``.

Loading the library registers its globals (``runtime.PartialApply``, ``runtime.PartialApplyModule``,
``runtime.PartialApplyBindings``, the loader ``ffi.Module.load_from_bytes.partial_apply`` and the
``tvm_partial.*`` ones); the Python code reaches them through ``_ffi_api`` only.
This module imports nothing from ``tvm``: the hook runs while ``tvm`` itself is being imported.
"""

from __future__ import annotations

import tvm_ffi
from tvm_ffi.libinfo import load_lib_module

LIB = load_lib_module("tvm-partial", "tvm_partial")


# The C++ loader raises FileNotFoundError (a weights file that does not exist): the Python type.
if "FileNotFoundError" not in tvm_ffi.core.ERROR_NAME_TO_TYPE:
    tvm_ffi.register_error("FileNotFoundError", FileNotFoundError)


def _tvm_backend_hook() -> None:
    """Entry point of the ``tvm.backends`` group: importing this module loaded the library."""
