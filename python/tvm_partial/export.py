"""Exporting partial modules as one deploy library, loading them back, and inspecting artifacts."""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Optional, Union

import tvm_ffi

from . import _lib
from . import zero_copy as _zero_copy

PathLike = Union[str, "os.PathLike[str]"]
_BLOB_SYMBOL = b"__tvm_ffi__library_bin"
_EMBED_OBJECT = "tvm_partial_embed.o"


def export_library(module, path: PathLike, *, self_contained: bool = False,
                   zero_copy: Optional[bool] = None, **kwargs) -> None:
    """Export ``module`` (a partial module or any TVM module) and everything it imports into one
    shared library at ``path``: code and bound constants together.

    With ``self_contained=True`` tvm-partial's own code (``tvm_partial_embed.o`` from the installed
    wheel) is linked in too, so the artifact loads where the extension is not registered: a C++
    program linking only libtvm_ffi (and libtvm_runtime), or ``import tvm`` with
    ``TVM_DEVICE_BACKEND_AUTOLOAD=0``. It costs about 0.4 MB. The default artifact holds only the
    compiled code and the constants, and needs tvm-partial where it is loaded.

    With ``zero_copy`` (default: when the constants reach ``zero_copy.THRESHOLD_BYTES``, 16 MiB)
    the tensor payloads go into a data section of the library instead of the bytes TVM embeds:
    loading maps them without copying, pages are read when first touched, and writes to bound
    tensors are private (copy-on-write). ``False`` keeps them inside the embedded bytes.

    A value that cannot be serialised is refused before anything is written; on any failure no
    file is left at ``path``. ``kwargs`` go to TVM's ``export_library`` (``addons``, ``options``,
    ``cc``, ...).
    """
    path = os.fspath(path)
    existed = os.path.exists(path)
    if not hasattr(module, "export_library"):
        raise TypeError(f"export_library needs a tvm.runtime.Module, got {type(module).__name__}")
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
    try:
        with tempfile.TemporaryDirectory(prefix="tvm_partial_") as workdir:
            if isinstance(module, tvm_ffi.Module) and _lib.is_partial(module) and (
                    zero_copy or (zero_copy is None and _zero_copy.constant_bytes(module) >= _zero_copy.THRESHOLD_BYTES)):
                module, payload_object = _zero_copy.prepare(module, Path(workdir))
                kwargs["addons"] = [*(kwargs.get("addons") or []), os.fspath(payload_object)]
            module.export_library(path, **kwargs)
    except BaseException:
        if not existed and os.path.exists(path):
            os.remove(path)
        raise


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
    """Load an exported artifact; a partial module comes back as the root, callable as ``pm(...)``.

    The file is checked first: a library cut short (an interrupted copy) would otherwise crash the
    process inside the system's loader, which maps its segments without checking the file's size.
    """
    import tvm.runtime

    path = os.fspath(path)
    check_complete(path)
    return tvm.runtime.load_module(path)


def check_complete(path: PathLike) -> None:
    """Raise ``ValueError`` if an ELF library is shorter than its loadable segments say."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(64)
        size = os.fstat(f.fileno()).st_size
        if head[:4] != b"\x7fELF" or len(head) < 64 or head[4] != 2 or head[5] != 1:
            return  # not a 64-bit little-endian ELF file: leave it to TVM's loader
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    if len(table) < phentsize * phnum:
        raise ValueError(f"{path} is truncated: its program headers run past the end of the file")
    for i in range(phnum):
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        if p_type == 1 and p_offset + p_filesz > size:  # PT_LOAD
            raise ValueError(f"{path} is truncated: its segments need {p_offset + p_filesz} bytes, "
                             f"the file has {size}; copy or export it again")


def inspect(path: PathLike) -> dict:
    """Describe the partial module inside an exported library without loading or running it.

    Returns ``{"path", "format_version", "total_bytes", "constant_bytes", "functions": [{"name",
    "param_names", "free", "bindings": [...]}]}``.
    Raises ``ValueError`` when the file is not a tvm-partial artifact.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise ValueError(f"{path} is not a tvm-partial artifact: not an ELF shared library")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:  # nothing read in bulk
            return _inspect(data, path)


def _inspect(data, path: str) -> dict:
    modules = _embedded_modules(data, path)
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
        outs = [_output_entry(o, names) for o in fn.get("outputs", [])]
        taken = {b["index"] for b in bound} | {o["index"] for o in outs}
        functions.append({
            "name": str(fn["name"]),
            "param_names": names,
            "free": [n for i, n in enumerate(names) if i not in taken],
            "bindings": bound,
            "outputs": outs,
        })
    payloads = str(info["payloads"])
    region = None
    if payloads.startswith("region "):
        symbol = payloads.split(" ", 1)[1]
        found = _elf_symbol(data, symbol.encode(), path)
        region = {"symbol": symbol, "present": found is not None}
        if found is not None:
            offset, nbytes = found
            header_ok = offset + 24 <= len(data) and data[offset:offset + 8] == b"TVMPREGN" and \
                struct.unpack_from("<Q", data, offset + 16)[0] == nbytes
            region.update(file_offset=offset, bytes=nbytes,
                          complete=header_ok and offset + nbytes <= len(data))
    return {
        "path": path,
        "format_version": int(info["version"]),
        "total_bytes": int(info["total_bytes"]),
        "constant_bytes": int(info["constant_bytes"]),
        "payloads": payloads,
        "region": region,
        "functions": functions,
    }


def _output_entry(spec, names: list) -> dict:
    """An output as inspect shows it: index, name, dtype, shape (an int, or "name.shape[axis]")."""
    def dim(d):
        if isinstance(d, int):
            return d
        arg, axis = int(d[0]), int(d[1])
        return f"{names[arg] if arg < len(names) else f'arg{arg}'}.shape[{axis}]"

    entry = {"index": int(spec["position"]), "dtype": str(spec["dtype"]),
             "shape": [dim(d) for d in spec["shape"]]}
    if entry["index"] < len(names):
        entry["name"] = names[entry["index"]]
    return entry


def _plain(value):
    """ffi containers -> Python lists, ints, strs (for JSON)."""
    if isinstance(value, (tvm_ffi.Array, list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


# ---------------------------------------------------------------------------------------------
def _embedded_modules(data, path: str) -> list:
    """[(kind, bytes)] of the modules TVM packed into the library's ``__tvm_ffi__library_bin``,
    read from the ELF file itself (nothing is loaded or run)."""
    found = _elf_symbol(data, _BLOB_SYMBOL, path)
    if found is None:
        raise ValueError(f"{path} is not a tvm-partial artifact: it embeds no partial_apply module "
                         f"(no embedded modules at all: no {_BLOB_SYMBOL.decode()} symbol)")
    file_off, _ = found
    if file_off + 8 > len(data):
        raise ValueError(f"{path}: {_BLOB_SYMBOL.decode()} points past the end of the file")
    nbytes, = struct.unpack_from("<Q", data, file_off)
    if file_off + 8 + nbytes > len(data):
        raise ValueError(f"{path}: the embedded module blob runs past the end of the file")
    return _parse_library_bin(memoryview(data)[file_off + 8:file_off + 8 + nbytes], path)


def _elf_symbol(data, symbol: bytes, path: str) -> Optional[tuple]:
    """(file offset, size) of a defined symbol of a 64-bit little-endian ELF file, or None."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not a tvm-partial artifact: not an ELF shared library")
    if data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: only 64-bit little-endian ELF libraries can be inspected")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shoff + shnum * shentsize > len(data):
        raise ValueError(f"{path} is truncated: its ELF section table runs past the end of the file")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] not in (2, 11) or sh[6] >= len(sections):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], min(sh[4] + sh[5], len(data) - 23), 24):
            st_name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
            start = strtab[4] + st_name
            if data[start:start + len(symbol) + 1] != symbol + b"\0" or not 0 < shndx < len(sections):
                continue
            sec = sections[shndx]
            return value - sec[3] + sec[4], size
    return None


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
