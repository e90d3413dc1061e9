# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Binding's public entry points; the target and its positions are ``_target``'s, conversion ``_convert``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, overload

import tvm_ffi

from . import _convert, _facts, _ffi_api, _target
from . import output_specs as _outputs
from . import programs as _programs
from . import relax_vm as _relax
from . import remote as _remote
from .signature import Param, Signature

if TYPE_CHECKING:
    from ._typing import Bound, ModuleTarget, Target


@overload
def partial(
    target: tvm_ffi.Function,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = ...,
    function: Any = ...,
    outputs: Any = ...,
    shards: Any = ...,
    world: Any = ...,
    **by_name: Any,
) -> tvm_ffi.Function: ...
@overload
def partial(
    target: ModuleTarget,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = ...,
    function: Any = ...,
    outputs: Any = ...,
    shards: Any = ...,
    world: Any = ...,
    **by_name: Any,
) -> tvm_ffi.Module: ...
@overload
def partial(
    target: Callable[..., Any],
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = ...,
    function: Any = ...,
    outputs: Any = ...,
    shards: Any = ...,
    world: Any = ...,
    **by_name: Any,
) -> tvm_ffi.Function | tvm_ffi.Module: ...
def partial(
    target: Target,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = _target.UNSET,
    function: Any = _target.UNSET,
    outputs: Any = _target.UNSET,
    shards: Any = _target.UNSET,
    world: Any = _target.UNSET,
    **by_name: Any,
) -> tvm_ffi.Function | tvm_ffi.Module:
    """Bind constant arguments of ``target`` once; call the result with the remaining ones.

    ``target`` is a function (``exe["main"]``, a partial function) or a module (a compiled
    module, a Relax ``Executable`` or ``VirtualMachine``, a partial module). ``bound`` maps
    positions (ints, counting the target's own arguments from 0) and names (strs) to values;
    ``**by_name`` binds by name too. Values that are not tvm Tensors (numpy, torch, any DLPack
    tensor) are copied once into aligned memory on ``device=`` (default: the CPU); each is
    checked against its parameter where the signature says its dtype and shape (a scalar's
    range: an ``int32`` takes no ``2**40``).

    Options (a parameter named like one binds through ``bound``: ``{"device": d}``):

    - ``signature``: the original function's full parameter list, needed to bind by name where
      the target carries no names: a tirx ``PrimFunc``, the TE tensor list given to
      ``te.create_prim_func``, a Relax ``Function`` or ``IRModule``, a list of names, or the
      ``torch.export.ExportedProgram`` / ``onnx.ModelProto`` an executable was imported from
      with TVM's own frontend (docs/torch.md). A Relax executable carries its names, and one
      imported with ``from_exported_program`` or ``from_onnx`` its model's too.
    - ``device``: a device of this process (``tvm.cuda(0)``) or its name (``"cuda:0"``).
    - ``function``: for a module, the function bound (default ``"main"``).
    - ``outputs``: parameters (names or positions) each call allocates and returns, so that
      ``out = f(data)``; see ``tvm_partial.outputs``.
    - ``shards``, ``world``: tensor parallelism, ``{name: dim}`` (or ``(dim, segments)`` for fused
      blocks) split over ``world`` ranks; each rank loads its view with ``load(path,
      shard=(rank, world))`` (docs/rpc.md).

    Returns the closure itself (a ``tvm_ffi.Function``) for a function, a ``partial_apply``
    module for a module. The options are typed ``Any``: a type checker matches
    ``partial(exe, **params)`` against every keyword parameter.
    """
    fname = function if isinstance(function, str) else "main"
    bound_target = _target.classify(target)
    kind = bound_target.kind
    view = _target.TargetView.of(bound_target, "" if kind == "function" else fname, fname, signature)
    _check_options(
        view.sig, "partial", device=device, function=function, outputs=outputs, shards=shards, world=world
    )
    place = _target.as_device(None if device is _target.UNSET else device)
    program = view.program
    if program is not None and bound_target.executable is None and _relax.find_executable(target) is None:
        raise TypeError(
            f"signature={type(signature).__name__} needs the compiled Relax executable (tvm.compile's "
            "result), whose constants prove what the frontend compiled in; a relax.VirtualMachine "
            "does not keep it: bind the executable"
        )
    keyed, named = _target.split_keys(bound, by_name)
    described = None
    if program is not None and view.sig is not None:  # pinned values take effect, or are refused
        described, pinned = program.description(view.sig)
        named = {**pinned, **named}
    # A Relax executable (then obj): its VM on that device; named values settled against the model.
    bound_target.obj, named = _relax.bind_model(
        bound_target.obj,
        view.sig,
        named,
        None if bound_target.executable is None else place or tvm_ffi.device("cpu", 0),
        described,
    )
    _target.check_available(place)
    targets = view.positions(keyed, named)
    split = _shard_positions(shards, world, bound_target, view, targets)
    obj = bound_target.obj
    if kind == "module":  # a remote module: its session's device by default; other sessions refused
        place = _remote.placement(
            obj, place, [v for _, v in targets.values()], [view.label(p, o) for p, (o, _) in targets.items()]
        )
    held = _convert.Held(place or tvm_ffi.device("cpu", 0))
    for position, (original, value) in targets.items():
        param = _target.param_at(original, view.sig) if original is not None else None
        held.add(position, value, param, view.label(position, original), split.get(position))
    values = held.made()
    names = view.free_names()
    wanted = None if outputs is _target.UNSET else outputs  # None: none, as when not given
    specs = None if wanted is None else _outputs.resolve(wanted, view.sig, view.bound)
    full_names = view.original_names
    if kind == "function":
        return _ffi_api.PartialApply(obj, values, view.closure_name, names, specs, full_names)
    return _ffi_api.PartialApplyModule(
        obj,
        {fname: values},
        {fname: names} if names else {},
        {fname: specs} if specs is not None else {},
        {fname: full_names} if full_names else {},
        {fname: [[p, *s] for p, s in sorted(split.items())]} if split else {},
    )


def rebind(
    module: tvm_ffi.Module,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    function: Any = _target.UNSET,
    device: Any = _target.UNSET,
    **by_name: Any,
) -> tvm_ffi.Module:
    """A new partial module over the same compiled code with other values at already-bound
    positions: ``rebind(pm, weights=new_w)``. No recompilation; O(number of bindings).

    Each new tensor must match the dtype and shape of the value it replaces; a scalar must be of
    the kind bound there (an int may replace a float). To change what the existing module
    computes instead, update its bound tensor in place:
    ``tvm_partial.bindings(pm)["main"][1].copyfrom(new_w)``.

    A tensor bound with ``shards=`` is replaced by a whole tensor of its shape and keeps its
    split (the new module is exported and loaded per rank as the old one was); one rank's view
    (``load(path, shard=...)``) is not rebound.

    A tensor bound in several places (positions, functions: tied weights) is one tensor, so
    replacing it at one place replaces it at every place that held it, in every function, as
    ``copyfrom`` on it would; places given in the same call get what is given there (give each
    its own value to untie them).

    Parameters
    ----------
    module
        A partial module (what ``partial()`` or ``load()`` returns).
    bound
        ``{position: value}`` and/or ``{name: value}``, as for ``partial()``; positions count in
        the function's full parameter list, names need recorded names or ``signature=``. String
        keys also reach parameters named like an option (``{"device": d}``).
    signature
        The function's full parameter list, as for ``partial()``. A partial records parameter
        names only: with ``signature=`` a scalar is also checked against its parameter's dtype
        (its range: ``2**40`` for an ``int32`` is refused), which is otherwise unknown here.
    function
        The function whose bindings are replaced (default ``"main"``).
    device
        Where values that are not yet tvm Tensors are placed (default: where the tensors they
        replace are, when all are on one device; else the CPU). A tensor is refused on another
        device than the one it replaces: the kernel reads only its own.
    **by_name
        ``name=value`` replacements. A name that is also an option (``signature``, ``device``,
        ``function``) and a parameter is refused as a keyword: rebind it through the mapping.
    """
    if not isinstance(module, tvm_ffi.Module):
        raise TypeError(f"rebind needs a partial module, got {type(module).__name__}")
    facts = _facts.of(module, "bindings")
    fname = function if isinstance(function, str) else "main"
    if _programs.is_program(signature):  # the module records the model's names already
        signature = None
    sig, _, _ = _target.signature_of(module, fname, fname, signature, None, "rebind", facts)
    _check_options(sig, "rebind", device=device, function=function)
    keyed, named = _target.split_keys(bound, by_name)
    if named and sig is None:
        raise TypeError(
            f"rebind by name ({', '.join(named)}) needs recorded parameter names; "
            f"{fname}() has none: rebind by position, or pass signature="
        )
    view = _target.TargetView(sig, frozenset())  # positions count in the full parameter list
    new = view.positions(keyed, _relax.bind_model(module, sig, named)[1])
    place = _target.as_device(None if device is _target.UNSET else device)
    _target.check_available(place)
    place = _remote.placement(module, place, [v for _, v in new.values()], [view.label(i, i) for i in new])
    now = facts.bindings.get(fname, {})
    if place is None:  # where the tensors replaced are
        olds = {str(now[i].device): now[i].device for i in new if isinstance(now.get(i), tvm_ffi.Tensor)}
        place = next(iter(olds.values())) if len(olds) == 1 else None
    # C++ decides the rest: an unbound position (None here), a rank's view, tied places, kept code.
    held = _convert.Held(place or tvm_ffi.device("cpu", 0), "rebind")
    for index, (_, value) in new.items():
        if index not in now:
            held.add(index, None, None, "")
            continue
        param = _target.param_at(index, sig) or Param(f"position {index}")
        _convert.rebound(held, index, now[index], value, param, view.label(index, index))
    return _ffi_api.Rebind(module, fname, held.made())


def _check_options(sig: Signature | None, entry: str, **options: Any) -> None:
    """Refuse an option given (even None) that is a parameter too (docs/design.md); ``function=``: a name."""
    for option, value in options.items():
        if value is not _target.UNSET and sig is not None and option in sig.names:
            raise TypeError(_target.clash_message(option, sig.name, entry))
    function = options["function"]
    if function is not _target.UNSET and not isinstance(function, str):
        raise TypeError(f"function= must be the name of a function (str), got {type(function).__name__}")


def _shard_positions(
    shards: Any, world: Any, target: _target.Target, view: _target.TargetView, bound_positions: Any
) -> dict[int, tuple[int, int, int]]:
    """``shards=``/``world=`` as {position: (dim, world, segments)}; C++ (``Hold``) checks the split."""
    if shards is _target.UNSET or shards is None:
        if world is not _target.UNSET and world is not None:
            raise TypeError("world= without shards=: name the tensors split, shards={name: dim}")
        return {}
    if not isinstance(shards, dict) or not shards:
        raise TypeError(f"shards= must be a non-empty dict {{parameter name: dim}}, got {shards!r}")
    if world is _target.UNSET or world is None:
        raise TypeError("shards= needs world=, the number of ranks the tensors are split over")
    if isinstance(world, bool) or not isinstance(world, int):
        raise TypeError(f"world= must be the number of ranks (an int), got {world!r}")
    if not -(2**63) <= world < 2**63:  # what the call into C++ carries; C++ says which are sane
        raise ValueError(f"world={world}: out of range")
    if target.kind != "module":
        raise TypeError(
            "shards= needs a compiled module as the target (partial(exe, ..., shards=..., world=...)): "
            "a function cannot be exported for each rank to load"
        )
    if target.names is not None and target.executable is None and not _relax.runs_relax(target.obj):
        raise TypeError(
            "shards= needs a Relax executable, not a relax.VirtualMachine, which cannot be exported "
            "for each rank to load: bind the executable (partial(exe, ..., shards=..., world=...))"
        )
    if view.bound:
        raise TypeError(
            "shards= on top of a partial is not supported: bind every value in one partial() call"
        )
    if view.sig is None:
        raise TypeError("shards= needs signature= (the kernel's parameters, with their shard shapes)")
    out = {}
    for name, split in shards.items():
        if not isinstance(name, str):
            raise TypeError(f"shards= keys are parameter names, got {name!r}")
        position = view.sig.index_of(name)  # the target is no partial: positions are its own
        if position not in bound_positions:
            raise ValueError(f"shards= names {name!r}, which this partial() does not bind")
        if target.names is not None and view.sig.params[position].shape is None:
            raise TypeError(
                f"shards= names {name!r}, whose shape the Relax executable does not record (a "
                "frontend.nn model annotates only its inputs): pass signature=irmodule so that "
                "each rank's shard is checked against the parameter"
            )
        dim, segments = split if isinstance(split, tuple) and len(split) == 2 else (split, 1)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (dim, segments)):
            raise TypeError(
                f"shards={{{name!r}: ...}}: give the dim (an int), or (dim, segments) for a dim that "
                f"holds several fused blocks split alike (QKV: (0, 3)); got {split!r}"
            )
        if any(not -(2**63) <= v < 2**63 for v in (dim, segments)):
            raise ValueError(f"shards={{{name!r}: {split!r}}}: out of range")
        out[position] = (dim, world, segments)
    return out


@overload
def bindings(obj: tvm_ffi.Function) -> dict[int, Any]: ...
@overload
def bindings(obj: tvm_ffi.Module) -> dict[str, dict[int, Any]]: ...
def bindings(obj: tvm_ffi.Function | tvm_ffi.Module) -> dict[int, Any] | dict[str, dict[int, Any]]:
    """What a partial holds. The shape follows the kind of ``obj``, as ``partial()``'s result does:

    - a partial function (a ``tvm_ffi.Function``): ``{position: value}``;
    - a partial module: ``{function name: {position: value}}``, one entry per function with
      bindings (a module binds several functions; ``bindings(pm)["main"]`` for its ``main``).

    Positions count in the wrapped function's full argument list. Tensors are the bound objects
    themselves (not copies: ``copyfrom`` on one changes later calls); strings come back as ``str``.
    ``param_names()`` follows the same rule (a list, or ``{function name: [names]}``).
    A ``TypeError`` for anything that is not a partial of this library.
    """
    held = _facts.of(obj, "bindings").bindings
    return held[""] if isinstance(obj, tvm_ffi.Function) else held


@overload
def param_names(obj: tvm_ffi.Function) -> list[str]: ...
@overload
def param_names(obj: tvm_ffi.Module) -> dict[str, list[str]]: ...
def param_names(obj: tvm_ffi.Function | tvm_ffi.Module) -> list[str] | dict[str, list[str]]:
    """Recorded parameter names (bound ones included): a list for a partial function (empty
    when unknown), ``{function: [names]}`` for a partial module."""
    facts = _facts.of(obj, "param_names")
    return facts.names.get("", []) if isinstance(obj, tvm_ffi.Function) else facts.names
