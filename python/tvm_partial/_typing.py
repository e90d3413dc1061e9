# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Type aliases of the public API (annotations only). apache-tvm ships no type information, so they
use tvm-ffi's classes (TVM's subclass them) and describe TVM's own by what the code uses of them."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol, Union

import tvm_ffi


class ExecutableLike(Protocol):
    """``tvm.runtime.Executable`` (what ``tvm.compile`` returns): the compiled module as ``mod``."""

    @property
    def mod(self) -> tvm_ffi.Module: ...


class VirtualMachineLike(Protocol):
    """``tvm.relax.VirtualMachine``: the VM module as ``module``."""

    @property
    def module(self) -> tvm_ffi.Module: ...


#: What ``partial()`` binds a module target from.
ModuleTarget = Union[tvm_ffi.Module, ExecutableLike, VirtualMachineLike]
#: What ``partial()`` binds: a function (a tvm-ffi one or any Python callable) or a module.
Target = Union[tvm_ffi.Function, ModuleTarget, Callable[..., Any]]
#: ``{position: value}``, ``{name: value}`` or both (three forms: Mapping is invariant in its key).
Bound = Union[Mapping[int, Any], Mapping[str, Any], Mapping[Union[int, str], Any]]
PathLike = Union[str, "os.PathLike[str]"]
