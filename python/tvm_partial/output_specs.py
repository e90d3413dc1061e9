# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``partial(..., outputs=...)``: parameters a partial allocates on each call and returns.

TE/TIR kernels are destination-passing (``main(data, weights, bias, result)`` writes ``result``); with
``outputs="result"`` C++ allocates it per call (contiguous, 64-byte aligned) and returns it; several come back
as a ``tvm_ffi.Array``, in the order given. A dimension is static, or exactly a shape variable (``n``) of an
input's shape, read from that argument each call (resolved here to (position, axis)); ``n * 2`` is refused."""

from __future__ import annotations

import numbers
from typing import Any, overload

import tvm_ffi

from . import _facts
from .signature import Signature


@overload
def outputs(obj: tvm_ffi.Function) -> list[dict[str, Any]]: ...
@overload
def outputs(obj: tvm_ffi.Module) -> dict[str, list[dict[str, Any]]]: ...
def outputs(obj: tvm_ffi.Function | tvm_ffi.Module) -> list[dict[str, Any]] | dict[str, list[dict[str, Any]]]:
    """The outputs a partial allocates and returns: a list for a partial function, ``{function:
    [...]}`` for a partial module. Each is ``{"position", "name" (when recorded), "dtype",
    "shape"}``, a dimension being an int or ``(argument position, axis)`` read from the call."""
    facts = _facts.of(obj, "outputs")
    result: dict[str, list[dict[str, Any]]] = {}
    for function, specs in facts.outputs.items():
        recorded = facts.names.get(function, [])
        result[function] = []
        for spec in specs:
            position = int(spec["position"])
            shape = [int(d) if isinstance(d, int) else (int(d[0]), int(d[1])) for d in spec["shape"]]
            name = {"name": recorded[position]} if position < len(recorded) else {}
            result[function].append(
                {"position": position, "dtype": str(spec["dtype"]), "shape": shape, **name}
            )
    return result.get("", []) if isinstance(obj, tvm_ffi.Function) else result


def resolve(spec: Any, sig: Signature | None, taken: frozenset[int]) -> list[list[Any]]:
    """``outputs=`` -> specs for ``runtime.PartialApply`` (which refuses an output also bound); names and
    shape variables resolve in the full ``sig``; integers and results skip ``taken`` (inner partial's)."""
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if not items:
        return []
    if sig is None or any(p.kind is None for p in sig.params):
        raise TypeError(
            "outputs= needs a signature with dtypes and shapes (a PrimFunc or the TE "
            "tensor list given to te.create_prim_func) to allocate the outputs"
        )
    free = [p for p in range(len(sig.params)) if p not in taken]  # the positions C++'s ToWrapped maps to
    positions = []
    for item in items:
        if isinstance(item, str):
            full = sig.index_of(item)
            if full in taken:
                raise TypeError(
                    f"output {item!r} (position {full}) is already bound or an output of "
                    "the partial given; it cannot become an output"
                )
        elif isinstance(item, numbers.Integral) and not isinstance(item, bool):
            if not 0 <= int(item) < len(free):
                raise IndexError(
                    f"output position {int(item)} is out of range: {sig.name}() takes "
                    f"{len(free)} arguments here"
                )
            full = free[int(item)]
        else:
            raise TypeError(f"outputs= takes parameter names or positions, got {type(item).__name__}")
        if full in positions:
            raise ValueError(f"output {sig.params[full].name!r} is given twice in outputs=")
        positions.append(full)

    specs = []
    for full in positions:
        param = sig.params[full]
        if param.kind != "tensor" or param.dtype is None or param.dims is None:
            raise TypeError(
                f"output {param.name!r} needs a tensor parameter with a known dtype and "
                f"shape; the signature has {param.describe()}"
            )
        dims = []
        for axis, dim in enumerate(param.dims):
            if isinstance(dim, int):
                dims.append([-1, dim])
                continue
            kind, text = dim
            if kind != "var":
                raise ValueError(
                    f"output {param.name!r} dimension {axis} is {text}: only static "
                    "extents and plain shape variables (n) can be allocated; give the "
                    "output a variable of its own or allocate it yourself"
                )
            sources = [  # the first axis of a free input (no output) that is exactly the variable
                [free.index(i), a]
                for i, p in enumerate(sig.params)
                if i not in positions and i not in taken and p.kind == "tensor"
                for a, d in enumerate(p.dims or ())
                if d == ("var", text)
            ]
            if not sources:
                raise ValueError(
                    f"output {param.name!r} dimension {axis} is {text}, which no free "
                    f"input's shape has as a dimension of its own, so a call cannot "
                    f"tell its extent"
                )
            dims.append(sources[0])
        specs.append([free.index(full), param.dtype, dims])
    return specs


def dim_text(d: Any, names: list[str]) -> int | str:
    """An output's extent as describe() and inspect show it: a static extent as it is, else the
    axis of the argument it is read from (``data.shape[0]``; ``arg3`` where no name is known)."""
    if isinstance(d, numbers.Integral):
        return int(d)
    position, axis = int(d[0]), int(d[1])
    name = names[position] if position < len(names) and names[position] else f"arg{position}"
    return f"{name}.shape[{axis}]"
