# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights in safetensors files: ``save_weights`` writes the bound tensors of a partial module,
``open_weights`` maps a file and gives its tensors to bind, without copying where their data is
64-byte aligned.

A safetensors file is an u64 header length, a JSON header (``{key: {"dtype", "shape",
"data_offsets": [begin, end]}}``, offsets counting from the end of the header, and an optional
``"__metadata__"`` of strings), then the data. Keys written here are ``FUNCTION/PARAMETER``
(``main/weights``), or ``FUNCTION/POSITION`` (``main/1``) where the parameter has no recorded
name. The format allows no gaps between tensors, so where a tensor's size would leave the next one
off a 64-byte boundary a ``__padding__/N`` entry of uint8 fills the gap: every payload this
module writes lies at a file offset that is a multiple of 64.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np
import tvm_ffi

from . import _lib
from ._progress import ProgressCallback, hash_ranges
from ._typing import PathLike

#: safetensors dtype -> (TVM dtype, numpy dtype of the same bits that DLPack carries).
_DTYPES = {
    "F64": ("float64", "float64"),
    "F32": ("float32", "float32"),
    "F16": ("float16", "float16"),
    "BF16": ("bfloat16", "uint16"),
    "I64": ("int64", "int64"),
    "I32": ("int32", "int32"),
    "I16": ("int16", "int16"),
    "I8": ("int8", "int8"),
    "U64": ("uint64", "uint64"),
    "U32": ("uint32", "uint32"),
    "U16": ("uint16", "uint16"),
    "U8": ("uint8", "uint8"),
    "BOOL": ("bool", "bool"),
}
_BY_TVM = {tvm: st for st, (tvm, _) in _DTYPES.items()}
_ALIGNMENT = 64
#: The largest JSON header read (the safetensors package refuses larger ones too).
MAX_HEADER_BYTES = 100 * 2**20
PADDING_PREFIX = "__padding__/"
#: ``__metadata__`` keys written by ``save_weights``.
METADATA_FORMAT = "tvm_partial.format"
METADATA_BINDINGS = "tvm_partial.bindings"
METADATA_HASHES = "tvm_partial.hashes"
_U64 = (1 << 64) - 1
_hash_file_range = tvm_ffi.get_global_func("tvm_partial.HashFileRange")
_write_payload_region = tvm_ffi.get_global_func("tvm_partial.WritePayloadRegion")


def save_weights(module: tvm_ffi.Module | tvm_ffi.Function, path: PathLike) -> None:
    """Write the bound tensors of partial ``module`` to the safetensors file ``path`` (replaced
    atomically): ``save_weights(rebind(pm, weights=new), "v2.safetensors")``.

    Keys are ``FUNCTION/PARAMETER`` (``FUNCTION/POSITION`` where no name is recorded); the
    ``__metadata__`` records ``tvm_partial.bindings``, a JSON object mapping each key to
    ``[function, position]`` (a partial function's tensors go under ``main/``), and ``tvm_partial.hashes``, each payload's hash (the format's 64-bit
    hash, 16 hex digits) that ``verify`` checks. Scalars and strings bound beside the tensors are not written.
    """
    from .partial import bindings, param_names

    bound: Any = bindings(module)
    names: Any = param_names(module)
    if isinstance(module, tvm_ffi.Function):  # a partial function: its tensors go under main/
        bound, names = {"main": bound}, {"main": names}
    entries: list[tuple[str, str, int, tvm_ffi.Tensor]] = []  # (key, function, position, tensor)
    for function in sorted(bound):
        recorded = names.get(function, [])
        for position in sorted(bound[function]):
            value = bound[function][position]
            if not isinstance(value, tvm_ffi.Tensor):
                continue
            entries.append((_key(function, position, recorded), function, position, value))
    if not entries:
        raise ValueError("save_weights: the module binds no tensors; there are no weights to save")
    header: dict[str, Any] = {}
    layout: list[tuple[str, Any, int, int]] = []  # (key, tensor or None for padding, offset, size)
    offset = 0
    for key, _function, _position, tensor in entries:
        dtype = str(tensor.dtype)
        if dtype not in _BY_TVM:
            raise TypeError(
                f"save_weights: {key} has dtype {dtype}, which safetensors cannot hold "
                f"(supported: {', '.join(sorted(_BY_TVM))})"
            )
        size = _nbytes(tensor)
        header[key] = {
            "dtype": _BY_TVM[dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + size],
        }
        layout.append((key, tensor, offset, size))
        offset += size
        gap = -offset % _ALIGNMENT
        if gap:
            pad_key = f"{PADDING_PREFIX}{len(layout)}"
            header[pad_key] = {"dtype": "U8", "shape": [gap], "data_offsets": [offset, offset + gap]}
            layout.append((pad_key, None, offset, gap))
            offset += gap

    def encode(hashes: dict[str, str]) -> bytes:
        header["__metadata__"] = {
            METADATA_FORMAT: "1",
            METADATA_BINDINGS: json.dumps({k: [f, p] for k, f, p, _ in entries}, separators=(",", ":")),
            METADATA_HASHES: json.dumps(hashes, separators=(",", ":")),
        }
        text = json.dumps(header, separators=(",", ":")).encode()
        return text + b" " * (-(8 + len(text)) % _ALIGNMENT)  # the format allows trailing spaces

    # Hashes (fixed-width hex) are filled in once the data is written, in a header of the same size.
    text = encode({key: "0" * 16 for key, *_ in entries})
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(len(text).to_bytes(8, "little"))
            f.write(text)
            for _name, tensor, _offset, size in layout:
                if tensor is None:
                    f.write(bytes(size))
                else:
                    f.write(memoryview(_host_bytes(tensor)).cast("B"))  # type: ignore[arg-type]
            f.flush()
            start = 8 + len(text)
            hashes = {
                key: f"{_hash_file_range(str(tmp), start + header[key]['data_offsets'][0], _nbytes(t)) & _U64:016x}"
                for key, _f, _p, t in entries
            }
            final = encode(hashes)
            assert len(final) == len(text)
            f.seek(8)
            f.write(final)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def open_weights(path: PathLike, function: str = "main") -> dict[Any, tvm_ffi.Tensor]:
    """Map the safetensors file ``path`` (privately: writes never reach the file) and return
    ``{parameter: tvm Tensor}`` to bind: ``partial(exe, signature=sig, **open_weights(p))``.

    Keys ``FUNCTION/NAME`` are taken for ``function`` (``main/weights`` -> ``weights``; a
    ``FUNCTION/POSITION`` key -> the int position: bind those through the mapping,
    ``partial(exe, open_weights(p))``); keys without a ``/`` (files of other tools) are taken as
    they are. Tensors whose data is 64-byte aligned in the file are views of the mapping (no copy;
    they keep it open); others are copied once into aligned memory.
    """
    path = os.fspath(path)
    entries, data_start, buffer = _read(path)
    out: dict[Any, tvm_ffi.Tensor] = {}
    for key, (dtype, shape, begin, end) in entries.items():
        if key.startswith(PADDING_PREFIX) or key == REGION_KEY:
            continue
        if "/" in key:
            owner, _, name = key.partition("/")
            if owner != function:
                continue
            name = int(name) if name.isdigit() else name  # type: ignore[assignment]  # a position
        else:
            name = key
        out[name] = _tensor(buffer, data_start + begin, end - begin, dtype, shape)
    if not out:
        functions = sorted(
            {k.partition("/")[0] for k in entries if "/" in k and not k.startswith(PADDING_PREFIX)}
        )
        raise ValueError(
            f"{path}: no weights for function {function!r} (functions in the file: "
            f"{', '.join(functions) or 'none'})"
        )
    return out


def swap_weights(module: tvm_ffi.Module, path: PathLike) -> tvm_ffi.Module:
    """A partial module over ``module``'s code whose bound tensors are those of the safetensors
    file ``path`` (what ``load(artifact, weights_file=path)`` returns). The file must hold a tensor
    of the same dtype and shape for every bound tensor, under its key, and nothing else; no
    recompilation, no relinking: O(number of bindings) plus mapping the file."""
    from .partial import bindings, param_names, rebind

    path = os.fspath(path)
    entries, _, _ = _read(path)
    bound, names = bindings(module), param_names(module)
    expected = {}  # key -> (function, position, old tensor)
    for function, values in bound.items():
        recorded = names.get(function, [])
        for position, value in values.items():
            if isinstance(value, tvm_ffi.Tensor):
                expected[_key(function, position, recorded)] = (function, position, value)
    given = {k for k in entries if not k.startswith(PADDING_PREFIX) and k != REGION_KEY}
    missing, extra = sorted(set(expected) - given), sorted(given - set(expected))
    if missing:
        raise ValueError(
            f"weights file {path} lacks tensor {missing[0]!r} that the module binds"
            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}; "
            f"it holds the weights of another model"
        )
    if extra:
        raise ValueError(
            f"weights file {path}: tensor {extra[0]!r} is not a tensor the module binds "
            f"(it binds {', '.join(sorted(expected))}); it holds the weights of another model"
        )
    for key, (_function, _position, old) in expected.items():
        dtype, shape = entries[key][0], entries[key][1]
        if _DTYPES[dtype][0] != str(old.dtype) or tuple(shape) != tuple(old.shape):
            raise ValueError(
                f"weights file {path}: tensor {key!r} is {_DTYPES[dtype][0]}{list(shape)}, "
                f"the module binds {old.dtype}{list(old.shape)} there"
            )
    out = module
    for function in sorted({f for f, _, _ in expected.values()}):
        tensors = open_weights(path, function)
        new = {}
        for key, (f, position, _) in expected.items():
            if f == function:
                suffix = key.partition("/")[2]
                new[position] = tensors[int(suffix) if suffix.isdigit() else suffix]
        out = rebind(out, new, function=function)
    return out


def is_weights_file(path: PathLike) -> bool:
    """Whether ``path`` looks like a safetensors file (a header length, then a JSON object)."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:9] == b"{" and head[:4] != b"\x7fELF"


def _metadata(path: str) -> tuple[Any, ...]:
    """-> (entries, data start, {key: [function, position]}, {key: hash} or None, the
    ``__metadata__`` object as written)."""
    entries, data_start, buffer = _read(path)
    with open(path, "rb") as f:
        header = json.loads(f.read(data_start)[8:].decode("utf-8"))
    if hasattr(buffer, "close"):
        buffer.close()
    meta = header.get("__metadata__")
    meta = meta if isinstance(meta, dict) else {}
    try:
        where = json.loads(meta[METADATA_BINDINGS]) if METADATA_BINDINGS in meta else {}
        hashes = json.loads(meta[METADATA_HASHES]) if METADATA_HASHES in meta else None
        if not isinstance(where, dict) or not (hashes is None or isinstance(hashes, dict)):
            raise ValueError("not an object")
    except (TypeError, ValueError) as err:
        raise ValueError(f"weights file {path}: malformed tvm_partial metadata ({err})") from None
    return entries, data_start, where, hashes, meta


def _payloads(
    path: str, entries: dict[str, Any], data_start: int, where: dict[str, Any]
) -> list[dict[str, Any]]:
    out = []
    for key in sorted(entries, key=lambda k: entries[k][2]):
        if key.startswith(PADDING_PREFIX) or key == REGION_KEY:
            continue
        dtype, shape, begin, end = entries[key]
        loc = where.get(key)  # [function, position] as save_weights recorded it
        if isinstance(loc, list) and len(loc) == 2:
            function, index = loc
        else:
            function, index = key.partition("/")[0] if "/" in key else "", None
        entry = {
            "key": key,
            "function": str(function),
            "index": index,
            "name": key.partition("/")[2] or key,
            "placement": "weights file",
            "dtype": _DTYPES[dtype][0],
            "shape": list(shape),
            "file_offset": data_start + begin,
            "bytes": end - begin,
        }
        out.append(entry)
    return out


def inspect_weights(path: PathLike) -> dict[str, Any]:
    """Describe a safetensors weights file without reading its payloads: the same keys as
    ``inspect`` of an artifact (``payloads`` is ``"weights file"``), each tensor with its key and
    recorded hash (``hash``, 16 hex digits, where ``save_weights`` recorded one), and the file's
    ``__metadata__`` as ``metadata``."""
    path = os.fspath(path)
    entries, data_start, where, hashes, meta = _metadata(path)
    functions: dict = {}
    for p in _payloads(path, entries, data_start, where):
        functions.setdefault(p["function"], []).append(
            {
                "index": p["index"] if p["index"] is not None else p["key"],
                "name": p["name"],
                "kind": "tensor",
                "dtype": p["dtype"],
                "shape": p["shape"],
                "device": "cpu:0",
                "bytes": p["bytes"],
                "offset": p["file_offset"],
                "key": p["key"],
                "aligned": p["file_offset"] % _ALIGNMENT == 0,
                **({"hash": hashes[p["key"]]} if hashes and isinstance(hashes.get(p["key"]), str) else {}),
            }
        )
    return {
        "path": path,
        "format_version": "safetensors",
        "total_bytes": os.path.getsize(path),
        "constant_bytes": sum(b["bytes"] for fn in functions.values() for b in fn),
        "payloads": "weights file",
        "region": None,
        "payload_hashes": (
            "recorded, not checked (run tvm-partial verify)"
            if hashes is not None
            else "none recorded (not written by tvm_partial.save_weights)"
        ),
        "functions": [
            {"name": f, "param_names": [], "free": [], "bindings": b} for f, b in functions.items()
        ],
        "metadata": {str(k): str(v) for k, v in meta.items()},
    }


def verify_weights(path: PathLike, progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Check every payload of a weights file written by ``save_weights`` against the hash its
    ``__metadata__`` records (reads the file in 1 MiB chunks; ``progress(done_bytes,
    total_bytes)`` as they go by). The report has the keys of ``verify``'s. Raises
    ``ValueError`` for a damaged header or a file without recorded hashes."""
    path = os.fspath(path)
    entries, data_start, where, hashes, _ = _metadata(path)
    if hashes is None:
        raise ValueError(
            f"weights file {path} records no payload hashes (it was not written by "
            "tvm_partial.save_weights): its header is consistent, its bytes cannot be checked"
        )
    payloads = _payloads(path, entries, data_start, where)
    for p in payloads:
        recorded = hashes.get(p["key"])
        if not isinstance(recorded, str) or len(recorded) != 16:
            raise ValueError(f"weights file {path}: tensor {p['key']!r} has no recorded hash")
    got = hash_ranges([(path, p["file_offset"], p["bytes"]) for p in payloads], progress)
    for p, value in zip(payloads, got):
        p["intact"] = f"{value:016x}" == hashes[p["key"]]
    return verify_report(path, payloads)


def verify_report(path: str, payloads: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``verify`` returns, from the payloads it checked (each with ``intact`` and ``bytes``)."""
    damaged = [p for p in payloads if not p["intact"]]
    return {
        "path": path,
        "intact": not damaged,
        "checked": len(payloads),
        "bytes": sum(p["bytes"] for p in payloads),
        "payloads": payloads,
        "damaged": damaged,
    }


#: The key of the region header in a weights file written by ``export_library(weights_file=)``.
REGION_KEY = "__tvm_partial_region__"


def write_region_file(external: tvm_ffi.Module, path: PathLike) -> None:
    """The safetensors file of an export with ``weights_file=``: its data is the payload region of
    ``external`` (a module from ``WithExternalWeights``), the region header as ``REGION_KEY`` and
    each payload under its key, at the offsets the metadata records; gaps as padding entries."""
    from .partial import param_names

    info = _lib.describe_bytes(_lib.save_to_bytes(external))
    names = param_names(external)
    header = {REGION_KEY: {"dtype": "U8", "shape": [64], "data_offsets": [0, 64]}}
    spans, where, hashes = [], {}, {}
    for fn in info["functions"]:
        function = str(fn["name"])
        for b in fn["bindings"]:
            if str(b["kind"]) != "tensor":
                continue
            key = _key(function, int(b["index"]), names.get(function, []))
            dtype = str(b["dtype"])
            if dtype not in _BY_TVM:
                raise TypeError(
                    f"export_library: {key} has dtype {dtype}, which a safetensors weights file "
                    f"cannot hold (supported: {', '.join(sorted(_BY_TVM))}); export without weights_file="
                )
            begin = int(b["offset"])
            spans.append((begin, begin + int(b["bytes"])))
            header[key] = {
                "dtype": _BY_TVM[dtype],
                "shape": [int(d) for d in b["shape"]],
                "data_offsets": [begin, begin + int(b["bytes"])],
            }
            where[key] = [function, int(b["index"])]
            hashes[key] = f"{int(b['hash']) & _U64:016x}"
    end = 64
    for begin, stop in sorted(spans):
        if begin > end:
            header[f"{PADDING_PREFIX}{end}"] = {
                "dtype": "U8",
                "shape": [begin - end],
                "data_offsets": [end, begin],
            }
        end = stop
    if int(info["region_size"]) != end:
        raise AssertionError("the region layout does not match its metadata")
    header["__metadata__"] = {
        METADATA_FORMAT: "1",
        METADATA_BINDINGS: json.dumps(where, separators=(",", ":")),
        METADATA_HASHES: json.dumps(hashes, separators=(",", ":")),
    }
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % _ALIGNMENT)
    _write_payload_region(external, os.fspath(path), 8 + len(text))
    with open(path, "r+b") as f:
        f.write(len(text).to_bytes(8, "little") + text)


# ----------------------------------------------------------------------------------------------
def _key(function: str, position: int, recorded: list[str]) -> str:
    """``FUNCTION/PARAMETER``, or ``FUNCTION/POSITION`` where the name is unknown or not unique."""
    name = recorded[position] if position < len(recorded) else ""
    unique = name and recorded.count(name) == 1 and "/" not in name and not name.isdigit()
    return f"{function}/{name if unique else position}"


def _nbytes(tensor: tvm_ffi.Tensor) -> int:
    count = 1
    for d in tensor.shape:
        count *= int(d)
    return count * _lib_itemsize(str(tensor.dtype))


def _lib_itemsize(dtype: str) -> int:
    return np.dtype(_DTYPES[_BY_TVM[dtype]][1]).itemsize


def _host_bytes(tensor: tvm_ffi.Tensor) -> np.ndarray:
    """The tensor's bytes as a numpy array (a view for contiguous CPU tensors)."""
    dtype = str(tensor.dtype)
    carrier = _DTYPES[_BY_TVM[dtype]][1]
    if carrier != dtype:  # bfloat16: DLPack consumers refuse it; view the bits
        from .partial import _create_view

        tensor = _create_view()(tensor, tvm_ffi.Shape(tuple(tensor.shape)), carrier, 0)
    if tensor.device.dlpack_device_type() == 1 and tensor.is_contiguous():
        return np.ascontiguousarray(np.from_dlpack(tensor)).reshape(-1)
    return tensor.numpy().reshape(-1)  # type: ignore[attr-defined]  # a tvm.runtime.Tensor


def _read(path: str) -> tuple[dict[str, tuple[str, tuple[int, ...], int, int]], int, mmap.mmap | bytes]:
    """-> ({key: (safetensors dtype, shape, begin, end)}, data start, the private mapping).
    Every field is checked; anything wrong is a ValueError naming the file and the key."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"weights file {path} does not exist") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ValueError(
                f"weights file {path} is truncated: {size} bytes, not even a safetensors header length"
            )
        length = int.from_bytes(f.read(8), "little")
        if length > MAX_HEADER_BYTES:
            raise ValueError(
                f"weights file {path}: its JSON header claims {length} bytes, more than "
                f"the {MAX_HEADER_BYTES} read; it is not a safetensors file or is damaged"
            )
        if 8 + length > size:
            raise ValueError(
                f"weights file {path} is truncated: its JSON header needs {8 + length} bytes, "
                f"the file has {size}"
            )
        raw = f.read(length)
        try:
            header = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise ValueError(
                f"weights file {path}: malformed JSON header ({type(err).__name__}: {str(err)[:200]})"
            ) from None
        if not isinstance(header, dict):
            raise ValueError(f"weights file {path}: the JSON header is not an object")
        data_start, data_size = 8 + length, size - 8 - length
        entries = {}
        for key, entry in header.items():
            if key == "__metadata__":
                continue
            entries[key] = _entry(path, key, entry, data_size)
        spans = sorted((begin, end, key) for key, (_, _, begin, end) in entries.items() if end > begin)
        for (_, end_a, key_a), (begin_b, _, key_b) in zip(spans, spans[1:]):
            if begin_b < end_a:
                raise ValueError(f"weights file {path}: tensors {key_a!r} and {key_b!r} overlap in the file")
        buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
    return entries, data_start, buffer


def _entry(path: str, key: str, entry: Any, data_size: int) -> tuple[str, tuple[int, ...], int, int]:
    where = f"weights file {path}: tensor {key!r}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: its header entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in _DTYPES:
        raise ValueError(
            f"{where}: dtype {str(dtype)[:40]!r} is not one tvm-partial reads ({', '.join(sorted(_DTYPES))})"
        )
    if (
        not isinstance(shape, list)
        or len(shape) > 64
        or not all(type(d) is int and 0 <= d < 2**63 for d in shape)
    ):
        raise ValueError(f"{where}: shape {str(shape)[:80]} is not a list of non-negative ints")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int and 0 <= o for o in offsets)
        or offsets[1] < offsets[0]
    ):
        raise ValueError(
            f"{where}: data_offsets {str(offsets)[:80]} is not [begin, end] with 0 <= begin <= end"
        )
    begin, end = offsets
    count = 1
    for d in shape:
        count *= d
    expected = count * np.dtype(_DTYPES[dtype][1]).itemsize
    if end - begin != expected:
        raise ValueError(
            f"{where}: data_offsets span {end - begin} bytes, its dtype {dtype} and shape "
            f"{shape} need {expected}"
        )
    if end > data_size:
        raise ValueError(
            f"{where}: its data ends at byte {end} of the data, which has {data_size}: the file is truncated"
        )
    return dtype, tuple(shape), begin, end


def _tensor(
    buffer: mmap.mmap | bytes, offset: int, nbytes: int, dtype: str, shape: tuple[int, ...]
) -> tvm_ffi.Tensor:
    tvm_dtype, carrier = _DTYPES[dtype]
    array = np.frombuffer(
        buffer, dtype=carrier, count=nbytes // np.dtype(carrier).itemsize, offset=offset
    ).reshape(shape)
    if offset % _ALIGNMENT == 0 and nbytes:
        tensor = tvm_ffi.from_dlpack(array)  # a view: the mapping lives as long as the tensor
    else:
        # kernels need 64-byte alignment (from_dlpack: what the call would do to the array anyway)
        tensor = _lib.aligned_copy(tvm_ffi.from_dlpack(array), tvm_ffi.device("cpu", 0))
    if tvm_dtype != carrier:
        from .partial import _create_view

        tensor = _create_view()(tensor, tvm_ffi.Shape(shape), tvm_dtype, 0)
    return tensor
