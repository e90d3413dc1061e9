# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``describe()``: a partial's bindings as text. Not ``print(pm)``: tvm-ffi picks a repr by type index
(``__ffi_repr__``), a partial module is a plain ``ffi.Module`` (``ModuleObj`` is final: no subclass
type key), so a hook would change every module's repr; likewise ``ffi.Function``. See docs/design.md."""

from __future__ import annotations

from typing import Any

import tvm_ffi

from . import _facts
from . import output_specs as _outputs

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
    held, names, notes = facts.bindings, facts.names, _notes(facts)
    if isinstance(obj, tvm_ffi.Function):
        allocated = _outputs.outputs(obj)
        return "partial function" + _function(held[""], names.get("", []), allocated, "", notes.get("", {}))
    outs = _outputs.outputs(obj)
    count = f"{len(held)} function{'' if len(held) == 1 else 's'} with bindings"
    lines = [f"partial_apply module over {_wrapped(facts.code)}, {count}"]
    for fname in sorted(held):
        shown = _function(held[fname], names.get(fname, []), outs.get(fname, []), "  ", notes.get(fname, {}))
        lines.append(f"  {fname}{shown}")
    return "\n".join(lines)


def _notes(facts: _facts.Facts) -> dict[str, dict[int, str]]:
    """{function: {position: note}}: where a tensor bound in several places (same ``Facts.payloads``
    number) was bound first, and how a tensor bound with ``shards=`` is split (a rank's view: whose)."""
    first: dict[int, str] = {}
    notes: dict[str, dict[int, str]] = {}
    for fname in sorted(facts.payloads):
        for position, n in sorted(facts.payloads[fname].items()):
            if n in first:
                notes.setdefault(fname, {})[position] = f"the tensor bound at {first[n]}"
            else:
                first[n] = f"{fname}[{position}]"  # "[0]" for a partial function's
    rank = facts.shard_rank
    for fname, shards in facts.shards.items():
        for position, dim, world, segments in shards:
            blocks = f" in {segments} blocks" if segments > 1 else ""
            split = f"split along dim {dim}{blocks} over {world} ranks"
            notes.setdefault(fname, {})[position] = (
                f"rank {rank}'s shard of a tensor {split}" if rank >= 0 else split
            )
    return notes


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
    named = dict(enumerate(names))
    if names:
        head = f"({', '.join(n for i, n in named.items() if i not in bound and i not in outs)})"
    else:  # a function bound without a signature: its other parameters are not known here
        head = "(...)"
    if outs:
        head += " -> " + ", ".join(named.get(p) or f"[{p}]" for p in sorted(outs))
    lines = [head]
    for position in sorted(bound):
        shared = f" ({notes[position]})" if position in notes else ""
        lines.append(f"{indent}  {_label(named, position)} = {_value(bound[position])}{shared}")
    for position in sorted(outs):
        dims = ", ".join(str(_outputs.dim_text(d, names)) for d in outs[position]["shape"])
        lines.append(
            f"{indent}  {_label(named, position)}: {outs[position]['dtype']}[{dims}] allocated per call"
        )
    return "\n".join(lines)


def _label(named: dict[int, str], position: int) -> str:
    return " ".join(filter(None, (f"[{position}]", named.get(position))))


def _value(value: Any) -> str:
    """A tensor as dtype[shape]@device (tvm-ffi's own repr of a tensor); never its contents."""
    if isinstance(value, tvm_ffi.Tensor):
        shape = ", ".join(str(int(d)) for d in value.shape)
        return f"{value.dtype}[{shape}]@{value.device}"
    if isinstance(value, tvm_ffi.Function):
        return "ffi.Function"
    if isinstance(value, tvm_ffi.Module):
        return f"module of kind {value.kind}"
    text = repr(value)  # a string or another object, cut; a bound scalar (int64, float) never is
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 3] + "..."
