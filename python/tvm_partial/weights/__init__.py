# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Safetensors weights files (keys: ``save_weights``), read and written in C++ (cpp/storage/weights_file.h,
one reader for every tool); payloads 64-byte aligned with ``__padding__/N`` gaps (docs/weights_files.md)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tvm_ffi

from .. import _convert, _facts, _ffi_api
from .. import programs as _programs
from .._progress import ProgressCallback
from .._typing import PathLike
from ..artifact.files import new_file, read_file
from .onnx import open_onnx


def save_weights(module: tvm_ffi.Module | tvm_ffi.Function, path: PathLike, program: Any = None) -> None:
    """Write the bound tensors of partial ``module`` to the safetensors file ``path`` (written
    under a new name, then renamed into place): ``save_weights(rebind(pm, weights=new),
    "v2.safetensors")``.

    Keys are the parameters' own names where no other bound tensor has that name
    (``FUNCTION/PARAMETER`` where two functions bind one name, ``FUNCTION/POSITION`` where no name
    is recorded; a partial function's tensors count as ``main``'s); a tensor bound in several
    places is written once, under the key of its first place. The ``__metadata__`` records
    ``tvm_partial.bindings``, a JSON object mapping each key to ``[function, position]``,
    ``tvm_partial.hashes``, each payload's hash (the format's 64-bit hash, 16 hex digits) that
    ``verify`` checks, and for tied tensors ``tvm_partial.shared`` (each other place's key -> the
    stored key). Scalars and strings bound beside the tensors are not written.

    ``program``: the program a Relax model was imported from (a ``torch.export.ExportedProgram``,
    an ``onnx.ModelProto``), given as ``signature=`` when it was bound. The file then also holds
    the rest of the model's state that the frontend compiled into the code (a batch norm's
    running statistics, ``num_batches_tracked``), each checked to be the value the code holds,
    so it is the model's whole ``state_dict``: ``model.load_state_dict({k: torch.from_dlpack(v)
    for k, v in open_weights(path).items()}, strict=True)`` takes it, and ``load(artifact,
    weights_file=path)`` too.
    """
    compiled: dict[str, tvm_ffi.Tensor] = {}
    if program is not None:
        found = _programs.of(program)
        if found is None:
            raise TypeError(
                f"program= is the torch ExportedProgram or ONNX model the module was imported from, "
                f"got {type(program).__name__}"
            )
        facts = _facts.of(module, "save_weights")
        names = facts.names
        bound = {
            str(names[f][p])
            for f, places in facts.bindings.items()
            for p in places
            if f in names and p < len(names[f])
        }
        held = _convert.Held(tvm_ffi.device("cpu", 0))
        # A tied tensor's other names are written as names of the tensor stored (C++).
        tied = {n for group in found.ties if bound & set(group) for n in group}
        for name in found.state:
            if name not in bound and name not in tied:
                value = found.values[name]
                array = value if hasattr(value, "__dlpack__") else np.asarray(value)
                held.add(name, array, None, f"{found.what}'s {name!r}")
        compiled = held.made()
    with new_file(os.fspath(path)) as staged:
        _ffi_api.SaveWeights(module, staged, compiled)


def open_weights(path: PathLike, function: str = "main") -> dict[Any, tvm_ffi.Tensor]:
    """Map the safetensors file ``path`` (privately: writes never reach the file) and return
    ``{parameter: tvm Tensor}`` to bind: ``partial(exe, signature=sig, **open_weights(p))``.

    ``path`` may also be a checkpoint's index (``model.safetensors.index.json``, whose
    ``weight_map`` names the file of each tensor, as transformers writes it): every file is mapped,
    each tensor taken from the file the index names; a tensor in two files, or a file that is
    missing, is refused naming both. Its file names resolve in the index's folder as ``path``
    spells it (the Hugging Face cache's ``snapshots/REV/`` links each file to its own blob). Or
    an ONNX model (``model.onnx``): its initializers by name, bitwise as
    ``onnx.numpy_helper.to_array`` reads them, those inside the model copied, those in external
    data files mapped without copying where aligned (needs the onnx package).

    Keys ``FUNCTION/NAME`` are taken for ``function`` (``main/weights`` -> ``weights``; a
    ``FUNCTION/POSITION`` key -> the int position: bind those through the mapping,
    ``partial(exe, open_weights(p))``); keys without a ``/`` (files of other tools) are taken as
    they are. Two keys naming the same parameter (``main/weights`` and ``weights``) are refused,
    naming both. Tensors whose data is 64-byte aligned in the file are views of the mapping (no
    copy; they keep it open); others are copied once into aligned memory.

    A file ``save_weights`` wrote gives back exactly the tensors the module binds, by the model's
    names: the alignment entries (``__padding__/N``, ``__tvm_partial_region__``) are dropped and
    each place of a tensor stored once (tied weights) is there, the same tensor under each name,
    so ``model.load_state_dict({k: torch.from_dlpack(v) for k, v in open_weights(p).items()},
    strict=True)`` takes it.
    """
    if os.fspath(path).endswith(".onnx"):
        return open_onnx(os.fspath(path))
    found = _ffi_api.OpenWeights(os.fspath(path), function, None)
    return {(k if isinstance(k, int) else str(k)): v for k, v in found.items()}


def inspect_weights(path: PathLike) -> dict[str, Any]:
    """Describe a safetensors file or index (``*.safetensors.index.json``) without reading payloads:
    ``inspect``'s keys (``payloads``: ``"weights file"``), each tensor's key and recorded ``hash`` (if any),
    ``__metadata__`` as ``metadata``; an index: ``files`` ({"path", "bytes"}; else None), each ``file``."""
    return read_file(_ffi_api.Inspect, os.fspath(path), True, what="weights file")


def verify_weights(path: PathLike, progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Check each payload of a ``save_weights`` file (or of an index's files) against its recorded
    hash, read in 1 MiB chunks (``progress(done_bytes, total_bytes)``); ``verify``'s report keys.
    Raises ``ValueError`` naming a file with a damaged header or no recorded hashes."""
    return read_file(_ffi_api.Verify, os.fspath(path), progress, None, True, what="weights file")
