# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``partial()``: bind constant arguments of a TVM function or module, by position or by name."""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import tvm_ffi

from . import _lib
from . import output_specs as _outputs
from . import relax_vm as _relax
from . import remote as _remote
from .signature import Param, Signature, resolve

if TYPE_CHECKING:
    from ._typing import Bound, ModuleTarget, Target

#: Bound tensors are converted to (or must already be) contiguous and aligned to this many bytes.
ALIGNMENT = 64
#: The largest position a call can reach: one call passes at most INT32_MAX arguments.
MAX_POSITION = 2**31 - 2

#: Keyword options of ``partial()``. ``outputs`` is reserved for a coming option. A parameter of
#: one of these names is bound through the mapping: ``partial(f, {"device": d}, signature=...)``.
OPTIONS = ("signature", "device", "function", "outputs")

_UNSET = object()  # tells "option not given" from any value, None included


@overload
def partial(
    target: tvm_ffi.Function,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = ...,
    function: Any = ...,
    outputs: Any = None,
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
    outputs: Any = None,
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
    outputs: Any = None,
    **by_name: Any,
) -> tvm_ffi.Function | tvm_ffi.Module: ...
def partial(
    target: Target,
    bound: Bound | None = None,
    /,
    *,
    signature: Any = None,
    device: Any = _UNSET,
    function: Any = _UNSET,
    outputs: Any = None,
    **by_name: Any,
) -> tvm_ffi.Function | tvm_ffi.Module:
    """Bind constant arguments of ``target`` once; call the result with the remaining ones.

    Parameters
    ----------
    target
        A function (``tvm_ffi.Function``: ``exe["main"]``, ``VirtualMachine(...)["main"]``, a
        partial function) or a module (``tvm.runtime.Module``, ``tvm.runtime.Executable``, a
        ``relax.VirtualMachine``, a partial module).
    bound
        ``{position: value}`` and/or ``{name: value}``. Integer positions count in the target's
        own argument list from 0 (for a partial: its free arguments); string keys bind by name,
        like keywords, and also reach parameters named like an option (``{"device": d}``).
    signature
        The ORIGINAL function's full parameter list, also when ``target`` is a partial: a tirx
        ``PrimFunc``, the TE tensor list given to ``te.create_prim_func``, a Relax ``Function`` or
        ``VirtualMachine``, or a list of names. Needed to bind by name (unless the target is a
        partial that recorded its names); tensors are then checked against their parameter.
    device
        Where values that are not yet tvm Tensors are placed (default: CPU).
    function
        For a module target, the function the bindings apply to (default ``"main"``).
    outputs
        Parameters (names or positions, one or a list) that each call allocates and returns
        instead of taking them: ``out = partial(exe, outputs="result", ...)(data)``. Needs a
        signature with dtypes and shapes; see ``tvm_partial.outputs``.
    **by_name
        ``name=value`` bindings, resolved through the signature. A name that is also an option
        (``signature``, ``device``, ``function``, ``outputs``) and a parameter is refused as a
        keyword: bind it through the mapping.

    Returns
    -------
    A ``tvm_ffi.Function`` for a function target (the closure itself, no Python wrapper); a
    ``partial_apply`` module (a ``tvm_ffi.Module``) for a module target.

    The options are annotated ``Any``: ``signature``'s forms are TVM classes, which carry no type
    information, and a type checker matches ``partial(exe, **params)`` (a dict of tensors)
    against every keyword parameter, so a ``str``-typed ``function`` would refuse that call.
    """
    fname = function if isinstance(function, str) else "main"
    kind, obj, vm = _classify(target, None if device is _UNSET else device)
    view = _TargetView.of(obj, "" if kind == "function" else fname, fname, signature, vm)
    _refuse_option_clashes(view, device, function, outputs)
    if function is not _UNSET and not isinstance(function, str):
        raise TypeError(f"function= must be the name of a function (str), got {type(function).__name__}")
    keyed, named = _split_keys(bound)
    named = _merge_named(named, by_name)
    targets = view.positions(keyed, named)
    device = _device(None if device is _UNSET else device, default=None)
    if kind == "module":  # a remote module: its session's device by default; other sessions refused
        device = _remote.placement(
            obj, device, [v for _, v in targets.values()], [view.label(p, o) for p, (o, _) in targets.items()]
        )
    device = _device(device)
    values = {}
    for position, (original, value) in targets.items():
        label = view.label(position, original)
        param = view.sig.params[original] if view.sig is not None and original is not None else None
        values[position] = _convert(value, param, label, device)
    names = view.free_names()
    specs = None if outputs is None else _outputs.resolve(outputs, view.sig, sorted(view.bound))
    full_names = view.original_names
    if kind == "function":
        return _lib.partial_apply(obj, values, view.closure_name, names, specs, full_names)
    return _lib.partial_apply_module(
        obj,
        {fname: values},
        {fname: names} if names else {},
        {fname: specs} if specs is not None else {},
        {fname: full_names} if full_names else {},
    )


def rebind(
    module: tvm_ffi.Module,
    bound: Mapping[int, Any] | None = None,
    /,
    *,
    function: Any = "main",
    device: Any = None,
    **by_name: Any,
) -> tvm_ffi.Module:
    """A new partial module over the same compiled code with other values at already-bound
    positions: ``rebind(pm, weights=new_w)``. No recompilation; O(number of bindings).

    Each new tensor must match the dtype and shape of the value it replaces. To change what the
    existing module computes instead, update its bound tensor in place:
    ``tvm_partial.bindings(pm)["main"][1].copyfrom(new_w)``.
    """
    current = bindings(module) if isinstance(module, tvm_ffi.Module) else None
    if current is None:
        raise TypeError(f"rebind needs a partial module, got {type(module).__name__}")
    if function not in current:
        raise KeyError(
            f"rebind: function {function!r} has no bindings (bound: {', '.join(current) or 'none'})"
        )
    names = param_names(module)
    sig = Signature(function, tuple(Param(n) for n in names[function])) if function in names else None
    if by_name and sig is None:
        raise TypeError(
            f"rebind by name ({', '.join(by_name)}) needs recorded parameter names; "
            f"{function}() has none: rebind by position"
        )
    if not module.imports:
        raise ValueError(
            "rebind: this partial module wraps no compiled code (it was restored from bytes alone); "
            "give it its code when loading: tvm_partial.load_from_bytes(data, wrapped=exe)"
        )
    new = _positions(bound, by_name, sig)
    device = _device(
        _remote.placement(
            module, _device(device, default=None), list(new.values()), [_label(i, sig) for i in new]
        )
    )
    replaced = dict(current[function])
    for index, value in new.items():
        if index not in replaced:
            raise IndexError(
                f"rebind: position {index} of {function}() is not bound "
                f"(bound: {sorted(replaced)}); rebind replaces bound values"
            )
        name = sig.params[index].name if sig is not None else f"position {index}"
        replaced[index] = _rebound(replaced[index], value, name, _label(index, sig), device)
    current[function] = replaced
    return _lib.partial_apply_module(module.imports[0], current, names, _outputs.raw(module))


#: The kinds a bound scalar can have; a rebind keeps the kind.
_SCALAR_KINDS = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (type(None), "None"))


def _kind_of(value: Any) -> str:
    if isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__"):
        return "tensor"
    for cls, kind in _SCALAR_KINDS:
        if isinstance(value, cls):
            return kind
    return type(value).__name__


def _a(kind: str) -> str:
    return {"int": "an int", "None": "None"}.get(kind, f"a {kind}")


def _rebound(old: Any, value: Any, name: str, label: str, device: Any) -> Any:
    """The value that replaces ``old``: of the same kind (a tensor of the same dtype and shape, or
    a scalar of the same kind; an int may replace a float), else refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(old, tvm_ffi.Tensor):
        if not (isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__")):
            raise TypeError(
                f"rebind: cannot rebind {label}: a tensor was bound there, got "
                f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                f"{tuple(old.shape)}"
            )
        return _convert(value, Param(name, "tensor", str(old.dtype), tuple(old.shape)), label, device)
    old_kind, new_kind = _kind_of(old), _kind_of(value)
    if old_kind == "float" and new_kind == "int":
        if float(value) != value:  # past 2**53 the float would not be the int given
            raise ValueError(
                f"rebind: cannot rebind {label}: the int {value} has no exact float value; pass a float"
            )
        value, new_kind = float(value), "float"
    if new_kind != old_kind:
        raise TypeError(
            f"rebind: cannot rebind {label}: {_a(old_kind)} was bound there, got "
            f"{_a(new_kind)}; pass {_a(old_kind)}"
        )
    return value


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
    raw = _lib.partial_apply_bindings(obj)
    as_dict = {
        str(f): {int(i): str(v) if isinstance(v, str) else v for i, v in b.items()} for f, b in raw.items()
    }
    return as_dict[""] if isinstance(obj, tvm_ffi.Function) else as_dict


@overload
def param_names(obj: tvm_ffi.Function) -> list[str]: ...
@overload
def param_names(obj: tvm_ffi.Module) -> dict[str, list[str]]: ...
def param_names(obj: tvm_ffi.Function | tvm_ffi.Module) -> list[str] | dict[str, list[str]]:
    """Recorded parameter names (bound ones included): a list for a partial function (empty
    when unknown), ``{function: [names]}`` for a partial module."""
    raw = {str(f): [str(n) for n in names] for f, names in _lib.param_names(obj).items()}
    return raw.get("", []) if isinstance(obj, tvm_ffi.Function) else raw


# ----------------------------------------------------------------------------------------------
def _classify(target: Any, device: Any = None) -> tuple[str, Any, Callable[[str], Signature | None] | None]:
    """-> (kind, ffi object, a callable giving a function's Signature by name (a Relax VM's
    parameter names), or None)."""
    if isinstance(target, tvm_ffi.Function):
        return "function", target, None
    type_name = type(target).__name__
    if type_name == "VirtualMachine" and hasattr(target, "module"):
        return "module", target.module, lambda name: resolve(target, name)
    executable = _relax.executable_module(target)
    if executable is not None:  # runs in a VirtualMachine that the partial module records
        mod = _relax.vm_module(executable, _device(device))
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


class _TargetView:
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
    ) -> _TargetView:
        bound, recorded = _already_bound(obj, key)
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
                raise TypeError(_clash_message("signature", hint.name)) from None
            raise
        if recorded is not None:
            _check_against_recorded(sig, recorded, bound)
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


def _already_bound(obj: Any, key: str) -> tuple[frozenset[int], list[str] | None]:
    """-> (original positions a partial fills for ``key`` (bound values and outputs), its
    recorded names or None)."""
    if not _lib.is_partial(obj):
        return frozenset(), None
    bound = frozenset(_outputs.taken_positions(obj, key))
    recorded = _lib.param_names(obj)
    return bound, ([str(n) for n in recorded[key]] if key in recorded else None)


def _check_against_recorded(sig: Signature, recorded: list[str], bound: frozenset[int]) -> None:
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


def _clash_message(option: str, function: str) -> str:
    text = (
        f"{option} is both a parameter of {function}() and an option of partial(): bind it as "
        f'partial(f, {{"{option}": value}}, ...)'
    )
    if option == "device":
        text += "; to place values on a device, bind tvm tensors already there"
    return text


def _refuse_option_clashes(view: _TargetView, device: Any, function: Any, outputs: Any) -> None:
    """A keyword that is an option AND a parameter of the signature: never guess which is meant."""
    if view.sig is None:
        return
    given = {
        "device": device is not _UNSET,
        "function": function is not _UNSET,
        "outputs": outputs is not None,
    }
    for option, was_given in given.items():
        if was_given and option in view.sig.names:
            raise TypeError(_clash_message(option, view.sig.name))


def _split_keys(bound: Any) -> tuple[dict[int, Any], dict[str, Any]]:
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


def _merge_named(named: dict[str, Any], by_name: dict[str, Any]) -> dict[str, Any]:
    """Names from the mapping and from keywords, each bound once."""
    for name in by_name:
        if name in named:
            raise TypeError(f"parameter {name!r} is bound twice: as a key of the mapping and as a keyword")
    return {**named, **by_name}


def _positions(
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


def _label(index: int, sig: Signature | None) -> str:
    if sig is None:
        return f"position {index}"
    return f"parameter {sig.params[index].name!r} (position {index})"


def _device(device: Any, default: tuple[str, int] | None = ("cpu", 0)) -> Any:
    if device is None:
        return None if default is None else tvm_ffi.device(*default)
    if isinstance(device, str):
        return tvm_ffi.device(device)
    return device


def _convert(value: Any, param: Param | None, label: str, device: Any) -> Any:
    """Turn one bound value into what the closure holds, checking it against its parameter."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        _check_scalar(value, param, label)
        return value
    if isinstance(value, tvm_ffi.Tensor):
        tensor = value
        # A remote tensor's data pointer is a local handle, not its address; the server's
        # allocator aligns what it allocates.
        aligned = tensor.data_ptr() % ALIGNMENT == 0 or _remote.device_session(tensor.device) is not None
        if not (aligned and tensor.is_contiguous()):
            tensor = _aligned_copy(tensor, tensor.device, value, label)  # kernels crash on such data
    elif isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        tensor = _foreign_to_tensor(value, param, label, device)
    elif isinstance(value, (tvm_ffi.Function, tvm_ffi.Module, tvm_ffi.Object)):
        return value  # held as is; a partial module refuses to save it
    else:
        raise TypeError(
            f"cannot bind {label}: expected a tensor (tvm, numpy or DLPack), int, float, bool, "
            f"str or None, got {type(value).__name__}"
        )
    _check_tensor(tensor, param, label)
    return tensor


def _foreign_to_tensor(value: Any, param: Param | None, label: str, device: Any) -> tvm_ffi.Tensor:
    """A numpy array or DLPack tensor -> a contiguous, 64-byte-aligned tvm Tensor (a copy)."""
    source, extension = value, None
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"cannot bind {label}: a numpy array of Python objects is not a tensor")
        if param is not None and param.dtype is not None:
            _check_dtype(str(value.dtype), param, label)  # before copying
        extension = _extension_dtype(value.dtype, label)
        if extension is not None:  # numpy's DLPack export refuses these: copy the bits, retype after
            source = value.view(f"uint{value.dtype.itemsize * 8}")
    tensor = _aligned_copy(source, device, value, label)
    if not isinstance(tensor, tvm_ffi.Tensor):
        # tvm-ffi hands a tensor back in the caller's framework (torch in, torch out): the same
        # memory, seen as a tvm Tensor, so that dtypes compare as TVM dtypes.
        tensor = tvm_ffi.from_dlpack(tensor)
    if extension is not None:
        tensor = _create_view()(tensor, tvm_ffi.Shape(tuple(tensor.shape)), extension, 0)
    return tensor


def _extension_dtype(dtype: np.dtype, label: str) -> str | None:
    """The TVM dtype of a numpy dtype that DLPack cannot carry (ml_dtypes: bfloat16, float8...),
    None for an ordinary dtype."""
    if dtype.kind != "V" or dtype.fields is not None or dtype.subdtype is not None:
        return None
    name = str(dtype)
    try:
        tvm_dtype = tvm_ffi.dtype(name)
    except Exception:
        raise TypeError(f"cannot bind {label}: numpy dtype {name} has no TVM equivalent") from None
    if tvm_dtype.lanes != 1 or tvm_dtype.bits != dtype.itemsize * 8:
        raise TypeError(
            f"cannot bind {label}: numpy stores dtype {name} in {dtype.itemsize * 8} bits per element, "
            f"TVM in {tvm_dtype.bits}; pack the values and bind a tvm Tensor instead"
        )
    return name


def _create_view() -> tvm_ffi.Function:
    view = tvm_ffi.get_global_func("runtime.TVMTensorCreateView", allow_missing=True)
    if view is None:  # registered by the TVM runtime
        import tvm  # noqa: F401

        view = tvm_ffi.get_global_func("runtime.TVMTensorCreateView")
    return view


#: How an allocation failure reads: numpy's MemoryError, AlignedEmpty's "out of memory allocating",
#: the device allocators' "failed to allocate" / "out of memory", C++'s bad_alloc.
_OUT_OF_MEMORY = re.compile(
    r"out of memory|\boom\b|bad_alloc|(cannot|could not|couldn't|failed to|unable to) allocate|"
    r"allocation (failed|failure)",
    re.IGNORECASE,
)


def _aligned_copy(source: Any, device: Any, value: Any, label: str) -> tvm_ffi.Tensor:
    try:
        return _lib.aligned_copy(source, device)
    except Exception as err:
        if isinstance(err, MemoryError) or _OUT_OF_MEMORY.search(str(err)):
            raise MemoryError(
                f"cannot bind {label}: out of memory copying {_size(value)} into an aligned tensor "
                f"on {device} ({err}); free memory or bind a smaller tensor"
            ) from err
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} is not a usable tensor ({err})"
        ) from err


def _size(value: Any) -> str:
    """``1024 bytes``: the byte size of a tensor, for messages."""
    try:
        if isinstance(value, tvm_ffi.Tensor):
            bits = tvm_ffi.dtype(str(value.dtype)).bits * tvm_ffi.dtype(str(value.dtype)).lanes
            return f"{int(np.prod(value.shape, dtype=np.int64)) * ((bits + 7) // 8)} bytes"
        return f"{int(value.nbytes)} bytes"
    except Exception:
        return "a tensor of unknown size"


def _check_dtype(dtype: str, param: Param, label: str) -> None:
    if param.dtype is not None and dtype != param.dtype:
        raise TypeError(f"cannot bind {label}: dtype {dtype} does not match {param.describe()}")


def _check_tensor(tensor: tvm_ffi.Tensor, param: Param | None, label: str) -> None:
    if param is None or param.kind is None:
        return
    if param.kind == "scalar":
        raise TypeError(f"cannot bind {label}: a tensor given for scalar parameter {param.describe()}")
    _check_dtype(str(tensor.dtype), param, label)
    if param.shape is None:
        return
    shape = tuple(tensor.shape)
    if len(shape) != len(param.shape) or any(p is not None and p != s for p, s in zip(param.shape, shape)):
        raise ValueError(f"cannot bind {label}: shape {shape} does not match {param.describe()}")


def _check_scalar(value: Any, param: Param | None, label: str) -> None:
    if param is None or param.kind is None or value is None:
        return
    if param.kind == "tensor":
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} given for tensor parameter {param.describe()}"
        )
    dtype = param.dtype or ""
    if dtype == "bool":
        ok = isinstance(value, bool)
    elif dtype.startswith(("int", "uint")):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif dtype.startswith(("float", "bfloat")):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = True
    if not ok:
        raise TypeError(
            f"cannot bind {label}: {type(value).__name__} {value!r} does not fit {param.describe()}"
        )
