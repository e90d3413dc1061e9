# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Parameter lists of the functions ``partial()`` binds: names, and dtype and shape where known
(from a tirx ``PrimFunc``, TE tensors, a Relax ``Function`` or ``VirtualMachine``, or names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Param:
    name: str
    #: "tensor", "scalar" or None (unknown).
    kind: str | None = None
    #: dtype string ("float32"), None when unknown.
    dtype: str | None = None
    #: static extents; None for a dynamic extent; the whole tuple None when unknown.
    shape: tuple[int | None, ...] | None = None
    #: per dim: an int (static), ("var", name) (a bare shape variable), ("expr", text); None: unknown.
    dims: tuple[int | tuple[str, str], ...] | None = field(default=None, compare=False)

    def describe(self) -> str:
        """``x: Tensor[(1, 3, 8, 8), float32]`` or ``x``."""
        if self.kind == "tensor" and self.dtype is not None:
            dims = "?" if self.shape is None else ", ".join("?" if d is None else str(d) for d in self.shape)
            return f"{self.name}: Tensor[({dims}), {self.dtype}]"
        if self.kind == "scalar" and self.dtype is not None:
            return f"{self.name}: {self.dtype}"
        return self.name


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[Param, ...]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def index_of(self, name: str) -> int:
        """The position of the one parameter called ``name``; refused when none or several are."""
        found = [i for i, p in enumerate(self.params) if p.name == name]
        if not found:
            raise TypeError(
                f"{self.name}() has no parameter {name!r}; its parameters are {', '.join(self.names)}"
            )
        if len(found) > 1:  # unnamed TE placeholders are all called "placeholder"
            raise TypeError(
                f"parameter name {name!r} is ambiguous: {self.name}() has it at positions "
                f"{', '.join(map(str, found))}; bind by position instead "
                f"(partial(f, {{{found[0]}: value}}, ...))"
            )
        return found[0]


def _tensor(name: Any, dtype: Any, extents: Any) -> Param:
    """A tensor parameter with its static and symbolic dims (``extents`` None: shape unknown)."""
    if extents is None:
        return Param(str(name), "tensor", str(dtype))
    dims: list[int | tuple[str, str]] = []
    for e in extents:
        value = getattr(e, "value", e)
        if isinstance(value, int):
            dims.append(int(value))
        elif type(e).__name__ in ("Var", "SizeVar"):
            dims.append(("var", str(e.name)))
        else:
            dims.append(("expr", str(e)))
    static = tuple(d if isinstance(d, int) else None for d in dims)
    return Param(str(name), "tensor", str(dtype), static, tuple(dims))


def _param_from_var(var: Any) -> Param:
    """A tirx buffer var or scalar var, or a Relax var (tvm 0.26+ share ``tvm.ir.expr.Var``)."""
    from tvm.tirx import buffer as _buffer

    name = str(var.name)
    if _buffer.is_buffer_var(var):
        return _tensor(name, var.dtype, var.shape)
    ty: Any = getattr(var, "ty", None)
    shape = getattr(ty, "shape", None)
    if shape is not None or type(ty).__name__ == "TensorType":
        return _tensor(name, ty.dtype, getattr(shape, "values", None))
    dtype = getattr(ty, "dtype", None)
    if dtype is not None and type(ty).__name__ == "PrimType":
        return Param(name, "scalar", str(dtype))
    return Param(name)


def resolve(signature: Any, name: str) -> Signature | None:
    """``signature=`` as a ``Signature`` (None stays None); ``name`` names the function in errors
    and picks it out of a Relax ``VirtualMachine`` or IRModule."""
    if signature is None:
        return None
    if isinstance(signature, Signature):
        return signature
    kind = type(signature).__name__
    if kind == "PrimFunc":
        buffers = getattr(signature, "buffer_map", None) or {}  # tvm 0.25: buffers live in buffer_map
        params = [
            _tensor(buffers[v].name, buffers[v].dtype, buffers[v].shape)
            if v in buffers
            else _param_from_var(v)
            for v in signature.params
        ]
        attrs = getattr(signature, "attrs", None)
        symbol = attrs.get("global_symbol") if attrs is not None and "global_symbol" in attrs else None
        return Signature(str(symbol) if symbol is not None else name, tuple(params))
    if kind == "Function" and type(signature).__module__.startswith("tvm.relax"):
        return Signature(name, tuple(_param_from_var(p) for p in signature.params))
    if kind == "IRModule":
        return resolve(signature[name], name)
    if kind == "VirtualMachine":
        arity = signature._get_function_arity(name)
        params = [Param(str(signature._get_function_param_name(name, i))) for i in range(arity)]
        return Signature(name, tuple(params))
    if isinstance(signature, (list, tuple)):
        from tvm import te

        params = []
        for item in signature:
            if isinstance(item, str):
                params.append(Param(item))
            elif isinstance(item, te.Tensor):
                params.append(_tensor(item.op.name, item.dtype, item.shape))
            elif hasattr(item, "name") and hasattr(item, "ty"):
                params.append(_param_from_var(item))
            else:
                raise TypeError(
                    f"signature entries must be parameter names, TE tensors or vars, got {type(item).__name__}"
                )
        return Signature(name, tuple(params))
    raise TypeError(
        "signature must be a tirx PrimFunc, the TE tensor list given to te.create_prim_func, "
        f"a Relax Function or VirtualMachine, or a list of names; got {kind}"
    )
