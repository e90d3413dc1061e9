# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""An ONNX model's initializers for ``open_weights``, ``inspect`` and ``verify`` (refused: no hashes),
read with the onnx package (imported only here); C++ maps external data (``tvm_partial.OpenWeights``),
its ``location`` resolved in the model's folder as the path spells it, as onnx does."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import tvm_ffi

from .. import _convert, _ffi_api

_POSITION_LIMIT = 2**63  # what a call into C++ carries; no file reaches it


class _Initializer(NamedTuple):
    proto: Any  # the onnx TensorProto (its data too, when it lies inside the model)
    dtype: str
    shape: list[int]
    bytes: int
    file: str | None  # the external data file, None inside the model
    offset: int  # in ``file``


def _initializers(path: str) -> tuple[Any, list[_Initializer]]:
    """The model at ``path`` (without external data) and each initializer, checked: unique names, an
    external location inside the model's folder, offset and length byte counts."""
    import onnx
    from onnx import helper

    model = onnx.load(path, load_external_data=False)
    folder = os.path.dirname(path)
    out = []
    seen: set[str] = set()
    for tensor in model.graph.initializer:
        if tensor.name in seen:
            raise ValueError(
                f"{path}: two initializers are named {tensor.name!r}; an ONNX graph names each once "
                "(the model is damaged: export it again)"
            )
        seen.add(tensor.name)
        dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)))
        shape = [int(d) for d in tensor.dims]
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            out.append(_Initializer(tensor, dtype, shape, nbytes, None, 0))
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if not location or os.path.isabs(location) or ".." in location.replace("\\", "/").split("/"):
            raise ValueError(
                f"{path}: initializer {tensor.name!r} keeps its data in {location!r}, which is not a "
                "file beside the model (an external data location must be relative, inside its folder)"
            )
        offset = _position(path, tensor.name, info, "offset", 0)
        nbytes = _position(path, tensor.name, info, "length", nbytes)
        full = os.path.join(folder, location)
        if not os.path.exists(full):
            raise FileNotFoundError(
                f"{path}: initializer {tensor.name!r} keeps its data in {location!r} ({full}), which "
                "does not exist; keep the external data files beside the model"
            )
        out.append(_Initializer(tensor, dtype, shape, nbytes, full, offset))
    return model, out


def _position(path: str, name: str, info: dict[str, str], field: str, default: int) -> int:
    """External data ``field`` of ``name``, a byte count a file can hold; ``default`` where not given."""
    text = info.get(field)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < _POSITION_LIMIT:
        raise ValueError(
            f"{path}: initializer {name!r} has external data {field} {text!r}, which is not a byte "
            f"{'position' if field == 'offset' else 'count'} in a file (0 to 2**63 - 1); the model "
            "is damaged: export it again"
        )
    return value


def open_onnx(path: str) -> dict[str, tvm_ffi.Tensor]:
    """``{initializer name: tvm Tensor}`` of the ONNX model at ``path``."""
    from onnx import numpy_helper

    held = _convert.Held(tvm_ffi.device("cpu", 0), "open")
    external: dict[str, list[list[Any]]] = {}
    _, found = _initializers(path)
    for t in found:
        name = t.proto.name
        if t.file is None:  # to_array's array may be read-only (the model's bytes): Hold copies
            held.add(name, numpy_helper.to_array(t.proto), None, f"initializer {name!r} of {path}")
        else:
            external.setdefault(t.file, []).append([name, t.offset, t.bytes, t.dtype, t.shape])
    out: dict[str, tvm_ffi.Tensor] = held.made()
    for data_file, entries in external.items():
        out.update({str(k): v for k, v in _ffi_api.OpenWeights(data_file, "", entries).items()})
    return {t.proto.name: out[t.proto.name] for t in found}


def inspect_onnx(path: str) -> dict[str, Any]:
    """``inspect`` of an ONNX model, without its external data: ``inspect_weights``'s keys, each initializer's
    ``key``, dtype, shape, bytes, ``offset`` (None inside the model) and external data ``file``."""
    model, found = _initializers(path)
    files = sorted({t.file for t in found if t.file is not None})
    tensors = [
        {
            "position": t.proto.name,
            "name": t.proto.name,
            "kind": "tensor",
            "dtype": t.dtype,
            "shape": t.shape,
            "device": "cpu:0",
            "bytes": t.bytes,
            "offset": None if t.file is None else t.offset,
            "key": t.proto.name,
            "aligned": t.file is not None and t.offset % 64 == 0,
            **({} if t.file is None else {"file": t.file}),
        }
        for t in found
    ]
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    return {
        "path": path,
        "kind": "onnx model",
        "format_version": f"onnx (ir_version {model.ir_version}, opsets {opsets})",
        "total_bytes": os.path.getsize(path) + sum(os.path.getsize(f) for f in files),
        "constant_bytes": sum(t.bytes for t in found),
        "payloads": "onnx model",
        "region": None,
        "payload_hashes": "none recorded (an ONNX model records none)",
        "functions": [{"name": "main", "param_names": [], "free": [], "bindings": tensors}],
        "metadata": {p.key: p.value for p in model.metadata_props},
        "files": [{"path": f, "bytes": os.path.getsize(f)} for f in files],
        "self_contained": None,
    }
