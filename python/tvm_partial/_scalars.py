# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bound scalars (int, float, bool, str, None): each reaches the kernel unchanged or is refused
(never wrapped or turned into inf), checked against the parameter's dtype where known."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import tvm_ffi

from .signature import Param

#: What the FFI carries of an int.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def check_scalar(value: Any, param: Param | None, label: str, verb: str = "bind") -> None:
    """Refuse a scalar that would not reach the kernel as given (never a silently changed value): a wrong
    type with TypeError, a value out of range with ValueError.

    - An int must fit in 64 bits (a larger one reaches the callee as an opaque Python object).
    - With the dtype known: an int parameter takes an int (not bool) in range (uint64: up to INT64_MAX, the
      FFI passes it signed); a bool one a bool; a float one a float or int (not bool) within the largest
      finite value, an int only if exact. Floats are otherwise rounded; inf and nan pass.
    """
    what = f"cannot {verb} {label}"
    dtype = _scalar_dtype(param)
    if param is not None and param.kind == "tensor" and value is not None:
        raise TypeError(f"{what}: {type(value).__name__} given for tensor parameter {param.describe()}")
    if value is None or dtype is None:  # None: the kernel's own argument check refuses it
        _check_int64(value, what)
        return
    assert param is not None  # a dtype comes from a parameter
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if dtype.is_bool or dtype.is_integer:
        expected = "True or False" if dtype.is_bool else "an int"
        if not (isinstance(value, bool) if dtype.is_bool else is_int):
            raise TypeError(
                f"{what}: {type(value).__name__} {value!r} does not fit {param.describe()}: bind {expected}"
            )
        if is_int:
            _check_int_range(value, dtype, param, what)
    elif dtype.is_float:
        if not (is_int or isinstance(value, float)):
            raise TypeError(
                f"{what}: {type(value).__name__} {value!r} does not fit {param.describe()}: bind a float"
            )
        _check_float_range(value, str(dtype), param, what)
        _check_int64(value, what)
    else:
        _check_int64(value, what)


def _scalar_dtype(param: Param | None) -> Any:
    """The tvm_ffi dtype of a scalar parameter with one lane, else None (nothing to check)."""
    if param is None or param.kind != "scalar" or param.dtype is None:
        return None
    try:
        dtype = tvm_ffi.dtype(param.dtype)
    except Exception:
        return None
    return dtype if dtype.lanes == 1 else None


def _check_int64(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(
            f"{what}: int {value} does not fit in 64 bits, which is how the FFI passes an int; "
            "bind it in a tensor, or as a float"
        )


def _check_int_range(value: int, dtype: Any, param: Param, what: str) -> None:
    bits = int(dtype.bits)
    signed = int(dtype.type_code) == 0  # DLDataTypeCode kDLInt
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    note = ""
    if high > INT64_MAX:
        high, note = INT64_MAX, ": a scalar travels as a signed 64-bit int; bind larger values in a tensor"
    if not low <= value <= high:
        raise ValueError(
            f"{what}: int {value} is out of range for {param.describe()} ({low} to {high}{note})"
        )


def _check_float_range(value: int | float, dtype: str, param: Param, what: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        return  # inf and nan reach the kernel as they are
    largest = _largest_finite(dtype)
    if largest is None:  # a dtype neither numpy nor ml_dtypes describes: not checked
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
    if isinstance(value, int):
        rounded = _round_to(float(value), dtype)
        if rounded is not None and int(rounded) != value:
            raise ValueError(
                f"{what}: int {value} has no exact {dtype} value (it would become {int(rounded)}); "
                "pass a float to accept the rounding"
            )


def _numpy_dtype(dtype: str) -> Any:
    try:
        import ml_dtypes  # noqa: F401  (registers bfloat16, float8_* ... with numpy)
    except ImportError:
        pass
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def _largest_finite(dtype: str) -> float | None:
    found = _numpy_dtype(dtype)
    if found is None:
        return None
    try:
        if found.kind == "f":
            return float(np.finfo(found).max)
        import ml_dtypes

        return float(ml_dtypes.finfo(found).max)
    except Exception:
        return None


def _round_to(value: float, dtype: str) -> float | None:
    """``value`` rounded to ``dtype`` (as the kernel receives it), back as a Python float."""
    found = _numpy_dtype(dtype)
    if found is None or not math.isfinite(value):
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(np.array(value, dtype=np.float64).astype(found))
