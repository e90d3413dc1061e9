# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights in safetensors files: save_weights, open_weights, load(..., weights_file=) (issue 13)."""

from __future__ import annotations

import json
import os
import re
import struct

import numpy as np
import pytest
import tvm
from hypothesis import event, given, settings
from hypothesis import strategies as st
from tvm import te

import tvm_partial
from helpers import affine4_ref, compile_te, ints, run_cli

safetensors_numpy = pytest.importorskip("safetensors.numpy")

N = 21  # 84 bytes per tensor: the next tensor needs padding to stay 64-byte aligned


@pytest.fixture(scope="module")
def kernel():
    a, b, c = (te.placeholder((N,), "float32", name=n) for n in "abc")
    d = te.compute((N,), lambda i: a[i] * 2 + b[i] * 3 + c[i], name="d")
    return compile_te([a, b, c, d]), [a, b, c, d]


def _run(pm, a):
    out = tvm.runtime.empty((N,), "float32")
    pm(tvm.runtime.tensor(a), out)
    return out.numpy()


def _header(path):
    raw = path.read_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    return raw, json.loads(raw[8 : 8 + n]), 8 + n


def test_save_weights_read_by_safetensors(kernel, tmp_path):
    exe, sig = kernel
    b, c = ints(N, seed=1), ints(N, seed=2)
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c)
    path = tmp_path / "w.safetensors"
    tvm_partial.save_weights(pm, path)
    got = safetensors_numpy.load_file(str(path))
    assert np.array_equal(got["b"], b) and np.array_equal(got["c"], c)
    assert {k for k in got if not k.startswith("__padding__/")} == {"b", "c"}
    _, header, start = _header(path)
    assert start % 64 == 0
    for key in ("b", "c"):
        assert (start + header[key]["data_offsets"][0]) % 64 == 0
    assert json.loads(header["__metadata__"]["tvm_partial.bindings"]) == {
        "b": ["main", 1],
        "c": ["main", 2],
    }


def test_open_weights_binds_without_copying(kernel, tmp_path):
    exe, sig = kernel
    b, c = ints(N, seed=3), ints(N, seed=4)
    path = tmp_path / "w.safetensors"
    tvm_partial.save_weights(tvm_partial.partial(exe, signature=sig, b=b, c=c), path)
    opened = tvm_partial.open_weights(path)
    assert set(opened) == {"b", "c"}
    pm = tvm_partial.partial(exe, signature=sig, **opened)
    held = tvm_partial.bindings(pm)["main"]
    assert held[1].data_ptr() == opened["b"].data_ptr() and held[1].data_ptr() % 64 == 0
    a = ints(N, seed=5)
    assert np.array_equal(_run(pm, a), affine4_ref(a, b, c))


def test_open_weights_of_another_tool_copies_misaligned(kernel, tmp_path):
    """A file written by the safetensors package: keys as given, unaligned data copied once."""
    exe, sig = kernel
    b, c = ints(N, seed=6), ints(N, seed=7)
    path = tmp_path / "other.safetensors"
    safetensors_numpy.save_file({"b": b, "c": c}, str(path))
    opened = tvm_partial.open_weights(path)
    assert all(t.data_ptr() % 64 == 0 for t in opened.values())
    a = ints(N, seed=8)
    assert np.array_equal(_run(tvm_partial.partial(exe, signature=sig, **opened), a), affine4_ref(a, b, c))


@pytest.mark.parametrize("zero_copy", [False, True], ids=["inline", "zero_copy"])
def test_load_with_another_weights_file(kernel, tmp_path, zero_copy):
    """New weights for existing code: save_weights(rebind(...)) then load(..., weights_file=)."""
    exe, sig = kernel
    b, c = ints(N, seed=9), ints(N, seed=10)
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c)
    lib = tmp_path / "model.so"
    tvm_partial.export_library(pm, lib, zero_copy=zero_copy)
    b2, c2 = ints(N, seed=11), ints(N, seed=12)
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b2, c=c2), tmp_path / "v2.safetensors")
    a = ints(N, seed=13)
    assert np.array_equal(_run(tvm_partial.load(lib), a), affine4_ref(a, b, c))
    swapped = tvm_partial.load(lib, weights_file=tmp_path / "v2.safetensors")
    assert np.array_equal(_run(swapped, a), affine4_ref(a, b2, c2))


def _saved(kernel, tmp_path):
    exe, sig = kernel
    pm = tvm_partial.partial(exe, signature=sig, b=ints(N, seed=1), c=ints(N, seed=2))
    path = tmp_path / "w.safetensors"
    tvm_partial.save_weights(pm, path)
    return pm, path


def _rewrite(path, header: dict, data: bytes = b""):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_swap_refuses_another_model(kernel, tmp_path):
    """load(artifact, weights_file=) of another model's weights: refused, naming the tensor."""
    pm, _path = _saved(kernel, tmp_path)
    lib = tmp_path / "model.so"
    tvm_partial.export_library(pm, lib)
    other = tmp_path / "other.safetensors"
    safetensors_numpy.save_file({"main/b": np.zeros(N, "float32")}, str(other))
    with pytest.raises(ValueError, match=r"other.safetensors lacks tensor 'c'"):
        tvm_partial.load(lib, weights_file=other)
    safetensors_numpy.save_file(
        {
            "main/b": np.zeros(N, "float32"),
            "main/c": np.zeros(N, "float32"),
            "main/x": np.zeros(1, "float32"),
        },
        str(other),
    )
    with pytest.raises(ValueError, match=r"tensor 'main/x' is not a tensor the module binds"):
        tvm_partial.load(lib, weights_file=other)
    safetensors_numpy.save_file(
        {"main/b": np.zeros(N, "float64"), "main/c": np.zeros(N, "float32")}, str(other)
    )
    with pytest.raises(ValueError, match=r"tensor 'main/b' is float64\[21\], the module binds float32\[21\]"):
        tvm_partial.load(lib, weights_file=other)
    safetensors_numpy.save_file(
        {"main/b": np.zeros(N + 1, "float32"), "main/c": np.zeros(N, "float32")}, str(other)
    )
    with pytest.raises(ValueError, match=r"tensor 'main/b' is float32\[22\]"):
        tvm_partial.load(lib, weights_file=other)


def test_bad_files_refused(kernel, tmp_path):
    _, path = _saved(kernel, tmp_path)
    raw, header, start = _header(path)
    bad = tmp_path / "bad.safetensors"
    with pytest.raises(FileNotFoundError, match=r"weights file .*missing\.safetensors does not exist"):
        tvm_partial.open_weights(tmp_path / "missing.safetensors")
    bad.write_bytes(raw[: len(raw) - 80])
    with pytest.raises(ValueError, match=r"tensor 'c': its data ends at byte .* the file is truncated"):
        tvm_partial.open_weights(bad)
    bad.write_bytes(raw[: start - 5])
    with pytest.raises(ValueError, match=r"bad.safetensors is truncated: its JSON header needs"):
        tvm_partial.open_weights(bad)
    bad.write_bytes(struct.pack("<Q", 2**62) + b"{}")
    with pytest.raises(ValueError, match=r"its JSON header claims 4611686018427387904 bytes"):
        tvm_partial.open_weights(bad)
    bad.write_bytes(struct.pack("<Q", 5) + b"{nope")
    with pytest.raises(ValueError, match=r"bad.safetensors: malformed JSON header"):
        tvm_partial.open_weights(bad)
    overlapping = dict(header)
    overlapping["c"] = dict(header["c"], data_offsets=[32, 32 + N * 4])
    _rewrite(bad, overlapping, raw[start:])
    with pytest.raises(ValueError, match=r"tensors 'b' and 'c' overlap"):
        tvm_partial.open_weights(bad)
    wrong_size = dict(header)
    wrong_size["b"] = dict(header["b"], shape=[N + 1])
    _rewrite(bad, wrong_size, raw[start:])
    with pytest.raises(ValueError, match=r"tensor 'b': data_offsets span 84 bytes"):
        tvm_partial.open_weights(bad)
    bad_dtype = dict(header)
    bad_dtype["b"] = dict(header["b"], dtype="F99")
    _rewrite(bad, bad_dtype, raw[start:])
    with pytest.raises(ValueError, match=r"tensor 'b': dtype 'F99' is not one tvm-partial reads"):
        tvm_partial.open_weights(bad)
    with pytest.raises(ValueError, match=r"no weights for function 'other' \(functions in the file: main\)"):
        tvm_partial.open_weights(path, function="other")


_ITEMSIZE = {"F32": 4, "F16": 2, "I8": 1, "U8": 1, "I64": 8, "BOOL": 1}


@st.composite
def _headers(draw):
    """A safetensors header drawn field by field (the reader's checks are reached, not stopped at
    the JSON), and what a correct reader makes of it: the tensors, or None for a refusal."""
    count = draw(st.integers(1, 4))
    entries, spans, at, ok = {}, [], 0, True
    for i in range(count):
        dtype = draw(st.sampled_from([*_ITEMSIZE, *_ITEMSIZE, "F99", 7]))
        shape = draw(st.lists(st.integers(0, 5), max_size=3) | st.just([-1]) | st.just([1.5]) | st.just("4"))
        good_shape = isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)
        size = 0
        if good_shape and dtype in _ITEMSIZE:
            size = _ITEMSIZE[dtype] * int(np.prod(shape, dtype=np.int64)) if shape else _ITEMSIZE[dtype]
        shift = draw(st.sampled_from([0] * 6 + [1, -1, 64]))  # offsets consistent, or not
        begin = max(at + draw(st.sampled_from([0] * 4 + [-8, 8])), 0)  # contiguous, overlapping, a hole
        offsets = [begin, begin + size + (shift if draw(st.booleans()) else 0)]
        entries[f"main/t{i}"] = {"dtype": dtype, "shape": shape, "data_offsets": offsets}
        ok &= dtype in _ITEMSIZE and good_shape and 0 <= offsets[0] <= offsets[1]
        ok &= offsets[1] - offsets[0] == size
        if offsets[1] > offsets[0]:
            spans.append((offsets[0], offsets[1]))
        at = max(at, offsets[1])
    data_size = max(at + draw(st.sampled_from([0, 0, 0, 16, -1])), 0)  # exact, longer, cut short
    ok &= all(end <= data_size for _, end in spans)
    spans.sort()
    ok &= all(b0 >= e0 for (_, e0), (b0, _) in zip(spans, spans[1:]))
    # No holes (the format's rule): the tensors cover the data from 0 to its end, one after another.
    starts = [b for b, _ in spans]
    ok &= (
        starts == [0, *(e for _, e in spans[:-1])][: len(starts)]
        and (spans[-1][1] if spans else 0) == data_size
    )
    return entries, data_size, ok


@settings(max_examples=int(os.environ.get("TVM_PARTIAL_HYPOTHESIS_EXAMPLES", "200")), deadline=None)
@given(drawn=_headers(), seed=st.integers(0, 2**32 - 1))
def test_header_reader_against_a_model(tmp_path_factory, drawn, seed):
    """open_weights on headers drawn field by field: it reads exactly the tensors a model of the
    format predicts (values bitwise), or refuses with a ValueError naming the file when the model
    says the header is wrong; never another exception."""
    entries, data_size, ok = drawn
    folder = tmp_path_factory.mktemp("model", numbered=True)
    path = folder / "f.safetensors"
    data = np.random.default_rng(seed).integers(0, 256, size=data_size, dtype="uint8").tobytes()
    _rewrite(path, entries, data)
    event("refused" if not ok else "accepted")
    if not ok:
        with pytest.raises(ValueError, match=re.escape(str(path))):
            tvm_partial.open_weights(path)
        return
    got = tvm_partial.open_weights(path)
    assert sorted(got) == sorted(k.split("/")[1] for k in entries)
    text = json.dumps(entries).encode()
    start = 8 + len(text)
    for key, entry in entries.items():
        begin, end = entry["data_offsets"]
        tensor = got[key.split("/")[1]]
        assert list(tensor.shape) == entry["shape"]
        host = np.ascontiguousarray(np.from_dlpack(tensor)).reshape(-1)
        assert host.tobytes() == path.read_bytes()[start + begin : start + end]


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300), cut=st.integers(0, 400))
def test_header_reader_on_raw_bytes(tmp_path_factory, data, cut):
    """Random and cut-short files: a ValueError, never another exception or a crash; the intact
    file reads (a reader that refused everything would fail here)."""
    folder = tmp_path_factory.mktemp("fuzz", numbered=True)
    header = json.dumps({"main/b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    valid = struct.pack("<Q", len(header)) + header + bytes(range(16))
    path = folder / "f.safetensors"
    path.write_bytes(valid)
    assert bytes(np.from_dlpack(tvm_partial.open_weights(path)["b"]).view("uint8")) == bytes(range(16))
    for blob in (data, valid[:cut], struct.pack("<Q", len(data)) + data, valid[:8] + data):
        if blob == valid:
            continue
        path.write_bytes(blob)
        with pytest.raises(ValueError):
            tvm_partial.open_weights(path)


def test_verify_and_inspect_weights_file(kernel, tmp_path):
    """verify checks each payload against the hash save_weights recorded; a byte changed in place
    is caught and named; the command line reports it with exit 1."""

    _, path = _saved(kernel, tmp_path)
    report = tvm_partial.verify(path)
    assert report["intact"] and report["checked"] == 2 and report["bytes"] == 2 * N * 4
    info = tvm_partial.inspect(path)
    assert info["payloads"] == "weights file" and info["constant_bytes"] == 2 * N * 4
    keys = {b["key"]: b for fn in info["functions"] for b in fn["bindings"]}
    assert set(keys) == {"b", "c"} and all(b["aligned"] for b in keys.values())
    assert keys["c"]["position"] == 2 and keys["c"]["dtype"] == "float32" and keys["c"]["shape"] == [N]
    raw = bytearray(path.read_bytes())
    raw[keys["c"]["offset"] + 5] ^= 1
    path.write_bytes(bytes(raw))
    report = tvm_partial.verify(path)
    assert not report["intact"] and [p["key"] for p in report["damaged"]] == ["c"]
    proc = run_cli("verify", str(path))
    assert proc.returncode == 1 and "DAMAGED: function 'main' position 2 (c)" in proc.stdout
    other = tmp_path / "plain.safetensors"
    safetensors_numpy.save_file({"w": np.zeros(3, "float32")}, str(other))
    with pytest.raises(ValueError, match=r"plain.safetensors records no payload hashes"):
        tvm_partial.verify(other)


def test_save_weights_of_a_partial_function(kernel, tmp_path):
    exe, sig = kernel
    b = ints(N, seed=14)
    g = tvm_partial.partial(exe["main"], {1: b}, signature=sig)
    tvm_partial.save_weights(g, tmp_path / "g.safetensors")
    assert np.array_equal(safetensors_numpy.load_file(str(tmp_path / "g.safetensors"))["b"], b)


def test_dtypes_round_trip_byte_identical(tmp_path):
    """bfloat16 (ml_dtypes), bool, int8 and an empty tensor: save, open, bind, save again: the same
    bytes (a fixed point), and the safetensors package reads the plain dtypes back."""
    import ml_dtypes
    import tvm_ffi

    values = {
        0: np.arange(-3, 4, dtype="float32").astype(ml_dtypes.bfloat16),
        1: np.array([True, False, True]),
        2: np.arange(-5, 5, dtype="int8"),
        3: np.zeros((0, 3), "float32"),
    }
    f = tvm_ffi.convert(lambda *args: 0)
    first, second = tmp_path / "first.safetensors", tmp_path / "second.safetensors"
    tvm_partial.save_weights(tvm_partial.partial(f, values), first)
    opened = tvm_partial.open_weights(first)
    assert sorted(opened) == [0, 1, 2, 3] and str(opened[0].dtype) == "bfloat16"
    tvm_partial.save_weights(tvm_partial.partial(f, opened), second)
    assert first.read_bytes() == second.read_bytes()
    back = safetensors_numpy.load_file(str(first))
    assert np.array_equal(back["main/1"], values[1]) and np.array_equal(back["main/2"], values[2])
    assert back["main/3"].shape == (0, 3)
    raw, header, start = _header(first)
    begin, end = header["main/0"]["data_offsets"]
    assert (
        header["main/0"]["dtype"] == "BF16"
        and raw[start + begin : start + end] == values[0].view("uint16").tobytes()
    )


# -- export_library(pm, path, weights_file=...): the payloads in a safetensors file beside the code

_LOAD_EXTERNAL = """
import json, sys
import numpy as np, tvm, tvm_partial
lib = tvm_partial.load(sys.argv[1], **({"weights_file": sys.argv[3]} if len(sys.argv) > 3 else {}))
out = tvm.runtime.empty((21,), "float32")
lib(tvm.runtime.tensor(np.array(json.loads(sys.argv[2]), "float32")), out)
held = tvm_partial.bindings(lib)["main"]
maps = open("/proc/self/maps").read()
print(json.dumps({"out": out.numpy().tolist(), "aligned": all(held[i].data_ptr() % 64 == 0 for i in held),
                  "mapped": sys.argv[1].replace(".so", ".safetensors") in maps}))
"""


@pytest.fixture()
def external(kernel, tmp_path):
    exe, sig = kernel
    b, c = ints(N, seed=21), ints(N, seed=22)
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c)
    lib, weights = tmp_path / "model.so", tmp_path / "model.safetensors"
    tvm_partial.export_library(pm, lib, weights_file=weights)
    return pm, lib, weights, b, c


def test_export_with_weights_file(external, tmp_path):
    from helpers import run_json

    _pm, lib, weights, b, c = external
    got = safetensors_numpy.load_file(str(weights))
    assert np.array_equal(got["b"], b) and np.array_equal(got["c"], c)
    assert lib.stat().st_size < 64 * 1024  # the code and metadata; the weights are in the file
    info = tvm_partial.inspect(lib)
    assert info["weights_file"] == "model.safetensors"
    assert info["region"]["weights_file"] == {"name": "model.safetensors", "path": str(weights.resolve())}
    report = tvm_partial.verify(lib)
    assert report["intact"] and report["checked"] == 2
    assert {p["placement"] for p in report["payloads"]} == {"weights file"}
    assert tvm_partial.verify(weights)["intact"]
    shown = run_cli("inspect", str(lib))
    assert (
        shown.returncode == 0
        and f"weights file model.safetensors ({weights}): present, matches this artifact" in shown.stdout
    ), shown.stdout + shown.stderr
    a = ints(N, seed=23)
    # Loaded in a fresh process: the file beside the library is mapped, the tensors are views of it.
    result = run_json(_LOAD_EXTERNAL, str(lib), json.dumps(a.tolist()))
    assert result["aligned"] and result["mapped"]
    assert np.array_equal(np.array(result["out"], "float32"), affine4_ref(a, b, c))
    # The library and its weights file move together (the name is relative to the library).
    moved = tmp_path / "moved"
    moved.mkdir()
    lib.rename(moved / "model.so")
    weights.rename(moved / "model.safetensors")
    result = run_json(_LOAD_EXTERNAL, str(moved / "model.so"), json.dumps(a.tolist()))
    assert np.array_equal(np.array(result["out"], "float32"), affine4_ref(a, b, c))


def test_external_weights_swapped(external, tmp_path):
    from helpers import run_json

    pm, lib, _weights, _b, _c = external
    b2, c2 = ints(N, seed=24), ints(N, seed=25)
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b2, c=c2), tmp_path / "v2.safetensors")
    a = ints(N, seed=26)
    result = run_json(_LOAD_EXTERNAL, str(lib), json.dumps(a.tolist()), str(tmp_path / "v2.safetensors"))
    assert np.array_equal(np.array(result["out"], "float32"), affine4_ref(a, b2, c2))


def test_external_weights_swapped_without_the_recorded_file(external, tmp_path):
    """load(path, weights_file=other) never opens the weights file the artifact records: with that
    file deleted it binds other's tensors (fresh process); without weights_file= the missing file
    is a FileNotFoundError naming it."""
    from helpers import run_json, run_python

    pm, lib, weights, _b, _c = external
    b2, c2 = ints(N, seed=27), ints(N, seed=28)
    other = tmp_path / "b.safetensors"
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b2, c=c2), other)
    weights.unlink()
    a = ints(N, seed=29)
    result = run_json(_LOAD_EXTERNAL, str(lib), json.dumps(a.tolist()), str(other))
    assert np.array_equal(np.array(result["out"], "float32"), affine4_ref(a, b2, c2))
    assert result["aligned"] and not result["mapped"]  # views of b.safetensors; model.safetensors unmapped
    code = "import sys, tvm_partial\ntry:\n    tvm_partial.load(sys.argv[1])\nexcept FileNotFoundError as e:\n    print('FNF', e)"
    proc = run_python(code, str(lib))
    assert proc.returncode == 0 and f"FNF the weights file {weights} of this artifact does not exist" in (
        proc.stdout
    ), proc.stdout + proc.stderr[-2000:]
    # weights_file= that does not exist: named, the recorded one not mentioned.
    with pytest.raises(FileNotFoundError, match=r"weights file .*none\.safetensors does not exist"):
        tvm_partial.load(lib, weights_file=tmp_path / "none.safetensors")


def test_self_contained_swapped_without_the_recorded_file(kernel, tmp_path):
    """The same for a self-contained artifact: with tvm_partial loaded its loader serves the
    artifact (the embedded copy yields), so weights_file= reaches it too (fresh process)."""
    from helpers import run_json

    exe, sig = kernel
    pm = tvm_partial.partial(exe, signature=sig, b=ints(N, seed=34), c=ints(N, seed=35))
    lib, weights = tmp_path / "sc.so", tmp_path / "sc.safetensors"
    tvm_partial.export_library(pm, lib, self_contained=True, weights_file=weights)
    b2, c2 = ints(N, seed=36), ints(N, seed=37)
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b2, c=c2), tmp_path / "v2.safetensors")
    weights.unlink()
    a = ints(N, seed=38)
    result = run_json(_LOAD_EXTERNAL, str(lib), json.dumps(a.tolist()), str(tmp_path / "v2.safetensors"))
    assert np.array_equal(np.array(result["out"], "float32"), affine4_ref(a, b2, c2))


def test_load_with_weights_file_checks_in_cpp(kernel, tmp_path):
    """load(..., weights_file=) matches the file in C++ (tvm_partial::LoadWithWeights): the same
    refusals as swap_weights, naming the file and the tensor; an artifact without bindings too."""
    exe, sig = kernel
    pm = tvm_partial.partial(exe, signature=sig, b=ints(N, seed=1), c=ints(N, seed=2))
    lib = tmp_path / "m.so"
    tvm_partial.export_library(pm, lib)
    other = tmp_path / "other.safetensors"
    safetensors_numpy.save_file({"main/b": np.zeros(N, "float32")}, str(other))
    with pytest.raises(ValueError, match=r"other.safetensors lacks tensor 'c' that the module binds"):
        tvm_partial.load(lib, weights_file=other)
    extra = {
        "main/b": np.zeros(N, "float32"),
        "main/c": np.zeros(N, "float32"),
        "main/x": np.zeros(1, "float32"),
    }
    safetensors_numpy.save_file(extra, str(other))
    with pytest.raises(
        ValueError, match=r"tensor 'main/x' is not a tensor the module binds \(it binds b, c\)"
    ):
        tvm_partial.load(lib, weights_file=other)
    safetensors_numpy.save_file(
        {"main/b": np.zeros(N, "float64"), "main/c": np.zeros(N, "float32")}, str(other)
    )
    with pytest.raises(
        ValueError, match=r"tensor 'main/b' is float64\[21\], the module binds float32\[21\] there"
    ):
        tvm_partial.load(lib, weights_file=other)
    # Another tool's file (not 64-byte aligned): copied once into aligned memory, results exact.
    b3, c3 = ints(N, seed=3), ints(N, seed=4)
    safetensors_numpy.save_file({"main/b": b3, "main/c": c3}, str(other))
    a = ints(N, seed=5)
    swapped = tvm_partial.load(lib, weights_file=other)
    held = tvm_partial.bindings(swapped)["main"]
    assert all(held[i].data_ptr() % 64 == 0 for i in held)
    assert np.array_equal(_run(swapped, a), affine4_ref(a, b3, c3))
    # A damaged header: ValueError naming the file and the tensor, from the C++ reader.
    raw, header, start = _header(other)
    header["main/c"]["data_offsets"] = [0, 84]
    _rewrite(other, header, raw[start:])
    with pytest.raises(ValueError, match=r"tensors 'main/b' and 'main/c' overlap in the file"):
        tvm_partial.load(lib, weights_file=other)
    header["main/c"]["data_offsets"] = [84, 167]
    _rewrite(other, header, raw[start:])
    with pytest.raises(
        ValueError,
        match=r"tensor 'main/c': data_offsets span 83 bytes, its dtype F32 and shape \[21\] need 84",
    ):
        tvm_partial.load(lib, weights_file=other)
    plain = tmp_path / "plain.so"
    exe.export_library(str(plain))
    with pytest.raises(ValueError, match=r"holds no partial module"):
        tvm_partial.load(plain, weights_file=other)


def test_load_with_weights_file_reader_fuzz(kernel, tmp_path):
    """The C++ reader of load(..., weights_file=) on damaged files (header bytes flipped, its
    length changed, the file cut): a ValueError each time, or a load whose results are those of
    the tensors weights.py's reader finds in the same bytes; never a crash (one fresh process)."""
    from helpers import run_json

    exe, sig = kernel
    b, c = ints(N, seed=31), ints(N, seed=32)
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c)
    lib, weights = tmp_path / "m.so", tmp_path / "w.safetensors"
    tvm_partial.export_library(pm, lib)
    tvm_partial.save_weights(pm, weights)
    a = ints(N, seed=33)
    result = run_json(
        """
        import json, os, random, struct, sys
        import numpy as np, safetensors.numpy, tvm, tvm_partial
        lib, weights, a = sys.argv[1], sys.argv[2], np.array(json.loads(sys.argv[3]), "float32")
        good = open(weights, "rb").read()
        n, = struct.unpack_from("<Q", good)
        rng = random.Random(4321)
        kinds = {}
        for i in range(400):
            data = bytearray(good)
            how = i % 4
            if how == 3:  # harmless: the header's trailing padding, other JSON whitespace
                data[8 + n - 1 - rng.randrange(4)] = rng.choice(b"\\t\\n\\r ")
            elif how == 0:
                for _ in range(rng.randint(1, 4)):
                    data[rng.randrange(8, 8 + n)] = rng.randrange(256)
            elif how == 1:
                data[:8] = struct.pack("<Q", rng.choice([0, 1, n - 1, n + 1, n + 64, 2**40, 2**64 - 1, rng.randrange(2**32)]))
            else:
                del data[rng.randrange(0, len(data)):]
            tmp = weights + ".new"
            with open(tmp, "wb") as f:
                f.write(bytes(data))
            os.replace(tmp, weights)
            try:
                pm = tvm_partial.load(lib, weights_file=weights)
            except Exception as err:
                kinds[type(err).__name__] = kinds.get(type(err).__name__, 0) + 1
                continue
            out = tvm.runtime.empty((21,), "float32")
            pm(tvm.runtime.tensor(a), out)
            # The safetensors package (an independent reader) must find the same tensors in the
            # same bytes: the loaded module computes with exactly them.
            try:
                t = safetensors.numpy.load(bytes(data))
            except Exception as err:
                kinds["loaded, safetensors refuses: " + type(err).__name__] = 1
                continue
            want = a * 2 + t["b"] * 3 + t["c"]
            agree = out.numpy().tobytes() == want.astype("float32").tobytes()
            kinds["agree" if agree else "disagree"] = kinds.get("agree" if agree else "disagree", 0) + 1
        print(json.dumps({"kinds": kinds}))
        """,
        str(lib),
        str(weights),
        json.dumps(a.tolist()),
    )
    assert set(result["kinds"]) <= {"ValueError", "agree"}, result["kinds"]
    # Both happen: refusals, and harmless damage (a recorded hash changed, say) that loads and
    # computes with the file's tensors; a reader that refused everything would fail here.
    assert result["kinds"].get("ValueError", 0) > 100 and result["kinds"].get("agree", 0) > 0, result


def test_external_weights_bad_files(external, kernel, tmp_path):
    from helpers import run_python

    pm, lib, weights, _b, _c = external
    code = "import sys, tvm_partial\ntvm_partial.load(sys.argv[1])"
    good = weights.read_bytes()
    weights.write_bytes(good[:-30])  # cut short
    proc = run_python(code, str(lib))
    assert proc.returncode == 1 and "ValueError: weights file" in proc.stderr and "truncated" in proc.stderr
    with pytest.raises(ValueError, match="the file is truncated"):
        tvm_partial.verify(lib)
    weights.unlink()  # missing
    proc = run_python(code, str(lib))
    assert (
        proc.returncode == 1
        and f"FileNotFoundError: the weights file {weights} of this artifact does not exist" in proc.stderr
    ), proc.stderr[-2000:]
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors of this artifact does not exist"):
        tvm_partial.verify(lib)
    # The weights file of another export (same names, dtypes and shapes): refused, not silently used.
    _exe, _sig = kernel
    tvm_partial.export_library(pm, tmp_path / "other.so", weights_file=weights)
    proc = run_python(code, str(lib))
    assert proc.returncode == 1 and "was not written with this artifact" in proc.stderr
    # Changed in place: verify names the tensor.
    tvm_partial.export_library(pm, lib, weights_file=weights)
    raw = bytearray(weights.read_bytes())
    at = next(p["file_offset"] for p in tvm_partial.verify(lib)["payloads"] if p["position"] == 2)
    raw[at] ^= 0x40
    weights.write_bytes(bytes(raw))
    report = tvm_partial.verify(lib)
    assert [(p["function"], p["position"]) for p in report["damaged"]] == [("main", 2)]


def test_external_weights_header_checked_in_cpp(external):
    """The loader (C++) parses the weights file's JSON header with tvm-ffi's reader: a malformed
    header, or one whose offsets disagree with the metadata, is refused naming the file."""
    from helpers import run_python

    _pm, lib, weights, _b, _c = external
    code = "import sys, tvm_partial\ntvm_partial.load(sys.argv[1])"
    good = weights.read_bytes()
    (n,) = struct.unpack_from("<Q", good)
    header = good[8 : 8 + n]
    assert b'"data_offsets":[64,148]' in header
    weights.write_bytes(
        good[:8] + header.replace(b'"data_offsets":[64,148]', b'"data_offsets":[64,147]') + good[8 + n :]
    )
    proc = run_python(code, str(lib))
    assert (
        proc.returncode == 1
        and "data_offsets span 83 bytes, its dtype F32 and shape [21] need 84" in proc.stderr
    )
    # The keys swapped (each still a consistent entry): the tensor under b is not where the
    # metadata puts it.
    swapped = header.replace(b'"b":', b'"X":').replace(b'"c":', b'"b":').replace(b'"X":', b'"c":')
    assert swapped != header
    weights.write_bytes(good[:8] + swapped + good[8 + n :])
    proc = run_python(code, str(lib))
    assert (
        proc.returncode == 1
        and "has no tensor 'b' at data offsets [64, 148] (with its dtype and shape), where the "
        "metadata puts function 'main' position 1"
        in proc.stderr
    ), proc.stderr[-2000:]
    weights.write_bytes(good[:8] + b"[" + header[1:] + good[8 + n :])
    proc = run_python(code, str(lib))
    assert proc.returncode == 1 and "malformed JSON header" in proc.stderr, proc.stderr[-2000:]
    weights.write_bytes(good)
    proc = run_python(code + "\nprint('loaded')", str(lib))
    assert proc.returncode == 0 and "loaded" in proc.stdout


def test_external_weights_loader_fuzz(external):
    """The C++ loader on damaged weights files (bytes of the header flipped, its length changed,
    the file cut): a ValueError each time, never a crash (one fresh process); what loads despite
    the damage computes with the export's own weights."""
    from helpers import run_json

    _pm, lib, weights, b, c = external
    a = ints(N, seed=41)
    want = affine4_ref(a, b, c)
    result = run_json(
        """
        import json, os, random, struct, sys
        import numpy as np, tvm, tvm_partial
        lib, weights = sys.argv[1], sys.argv[2]
        a, want = (np.array(json.loads(v), "float32") for v in sys.argv[3:5])
        good = open(weights, "rb").read()
        n, = struct.unpack_from("<Q", good)
        rng = random.Random(1234)
        kinds = {}
        for i in range(400):
            data = bytearray(good)
            how = i % 4
            if how == 3:  # harmless: the header's trailing padding, other JSON whitespace
                data[8 + n - 1 - rng.randrange(4)] = rng.choice(b"\\t\\n\\r ")
            elif how == 0:
                for _ in range(rng.randint(1, 4)):
                    data[rng.randrange(8, 8 + n)] = rng.randrange(256)
            elif how == 1:
                data[:8] = struct.pack("<Q", rng.choice([0, 1, n - 1, n + 1, n + 64, 2**40, 2**64 - 1, rng.randrange(2**32)]))
            else:
                del data[rng.randrange(0, len(data)):]
            tmp = weights + ".new"
            with open(tmp, "wb") as f:
                f.write(bytes(data))
            os.replace(tmp, weights)      # a new file: mappings of earlier loads keep theirs
            try:
                pm = tvm_partial.load(lib)
            except Exception as err:
                kinds[type(err).__name__] = kinds.get(type(err).__name__, 0) + 1
                continue
            # Only the header was damaged: what loads computes with the export's own weights.
            out = tvm.runtime.empty((21,), "float32")
            pm(tvm.runtime.tensor(a), out)
            same = out.numpy().tobytes() == want.tobytes()
            kinds["loaded, right" if same else "loaded, WRONG"] = kinds.get("loaded, right" if same else "loaded, WRONG", 0) + 1
        print(json.dumps(kinds))
        """,
        str(lib),
        str(weights),
        json.dumps(a.tolist()),
        json.dumps(want.tolist()),
    )
    assert set(result) <= {"ValueError", "FileNotFoundError", "loaded, right"}, result
    assert result.get("ValueError", 0) > 100 and result.get("loaded, right", 0) > 0, result


def test_export_with_weights_file_refusals(external, tmp_path):
    pm, lib, _weights, b, _c = external
    with pytest.raises(ValueError, match=r"zero_copy=False .* contradicts it"):
        tvm_partial.export_library(
            pm, tmp_path / "x.so", weights_file=tmp_path / "x.safetensors", zero_copy=False
        )
    loaded = tvm_partial.load(lib)
    with pytest.raises(ValueError, match=r"keeps its weights in the file model\.safetensors; .*save_weights"):
        tvm_partial.export_library(tvm_partial.rebind(loaded, b=b), tmp_path / "y.so")
    assert not (tmp_path / "x.so").exists() and not (tmp_path / "y.so").exists()


def test_weights_file_paths_that_would_break_the_artifact_refused(external, tmp_path):
    """A weights file on the library's own path would be overwritten by the library: an artifact
    that cannot load. Refused before anything is written, as are a folder and a missing folder."""
    pm = external[0]
    with pytest.raises(ValueError, match=r"is the library's own path"):
        tvm_partial.export_library(pm, tmp_path / "same.so", weights_file=tmp_path / "same.so")
    with pytest.raises(ValueError, match=r"is a folder"):
        tvm_partial.export_library(pm, tmp_path / "dir.so", weights_file=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"the folder of weights_file=.* does not exist"):
        tvm_partial.export_library(pm, tmp_path / "far.so", weights_file=tmp_path / "no" / "w.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors", "model.so"]  # nothing left


def test_metadata_nested_past_the_bound_is_a_value_error(kernel, tmp_path):
    """A tvm_partial metadata record that is a deeply nested JSON string: inspect and verify raise
    ValueError naming the file (never RecursionError), as the loader's reader does."""
    _, path = _saved(kernel, tmp_path)
    raw, header, start = _header(path)
    header["__metadata__"]["tvm_partial.hashes"] = "[" * 200_000 + "]" * 200_000
    _rewrite(path, header, raw[start:])
    for check in (tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(ValueError, match=rf"{path}: tvm_partial.hashes record nests deeper than"):
            check(path)
    proc = run_cli("verify", str(path))
    assert proc.returncode == 2 and str(path) in proc.stderr and "nests deeper" in proc.stderr


def test_header_nested_past_the_bound_never_reaches_the_parser(kernel, tmp_path):
    """Arrays nested 200,000 deep (400 KB) in the header itself: refused before tvm-ffi's recursive
    JSON parser runs, by every reader (open_weights, load(weights_file=), an artifact's own weights
    file), in a fresh process (a crash would be the parser's stack overflowing)."""
    from helpers import run_python

    exe, sig = kernel
    pm = tvm_partial.partial(exe, signature=sig, b=ints(N, seed=1), c=ints(N, seed=2))
    lib = tmp_path / "model.so"
    tvm_partial.export_library(pm, lib, weights_file=tmp_path / "model.safetensors")
    deep = b'{"x":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    crafted = tmp_path / "deep.safetensors"
    crafted.write_bytes(struct.pack("<Q", len(deep)) + deep)
    (tmp_path / "model.safetensors").write_bytes(crafted.read_bytes())
    code = """
import sys, tvm_partial
lib, crafted = sys.argv[1], sys.argv[2]
for name, call in [("open", lambda: tvm_partial.open_weights(crafted)),
                   ("swap", lambda: tvm_partial.load(lib, weights_file=crafted)),
                   ("own", lambda: tvm_partial.load(lib))]:
    try:
        call()
        print(name, "accepted")
    except ValueError as err:
        print(name, "nests deeper than" in str(err))
"""
    proc = run_python(code, str(lib), str(crafted))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["open", "True", "swap", "True", "own", "True"], proc.stdout


def test_open_weights_refuses_two_keys_for_one_parameter(tmp_path):
    """main/weights and weights both name parameter 'weights'; main/1 and main/01 position 1:
    refused naming both keys, never one silently dropped. A key main/² is a name, not a number."""
    t = np.arange(4, dtype="float32")
    for keys, named in [
        (("main/weights", "weights"), "parameter 'weights'"),
        (("main/01", "main/1"), "position 1"),
    ]:
        path = tmp_path / f"{named.split()[0]}.safetensors"
        safetensors_numpy.save_file({k: t for k in keys}, str(path))
        with pytest.raises(ValueError, match=rf"tensors '{keys[0]}' and '{keys[1]}' both name {named}"):
            tvm_partial.open_weights(path)
    odd = tmp_path / "odd.safetensors"
    safetensors_numpy.save_file({"main/²": t}, str(odd))
    assert list(tvm_partial.open_weights(odd)) == ["²"]


def test_a_key_past_int64_is_a_position_no_call_reaches(tmp_path):
    """A key's digits past 2**63 - 1 are refused as the position they name, never wrapped: main/
    9223372036854775808 opened as position -9223372036854775808."""
    t = np.arange(4, dtype="float32")
    for digits in ("2147483647", "9223372036854775807", "9223372036854775808", "9999999999999999999",
                   "18446744073709551616", "1" * 40):  # fmt: skip
        path = tmp_path / "w.safetensors"
        safetensors_numpy.save_file({f"main/{digits}": t}, str(path))
        with pytest.raises(ValueError, match=rf"names position {digits}, which no call can reach"):
            tvm_partial.open_weights(path)


def test_a_full_disk_names_the_system_s_error(kernel, tmp_path):
    """A weights-file export that cannot be written (here: the file-size limit, EFBIG) fails with
    the system's error text, and leaves nothing behind; in a fresh process (SIGXFSZ ignored)."""
    from helpers import run_python

    code = """
import os, resource, signal, sys
import numpy as np, tvm_partial
from helpers import compile_te
from tvm import te
a, b = (te.placeholder((1 << 20,), "float32", name=n) for n in "ab")
exe = compile_te([a, b, te.compute(a.shape, lambda i: a[i] + b[i], name="c")])
pm = tvm_partial.partial(exe, {1: np.ones(1 << 20, "float32")})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
try:
    tvm_partial.export_library(pm, sys.argv[1] + "/m.so", weights_file=sys.argv[1] + "/m.safetensors")
    print("written")
except RuntimeError as err:
    print("File too large" in str(err), "m.safetensors" in str(err) or ".tmp" in str(err))
print(sorted(os.listdir(sys.argv[1])))
"""
    proc = run_python(code, str(tmp_path), env={"PYTHONPATH": os.path.dirname(__file__)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "True True", proc.stdout
    assert lines[1] == "[]", proc.stdout


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
def test_on_the_device_a_weights_file_and_another_swapped_in_load_there(dev, affine_dev, tmp_path):
    """export_library(weights_file=) of device-bound weights, then load(path, weights_file=other)
    with another set saved by save_weights: each load's tensors are on the device and compute with
    their own weights."""
    exe, sig = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    b2, c2 = ints(256, seed=3), ints(256, seed=4)
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c, device=dev.name)
    tvm_partial.export_library(pm, tmp_path / "m.so", weights_file=tmp_path / "w.safetensors")
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b2, c=c2), tmp_path / "v2.safetensors")
    assert tvm_partial.verify(tmp_path / "m.so")["intact"]
    for weights, (wb, wc) in ((None, (b, c)), (tmp_path / "v2.safetensors", (b2, c2))):
        loaded = tvm_partial.load(tmp_path / "m.so", **({"weights_file": weights} if weights else {}))
        assert {str(t.device) for t in tvm_partial.bindings(loaded)["main"].values()} == {dev.name}
        out = dev.tensor(np.zeros(256, "float32"))
        loaded(dev.tensor(a), out)
        assert out.numpy().tobytes() == affine4_ref(a, wb, wc).tobytes()
