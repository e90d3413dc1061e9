# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``inspect`` and ``verify``: what a file holds and whether its payloads are intact, read
without loading it. The rules are the loader's own: the C++ reader decides where the payloads
lie (``read.Located``), so a file ``load`` refuses is refused here too, with the same reason.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping
from typing import Any

import tvm_ffi

from .._progress import ProgressCallback
from .._typing import PathLike
from ..output_specs import dim_text, free_positions
from .read import Located, file_kind, locate, mapped, not_an_artifact, rank_world_of, report


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
    lies, ``{"symbol", "placement", "file_offset", "bytes", ["weights_file"]}``, else None;
    ``self_contained``: whether a library embeds tvm-partial's loader, so it loads with TVM alone;
    None for the other kinds. A tensor bound in several places is stored once: the bindings after
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
    from .. import weights as _weights

    path = os.fspath(path)
    with mapped(path) as view:  # opened once: every read is of this file; nothing read in bulk
        kind = file_kind(view)
        if kind not in ("weights file", "onnx model", "unknown"):
            where = locate(view, kind)
            described = where.inspect()
            _raise_problem(described)
            out = {**_describe(described, path, where.kind), "region": _region(described)}
            if where.library_bin is None:
                return {**out, "self_contained": None, "relax_vm": None}
            return {
                **out,
                "self_contained": _embeds_loaders(where, view.data),
                "relax_vm": _relax_vm_info(where, view.data),
            }
    if kind == "unknown":
        raise not_an_artifact(path)
    if kind == "onnx model":
        from ..weights.onnx import inspect_onnx

        return inspect_onnx(path)
    info = _weights.inspect_weights(path)
    return {"path": info.pop("path"), "kind": kind, **info, "self_contained": None}


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
    from .. import weights as _weights

    path = os.fspath(path)
    with mapped(path) as view:  # opened once: every read is of this file
        kind = file_kind(view)
        shard = rank_world_of(shard)
        if kind not in ("weights file", "onnx model", "unknown"):
            checked = locate(view, kind).verify(progress, shard)
    if kind == "unknown":
        raise not_an_artifact(path)
    if kind in ("weights file", "onnx model"):
        if shard is not None:
            raise ValueError(
                f"verify: {path} is {'a weights file' if kind == 'weights file' else 'an ONNX model'}, "
                "which records no shards; verify the artifact "
                "that binds it with shard="
            )
        if kind == "onnx model":
            from ..weights.onnx import verify_onnx

            verify_onnx(path)
        return _weights.verify_weights(path, progress=progress)
    payloads = [_payload_entry(dict(p), path) for p in checked["payloads"]]
    return report(path, payloads)


def _payload_entry(p: dict[str, Any], path: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        k: _plain(p[k])
        for k in ("function", "position", "name", "rank", "placement", "file_offset", "bytes", "shared_by")
        if k in p
    }
    entry["intact"] = bool(p["intact"])
    if str(p["file"]) != path:
        entry["weights_file"] = str(p["file"])
    return entry


def _raise_problem(described: Mapping[str, Any]) -> None:
    """Raise what the loader would raise when the payloads cannot be located."""
    problem = described.get("problem")
    if problem is None:
        return
    message = str(problem["message"])
    if str(problem["kind"]) == "FileNotFoundError":
        raise FileNotFoundError(message)
    raise ValueError(message)


def _region(described: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where an external region lies, from the located payloads."""
    if "region_symbol" not in described or str(described["placement"]) == "elsewhere":
        return None
    out: dict[str, Any] = {
        "symbol": str(described["region_symbol"]),
        "placement": str(described["placement"]),
        "file_offset": int(described["payload_base"]),
        "bytes": int(described["region_size"]),
    }
    if "weights_file" in described:
        out["weights_file"] = {
            "name": str(described["weights_file"]),
            "path": str(described["weights_file_path"]),
        }
    return out


def _describe(info: Mapping[str, Any], path: str, kind: str) -> dict[str, Any]:
    """What ``inspect`` shows of the C++ reader's description ``info``."""
    functions = []
    for fn in info["functions"]:
        names = [str(n) for n in fn["param_names"]]
        bound = []
        for b in fn["bindings"]:
            entry = {k: _plain(v) for k, v in b.items() if k not in ("offset", "hash", "payload")}
            position = entry["position"]
            if position < len(names):
                entry["name"] = names[position]
            bound.append(entry)
        outs = [_output_entry(o, names) for o in fn.get("outputs", [])]
        taken = {b["position"] for b in bound} | {o["position"] for o in outs}
        free = free_positions((t for t in taken if t < len(names)), len(names))
        functions.append(
            {
                "name": str(fn["name"]),
                "param_names": names,
                "free": [names[i] for i in free],
                "bindings": bound,
                "outputs": outs,
            }
        )
    return {
        "path": path,
        "kind": kind,
        "format_version": int(info["version"]),
        "total_bytes": int(info["total_bytes"]),
        "constant_bytes": int(info["constant_bytes"]),
        "payloads": str(info["payloads"]),
        "payload_hashes": "not checked (run tvm-partial verify)",
        "weights_file": str(info["weights_file"]) if "weights_file" in info else None,
        "functions": functions,
    }


def _embeds_loaders(where: Located, data: bytes | mmap.mmap) -> bool:
    """Whether the library (mapped as ``data``) carries tvm-partial's loader for every module
    kind of tvm-partial it embeds (``export_library(..., self_contained=True)`` links them in):
    then it loads with TVM alone. The loaders' registered names are looked for outside TVM's
    embedded blob (a bound string could spell one), without reading it in bulk."""
    assert where.library_bin is not None  # a library
    kinds = {m["kind"] for m in where.modules if m["kind"].startswith("partial_apply")}
    at, end = where.library_bin
    spans = [(0, at), (end, len(data))]
    for kind in kinds:
        needle = f"ffi.Module.load_from_bytes.{kind}".encode() + b"\0"
        if not any(lo < hi and data.find(needle, lo, hi) >= 0 for lo, hi in spans):
            return False
    return True


def _relax_vm_info(where: Located, data: bytes | mmap.mmap) -> dict[str, Any] | None:
    """The Relax VM's devices recorded in the artifact (a Relax model), or None."""
    from ..relax_vm import KIND, describe_record

    found = [m for m in where.modules if m["kind"] == KIND]
    if not found:
        return None
    at, size = found[0]["offset"], found[0]["size"]
    try:
        return describe_record(bytes(data[at : at + size]))
    except ValueError as err:
        raise ValueError(f"{where.path}: {err}") from err


def _output_entry(spec: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """An output as inspect shows it: position, name, dtype, shape (an int, or "name.shape[axis]")."""
    entry: dict[str, Any] = {
        "position": int(spec["position"]),
        "dtype": str(spec["dtype"]),
        "shape": [dim_text(d, names) for d in spec["shape"]],
    }
    if entry["position"] < len(names):
        entry["name"] = names[entry["position"]]
    return entry


def _plain(value: Any) -> Any:
    """ffi containers -> Python lists, dicts, ints, strs (for JSON)."""
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (tvm_ffi.Map, dict)):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str):
        return str(value)
    return value
