# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bound values, made once at bind time and checked against the parameter. A contiguous, 64-byte-aligned
tvm Tensor is held by reference; any other tensor (numpy, read-only too; DLPack; ml_dtypes) is copied into
one on ``device=`` after dtype and static-shape checks, once for memory given in several places in one call
(tied weights: same data pointer, dtype, shape, strides). Sub-byte: a tvm Tensor is taken as packed,
float4_e2m1fn from ml_dtypes or torch gets TVM's packing, other numpy or torch ones are refused. Scalars
reach the kernel unchanged or are refused, never wrapped or turned into inf (``check_scalar``)."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import tvm_ffi

from . import _ffi_api
from .signature import Param


def runtime_global(name: str) -> tvm_ffi.Function:
    """A global of the TVM runtime, which ``import tvm`` registers."""
    found = tvm_ffi.get_global_func(name, allow_missing=True)
    if found is None:
        import tvm  # noqa: F401

        found = tvm_ffi.get_global_func(name)
    return found


def _retyped(tensor: tvm_ffi.Tensor, shape: Any, dtype: str) -> tvm_ffi.Tensor:
    return runtime_global("runtime.TVMTensorCreateView")(tensor, tvm_ffi.Shape(shape), dtype, 0)


class Held:
    """What one ``partial()``/``rebind()`` binds: ``add`` checks scalars, wraps tensors as views (only Python
    sees numpy's extension dtypes, torch's packed ones); ``made`` gives all to tvm_partial.Hold at once."""

    def __init__(self, device: Any, verb: str = "bind") -> None:
        self.device, self.verb = device, verb
        self._values: dict[Any, Any] = {}
        self._views: dict[Any, list[Any]] = {}

    def add(self, key: Any, value: Any, param: Param | None, label: str, split: Any = None) -> None:
        """``split``: (dim, world, segments) from ``shards=``; C++ checks the rank's shard on ``param``."""
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
            None if split is None else list(split),
        ]

    def made(self) -> dict[Any, Any]:
        """-> {key: what the closure holds}, in the order the keys were added."""
        if self._views:
            tensors = _ffi_api.Hold(list(self._views.values()), self.device, self.verb)
            self._values.update(zip(self._views, tensors))
        return self._values


def view(value: Any, label: str) -> Any:
    """``value`` as C++ reads it, uncopied: an array (numpy, DLPack) as a tvm Tensor, else as is."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):  # a tvm Tensor stays itself
        return _view_of(value, label, "bind")
    return value


def _view_of(value: Any, label: str, verb: str) -> tvm_ffi.Tensor | None:
    """A tensor -> a TVM-typed tvm Tensor over its memory; None for a function, module or object."""
    if isinstance(value, tvm_ffi.Tensor):
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
    extension = _extension_dtype(array.dtype, label, verb)
    source = array
    if extension is not None and tvm_ffi.dtype(extension).bits < 8:  # float4_e2m1fn
        # One value per byte (ml_dtypes) -> two per byte in C order, element 2k in the high nibble
        # (odd count zero-padded), as ``tvm.runtime.Tensor.copyfrom`` packs float4_e2m1fn.
        nibbles = np.ascontiguousarray(array).reshape(-1).view("uint8") & 0x0F
        if nibbles.size % 2:
            nibbles = np.concatenate([nibbles, np.zeros(1, "uint8")])
        source = ((nibbles[0::2] << 4) | nibbles[1::2]).astype("uint8")
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
        tensor = _retyped(tensor, array.shape, extension)
    return tensor


def _dlpack_view(value: Any, label: str, verb: str) -> tvm_ffi.Tensor:
    # torch.int1-7 and uint1-7 keep one element per byte and reach DLPack as int8/uint8: binding
    # them would hand a kernel declared int4 bytes of another layout (or be taken as int8).
    name = str(getattr(value, "dtype", "")).rpartition(".")[2]
    match = re.fullmatch(r"(u?int)([1-7])", name)
    if match is not None:
        raise TypeError(
            f"cannot {verb} {label}: torch stores {name} one element per byte and hands it over DLPack "
            f"as {match.group(1)}8; TVM packs {name} ({match.group(2)} bits per element): pack the "
            f"values and bind a tvm Tensor (tvm.runtime.tensor(packed_uint8)._create_view(shape, "
            f"'{name}')), or for 4 bits an ml_dtypes {name} numpy array"
        )
    try:
        tensor = tvm_ffi.from_dlpack(value)  # no copy
    except Exception as err:
        raise TypeError(
            f"cannot {verb} {label}: {type(value).__name__} is not a usable tensor ({err})"
        ) from err
    try:
        dtype = str(tensor.dtype)
    except ValueError:  # a dtype TVM has no name for (complex): C++ refuses it by its code
        return tensor
    # Sub-byte lanes filling whole bytes (tvm-ffi's float4_e2m1fnx2 for torch float4_e2m1fn_x2) become
    # one lane with the last dimension times the lanes, as TVM declares packed parameters.
    parsed, shape = tvm_ffi.dtype(dtype), tuple(tensor.shape)
    if parsed.lanes <= 1 or parsed.bits >= 8 or (parsed.bits * parsed.lanes) % 8 or not shape:
        return tensor
    if not tensor.is_contiguous():
        raise TypeError(f"cannot {verb} {label}: a packed {tensor.dtype} tensor must be contiguous")
    return _retyped(tensor, (*shape[:-1], shape[-1] * parsed.lanes), str(parsed.with_lanes(1)))


def _extension_dtype(dtype: np.dtype, label: str, verb: str) -> str | None:
    """The TVM dtype of a numpy user dtype DLPack cannot carry (ml_dtypes', some of kind "f"), or None."""
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


def _kind_of(value: Any) -> str:
    """ "tensor", a scalar's kind (which a rebind keeps), or the value's type."""
    if isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__"):
        return "tensor"
    kinds = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (type(None), "None"))
    return next((kind for cls, kind in kinds if isinstance(value, cls)), type(value).__name__)


def _a(kind: str) -> str:
    return {"int": "an int", "None": "None"}.get(kind, f"a {kind}")


def rebound(held: Held, key: Any, old: Any, value: Any, param: Param, label: str) -> None:
    """Add to ``held`` the value replacing ``old``, checked against ``param``; refused unless of
    the same kind (a tensor: same dtype and shape; an int may replace a float)."""
    if isinstance(value, np.generic):
        value = value.item()
    old_kind, new_kind = _kind_of(old), _kind_of(value)
    if isinstance(old, tvm_ffi.Tensor):
        if new_kind != "tensor":
            raise TypeError(
                f"rebind: cannot rebind {label}: a tensor was bound there, got "
                f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                f"{tuple(old.shape)}"
            )
        held.add(key, value, Param(param.name, "tensor", str(old.dtype), tuple(old.shape)), label)
        return
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


#: What the FFI carries of an int.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def check_scalar(value: Any, param: Param | None, label: str, verb: str = "bind") -> None:
    """Refuse a scalar that would not reach the kernel as given: a wrong type (TypeError), a value out of
    range (ValueError). An int must fit in 64 bits (else the callee gets an opaque Python object). With the
    dtype known: an int parameter takes an int (not bool) in range (uint64: up to INT64_MAX, passed signed);
    a bool one a bool; a float one a float, or an exact int (not bool), within the largest finite value.
    Floats are otherwise rounded; inf and nan pass."""
    what = f"cannot {verb} {label}"
    if param is not None and param.kind == "tensor" and value is not None:
        raise TypeError(f"{what}: {type(value).__name__} given for tensor parameter {param.describe()}")
    is_int = isinstance(value, int) and not isinstance(value, bool)
    dtype = None  # of a scalar parameter with one lane; else nothing to check against
    if param is not None and param.kind == "scalar" and param.dtype is not None:
        try:
            found = tvm_ffi.dtype(param.dtype)
            dtype = found if found.lanes == 1 else None
        except Exception:
            pass
    # None: the kernel's own argument check refuses it; other dtypes (handle): the int64 check alone.
    if value is not None and dtype is not None and (dtype.is_bool or dtype.is_integer or dtype.is_float):
        assert param is not None  # a dtype comes from a parameter
        if dtype.is_bool:
            expected, fits = "True or False", isinstance(value, bool)
        elif dtype.is_integer:
            expected, fits = "an int", is_int
        else:
            expected, fits = "a float", is_int or isinstance(value, float)
        if not fits:
            raise TypeError(
                f"{what}: {type(value).__name__} {value!r} does not fit {param.describe()}: bind {expected}"
            )
        if dtype.is_integer:  # its range lies within int64's
            _check_int_range(value, dtype, param, what)
        elif dtype.is_float:
            _check_float_range(value, str(dtype), param, what)
    if is_int and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(
            f"{what}: int {value} does not fit in 64 bits, which is how the FFI passes an int; "
            "bind it in a tensor, or as a float"
        )


def _check_int_range(value: int, dtype: Any, param: Param, what: str) -> None:
    bits = int(dtype.bits)
    signed = int(dtype.type_code) == 0  # DLDataTypeCode kDLInt
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    note = ""
    if high > INT64_MAX:  # int128 and wider: both ends are int64's
        low, high = max(low, INT64_MIN), INT64_MAX
        note = ": a scalar travels as a signed 64-bit int; bind larger values in a tensor"
    if not low <= value <= high:
        raise ValueError(
            f"{what}: int {value} is out of range for {param.describe()} ({low} to {high}{note})"
        )


def _check_float_range(value: int | float, dtype: str, param: Param, what: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        return  # inf and nan reach the kernel as they are
    try:
        import ml_dtypes  # registers bfloat16, float8_* ... with numpy
    except ImportError:
        pass
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:  # a dtype neither numpy nor ml_dtypes describes: not checked
        return
    try:
        if numpy_dtype.kind == "f":
            largest = float(np.finfo(numpy_dtype).max)
        else:
            import ml_dtypes

            largest = float(ml_dtypes.finfo(numpy_dtype).max)
    except Exception:
        return
    try:
        magnitude = abs(float(value))
    except OverflowError:  # an int past float64
        magnitude = math.inf
    if magnitude > largest:
        raise ValueError(
            f"{what}: {type(value).__name__} {value!r} is out of range for {param.describe()} "
            f"(largest finite value {largest!r})"
        )
    if isinstance(value, int):  # rounded to ``dtype`` as the kernel receives it
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rounded = float(np.array(float(value), dtype=np.float64).astype(numpy_dtype))
        if int(rounded) != value:
            raise ValueError(
                f"{what}: int {value} has no exact {dtype} value (it would become {int(rounded)}); "
                "pass a float to accept the rounding"
            )
