# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Exporting partial modules as one deploy library, loading them back, and inspecting artifacts."""

from __future__ import annotations

import errno
import mmap
import os
import secrets
import shutil
import struct
import tempfile
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Union

import tvm_ffi

from . import _elf, _ffi_api, _lib
from . import remote as _remote
from . import zero_copy as _zero_copy
from ._progress import ProgressCallback, hash_ranges

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._typing import ExecutableLike

PathLike = Union[str, "os.PathLike[str]"]
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
    ``TVM_DEVICE_BACKEND_AUTOLOAD=0``. It costs about 0.4 MB. The default artifact holds only the
    compiled code and the constants, and needs tvm-partial where it is loaded.

    With ``zero_copy`` (default: when the constants reach ``zero_copy.THRESHOLD_BYTES``, 16 MiB)
    the tensor payloads are appended to the library file (one write, after the linked code)
    instead of going into the bytes TVM embeds: loading maps them without copying, pages are read
    when first touched, and writes to bound tensors are private (copy-on-write). ``False`` keeps
    them inside the embedded bytes. ``progress`` (internal), if given, is called as
    ``progress(done_bytes, total_bytes)`` while the appended payloads are written.

    With ``weights_file`` (a ``.safetensors`` path) the tensor payloads go to that file instead,
    64-byte aligned under readable keys (``main/weights``), and the library keeps the code and the
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
    if (
        isinstance(module, tvm_ffi.Module)
        and _lib.is_partial(module)
        and module.imports
        and module.imports[0].kind == "relax.VirtualMachine"
    ):
        raise TypeError(
            "export_library: this partial module binds a relax.VirtualMachine, which cannot be saved; "
            "bind the executable instead: tvm_partial.partial(exe, device=dev, ...) (what "
            "tvm.compile returned), which records the device and creates the VM when loaded"
        )
    if weights_file is not None:
        if not (isinstance(module, tvm_ffi.Module) and _lib.is_partial(module)):
            raise TypeError("export_library: weights_file= needs a partial module (tvm_partial.partial(...))")
        if zero_copy is False:
            raise ValueError(
                "export_library: weights_file= places the payloads in that file; zero_copy=False "
                "(payloads inside the library) contradicts it"
            )
        weights_path = os.path.abspath(os.fspath(weights_file))
        if weights_path == os.path.abspath(path) or (
            os.path.exists(path) and os.path.exists(weights_path) and os.path.samefile(path, weights_path)
        ):
            raise ValueError(
                f"export_library: weights_file={os.fspath(weights_file)!r} is the library's own "
                "path; give the weights file a name of its own (e.g. model.safetensors)"
            )
        if os.path.isdir(weights_path):
            raise ValueError(
                f"export_library: weights_file={os.fspath(weights_file)!r} is a folder; name the "
                "file to write (e.g. model.safetensors)"
            )
        if not os.path.isdir(os.path.dirname(weights_path)):
            raise FileNotFoundError(
                f"export_library: the folder of weights_file={os.fspath(weights_file)!r} "
                "does not exist; create it first"
            )
        if (module.imports and module.imports[0].kind == "library") or _relax_loaded(module):
            raise ValueError(
                "export_library: weights_file= with a module loaded from an artifact is not "
                "supported: bind the compiled module with tvm_partial.partial() and export that"
            )
    if isinstance(module, tvm_ffi.Module) and _lib.is_partial(module) and _relax_loaded(module):
        return _export_loaded(module, path, zero_copy=zero_copy, self_contained=self_contained, **kwargs)
    if (
        isinstance(module, tvm_ffi.Module)
        and _lib.is_partial(module)
        and module.imports
        and module.imports[0].kind == "library"
    ):
        return _export_loaded(module, path, zero_copy=zero_copy, self_contained=self_contained, **kwargs)
    if kwargs.get("addons"):
        kwargs["addons"] = list(kwargs["addons"])  # TVM appends to the list: keep the caller's
    if self_contained:
        if path.endswith((".tar", ".wasm")):
            raise ValueError(f"self_contained=True needs a shared library path (.so), got {path}")
        kwargs["addons"] = [*(kwargs.get("addons") or []), os.fspath(embed_object())]
        options = kwargs.get("options") or []
        # The embedded code registers global functions that point into the artifact: it must
        # never be unloaded, or a program that closes the library crashes at exit.
        kwargs["options"] = [*([options] if isinstance(options, str) else options), "-Wl,-z,nodelete"]
    if weights_file is not None:
        return _export_with_weights_file(module, path, os.fspath(weights_file), **kwargs)
    with _new_file(path) as staged:
        with tempfile.TemporaryDirectory(prefix="tvm_partial_") as workdir:
            appended = None
            if (
                isinstance(module, tvm_ffi.Module)
                and _lib.is_partial(module)
                and (
                    zero_copy
                    or (zero_copy is None and _zero_copy.constant_bytes(module) >= _zero_copy.THRESHOLD_BYTES)
                )
            ):
                if path.endswith((".tar", ".wasm")):
                    raise ValueError(
                        f"export_library: a zero-copy export appends the payloads to a shared library; "
                        f"{path} is not one (export to a .so, or pass zero_copy=False)"
                    )
                module, payload_object = _zero_copy.prepare(module, Path(workdir))
                kwargs["addons"] = [*(kwargs.get("addons") or []), os.fspath(payload_object)]
                appended = module
            module.export_library(staged, **kwargs)
            if appended is not None:  # the linked library, then the payloads in one write
                _zero_copy.append_payload_region(appended, staged, progress)


def _code_of(module: tvm_ffi.Module) -> tuple[tvm_ffi.Module, list[str]]:
    """(the loaded library holding a partial module's compiled code, names of its functions): for
    a Relax model, the executable's kernels (its packed functions that the library defines)."""
    if not _relax_loaded(module):
        return module.imports[0], [str(f) for f in _lib.partial_apply_bindings(module)]
    executable = module.imports[0].imports[0]
    library = next(m for m in executable.imports if m.kind == "library")
    text = str(executable["as_text"]())
    return library, [
        line[1:].split(" ", 1)[0]
        for line in text.splitlines()
        if line.startswith("@") and line.endswith(" packed_func;")
    ]


def _relax_loaded(module: tvm_ffi.Module) -> bool:
    """A partial module over a Relax VM (partial_apply_vm) whose executable's code was loaded."""
    vm = module.imports[0] if module.imports else None
    if vm is None or vm.kind != "partial_apply_vm" or not vm.imports:
        return False
    return any(m.kind == "library" for m in vm.imports[0].imports)


def _export_with_weights_file(module: Any, path: str, weights_file: str, **kwargs: Any) -> None:
    """The library (code, metadata, the region header) and the weights file, each written under a
    new name and renamed into place (the weights file first: the library names it)."""
    name = os.path.relpath(os.path.abspath(weights_file), os.path.dirname(os.path.abspath(path)))
    with _new_file(path) as staged, _new_file(weights_file) as staged_weights:
        with tempfile.TemporaryDirectory(prefix="tvm_partial_") as workdir:
            module, payload_object = _zero_copy.prepare_weights_file(
                module, Path(workdir), Path(staged_weights), name
            )
            kwargs["addons"] = [*(kwargs.get("addons") or []), os.fspath(payload_object)]
            module.export_library(staged, **kwargs)


class _new_file:
    """``with _new_file(path) as staged``: write ``staged`` (a new name in the same folder, same
    suffix), then move it onto ``path`` in one step. A file at ``path`` is never changed in place,
    so a process that has it mapped (a loaded zero-copy artifact) keeps the old bytes; on any
    failure nothing is left behind and ``path`` is as it was."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder, name = os.path.split(os.path.abspath(path))
        stem, dot, suffix = name.partition(".")
        self.staged = os.path.join(folder, f".{stem}.{secrets.token_hex(6)}.tmp{dot}{suffix}")

    def __enter__(self) -> str:
        return self.staged

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                os.replace(self.staged, self.path)
        finally:
            if os.path.exists(self.staged):
                os.remove(self.staged)


def _export_loaded(
    module: tvm_ffi.Module, path: str, *, zero_copy: bool | None, self_contained: bool, **kwargs: Any
) -> None:
    """Export a partial module whose code is a loaded library (an artifact loaded back, then
    perhaps ``rebind``): TVM cannot export loaded code again, so the new artifact is a copy of the
    library file the code was loaded from, with the partial module's bytes in TVM's embedded blob
    and, for a zero-copy artifact, its payload region rewritten. The original file is not changed.
    This needs the new bytes to be exactly as long as the old (``rebind`` keeps dtypes and shapes;
    a string of another length changes it)."""
    library, names = _code_of(module)
    source = _source_file(library, names)
    if options := sorted(kwargs) + (["self_contained"] if self_contained else []):
        raise ValueError(
            f"export_library: {', '.join(options)} cannot apply to a module loaded from {source}: "
            "its export copies that library, code and link options as they are; bind the compiled "
            "module again with tvm_partial.partial() to export with other options"
        )
    if os.path.exists(path) and os.path.samefile(path, source):
        raise ValueError(
            f"export_library: {path} is the file this module was loaded from; write the "
            "updated artifact to a new path (a loaded artifact is never changed in place)"
        )
    with _mapped(source) as data:
        try:
            art = _Artifact(data, source)
        except ValueError as err:
            raise ValueError(
                f"export_library: this module's code was loaded from {source}, which TVM cannot "
                f"export again, and it is not an intact tvm-partial artifact to update ({err}); bind "
                "the compiled module (what tvm.compile returned) and export that"
            ) from err
        if art.weights_file is not None:
            raise ValueError(
                f"export_library: {source} keeps its weights in the file {art.weights_file}; to ship new "
                "weights for it, write them with tvm_partial.save_weights(module, path) and load it with "
                "tvm_partial.load(artifact, weights_file=path)"
            )
        external = None
        if art.region is not None:
            _, region_at = art.placement()  # refuses a damaged region
            symbol, _, region_bytes = art.region
            # The same placement as the source: appended after the code (its trailer is copied
            # with the rest of the file), or inside the data section (artifacts written before).
            kind = _zero_copy.with_appended_payloads if art.appended else _zero_copy.with_external_payloads
            external = kind(module, symbol, int(art.info["region_link"]))
        if zero_copy is not None and bool(zero_copy) != (external is not None):
            raise ValueError(
                f"export_library: zero_copy={zero_copy} differs from {source}, whose payloads are "
                f"{art.payloads.split(' ')[0]}; the updated artifact keeps that placement (bind the "
                "compiled module again with tvm_partial.partial() to change it)"
            )
        blob = save_to_bytes(external if external is not None else module)
        if len(blob) != art.blob.size:
            raise ValueError(
                f"export_library: the updated bindings take {len(blob)} bytes, the artifact {source} "
                f"has room for {art.blob.size}: a loaded artifact is updated in a copy of its file, "
                "which needs values of the same dtypes and shapes and strings of the same lengths; "
                "bind the compiled module again with tvm_partial.partial() and export that"
            )
        blob_at = art.blob.offset
    with _new_file(path) as staged:
        if external is not None and region_at % 64 == 0:
            # The new region goes straight into place (one write of the weights); the rest of the
            # file is copied around it, and the blob patched.
            _zero_copy.write_payload_region(external, staged, lead=region_at)
            if os.path.getsize(staged) - region_at != region_bytes:
                raise ValueError(
                    f"export_library: the updated payload region takes "
                    f"{os.path.getsize(staged) - region_at} bytes, {source} has {region_bytes}; "
                    "rebind keeps dtypes and shapes, or export from the compiled module"
                )
            with open(source, "rb") as src, open(staged, "r+b") as out:
                _copy_range(src, out, 0, region_at)
                src.seek(region_at + region_bytes)
                out.seek(region_at + region_bytes)
                shutil.copyfileobj(src, out, 1 << 20)
                out.seek(blob_at)
                out.write(blob)
        else:
            shutil.copyfile(source, staged)
            with open(staged, "r+b") as out:
                out.seek(blob_at)
                out.write(blob)
            if external is not None:  # a region at an offset the writer cannot start at: patch it
                with tempfile.TemporaryDirectory(prefix="tvm_partial_") as workdir:
                    region_file = os.path.join(workdir, "payloads.bin")
                    _zero_copy.write_payload_region(external, region_file)
                    if os.path.getsize(region_file) != region_bytes:
                        raise ValueError(
                            f"export_library: the updated payload region takes "
                            f"{os.path.getsize(region_file)} bytes, {source} has {region_bytes}; "
                            "rebind keeps dtypes and shapes, or export from the compiled module"
                        )
                    with open(staged, "r+b") as out, open(region_file, "rb") as region:
                        out.seek(region_at)
                        shutil.copyfileobj(region, out, 1 << 20)
        shutil.copymode(source, staged)


def _copy_range(src: BinaryIO, out: BinaryIO, start: int, size: int) -> None:
    src.seek(start)
    out.seek(start)
    while size > 0:
        chunk = src.read(min(size, 1 << 20))
        if not chunk:
            raise ValueError(f"export_library: {src.name} is shorter than it was when loaded")
        out.write(chunk)
        size -= len(chunk)


_library_file_of = tvm_ffi.get_global_func("tvm_partial.LibraryFileOf")


def _source_file(library: tvm_ffi.Module, functions: list[str]) -> str:
    """The file a loaded library module's code was mapped from, checked to be that same file
    still (not replaced or rewritten since it was loaded)."""
    found = None
    for name in functions:
        try:
            found = _library_file_of(library, name)
            break
        except ValueError:
            continue
    if found is None:
        raise ValueError(
            "export_library: cannot tell which file this module's code was loaded from "
            "(it has no bound function in the loaded library); bind the compiled module "
            "again with tvm_partial.partial() and export that"
        )
    path, address = str(found["path"]), int(found["address"]) & _U64_MASK
    mapping = _mapping_of(address)
    if mapping is not None:
        device, inode = mapping
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is None or st.st_ino != inode or (os.major(st.st_dev), os.minor(st.st_dev)) != device:
            raise ValueError(
                f"export_library: {path}, which this module's code was loaded from, has been "
                "replaced or removed since; load the artifact again, or bind the compiled "
                "module again with tvm_partial.partial() and export that"
            )
    return path


def _mapping_of(address: int) -> tuple[tuple[int, int], int] | None:
    """((major, minor), inode) of the file mapped at ``address`` (Linux), or None if unknown."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                start, _, end = fields[0].partition("-")
                if int(start, 16) <= address < int(end, 16) and len(fields) >= 5:
                    major, _, minor = fields[3].partition(":")
                    return (int(major, 16), int(minor, 16)), int(fields[4])
    except OSError:
        return None
    return None


def embed_object() -> Path:
    """``tvm_partial_embed.o``: tvm-partial's code as one relocatable object, which
    ``export_library(..., self_contained=True)`` links into an artifact. Found in the installed
    distribution's file list."""
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


def save_to_bytes(module: tvm_ffi.Module) -> bytes:
    """The bytes of a partial module: its bindings and constants, not the code it wraps."""
    _remote.refuse_export(module, "save_to_bytes")
    return bytes(_lib.save_to_bytes(module))


def load_from_bytes(data: bytes, wrapped: tvm_ffi.Module | ExecutableLike | None = None) -> tvm_ffi.Module:
    """Rebuild a partial module from ``save_to_bytes``; ``wrapped`` is the compiled module it
    binds (a module, or an ``Executable``), imported so its functions can be called."""
    module = _lib.load_from_bytes(bytes(data))
    if wrapped is not None:
        module.import_module(getattr(wrapped, "mod", wrapped))  # type: ignore[arg-type]  # a Module
    return module


def load(path: PathLike, weights_file: PathLike | None = None) -> tvm_ffi.Module:
    """Load an exported artifact; a partial module comes back as the root, callable as ``pm(...)``.

    With ``weights_file`` (a safetensors file such as ``save_weights`` writes) its tensors are
    bound instead of the artifact's: same keys, dtypes and shapes, mapped without copying. The
    artifact's own payloads are not read and the weights file it records is not opened (it may be
    absent); the C++ loader does the matching (``tvm_partial::LoadWithWeights``), so the checks
    are the same from C++.

    The file is checked first: a library cut short (an interrupted copy) would otherwise crash the
    process inside the system's loader, which maps its segments without checking the file's size.
    """
    import tvm.runtime

    path = os.fspath(path)
    check_complete(path)
    if weights_file is None:
        return tvm.runtime.load_module(path)
    module = _lib.load_with_weights(os.path.realpath(path), os.fspath(weights_file))
    tvm_ffi.get_global_func("ffi.ModuleGlobalsAdd")(module)  # as tvm.runtime.load_module does
    return module


def check_complete(path: PathLike) -> None:
    """Raise ``ValueError`` if an ELF library is shorter than its loadable segments say (or its
    headers are damaged). Files that are not 64-bit little-endian ELF are left to TVM's loader."""
    path = os.fspath(path)
    with _mapped(path) as data:
        if _elf.is_elf64_le(data[:64]):
            _elf.ElfFile(data, path).check_segments()


def inspect(path: PathLike) -> dict[str, Any]:
    """Describe what the file at ``path`` holds, without loading or running it: an exported library
    (``"kind": "library"``), the bytes of ``save_to_bytes`` (``"save_to_bytes"``) or a safetensors
    weights file (``"weights file"``, see ``weights.inspect_weights``). The kind is read from the
    file's first bytes, not its name.

    Returns ``{"path", "kind", "format_version", "total_bytes", "constant_bytes", "payloads",
    "region", "payload_hashes", "self_contained", "functions": [{"name", "param_names", "free",
    "bindings": [...]}], "relax_vm"}`` (``self_contained``: whether a library embeds tvm-partial's
    loader, so it loads with TVM alone; None for the other kinds. ``relax_vm``: the recorded
    devices and allocators of a Relax model, else None). Sizes are bytes, in keys ending in
    ``bytes``. The structure is checked (metadata hash, region header, everything inside the
    file), the payload bytes are not: ``payload_hashes`` says so; ``verify`` checks them.
    Raises ``ValueError`` when the file is not a tvm-partial artifact or is damaged, ``OSError``
    when it cannot be read.
    """
    path = os.fspath(path)
    from . import weights as _weights

    kind = _file_kind(path)
    if kind == "weights file":
        info = _weights.inspect_weights(path)
        return {"path": info.pop("path"), "kind": kind, **info, "self_contained": None}
    with _mapped(path) as data:  # nothing read in bulk
        if kind == "save_to_bytes":
            return _inspect_blob(data, path)
        return _inspect(data, path)


def verify(path: PathLike, progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Read every tensor payload of an exported artifact, wherever it lies (inline in the embedded
    blob, in the zero-copy region of the file, in its weights file), and check it against its
    recorded hash. ``path`` may also be a ``save_to_bytes`` file or a weights file that
    ``save_weights`` wrote. ``progress``, when given, is called as ``progress(done_bytes,
    total_bytes)`` while the payloads are read (in 1 MiB chunks), e.g. a ``Progress``.

    Returns ``{"path", "intact", "checked", "bytes", "payloads": [{"function", "index", "name"
    (when recorded), "placement", "file_offset", "bytes", "intact"}], "damaged": [the payloads
    that do not match]}``. Raises ``ValueError`` when the file is not an artifact, its structure
    or metadata is damaged, or it is cut short (a payload past the end of the file).
    """
    path = os.fspath(path)
    from . import weights as _weights

    kind = _file_kind(path)
    if kind == "weights file":
        return _weights.verify_weights(path, progress=progress)
    with _mapped(path) as data:
        if kind == "save_to_bytes":
            info, source = dict(_describe_blob(data, path)), path
            if str(info["payloads"]) != "inline":
                raise ValueError(
                    f"{path} holds the bindings of a partial module whose payloads lie elsewhere "
                    f"({info['payloads']}), not the payloads themselves: verify the artifact instead"
                )
            placement, base = "inline", 0
        else:
            art = _Artifact(data, path)
            info, source = dict(art.info), art.payload_file
            placement, base = art.placement()
        source_size = os.path.getsize(source)
        payloads = []
        for fn in info["functions"]:
            names = [str(n) for n in fn["param_names"]]
            for b in fn["bindings"]:
                if str(b["kind"]) != "tensor":
                    continue
                entry: dict[str, Any] = {"function": str(fn["name"]), "index": int(b["index"])}
                if entry["index"] < len(names):
                    entry["name"] = names[entry["index"]]
                entry.update(placement=placement, file_offset=base + int(b["offset"]), bytes=int(b["bytes"]))
                if source != path:
                    entry["weights_file"] = source
                if entry["file_offset"] + entry["bytes"] > source_size:
                    raise ValueError(
                        f"{source} is truncated: the payload of function {entry['function']!r} "
                        f"position {entry['index']} needs {entry['file_offset'] + entry['bytes']} "
                        f"bytes, the file has {source_size}; copy or export it again"
                    )
                payloads.append((entry, int(b["hash"]) & _U64_MASK))
    hashes = hash_ranges([(source, e["file_offset"], e["bytes"]) for e, _ in payloads], progress)
    for (entry, recorded), got in zip(payloads, hashes):
        entry["intact"] = got == recorded
    return _weights.verify_report(path, [e for e, _ in payloads])


#: The first bytes of ``save_to_bytes`` output (the format's magic).
_BLOB_MAGIC = b"TVMPARTL"


def _file_kind(path: str) -> str:
    """The kind of file at ``path``, from its first bytes: ``library``, ``save_to_bytes`` or
    ``weights file`` (anything else is left to the library reader, which says what it is not).
    A folder or a file that cannot be opened raises ``OSError``."""
    from . import weights as _weights

    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", path)
    with open(path, "rb") as f:
        head = f.read(len(_BLOB_MAGIC))
    if head == _BLOB_MAGIC:
        return "save_to_bytes"
    if _weights.is_weights_file(path):
        return "weights file"
    return "library"


_U64_MASK = (1 << 64) - 1
_REGION_MAGIC = b"TVMPREGN"
_TRAILER_MAGIC = b"TVMPTRLR"
_TRAILER_SIZE = 64
_APPEND_ALIGNMENT = 64 * 1024


class _mapped:
    """``with _mapped(path) as data``: the file mapped read-only (an empty file: b"")."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> bytes | mmap.mmap:
        self._file = open(self.path, "rb")
        if os.fstat(self._file.fileno()).st_size == 0:
            self._map = None
            return b""
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._map

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            self._map.close()
        self._file.close()


class _Artifact:
    """The partial module inside an exported library, read from the file: where its bytes lie,
    what they describe, and where the tensor payloads are (all bounds-checked)."""

    def __init__(self, data: bytes | mmap.mmap, path: str) -> None:
        self.elf = _elf.ElfFile(data, path)
        self.path = path
        modules = self.elf.embedded_modules()
        partial = [m for m in modules if m.kind == "partial_apply"]
        if not partial:
            kinds = ", ".join(m.kind for m in modules) or "none"
            raise ValueError(
                f"{path} is not a tvm-partial artifact: it embeds no partial_apply module "
                f"(embedded modules: {kinds})"
            )
        self.blob = partial[0]
        try:
            self.info = _lib.describe_bytes(bytes(data[self.blob.offset : self.blob.offset + self.blob.size]))
        except ValueError as err:  # the format's reader: say which file
            raise ValueError(f"{path}: {err}") from err
        self.payloads = str(self.info["payloads"])
        self.payload_file = path  # the file the payloads lie in
        self.weights_file = str(self.info["weights_file"]) if "weights_file" in self.info else None
        if self.weights_file is not None:  # flag 2: the library's region is the header alone
            self.payload_file = os.path.join(os.path.dirname(os.path.abspath(path)), self.weights_file)
        # (symbol, file offset, bytes) of a zero-copy region
        self.region: tuple[str, int | None, int | None] | None = None
        # Flag 4: the region is appended after the code, located by the file's trailer; the
        # library's symbol holds only its header (file offset, bytes).
        self.appended = "region_appended" in self.info
        self.header: tuple[int, int] | None = None  # (file offset, bytes) of the library's copy
        if self.payloads.startswith("region "):
            symbol = self.payloads.split(" ", 1)[1]
            found = self.elf.symbol(symbol.encode())
            if self.appended:
                self.header, found = found, _trailer(data, path)
            self.region = (symbol, *found) if found is not None else (symbol, None, None)

    def region_state(self) -> dict[str, Any] | None:
        if self.region is None:
            return None
        symbol, offset, nbytes = self.region
        state: dict[str, Any] = {"symbol": symbol, "present": offset is not None}
        if self.appended:
            state["appended"] = True
        if offset is not None:
            assert nbytes is not None  # found together
            data = self.elf.data
            size = int(self.info["region_size"])
            header_ok = (
                offset + 32 <= len(data)
                and data[offset : offset + 8] == _REGION_MAGIC
                and struct.unpack_from("<QQ", data, offset + 16)
                == (size, int(self.info["region_link"]) & _U64_MASK)
                and nbytes == (64 if self.weights_file is not None else size)
            )
            if self.appended:  # the library's copy of the header must be there and the same
                header_ok = (
                    header_ok and offset % _APPEND_ALIGNMENT == 0 and offset + nbytes == len(data) - 64
                )
                copy = self.header
                header_ok = (
                    header_ok
                    and copy is not None
                    and copy[1] == 64
                    and data[copy[0] : copy[0] + 64] == data[offset : offset + 64]
                )
            state.update(
                file_offset=offset, bytes=nbytes, complete=header_ok and offset + nbytes <= len(data)
            )
            if self.weights_file is not None:
                state["weights_file"] = self._weights_state(
                    bytes(data[offset : offset + 64]) if header_ok else None
                )
        return state

    def _weights_state(self, header: bytes | None) -> dict[str, Any]:
        """Whether the weights file is there and holds this export's region (header and size)."""
        path = self.payload_file
        state: dict[str, Any] = {"path": path, "name": self.weights_file, "present": os.path.exists(path)}
        if state["present"]:
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                head = f.read(8)
                start = 8 + int.from_bytes(head, "little") if len(head) == 8 else size + 1
                f.seek(min(start, size))
                region = f.read(64)
            state.update(
                data_offset=start,
                bytes=size,
                complete=start % 64 == 0
                and start + int(self.info["region_size"]) <= size
                and header is not None
                and region == header,
            )
        return state

    def placement(self) -> tuple[str, int]:
        """(placement, file offset that payload offsets count from). The one place that knows
        where payloads live; an external weights file would be one more case here."""
        if self.region is None:
            return "inline", self.blob.offset
        state = self.region_state()
        assert state is not None  # a region is there
        if not state["present"] and self.appended:
            raise ValueError(
                f"{self.path} is truncated or was rewritten: its payload region "
                f"({int(self.info['region_size'])} bytes, appended after the code) is missing, and "
                "so is the trailer at the end of the file that locates it (tools such as strip drop "
                "data appended to a library); copy or export it again"
            )
        if not state["present"]:
            raise ValueError(f"{self.path} is damaged: its payload region {state['symbol']} is missing")
        if not state["complete"]:
            raise ValueError(
                f"{self.path} is damaged or truncated: the header of its payload region "
                f"{state['symbol']} does not match its metadata, or the region runs past the "
                "end of the file; copy or export it again"
            )
        if self.weights_file is not None:
            weights = state["weights_file"]
            if not weights["present"]:
                raise ValueError(
                    f"{self.path}: its weights file {weights['path']} is missing; copy it beside "
                    f"the library as {self.weights_file}"
                )
            if not weights["complete"]:
                raise ValueError(
                    f"{self.path}: its weights file {weights['path']} is truncated or was not "
                    "written with this artifact (its region header or size does not match)"
                )
            return f"weights file {self.weights_file}", weights["data_offset"]
        return f"region {state['symbol']}", state["file_offset"]


def _trailer(data: bytes | mmap.mmap, path: str) -> tuple[int, int] | None:
    """(region file offset, region bytes) from the trailer at the end of an artifact whose payload
    region is appended (format flag 4: "TVMPTRLR", version, offset, size, link, hash), or None when
    there is no intact trailer (magic, version and hash)."""
    size = len(data)
    if size < _TRAILER_SIZE:
        return None
    at = size - _TRAILER_SIZE
    magic, version, _, offset, nbytes, _, recorded = struct.unpack_from("<8sIIQQQQ", data, at)
    if magic != _TRAILER_MAGIC or version != 1:
        return None
    if recorded != _ffi_api.HashFileRange(path, at, 40) & _U64_MASK:
        return None
    return offset, nbytes  # checked against the file and the metadata by region_state


def _relax_vm_info(art: _Artifact, data: bytes | mmap.mmap) -> dict[str, Any] | None:
    """The Relax VM's devices recorded in the artifact (a Relax model), or None."""
    from .relax_vm import KIND, describe_record

    found = [m for m in art.elf.embedded_modules() if m.kind == KIND]
    if not found:
        return None
    try:
        return describe_record(bytes(data[found[0].offset : found[0].offset + found[0].size]))
    except ValueError as err:
        raise ValueError(f"{art.path}: {err}") from err


def _inspect(data: bytes | mmap.mmap, path: str) -> dict[str, Any]:
    art = _Artifact(data, path)
    return {
        **_describe(art.info, path, "library"),
        "payloads": art.payloads,
        "region": art.region_state(),
        "weights_file": art.weights_file,
        "self_contained": _embeds_loaders(art),
        "relax_vm": _relax_vm_info(art, data),
    }


def _describe_blob(data: bytes | mmap.mmap, path: str) -> dict[str, Any]:
    """The format reader's description of a file holding ``save_to_bytes`` output."""
    try:
        return dict(_lib.describe_bytes(bytes(data)))
    except ValueError as err:  # the format's reader: say which file
        raise ValueError(f"{path}: {err}") from err


def _inspect_blob(data: bytes | mmap.mmap, path: str) -> dict[str, Any]:
    info = _describe_blob(data, path)
    return {
        **_describe(info, path, "save_to_bytes"),
        "region": None,
        "weights_file": str(info["weights_file"]) if "weights_file" in info else None,
        "self_contained": None,
        "relax_vm": None,
    }


def _describe(info: Mapping[str, Any], path: str, kind: str) -> dict[str, Any]:
    """What ``inspect`` shows of the format's description ``info`` (DescribeBytes)."""
    functions = []
    for fn in info["functions"]:
        names = [str(n) for n in fn["param_names"]]
        bound = []
        for b in fn["bindings"]:
            entry = {k: _plain(v) for k, v in b.items() if k not in ("offset", "hash")}
            index = entry["index"]
            if index < len(names):
                entry["name"] = names[index]
            bound.append(entry)
        outs = [_output_entry(o, names) for o in fn.get("outputs", [])]
        taken = {b["index"] for b in bound} | {o["index"] for o in outs}
        functions.append(
            {
                "name": str(fn["name"]),
                "param_names": names,
                "free": [n for i, n in enumerate(names) if i not in taken],
                "bindings": bound,
                "outputs": outs,
            }
        )
    return {
        "path": path,
        "kind": kind,
        "format_version": int(info["version"]),
        "total_bytes": int(info["total_bytes"]),
        "constant_bytes": int(info["constant_bytes"]),
        "payloads": str(info["payloads"]),
        "payload_hashes": "not checked (run tvm-partial verify)",
        "functions": functions,
    }


def _embeds_loaders(art: _Artifact) -> bool:
    """Whether the library carries tvm-partial's loader for every module kind of tvm-partial it
    embeds (``export_library(..., self_contained=True)`` links them in): then it loads with TVM
    alone. The loaders' registered names are looked for outside the embedded modules' bytes and
    the payload region (a bound string could spell one), without reading those in bulk."""
    kinds = {m.kind for m in art.elf.embedded_modules() if m.kind.startswith("partial_apply")}
    data = art.elf.data
    blob = art.elf.symbol(_elf.BLOB_SYMBOL)
    if blob is None:  # _Artifact found the partial module in it
        raise ValueError(f"{art.path}: no {_elf.BLOB_SYMBOL.decode()} symbol")
    at = blob[0]
    skip = [(at, at + 8 + art.elf.u64(at, "the embedded module blob's length"))]
    if art.region is not None:
        _, offset, nbytes = art.region
        if offset is not None and nbytes is not None:
            skip.append((offset, offset + nbytes))
    spans, begin = [], 0
    for lo, hi in sorted(skip):
        spans.append((begin, lo))
        begin = max(begin, hi)
    spans.append((begin, len(data)))
    for kind in kinds:
        needle = f"ffi.Module.load_from_bytes.{kind}".encode() + b"\0"
        if not any(lo < hi and data.find(needle, lo, hi) >= 0 for lo, hi in spans):
            return False
    return True


def _output_entry(spec: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """An output as inspect shows it: index, name, dtype, shape (an int, or "name.shape[axis]")."""

    def dim(d: Any) -> int | str:
        if isinstance(d, int):
            return d
        arg, axis = int(d[0]), int(d[1])
        return f"{names[arg] if arg < len(names) else f'arg{arg}'}.shape[{axis}]"

    entry: dict[str, Any] = {
        "index": int(spec["position"]),
        "dtype": str(spec["dtype"]),
        "shape": [dim(d) for d in spec["shape"]],
    }
    if entry["index"] < len(names):
        entry["name"] = names[entry["index"]]
    return entry


def _plain(value: Any) -> Any:
    """ffi containers -> Python lists, ints, strs (for JSON)."""
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value
