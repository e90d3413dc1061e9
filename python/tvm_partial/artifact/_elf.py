# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The relocatable ELF object a zero-copy export links into its library: the 64-byte region
header under its symbol (C++ reads ELF files: cpp/storage/module_tree.cc). Only 64-bit
little-endian ELF is written (the platforms tvm-partial exports zero-copy on).
"""

from __future__ import annotations

import struct
from typing import BinaryIO

_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym
_SHDR = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr

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
