# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""What partial() binds: the target (function, module, Relax VM or executable), its signature and
the positions keys reach."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

import tvm_ffi

from . import _convert, _lib
from . import output_specs as _outputs
from . import relax_vm as _relax
from .signature import Param, Signature, resolve

#: The largest position a call can reach: one call passes at most INT32_MAX arguments.
MAX_POSITION = 2**31 - 2

#: Tells "option not given" from any value, None included.
UNSET = object()


def classify(target: Any, device: Any = None) -> tuple[str, Any, Callable[[str], Signature | None] | None]:
    """-> (kind, ffi object, a callable giving a function's Signature by name (a Relax VM's
    parameter names), or None)."""
    if isinstance(target, tvm_ffi.Function):
        return "function", target, None
    type_name = type(target).__name__
    if type_name == "VirtualMachine" and hasattr(target, "module"):
        return "module", target.module, lambda name: resolve(target, name)
    executable = _relax.executable_module(target)
    if executable is not None:  # runs in a VirtualMachine that the partial module records
        mod = _relax.vm_module(executable, _convert.as_device(device))
        return "module", mod, lambda name: _relax.signature_of(mod, name)
    if _relax.runs_relax(target):
        return "module", target, lambda name: _relax.signature_of(target, name)
    if type_name in ("Executable", "VMExecutable") and hasattr(target, "mod"):
        target = target.mod
    if isinstance(target, tvm_ffi.Module):
        if target.kind == "relax.VMExecutable":
            raise TypeError(
                "a Relax VM executable's functions run inside a VirtualMachine: bind "
                "relax.VirtualMachine(exe, device) (or one of its functions) instead"
            )
        return "module", target, None
    if callable(target):
        return "function", tvm_ffi.convert(target), None
    raise TypeError(f"partial() needs a function or a module to bind, got {type_name}, which is not callable")


class TargetView:
    """The target as the binding rules see it.

    ``sig`` is the ORIGINAL function's full parameter list (when known), ``bound`` the original
    positions the target already binds (a partial), and ``free[p]`` the original position of the
    target's free argument ``p`` (None when the parameter count is unknown). Names resolve in
    ``sig``; what the closure's C++ merge receives are positions among the free arguments.
    """

    def __init__(
        self,
        sig: Signature | None,
        bound: frozenset[int],
        closure_name: str | None = None,
        recorded: list[str] | None = None,
    ):
        self.sig = sig
        self.bound = bound
        #: The full parameter list for the C++ merge when the target is a partial that recorded
        #: no names (its bound positions would otherwise be named ``argN``); else [].
        self.original_names = list(sig.names) if sig is not None and bound and recorded is None else []
        #: The name the closure reports in its errors ("" keeps the inner partial's).
        self.closure_name = closure_name if closure_name is not None else (sig.name if sig else "")
        self.free = None if sig is None else [i for i in range(len(sig.params)) if i not in bound]

    @classmethod
    def of(
        cls,
        obj: Any,
        key: str,
        fname: str,
        signature: Any,
        vm: Callable[[str], Signature | None] | None,
    ) -> TargetView:
        bound, recorded = already_bound(obj, key)
        hint = None
        if recorded is not None:
            hint = Signature(fname, tuple(Param(n) for n in recorded))
        elif vm is not None:
            hint = vm(fname)
        if signature is None:
            return cls(hint, bound, "" if recorded is not None else None)
        try:
            sig = resolve(signature, fname)
            assert sig is not None  # signature is not None
        except TypeError:
            if hint is not None and "signature" in hint.names:
                raise TypeError(clash_message("signature", hint.name)) from None
            raise
        if recorded is not None:
            check_against_recorded(sig, recorded, bound)
        elif vm is not None:  # a Relax function: signature= must be that function's own
            assert hint is not None  # vm(fname) gives a Signature
            _relax.check_signature_matches(sig, hint)
        elif bound and max(bound) >= len(sig.params):
            raise ValueError(
                f"signature= has {len(sig.params)} parameters ({', '.join(sig.names)}), but the "
                f"partial already binds position {max(bound)} of {sig.name}(): signature= describes "
                "the original function's full parameter list"
            )
        return cls(sig, bound, recorded=recorded)

    def positions(self, keyed: dict[int, Any], named: dict[str, Any]) -> dict[int, tuple[int | None, Any]]:
        """-> {position among the target's arguments: (original position or None, value)}."""
        out = {}
        for position, value in keyed.items():
            original = None
            if self.free is not None:
                if position >= len(self.free):
                    raise IndexError(f"bound index {position} is out of range: {self._takes()}")
                original = self.free[position]
            out[position] = (original, value)
        if named and self.sig is None:
            raise TypeError(
                f"binding by name ({', '.join(named)}) needs signature=: a PrimFunc, the TE tensor "
                "list, a Relax function or VirtualMachine, or a list of parameter names"
            )
        for name, value in named.items():
            assert self.sig is not None and self.free is not None  # both known with a signature
            original = self.sig.index_of(name)
            if original in self.bound:
                raise TypeError(
                    f"parameter {name!r} (position {original}) of {self.sig.name}() is already bound "
                    "(or an output) in this partial; rebind() replaces bound values"
                )
            position = self.free.index(original)
            if position in out:
                raise TypeError(
                    f"parameter {name!r} (position {original}) is bound both by index and by name"
                )
            out[position] = (original, value)
        return out

    def label(self, position: int, original: int | None) -> str:
        if original is None or self.sig is None:
            return f"position {position}"
        text = f"parameter {self.sig.params[original].name!r} (position {original}"
        if position != original:
            text += f"; free argument {position} of the partial"
        return text + ")"

    def free_names(self) -> list[str]:
        """The names of the target's free arguments: what the C++ merge expects beside positions."""
        if self.sig is None or self.free is None:
            return []
        return [self.sig.params[i].name for i in self.free]

    def _takes(self) -> str:
        assert self.sig is not None and self.free is not None  # called when a signature is known
        names = ", ".join(self.free_names())
        if not self.bound:
            return f"{self.sig.name}() has {len(self.free)} parameters ({names})"
        return (
            f"the partial of {self.sig.name}() takes {len(self.free)} free arguments ({names}); "
            "integer positions count among them"
        )


def already_bound(obj: Any, key: str) -> tuple[frozenset[int], list[str] | None]:
    """-> (original positions a partial fills for ``key`` (bound values and outputs), its
    recorded names or None)."""
    if not _lib.is_partial(obj):
        return frozenset(), None
    bound = frozenset(_outputs.taken_positions(obj, key))
    recorded = _lib.param_names(obj)
    return bound, ([str(n) for n in recorded[key]] if key in recorded else None)


def check_against_recorded(sig: Signature, recorded: list[str], bound: frozenset[int]) -> None:
    """A signature given on top of a partial must be the list the partial recorded."""
    if len(sig.params) != len(recorded):
        raise ValueError(
            f"signature= has {len(sig.params)} parameters ({', '.join(sig.names)}), but the partial "
            f"records {len(recorded)} for {sig.name}() ({', '.join(recorded)}): signature= describes "
            "the original function's full parameter list"
        )
    differ = [i for i, n in enumerate(recorded) if i not in bound and n != sig.params[i].name]
    if differ:
        i = differ[0]
        raise ValueError(
            f"signature= names position {i} {sig.params[i].name!r}, but the partial records "
            f"{recorded[i]!r} there ({', '.join(recorded)}): pass the original function's signature"
        )


def clash_message(option: str, function: str) -> str:
    text = (
        f"{option} is both a parameter of {function}() and an option of partial(): bind it as "
        f'partial(f, {{"{option}": value}}, ...)'
    )
    if option == "device":
        text += "; to place values on a device, bind tvm tensors already there"
    return text


def refuse_option_clashes(view: TargetView, device: Any, function: Any, outputs: Any) -> None:
    """A keyword that is an option AND a parameter of the signature: never guess which is meant."""
    if view.sig is None:
        return
    given = {
        "device": device is not UNSET,
        "function": function is not UNSET,
        "outputs": outputs is not None,
    }
    for option, was_given in given.items():
        if was_given and option in view.sig.names:
            raise TypeError(clash_message(option, view.sig.name))


def split_keys(bound: Any) -> tuple[dict[int, Any], dict[str, Any]]:
    """The ``bound`` mapping -> ({position: value}, {name: value})."""
    if bound is None:
        return {}, {}
    if not isinstance(bound, Mapping):
        raise TypeError(f"bound must be a mapping {{position or name: value}}, got {type(bound).__name__}")
    keyed, named = {}, {}
    for key, value in bound.items():
        if isinstance(key, str):
            named[str(key)] = value
            continue
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise TypeError(
                f"bound key {key!r} is not an integer position or a parameter name "
                "(positions are ints >= 0, names are str)"
            )
        index = int(key)
        if index < 0:
            raise ValueError(f"bound index {index} is negative; positions count from 0")
        if index > MAX_POSITION:  # refused before any value is converted (C++ checks it too)
            raise IndexError(
                f"bound index {index} cannot be reached: a call passes at most "
                f"{MAX_POSITION + 1} arguments, so positions go up to {MAX_POSITION}"
            )
        keyed[index] = value
    return keyed, named


def merge_named(named: dict[str, Any], by_name: dict[str, Any]) -> dict[str, Any]:
    """Names from the mapping and from keywords, each bound once."""
    for name in by_name:
        if name in named:
            raise TypeError(f"parameter {name!r} is bound twice: as a key of the mapping and as a keyword")
    return {**named, **by_name}


def positions(
    bound: Mapping[int, Any] | None, by_name: dict[str, Any], sig: Signature | None
) -> dict[int, Any]:
    positions = {}
    for key, value in (bound or {}).items():
        if isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise TypeError(f"bound key {key!r} is not an integer position (positions are ints >= 0)")
        index = int(key)
        if index < 0:
            raise ValueError(f"bound index {index} is negative; positions count from 0")
        if sig is not None and index >= len(sig.params):
            raise IndexError(
                f"bound index {index} is out of range: {sig.name}() has {len(sig.params)} "
                f"parameters ({', '.join(sig.names)})"
            )
        positions[index] = value
    for name, value in by_name.items():
        assert sig is not None  # rebind() refuses names without one
        index = sig.index_of(name)
        if index in positions:
            raise TypeError(f"parameter {name!r} (position {index}) is bound both by index and by name")
        positions[index] = value
    return positions


def label(index: int, sig: Signature | None) -> str:
    if sig is None:
        return f"position {index}"
    return f"parameter {sig.params[index].name!r} (position {index})"
