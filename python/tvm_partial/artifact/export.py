# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``export_library``: a module and its imports as one deploy library (code and bound constants)."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tvm_ffi

from .. import _facts, _ffi_api
from .. import remote as _remote
from .._progress import ProgressCallback
from .._typing import PathLike
from .files import new_file, real_path

if TYPE_CHECKING:
    from .._typing import ExecutableLike

_EMBED_OBJECT = "tvm_partial_embed.o"


def export_library(
    module: tvm_ffi.Module | ExecutableLike,
    path: PathLike,
    *,
    self_contained: bool = False,
    zero_copy: bool | None = None,
    weights_file: PathLike | None = None,
    progress: ProgressCallback | None = None,
    **kwargs: Any,
) -> None:
    """Export ``module`` (a partial module or any TVM module) and everything it imports into one
    shared library at ``path``: code and bound constants together.

    With ``self_contained=True`` tvm-partial's own code (``tvm_partial_embed.o`` from the installed
    wheel) is linked in too, so the artifact loads where the extension is not registered: a C++
    program linking only libtvm_ffi (and libtvm_runtime), or ``import tvm`` with
    ``TVM_DEVICE_BACKEND_AUTOLOAD=0``. The artifact grows by about the size of that object (the
    wheel's carries its own libstdc++; docs/deploy.md). The default artifact holds only the
    compiled code and the constants, and needs tvm-partial where it is loaded.

    With ``zero_copy`` (default: when the constants reach 16 MiB)
    the tensor payloads are appended to the library file (one write, after the linked code)
    instead of going into the bytes TVM embeds: loading maps them without copying, pages are read
    when first touched, and writes to bound tensors are private (copy-on-write). ``False`` keeps
    them inside the embedded bytes. ``progress`` (internal), if given, is called as
    ``progress(done_bytes, total_bytes)`` while the appended payloads are written.

    With ``weights_file`` (a ``.safetensors`` path) the tensor payloads go to that file instead,
    64-byte aligned under the parameters' names (``weights``), and the library keeps the code and the
    metadata, with the file's name relative to the library's folder: loading maps the file beside
    the library without copying (see docs/large_constants.md).

    A module loaded back from an artifact (then ``rebind``) is exported as a copy of that
    artifact's file with the new constants (see docs/large_constants.md).

    The library is written under a new name and renamed onto ``path``: a file already there is
    replaced, never rewritten in place (a process may have it mapped). A value that cannot be
    serialised is refused before anything is written; on any failure ``path`` is as it was. ``kwargs`` go to TVM's ``export_library`` (``addons``, ``options``,
    ``cc``, ...).
    """
    path = os.fspath(path)
    if not hasattr(module, "export_library"):
        raise TypeError(f"export_library needs a tvm.runtime.Module, got {type(module).__name__}")
    _remote.refuse_export(module)
    pm = module if isinstance(module, tvm_ffi.Module) and _facts.of(module) is not None else None
    if weights_file is not None:
        if pm is None:
            raise TypeError("export_library: weights_file= needs a partial module (tvm_partial.partial(...))")
        _check_weights_path(path, os.fspath(weights_file))
    given = sorted(kwargs) + (["self_contained"] if self_contained else [])
    if kwargs.get("addons"):
        kwargs["addons"] = list(kwargs["addons"])  # TVM appends to the list: keep the caller's
    if self_contained:
        if path.endswith((".tar", ".wasm")):
            raise ValueError(f"self_contained=True needs a shared library path (.so), got {path}")
        kwargs["addons"] = [*(kwargs.get("addons") or []), os.fspath(embed_object())]
        options = kwargs.get("options") or []
        # The embedded code registers globals pointing into the artifact: unloading it crashes at exit.
        kwargs["options"] = [*([options] if isinstance(options, str) else options), "-Wl,-z,nodelete"]

    def link(linked: Any, file: str) -> None:  # TVM links the code, C++ the rest
        linked.export_library(file, **kwargs)

    if pm is None:
        with new_file(path) as staged:
            link(module, staged)
        return
    # C++ decides the rest (cpp/export.cc): where the payloads go, a loaded module's copy.
    zero_copy = None if zero_copy is None else bool(zero_copy)
    chosen: dict[str, Any] = {"zero_copy": zero_copy, "given": given, "progress": progress}
    with new_file(path) as staged:
        if weights_file is None:
            return _ffi_api.Export(pm, path, staged, link, chosen)
        # Relative to the library's real folder (symlinks resolved), where every reader looks.
        chosen["weights_file"] = os.path.relpath(real_path(weights_file), os.path.dirname(real_path(path)))
        with new_file(os.fspath(weights_file)) as staged_weights:
            chosen["weights_path"] = staged_weights
            _ffi_api.Export(pm, path, staged, link, chosen)


def _check_weights_path(path: str, weights_file: str) -> None:
    weights_path = real_path(weights_file)
    if weights_path == real_path(path) or (
        os.path.exists(path) and os.path.exists(weights_path) and os.path.samefile(path, weights_path)
    ):
        raise ValueError(
            f"export_library: weights_file={weights_file!r} is the library's own "
            "path; give the weights file a name of its own (e.g. model.safetensors)"
        )
    if os.path.isdir(weights_path):
        raise ValueError(
            f"export_library: weights_file={weights_file!r} is a folder; name the "
            "file to write (e.g. model.safetensors)"
        )
    if not os.path.isdir(os.path.dirname(weights_path)):
        raise FileNotFoundError(
            f"export_library: the folder of weights_file={weights_file!r} does not exist; create it first"
        )


def embed_object() -> Path:
    """The relocatable object of tvm-partial's code ``self_contained=True`` links in, as installed."""
    for file in metadata.distribution("tvm-partial").files or []:
        if file.name == _EMBED_OBJECT:
            located = Path(file.locate()).resolve()
            if located.is_file():
                return located
    raise RuntimeError(
        f"{_EMBED_OBJECT} is not in the installed tvm-partial distribution, so self-contained "
        "artifacts cannot be made (it is built on ELF platforms with ld and objcopy); reinstall "
        "tvm-partial there, or export without self_contained=True"
    )
