# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Tensor-parallel shards: a tensor bound whole with ``shards={name: dim}, world=W``, exported
once, and loaded by each rank as a view of its own byte range (``load(path, shard=(rank, W))``,
``tvm_partial.LoadShard(path)`` on a disco worker). Results compare bitwise with numpy's slices.
"""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
import tvm
from tvm import te

import tvm_partial
from helpers import (
    compile_te,
    ints,
    mapped_file,
    raw_bytes,
    reseal,
    run_cases,
    run_cli,
    run_json,
    run_python,
    tensor,
)

N, K = 8, 16  # the whole weight is [N, K]; each of 2 ranks holds [N // 2, K]
WORLD = 2


def _kernel(rows: int, lead: tuple[int, ...] = ()):
    """out = w * 2 + b: w [*lead, rows, K] (one rank's shard), b [K] (replicated)."""
    w = te.placeholder((*lead, rows, K), "float32", name="w")
    b = te.placeholder((K,), "float32", name="b")
    out = te.compute(w.shape, lambda *i: w(*i) * 2.0 + b[i[-1]], name="out")
    return compile_te([w, b, out]), [w, b, out]


@pytest.fixture(scope="module")
def tp():
    """(executable, signature) of the rank kernel: w [N // 2, K]."""
    return _kernel(N // WORLD)


def _expected(W, B, rank, world=WORLD, dim=0):
    return np.split(W, world, axis=dim)[rank] * np.float32(2) + B


def _run(module, shape):
    out = tvm.runtime.empty(shape, "float32")
    module["main"](out)
    return out.numpy()


# -- bind time --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("shape", "dim", "world", "message"),
    [
        ((7, K), 0, 2, "is not divisible by world 2"),
        ((N, 2 * K), (0, 3), 2, r"\(8\) is not divisible by 3 segments x world 2"),
        ((N, K), (0, 0), 2, "segments 0 is not 1 to"),
        ((N, K), 2, 2, "dim 2 is not a dimension"),
        ((N, K), 0, 1, "world 1 is not 2 to"),
    ],
)
def test_bind_refuses_a_split_it_cannot_store(tp, shape, dim, world, message):
    exe, sig = tp
    with pytest.raises(ValueError, match=message) as info:
        tvm_partial.partial(
            exe, signature=sig, w=np.zeros(shape, "float32"), b=ints(K), shards={"w": dim}, world=world
        )
    assert "'w'" in str(info.value)


@pytest.mark.parametrize("bad", [1.0, "0", (0,), (0, 3, 1), (True, 1), [0, 3]])
def test_bind_refuses_a_shard_spec_that_is_not_a_dim_or_dim_and_segments(tp, bad):
    exe, sig = tp
    with pytest.raises(
        TypeError, match=r"shards=\{'w': \.\.\.\}: give the dim \(an int\), or \(dim, segments\)"
    ):
        tvm_partial.partial(exe, signature=sig, w=ints((N, K)), b=ints(K), shards={"w": bad}, world=2)


@pytest.mark.parametrize(
    ("shape", "dim", "world"),
    [
        # int4 [2, 256] along dim 1 over 256 ranks: each row's block is one element, half a byte
        ((2, 256), 1, 256),
        # row shards too: int4 [2] over 2 ranks is half a byte each (the writer's per-rank hashing
        # looped forever on it); [258] is 64.5 bytes each, so a 64-byte range per rank would
        # give rank 0 a nibble of rank 1's and shift rank 1's by half a byte
        ((2,), 0, 2),
        ((258,), 0, 2),
        ((1, 258), 1, 2),
    ],
)
def test_a_rank_of_packed_dtype_must_hold_whole_bytes(tp, shape, dim, world):
    exe, _ = tp
    bind = tvm.get_global_func("runtime.PartialApplyModule")
    packed = tvm.runtime.empty(shape, "int4")
    with pytest.raises(ValueError, match=r"is not a whole number of bytes \(int4 packs several elements"):
        bind(exe.mod, {"main": {0: packed}}, {}, {}, {}, {"main": [[0, dim, world, 1]]})


def test_a_row_shard_of_packed_dtype_binds_whole_bytes_per_rank(tmp_path):
    """float4 [256] over 2 ranks: each rank's view is its 64 packed bytes, exactly the halves of
    the bound tensor's bytes; [258] (64.5 bytes a rank) is refused at bind, naming the parameter."""
    import ml_dtypes

    def kernel(n):  # w is only passed through: TVM's CPU code cannot cast float4
        w = te.placeholder((n,), "float4_e2m1fn", name="w")
        x = te.placeholder((4,), "float32", name="x")
        out = te.compute((4,), lambda i: x[i] * 2.0, name="out")
        return compile_te([w, x, out]), [w, x, out]

    exe, sig = kernel(129)
    with pytest.raises(ValueError, match=r"'w'.*is not a whole number of bytes \(float4_e2m1fn packs"):
        tvm_partial.partial(
            exe, signature=sig, w=np.zeros(258, ml_dtypes.float4_e2m1fn), shards={"w": 0}, world=2
        )
    exe, sig = kernel(128)
    values = np.array([0.5, -1.0, 2.0, 6.0, -0.5, 0.0, 1.0, 3.0] * 32, ml_dtypes.float4_e2m1fn)
    values[128:] = -values[128:]  # the two ranks differ
    pm = tvm_partial.partial(exe, signature=sig, w=values, shards={"w": 0}, world=2)
    whole = raw_bytes(tvm_partial.bindings(pm)["main"][0])
    assert len(whole) == 128
    tvm_partial.export_library(pm, tmp_path / "f4.so")
    for rank in range(2):
        view = tvm_partial.bindings(tvm_partial.load(str(tmp_path / "f4.so"), shard=(rank, 2)))["main"][0]
        assert tuple(view.shape) == (128,)
        assert raw_bytes(view) == whole[64 * rank : 64 * (rank + 1)]
        assert tvm_partial.verify(str(tmp_path / "f4.so"), shard=(rank, 2))["intact"]


def test_bind_refuses_a_rank_slice_that_breaks_64_byte_alignment():
    # w [2, 8] whole, [1, 8] float32 = 32 bytes per rank
    w = te.placeholder((1, K // 2), "float32", name="w")
    b = te.placeholder((K // 2,), "float32", name="b")
    out = te.compute(w.shape, lambda i, j: w[i, j] * 2.0 + b[j], name="out")
    exe, sig = compile_te([w, b, out]), [w, b, out]
    with pytest.raises(ValueError, match="32 bytes, not a multiple of 64") as info:
        tvm_partial.partial(exe, signature=sig, w=ints((2, K // 2)), b=ints(K // 2), shards={"w": 0}, world=2)
    assert "'w'" in str(info.value)


def test_bind_checks_the_shard_against_the_parameter(tp):
    exe, sig = tp
    # The whole [N // 2, K] splits into [N // 4, K], which the kernel's w [N // 2, K] is not.
    with pytest.raises(
        ValueError, match=r"parameter 'w'.*one rank's shard.*does not match w: Tensor\[\(4, 16\)"
    ):
        tvm_partial.partial(exe, signature=sig, w=ints((N // 2, K)), b=ints(K), shards={"w": 0}, world=2)
    with pytest.raises(TypeError, match=r"parameter 'w'.*dtype float64 does not match"):
        tvm_partial.partial(
            exe, signature=sig, w=ints((N, K), "float64"), b=ints(K), shards={"w": 0}, world=2
        )


def test_bind_refuses_options_it_cannot_honour(tp):
    exe, sig = tp
    W, B = ints((N, K)), ints(K)
    with pytest.raises(TypeError, match="needs world="):
        tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": 0})
    with pytest.raises(TypeError, match="world= without shards="):
        tvm_partial.partial(exe, signature=sig, w=W[:4], b=B, world=2)
    with pytest.raises(ValueError, match="shards= names 'b', which this partial"):
        tvm_partial.partial(exe, signature=sig, w=W, shards={"w": 0, "b": 0}, world=2)
    by_position = tvm_partial.partial(exe, {0: W, 1: B}, signature=sig, shards={"w": 0}, world=2)
    assert tvm_partial.bindings(by_position)["main"][0].shape == (N, K)
    with pytest.raises(ValueError, match="binds whole tensors split over 2 ranks"):  # recorded
        by_position["main"](tvm.runtime.empty((N // 2, K), "float32"))
    with pytest.raises(TypeError, match="has no parameter 'v'"):
        tvm_partial.partial(exe, signature=sig, w=W, v=B, shards={"w": 0}, world=2)
    with pytest.raises(TypeError, match="shards= needs a compiled module"):
        tvm_partial.partial(exe["main"], signature=sig, w=W, b=B, shards={"w": 0}, world=2)
    with pytest.raises(TypeError, match="shards= needs signature="):
        tvm_partial.partial(exe, {0: W}, shards={"w": 0}, world=2)


def test_a_sharded_module_is_not_called_merged_or_rebound_whole(tp):
    exe, sig = tp
    pm = tvm_partial.partial(exe, signature=sig, w=ints((N, K)), shards={"w": 0}, world=2)
    with pytest.raises(
        ValueError, match=r"binds whole tensors split over 2 ranks \(shards: 'w'\).*shard=\(rank, 2\)"
    ):
        pm["main"](tensor(ints(K)), tvm.runtime.empty((N // 2, K), "float32"))
    with pytest.raises(ValueError, match="cannot be bound again"):
        tvm_partial.partial(pm, b=ints(K), signature=sig)
    assert tvm_partial.bindings(pm)["main"][0].shape == (N, K)  # the whole tensor, by reference


@pytest.mark.parametrize("split", [0, 1], ids=["rows", "columns"])
def test_rebind_keeps_the_split_and_a_rank_view_is_not_rebound(tmp_path, split):
    exe, sig = _scale_kernel((N // 2, K) if split == 0 else (N, K // 2))
    W, W2, W3 = (ints((N, K), seed=s) for s in (31, 32, 33))
    pm = tvm_partial.partial(exe, signature=sig, w=W, shards={"w": split}, world=2)
    again = tvm_partial.rebind(pm, w=W2)
    assert tvm_partial._facts.of(again).shards == tvm_partial._facts.of(pm).shards
    with pytest.raises(ValueError, match="binds whole tensors split over 2 ranks"):
        again["main"](tvm.runtime.empty(tuple(sig[0].shape), "float32"))
    with pytest.raises(ValueError, match=r"shape \(4, 16\) does not match w: Tensor\[\(8, 16\)"):
        tvm_partial.rebind(pm, w=ints((N // 2, K)))  # the whole tensor replaces the whole tensor
    path = str(tmp_path / "v2.so")
    tvm_partial.export_library(again, path, zero_copy=True)
    for rank in range(2):
        view = tvm_partial.bindings(tvm_partial.load(path, shard=(rank, 2)))["main"][0]
        assert view.numpy().tobytes() == np.split(W2, 2, axis=split)[rank].tobytes()
    # A whole load rebinds too; one rank's view does not (its tensors are slices).
    whole = tvm_partial.rebind(tvm_partial.load(path), w=W3)
    assert tvm_partial.bindings(whole)["main"][0].numpy().tobytes() == W3.tobytes()
    rank1 = tvm_partial.load(path, shard=(1, 2))
    with pytest.raises(ValueError, match="rebind: this partial module is rank 1's view of sharded tensors"):
        tvm_partial.rebind(rank1, w=np.split(W3, 2, axis=split)[1])


# -- export and load per rank ------------------------------------------------------------------
@pytest.mark.parametrize("placement", ["inline", "appended", "weights file"])
def test_each_rank_loads_its_own_slice(tp, tmp_path, placement):
    exe, sig = tp
    W, B = ints((N, K), seed=3), ints(K, seed=4)
    pm = tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": 0}, world=WORLD)
    path = str(tmp_path / "tp.so")
    kwargs = {
        "inline": {},
        "appended": {"zero_copy": True},
        "weights file": {"weights_file": str(tmp_path / "tp.safetensors")},
    }
    tvm_partial.export_library(pm, path, **kwargs[placement])
    info = tvm_partial.inspect(path)
    (w_binding,) = [b for b in info["functions"][0]["bindings"] if b.get("name") == "w"]
    assert w_binding["shape"] == [N, K]
    hashes = w_binding["shard"].pop("hashes")  # each rank's range has a hash of its own
    assert len(hashes) == 2 and hashes[0] != hashes[1]
    assert w_binding["shard"] == {
        "dim": 0,
        "world": 2,
        "layout": "rows",
        "segments": 1,
        "shape": [N // 2, K],
        "bytes": N * K * 2,
    }
    assert info["format_version"] == 3
    checked = tvm_partial.verify(path)
    assert checked["intact"] and checked["checked"] == 2 + 2  # w whole and per rank, b
    assert [p.get("rank") for p in checked["payloads"]] == [None, 0, 1, None]
    one = tvm_partial.verify(path, shard=(1, 2))  # rank 1's range of w, and b whole
    assert one["intact"] and [(p["position"], p.get("rank")) for p in one["payloads"]] == [(0, 1), (1, None)]
    assert one["bytes"] == N * K * 2 + K * 4
    if placement == "inline":  # the command says it too
        shown = run_cli("inspect", path)
        assert (
            "float32[8x16] on cpu:0, 512 B, split along dim 0 over 2 ranks (each rank: [4x16], 256 B)"
            in shown.stdout
        )
    for rank in range(WORLD):
        m = tvm_partial.load(path, shard=(rank, WORLD))
        w_view, b_view = (tvm_partial.bindings(m)["main"][i] for i in (0, 1))
        assert w_view.numpy().tobytes() == np.split(W, WORLD)[rank].tobytes()
        assert b_view.numpy().tobytes() == B.tobytes()  # replicated: whole on every rank
        assert _run(m, (N // 2, K)).tobytes() == _expected(W, B, rank).tobytes()
        if placement != "inline":  # a view of the file's pages, at the rank's own offset
            assert w_view.data_ptr() % 64 == 0
            target = {"appended": path, "weights file": str(tmp_path / "tp.safetensors")}[placement]
            assert mapped_file(w_view.data_ptr()) == os.path.realpath(target)
        with pytest.raises(ValueError, match=r"view of a sharded artifact.*cannot be saved"):
            tvm_partial.save_to_bytes(m)
        with pytest.raises(
            ValueError,
            match=r"view of a sharded artifact.*cannot be (saved|exported)|keeps its weights in the file",
        ):
            tvm_partial.export_library(m, str(tmp_path / "again.so"))


def test_a_shard_whose_leading_dims_are_1_is_a_row_shard(tmp_path):
    exe, sig = _kernel(4, lead=(1,))  # w [1, 4, K] per rank: dim 1 of [1, 8, K]
    W, B = ints((1, N, K), seed=5), ints(K, seed=6)
    pm = tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": 1}, world=2)
    path = str(tmp_path / "lead.so")
    tvm_partial.export_library(pm, path, weights_file=str(tmp_path / "lead.safetensors"))
    for rank in range(2):
        out = _run(tvm_partial.load(path, shard=(rank, 2)), (1, N // 2, K))
        assert out.tobytes() == _expected(W, B, rank, dim=1).tobytes()


# -- column shards and fused blocks: stored rank by rank ---------------------------------------
def _rank_shard(W, rank, world, dim, segments=1):
    """numpy's rank ``rank`` of ``world``: the rank's slice along ``dim`` of each fused block."""
    blocks = np.split(W, segments, axis=dim)
    return np.concatenate([np.split(b, world, axis=dim)[rank] for b in blocks], axis=dim)


def _scale_kernel(shape):
    """out = w * 2, both of ``shape`` (one rank's shard)."""
    w = te.placeholder(shape, "float32", name="w")
    out = te.compute(shape, lambda *i: w(*i) * 2.0, name="out")
    return compile_te([w, out]), [w, out]


COLUMN_CASES = {  # name: (whole shape, shards= value, world)
    "column": ((N, K), 1, 2),
    "column of 4": ((N, 4 * K), 1, 4),
    "middle dim": ((2, N, K), 1, 2),
    "fused QKV rows": ((3 * N, K), (0, 3), 2),
    "fused blocks in columns": ((N, 2 * K), (1, 2), 2),
}


@pytest.mark.parametrize("case", list(COLUMN_CASES))
@pytest.mark.parametrize("placement", ["inline", "appended", "weights file"])
def test_column_and_fused_shards_load_per_rank_and_whole(tmp_path, case, placement):
    shape, spec, world = COLUMN_CASES[case]
    dim, segments = spec if isinstance(spec, tuple) else (spec, 1)
    shard_shape = list(shape)
    shard_shape[dim] //= world
    exe, sig = _scale_kernel(tuple(shard_shape))
    W = ints(shape, seed=21)
    pm = tvm_partial.partial(exe, signature=sig, w=W, shards={"w": spec}, world=world)
    path, weights = str(tmp_path / "col.so"), str(tmp_path / "col.safetensors")
    options = {"inline": {}, "appended": {"zero_copy": True}, "weights file": {"weights_file": weights}}
    tvm_partial.export_library(pm, path, **options[placement])
    info = tvm_partial.inspect(path)["functions"][0]["bindings"][0]
    assert info["shape"] == list(shape)
    assert {k: info["shard"][k] for k in ("dim", "world", "layout", "segments", "shape")} == {
        "dim": dim,
        "world": world,
        "layout": "shard-major",
        "segments": segments,
        "shape": shard_shape,
    }
    assert tvm_partial.verify(path)["intact"]
    for rank in range(world):
        assert tvm_partial.verify(path, shard=(rank, world))["intact"]
        m = tvm_partial.load(path, shard=(rank, world))
        view = tvm_partial.bindings(m)["main"][0]
        expected = _rank_shard(W, rank, world, dim, segments)
        assert view.numpy().tobytes() == expected.tobytes()
        if placement != "inline":  # still a view of the file's pages, 64-byte aligned
            assert view.data_ptr() % 64 == 0 and mapped_file(view.data_ptr()) is not None
        assert _run(m, tuple(shard_shape)).tobytes() == (expected * np.float32(2)).tobytes()
    # A whole load gives back the tensor as it was bound (row-major again), and saves the same.
    whole = tvm_partial.load(path)
    assert tvm_partial.bindings(whole)["main"][0].numpy().tobytes() == W.tobytes()
    assert tvm_partial.save_to_bytes(whole) == tvm_partial.save_to_bytes(pm)
    if placement == "weights file":  # other tools read the entry as it is stored: [world, *shard]
        from safetensors.numpy import load_file

        stored = load_file(weights)["w"]
        assert stored.shape == (world, *shard_shape)
        for rank in range(world):
            assert stored[rank].tobytes() == _rank_shard(W, rank, world, dim, segments).tobytes()


def test_a_column_shard_reads_another_weights_file_in_its_stored_shape(tmp_path):
    exe, sig = _scale_kernel((N, K // 2))
    W, W2 = ints((N, K), seed=22), ints((N, K), seed=23)
    path = str(tmp_path / "col.so")
    tvm_partial.export_library(
        tvm_partial.partial(exe, signature=sig, w=W, shards={"w": 1}, world=2),
        path,
        weights_file=str(tmp_path / "col.safetensors"),
    )
    v2 = str(tmp_path / "v2.safetensors")
    tvm_partial.save_weights(tvm_partial.partial(exe, signature=sig, w=W2, shards={"w": 1}, world=2), v2)
    m = tvm_partial.load(path, weights_file=v2, shard=(1, 2))
    assert tvm_partial.bindings(m)["main"][0].numpy().tobytes() == np.split(W2, 2, axis=1)[1].tobytes()
    # The whole tensor, as a state_dict writes it, is not in the stored order: refused, named.
    from safetensors.numpy import save_file

    rows = str(tmp_path / "rows.safetensors")
    save_file({"w": W2}, rows)
    with pytest.raises(
        ValueError, match=r"tensor 'w' is float32\[8, 16\], the module binds float32\[2, 8, 8\]"
    ):
        tvm_partial.load(path, weights_file=rows, shard=(0, 2))


def test_column_shard_cli_and_verify_name_the_stored_layout(tmp_path):
    exe, sig = _scale_kernel((3 * N // 2, K))
    path = str(tmp_path / "qkv.so")
    pm = tvm_partial.partial(exe, signature=sig, w=ints((3 * N, K)), shards={"w": (0, 3)}, world=2)
    tvm_partial.export_library(pm, path, zero_copy=True)
    shown = run_cli("inspect", path)
    assert (
        "split along dim 0 in 3 blocks over 2 ranks (each rank: [12x16], 768 B, stored rank by rank)"
        in shown.stdout
    ), shown.stdout
    checked = tvm_partial.verify(path)
    assert checked["intact"] and [p.get("rank") for p in checked["payloads"]] == [None, 0, 1]


def test_load_with_another_weights_file_slices_it(tp, tmp_path):
    exe, sig = tp
    W, B = ints((N, K), seed=7), ints(K, seed=8)
    pm = tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": 0}, world=2)
    path = str(tmp_path / "tp.so")
    tvm_partial.export_library(pm, path, weights_file=str(tmp_path / "tp.safetensors"))
    W2 = ints((N, K), seed=9)
    other = str(tmp_path / "v2.safetensors")
    tvm_partial.save_weights(
        tvm_partial.partial(exe, signature=sig, w=W2, b=B, shards={"w": 0}, world=2), other
    )
    out = _run(tvm_partial.load(path, weights_file=other, shard=(1, 2)), (N // 2, K))
    assert out.tobytes() == _expected(W2, B, 1).tobytes()


def test_load_refuses_the_wrong_world_or_an_unsharded_artifact(tp, affine4, tmp_path):
    exe, sig = tp
    pm = tvm_partial.partial(exe, signature=sig, w=ints((N, K)), b=ints(K), shards={"w": 0}, world=2)
    path = str(tmp_path / "tp.so")
    tvm_partial.export_library(pm, path, weights_file=str(tmp_path / "tp.safetensors"))
    with pytest.raises(ValueError, match=r"sharded over world 2 .*not 4: load it with shard=\(rank, 2\)"):
        tvm_partial.load(path, shard=(0, 4))
    with pytest.raises(ValueError, match="the rank must be 0 to 1"):
        tvm_partial.load(path, shard=(2, 2))
    with pytest.raises(ValueError, match=r"shard=\(0, 0\): the world must be at least 1"):
        tvm_partial.load(path, shard=(0, 0))
    with pytest.raises(TypeError, match=r"shard= must be \(rank, world\)"):
        tvm_partial.load(path, shard=1)
    whole = tvm_partial.load(path)  # loads whole; its call says how to load a rank
    with pytest.raises(ValueError, match="shard=\\(rank, 2\\)"):
        _run(whole, (N // 2, K))
    a_exe, a_sig = affine4
    plain = str(tmp_path / "plain.so")
    tvm_partial.export_library(
        tvm_partial.partial(a_exe, signature=a_sig, a=ints(16), b=ints(16), c=ints(16)), plain
    )
    with pytest.raises(ValueError, match=r"binds no sharded tensors .*exported without shards="):
        tvm_partial.load(plain, shard=(0, 2))


# -- crafted shard records -----------------------------------------------------------------------
def _sharded_blob(tp) -> bytes:
    exe, sig = tp
    pm = tvm_partial.partial(exe, signature=sig, w=ints((N, K)), b=ints(K), shards={"w": 0}, world=2)
    return tvm_partial.save_to_bytes(pm)


# The shard record ends the metadata of its function (the last one): u32 count | i64 position |
# u32 dim | u32 world | u8 layout | u64 hash[world], 37 bytes before the metadata's end (world 2).
_MUTANTS = {
    "layout 2": (-17, "<B", 2, "unknown shard layout 2"),
    "world 3": (-21, "<I", 3, "is not divisible by world 3"),
    "world 1": (-21, "<I", 1, "world 1 is not 2 to"),
    "world 4": (-21, "<I", 4, "the hashes of 4 ranks cannot fit"),
    "dim 1": (-25, "<I", 1, r"says layout 0 where dim 1 with 1 segment\(s\) is stored in layout 1"),
    "dim 9": (-25, "<I", 9, "dim 9 is not a dimension"),
    "position 2": (-33, "<q", 2, "binds no tensor"),
    "position -1": (-33, "<q", -1, "negative or out of order"),
    "count 2": (-37, "<I", 2, "cannot fit|needs"),
    "count 0": (-37, "<I", 0, "unread bytes"),
}


# A column shard's record adds u32 segments after the layout: 41 bytes before the end.
_COLUMN_MUTANTS = {
    "layout 0": (-21, "<B", 0, r"says layout 0 where dim 1 with 1 segment\(s\) is stored in layout 1"),
    "segments 0": (-20, "<I", 0, "segments 0 is not 1 to 65536"),
    "segments 3": (-20, "<I", 3, r"\(16\) is not divisible by 3 segments x world 2"),
    "segments 2**32-1": (-20, "<I", 2**32 - 1, "segments 4294967295 is not 1 to"),
    "dim 0": (-29, "<I", 0, r"says layout 1 where dim 0 with 1 segment\(s\) is stored in layout 0"),
    "world 16": (-25, "<I", 16, "not a multiple of 64|the hashes of 16 ranks cannot fit"),
}


def _column_blob() -> bytes:
    exe, sig = _scale_kernel((N, K // 2))
    pm = tvm_partial.partial(exe, signature=sig, w=ints((N, K)), shards={"w": 1}, world=2)
    return tvm_partial.save_to_bytes(pm)


@pytest.mark.parametrize("kind", ["rows", "columns"])
def test_crafted_shard_records_are_refused(tp, kind):
    blob = _sharded_blob(tp) if kind == "rows" else _column_blob()
    mutants = _MUTANTS if kind == "rows" else _COLUMN_MUTANTS
    meta_end = 40 + struct.unpack_from("<Q", blob, 24)[0]
    cases = []
    for name, (at, fmt, value, message) in mutants.items():
        data = bytearray(blob)
        struct.pack_into(fmt, data, meta_end + at, value)
        cases.append([name, reseal(bytes(data)).hex(), message])
    for version, message in (
        (4, "newer than this tvm-partial reads"),
        (2, "older than this tvm-partial reads"),
    ):
        data = bytearray(blob)
        struct.pack_into("<I", data, 8, version)
        cases.append([f"version {version}", reseal(bytes(data)).hex(), message])
    results = run_cases(
        """
        import tvm_partial
        from tvm_partial import _ffi_api
        def run_case(case):
            name, data, _ = case
            out = []
            for reader in (tvm_partial.load_from_bytes, lambda b: _ffi_api.Describe(b, "")):
                try:
                    reader(bytes.fromhex(data))
                    out.append("accepted")
                except ValueError as err:
                    out.append(str(err))
            return out
        """,
        cases,
        timeout=120,
    )
    for (name, _, message), result in zip(cases, results):
        assert isinstance(result, list), f"{name}: {result}"
        for text in result:
            assert text != "accepted", name
            assert __import__("re").search(message, text), f"{name}: {text}"


def test_a_sound_sharded_blob_round_trips(tp):
    blob = _sharded_blob(tp)
    exe, _ = tp
    again = tvm_partial.load_from_bytes(blob, exe)
    assert tvm_partial.save_to_bytes(again) == blob
    column = _column_blob()
    assert tvm_partial.save_to_bytes(tvm_partial.load_from_bytes(column, exe)) == column


def test_prefault_reads_only_the_ranks_pages_at_load(tmp_path):
    """Without TVM_PARTIAL_PREFAULT the load reads nothing (its pages are read on first use);
    with TVM_PARTIAL_PREFAULT=1 it maps in the rank's slice at load, and not the other rank's."""
    rows, cols = 512, 1024  # [1024, 1024] float32 whole: 2 MiB per rank
    w = te.placeholder((rows, cols), "float32", name="w")
    out = te.compute((rows, cols), lambda i, j: w[i, j] * 2.0, name="out")
    exe, sig = compile_te([w, out]), [w, out]
    path = str(tmp_path / "big.so")
    W = ints((2 * rows, cols), seed=11)
    pm = tvm_partial.partial(exe, signature=sig, w=W, shards={"w": 0}, world=2)
    tvm_partial.export_library(pm, path, weights_file=str(tmp_path / "big.safetensors"))
    code = """
        import json, sys
        import tvm_partial

        def rss_file_kib():
            for line in open("/proc/self/status"):
                if line.startswith("RssFile:"):
                    return int(line.split()[1])

        first = tvm_partial.load(sys.argv[1], shard=(0, 2))  # maps the libraries a load needs
        before = rss_file_kib()
        m = tvm_partial.load(sys.argv[1], shard=(1, 2))
        print(json.dumps({"grew_kib": rss_file_kib() - before}))
        """
    lazy = run_json(code, path, env={"TVM_PARTIAL_PREFAULT": "0"})
    eager = run_json(code, path, env={"TVM_PARTIAL_PREFAULT": "1"})
    slice_kib = rows * cols * 4 // 1024
    assert lazy["grew_kib"] < slice_kib // 4, lazy
    assert slice_kib <= eager["grew_kib"] < slice_kib * 3 // 2, eager
    bad = run_python(code, path, env={"TVM_PARTIAL_PREFAULT": "yes"}, timeout=120)
    assert bad.returncode != 0 and "TVM_PARTIAL_PREFAULT=yes is neither 1" in bad.stderr


def test_a_sharded_tensor_bound_in_another_place_too_is_refused_at_save(tmp_path):
    """One tvm Tensor bound at two positions is one tensor (stored once); a rank's slice cannot
    stand for it at both, so a shard on a tied tensor is refused when saved, naming the place."""
    w1, w2 = (te.placeholder((N // WORLD, K), "float32", name=n) for n in ("w1", "w2"))
    out = te.compute(w1.shape, lambda i, j: w1[i, j] + w2[i, j], name="out")
    exe = compile_te([w1, w2, out])
    whole = tvm.runtime.tensor(ints((N, K)))
    pm = tvm_partial.partial(
        exe, signature=[w1, w2, out], w1=whole, w2=whole, shards={"w1": 0, "w2": 0}, world=WORLD
    )
    with pytest.raises(
        ValueError, match=r"function 'main' position 0: it is split into shards and the same tensor"
    ):
        tvm_partial.export_library(pm, tmp_path / "tied.so")


def test_verify_of_one_rank_reads_only_its_range(tp, tmp_path):
    exe, sig = tp
    W, B = ints((N, K), seed=12), ints(K, seed=13)
    pm = tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": 0}, world=2)
    path, weights = str(tmp_path / "tp.so"), tmp_path / "tp.safetensors"
    tvm_partial.export_library(pm, path, weights_file=str(weights))
    rank0 = next(p for p in tvm_partial.verify(path, shard=(0, 2))["payloads"] if p.get("rank") == 0)
    data = bytearray(weights.read_bytes())
    data[rank0["file_offset"]] ^= 1  # damage rank 0's rows only
    weights.write_bytes(bytes(data))
    assert tvm_partial.verify(path, shard=(1, 2))["intact"]  # rank 1 reads none of it
    damaged = tvm_partial.verify(path, shard=(0, 2))["damaged"]
    assert [(p["name"], p.get("rank")) for p in damaged] == [("w", 0)]
    whole = tvm_partial.verify(path)["damaged"]
    assert [(p["name"], p.get("rank")) for p in whole] == [("w", None), ("w", 0)]
    assert run_cli("verify", path, "--shard", "1/2").returncode == 0
    shown = run_cli("verify", path, "--shard", "0/2")
    assert shown.returncode == 1 and "position 0 (w), rank 0's shard: 256 B at file offset" in shown.stdout
    with pytest.raises(ValueError, match=r"sharded over world 2 \(function 'main' position 0\), not 4"):
        tvm_partial.verify(path, shard=(0, 4))
    with pytest.raises(ValueError, match="records no shards"):
        tvm_partial.verify(str(weights), shard=(0, 2))


# -- the stored order against a reference --------------------------------------------------------
def test_stored_order_matches_numpys_rank_shards_property(tp):
    """Any split (dim, segments, world) of any small tensor: the payload holds numpy's rank
    shards one after another (rows: the tensor as it is), and loading it whole gives the tensor
    back, bitwise."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tvm_partial import _ffi_api

    exe, _ = tp
    bind = tvm.get_global_func("runtime.PartialApplyModule")

    @st.composite
    def splits(draw):
        dtype = draw(st.sampled_from(["float32", "float16", "int8", "int64"]))
        unit = 64 // np.dtype(dtype).itemsize  # elements per 64 bytes: every rank's bytes align
        ndim = draw(st.integers(1, 3))
        dim = draw(st.integers(0, ndim - 1))
        world, segments = draw(st.integers(2, 4)), draw(st.integers(1, 3))
        shape = [draw(st.integers(1, 3)) for _ in range(ndim)]
        shape[dim] = segments * world * draw(st.integers(1, 2)) * (unit if dim == ndim - 1 else 1)
        if dim != ndim - 1:
            shape[-1] *= unit
        return dtype, tuple(shape), dim, world, segments

    @settings(max_examples=80, deadline=None)
    @given(splits(), st.integers(0, 2**32 - 1))
    def check(split, seed):
        dtype, shape, dim, world, segments = split
        W = np.random.default_rng(seed).integers(-100, 100, shape).astype(dtype)
        pm = bind(exe.mod, {"main": {0: tensor(W)}}, {}, {}, {}, {"main": [[0, dim, world, segments]]})
        blob = tvm_partial.save_to_bytes(pm)
        binding = _ffi_api.Describe(blob, "")["functions"][0]["bindings"][0]
        rows = segments == 1 and all(d == 1 for d in shape[:dim])
        assert binding["shard"]["layout"] == ("rows" if rows else "shard-major")
        payload = blob[binding["offset"] : binding["offset"] + binding["bytes"]]
        assert payload == b"".join(_rank_shard(W, r, world, dim, segments).tobytes() for r in range(world))
        whole = tvm_partial.load_from_bytes(blob, exe)
        assert tvm_partial.bindings(whole)["main"][0].numpy().tobytes() == W.tobytes()

    check()


def test_describe_says_how_each_tensor_is_split(tmp_path):
    exe, sig = _scale_kernel((3 * N // 2, K))
    pm = tvm_partial.partial(exe, signature=sig, w=ints((3 * N, K)), shards={"w": (0, 3)}, world=2)
    assert (
        "[0] w = float32[24, 16]@cpu:0 (split along dim 0 in 3 blocks over 2 ranks)"
        in tvm_partial.describe(pm)
    )
    path = str(tmp_path / "qkv.so")
    tvm_partial.export_library(pm, path)
    shown = tvm_partial.describe(tvm_partial.load(path, shard=(1, 2)))
    assert (
        "[0] w = float32[12, 16]@cpu:0 (rank 1's shard of a tensor split along dim 0 in 3 blocks over 2 ranks)"
        in shown
    )


def test_a_dim_counts_from_the_end_and_huge_numbers_are_refused_by_name():
    exe, sig = _scale_kernel((N, K // 2))
    pm = tvm_partial.partial(exe, signature=sig, w=ints((N, K)), shards={"w": -1}, world=2)
    assert tvm_partial._facts.of(pm).shards["main"] == [[0, 1, 2, 1]]  # dim 1
    with pytest.raises(ValueError, match="dim -3 is not a dimension of a tensor with 2 dimensions"):
        tvm_partial.partial(exe, signature=sig, w=ints((N, K)), shards={"w": -3}, world=2)
    for spec, world, message in (
        ((0, 2**63), 2, r"shards=\{'w': \(0, 9223372036854775808\)\}: out of range"),
        (2**63, 2, r"shards=\{'w': 9223372036854775808\}: out of range"),
        ((0, 2**31), 2, "segments 2147483648 is not 1 to 65536"),
        (1, 2**63, r"world=9223372036854775808: out of range"),
        (1, 2**31 - 1, "world 2147483647 is not 2 to 65536"),
        (1, -1, "world -1 is not 2 to 65536"),
        ((0, -(2**63)), 2, "segments -9223372036854775808 is not 1 to 65536"),
    ):
        with pytest.raises(ValueError, match=message):
            tvm_partial.partial(exe, signature=sig, w=ints((N, K)), shards={"w": spec}, world=world)


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
@pytest.mark.parametrize("placement", ["zero_copy", "weights_file"])
def test_on_the_device_each_rank_loads_its_shard_there(dev, tmp_path, placement):
    """Row shards bound on the device: each rank's load holds its rows of the weight there (a copy
    of its range of the file on a GPU, a view on the CPU) and computes its rows of the result."""
    w = te.placeholder((N // WORLD, K), "float32", name="w")
    b = te.placeholder((K,), "float32", name="b")
    out = te.compute(w.shape, lambda i, j: w[i, j] * 2.0 + b[j], name="out")
    W, B = ints((N, K), seed=1), ints(K, seed=2)
    pm = tvm_partial.partial(
        dev.compile([w, b, out]),
        signature=[w, b, out],
        w=W,
        b=B,
        shards={"w": 0},
        world=WORLD,
        device=dev.name,
    )
    options = (
        {"weights_file": tmp_path / "tp.safetensors"} if placement == "weights_file" else {"zero_copy": True}
    )
    tvm_partial.export_library(pm, tmp_path / "tp.so", **options)
    for rank in range(WORLD):
        m = tvm_partial.load(tmp_path / "tp.so", shard=(rank, WORLD))
        view = tvm_partial.bindings(m)["main"][0]
        assert str(view.device) == dev.name and view.numpy().tobytes() == np.split(W, WORLD)[rank].tobytes()
        result = dev.tensor(np.zeros((N // WORLD, K), "float32"))
        m["main"](result)
        assert result.numpy().tobytes() == _expected(W, B, rank).tobytes()
