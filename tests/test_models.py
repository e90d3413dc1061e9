# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Models as people bring them: a PyTorch model through torch.export and TVM's torch frontend, an
ONNX model through its frontend, bound by the model's own names (``signature=`` the program), and
what the frontend compiled into the code never left stale.

Results are compared bitwise with the VirtualMachine called directly on the same values, and with
torch or onnx's reference evaluator within 1e-5 (float32 kernels of two libraries, sums in another
order). torch and onnx are optional: their tests skip where they are not installed.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import tvm
from tvm import relax

import tvm_partial
from helpers import affine4_ref, convnet_class, raw_bytes, run_cli, run_json

TOLERANCE = 1e-5
# torch.export's own internals warn about a deprecated pytree call (torch 2.13); not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:`isinstance.treespec, LeafSpec.` is deprecated:FutureWarning")


def _vm_direct(exe, *args):
    """exe's main called through a VirtualMachine with every argument given."""
    vm = relax.VirtualMachine(exe, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args])
    return out[0] if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else out


def _first(out):
    return out[0] if type(out).__name__ in ("Array", "list", "tuple") else out


# -- torch ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def convnet(torch):
    """Convolution + batch norm + linear, in eval mode, its statistics not the initial ones:
    (model, exported program, executable, input)."""
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    model = convnet_class(torch)().eval()
    with torch.no_grad():
        model.bn.running_mean.copy_(torch.rand(4))
        model.bn.running_var.copy_(torch.rand(4) + 0.5)
    x = torch.randn(1, 3, 8, 8)
    program = torch.export.export(model, (x,))
    # The program shares the model's tensors: a copy keeps it as imported while tests change the model.
    state = {k: v.clone() for k, v in model.state_dict().items()}
    exe = tvm.compile(from_exported_program(program, keep_params_as_input=True), target="llvm")
    return model, program, exe, x, state


def _params(state):
    return [state[k] for k in ("conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias")]


def test_torch_model_binds_by_its_state_dict_names(convnet):
    model, program, exe, x, state = convnet
    pm = tvm_partial.partial(exe, signature=program, **state)
    assert tvm_partial.param_names(pm) == {
        "main": ["x", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"]
    }
    got = _first(pm(tvm.runtime.tensor(x.numpy()))).numpy()
    direct = _vm_direct(exe, x.numpy(), *[p.numpy() for p in _params(state)]).numpy()
    assert got.tobytes() == direct.tobytes()
    assert np.abs(got - model(x).detach().numpy()).max() <= TOLERANCE
    # numpy arrays bind the same way, to the same bits.
    as_numpy = tvm_partial.partial(exe, signature=program, **{k: v.numpy() for k, v in state.items()})
    assert _first(as_numpy(tvm.runtime.tensor(x.numpy()))).numpy().tobytes() == direct.tobytes()


def test_what_the_frontend_compiled_in_is_checked_at_bind(convnet, torch):
    _, program, exe, _, state = convnet
    changed = dict(state, **{"bn.running_mean": state["bn.running_mean"] + 1})
    with pytest.raises(
        ValueError,
        match=r"cannot bind 'bn.running_mean': the frontend compiled it into the code \(float32\[4\]\), so a value given for it cannot reach the model: this one differs from the compiled one",
    ):
        tvm_partial.partial(exe, signature=program, **changed)
    with pytest.raises(ValueError, match=r"cannot bind 'bn.running_var': .* this one is float32\[5\]"):
        tvm_partial.partial(exe, signature=program, **dict(state, **{"bn.running_var": torch.ones(5)}))
    # num_batches_tracked is held by the model and never read in eval mode: any value is taken.
    counted = dict(state, **{"bn.num_batches_tracked": state["bn.num_batches_tracked"] + 7})
    tvm_partial.partial(exe, signature=program, **counted)
    with pytest.raises(TypeError, match=r"main\(\) has no parameter 'bn.running_mea'"):
        tvm_partial.partial(exe, signature=program, **{"bn.running_mea": state["bn.running_mean"]})


def test_weights_swapped_in_a_fresh_process_and_stale_statistics_refused(convnet, torch, tmp_path):
    """A state_dict saved by torch (safetensors.torch.save_file, buffers included) swaps in: the
    parameters are bound, the compiled-in statistics checked against the hashes the artifact
    records, in a process that never saw the program."""
    from safetensors.torch import save_file

    _, program, exe, x, state = convnet
    pm = tvm_partial.partial(exe, signature=program, **state)
    lib = tmp_path / "convnet.so"
    tvm_partial.export_library(pm, lib)
    v2 = {k: v.clone() for k, v in state.items()}
    v2["fc.weight"] = v2["fc.weight"] * 2
    v2["bn.num_batches_tracked"] = v2["bn.num_batches_tracked"] + 3
    save_file(v2, str(tmp_path / "v2.safetensors"))
    stale = dict(v2, **{"bn.running_var": v2["bn.running_var"] * 2})
    save_file(stale, str(tmp_path / "stale.safetensors"))
    np.save(tmp_path / "x.npy", x.numpy())
    result = run_json(
        """
        import json, sys, numpy as np, tvm, tvm_partial
        lib, v2, stale, x = sys.argv[1:]
        out = tvm_partial.load(lib, weights_file=v2)(tvm.runtime.tensor(np.load(x)))
        try:
            tvm_partial.load(lib, weights_file=stale)
            refused = None
        except ValueError as err:
            refused = str(err)
        print(json.dumps({"out": out[0].numpy().tolist(), "refused": refused}))
        """,
        str(lib),
        str(tmp_path / "v2.safetensors"),
        str(tmp_path / "stale.safetensors"),
        str(tmp_path / "x.npy"),
    )
    direct = _vm_direct(exe, x.numpy(), *[p.numpy() for p in _params(v2)]).numpy()
    assert np.array(result["out"], "float32").tobytes() == direct.tobytes()
    assert result["refused"] == (
        f"weights file {tmp_path / 'stale.safetensors'}: tensor 'bn.running_var': the frontend compiled "
        "it into the code (float32[4]), so a value given for it cannot reach the model: this one differs "
        "from the compiled one. Give the compiled value (or leave it out), or keep it swappable: import "
        "the model with tvm_partial.from_exported_program or tvm_partial.from_onnx, which make every "
        "tensor of its state a parameter"
    )
    shown = tvm_partial.inspect(lib)["relax_vm"]["compiled_in"]
    assert [(c["name"], c["dtype"], c["shape"], c["kind"]) for c in shown] == [
        ("bn.num_batches_tracked", "int64", [], "unused"),
        ("bn.running_mean", "float32", [4], "compiled"),
        ("bn.running_var", "float32", [4], "compiled"),
    ]


def test_a_training_step_moves_nothing_bound(torch, tmp_path):
    """TVM's torch frontend wraps the model's buffers without copying: the executable's batch-norm
    statistics are the model's own memory. After binding (and exporting), a training step on the
    model moves neither the bound module nor the artifact, and the artifact's record of the
    statistics is what its code holds: the state it was bound with swaps in, a changed one is
    refused."""
    from safetensors.torch import save_file
    from tvm.relax.frontend.torch import from_exported_program

    model = convnet_class(torch)().eval()
    x = torch.randn(1, 3, 8, 8)
    program = torch.export.export(model, (x,))
    exe = tvm.compile(from_exported_program(program, keep_params_as_input=True), target="llvm")
    bound = {k: v.clone() for k, v in model.state_dict().items()}
    pm = tvm_partial.partial(exe, signature=program, **model.state_dict())
    before = _first(pm(tvm.runtime.tensor(x.numpy()))).numpy()
    lib = tmp_path / "convnet.so"
    tvm_partial.export_library(pm, lib)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(8, 3, 8, 8)).sum().backward()
    optimizer.step()
    assert not torch.equal(model.bn.running_mean, bound["bn.running_mean"])
    assert _first(pm(tvm.runtime.tensor(x.numpy()))).numpy().tobytes() == before.tobytes()
    assert _first(tvm_partial.load(lib)(tvm.runtime.tensor(x.numpy()))).numpy().tobytes() == before.tobytes()
    save_file(bound, str(tmp_path / "bound.safetensors"))
    again = tvm_partial.load(lib, weights_file=tmp_path / "bound.safetensors")
    assert _first(again(tvm.runtime.tensor(x.numpy()))).numpy().tobytes() == before.tobytes()
    save_file(
        {k: v.detach().clone() for k, v in model.state_dict().items()}, str(tmp_path / "moved.safetensors")
    )
    with pytest.raises(ValueError, match=r"tensor 'bn.running_mean': the frontend compiled it into the code"):
        tvm_partial.load(lib, weights_file=tmp_path / "moved.safetensors")


def test_rebind_settles_names_as_load_does(convnet, torch, tmp_path):
    """rebind(pm, **state) takes what load(weights_file=) takes: the buffers the frontend compiled
    in are checked and dropped (num_batches_tracked, never read, any value); signature= may be
    the program."""
    from safetensors.torch import save_file

    _, program, exe, x, state = convnet
    pm = tvm_partial.partial(exe, signature=program, **state)
    v2 = dict(
        state,
        **{
            "fc.weight": state["fc.weight"] * 2,
            "bn.num_batches_tracked": state["bn.num_batches_tracked"] + 5,
        },
    )
    save_file(v2, str(tmp_path / "v2.safetensors"))
    by_rebind = tvm_partial.rebind(pm, **tvm_partial.open_weights(tmp_path / "v2.safetensors"))
    assert tvm_partial.rebind(pm, signature=program, **v2) is not None
    lib = tmp_path / "convnet.so"
    tvm_partial.export_library(pm, lib)
    by_load = tvm_partial.load(lib, weights_file=tmp_path / "v2.safetensors")
    got = _first(by_rebind(tvm.runtime.tensor(x.numpy()))).numpy()
    assert got.tobytes() == _first(by_load(tvm.runtime.tensor(x.numpy()))).numpy().tobytes()
    assert got.tobytes() == _vm_direct(exe, x.numpy(), *[p.numpy() for p in _params(v2)]).numpy().tobytes()
    with pytest.raises(
        ValueError, match=r"cannot bind 'bn.running_var': the frontend compiled it into the code"
    ):
        tvm_partial.rebind(pm, **dict(v2, **{"bn.running_var": state["bn.running_var"] + 1}))


def test_a_wrong_dtype_or_shape_is_refused_at_bind(convnet, torch):
    _, program, exe, _, state = convnet
    with pytest.raises(TypeError, match=r"cannot bind parameter 'fc.weight' \(position 5\): dtype float64"):
        tvm_partial.partial(
            exe, signature=program, **dict(state, **{"fc.weight": state["fc.weight"].double()})
        )
    with pytest.raises(
        ValueError, match=r"cannot bind parameter 'fc.weight' \(position 5\): shape \(144, 5\)"
    ):
        tvm_partial.partial(exe, signature=program, **dict(state, **{"fc.weight": state["fc.weight"].T}))


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
def test_what_the_program_holds_but_the_code_ignores_is_no_refusal(torch, strict):
    """A submodule the forward never uses, a forward argument named like a parameter: the program
    is still the one imported, its state binds whole, and the data argument keeps its place."""
    from tvm.relax.frontend.torch import from_exported_program

    class Spare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 4)
            self.spare = torch.nn.Linear(2, 2)
            self.scale = torch.nn.Parameter(torch.tensor([3.0]))

        def forward(self, x, scale):
            return self.fc(x) * self.scale + scale

    torch.manual_seed(6)
    model = Spare().eval()
    x, scale = torch.randn(2, 3), torch.randn(2, 4)
    program = torch.export.export(model, (x, scale), strict=strict)
    exe = tvm.compile(from_exported_program(program, keep_params_as_input=True), target="llvm")
    tvm_partial.partial(exe, signature=program)  # no values given: nothing to refuse
    pm = tvm_partial.partial(exe, signature=program, **model.state_dict())
    assert tvm_partial.param_names(pm)["main"][:2] == ["x", "scale_input"]
    got = _first(pm(tvm.runtime.tensor(x.numpy()), tvm.runtime.tensor(scale.numpy()))).numpy()
    assert np.abs(got - model(x, scale).detach().numpy()).max() <= TOLERANCE


@pytest.fixture(scope="module", params=["non-strict", "strict"])
def tied_lm(torch, request):
    """An embedding and a language-model head sharing one weight, and a non-persistent buffer."""
    from tvm.relax.frontend.torch import from_exported_program

    class TiedLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 8)
            self.head = torch.nn.Linear(8, 10, bias=False)
            self.head.weight = self.emb.weight
            self.register_buffer("scale", torch.tensor([2.0]), persistent=False)

        def forward(self, ids):
            return self.head(self.emb(ids) * self.scale)

    torch.manual_seed(1)
    model = TiedLM().eval()
    ids = torch.tensor([[1, 2, 3]])
    program = torch.export.export(model, (ids,), strict=request.param == "strict")
    exe = tvm.compile(from_exported_program(program, keep_params_as_input=True), target="llvm")
    return model, program, exe, ids


def test_tied_weights_bind_under_either_name_as_one_tensor(tied_lm, tmp_path):
    model, program, exe, ids = tied_lm
    weight = model.state_dict()["emb.weight"]
    expected = model(ids).detach().numpy()
    # A non-strict export makes a parameter of each name, a strict one of the first only.
    places = [1, 2] if len(program.graph_signature.parameters) == 2 else [1]
    for name in ("emb.weight", "head.weight"):
        pm = tvm_partial.partial(exe, signature=program, **{name: weight})
        held = tvm_partial.bindings(pm)["main"]
        assert sorted(held) == places and all(held[p].same_as(held[1]) for p in places)
        got = _first(pm(tvm.runtime.tensor(ids.numpy()))).numpy()
        assert np.abs(got - expected).max() <= TOLERANCE
    whole = tvm_partial.partial(exe, signature=program, **model.state_dict())  # both names, one storage
    held = tvm_partial.bindings(whole)["main"]
    assert all(held[p].same_as(held[1]) for p in places)
    tvm_partial.export_library(whole, tmp_path / "lm.so")
    loaded = tvm_partial.bindings(tvm_partial.load(tmp_path / "lm.so"))["main"]
    assert all(loaded[p].same_as(loaded[1]) for p in places)
    assert raw_bytes(loaded[1]) == weight.numpy().tobytes()
    with pytest.raises(
        ValueError,
        match=r"'emb.weight' and 'head.weight' are one tensor in the ExportedProgram \(tied weights\), but the values given for them differ",
    ):
        tvm_partial.partial(exe, signature=program, **{"emb.weight": weight, "head.weight": weight + 1})
    with pytest.raises(ValueError, match=r"cannot bind 'scale': the frontend compiled it into the code"):
        tvm_partial.partial(
            exe, signature=program, **{"emb.weight": weight, "scale": np.array([3.0], "float32")}
        )


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
def test_names_that_spell_alike_stay_apart(torch, strict):
    """``a.b_c`` and ``a_b.c`` both spell ``p_a_b_c`` (a strict export's program and the frontend
    number them apart in different ways); the program's order tells them apart."""
    from tvm.relax.frontend.torch import from_exported_program

    class Inner(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            setattr(self, n, torch.nn.Parameter(torch.randn(4)))

    class Alike(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Inner("b_c")
            self.a_b = Inner("c")

        def forward(self, x):
            return x * self.a.b_c - self.a_b.c

    torch.manual_seed(2)
    model = Alike().eval()
    x = torch.randn(4)
    program = torch.export.export(model, (x,), strict=strict)
    exe = tvm.compile(from_exported_program(program, keep_params_as_input=True), target="llvm")
    state = model.state_dict()
    assert sorted(state) == ["a.b_c", "a_b.c"]
    pm = tvm_partial.partial(exe, signature=program, **state)
    got = _first(pm(tvm.runtime.tensor(x.numpy()))).numpy()
    assert got.tobytes() == (x * state["a.b_c"] - state["a_b.c"]).numpy().tobytes()
    with pytest.raises(TypeError, match=r"has no parameter 'p_a_b_c'"):
        tvm_partial.partial(exe, signature=program, p_a_b_c=state["a.b_c"])


def test_program_refused_where_it_cannot_name_the_parameters(convnet, tied_lm, affine4):
    _, program, exe, _, state = convnet
    _, other, _, _ = tied_lm
    with pytest.raises(
        ValueError,
        match=r"main\(\) takes 7 parameters, but the ExportedProgram has 1 input and (1 parameter|2 parameters): signature= must be the program the executable was imported from \(from_exported_program\(ep, keep_params_as_input=True\)\)",
    ):
        tvm_partial.partial(exe, signature=other, **state)
    kernel, _ = affine4
    with pytest.raises(
        TypeError,
        match=r"signature=ExportedProgram gives the model's names to the Relax function imported from it",
    ):
        tvm_partial.partial(kernel["main"], signature=program, **state)


# -- ONNX ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory):
    """Gemm + Mul built with onnx's helpers, its initializers in an external data file, one named
    with the ``onnx::`` prefix torch's exporter writes: (model path, model, initializers)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    init = {
        "fc.weight": rng.random((4, 3)).astype("float32"),
        "fc.bias": rng.random(4).astype("float32"),
        "onnx::Mul_7": np.array([2.5], "float32"),
    }
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], transB=1),
            helper.make_node("Mul", ["y", "onnx::Mul_7"], ["z"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 4])],
        initializer=[numpy_helper.from_array(v, k) for k, v in init.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder = tmp_path_factory.mktemp("onnx")
    onnx.save_model(
        model, str(folder / "model.onnx"), save_as_external_data=True, location="model.data", size_threshold=0
    )
    return folder / "model.onnx", onnx.load(str(folder / "model.onnx")), init


def test_onnx_model_binds_by_its_initializer_names(onnx_model):
    from onnx.reference import ReferenceEvaluator
    from tvm.relax.frontend.onnx import from_onnx

    _, model, init = onnx_model
    x = np.random.default_rng(4).random((2, 3)).astype("float32")
    reference = ReferenceEvaluator(model).run(None, {"x": x})[0]
    exe = tvm.compile(from_onnx(model, keep_params_in_input=True), target="llvm")
    pm = tvm_partial.partial(exe, signature=model, **init)
    assert tvm_partial.param_names(pm) == {"main": ["x", "fc.weight", "fc.bias", "onnx::Mul_7"]}
    got = pm(tvm.runtime.tensor(x)).numpy()
    assert got.tobytes() == _vm_direct(exe, x, *init.values()).numpy().tobytes()
    assert np.abs(got - reference).max() <= TOLERANCE
    # Imported without keep_params_in_input: every initializer is compiled in, checked by name.
    folded = tvm.compile(from_onnx(model), target="llvm")
    tvm_partial.partial(folded, signature=model, **init)
    with pytest.raises(
        ValueError, match=r"cannot bind 'fc.bias': the frontend compiled it into the code \(float32\[4\]\)"
    ):
        tvm_partial.partial(folded, signature=model, **dict(init, **{"fc.bias": init["fc.bias"] + 1}))


def test_onnx_open_weights_maps_external_data(onnx_model):
    path, _, init = onnx_model
    found = tvm_partial.open_weights(path)
    assert sorted(found) == sorted(init)
    for name, value in init.items():
        assert raw_bytes(found[name]) == value.tobytes() and str(found[name].dtype) == "float32"
    assert os.path.exists(path.parent / "model.data")


# -- checkpoints split in several files ----------------------------------------------------------
def _split_checkpoint(folder, tensors: dict, files: dict) -> str:
    """Write ``tensors`` into the safetensors files ``files`` ({file: [names]}) and their index,
    as transformers' save_pretrained does; -> the index's path."""
    import json

    from safetensors.numpy import save_file

    weight_map = {}
    for name, names in files.items():
        save_file({n: tensors[n] for n in names}, str(folder / name))
        weight_map.update(dict.fromkeys(names, name))
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1234}, "weight_map": weight_map}))
    return str(index)


def test_a_checkpoint_split_in_two_files_binds_through_its_index(affine4, tmp_path):
    exe, sig = affine4
    b, c, a = (np.arange(16, dtype="float32") * k for k in (1.5, -2.0, 0.25))
    files = {"model-00001-of-00002.safetensors": ["b"], "model-00002-of-00002.safetensors": ["c"]}
    index = _split_checkpoint(tmp_path, {"b": b, "c": c}, files)
    found = tvm_partial.open_weights(index)
    assert sorted(found) == ["b", "c"] and raw_bytes(found["c"]) == c.tobytes()
    pm = tvm_partial.partial(exe, signature=sig, **found, outputs="out")
    assert pm(tvm.runtime.tensor(a)).numpy().tobytes() == affine4_ref(a, b, c).tobytes()
    # load(weights_file=index): every file mapped, each tensor from the file the index names.
    lib = tmp_path / "affine.so"
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=b * 0, c=c * 0, outputs="out"), lib)
    swapped = tvm_partial.load(lib, weights_file=index)
    assert swapped(tvm.runtime.tensor(a)).numpy().tobytes() == affine4_ref(a, b, c).tobytes()
    shown = tvm_partial.inspect(index)
    assert [f["path"].rsplit("/", 1)[1] for f in shown["files"]] == list(files)
    assert [(t["key"], t["file"].rsplit("/", 1)[1]) for t in shown["functions"][0]["bindings"]] == [
        ("b", "model-00001-of-00002.safetensors"),
        ("c", "model-00002-of-00002.safetensors"),
    ]
    text = run_cli("inspect", index).stdout
    assert f"{index}: safetensors index of 2 files, 2 tensors" in text
    assert f"in {tmp_path / 'model-00002-of-00002.safetensors'}" in text


def test_a_broken_index_is_refused_naming_the_files(affine4, tmp_path):
    import json

    from safetensors.numpy import save_file

    b = np.ones(16, "float32")
    _split_checkpoint(tmp_path, {"b": b, "c": b}, {"one.safetensors": ["b"], "two.safetensors": ["c"]})
    lib = tmp_path / "affine.so"
    exe, sig = affine4
    tvm_partial.export_library(tvm_partial.partial(exe, signature=sig, b=b, c=b), lib)
    cases = {
        "missing": (
            {"weight_map": {"b": "one.safetensors", "c": "gone.safetensors"}},
            FileNotFoundError,
            rf"weights index {tmp_path}/missing.index.json names file 'gone.safetensors' \({tmp_path}/gone.safetensors\), which does not exist",
        ),
        "twice": (
            {"weight_map": {"b": "one.safetensors", "c": "two.safetensors", "d": "both.safetensors"}},
            ValueError,
            r"tensor 'c' is in both 'two.safetensors' and 'both.safetensors'; a checkpoint holds each tensor once",
        ),
        "elsewhere": (
            {"weight_map": {"b": "two.safetensors", "c": "one.safetensors"}},
            ValueError,
            r"weights index .*/elsewhere.index.json: tensor 'c' is in 'two.safetensors', but the index names 'one.safetensors' for it",
        ),
        "escapes": (
            {"weight_map": {"b": "../one.safetensors"}},
            ValueError,
            r"names file '../one.safetensors', which leaves the index's folder \(..\)",
        ),
        "no_map": ({"metadata": {}}, ValueError, r"is not a safetensors index: it has no weight_map"),
    }
    save_file({"c": b, "d": b}, str(tmp_path / "both.safetensors"))
    for name, (content, kind, message) in cases.items():
        path = tmp_path / f"{name}.index.json"
        path.write_text(json.dumps(content))
        for read in (tvm_partial.open_weights, lambda p: tvm_partial.load(lib, weights_file=p)):
            with pytest.raises(kind, match=message):
                read(str(path))


def test_save_weights_with_the_program_writes_a_whole_state_dict(convnet, tied_lm, torch, tmp_path):
    """save_weights(pm, path, program=ep): the bound parameters and what the frontend compiled in,
    checked against the code; torch's strict load_state_dict takes it back, and so does load."""
    model, program, exe, x, state = convnet
    pm = tvm_partial.partial(exe, signature=program, **state)
    path = tmp_path / "state.safetensors"
    tvm_partial.save_weights(pm, path, program=program)
    back = {k: torch.from_dlpack(v) for k, v in tvm_partial.open_weights(path).items()}
    fresh = type(model)().eval()
    fresh.load_state_dict(back, strict=True)
    assert all(torch.equal(fresh.state_dict()[k], v) for k, v in state.items())
    lib = tmp_path / "convnet.so"
    tvm_partial.export_library(pm, lib)
    swapped = _first(tvm_partial.load(lib, weights_file=path)(tvm.runtime.tensor(x.numpy()))).numpy()
    assert swapped.tobytes() == _first(pm(tvm.runtime.tensor(x.numpy()))).numpy().tobytes()
    # Tied weights: open_weights gives each name, one tensor.
    lm, lm_program, lm_exe, _ = tied_lm
    tied = tvm_partial.partial(lm_exe, signature=lm_program, **lm.state_dict())
    tvm_partial.save_weights(tied, tmp_path / "lm.safetensors", program=lm_program)
    type(lm)().load_state_dict(
        {k: torch.from_dlpack(v) for k, v in tvm_partial.open_weights(tmp_path / "lm.safetensors").items()},
        strict=True,
    )
    # A program changed since it was imported is caught: its statistics are not what the code holds.
    with torch.no_grad():
        program.state_dict["bn.running_mean"].add_(1)
    try:
        with pytest.raises(
            ValueError,
            match=r"save_weights: the program's 'bn.running_mean' is not what the code holds: .*was the model changed after it was exported\?",
        ):
            tvm_partial.save_weights(pm, tmp_path / "changed.safetensors", program=program)
    finally:
        with torch.no_grad():
            program.state_dict["bn.running_mean"].copy_(state["bn.running_mean"])


def test_a_program_that_is_not_the_imported_one_is_refused(convnet, torch, tmp_path):
    """The executable's own constants prove what the frontend compiled in: a program whose
    statistics differ from them (changed since the executable was compiled and saved, as
    load_state_dict on the model does: torch.export shares its tensors) is refused, never
    trusted. (In the process that compiled it, the executable shares them too, and agrees.)"""
    _, program, exe, _, state = convnet
    exe.export_library(str(tmp_path / "exe.so"))
    saved = tvm.runtime.load_module(str(tmp_path / "exe.so"))
    with torch.no_grad():
        program.state_dict["bn.running_var"].mul_(3)
    try:
        with pytest.raises(
            ValueError,
            match=r"the ExportedProgram's 'bn.running_var' \(float32\[4\]\) is not among the constants the executable holds: signature= must be the program the executable was imported from, unchanged since",
        ):
            tvm_partial.partial(saved, signature=program, **state)
    finally:
        with torch.no_grad():
            program.state_dict["bn.running_var"].copy_(state["bn.running_var"])
    tvm_partial.partial(saved, signature=program, **state)


def test_the_compiled_in_record_survives_every_truncation_and_byte_flip(convnet):
    """The partial_apply_vm record with compiled-in entries: every prefix and every flipped byte
    loads or is refused with ValueError, never a crash (the loader of the real bytes, in a fresh
    process)."""
    _, program, exe, _, state = convnet
    good = bytes(tvm_partial.save_to_bytes(tvm_partial.partial(exe, signature=program, **state).imports[0]))
    assert good.count(b"bn.running_mean") == 1
    variants = [good[:n] for n in range(len(good))] + [good + b"\0"]
    variants += [good[:i] + bytes([good[i] ^ 0xFF]) + good[i + 1 :] for i in range(len(good))]
    got = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply_vm")
        out = []
        for hexed in json.loads(open(sys.argv[1]).read()):
            try:
                out.append(load(bytes.fromhex(hexed)).kind)
            except ValueError as err:
                out.append("ValueError: " + str(err))
        print(json.dumps(out))
        """,
        _write_json(tvm_partial, [v.hex() for v in variants]),
    )
    assert len(got) == len(variants)
    assert all(g == "partial_apply_vm" or g.startswith("ValueError: partial_apply_vm loader") for g in got), (
        got
    )
    assert got[len(good)] == "ValueError: partial_apply_vm loader: 1 unread bytes after the record"


def _write_json(_module, data) -> str:
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
        return f.name
