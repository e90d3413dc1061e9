# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Memory safety, hangs and loader strictness (issue 10): unreachable positions, merges near
2**63, the loader lock, registrations by embedded copies, huge function tables.

What could hang or crash runs in a subprocess with a timeout.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import tvm
import tvm_ffi
from blob_writer import make_blob

import tvm_partial
from helpers import affine4_ref, ints, run_json, run_python, tensor

partial_apply = tvm_ffi.get_global_func("runtime.PartialApply")
load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")

UNREACHABLE = [2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1]


def _unreachable(position: int) -> str:
    return (
        rf"bound index {position} cannot be reached: a call passes at most 2147483647 arguments, "
        r"so positions go up to 2147483646"
    )


@pytest.mark.parametrize("position", UNREACHABLE)
def test_unreachable_position_refused_at_bind_time(position, affine4):
    exe, _ = affine4
    x = np.zeros(16, "float32")
    with pytest.raises(IndexError, match="PartialApply: " + _unreachable(position)):
        partial_apply(exe["main"], {position: 1})
    with pytest.raises(IndexError, match=_unreachable(position)):
        tvm_partial.partial(exe["main"], {position: x})
    with pytest.raises(IndexError, match=_unreachable(position)):
        tvm_partial.partial(exe, {position: x})
    with pytest.raises(IndexError, match=r"PartialApplyModule\('main'\): " + _unreachable(position)):
        tvm_ffi.get_global_func("runtime.PartialApplyModule")(exe.mod, {"main": {position: 1}})


def test_last_reachable_position_binds_and_checks_the_call():
    """Position INT32_MAX - 1 binds; a call must reach it, and the check names the counts."""
    f = tvm_ffi.get_global_func("ffi.String")
    g = partial_apply(f, {2**31 - 2: "x"})
    assert sorted(tvm_partial.bindings(g)) == [2**31 - 2]
    with pytest.raises(
        IndexError,
        match=r"bound index 2147483646 is past the end of the call "
        r"\(1 given \+ 1 bound = 2 arguments\)",
    ):
        g("a")


def test_calls_keep_working_next_to_bound_positions(affine4):
    exe, _ = affine4
    a, b, c = ints(16, seed=1), ints(16, seed=2), ints(16, seed=3)
    out = tensor(np.zeros(16, "float32"))
    partial_apply(exe["main"], {1: tensor(b)})(tensor(a), tensor(c), out)
    assert np.array_equal(out.numpy(), affine4_ref(a, b, c))


MERGES = """
import json, sys, numpy as np, tvm, tvm_ffi, tvm_partial
from tvm import te
x = te.placeholder((4,), "float32", name="x")
out = te.compute((4,), lambda i: x[i] + 1.0, name="out")
exe = tvm.compile(te.create_prim_func([x, out]), target="llvm")
a = np.zeros(4, "float32")
results = {}
for kind, target in (("function", exe["main"]), ("module", exe)):
    inner = tvm_partial.partial(target, {0: a})
    for position in [2**62, 2**63 - 1, 2**63 - 2, 2**32, 2**31 - 2, 2**31 - 3]:
        try:
            merged = tvm_partial.partial(inner, {position: 7})
            b = tvm_partial.bindings(merged)
            b = b if kind == "function" else b["main"]
            results[f"{kind} {position}"] = sorted(int(i) for i in b)
        except Exception as err:
            results[f"{kind} {position}"] = f"{type(err).__name__}: {err}"
print(json.dumps(results))
"""


def test_merge_near_2_63_is_refused_without_hanging():
    proc = run_python(MERGES, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for kind, who in (("function", "PartialApply"), ("module", r"PartialApplyModule\('main'\)")):
        for position in [2**62, 2**63 - 1, 2**63 - 2, 2**32]:
            message = results[f"{kind} {position}"]
            assert message.startswith("IndexError: "), message
            assert __import__("re").search(_unreachable(position), message), message
        # Reachable as given, but it lands one past the last reachable position: refused.
        message = results[f"{kind} {2**31 - 2}"]
        assert __import__("re").search(
            rf"IndexError: {who}: bound index 2147483646 of the partial lands at position 2147483647 of the "
            r"function it wraps, which no call can reach",
            message,
        ), message
        assert results[f"{kind} {2**31 - 3}"] == [0, 2**31 - 2]


def test_merging_many_bindings_is_exact(affine4):
    """Merging n bindings into a partial with n bindings, on the function path and the module
    path: every position lands where it should. (How the time grows with n, 8x for 8n, is
    benchmarks/bench_scale.py's question: timings are no test's.)"""
    exe, _ = affine4
    f = tvm_ffi.get_global_func("ffi.String")
    apply_module = tvm_ffi.get_global_func("runtime.PartialApplyModule")
    n = 20_000
    even = {2 * i: i for i in range(n)}  # inner partials bind the even positions
    outer = {i: -i for i in range(n)}  # fills the odd positions in order
    got = tvm_partial.bindings(partial_apply(partial_apply(f, even), outer))
    assert sorted(got) == list(range(2 * n))
    assert [got[2 * i + 1] for i in range(5)] == [0, -1, -2, -3, -4]
    assert [got[2 * i] for i in range(5)] == [0, 1, 2, 3, 4]
    merged = apply_module(apply_module(exe.mod, {"main": even}), {"main": outer})
    assert tvm_partial.bindings(merged)["main"] == got


# ---------------------------------------------------------------------------------------------
# Loading: unreachable positions in a blob; function tables of 25,000 and 200,000 entries.


@pytest.mark.parametrize("position", [2**31 - 1, 2**31, 2**63 - 1])
def test_unreachable_position_refused_by_the_loader(position):
    blob = make_blob([("main", [], [struct.pack("<qB", position, 0)])])
    with pytest.raises(ValueError, match=rf"position {position} cannot be reached"):
        load_from_bytes(blob)
    with pytest.raises(ValueError, match=rf"position {position} cannot be reached"):
        tvm_partial.load_from_bytes(blob)


HUGE = """
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import tvm_ffi, tvm_partial
from blob_writer import make_blob
load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
describe = tvm_ffi.get_global_func("tvm_partial.Describe")
save = tvm_ffi.get_global_func("tvm_partial.SaveToBytes")
apply_module = tvm_ffi.get_global_func("runtime.PartialApplyModule")
bindings = tvm_ffi.get_global_func("runtime.PartialApplyBindings")

def functions(n):
    return [(f"f{i}", [], [struct.pack("<qBq", 0, 1, i)]) for i in range(n)]

checks = {}
for n in (25_000, 200_000):
    blob = make_blob(functions(n))
    module = load(blob)
    last = f"f{n - 1}"
    every = {f"f{i}": {1: 5} for i in range(n)}
    info = describe(blob, "")
    merged = bindings(apply_module(module, {last: {1: 5}, "g": {0: 1}}))
    checks[n] = {"functions": len(info["functions"]), "last": info["functions"][-1]["name"],
                 "resaved": bytes(save(module)) == blob,
                 "merged": [len(merged), sorted(int(i) for i in merged[last])],
                 "merged every": len(bindings(apply_module(module, every)))}
table = functions(25_000)
errors = []
for duplicate in (table + [table[123]], [table[-1]] + table):
    try:
        load(make_blob(duplicate))
        errors.append(None)
    except ValueError as err:
        errors.append(str(err))
print(json.dumps({"checks": checks, "errors": errors}))
"""


@pytest.mark.slow  # a scale test: tables of 25,000 and 200,000 functions
def test_200k_functions_load_describe_save_and_merge():
    """Function tables of 25,000 and 200,000 entries load, describe, save (the same bytes) and
    merge (one function, every one) exactly; duplicates are refused. (How the time grows with
    the table is benchmarks/bench_scale.py's question.)"""
    from pathlib import Path

    proc = run_python(HUGE, str(Path(__file__).parent), timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for n, checks in result["checks"].items():
        assert checks == {
            "functions": int(n),
            "last": f"f{int(n) - 1}",
            "resaved": True,
            "merged": [int(n) + 1, [0, 2]],  # free argument 1 is position 2
            "merged every": int(n),
        }
    assert result["errors"] == [
        "corrupted partial_apply data: function 'f123' appears twice",
        "corrupted partial_apply data: function 'f24999' appears twice",
    ]


# ---------------------------------------------------------------------------------------------
# Zero-copy loads while other threads dlopen and dlclose (the loader lock).


@pytest.fixture(scope="module")
def zero_copy_artifacts(tmp_path_factory):
    from tvm import te

    folder = tmp_path_factory.mktemp("safety_zc")
    x = te.placeholder((64,), "float32", name="x")
    w = te.placeholder((64,), "float32", name="w")
    out = te.compute((64,), lambda i: x[i] * w[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, out]), target="llvm")
    pm = tvm_partial.partial(exe, {1: np.arange(64, dtype="float32")})
    tvm_partial.export_library(pm, folder / "zero.so", zero_copy=True)
    # Libraries for the other threads to open and close: plain TVM modules, never loaded otherwise.
    for i in range(4):
        exe.export_library(str(folder / f"other{i}.so"))
    return folder


STRESS = """
import ctypes, _ctypes, json, os, sys, threading
import numpy as np, tvm, tvm_ffi, tvm_partial
folder = sys.argv[1]
lib = tvm.runtime.load_module(os.path.join(folder, "zero.so"))
metadata = tvm_partial.save_to_bytes(lib)   # refers to the payload region of zero.so
load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
stop = threading.Event()
errors, loads, opens = [], [0], [0]

def opener(i):
    path = os.path.join(folder, f"other{i}.so")
    while not stop.is_set():
        handle = _ctypes.dlopen(path, os.RTLD_NOW | os.RTLD_LOCAL)
        _ctypes.dlclose(handle)
        opens[0] += 1

def loader():
    try:
        for _ in range(300):
            held = tvm_partial.bindings(load(metadata))["main"][1]
            if not np.array_equal(held.numpy(), np.arange(64, dtype="float32")):
                errors.append("wrong payload")
            loads[0] += 1
        for _ in range(20):
            again = tvm.runtime.load_module(os.path.join(folder, "zero.so"))
            out = tvm.runtime.empty((64,), "float32")
            again(tvm.runtime.tensor(np.ones(64, "float32")), out)
            if not np.array_equal(out.numpy(), np.arange(64, dtype="float32")):
                errors.append("wrong result")
            loads[0] += 1
    except Exception as err:
        errors.append(repr(err))

openers = [threading.Thread(target=opener, args=(i,), daemon=True) for i in range(4)]
loaders = [threading.Thread(target=loader, daemon=True) for _ in range(3)]
for t in openers + loaders:
    t.start()
for t in loaders:
    t.join()
stop.set()
for t in openers:
    t.join()
print(json.dumps({"errors": errors, "loads": loads[0], "opened": opens[0] > 0}))
"""


def test_zero_copy_loads_while_other_threads_dlopen(zero_copy_artifacts):
    """Finding the payload region must not call dlopen under glibc's loader lock: with threads
    opening and closing libraries at the same time, that deadlocked (the subprocess timed out)."""
    proc = run_python(STRESS, str(zero_copy_artifacts), timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"errors": [], "loads": 3 * 320, "opened": True}


# ---------------------------------------------------------------------------------------------
# Registrations: the installed library takes over from an embedded copy loaded before it.

TAKEOVER = """
import json, os, sys
import numpy as np, tvm, tvm_ffi
folder = sys.argv[1]
names = ["runtime.PartialApply", "runtime.PartialApplyModule", "runtime.PartialApplyBindings",
         "tvm_partial.Describe", "ffi.Module.load_from_bytes.partial_apply"]
artifact = tvm.runtime.load_module(os.path.join(folder, "sc.so"))  # its embedded copy registers
before = {n: tvm_ffi.get_global_func(n) for n in names}
embedded = {n: tvm_ffi.get_global_func("tvm_partial.embedded_copy." + n) for n in names}
schemas_before = {n: tvm_ffi.get_global_func_metadata(n).get("type_schema") for n in names}
import tvm_partial                                                   # the installed library
after = {n: tvm_ffi.get_global_func(n) for n in names}
schemas_after = {n: tvm_ffi.get_global_func_metadata(n).get("type_schema") for n in names}
x = np.arange(8, dtype="float32")

def run(f):
    out = tvm.runtime.empty((8,), "float32")
    f(tvm.runtime.tensor(x), out)
    return out.numpy().tolist()

g = tvm_partial.partial(tvm_ffi.get_global_func("ffi.String"), {0: "a"})
made = tvm_partial.partial(tvm.runtime.load_module(os.path.join(folder, "plain.so")), {1: x * 0 + 3})
reloaded = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(made))
print(json.dumps({
    "embedded_served_first": all(before[n].same_as(embedded[n]) for n in names),
    "taken_over": [n for n in names if not after[n].same_as(before[n])],
    # both copies register with their type schema (tvm-ffi-stubgen reads it), the same one
    "typed": [schemas_before[n] is not None and schemas_before[n] == schemas_after[n] for n in names],
    "is_partial": [after["tvm_partial.Describe"](p, "") is not None for p in (g, made, reloaded)],
    "bindings": sorted(int(i) for i in tvm_partial.bindings(made)["main"]),
    "artifact": run(artifact),                     # the embedded copy's module still works
    "made": run(made),                             # and so does the installed library's
}))
"""


@pytest.fixture(scope="module")
def self_contained(tmp_path_factory):
    from tvm import te

    folder = tmp_path_factory.mktemp("safety_sc")
    x = te.placeholder((8,), "float32", name="x")
    w = te.placeholder((8,), "float32", name="w")
    out = te.compute((8,), lambda i: x[i] * w[i], name="out")
    exe = tvm.compile(te.create_prim_func([x, w, out]), target="llvm")
    pm = tvm_partial.partial(exe, {1: np.full(8, 2, "float32")})
    tvm_partial.export_library(pm, folder / "sc.so", self_contained=True)
    exe.export_library(str(folder / "plain.so"))
    return folder


def test_installed_library_takes_over_from_an_embedded_copy(self_contained):
    result = run_json(TAKEOVER, str(self_contained), env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0"})
    x = np.arange(8, dtype="float32")
    assert result == {
        "embedded_served_first": True,
        "taken_over": [
            "runtime.PartialApply",
            "runtime.PartialApplyModule",
            "runtime.PartialApplyBindings",
            "tvm_partial.Describe",
            "ffi.Module.load_from_bytes.partial_apply",
        ],
        "typed": [True] * 5,
        "is_partial": [True, True, True],
        "bindings": [1],
        "artifact": (x * 2).tolist(),
        "made": (x * 3).tolist(),
    }


def test_embedded_copy_loaded_after_the_installed_library_does_not_override(self_contained):
    result = run_json(
        """
import json, os, sys, tvm, tvm_ffi, tvm_partial
before = tvm_ffi.get_global_func("runtime.PartialApply")
tvm.runtime.load_module(os.path.join(sys.argv[1], "sc.so"))
print(json.dumps(tvm_ffi.get_global_func("runtime.PartialApply").same_as(before)))
""",
        str(self_contained),
        env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result is True
