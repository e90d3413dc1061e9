# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Partials of modules in a TVM RPC session (``remote.load_module(...)``). A session's device type
is ``type + (session index + 1) * 128`` (``tvm.rpc.RPCSession.device``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tvm_ffi

#: Device types at or past this mark belong to an RPC session (TVM's ``RPC_SESS_MASK``).
RPC_SESS_MASK = 128


def module_session(module: Any) -> int | None:
    """The RPC session index of ``module`` or of a module it imports (a partial of a remote
    module), None for a module that runs in this process."""
    seen = set()
    stack = [module]
    while stack:
        mod = stack.pop()
        if id(mod) in seen:
            continue
        seen.add(id(mod))
        if mod.kind == "rpc":
            return int(tvm_ffi.get_global_func("rpc.SessTableIndex")(mod))
        stack.extend(mod.imports)
    return None


def device_session(device: Any) -> int | None:
    """The RPC session index of ``device``, None for a device of this process."""
    kind = int(device.dlpack_device_type())
    return kind // RPC_SESS_MASK - 1 if kind >= RPC_SESS_MASK else None


def _describe(session: int | None) -> str:
    return "this process" if session is None else f"RPC session {session}"


def device_name(device: Any) -> str:
    """``cpu:0`` or ``cpu:0 of RPC session 1`` (TVM prints a remote device as ``remote[0.0078125]``)."""
    kind, session = int(device.dlpack_device_type()), device_session(device)
    local = tvm_ffi.device(kind % RPC_SESS_MASK, int(device.index))
    return str(local) if session is None else f"{local} of RPC session {session}"


def placement(module: Any, device: Any, values: Iterable[Any], labels: Iterable[str]) -> Any:
    """Where values not yet tvm Tensors go for a partial of ``module`` (None: the default CPU).
    ``device``: the user's ``device=`` or None. A remote module defaults to the device of the first
    remote tensor bound, else the session's CPU, and refuses a device or tensor of another session
    or of this process (a remote function cannot read them); a local one refuses remote tensors."""
    session = module_session(module)
    tensors = [(label, value) for label, value in zip(labels, values) if isinstance(value, tvm_ffi.Tensor)]
    for label, tensor in tensors:
        where = device_session(tensor.device)
        if where != session:
            raise ValueError(
                f"cannot bind {label}: the tensor lives in {_describe(where)} "
                f"({device_name(tensor.device)}), but the module runs in {_describe(session)}, which "
                "cannot read it; "
                + (
                    "bind a tensor of the module's session (or a numpy array, copied there)"
                    if session is not None
                    else "bind it to a module loaded in that session, or bind tensor.numpy() here"
                )
            )
    if device is not None and device_session(device) != session:
        raise ValueError(
            f"device={device_name(device)}: the module runs in {_describe(session)}, which cannot read "
            "values placed there; "
            + (
                "pass a device of that session (remote.cpu()) or leave device= out"
                if session is not None
                else "pass a device of this process"
            )
        )
    if device is not None or session is None:
        return device
    if tensors:
        return tensors[0][1].device
    return tvm_ffi.device(1 + (session + 1) * RPC_SESS_MASK, 0)  # the session's CPU (kDLCPU = 1)


def refuse_export(module: Any, what: str = "export_library") -> None:
    """A partial of a remote module holds a handle to code in another process and tensors there:
    it cannot be written into a library. Refused with what to do instead."""
    if isinstance(module, tvm_ffi.Module) and module_session(module) is not None:
        raise ValueError(
            f"{what}: this module wraps a module of an RPC session (remote.load_module), whose "
            "code and bound tensors live in the server's process and cannot be exported from here; "
            "bind the compiled module locally (tvm_partial.partial(exe, ...)), export that with "
            "tvm_partial.export_library(pm, 'model.so', self_contained=True), then "
            "remote.upload('model.so') and remote.load_module('model.so')"
        )


#: What TVM's loader registry is asked for when a tvm-partial artifact is loaded.
LOADER = "ffi.Module.load_from_bytes.partial_apply"


def load_module(session: Any, path: str) -> tvm_ffi.Module:
    """``session.load_module(path)``, saying what to do when the server lacks tvm-partial's loader
    (an artifact exported without ``self_contained=True``)."""
    try:
        return session.load_module(path)
    except Exception as err:
        if not _lacks(session, LOADER):  # asked of the server, not read from its words
            raise
        raise RuntimeError(
            f"the RPC server cannot load {path}, and tvm-partial's loader {LOADER} is not registered "
            "there (tvm-partial is not loaded in the server). Either export the artifact with "
            "tvm_partial.export_library(pm, path, self_contained=True), which carries its own "
            "loader, or install tvm-partial on the server (no package index carries it yet: pip install "
            "the wheel that scripts/build_wheel.sh builds, or a checkout; the tvm.backends entry "
            "point loads it in rpc_server, unless TVM_DEVICE_BACKEND_AUTOLOAD=0)"
        ) from err


def _lacks(session: Any, name: str) -> bool:
    """Whether the server says it has no global ``name`` (False when it cannot be asked)."""
    try:
        session.get_function(name)
    except AttributeError:
        return True
    except Exception:
        return False
    return False
