# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Relax models as targets: bound by (dotted) parameter names, exported with their weights as one
artifact, loaded in a fresh process; results bitwise equal to the direct VM call."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_partial
from helpers import ints, run_json


@I.ir_module
class MLP:
    @R.function
    def main(
        x: R.Tensor((2, 8), "float32"),
        w1: R.Tensor((8, 16), "float32"),
        b1: R.Tensor((16,), "float32"),
        w2: R.Tensor((16, 4), "float32"),
    ):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, w1), b1))
            y = R.matmul(h, w2)
            R.output(y)
        return y

    @R.function
    def shifted(x: R.Tensor((2, 8), "float32"), s: R.Tensor((8,), "float32")):
        with R.dataflow():
            y = R.add(x, s)
            R.output(y)
        return y


PARAMS = {"w1": ints((8, 16), seed=1), "b1": ints((16,), seed=2), "w2": ints((16, 4), seed=3)}
X = ints((2, 8), seed=4)


@pytest.fixture(scope="module")
def mlp():
    exe = tvm.compile(MLP, target="llvm")
    return exe, relax.VirtualMachine(exe, tvm.cpu())


def _direct(vm, fname, *args):
    return vm[fname](*(tvm.runtime.tensor(a) for a in args)).numpy()


def test_executable_bound_by_name_equals_direct_vm_call(mlp):
    exe, vm = mlp
    pm = tvm_partial.partial(exe, device=tvm.cpu(), **PARAMS)
    expected = _direct(vm, "main", X, PARAMS["w1"], PARAMS["b1"], PARAMS["w2"])
    np.testing.assert_array_equal(pm(tvm.runtime.tensor(X)).numpy(), expected)
    np.testing.assert_array_equal(pm["main"](tvm.runtime.tensor(X)).numpy(), expected)
    assert tvm_partial.param_names(pm) == {"main": ["x", "w1", "b1", "w2"]}


def test_two_functions_bound_differently(mlp):
    exe, vm = mlp
    s = ints((8,), seed=5)
    pm = tvm_partial.partial(exe, device=tvm.cpu(), **PARAMS)
    pm = tvm_partial.partial(pm, function="shifted", s=s)
    np.testing.assert_array_equal(pm["shifted"](tvm.runtime.tensor(X)).numpy(), _direct(vm, "shifted", X, s))
    np.testing.assert_array_equal(
        pm(tvm.runtime.tensor(X)).numpy(), _direct(vm, "main", X, PARAMS["w1"], PARAMS["b1"], PARAMS["w2"])
    )


def test_relax_signature_checks_dtype_and_shape(mlp):
    exe, _ = mlp
    with pytest.raises(ValueError, match=r"cannot bind parameter 'b1' \(position 2\): shape \(3,\)"):
        tvm_partial.partial(exe, signature=MLP["main"], w1=PARAMS["w1"], b1=np.zeros(3, "float32"))
    with pytest.raises(TypeError, match=r"parameter 'w2' \(position 3\): dtype float64"):
        tvm_partial.partial(exe, signature=MLP["main"], w2=np.zeros((16, 4)))


def test_signature_of_another_function_refused(mlp):
    exe, vm = mlp
    with pytest.raises(
        ValueError,
        match=r"signature= has parameters \(x, s\), but the Relax function "
        r"main\(\) has \(x, w1, b1, w2\)",
    ):
        tvm_partial.partial(exe, signature=MLP["shifted"], s=np.zeros(8, "float32"))
    with pytest.raises(ValueError, match=r"but the Relax function main\(\)"):
        tvm_partial.partial(vm, signature=MLP["shifted"], s=np.zeros(8, "float32"))


def test_unknown_parameter_and_function_refused(mlp):
    exe, _ = mlp
    with pytest.raises(TypeError, match=r"main\(\) has no parameter 'w3'; its parameters are x, w1, b1, w2"):
        tvm_partial.partial(exe, w3=PARAMS["w2"])
    with pytest.raises(AttributeError, match=r"the Relax model has no function 'nope'"):
        tvm_partial.partial(exe, function="nope", w1=PARAMS["w1"])


def test_virtual_machine_partial_refuses_export_clearly(mlp, tmp_path):
    _, vm = mlp
    pm = tvm_partial.partial(vm, **PARAMS)
    with pytest.raises(
        TypeError,
        match=r"binds a relax.VirtualMachine, which cannot be saved; bind the "
        r"executable instead",
    ):
        tvm_partial.export_library(pm, tmp_path / "vm.so")
    assert not list(tmp_path.iterdir())


def test_missing_device_named_at_first_use(mlp):
    exe, _ = mlp
    make = tvm_ffi.get_global_func("tvm_partial.BindModel")
    mod = make(exe.mod, [[2, 99, 2], [1, 0, 2]], None, [], {})["module"]  # cuda:99 exists nowhere
    with pytest.raises(RuntimeError, match=r"runs on cuda:99, which is not present here"):
        mod["main"]


def test_vm_record_loader_refuses_bad_bytes():
    load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply_vm")
    for bad in (
        b"",
        b"TVMPAVM1",
        b"TVMPAVM1\x01\x00\x00\x00",
        b"XXXXXXXX" + bytes(16),
        b"TVMPAVM1\x01\x00\x00\x00" + bytes(12),
        b"TVMPAVM1\xff\xff\xff\xff" + bytes(12),
    ):
        with pytest.raises(ValueError, match=r"partial_apply_vm loader"):
            load(bad)


_LOAD_AND_CALL = """
    import json, sys, numpy as np, tvm
    m = tvm.runtime.load_module(sys.argv[1])
    x = np.load(sys.argv[2])
    out = {"kinds": [m.kind] + [i.kind for i in m.imports]}
    for name in sys.argv[3:]:
        out[name] = m[name](tvm.runtime.tensor(x)).numpy().tolist()
    print(json.dumps(out))
"""


@pytest.mark.parametrize("self_contained", [False, True])
def test_export_load_in_fresh_process(mlp, tmp_path, self_contained):
    exe, vm = mlp
    s = ints((8,), seed=6)
    pm = tvm_partial.partial(tvm_partial.partial(exe, device=tvm.cpu(), **PARAMS), function="shifted", s=s)
    path = tmp_path / "mlp.so"
    tvm_partial.export_library(pm, path, self_contained=self_contained)
    np.save(tmp_path / "x.npy", X)
    env = {"TVM_DEVICE_BACKEND_AUTOLOAD": "0"} if self_contained else None
    got = run_json(_LOAD_AND_CALL, str(path), str(tmp_path / "x.npy"), "main", "shifted", env=env)
    assert got["kinds"] == ["partial_apply", "partial_apply_vm"]
    np.testing.assert_array_equal(
        np.array(got["main"], "float32"), _direct(vm, "main", X, PARAMS["w1"], PARAMS["b1"], PARAMS["w2"])
    )
    np.testing.assert_array_equal(np.array(got["shifted"], "float32"), _direct(vm, "shifted", X, s))


def test_loaded_executable_is_a_target(mlp, tmp_path):
    exe, vm = mlp
    exe.export_library(str(tmp_path / "exe.so"))
    loaded = tvm.runtime.load_module(str(tmp_path / "exe.so"))
    pm = tvm_partial.partial(loaded, device=tvm.cpu(), **PARAMS)
    np.testing.assert_array_equal(
        pm(tvm.runtime.tensor(X)).numpy(), _direct(vm, "main", X, PARAMS["w1"], PARAMS["b1"], PARAMS["w2"])
    )


@pytest.fixture(scope="module")
def nn_model():
    """A frontend.nn model: (executable, {dotted name: weights}, its IRModule)."""
    from tvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(8, 16, bias=True)
            self.fc2 = nn.Linear(16, 4, bias=False)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    mod, specs = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    params = {
        name: ints([int(d) for d in p.shape], seed=i, low=-3, high=4) for i, (name, p) in enumerate(specs)
    }
    return tvm.compile(mod, target="llvm"), params, mod


def _nn_ref(x, p):
    return np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0) @ p["fc2.weight"].T


def test_frontend_nn_dotted_names_export_rebind_verify(nn_model, tmp_path):
    exe, params, _ = nn_model
    pm = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **params)
    assert tvm_partial.param_names(pm) == {"forward": ["x", "fc1.weight", "fc1.bias", "fc2.weight"]}
    np.testing.assert_array_equal(pm["forward"](tvm.runtime.tensor(X)).numpy(), _nn_ref(X, params))
    path = tmp_path / "nn.so"
    tvm_partial.export_library(pm, path)
    report = tvm_partial.verify(path)
    assert report["intact"] and report["checked"] == 3
    assert [b["name"] for b in tvm_partial.inspect(path)["functions"][0]["bindings"]] == list(params)
    assert tvm_partial.inspect(path)["relax_vm"] == {
        "devices": ["cpu:0"],
        "allocators": ["pooled"],
        "compiled_in": [],
        "ties": [],
    }
    np.save(tmp_path / "x.npy", X)
    got = run_json(_LOAD_AND_CALL, str(path), str(tmp_path / "x.npy"), "forward")
    np.testing.assert_array_equal(np.array(got["forward"], "float32"), _nn_ref(X, params))

    loaded = tvm.runtime.load_module(str(path))
    new = {**params, "fc2.weight": params["fc2.weight"] * 2}
    rebound = tvm_partial.rebind(loaded, function="forward", **{"fc2.weight": new["fc2.weight"]})
    np.testing.assert_array_equal(rebound["forward"](tvm.runtime.tensor(X)).numpy(), _nn_ref(X, new))
    np.testing.assert_array_equal(loaded["forward"](tvm.runtime.tensor(X)).numpy(), _nn_ref(X, params))
    tvm_partial.bindings(loaded)["forward"][3].copyfrom(new["fc2.weight"])  # in place
    np.testing.assert_array_equal(loaded["forward"](tvm.runtime.tensor(X)).numpy(), _nn_ref(X, new))
    # a new weight set shipped without the compiler: a copy of the artifact with the new constants
    tvm_partial.export_library(rebound, tmp_path / "again.so")
    assert tvm_partial.verify(tmp_path / "again.so")["intact"]
    got = run_json(_LOAD_AND_CALL, str(tmp_path / "again.so"), str(tmp_path / "x.npy"), "forward")
    np.testing.assert_array_equal(np.array(got["forward"], "float32"), _nn_ref(X, new))


_CALL_MODULE = """
    import json, sys, numpy as np, tvm
    m = tvm.runtime.load_module(sys.argv[1])
    print(json.dumps(m(tvm.runtime.tensor(np.load(sys.argv[2]))).numpy().tolist()))
"""


def test_module_call_reaches_forward_when_it_is_the_one_bound_function(nn_model, tmp_path):
    """pm(x) calls main; a frontend.nn model has forward alone, so pm(x) calls forward: in
    process, after tvm_partial.load, and in a fresh process (C++: examples/cpp_deploy, deploy
    --relax on such a model, through GetFunction("main"))."""
    exe, params, _ = nn_model
    expected = _nn_ref(X, params)
    pm = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **params)
    assert pm.implements_function("main")
    np.testing.assert_array_equal(pm(tvm.runtime.tensor(X)).numpy(), expected)
    path = tmp_path / "forward.so"
    tvm_partial.export_library(pm, path)
    loaded = tvm_partial.load(path)
    np.testing.assert_array_equal(loaded(tvm.runtime.tensor(X)).numpy(), expected)
    np.save(tmp_path / "x.npy", X)
    got = run_json(_CALL_MODULE, str(path), str(tmp_path / "x.npy"))
    np.testing.assert_array_equal(np.array(got, "float32"), expected)


def test_module_call_without_main_and_two_bound_functions_says_how_to_call_one(tmp_path):
    from tvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(8, 4, bias=False)

        def forward(self, x):
            return self.fc(x)

        def encode(self, x):
            return nn.relu(self.fc(x))

    spec = {"x": nn.spec.Tensor((2, 8), "float32")}
    mod, _ = Net().export_tvm(spec={"forward": spec, "encode": spec})
    exe = tvm.compile(mod, target="llvm")
    w = ints((4, 8), seed=5)
    pm = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **{"fc.weight": w})
    pm = tvm_partial.partial(pm, function="encode", **{"fc.weight": w})
    np.testing.assert_array_equal(pm["forward"](tvm.runtime.tensor(X)).numpy(), X @ w.T)
    path = tmp_path / "two.so"
    tvm_partial.export_library(pm, path)
    message = (
        "partial_apply module: pm(...) calls main, and this module has no main: it binds 2 functions "
        '(forward, encode); call one by name: pm["forward"](...) in Python, '
        'm->GetFunction("forward", true) in C++'
    )
    for module in (pm, tvm_partial.load(path)):
        assert not hasattr(module, "main") and not module.implements_function("main")
        with pytest.raises(AttributeError) as info:
            module["main"]
        assert str(info.value) == message
        with pytest.raises(AttributeError) as info:
            module(tvm.runtime.tensor(X))  # tvm-ffi's Module.__call__ looks main up as an attribute
        assert str(info.value.__cause__) == message  # and says "Module has no function 'main'"
        np.testing.assert_array_equal(module["encode"](tvm.runtime.tensor(X)).numpy(), np.maximum(X @ w.T, 0))


def test_zero_copy_weights_stay_in_the_file_until_first_call(tmp_path):
    """32 MiB of weights: mapped from the artifact, not read at load; the call gives the VM's result."""

    @I.ir_module
    class Big:
        @R.function
        def main(x: R.Tensor((1, 2048), "float32"), w: R.Tensor((2048, 4096), "float32")):
            with R.dataflow():
                y = R.matmul(x, w)
                R.output(y)
            return y

    exe = tvm.compile(Big, target="llvm")
    w = ints((2048, 4096), seed=7, low=-2, high=3)
    x = ints((1, 2048), seed=8, low=-2, high=3)
    path = tmp_path / "big.so"
    tvm_partial.export_library(tvm_partial.partial(exe, device=tvm.cpu(), w=w), path)
    assert tvm_partial.inspect(path)["payloads"].startswith("region")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ref.npy", x @ w)
    got = run_json(
        """
        import json, sys, numpy as np, tvm
        def rss():
            return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) * 1024
        x = tvm.runtime.tensor(np.load(sys.argv[2]))
        before = rss()
        m = tvm.runtime.load_module(sys.argv[1])
        held = rss() - before
        out = m(x).numpy()
        print(json.dumps({"held": held, "equal": bool(np.array_equal(out, np.load(sys.argv[3])))}))
    """,
        str(path),
        str(tmp_path / "x.npy"),
        str(tmp_path / "ref.npy"),
    )
    assert got["equal"]
    assert got["held"] < 8 * 2**20, got  # 32 MiB of weights, left in the file until the call

    loaded = tvm.runtime.load_module(str(path))
    tvm_partial.export_library(tvm_partial.rebind(loaded, w=w * 2), tmp_path / "new.so")
    assert tvm_partial.inspect(tmp_path / "new.so")["payloads"].startswith("region")
    np.save(tmp_path / "ref2.npy", x @ (w * 2))
    got = run_json(
        """
        import json, sys, numpy as np, tvm
        out = tvm.runtime.load_module(sys.argv[1])(tvm.runtime.tensor(np.load(sys.argv[2]))).numpy()
        print(json.dumps(bool(np.array_equal(out, np.load(sys.argv[3])))))
    """,
        str(tmp_path / "new.so"),
        str(tmp_path / "x.npy"),
        str(tmp_path / "ref2.npy"),
    )
    assert got


def test_executable_for_another_target_refused(mlp):
    exe, _ = mlp
    with pytest.raises(
        ValueError,
        match=r"the Relax executable was compiled for the CPU only, but device= "
        r"is cuda:0",
    ):
        tvm_partial.partial(exe, device=tvm.cuda(0), **PARAMS)


def test_artifact_for_a_missing_device_loads_and_names_it_at_first_use(mlp, tmp_path):
    """The VM is created at first use, not at load: loading succeeds, the lookup says what to do."""
    exe, _ = mlp
    from tvm_partial import _ffi_api

    vm = tvm_ffi.get_global_func("tvm_partial.BindModel")(exe.mod, [[2, 99, 2], [1, 0, 2]], None, [], {})[
        "module"
    ]
    path = tmp_path / "cuda99.so"
    tvm_partial.export_library(_ffi_api.PartialApplyModule(vm, {}), path)
    got = run_json(
        """
        import json, sys, tvm
        m = tvm.runtime.load_module(sys.argv[1])
        kinds = [m.kind] + [i.kind for i in m.imports]
        try:
            m["main"]
            error = None
        except Exception as err:
            error = [type(err).__name__, str(err)]
        print(json.dumps({"kinds": kinds, "error": error}))
    """,
        str(path),
    )
    assert got["kinds"] == ["partial_apply", "partial_apply_vm"]
    assert got["error"][0] == "RuntimeError"
    assert "runs on cuda:99, which is not present here" in got["error"][1]
    assert "load the artifact where that device is" in got["error"][1]


def test_vm_record_loader_every_truncation_and_byte_flip(mlp):
    """Whatever the bytes, the loader returns a module or raises ValueError: never a crash."""
    exe, _ = mlp
    load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply_vm")
    good = bytes(tvm_partial.save_to_bytes(tvm_partial.partial(exe, w1=PARAMS["w1"]).imports[0]))
    # One device (cpu:0, pooled), an empty model record (no description, no compiled-in records,
    # no ties: a length and two counts, 0).
    assert good[:8] == b"TVMPAVM1" and len(good) == 12 + 12 + 4 + 4 + 4
    assert load(good).kind == "partial_apply_vm"
    variants = [good[:n] for n in range(len(good))] + [good + b"\0"]
    variants += [good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1 :] for i in range(len(good))]
    for data in variants:
        try:
            assert load(data).kind == "partial_apply_vm"
        except ValueError as err:
            assert "partial_apply_vm loader" in str(err)


def test_dtype_and_shape_checked_without_signature(mlp, nn_model, tmp_path):
    """The executable's own argument annotations give dtypes and static shapes at bind time."""
    exe, _ = mlp
    exe.export_library(str(tmp_path / "exe.so"))
    for target in (exe, tvm.runtime.load_module(str(tmp_path / "exe.so"))):
        with pytest.raises(
            ValueError,
            match=r"cannot bind parameter 'b1' \(position 2\): shape \(3,\) does "
            r"not match b1: Tensor\[\(16\), float32\]",
        ):
            tvm_partial.partial(target, b1=np.zeros(3, "float32"))
        with pytest.raises(TypeError, match=r"parameter 'w2' \(position 3\): dtype float64 does not match"):
            tvm_partial.partial(target, w2=np.zeros((16, 4)))
        with pytest.raises(
            TypeError, match=r"parameter 'w1' \(position 1\): float given for tensor parameter"
        ):
            tvm_partial.partial(target, w1=1.0)
    pm = tvm_partial.partial(exe, **PARAMS)
    with pytest.raises(ValueError, match=r"cannot bind parameter 's' \(position 1\): shape \(7,\)"):
        tvm_partial.partial(pm, function="shifted", s=np.zeros(7, "float32"))
    # frontend.nn: the executable annotates only the inputs (num_input), so the weights' dtypes and
    # shapes come from signature=irmodule at bind time; without it, the kernels refuse at the call.
    nn_exe, params, nn_mod = nn_model
    transposed = {**params, "fc1.weight": params["fc1.weight"].T.copy()}
    with pytest.raises(
        ValueError,
        match=r"parameter 'fc1.weight' \(position 1\): shape \(8, 16\) does not "
        r"match fc1.weight: Tensor\[\(16, 8\), float32\]",
    ):
        tvm_partial.partial(nn_exe, signature=nn_mod, function="forward", **transposed)
    unchecked = tvm_partial.partial(nn_exe, function="forward", **transposed)
    with pytest.raises(ValueError, match=r"fc1.weight"):
        unchecked["forward"](tvm.runtime.tensor(X))


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
@pytest.fixture(scope="module")
def nn_mlp_dev(dev):
    """A frontend.nn MLP (forward, dotted parameter names) compiled for `dev`: (executable, weights,
    x, numpy's y)."""
    from tvm.relax.frontend import nn

    class NNMLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4, bias=False)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    mod, _ = NNMLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    params = {
        "fc1.weight": ints((16, 8), seed=1),
        "fc1.bias": ints(16, seed=2),
        "fc2.weight": ints((4, 16), seed=3),
    }
    y = np.maximum(X @ params["fc1.weight"].T + params["fc1.bias"], 0) @ params["fc2.weight"].T
    return tvm.compile(mod, target=dev.target), params, X, y.astype("float32")


def test_on_the_device_a_relax_model_runs_there_exported_and_loaded(dev, nn_mlp_dev, tmp_path):
    """Bound with device=, the model equals the direct VM call and numpy; exported and loaded, its
    VirtualMachine runs on the device and gives the same result."""
    exe, params, x, y = nn_mlp_dev
    direct = relax.VirtualMachine(exe, dev.tvm)["forward"](dev.tensor(x), *map(dev.tensor, params.values()))
    pm = tvm_partial.partial(exe, function="forward", device=dev.tvm, **params)
    got = pm["forward"](dev.tensor(x))
    assert str(got.device) == dev.name
    assert got.numpy().tobytes() == direct.numpy().tobytes() == y.tobytes()
    tvm_partial.export_library(pm, tmp_path / "mlp.so")
    again = tvm_partial.load(tmp_path / "mlp.so")["forward"](dev.tensor(x))
    assert str(again.device) == dev.name and again.numpy().tobytes() == y.tobytes()


def test_on_the_device_a_device_that_is_not_here_is_named(dev, nn_mlp_dev):
    """Binding a model onto an ordinal of the device's kind that this machine lacks (cpu:7; on a GPU
    machine the first ordinal past its last GPU) is refused, naming it."""
    exe, params, _, _ = nn_mlp_dev
    missing = 7 if dev.kind == "cpu" else next(i for i in range(1, 1024) if not tvm.cuda(i).exist)
    with pytest.raises(ValueError, match=rf"{dev.kind}:{missing}"):
        tvm_partial.partial(exe, function="forward", device=tvm.device(dev.kind, missing), **params)
