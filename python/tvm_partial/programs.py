# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Models from other frameworks: the program a TVM frontend imported, given as ``signature=``.

``partial(exe, signature=ep, **model.state_dict())`` binds a Relax executable imported with
``from_exported_program(ep, keep_params_as_input=True)`` by the state_dict's names, and
``signature=onnx_model`` one imported with ``from_onnx(model, keep_params_in_input=True)`` by its
initializer names. The program says, exactly, which model name each Relax parameter stands for
(never guessed from a spelling: ``p_conv1_weight`` is ``conv1.weight`` because the program's graph
signature says so), which names are one tensor (tied weights), and what the frontend compiled into
the code (buffers, lifted constants, initializers it folded): values given for those are checked
against the compiled ones (C++: ``tvm_partial.CompiledInProblem``), never bound and never ignored
when they differ.

torch and onnx are not imported here: the program's own objects are read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm_ffi

from . import _convert, _ffi_api
from .signature import Param, Signature


@dataclass(frozen=True)
class Program:
    """What a frontend's program says about the Relax function imported from it."""

    #: "the ExportedProgram" or "the ONNX model", for messages.
    what: str
    #: How the model must have been imported for its parameters to stay swappable.
    imported: str
    #: The Relax name of each value the program holds (parameters, buffers, constants,
    #: initializers) -> (the model's name, the value as the program holds it).
    values: dict[str, tuple[str, Any]]
    #: Relax names of the model's inputs (kept as they are).
    inputs: tuple[str, ...]
    #: Groups of model names that are one tensor in the program (tied weights).
    ties: tuple[tuple[str, ...], ...] = ()
    #: ONNX: the Relax parameters of the values come right after the inputs, in this order.
    ordered: bool = False
    #: Values the program holds but never reads (a batch norm's ``num_batches_tracked`` in eval
    #: mode), by model name: nothing of them reaches the code, so a value given for one is taken
    #: and dropped, whatever it is.
    unused_values: dict[str, Any] = field(default_factory=dict)

    @property
    def unused(self) -> frozenset[str]:
        return frozenset(self.unused_values)

    #: The model names of its state (what ``model.state_dict()`` holds: parameters and persistent
    #: buffers; an ONNX model's initializers), which ``save_weights(..., program=)`` writes.
    state: frozenset[str] = frozenset()
    #: Filled by ``rename``: model name -> value of what the frontend compiled into the code.
    compiled: dict[str, Any] = field(default_factory=dict)

    def rename(self, relax: Signature) -> Signature:
        """The Relax function's parameters under the model's names, each checked against the
        program; records what the program holds that the function does not take (compiled in)."""
        by_model = {model: name for name, (model, _) in self.values.items()}
        params, taken = [], set()
        for i, p in enumerate(relax.params):
            if p.name in self.inputs or (self.ordered and i < len(self.inputs)):
                params.append(p)
                continue
            name = p.name if p.name in self.values else by_model.get(p.name)  # a partial's names
            if name is None:
                raise ValueError(
                    f"{relax.name}() has a parameter {p.name!r} that {self.what} does not hold: "
                    f"signature= must be the program the executable was imported from "
                    f"({self.imported})"
                )
            if self.ordered and list(self.values).index(name) != i - len(self.inputs):
                raise ValueError(
                    f"{relax.name}() takes {p.name!r} at position {i}, where {self.what} puts "
                    f"{list(self.values)[i - len(self.inputs)]!r}: signature= must be the model "
                    f"the executable was imported from ({self.imported})"
                )
            taken.add(name)
            params.append(Param(self.values[name][0], p.kind, p.dtype, p.shape, p.dims))
        self.compiled.clear()
        self.compiled.update(
            {model: value for name, (model, value) in self.values.items() if name not in taken}
        )
        return Signature(relax.name, tuple(params))

    def state_values(self) -> dict[str, Any]:
        """The program's value of each name of its state (the unused included)."""
        held = {model: value for model, value in self.values.values()} | self.unused_values
        return {name: value for name, value in held.items() if name in self.state}

    def compiled_tensors(self, executable: Any) -> dict[str, Any]:
        return compiled_tensors(self, executable)

    def settle(
        self, named: dict[str, Any], compiled: dict[str, Any], sig: Signature | None
    ) -> tuple[dict[str, Any], list[list[str]]]:
        return settle(self, named, compiled, sig)

    def tie(self, ties: list[list[str]], sig: Signature, targets: dict, values: dict) -> None:
        tie(self, ties, sig, targets, values)

    def tied(self, name: str) -> tuple[str, ...]:
        """The model names tied to ``name`` (itself included), or just ``name``."""
        return next((group for group in self.ties if name in group), (name,))


# -- binding a program's values (partial() calls these) -------------------------------------------
def compiled_tensors(program: Program, executable: Any) -> dict[str, Any]:
    """What the frontend compiled into the code (``program.compiled``, and the values the code
    never reads), as CPU tensors, each compiled one proven to be among the constants of
    ``executable`` (C++: ``ExecutableHolds``): a program changed since it was imported
    (torch.export shares the model's tensors) is refused, never trusted."""
    if executable is None:
        raise TypeError(
            f"signature={program.what.split()[-1]} needs the compiled Relax executable (tvm.compile's "
            "result), whose constants prove what the frontend compiled in; a relax.VirtualMachine "
            "does not keep it: bind the executable"
        )
    cpu = tvm_ffi.device("cpu", 0)
    out = {}
    for name, value in {**program.compiled, **program.unused_values}.items():
        held = (
            value if hasattr(value, "__dlpack__") or isinstance(value, tvm_ffi.Tensor) else np.asarray(value)
        )
        out[name] = _convert.convert(held, None, f"{program.what}'s {name!r}", cpu)
        if name in program.compiled and not _ffi_api.ExecutableHolds(executable, out[name]):
            raise ValueError(
                f"{program.what}'s {name!r} ({out[name].dtype}{list(out[name].shape)}) is not among "
                "the constants the executable holds: signature= must be the program the executable "
                "was imported from, unchanged since (torch.export shares the model's tensors, so "
                "model.load_state_dict() after export changes the program too); import and compile "
                "the model again, or pass the program that was imported"
            )
    return out


def settle(
    program: Program, named: dict[str, Any], compiled: dict[str, Any], sig: Signature | None
) -> tuple[dict[str, Any], list[list[str]]]:
    """Values given by name for a program: those for what the frontend compiled into the code are
    checked against the compiled value (the rule is C++'s, ``tvm_partial.CompiledInProblem``) and
    dropped, a differing one refused; a name tied to others binds them too. -> (the names to
    bind, the groups of tied names given more than once)."""
    out = {}
    for name, value in named.items():
        if name in program.unused:
            continue
        if name not in program.compiled:
            out[name] = value
            continue
        given = _convert.convert(value, None, f"{name!r}", tvm_ffi.device("cpu", 0))
        if not isinstance(given, tvm_ffi.Tensor):
            raise TypeError(f"cannot bind {name!r}: the frontend compiled it into the code as a tensor")
        problem = _ffi_api.CompiledInProblem(name, compiled[name], given)
        if problem:
            raise ValueError(f"cannot bind {name!r}: {problem}")
    names = set(sig.names) if sig is not None else set()
    several = []
    for group in program.ties:
        given_names = [n for n in group if n in out]
        if not given_names:
            continue
        for n in group:
            if n not in out and n in names:
                out[n] = out[given_names[0]]
        if len(given_names) > 1:
            several.append(given_names)
    return out, several


def tie(program: Program, ties: list[list[str]], sig: Signature, targets: dict, values: dict) -> None:
    """Names a program ties (one tensor in the model), given each a value: they must be one tensor
    (or hold the same bits, then they become one); the one tensor is bound at each place.
    ``targets``: {position: (original position, value)}; ``values``: {position: converted}."""
    position = {sig.params[o].name: p for p, (o, _) in targets.items() if o is not None}
    for group in ties:
        first = values[position[group[0]]]
        for other in group[1:]:
            value = values[position[other]]
            same = value.same_as(first) or (  # the same dtype, shape and payload hash
                isinstance(value, tvm_ffi.Tensor)
                and isinstance(first, tvm_ffi.Tensor)
                and not _ffi_api.CompiledInProblem(other, first, value)
            )
            if not same:
                raise ValueError(
                    f"{group[0]!r} and {other!r} are one tensor in {program.what} "
                    "(tied weights), but the values given for them differ: give one of the names (it "
                    "binds both), or the same tensor under each"
                )
            values[position[other]] = first


def of(signature: Any) -> Program | None:
    """The program ``signature`` is, or None when it is none of the frontends' programs."""
    kind, module = type(signature).__name__, type(signature).__module__
    if kind == "ExportedProgram" and module.startswith("torch"):
        return _from_exported_program(signature)
    if kind == "ModelProto" and module.startswith("onnx"):
        return _from_onnx(signature)
    return None


def _from_exported_program(ep: Any) -> Program:
    """torch.export: the graph signature's input specs name each Relax parameter (``arg.name``,
    which the frontend gives its Relax var) and the state_dict entry it reads (``target``)."""
    import torch

    kinds = torch.export.graph_signature.InputKind
    values: dict[str, tuple[str, Any]] = {}
    inputs = []
    read = {node.name for node in ep.graph.nodes if node.op == "placeholder" and node.users}
    unused = {}
    state = set()
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if spec.kind == kinds.USER_INPUT:
            inputs.append(str(name))
            continue
        if spec.kind == kinds.PARAMETER or (spec.kind == kinds.BUFFER and spec.persistent):
            value = ep.state_dict[spec.target]
            state.add(str(spec.target))
        elif spec.kind in (kinds.BUFFER, kinds.CONSTANT_TENSOR):
            value = ep.constants[spec.target]
        else:  # custom objects, tokens: nothing a weights set holds
            continue
        if spec.kind != kinds.PARAMETER and name not in read:  # a parameter stays one of main's
            unused[str(spec.target)] = value
            continue
        values[str(name)] = (str(spec.target), value)
    return Program(
        "the ExportedProgram",
        "from_exported_program(ep, keep_params_as_input=True)",
        values,
        tuple(inputs),
        _torch_ties(values.values()),
        unused_values=unused,
        state=frozenset(state),
    )


def _torch_ties(values: Iterable[tuple[str, Any]]) -> tuple[tuple[str, ...], ...]:
    """Names whose tensors are one (the same storage, offset, shape, strides and dtype)."""
    groups: dict[tuple, list[str]] = {}
    for name, value in values:
        if getattr(value, "is_meta", False) or not value.numel():
            continue
        key = (
            value.untyped_storage().data_ptr(),
            value.storage_offset(),
            tuple(value.shape),
            tuple(value.stride()),
            str(value.dtype),
        )
        groups.setdefault(key, []).append(name)
    return tuple(tuple(names) for names in groups.values() if len(names) > 1)


def _from_onnx(model: Any) -> Program:
    """ONNX: the graph's inputs that are not initializers, then (keep_params_in_input=True) every
    initializer in the graph's order, named as the file names it without the ``onnx::`` prefix
    the frontend drops. External data is read from where the model was loaded (its
    ``location``, relative to the model's folder as onnx resolves it)."""
    from onnx import numpy_helper

    graph = model.graph
    initializers = [t.name for t in graph.initializer]
    inputs = tuple(i.name for i in graph.input if i.name not in set(initializers))
    values = {}
    for tensor in graph.initializer:
        relax = tensor.name[len("onnx::") :] if tensor.name.startswith("onnx::") else tensor.name
        values[relax] = (tensor.name, _LazyOnnx(tensor, numpy_helper))
    return Program(
        "the ONNX model",
        "from_onnx(model, keep_params_in_input=True)",
        values,
        inputs,
        ordered=True,
        state=frozenset(initializers),
    )


class _LazyOnnx:
    """An initializer's value, read when a check needs it (external data included)."""

    def __init__(self, tensor: Any, numpy_helper: Any) -> None:
        self._tensor, self._helper = tensor, numpy_helper

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self._helper.to_array(self._tensor)
        return array if dtype is None else array.astype(dtype)
