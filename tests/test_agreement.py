# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""load, inspect and verify agree: for every damaged or crafted artifact and weights file made
here, the three give the same verdict (all refuse, with the same message, or all accept), because
they call the same C++ reader. Loads run in one subprocess per family (a crash there names the
case it died on); inspect and verify never load, so they run here."""

from __future__ import annotations

import json
import random
import struct
import sys

import numpy as np
import pytest

import tvm_partial
from helpers import ints, library_modules, reseal, run_python, trailer_hash

_LOAD_ALL = r"""
import json, sys
import tvm_partial
for path in json.loads(sys.argv[1]):
    print(json.dumps({"case": path}), flush=True)  # a crash leaves this as the last line
    try:
        mod = tvm_partial.load(path)
        tvm_partial.bindings(mod)
        verdict = "accepted"
    except (ValueError, FileNotFoundError) as err:
        verdict = f"refused: {err}"
    print(json.dumps({"case": path, "verdict": verdict}), flush=True)
"""


def _load_verdicts(paths: list[str]) -> dict[str, str]:
    proc = run_python(_LOAD_ALL, json.dumps(paths), timeout=600)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    done = {d["case"]: d["verdict"] for d in lines if "verdict" in d}
    if proc.returncode != 0:
        last = lines[-1]["case"] if lines else "(before the first case)"
        pytest.fail(f"loading crashed ({proc.returncode}) on {last}:\n{proc.stderr[-3000:]}")
    return done


def _verdict(call, path: str) -> str:
    try:
        call(path)
        return "accepted"
    except (ValueError, FileNotFoundError) as err:
        return f"refused: {err}"


def _check_agreement(paths: list[str], want_refused: int) -> None:
    loads = _load_verdicts(paths)
    refused = 0
    for path in paths:
        seen = {
            "load": loads[path],
            "inspect": _verdict(tvm_partial.inspect, path),
            "verify": _verdict(tvm_partial.verify, path),
        }
        assert len(set(seen.values())) == 1, (path, seen)
        refused += seen["load"].startswith("refused")
    # The mutants are not all harmless: a check that refused nothing, or everything, proves less.
    assert refused >= want_refused and refused < len(paths) + (want_refused == len(paths)), refused


def _zero_copy_artifact(exe, folder, tied=False):
    """Two tensors, or (tied) one array bound at both positions: a version-3 blob whose second
    binding is a shared tensor (kind 6), its payload stored once."""
    lib = folder / "base.so"
    w = np.arange(4096, dtype="float32")
    tvm_partial.export_library(
        tvm_partial.partial(exe, {1: w if tied else ints(16, seed=1), 2: w}),
        lib,
        zero_copy=True,
    )
    return lib


def test_trailer_and_region_mutants_agree(affine4, tmp_path):
    """Every byte of the trailer flipped (and resealed: its own hash recomputed, so the fields
    behind it are reached), bytes of the region header flipped, the file cut at several places."""
    exe, _ = affine4
    lib = _zero_copy_artifact(exe, tmp_path)
    data = lib.read_bytes()
    region = data.find(b"TVMPREGN")
    assert region == data.rfind(b"TVMPREGN")  # the appended region's header, its only copy
    mutants = []

    def write(name, content):
        path = tmp_path / f"{name}.so"
        path.write_bytes(bytes(content))
        mutants.append(str(path))

    for at in range(48):  # the trailer's fields and its hash (the last 16 bytes are padding)
        m = bytearray(data)
        m[len(m) - 64 + at] ^= 0x04
        write(f"trailer{at}", m)
        if at < 40:  # resealed: the hash holds, the field is wrong
            struct.pack_into("<Q", m, len(m) - 64 + 40, trailer_hash(bytes(m[-64:-24])))
            write(f"resealed{at}", m)
    for at in (0, 8, 16, 24, 40):
        m = bytearray(data)
        m[region + at] ^= 0x10
        write(f"region{at}", m)
    for cut in (region, region + 64, region + 1000, len(data) - 64, len(data) - 1):
        write(f"cut{cut}", data[:cut])
    _check_agreement(mutants, want_refused=40)


@pytest.mark.parametrize("tied", [False, True], ids=["two tensors", "one tensor in two places"])
def test_metadata_mutants_agree(affine4, tmp_path, tied):
    """The partial module's bytes mutated at random (fixed seed) and resealed, so the parser's
    checks behind the metadata hash are reached: the same verdict from all three."""
    exe, _ = affine4
    lib = _zero_copy_artifact(exe, tmp_path, tied=tied)
    if tied:
        assert tvm_partial.inspect(lib)["format_version"] == 3
    data = lib.read_bytes()
    blob = library_modules(lib).partial
    rng = random.Random(19)
    mutants = []
    for i in range(40):
        m = bytearray(data)
        at = blob.offset + 40 + rng.randrange(blob.size - 40)
        m[at] ^= 1 << rng.randrange(8)
        m[blob.offset : blob.offset + blob.size] = reseal(bytes(m[blob.offset : blob.offset + blob.size]))
        path = tmp_path / f"meta{i}.so"
        path.write_bytes(bytes(m))
        mutants.append(str(path))
    _check_agreement(mutants, want_refused=20)


def test_weights_file_mutants_agree(affine4, tmp_path):
    """The weights file of a ``weights_file=`` export, its JSON header's fields changed (offsets,
    dtypes, shapes, the region entry), nested past the depth bound, or the file cut short."""
    exe, _ = affine4
    mutants = []
    base = tvm_partial.partial(exe, {1: ints(16, seed=2), 2: np.arange(4096, dtype="float32")})
    header_edits = [
        lambda h: h["main/1"].__setitem__("data_offsets", [0, 64]),
        lambda h: h["main/2"].__setitem__("dtype", "F16"),
        lambda h: h["main/2"].__setitem__("shape", [4095]),
        lambda h: h["main/1"].__setitem__("data_offsets", [64, 64 + 63]),
        lambda h: h.pop("__tvm_partial_region__"),
        lambda h: h.__setitem__("__metadata__", {"tvm_partial.hashes": "[" * 100000}),
        lambda h: h.__setitem__(
            "extra", {"dtype": "U8", "shape": [[[[[[[[[[1]]]]]]]]]], "data_offsets": [0, 1]}
        ),
        lambda h: h["main/2"].__setitem__("data_offsets", [2**63, 2**63 + 16384]),
        lambda h: None,  # unchanged: accepted by all three
    ]
    for i, edit in enumerate(header_edits):
        folder = tmp_path / f"w{i}"
        folder.mkdir()
        lib = folder / "model.so"
        tvm_partial.export_library(base, lib, weights_file=folder / "model.safetensors")
        weights = folder / "model.safetensors"
        raw = weights.read_bytes()
        (length,) = struct.unpack_from("<Q", raw)
        header = json.loads(raw[8 : 8 + length])
        edit(header)
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (length - len(text)) if len(text) <= length else b""
        weights.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])
        mutants.append(str(lib))
    cut = tmp_path / "cut"
    cut.mkdir()
    tvm_partial.export_library(base, cut / "model.so", weights_file=cut / "model.safetensors")
    raw = (cut / "model.safetensors").read_bytes()
    (cut / "model.safetensors").write_bytes(raw[: len(raw) - 100])
    mutants.append(str(cut / "model.so"))
    _check_agreement(mutants, want_refused=len(mutants) - 1)


@pytest.mark.skipif(sys.platform != "linux", reason="ELF artifacts")
def test_payload_damage_is_verify_s_alone(affine4, tmp_path):
    """A flipped payload byte is not structural: load and inspect accept (they do not hash
    appended payloads), verify reports the payload damaged without refusing the file."""
    exe, _ = affine4
    lib = _zero_copy_artifact(exe, tmp_path)
    data = bytearray(lib.read_bytes())
    data[data.rfind(b"TVMPREGN") + 64 + 5] ^= 1
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    assert _load_verdicts([str(bad)]) == {str(bad): "accepted"}
    report = tvm_partial.verify(bad)
    assert not report["intact"] and [(p["function"], p["position"]) for p in report["damaged"]] == [
        ("main", 1)
    ]
