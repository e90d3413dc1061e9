# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The import step: ``from_exported_program`` and ``from_onnx`` make every tensor of a model's
state a parameter named by its key, so ``partial(exe, **state)`` binds it with no signature= and
any later state (batch-norm statistics included) swaps in by rebind, load(weights_file=) and the
C++ loader, with no recompile; what stays in the code (non-persistent buffers, lifted constants,
values read at import) is a copy, checked by value.

Results are compared bitwise with the VirtualMachine called directly on the same values, and with
torch or onnx's reference evaluator within 1e-5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_partial
from helpers import convnet_class, run_json, run_python, torch_env

TOLERANCE = 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance.treespec, LeafSpec.` is deprecated:FutureWarning")


def _first(out):
    return out[0] if type(out).__name__ in ("Array", "list", "tuple") else out


def _direct(exe, names, inputs, state):
    """exe's main called through a VirtualMachine of its own, every argument given: the data
    inputs, then each parameter's value from ``state`` by its name."""
    vm = relax.VirtualMachine(exe, tvm.cpu())
    args = [tvm.runtime.tensor(np.require(a, requirements="C")) for a in inputs]
    args += [tvm.runtime.tensor(np.require(_np(state[n]), requirements="C")) for n in names[len(inputs) :]]
    return _first(vm["main"](*args)).numpy()


def _np(value):
    return value.detach().numpy() if hasattr(value, "detach") else np.asarray(value)


def _names(pm):
    return tvm_partial.param_names(pm)["main"]


# -- torch ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _bn_net(torch):
    class Net(torch.nn.Module):
        """Convolution + batch norm + linear, a tied embedding and head, a non-persistent buffer,
        a submodule the forward never uses, and a forward argument named like a parameter."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)
            self.emb = torch.nn.Embedding(10, 5)
            self.head = torch.nn.Linear(5, 10, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("scale", torch.tensor([2.0]), persistent=False)
            self.spare = torch.nn.Linear(2, 2)
            self.gain = torch.nn.Parameter(torch.tensor([0.5]))

        def forward(self, x, ids, gain):  # `gain` is data, beside the parameter `gain`
            y = self.fc(torch.relu(self.bn(self.conv(x))).flatten(1)) * self.scale + gain * self.gain
            return self.head(self.emb(ids) + y[:, None, :]) / 100

    return Net


@pytest.fixture(scope="module", params=["non-strict", "strict"])
def imported(torch, request):
    """(model, inputs, executable of tvm_partial.from_exported_program), the model's statistics
    not the initial ones."""
    torch.manual_seed(0)
    model = _bn_net(torch)().eval()
    with torch.no_grad():
        model.bn.running_mean.copy_(torch.rand(4))
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    inputs = (torch.randn(1, 3, 8, 8), torch.tensor([[1, 2, 3]]), torch.randn(1, 5))
    program = torch.export.export(model, inputs, strict=request.param == "strict")
    exe = tvm.compile(tvm_partial.from_exported_program(program), target="llvm")
    return model, inputs, exe


def _run(pm, inputs):
    return _first(pm(*[tvm.runtime.tensor(i.numpy()) for i in inputs])).numpy()


def test_every_state_tensor_is_a_parameter_named_by_its_key(imported):
    model, inputs, exe = imported
    state = model.state_dict()
    pm = tvm_partial.partial(exe, **state)  # no signature=
    # Data inputs first (`gain` renamed: the state's names stay unique), then the state, the
    # parameters then the buffers as the program lists them, the tie once.
    assert _names(pm) == [
        "x",
        "ids",
        "gain_input",
        "gain",
        "conv.weight",
        "conv.bias",
        "bn.weight",
        "bn.bias",
        "fc.weight",
        "fc.bias",
        "emb.weight",
        "spare.weight",
        "spare.bias",
        "bn.running_mean",
        "bn.running_var",
        "bn.num_batches_tracked",
    ]
    got = _run(pm, inputs)
    assert got.tobytes() == _direct(exe, _names(pm), [i.numpy() for i in inputs], state).tobytes()
    assert np.abs(got - model(*inputs).detach().numpy()).max() <= TOLERANCE
    held = tvm_partial.bindings(pm)["main"]
    assert all(not hasattr(v, "__dlpack__") or isinstance(v, tvm.runtime.Tensor) for v in held.values())


def test_training_the_model_moves_nothing_bound(imported, torch, tmp_path):
    """One optimizer step on the torch model (statistics included) after binding and exporting:
    neither the bound module nor the artifact moves; the new state swaps in without a recompile,
    by rebind and by load(weights_file=), and computes what the trained model computes."""
    from safetensors.torch import save_file

    model, inputs, exe = imported
    trained = _bn_net(torch)().eval()
    trained.load_state_dict(model.state_dict())
    pm = tvm_partial.partial(exe, **trained.state_dict())
    before = _run(pm, inputs)
    lib = tmp_path / "net.so"
    tvm_partial.export_library(pm, lib)
    trained.train()
    torch.optim.SGD(trained.parameters(), lr=0.1).zero_grad()
    trained(torch.randn(8, 3, 8, 8), torch.tensor([[1, 2, 3]] * 8), torch.randn(8, 5)).sum().backward()
    torch.optim.SGD(trained.parameters(), lr=0.1).step()
    trained.eval()
    assert not torch.equal(trained.bn.running_mean, model.bn.running_mean)  # the step moved them
    assert _run(pm, inputs).tobytes() == before.tobytes()
    assert _run(tvm_partial.load(lib), inputs).tobytes() == before.tobytes()
    expected = trained(*inputs).detach().numpy()
    swapped = tvm_partial.rebind(pm, **trained.state_dict())
    assert np.abs(_run(swapped, inputs) - expected).max() <= TOLERANCE
    assert _run(pm, inputs).tobytes() == before.tobytes()
    state = {k: v.detach().clone().contiguous() for k, v in trained.state_dict().items()}
    del state["head.weight"]  # safetensors refuses shared storage; the tie is one tensor anyway
    save_file(state, str(tmp_path / "trained.safetensors"))
    loaded = tvm_partial.load(lib, weights_file=tmp_path / "trained.safetensors")
    assert _run(loaded, inputs).tobytes() == _run(swapped, inputs).tobytes()


def test_tied_names_bind_one_tensor(imported, torch):
    model, inputs, exe = imported
    state = model.state_dict()
    weight = state["emb.weight"]
    for name in ("emb.weight", "head.weight"):
        rest = {k: v for k, v in state.items() if k not in ("emb.weight", "head.weight")}
        pm = tvm_partial.partial(exe, **rest, **{name: weight})
        assert _run(pm, inputs).tobytes() == _run(tvm_partial.partial(exe, **state), inputs).tobytes()
    with pytest.raises(
        ValueError,
        match=r"'emb.weight' and 'head.weight' are one tensor in the model \(tied weights\), but the values given for them differ",
    ):
        tvm_partial.partial(exe, **dict(state, **{"head.weight": weight + 1}))
    # Two names, equal bits, two tensors (a cloned state_dict): one tensor, bound once.
    cloned = {k: v.clone() for k, v in state.items()}
    pm = tvm_partial.partial(exe, **cloned)
    assert _names(pm).count("emb.weight") == 1 and "head.weight" not in _names(pm)
    assert _run(pm, inputs).tobytes() == _run(tvm_partial.partial(exe, **state), inputs).tobytes()


def test_what_stays_compiled_in_is_a_copy_checked_by_value(imported, torch, tmp_path):
    """A non-persistent buffer is compiled in as a copy: the model's own buffer changing later
    changes nothing; a value given for it binds when it equals the compiled one and is refused,
    naming it, when it differs, at bind, at rebind and in a weights file given to load."""
    from safetensors.torch import save_file

    model, inputs, exe = imported
    state = model.state_dict()
    pm = tvm_partial.partial(exe, **state, scale=torch.tensor([2.0]))
    before = _run(pm, inputs)
    with torch.no_grad():
        model.scale.mul_(3)
    try:
        assert _run(tvm_partial.partial(exe, **state), inputs).tobytes() == before.tobytes()
    finally:
        with torch.no_grad():
            model.scale.div_(3)
    message = r"cannot bind 'scale': the frontend compiled it into the code \(float32\[1\]\), so a value given for it cannot reach the model: this one differs from the compiled one"
    with pytest.raises(ValueError, match=message):
        tvm_partial.partial(exe, **state, scale=torch.tensor([3.0]))
    with pytest.raises(ValueError, match=message):
        tvm_partial.rebind(pm, scale=np.array([3.0], "float32"))
    lib = tmp_path / "scale.so"
    tvm_partial.export_library(pm, lib)
    stale = {k: v.detach().clone().contiguous() for k, v in state.items() if k != "head.weight"}
    save_file(dict(stale, scale=torch.tensor([3.0])), str(tmp_path / "stale.safetensors"))
    with pytest.raises(ValueError, match=r"tensor 'scale': the frontend compiled it into the code"):
        tvm_partial.load(lib, weights_file=tmp_path / "stale.safetensors")


def test_a_wrong_dtype_or_shape_is_refused_at_bind(imported, torch):
    model, _, exe = imported
    state = model.state_dict()
    with pytest.raises(TypeError, match=r"cannot bind parameter 'fc.weight' \(position 8\): dtype float64"):
        tvm_partial.partial(exe, **dict(state, **{"fc.weight": state["fc.weight"].double()}))
    with pytest.raises(
        ValueError, match=r"cannot bind parameter 'fc.weight' \(position 8\): shape \(144, 5\)"
    ):
        tvm_partial.partial(exe, **dict(state, **{"fc.weight": state["fc.weight"].T}))


def test_the_import_leaves_tvms_route_quiet(torch, tmp_path):
    """Binding, calling, exporting and loading print nothing of TVM's (its VM logs a line per
    constant once a VirtualMachine ran on the executable being saved); checked in a fresh process,
    once (the fresh process exports as torch does by default)."""
    proc = run_python(
        """
        import sys, torch, tvm, tvm_partial
        sys.path.insert(0, sys.argv[2])
        from test_import import _bn_net
        torch.manual_seed(0)
        model = _bn_net(torch)().eval()
        with torch.no_grad():
            model.bn.running_var.copy_(torch.rand(4) + 0.5)
        inputs = (torch.randn(1, 3, 8, 8), torch.tensor([[1, 2, 3]]), torch.randn(1, 5))
        ep = torch.export.export(model, inputs)
        exe = tvm.compile(tvm_partial.from_exported_program(ep), target="llvm")
        pm = tvm_partial.partial(exe, **model.state_dict())
        pm(*[tvm.runtime.tensor(i.numpy()) for i in inputs])
        tvm_partial.export_library(pm, sys.argv[1])
        tvm_partial.load(sys.argv[1])(*[tvm.runtime.tensor(i.numpy()) for i in inputs])
        print("done")
        """,
        str(tmp_path / "model.so"),
        str(Path(__file__).parent),
        env=torch_env(),
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("done"), proc.stderr
    assert "Scope" not in proc.stderr, proc.stderr


# -- ONNX ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sliced(tmp_path_factory):
    """Gemm, then a Slice, Reshape and Pad whose bounds, shape and value are initializers (which
    TVM's frontend reads at import), one unused initializer: (model, initializers)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    init = {
        "fc.weight": rng.random((8, 3)).astype("float32"),
        "fc.bias": rng.random(8).astype("float32"),
        "starts": np.array([2], "int64"),
        "ends": np.array([6], "int64"),
        "axes": np.array([1], "int64"),
        "shape": np.array([2, 2, 2], "int64"),
        "pads": np.array([0, 0, 1, 0, 0, 0], "int64"),
        "onnx::unused_3": np.ones(3, "float32"),
    }
    nodes = [
        helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], transB=1),
        helper.make_node("Slice", ["y", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Reshape", ["s", "shape"], ["r"]),
        helper.make_node("Pad", ["r", "pads"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2, 3])],
        initializer=[numpy_helper.from_array(v, k) for k, v in init.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder = tmp_path_factory.mktemp("sliced")
    onnx.save_model(model, str(folder / "model.onnx"))
    return onnx.load(str(folder / "model.onnx")), init, folder / "model.onnx"


def _sliced_ref(x, init):
    y = (x @ init["fc.weight"].T + init["fc.bias"])[:, int(init["starts"][0]) : int(init["ends"][0])]
    return np.pad(y.reshape(2, 2, 2), ((0, 0), (0, 0), (1, 0)))


def test_onnx_values_read_at_import_are_compiled_in_and_checked(sliced, tmp_path):
    model, init, _ = sliced
    exe = tvm.compile(tvm_partial.from_onnx(model), target="llvm")
    pm = tvm_partial.partial(exe, **init)
    assert _names(pm) == ["x", "fc.weight", "fc.bias", "onnx::unused_3"]
    x = np.random.default_rng(4).random((2, 3)).astype("float32")
    got = pm(tvm.runtime.tensor(x)).numpy()
    assert np.abs(got - _sliced_ref(x, init)).max() <= TOLERANCE
    for name, other in (("starts", [3]), ("ends", [5]), ("shape", [2, 4, 1]), ("pads", [0, 0, 0, 0, 0, 1])):
        with pytest.raises(
            ValueError,
            match=rf"cannot bind '{name}': the frontend read its value at import and folded it into the code",
        ):
            tvm_partial.partial(exe, **dict(init, **{name: np.array(other, "int64")}))
    # The other initializers swap in; the compiled ones are recorded by value in the artifact.
    lib = tmp_path / "sliced.so"
    tvm_partial.export_library(pm, lib)
    w2 = dict(init, **{"fc.weight": init["fc.weight"] * 2})
    assert (
        np.abs(tvm_partial.rebind(pm, **w2)(tvm.runtime.tensor(x)).numpy() - _sliced_ref(x, w2)).max()
        <= TOLERANCE
    )
    shown = {c["name"]: c["kind"] for c in tvm_partial.inspect(lib)["relax_vm"]["compiled_in"]}
    assert shown == dict.fromkeys(["axes", "ends", "pads", "shape", "starts"], "read at import")


def test_onnx_signature_route_refuses_bounds_it_would_ignore(sliced):
    """Imported by TVM's frontend with keep_params_in_input=True, the Slice bounds stay parameters
    that the code ignores: bound by name through signature=model, another value is refused; left
    out, the model's own value is bound."""
    from tvm.relax.frontend.onnx import from_onnx

    model, init, _ = sliced
    exe = tvm.compile(from_onnx(model, keep_params_in_input=True), target="llvm")
    x = np.random.default_rng(5).random((2, 3)).astype("float32")
    weights = {k: init[k] for k in ("fc.weight", "fc.bias", "onnx::unused_3")}
    pm = tvm_partial.partial(exe, signature=model, **weights)
    assert np.abs(pm(tvm.runtime.tensor(x)).numpy() - _sliced_ref(x, init)).max() <= TOLERANCE
    with pytest.raises(ValueError, match=r"cannot bind 'starts': the frontend read its value at import"):
        tvm_partial.partial(exe, signature=model, **dict(init, starts=np.array([0], "int64")))
    same = tvm_partial.partial(exe, signature=model, **init)
    assert same(tvm.runtime.tensor(x)).numpy().tobytes() == pm(tvm.runtime.tensor(x)).numpy().tobytes()


def test_onnx_signature_route_with_everything_compiled_in(sliced):
    """TVM's default ONNX import compiles every initializer in: the program is still the one
    imported although its Reshape shape and Slice bounds are no constants of the executable
    (they shaped the code) and one initializer is read by no node; every value is checked."""
    from tvm.relax.frontend.onnx import from_onnx

    model, init, _ = sliced
    exe = tvm.compile(from_onnx(model), target="llvm")
    pm = tvm_partial.partial(exe, signature=model, **init)
    x = np.random.default_rng(6).random((2, 3)).astype("float32")
    assert np.abs(pm(tvm.runtime.tensor(x)).numpy() - _sliced_ref(x, init)).max() <= TOLERANCE
    tvm_partial.partial(exe, signature=model, **dict(init, **{"onnx::unused_3": np.zeros(3, "float32")}))
    with pytest.raises(ValueError, match=r"cannot bind 'shape': the frontend read its value at import"):
        tvm_partial.partial(exe, signature=model, **dict(init, shape=np.array([2, 4, 1], "int64")))
    with pytest.raises(ValueError, match=r"cannot bind 'fc.bias': the frontend compiled it into the code"):
        tvm_partial.partial(exe, signature=model, **dict(init, **{"fc.bias": init["fc.bias"] + 1}))


def test_the_record_travels_in_the_executable(sliced, tmp_path):
    """TVM's own export of the executable keeps the record: a process that never saw the model
    binds the loaded executable by name and refuses what it would ignore."""
    model, init, _ = sliced
    exe = tvm.compile(tvm_partial.from_onnx(model), target="llvm")
    exe.export_library(str(tmp_path / "exe.so"))
    np.savez(tmp_path / "init.npz", **{k.replace(":", "_"): v for k, v in init.items()})
    result = run_json(
        """
        import json, sys, numpy as np, tvm, tvm_partial
        exe = tvm.runtime.load_module(sys.argv[1])
        init = dict(np.load(sys.argv[2]))
        init["onnx::unused_3"] = init.pop("onnx__unused_3")
        pm = tvm_partial.partial(exe, **init)
        try:
            tvm_partial.partial(exe, **dict(init, ends=np.array([7], "int64")))
            refused = None
        except ValueError as err:
            refused = str(err)
        print(json.dumps({"names": list(tvm_partial.param_names(pm)["main"]), "refused": refused}))
        """,
        str(tmp_path / "exe.so"),
        str(tmp_path / "init.npz"),
    )
    assert result["names"] == ["x", "fc.weight", "fc.bias", "onnx::unused_3"]
    assert result["refused"].startswith("cannot bind 'ends': the frontend read its value at import")


def test_options_the_import_decides_are_refused(sliced, torch):
    model, _, _ = sliced
    with pytest.raises(ValueError, match=r"from_onnx: keep_params_in_input is always True here"):
        tvm_partial.from_onnx(model, keep_params_in_input=False)
    with pytest.raises(TypeError, match=r"from_onnx: unknown option 'colour'"):
        tvm_partial.from_onnx(model, colour="blue")
    record = json.loads(
        str(
            relax.VirtualMachine(tvm.compile(tvm_partial.from_onnx(model), "llvm"), tvm.cpu())[
                "__tvm_partial_model__"
            ]()[0]
        )
    )
    assert record["compiled_in"] == ["starts", "ends", "axes", "shape", "pads"]


@pytest.mark.slow  # each exporter traces and the model is compiled twice
@pytest.mark.filterwarnings("ignore:Renaming name input.1:UserWarning")  # TVM's frontend: "input_1"
@pytest.mark.parametrize("exporter", ["dynamo", "torchscript"])
def test_onnx_as_torch_onnx_export_writes_it_with_its_batch_norm_folded(torch, exporter, tmp_path):
    """torch.onnx.export folds a batch norm into the convolution before it (the default exporter
    keeps the name conv.weight for the folded weight): the file's own initializers bind and
    compute the model; the torch state_dict, whose conv.weight is the unfolded one, is refused
    naming a tensor the graph does not have, never bound half-way (docs/torch.md's warning)."""
    onnx = pytest.importorskip("onnx")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript")  # torch's default exporter needs it
    import warnings

    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))

    model = Net().eval()
    with torch.no_grad():
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    x = torch.randn(1, 3, 8, 8)
    path = tmp_path / "net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated; torch says so
        torch.onnx.export(model, (x,), str(path), dynamo=exporter == "dynamo")
    exe = tvm.compile(tvm_partial.from_onnx(onnx.load(str(path))), target="llvm")
    found = tvm_partial.open_weights(path)
    got = _run(tvm_partial.partial(exe, **found), (x,))
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert not any(name.startswith("bn.") for name in _names(tvm_partial.partial(exe)))
    with pytest.raises(TypeError, match=r"no parameter '(bn|conv)\.\w+'"):
        tvm_partial.partial(exe, **model.state_dict())


def test_on_the_device_an_imported_torch_model_runs_there(dev, torch, tmp_path):
    """A torch model with batch norm, imported with from_exported_program and compiled for `dev`,
    bound there by its state's names: it equals the VirtualMachine called directly on the device
    bit for bit (and torch within 1e-4: the device's arithmetic may round differently), exports and
    loads back there, and one training step of the torch model moves nothing bound."""

    torch.manual_seed(0)
    model = convnet_class(torch)().eval()
    with torch.no_grad():
        model.bn.running_mean.copy_(torch.rand(4))
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    x = torch.randn(2, 3, 8, 8)
    program = torch.export.export(model, (x,))
    exe = tvm.compile(tvm_partial.from_exported_program(program), target=dev.target)
    state = model.state_dict()
    pm = tvm_partial.partial(exe, device=dev.tvm, **state)
    got = _first(pm(dev.tensor(x.numpy())))
    assert str(got.device) == dev.name
    vm = relax.VirtualMachine(exe, dev.tvm)
    direct = vm["main"](dev.tensor(x.numpy()), *(dev.tensor(_np(state[n])) for n in _names(pm)[1:]))
    assert got.numpy().tobytes() == _first(direct).numpy().tobytes()
    assert np.abs(got.numpy() - model(x).detach().numpy()).max() <= 1e-4
    tvm_partial.export_library(pm, tmp_path / "net.so")
    again = _first(tvm_partial.load(tmp_path / "net.so")(dev.tensor(x.numpy())))
    assert str(again.device) == dev.name and again.numpy().tobytes() == got.numpy().tobytes()
    mean = model.bn.running_mean.clone()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(8, 3, 8, 8)).sum().backward()
    opt.step()
    assert not torch.equal(model.bn.running_mean, mean)  # the step moved the statistics
    assert _first(pm(dev.tensor(x.numpy()))).numpy().tobytes() == got.numpy().tobytes()
