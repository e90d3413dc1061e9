"""The partial_apply format: layout, and refusal of every kind of malformed input.

Everything that feeds bad bytes to the loader runs in a subprocess, so a crash fails the test.
"""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
import tvm_ffi
from helpers import run_json

import tvm_partial

load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
reseal = tvm_ffi.get_global_func("tvm_partial.ResealForTesting")


# A writer of the documented layout (cpp/format.h), independent of the C++ one.
def _s(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<I", len(data)) + data


def tensor_entry(index, dtype="float32", shape=(4,), nbytes=None, offset=None, device=(1, 0), hash_=0):
    nbytes = 4 * int(np.prod(shape)) if nbytes is None else nbytes
    return (struct.pack("<qB", index, 5) + _s(dtype) + struct.pack("<iiI", *device, len(shape))
            + b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<QQQ", nbytes, offset or 0, hash_))


def make_blob(functions, version=1, flags=0, payload=b"", meta_extra=b"", count=None):
    """functions: [(name, [param names], [binding entry bytes])]; resealed so the hash is valid."""
    meta = struct.pack("<I", len(functions) if count is None else count)
    for name, names, entries in functions:
        meta += _s(name) + struct.pack("<I", len(names)) + b"".join(_s(n) for n in names)
        meta += struct.pack("<I", len(entries)) + b"".join(entries)
    meta += meta_extra
    body = meta + payload
    header = b"TVMPARTL" + struct.pack("<IIQQQ", version, flags, 40 + len(body), len(meta), 0)
    return bytes(reseal(header + body))


def refusal(blob: bytes) -> str:
    """Load `blob` in a subprocess; return the error message (the load must fail, not crash)."""
    result = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        data = bytes.fromhex(sys.argv[1])
        try:
            tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")(data)
            print(json.dumps({"error": None}))
        except Exception as err:
            print(json.dumps({"error": f"{type(err).__name__}: {err}"}))
        """, blob.hex())
    assert result["error"] is not None, "malformed input was accepted"
    return result["error"]


def test_python_writer_matches_cpp_encoder(affine4):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {0: 7, 2: "s", 3: None}, signature=["a", "b", "c", "out"])
    entries = [struct.pack("<qBq", 0, 1, 7), struct.pack("<qB", 2, 4) + _s("s"), struct.pack("<qB", 3, 0)]
    expected = make_blob([("main", ["a", "b", "c", "out"], entries)])
    assert tvm_partial.save_to_bytes(pm) == expected


def test_payload_is_64_byte_aligned(affine4):
    exe, _ = affine4
    w = np.arange(16, dtype="float32")
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: w, 2: w * 2}))
    info = tvm_ffi.get_global_func("tvm_partial.DescribeBytes")(data)
    assert info["constant_bytes"] == 128
    offsets = [data.find(w.tobytes()), data.find((w * 2).tobytes())]
    assert offsets[0] > 0 and offsets[1] > offsets[0]
    assert [o % 64 for o in offsets] == [0, 0]


@pytest.fixture(scope="module")
def small_blob():
    from tvm import te

    import tvm

    x = te.placeholder((4,), "float32", name="x")
    w = te.placeholder((4,), "float32", name="w")
    out = te.compute((4,), lambda i: x[i] * w[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, out]), target="llvm")
    pm = tvm_partial.partial(exe, {1: np.arange(4, dtype="float32"), 3: 5, 4: "k", 5: None, 6: 1.5, 7: True})
    return tvm_partial.save_to_bytes(pm)


def test_every_prefix_and_every_flipped_byte_refused(small_blob):
    """Truncated at each length, or with each byte flipped (two ways): refused, never a crash."""
    result = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
        blob = bytes.fromhex(sys.argv[1])
        load(blob)  # the intact blob loads
        accepted, wrong_kind, cases = [], [], 0
        variants = [("prefix", n, blob[:n]) for n in range(len(blob))]
        for i in range(len(blob)):
            for mask in (0x01, 0xFF):
                b = bytearray(blob); b[i] ^= mask
                variants.append(("flip%02x" % mask, i, bytes(b)))
        for what, where, data in variants:
            cases += 1
            try:
                load(data)
                accepted.append([what, where])
            except ValueError as err:
                if "partial_apply data" not in str(err):
                    wrong_kind.append([what, where, str(err)])
            except Exception as err:
                wrong_kind.append([what, where, type(err).__name__ + ": " + str(err)])
        print(json.dumps({"cases": cases, "accepted": accepted, "wrong_kind": wrong_kind}))
        """, small_blob.hex())
    assert result["cases"] == 3 * len(small_blob)
    assert result["accepted"] == []
    assert result["wrong_kind"] == []


CRAFTED = [
    ("wrong magic", lambda: b"NOTPARTL" + make_blob([])[8:], r"bad magic"),
    ("future version", lambda: make_blob([], version=3), r"format version 3, newer than this tvm-partial reads \(2\); upgrade"),
    ("version zero", lambda: make_blob([], version=0), r"format version 0 is invalid"),
    ("unknown flags", lambda: make_blob([], flags=4), r"unknown flags 4"),
    ("too short", lambda: b"TVMPARTL\x01", r"truncated: 9 bytes is shorter than the 40-byte header"),
    ("truncated", lambda: make_blob([("main", [], [tensor_entry(1, offset=128)])], payload=b"\0" * 44)[:-3],
     r"size mismatch: the header says \d+ bytes, got \d+ \(truncated\)"),
    ("bad checksum", lambda: make_blob([])[:-1] + b"\x01", r"metadata checksum mismatch"),
    ("function count past the end", lambda: make_blob([], count=0xFFFFFFFF), r"function count 4294967295 cannot fit"),
    ("name length past the end", lambda: make_blob([], count=1, meta_extra=struct.pack("<I", 1000) + b"\0" * 8),
     r"function name at byte 48 needs 1000 bytes, 8 left"),
    ("binding count past the end", lambda: make_blob([("main", [], [])], meta_extra=b"")[:0] or make_blob(
        [], count=1, meta_extra=_s("main") + struct.pack("<II", 0, 10**6)), r"binding count 1000000 cannot fit"),
    ("parameter name count past the end", lambda: make_blob(
        [], count=1, meta_extra=_s("main") + struct.pack("<I", 0x7FFFFFFF)), r"parameter name count 2147483647 cannot fit"),
    ("unknown value kind", lambda: make_blob([("main", [], [struct.pack("<qB", 0, 9)])]), r"position 0: unknown value kind 9"),
    ("bad bool", lambda: make_blob([("main", [], [struct.pack("<qBB", 0, 3, 7)])]), r"position 0: bool value 7"),
    ("negative position", lambda: make_blob([("main", [], [struct.pack("<qB", -1, 0)])]), r"position -1 is negative or out of order"),
    ("duplicate position", lambda: make_blob([("main", [], [struct.pack("<qB", 2, 0), struct.pack("<qB", 2, 0)])]),
     r"position 2 is negative or out of order"),
    ("position past the parameters", lambda: make_blob([("main", ["x"], [struct.pack("<qB", 1, 0)])]),
     r"position 1 is past its 1 parameters"),
    ("duplicate function", lambda: make_blob([("main", [], []), ("main", [], [])]), r"function 'main' appears twice"),
    ("unknown dtype", lambda: make_blob([("main", [], [tensor_entry(0, dtype="float33x")])]), r"unknown dtype|invalid dtype"),
    ("invalid device", lambda: make_blob([("main", [], [tensor_entry(0, device=(99, 0))])]), r"invalid device device_type 99:0"),
    ("ndim too large", lambda: make_blob([("main", [], [tensor_entry(0, shape=(1,) * 65, nbytes=4)])]), r"ndim 65 exceeds 64"),
    ("negative dimension", lambda: make_blob([("main", [], [tensor_entry(0, shape=(-1,), nbytes=0)])]), r"negative dimension -1"),
    ("shape byte size overflows", lambda: make_blob([("main", [], [tensor_entry(0, shape=(2**62, 2**62), nbytes=0)])]),
     r"element count overflows|byte size overflows"),
    ("shape bits overflow", lambda: make_blob([("main", [], [tensor_entry(0, shape=(2**62,), nbytes=0)])]), r"byte size overflows"),
    ("byte length mismatch", lambda: make_blob([("main", [], [tensor_entry(0, nbytes=12)])]),
     r"byte length 12 does not match its shape and dtype \(16\)"),
    ("payload offset not canonical", lambda: make_blob([("main", [], [tensor_entry(0, offset=4096)])]),
     r"payload offset 4096 is not the expected \d+"),
    ("payload past the end", lambda: make_blob([("main", [], [tensor_entry(0, offset=128)])]),
     r"payload of 16 bytes at offset 128 runs past the end"),
    ("trailing metadata", lambda: make_blob([], meta_extra=b"\0\0\0"), r"3 unread bytes at the end of the metadata"),
    ("bytes after the last payload", lambda: make_blob([], payload=b"\0" * 5), r"5 bytes after the last payload"),
    ("metadata size past the end", lambda: bytes(make_blob([])[:24]) + struct.pack("<Q", 10**9) + make_blob([])[32:],
     r"metadata of 1000000000 bytes runs past the end"),
]


@pytest.mark.parametrize("blob,match", [(make, m) for _, make, m in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_crafted_corruption_refused(blob, match):
    message = refusal(blob())
    assert message.startswith("ValueError: "), message
    assert re.search(match, message), message


def test_payload_checksum(small_blob):
    data = bytearray(small_blob)
    data[-5] ^= 0x10  # inside the tensor payload (the last region of the blob)
    assert "tensor payload checksum mismatch" in refusal(bytes(data))


def test_missing_device_named(small_blob):
    # Move the bound tensor to Metal, which never exists on this platform.
    at = small_blob.find(_s("float32")) + len(_s("float32"))
    assert struct.unpack_from("<ii", small_blob, at) == (1, 0)
    moved = bytes(reseal(small_blob[:at] + struct.pack("<i", 8) + small_blob[at + 4:]))
    message = refusal(moved)
    assert message.startswith("RuntimeError: "), message
    assert "function 'main' position 1 was bound on device metal:0" in message, message
