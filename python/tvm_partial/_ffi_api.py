# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The globals ``libtvm_partial.so`` registers, with their types.

The layout follows tvm-ffi's ``_ffi_api.py`` convention (``init_ffi_api`` binds the
``tvm_partial.*`` globals as attributes; typed signatures under ``TYPE_CHECKING``), but the
signatures are written by hand, not by ``tvm-ffi-stubgen``: the library registers its globals
through ``detail::RegisterGlobalOnce`` (``Function::SetGlobal``, so that a self-contained
artifact's embedded copy and the installed library can take each other's registrations over),
which records no type schema, and ``tvm-ffi-stubgen`` skips functions without one ("Function has
no type schema"). ``runtime.PartialApply`` and ``runtime.PartialApplyModule`` are packed functions
with optional trailing arguments, which a schema could not express either.
``tests/test_typing.py`` checks that this file names every global the library registers, and
fails when the registrations gain a schema (then generate the stubs: docs/typing.md).

Import this module after ``_lib`` has loaded the library (``import tvm_partial`` does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import tvm_ffi

#: Globals registered outside the ``tvm_partial.`` namespace, by their name here.
OTHER_GLOBALS = {
    "PartialApply": "runtime.PartialApply",
    "PartialApplyModule": "runtime.PartialApplyModule",
    "PartialApplyBindings": "runtime.PartialApplyBindings",
    "LoadFromBytes": "ffi.Module.load_from_bytes.partial_apply",
    "LoadFromBytesVM": "ffi.Module.load_from_bytes.partial_apply_vm",
}

tvm_ffi.init_ffi_api("tvm_partial", __name__)

if TYPE_CHECKING:
    # runtime.* and the module loaders (OTHER_GLOBALS)
    def PartialApply(
        f: tvm_ffi.Function,
        bound: Mapping[int, Any],
        name: str | None = ...,
        names: Sequence[str] | None = ...,
        outputs: Sequence[Any] | None = ...,
        full_names: Sequence[str] | None = ...,
        /,
    ) -> tvm_ffi.Function: ...
    def PartialApplyModule(
        mod: tvm_ffi.Module,
        bindings: Mapping[str, Mapping[int, Any]],
        names: Mapping[str, Sequence[str]] | None = ...,
        outputs: Mapping[str, Any] | None = ...,
        full_names: Mapping[str, Sequence[str]] | None = ...,
        /,
    ) -> tvm_ffi.Module: ...
    def PartialApplyBindings(
        obj: tvm_ffi.Function | tvm_ffi.Module, /
    ) -> Mapping[str, Mapping[int, Any]]: ...
    def LoadFromBytes(data: bytes, /) -> tvm_ffi.Module: ...
    def LoadFromBytesVM(data: bytes, /) -> tvm_ffi.Module: ...

    # tvm_partial.*
    def AlignedCopy(source: Any, device: tvm_ffi.Device, /) -> tvm_ffi.Tensor: ...
    def DescribeBytes(data: bytes, /) -> Mapping[str, Any]: ...
    def AppendPayloadRegion(
        mod: tvm_ffi.Module, path: str, progress: Callable[[int, int], None] | None, /
    ) -> Sequence[int]: ...
    def HashFileRange(path: str, offset: int, size: int, /) -> int: ...
    def HashFileRangeProgress(
        path: str, offset: int, size: int, progress: Callable[[int, int], None] | None, /
    ) -> int: ...
    def IsPartial(obj: Any, /) -> bool: ...
    def LoadWithWeights(library: str, weights_file: str, /) -> tvm_ffi.Module: ...
    def LibraryFileOf(mod: tvm_ffi.Module, name: str, /) -> Mapping[str, Any]: ...
    def Outputs(obj: tvm_ffi.Function | tvm_ffi.Module, /) -> Mapping[str, Sequence[Mapping[str, Any]]]: ...
    def PayloadRegionHeader(mod: tvm_ffi.Module, /) -> bytes: ...
    def ParamNames(obj: tvm_ffi.Function | tvm_ffi.Module, /) -> Mapping[str, Sequence[str]]: ...
    def RelaxVMModule(executable: tvm_ffi.Module, devices: Sequence[Sequence[int]], /) -> tvm_ffi.Module: ...
    def SaveToBytes(mod: tvm_ffi.Module, /) -> bytes: ...
    def WithAppendedPayloads(mod: tvm_ffi.Module, symbol: str, link: int, /) -> tvm_ffi.Module: ...
    def WithExternalPayloads(mod: tvm_ffi.Module, symbol: str, link: int, /) -> tvm_ffi.Module: ...
    def WithExternalWeights(
        mod: tvm_ffi.Module, symbol: str, link: int, weights_file: str, /
    ) -> tvm_ffi.Module: ...
    def WithPayloadHashes(mod: tvm_ffi.Module, hashes: Sequence[int] | None, /) -> tvm_ffi.Module: ...
    def WritePayloadRegion(mod: tvm_ffi.Module, path: str, lead: int, /) -> None: ...
else:
    for _name, _global in OTHER_GLOBALS.items():
        globals()[_name] = tvm_ffi.get_global_func(_global)
