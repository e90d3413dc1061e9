# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The reader of artifacts' files (C++, ``tvm_partial.LibraryModules``: the ELF section tables,
the symbols, TVM's embedded module tree) on malformed files: ``inspect`` and ``verify`` either
succeed or raise ``ValueError`` saying what is wrong; never another exception
(``struct.error``, ``IndexError``, ``OverflowError``, ...), a crash or a hang. ``load`` refuses the
malformations that would crash the system's loader or TVM's (checked in C++, before each decodes).

The mutations hit the structures the reader walks: the ELF header, the program and section
headers, the symbol and string tables, TVM's embedded blob (its length and module list), and the
zero-copy region's header. ``TVM_PARTIAL_ELF_FUZZ_CASES`` sets the number of cases per artifact
(default 1000, a few seconds); the seed is fixed, ``TVM_PARTIAL_ELF_FUZZ_SEED`` changes it.
"""

from __future__ import annotations

import os
import re
import struct

import numpy as np
import pytest

import tvm_partial
from helpers import library_modules, run_cases, run_json

CASES = int(os.environ.get("TVM_PARTIAL_ELF_FUZZ_CASES", "1000"))
SEED = int(os.environ.get("TVM_PARTIAL_ELF_FUZZ_SEED", "0"))


@pytest.fixture(scope="module")
def artifacts(affine4, tmp_path_factory):
    exe, _ = affine4
    folder = tmp_path_factory.mktemp("elf")
    pm = tvm_partial.partial(exe, {1: np.arange(16, dtype="float32"), 2: np.ones(16, "float32")})
    out = {}
    for name, mode in (("inline", False), ("zero", True)):
        out[name] = folder / f"{name}.so"
        tvm_partial.export_library(pm, out[name], zero_copy=mode)
    return out


def _targets(path) -> list:
    """[(start, end)] byte ranges of the structures the reader walks."""
    data = path.read_bytes()
    (phoff, shoff) = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    ranges = [(0, 64), (shoff, shoff + shentsize * shnum), (phoff, phoff + phentsize * phnum)]
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for _, sh_type, _, _, offset, size, link, *_ in sections:
        if sh_type in (2, 11):  # the symbol tables and their string tables
            strtab = sections[link]
            ranges += [(offset, offset + size), (strtab[4], strtab[4] + strtab[5])]
    found = library_modules(path)
    ranges.append((found.blob_at, found.blob_at + 96))  # the blob's length, the module list, the first kind
    partial = found.partial
    ranges.append((partial.offset - 8, partial.offset + 48))  # its length and the format header
    region = tvm_partial.inspect(path)["region"]
    if region is not None:
        ranges.append((region["file_offset"], region["file_offset"] + 64))
    return ranges


_FUZZ = """
import json, os, random, struct, sys, traceback
import tvm_partial

src, work, cases, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ranges = json.loads(sys.argv[5])
original = open(src, "rb").read()
rng = random.Random(seed)
outcomes, unexpected = {"ok": 0, "ValueError": 0}, []
for case in range(cases):
    data = bytearray(original)
    for _ in range(rng.choice((1, 1, 2, 3))):
        start, end = rng.choice(ranges)
        at = min(rng.randrange(start, max(end, start + 1)), len(data) - 1)
        how = rng.randrange(5)
        if how == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif how == 1:
            data[at] = rng.randrange(256)
        elif how in (2, 3):
            width = rng.choice((2, 4, 8))
            value = rng.choice((0, 1, 2**(8 * width) - 1, 2**(8 * width - 1), rng.randrange(2**(8 * width))))
            data[at:at + width] = value.to_bytes(width, "little")[: len(data) - at]
        else:
            del data[rng.randrange(64, len(data)):]  # cut short
    path = os.path.join(work, "case.so")
    with open(path, "wb") as f:
        f.write(data)
    for name, check in (("inspect", tvm_partial.inspect), ("verify", tvm_partial.verify)):
        try:
            check(path)
            outcomes["ok"] += 1
        except ValueError:
            outcomes["ValueError"] += 1
        except Exception as err:
            unexpected.append([case, name, type(err).__name__, str(err)[:200]])
print(json.dumps({"outcomes": outcomes, "unexpected": unexpected[:10]}))
"""


@pytest.mark.parametrize("kind", ["inline", "zero"])
def test_mutated_artifacts_give_value_errors_only(artifacts, kind, tmp_path):
    import json

    result = run_json(
        _FUZZ,
        str(artifacts[kind]),
        str(tmp_path),
        str(CASES),
        str(SEED),
        json.dumps(_targets(artifacts[kind])),
    )
    assert result["unexpected"] == [], result
    # Both outcomes happen: the mutations reach the checks, and harmless ones still read.
    assert result["outcomes"]["ValueError"] > CASES // 4 and result["outcomes"]["ok"] > CASES // 4, result


def test_known_malformations(artifacts, tmp_path):
    """Each structure the reader walks, broken on purpose: a ValueError naming the problem."""
    data = artifacts["zero"].read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    blob_at = library_modules(artifacts["zero"]).blob_at

    def broken(at: int, value: bytes) -> str:
        path = tmp_path / f"case{at}.so"
        path.write_bytes(data[:at] + value + data[at + len(value) :])
        return str(path)

    cases = [
        (broken(0x28, (2**63).to_bytes(8, "little")), "section table"),  # section headers far away
        (broken(0x3A, (1).to_bytes(2, "little")), "section header entries"),  # entry size 1
        (broken(blob_at, (2**64 - 1).to_bytes(8, "little")), "embedded module blob"),  # blob length
        (broken(blob_at + 8, (2**62).to_bytes(8, "little")), "import index count"),  # a count that cannot fit
        (broken(0x20, (2**63).to_bytes(8, "little")), "program headers"),  # program headers far away
    ]
    for path, message in cases[:4]:
        for check in (tvm_partial.inspect, tvm_partial.verify):
            with pytest.raises(ValueError, match=message):
                check(path)
    assert shoff > 0


_LOAD = """
import tvm_partial

def run_case(path):
    try:
        tvm_partial.load(path)
        return "loaded"
    except Exception as err:
        return [type(err).__name__, str(err)]
"""


def test_load_refuses_what_would_crash_the_loaders(artifacts, tmp_path):
    """What the system's loader (segments past the end) or TVM's (the module tree's counts and
    import indices, which it trusts) would crash on or misread: ``load`` refuses it in C++ before
    either runs, naming the file; the C++ loaders share the check. Each case in a subprocess."""
    data = artifacts["zero"].read_bytes()
    blob_at = library_modules(artifacts["zero"]).blob_at
    (count,) = struct.unpack_from("<Q", data, blob_at + 8)  # import indices: one per module, plus one
    children = blob_at + 16 + 8 * count  # the import list's length, then the list

    def broken(at: int, value: int, width: int = 8) -> str:
        path = tmp_path / f"load{at}.so"
        path.write_bytes(data[:at] + value.to_bytes(width, "little") + data[at + width :])
        return str(path)

    cases = [
        (broken(0x20, 2**63), "program headers run past"),
        (_cut(data, tmp_path), "is truncated"),
        (broken(blob_at, 2**64 - 1), "blob is damaged: its length"),
        (broken(blob_at + 8, 2**62), "import index count 4611686018427387904 cannot fit"),
        (broken(blob_at + 16 + 8 * (count - 1), 2**40), r"imports \[\d+, 1099511627776\)"),
        (broken(children + 8, 2**33), "an import of module 8589934592"),
    ]
    results = run_cases(_LOAD, [path for path, _ in cases])
    for (path, message), result in zip(cases, results):
        assert isinstance(result, list) and result[0] == "ValueError", (path, result)
        assert result[1].startswith(path) and re.search(message, result[1]), (message, result)


def _cut(data: bytes, folder) -> str:
    path = folder / "cut.so"
    path.write_bytes(data[: len(data) // 2])
    return str(path)


def test_every_cut_of_an_inline_artifact_is_refused(affine4, tmp_path):
    """An inline artifact cut short anywhere, even where only its section headers go (the system's
    loader would map what is left), is refused by load, inspect and verify alike, naming the file:
    the ELF header says where the file ends. Each load in a subprocess."""
    exe, _ = affine4
    weights = np.arange(64 * 1024, dtype="float32")  # 256 KiB inline: a 200 KB cut ends inside it
    lib = tmp_path / "big.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: weights, 2: np.ones(16, "float32")}), lib)
    data = lib.read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    table = shentsize * shnum
    assert shoff + table == len(data) > 200_000 + 4096  # the section headers end the file
    cuts = [
        1,
        63,
        64,
        4096,
        table - 1,
        table,
        table + 1,
        200_000,
        len(data) - 64,
        len(data) - 4,
        len(data) - 1,
    ]
    paths = [str(tmp_path / f"cut{cut}.so") for cut in cuts]
    for path, cut in zip(paths, cuts):
        with open(path, "wb") as f:
            f.write(data[: len(data) - cut])
    for path, cut, result in zip(paths, cuts, run_cases(_LOAD, paths)):
        assert isinstance(result, list) and result[0] == "ValueError" and result[1].startswith(path), result
        reason = "not a tvm-partial artifact" if len(data) - cut < 4 else "is truncated"
        assert reason in result[1], (cut, result)
        for check in (tvm_partial.inspect, tvm_partial.verify):
            with pytest.raises(ValueError, match=re.escape(result[1] if reason == "is truncated" else path)):
                check(path)
