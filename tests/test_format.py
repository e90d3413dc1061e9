# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The partial_apply format: layout, and refusal of every kind of malformed input.

Everything that feeds bad bytes to the loader runs in a subprocess, so a crash fails the test.
"""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
import tvm
import tvm_ffi
from blob_writer import _s, blob_with_payload, make_blob, shared_entry, tensor_entry

import tvm_partial
from helpers import SANITIZED, Crash, format_hash, reseal, run_cases, run_json

load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")


# Loads each blob of a family in one fresh interpreter (helpers.run_cases): a blob that crashes
# it is reported for that blob alone, and the rest go on in a new interpreter.
_LOAD_CASE = """
import tvm_ffi, tvm_partial
load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
def run_case(blob_hex):
    try:
        load(bytes.fromhex(blob_hex))
        return None
    except Exception as err:
        return f"{type(err).__name__}: {err}"
"""


def refusals(blobs: dict) -> dict:
    """{name: the error message loading that blob gave, None if it loaded, or a Crash}."""
    return dict(zip(blobs, run_cases(_LOAD_CASE, [blob.hex() for blob in blobs.values()])))


def refused(message) -> str:
    """The message of a refusal: the load must have failed, not crashed, not succeeded."""
    assert not isinstance(message, Crash), str(message)
    assert message is not None, "malformed input was accepted"
    return message


def test_python_writer_matches_cpp_encoder(affine4):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {0: 7, 2: "s", 3: None}, signature=["a", "b", "c", "out"])
    entries = [struct.pack("<qBq", 0, 1, 7), struct.pack("<qB", 2, 4) + _s("s"), struct.pack("<qB", 3, 0)]
    expected = make_blob([("main", ["a", "b", "c", "out"], entries)])
    assert tvm_partial.save_to_bytes(pm) == expected


def test_python_writer_matches_cpp_encoder_for_a_shared_tensor(affine4):
    """One tensor bound at positions 1 and 2: the tensor (kind 5) and a binding of its
    payload (kind 6, payload 0), the payload once: the layout written from its description."""
    exe, _ = affine4
    w = tvm.runtime.tensor(np.arange(4, dtype="float32"))
    pm = tvm_partial.partial(exe, {1: w, 2: w}, signature=["a", "b", "c", "out"])
    names = ["a", "b", "c", "out"]
    meta_len = len(make_blob([("main", names, [tensor_entry(1), shared_entry(2, 0)])])) - 40
    offset = 40 + meta_len + (-(40 + meta_len)) % 64
    entries = [tensor_entry(1, offset=offset, hash_=format_hash(w.numpy().tobytes())), shared_entry(2, 0)]
    blob = make_blob([("main", names, entries)])
    expected = reseal(
        blob[:16]
        + struct.pack("<Q", offset + 16)
        + blob[24:]
        + b"\0" * (offset - len(blob))
        + w.numpy().tobytes()
    )
    assert tvm_partial.save_to_bytes(pm) == expected


def test_payload_is_64_byte_aligned(affine4):
    exe, _ = affine4
    w = np.arange(16, dtype="float32")
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: w, 2: w * 2}))
    info = tvm_ffi.get_global_func("tvm_partial.Describe")(data, "")
    assert info["constant_bytes"] == 128
    offsets = [data.find(w.tobytes()), data.find((w * 2).tobytes())]
    assert offsets[0] > 0 and offsets[1] > offsets[0]
    assert [o % 64 for o in offsets] == [0, 0]


@pytest.mark.parametrize("nbytes", [0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 100, 257])
def test_recorded_hashes_match_independent_hash(nbytes, affine4):
    # The hash is part of the format (cpp/format/hash.h): the one in helpers.py, written from its
    # description, agrees on every payload length (blocks, 8-byte words, single bytes) and on the
    # metadata (the header's hash field).
    exe, _ = affine4
    w = np.frombuffer(np.random.default_rng(nbytes).bytes(nbytes), dtype="uint8").copy()
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: w}))
    info = tvm_ffi.get_global_func("tvm_partial.Describe")(data, "")
    (binding,) = info["functions"][0]["bindings"]
    assert binding["hash"] & (2**64 - 1) == format_hash(w.tobytes())
    (meta_size, meta_hash) = struct.unpack_from("<QQ", data, 24)
    assert meta_hash == format_hash(data[:32] + data[40 : 40 + meta_size])
    assert reseal(data) == data


@pytest.fixture(scope="module")
def small_blob():
    import tvm
    from tvm import te

    x = te.placeholder((4,), "float32", name="x")
    w = te.placeholder((4,), "float32", name="w")
    out = te.compute((4,), lambda i: x[i] * w[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, out]), target="llvm")
    pm = tvm_partial.partial(exe, {1: np.arange(4, dtype="float32"), 3: 5, 4: "k", 5: None, 6: 1.5, 7: True})
    return tvm_partial.save_to_bytes(pm)


@pytest.fixture(scope="module")
def small_shared_blob():
    """One tensor bound at positions 1, 2 and 4, stored once, beside a scalar."""
    from tvm import te

    x = tvm.runtime.tensor(np.arange(4, dtype="float32"))
    a = te.placeholder((4,), "float32", name="a")
    out = te.compute((4,), lambda i: a[i], name="out")
    exe = tvm.compile(te.create_prim_func([a, out]), target="llvm")
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: x, 2: x, 3: 7, 4: x}))
    assert data[8] == 3
    return data


@pytest.mark.parametrize("which", ["small_blob", "small_shared_blob"])
def test_every_prefix_and_every_flipped_byte_refused(which, request):
    """Truncated at each length, or with each byte flipped (two ways): refused, never a crash."""
    small_blob = request.getfixturevalue(which)
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
        """,
        small_blob.hex(),
    )
    assert result["cases"] == 3 * len(small_blob)
    assert result["accepted"] == []
    assert result["wrong_kind"] == []


CRAFTED = [
    ("wrong magic", lambda: b"NOTPARTL" + make_blob([])[8:], r"bad magic"),
    (
        "future version",
        lambda: make_blob([], version=4),
        r"format version 4, newer than this tvm-partial reads \(3\); upgrade",
    ),
    # Development builds wrote versions 1 and 2; one version is read, the others refused.
    (
        "version 1",
        lambda: make_blob([("main", [], [])], version=1),
        r"format version 1, older than this tvm-partial reads \(3\); export the model again",
    ),
    (
        "version 2",
        lambda: make_blob([("main", [], [])], version=2),
        r"format version 2, older than this tvm-partial reads \(3\); export the model again",
    ),
    (
        "shared tensor before any tensor",
        lambda: make_blob([("main", [], [shared_entry(0, 0)])]),
        r"position 0: shares payload 0, but only 0 tensor payloads come before it",
    ),
    (
        "shared tensor past the payloads",
        lambda: blob_with_payload(
            lambda at: [("main", [], [tensor_entry(0, offset=at), shared_entry(1, 1)])], b"\0" * 16
        ),
        r"position 1: shares payload 1, but only 1 tensor payloads come before it",
    ),
    (
        "shared payload number truncated",
        lambda: blob_with_payload(
            lambda at: [("main", [], [tensor_entry(0, offset=at), struct.pack("<qB", 1, 6)])], b"\0" * 16
        ),
        # the two counts after it (outputs, shards: 8 bytes) read as its number, then nothing is left
        r"output count at byte \d+ needs 4 bytes, 0 left",
    ),
    ("version zero", lambda: make_blob([], version=0), r"format version 0, older than"),
    ("unknown flags", lambda: make_blob([], flags=4), r"unknown flags 4"),
    # Flag 1 goes with flag 4 or flag 2 (where the region is), never alone.
    ("external without a place", lambda: make_blob([], flags=1), r"unknown flags 1"),
    # Flag 4 (region appended to the library) goes with flag 1 only, never with flag 2.
    ("appended with a weights file", lambda: make_blob([], flags=7), r"unknown flags 7"),
    ("appended without a region", lambda: make_blob([], flags=6), r"unknown flags 6"),
    ("too short", lambda: b"TVMPARTL\x01", r"truncated: 9 bytes is shorter than the 40-byte header"),
    (
        "truncated",
        lambda: make_blob([("main", [], [tensor_entry(1, offset=128)])], payload=b"\0" * 44)[:-3],
        r"size mismatch: the header says \d+ bytes, got \d+ \(truncated\)",
    ),
    ("bad checksum", lambda: make_blob([])[:-1] + b"\x01", r"metadata checksum mismatch"),
    (
        "function count past the end",
        lambda: make_blob([], count=0xFFFFFFFF),
        r"function count 4294967295 cannot fit",
    ),
    (
        "name length past the end",
        lambda: make_blob([], count=1, meta_extra=struct.pack("<I", 1000) + b"\0" * 8),
        r"function name at byte 48 needs 1000 bytes, 8 left",
    ),
    (
        "binding count past the end",
        lambda: (
            make_blob([("main", [], [])], meta_extra=b"")[:0]
            or make_blob([], count=1, meta_extra=_s("main") + struct.pack("<II", 0, 10**6))
        ),
        r"binding count 1000000 cannot fit",
    ),
    (
        "parameter name count past the end",
        lambda: make_blob([], count=1, meta_extra=_s("main") + struct.pack("<I", 0x7FFFFFFF)),
        r"parameter name count 2147483647 cannot fit",
    ),
    (
        "unknown value kind",
        lambda: make_blob([("main", [], [struct.pack("<qB", 0, 9)])]),
        r"position 0: unknown value kind 9",
    ),
    (
        "bad bool",
        lambda: make_blob([("main", [], [struct.pack("<qBB", 0, 3, 7)])]),
        r"position 0: bool value 7",
    ),
    (
        "negative position",
        lambda: make_blob([("main", [], [struct.pack("<qB", -1, 0)])]),
        r"position -1 is negative or out of order",
    ),
    (
        "duplicate position",
        lambda: make_blob([("main", [], [struct.pack("<qB", 2, 0), struct.pack("<qB", 2, 0)])]),
        r"position 2 is negative or out of order",
    ),
    (
        "position past the parameters",
        lambda: make_blob([("main", ["x"], [struct.pack("<qB", 1, 0)])]),
        r"position 1 is past its 1 parameters",
    ),
    (
        "duplicate function",
        lambda: make_blob([("main", [], []), ("main", [], [])]),
        r"function 'main' appears twice",
    ),
    (
        "unknown dtype",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float33x")])]),
        r"unknown dtype|invalid dtype",
    ),
    (
        "invalid device",
        lambda: make_blob([("main", [], [tensor_entry(0, device=(99, 0))])]),
        r"invalid device device_type 99:0",
    ),
    (
        "ndim too large",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(1,) * 65, nbytes=4)])]),
        r"ndim 65 exceeds 64",
    ),
    (
        "negative dimension",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(-1,), nbytes=0)])]),
        r"negative dimension -1",
    ),
    (
        "shape byte size overflows",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(2**62, 2**62), nbytes=0)])]),
        r"element count overflows|byte size overflows",
    ),
    (
        "shape bits overflow",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(2**62,), nbytes=0)])]),
        r"byte size overflows",
    ),
    (
        "byte length mismatch",
        lambda: make_blob([("main", [], [tensor_entry(0, nbytes=12)])]),
        r"byte length 12 does not match its shape and dtype \(16\)",
    ),
    (
        "payload offset not canonical",
        lambda: make_blob([("main", [], [tensor_entry(0, offset=4096)])]),
        r"payload offset 4096 is not the expected \d+",
    ),
    (
        "payload past the end",
        lambda: make_blob([("main", [], [tensor_entry(0, offset=192)])]),
        r"payload of 16 bytes at offset 192 runs past the end",
    ),
    (
        "trailing metadata",
        lambda: make_blob([], meta_extra=b"\0\0\0"),
        r"3 unread bytes at the end of the metadata",
    ),
    (
        "bytes after the last payload",
        lambda: make_blob([], payload=b"\0" * 5),
        r"5 bytes after the last payload",
    ),
    (
        "metadata size past the end",
        lambda: bytes(make_blob([])[:24]) + struct.pack("<Q", 10**9) + make_blob([])[32:],
        r"metadata of 1000000000 bytes runs past the end",
    ),
]

# What the loader accepted before issue 10 although no call could use it or the writer would not
# write it (accepted blobs must re-save to bytes that load). Also kept as fuzz regression inputs.
_UNREACHABLE = (
    r"cannot be reached: a call passes at most 2147483647 arguments, so positions go up to 2147483646"
)
STRICT = [
    (
        "position INT32_MAX",
        lambda: make_blob([("main", [], [struct.pack("<qB", 2**31 - 1, 0)])]),
        r"position 2147483647 " + _UNREACHABLE,
    ),
    (
        "position 2**31",
        lambda: make_blob([("main", [], [struct.pack("<qB", 2**31, 0)])]),
        r"position 2147483648 " + _UNREACHABLE,
    ),
    (
        "position 2**63-1",
        lambda: make_blob([("main", [], [struct.pack("<qB", 2**63 - 1, 1) + struct.pack("<q", 5)])]),
        r"position 9223372036854775807 " + _UNREACHABLE,
    ),
    (
        "dtype lanes 65535",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float32x65535")])]),
        r"dtype 'float32x65535' is not written as the writer writes it \('float32'\)",
    ),
    (
        "dtype with one lane spelled out",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float32x1")])]),
        r"dtype 'float32x1' is not written as the writer writes it \('float32'\)",
    ),
    (
        "scalable vector dtype",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float32xvscalex4")])]),
        r"dtype with -4 lanes cannot be stored",
    ),
    (
        "handle dtype",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="handle", nbytes=32)])]),
        r"a dtype of type code 3 cannot be stored",
    ),
    (
        "sub-byte dtype TVM does not name",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="int3", nbytes=2)])]),
        r"dtype 'int3' has 3 bits per element; only whole bytes and TVM's sub-byte dtypes",
    ),
    (
        "sub-byte byte length rounded down",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="int4", shape=(5,), nbytes=2)])]),
        r"byte length 2 does not match its shape and dtype \(3\)",
    ),
    (
        "float4 byte length unpacked",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float4_e2m1fn", shape=(4,), nbytes=4)])]),
        r"byte length 4 does not match its shape and dtype \(2\)",
    ),
    (
        "lanes missing from the byte length",
        lambda: make_blob([("main", [], [tensor_entry(0, dtype="float32x4", nbytes=16)])]),
        r"byte length 16 does not match its shape and dtype \(64\)",
    ),
    (
        "shape overflows around a zero",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(2**62, 0, 2**62), nbytes=0)])]),
        r"element count overflows",
    ),
    (
        "empty shape whose bytes overflow",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(0, 2**62), nbytes=0)])]),
        r"byte size overflows",
    ),
    (
        "negative dimension beside a zero",
        lambda: make_blob([("main", [], [tensor_entry(0, shape=(0, -3), nbytes=0)])]),
        r"negative dimension -3",
    ),
    (
        "cpu device id 1",
        lambda: make_blob([("main", [], [tensor_entry(0, device=(1, 1))])]),
        r"invalid device cpu:1",
    ),
    (
        "negative device id",
        lambda: make_blob([("main", [], [tensor_entry(0, device=(2, -1))])]),
        r"invalid device cuda:-1",
    ),
    (
        "absurd device id",
        lambda: make_blob([("main", [], [tensor_entry(0, device=(2, 2**31 - 1))])]),
        r"invalid device cuda:2147483647",
    ),
    (
        "function name not UTF-8",
        lambda: make_blob([(b"ma\xffin", [], [])]),
        r"function name at byte 48 is not valid UTF-8",
    ),
    (
        "parameter name not UTF-8",
        lambda: make_blob([("main", [b"\xc3\x28"], [])]),
        r"parameter name at byte \d+ is not valid UTF-8",
    ),
    (
        "string value not UTF-8",
        lambda: make_blob([("main", [], [struct.pack("<qB", 0, 4) + _s(b"\xe2\x82")])]),
        r"str value at byte \d+ is not valid UTF-8",
    ),
    (
        "overlong UTF-8",
        lambda: make_blob([("main", [], [struct.pack("<qB", 0, 4) + _s(b"\xc0\xaf")])]),
        r"str value at byte \d+ is not valid UTF-8",
    ),
    (
        "UTF-8 surrogate",
        lambda: make_blob([("main", [], [struct.pack("<qB", 0, 4) + _s(b"\xed\xa0\x80")])]),
        r"str value at byte \d+ is not valid UTF-8",
    ),
    (
        "UTF-8 past U+10FFFF",
        lambda: make_blob([("main", [], [struct.pack("<qB", 0, 4) + _s(b"\xf4\x90\x80\x80")])]),
        r"str value at byte \d+ is not valid UTF-8",
    ),
]
CRAFTED += STRICT


def _move_to_metal(blob: bytes) -> bytes:
    """The blob with its bound tensor moved to Metal, which never exists on this platform."""
    at = blob.find(_s("float32")) + len(_s("float32"))
    assert struct.unpack_from("<ii", blob, at) == (1, 0)
    return bytes(reseal(blob[:at] + struct.pack("<i", 8) + blob[at + 4 :]))


def _flip_payload(blob: bytes) -> bytes:
    data = bytearray(blob)
    data[-5] ^= 0x10  # inside the tensor payload (the last region of the blob)
    return bytes(data)


@pytest.fixture(scope="module")
def loaded(small_blob):
    """Every crafted blob of this file, and the small blob's corrupted payload and moved device,
    loaded in one interpreter: {name: refusal message, None or Crash}."""
    blobs = {name: make() for name, make, _ in CRAFTED}
    blobs["payload checksum"] = _flip_payload(small_blob)
    blobs["missing device"] = _move_to_metal(small_blob)
    return refusals(blobs)


@pytest.mark.parametrize("name,match", [(name, m) for name, _, m in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_crafted_corruption_refused(loaded, name, match):
    message = refused(loaded[name])
    assert message.startswith("ValueError: "), message
    assert re.search(match, message), message


def test_a_case_that_crashes_its_interpreter_fails_naming_the_case():
    """The harness of the families above: a case that kills the interpreter is a Crash in its
    own place, and the cases after it still run (in a new interpreter)."""
    results = run_cases(
        """
        import os, signal
        def run_case(case):
            if case == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            return case.upper()
        """,
        ["a", "crash", "b", "crash", "c"],
    )
    assert results[0::2] == ["A", "B", "C"]
    for crash in results[1::2]:
        # Under the sanitizer run ASan's handler reports the fault and aborts (abort_on_error=1),
        # or, where faulthandler's report faults again, exits with 1 ("nested bug").
        want = ("killed by SIGABRT", "exited with 1") if SANITIZED else ("killed by SIGSEGV",)
        assert isinstance(crash, Crash) and crash.how in want, crash
        assert "Segmentation fault" in crash.output  # faulthandler's report


def test_payload_checksum(loaded):
    assert "tensor payload checksum mismatch" in refused(loaded["payload checksum"])


def test_missing_device_named(loaded):
    message = refused(loaded["missing device"])
    assert message.startswith("RuntimeError: "), message
    assert "function 'main' position 1 was bound on device metal:0" in message, message


def _shared_across_functions() -> bytes:
    """Function "a" stores a 3-byte int4 tensor (5 elements, packed); "b" binds it too (kind 6)."""
    payload = bytes([0x12, 0x34, 0x50])
    return blob_with_payload(
        lambda at: [
            ("a", [], [tensor_entry(1, "int4", (5,), 3, at, hash_=format_hash(payload))]),
            ("b", [], [shared_entry(0, 0)]),
        ],
        payload,
    )


FIXED_POINTS = {
    "shared across functions, sub-byte": _shared_across_functions,
    "last reachable position": lambda: make_blob([("main", [], [struct.pack("<qB", 2**31 - 2, 0)])]),
    "unicode names and strings": lambda: make_blob(
        [("f\u00e9", ["\u4e2d", "\U0001f600"], [struct.pack("<qB", 1, 4) + _s("\u00ff\U0010ffff")])]
    ),
    "many functions": lambda: make_blob([(f"f{i}", [], [struct.pack("<qBq", i, 1, i)]) for i in range(300)]),
}


@pytest.mark.parametrize("name", sorted(FIXED_POINTS))
def test_accepted_blobs_resave_identically(name):
    blob = FIXED_POINTS[name]()
    assert tvm_partial.save_to_bytes(load_from_bytes(blob)) == blob


@pytest.mark.parametrize(
    "dtype,shape",
    [
        ("float32x4", (3,)),
        ("bool", (5,)),
        ("float8_e4m3fn", (7,)),
        ("bfloat16", (2, 3)),
        ("int8", (0, 4)),
        ("uint16", (2,)),
        ("int4", (3, 3)),
        ("uint4", (7,)),
        ("int1", (9,)),
        ("int2", (5,)),
        ("float4_e2m1fn", (5,)),
        ("float6_e2m3fn", (5,)),
        ("float6_e3m2fn", (2, 2)),
        ("float8_e5m2", (3,)),
        ("float8_e8m0fnu", (3,)),
    ],
)
def test_tensor_dtypes_round_trip(dtype, shape, affine4):
    """Tensors of every dtype the writer writes keep their bytes, whatever they are: random bytes
    (seeded) are saved as they are, load back as they are, and re-save to the same blob."""
    exe, _ = affine4
    bits_lanes = tvm_ffi.dtype(dtype)
    nbytes = (int(np.prod(shape)) * bits_lanes.bits * bits_lanes.lanes + 7) // 8  # sub-byte: packed
    source = np.random.default_rng(nbytes + len(dtype)).bytes(nbytes)
    raw = tvm.runtime.tensor(np.frombuffer(source, "uint8").copy())
    typed = raw._create_view(shape, dtype)  # the random bytes, seen as the dtype (no conversion)
    assert (typed.dtype, tuple(typed.shape)) == (dtype, shape)
    pm = tvm_partial.partial(exe, {1: typed})
    data = tvm_partial.save_to_bytes(pm)
    info = tvm_ffi.get_global_func("tvm_partial.Describe")(data, "")
    binding = info["functions"][0]["bindings"][0]
    assert (binding["dtype"], tuple(binding["shape"]), binding["bytes"]) == (dtype, shape, nbytes)
    assert binding["hash"] & (2**64 - 1) == format_hash(source)  # the writer stored these bytes
    loaded = load_from_bytes(data)
    held = tvm_partial.bindings(loaded)["main"][1]
    assert (held.dtype, tuple(held.shape)) == (dtype, shape)
    back = held._create_view((nbytes,), "uint8").numpy().tobytes()  # the bytes, not the values
    assert back == source
    assert tvm_partial.save_to_bytes(loaded) == data


def test_writer_refuses_what_the_loader_refuses(affine4):
    """A tensor the format cannot hold is refused at save time, so nothing unloadable is written."""
    exe, _ = affine4
    values = [
        (tvm.runtime.empty((4,), "int3"), "3 bits per element"),
        (tvm.runtime.empty((4,), "handle"), "type code 3"),
        (np.ones(4, "complex64"), "type code 5"),
    ]  # tvm-ffi cannot parse the name it writes
    for value, match in values:
        if isinstance(value, np.ndarray):  # partial() refuses complex at bind time; a C++ caller may not
            pm = tvm_ffi.get_global_func("runtime.PartialApplyModule")(exe.mod, {"main": {1: value}})
        else:
            pm = tvm_partial.partial(exe, {1: value})
        with pytest.raises(ValueError, match=f"cannot save function 'main' position 1: .*{match}"):
            tvm_partial.save_to_bytes(pm)
