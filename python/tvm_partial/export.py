"""Exporting partial modules as one deploy library, loading them back, and inspecting artifacts."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Union

import tvm_ffi

from . import _lib

PathLike = Union[str, "os.PathLike[str]"]
_BLOB_SYMBOL = b"__tvm_ffi__library_bin"


def export_library(module, path: PathLike, **kwargs) -> None:
    """Export ``module`` (a partial module or any TVM module) and everything it imports into one
    shared library at ``path``: code and bound constants together.

    A value that cannot be serialised is refused before anything is written; on any failure no
    file is left at ``path``. ``kwargs`` go to TVM's ``export_library``.
    """
    path = os.fspath(path)
    existed = os.path.exists(path)
    if not hasattr(module, "export_library"):
        import tvm.runtime  # noqa: F401  (tvm's Module class carries export_library)

        raise TypeError(f"export_library needs a tvm.runtime.Module, got {type(module).__name__}")
    try:
        module.export_library(path, **kwargs)
    except BaseException:
        if not existed and os.path.exists(path):
            os.remove(path)
        raise


def save_to_bytes(module) -> bytes:
    """The bytes of a partial module: its bindings and constants, not the code it wraps."""
    return bytes(_lib.save_to_bytes(module))


def load_from_bytes(data: bytes, wrapped=None):
    """Rebuild a partial module from ``save_to_bytes``; ``wrapped`` is the compiled module it
    binds (a module, or an ``Executable``), imported so its functions can be called."""
    module = _lib.load_from_bytes(bytes(data))
    if wrapped is not None:
        module.import_module(getattr(wrapped, "mod", wrapped))
    return module


def load(path: PathLike):
    """Load an exported artifact; a partial module comes back as the root, callable as ``pm(...)``."""
    import tvm.runtime

    return tvm.runtime.load_module(os.fspath(path))


def inspect(path: PathLike) -> dict:
    """Describe the partial module inside an exported library without loading or running it.

    Returns ``{"path", "format_version", "total_bytes", "constant_bytes", "functions": [{"name",
    "param_names", "free", "bindings": [...]}]}``.
    Raises ``ValueError`` when the file is not a tvm-partial artifact.
    """
    path = os.fspath(path)
    modules = _embedded_modules(path)
    blobs = [data for kind, data in modules if kind == "partial_apply"]
    if not blobs:
        kinds = ", ".join(kind for kind, _ in modules) or "none"
        raise ValueError(f"{path} is not a tvm-partial artifact: it embeds no partial_apply module "
                         f"(embedded modules: {kinds})")
    info = _lib.describe_bytes(blobs[0])
    functions = []
    for fn in info["functions"]:
        names = [str(n) for n in fn["param_names"]]
        bound = []
        for b in fn["bindings"]:
            entry = {k: _plain(v) for k, v in b.items()}
            index = entry["index"]
            if index < len(names):
                entry["name"] = names[index]
            bound.append(entry)
        taken = {b["index"] for b in bound}
        functions.append({
            "name": str(fn["name"]),
            "param_names": names,
            "free": [n for i, n in enumerate(names) if i not in taken],
            "bindings": bound,
        })
    return {
        "path": path,
        "format_version": int(info["version"]),
        "total_bytes": int(info["total_bytes"]),
        "constant_bytes": int(info["constant_bytes"]),
        "functions": functions,
    }


def _plain(value):
    """ffi containers -> Python lists, ints, strs (for JSON)."""
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


# ---------------------------------------------------------------------------------------------
def _embedded_modules(path: str) -> list:
    """[(kind, bytes)] of the modules TVM packed into the library's ``__tvm_ffi__library_bin``,
    read from the ELF file itself (nothing is loaded or run)."""
    data = Path(path).read_bytes()
    blob = _elf_symbol_bytes(data, _BLOB_SYMBOL, path)
    return _parse_library_bin(blob, path)


def _elf_symbol_bytes(data: bytes, symbol: bytes, path: str) -> memoryview:
    if data[:4] != b"\x7fELF" or len(data) < 64:
        raise ValueError(f"{path} is not a tvm-partial artifact: not an ELF shared library")
    if data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: only 64-bit little-endian ELF libraries can be inspected")
    view = memoryview(data)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shoff + shnum * shentsize > len(data):
        raise ValueError(f"{path}: truncated ELF section table")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            st_name, _info, _other, shndx, value, _size = struct.unpack_from("<IBBHQQ", data, off)
            start = strtab[4] + st_name
            if data[start:start + len(symbol) + 1] != symbol + b"\0" or shndx >= len(sections):
                continue
            sec = sections[shndx]
            file_off = value - sec[3] + sec[4]
            if file_off + 8 > len(data):
                raise ValueError(f"{path}: {symbol.decode()} points past the end of the file")
            nbytes, = struct.unpack_from("<Q", data, file_off)
            if file_off + 8 + nbytes > len(data):
                raise ValueError(f"{path}: the embedded module blob runs past the end of the file")
            return view[file_off + 8:file_off + 8 + nbytes]
    raise ValueError(f"{path} is not a tvm-partial artifact: it embeds no modules "
                     f"(no {symbol.decode()} symbol)")


def _parse_library_bin(blob: memoryview, path: str) -> list:
    pos = 0

    def take(n: int) -> memoryview:
        nonlocal pos
        if pos + n > len(blob):
            raise ValueError(f"{path}: truncated embedded module blob")
        out = blob[pos:pos + n]
        pos += n
        return out

    def u64() -> int:
        return struct.unpack("<Q", take(8))[0]

    indptr = [u64() for _ in range(u64())]
    _children = [u64() for _ in range(u64())]
    modules = []
    for _ in range(max(len(indptr) - 1, 0)):
        kind = bytes(take(u64())).decode()
        modules.append((kind, b"" if kind == "_lib" else bytes(take(u64()))))
    return modules
