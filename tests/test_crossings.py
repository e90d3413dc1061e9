# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""How often each verb calls C++ (docs/design.md "The verbs"): Python adapts what only it can see
and crosses once; C++ decides. Counted by wrapping every global of ``_ffi_api``; a new crossing
in a verb fails here, naming the globals it called."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tvm
import tvm_ffi

import tvm_partial
from helpers import ints, tensor
from tvm_partial import _ffi_api


@pytest.fixture
def calls(monkeypatch):
    """{global: calls} since the last clear(), for every global Python reaches through _ffi_api."""
    counted: collections.Counter = collections.Counter()
    for name in dir(_ffi_api):
        found = getattr(_ffi_api, name)
        if isinstance(found, tvm_ffi.Function):

            def wrapped(*args, _f=found, _name=name):
                counted[_name] += 1
                return _f(*args)

            monkeypatch.setattr(_ffi_api, name, wrapped)
    return counted


def test_each_verb_crosses_once(affine4, tmp_path, calls):
    exe, tensors = affine4
    state = {n: ints(16, seed=i) for i, n in enumerate("bc")}

    def crossings(verb):
        calls.clear()
        result = verb()
        return result, dict(calls)

    # Describe: is the target a partial already (its names and bound positions)?
    pm, made = crossings(lambda: tvm_partial.partial(exe, signature=tensors, **state))
    assert made == {"Describe": 1, "Hold": 1, "PartialApplyModule": 1}
    # Integer keys: all checked against C++'s position rule at once, before a value is converted.
    _, made = crossings(lambda: tvm_partial.partial(exe["main"], {1: state["b"], 2: state["c"]}))
    assert made == {"Describe": 1, "CheckPosition": 1, "Hold": 1, "PartialApply": 1}
    # A hundred tensors are one crossing too.
    many = {i: ints(4, seed=i) for i in range(100)}
    echo = tvm_ffi.convert(lambda *args: len(args))
    _, made = crossings(lambda: tvm_partial.partial(echo, many))
    assert made == {"Describe": 1, "CheckPosition": 1, "Hold": 1, "PartialApply": 1}
    # rebind: the module's facts once for names and bound positions, once more for its code.
    _, made = crossings(lambda: tvm_partial.rebind(pm, b=ints(16, seed=7)))
    assert made == {"Describe": 2, "Hold": 1, "Rebind": 1}
    path = tmp_path / "m.so"
    for zero_copy in (False, True):
        _, made = crossings(lambda z=zero_copy: tvm_partial.export_library(pm, path, zero_copy=z))
        assert made == {"Describe": 1, "Export": 1}
    loaded, made = crossings(lambda: tvm_partial.load(path))
    assert made == {"LoadArtifact": 1}
    _, made = crossings(lambda: tvm_partial.export_library(loaded, tmp_path / "again.so"))
    assert made == {"Describe": 1, "Export": 1}
    assert crossings(lambda: tvm_partial.inspect(path))[1] == {"Inspect": 1}
    assert crossings(lambda: tvm_partial.verify(path))[1] == {"Verify": 1}
    weights = tmp_path / "w.safetensors"
    assert crossings(lambda: tvm_partial.save_weights(pm, weights))[1] == {"SaveWeights": 1}
    opened, made = crossings(lambda: tvm_partial.open_weights(weights))
    assert made == {"OpenWeights": 1}
    # What crossed is what was bound: the loaded module computes numpy's result, bitwise.
    a = ints(16, seed=9)
    out = tensor(np.zeros(16, "float32"))
    loaded(tensor(a), out)
    assert out.numpy().tobytes() == (a * 2 + state["b"] * 3 + state["c"]).tobytes()
    assert {k: v.numpy().tobytes() for k, v in opened.items()} == {k: v.tobytes() for k, v in state.items()}


def test_a_relax_model_bound_by_name_crosses_once_per_step(calls):
    """Values given by name to a Relax executable reach BindModel as views of their memory (a
    read-only numpy array too: no copy, no crossing of its own), then Hold once."""
    from tvm import relax
    from tvm.script import relax as R

    bb = relax.BlockBuilder()
    x, w, b = (relax.Var(n, R.Tensor((16,), "float32")) for n in ("x", "w", "b"))
    with bb.function("main", [x, w, b]):
        bb.emit_func_output(relax.op.add(relax.op.multiply(x, w), b))
    exe = tvm.compile(bb.get(), target="llvm")
    w_value, b_value = ints(16, seed=1), ints(16, seed=2)
    w_value.setflags(write=False)
    calls.clear()
    pm = tvm_partial.partial(exe, w=w_value, b=b_value)
    assert dict(calls) == {"Describe": 1, "BindModel": 1, "Hold": 1, "PartialApplyModule": 1}
    a = ints(16, seed=3)
    assert pm(tensor(a)).numpy().tobytes() == (a * w_value + b_value).tobytes()
