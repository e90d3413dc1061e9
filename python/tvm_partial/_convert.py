# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bound values: what the closure holds, made once at bind time, and checked against the parameter.

- Tensors: a tvm Tensor is held by reference when it is contiguous and 64-byte aligned (copied
  otherwise); numpy arrays (read-only ones too), DLPack tensors (torch, ...) and ml_dtypes arrays
  are copied into a contiguous, 64-byte-aligned tvm Tensor on ``device=``. Dtype and static shape
  are checked before anything is copied. Within one call (``Copies``), the same memory given in
  several places (the same array, or views with the same data pointer, dtype, shape and strides,
  as a torch state_dict gives tied weights) is copied once, so those places hold one tensor.
- Sub-byte dtypes: a tvm Tensor is taken packed as it is; numpy (ml_dtypes) stores
  float4_e2m1fn one element per byte, so it is packed two per byte as TVM's own
  ``tvm.runtime.Tensor.copyfrom`` packs it (element 2k in the high nibble). numpy int4 and uint4
  are refused: TVM's ``Tensor.numpy()`` reads them two per byte while the CPU code ``tvm.compile``
  makes reads one element per byte, so no packing is unambiguous; int2, uint2 and the float6
  types, for which TVM defines no packing from numpy, are refused too. torch's float4_e2m1fn_x2 (two
  per byte) becomes float4_e2m1fn with twice the last dimension, its bytes as they are; torch's
  int1-7 and uint1-7 (one element per byte, exported over DLPack as int8/uint8) are refused.
- Scalars reach the kernel unchanged or are refused (``check_scalar``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tvm_ffi

from . import _ffi_api
from ._scalars import check_scalar
from .signature import Param


def runtime_global(name: str) -> tvm_ffi.Function:
    """A global of the TVM runtime, which ``import tvm`` registers."""
    found = tvm_ffi.get_global_func(name, allow_missing=True)
    if found is None:
        import tvm  # noqa: F401

        found = tvm_ffi.get_global_func(name)
    return found


def create_view() -> tvm_ffi.Function:
    """``runtime.TVMTensorCreateView(tensor, shape, dtype, offset)``: the same bytes, retyped."""
    return runtime_global("runtime.TVMTensorCreateView")


# -- values -------------------------------------------------------------------------------------------
class Held:
    """The values one ``partial()`` or ``rebind()`` call binds, made in one crossing.

    ``add`` checks scalars here and adapts each tensor to a view over its memory (numpy, torch
    or any DLPack tensor; what only Python can see: numpy's extension dtypes, torch's packed
    ones); ``made`` hands every view to C++ (``tvm_partial.Hold``), which checks dtypes and
    shapes against the parameters, copies each into contiguous, 64-byte-aligned memory on the
    device, and copies the same memory given in several places (tied weights) once.
    """

    def __init__(self, device: Any, verb: str = "bind") -> None:
        self.device, self.verb = device, verb
        self._values: dict[Any, Any] = {}
        self._views: dict[Any, list[Any]] = {}

    def add(self, key: Any, value: Any, param: Param | None, label: str) -> None:
        if isinstance(value, np.generic):
            value = value.item()
        if value is None or isinstance(value, (bool, int, float, str)):
            check_scalar(value, param, label, self.verb)
            self._values[key] = value
            return
        tensor = _view_of(value, label, self.verb)
        if tensor is None:
            self._values[key] = value  # a function, module or object, held as is
            return
        if param is not None and param.kind == "scalar":
            raise TypeError(
                f"cannot {self.verb} {label}: a tensor given for scalar parameter {param.describe()}"
            )
        known = param if param is not None and param.kind == "tensor" else None
        self._views[key] = [
            tensor,
            isinstance(value, tvm_ffi.Tensor),
            None if known is None else known.dtype,
            None if known is None else known.shape,
            "" if param is None else param.describe(),
            label,
        ]

    def made(self) -> dict[Any, Any]:
        """-> {key: what the closure holds}, in the order the keys were added."""
        if self._views:
            tensors = _ffi_api.Hold(list(self._views.values()), self.device, self.verb)
            self._values.update(zip(self._views, tensors))
        return self._values


def convert(value: Any, param: Param | None, label: str, device: Any, verb: str = "bind") -> Any:
    """One bound value as the closure holds it (``Held`` for one value)."""
    held = Held(device, verb)
    held.add(0, value, param, label)
    return held.made()[0]


def view(value: Any, label: str) -> Any:
    """``value`` as C++ reads it before anything is copied: an array as a tvm Tensor over its
    memory where DLPack can carry it (numpy, torch, ...; others copied as ``convert`` does), any
    other value as it is."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.flags.writeable and value.dtype.num < 256:
        return tvm_ffi.from_dlpack(value)
    if isinstance(value, np.ndarray) or (
        hasattr(value, "__dlpack__") and not isinstance(value, tvm_ffi.Tensor)
    ):
        try:
            return tvm_ffi.from_dlpack(value)
        except Exception:
            return convert(value, None, label, tvm_ffi.device("cpu", 0))
    return value


def _view_of(value: Any, label: str, verb: str) -> tvm_ffi.Tensor | None:
    """A tensor value -> a tvm Tensor over its memory, typed as TVM types it; None for a value
    that is not a tensor but is held as is (a function, module or object); else refused."""
    if isinstance(value, tvm_ffi.Tensor):
        _dtype_of(value, value, label, verb)
        return value
    if isinstance(value, np.ndarray):
        return _numpy_view(value, label, verb)
    if hasattr(value, "__dlpack__"):
        return _dlpack_view(value, label, verb)
    if isinstance(value, (tvm_ffi.Function, tvm_ffi.Module, tvm_ffi.Object)):
        return None  # a partial module refuses to save it
    raise TypeError(
        f"cannot {verb} {label}: expected a tensor (tvm, numpy or DLPack), int, float, bool, "
        f"str or None, got {type(value).__name__}"
    )


def _numpy_view(array: np.ndarray, label: str, verb: str) -> tvm_ffi.Tensor:
    if array.dtype.hasobject:
        raise TypeError(f"cannot {verb} {label}: a numpy array of Python objects is not a tensor")
    if array.dtype.kind == "c":
        raise TypeError(_complex_message(str(array.dtype), label, verb))
    extension = _extension_dtype(array.dtype, label, verb)
    source = array
    if extension is not None and tvm_ffi.dtype(extension).bits < 8:  # float4_e2m1fn
        source = _pack_nibbles(array)
    elif extension is not None:  # numpy's DLPack export refuses these: the bits, retyped below
        source = np.ascontiguousarray(array).view(f"uint{array.dtype.itemsize * 8}")
    if source.flags.writeable:
        tensor = tvm_ffi.from_dlpack(source)
    else:  # np.load(mmap_mode="r"), np.frombuffer(bytes): numpy exports these as DLPack 1.0 only
        try:
            tensor = tvm_ffi.from_dlpack(source.__dlpack__(max_version=(1, 0)))
        except TypeError:  # numpy < 2 has no DLPack 1.0
            tensor = tvm_ffi.from_dlpack(np.array(source))
    if extension is not None:
        tensor = create_view()(tensor, tvm_ffi.Shape(array.shape), extension, 0)
    return tensor


def _pack_nibbles(array: np.ndarray) -> np.ndarray:
    """4-bit values stored one per byte (ml_dtypes) -> packed two per byte in C order, element 2k
    in the high nibble and 2k + 1 in the low one (zero past an odd count), as TVM's own
    ``tvm.runtime.Tensor.copyfrom`` packs float4_e2m1fn and its ``numpy()`` unpacks it."""
    nibbles = np.ascontiguousarray(array).reshape(-1).view("uint8") & 0x0F
    if nibbles.size % 2:
        nibbles = np.concatenate([nibbles, np.zeros(1, "uint8")])
    return ((nibbles[0::2] << 4) | nibbles[1::2]).astype("uint8")


def _dlpack_view(value: Any, label: str, verb: str) -> tvm_ffi.Tensor:
    """A DLPack tensor (torch, ...) -> a tvm Tensor over its memory, its dtype a TVM dtype."""
    _refuse_unpacked_sub_byte(value, label, verb)
    try:
        tensor = tvm_ffi.from_dlpack(value)  # no copy
    except Exception as err:
        raise TypeError(
            f"cannot {verb} {label}: {type(value).__name__} is not a usable tensor ({err})"
        ) from err
    packed = _packed_lanes(_dtype_of(tensor, value, label, verb), tuple(tensor.shape))
    if packed is None:
        return tensor
    if not tensor.is_contiguous():
        raise TypeError(f"cannot {verb} {label}: a packed {tensor.dtype} tensor must be contiguous")
    return create_view()(tensor, tvm_ffi.Shape(packed[1]), packed[0], 0)


def _packed_lanes(dtype: str, shape: tuple[int, ...]) -> tuple[str, tuple[int, ...]] | None:
    """A vector of sub-byte lanes filling whole bytes (``float4_e2m1fnx2``, how tvm-ffi names
    torch's float4_e2m1fn_x2) -> (the one-lane dtype, the shape with the last dimension times the
    lanes): the same bytes, as TVM declares packed parameters. None for any other dtype."""
    parsed = tvm_ffi.dtype(dtype)
    if parsed.lanes <= 1 or parsed.bits >= 8 or (parsed.bits * parsed.lanes) % 8 or not shape:
        return None
    return str(parsed.with_lanes(1)), (*shape[:-1], shape[-1] * parsed.lanes)


def _refuse_unpacked_sub_byte(value: Any, label: str, verb: str) -> None:
    """torch.int1-7 and uint1-7 keep one element per byte and reach DLPack as int8/uint8: binding
    them would hand a kernel declared int4 bytes of another layout (or be taken as int8)."""
    name = str(getattr(value, "dtype", "")).rpartition(".")[2]
    match = re.fullmatch(r"(u?int)([1-7])", name)
    if match is None or not hasattr(value, "__dlpack__"):
        return
    raise TypeError(
        f"cannot {verb} {label}: torch stores {name} one element per byte and hands it over DLPack "
        f"as {match.group(1)}8; TVM packs {name} ({match.group(2)} bits per element): pack the "
        f"values and bind a tvm Tensor (tvm.runtime.tensor(packed_uint8)._create_view(shape, "
        f"'{name}')), or for 4 bits an ml_dtypes {name} numpy array"
    )


def _dtype_of(tensor: tvm_ffi.Tensor, value: Any, label: str, verb: str) -> str:
    """The TVM dtype of ``tensor``; refused when TVM has none (complex: DLPack type code 5)."""
    try:
        return str(tensor.dtype)
    except ValueError as err:
        foreign = str(getattr(value, "dtype", "")) if not isinstance(value, tvm_ffi.Tensor) else ""
        if not foreign:
            try:  # numpy names every DLPack dtype of host memory
                foreign = str(np.from_dlpack(tensor).dtype)
            except Exception:
                foreign = ""
        foreign = foreign.rpartition(".")[2]  # torch.complex64 -> complex64
        if "complex" in foreign or "type_code=5" in str(err):
            raise TypeError(_complex_message(foreign or "complex", label, verb)) from None
        raise TypeError(f"cannot {verb} {label}: TVM has no dtype for this tensor ({err})") from None


def _complex_message(dtype: str, label: str, verb: str) -> str:
    return (
        f"cannot {verb} {label}: {dtype} tensors cannot be bound: TVM has no complex dtypes; bind "
        "the real and imaginary parts as a float tensor (torch.view_as_real(t), or a numpy "
        "array's .view(float32 or float64))"
    )


def _extension_dtype(dtype: np.dtype, label: str, verb: str) -> str | None:
    """The TVM dtype of a numpy dtype that DLPack cannot carry (ml_dtypes: bfloat16, float8...,
    registered with numpy as user dtypes, some of kind "f"), None for an ordinary dtype."""
    if dtype.num < 256 or dtype.fields is not None or dtype.subdtype is not None:  # NPY_USERDEF
        return None
    name = str(dtype)
    try:
        tvm_dtype = tvm_ffi.dtype(name)
    except Exception:
        raise TypeError(f"cannot {verb} {label}: numpy dtype {name} has no TVM equivalent") from None
    if name in ("int4", "uint4"):
        raise TypeError(
            f"cannot {verb} {label}: numpy stores {name} one element per byte, and TVM has two "
            f"layouts for it (Tensor.numpy() reads two elements per byte, the code tvm.compile "
            f"makes for the CPU reads one per byte), so no packing from numpy is unambiguous; "
            f"pack the values as your kernel reads them and bind a tvm Tensor "
            f"(tvm.runtime.tensor(packed_uint8)._create_view(shape, '{name}'))"
        )
    if tvm_dtype.lanes != 1 or (tvm_dtype.bits != dtype.itemsize * 8 and name != "float4_e2m1fn"):
        raise TypeError(
            f"cannot {verb} {label}: numpy stores dtype {name} in {dtype.itemsize * 8} bits per "
            f"element, TVM packs it in {tvm_dtype.bits}, and TVM defines no packing of {name} from "
            f"numpy; pack the values and bind a tvm Tensor "
            f"(tvm.runtime.tensor(packed_uint8)._create_view(shape, '{name}'))"
        )
    return name


def check_tensor(dtype: str, shape: tuple[int, ...], param: Param | None, label: str, verb: str) -> None:
    """A tensor of ``dtype`` and ``shape`` for ``param``: refused when it does not match."""
    if param is None or param.kind is None:
        return
    if param.kind == "scalar":
        raise TypeError(f"cannot {verb} {label}: a tensor given for scalar parameter {param.describe()}")
    if param.dtype is not None and dtype != param.dtype:
        raise TypeError(f"cannot {verb} {label}: dtype {dtype} does not match {param.describe()}")
    if param.shape is None:
        return
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(param.shape) or any(p is not None and p != s for p, s in zip(param.shape, shape)):
        raise ValueError(f"cannot {verb} {label}: shape {shape} does not match {param.describe()}")


# -- scalars ------------------------------------------------------------------------------------------
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


def rebound(held: Held, key: Any, old: Any, value: Any, param: Param, label: str) -> None:
    """Add to ``held`` the value that replaces ``old``: of the same kind (a tensor of the same
    dtype and shape, or a scalar of the same kind; an int may replace a float), checked against
    ``param`` (its dtype when the caller gave ``signature=``), else refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(old, tvm_ffi.Tensor):
        if not (isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__")):
            raise TypeError(
                f"rebind: cannot rebind {label}: a tensor was bound there, got "
                f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                f"{tuple(old.shape)}"
            )
        held.add(key, value, Param(param.name, "tensor", str(old.dtype), tuple(old.shape)), label)
        return
    old_kind, new_kind = _kind_of(old), _kind_of(value)
    if old_kind == "float" and new_kind == "int":
        check_scalar(value, param, label, verb="rebind")
        try:
            exact = float(value) == value
        except OverflowError:
            exact = False
        if not exact:  # past 2**53 the float would not be the int given
            raise ValueError(
                f"rebind: cannot rebind {label}: the int {value} has no exact float value; pass a float"
            )
        value, new_kind = float(value), "float"
    if new_kind != old_kind:
        raise TypeError(
            f"rebind: cannot rebind {label}: {_a(old_kind)} was bound there, got "
            f"{_a(new_kind)}; pass {_a(old_kind)}"
        )
    held.add(key, value, param, label)
