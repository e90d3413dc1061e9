# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``load`` (artifacts), ``save_to_bytes`` and ``load_from_bytes`` (a partial module's bytes)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import tvm_ffi

from .. import _ffi_api
from .. import remote as _remote
from .._typing import PathLike
from .files import open_regular, rank_world_of

if TYPE_CHECKING:
    from .._typing import ExecutableLike


def save_to_bytes(module: tvm_ffi.Module) -> bytes:
    """The bytes of a partial module: its bindings and constants, not the code it wraps."""
    _remote.refuse_export(module, "save_to_bytes")
    return bytes(_ffi_api.SaveToBytes(module))


def load_from_bytes(data: bytes, wrapped: tvm_ffi.Module | ExecutableLike | None = None) -> tvm_ffi.Module:
    """Rebuild a partial module from ``save_to_bytes``; ``wrapped`` is the compiled module it
    binds (a module, or an ``Executable``), imported so its functions can be called. Bytes whose
    payloads lie in an artifact's file (a zero-copy export) rebuild only with that artifact's
    loaded library as ``wrapped``: the file is the one that library was loaded from."""
    code: Any = None if wrapped is None else getattr(wrapped, "mod", wrapped)  # an Executable's Module
    return _ffi_api.LoadFromBytes(bytes(data), code)


def load(
    path: PathLike, weights_file: PathLike | None = None, shard: tuple[int, int] | None = None
) -> tvm_ffi.Module:
    """Load an exported artifact; a partial module comes back as the root, callable as ``pm(...)``.

    The module lives as long as references to it do (unlike ``tvm.runtime.load_module``, which
    keeps every module it loads for the life of the process). It is the artifact ``path`` holds
    now: a file replaced at ``path`` since this process loaded it (a new version renamed into
    place) is loaded as a new object, while modules loaded before keep their own code and
    weights; a file the process maps already under another name (a rename: a rollback that moved
    ``model.so`` to ``model.prev.so``) is the object it has. Its tensors come from that very file
    (the descriptor the load opened, proven to be the inode the process maps): a process may hold
    several artifacts and versions at once, each computing with its own weights.

    With ``weights_file`` (a safetensors file such as ``save_weights`` writes) its tensors are
    bound instead of the artifact's: keys are the parameter names alone (a torch state_dict's
    ``fc1.weight``) where one bound tensor has that name, else ``FUNCTION/PARAMETER``; same
    dtypes and shapes, mapped without copying; a tied tensor is supplied once. The artifact's own payloads are not read and
    the weights file it records is not opened (it may be absent); the C++ loader does the matching
    (``tvm_partial::LoadWithWeights``), so the checks are the same from C++.

    The file is checked first, in C++ as every loader of ours checks it: anything but a regular
    file is refused (a FIFO would block); a library cut short (an interrupted copy) would
    otherwise crash the process inside the system's loader, which maps its segments without
    checking the file's size; a damaged embedded module tree would crash TVM's loader, which
    trusts the counts it records. Every binding is built at load, so a missing or damaged payload
    raises here, not at the first call.
    """
    import tvm.runtime  # noqa: F401  (TVM's Tensor and Module classes for what is returned)

    path = os.fspath(path)
    shard = rank_world_of(shard)
    weights = "" if weights_file is None else os.fspath(weights_file)
    if weights_file is not None and not weights:
        raise ValueError("weights_file is empty: name a safetensors file or index (or leave it out)")
    # One descriptor, by real path (as tvm.runtime.load_module): C++ loads it and proves it maps it.
    with open_regular(path) as fd:
        return _ffi_api.LoadArtifact(os.path.realpath(path), fd, weights, shard)
