# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``verify`` / ``tvm-partial verify``: every payload checked against its recorded hash, wherever
it lies (inline in the embedded blob, or in the zero-copy region of the file)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tvm_partial
from helpers import library_modules, run_cli

cli = run_cli


@pytest.fixture(scope="module")
def artifacts(conv, tmp_path_factory):
    """{"inline": path, "zero": path} of the forum kernel with weights and bias bound."""
    exe, tensors, inputs, _ = conv
    folder = tmp_path_factory.mktemp("verify")
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    out = {}
    for name, mode in (("inline", False), ("zero", True)):
        out[name] = folder / f"{name}.so"
        tvm_partial.export_library(pm, out[name], zero_copy=mode)
    return out


@pytest.mark.parametrize("kind", ["inline", "zero"])
def test_intact_artifact_verifies(artifacts, kind):
    report = tvm_partial.verify(artifacts[kind])
    assert report["intact"] and report["damaged"] == [] and report["checked"] == 2 and report["bytes"] == 896
    assert [(p["function"], p["position"], p["name"], p["bytes"]) for p in report["payloads"]] == [
        ("main", 1, "weights", 864),
        ("main", 2, "bias", 32),
    ]
    assert all(p["placement"] == ("inline" if kind == "inline" else "appended") for p in report["payloads"])
    proc = cli("verify", str(artifacts[kind]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{artifacts[kind]}: intact: 2 payloads, 896 B, match their recorded hashes"


@pytest.mark.parametrize("kind", ["inline", "zero"])
def test_flipped_payload_byte_is_found(artifacts, kind, tmp_path):
    """A changed byte in a payload: inspect cannot see it (and says so), verify names the payload."""
    weights = tvm_partial.verify(artifacts[kind])["payloads"][0]
    data = bytearray(artifacts[kind].read_bytes())
    data[weights["file_offset"] + 100] ^= 0x01
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))

    assert tvm_partial.inspect(bad)["payload_hashes"] == "not checked (run tvm-partial verify)"
    report = tvm_partial.verify(bad)
    assert not report["intact"] and report["checked"] == 2
    assert [(p["function"], p["position"], p["name"]) for p in report["damaged"]] == [("main", 1, "weights")]

    proc = cli("verify", str(bad))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        f"{bad}: DAMAGED: function 'main' position 1 (weights): 864 B at file offset "
        f"{weights['file_offset']}" in proc.stdout
    )
    assert "1 of 2 payloads damaged" in proc.stdout and "bias" not in proc.stdout
    assert json.loads(cli("verify", str(bad), "--json").stdout)["damaged"][0]["position"] == 1
    text = cli("inspect", str(bad)).stdout
    assert "payload hashes: not checked (run tvm-partial verify)" in text and "complete" not in text


def test_truncated_file_refused(artifacts, tmp_path):
    data = artifacts["zero"].read_bytes()
    region = tvm_partial.inspect(artifacts["zero"])["region"]
    for cut in (region["file_offset"] + 200, len(data) - 1):
        (tmp_path / "cut.so").write_bytes(data[:cut])
        with pytest.raises(ValueError, match="is truncated"):
            tvm_partial.verify(tmp_path / "cut.so")
        proc = cli("verify", str(tmp_path / "cut.so"))
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith("tvm-partial verify: ") and "is truncated" in proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_missing_and_foreign_files_one_line(tmp_path):
    for command in ("verify", "inspect"):
        proc = cli(command, str(tmp_path / "missing.so"))
        assert proc.returncode == 2
        assert (
            proc.stderr
            == f"tvm-partial {command}: cannot read {tmp_path / 'missing.so'}: No such file or directory\n"
        )
    (tmp_path / "notes.txt").write_text("hello")
    proc = cli("verify", str(tmp_path / "notes.txt"))
    assert proc.returncode == 2 and "not a tvm-partial artifact: not an ELF shared library" in proc.stderr


def test_large_payload_hashed_in_chunks(affine4, tmp_path):
    """verify reads a payload in 1 MiB chunks: one of 3 MiB and 13 bytes verifies intact (its
    hash, chunk by chunk, is the one recorded at export over the whole buffer), and a byte changed
    on either side of a chunk edge or in the odd tail is found."""
    exe, _ = affine4
    big = np.random.default_rng(3).integers(0, 256, size=3 * 2**20 + 13, dtype="uint8")
    pm = tvm_partial.partial(exe, {1: big, 2: np.arange(5, dtype="int8")})
    tvm_partial.export_library(pm, tmp_path / "big.so", zero_copy=True)
    report = tvm_partial.verify(tmp_path / "big.so")
    assert report["intact"] and [p["bytes"] for p in report["payloads"]] == [big.size, 5]
    at, data = report["payloads"][0]["file_offset"], (tmp_path / "big.so").read_bytes()
    for offset in (0, 2**20 - 1, 2**20, 2 * 2**20 + 7, big.size - 1):
        bad = bytearray(data)
        bad[at + offset] ^= 0x10
        (tmp_path / "bad.so").write_bytes(bytes(bad))
        assert [p["position"] for p in tvm_partial.verify(tmp_path / "bad.so")["damaged"]] == [1], offset


def test_damaged_metadata_names_the_file(artifacts, tmp_path):
    """The format's own checks (here the metadata hash) name the file too, in one line."""
    data = bytearray(artifacts["inline"].read_bytes())
    blob = library_modules(artifacts["inline"]).partial
    data[blob.offset + 60] ^= 0xFF  # inside the metadata
    bad = tmp_path / "meta.so"
    bad.write_bytes(bytes(data))
    for command in ("verify", "inspect"):
        proc = cli(command, str(bad))
        assert proc.returncode == 2
        assert (
            proc.stderr
            == f"tvm-partial {command}: {bad}: corrupted partial_apply data: metadata checksum mismatch\n"
        )
    # load says the same, the path put in front by the C++ loader (the reader does not know it).
    with pytest.raises(ValueError) as info:
        tvm_partial.load(bad)
    assert (
        str(info.value)
        == f"{os.path.realpath(bad)}: corrupted partial_apply data: metadata checksum mismatch"
    )
