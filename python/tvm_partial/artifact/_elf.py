# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Reading and writing the ELF files tvm-partial deals with: artifacts (to find, without loading
them, where their embedded bytes and region header lie, which inspect, verify and the update of a
loaded artifact then hand to the C++ reader; and to check a library is complete before the
system's loader maps it) and the relocatable object that carries a zero-copy region header.

Every read is bounds-checked: malformed or truncated input raises ``ValueError`` saying what is
wrong, never ``struct.error``, ``IndexError`` or ``OverflowError``, and never reads past the data.
Only 64-bit little-endian ELF is read (the platforms tvm-partial exports zero-copy on).
"""

from __future__ import annotations

import mmap
import struct
from typing import BinaryIO, NamedTuple

#: TVM's embedded module blob: u64 length, then the serialised module tree.
BLOB_SYMBOL = b"__tvm_ffi__library_bin"

_SHT_SYMTAB, _SHT_NOBITS, _SHT_DYNSYM = 2, 8, 11
_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr


class Section(NamedTuple):
    name: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


class Embedded(NamedTuple):
    """One module of TVM's embedded blob: its kind, and where its bytes lie in the file."""

    kind: str
    offset: int  # file offset of the module's bytes (after their u64 length)
    size: int


class ElfFile:
    """A bounds-checked view of a 64-bit little-endian ELF file held in ``data`` (bytes, mmap)."""

    def __init__(self, data: bytes | mmap.mmap, path: str) -> None:
        self.data = data
        self.path = path
        self.size = len(data)
        if self.size < 64 or data[:4] != b"\x7fELF":
            raise ValueError(f"{path} is not a tvm-partial artifact: not an ELF shared library")
        if data[4] != 2 or data[5] != 1:
            raise ValueError(f"{path}: only 64-bit little-endian ELF libraries can be read")
        self._sections: list | None = None

    # -- raw reads --------------------------------------------------------------------------
    def _need(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(
                f"{self.path} is truncated or damaged: {what} ({length} bytes at offset "
                f"{offset}) runs past the end of the file ({self.size} bytes)"
            )

    def unpack(self, fmt: struct.Struct, offset: int, what: str) -> tuple:
        self._need(offset, fmt.size, what)
        return fmt.unpack_from(self.data, offset)

    def u64(self, offset: int, what: str) -> int:
        return self.unpack(_U64, offset, what)[0]

    # -- tables -----------------------------------------------------------------------------
    def sections(self) -> list:
        if self._sections is None:
            (shoff,) = self.unpack(_U64, 0x28, "the section header offset")
            shentsize, shnum = self.unpack(_U16x2, 0x3A, "the section header count")
            if shoff == 0 or shnum == 0:
                raise ValueError(
                    f"{self.path} has no ELF section table (stripped or damaged): "
                    "it cannot be read without loading it"
                )
            if shentsize < _SHDR.size:
                raise ValueError(
                    f"{self.path} is damaged: section header entries of {shentsize} bytes "
                    f"(ELF64 needs {_SHDR.size})"
                )
            self._need(shoff, shentsize * shnum, "its ELF section table")
            self._sections = [
                Section(*_SHDR.unpack_from(self.data, shoff + i * shentsize)) for i in range(shnum)
            ]
        return self._sections

    def symbol(self, name: bytes) -> tuple | None:
        """(file offset, size) of the defined symbol ``name``, or None when no table has it.
        The dynamic symbol table is searched first (exported symbols are there)."""
        sections = self.sections()
        tables = sorted(
            (s for s in sections if s.type in (_SHT_DYNSYM, _SHT_SYMTAB)), key=lambda s: s.type != _SHT_DYNSYM
        )
        for table in tables:
            found = self._lookup(table, sections, name)
            if found is not None:
                return found
        return None

    def _lookup(self, table: Section, sections: list, name: bytes) -> tuple | None:
        if table.link >= len(sections):
            raise ValueError(
                f"{self.path} is damaged: a symbol table links to section {table.link} of {len(sections)}"
            )
        strtab = sections[table.link]
        self._need(table.offset, table.size, "a symbol table")
        self._need(strtab.offset, strtab.size, "a string table")
        strings = bytes(self.data[strtab.offset : strtab.offset + strtab.size])
        wanted = set()  # string-table offsets where `name` is spelled out, NUL-terminated
        at = strings.find(name + b"\0")
        while at >= 0:
            wanted.add(at)
            at = strings.find(name + b"\0", at + 1)
        if not wanted:
            return None
        count = table.size // _SYM.size
        symbols = self.data[table.offset : table.offset + count * _SYM.size]
        for st_name, _info, _other, shndx, value, size in _SYM.iter_unpack(symbols):
            if st_name not in wanted or not 0 < shndx < len(sections):
                continue  # another name, or undefined / absolute / special section
            sec = sections[shndx]
            if sec.type == _SHT_NOBITS or not sec.addr <= value <= value + size <= sec.addr + sec.size:
                raise ValueError(f"{self.path} is damaged: symbol {name.decode()} lies outside its section")
            offset = value - sec.addr + sec.offset
            self._need(offset, size, f"symbol {name.decode()}")
            return offset, size
        return None

    # -- what tvm-partial needs ---------------------------------------------------------------
    def embedded_modules(self) -> list:
        """[Embedded] of the modules TVM packed into ``__tvm_ffi__library_bin``."""
        found = self.symbol(BLOB_SYMBOL)
        if found is None:
            raise ValueError(
                f"{self.path} is not a tvm-partial artifact: it embeds no partial_apply module "
                f"(no embedded modules at all: no {BLOB_SYMBOL.decode()} symbol)"
            )
        at, _ = found
        nbytes = self.u64(at, "the embedded module blob's length")
        self._need(at + 8, nbytes, "the embedded module blob")
        return _parse_library_bin(self, at + 8, at + 8 + nbytes)


_U64 = struct.Struct("<Q")
_U16x2 = struct.Struct("<HH")


def _parse_library_bin(elf: ElfFile, pos: int, end: int) -> list:
    """TVM's module tree: u64 n + u64 indptr[n], u64 m + u64 children[m], then per module a kind
    string and (except for the code itself, ``_lib``) its bytes, each as u64 length + data."""

    def take(n: int, what: str) -> int:
        nonlocal pos
        if n < 0 or n > end - pos:
            raise ValueError(
                f"{elf.path}: the embedded module blob is truncated or damaged: {what} "
                f"of {n} bytes at offset {pos} runs past its end"
            )
        start = pos
        pos += n
        return start

    def u64(what: str) -> int:
        return _U64.unpack_from(elf.data, take(8, what))[0]

    def count(what: str) -> int:
        n = u64(what)
        if n > (end - pos) // 8:
            raise ValueError(
                f"{elf.path}: the embedded module blob is damaged: {what} {n} cannot fit "
                f"in its {end - pos} remaining bytes"
            )
        return n

    indptr = [u64("an import index") for _ in range(count("the import index count"))]
    for _ in range(count("the import list length")):
        u64("an import")
    modules = []
    for _ in range(max(len(indptr) - 1, 0)):
        n = u64("a module kind's length")
        kind = bytes(elf.data[take(n, "a module kind") : pos]).decode("utf-8", "replace")
        if kind == "_lib":
            modules.append(Embedded(kind, pos, 0))
            continue
        n = u64(f"the length of the {kind} module")
        modules.append(Embedded(kind, take(n, f"the {kind} module"), n))
    return modules


# ---------------------------------------------------------------------------------------------
# Writing: the relocatable object of a zero-copy export.

#: ELF machine numbers of the hosts whose object files are written directly (else: assembler).
MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
#: The data section of the 64-byte region header a zero-copy export links in.
PAYLOAD_SECTION = b".data.tvm_partial_payload"
_SHF_WRITE_ALLOC = 0x3


def finish_payload_object(f: BinaryIO, symbol: str, machine: int, lead: int = 64) -> None:
    """Turn the open file ``f`` (``lead`` bytes of room, then the payload region up to its end)
    into a relocatable ELF64 object: the region (its 64-byte header) in a writable, 64-byte-aligned
    data section under the global ``symbol``, with the symbol and section tables after it."""
    f.seek(0, 2)
    pos = f.tell()
    size = pos - lead
    strtab = b"\0" + symbol.encode() + b"\0"
    section_name, section_flags = PAYLOAD_SECTION, _SHF_WRITE_ALLOC
    names = [b"", section_name, b".symtab", b".strtab", b".shstrtab", b".note.GNU-stack"]
    shstrtab, name_at = b"", []
    for name in names:
        name_at.append(len(shstrtab))
        shstrtab += name + b"\0"
    symtab = bytes(24) + _SYM.pack(1, 0x11, 0, 1, 0, size)  # GLOBAL OBJECT in section 1
    pad = (-pos) % 8
    f.write(bytes(pad))
    symtab_at = pos + pad
    f.write(symtab)
    strtab_at = f.tell()
    f.write(strtab)
    shstrtab_at = f.tell()
    f.write(shstrtab)
    f.write(bytes((-f.tell()) % 8))
    headers_at = f.tell()
    sections = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0),
        (1, section_flags, lead, size, 0, 0, 64, 0, name_at[1]),  # PROGBITS, WRITE|ALLOC
        (2, 0, symtab_at, len(symtab), 3, 1, 8, 24, name_at[2]),  # SYMTAB -> .strtab
        (3, 0, strtab_at, len(strtab), 0, 0, 1, 0, name_at[3]),  # STRTAB
        (3, 0, shstrtab_at, len(shstrtab), 0, 0, 1, 0, name_at[4]),  # STRTAB (names)
        (1, 0, shstrtab_at, 0, 0, 0, 1, 0, name_at[5]),  # no executable stack
    ]
    for sh_type, flags, offset, length, link, info, align, entsize, name_offset in sections:
        f.write(_SHDR.pack(name_offset, sh_type, flags, 0, offset, length, link, info, align, entsize))
    f.seek(0)
    f.write(
        b"\x7fELF"
        + bytes([2, 1, 1, 0])
        + bytes(8)  # 64-bit, little-endian
        + struct.pack("<HHIQQQIHHHHHH", 1, machine, 1, 0, 0, headers_at, 0, 64, 0, 0, 64, len(sections), 4)
    )
