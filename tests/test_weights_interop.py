# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights as people have them (issue 22): a tensor bound in several places is one tensor in
every placement, before export and after load; every dtype TVM and the weights format share
round-trips bitwise; safetensors files written by other tools bind by the model's own names, and
tvm-partial's own weights files give back exactly the model's tensors."""

import json
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as safetensors_numpy
import tvm
from tvm import te

import tvm_partial
from helpers import cmake_package_dirs, compile_te, ints, raw_bytes, run_json

N = 64 * 1024  # 256 KiB of float32 per tensor: sizes dwarf metadata and alignment
PLACEMENTS = {
    "inline": {},
    "zero_copy": {"zero_copy": True},
    "weights_file": {"weights_file": "w.safetensors"},
}


@pytest.fixture(scope="module")
def affine():
    a, b, c = (te.placeholder((N,), "float32", name=n) for n in "abc")
    d = te.compute((N,), lambda i: a[i] * 2 + b[i] * 3 + c[i], name="d")
    return compile_te([a, b, c, d]), [a, b, c, d]


@pytest.fixture(scope="module")
def two_functions():
    """prefill(x, w, y) = 2x + w and decode(x, w, y) = 3x + w: one weight for both, as LLMs'
    prefill and decode functions share theirs."""

    def fn(name, k):
        x, w = te.placeholder((N,), "float32", name="x"), te.placeholder((N,), "float32", name="w")
        y = te.compute((N,), lambda i: x[i] * k + w[i], name="y")
        return te.create_prim_func([x, w, y]).with_attr("global_symbol", name), [x, w, y]

    (f1, s1), (f2, s2) = fn("prefill", 2.0), fn("decode", 3.0)
    return tvm.compile(tvm.IRModule({"prefill": f1, "decode": f2}), target="llvm"), s1, s2


def export(pm, folder, name, placement):
    lib = folder / f"{name}.so"
    options = dict(PLACEMENTS[placement])
    if "weights_file" in options:
        options["weights_file"] = folder / f"{name}.safetensors"
    tvm_partial.export_library(pm, lib, **options)
    size = lib.stat().st_size + (options["weights_file"].stat().st_size if "weights_file" in options else 0)
    return lib, size


def call(pm, a, function=None):
    out = tvm.runtime.empty((N,), "float32")
    (pm if function is None else pm[function])(tvm.runtime.tensor(a), out)
    return out.numpy()


# -- 1. a tensor bound in several places is one tensor ---------------------------------------------------
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_tied_weights_are_stored_once(affine, tmp_path, placement):
    exe, sig = affine
    w, other = ints(N, seed=1), ints(N, seed=2)
    tied = tvm_partial.partial(exe, signature=sig, b=w, c=w)
    held = tvm_partial.bindings(tied)["main"]
    assert held[1].same_as(held[2])  # one copy of the one array
    untied = tvm_partial.partial(exe, signature=sig, b=w, c=other)
    _, tied_size = export(tied, tmp_path, "tied", placement)
    _, untied_size = export(untied, tmp_path, "untied", placement)
    saved = untied_size - tied_size
    assert w.nbytes - 256 <= saved <= w.nbytes + 256, (tied_size, untied_size)
    info = tvm_partial.inspect(tmp_path / "tied.so")
    (fn,) = info["functions"]
    assert [b.get("shared_with") for b in fn["bindings"]] == [None, {"function": "main", "position": 1}]
    assert info["constant_bytes"] == w.nbytes
    report = tvm_partial.verify(tmp_path / "tied.so")
    assert report["intact"] and len(report["payloads"]) == 1
    assert report["payloads"][0]["shared_by"] == [{"function": "main", "position": 2}]


def test_equal_contents_are_not_tied(affine, tmp_path):
    """Identity is the bound tensor, never equal contents by accident: two arrays that happen to
    hold the same values stay two tensors (stored twice, independent after load)."""
    exe, sig = affine
    w = ints(N, seed=1)
    pm = tvm_partial.partial(exe, signature=sig, b=w, c=w.copy())
    lib, size = export(pm, tmp_path, "m", "inline")
    assert size > 2 * w.nbytes
    held = tvm_partial.bindings(tvm_partial.load(lib))["main"]
    assert not held[1].same_as(held[2])
    assert "shared_with" not in tvm_partial.inspect(lib)["functions"][0]["bindings"][1]


@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_tied_weights_alias_after_load_in_a_fresh_process(two_functions, tmp_path, placement):
    """prefill's and decode's weight, one tvm Tensor bound in both functions, and a function's two
    positions tied: after load (a fresh process) each is one tensor object, so a write through one
    place reaches every other, as it did before export."""
    exe, s1, s2 = two_functions
    w = tvm.runtime.tensor(ints(N, seed=3))  # held by reference: the same tensor in both calls
    pm = tvm_partial.partial(exe, signature=s1, function="prefill", w=w)
    pm = tvm_partial.partial(pm, signature=s2, function="decode", w=w)
    before = tvm_partial.bindings(pm)
    assert before["prefill"][1].same_as(before["decode"][1])
    lib, _ = export(pm, tmp_path, "shared", placement)
    result = run_json(
        """
        import json, sys
        import numpy as np, tvm, tvm_partial
        N = int(sys.argv[2])
        pm = tvm_partial.load(sys.argv[1])
        held = tvm_partial.bindings(pm)
        x = np.arange(N, dtype="float32")
        def run(name):
            out = tvm.runtime.empty((N,), "float32")
            pm[name](tvm.runtime.tensor(x), out)
            return out.numpy()
        same = held["prefill"][1].same_as(held["decode"][1])
        first = run("decode")
        held["prefill"][1].copyfrom(np.full(N, 5, "float32"))  # one write...
        after = run("decode")  # ...seen by the other function
        print(json.dumps({"same": bool(same), "first": first[:4].tolist(),
                          "after": bool((after == 3 * x + 5).all())}))
        """,
        str(lib),
        str(N),
    )
    x = np.arange(N, dtype="float32")
    assert result["same"] and result["after"]
    assert result["first"] == (3 * x + w.numpy())[:4].tolist()


def test_rebind_replaces_a_tied_tensor_at_every_place(affine):
    exe, sig = affine
    w, new, other = ints(N, seed=1), ints(N, seed=4), ints(N, seed=5)
    a = ints(N, seed=6)
    pm = tvm_partial.partial(exe, signature=sig, b=w, c=w)
    both = tvm_partial.rebind(pm, b=new)  # one tensor: c follows
    assert np.array_equal(call(both, a), a * 2 + new * 3 + new)
    held = tvm_partial.bindings(both)["main"]
    assert held[1].same_as(held[2])
    untied = tvm_partial.rebind(pm, b=new, c=other)  # each given its own: untied
    assert np.array_equal(call(untied, a), a * 2 + new * 3 + other)
    assert np.array_equal(call(pm, a), a * 2 + w * 3 + w)  # the original is untouched


# -- 2. every dtype TVM and the weights format share -----------------------------------------------------
WHOLE_BYTES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
]  # fmt: skip
#: TVM dtypes safetensors has no code for: a weights file refuses them, the library carries them.
NO_SAFETENSORS_CODE = {"float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "int4", "uint4"}


def sample(name: str, count: int = 40) -> np.ndarray:
    dtype = np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)
    raw = np.random.default_rng(len(name)).integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
    if name == "bool":
        return (raw & 1).astype(bool)
    if name == "float4_e2m1fn":
        return (raw & 0x0F).view(dtype)  # every 4-bit code, one per byte as ml_dtypes holds them
    return raw.view(dtype)


@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("name", [*WHOLE_BYTES, "float4_e2m1fn"])
def test_every_dtype_round_trips_bitwise(affine, tmp_path, name, placement):
    exe, _ = affine
    values = sample(name)
    pm = tvm_partial.partial(exe, {1: values})  # no signature: the dtype is carried as given
    expected = raw_bytes(tvm_partial.bindings(pm)["main"][1])
    if name == "float4_e2m1fn":  # packed as TVM's own copy packs it
        assert expected == raw_bytes(tvm.runtime.empty(values.shape, name).copyfrom(values))
    else:
        assert expected == values.tobytes()
    if placement == "weights_file" and name in NO_SAFETENSORS_CODE:
        with pytest.raises(TypeError, match=rf"tensor 'main/1' \(function 'main' position 1\) has dtype {name}, "
                           r"which safetensors has no code for.*export without weights_file="):  # fmt: skip
            export(pm, tmp_path, "m", placement)
        return
    lib, _ = export(pm, tmp_path, "m", placement)
    held = tvm_partial.bindings(tvm_partial.load(lib))["main"][1]
    assert str(held.dtype) == name and tuple(held.shape) == values.shape
    assert raw_bytes(held) == expected


@pytest.mark.parametrize("placement", ["inline", "zero_copy"])
@pytest.mark.parametrize("name", ["int4", "uint4"])
def test_packed_int4_tensor_round_trips(affine, tmp_path, name, placement):
    """A tvm Tensor of int4 is taken packed as it is (two elements per byte, 5 elements in 3 bytes)."""
    exe, _ = affine
    packed = tvm.runtime.tensor(np.array([0x1E, 0x37, 0x80], "uint8"))._create_view((5,), name)
    pm = tvm_partial.partial(exe, {1: packed})
    lib, _ = export(pm, tmp_path, "m", placement)
    held = tvm_partial.bindings(tvm_partial.load(lib))["main"][1]
    assert str(held.dtype) == name and tuple(held.shape) == (5,) and raw_bytes(held) == b"\x1e\x37\x80"


def test_numpy_int4_is_refused_because_tvm_reads_it_two_ways():
    """Why numpy int4 is refused: TVM's Tensor.numpy() unpacks two elements per byte, while the
    code tvm.compile makes for the CPU reads element i from byte i. A packing chosen for one
    would hand the other wrong values, so the user packs for the kernel they have."""
    w = te.placeholder((4,), "int4", name="w")
    o = te.compute((4,), lambda i: w[i].astype("int32"), name="o")
    exe = compile_te([w, o])
    one_per_byte = tvm.runtime.tensor(np.array([1, 2, 3, 4, 0, 0, 0, 0], "uint8"))._create_view((4,), "int4")
    out = tvm.runtime.empty((4,), "int32")
    exe["main"](one_per_byte, out)
    assert out.numpy().tolist() == [1, 2, 3, 4]  # the CPU kernel: one element per byte
    assert one_per_byte.numpy().tolist() != [1, 2, 3, 4]  # numpy(): two per byte
    with pytest.raises(
        TypeError, match=r"parameter 'w' \(position 0\): numpy stores int4 one element per byte"
    ):
        tvm_partial.partial(exe, signature=[w, o], w=np.array([1, 2, 3, 4], ml_dtypes.int4))


def test_torch_float8_and_complex(affine, tmp_path):
    torch = pytest.importorskip("torch")
    exe, sig = affine
    for dtype, name in ((torch.float8_e4m3fn, "float8_e4m3fn"), (torch.float8_e5m2, "float8_e5m2")):
        t = (torch.arange(40, dtype=torch.float32) / 8 - 2).to(dtype)
        pm = tvm_partial.partial(exe, {1: t})
        lib, _ = export(pm, tmp_path, name, "weights_file")
        held = tvm_partial.bindings(tvm_partial.load(lib))["main"][1]
        assert str(held.dtype) == name and raw_bytes(held) == t.view(torch.uint8).numpy().tobytes()
        # the weights file holds it under safetensors' own code, as torch reads it back
        import safetensors.torch

        back = safetensors.torch.load_file(str(tmp_path / f"{name}.safetensors"))["main/1"]
        assert back.dtype == dtype and torch.equal(back.view(torch.uint8), t.view(torch.uint8))
    with pytest.raises(
        TypeError, match=r"cannot bind parameter 'b' \(position 1\): complex64 tensors cannot be bound"
    ):
        tvm_partial.partial(exe, signature=sig, b=torch.zeros(N, dtype=torch.complex64))


# -- 3. a file by the model's own names ------------------------------------------------------------------
def test_a_file_of_another_tool_binds_by_the_models_names(affine, tmp_path):
    """safetensors.numpy.save_file keyed by parameter names (as a state_dict names them): load's
    weights_file= and open_weights take it as it is, no FUNCTION/ prefix needed."""
    exe, sig = affine
    pm = tvm_partial.partial(exe, signature=sig, b=ints(N, seed=1), c=ints(N, seed=2))
    lib, _ = export(pm, tmp_path, "m", "inline")
    b, c, a = ints(N, seed=7), ints(N, seed=8), ints(N, seed=9)
    theirs = tmp_path / "theirs.safetensors"
    safetensors_numpy.save_file({"b": b, "c": c}, str(theirs))
    loaded = tvm_partial.load(lib, weights_file=theirs)
    assert np.array_equal(call(loaded, a), a * 2 + b * 3 + c)
    again = tvm_partial.partial(exe, signature=sig, **tvm_partial.open_weights(theirs))
    assert np.array_equal(call(again, a), a * 2 + b * 3 + c)
    # a name no parameter has is refused, showing the key scheme
    safetensors_numpy.save_file({"b": b, "bias": c}, str(tmp_path / "wrong.safetensors"))
    with pytest.raises(ValueError, match=r"tensor 'bias'.*keys are parameter names, e.g. weights"):
        tvm_partial.load(lib, weights_file=tmp_path / "wrong.safetensors")


@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_both_names_of_a_tied_pair_with_the_same_bits_load_as_one_tensor(affine, tmp_path, placement):
    """What save_file of a cloned state_dict writes for a tie ({"emb.weight": w.clone(),
    "head.weight": w.clone()}): two keys supplying one bound tensor with the same dtype, shape and
    bits are taken, as partial() takes them, and the tensor stays one after load (in one file, or
    in two files of an index); differing values are refused naming both keys."""
    exe, sig = affine
    w = ints(N, seed=1)
    lib, _ = export(tvm_partial.partial(exe, signature=sig, b=w, c=w), tmp_path, "tied", placement)
    new, a = ints(N, seed=7), ints(N, seed=9)
    both = tmp_path / "both.safetensors"
    safetensors_numpy.save_file({"b": new.copy(), "c": new.copy()}, str(both))
    safetensors_numpy.save_file({"b": new.copy()}, str(tmp_path / "one.safetensors"))
    safetensors_numpy.save_file({"c": new.copy()}, str(tmp_path / "two.safetensors"))
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"b": "one.safetensors", "c": "two.safetensors"}}))
    for source in (both, index):
        loaded = tvm_partial.load(lib, weights_file=source)
        held = tvm_partial.bindings(loaded)["main"]
        assert held[1].same_as(held[2]), source
        assert np.array_equal(call(loaded, a), a * 2 + new * 4)
        again = tvm_partial.partial(exe, signature=sig, **tvm_partial.open_weights(source))
        assert np.array_equal(call(again, a), a * 2 + new * 4)
    changed = new.copy()
    changed[-1] += 1
    for c in (changed, new.astype("float64")):
        safetensors_numpy.save_file({"b": new, "c": c}, str(both))
        with pytest.raises(
            ValueError,
            match=r"tensors 'b' and 'c' both supply 'b' \(one tensor, bound at b and c\) with different "
            r"values \(dtype, shape or bytes\); keep one",
        ):
            tvm_partial.load(lib, weights_file=both)


def test_a_name_in_two_functions_is_refused_naming_both(two_functions, tmp_path):
    exe, s1, s2 = two_functions
    pm = tvm_partial.partial(exe, signature=s1, function="prefill", w=ints(N, seed=1))
    pm = tvm_partial.partial(pm, signature=s2, function="decode", w=ints(N, seed=2))
    lib, _ = export(pm, tmp_path, "m", "inline")
    tvm_partial.save_weights(pm, tmp_path / "own.safetensors")  # two tensors named w: FUNCTION/w
    assert sorted(k for k in safetensors_numpy.load_file(str(tmp_path / "own.safetensors")) if "/" in k and
                  not k.startswith("__")) == ["decode/w", "prefill/w"]  # fmt: skip
    safetensors_numpy.save_file({"w": ints(N, seed=3)}, str(tmp_path / "bare.safetensors"))
    with pytest.raises(ValueError, match=r"tensor 'w' could be '(prefill|decode)/w' or '(prefill|decode)/w'.*"
                       r"name it FUNCTION/w"):  # fmt: skip
        tvm_partial.load(lib, weights_file=tmp_path / "bare.safetensors")
    w1, w2, x = ints(N, seed=4), ints(N, seed=5), ints(N, seed=6)
    safetensors_numpy.save_file({"prefill/w": w1, "decode/w": w2}, str(tmp_path / "named.safetensors"))
    loaded = tvm_partial.load(lib, weights_file=tmp_path / "named.safetensors")
    assert np.array_equal(call(loaded, x, "prefill"), 2 * x + w1)
    assert np.array_equal(call(loaded, x, "decode"), 3 * x + w2)


def test_own_weights_file_gives_back_the_models_state_dict(tmp_path):
    """A torch model's state_dict (tied weights included) bound by its names, saved with
    save_weights: safetensors' own reader also sees the alignment entries (__padding__/N), which a
    strict load_state_dict rejects; open_weights gives back exactly the model's tensors, tied
    names included, and the model loads them strictly, bitwise."""
    torch = pytest.importorskip("torch")

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Linear(5, 7, bias=False)  # 35 floats: padding follows
            self.head = torch.nn.Linear(5, 7)
            self.head.weight = self.embed.weight  # tied, as LLMs tie embedding and output

    torch.manual_seed(0)
    model = Model()
    state = model.state_dict()
    assert state["embed.weight"].data_ptr() == state["head.weight"].data_ptr()
    x, ew, hw, hb = (
        te.placeholder(s, "float32", name=n)
        for n, s in (("x", (5,)), ("embed.weight", (7, 5)), ("head.weight", (7, 5)), ("head.bias", (7,)))
    )  # fmt: skip
    out = te.compute((7,), lambda i: x[0] * ew[i, 0] + hw[i, 1] + hb[i], name="out")
    sig = [x, ew, hw, hb, out]
    exe = compile_te(sig)
    pm = tvm_partial.partial(exe, {name: state[name] for name in ("embed.weight", "head.weight", "head.bias")},
                             signature=sig)  # fmt: skip
    held = tvm_partial.bindings(pm)["main"]
    assert held[1].same_as(held[2])  # one torch tensor in two places: one tensor
    path = tmp_path / "model.safetensors"
    tvm_partial.save_weights(pm, path)
    extra = set(safetensors_numpy.load_file(str(path))) - set(state)
    assert extra and all(k.startswith("__padding__/") for k in extra), extra
    tensors = tvm_partial.open_weights(path)
    assert set(tensors) == set(state)
    fresh = Model()
    fresh.load_state_dict({k: torch.from_dlpack(v) for k, v in tensors.items()}, strict=True)
    for key, value in state.items():
        assert torch.equal(fresh.state_dict()[key], value), key
    assert json.loads(safetensors_numpy.safe_open(str(path), "np").metadata()["tvm_partial.shared"]) == {
        "head.weight": "embed.weight"
    }
    assert os.path.getsize(path) < 2 * 35 * 4 + 7 * 4 + 4096  # the tied tensor once


_CPP_PROJECT = """
cmake_minimum_required(VERSION 3.18)
project(tied LANGUAGES CXX)
find_package(tvm_partial CONFIG REQUIRED)
add_executable(tied tied.cc)
target_link_libraries(tied PRIVATE tvm_partial::tvm_partial
                      "-Wl,--push-state,--no-as-needed" "${TVM_RUNTIME_LIBRARY}" "-Wl,--pop-state")
get_target_property(_ffi tvm_ffi::shared IMPORTED_LOCATION)
get_filename_component(_ffi_dir "${_ffi}" DIRECTORY)
get_filename_component(_tvm_dir "${TVM_RUNTIME_LIBRARY}" DIRECTORY)
set_target_properties(tied PROPERTIES BUILD_RPATH "${tvm_partial_LIBRARY_DIR};${_ffi_dir};${_tvm_dir}")
"""

# Loads the artifact in C++ and says whether prefill's and decode's bound weight are one tensor.
_CPP_SOURCE = r"""
#include <tvm/ffi/extra/module.h>
#include <tvm_partial/partial_apply.h>
#include <iostream>
namespace ffi = tvm::ffi;
int main(int argc, char** argv) {
  ffi::Module mod = ffi::Module::LoadFromFile(argv[1]);
  auto bound = tvm_partial::PartialApplyBindings(mod);
  ffi::Tensor a = bound.at("prefill").at(1).cast<ffi::Tensor>();
  ffi::Tensor b = bound.at("decode").at(1).cast<ffi::Tensor>();
  std::cout << (a.same_as(b) && a.GetDLTensorPtr()->data == b.GetDLTensorPtr()->data ? "one tensor" : "two tensors") << std::endl;
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize("placement", ["inline", "weights_file"])
def test_tied_weights_alias_after_load_in_cpp(two_functions, tmp_path, placement):
    exe, s1, s2 = two_functions
    w = tvm.runtime.tensor(ints(N, seed=3))
    pm = tvm_partial.partial(exe, signature=s1, function="prefill", w=w)
    pm = tvm_partial.partial(pm, signature=s2, function="decode", w=w)
    lib, _ = export(pm, tmp_path, "shared", placement)
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(_CPP_PROJECT)
    (src / "tied.cc").write_text(_CPP_SOURCE)
    runtime = subprocess.run(
        [sys.executable, "-c", "import tvm.libinfo; print(tvm.libinfo.find_libtvm_runtime())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    build = tmp_path / "build"
    for cmd in (
        [
            "cmake",
            "-S",
            str(src),
            "-B",
            str(build),
            *cmake_package_dirs(),
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DTVM_RUNTIME_LIBRARY={runtime}",
        ],
        ["cmake", "--build", str(build)],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run(
        [str(build / "tied"), str(lib)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "one tensor", proc.stdout + proc.stderr


def test_a_torch_state_dict_file_binds_a_frontend_nn_model_with_no_renaming(tmp_path):
    """A Relax frontend.nn model and a torch model of the same structure: the torch state_dict
    saved with safetensors.torch.save_file binds the Relax model's parameters by their own dotted
    names (fc1.weight, ...), through open_weights and through load(..., weights_file=)."""
    torch = pytest.importorskip("torch")
    import safetensors.torch
    from tvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(8, 16, bias=True)
            self.fc2 = nn.Linear(16, 4, bias=False)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    mod, specs = Net().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    exe = tvm.compile(mod, target="llvm")
    reference = torch.nn.Sequential()  # the torch side, named as the Relax model names them
    reference.fc1 = torch.nn.Linear(8, 16, bias=True)
    reference.fc2 = torch.nn.Linear(16, 4, bias=False)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # small integers: every sum is exact, so results compare bitwise
        for p in reference.parameters():
            p.copy_(torch.randint(-3, 4, p.shape, generator=generator).float())
    state = {k: v.contiguous() for k, v in reference.state_dict().items()}
    assert sorted(state) == sorted(name for name, _ in specs)
    path = tmp_path / "torch.safetensors"
    safetensors.torch.save_file(state, str(path))
    x = ints((2, 8), seed=11)
    with torch.no_grad():
        want = reference.fc2(torch.relu(reference.fc1(torch.from_numpy(x)))).numpy()
    bound = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **tvm_partial.open_weights(path))
    assert np.array_equal(bound["forward"](tvm.runtime.tensor(x)).numpy(), want)
    zeros = {name: np.zeros([int(d) for d in p.shape], "float32") for name, p in specs}
    tvm_partial.export_library(
        tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **zeros), tmp_path / "m.so"
    )
    loaded = tvm_partial.load(tmp_path / "m.so", weights_file=path)
    assert np.array_equal(loaded(tvm.runtime.tensor(x)).numpy(), want)  # pm(x): forward, its one function


@pytest.mark.parametrize("name", ["bool", "int8", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_outputs_of_each_dtype_after_load(tmp_path, name):
    """outputs=: a kernel returning its bound weight, allocated per call in that dtype, before
    export and after load (zero-copy), bitwise."""
    x, w = te.placeholder((40,), name, name="x"), te.placeholder((40,), name, name="w")
    out = te.compute((40,), lambda i: w[i], name="out")
    exe = compile_te([x, w, out])
    values = sample(name)
    pm = tvm_partial.partial(exe, signature=[x, w, out], w=values, outputs="out")
    lib, _ = export(pm, tmp_path, "m", "zero_copy")
    for module in (pm, tvm_partial.load(lib)):
        result = module(tvm.runtime.empty((40,), name))
        assert str(result.dtype) == name and raw_bytes(result) == values.tobytes()


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_on_the_device_tied_weights_load_as_one_tensor(dev, affine_dev, tmp_path, placement):
    """One tensor bound at two positions on the device is one tensor after the load too (the same
    memory at both positions), with the exported bytes."""
    exe, sig = affine_dev
    a, w = ints(256, seed=0), ints(256, seed=1)
    pm = tvm_partial.partial(exe, signature=sig, b=w, c=w, device=dev.name)
    options = dict(PLACEMENTS[placement])
    if "weights_file" in options:
        options["weights_file"] = tmp_path / options["weights_file"]
    tvm_partial.export_library(pm, tmp_path / "tied.so", **options)
    held = tvm_partial.bindings(tvm_partial.load(tmp_path / "tied.so"))["main"]
    assert held[1].data_ptr() == held[2].data_ptr() and str(held[1].device) == dev.name
    assert held[1].numpy().tobytes() == w.tobytes()
    out = dev.tensor(np.zeros(256, "float32"))
    tvm_partial.load(tmp_path / "tied.so")(dev.tensor(a), out)
    assert out.numpy().tobytes() == (a * 2 + w * 3 + w).tobytes()
