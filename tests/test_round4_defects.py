# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The defects an adversarial run found on round 4's main (issue 33): each ends with a bitwise
result or a clear error naming the argument."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te

import tvm_partial
from helpers import affine4_ref, compile_te, ints, reseal, run_cli, run_json


def _call(mod, a):
    out = tvm.runtime.empty((16,), "float32")
    mod(tvm.runtime.tensor(a), out)
    return out.numpy()


def test_a_symlinked_export_folder_records_the_weights_file_where_readers_look(affine4, tmp_path):
    """current -> releases/v3: the weights file's name is recorded from the real folders, so the
    artifact loads; and weights_file= naming the library itself through the link is refused."""
    exe, _ = affine4
    (tmp_path / "releases" / "v3").mkdir(parents=True)
    (tmp_path / "weights").mkdir()
    os.symlink(tmp_path / "releases" / "v3", tmp_path / "current")
    b, c = ints(16, seed=1), ints(16, seed=2)
    pm = tvm_partial.partial(exe, {1: b, 2: c})
    tvm_partial.export_library(
        pm, tmp_path / "current" / "model.so", weights_file=tmp_path / "weights" / "model.safetensors"
    )
    a = ints(16, seed=3)
    assert (
        _call(tvm_partial.load(tmp_path / "current" / "model.so"), a).tobytes()
        == affine4_ref(a, b, c).tobytes()
    )
    assert (
        tvm_partial.inspect(tmp_path / "current" / "model.so")["weights_file"]
        == "../../weights/model.safetensors"
    )
    before = (tmp_path / "releases" / "v3" / "model.so").read_bytes()
    with pytest.raises(ValueError, match="is the library's own path"):
        tvm_partial.export_library(
            pm, tmp_path / "current" / "model.so", weights_file=tmp_path / "releases" / "v3" / "model.so"
        )
    assert (tmp_path / "releases" / "v3" / "model.so").read_bytes() == before


def test_an_empty_weights_file_is_refused_with_or_without_shard(affine4, tmp_path):
    exe, sig = affine4
    pm = tvm_partial.partial(exe, signature=sig, b=ints((16,)), c=ints((16,)))
    tvm_partial.export_library(pm, tmp_path / "m.so")
    for shard in (None, (0, 2)):
        with pytest.raises(ValueError, match=r"weights_file is empty: name a safetensors file or index"):
            tvm_partial.load(tmp_path / "m.so", weights_file="", shard=shard)


def test_save_weights_of_a_rank_s_view_is_refused(tmp_path):
    w = te.placeholder((4, 16), "float32", name="w")
    x = te.placeholder((16,), "float32", name="x")
    k = te.reduce_axis((0, 16), "k")
    y = te.compute((4,), lambda i: te.sum(w[i, k] * x[k], axis=k), name="y")
    exe = compile_te([x, w, y])
    pm = tvm_partial.partial(exe, signature=[x, w, y], w=ints((8, 16)), shards={"w": 0}, world=2)
    tvm_partial.export_library(pm, tmp_path / "tp.so")
    rank = tvm_partial.load(tmp_path / "tp.so", shard=(1, 2))
    with pytest.raises(
        ValueError,
        match=r"this is rank 1's view of a sharded artifact .* cannot be written to a weights file",
    ):
        tvm_partial.save_weights(rank, tmp_path / "rank1.safetensors")
    assert not (tmp_path / "rank1.safetensors").exists()


def test_names_a_function_has_twice_load_back_from_the_file_save_weights_wrote(tmp_path):
    """main(x, w) and decode(x, w, w): save_weights writes w, decode/1, decode/2; that file loads
    back (bare w reaches main's w only: decode has the name twice, so its places go by position)."""
    x = te.placeholder((16,), "float32", name="x")
    w = te.placeholder((16,), "float32", name="w")
    main = te.create_prim_func([x, w, te.compute((16,), lambda i: x[i] * w[i], name="out")]).with_attr(
        "global_symbol", "main"
    )
    w2 = te.placeholder((16,), "float32", name="w")
    decode = te.create_prim_func(
        [x, w, w2, te.compute((16,), lambda i: x[i] * w[i] + w2[i], name="out")]
    ).with_attr("global_symbol", "decode")
    exe = tvm.compile(tvm.IRModule({"main": main, "decode": decode}), target="llvm")
    pm = tvm_partial.partial(exe, {1: ints(16, seed=1)}, signature=["x", "w", "out"])
    pm = tvm_partial.partial(
        pm, {1: ints(16, seed=2), 2: ints(16, seed=3)}, function="decode", signature=["x", "w", "w", "out"]
    )
    tvm_partial.export_library(pm, tmp_path / "two.so")
    tvm_partial.save_weights(pm, tmp_path / "two.safetensors")
    shown = tvm_partial.inspect(tmp_path / "two.safetensors")["functions"]
    assert sorted(b["key"] for f in shown for b in f["bindings"]) == ["decode/1", "decode/2", "w"]
    loaded = tvm_partial.load(tmp_path / "two.so", weights_file=tmp_path / "two.safetensors")
    a = ints(16, seed=4)
    out = tvm.runtime.empty((16,), "float32")
    loaded["decode"](tvm.runtime.tensor(a), out)
    assert out.numpy().tobytes() == (a * ints(16, seed=2) + ints(16, seed=3)).astype("float32").tobytes()
    loaded["main"](tvm.runtime.tensor(a), out)
    assert out.numpy().tobytes() == (a * ints(16, seed=1)).astype("float32").tobytes()


def test_a_function_named_with_a_slash_round_trips_through_a_weights_file(tmp_path):
    x = te.placeholder((16,), "float32", name="x")
    w = te.placeholder((16,), "float32", name="w")
    func = te.create_prim_func([x, w, te.compute((16,), lambda i: x[i] + w[i], name="out")])
    exe = tvm.compile(tvm.IRModule({"a/b": func.with_attr("global_symbol", "a/b")}), target="llvm")
    pm = tvm_partial.partial(exe, {1: ints(16, seed=5)}, function="a/b")
    tvm_partial.save_weights(pm, tmp_path / "ab.safetensors")
    assert list(tvm_partial.open_weights(tmp_path / "ab.safetensors", function="a/b")) == [1]
    tvm_partial.export_library(pm, tmp_path / "ab.so")
    loaded = tvm_partial.load(tmp_path / "ab.so", weights_file=tmp_path / "ab.safetensors")
    a = ints(16, seed=6)
    out = tvm.runtime.empty((16,), "float32")
    loaded["a/b"](tvm.runtime.tensor(a), out)
    assert out.numpy().tobytes() == (a + ints(16, seed=5)).astype("float32").tobytes()


def test_shard_counts_past_64_bits_are_refused_naming_the_argument(affine4, tmp_path):
    exe, sig = affine4
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=ints((16,))), tmp_path / "m.so")
    for call in (tvm_partial.load, tvm_partial.verify):
        with pytest.raises(
            ValueError, match=r"shard=\(0, 9223372036854775808\): the world is past 2\*\*63 - 1 ranks"
        ):
            call(tmp_path / "m.so", shard=(0, 2**63))
    proc = run_cli("verify", str(tmp_path / "m.so"), "--shard", "0/18446744073709551616")
    assert (
        proc.returncode == 2
        and "--shard 0/18446744073709551616: shard=(0, 18446744073709551616): the world is past"
        in proc.stderr
    )


def test_load_shard_outside_a_disco_worker_points_to_load_with_a_rank(tmp_path):
    with pytest.raises(
        RuntimeError,
        match=r"call it on a disco worker, or give the rank: tvm_partial.load\(path, shard=\(rank, world\)\)",
    ):
        tvm_ffi.get_global_func("tvm_partial.LoadShard")(str(tmp_path / "m.so"))


def test_a_shared_tensor_record_on_a_sharded_payload_is_refused_by_every_reader(tmp_path):
    """A crafted version-3 blob: function b's kind-6 record shares function a's payload, which a
    shard record splits. The writer never writes it; load, inspect and verify refuse it alike."""
    import struct

    from blob_writer import _s, shared_entry, tensor_entry

    from helpers import format_hash

    payload = np.arange(32, dtype="float32").tobytes()  # a: float32[8, 4], rows over 2 ranks

    def metadata(at: int) -> bytes:
        a = _s("a") + struct.pack("<II", 0, 1)
        a += tensor_entry(0, "float32", (8, 4), 128, at, hash_=format_hash(payload))
        a += struct.pack("<I", 0)  # no outputs
        a += struct.pack("<IqIIB", 1, 0, 0, 2, 0)  # one shard: position 0, dim 0, world 2, rows
        a += struct.pack("<QQ", format_hash(payload[:64]), format_hash(payload[64:]))
        b = _s("b") + struct.pack("<II", 0, 1) + shared_entry(0, 0) + struct.pack("<II", 0, 0)
        return struct.pack("<I", 2) + a + b

    at = 40 + len(metadata(0))
    at += (-at) % 64
    meta = metadata(at)
    body = meta + b"\0" * (at - 40 - len(meta)) + payload
    blob = reseal(b"TVMPARTL" + struct.pack("<IIQQQ", 3, 0, 40 + len(body), len(meta), 0) + body)
    (tmp_path / "crafted.bin").write_bytes(blob)
    message = "function 'b' position 0 shares the payload of function 'a' position 0, which is sharded"
    with pytest.raises(ValueError, match=message):
        tvm_partial.load_from_bytes(blob)
    for check in (tvm_partial.inspect, tvm_partial.verify):
        with pytest.raises(ValueError, match=message):
            check(tmp_path / "crafted.bin")


def test_the_cpp_loaders_refuse_a_library_cut_short(affine4, tmp_path):
    """The completeness check runs in C++ for every loader (LoadWithWeights and LoadShard from C++
    skipped it: a C++ program got the SIGBUS Python's load avoided). In a fresh process: without
    it the system's loader would crash it."""
    exe, sig = affine4
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=ints((16,))), tmp_path / "m.so")
    data = (tmp_path / "m.so").read_bytes()
    (tmp_path / "cut.so").write_bytes(data[: len(data) // 2])
    got = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("tvm_partial.LoadArtifact")
        try:
            load(sys.argv[1], -1, "", None)  # by name, as LoadWithWeights and LoadShard open it
            print(json.dumps("loaded"))
        except ValueError as err:
            print(json.dumps(str(err)))
        """,
        str(tmp_path / "cut.so"),
    )
    assert got.startswith(f"{tmp_path / 'cut.so'} is truncated: its segments need "), got
