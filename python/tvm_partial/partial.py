"""``partial()``: bind constant arguments of a TVM function or module, by position or by name."""

from __future__ import annotations

import numbers
from typing import Any, Mapping, Optional

import numpy as np
import tvm_ffi

from . import _lib
from . import output_specs as _outputs
from .signature import Param, Signature, resolve

#: Bound tensors are converted to (or must already be) contiguous and aligned to this many bytes.
ALIGNMENT = 64


def partial(target, bound: Optional[Mapping[int, Any]] = None, /, *, signature=None, device=None,
            function: str = "main", outputs=None, **by_name):
    """Bind constant arguments of ``target`` once; call the result with the remaining ones.

    Parameters
    ----------
    target
        A function (``tvm_ffi.Function``: ``exe["main"]``, ``VirtualMachine(...)["main"]``, a
        partial function) or a module (``tvm.runtime.Module``, ``tvm.runtime.Executable``, a
        ``relax.VirtualMachine``, a partial module).
    bound
        ``{position: value}``: positions in the target's argument list, counting from 0.
    signature
        Where parameter names, dtypes and shapes come from: a tirx ``PrimFunc``, the TE tensor
        list given to ``te.create_prim_func``, a Relax ``Function`` or ``VirtualMachine``, or a
        list of names. Needed to bind by name; tensors are then checked against their parameter.
    device
        Where values that are not yet tvm Tensors are placed (default: CPU).
    function
        For a module target, the function the bindings apply to.
    outputs
        Parameters (names or positions, one or a list) that each call allocates and returns
        instead of taking them: ``out = partial(exe, outputs="result", ...)(data)``. Needs a
        signature with dtypes and shapes; see ``tvm_partial.outputs``.
    **by_name
        ``name=value`` bindings, resolved through ``signature``.

    Returns
    -------
    A ``tvm_ffi.Function`` for a function target (the closure itself, no Python wrapper); a
    ``partial_apply`` module for a module target.
    """
    kind, obj, names_hint = _classify(target)
    sig = resolve(signature, function) if signature is not None else names_hint(function)
    if sig is None and by_name:
        raise TypeError(
            f"binding by name ({', '.join(by_name)}) needs signature=: a PrimFunc, the TE tensor "
            "list, a Relax function or VirtualMachine, or a list of parameter names"
        )
    positions = _positions(bound, by_name, sig)
    device = _device(device)
    values = {i: _convert(v, sig.params[i] if sig else None, _label(i, sig), device)
              for i, v in positions.items()}
    names = sig.names if sig is not None else []
    if outputs is not None:
        if sig is not None and "outputs" in sig.names:
            raise TypeError("outputs= is ambiguous: the function has a parameter named 'outputs'; "
                            "bind it with the mapping form partial(f, {'outputs': value}, ...)")
        taken = _outputs.taken_positions(obj, "" if kind == "function" else function)
        specs = _outputs.resolve(outputs, sig, taken)
        if taken and sig is not None and len(sig.params) > taken[-1]:
            names = [n for i, n in enumerate(sig.names) if i not in taken]  # the target's arguments
        if kind == "function":
            return _lib.partial_apply(obj, values, sig.name if sig else "", names, specs)
        return _lib.partial_apply_module(obj, {function: values}, {function: names} if names else {},
                                         {function: specs})
    if kind == "function":
        return _lib.partial_apply(obj, values, sig.name if sig else "", names)
    return _lib.partial_apply_module(obj, {function: values}, {function: names} if names else {})


def rebind(module, bound: Optional[Mapping[int, Any]] = None, /, *, function: str = "main",
           device=None, **by_name):
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
        raise KeyError(f"rebind: function {function!r} has no bindings (bound: {', '.join(current) or 'none'})")
    names = param_names(module)
    sig = Signature(function, tuple(Param(n) for n in names[function])) if function in names else None
    if by_name and sig is None:
        raise TypeError(f"rebind by name ({', '.join(by_name)}) needs recorded parameter names; "
                        f"{function}() has none: rebind by position")
    if not module.imports:
        raise ValueError(
            "rebind: this partial module wraps no compiled code (it was restored from bytes alone); "
            "give it its code when loading: tvm_partial.load_from_bytes(data, wrapped=exe)")
    device = _device(device)
    replaced = dict(current[function])
    for index, value in _positions(bound, by_name, sig).items():
        if index not in replaced:
            raise IndexError(f"rebind: position {index} of {function}() is not bound "
                             f"(bound: {sorted(replaced)}); rebind replaces bound values")
        name = sig.params[index].name if sig is not None else f"position {index}"
        replaced[index] = _rebound(replaced[index], value, name, _label(index, sig), device)
    current[function] = replaced
    return _lib.partial_apply_module(module.imports[0], current, names, _outputs.raw(module))


#: The kinds a bound scalar can have; a rebind keeps the kind.
_SCALAR_KINDS = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (type(None), "None"))


def _kind_of(value) -> str:
    if isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__"):
        return "tensor"
    for cls, kind in _SCALAR_KINDS:
        if isinstance(value, cls):
            return kind
    return type(value).__name__


def _a(kind: str) -> str:
    return {"int": "an int", "None": "None"}.get(kind, f"a {kind}")


def _rebound(old, value, name: str, label: str, device):
    """The value that replaces ``old``: of the same kind (a tensor of the same dtype and shape, or
    a scalar of the same kind; an int may replace a float), else refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(old, tvm_ffi.Tensor):
        if not (isinstance(value, (tvm_ffi.Tensor, np.ndarray)) or hasattr(value, "__dlpack__")):
            raise TypeError(f"rebind: cannot rebind {label}: a tensor was bound there, got "
                            f"{type(value).__name__}; pass a tensor of dtype {old.dtype} and shape "
                            f"{tuple(old.shape)}")
        return _convert(value, Param(name, "tensor", str(old.dtype), tuple(old.shape)), label, device)
    old_kind, new_kind = _kind_of(old), _kind_of(value)
    if old_kind == "float" and new_kind == "int":
        if float(value) != value:  # past 2**53 the float would not be the int given
            raise ValueError(f"rebind: cannot rebind {label}: the int {value} has no exact float "
                             "value; pass a float")
        value, new_kind = float(value), "float"
    if new_kind != old_kind:
        raise TypeError(f"rebind: cannot rebind {label}: {_a(old_kind)} was bound there, got "
                        f"{_a(new_kind)}; pass {_a(old_kind)}")
    return value


def bindings(obj) -> dict:
    """What a partial holds: ``{position: value}`` for a partial function, ``{function:
    {position: value}}`` for a partial module. Tensors are the bound objects themselves."""
    raw = _lib.partial_apply_bindings(obj)
    as_dict = {str(f): {int(i): str(v) if isinstance(v, str) else v for i, v in b.items()}
               for f, b in raw.items()}
    return as_dict[""] if isinstance(obj, tvm_ffi.Function) else as_dict


def param_names(obj) -> dict:
    """Recorded parameter names (bound ones included): a list for a partial function (empty
    when unknown), ``{function: [names]}`` for a partial module."""
    raw = {str(f): [str(n) for n in names] for f, names in _lib.param_names(obj).items()}
    return raw.get("", []) if isinstance(obj, tvm_ffi.Function) else raw


# ----------------------------------------------------------------------------------------------
def _classify(target):
    """-> (kind, ffi object, names_hint(function) -> Optional[Signature])."""
    if isinstance(target, tvm_ffi.Function):
        return "function", target, lambda name: _free_signature(target, "", name)
    type_name = type(target).__name__
    if type_name == "VirtualMachine" and hasattr(target, "module"):
        return "module", target.module, lambda name: resolve(target, name)
    if type_name in ("Executable", "VMExecutable") and hasattr(target, "mod"):
        target = target.mod
    if isinstance(target, tvm_ffi.Module):
        if target.kind == "relax.VMExecutable":
            raise TypeError(
                "a Relax VM executable's functions run inside a VirtualMachine: bind "
                "relax.VirtualMachine(exe, device) (or one of its functions) instead"
            )
        return "module", target, lambda name: _free_signature(target, name, name)
    if callable(target):
        return "function", tvm_ffi.convert(target), lambda name: None
    raise TypeError(
        f"partial() needs a function or a module to bind, got {type_name}, which is not callable"
    )


def _free_signature(obj, key: str, name: str) -> Optional[Signature]:
    """For a partial with recorded names: the names of the arguments it still takes."""
    if not _lib.is_partial(obj):
        return None
    recorded = _lib.param_names(obj)
    if key not in recorded:
        return None
    taken = set(_outputs.taken_positions(obj, key))  # bound values and outputs
    return Signature(name, tuple(Param(str(n)) for i, n in enumerate(recorded[key]) if i not in taken))


def _positions(bound, by_name: dict, sig: Optional[Signature]) -> dict:
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
        index = sig.index_of(name)
        if index in positions:
            raise TypeError(f"parameter {name!r} (position {index}) is bound both by index and by name")
        positions[index] = value
    return positions


def _label(index: int, sig: Optional[Signature]) -> str:
    if sig is None:
        return f"position {index}"
    return f"parameter {sig.params[index].name!r} (position {index})"


def _device(device):
    if device is None:
        return tvm_ffi.device("cpu", 0)
    if isinstance(device, str):
        return tvm_ffi.device(device)
    return device


def _convert(value, param: Optional[Param], label: str, device):
    """Turn one bound value into what the closure holds, checking it against its parameter."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        _check_scalar(value, param, label)
        return value
    if isinstance(value, tvm_ffi.Tensor):
        tensor = value
        aligned = tensor.data_ptr() % ALIGNMENT == 0
        if not (aligned and tensor.is_contiguous()):
            tensor = _lib.aligned_copy(tensor, tensor.device)  # kernels crash on such data
    elif isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        if isinstance(value, np.ndarray) and value.dtype.hasobject:
            raise TypeError(f"cannot bind {label}: a numpy array of Python objects is not a tensor")
        if param is not None and param.dtype is not None and isinstance(value, np.ndarray):
            _check_dtype(str(value.dtype), param, label)
        try:
            tensor = _lib.aligned_copy(value, device)
        except Exception as err:  # conversion of a foreign tensor failed
            raise TypeError(f"cannot bind {label}: {type(value).__name__} is not a usable tensor ({err})") from err
    elif isinstance(value, (tvm_ffi.Function, tvm_ffi.Module, tvm_ffi.Object)):
        return value  # held as is; a partial module refuses to save it
    else:
        raise TypeError(
            f"cannot bind {label}: expected a tensor (tvm, numpy or DLPack), int, float, bool, "
            f"str or None, got {type(value).__name__}"
        )
    _check_tensor(tensor, param, label)
    return tensor


def _check_dtype(dtype: str, param: Param, label: str) -> None:
    if param.dtype is not None and dtype != param.dtype:
        raise TypeError(f"cannot bind {label}: dtype {dtype} does not match {param.describe()}")


def _check_tensor(tensor, param: Optional[Param], label: str) -> None:
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


def _check_scalar(value, param: Optional[Param], label: str) -> None:
    if param is None or param.kind is None or value is None:
        return
    if param.kind == "tensor":
        raise TypeError(f"cannot bind {label}: {type(value).__name__} given for tensor parameter {param.describe()}")
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
        raise TypeError(f"cannot bind {label}: {type(value).__name__} {value!r} does not fit {param.describe()}")
