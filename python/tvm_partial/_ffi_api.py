# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The globals ``libtvm_partial.so`` registers, with their types.

tvm-ffi's ``_ffi_api.py`` convention: ``init_ffi_api`` binds the ``tvm_partial.*`` globals as
attributes, typed signatures under ``TYPE_CHECKING``. The blocks between
``tvm-ffi-stubgen(begin)`` and ``tvm-ffi-stubgen(end)`` are written by ``tvm-ffi-stubgen`` from
the "type_schema" each registration records (cpp/registry.h); do not edit them, regenerate them
(docs/typing.md). ``tests/test_typing.py`` fails when they are out of date.

The globals outside the ``tvm_partial.`` namespace (``OTHER_GLOBALS``) are typed by hand below
the generated block: a ``global/runtime`` block would bind every ``runtime.*`` global registered
at import (TVM's included), and ``runtime.PartialApply`` and ``runtime.PartialApplyModule`` are
packed functions with optional trailing arguments, which their schema cannot express (it names
only the return type: ``def PartialApply(*args: Any) -> Function``).

Import this module after ``_lib`` has loaded the library (``import tvm_partial`` does).
"""

# tvm-ffi-stubgen(import-object): collections.abc.Mapping;True;
# tvm-ffi-stubgen(import-object): collections.abc.Sequence;True;
# tvm-ffi-stubgen(import-object): typing.Any;True;
# tvm-ffi-stubgen(import-object): tvm_ffi.Function;True;
# tvm-ffi-stubgen(import-object): tvm_ffi.Module;True;
# tvm-ffi-stubgen(import-object): tvm_ffi.get_global_func;False;
# tvm-ffi-stubgen(begin): import-section
# fmt: off
# isort: off
from __future__ import annotations
from tvm_ffi import get_global_func, init_ffi_api as _FFI_INIT_FUNC
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from tvm_ffi import Device, Function, Module, Tensor
    from typing import Any, Callable
# isort: on
# fmt: on
# tvm-ffi-stubgen(end)

#: Globals registered outside the ``tvm_partial.`` namespace, by their name here.
OTHER_GLOBALS = {
    "PartialApply": "runtime.PartialApply",
    "PartialApplyModule": "runtime.PartialApplyModule",
}

# tvm-ffi-stubgen(begin): global/tvm_partial
# fmt: off
_FFI_INIT_FUNC("tvm_partial", __name__)
if TYPE_CHECKING:
    def BindModel(_0: Module, _1: Sequence[Sequence[int]] | None, _2: Mapping[str, Any] | None, _3: Sequence[str], _4: Mapping[str, Any], /) -> Mapping[str, Any]: ...
    def CheckPosition(_0: Sequence[int], _1: Sequence[str], /) -> None: ...
    def Describe(_0: Any, _1: str, /) -> Mapping[str, Any] | None: ...
    def Export(_0: Module, _1: str, _2: str, _3: Callable[..., Any], _4: Mapping[str, Any], /) -> None: ...
    def Hold(_0: Sequence[Sequence[Any]], _1: Device, _2: str, /) -> Sequence[Tensor]: ...
    def Inspect(_0: str, _1: int, _2: bool, /) -> Any: ...
    def LoadArtifact(_0: str, _1: int, _2: str, _3: Sequence[int] | None, /) -> Module: ...
    def LoadFromBytes(_0: bytes, _1: Module | None, /) -> Module: ...
    def LoadShard(_0: str, /) -> Module: ...
    def OpenWeights(_0: str, _1: str, _2: Sequence[Sequence[Any]] | None, /) -> Mapping[Any, Any]: ...
    def Rebind(_0: Module, _1: str, _2: Mapping[int, Any], /) -> Module: ...
    def SaveToBytes(_0: Module, /) -> bytes: ...
    def SaveWeights(_0: Any, _1: str, _2: Mapping[str, Tensor], /) -> None: ...
    def Verify(_0: str, _1: int, _2: Callable[..., Any] | None, _3: Sequence[int] | None, _4: bool, /) -> Any: ...
# fmt: on
# tvm-ffi-stubgen(end)

if TYPE_CHECKING:
    # OTHER_GLOBALS, written by hand
    def PartialApply(
        f: Function,
        bound: Mapping[int, Any],
        name: str | None = ...,
        names: Sequence[str] | None = ...,
        outputs: Sequence[Any] | None = ...,
        full_names: Sequence[str] | None = ...,
        /,
    ) -> Function: ...
    def PartialApplyModule(
        mod: Module,
        bindings: Mapping[str, Mapping[int, Any]],
        names: Mapping[str, Sequence[str]] | None = ...,
        outputs: Mapping[str, Any] | None = ...,
        full_names: Mapping[str, Sequence[str]] | None = ...,
        shards: Mapping[str, Sequence[Sequence[int]]] | None = ...,
        /,
    ) -> Module: ...
else:
    for _name, _global in OTHER_GLOBALS.items():
        globals()[_name] = get_global_func(_global)
