# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""TVM RPC: artifacts run on an ``rpc_server``; partials of remote modules (docs/rpc.md).

Every server listens on 127.0.0.1 on a free port and is killed at the end of its fixture. The
module's server runs with ``TVM_DEVICE_BACKEND_AUTOLOAD=0``: tvm-partial is not loaded there, as on
a board where it is not installed.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import rpc

import tvm_partial
from helpers import affine4_ref, ints, run_json, tensor
from rpc_helpers import HOST, rpc_server, tracker_with_servers
from tvm_partial import remote as tp_remote

pytest.importorskip("cloudpickle")  # TVM's RPC server needs cloudpickle, psutil and tornado
pytest.importorskip("psutil")
pytest.importorskip("tornado")

NO_TVM_PARTIAL = {"TVM_DEVICE_BACKEND_AUTOLOAD": "0"}
A, B, C = ints(16, seed=3), ints(16, seed=1), ints(16, seed=2)


@pytest.fixture(scope="module")
def session():
    with rpc_server(env=NO_TVM_PARTIAL) as port:
        yield rpc.connect(HOST, port, session_timeout=900)  # the server ends a longer session


@pytest.fixture(scope="module")
def files(affine4, tmp_path_factory):
    """The artifacts, exported once: self-contained, plain (needs tvm-partial), with outputs, and
    the compiled library alone."""
    exe, tensors = affine4
    folder = tmp_path_factory.mktemp("rpc")
    pm = tvm_partial.partial(exe, b=B, c=C, signature=tensors)
    out = tvm_partial.partial(exe, b=B, c=C, signature=tensors, outputs="out")
    paths = {name: str(folder / f"{name}.so") for name in ("self_contained", "plain", "outputs", "code")}
    tvm_partial.export_library(pm, paths["self_contained"], self_contained=True)
    tvm_partial.export_library(pm, paths["plain"])
    tvm_partial.export_library(out, paths["outputs"], self_contained=True)
    exe.export_library(paths["code"])
    return paths


_uploads = itertools.count()


def _send(session, path) -> str:
    """Upload as bytes (TVM's upload of a path leaves the file open: a ResourceWarning), under a
    new name each time: the server writes over a file in place, and a library already loaded
    from it then crashes the server (docs/rpc.md)."""
    name = f"{next(_uploads)}_{Path(path).name}"
    session.upload(bytearray(Path(path).read_bytes()), target=name)
    return name


def _upload(session, path):
    return session.load_module(_send(session, path))


def _local_result(path) -> np.ndarray:
    out = tvm.runtime.empty((16,), "float32")
    tvm_partial.load(path)["main"](tensor(A), out)
    return out.numpy()


def test_self_contained_artifact_runs_on_a_server_without_tvm_partial(session, files):
    mod = _upload(session, files["self_contained"])
    dev = session.cpu()
    out = tvm.runtime.empty((16,), "float32", dev)
    mod["main"](tvm.runtime.tensor(A, dev), out)
    local = _local_result(files["self_contained"])
    assert out.numpy().tobytes() == local.tobytes()
    assert np.array_equal(local, affine4_ref(A, B, C))


def test_artifact_with_outputs_returns_a_remote_tensor(session, files):
    mod = _upload(session, files["outputs"])
    dev = session.cpu()
    result = mod["main"](tvm.runtime.tensor(A, dev))
    assert tp_remote.device_session(result.device) == tp_remote.device_session(dev)
    assert result.numpy().tobytes() == affine4_ref(A, B, C).tobytes()


def test_plain_artifact_on_a_server_without_tvm_partial_names_the_loader(files):
    # a server of its own: once a self-contained artifact is loaded, its loader is registered there
    with rpc_server(env=NO_TVM_PARTIAL) as port:
        session = rpc.connect(HOST, port, session_timeout=300)
        _check_plain_refused(session, _send(session, files["plain"]))


def _check_plain_refused(session, name):
    with pytest.raises(
        Exception, match=r"created using \{partial_apply\} but a loader of that name is not registered"
    ):
        session.load_module(name)
    with pytest.raises(
        RuntimeError,
        match=r"ffi\.Module\.load_from_bytes\.partial_apply.*"
        r"self_contained=True.*install tvm-partial",
    ) as info:
        tp_remote.load_module(session, name)
    assert "partial_apply" in str(info.value.__cause__)  # the server's own error, chained


def test_a_load_that_fails_on_a_server_with_the_loader_keeps_its_own_error():
    """tp_remote.load_module asks the server whether tvm-partial's loader is there: where it is
    (a server that loads tvm-partial), a load that fails for another reason keeps its own error."""
    with rpc_server() as port:
        session = rpc.connect(HOST, port, session_timeout=300)
        with pytest.raises(Exception) as info:
            tp_remote.load_module(session, "no-such-file.so")
    assert "loader" not in str(info.value) and "no-such-file.so" in str(info.value)


def test_remote_module_binds_numpy_by_name_on_the_session_device(session, files, affine4):
    _, tensors = affine4
    mod = _upload(session, files["code"])
    pm = tvm_partial.partial(mod, b=B, c=C, signature=tensors)  # no device=
    bound = tvm_partial.bindings(pm)["main"]
    assert {tp_remote.device_session(t.device) for t in bound.values()} == {
        tp_remote.device_session(session.cpu())
    }
    dev = session.cpu()
    out = tvm.runtime.empty((16,), "float32", dev)
    pm["main"](tvm.runtime.tensor(A, dev), out)
    assert out.numpy().tobytes() == affine4_ref(A, B, C).tobytes()
    # a partial of that partial, and rebind, stay on the session's device
    pm2 = tvm_partial.rebind(tvm_partial.partial(pm, a=A, signature=tensors), a=C)
    pm2["main"](out)
    assert out.numpy().tobytes() == affine4_ref(C, B, C).tobytes()


def test_remote_module_outputs_are_allocated_on_the_remote_device(session, files, affine4):
    _, tensors = affine4
    mod = _upload(session, files["code"])
    dev = session.cpu()
    remote_b = tvm.runtime.tensor(B, dev)
    pm = tvm_partial.partial(mod, b=remote_b, c=C, signature=tensors, outputs="out")
    assert tvm_partial.bindings(pm)["main"][1].same_as(remote_b)  # by reference, not copied
    result = pm(tvm.runtime.tensor(A, dev))
    assert tp_remote.device_session(result.device) == tp_remote.device_session(dev)
    assert result.numpy().tobytes() == affine4_ref(A, B, C).tobytes()


def test_remote_module_refuses_values_of_this_process(session, files, affine4):
    _, tensors = affine4
    mod = _upload(session, files["code"])
    with pytest.raises(
        ValueError,
        match=r"parameter 'b' \(position 1\).*lives in this process.*"
        "module runs in RPC session",
    ):
        tvm_partial.partial(mod, b=tensor(B), signature=tensors)
    with pytest.raises(
        ValueError, match=r"device=cpu:0: the module runs in RPC session \d+.*remote\.cpu\(\)"
    ):
        tvm_partial.partial(mod, b=B, signature=tensors, device=tvm.cpu())


def test_export_of_a_remote_partial_is_refused_with_what_to_do(session, files, affine4, tmp_path):
    _, tensors = affine4
    pm = tvm_partial.partial(_upload(session, files["code"]), b=B, c=C, signature=tensors)
    with pytest.raises(
        ValueError,
        match=r"export_library: this module wraps a module of an RPC "
        r"session.*bind the compiled module locally.*remote\.upload",
    ):
        tvm_partial.export_library(pm, tmp_path / "x.so")
    with pytest.raises(ValueError, match="save_to_bytes: this module wraps a module of an RPC session"):
        tvm_partial.save_to_bytes(pm)
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # a tracker and two servers, 10 s here; the default run keeps one server's tests
def test_tracker_spreads_sessions_over_two_servers(files, affine4):
    _, tensors = affine4
    with tracker_with_servers(2, env=NO_TVM_PARTIAL) as port:
        tracker = rpc.connect_tracker(HOST, port)
        first = tracker.request("partial", session_timeout=300)
        second = tracker.request("partial", session_timeout=300)  # the other, free server
        assert tracker.summary()["queue_info"]["partial"]["free"] == 0
        expected = affine4_ref(A, B, C).tobytes()
        for sess in (first, second):
            mod = _upload(sess, files["self_contained"])
            out = tvm.runtime.empty((16,), "float32", sess.cpu())
            mod["main"](tvm.runtime.tensor(A, sess.cpu()), out)
            assert out.numpy().tobytes() == expected
        # a tensor of one session cannot be read by the other's module, nor by a local one
        code = _upload(second, files["code"])
        foreign = tvm.runtime.tensor(B, first.cpu())
        with pytest.raises(
            ValueError,
            match=r"parameter 'b'.*lives in RPC session \d+.*module runs in "
            r"RPC session \d+",
        ):
            tvm_partial.partial(code, b=foreign, signature=tensors)
        with pytest.raises(ValueError, match=r"lives in RPC session \d+.*module runs in this process"):
            tvm_partial.partial(affine4[0], b=foreign, signature=tensors)
        with pytest.raises(
            ValueError, match=r"device=cpu:0 of RPC session \d+: the module runs in RPC session \d+"
        ):
            tvm_partial.partial(code, b=B, signature=tensors, device=first.cpu())


def test_server_killed_mid_call_raises_within_the_timeout(tmp_path):
    """A long call in flight when its server dies: an error in the caller, no hang."""
    result = run_json(
        """
        import json, os, signal, sys, threading, time
        sys.path.insert(0, sys.argv[2])
        import numpy as np, tvm
        from tvm import rpc, te
        import tvm_partial
        from rpc_helpers import HOST, rpc_server

        # a kernel that runs for seconds: out[0] = sum of sqrt over 2**34 steps
        a = te.placeholder((16,), "float32", name="a")
        k1, k2 = te.reduce_axis((0, 1 << 17), "k1"), te.reduce_axis((0, 1 << 17), "k2")
        out = te.compute((1,), lambda i: te.sum(te.sqrt(a[k2 % 16] + k1.astype("float32")),
                                                axis=[k1, k2]), name="out")
        func = te.create_prim_func([a, out]).with_attr("global_symbol", "main")
        exe = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
        pm = tvm_partial.partial(exe, a=np.ones(16, "float32"), signature=[a, out])
        path = os.path.join(sys.argv[1], "slow.so")
        tvm_partial.export_library(pm, path, self_contained=True)
        with rpc_server() as port:
            sess = rpc.connect(HOST, port, session_timeout=120)
            sess.upload(bytearray(open(path, "rb").read()), target="slow.so")
            main = sess.load_module("slow.so")["main"]
            res = tvm.runtime.empty((1,), "float32", sess.cpu())
            import psutil
            workers = [w for w in psutil.Process().children(recursive=True) if w.name().startswith("python")]
            cpu = lambda: sum(sum(w.cpu_times()[:2]) for w in workers)  # the server and its session worker
            calling, killed = threading.Event(), []
            def kill():
                # The call is in flight once the server computes: poll its CPU time (bounded).
                calling.wait()
                base, deadline = cpu(), time.monotonic() + 60
                while cpu() - base < 0.2 and time.monotonic() < deadline:
                    time.sleep(0.02)
                killed.append(time.monotonic())
                for w in workers:
                    os.kill(w.pid, signal.SIGKILL)
            threading.Thread(target=kill, daemon=True).start()
            start = time.monotonic()
            calling.set()
            try:
                main(res)
                error = None
            except Exception as err:
                error = f"{type(err).__name__}: {err}"
            end = time.monotonic()
            print(json.dumps({"error": error, "killed_after": killed[0] - start if killed else None,
                              "error_after_kill": end - killed[0] if killed else None}))
        """,
        str(tmp_path),
        str(Path(__file__).parent),
    )
    assert result["error"] is not None, "the call returned although its server was killed"
    assert result["killed_after"] is not None, result  # killed while the call computed ...
    assert 0 <= result["error_after_kill"] < 30, result  # ... and the error came promptly


def _affine_relax():
    """y = x * w + b as a Relax IRModule."""
    from tvm.script import relax as R

    @tvm.script.ir_module
    class Affine:
        @R.function
        def main(x: R.Tensor((16,), "float32"), w: R.Tensor((16,), "float32"), b: R.Tensor((16,), "float32")):
            return R.add(R.multiply(x, w), b)

    return Affine


@pytest.fixture(scope="module")
def relax_code(tmp_path_factory):
    """A Relax model (y = x * w + b) compiled and exported as a library, and its local result."""
    from tvm import relax

    exe = tvm.compile(_affine_relax(), target="llvm")
    path = str(tmp_path_factory.mktemp("relax") / "relax_code.so")
    exe.export_library(path)
    local = tvm_partial.partial(relax.VirtualMachine(exe, tvm.cpu()), w=B, b=C)(tensor(A)).numpy()
    return path, local


def test_relax_model_on_a_server_binds_numpy_weights_by_name(session, relax_code):
    """TVM's tutorial uploads the library and the weights apart; here the weights are bound from
    the client, by the Relax parameter names, onto the session's device (no device= given)."""
    from tvm import relax

    path, local = relax_code
    vm = relax.VirtualMachine(_upload(session, path), session.cpu())
    pm = tvm_partial.partial(vm, w=B, b=C)
    assert tvm_partial.param_names(pm)["main"] == ["x", "w", "b"]
    for value in tvm_partial.bindings(pm)["main"].values():
        assert tp_remote.device_session(value.device) == tp_remote.device_session(session.cpu())
    result = pm(tvm.runtime.tensor(A, session.cpu()))
    assert tp_remote.device_session(result.device) == tp_remote.device_session(session.cpu())
    assert result.numpy().tobytes() == local.tobytes()
    assert np.array_equal(local, A * B + C)


def test_relax_artifact_with_its_weights_runs_on_a_server_without_tvm_partial(session, relax_code, tmp_path):
    """The Relax model and its weights as one self-contained artifact: one upload, no .npz, and
    the server needs no tvm-partial. The VM is created there, on the recorded device (its CPU)."""
    _, local = relax_code
    exe = tvm.compile(_affine_relax(), target="llvm")
    path = tmp_path / "relax_model.so"
    tvm_partial.export_library(tvm_partial.partial(exe, w=B, b=C), path, self_contained=True)
    mod = _upload(session, path)
    result = mod["main"](tvm.runtime.tensor(A, session.cpu()))
    assert tp_remote.device_session(result.device) == tp_remote.device_session(session.cpu())
    assert result.numpy().tobytes() == local.tobytes()


def test_outputs_on_a_dead_server_raise_the_rpc_error(files, affine4):
    """A partial that allocates its output on a remote device whose server has died: the call
    raises the RPC error itself (its kind and words), not a RuntimeError about allocation."""
    _, tensors = affine4
    with rpc_server(env=NO_TVM_PARTIAL) as port:
        sess = rpc.connect(HOST, port, session_timeout=120)
        mod = _upload(sess, files["code"])
        dev = sess.cpu()
        pm = tvm_partial.partial(mod, b=tvm.runtime.tensor(B, dev), c=C, signature=tensors, outputs="out")
        a = tvm.runtime.tensor(A, dev)
        assert pm(a).numpy().tobytes() == affine4_ref(A, B, C).tobytes()
        import psutil

        for child in psutil.Process().children(recursive=True):
            if child.name().startswith("python"):
                child.kill()
        with pytest.raises(Exception) as raised:
            pm(a)
    # TVM's RPC error (an InternalError saying the connection went), with the output named.
    assert type(raised.value).__name__ == "InternalError", (type(raised.value), str(raised.value)[:500])
    assert "allocating output 'out' (position 3)" in str(raised.value)
    assert "Socket" in str(raised.value) or "kShutdown" in str(raised.value), str(raised.value)[:500]
