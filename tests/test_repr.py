# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""describe(): what a partial binds as text (names, positions, dtypes, shapes, scalars, the wrapped
kind; never tensor contents), and print() of modules left as tvm-ffi makes it (issue 21)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te
from tvm.script import ir as I
from tvm.script import relax as R

import tvm_partial
from helpers import compile_te, run_json, tensor
from tvm_partial import _fixtures as fixtures

#: A value no shape, position or dtype in these tests contains: its absence shows no contents leak.
MARK = 7.125


def _marked(shape) -> np.ndarray:
    return np.full(shape, MARK, "float32")


def _no_contents(text: str) -> None:
    assert "7.125" not in text and "array(" not in text and "[[" not in text, text


def test_describe_names_function_params_dtypes_shapes(conv):
    exe, tensors, inputs, _ = conv
    pm = tvm_partial.partial(
        exe, signature=tensors, weights=_marked(inputs["weights"].shape), bias=_marked(inputs["bias"].shape)
    )
    text = tvm_partial.describe(pm)
    w, b = fixtures.SHAPES["weights"], fixtures.SHAPES["bias"]
    assert text == (
        "partial_apply module over llvm, 1 function with bindings\n"
        "  main(data, result)\n"
        f"    [1] weights = float32[{', '.join(map(str, w))}]@cpu:0\n"
        f"    [2] bias = float32[{', '.join(map(str, b))}]@cpu:0"
    )
    _no_contents(text)


def test_describe_outputs_and_a_partial_function(conv):
    exe, tensors, inputs, _ = conv
    pm = tvm_partial.partial(
        exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"], outputs="result"
    )
    result = ", ".join(map(str, fixtures.SHAPES["result"]))
    lines = tvm_partial.describe(pm).splitlines()
    assert lines[1] == "  main(data) -> result"
    assert lines[-1] == f"    [3] result: float32[{result}] allocated per call"
    # A partial function: the same lines, with no module line and no function name (an
    # ffi.Function records none that Python can read).
    text = tvm_partial.describe(pm["main"])
    assert text.splitlines()[0] == "partial function(data) -> result"
    assert "[1] weights = float32[" in text and "[2] bias = float32[" in text


def test_describe_scalars_and_unnamed_positions():
    s = te.var("s", "float32")
    x = te.placeholder((4,), "float32", name="x")
    out = te.compute((4,), lambda i: x[i] * s, name="out")
    exe = compile_te([x, s, out])
    named = tvm_partial.partial(exe, signature=[x, s, out], s=0.5)
    assert tvm_partial.describe(named).splitlines()[1:] == ["  main(x, out)", "    [1] s = 0.5"]
    # Bound by position without a signature: no names recorded, the rest of the call unknown.
    g = tvm_partial.partial(exe["main"], {1: 3.0})
    assert tvm_partial.describe(g) == "partial function(...)\n  [1] = 3.0"


def test_describe_several_functions_in_name_order():
    x, w = te.placeholder((8,), "float32", name="x"), te.placeholder((8,), "float32", name="w")
    funcs = {
        "scale": te.create_prim_func([x, w, te.compute((8,), lambda i: x[i] * w[i], name="out")]),
        "add": te.create_prim_func([x, w, te.compute((8,), lambda i: x[i] + w[i], name="out")]),
    }
    exe = tvm.compile(tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in funcs.items()}), "llvm")
    pm = tvm_partial.partial(exe, {1: _marked(8)}, function="scale")
    pm = tvm_partial.partial(pm, {1: np.zeros(8, "float32")}, function="add")
    assert tvm_partial.describe(pm).splitlines() == [
        "partial_apply module over llvm, 2 functions with bindings",
        "  add(...)",  # bound without a signature: no names recorded
        "    [1] = float32[8]@cpu:0",
        "  scale(...)",
        "    [1] = float32[8]@cpu:0",
    ]


def test_describe_says_which_places_share_one_tensor(tmp_path):
    """A tensor bound in several places (one tvm Tensor in two functions, one array at two
    positions) is one tensor: describe names where it was bound first, before and after load."""
    x, w = te.placeholder((8,), "float32", name="x"), te.placeholder((8,), "float32", name="w")
    funcs = {
        "scale": te.create_prim_func([x, w, te.compute((8,), lambda i: x[i] * w[i], name="out")]),
        "add": te.create_prim_func([x, w, te.compute((8,), lambda i: x[i] + w[i], name="out")]),
    }
    exe = tvm.compile(tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in funcs.items()}), "llvm")
    shared = tvm.runtime.tensor(np.ones(8, "float32"))
    pm = tvm_partial.partial(exe, {1: shared}, function="scale")
    pm = tvm_partial.partial(pm, {1: shared}, function="add")
    tvm_partial.export_library(pm, tmp_path / "m.so")
    for module in (pm, tvm_partial.load(tmp_path / "m.so")):
        assert tvm_partial.describe(module).splitlines() == [
            "partial_apply module over llvm, 2 functions with bindings" if module is pm else
            "partial_apply module over library, 2 functions with bindings",
            "  add(...)",
            "    [1] = float32[8]@cpu:0",
            "  scale(...)",
            "    [1] = float32[8]@cpu:0 (the tensor bound at add[1])",
        ]  # fmt: skip


def test_describe_after_export_and_load(conv, tmp_path):
    exe, tensors, inputs, _ = conv
    pm = tvm_partial.partial(
        exe, signature=tensors, weights=_marked(inputs["weights"].shape), bias=_marked(inputs["bias"].shape)
    )
    path = tmp_path / "a.so"
    tvm_partial.export_library(pm, path)
    expected = tvm_partial.describe(pm)
    loaded = tvm_partial.describe(tvm_partial.load(path))
    # The same bindings; the code it wraps is now the loaded shared library.
    assert loaded.splitlines()[0] == "partial_apply module over library, 1 function with bindings"
    assert loaded.splitlines()[1:] == expected.splitlines()[1:]
    _no_contents(loaded)
    # tvm's own loader gives the same module (this copy's loader reads it): described the same.
    assert tvm_partial.describe(tvm.runtime.load_module(str(path))) == loaded


@I.ir_module
class Small:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 3), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y


def test_describe_relax_executable_partial(tmp_path):
    exe = tvm.compile(Small, target="llvm")
    pm = tvm_partial.partial(exe, device=tvm.cpu(), w=_marked((4, 3)))
    text = tvm_partial.describe(pm)
    assert text == (
        "partial_apply module over partial_apply_vm > relax.VMExecutable > llvm, 1 function with bindings\n"
        "  main(x)\n"
        "    [1] w = float32[4, 3]@cpu:0"
    )
    tvm_partial.export_library(pm, tmp_path / "vm.so")
    loaded = tvm_partial.load(tmp_path / "vm.so")
    reloaded = tvm_partial.describe(loaded)
    assert reloaded.splitlines()[1:] == text.splitlines()[1:]
    assert reloaded.startswith("partial_apply module over partial_apply_vm > relax.VMExecutable")
    _no_contents(reloaded)


def test_describe_refuses_what_is_not_a_partial(conv):
    exe, *_ = conv
    with pytest.raises(TypeError, match="expected a partial function or a partial_apply module"):
        tvm_partial.describe(exe.mod)


def test_print_of_modules_is_tvm_ffis_own(conv, tmp_path):
    # No repr hook is registered: a plain module prints as tvm-ffi prints it, a partial module is
    # still a tvm_ffi.Module of the same Python class (its repr the generic one), a partial
    # function an ffi.Function (docs/design.md, "Describing a partial").
    exe, tensors, inputs, _ = conv
    exe.mod.export_library(str(tmp_path / "plain.so"))
    plain = tvm.runtime.load_module(str(tmp_path / "plain.so"))
    assert repr(plain) == repr(exe.mod) == "ffi.Module(imports_=())"
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    assert type(pm) is type(exe.mod) and isinstance(pm, tvm_ffi.Module)
    assert repr(pm) == "ffi.Module(imports_=(ffi.Module(imports_=()),))"
    assert repr(pm["main"]) == "ffi.Function"
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    pm(tensor(inputs["data"]), out)  # still a module that runs


def test_plain_module_repr_same_before_and_after_import(conv, tmp_path):
    # In a fresh interpreter, before tvm (whose import loads tvm-partial as a backend) and after
    # tvm_partial: importing the library changes no module's repr.
    exe, *_ = conv
    exe.mod.export_library(str(tmp_path / "plain.so"))
    got = run_json(
        """
        import json, sys, tvm_ffi
        m = tvm_ffi.load_module(sys.argv[1])
        before = [repr(m), "tvm_partial" in sys.modules]
        import tvm_partial
        print(json.dumps(before + [repr(m), repr(tvm_ffi.load_module(sys.argv[1]))]))
        """,
        str(tmp_path / "plain.so"),
    )
    assert got == ["ffi.Module(imports_=())", False, "ffi.Module(imports_=())", "ffi.Module(imports_=())"]


def test_module_obj_is_still_final():
    # Why describe() and not print(pm): ModuleObj is final in tvm-ffi, so a partial module cannot
    # have a type index (and an __ffi_repr__) of its own. If this fails, tvm-ffi changed that:
    # revisit docs/design.md, "Describing a partial".
    header = Path(tvm_ffi.libinfo.find_include_path()) / "tvm" / "ffi" / "extra" / "module.h"
    text = header.read_text()
    body = text[text.index("class TVM_FFI_EXTRA_CXX_API ModuleObj") :]
    body = body[: body.index("TVM_FFI_DECLARE_OBJECT_INFO_STATIC")]
    assert re.search(r"_type_final\s*=\s*true", body)
