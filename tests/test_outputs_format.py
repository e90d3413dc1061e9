# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The outputs of each function in the format (cpp/format/format.h): an output count (0 when the
function has none) and the outputs. Crafted corruption of every field is refused; loading runs in a
subprocess."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
import tvm_ffi
from blob_writer import _s, int_entry, make_blob, output_entry
from tvm import te

import tvm_partial
from helpers import compile_te, ints, run_json, tensor

F32 = "float32"


ABCO = ["a", "b", "c", "out"]


@pytest.fixture(scope="module")
def scale_n():
    """y = 2 * x + c, x: (n, 3), c: (3,), y: (n, 3)."""
    n = te.var("n", "int64")
    x = te.placeholder((n, 3), F32, name="x")
    c = te.placeholder((3,), F32, name="c")
    y = te.compute((n, 3), lambda i, j: x[i, j] * 2.0 + c[j], name="y")
    return compile_te([x, c, y]), [x, c, y]


def test_python_writer_matches_cpp_encoder(affine4, scale_n):
    exe, tensors = affine4
    pm = tvm_partial.partial(exe, signature=tensors, outputs="out")
    assert tvm_partial.save_to_bytes(pm) == make_blob([("main", ABCO, [], [output_entry(3)])])
    exe2, tensors2 = scale_n
    pm2 = tvm_partial.partial(exe2, signature=tensors2, outputs="y")
    expected = make_blob([("main", ["x", "c", "y"], [], [output_entry(2, dims=((0, 0), (-1, 3)))])])
    assert tvm_partial.save_to_bytes(pm2) == expected


def test_without_outputs_the_blob_records_an_output_count_of_0(affine4):
    exe, _tensors = affine4
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: 2}))
    assert struct.unpack_from("<I", data, 8)[0] == 3
    assert data == make_blob([("main", [], [int_entry(1, 2)], [])])


def test_outputs_round_trip_and_call(affine4):
    exe, _ = affine4
    blob = make_blob([("main", ABCO, [], [output_entry(3)])])
    pm = tvm_partial.load_from_bytes(blob, exe)
    assert tvm_partial.save_to_bytes(pm) == blob  # a fixed point
    assert tvm_partial.outputs(pm) == {"main": [{"position": 3, "name": "out", "dtype": F32, "shape": [16]}]}
    a, b, c = ints(16, seed=1), ints(16, seed=2), ints(16, seed=3)
    out = pm(tensor(a), tensor(b), tensor(c))
    assert np.array_equal(out.numpy(), (a * np.float32(2) + b * np.float32(3) + c).astype(F32))


def test_describe_lists_outputs(scale_n):
    exe, tensors = scale_n
    data = tvm_partial.save_to_bytes(tvm_partial.partial(exe, signature=tensors, outputs="y"))
    info = tvm_ffi.get_global_func("tvm_partial.Describe")(data, "")
    assert int(info["version"]) == 3
    (out,) = info["functions"][0]["outputs"]
    assert int(out["position"]) == 2 and str(out["dtype"]) == F32
    assert [list(d) if not isinstance(d, int) else d for d in out["shape"]] == [[0, 0], 3]


def _main(entries=(), outputs=(), names=ABCO):
    return [("main", list(names), list(entries), list(outputs))]


CRAFTED = [
    (
        "output also bound",
        make_blob(_main([int_entry(3)], [output_entry(3)])),
        r"output position 3 is also bound",
    ),
    (
        "output twice",
        make_blob(_main(outputs=[output_entry(3), output_entry(3)])),
        r"output position 3 is given twice",
    ),
    (
        "output past the parameters",
        make_blob(_main(outputs=[output_entry(4)])),
        r"output position 4 is past its 4 parameters",
    ),
    (
        "negative output position",
        make_blob(_main(outputs=[output_entry(-1)])),
        r"output position -1 is out of range",
    ),
    (
        "huge output position",
        make_blob(_main(outputs=[output_entry(2**40)], names=[])),
        r"output position 1099511627776 is out of range",
    ),
    (
        "reference to a bound position",
        make_blob(_main([int_entry(0)], [output_entry(3, dims=((0, 0),))])),
        r"output position 3 dimension 0 refers to axis 0 of position 0, which is bound",
    ),
    (
        "reference to an output",
        make_blob(_main(outputs=[output_entry(3, dims=((2, 0),)), output_entry(2)])),
        r"dimension 0 refers to axis 0 of position 2, which is an output",
    ),
    (
        "reference past the parameters",
        make_blob(_main(outputs=[output_entry(3, dims=((9, 0),))])),
        r"refers to axis 0 of position 9, past the 4 parameters",
    ),
    (
        "axis out of range",
        make_blob(_main(outputs=[output_entry(3, dims=((0, 64),))])),
        r"refers to axis 64 of position 0, which no call can have",
    ),
    (
        "negative axis",
        make_blob(_main(outputs=[output_entry(3, dims=((0, -1),))])),
        r"refers to axis -1 of position 0",
    ),
    (
        "bad source",
        make_blob(_main(outputs=[output_entry(3, dims=((-2, 4),))])),
        r"refers to axis 4 of position -2",
    ),
    (
        "negative extent",
        make_blob(_main(outputs=[output_entry(3, dims=((-1, -5),))])),
        r"dimension 0 has the negative extent -5",
    ),
    (
        "unknown dtype",
        make_blob(_main(outputs=[output_entry(3, dtype="float33x")])),
        r"unknown dtype 'float33x'|invalid dtype",
    ),
    (
        "ndim too large",
        make_blob(_main(outputs=[output_entry(3, dims=((-1, 1),) * 65)])),
        r"ndim 65 exceeds 64",
    ),
    (
        "output count past the end",
        make_blob(_main(outputs=[output_entry(3)]), output_count=10**6),
        r"output count 1000000 cannot fit",
    ),
    (
        "dimension cut short",
        make_blob(_main(outputs=[struct.pack("<q", 3) + _s(F32) + struct.pack("<Iq", 1, -1)])),
        # the value would run over the 4-byte shard count after it, the last bytes of the metadata
        r"output dimension value at byte \d+ needs 8 bytes, 4 left",
    ),
    (
        "outputs past the count",
        make_blob(_main(), meta_extra=output_entry(3)),
        r"unread bytes at the end of the metadata",
    ),
]


def test_crafted_corruption_refused():
    """Every case loads in one fresh process; each must be refused with a ValueError, not crash."""
    result = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
        out = []
        for blob in sys.argv[1:]:
            try:
                load(bytes.fromhex(blob))
                out.append(None)
            except Exception as err:
                out.append(f"{type(err).__name__}: {err}")
        print(json.dumps(out))
        """,
        *(blob.hex() for _, blob, _ in CRAFTED),
    )
    for (name, _, match), message in zip(CRAFTED, result):
        assert message is not None, f"{name}: accepted"
        assert message.startswith("ValueError: corrupted partial_apply data: "), f"{name}: {message}"
        assert re.search(match, message), f"{name}: {message}"


def test_every_prefix_and_flipped_byte_of_a_blob_with_outputs_refused(scale_n):
    exe, tensors = scale_n
    blob = tvm_partial.save_to_bytes(
        tvm_partial.partial(exe, signature=tensors, c=np.ones(3, F32), outputs="y")
    )
    result = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
        blob = bytes.fromhex(sys.argv[1])
        load(blob)
        bad = []
        variants = [blob[:n] for n in range(len(blob))]
        for i in range(len(blob)):
            b = bytearray(blob); b[i] ^= 0x01
            variants.append(bytes(b))
        for data in variants:
            try:
                load(data)
                bad.append("accepted")
            except ValueError as err:
                if "partial_apply data" not in str(err):
                    bad.append(str(err))
            except Exception as err:
                bad.append(type(err).__name__ + ": " + str(err))
        print(json.dumps({"cases": len(variants), "bad": bad}))
        """,
        blob.hex(),
    )
    assert result == {"cases": 2 * len(blob), "bad": []}


def test_loaded_artifact_returns_its_output_from_python(scale_n, tmp_path):
    exe, tensors = scale_n
    c = ints(3, seed=9)
    tvm_partial.export_library(
        tvm_partial.partial(exe, signature=tensors, c=c, outputs="y"), tmp_path / "s.so"
    )
    x = ints((5, 3), seed=10)
    np.save(tmp_path / "x.npy", x)
    result = run_json(
        """
        import json, sys, numpy as np, tvm
        lib = tvm.runtime.load_module(sys.argv[1] + "/s.so")
        y = lib(tvm.runtime.tensor(np.load(sys.argv[1] + "/x.npy")))
        print(json.dumps(y.numpy().tolist()))
        """,
        str(tmp_path),
    )
    assert np.array_equal(np.asarray(result, F32), x * np.float32(2) + c)
