# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights files as other tools write them (issue 41): ONNX models with their initializers inside
the file (``onnx.save_model``'s default, ``torch.onnx.export``'s), in external data or both; a
sharded checkpoint in the Hugging Face cache layout (``snapshots/REV/NAME`` symlinks to
``blobs/SHA256``); and what is not a safetensors file, refused saying what it is and what is read.
onnx is optional: its tests skip where it is not installed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings

import numpy as np
import pytest
import tvm
from safetensors.numpy import save_file

import tvm_partial
from helpers import affine4_ref, raw_bytes, run_cases, run_cli

B = np.arange(16, dtype="float32") * 1.5
C = np.arange(16, dtype="float32") * -2.0
A = np.arange(16, dtype="float32") * 0.25


@pytest.fixture(scope="module")
def onnx():
    return pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def affine_lib(affine4, tmp_path_factory):
    """affine4 (out = 2a + 3b + c) with b, c bound to zeros, exported inline."""
    exe, sig = affine4
    lib = tmp_path_factory.mktemp("lib") / "affine.so"
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=B * 0, c=C * 0, outputs="out"), lib)
    return lib


def _initializers(onnx):
    """Initializers of several dtypes, as TensorProtos (raw data, and typed fields)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    return [
        numpy_helper.from_array(rng.standard_normal((8, 16)).astype("float32"), "fc.weight"),
        numpy_helper.from_array(rng.standard_normal(16).astype("float16"), "fc.bias"),
        numpy_helper.from_array(np.arange(-3, 3, dtype="int64"), "onnx::Reshape_3"),
        numpy_helper.from_array(np.array([True, False, True]), "mask"),
        helper.make_tensor("scale", TensorProto.FLOAT, [3], [1.0, -2.5, 3.25]),  # float_data
        helper.make_tensor("bf", TensorProto.BFLOAT16, [2], [1.0, -0.5]),  # int32_data
    ]


def _save(onnx, folder, layout: str) -> str:
    """A model holding ``_initializers``, saved by onnx.save_model: ``inline`` (its default),
    ``external`` (every initializer in model.data) or ``mixed`` (those of 64 bytes or more)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        _initializers(onnx),
    )
    path = os.path.join(folder, f"{layout}.onnx")
    options = {
        "inline": {},
        "external": {"save_as_external_data": True, "location": "model.data", "size_threshold": 0},
        "mixed": {"save_as_external_data": True, "location": "model.data", "size_threshold": 256},
    }[layout]
    onnx.save_model(helper.make_model(graph), path, **options)
    return path


def _same_as_onnx(onnx, path: str) -> dict:
    """open_weights(path) against onnx.numpy_helper.to_array of the model loaded with its data:
    the same names, dtypes, shapes and bits. -> {name: where onnx keeps it}."""
    from onnx import numpy_helper

    found = tvm_partial.open_weights(path)
    model = onnx.load(path)  # with its external data
    expected = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert list(found) == list(expected)
    for name, want in expected.items():
        got = found[name]
        assert (str(got.dtype), tuple(got.shape)) == (str(want.dtype), want.shape), name
        assert raw_bytes(got) == np.ascontiguousarray(want).tobytes(), name
        assert got.data_ptr() % 64 == 0, name
    where = {t.name: t.data_location for t in onnx.load(path, load_external_data=False).graph.initializer}
    return {k: "external" if v == onnx.TensorProto.EXTERNAL else "inline" for k, v in where.items()}


@pytest.mark.parametrize("layout", ["inline", "external", "mixed"])
def test_onnx_initializers_read_bitwise_wherever_they_lie(onnx, tmp_path, layout):
    where = _same_as_onnx(onnx, _save(onnx, tmp_path, layout))
    external = {k for k, v in where.items() if v == "external"}
    assert (
        external
        == {
            "inline": set(),
            "external": {"fc.weight", "fc.bias", "onnx::Reshape_3", "mask"},  # typed fields stay inside
            "mixed": {"fc.weight"},
        }[layout]
    )


@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_onnx_as_torch_onnx_export_writes_it(onnx, tmp_path, exporter):
    torch = pytest.importorskip("torch")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")  # torch's default exporter needs it
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).eval()
    path = str(tmp_path / "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated; torch says so
        torch.onnx.export(model, (torch.randn(1, 4),), path, dynamo=exporter == "dynamo")
    assert "inline" in _same_as_onnx(onnx, path).values()
    found = tvm_partial.open_weights(path)
    for name, value in model.state_dict().items():  # the exporters keep the state_dict's names
        if name in found:
            assert raw_bytes(found[name]) == value.numpy().tobytes(), name


def test_onnx_inspect_verify_and_load_say_what_it_is(onnx, affine_lib, tmp_path):
    path = _save(onnx, tmp_path, "mixed")
    data = os.path.join(str(tmp_path), "model.data")
    info = tvm_partial.inspect(path)
    assert (info["kind"], info["payloads"], info["payload_hashes"]) == (
        "onnx model",
        "onnx model",
        "none recorded (an ONNX model records none)",
    )
    (fn,) = info["functions"]
    shown = {b["name"]: (b["dtype"], b["shape"], b.get("file"), b["offset"]) for b in fn["bindings"]}
    assert shown["fc.bias"] == ("float16", [16], None, None)  # inside the model
    assert shown["fc.weight"][:3] == ("float32", [8, 16], data)
    assert shown["bf"] == ("bfloat16", [2], None, None)
    opened = tvm_partial.open_weights(path)
    assert info["constant_bytes"] == sum(len(raw_bytes(v)) for v in opened.values())
    assert info["files"] == [{"path": data, "bytes": os.path.getsize(data)}]
    text = run_cli("inspect", path)
    assert text.returncode == 0, text.stderr
    assert f"{path}: ONNX model (ir_version " in text.stdout
    assert "  tensor fc.bias: float16[16], 32 B inside the model\n" in text.stdout
    assert f"  tensor fc.weight: float32[8x16], 512 B at file offset {shown['fc.weight'][3]}" in text.stdout
    assert f"in {data}" in text.stdout
    message = f"{path} is an ONNX model, which records no payload hashes: its initializers are readable"
    with pytest.raises(ValueError, match=re.escape(message)):
        tvm_partial.verify(path)
    proc = run_cli("verify", path)
    assert proc.returncode == 2 and message in proc.stderr
    # The C++ loader reads safetensors files: an ONNX model is refused saying how to bind it.
    with pytest.raises(
        ValueError,
        match=re.escape(f"weights file {path} is an ONNX model: weights are read from safetensors files")
        + ".*"
        + re.escape(f'tvm_partial.rebind(pm, **tvm_partial.open_weights("{path}"))'),
    ):
        tvm_partial.load(affine_lib, weights_file=path)
    os.remove(data)  # the external data file gone: named, with where it was looked for
    for read in (tvm_partial.open_weights, tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(FileNotFoundError, match=re.escape(f"keeps its data in 'model.data' ({data})")):
            read(path)


@pytest.mark.parametrize(
    "field, value",
    [("offset", str(2**63)), ("length", str(2**64 + 5)), ("offset", "-1"), ("length", "twelve")],
)
def test_onnx_external_data_positions_past_63_bits_name_the_initializer(onnx, tmp_path, field, value):
    path = _save(onnx, tmp_path, "external")
    model = onnx.load(path, load_external_data=False)
    tensor = model.graph.initializer[0]
    entry = {e.key: e for e in tensor.external_data}.get(field) or tensor.external_data.add(key=field)
    entry.value = value
    onnx.save_model(model, path)
    what = "position" if field == "offset" else "count"
    message = re.escape(
        f"{path}: initializer 'fc.weight' has external data {field} '{value}', which is not a byte "
        f"{what} in a file (0 to 2**63 - 1)"
    )
    for read in (tvm_partial.open_weights, tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(ValueError, match=message):
            read(path)


@pytest.mark.parametrize("layout", ["inline", "external"])
def test_onnx_initializers_named_twice_are_refused(onnx, tmp_path, layout):
    """One name, two initializers: refused, never one of them taken silently."""
    from onnx import numpy_helper

    path = _save(onnx, tmp_path, layout)
    model = onnx.load(path)
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((8, 16), "float32"), "fc.weight"))
    onnx.save_model(model, path, **({"save_as_external_data": True} if layout == "external" else {}))
    for read in (tvm_partial.open_weights, tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(ValueError, match=re.escape(f"{path}: two initializers are named 'fc.weight'")):
            read(path)


def test_onnx_external_data_near_2_63_is_past_the_file(onnx, tmp_path):
    """The largest offset a file can hold, 2**63 - 1: read, then refused as past the data file's
    end (the sum overflows no check)."""
    path = _save(onnx, tmp_path, "external")
    model = onnx.load(path, load_external_data=False)
    tensor = model.graph.initializer[0]
    entry = {e.key: e for e in tensor.external_data}.get("offset") or tensor.external_data.add(key="offset")
    entry.value = str(2**63 - 1)
    onnx.save_model(model, path)
    data = os.path.join(str(tmp_path), "model.data")
    message = re.escape(f"{data} is truncated: tensor 'fc.weight' needs bytes {2**63 - 1} to {2**63 + 511}")
    for read in (tvm_partial.open_weights, tvm_partial.verify):
        with pytest.raises(ValueError, match=message):
            read(path)


# -- the Hugging Face cache layout -----------------------------------------------------------------
def _hub_snapshot(root, files: dict, index: dict) -> str:
    """The layout huggingface_hub's cache keeps: each file in blobs/ under its sha256, and
    snapshots/rev1/NAME a relative symlink to it; files: {name: bytes}. -> the snapshot folder."""
    snapshot = root / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir()
    files = {**files, "model.safetensors.index.json": json.dumps(index).encode()}
    for name, data in files.items():
        sha = hashlib.sha256(data).hexdigest()
        (root / "blobs" / sha).write_bytes(data)
        os.symlink(f"../../blobs/{sha}", snapshot / name)
    return str(snapshot)


def _shard_bytes(tmp_path, tensors: dict) -> bytes:
    """A safetensors file as the safetensors package writes it (save_pretrained's shards)."""
    path = tmp_path / "shard.tmp"
    save_file(tensors, str(path), metadata={"format": "pt"})
    data = path.read_bytes()
    path.unlink()
    return data


def test_a_sharded_checkpoint_in_the_hugging_face_cache_layout(affine_lib, tmp_path):
    shards = {
        "model-00001-of-00002.safetensors": _shard_bytes(tmp_path, {"b": B}),
        "model-00002-of-00002.safetensors": _shard_bytes(tmp_path, {"c": C}),
    }
    weight_map = {"b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}
    snapshot = _hub_snapshot(
        tmp_path / "hub", shards, {"metadata": {"total_size": 128}, "weight_map": weight_map}
    )
    index = os.path.join(snapshot, "model.safetensors.index.json")
    assert os.path.realpath(index).startswith(str(tmp_path / "hub" / "blobs"))
    found = tvm_partial.open_weights(index)
    assert raw_bytes(found["b"]) == B.tobytes() and raw_bytes(found["c"]) == C.tobytes()
    swapped = tvm_partial.load(affine_lib, weights_file=index)
    assert swapped(tvm.runtime.tensor(A)).numpy().tobytes() == affine4_ref(A, B, C).tobytes()
    shown = tvm_partial.inspect(index)
    assert [f["path"] for f in shown["files"]] == [os.path.join(snapshot, n) for n in shards]
    assert run_cli("inspect", index).returncode == 0
    # Files another tool wrote record no hashes: verify reads the index and says which file.
    with pytest.raises(
        ValueError,
        match=rf"weights file {snapshot}/model-00001-of-00002.safetensors, a file of the index {index}, "
        "records no payload hashes",
    ):
        tvm_partial.verify(index)
    # Names still stay in the folder as spelt: `..` and absolute names are refused, and a link to
    # the index from elsewhere looks for its files beside the link, never beside the blob.
    for bad in ("../rev1/model-00001-of-00002.safetensors", f"{snapshot}/model-00001-of-00002.safetensors"):
        escape = tmp_path / "escape.index.json"
        escape.write_text(json.dumps({"weight_map": {"b": bad, "c": weight_map["c"]}}))
        with pytest.raises(ValueError, match=r"leaves the index's folder|is an absolute path"):
            tvm_partial.load(affine_lib, weights_file=escape)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(index, elsewhere / "model.safetensors.index.json")
    with pytest.raises(FileNotFoundError, match=rf"\({elsewhere}/model-00001-of-00002.safetensors\)"):
        tvm_partial.open_weights(elsewhere / "model.safetensors.index.json")


def test_verify_of_an_index_checks_every_file_it_names(affine4, tmp_path):
    """An index of files save_weights wrote (hashes recorded): verify checks each, names the file
    of a damaged tensor, and the command exits 1."""
    exe, sig = affine4
    for name, values in (("one", {"b": B}), ("two", {"c": C})):
        pm = tvm_partial.partial(exe, signature=sig, **values)
        tvm_partial.save_weights(pm, tmp_path / f"{name}.safetensors")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"b": "one.safetensors", "c": "two.safetensors"}}))
    done = []
    report = tvm_partial.verify(index, progress=lambda d, t: done.append((d, t)))
    assert report["intact"] and report["checked"] == 2 and report["bytes"] == B.nbytes + C.nbytes
    assert [p["weights_file"] for p in report["payloads"]] == [
        str(tmp_path / f"{n}.safetensors") for n in ("one", "two")
    ]
    assert done[-1] == (B.nbytes + C.nbytes, B.nbytes + C.nbytes)
    assert all(a <= b for (a, _), (b, _) in zip(done, done[1:]))
    data = bytearray((tmp_path / "two.safetensors").read_bytes())
    data[-1] ^= 1
    (tmp_path / "two.safetensors").write_bytes(data)
    report = tvm_partial.verify(index)
    assert [(p["key"], p["weights_file"]) for p in report["damaged"]] == [
        ("c", str(tmp_path / "two.safetensors"))
    ]
    proc = run_cli("verify", str(index))
    assert proc.returncode == 1 and f"in {tmp_path / 'two.safetensors'}" in proc.stdout


# -- what is not a safetensors file ----------------------------------------------------------------
_EMPTY_MAP = """
import tvm_partial

def run_case(case):
    read, lib, index, placement = case
    try:
        if read == "load":
            tvm_partial.load(lib, weights_file=index)
        else:
            getattr(tvm_partial, read)(index)
        return "accepted"
    except Exception as err:
        return [type(err).__name__, str(err)]
"""


def test_an_index_with_an_empty_weight_map_is_refused_naming_it(affine4, tmp_path):
    """It once crashed every placement (SIGSEGV): each read runs in a subprocess."""
    exe, sig = affine4
    pm = tvm_partial.partial(exe, signature=sig, b=B, c=C)
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": {}}))
    cases = []
    placements = {
        "inline": {},
        "zero_copy": {"zero_copy": True},
        "weights_file": {"weights_file": tmp_path / "w.safetensors"},
    }
    for placement, options in placements.items():
        lib = tmp_path / f"{placement}.so"
        tvm_partial.export_library(pm, lib, **options)
        cases.append(["load", str(lib), str(index), placement])
    cases += [[read, "", str(index), ""] for read in ("open_weights", "inspect", "verify")]
    message = f"weights index {index}: its weight_map is empty: it names no file, so it holds no tensors"
    for case, result in zip(cases, run_cases(_EMPTY_MAP, cases)):
        assert isinstance(result, list) and result[0] == "ValueError" and message in result[1], (case, result)
