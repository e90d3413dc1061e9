# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Disco: a ProcessSession whose workers load the same partial artifact and call it (docs/rpc.md);
and a Relax model bound with tensor-parallel shards, loaded per rank in this process and on 2 and
4 workers; compiled kernels bound with row, column and fused-block shards on 2 and 4 workers
(tests/test_shards.py covers shards in one process: binding, formats, crafted records).

TVM 0.27 imports ``tvm.runtime.disco`` before ``libtvm_runtime_extra`` (disco's C++ runtime) is
loaded, so after a plain ``import tvm`` it is None. Loading that library first works around it;
that must happen before ``import tvm``, hence a fresh interpreter. Skipped where the wheel has no
``libtvm_runtime_extra``.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend import nn
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_partial
from helpers import ints, mapped_file, run_json, run_python

LIB = os.path.join(os.path.dirname(importlib.util.find_spec("tvm").origin), "lib")  # type: ignore[union-attr, arg-type]


skip_without_disco = pytest.mark.skipif(
    not os.path.exists(os.path.join(LIB, "libtvm_runtime_extra.so")),
    reason="this TVM wheel has no libtvm_runtime_extra (no disco)",
)


@skip_without_disco
def test_two_disco_workers_load_and_call_one_artifact(tmp_path):
    result = run_json(
        """
        import ctypes, json, os, sys
        import tvm_ffi  # loads libtvm_ffi, which the TVM libraries below link to
        for name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):  # before import tvm
            ctypes.CDLL(os.path.join(sys.argv[2], name), ctypes.RTLD_GLOBAL)
        import numpy as np, tvm, tvm_partial
        from tvm import te
        from tvm.runtime import disco

        a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
        out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
        exe = tvm.compile(te.create_prim_func([a, b, c, out]), target="llvm")
        A, B, C = (np.random.default_rng(k).integers(-8, 9, 16).astype("float32") for k in range(3))
        path = os.path.join(sys.argv[1], "disco.so")
        tvm_partial.export_library(tvm_partial.partial(exe, a=A, b=B, c=C, signature=[a, b, c, out]),
                                   path, self_contained=True)
        local = tvm.runtime.empty((16,), "float32")
        tvm_partial.load(path)["main"](local)

        sess = disco.ProcessSession(num_workers=2)
        load = sess.get_global_func("ffi.ModuleLoadFromFile")
        module = disco.DModule(load(path), sess)  # on every worker
        result = sess.empty((16,), "float32")    # one tensor per worker
        module["main"](result)
        worker0 = tvm.runtime.empty((16,), "float32")
        sess.copy_from_worker_0(worker0, result)
        sess._sync_all()
        worker1 = result.debug_get_from_remote(1)
        print(json.dumps({"local": local.numpy().tobytes().hex(),
                          "expected": (A * 2 + B * 3 + C).tobytes().hex(),
                          "worker0": worker0.numpy().tobytes().hex(),
                          "worker1": worker1.numpy().tobytes().hex()}))
        # Released, the session shuts its workers down once. Not sess.shutdown(): the session's
        # destructor writes to them again, and once they have exited that throws (Broken pipe)
        # and aborts the process at exit, as often as the workers win the race (TVM 0.27).
        del load, module, result, sess
        """,
        str(tmp_path),
        LIB,
    )
    assert result["local"] == result["expected"]
    assert result["worker0"] == result["local"]
    assert result["worker1"] == result["local"]


# -- compiled kernels with shards: each worker maps its own shard of one file ------------------
@skip_without_disco
@pytest.mark.parametrize(
    ("world", "placement", "split"),
    [
        pytest.param(2, "weights file", "0", id="rows-2"),
        # Rows again, over four workers: the slow run (columns-2 keeps the appended placement here).
        pytest.param(4, "appended", "0", id="rows-4", marks=pytest.mark.slow),
        pytest.param(2, "appended", "1", id="columns-2"),
        pytest.param(4, "weights file", "0,3", id="fused-qkv-4"),
    ],
)
def test_disco_workers_each_load_their_shard(tmp_path, world, placement, split):
    """Each worker's result is numpy's for its shard (rows, columns, or its slice of each fused
    block), and the gathered result is the whole kernel's in one process, bitwise."""
    result = run_json(
        """
        import ctypes, json, os, sys
        import tvm_ffi  # loads libtvm_ffi, which the TVM libraries below link to
        for name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):  # before import tvm (module docstring)
            ctypes.CDLL(os.path.join(sys.argv[2], name), ctypes.RTLD_GLOBAL)
        import numpy as np, tvm, tvm_partial
        from tvm import te
        from tvm.runtime import disco

        world, placement = int(sys.argv[3]), sys.argv[4]
        dim, segments = (list(map(int, sys.argv[5].split(","))) + [1])[:2]
        shape = (3 * 8 if segments == 3 else 8, 16)
        shard = list(shape)
        shard[dim] //= world

        def kernel(shape):  # out = w * 2 + b, b along the last dim (replicated)
            w = te.placeholder(shape, "float32", name="w")
            b = te.placeholder((shape[1],), "float32", name="b")
            out = te.compute(w.shape, lambda i, j: w[i, j] * 2.0 + b[j], name="out")
            return tvm.compile(te.create_prim_func([w, b, out]), target="llvm"), [w, b, out]

        def rank_of(a, r):  # numpy's rank r: its slice of each fused block along dim
            return np.concatenate([np.split(x, world, axis=dim)[r] for x in np.split(a, segments, axis=dim)], axis=dim)

        def gather(parts):  # the inverse of rank_of over all ranks
            blocks = [np.split(p, segments, axis=dim) for p in parts]
            return np.concatenate([np.concatenate([b[s] for b in blocks], axis=dim) for s in range(segments)], axis=dim)

        W = np.random.default_rng(1).integers(-8, 9, shape).astype("float32")
        B = np.random.default_rng(2).integers(-8, 9, shard[1]).astype("float32")
        exe, sig = kernel(tuple(shard))
        path = os.path.join(sys.argv[1], "tp.so")
        spec = (dim, segments) if segments > 1 else dim
        pm = tvm_partial.partial(exe, signature=sig, w=W, b=B, shards={"w": spec}, world=world)
        if placement == "weights file":
            tvm_partial.export_library(pm, path, weights_file=os.path.join(sys.argv[1], "tp.safetensors"))
        else:
            tvm_partial.export_library(pm, path, zero_copy=True)
        whole_exe, whole_sig = kernel(shape)  # the same computation in one process
        whole = tvm.runtime.empty(shape, "float32")
        B_whole = np.tile(B, shape[1] // shard[1])  # a column split: each rank adds the same b
        tvm_partial.partial(whole_exe, signature=whole_sig, w=W, b=B_whole)["main"](whole)

        sess = disco.ProcessSession(num_workers=world)
        module = disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(path), sess)
        result = sess.empty(tuple(shard), "float32")  # one rank's shard per worker
        module["main"](result)
        sess._sync_all()
        got = [result.debug_get_from_remote(r).numpy() for r in range(world)]
        print(json.dumps({"got": [g.tobytes().hex() for g in got],
                          "expected": [(rank_of(W, r) * np.float32(2) + B).tobytes().hex()
                                       for r in range(world)],
                          "gathered": gather(got).tobytes().hex(),
                          "whole": whole.numpy().tobytes().hex()}))
        del module, result, sess  # released, not sess.shutdown() (see above)
        """,
        str(tmp_path),
        LIB,
        str(world),
        placement,
        split,
    )
    assert result["got"] == result["expected"]
    assert len(set(result["got"])) == world
    assert result["gathered"] == result["whole"]


SESSION_ENDS = {  # case: (the artifact's world, the workers' entry module, what stderr says)
    "world mismatch": (
        4,
        None,
        ["this artifact is sharded over world 4 (function 'main' position 0), not 2"],
    ),
    "worker without tvm-partial": (
        2,
        "worker_without_tvm_partial",
        [
            "Cannot find global function: tvm_partial.LoadShard",
            "Failed to autoload tvm backend 'tvm_partial'",
        ],
    ),
}


@skip_without_disco
@pytest.mark.parametrize("case", list(SESSION_ENDS))
def test_a_worker_that_cannot_load_ends_the_session_with_the_reason(tmp_path, case):
    """TVM's disco does not hand a worker's error back to the driver: it ends the session's
    processes (worker 0 runs in the driver's). The reason is on stderr, and nothing hangs: an
    artifact of another world, or a worker whose interpreter has no tvm-partial (here hidden from
    its imports), which cannot find tvm_partial.LoadShard."""
    world, entry, messages = SESSION_ENDS[case]
    (tmp_path / "worker_without_tvm_partial.py").write_text(
        "import runpy, sys\n"
        "sys.modules['tvm_partial'] = None  # as if it were not installed in this interpreter\n"
        "runpy.run_module('tvm.exec.disco_worker', run_name='__main__')\n"
    )
    proc = run_python(
        """
        import ctypes, os, sys
        import tvm_ffi
        for name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):
            ctypes.CDLL(os.path.join(sys.argv[2], name), ctypes.RTLD_GLOBAL)
        import numpy as np, tvm, tvm_partial
        from tvm import te
        from tvm.runtime import disco

        world, entry = int(sys.argv[3]), sys.argv[4]
        w = te.placeholder((4, 16), "float32", name="w")
        out = te.compute((4, 16), lambda i, j: w[i, j] * 2.0, name="out")
        exe = tvm.compile(te.create_prim_func([w, out]), target="llvm")
        path = os.path.join(sys.argv[1], "tp.so")
        W = np.zeros((4 * world, 16), "float32")
        tvm_partial.export_library(tvm_partial.partial(exe, signature=[w, out], w=W, shards={"w": 0}, world=world), path)
        sess = disco.ProcessSession(num_workers=2, **({"entrypoint": entry} if entry else {}))
        sess.get_global_func("tvm_partial.LoadShard")(path)
        sess._sync_all()
        print("loaded")
        """,
        str(tmp_path),
        LIB,
        str(world),
        entry or "",
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))},
        timeout=120,
    )
    assert proc.returncode != 0 and "loaded" not in proc.stdout
    for message in messages:
        assert message in proc.stderr, proc.stderr[-2000:]


# -- Relax models with tensor-parallel shards ---------------------------------------------------
# A frontend.nn model whose Linear layer is split by output rows over the ranks (dim 0 of
# fc.weight), with a per-output scale split along dim 1 of [1, RN] (its leading dim is 1: a row
# shard too) and a replicated input shift. Each rank's output is its columns of the whole
# model's: concatenated along axis 1 they are the whole model's output in one process, bitwise
# (small integers: every float sum is exact).
RN, RK = 64, 16  # fc.weight is [RN, RK] whole; scale [1, RN]; x [2, RK]


def _relax_tp(rows: int):
    """(executable, IRModule) of the rank model: fc.weight [rows, RK], scale [1, rows]."""

    class RankModel(nn.Module):
        def __init__(self):
            self.shift = nn.Parameter((RK,), "float32")  # replicated
            self.fc = nn.Linear(RK, rows, bias=False)  # one rank's rows
            self.scale = nn.Parameter((1, rows), "float32")  # one rank's columns of [1, RN]

        def forward(self, x):
            return self.fc(x + self.shift) * self.scale

    mod, _ = RankModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, RK), "float32")}})
    return tvm.compile(mod, target="llvm"), mod


@pytest.fixture(scope="module")
def relax_tp():
    """rows -> (executable, IRModule), each compiled once; and the weights, input and the whole
    model's output in one process."""
    models: dict[int, tuple] = {}

    def model(rows):
        if rows not in models:
            models[rows] = _relax_tp(rows)
        return models[rows]

    params = {
        "shift": ints(RK, seed=21),
        "fc.weight": ints((RN, RK), seed=22),
        "scale": ints((1, RN), seed=23),
    }
    x = ints((2, RK), seed=24)
    exe, mod = model(RN)
    whole = tvm_partial.partial(exe, signature=mod, function="forward", **params)(
        tvm.runtime.tensor(x)
    ).numpy()
    return model, params, x, whole


def _relax_expected(params, x, rank, world):
    weight = np.split(params["fc.weight"], world, axis=0)[rank]
    scale = np.split(params["scale"], world, axis=1)[rank]
    return (x + params["shift"]) @ weight.T * scale


def _relax_export(relax_tp, path, world, placement):
    model, params, _, _ = relax_tp
    exe, mod = model(RN // world)
    pm = tvm_partial.partial(
        exe, signature=mod, function="forward", **params, shards={"fc.weight": 0, "scale": 1}, world=world
    )
    options = {
        "inline": {"zero_copy": False},
        "appended": {"zero_copy": True},
        "weights file": {"weights_file": str(path.with_suffix(".safetensors"))},
    }[placement]
    tvm_partial.export_library(pm, str(path), **options)
    return pm


@pytest.mark.parametrize("placement", ["inline", "appended", "weights file"])
def test_relax_ranks_load_their_shards_in_process(relax_tp, tmp_path, placement):
    _, params, x, whole = relax_tp
    path = tmp_path / "relax_tp.so"
    pm = _relax_export(relax_tp, path, 2, placement)
    with pytest.raises(
        ValueError, match=r"binds whole tensors split over 2 ranks \(shards: 'fc.weight', 'scale'\)"
    ):
        pm(tvm.runtime.tensor(x))  # bound whole: not called before a rank is loaded
    info = tvm_partial.inspect(str(path))
    assert info["relax_vm"] == {"devices": ["cpu:0"], "allocators": ["pooled"], "compiled_in": [], "ties": []}
    shown = {b["name"]: b.get("shard") for b in info["functions"][0]["bindings"]}
    assert shown["shift"] is None
    assert (shown["fc.weight"]["dim"], shown["fc.weight"]["shape"]) == (0, [RN // 2, RK])
    assert (shown["scale"]["dim"], shown["scale"]["shape"]) == (1, [1, RN // 2])
    outputs = []
    for rank in range(2):
        m = tvm_partial.load(str(path), shard=(rank, 2))
        views = tvm_partial.bindings(m)["forward"]
        assert views[1].numpy().tobytes() == params["shift"].tobytes()  # replicated: whole
        assert views[2].numpy().tobytes() == np.split(params["fc.weight"], 2)[rank].tobytes()
        assert views[3].numpy().tobytes() == np.split(params["scale"], 2, axis=1)[rank].tobytes()
        if placement != "inline":  # a view of the file's pages at the rank's offset, not a copy
            target = path if placement == "appended" else path.with_suffix(".safetensors")
            assert mapped_file(views[2].data_ptr()) == os.path.realpath(target)
        out = m(tvm.runtime.tensor(x)).numpy()  # pm(x): forward, the one bound function
        assert out.tobytes() == _relax_expected(params, x, rank, 2).tobytes()
        assert m["forward"](tvm.runtime.tensor(x)).numpy().tobytes() == out.tobytes()
        assert tvm_partial.verify(str(path), shard=(rank, 2))["intact"]
        outputs.append(out)
    assert whole.tobytes() == _relax_expected(params, x, 0, 1).tobytes()  # the whole model: numpy's
    assert np.concatenate(outputs, axis=1).tobytes() == whole.tobytes()

    # Loaded whole (without shard=), it refuses the call with the same message; a world that
    # is not the one bound for is refused at load.
    with pytest.raises(ValueError, match=r"binds whole tensors split over 2 ranks.*shard=\(rank, 2\)"):
        tvm_partial.load(str(path))(tvm.runtime.tensor(x))
    with pytest.raises(ValueError, match=r"sharded over world 2 .*not 4: load it with shard=\(rank, 2\)"):
        tvm_partial.load(str(path), shard=(0, 4))


def test_relax_shards_are_checked_at_bind_time(relax_tp):
    model, params, _, _ = relax_tp
    exe, mod = model(RN // 2)
    sharded = {"fc.weight": 0, "scale": 1}
    # frontend.nn annotates only the inputs: without signature= no shard could be checked.
    with pytest.raises(TypeError, match=r"shards= names 'fc.weight', whose shape .* pass signature=irmodule"):
        tvm_partial.partial(exe, function="forward", **params, shards=sharded, world=2)
    with pytest.raises(
        ValueError, match=r"parameter 'fc.weight' .*one rank's shard of \(64, 16\).*\(16, 16\)"
    ):
        tvm_partial.partial(exe, signature=mod, function="forward", **params, shards=sharded, world=4)
    with pytest.raises(TypeError, match=r"not a relax.VirtualMachine.*bind the executable"):
        tvm_partial.partial(
            relax.VirtualMachine(exe, tvm.cpu()), function="forward", **params, shards=sharded, world=2
        )

    @I.ir_module
    class Rank:  # TVMScript: the executable records every parameter's shape, no signature= needed
        @R.function
        def main(x: R.Tensor((2, 16), "float32"), w: R.Tensor((32, 16), "float32")):
            with R.dataflow():
                y = R.matmul(x, R.permute_dims(w))
                R.output(y)
            return y

    script_exe = tvm.compile(Rank, target="llvm")
    whole = params["fc.weight"]
    held = tvm_partial.bindings(tvm_partial.partial(script_exe, w=whole, shards={"w": 0}, world=2))
    assert held["main"][1].numpy().tobytes() == whole.tobytes()  # bound whole: each rank slices it
    with pytest.raises(ValueError, match=r"parameter 'w' .*one rank's shard of \(32, 16\).*does not match w"):
        tvm_partial.partial(script_exe, w=whole[: RN // 2], shards={"w": 0}, world=2)


@skip_without_disco
@pytest.mark.parametrize(("world", "placement"), [(2, "weights file"), (2, "inline"), (4, "appended")])
def test_disco_workers_run_their_shard_of_a_relax_model(relax_tp, tmp_path, world, placement):
    """Each worker loads its rank's view with tvm_partial.LoadShard and runs the Relax VM on it;
    each result is numpy's for its shard, and the gathered result the whole model's in one
    process, bitwise."""
    _, params, x, whole = relax_tp
    path = tmp_path / "relax_tp.so"
    _relax_export(relax_tp, path, world, placement)
    np.save(tmp_path / "x.npy", x)
    result = run_json(
        """
        import ctypes, json, os, sys
        import tvm_ffi  # loads libtvm_ffi, which the TVM libraries below link to
        for name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):  # before import tvm
            ctypes.CDLL(os.path.join(sys.argv[2], name), ctypes.RTLD_GLOBAL)
        import numpy as np, tvm
        from tvm.runtime import disco

        world, data = int(sys.argv[3]), np.load(sys.argv[4])
        sess = disco.ProcessSession(num_workers=world)
        module = disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(sys.argv[1]), sess)
        x = sess.empty(data.shape, "float32")
        for rank in range(world):  # the same input on every worker (no CPU collective in TVM 0.27)
            x.debug_copy_from(rank, data)
        y = module["forward"](x)
        sess._sync_all()
        got = [y.debug_get_from_remote(rank).numpy() for rank in range(world)]
        print(json.dumps({"got": [g.tobytes().hex() for g in got], "shape": list(got[0].shape)}))
        del module, x, y, sess  # released, not sess.shutdown() (see the first test)
        """,
        str(path),
        LIB,
        str(world),
        str(tmp_path / "x.npy"),
    )
    assert result["shape"] == [2, RN // world]
    got = [np.frombuffer(bytes.fromhex(h), "float32").reshape(2, RN // world) for h in result["got"]]
    for rank in range(world):
        assert got[rank].tobytes() == _relax_expected(params, x, rank, world).tobytes()
    assert len({g.tobytes() for g in got}) == world
    assert np.concatenate(got, axis=1).tobytes() == whole.tobytes()
