# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bound values: conversion to what the closure holds (aligned tvm tensors, scalars) and checks
against the parameter."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tvm_ffi

from . import _lib
from . import remote as _remote
from .signature import Param

#: Bound tensors are converted to (or must already be) contiguous and aligned to this many bytes.
ALIGNMENT = 64


def as_device(device: Any, default: tuple[str, int] | None = ("cpu", 0)) -> Any:
    if device is None:
        return None if default is None else tvm_ffi.device(*default)
    if isinstance(device, str):
        return tvm_ffi.device(device)
    return device


def convert(value: Any, param: Param | None, label: str, device: Any) -> Any:
    """Turn one bound value into what the closure holds, checking it against its parameter."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        check_scalar(value, param, label)
        return value
    if isinstance(value, tvm_ffi.Tensor):
        tensor = value
        # A remote tensor's data pointer is a local handle, not its address; the server's
        # allocator aligns what it allocates.
        aligned = tensor.data_ptr() % ALIGNMENT == 0 or _remote.device_session(tensor.device) is not None
        if not (aligned and tensor.is_contiguous()):
            tensor = aligned_copy(tensor, tensor.device, value, label)  # kernels crash on such data
    elif isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        tensor = foreign_to_tensor(value, param, label, device)
    elif isinstance(value, (tvm_ffi.Function, tvm_ffi.Module, tvm_ffi.Object)):
        return value  # held as is; a partial module refuses to save it
    else:
        raise TypeError(
            f"cannot bind {label}: expected a tensor (tvm, numpy or DLPack), int, float, bool, "
            f"str or None, got {type(value).__name__}"
        )
    check_tensor(tensor, param, label)
    return tensor


def foreign_to_tensor(value: Any, param: Param | None, label: str, device: Any) -> tvm_ffi.Tensor:
    """A numpy array or DLPack tensor -> a contiguous, 64-byte-aligned tvm Tensor (a copy)."""
    source, extension = value, None
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"cannot bind {label}: a numpy array of Python objects is not a tensor")
        if param is not None and param.dtype is not None:
            check_dtype(str(value.dtype), param, label)  # before copying
        extension = _extension_dtype(value.dtype, label)
        if extension is not None:  # numpy's DLPack export refuses these: copy the bits, retype after
            source = value.view(f"uint{value.dtype.itemsize * 8}")
    tensor = aligned_copy(source, device, value, label)
    if not isinstance(tensor, tvm_ffi.Tensor):
        # tvm-ffi hands a tensor back in the caller's framework (torch in, torch out): the same
        # memory, seen as a tvm Tensor, so that dtypes compare as TVM dtypes.
        tensor = tvm_ffi.from_dlpack(tensor)
    if extension is not None:
        tensor = create_view()(tensor, tvm_ffi.Shape(tuple(tensor.shape)), extension, 0)
    return tensor


def _extension_dtype(dtype: np.dtype, label: str) -> str | None:
    """The TVM dtype of a numpy dtype that DLPack cannot carry (ml_dtypes: bfloat16, float8...),
    None for an ordinary dtype."""
    if dtype.kind != "V" or dtype.fields is not None or dtype.subdtype is not None:
        return None
    name = str(dtype)
    try:
        tvm_dtype = tvm_ffi.dtype(name)
    except Exception:
        raise TypeError(f"cannot bind {label}: numpy dtype {name} has no TVM equivalent") from None
    if tvm_dtype.lanes != 1 or tvm_dtype.bits != dtype.itemsize * 8:
        raise TypeError(
            f"cannot bind {label}: numpy stores dtype {name} in {dtype.itemsize * 8} bits per element, "
            f"TVM in {tvm_dtype.bits}; pack the values and bind a tvm Tensor instead"
        )
    return name


def create_view() -> tvm_ffi.Function:
    view = tvm_ffi.get_global_func("runtime.TVMTensorCreateView", allow_missing=True)
    if view is None:  # registered by the TVM runtime
        import tvm  # noqa: F401

        view = tvm_ffi.get_global_func("runtime.TVMTensorCreateView")
    return view


#: How an allocation failure reads: numpy's MemoryError, AlignedEmpty's "out of memory allocating",
#: the device allocators' "failed to allocate" / "out of memory", C++'s bad_alloc.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|\boom\b|bad_alloc|(cannot|could not|couldn't|failed to|unable to) allocate|"
    r"allocation (failed|failure)",
    re.IGNORECASE,
)


def aligned_copy(source: Any, device: Any, value: Any, label: str) -> tvm_ffi.Tensor:
    try:
        return _lib.aligned_copy(source, device)
    except Exception as err:
        if isinstance(err, MemoryError) or _OUT_OF_MEMORY.search(str(err)):
            raise MemoryError(
                f"cannot bind {label}: out of memory copying {_size(value)} into an aligned tensor "
                f"on {device} ({err}); free memory or bind a smaller tensor"
            ) from err
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} is not a usable tensor ({err})"
        ) from err


def _size(value: Any) -> str:
    """``1024 bytes``: the byte size of a tensor, for messages."""
    try:
        if isinstance(value, tvm_ffi.Tensor):
            bits = tvm_ffi.dtype(str(value.dtype)).bits * tvm_ffi.dtype(str(value.dtype)).lanes
            return f"{int(np.prod(value.shape, dtype=np.int64)) * ((bits + 7) // 8)} bytes"
        return f"{int(value.nbytes)} bytes"
    except Exception:
        return "a tensor of unknown size"


def check_dtype(dtype: str, param: Param, label: str) -> None:
    if param.dtype is not None and dtype != param.dtype:
        raise TypeError(f"cannot bind {label}: dtype {dtype} does not match {param.describe()}")


def check_tensor(tensor: tvm_ffi.Tensor, param: Param | None, label: str) -> None:
    if param is None or param.kind is None:
        return
    if param.kind == "scalar":
        raise TypeError(f"cannot bind {label}: a tensor given for scalar parameter {param.describe()}")
    check_dtype(str(tensor.dtype), param, label)
    if param.shape is None:
        return
    shape = tuple(tensor.shape)
    if len(shape) != len(param.shape) or any(p is not None and p != s for p, s in zip(param.shape, shape)):
        raise ValueError(f"cannot bind {label}: shape {shape} does not match {param.describe()}")


def check_scalar(value: Any, param: Param | None, label: str) -> None:
    if param is None or param.kind is None or value is None:
        return
    if param.kind == "tensor":
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} given for tensor parameter {param.describe()}"
        )
    dtype = param.dtype or ""
    if dtype == "bool":
        ok = isinstance(value, bool)
    elif dtype.startswith(("int", "uint")):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif dtype.startswith(("float", "bfloat")):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = True
    if not ok:
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} {value!r} does not fit {param.describe()}"
        )


#: The kinds a bound scalar can have; a rebind keeps the kind.
_SCALAR_KINDS = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (type(None), "None"))


def _kind_of(value: Any) -> str:
    if isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__"):
        return "tensor"
    for cls, kind in _SCALAR_KINDS:
        if isinstance(value, cls):
            return kind
    return type(value).__name__


def _a(kind: str) -> str:
    return {"int": "an int", "None": "None"}.get(kind, f"a {kind}")


def rebound(old: Any, value: Any, name: str, label: str, device: Any) -> Any:
    """The value that replaces ``old``: of the same kind (a tensor of the same dtype and shape, or
    a scalar of the same kind; an int may replace a float), else refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(old, tvm_ffi.Tensor):
        if not (isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__")):
            raise TypeError(
                f"rebind: cannot rebind {label}: a tensor was bound there, got "
                f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                f"{tuple(old.shape)}"
            )
        return convert(value, Param(name, "tensor", str(old.dtype), tuple(old.shape)), label, device)
    old_kind, new_kind = _kind_of(old), _kind_of(value)
    if old_kind == "float" and new_kind == "int":
        if float(value) != value:  # past 2**53 the float would not be the int given
            raise ValueError(
                f"rebind: cannot rebind {label}: the int {value} has no exact float value; pass a float"
            )
        value, new_kind = float(value), "float"
    if new_kind != old_kind:
        raise TypeError(
            f"rebind: cannot rebind {label}: {_a(old_kind)} was bound there, got "
            f"{_a(new_kind)}; pass {_a(old_kind)}"
        )
    return value
