# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Relax models as partial-module targets: the ``partial_apply_vm`` module (cpp/relax_vm.cc) creates the
VirtualMachine on first use, on the device recorded at bind time, so it serialises with code and weights."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import tvm_ffi

from . import _convert, _facts, _ffi_api
from .signature import Param, Signature

#: The module kind of cpp/relax_vm.cc.
KIND = "partial_apply_vm"
#: Allocators of the Relax VM (tvm.runtime.vm.VirtualMachine.NAIVE_ALLOCATOR / POOLED_ALLOCATOR).
ALLOCATORS = {"naive": 1, "pooled": 2}
_CPU = int(tvm_ffi.DLDeviceType.kDLCPU)


def executable_module(target: Any) -> tvm_ffi.Module | None:
    """The ``relax.VMExecutable`` module of ``target`` (what ``tvm.compile`` returns for a Relax
    IRModule, or ``tvm.runtime.load_module`` of an exported one), or None."""
    if type(target).__name__ in ("Executable", "VMExecutable"):
        target = getattr(target, "mod", target)
    return target if isinstance(target, tvm_ffi.Module) and target.kind == "relax.VMExecutable" else None


#: Module kinds of device code in an executable's import tree -> the device type they run on.
_DEVICE_CODE = {"cuda": 2, "opencl": 4, "vulkan": 7, "metal": 8, "hip": 10, "rocm": 10}


def _device_code_kinds(mod: tvm_ffi.Module, seen: set[int] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    kinds: set[str] = set()
    for sub in mod.imports:
        if id(sub) not in seen:
            seen.add(id(sub))
            kinds |= ({sub.kind} if sub.kind in _DEVICE_CODE else set()) | _device_code_kinds(sub, seen)
    return kinds


def bind_model(
    target: tvm_ffi.Module,
    sig: Signature | None,
    named: dict[str, Any],
    device: Any = None,
    program: dict[str, Any] | None = None,
    memory: str = "pooled",
) -> tuple[tvm_ffi.Module, dict[str, Any]]:
    """A Relax model bound by name in one C++ call (``tvm_partial.BindModel``) -> (module, {param: value}).
    With ``device``, ``target`` is an executable, made a ``partial_apply_vm`` module on that device (plus the
    CPU, which the VM needs for shape computations) with the ``memory`` allocator, recording the model's
    names from ``program`` (``Program.description``) or the executable (models.py's record); else ``target``
    already runs a model. ``named`` is settled against that record: compiled-in values checked and dropped,
    a tied tensor given to each of its names that is a parameter."""
    devices = None
    if device is not None:
        device_type, device_id = int(device.dlpack_device_type()), int(device.index)
        kinds = _device_code_kinds(target)  # refused: a device the executable has no code for
        if device_type == _CPU and kinds:
            raise ValueError(
                f"the Relax executable holds device code for {', '.join(sorted(kinds))}, but device= "
                f"is {device}: pass the device it was compiled for (device=tvm.cuda(0), ...), or compile "
                "for the CPU"
            )
        if device_type != _CPU and not any(_DEVICE_CODE[k] == device_type for k in kinds):
            compiled = ", ".join(sorted(kinds)) or "the CPU only"
            raise ValueError(
                f"the Relax executable was compiled for {compiled}, but device= is {device}: compile it for "
                "that device's target, or bind it with device= where its code runs"
            )
        if memory not in ALLOCATORS:
            raise ValueError(f"memory must be one of {', '.join(ALLOCATORS)}, got {memory!r}")
        devices = [[device_type, device_id, ALLOCATORS[memory]]]
        if device_type != _CPU:
            devices.append([_CPU, 0, ALLOCATORS[memory]])
    elif not named or not runs_relax(target):
        return target, named
    views = {name: _convert.view(value, f"{name!r}") for name, value in named.items()}
    found = _ffi_api.BindModel(target, devices, program, list(sig.names) if sig is not None else [], views)
    return found["module"], {str(param): named[str(given)] for param, given in found["names"].items()}


def names_of(executable: tvm_ffi.Module) -> Callable[[str], Signature]:
    """The parameters of ``executable``'s functions by name, read before the device is chosen (a parameter
    may be named ``device``) from a VirtualMachine loaded from it but not initialised, which needs none."""
    probe = executable["vm_load_executable"]()  # imports the compiled code, not the executable
    return lambda name: signature_of(probe, name, annotated=executable)


def runs_relax(mod: Any) -> bool:
    """Whether ``mod`` is a ``partial_apply_vm`` module or a partial module wrapping one."""
    if not isinstance(mod, tvm_ffi.Module):
        return False
    if mod.kind != "partial_apply":
        return mod.kind == KIND
    facts = _facts.of(mod)  # the kind of the code it binds (C++'s ``WrappedCode``)
    return facts is not None and facts.code_kind == KIND


def signature_of(mod: tvm_ffi.Module, name: str, annotated: tvm_ffi.Module | None = None) -> Signature:
    """The Relax function's parameters: names from the VM ``mod`` runs; dtype and static shape from the
    annotations the executable (found under ``annotated``, else ``mod``) keeps for its argument checks
    (``ErrorContext(... annotation=R.Tensor(...))``), else the VM checks them at each call."""
    try:
        arity = int(mod["get_function_arity"](name))
    except Exception as err:
        raise AttributeError(
            f"the Relax model has no function {name!r} ({err}); pick one with function="
        ) from None
    get_name = mod["get_function_param_name"]
    names = [str(get_name(name, i)) for i in range(arity)]
    known = _annotations(annotated if annotated is not None else mod, name)
    params = (
        Param(p, "tensor", *known[(i, p)]) if (i, p) in known else Param(p) for i, p in enumerate(names)
    )
    return Signature(name, tuple(params))


_CONTEXT = re.compile(
    r"ErrorContext\(fn=(?P<fn>[^,()]+), loc=param\[(?P<index>\d+)\], param=(?P<name>[^,()]+), "
    r'annotation=R\.Tensor\(\((?P<shape>[^()]*)\), dtype="(?P<dtype>\w+)"\)\)'
)


def find_executable(mod: Any) -> tvm_ffi.Module | None:
    """The Relax VM executable in ``mod``'s chain of first imports (``mod`` itself, the
    ``partial_apply_vm`` module, a partial module over it), or None."""
    executable = mod if isinstance(mod, tvm_ffi.Module) else None
    while executable is not None and executable.kind != "relax.VMExecutable":
        if executable.kind == "partial_apply":  # its code, which may not be its first import
            facts = _facts.of(executable)
            executable = facts.code if facts is not None else None
        else:
            executable = executable.imports[0] if executable.imports else None
    return executable


def _annotations(mod: tvm_ffi.Module, name: str) -> dict[tuple[int, str], tuple[str, tuple[int | None, ...]]]:
    """{(position, name): (dtype, static shape with None for symbolic extents)} of ``name``'s
    tensor parameters, from the executable's constant pool; empty when unavailable."""
    executable = find_executable(mod)
    stats = executable.get_function("stats", query_imports=False) if executable is not None else None
    if stats is None:
        return {}
    found: dict[tuple[int, str], tuple[str, tuple[int | None, ...]]] = {}
    for m in _CONTEXT.finditer(str(stats())):
        if m["fn"] == name:
            shape = tuple(int(d) if d.strip().isdigit() else None for d in m["shape"].split(",") if d.strip())
            found[(int(m["index"]), m["name"])] = (m["dtype"], shape)
    return found
