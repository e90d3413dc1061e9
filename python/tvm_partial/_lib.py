# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Loading ``libtvm_partial.so``; the ``tvm.backends`` hook that loads it at ``import tvm``.

Loading the library registers the globals ``runtime.PartialApply``, ``runtime.PartialApplyModule``,
``runtime.PartialApplyBindings`` and the loader ``ffi.Module.load_from_bytes.partial_apply``.
This module imports nothing from ``tvm``: the hook runs while ``tvm`` itself is being imported.
"""

from __future__ import annotations

import tvm_ffi
from tvm_ffi.libinfo import load_lib_module

LIB = load_lib_module("tvm-partial", "tvm_partial")

from . import _ffi_api  # noqa: E402  (needs the library loaded)

# The C++ loader raises FileNotFoundError (a weights file that does not exist): the Python type.
if "FileNotFoundError" not in tvm_ffi.core.ERROR_NAME_TO_TYPE:
    tvm_ffi.register_error("FileNotFoundError", FileNotFoundError)

# The globals the Python code calls, typed by _ffi_api's stubs.
partial_apply = _ffi_api.PartialApply
partial_apply_module = _ffi_api.PartialApplyModule
partial_apply_bindings = _ffi_api.PartialApplyBindings
param_names = _ffi_api.ParamNames
is_partial = _ffi_api.IsPartial
aligned_copy = _ffi_api.AlignedCopy
describe_bytes = _ffi_api.DescribeBytes
save_to_bytes = _ffi_api.SaveToBytes
load_from_bytes = _ffi_api.LoadFromBytes
load_with_weights = _ffi_api.LoadWithWeights


def _tvm_backend_hook() -> None:
    """Entry point of the ``tvm.backends`` group: importing this module loaded the library."""
