# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""An ONNX model's initializers as tensors to bind: ``open_weights("model.onnx")``.

The model is read with the onnx package (imported only here) without its external data; each
initializer kept in an external data file (``location``, ``offset``, ``length``, resolved in the
model's folder) is mapped from that file by C++ (``tvm_partial.MapTensors``: a view where its
data is 64-byte aligned, else an aligned copy), the others are copied out of the model.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tvm_ffi

from .. import _ffi_api


def open_onnx(path: str) -> dict[str, tvm_ffi.Tensor]:
    """``{initializer name: tvm Tensor}`` of the ONNX model at ``path``."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(path, load_external_data=False)
    folder = os.path.dirname(os.path.realpath(path))
    out: dict[str, tvm_ffi.Tensor] = {}
    external: dict[str, list[list[Any]]] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            array = np.ascontiguousarray(numpy_helper.to_array(tensor))
            out[tensor.name] = _ffi_api.AlignedCopy(tvm_ffi.from_dlpack(array), tvm_ffi.device("cpu", 0))
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if not location or os.path.isabs(location) or ".." in location.replace("\\", "/").split("/"):
            raise ValueError(
                f"{path}: initializer {tensor.name!r} keeps its data in {location!r}, which is not a "
                "file beside the model (an external data location must be relative, inside its folder)"
            )
        dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)))
        shape = [int(d) for d in tensor.dims]
        nbytes = int(info["length"]) if "length" in info else int(np.prod(shape)) * np.dtype(dtype).itemsize
        external.setdefault(os.path.join(folder, location), []).append(
            [tensor.name, int(info.get("offset", 0)), nbytes, dtype, shape]
        )
    for data_file, entries in external.items():
        out.update({str(k): v for k, v in _ffi_api.MapTensors(data_file, entries).items()})
    return {t.name: out[t.name] for t in model.graph.initializer}
