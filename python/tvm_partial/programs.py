# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Programs imported with TVM's own frontend, given as ``signature=``: an ExportedProgram (imported with
``keep_params_as_input=True``) or ONNX model (``keep_params_in_input=True``). It says which model name each
Relax parameter stands for (never guessed from spelling), which names are one tensor, and what the frontend
compiled in or read at import; C++ (``tvm_partial.BindModel``) checks the compiled values against the
executable's constants, records them and settles the values given by name. models.py's importers need none
of this. torch and onnx are not imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm_ffi

from . import _convert
from .signature import Param, Signature

#: CompiledIn::Kind (cpp/format/model_record.h).
COMPILED, UNUSED, PINNED, READ = 0, 1, 2, 3


@dataclass(frozen=True)
class Program:
    """What a frontend's program says about the Relax function imported from it."""

    #: "the ExportedProgram" or "the ONNX model", for messages.
    what: str
    #: How the model must have been imported for its parameters to stay swappable.
    imported: str
    #: Names of the model's data inputs, in order (the Relax function's first parameters).
    inputs: tuple[str, ...]
    #: (frontend names, model names) of the Relax parameters after the inputs, as in the program the frontend
    #: imported (``other_forms``: torch's decomposed one); ``values``: {model name: value} of all it holds.
    form: tuple[tuple[str, ...], tuple[str, ...]]
    values: dict[str, Any]
    #: The names of the model's state (what a state_dict or the initializers hold).
    state: tuple[str, ...]
    #: {name: CompiledIn kind} of what is not a parameter (or is pinned); ``kinds_without_params``:
    #: the same for an import that kept no parameters as inputs.
    kinds: dict[str, int]
    kinds_without_params: dict[str, int]
    #: Names that are one tensor (tied weights).
    ties: tuple[tuple[str, ...], ...] = ()
    #: Whether the frontend's constants alias the framework's memory (torch: copy the executable).
    aliases_memory: bool = False
    #: The other forms, made when asked (a decomposition takes seconds for a large model).
    other_forms: Any = None

    def rename(self, relax: Signature) -> Signature:
        """The Relax function's parameters under the model's names, checked against the program: data inputs
        (one named like a state tensor renamed ``NAME_input``), then parameters with its dtypes and shapes."""
        n = len(self.inputs)
        models = self.params_of([p.name for p in relax.params[n:]])
        if models is None:
            raise ValueError(
                f"{relax.name}() takes {len(relax.params)} parameters, but {self.what} has "
                f"{_count(n, 'input')} and {_count(len(self.params), 'parameter')}: signature= must "
                f"be the program the executable was imported from ({self.imported})"
            )
        taken = set(self.params) | set(self.state)
        params = []
        for p in relax.params[:n]:
            name, k = p.name, 1
            while name in taken:
                name, k = f"{p.name}_input" + (f"_{k}" if k > 1 else ""), k + 1
            taken.add(name)
            params.append(Param(name, p.kind, p.dtype, p.shape, p.dims))
        for i, (p, model) in enumerate(zip(relax.params[n:], models)):
            value = self.values[model]  # a torch tensor or an ONNX initializer (_LazyOnnx)
            dtype, shape = str(value.dtype).replace("torch.", ""), tuple(int(d) for d in value.shape)
            if (p.dtype is not None and p.dtype != dtype) or (
                p.shape is not None and len(p.shape) != len(shape)
            ):
                raise ValueError(
                    f"{relax.name}() takes {p.describe()} at position {n + i}, where {self.what} "
                    f"puts {model!r} ({dtype}{list(shape)}): signature= must be the program the "
                    f"executable was imported from ({self.imported})"
                )
            params.append(Param(model, "tensor", dtype, shape))
        return Signature(relax.name, tuple(params))

    @property
    def params(self) -> tuple[str, ...]:
        return self.form[1]

    def params_of(self, names: list[str]) -> list[str] | None:
        """The model's names of the Relax parameters ``names`` (after the inputs): matched by frontend names
        in one form (or model names, recorded by a partial); by position where there is one form only (ONNX
        keeps the order); [] for an import that kept none; None if not unique (a guess could bind wrongly)."""
        if not names:
            return []
        forms = [
            self.form,
            *(self.other_forms() if self.other_forms is not None else ()),
            (self.params, self.params),
        ]
        found = {
            tuple(model[frontend.index(name)] for name in names)
            for frontend, model in forms
            if sorted(frontend) == sorted(names) and len(set(names)) == len(names)
        }
        if len(found) == 1:
            return list(found.pop())
        if not found and self.other_forms is None and len(names) == len(self.params):
            return list(self.params)
        return None

    def description(self, relax: Signature) -> tuple[dict[str, Any], dict[str, Any]]:
        """-> (what C++ records and checks (cpp/relax_vm.cc ``MakeRelaxVMModule``), for the renamed
        signature ``relax``; {name: value} of the parameters whose value the frontend also read at
        import: bound to it when not given (any other value could not take effect everywhere))."""
        with_params = len(relax.params) > len(self.inputs)
        kinds = self.kinds if with_params else self.kinds_without_params
        described = {
            "what": self.what,
            "compiled_in": {
                name: _convert.view(_host(self.values[name]), f"{self.what}'s {name!r}") for name in kinds
            },
            "kinds": kinds,
            "ties": [list(group) for group in self.ties],
            "copy": self.aliases_memory,
        }
        pinned = (self.kinds if with_params else {}).items()
        return described, {name: np.asarray(self.values[name]) for name, kind in pinned if kind == PINNED}


def is_program(signature: Any) -> bool:
    kind, module = type(signature).__name__, type(signature).__module__
    return (kind, module.split(".")[0]) in (("ExportedProgram", "torch"), ("ModelProto", "onnx"))


def of(signature: Any) -> Program | None:
    """The program ``signature`` is, or None when it is none of the frontends' programs."""
    if not is_program(signature):
        return None
    if type(signature).__name__ == "ExportedProgram":
        return _from_exported_program(signature)
    return _from_onnx(signature)


def _from_exported_program(ep: Any) -> Program:
    """torch.export: input specs name each Relax parameter in order (``target``: its state_dict entry); a
    buffer or constant the graph reads is compiled in, a state tensor it never reads is unused; ties alias."""
    from .models import _torch_ties

    read = {node.name for node in ep.graph.nodes if node.op == "placeholder" and node.users}
    state = dict(ep.state_dict)
    values: dict[str, Any] = dict(state)
    inputs = []

    def form_of(program: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
        specs = [s for s in program.graph_signature.input_specs if s.kind.name == "PARAMETER"]
        return tuple(str(s.arg.name) for s in specs), tuple(str(s.target) for s in specs)

    form = form_of(ep)
    spelled = [f"p_{target.replace('.', '_')}" for target in form[1]]
    # Names spelled apart (no two alike) are the same in every form; else the form the frontend read
    # (TVM's decomposes first by default) may number them anew.
    renumbered = list(form[0]) != spelled or len(set(spelled)) != len(spelled)
    kinds = {name: UNUSED for name in state}  # until a spec says otherwise
    for spec in ep.graph_signature.input_specs:
        kind, target = spec.kind.name, str(spec.target)
        if kind == "USER_INPUT":
            inputs.append(str(spec.arg.name))
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            values.setdefault(target, ep.constants.get(spec.target))
            kinds[target] = COMPILED if str(spec.arg.name) in read else UNUSED
    groups: dict[str, list[str]] = {}
    for name, head in _torch_ties(state).items():
        groups.setdefault(head, []).append(name)
    ties = tuple(tuple(g) for g in groups.values() if len(g) > 1)
    for group in ties:  # one tensor: compiled in when the graph reads it under any of its names
        if any(kinds[n] == COMPILED for n in group):
            kinds.update(dict.fromkeys(group, COMPILED))
    params = set(form[1]) | {n for g in ties if set(g) & set(form[1]) for n in g}  # and their ties
    return Program(
        "the ExportedProgram",
        "from_exported_program(ep, keep_params_as_input=True)",
        tuple(inputs),
        form,
        values,
        tuple(state),
        {n: k for n, k in kinds.items() if n not in params},
        kinds,
        ties,
        aliases_memory=True,
        other_forms=(lambda: [form_of(ep.run_decompositions())]) if renumbered else None,
    )


def _from_onnx(model: Any) -> Program:
    """ONNX: the non-initializer inputs, then every initializer in graph order (keep_params_in_input=True);
    those read at import (seen importing again) pinned. Without the flag, all folded in (unused if unread)."""
    from .models import import_onnx

    graph = model.graph
    initializers = tuple(t.name for t in graph.initializer)
    inputs = tuple(i.name for i in graph.input if i.name not in set(initializers))
    values = {t.name: _LazyOnnx(t) for t in graph.initializer}
    _, read, _ = import_onnx(model)
    used = _onnx_inputs(graph)
    kinds = {name: PINNED for name in initializers if name in read}
    without = {
        name: READ if name in read else (COMPILED if name in used else UNUSED) for name in initializers
    }
    return Program(
        "the ONNX model",
        "from_onnx(model, keep_params_in_input=True)",
        inputs,
        (tuple(n.removeprefix("onnx::") for n in initializers), initializers),
        values,
        initializers,
        kinds,
        without,
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _onnx_inputs(graph: Any) -> set[str]:
    """The names the nodes of ``graph`` (and of the graphs in their attributes) read."""
    names = set()
    for node in graph.node:
        names.update(node.input)
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                names |= _onnx_inputs(sub)
    return names


def _host(value: Any) -> Any:
    return value if hasattr(value, "__dlpack__") or isinstance(value, tvm_ffi.Tensor) else np.asarray(value)


class _LazyOnnx:
    """An initializer's value, read when a check needs it (external data included)."""

    def __init__(self, tensor: Any) -> None:
        from onnx import helper, numpy_helper

        self._tensor, self._helper = tensor, numpy_helper
        self.dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)))
        self.shape = tuple(int(d) for d in tensor.dims)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        array = self._helper.to_array(self._tensor)
        return array if dtype is None else array.astype(dtype)
