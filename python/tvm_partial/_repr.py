# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``describe()``: what a partial binds, as text. Not ``print(pm)``: tvm-ffi picks a repr by type index
(``__ffi_repr__``) and a partial module is a plain ``ffi.Module`` (``ModuleObj`` is final: no subclass
type key, final casts compare the index exactly), so a hook would change every module's repr; a partial
function is an ``ffi.Function`` likewise. See docs/design.md."""

from __future__ import annotations

from typing import Any

import tvm_ffi

from . import _facts
from . import output_specs as _outputs

#: The module kind of a partial module (cpp/partial_module.cc).
_KIND = "partial_apply"
#: Bound strings and objects are cut to this many characters.
_TEXT_LIMIT = 60


def describe(obj: tvm_ffi.Function | tvm_ffi.Module) -> str:
    """What a partial binds, as text for a person (the format may change; for data use
    ``bindings()``, ``param_names()`` and ``outputs()``). ``print(pm)`` still shows tvm-ffi's
    generic ``ffi.Module(imports_=...)``: a module's repr cannot be set for one module kind alone.

    Per function with bindings: its call signature (the parameters left to pass; outputs it
    allocates after ``->``), then each bound position in the wrapped function's full argument
    list with the parameter name, a tensor's dtype, shape and device (never its contents; a
    tensor bound in several places says where it was bound first), a
    scalar's value, a string's value (cut at 60 characters); then the outputs with dtype and
    shape. A partial module's first line names the module kind it wraps and what that imports
    in turn (``library`` for one loaded from a file). For example:

        partial_apply module over llvm, 1 function with bindings
          main(data, result)
            [1] weights = float32[8, 3, 3, 3]@cpu:0
            [2] bias = float32[8]@cpu:0

    A module loaded from a file builds its tensors here if no call has yet. A ``TypeError`` for
    anything that is not a partial of this library, as ``bindings()`` raises.
    """
    facts = _facts.of(obj, "describe")
    held, names = facts.bindings, facts.names
    notes = _tied(facts.payloads)
    _add_shards(facts, notes)
    if isinstance(obj, tvm_ffi.Function):
        return "partial function" + _function(
            held[""], names.get("", []), _outputs.outputs(obj), "", notes.get("", {})
        )
    allocated = _outputs.outputs(obj)
    count = f"{len(held)} function{'' if len(held) == 1 else 's'} with bindings"
    lines = [f"{_KIND} module over {_wrapped(facts.code)}, {count}"]
    for fname in sorted(str(f) for f in held):
        shown = _function(
            held[fname], names.get(fname, []), allocated.get(fname, []), "  ", notes.get(fname, {})
        )
        lines.append(f"  {fname}{shown}")
    return "\n".join(lines)


def _tied(numbers: dict[str, dict[int, int]]) -> dict[str, dict[int, str]]:
    """{function: {position: note}} for each repeat place of a tensor bound in several places
    (same ``Facts.payloads`` number): where it was bound first."""
    first: dict[int, str] = {}
    out: dict[str, dict[int, str]] = {}
    for fname in sorted(numbers):
        for position in sorted(numbers[fname]):
            n = numbers[fname][position]
            if n in first:
                out.setdefault(fname, {})[position] = f"the tensor bound at {first[n]}"
            else:
                first[n] = f"{fname}[{position}]"  # "[0]" for a partial function's
    return out


def _add_shards(facts: _facts.Facts, notes: dict[str, dict[int, str]]) -> None:
    """Where a tensor bound with ``shards=`` is split (a rank's view: which rank's shard)."""
    rank = facts.shard_rank
    for fname, shards in facts.shards.items():
        for position, dim, world, segments in shards:
            blocks = f" in {segments} blocks" if segments > 1 else ""
            split = f"split along dim {dim}{blocks} over {world} ranks"
            notes.setdefault(str(fname), {})[position] = (
                f"rank {rank}'s shard of a tensor {split}" if rank >= 0 else split
            )


def _wrapped(code: tvm_ffi.Module | None) -> str:
    """The kind of the code a partial module binds, then the first imports below that."""
    if code is None:
        return "no compiled code"
    chain: list[str] = []
    while code is not None and len(chain) < 8:
        chain.append(str(code.kind))
        code = code.imports[0] if code.imports else None
    return " > ".join(chain)


def _function(
    bound: Any, names: list[str], allocated: list[dict[str, Any]], indent: str, notes: dict[int, str]
) -> str:
    """``(a, b) -> out`` and one line per bound position and per output."""
    bound = {int(i): v for i, v in bound.items()}
    outs = {int(o["position"]): o for o in allocated}
    if names:
        passed = [n for i, n in enumerate(names) if i not in bound and i not in outs]
        head = f"({', '.join(passed)})"
    else:  # a function bound without a signature: its other parameters are not known here
        head = "(...)"
    if outs:
        head += " -> " + ", ".join(_name(names, p) or f"[{p}]" for p in sorted(outs))
    lines = [head]
    for position in sorted(bound):
        label = " ".join(filter(None, (f"[{position}]", _name(names, position))))
        shared = f" ({notes[position]})" if position in notes else ""
        lines.append(f"{indent}  {label} = {_value(bound[position])}{shared}")
    for position in sorted(outs):
        label = " ".join(filter(None, (f"[{position}]", _name(names, position))))
        dims = ", ".join(str(_outputs.dim_text(d, names)) for d in outs[position]["shape"])
        lines.append(f"{indent}  {label}: {outs[position]['dtype']}[{dims}] allocated per call")
    return "\n".join(lines)


def _name(names: list[str], position: int) -> str:
    return names[position] if position < len(names) else ""


def _value(value: Any) -> str:
    """A tensor as dtype[shape]@device (tvm-ffi's own repr of a tensor); never its contents."""
    if isinstance(value, tvm_ffi.Tensor):
        shape = ", ".join(str(int(d)) for d in value.shape)
        return f"{value.dtype}[{shape}]@{value.device}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return _cut(repr(value))
    if isinstance(value, tvm_ffi.Function):
        return "ffi.Function"
    if isinstance(value, tvm_ffi.Module):
        return f"module of kind {value.kind}"
    return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."
