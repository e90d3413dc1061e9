# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The export of a partial module loaded back from an artifact (then perhaps ``rebind``): TVM
cannot export loaded code again, so the new artifact is a copy of the file the code was loaded
from, with the partial module's bytes in TVM's embedded blob and, for a zero-copy artifact, its
payload region rewritten. The original file is not changed. Which file that is, is answered by
the loaded library itself (``tvm_partial.LoadedLibraryFile``: the descriptor the loader kept, or
the file proven as the loader proves it)."""

from __future__ import annotations

import os
import shutil
from typing import Any, BinaryIO

import tvm_ffi

from .. import _facts, _ffi_api
from .files import new_file, relax_loaded
from .inspect import inspect


def _library_of(module: tvm_ffi.Module) -> tvm_ffi.Module:
    """The loaded library holding a partial module's compiled code (for a Relax model, its
    executable's)."""
    facts = _facts.of(module)
    code = facts.code if facts is not None else None
    assert code is not None  # a module loaded from an artifact has its code
    if not relax_loaded(module):
        return code
    executable = code.imports[0]  # the partial_apply_vm module's executable
    return next(m for m in executable.imports if m.kind == "library")


def export_loaded(
    module: tvm_ffi.Module, path: str, *, zero_copy: bool | None, self_contained: bool, **kwargs: Any
) -> None:
    """Export ``module`` (its code a loaded library) as an updated copy of the file it was loaded
    from. This needs the new bytes to be exactly as long as the old (``rebind`` keeps dtypes and
    shapes; a string of another length changes it)."""
    library = _library_of(module)
    if not library.implements_function("_library_bin"):  # embeds no modules: not an artifact
        raise ValueError(
            "export_library: this module's code was loaded from a library which TVM cannot export "
            "again, and it is not a tvm-partial artifact to update (it embeds no partial_apply "
            "module); bind the compiled module (what tvm.compile returned) and export that"
        )
    try:
        found = _ffi_api.LoadedLibraryFile(module, library)
        source, name = str(found["path"]), str(found["name"])  # read from the one, name the other
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(
            f"export_library: {err}; or bind the compiled module again with tvm_partial.partial() "
            "and export that"
        ) from err
    if options := sorted(kwargs) + (["self_contained"] if self_contained else []):
        raise ValueError(
            f"export_library: {', '.join(options)} cannot apply to a module loaded from {name}: "
            "its export copies that library, code and link options as they are; bind the compiled "
            "module again with tvm_partial.partial() to export with other options"
        )
    if os.path.exists(path) and os.path.samefile(path, source):
        raise ValueError(
            f"export_library: {path} is the file this module was loaded from; write the "
            "updated artifact to a new path (a loaded artifact is never changed in place)"
        )
    try:
        described = inspect(source)  # the loader's rules: an artifact it would refuse is refused
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(
            f"export_library: this module's code was loaded from {name}, which TVM cannot "
            f"export again, and it is not an intact tvm-partial artifact to update ({err}); bind "
            "the compiled module (what tvm.compile returned) and export that"
        ) from err
    if described["weights_file"] is not None:
        raise ValueError(
            f"export_library: {name} keeps its weights in the file {described['weights_file']}; to "
            "ship new weights for it, write them with tvm_partial.save_weights(module, path) and "
            "load it with tvm_partial.load(artifact, weights_file=path)"
        )
    region = described["region"]
    part = next(m for m in described["embedded"]["modules"] if m["kind"] == "partial_apply")
    external = None
    appended = region is not None and region["placement"] == "appended"
    if appended:
        external = _ffi_api.ExternalPayloads(module, None, region["symbol"], region["link"])
    if zero_copy is not None and bool(zero_copy) != appended:
        raise ValueError(
            f"export_library: zero_copy={zero_copy} differs from {name}, whose payloads are "
            f"{'appended to the file' if appended else 'inline'}; the updated artifact keeps that "
            "placement (bind the compiled module again with tvm_partial.partial() to change it)"
        )
    blob = bytes(_ffi_api.SaveToBytes(external if external is not None else module))
    if len(blob) != part["bytes"]:
        raise ValueError(
            f"export_library: the updated bindings take {len(blob)} bytes, the artifact {name} "
            f"has room for {part['bytes']}: a loaded artifact is updated in a copy of its file, "
            "which needs values of the same dtypes and shapes and strings of the same lengths; "
            "bind the compiled module again with tvm_partial.partial() and export that"
        )
    with new_file(path) as staged:
        if external is None:
            shutil.copyfile(source, staged)
        else:
            # The new region goes straight into place (one write of the weights); the code before
            # it and the trailer after it are copied around it.
            region_at, region_bytes = region["file_offset"], region["bytes"]
            hashed = _ffi_api.WritePayloads(external, staged, None, region_at)
            assert hashed is not None  # an appended region written after `region_at` bytes
            blob = bytes(hashed)
            if os.path.getsize(staged) - region_at != region_bytes:
                raise ValueError(
                    f"export_library: the updated payload region takes "
                    f"{os.path.getsize(staged) - region_at} bytes, {name} has {region_bytes}; "
                    "rebind keeps dtypes and shapes, or export from the compiled module"
                )
            with open(source, "rb") as src, open(staged, "r+b") as out:
                _copy_range(src, out, 0, region_at)
                src.seek(region_at + region_bytes)
                out.seek(region_at + region_bytes)
                shutil.copyfileobj(src, out, 1 << 20)
        with open(staged, "r+b") as out:
            out.seek(part["file_offset"])
            out.write(blob)
        shutil.copymode(source, staged)
        _check_copy(staged, name)


def _check_copy(staged: str, name: str) -> None:
    """The updated copy (of the artifact ``name``) must load as its source would (the same rules
    as load)."""
    try:
        inspect(staged)
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(
            f"export_library: the updated copy of {name} does not read back ({err}); {name} "
            "changed while it was copied"
        ) from err


def _copy_range(src: BinaryIO, out: BinaryIO, start: int, size: int) -> None:
    src.seek(start)
    out.seek(start)
    while size > 0:
        chunk = src.read(min(size, 1 << 20))
        if not chunk:
            raise ValueError(f"export_library: {src.name} is shorter than it was when loaded")
        out.write(chunk)
        size -= len(chunk)
