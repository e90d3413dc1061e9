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

# The C++ loader raises FileNotFoundError (a weights file that does not exist): the Python type.
if "FileNotFoundError" not in tvm_ffi.core.ERROR_NAME_TO_TYPE:
    tvm_ffi.register_error("FileNotFoundError", FileNotFoundError)

partial_apply = tvm_ffi.get_global_func("runtime.PartialApply")
partial_apply_module = tvm_ffi.get_global_func("runtime.PartialApplyModule")
partial_apply_bindings = tvm_ffi.get_global_func("runtime.PartialApplyBindings")
param_names = tvm_ffi.get_global_func("tvm_partial.ParamNames")
is_partial = tvm_ffi.get_global_func("tvm_partial.IsPartial")
aligned_copy = tvm_ffi.get_global_func("tvm_partial.AlignedCopy")
describe_bytes = tvm_ffi.get_global_func("tvm_partial.DescribeBytes")
save_to_bytes = tvm_ffi.get_global_func("tvm_partial.SaveToBytes")
load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
load_with_weights = tvm_ffi.get_global_func("tvm_partial.LoadWithWeights")


def _tvm_backend_hook() -> None:
    """Entry point of the ``tvm.backends`` group: importing this module loaded the library."""
