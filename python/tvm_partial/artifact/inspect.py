# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``inspect`` and ``verify``: one C++ call each, reading a file without loading it by the loader's
rules (what ``load`` refuses is refused for the same reason); only ONNX models are read here (onnx)."""

from __future__ import annotations

import os
from typing import Any

from .. import _ffi_api
from .._progress import ProgressCallback
from .._typing import PathLike
from ..weights.onnx import inspect_onnx, open_onnx
from .files import rank_world_of, read_file


def inspect(path: PathLike) -> dict[str, Any]:
    """Describe what the file at ``path`` holds, without loading or running it: an exported library
    (``"kind": "library"``), the bytes of ``save_to_bytes`` (``"save_to_bytes"``), a safetensors
    weights file (``"weights file"``, see ``weights.inspect_weights``) or an ONNX model's
    initializers (``"onnx model"``, read with the onnx package: each with its ``file`` where it
    lies in external data). The kind is read from the file's first bytes, except for the names
    ``*.json`` (an index of weights files) and ``*.onnx`` (a protobuf has no magic).

    Returns ``{"path", "kind", "format_version", "total_bytes", "constant_bytes", "payloads",
    "region", "payload_hashes", "self_contained", "functions": [{"name", "param_names", "free",
    "bindings": [...], "outputs": [...]}], "relax_vm"}`` (``region``: where an external region
    lies, ``{"symbol", "placement", "file_offset", "bytes", "link", ["weights_file"]}``, else None;
    ``self_contained``: whether a library embeds tvm-partial's loader, so it loads with TVM alone;
    ``embedded``: what TVM embedded in a library, ``{"file_offset", "bytes", "modules": [{"kind",
    "file_offset", "bytes"}]}`` (the partial module first); both None for the other kinds. A tensor bound in several places is stored once: the bindings after
    the first have ``"shared_with": {"function", "position"}``, the binding that stores it, and
    ``constant_bytes`` counts it once. ``relax_vm``: the recorded devices and allocators of a Relax model,
    else None). Sizes are bytes, in keys ending in ``bytes``; each binding names its
    ``position``; a tensor bound with ``shards=`` has ``"shard": {"dim", "world", "layout",
    "shape", "bytes"}`` (one rank's shape and bytes). The structure is checked as the loader checks it (metadata hash, region header
    and trailer, the weights file and its header), the payload bytes are not: ``payload_hashes``
    says so; ``verify`` checks them. Raises ``ValueError`` when the file is not a tvm-partial
    artifact or is damaged or cut short (the loader's reason), ``FileNotFoundError`` when it, or
    the weights file it records, does not exist, ``OSError`` when it cannot be read.
    """
    path = os.fspath(path)
    info = read_file(_ffi_api.Inspect, path, False)
    return inspect_onnx(path) if info is None else info  # None: an ONNX model


def verify(
    path: PathLike, progress: ProgressCallback | None = None, shard: tuple[int, int] | None = None
) -> dict[str, Any]:
    """Read every tensor payload of an exported artifact, wherever it lies (inline in the embedded
    blob, in the region appended to the file, in its weights file), and check it against its
    recorded hash. ``path`` may also be a ``save_to_bytes`` file, a weights file that
    ``save_weights`` wrote, or an index of such files (an ONNX model, or a file another tool
    wrote, records no hashes: it is read, then refused with a ``ValueError`` saying so).
    ``progress``, when given, is called as ``progress(done_bytes, total_bytes)`` while the
    payloads are read (in 1 MiB chunks), e.g. a ``Progress``.

    A tensor bound with ``shards=`` is checked whole and per rank (each rank's byte range has a
    hash of its own); with ``shard=(rank, world)`` only that rank's range of each sharded tensor
    is read (and the replicated tensors whole): what one worker of a tensor-parallel deployment
    maps. An artifact without shards, or of another world, is then refused.

    Returns ``{"path", "intact", "checked", "bytes", "payloads": [{"function", "position",
    "name" (when recorded), ["rank"] (a rank's range of a sharded tensor), "placement",
    "file_offset", "bytes", "intact", ["weights_file"], ["shared_by"]}], "damaged": [the payloads
    that do not match]}``: one entry per payload, a tensor bound in several places once (its first
    place; ``shared_by`` lists the others). Raises ``ValueError`` when the file is not an
    artifact, its structure or metadata is damaged, or it is cut short (a payload past the end of
    the file), as ``load`` would; ``FileNotFoundError`` when a recorded weights file is missing.
    """
    path = os.fspath(path)
    checked = read_file(_ffi_api.Verify, path, progress, rank_world_of(shard), False)
    if checked is None:  # an ONNX model: every initializer is read, then refused
        open_onnx(path)
        raise ValueError(
            f"{path} is an ONNX model, which records no payload hashes: its initializers are readable "
            "(inspect lists them), their bytes cannot be checked"
        )
    return checked
