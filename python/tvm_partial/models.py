# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``from_exported_program``, ``from_onnx``: TVM's frontend, then ``main`` taking each state tensor as a
parameter named by its key after the data inputs (a state_dict swaps in without recompiling); the rest is
compiled in as copies aliasing no framework memory. ``RECORD_FUNCTION``'s ``(JSON, tensor, ...)`` names
inputs, ties, compiled-in tensors: partial() and the loaders bind by it, refusing what the code can't take."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import tvm_ffi

from . import _convert

#: The executable's function that returns the record (cpp/relax_vm.cc reads it by this name).
RECORD_FUNCTION = "__tvm_partial_model__"


def from_exported_program(exported_program: Any, **options: Any) -> Any:
    """Import a ``torch.export.ExportedProgram`` for ``tvm.compile``, every tensor of its
    ``state_dict`` (parameters and persistent buffers, batch-norm statistics included) a
    parameter of ``main`` named by its key: ``partial(tvm.compile(mod), **model.state_dict())``.

    Tied tensors (one storage under several keys) are one parameter that either key binds.
    Non-persistent buffers and lifted constants are compiled in as copies. ``options`` go to
    ``tvm.relax.frontend.torch.from_exported_program`` (``keep_params_as_input`` is implied)."""
    import torch  # noqa: F401  (the program's own package)
    from tvm.relax.frontend.torch import from_exported_program as frontend

    _refuse_option(options, "keep_params_as_input", "from_exported_program")
    program = exported_program
    if options.pop("run_ep_decomposition", True):  # once, so the names read below are the graph's
        program = program.run_decompositions()
    mod = frontend(program, keep_params_as_input=True, run_ep_decomposition=False, **options)
    state = dict(program.state_dict)  # parameters, then buffers
    ties = _torch_ties(state)
    specs = program.graph_signature.input_specs
    kinds = {str(s.arg.name): s for s in specs}
    # The frontend wraps each buffer and constant it binds without a copy: a constant whose data
    # is a state tensor's is that tensor, any other of the program's tensors a compiled-in one.
    constants = {str(s.target): program.constants[s.target] for s in specs if s.target in program.constants}
    by_memory: dict[tuple, str] = {}
    for key, t in [*state.items(), *constants.items()]:
        by_memory.setdefault(_memory(t), ties.get(key) or key)

    def state_of(var_name: str) -> str | None:
        spec = kinds.get(var_name)
        return None if spec is None or spec.kind.name == "USER_INPUT" else ties.get(str(spec.target))

    def of_constant(data: Any) -> str | None:  # a tvm tensor
        return by_memory.get(_memory(data))

    held = _convert.Held(tvm_ffi.device("cpu", 0))  # the compiled-in tensors, aligned copies of their own
    for key, t in constants.items():
        held.add(key, t.detach(), None, f"the model's {key!r}")
    return _rewrite(mod, "torch.export", state, ties, state_of, of_constant, held.made())


def from_onnx(model: Any, **options: Any) -> Any:
    """Import an ``onnx.ModelProto`` for ``tvm.compile``, every initializer a parameter of
    ``main`` named exactly as the model names it (``onnx::`` prefixes kept): ``partial(exe,
    **open_weights("model.onnx"))``.

    An initializer the frontend reads at import (a Slice's bounds, a Reshape's shape, a Pad's
    value: it folds them into the code) is compiled in and recorded, so a different value for it
    is refused rather than ignored. ``options`` (``shape_dict``, ``dtype_dict``, ``opset``,
    ``sanitize_input_names``) are those of ``tvm.relax.frontend.onnx.from_onnx``."""
    _refuse_option(options, "keep_params_in_input", "from_onnx")
    mod, read, values = import_onnx(model, **options)
    initializers = [t.name for t in model.graph.initializer]
    by_var = {name.removeprefix("onnx::"): name for name in initializers}
    state = {name: values[name] for name in initializers if name not in read}
    return _rewrite(
        mod,
        "onnx",
        state,
        {name: name for name in state},
        lambda var_name: by_var[var_name] if by_var.get(var_name) in state else None,
        lambda data: None,
        {name: values[name] for name in initializers if name in read},
        by_var={var: name for var, name in by_var.items() if name in read},
    )


def import_onnx(model: Any, **options: Any) -> tuple[Any, set[str], dict[str, Any]]:
    """TVM's ONNX frontend with ``keep_params_in_input=True``, watching which initializers it
    reads at import: -> (IRModule, {initializer name read}, {initializer name: tvm tensor})."""
    from tvm.relax.frontend.onnx import onnx_frontend

    if model.ir_version < 3:
        raise ValueError(f"from_onnx: ONNX IR version {model.ir_version} is too old (3 or newer)")
    opset = options.pop("opset", None)
    if opset is None:
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    read: set[str] = set()

    class Watched(dict[str, Any]):  # the frontend's {var name: (var, value)}
        def __getitem__(self, key: Any) -> Any:
            read.add(key)
            return super().__getitem__(key)

        def get(self, key: Any, default: Any = None) -> Any:
            if key in self:
                read.add(key)
            return super().get(key, default)

    class Importer(onnx_frontend.ONNXGraphImporter):
        def _parse_graph_initializers(self, graph: Any) -> None:
            super()._parse_graph_initializers(graph)
            self._params: dict[str, Any] = Watched(self._params)

    importer = Importer(
        options.pop("shape_dict", None),
        options.pop("dtype_dict", "float32"),
        keep_params_in_input=True,
        sanitize=options.pop("sanitize_input_names", True),
    )
    if options:
        raise TypeError(f"from_onnx: unknown option {sorted(options)[0]!r}")
    mod = importer.from_onnx(model.graph, opset)
    names = {t.name.removeprefix("onnx::"): t.name for t in model.graph.initializer}
    values = {names[var]: value for var, (_, value) in dict.items(importer._params)}
    return mod, {names[var] for var in read if var in names}, values


def _rewrite(
    mod: Any,
    framework: str,
    state: dict[str, Any],
    ties: dict[str, str],
    state_of: Callable[[str], str | None],
    of_constant: Callable[[Any], str | None],
    compiled: dict[str, Any],
    by_var: dict[str, str] | None = None,
) -> Any:
    """``mod`` with ``main`` taking its data inputs, then one parameter per tensor of ``state`` (one per tie:
    ``ties`` maps each key to its parameter's key), and the record. ``state_of(var name)``: the state key a
    frontend parameter stands for; ``of_constant(tensor)``: the state key or compiled-in name of a constant's
    data; ``compiled``: {name: tensor} kept in the code; ``by_var``: {var name: name in ``compiled``}."""
    import tvm
    from tvm import relax
    from tvm.script import relax as R

    main = mod["main"]
    made: dict[str, Any] = {}
    constants = {name: relax.const(value) for name, value in compiled.items()}

    def parameter(key: str, ty: Any) -> Any:
        return made.setdefault(key, relax.Var(key, ty))

    replace: dict[Any, Any] = {}
    inputs = []
    taken = set(ties.values())
    for var in main.params:
        name = str(var.name)
        key = state_of(name)
        if key is not None:
            replace[var] = parameter(key, var.ty)
        elif by_var is not None and name in by_var:
            replace[var] = constants[by_var[name]]
        else:  # a data input; one named like a state key is renamed: the key names the state
            free, n = name, 1
            while free in taken:
                free, n = f"{name}_input" + (f"_{n}" if n > 1 else ""), n + 1
            taken.add(free)
            inputs.append(var if free == name else replace.setdefault(var, relax.Var(free, var.ty)))

    @relax.expr_functor.mutator
    class Rewrite(relax.PyExprMutator):
        def visit_var_(self, op: Any) -> Any:
            return replace.get(op, op)

        def visit_generic_const_(self, op: Any) -> Any:  # apache-tvm 0.27
            data = op.value if hasattr(op, "value") else op.data
            key = of_constant(data) if isinstance(data, tvm_ffi.Tensor) else None
            if key is None:
                return op
            return constants[key] if key in constants else parameter(key, op.ty)

        visit_constant_ = visit_generic_const_  # apache-tvm 0.26

    body = Rewrite().visit_expr(main.body)
    order = list(dict.fromkeys(ties.values()))
    for key in order:
        if key not in made:  # a state tensor the code never reads
            t = state[key]
            parameter(key, R.Tensor(tuple(int(d) for d in t.shape), str(t.dtype).replace("torch.", "")))
    # No "num_input": the VM checks every parameter per call; its annotations let partial() check at bind.
    attrs = {str(k): v for k, v in main.attrs.items() if str(k) not in ("params", "num_input")}
    func = relax.Function(inputs + [made[key] for key in order], body, main.ret_ty, main.is_pure)
    mod["main"] = func.with_attrs(attrs) if attrs else func
    record = {
        "framework": framework,
        "inputs": [str(v.name) for v in inputs],
        "aliases": {key: ties[key] for key in state if ties[key] != key},
        "compiled_in": list(compiled),
        "read_at_import": list(by_var.values()) if by_var is not None else [],
    }
    bb = relax.BlockBuilder()
    with bb.function(RECORD_FUNCTION, []):
        # apache-tvm 0.27 moved the string literal from relax to tvm.ir
        string = tvm.ir.StringImm if hasattr(tvm.ir, "StringImm") else relax.StringImm
        bb.emit_func_output(relax.Tuple([string(json.dumps(record)), *constants.values()]))
    mod[RECORD_FUNCTION] = bb.get()[RECORD_FUNCTION]
    return mod


def _refuse_option(options: dict[str, Any], name: str, entry: str) -> None:
    if name in options and options.pop(name) is not True:
        raise ValueError(
            f"{entry}: {name} is always True here (every tensor of the model's state becomes a "
            f"parameter); to compile the weights in, call TVM's own {entry}"
        )


def _memory(tensor: Any) -> tuple[int, tuple[int, ...], str]:
    """What a torch tensor's data is, as a tvm tensor wrapping it without a copy shows it (both alike)."""
    return tensor.data_ptr(), tuple(int(d) for d in tensor.shape), str(tensor.dtype).replace("torch.", "")


def _torch_ties(state: dict[str, Any]) -> dict[str, str]:
    """Each key -> the first key of the same tensor (storage, offset, shape, strides, dtype)."""
    first: dict[tuple, str] = {}
    out = {}
    for key, t in state.items():
        if getattr(t, "is_meta", False) or not t.numel():
            out[key] = key
        else:
            where = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
            out[key] = first.setdefault((*where, str(t.dtype)), key)
    return out
