# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""What ``partial()`` and ``rebind()`` bind: the target (function, module, Relax VM or executable), its
signature, how names and positions reach parameters, and the options a parameter name must not shadow."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import tvm_ffi

from . import _convert, _facts, _ffi_api
from . import programs as _programs
from . import relax_vm as _relax
from . import remote as _remote
from .signature import Param, Signature, resolve

#: Tells "option not given" from any value, None included.
UNSET = object()


@dataclass
class Target:
    """What is bound, classified: ``kind`` "function" or "module"; ``obj`` the ffi object;
    ``names(function)`` a Relax function's parameters (None: no names); ``executable`` a Relax
    executable, whose VirtualMachine ``relax_vm.bind_model`` makes once ``device=`` is checked."""

    kind: str
    obj: Any
    names: Callable[[str], Signature | None] | None = None
    executable: tvm_ffi.Module | None = None


def classify(target: Any) -> Target:
    """What ``target`` is; refused when partial() cannot bind it."""
    if isinstance(target, tvm_ffi.Function):
        return Target("function", target)
    type_name = type(target).__name__
    if type_name == "VirtualMachine" and hasattr(target, "module"):
        return Target("module", target.module, lambda name: resolve(target, name))
    executable = _relax.executable_module(target)
    if executable is not None:  # runs in a VirtualMachine that the partial module records
        return Target("module", executable, _relax.names_of(executable), executable)
    if _relax.runs_relax(target):
        return Target("module", target, lambda name: _relax.signature_of(target, name))
    if type_name in ("Executable", "VMExecutable") and hasattr(target, "mod"):
        target = target.mod
    if isinstance(target, tvm_ffi.Module):
        if target.kind == "relax.VMExecutable":
            raise TypeError(
                "a Relax VM executable's functions run inside a VirtualMachine: bind "
                "relax.VirtualMachine(exe, device) (or one of its functions) instead"
            )
        return Target("module", target)
    if callable(target):
        return Target("function", tvm_ffi.convert(target))
    raise TypeError(f"partial() needs a function or a module to bind, got {type_name}, which is not callable")


def signature_of(
    obj: Any,
    key: str,
    fname: str,
    signature: Any,
    names: Callable[[str], Signature | None] | None,
    entry: str = "partial",
    facts: _facts.Facts | None = None,
) -> tuple[Signature | None, frozenset[int], list[str] | None]:
    """-> (the ORIGINAL function's full parameter list, ``signature=`` checked against recorded or Relax
    names, else those or None; the original positions ``obj`` fills for ``key``; recorded names or None)."""
    facts = facts or _facts.of(obj)
    bound: frozenset[int] = frozenset()
    recorded: list[str] | None = None
    if facts is not None:  # outputs fill their positions as bound values do
        outputs = {int(s["position"]) for s in facts.outputs.get(key, [])}
        bound, recorded = frozenset(facts.bindings.get(key, {})) | outputs, facts.names.get(key)
    if recorded is not None:
        hint: Signature | None = Signature(fname, tuple(Param(n) for n in recorded))
    else:
        hint = names(fname) if names is not None else None
    if signature is None:
        return hint, bound, recorded
    try:
        sig = resolve(signature, fname)
        assert sig is not None  # signature is not None
    except TypeError:
        if hint is not None and "signature" in hint.names:
            raise TypeError(clash_message("signature", hint.name, entry)) from None
        raise
    if recorded is not None:  # a signature given on top of a partial must be the list it recorded
        if len(sig.params) != len(recorded):
            raise ValueError(
                f"signature= has {len(sig.params)} parameters ({', '.join(sig.names)}), but the partial "
                f"records {len(recorded)} for {sig.name}() ({', '.join(recorded)}): signature= describes "
                "the original function's full parameter list"
            )
        for i, n in enumerate(recorded):
            if i not in bound and n != sig.params[i].name:
                raise ValueError(
                    f"signature= names position {i} {sig.params[i].name!r}, but the partial records "
                    f"{recorded[i]!r} there ({', '.join(recorded)}): pass the original function's signature"
                )
    elif names is not None:  # a Relax function: signature= must be that function's own
        assert hint is not None  # names(fname) gives a Signature
        if sig.names != hint.names:
            raise ValueError(
                f"signature= has parameters ({', '.join(sig.names)}), but the Relax function "
                f"{hint.name}() has ({', '.join(hint.names)}): pass that function's signature "
                f"(irmodule[{hint.name!r}]), or pick the function with function="
            )
    elif bound and max(bound) >= len(sig.params):
        raise ValueError(
            f"signature= has {len(sig.params)} parameters ({', '.join(sig.names)}), but the "
            f"partial already binds position {max(bound)} of {sig.name}(): signature= describes "
            "the original function's full parameter list"
        )
    return sig, bound, recorded


class TargetView:
    """``sig`` and ``bound`` from ``signature_of``; ``free[p]``: the original position of free argument ``p``
    (None: parameter count unknown). Names resolve in ``sig``; the C++ merge gets free positions."""

    def __init__(
        self,
        sig: Signature | None,
        bound: frozenset[int],
        closure_name: str | None = None,
        recorded: list[str] | None = None,
        program: _programs.Program | None = None,
    ):
        self.sig = sig
        self.bound = bound
        #: The full parameter list for the C++ merge when the target is a partial that recorded
        #: no names (its bound positions would otherwise be named ``argN``); else [].
        self.original_names = list(sig.names) if sig is not None and bound and recorded is None else []
        #: The name the closure reports in its errors ("" keeps the inner partial's).
        self.closure_name = closure_name if closure_name is not None else (sig.name if sig else "")
        self.free = None if sig is None else [p for p in range(len(sig.params)) if p not in bound]
        #: The frontend's program given as ``signature=`` (programs.py), whose names ``sig`` has.
        self.program = program

    @classmethod
    def of(cls, target: Target, key: str, fname: str, signature: Any) -> TargetView:
        program = _programs.of(signature)
        sig, bound, recorded = signature_of(
            target.obj, key, fname, None if program is not None else signature, target.names
        )
        if program is not None:
            if sig is None:
                raise TypeError(
                    f"signature={type(signature).__name__} gives the model's names to the Relax "
                    f"function imported from it ({program.imported}): bind the compiled Relax "
                    f"executable (tvm.compile of that module), or its VirtualMachine"
                )
            sig = program.rename(sig)
        if signature is None:
            return cls(sig, bound, "" if recorded is not None else None)
        return cls(sig, bound, recorded=recorded, program=program)

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


def clash_message(option: str, function: str, entry: str = "partial") -> str:
    """A keyword that is both an option of ``entry`` (partial or rebind) and a parameter."""
    first, verb = ("f", "bind") if entry == "partial" else ("module", "rebind")
    text = (
        f"{option} is both a parameter of {function}() and an option of {entry}(): {verb} it as "
        f'{entry}({first}, {{"{option}": value}}, ...)'
    )
    if option == "device":
        text += "; to place values on a device, bind tvm tensors already there"
    return text


def split_keys(bound: Any, by_name: dict[str, Any]) -> tuple[dict[int, Any], dict[str, Any]]:
    """``bound`` and the keywords -> ({position: value}, {name: value}); string keys are names, each
    once. C++ checks positions before any value is converted (no copy for an unreachable one)."""
    bound = {} if bound is None else bound
    if not isinstance(bound, Mapping):
        raise TypeError(f"bound must be a mapping {{position or name: value}}, got {type(bound).__name__}")
    keyed, named = {}, {}
    for key, value in bound.items():
        if isinstance(key, str):
            named[str(key)] = value
        elif isinstance(key, bool) or not isinstance(key, numbers.Integral):
            raise TypeError(
                f"bound key {key!r} is not an integer position or a parameter name "
                "(positions are ints >= 0, names are str)"
            )
        else:
            keyed[int(key)] = value
    if keyed:  # clamped to int64; the error names an int past it as given
        clamped = [min(max(k, -(2**63)), 2**63 - 1) for k in keyed]
        _ffi_api.CheckPosition(clamped, ["" if c == k else str(k) for c, k in zip(clamped, keyed)])
    for name in by_name:
        if name in named:
            raise TypeError(f"parameter {name!r} is bound twice: as a key of the mapping and as a keyword")
    return keyed, {**named, **by_name}


def param_at(index: int, sig: Signature | None) -> Param | None:
    return sig.params[index] if sig is not None and index < len(sig.params) else None


def as_device(device: Any) -> Any:
    if device is None or isinstance(device, tvm_ffi.Device):
        return device
    if isinstance(device, str):
        try:
            return tvm_ffi.device(device)
        except Exception as err:
            raise ValueError(
                f"device={device!r} is not a device name ({err}); pass one such as 'cpu', 'cuda:1', "
                "or a device (tvm.cuda(1))"
            ) from None
    # An int is not taken as a device type or an index: which one was meant cannot be told.
    raise TypeError(
        f"device= must be a device (tvm.cpu(0), tvm.cuda(1)) or its name ('cuda:1'), got "
        f"{type(device).__name__} {device!r}"
    )


def check_available(device: Any) -> None:
    """Refuse a device of this process that is not there: its TVM runtime is missing, or no such
    device is present. A device of an RPC session is its session's to check."""
    if device is None or _remote.device_session(device) is not None:
        return
    kind, index, name = int(device.dlpack_device_type()), int(device.index), str(device)
    where = f"device={name} is not available in this process"
    if kind == tvm_ffi.DLDeviceType.kDLCPU:
        if index != 0:
            raise ValueError(f"{where}: the CPU is cpu:0; pass device='cpu' (or leave device= out)")
        return
    exists = _convert.runtime_global("runtime.GetDeviceAttr")  # imports tvm, which registers the APIs
    api = name.rpartition(":")[0]
    if tvm_ffi.get_global_func(f"device_api.{api}", allow_missing=True) is None:
        raise ValueError(
            f"{where}: this TVM has no {api} runtime (it was built without it); bind on a device "
            "this process has (device='cpu'), or where TVM has that runtime"
        )
    if not int(exists(kind, index, 0)):  # 0: kExist
        raise ValueError(
            f"{where}: no {api} device {index} is present; pass the index of a device this machine has"
        )
