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
from . import remote as _remote
from ._scalars import check_scalar
from .signature import Param

#: Bound tensors are converted to (or must already be) contiguous and aligned to this many bytes.
ALIGNMENT = 64


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
class Copies:
    """The aligned copies one ``partial()`` or ``rebind()`` call made, by the memory they copy
    (data pointer, dtype, shape, strides, device), so that memory given in several places is
    copied once and those places hold one tensor (stored once when exported)."""

    def __init__(self) -> None:
        self._made: dict[tuple, tvm_ffi.Tensor] = {}

    def get(self, key: tuple | None, make: Any) -> tvm_ffi.Tensor:
        if key is None:
            return make()
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = make()
        return found


def convert(
    value: Any, param: Param | None, label: str, device: Any, verb: str = "bind", copies: Copies | None = None
) -> Any:
    """Turn one bound value into what the closure holds, checking it against its parameter.
    ``label`` names it in errors (``parameter 'w' (position 1)``), which begin ``cannot {verb}``.
    ``copies``: the copies made so far in this call, reused for the same memory."""
    copies = copies or Copies()
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        check_scalar(value, param, label, verb)
        return value
    if isinstance(value, tvm_ffi.Tensor):
        check_tensor(_dtype_of(value, value, label, verb), tuple(value.shape), param, label, verb)
        # A remote tensor's data pointer is a local handle, not its address; the server's
        # allocator aligns what it allocates.
        aligned = value.data_ptr() % ALIGNMENT == 0 or _remote.device_session(value.device) is not None
        if aligned and value.is_contiguous():
            return value
        return copies.get(  # kernels crash on such data
            _memory_key(value, value.device), lambda: _aligned_copy(value, value.device, value, label, verb)
        )
    if isinstance(value, np.ndarray):
        return _from_numpy(value, param, label, device, verb, copies)
    if hasattr(value, "__dlpack__"):
        return _from_dlpack(value, param, label, device, verb, copies)
    if isinstance(value, (tvm_ffi.Function, tvm_ffi.Module, tvm_ffi.Object)):
        return value  # held as is; a partial module refuses to save it
    raise TypeError(
        f"cannot {verb} {label}: expected a tensor (tvm, numpy or DLPack), int, float, bool, "
        f"str or None, got {type(value).__name__}"
    )


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


def _memory_key(tensor: tvm_ffi.Tensor, device: Any) -> tuple | None:
    """What makes two tensors one for ``Copies``: data pointer, dtype, shape, strides, source
    device and target device; None for an empty tensor (nothing to share)."""
    pointer = tensor.data_ptr()
    if not pointer:
        return None
    strides = tuple(tensor.strides) if not tensor.is_contiguous() else ()
    return ("tvm", pointer, str(tensor.dtype), tuple(tensor.shape), strides, str(tensor.device), str(device))


def _from_numpy(
    array: np.ndarray, param: Param | None, label: str, device: Any, verb: str, copies: Copies
) -> tvm_ffi.Tensor:
    """A numpy array -> a contiguous, 64-byte-aligned tvm Tensor (a copy, the only one)."""
    if array.dtype.hasobject:
        raise TypeError(f"cannot {verb} {label}: a numpy array of Python objects is not a tensor")
    if array.dtype.kind == "c":
        raise TypeError(_complex_message(str(array.dtype), label, verb))
    check_tensor(str(array.dtype), array.shape, param, label, verb)  # before copying
    pointer = array.__array_interface__["data"][0]
    key = ("numpy", pointer, array.dtype.str, array.dtype.name, array.shape, array.strides, str(device))
    return copies.get(
        key if pointer and array.size else None, lambda: _numpy_copy(array, label, device, verb)
    )


def _numpy_copy(array: np.ndarray, label: str, device: Any, verb: str) -> tvm_ffi.Tensor:
    extension = _extension_dtype(array.dtype, label, verb)
    source: Any = array
    shape = tuple(array.shape)
    if extension is not None and tvm_ffi.dtype(extension).bits < 8:  # float4_e2m1fn
        source = _pack_nibbles(array)
    elif extension is not None:  # numpy's DLPack export refuses these: copy the bits, retype after
        source = array.view(f"uint{array.dtype.itemsize * 8}")
    if not source.flags.writeable:
        # np.load(mmap_mode="r"), np.frombuffer(bytes): numpy exports a read-only array only as
        # DLPack 1.0, which tvm-ffi reads; the copy below only reads it.
        try:
            source = tvm_ffi.from_dlpack(source.__dlpack__(max_version=(1, 0)))
        except TypeError:  # numpy < 2 has no DLPack 1.0
            source = np.array(source)
    tensor = _aligned_copy(source, device, array, label, verb)
    if not isinstance(tensor, tvm_ffi.Tensor):  # tvm-ffi hands back what it was given: numpy
        tensor = tvm_ffi.from_dlpack(tensor)
    if extension is not None:
        tensor = create_view()(tensor, tvm_ffi.Shape(shape), extension, 0)
    return tensor


def _pack_nibbles(array: np.ndarray) -> np.ndarray:
    """4-bit values stored one per byte (ml_dtypes) -> packed two per byte in C order, element 2k
    in the high nibble and 2k + 1 in the low one (zero past an odd count), as TVM's own
    ``tvm.runtime.Tensor.copyfrom`` packs float4_e2m1fn and its ``numpy()`` unpacks it."""
    nibbles = np.ascontiguousarray(array).reshape(-1).view("uint8") & 0x0F
    if nibbles.size % 2:
        nibbles = np.concatenate([nibbles, np.zeros(1, "uint8")])
    return ((nibbles[0::2] << 4) | nibbles[1::2]).astype("uint8")


def _from_dlpack(
    value: Any, param: Param | None, label: str, device: Any, verb: str, copies: Copies
) -> tvm_ffi.Tensor:
    """A DLPack tensor (torch, ...) -> a contiguous, 64-byte-aligned tvm Tensor (a copy), its dtype
    compared as a TVM dtype."""
    _refuse_unpacked_sub_byte(value, label, verb)
    try:
        view = tvm_ffi.from_dlpack(value)  # no copy
    except Exception as err:
        raise TypeError(
            f"cannot {verb} {label}: {type(value).__name__} is not a usable tensor ({err})"
        ) from err
    dtype, shape = _dtype_of(view, value, label, verb), tuple(view.shape)
    packed = _packed_lanes(dtype, shape)  # torch float4_e2m1fn_x2: float4_e2m1fn, last dim x 2
    if packed is not None:
        dtype, shape = packed
    check_tensor(dtype, shape, param, label, verb)

    def make() -> tvm_ffi.Tensor:
        tensor = _aligned_copy(view, device, value, label, verb)
        if packed is not None:
            tensor = create_view()(tensor, tvm_ffi.Shape(shape), dtype, 0)
        return tensor

    return copies.get(_memory_key(view, device), make)


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


#: How an allocation failure reads: numpy's MemoryError, AlignedEmpty's "out of memory allocating",
#: the device allocators' "failed to allocate" / "out of memory", C++'s bad_alloc.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|\boom\b|bad_alloc|(cannot|could not|couldn't|failed to|unable to) allocate|"
    r"allocation (failed|failure)",
    re.IGNORECASE,
)


def _aligned_copy(source: Any, device: Any, value: Any, label: str, verb: str) -> tvm_ffi.Tensor:
    try:
        return _ffi_api.AlignedCopy(source, device)
    except Exception as err:
        if isinstance(err, MemoryError) or _OUT_OF_MEMORY.search(str(err)):
            raise MemoryError(
                f"cannot {verb} {label}: out of memory copying {_size(value)} into an aligned tensor "
                f"on {device} ({err}); free memory or bind a smaller tensor"
            ) from err
        raise TypeError(
            f"cannot {verb} {label}: {type(value).__name__} is not a usable tensor ({err})"
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


def rebound(old: Any, value: Any, param: Param, label: str, device: Any, copies: Copies | None = None) -> Any:
    """The value that replaces ``old``: of the same kind (a tensor of the same dtype and shape, or
    a scalar of the same kind; an int may replace a float), checked against ``param`` (its dtype
    when the caller gave ``signature=``), else refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(old, tvm_ffi.Tensor):
        if not (isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__")):
            raise TypeError(
                f"rebind: cannot rebind {label}: a tensor was bound there, got "
                f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                f"{tuple(old.shape)}"
            )
        like_old = Param(param.name, "tensor", str(old.dtype), tuple(old.shape))
        return convert(value, like_old, label, device, verb="rebind", copies=copies)
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
    check_scalar(value, param, label, verb="rebind")
    return value
