# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Partial modules: calling, merging, SaveToBytes round trips, export and reload elsewhere."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te

import tvm_partial
from helpers import SANITIZED, affine4_ref, ints, raw_bytes, run_json, run_python, tensor
from tvm_partial import _fixtures as fixtures

_view = tvm_ffi.get_global_func("runtime.TVMTensorCreateView")


@pytest.fixture(scope="module")
def three_functions():
    """A library with f1(x, w, out) = x*w, f2(x, b, out) = x+b, f3(x, out) = -x."""
    x = te.placeholder((8,), "float32", name="x")
    w = te.placeholder((8,), "float32", name="w")
    out = te.compute((8,), lambda i: x[i] * w[i], name="out")
    funcs = {
        "f1": te.create_prim_func([x, w, out]),
        "f2": te.create_prim_func([x, w, te.compute((8,), lambda i: x[i] + w[i], name="out")]),
        "f3": te.create_prim_func([x, te.compute((8,), lambda i: -x[i], name="out")]),
    }
    mod = tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in funcs.items()})
    return tvm.compile(mod, target="llvm")


def test_module_calls_main(conv):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    assert pm.kind == "partial_apply"
    assert [m.kind for m in pm.imports] == ["llvm"]
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    pm(tensor(inputs["data"]), out)
    assert np.array_equal(out.numpy(), expected)
    assert pm["main"].same_as(pm["main"])  # built once, cached
    held = tvm_partial.bindings(pm)
    assert sorted(held) == ["main"] and sorted(held["main"]) == [1, 2]
    assert tvm_partial.param_names(pm) == {"main": ["data", "weights", "bias", "result"]}
    with pytest.raises(TypeError, match=r"main\(\) takes 2 arguments \(data, result\), 1 given"):
        pm(out)


def test_bindings_and_param_names_follow_the_kind(affine4):
    # Documented in bindings(): {position: value} for a function, {function: {...}} for a module.
    exe, sig = affine4
    w = tensor(ints(16))
    g = tvm_partial.partial(exe["main"], signature=sig, b=w)
    pm = tvm_partial.partial(exe, signature=sig, b=w)
    assert list(tvm_partial.bindings(g)) == [1] and tvm_partial.bindings(g)[1].same_as(w)
    assert list(tvm_partial.bindings(pm)) == ["main"] and tvm_partial.bindings(pm)["main"][1].same_as(w)
    assert tvm_partial.param_names(g) == ["a", "b", "c", "out"]
    assert tvm_partial.param_names(pm) == {"main": ["a", "b", "c", "out"]}
    with pytest.raises(TypeError, match="expected a partial function or a partial_apply module"):
        tvm_partial.bindings(exe["main"])


def test_module_forwards_unbound_names(three_functions):
    pm = tvm_partial.partial(three_functions, {1: np.full(8, 3, "float32")}, function="f1")
    x = ints(8)
    out = tvm.runtime.empty((8,), "float32")
    pm["f3"](tensor(x), out)
    assert np.array_equal(out.numpy(), -x)
    pm["f1"](tensor(x), out)
    assert np.array_equal(out.numpy(), x * 3)


def test_unknown_function_refused(three_functions):
    with pytest.raises(AttributeError, match=r"the module \(llvm\) has no function 'nope' to bind"):
        tvm_partial.partial(three_functions, {1: 1.0}, function="nope")
    # Also when binding more on a partial module: checked against the code it wraps, at bind time.
    pm = tvm_partial.partial(three_functions, {1: np.full(8, 3, "float32")}, function="f1")
    with pytest.raises(AttributeError, match=r"the module \(llvm\) has no function 'nope' to bind"):
        tvm_partial.partial(pm, {1: 1.0}, function="nope")


def test_partial_of_partial_module_merges(three_functions):
    w = np.full(8, 3, "float32")
    b = np.full(8, 5, "float32")
    pm1 = tvm_partial.partial(three_functions, {1: w}, function="f1")
    pm2 = tvm_partial.partial(pm1, {1: b}, function="f2")
    assert [m.kind for m in pm2.imports] == ["llvm"]  # one level of wrapping
    assert sorted(tvm_partial.bindings(pm2)) == ["f1", "f2"]
    x = ints(8)
    out = tvm.runtime.empty((8,), "float32")
    pm2["f1"](tensor(x), out)
    assert np.array_equal(out.numpy(), x * w)
    pm2["f2"](tensor(x), out)
    assert np.array_equal(out.numpy(), x + b)
    # Binding more of the same function merges positions too (position 1 of f1's partial = out).
    pm3 = tvm_partial.partial(pm2, {1: out}, function="f1")
    assert sorted(tvm_partial.bindings(pm3)["f1"]) == [1, 2]
    pm3["f1"](tensor(x))
    assert np.array_equal(out.numpy(), x * w)
    # The merged module round-trips.
    loaded = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(pm2), three_functions)
    loaded["f2"](tensor(x), out)
    assert np.array_equal(out.numpy(), x + b)
    assert tvm_partial.save_to_bytes(loaded) == tvm_partial.save_to_bytes(pm2)


PARTIAL_APPLY = tvm_ffi.get_global_func("runtime.PartialApply")
PARTIAL_APPLY_MODULE = tvm_ffi.get_global_func("runtime.PartialApplyModule")
AFFINE4_NAMES = ["a", "b", "c", "d"]  # main(a, b, c, out=d)
#: What an inner partial of affine4's main records: binds b (position 1); with outputs, also
#: allocates d (position 3) per call.
INNER_LEVELS = {
    "names": ({"main": AFFINE4_NAMES}, {}),
    "names and an output": ({"main": AFFINE4_NAMES}, {"main": [[3, "float32", [[-1, 16]]]]}),
    "no names": ({}, {}),
}


def test_merge_over_a_module_with_names_checks_positions_as_the_function_path_does(affine4):
    """main(a, b, c, d) with b bound: outer position 5 lands at 6, past the 4 parameters. The
    module path refuses it at bind time, as the function path does, naming both positions."""
    exe, _ = affine4
    b = tensor(ints(16, seed=2))
    inner = PARTIAL_APPLY_MODULE(exe.mod, {"main": {1: b}}, {"main": AFFINE4_NAMES})
    past = r"bound index 5 of the partial lands at position 6 of the function it wraps, past its 4 parameters"
    with pytest.raises(IndexError, match=r"PartialApplyModule\('main'\): " + past):
        PARTIAL_APPLY_MODULE(inner, {"main": {5: 7}})
    inner_f = PARTIAL_APPLY(exe["main"], {1: b}, "main", AFFINE4_NAMES)
    with pytest.raises(IndexError, match=r"PartialApply: " + past):
        PARTIAL_APPLY(inner_f, {5: 7})
    # Position 1 of the partial (c) lands at 2: accepted on both paths, and the result computes.
    a, c = ints(16, seed=1), ints(16, seed=3)
    out = tensor(np.zeros(16, "float32"))
    PARTIAL_APPLY_MODULE(inner, {"main": {1: tensor(c)}})["main"](tensor(a), out)
    assert np.array_equal(out.numpy(), affine4_ref(a, ints(16, seed=2), c))
    assert sorted(tvm_partial.bindings(PARTIAL_APPLY(inner_f, {1: tensor(c)}))) == [1, 2]


@pytest.mark.parametrize("inner_kind", list(INNER_LEVELS))
def test_what_a_module_merge_accepts_loads_back(affine4, inner_kind):
    """Every outer position and output over an inner partial module: what PartialApplyModule
    accepts, save_to_bytes writes and load_from_bytes reads back byte for byte; what it refuses,
    the function path refuses too."""
    exe, _ = affine4
    names, outputs = INNER_LEVELS[inner_kind]
    inner_m = PARTIAL_APPLY_MODULE(exe.mod, {"main": {1: tensor(ints(16))}}, names, outputs)
    inner_f = PARTIAL_APPLY(
        exe["main"], {1: tensor(ints(16))}, "main", names.get("main", []), outputs.get("main", [])
    )
    accepted = []
    for position in range(6):
        for outer_bound, outer_outputs in (({position: 7}, []), ({}, [[position, "int8", []]])):
            try:
                merged = PARTIAL_APPLY_MODULE(inner_m, {"main": outer_bound}, {}, {"main": outer_outputs})
            except IndexError as err:
                with pytest.raises(IndexError):
                    PARTIAL_APPLY(inner_f, outer_bound, "", [], outer_outputs)
                assert "past its 4 parameters" in str(err) or "for a function of 4" in str(err), err
                continue
            blob = tvm_partial.save_to_bytes(merged)
            loaded = tvm_partial.load_from_bytes(blob)
            assert tvm_partial.save_to_bytes(loaded) == blob
            PARTIAL_APPLY(inner_f, outer_bound, "", [], outer_outputs)  # accepted there too
            accepted.append((position, "bound" if outer_bound else "output"))
    # Free positions land at 0, 2, 3, ... (4 past the names); with the output at 3: 0, 2, 4, ...
    reachable = {"names": [0, 1, 2], "names and an output": [0, 1], "no names": list(range(6))}
    assert accepted == [(q, kind) for q in reachable[inner_kind] for kind in ("bound", "output")]


OUT_OF_MEMORY = """
import json, resource
import numpy as np, tvm, tvm_ffi, tvm_partial
from tvm import te
MiB = 1 << 20
x = te.placeholder((4,), "float32", name="x")
exe = tvm.compile(te.create_prim_func([x, te.compute((4,), lambda i: x[i], name="y")]), target="llvm")
held = tvm_partial.partial(exe, {0: np.ones(256 * MiB // 4, "float32")})
blob = tvm_partial.save_to_bytes(held)
inner = tvm_ffi.get_global_func("runtime.PartialApply")(exe["main"], {2 * i: i for i in range(1 << 20)})
outer = tvm_ffi.convert({i: i for i in range(1 << 20)})  # converted before the limit

def limit(headroom):
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, resource.RLIM_INFINITY))

# Each global fails in its own code: the headroom leaves room for what tvm-ffi copies first.
calls = {
    "tvm_partial.SaveToBytes": (128 * MiB, lambda f: f(held)),  # a std::string of 256 MiB
    # the tensor, built on first use (the loader parses and hashes; the bindings build it)
    "ffi.Module.load_from_bytes.partial_apply": (384 * MiB, lambda f: tvm_partial.bindings(f(blob))),
    "runtime.PartialApply": (32 * MiB, lambda f: f(inner, outer)),  # the merge of 2 Mi positions
}
results = {}
for name, (headroom, call) in calls.items():
    function = tvm_ffi.get_global_func(name)
    limit(headroom)
    try:
        call(function)
        results[name] = ["returned", ""]
    except Exception as err:
        results[name] = [type(err).__name__, str(err)]
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(json.dumps(results))
"""


@pytest.mark.skipif(
    SANITIZED,
    reason="ASan's throwing operator new reports running out of memory and aborts, whatever "
    "allocator_may_return_null says: no std::bad_alloc reaches the code under test",
)
def test_out_of_memory_is_a_memory_error_from_every_global():
    """Under an address-space limit a typed global (SaveToBytes), the loader and a packed global
    (PartialApply) raise MemoryError, never tvm-ffi's InternalError for a std::bad_alloc."""
    proc = run_python(
        OUT_OF_MEMORY,
        env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert results == {
        "tvm_partial.SaveToBytes": [
            "MemoryError",
            "saving a partial_apply module: out of memory (std::bad_alloc)",
        ],
        "ffi.Module.load_from_bytes.partial_apply": [
            "MemoryError",
            "out of memory allocating a tensor of 268435456 bytes",
        ],
        "runtime.PartialApply": ["MemoryError", "runtime.PartialApply: out of memory (std::bad_alloc)"],
    }


def _typed(values: np.ndarray, dtype: str):
    """A tvm Tensor of `dtype` holding `values` (bfloat16 from its uint16 bit pattern)."""
    if dtype == "bfloat16":
        bits = tensor(values.astype("uint16"))
        return _view(bits, tvm_ffi.Shape(values.shape), "bfloat16", 0)
    return tensor(values.astype(dtype))


EVERY_KIND = {
    "float32": lambda: _typed(ints((3, 5), seed=1), "float32"),
    "float16": lambda: _typed(ints((7,), seed=2), "float16"),
    "bfloat16": lambda: _typed(np.array([0x3F80, 0x4000, 0xC040], "uint16"), "bfloat16"),
    "int8": lambda: _typed(ints((2, 2, 2), seed=3), "int8"),
    "uint8": lambda: _typed(ints((9,), low=0, high=255, seed=4), "uint8"),
    "int64": lambda: _typed(np.array([-(2**62), 2**62, 7]), "int64"),
    "bool": lambda: _typed(np.array([True, False, True]), "bool"),
    "0-d": lambda: _typed(np.array(2.5), "float32"),
    "zero-size": lambda: _typed(np.zeros((0, 4)), "float32"),
    "64 MiB": lambda: _typed(np.arange(16 * 2**20) % 251, "float32"),
    "int": lambda: -(2**40),
    "float": lambda: 0.1,
    "bool scalar": lambda: True,
    "str": lambda: "héllo",
    "None": lambda: None,
}


def test_roundtrip_every_value_kind(affine4):
    exe, _ = affine4
    values = {i: make() for i, make in enumerate(EVERY_KIND.values())}
    pm = tvm_partial.partial(exe, values)
    data = tvm_partial.save_to_bytes(pm)
    loaded = tvm_partial.load_from_bytes(data, exe)
    back = tvm_partial.bindings(loaded)["main"]
    assert sorted(back) == sorted(values)
    for i, (kind, original) in zip(values, zip(EVERY_KIND, values.values())):
        got = back[i]
        if isinstance(original, tvm_ffi.Tensor):
            assert str(got.dtype) == str(original.dtype), kind
            assert tuple(got.shape) == tuple(original.shape), kind
            assert got.data_ptr() % 64 == 0, kind
            assert raw_bytes(got) == raw_bytes(original), kind
        else:
            assert type(got) is type(original) and got == original, kind
    assert tvm_partial.save_to_bytes(loaded) == data  # re-saving gives identical bytes


def test_unserialisable_value_refused_at_save(affine4, tmp_path):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {1: tvm_ffi.convert(lambda: 0)})
    with pytest.raises(
        TypeError, match=r"cannot save function 'main' position 1: a bound ffi.Function cannot be serialised"
    ):
        tvm_partial.save_to_bytes(pm)
    target = tmp_path / "refused.so"
    with pytest.raises(TypeError, match=r"cannot save function 'main' position 1"):
        tvm_partial.export_library(pm, target)
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_module_bound_value_refused_at_save(affine4, three_functions):
    exe, _ = affine4
    pm = tvm_partial.partial(exe, {2: three_functions.mod})
    with pytest.raises(TypeError, match=r"cannot save function 'main' position 2: a bound ffi.Module"):
        tvm_partial.save_to_bytes(pm)


def test_concurrent_first_lookups(conv):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    start = threading.Barrier(16)
    found, failures = [], []
    data = tensor(inputs["data"])

    def worker():
        start.wait()
        f = pm["main"]
        found.append(f)
        out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
        f(data, out)
        if not np.array_equal(out.numpy(), expected):
            failures.append(1)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and len(found) == 16
    assert all(f.same_as(found[0]) for f in found)  # one closure, built once


_RELOAD = """
import json, sys
import numpy as np
{imports}
lib = tvm.runtime.load_module(sys.argv[1])
data = tvm.runtime.tensor(np.load(sys.argv[2]))
out = tvm.runtime.empty({shape}, "float32")
lib(data, out)
print(json.dumps({{"kind": lib.kind, "imports": [m.kind for m in lib.imports],
                  "result": out.numpy().tolist()}}))
"""


@pytest.mark.parametrize("imports", ["import tvm", "import tvm, tvm_partial"])
def test_export_and_reload_in_fresh_process(conv, tmp_path, imports):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    lib = tmp_path / "deploy.so"
    tvm_partial.export_library(pm, lib)
    np.save(tmp_path / "data.npy", inputs["data"])
    direct = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    exe["main"](tensor(inputs["data"]), tensor(inputs["weights"]), tensor(inputs["bias"]), direct)
    got = run_json(
        _RELOAD.format(imports=imports, shape=fixtures.SHAPES["result"]), str(lib), str(tmp_path / "data.npy")
    )
    assert got["kind"] == "partial_apply" and got["imports"] == ["library"]
    result = np.array(got["result"], "float32")
    assert np.array_equal(result, direct.numpy())
    assert np.array_equal(result, expected)


def test_three_functions_after_reload(three_functions, tmp_path):
    w = np.full(8, 3, "float32")
    b = np.full(8, 5, "float32")
    pm = tvm_partial.partial(
        tvm_partial.partial(three_functions, {1: w}, function="f1"), {1: b}, function="f2"
    )
    lib = tmp_path / "three.so"
    tvm_partial.export_library(pm, lib)
    x = ints(8)
    np.save(tmp_path / "x.npy", x)
    got = run_json(
        """
        import json, sys
        import numpy as np, tvm
        lib = tvm.runtime.load_module(sys.argv[1])
        x = tvm.runtime.tensor(np.load(sys.argv[2]))
        results = {}
        for name in ("f1", "f2", "f3"):
            out = tvm.runtime.empty((8,), "float32")
            lib[name](x, out)
            results[name] = out.numpy().tolist()
        print(json.dumps(results))
        """,
        str(lib),
        str(tmp_path / "x.npy"),
    )
    assert np.array_equal(np.array(got["f1"], "float32"), x * w)
    assert np.array_equal(np.array(got["f2"], "float32"), x + b)
    assert np.array_equal(np.array(got["f3"], "float32"), -x)


def test_load_returns_partial_root(conv, tmp_path):
    exe, tensors, inputs, expected = conv
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    tvm_partial.export_library(pm, tmp_path / "a.so")
    loaded = tvm_partial.load(tmp_path / "a.so")
    assert loaded.kind == "partial_apply"
    assert tvm_partial.param_names(loaded) == {"main": ["data", "weights", "bias", "result"]}
    assert np.array_equal(tvm_partial.bindings(loaded)["main"][1].numpy(), inputs["weights"])
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    loaded(tensor(inputs["data"]), out)
    assert np.array_equal(out.numpy(), expected)


def test_in_place_update_of_loaded_constant(affine4):
    exe, _ = affine4
    b = ints(16, seed=1)
    pm = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: b})), exe)
    a, c = ints(16, seed=2), ints(16, seed=3)
    out = tvm.runtime.empty((16,), "float32")
    new_b = ints(16, seed=4)
    tvm_partial.bindings(pm)["main"][1].copyfrom(new_b)  # bound by reference: later calls see it
    pm(tensor(a), tensor(c), out)
    assert np.array_equal(out.numpy(), affine4_ref(a, new_b, c))


def test_bound_but_not_wrapping_anything(affine4):
    exe, _ = affine4
    alone = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: 1.0})))
    with pytest.raises(RuntimeError, match=r"function 'main' is bound but the module wraps no compiled code"):
        alone["main"]


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
def test_on_the_device_a_module_binds_by_name_and_its_bytes_round_trip(dev, affine_dev):
    """Bound by name on the device: pm(...) and pm["main"](...) equal numpy's; save_to_bytes records
    the device, load_from_bytes puts the tensors back there, and saving again gives the same bytes."""
    exe, sig = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c, device=dev.name)
    blob = tvm_partial.save_to_bytes(pm)
    loaded = tvm_partial.load_from_bytes(blob, exe.mod)
    held = tvm_partial.bindings(loaded)["main"]
    assert [(str(held[i].device), held[i].numpy().tobytes()) for i in (1, 2)] == [
        (dev.name, b.tobytes()),
        (dev.name, c.tobytes()),
    ]
    for call in (pm, pm["main"], loaded):
        out = dev.tensor(np.zeros(256, "float32"))
        call(dev.tensor(a), out)
        assert out.numpy().tobytes() == affine4_ref(a, b, c).tobytes()
    assert tvm_partial.save_to_bytes(loaded) == blob


@pytest.mark.device
def test_on_the_device_rebind_places_values_where_the_tensors_replaced_are(dev, affine_dev):
    """rebind(pm, b=numpy) of a module bound on the device puts b there (the kernel reads only
    its own device); a tvm tensor on another device than the one it replaces is refused."""
    exe, sig = affine_dev
    a, b, c, b2 = (ints(256, seed=s) for s in range(4))
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c, device=dev.name)
    rebound = tvm_partial.rebind(pm, b=b2)
    assert str(tvm_partial.bindings(rebound)["main"][1].device) == dev.name
    out = dev.tensor(np.zeros(256, "float32"))
    rebound(dev.tensor(a), out)
    assert out.numpy().tobytes() == affine4_ref(a, b2, c).tobytes()
    if dev.kind != "cpu":
        with pytest.raises(
            ValueError, match=rf"'b' \(position 1\) is bound on {dev.name}, the replacement is on cpu:0"
        ):
            tvm_partial.rebind(pm, b=tvm.runtime.tensor(b2))
