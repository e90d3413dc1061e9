# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Zero-copy artifacts: payloads mapped from the library file, copy-on-write, weight updates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import tvm

import tvm_partial
from helpers import (
    affine4_ref,
    ints,
    run_cases,
    run_cli,
    run_json,
    tensor,
    trailer_hash,
)
from tvm_partial import _facts, _ffi_api
from tvm_partial import _fixtures as fixtures
from tvm_partial._progress import format_size

# export_library's default: constants of 16 MiB and more go zero-copy (format::kZeroCopyBytes).
ZERO_COPY_BYTES = 16 * 2**20


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def exported(conv, tmp_path_factory):
    exe, tensors, inputs, expected = conv
    folder = tmp_path_factory.mktemp("zc")
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    tvm_partial.export_library(pm, folder / "zero.so", zero_copy=True)
    tvm_partial.export_library(pm, folder / "copy.so", zero_copy=False)
    np.save(folder / "data.npy", inputs["data"])
    return folder, expected


_CALL = """
import json, sys
import numpy as np, tvm, tvm_partial
lib = tvm.runtime.load_module(sys.argv[1])
out = tvm.runtime.empty({shape}, "float32")
lib(tvm.runtime.tensor(np.load(sys.argv[2])), out)
held = tvm_partial.bindings(lib)["main"]
print(json.dumps({{"result": out.numpy().tolist(), "aligned": [held[i].data_ptr() % 64 == 0 for i in held]}}))
"""


def test_each_export_draws_its_own_region_symbol_and_link(affine4, tmp_path):
    """C++ draws both at random for every export: a region, and a weights file, belong to the
    very library they were written with."""
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.ones(16, "float32"), 2: np.zeros(16, "float32")})
    seen = []
    for name in ("a.so", "b.so"):
        tvm_partial.export_library(pm, tmp_path / name, zero_copy=True)
        region = tvm_partial.inspect(tmp_path / name)["region"]
        assert region["symbol"].startswith("__tvm_partial_payload_")
        seen.append((region["symbol"], region["link"]))
    assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1], seen
    fixed = str(tmp_path / "c.so")
    with pytest.raises(ValueError, match="the symbol must start with __tvm_partial_payload_"):
        _ffi_api.Export(pm, fixed, fixed, _link, {"zero_copy": True, "symbol": "payload", "link": 1})
    with pytest.raises(ValueError, match="Export: unknown option 'zero-copy'"):
        _ffi_api.Export(pm, fixed, fixed, _link, {"zero-copy": True})


def _link(module, file):
    """TVM's link, as export_library passes it to tvm_partial.Export."""
    module.export_library(file)


def test_zero_copy_and_copying_artifacts_agree(exported):
    folder, expected = exported
    info = tvm_partial.inspect(folder / "zero.so")
    assert info["payloads"].startswith("region __tvm_partial_payload_")
    assert tvm_partial.inspect(folder / "copy.so")["payloads"] == "inline"
    results = {}
    for name in ("zero", "copy"):
        got = run_json(
            _CALL.format(shape=fixtures.SHAPES["result"]),
            str(folder / f"{name}.so"),
            str(folder / "data.npy"),
        )
        assert all(got["aligned"])
        results[name] = np.array(got["result"], "float32")
    assert np.array_equal(results["zero"], expected)
    assert np.array_equal(results["zero"], results["copy"])


def test_auto_path_by_size(affine4, tmp_path):
    exe, _ = affine4
    small = tvm_partial.partial(exe, {1: np.ones(16, "float32")})
    assert _facts.of(small).constant_bytes == 64
    tvm_partial.export_library(small, tmp_path / "small.so")
    assert tvm_partial.inspect(tmp_path / "small.so")["payloads"] == "inline"
    big = tvm_partial.partial(exe, {1: np.ones(16, "float32"), 2: np.ones(ZERO_COPY_BYTES // 4, "float32")})
    tvm_partial.export_library(big, tmp_path / "big.so")
    info = tvm_partial.inspect(tmp_path / "big.so")
    assert info["payloads"].startswith("region ") and info["constant_bytes"] == 64 + ZERO_COPY_BYTES
    # The artifact holds the weights once: at most 1% over their size (plus the code).
    plain = tmp_path / "plain.so"
    exe.export_library(str(plain))
    assert (tmp_path / "big.so").stat().st_size <= plain.stat().st_size + 1.01 * info["constant_bytes"] + 4096


def test_kernel_writes_bound_output_file_unchanged(affine4, tmp_path):
    """A bound output buffer in the mapped region: written copy-on-write, the file stays the same."""
    exe, _ = affine4
    b, c = ints(16, seed=1), ints(16, seed=2)
    pm = tvm_partial.partial(exe, {1: b, 2: c, 3: np.zeros(16, "float32")})
    lib = tmp_path / "out.so"
    tvm_partial.export_library(pm, lib, zero_copy=True)
    before = sha256(lib)
    a = ints(16, seed=3)
    got = run_json(
        """
        import json, sys
        import numpy as np, tvm, tvm_partial
        lib = tvm.runtime.load_module(sys.argv[1])
        a = tvm.runtime.tensor(np.array(json.loads(sys.argv[2]), "float32"))
        lib(a)
        out = tvm_partial.bindings(lib)["main"][3]
        print(json.dumps(out.numpy().tolist()))
        """,
        str(lib),
        str(a.tolist()),
    )
    assert np.array_equal(np.array(got, "float32"), affine4_ref(a, b, c))
    assert sha256(lib) == before


def test_in_place_update_and_rebind(affine4, tmp_path):
    exe, _ = affine4
    b, c = ints(16, seed=1), ints(16, seed=2)
    for mode in (True, False):
        lib = tmp_path / f"w{mode}.so"
        tvm_partial.export_library(
            tvm_partial.partial(exe, {1: b, 2: c}, signature=["a", "b", "c", "out"]), lib, zero_copy=mode
        )
        before = sha256(lib)
        got = run_json(
            """
            import json, sys
            import numpy as np, tvm, tvm_partial
            lib = tvm.runtime.load_module(sys.argv[1])
            a = tvm.runtime.tensor(np.arange(16, dtype="float32"))
            out = tvm.runtime.empty((16,), "float32")
            lib(a, out); first = out.numpy().tolist()
            tvm_partial.bindings(lib)["main"][1].copyfrom(np.full(16, 10, "float32"))   # in place
            lib(a, out); updated = out.numpy().tolist()
            other = tvm_partial.rebind(lib, c=np.full(16, 100, "float32"))               # new module
            other(a, out); rebound = out.numpy().tolist()
            lib(a, out); original = out.numpy().tolist()
            print(json.dumps([first, updated, rebound, original]))
            """,
            str(lib),
        )
        a = np.arange(16, dtype="float32")
        ten, hundred = np.full(16, 10, "float32"), np.full(16, 100, "float32")
        first, updated, rebound, original = (np.array(r, "float32") for r in got)
        assert np.array_equal(first, affine4_ref(a, b, c)), mode
        assert np.array_equal(updated, affine4_ref(a, ten, c)), mode
        assert np.array_equal(rebound, affine4_ref(a, ten, hundred)), mode
        assert np.array_equal(original, affine4_ref(a, ten, c)), mode
        assert sha256(lib) == before


def test_rebind_in_process(conv):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    doubled = tvm_partial.rebind(pm, weights=inputs["weights"] * 2, bias=inputs["bias"] * 2)
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    doubled(tensor(inputs["data"]), out)
    assert np.array_equal(out.numpy(), expected * 2)
    assert doubled.imports[0].same_as(pm.imports[0])  # the same compiled code
    with pytest.raises(ValueError, match=r"shape \(4,\) does not match bias: Tensor\[\(8\), float32\]"):
        tvm_partial.rebind(pm, bias=np.zeros(4, "float32"))
    with pytest.raises(IndexError, match=r"position 0 of main\(\) is not bound"):
        tvm_partial.rebind(pm, data=inputs["data"])
    with pytest.raises(KeyError, match=r"function 'other' has no bindings"):
        tvm_partial.rebind(pm, {1: inputs["weights"]}, function="other")


_LOAD_ERROR = """
import tvm, tvm_partial

def run_case(path):
    try:
        tvm_partial.load(path)
        return None
    except Exception as err:
        return f"{type(err).__name__}: {err}"
"""


def _load_errors(*libs) -> list[str]:
    """What ``load`` raises for each of ``libs``, all in one fresh interpreter (a crash fails)."""
    results = run_cases(_LOAD_ERROR, [str(lib) for lib in libs])
    for lib, result in zip(libs, results):
        assert isinstance(result, str), f"{lib}: {result or 'a damaged artifact loaded'}"
    return results


def _load_error(lib) -> str:
    return _load_errors(lib)[0]


def test_truncated_region_refused(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.arange(2**20, dtype="float32")})
    lib = tmp_path / "t.so"
    tvm_partial.export_library(pm, lib, zero_copy=True)
    data = lib.read_bytes()
    start = data.rfind(b"TVMPREGN")  # the region
    assert start > 0 and start % 65536 == 0
    lib.write_bytes(data[: start + 2**21])  # cut in the middle of the payloads
    # The code is whole; the payloads and their trailer are gone.
    all_refuse(
        lib,
        "is truncated or was rewritten: its payload region (4194368 bytes, appended after the code) is missing",
    )


def _export_appended(exe, tmp_path, name="a.so", count=4096):
    b = np.arange(count, dtype="float32")
    lib = tmp_path / name
    tvm_partial.export_library(tvm_partial.partial(exe, {1: b}), lib, zero_copy=True)
    return lib, b


def test_hashes_are_recorded_only_in_the_partial_module_that_was_linked(affine4, tmp_path):
    """An export appends the payloads, then writes their hashes over the very bytes
    that were linked (found through TVM's module tree): a library embedding other bytes is
    refused naming it, not patched elsewhere; the export's own library verifies."""
    exe, _ = affine4
    lib, _ = _export_appended(exe, tmp_path)
    assert tvm_partial.verify(lib)["intact"]
    other = tmp_path / "inline.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: np.ones(8, "float32")}), other, zero_copy=False)
    before = other.read_bytes()

    def link_other(module, file):  # a library that embeds other bytes than the module's
        Path(file).write_bytes(before)

    staged = tmp_path / "staged.so"
    with pytest.raises(RuntimeError, match=f"cannot find the partial module's bytes in {staged}"):
        _ffi_api.Export(
            tvm_partial.partial(exe, {1: np.zeros(8, "float32")}),
            str(staged),
            str(staged),
            link_other,
            {"zero_copy": True},
        )
    data = staged.read_bytes()
    assert data[: len(before)] == before  # the embedded bytes untouched (the region was appended)


def test_appended_region_layout(affine4, tmp_path):
    """The library, zeros to a 64 KiB boundary, the region (header, payloads), a 64-byte trailer;
    nothing payload-related is linked into the library."""
    import struct

    exe, _ = affine4
    lib, b = _export_appended(exe, tmp_path, count=3 * 2**20)
    data = lib.read_bytes()
    info = tvm_partial.inspect(lib)
    region = info["region"]
    start, size = region["file_offset"], region["bytes"]
    assert region["placement"] == "appended" and size == 64 + b.nbytes
    assert start % 65536 == 0 and start < 2**20 and len(data) == start + size + 64
    assert data.count(b"TVMPREGN") == 1 and data.find(b"TVMPREGN") == start
    assert np.array_equal(np.frombuffer(data, "float32", b.size, start + 64), b)
    magic, version, zero, offset, nbytes, link, recorded = struct.unpack_from(
        "<8sIIQQQQ", data, len(data) - 64
    )
    assert (magic, version, zero, offset, nbytes) == (b"TVMPTRLR", 1, 0, start, size)
    assert link == tvm_partial.inspect(lib)["region"]["link"] & (2**64 - 1)
    assert recorded == trailer_hash(data[-64:-24]) and data[-16:] == bytes(16)
    assert tvm_partial.verify(lib)["intact"]


def test_progress_reports_the_region(affine4, tmp_path):
    exe, _ = affine4
    b = np.arange(70 * 2**20 // 4, dtype="float32")  # over the threshold: two 64 MiB chunks
    c = np.arange(4 * 2**20 + 3, dtype="float32")  # not a multiple of the 4 MiB hashing pieces
    calls = []
    lib = tmp_path / "p.so"
    tvm_partial.export_library(
        tvm_partial.partial(exe, {1: b, 2: c}), lib, progress=lambda d, t: calls.append((d, t))
    )
    total = tvm_partial.inspect(lib)["region"]["bytes"]
    assert total == 64 + b.nbytes + c.nbytes and calls[-1] == (total, total) and len(calls) >= 3
    # The hashes computed while writing are the ones recorded (verify hashes the file again).
    assert tvm_partial.verify(lib)["intact"] and tvm_partial.verify(lib)["checked"] == 2
    assert all(t == total for _, t in calls) and [d for d, _ in calls] == sorted({d for d, _ in calls})


def test_progress_error_leaves_nothing(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.ones(16, "float32")})

    def stop(done, total):
        raise ValueError("stopped by the progress callback")

    with pytest.raises(ValueError, match="stopped by the progress callback"):
        tvm_partial.export_library(pm, tmp_path / "x.so", zero_copy=True, progress=stop)
    assert list(tmp_path.iterdir()) == []


def test_damaged_trailer_refused(affine4, tmp_path):
    """A trailer whose hash fails reads as missing; one that is intact but disagrees with the file
    or the metadata is refused as damaged. Load, inspect and verify all say so, naming the file."""
    import struct

    exe, _ = affine4
    lib, _ = _export_appended(exe, tmp_path)
    data = bytearray(lib.read_bytes())
    flipped = bytearray(data)
    flipped[-60] ^= 1  # the trailer's version: its hash no longer holds
    (tmp_path / "flipped.so").write_bytes(bytes(flipped))
    moved = bytearray(data)
    struct.pack_into("<Q", moved, len(data) - 64 + 16, 2 * 65536)  # another offset, hash resealed
    struct.pack_into("<Q", moved, len(data) - 64 + 40, trailer_hash(bytes(moved[-64:-24])))
    (tmp_path / "moved.so").write_bytes(bytes(moved))
    relinked = bytearray(data)  # another link number, hash resealed: the metadata disagrees
    struct.pack_into("<Q", relinked, len(data) - 64 + 32, 12345)
    struct.pack_into("<Q", relinked, len(data) - 64 + 40, trailer_hash(bytes(relinked[-64:-24])))
    (tmp_path / "relinked.so").write_bytes(bytes(relinked))
    far = bytearray(data)  # an offset of 2**63: refused, never an overflow
    struct.pack_into("<Q", far, len(data) - 64 + 16, 2**63)
    struct.pack_into("<Q", far, len(data) - 64 + 40, trailer_hash(bytes(far[-64:-24])))
    (tmp_path / "far.so").write_bytes(bytes(far))
    libs = [tmp_path / f"{name}.so" for name in ("flipped", "moved", "relinked", "far")]
    messages = _load_errors(*libs)
    all_refuse(libs[0], "is truncated or was rewritten", messages[0])
    for lib, message in zip(libs[1:], messages[1:]):
        all_refuse(lib, "is damaged: the trailer of its appended payload region", message)


def all_refuse(lib, reason: str, message: str | None = None) -> str:
    """load (in a fresh process; ``message`` when it ran already), inspect, verify and the CLI all
    refuse ``lib`` for ``reason``, naming it, with the same message: one reader, one verdict."""
    import re

    message = message or _load_error(lib)
    assert message.startswith(f"ValueError: {lib} ") and reason in message, message
    text = message.split(": ", 1)[1]
    for check in (tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(ValueError, match=re.escape(text)):
            check(lib)
    for command in ("inspect", "verify"):
        proc = run_cli(command, str(lib))
        assert proc.returncode == 2 and text in proc.stderr, (command, proc.returncode, proc.stderr)
    return text


def test_strip_drops_the_region_and_says_so(affine4, tmp_path):
    """strip rewrites the ELF file and drops the appended payloads: verify, inspect and load say
    the region is missing and name the file (never a crash, never other values)."""
    import shutil
    import subprocess

    exe, _ = affine4
    if shutil.which("strip") is None:
        pytest.skip("strip is not on PATH")
    lib, _ = _export_appended(exe, tmp_path)
    stripped = tmp_path / "stripped.so"
    shutil.copyfile(lib, stripped)
    subprocess.run(["strip", str(stripped)], check=True)
    assert stripped.stat().st_size < lib.stat().st_size
    message = all_refuse(stripped, "is truncated or was rewritten: its payload region")
    assert "tools such as strip drop data appended to a library" in message


def test_altered_region_header_refused(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.arange(64, dtype="float32")})
    lib = tmp_path / "a.so"
    tvm_partial.export_library(pm, lib, zero_copy=True)
    data = bytearray(lib.read_bytes())
    start = data.find(b"TVMPREGN")
    data[start + 16] ^= 0x40  # the region's size no longer matches the metadata
    lib.write_bytes(bytes(data))
    message = _load_error(lib)
    assert "does not match its metadata" in message, message


def test_metadata_without_its_library(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.arange(16, dtype="float32")})
    linked = []

    def link(module, file):  # the bytes the library embeds
        linked.append(tvm_partial.save_to_bytes(module))
        module.export_library(file)

    _ffi_api.Export(pm, str(tmp_path / "a.so"), str(tmp_path / "a.so"), link, {"zero_copy": True})
    blob = linked[0]
    with pytest.raises(
        ValueError,
        match=r"lie in the file of the library it was exported in \(region __tvm_partial_payload_\w+\), "
        r"not in its bytes: load that library",
    ):
        tvm_partial.load_from_bytes(blob)


# Loads argv[1] and views its bound tensor; argv[2] "hold" keeps the view after the module is
# gone, "drop" lets it go too. Reports the artifact's file-backed mappings (/proc/self/maps)
# before and after, and where the view's data lies in them.
_VIEW_AFTER_MODULE = """
import gc, json, os, sys
import numpy as np, tvm_partial

path = os.path.realpath(sys.argv[1])
st = os.stat(path)

def mappings():
    # [start, end, file offset] of every mapping of the artifact's file (same device and inode)
    out = []
    for line in open("/proc/self/maps"):
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].strip() == path and int(fields[4]) == st.st_ino:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            out.append([start, end, int(fields[2], 16)])
    return out

def containing(ptr, nbytes, maps):
    return next(([s, e, off] for s, e, off in maps if s <= ptr and ptr + nbytes <= e), None)

mod = tvm_partial.load(path)
held = tvm_partial.bindings(mod)["main"][1]
ptr, nbytes = held.data_ptr(), held.numpy().nbytes
before = containing(ptr, nbytes, mappings())
if sys.argv[2] == "drop":
    del held
del mod
gc.collect()
after = containing(ptr, nbytes, mappings())
values = held.numpy().tolist() if sys.argv[2] == "hold" else None
file_offset = None if after is None else after[2] + (ptr - after[0])
print(json.dumps({"before": before, "after": after, "file_offset": file_offset, "values": values}))
"""


def test_bound_view_keeps_the_library_loaded(affine4, tmp_path):
    """A tensor viewing the mapped payloads outlives the module that loaded it: once the module
    is gone, its data still lies in a file-backed mapping of the artifact (/proc/self/maps), at
    the file offset of the payload, and reads the bound values (a copying load would not be in the
    mapping; a mapping released with the module would not be there, or would crash the read)."""
    exe, _ = affine4
    b = ints(16, seed=7)
    lib = tmp_path / "keep.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: b}), lib, zero_copy=True)
    got = run_json(_VIEW_AFTER_MODULE, str(lib), "hold")
    assert got["before"] is not None, got  # a view of the file, not a copy
    assert got["after"] == got["before"], got  # the same mapping, still there
    data = lib.read_bytes()
    assert data[got["file_offset"] : got["file_offset"] + b.nbytes] == b.tobytes(), got
    assert np.array_equal(np.array(got["values"], "float32"), b)


def test_payload_mapping_released_with_the_module_and_its_views(affine4, tmp_path):
    """The comparison run of test_bound_view_keeps_the_library_loaded: with no view held, the
    payload mapping goes with the module, so it is the view that keeps it there."""
    exe, _ = affine4
    lib = tmp_path / "drop.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: ints(16, seed=7)}), lib, zero_copy=True)
    got = run_json(_VIEW_AFTER_MODULE, str(lib), "drop")
    assert got["before"] is not None, got
    assert got["after"] is None, got


def test_inspect_checks_the_region(affine4, tmp_path):

    exe, _ = affine4
    lib = tmp_path / "r.so"
    tvm_partial.export_library(
        tvm_partial.partial(exe, {1: np.arange(4096, dtype="float32")}), lib, zero_copy=True
    )
    info = tvm_partial.inspect(lib)
    region = info["region"]
    assert region["placement"] == "appended" and region["bytes"] == 64 + 4096 * 4
    assert lib.read_bytes()[region["file_offset"] : region["file_offset"] + 8] == b"TVMPREGN"

    def cli(path):
        return run_cli("inspect", str(path))

    text = cli(lib).stdout
    assert (
        f"payload region appended at file offset {region['file_offset']}, {format_size(region['bytes'])} "
        "(header and trailer intact, inside the file)" in text
    )
    assert "payload hashes: not checked (run tvm-partial verify)" in text
    data = bytearray(lib.read_bytes())
    data[region["file_offset"] + 16] ^= 1  # the region's size field
    (tmp_path / "damaged.so").write_bytes(bytes(data))
    # Cut in the appended payloads: the library is whole, its region and trailer are gone.
    (tmp_path / "cut_region.so").write_bytes(bytes(data[: region["file_offset"] + 100]))
    damaged, cut = _load_errors(tmp_path / "damaged.so", tmp_path / "cut_region.so")
    all_refuse(tmp_path / "damaged.so", "is damaged: the header of its appended payload region", damaged)
    all_refuse(tmp_path / "cut_region.so", "is truncated or was rewritten", cut)
    # Cut inside the library itself: refused as before.
    (tmp_path / "cut.so").write_bytes(bytes(data[: data.find(b"TVMPREGN") + 100]))
    proc = cli(tmp_path / "cut.so")
    assert proc.returncode == 2 and "is truncated" in proc.stderr


# ---------------------------------------------------------------------------------------------
# The documented update flow: load -> rebind -> export_library, for both placements.

_UPDATE = """
import json, sys
import numpy as np, tvm, tvm_partial
# Either loader: the file the code came from is found from the loaded code itself.
pm = tvm_partial.load(sys.argv[1]) if sys.argv[5] == "tvm_partial" else tvm.runtime.load_module(sys.argv[1])
new = np.load(sys.argv[3])
other = tvm_partial.rebind(pm, weights=new, bias=np.zeros(8, "float32"))
tvm_partial.export_library(other, sys.argv[2])
# The loaded module and its file are untouched; the new module computes with the new values.
out = tvm.runtime.empty((1, 8, 30, 30), "float32")
data = tvm.runtime.tensor(np.load(sys.argv[4]))
pm(data, out); old = out.numpy().tolist()
other(data, out); updated = out.numpy().tolist()
print(json.dumps([old, updated]))
"""

_RUN = """
import json, sys
import numpy as np, tvm, tvm_partial
lib = tvm_partial.load(sys.argv[1])
out = tvm.runtime.empty((1, 8, 30, 30), "float32")
lib(tvm.runtime.tensor(np.load(sys.argv[2])), out)
print(json.dumps(out.numpy().tolist()))
"""


@pytest.mark.parametrize("mode", [False, True], ids=["inline", "zero_copy"])
def test_load_rebind_export_library(conv, tmp_path, mode):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    first, second = tmp_path / "model.so", tmp_path / "other.so"
    tvm_partial.export_library(pm, first, zero_copy=mode)
    before = sha256(first)
    new_weights = (inputs["weights"] * 3 - 1).astype("float32")
    np.save(tmp_path / "w.npy", new_weights)
    np.save(tmp_path / "x.npy", inputs["data"])
    loader = "tvm.runtime" if mode else "tvm_partial"
    old, updated = run_json(
        _UPDATE, str(first), str(second), str(tmp_path / "w.npy"), str(tmp_path / "x.npy"), loader
    )
    want = fixtures.reference(data=inputs["data"], weights=new_weights, bias=np.zeros(8, "float32"))
    assert np.array_equal(np.array(old, "float32"), expected)
    assert np.array_equal(np.array(updated, "float32"), want)

    assert sha256(first) == before  # the original artifact is never modified
    assert tvm_partial.inspect(second)["payloads"] == tvm_partial.inspect(first)["payloads"]
    assert tvm_partial.inspect(second)["region"] == tvm_partial.inspect(first)["region"]  # same layout
    assert tvm_partial.verify(second)["intact"] and tvm_partial.verify(first)["intact"]
    # Fresh processes: the new artifact gives the new results, the original the old ones.
    got = np.array(run_json(_RUN, str(second), str(tmp_path / "x.npy")), "float32")
    assert np.array_equal(got, want)
    assert np.array_equal(np.array(run_json(_RUN, str(first), str(tmp_path / "x.npy")), "float32"), expected)


def test_update_flow_refusals(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.ones(16, "float32"), 2: "abc"})
    lib = tmp_path / "s.so"
    tvm_partial.export_library(pm, lib)
    got = run_json(
        """
        import json, os, sys
        import numpy as np, tvm_partial
        pm = tvm_partial.load(sys.argv[1])
        errors = []
        for call in (lambda: tvm_partial.export_library(tvm_partial.rebind(pm, {2: "abcd" * 50}), sys.argv[2]),
                     lambda: tvm_partial.export_library(pm, sys.argv[1]),
                     lambda: tvm_partial.export_library(pm, sys.argv[2], zero_copy=True),
                     lambda: tvm_partial.export_library(pm, sys.argv[2], options=["-O2"])):
            try:
                call()
                errors.append(None)
            except Exception as err:
                errors.append(f"{type(err).__name__}: {err}")
        tvm_partial.export_library(tvm_partial.rebind(pm, {2: "xyzw"}), sys.argv[2])  # fits: fine
        os.replace(sys.argv[2], sys.argv[1])  # the file the code was loaded from, replaced
        try:
            tvm_partial.export_library(pm, sys.argv[3])
            errors.append(None)
        except Exception as err:
            errors.append(f"{type(err).__name__}: {err}")
        print(json.dumps(errors))
        """,
        str(lib),
        str(tmp_path / "new.so"),
        str(tmp_path / "third.so"),
    )
    longer, same_file, placement, options, replaced = got
    # The file the code was loaded from, replaced at its path since: the update copies the very
    # file the module was loaded from (the descriptor its load kept), not what the path holds now.
    assert replaced is None
    assert tvm_partial.inspect(tmp_path / "third.so")["functions"][0]["bindings"][1]["value"] == "abc"
    assert (
        longer.startswith("ValueError: export_library: the updated bindings take")
        and "same lengths" in longer
    )
    assert (
        same_file.startswith("ValueError: export_library:")
        and "is the file this module was loaded from" in same_file
    )
    assert placement.startswith("ValueError: export_library: zero_copy=True differs from")
    assert options.startswith("ValueError: export_library: options cannot apply to a module loaded from")
    assert tvm_partial.inspect(lib)["functions"][0]["bindings"][1]["value"] == "xyzw"  # new.so, renamed


def test_export_writes_a_new_file(affine4, tmp_path):
    """Exporting over an existing artifact replaces the file (a new inode): a process that has the
    old one open or mapped keeps reading the old bytes."""
    exe, _ = affine4
    lib = tmp_path / "m.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: np.ones(16, "float32")}), lib, zero_copy=True)
    old_bytes = lib.read_bytes()
    with open(lib, "rb") as held:
        inode = Path(lib).stat().st_ino
        tvm_partial.export_library(
            tvm_partial.partial(exe, {1: np.full(16, 7, "float32")}), lib, zero_copy=True
        )
        assert Path(lib).stat().st_ino != inode
        assert held.read() == old_bytes
    assert tvm_partial.verify(lib)["intact"] and lib.read_bytes() != old_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.so"]  # no staged file left behind


def test_rebind_refuses_another_kind(affine4):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.ones(16, "float32"), 2: 2.5, 3: 4}, signature=["a", "b", "c", "out"])
    import tvm_ffi

    with pytest.raises(
        TypeError, match=r"cannot rebind parameter 'b' \(position 1\): a tensor was bound there, got Function"
    ):
        tvm_partial.rebind(pm, b=tvm_ffi.convert(lambda: 0))
    with pytest.raises(TypeError, match=r"parameter 'b' \(position 1\): a tensor was bound there, got float"):
        tvm_partial.rebind(pm, b=1.0)
    with pytest.raises(
        TypeError, match=r"parameter 'c' \(position 2\): a float was bound there, got a tensor"
    ):
        tvm_partial.rebind(pm, c=np.ones(16, "float32"))
    with pytest.raises(
        TypeError, match=r"parameter 'out' \(position 3\): an int was bound there, got a float"
    ):
        tvm_partial.rebind(pm, out=1.5)
    with pytest.raises(TypeError, match=r"a float was bound there, got a str"):
        tvm_partial.rebind(pm, c="2.5")
    with pytest.raises(ValueError, match=r"the int 9007199254740993 has no exact float value"):
        tvm_partial.rebind(pm, c=2**53 + 1)
    rebound = tvm_partial.bindings(tvm_partial.rebind(pm, c=3, out=5))["main"]
    assert rebound[2] == 3.0 and isinstance(rebound[2], float) and rebound[3] == 5


def test_rebind_without_code_refused(affine4):
    exe, _ = affine4
    blob = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: np.ones(16, "float32")}))
    with pytest.raises(ValueError, match=r"wraps no compiled code .*load_from_bytes\(data, wrapped=exe\)"):
        tvm_partial.rebind(tvm_partial.load_from_bytes(blob), {1: np.zeros(16, "float32")})
    restored = tvm_partial.rebind(
        tvm_partial.load_from_bytes(blob, wrapped=exe), {1: np.full(16, 2, "float32")}
    )
    assert np.array_equal(tvm_partial.bindings(restored)["main"][1].numpy(), np.full(16, 2, "float32"))


def test_loaded_plain_library_export_refused(affine4, tmp_path):
    """Code loaded from a library that is not an artifact: a clear error, not TVM's."""
    exe, _ = affine4
    exe.export_library(str(tmp_path / "plain.so"))
    pm = tvm_partial.partial(tvm.runtime.load_module(str(tmp_path / "plain.so")), {1: 1.0})
    with pytest.raises(
        ValueError, match=r"which TVM cannot export again, and it is not a tvm-partial artifact"
    ):
        tvm_partial.export_library(pm, tmp_path / "out.so")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.so"]


def test_zero_copy_needs_a_shared_library(affine4, tmp_path):
    """The payloads are appended to the linked library: a .tar of objects would lose them."""
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: np.ones(16, "float32")})
    with pytest.raises(
        ValueError, match=r"a zero-copy export appends the payloads to a shared library; .*x\.tar"
    ):
        tvm_partial.export_library(pm, tmp_path / "x.tar", zero_copy=True)
    assert list(tmp_path.iterdir()) == []


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
@pytest.mark.parametrize("zero_copy", [False, True])
def test_on_the_device_an_export_loads_back_there(dev, affine_dev, tmp_path, zero_copy):
    """Inline and zero-copy exports of device-bound weights: verify says intact, inspect names the
    device, and a load puts the exported bytes back on it and computes numpy's result."""
    exe, sig = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c, device=dev.name)
    tvm_partial.export_library(pm, tmp_path / "m.so", zero_copy=zero_copy)
    assert tvm_partial.verify(tmp_path / "m.so")["intact"]
    devices = {
        str(b["device"]) for f in tvm_partial.inspect(tmp_path / "m.so")["functions"] for b in f["bindings"]
    }
    assert devices == {dev.name}
    loaded = tvm_partial.load(tmp_path / "m.so")
    held = tvm_partial.bindings(loaded)["main"]
    assert [(str(held[i].device), held[i].numpy().tobytes()) for i in (1, 2)] == [
        (dev.name, b.tobytes()),
        (dev.name, c.tobytes()),
    ]
    out = dev.tensor(np.zeros(256, "float32"))
    loaded(dev.tensor(a), out)
    assert out.numpy().tobytes() == affine4_ref(a, b, c).tobytes()
