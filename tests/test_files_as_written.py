# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights files as other tools write them (issue 41): a sharded checkpoint in the Hugging Face
cache layout (``snapshots/REV/NAME`` symlinks to ``blobs/SHA256``); and what is not a safetensors
file, refused saying what it is and what is read."""

from __future__ import annotations

import hashlib
import json
import os

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
def affine_lib(affine4, tmp_path_factory):
    """affine4 (out = 2a + 3b + c) with b, c bound to zeros, exported inline."""
    exe, sig = affine4
    lib = tmp_path_factory.mktemp("lib") / "affine.so"
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=B * 0, c=C * 0, outputs="out"), lib)
    return lib


# -- the Hugging Face cache layout -----------------------------------------------------------------
def _hub_snapshot(root, files: dict, index: dict | None) -> str:
    """The layout huggingface_hub's cache keeps: each file in blobs/ under its sha256, and
    snapshots/rev1/NAME a relative symlink to it; files: {name: bytes}. -> the snapshot folder."""
    snapshot = root / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir()
    if index is not None:
        files = {**files, "model.safetensors.index.json": json.dumps(index).encode()}
    for name, data in files.items():
        sha = hashlib.sha256(data).hexdigest()
        (root / "blobs" / sha).write_bytes(data)
        os.symlink(f"../../blobs/{sha}", snapshot / name)
    return str(snapshot)


def _shard_bytes(tmp_path, tensors: dict, metadata: dict | None = None) -> bytes:
    """A safetensors file as the safetensors package writes it (save_pretrained's shards)."""
    path = tmp_path / "shard.tmp"
    save_file(tensors, str(path), metadata={"format": "pt", **(metadata or {})})
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
