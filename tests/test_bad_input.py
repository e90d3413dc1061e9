# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Bad input to partial() and to the closures: a clear, typed error naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
import tvm_ffi

import tvm_partial
from helpers import tensor
from tvm_partial import _fixtures as fixtures

W = np.zeros(fixtures.SHAPES["weights"], "float32")
B = np.zeros(fixtures.SHAPES["bias"], "float32")
X = np.zeros(fixtures.SHAPES["data"], "float32")


def test_negative_index(conv):
    with pytest.raises(ValueError, match=r"bound index -1 is negative"):
        tvm_partial.partial(conv[0]["main"], {-1: W})


@pytest.mark.parametrize("key", [1.5, True, None])
def test_non_integer_key(conv, key):
    with pytest.raises(TypeError, match=r"bound key .* is not an integer position"):
        tvm_partial.partial(conv[0]["main"], {key: W})


def test_string_key_binds_by_name_and_needs_a_signature(conv):
    with pytest.raises(TypeError, match=r"binding by name \(weights\) needs signature="):
        tvm_partial.partial(conv[0]["main"], {"weights": W})


@pytest.mark.parametrize("key", ["w", 1.0, True])
def test_non_integer_key_in_the_global(conv, key):
    apply = tvm_ffi.get_global_func("runtime.PartialApply")
    with pytest.raises(TypeError, match=r"PartialApply: bound key .* is not an integer position"):
        apply(conv[0]["main"], {key: 1})


def test_negative_index_in_the_global(conv):
    apply = tvm_ffi.get_global_func("runtime.PartialApply")
    with pytest.raises(ValueError, match=r"PartialApply: bound index -3 is negative"):
        apply(conv[0]["main"], {-3: 1})


def test_index_past_signature(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(IndexError, match=r"bound index 4 is out of range: main\(\) has 4 parameters"):
        tvm_partial.partial(exe["main"], {4: W}, signature=tensors)


def test_unknown_name(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(
        TypeError, match=r"main\(\) has no parameter 'bais'; its parameters are data, weights, bias, result"
    ):
        tvm_partial.partial(exe["main"], signature=tensors, bais=B)


def test_bound_by_index_and_by_name(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(
        TypeError, match=r"parameter 'weights' \(position 1\) is bound both by index and by name"
    ):
        tvm_partial.partial(exe["main"], {1: W}, signature=tensors, weights=W)


def test_by_name_without_signature(conv):
    with pytest.raises(TypeError, match=r"binding by name \(weights\) needs signature="):
        tvm_partial.partial(conv[0]["main"], weights=W)


def test_dtype_mismatch(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(
        TypeError,
        match=r"parameter 'weights' \(position 1\): dtype float64 does not match weights: Tensor\[\(8, 3, 3, 3\), float32\]",
    ):
        tvm_partial.partial(exe["main"], signature=tensors, weights=W.astype("float64"))


def test_dtype_mismatch_tvm_tensor(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(TypeError, match=r"parameter 'bias' \(position 2\): dtype int32 does not match"):
        tvm_partial.partial(exe["main"], signature=tensors, bias=tensor(B.astype("int32")))


def test_shape_mismatch(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(
        ValueError,
        match=r"parameter 'bias' \(position 2\): shape \(4,\) does not match bias: Tensor\[\(8\), float32\]",
    ):
        tvm_partial.partial(exe["main"], signature=tensors, bias=np.zeros(4, "float32"))


def test_tensor_for_scalar_and_scalar_for_tensor(conv):
    exe, tensors, _, _ = conv
    with pytest.raises(TypeError, match=r"float given for tensor parameter bias"):
        tvm_partial.partial(exe["main"], signature=tensors, bias=1.0)


def test_bound_position_past_the_end(conv):
    g = tvm_partial.partial(conv[0]["main"], {2: B, 3: W})  # no signature: checked at call time
    with pytest.raises(
        IndexError, match=r"bound index 3 is past the end of the call \(1 given \+ 2 bound = 3 arguments\)"
    ):
        g(tensor(X))


@pytest.mark.parametrize("count", [1, 3])
def test_argument_count_with_signature(conv, count):
    exe, tensors, _, _ = conv
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=W, bias=B)
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    args = [tensor(X), out, out][:count]
    with pytest.raises(TypeError, match=rf"main\(\) takes 2 arguments \(data, result\), {count} given"):
        g(*args)


@pytest.mark.parametrize("target", [42, "main", None, np.zeros(3)])
def test_target_not_callable(target):
    with pytest.raises(
        TypeError, match=r"partial\(\) needs a function or a module to bind, got \w+, which is not callable"
    ):
        tvm_partial.partial(target, {0: 1})


def test_unsupported_value(conv):
    with pytest.raises(TypeError, match=r"cannot bind position 1: expected a tensor .* got dict"):
        tvm_partial.partial(conv[0]["main"], {1: {"a": 1}})


def test_object_array_refused(conv):
    with pytest.raises(TypeError, match=r"cannot bind position 1: a numpy array of Python objects"):
        tvm_partial.partial(conv[0]["main"], {1: np.array([object()])})


def test_bad_signature_type(conv):
    with pytest.raises(TypeError, match=r"signature must be a tirx PrimFunc"):
        tvm_partial.partial(conv[0]["main"], signature=42, weights=W)


def test_bindings_of_a_plain_function(conv):
    with pytest.raises(TypeError, match=r"bindings: expected a partial function or a partial_apply module"):
        tvm_partial.bindings(conv[0]["main"])


def test_relax_vm_executable_is_bound_in_a_virtual_machine():
    """Once refused; now a Relax executable is a target whose VM is created on first use."""
    from tvm.script import relax as R

    @tvm.script.ir_module
    class Identity:
        @R.function
        def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2,), "float32")):
            return R.add(x, y)

    exe = tvm.compile(Identity, target="llvm")
    y = np.array([1.5, -2.0], "float32")
    pm = tvm_partial.partial(exe, {1: y})
    np.testing.assert_array_equal(pm(tvm.runtime.tensor(np.ones(2, "float32"))).numpy(), 1 + y)


def test_outer_index_named_as_given(conv):
    """A partial of a partial: a bad position is reported in the caller's terms, not merged ones."""
    exe, tensors, _inputs, _ = conv
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=W, bias=B)
    apply = tvm_ffi.get_global_func("runtime.PartialApply")
    with pytest.raises(
        IndexError, match=r"main: bound index 2 is out of range for a function of 2 parameters"
    ):
        apply(g, {2: B}, "main", ["data", "result"])


# -- device= ----------------------------------------------------------------------------------------------
def _absent_cuda():
    """A CUDA device this process does not have: cuda:0 without CUDA, else one past the last."""
    if not tvm.cuda(0).exist:
        return tvm.cuda(0)
    index = next(i for i in range(1, 1024) if not tvm.cuda(i).exist)
    return tvm.cuda(index)


@pytest.mark.device  # on a GPU machine: the first ordinal past its last GPU
@pytest.mark.parametrize("module", [False, True])
@pytest.mark.parametrize("device", [_absent_cuda(), str(_absent_cuda()), tvm_ffi.device("cuda", 7)])
def test_device_that_is_not_here(conv, device, module):
    """Was: cannot bind parameter 'weights' (position 1): ndarray is not a usable tensor (... Device
    API cuda is not enabled), naming the weights instead of device=."""
    exe, tensors, _, _ = conv
    name = str(tvm_ffi.device(device) if isinstance(device, str) else device)
    if tvm_ffi.device(name).exist:
        pytest.skip(f"{name} is present here")
    with pytest.raises(ValueError, match=rf"^device={name} is not available in this process: "):
        tvm_partial.partial(exe if module else exe["main"], signature=tensors, weights=W, device=device)
    with pytest.raises(ValueError, match=rf"^device={name} is not available in this process"):
        tvm_partial.partial(exe if module else exe["main"], {3: 1.0}, device=device)  # nothing to place


def test_device_without_its_runtime_says_so(conv):
    if tvm_ffi.get_global_func("device_api.cuda", allow_missing=True) is not None:
        pytest.skip("this TVM has a CUDA runtime")
    with pytest.raises(
        ValueError, match=r"device=cuda:0 is not available in this process: this TVM has no cuda runtime"
    ):
        tvm_partial.partial(conv[0], {1: W}, device=tvm.cuda(0))


def test_cpu_device_other_than_0_refused(conv):
    """The CPU is device 0; cpu:7 was accepted and the module then refused at save time."""
    with pytest.raises(ValueError, match=r"device=cpu:7 is not available in this process: the CPU is cpu:0"):
        tvm_partial.partial(conv[0], {1: W}, device="cpu:7")


@pytest.mark.parametrize("device", [1000, 1, 2.5, object()])
def test_device_that_is_not_a_device(conv, device):
    """An int was passed on as is and failed with AttributeError: 'int' ... 'dlpack_device_type'."""
    with pytest.raises(
        TypeError,
        match=r"device= must be a device \(tvm.cpu\(0\), tvm.cuda\(1\)\) or its name \('cuda:1'\), got ",
    ):
        tvm_partial.partial(conv[0], {1: W}, device=device)


def test_device_name_that_is_not_a_device(conv):
    with pytest.raises(ValueError, match=r"device='bogus' is not a device name"):
        tvm_partial.partial(conv[0], {1: W}, device="bogus")


def test_rebind_refuses_a_device_that_is_not_here(conv):
    pm = tvm_partial.partial(conv[0], {1: W})
    with pytest.raises(ValueError, match=r"device=cpu:3 is not available in this process"):
        tvm_partial.rebind(pm, {1: W}, device="cpu:3")
    with pytest.raises(TypeError, match=r"device= must be a device"):
        tvm_partial.rebind(pm, {1: W}, device=3)


def test_the_rebind_global_decides_alone(conv):
    """``tvm_partial.Rebind`` as a C++ caller reaches it, with no Python checks before it: a
    position not bound (None: what Python passes where it found no value), a function without
    bindings, and a value of another kind, dtype or shape are refused; the module is unchanged."""
    pm = tvm_partial.partial(conv[0], {1: W, 2: B})
    rebind = tvm_ffi.get_global_func("tvm_partial.Rebind")
    with pytest.raises(IndexError, match=r"rebind: position 0 of main\(\) is not bound \(bound: \[1, 2\]\)"):
        rebind(pm, "main", {0: None})
    with pytest.raises(KeyError, match=r"rebind: function 'other' has no bindings \(bound: main\)"):
        rebind(pm, "other", {1: tensor(W)})
    for wrong in (tensor(np.zeros(3, "float32")), tensor(W.astype("float64")), 1.5):
        with pytest.raises(TypeError, match=r"position 1\)? takes a value of the kind bound there"):
            rebind(pm, "main", {1: wrong})
    assert tvm_partial.bindings(pm)["main"][1].numpy().tobytes() == W.tobytes()
    new = rebind(pm, "main", {1: tensor(W + 1)})
    assert tvm_partial.bindings(new)["main"][1].numpy().tobytes() == (W + 1).tobytes()
    assert tvm_partial.bindings(new)["main"][2].same_as(tvm_partial.bindings(pm)["main"][2])


def test_the_export_of_loaded_code_that_is_no_artifact_is_refused(conv, tmp_path):
    """A partial over code TVM exported and loaded back (a library, but no tvm-partial artifact:
    it embeds no partial module) cannot be exported, since TVM cannot export loaded code and
    there is no artifact to update: refused naming why, nothing written."""
    plain = tmp_path / "plain.so"
    conv[0].export_library(str(plain))
    pm = tvm_partial.partial(tvm.runtime.load_module(str(plain)), {1: W, 2: B})
    out = tmp_path / "out.so"
    with pytest.raises(
        ValueError, match=r"not a tvm-partial artifact to update \(it embeds no partial_apply"
    ):
        tvm_partial.export_library(pm, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.so"]


@pytest.mark.parametrize("reader", ["bindings", "outputs", "param_names", "describe"])
@pytest.mark.parametrize(("value", "shown"), [("x" * 40, "str"), (3, "int"), (None, "None")])
def test_readers_of_a_partial_name_what_they_were_given(reader, value, shown):
    with pytest.raises(
        TypeError, match=rf"^{reader}: expected a partial function or a partial_apply module, got {shown}$"
    ):
        getattr(tvm_partial, reader)(value)


@pytest.mark.parametrize("reader", ["bindings", "outputs", "param_names", "describe"])
def test_saved_bytes_are_not_read_as_a_partial(conv, reader):
    """Bytes, even of a partial module save_to_bytes wrote, are refused with the way to load them."""
    saved = tvm_partial.save_to_bytes(tvm_partial.partial(conv[0], {1: W}))
    for value in (saved, b"abc"):
        with pytest.raises(TypeError, match=r"got bytes \(load saved bytes with load_from_bytes first\)"):
            getattr(tvm_partial, reader)(value)
    assert (
        tvm_partial.bindings(tvm_partial.load_from_bytes(saved, conv[0]))["main"][1].numpy().tobytes()
        == W.tobytes()
    )
