# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Binding by name reaches the parameter the user named, or is refused (DESIGN.md "Binding rules").

Signature given again on top of a partial, ambiguous names, names that are also options of
partial(), foreign tensors' dtypes (torch, DLPack objects, ml_dtypes arrays), out of memory.
"""

from __future__ import annotations

import gc
import os

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te

import tvm_partial
from helpers import compile_te, ints, raw_bytes, run_json, tensor
from tvm_partial import _ffi_api
from tvm_partial import _fixtures as fixtures

echo = tvm_ffi.convert(lambda *args: list(args))  # which value reached which position


def run_conv(g, inputs):
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    g(tensor(inputs["data"]), out)
    return out.numpy()


# -- 1. signature= given again on top of a partial -------------------------------------------------
def test_signature_again_on_partial_function(conv):
    exe, tensors, inputs, expected = conv
    w, b = tensor(inputs["weights"]), tensor(inputs["bias"])
    g1 = tvm_partial.partial(exe["main"], signature=tensors, weights=w)
    g2 = tvm_partial.partial(g1, signature=tensors, bias=b)  # bias, not result (free position 1)
    held = tvm_partial.bindings(g2)
    assert sorted(held) == [1, 2] and held[1].same_as(w) and held[2].same_as(b)
    assert tvm_partial.param_names(g2) == ["data", "weights", "bias", "result"]
    assert np.array_equal(run_conv(g2, inputs), expected)


def test_signature_again_integer_positions_count_free_arguments(conv):
    exe, tensors, inputs, expected = conv
    b = tensor(inputs["bias"])
    g1 = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"])
    g2 = tvm_partial.partial(g1, {1: b}, signature=tensors)  # free arguments: data, bias, result
    assert tvm_partial.bindings(g2)[2].same_as(b)
    assert np.array_equal(run_conv(g2, inputs), expected)
    # The tensor is checked against the parameter the position reaches (bias), named in the error.
    with pytest.raises(ValueError, match=r"parameter 'bias' \(position 2; free argument 1 of the partial\)"):
        tvm_partial.partial(g1, {1: np.zeros(3, "float32")}, signature=tensors)
    with pytest.raises(
        IndexError,
        match=r"bound index 3 is out of range: the partial of main\(\) takes 3 "
        r"free arguments \(data, bias, result\)",
    ):
        tvm_partial.partial(g1, {3: b}, signature=tensors)


def test_signature_again_on_partial_without_recorded_names(conv):
    exe, tensors, inputs, expected = conv
    g1 = tvm_partial.partial(exe["main"], {1: inputs["weights"]})  # by position: no names recorded
    assert tvm_partial.param_names(g1) == []
    g2 = tvm_partial.partial(g1, signature=tensors, bias=inputs["bias"])
    assert sorted(tvm_partial.bindings(g2)) == [1, 2]
    assert np.array_equal(run_conv(g2, inputs), expected)
    with pytest.raises(TypeError, match=r"main\(\) takes 2 arguments \(data, result\), 1 given"):
        g2(tensor(inputs["data"]))
    # A signature too short for what the partial binds cannot be the original's: refused.
    g3 = tvm_partial.partial(echo, {5: "bound"})
    with pytest.raises(
        ValueError,
        match=r"signature= has 3 parameters \(a, b, c\), but the partial already "
        r"binds position 5",
    ):
        tvm_partial.partial(g3, signature=["a", "b", "c"], a=1)


def test_signature_again_refusals(conv):
    exe, tensors, inputs, _ = conv
    g1 = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"])
    with pytest.raises(TypeError, match=r"parameter 'weights' \(position 1\) of main\(\) is already bound"):
        tvm_partial.partial(g1, signature=tensors, weights=inputs["weights"])
    with pytest.raises(TypeError, match=r"parameter 'weights' \(position 1\) of main\(\) is already bound"):
        tvm_partial.partial(g1, weights=inputs["weights"])  # recorded names, no signature= given
    # A signature of the free arguments only is not the original's full list: refused, not guessed.
    with pytest.raises(
        ValueError,
        match=r"signature= has 3 parameters \(data, bias, result\), but the "
        r"partial records 4 for main\(\)",
    ):
        tvm_partial.partial(g1, signature=["data", "bias", "result"], bias=inputs["bias"])
    with pytest.raises(
        ValueError, match=r"signature= names position 2 'result', but the partial records 'bias'"
    ):
        tvm_partial.partial(g1, signature=["data", "weights", "result", "bias"], bias=inputs["bias"])


def test_signature_again_on_partial_module_exports_and_loads(conv, tmp_path):
    exe, tensors, inputs, expected = conv
    pm1 = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"])
    pm2 = tvm_partial.partial(pm1, signature=tensors, bias=inputs["bias"])
    assert sorted(tvm_partial.bindings(pm2)["main"]) == [1, 2]
    assert tvm_partial.param_names(pm2) == {"main": ["data", "weights", "bias", "result"]}
    assert np.array_equal(run_conv(pm2, inputs), expected)
    tvm_partial.export_library(pm2, tmp_path / "twice.so")
    loaded = tvm_partial.load(tmp_path / "twice.so")
    assert np.array_equal(run_conv(loaded, inputs), expected)
    assert np.array_equal(tvm_partial.bindings(loaded)["main"][2].numpy(), inputs["bias"])
    # Without recorded names, by position first, then by name with the full signature.
    pm3 = tvm_partial.partial(
        tvm_partial.partial(exe, {2: inputs["bias"]}), signature=tensors, weights=inputs["weights"]
    )
    restored = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(pm3), exe)
    assert np.array_equal(run_conv(restored, inputs), expected)


# -- 2. ambiguous names ------------------------------------------------------------------------------
def test_ambiguous_name_refused_unique_names_still_bind():
    a, b = te.placeholder((8,), "float32"), te.placeholder((8,), "float32")  # both "placeholder"
    out = te.compute((8,), lambda i: a[i] * 2.0 + b[i], name="out")
    assert a.op.name == b.op.name == "placeholder"
    f = compile_te([a, b, out])["main"]
    message = (
        r"parameter name 'placeholder' is ambiguous: main\(\) has it at positions 0, 1; "
        r"bind by position instead"
    )
    with pytest.raises(TypeError, match=message):
        tvm_partial.partial(f, signature=[a, b, out], placeholder=ints(8))
    with pytest.raises(TypeError, match=message):
        tvm_partial.partial(f, {"placeholder": ints(8)}, signature=[a, b, out])
    result = tvm.runtime.empty((8,), "float32")
    g = tvm_partial.partial(f, {1: ints(8, seed=2)}, signature=[a, b, out], out=result)
    x = ints(8, seed=1)
    g(tensor(x))
    assert np.array_equal(result.numpy(), x * np.float32(2) + ints(8, seed=2))


# -- 3. parameter names that are options of partial() --------------------------------------------------
def test_parameter_named_device_binds_through_the_mapping():
    x = te.placeholder((4,), "float32", name="x")
    device = te.placeholder((4,), "float32", name="device")
    y = te.compute((4,), lambda i: x[i] + device[i], name="y")
    f = compile_te([x, device, y])["main"]
    with pytest.raises(
        TypeError,
        match=r"device is both a parameter of main\(\) and an option of partial\(\): "
        r'bind it as partial\(f, \{"device": value\}, \.\.\.\)',
    ):
        tvm_partial.partial(f, signature=[x, device, y], device=np.ones(4, "float32"))
    with pytest.raises(TypeError, match="device is both a parameter"):  # None too: never guessed
        tvm_partial.partial(f, signature=[x, device, y], device=None)
    result = tvm.runtime.empty((4,), "float32")
    g = tvm_partial.partial(f, {"device": np.full(4, 3, "float32"), 2: result}, signature=[x, device, y])
    g(tensor(ints(4)))
    assert np.array_equal(result.numpy(), ints(4) + np.float32(3))


def test_names_given_over_a_partial_bound_by_position_are_recorded_in_full():
    # The inner partial binds position 0 and records no names; signature= on top names that
    # position too. The merge records "device" there (not "arg0"), so device= given later is refused
    # as ambiguous (option or parameter) instead of being taken silently as the option.
    g1 = tvm_partial.partial(echo, {0: "v"})
    g2 = tvm_partial.partial(g1, signature=["device", "a", "b"])
    assert tvm_partial.param_names(g2) == ["device", "a", "b"]
    assert list(g2(1, 2)) == ["v", 1, 2]
    with pytest.raises(
        TypeError, match=r"device is both a parameter of main\(\) and an option of partial\(\)"
    ):
        tvm_partial.partial(g2, device=np.ones(2, "float32"))
    with pytest.raises(TypeError, match=r"parameter 'device' \(position 0\) of main\(\) is already bound"):
        tvm_partial.partial(g2, {"device": 5})
    g3 = tvm_partial.partial(g2, a=1)  # the names keep working past the merge
    assert tvm_partial.param_names(g3) == ["device", "a", "b"]
    assert list(g3(2)) == ["v", 1, 2]
    # Names that do not fit the inner partial's positions are refused, not recorded.
    with pytest.raises(ValueError, match=r"the original parameter names \(2\) do not fit"):
        _ffi_api.PartialApply(g1, {}, "", ["a", "b"], None, ["device", "x"])


def test_names_given_over_a_partial_module_bound_by_position_are_recorded_in_full():
    device = te.placeholder((4,), "float32", name="device")
    x = te.placeholder((4,), "float32", name="x")
    y = te.compute((4,), lambda i: device[i] * 3 + x[i], name="y")
    exe = compile_te([device, x, y])
    pm1 = tvm_partial.partial(exe, {0: ints(4, seed=1)})
    assert tvm_partial.param_names(pm1) == {}
    pm2 = tvm_partial.partial(pm1, signature=[device, x, y])
    assert tvm_partial.param_names(pm2) == {"main": ["device", "x", "y"]}
    with pytest.raises(
        TypeError, match=r"device is both a parameter of main\(\) and an option of partial\(\)"
    ):
        tvm_partial.partial(pm2, device="cpu")
    out = tvm.runtime.empty((4,), "float32")
    pm2(tensor(ints(4, seed=2)), out)
    assert np.array_equal(out.numpy(), ints(4, seed=1) * np.float32(3) + ints(4, seed=2))
    loaded = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(pm2))
    assert tvm_partial.param_names(loaded) == {"main": ["device", "x", "y"]}


@pytest.mark.parametrize("option", ["function", "outputs", "device"])
def test_option_names_as_parameters(option):
    sig = ["x", option, "y"]
    with pytest.raises(
        TypeError, match=rf"{option} is both a parameter of main\(\) and an option of partial\(\)"
    ):
        tvm_partial.partial(echo, signature=sig, **{option: 5})
    g = tvm_partial.partial(echo, {option: 5, 2: "y"}, signature=sig)
    assert list(g(1)) == [1, 5, "y"]
    assert tvm_partial.param_names(g) == sig


@pytest.mark.parametrize("option", ["function", "outputs", "device"])
def test_option_names_as_parameters_given_none(option):
    """None is a value too: outputs=None was taken as "no outputs" and bound nothing."""
    with pytest.raises(
        TypeError, match=rf"{option} is both a parameter of main\(\) and an option of partial\(\)"
    ):
        tvm_partial.partial(echo, signature=["x", option], **{option: None})
    assert list(tvm_partial.partial(echo, {option: None}, signature=["x", option])(1)) == [1, None]


def test_parameter_named_signature_on_a_partial_with_names():
    g1 = tvm_partial.partial(echo, {0: "x"}, signature=["x", "signature", "y"])
    with pytest.raises(
        TypeError,
        match=r"signature is both a parameter of main\(\) and an option of partial\(\): "
        r'bind it as partial\(f, \{"signature": value\}',
    ):
        tvm_partial.partial(g1, signature=np.ones(2, "float32"))
    g2 = tvm_partial.partial(g1, {"signature": 7})
    assert list(g2("y")) == ["x", 7, "y"]


def test_options_still_work():
    g = tvm_partial.partial(echo, {0: np.arange(3, dtype="float32")}, signature=["a", "b"], device="cpu")
    assert np.array_equal(np.from_dlpack(g(1)[0]), np.arange(3, dtype="float32"))
    with pytest.raises(TypeError, match=r"outputs= needs a signature with dtypes and shapes"):
        tvm_partial.partial(echo, signature=["a", "b"], outputs="b")
    with pytest.raises(TypeError, match=r"function= must be the name of a function \(str\), got int"):
        tvm_partial.partial(echo, {0: 1}, function=3)
    with pytest.raises(
        TypeError, match=r"parameter 'a' is bound twice: as a key of the mapping and as a keyword"
    ):
        tvm_partial.partial(echo, {"a": 1}, signature=["a", "b"], a=2)
    with pytest.raises(TypeError, match=r"bound key 1.5 is not an integer position or a parameter name"):
        tvm_partial.partial(echo, {1.5: 1})


# -- 4. foreign tensors ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scale16():
    """out = x * w, float32 (16,)."""
    x, w = (te.placeholder((16,), "float32", name=n) for n in "xw")
    out = te.compute((16,), lambda i: x[i] * w[i], name="out")
    return compile_te([x, w, out])["main"], [x, w, out]


class DLPackOnly:
    """A tensor of another framework: nothing but the DLPack protocol (and a foreign dtype)."""

    def __init__(self, array):
        self.array = array
        self.dtype = f"other.{array.dtype}"

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_torch_tensor_bound_by_name(scale16):
    torch = pytest.importorskip("torch")
    f, sig = scale16
    w = torch.arange(16, dtype=torch.float32)
    g = tvm_partial.partial(f, signature=sig, w=w)
    held = tvm_partial.bindings(g)[1]
    assert isinstance(held, tvm_ffi.Tensor) and str(held.dtype) == "float32" and held.data_ptr() % 64 == 0
    x, out = ints(16), tvm.runtime.empty((16,), "float32")
    g(tensor(x), out)
    assert np.array_equal(out.numpy(), x * w.numpy())
    with pytest.raises(TypeError, match=r"dtype float64 does not match w: Tensor\[\(16\), float32\]"):
        tvm_partial.partial(f, signature=sig, w=torch.zeros(16, dtype=torch.float64))
    bf16 = torch.arange(8, dtype=torch.bfloat16) / 3
    held = tvm_partial.bindings(tvm_partial.partial(echo, {0: bf16}))[0]
    assert str(held.dtype) == "bfloat16" and raw_bytes(held) == bf16.view(torch.int16).numpy().tobytes()


def test_dlpack_object_bound_by_name(scale16):
    f, sig = scale16
    w = DLPackOnly(ints(16, seed=3)[::-1])  # strided too
    g = tvm_partial.partial(f, signature=sig, w=w)
    x, out = ints(16), tvm.runtime.empty((16,), "float32")
    g(tensor(x), out)
    assert np.array_equal(out.numpy(), x * ints(16, seed=3)[::-1])
    with pytest.raises(TypeError, match="dtype int32 does not match"):
        tvm_partial.partial(f, signature=sig, w=DLPackOnly(np.zeros(16, "int32")))


@pytest.fixture(scope="module")
def copy_bf16():
    """out[i] = w[i] in bfloat16: the kernel's output is the bound tensor's bits."""
    x, w = (te.placeholder((8,), "bfloat16", name=n) for n in "xw")
    out = te.compute((8,), lambda i: w[i], name="out")
    return compile_te([x, w, out])["main"], [x, w, out]


def test_bfloat16_numpy_array_bound_bitwise(copy_bf16):
    f, sig = copy_bf16
    values = (np.arange(-8, 8, dtype="float32") / 7).astype(ml_dtypes.bfloat16)
    strided = values[::2]  # 8 values, not contiguous
    g = tvm_partial.partial(f, signature=sig, w=strided)
    held = tvm_partial.bindings(g)[1]
    assert str(held.dtype) == "bfloat16" and held.is_contiguous() and held.data_ptr() % 64 == 0
    assert raw_bytes(held) == np.ascontiguousarray(strided).tobytes()
    del strided, values
    gc.collect()  # the retyped view holds the copy it views
    out = tvm.runtime.empty((8,), "bfloat16")
    g(tvm.runtime.empty((8,), "bfloat16"), out)
    assert raw_bytes(out) == raw_bytes(held)
    assert (
        raw_bytes(out) == ((np.arange(-8, 8, dtype="float32") / 7).astype(ml_dtypes.bfloat16)[::2]).tobytes()
    )
    with pytest.raises(TypeError, match=r"parameter 'w' \(position 1\): dtype float8_e4m3fn does not match"):
        tvm_partial.partial(f, signature=sig, w=np.zeros(8, ml_dtypes.float8_e4m3fn))


def test_float8_bound_and_sub_byte_packed_or_refused():
    for dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):  # float8_e5m2: numpy kind "f"
        values = np.array([0.5, -1.0, 2.0, 448.0 if dtype is ml_dtypes.float8_e4m3fn else 8.0], dtype)
        held = tvm_partial.bindings(tvm_partial.partial(echo, {0: values}))[0]
        assert str(held.dtype) == np.dtype(dtype).name and raw_bytes(held) == values.tobytes()
    # float4_e2m1fn: one element per byte in numpy, packed two per byte as tvm.runtime.tensor
    # packs it (element 2k in the high nibble): the same bytes as TVM's own copy
    values = np.array([0.5, -1.0, 2.0, 6.0, -0.5], ml_dtypes.float4_e2m1fn)
    held = tvm_partial.bindings(tvm_partial.partial(echo, {0: values}))[0]
    assert str(held.dtype) == "float4_e2m1fn" and tuple(held.shape) == (5,)
    theirs = tvm.runtime.empty((5,), "float4_e2m1fn").copyfrom(values)
    assert raw_bytes(held) == raw_bytes(theirs) == bytes([0x1A, 0x47, 0x90])
    # int4/uint4: TVM reads them two per byte in Tensor.numpy() and one per byte in the CPU code
    # tvm.compile makes (tests/test_weights_interop.py shows it): refused, never guessed
    for name in ("int4", "uint4"):
        with pytest.raises(
            TypeError, match=rf"cannot bind position 0: numpy stores {name} one element per byte"
        ):
            tvm_partial.partial(echo, {0: np.array([1, 2, 3], getattr(ml_dtypes, name))})
    with pytest.raises(
        TypeError,
        match=r"cannot bind position 0: numpy stores dtype int2 in 8 bits per element, TVM packs it in 2, "
        r"and TVM defines no packing of int2 from numpy",
    ):
        tvm_partial.partial(echo, {0: np.zeros(4, ml_dtypes.int2)})


# -- 5. out of memory while binding ------------------------------------------------------------------------
def no_abort_on_failed_allocation() -> dict:
    """Under AddressSanitizer (scripts/sanitize.sh) a failed allocation aborts unless told not to."""
    return {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"}


def test_real_allocation_failure_in_subprocess():
    """A 64 GiB tensor (a zero-stride view of 4 bytes) under an address-space limit: MemoryError."""
    result = run_json(
        """
        import json, resource
        import numpy as np
        import tvm_ffi, tvm_partial
        with open("/proc/self/status") as status:
            vm = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))
        huge = np.lib.stride_tricks.as_strided(np.ones(1, "float32"), shape=(1 << 34,), strides=(0,))
        f = tvm_ffi.convert(lambda *args: len(args))
        out = []
        for value in (huge, tvm_ffi.from_dlpack(huge)):  # numpy; a tvm Tensor that is not contiguous
            try:
                tvm_partial.partial(f, {0: value}, signature=["w", "x"])
                out.append(["bound", ""])
            except Exception as err:
                out.append([type(err).__name__, str(err)])
        print(json.dumps(out))
        """,
        env=no_abort_on_failed_allocation(),
    )
    for kind, message in result:
        assert kind == "MemoryError", result
        assert message.startswith(
            "cannot bind parameter 'w' (position 0): out of memory copying 68719476736 bytes into an "
            "aligned tensor on cpu:0 ("
        ), message


def test_names_from_the_partial_keep_its_function_name():
    from tvm_partial.signature import Param, Signature

    g1 = tvm_partial.partial(echo, {0: 1}, signature=Signature("conv", tuple(Param(n) for n in "abc")))
    g2 = tvm_partial.partial(g1, b=2)  # names resolved through g1's recorded names
    assert list(g2(3)) == [1, 2, 3]
    with pytest.raises(TypeError, match=r"^conv\(\) takes 1 argument \(c\), 2 given"):
        g2(3, 4)


def test_unreachable_position_refused_before_any_copy(monkeypatch):
    """A position no call can reach is refused before the value is converted (no wasted copy)."""

    def no_copy(*_):
        raise AssertionError("the value was converted before its position was checked")

    monkeypatch.setattr(_ffi_api, "Hold", no_copy)
    for position in (2**31 - 1, 2**31, 2**63 - 1, 2**64):
        with pytest.raises(
            IndexError, match=rf"bound index {position} cannot be reached: .* positions go up to 2147483646"
        ):
            tvm_partial.partial(echo, {position: np.ones(4, "float32")})


# -- 6. scalars the parameter's dtype cannot hold ----------------------------------------------------------
_SCALAR_KERNELS: dict = {}


def scalar_kernel(dtype: str):
    """out[0] = s for a scalar parameter s of ``dtype``: the output is what the kernel received."""
    if dtype not in _SCALAR_KERNELS:
        s = te.var("s", dtype)
        out = te.compute((1,), lambda i: s, name="out")
        exe = compile_te([s, out])
        _SCALAR_KERNELS[dtype] = (exe["main"], [s, out], exe)
    return _SCALAR_KERNELS[dtype]


def received(g, dtype: str):
    out = tvm.runtime.empty((1,), dtype)
    g(out)
    return out.numpy()[0].item()


@pytest.mark.parametrize(
    "dtype,value",
    [
        ("int8", -128), ("int8", 127), ("uint8", 0), ("uint8", 255), ("int16", -(2**15)),
        ("uint16", 2**16 - 1), ("int32", 2**31 - 1), ("int32", -(2**31)), ("uint32", 2**32 - 1),
        ("int64", 2**63 - 1), ("int64", -(2**63)), ("uint64", 2**63 - 1), ("bool", True),
        ("float32", 3), ("float32", 2**24), ("float16", 65504.0), ("float16", 2048),
        ("float32", float("inf")), ("float64", 2**53), ("float32", 1e-50),
    ],
)  # fmt: skip
def test_scalar_within_its_dtype_reaches_the_kernel_exactly(dtype, value):
    f, sig, _exe = scalar_kernel(dtype)
    g = tvm_partial.partial(f, signature=sig, s=value)
    assert received(g, dtype) == np.array(value, dtype).item()
    assert tvm_partial.bindings(g) == {0: value}


@pytest.mark.parametrize(
    "dtype,value,why",
    [
        ("int32", 2**40 + 7, r"int 1099511627783 is out of range for s: int32 \(-2147483648 to 2147483647\)"),
        ("uint8", 300, r"int 300 is out of range for s: uint8 \(0 to 255\)"),
        ("uint8", -1, r"int -1 is out of range for s: uint8 \(0 to 255\)"),
        ("int8", 128, r"int 128 is out of range for s: int8"),
        ("int8", -129, r"int -129 is out of range for s: int8"),
        ("uint16", 2**16, r"int 65536 is out of range for s: uint16"),
        ("int64", 2**63, r"int 9223372036854775808 is out of range for s: int64"),
        ("int64", -(2**63) - 1, r"int -9223372036854775809 is out of range for s: int64"),
        ("uint64", 2**63, r"int 9223372036854775808 is out of range for s: uint64 \(0 to 9223372036854775807: "
         r"a scalar travels as a signed 64-bit int"),
        ("uint64", -1, r"int -1 is out of range for s: uint64"),
        ("float32", 1e39, r"float 1e\+39 is out of range for s: float32 \(largest finite value 3.40282"),
        ("float16", 70000.0, r"float 70000.0 is out of range for s: float16"),
        ("float16", -1e10, r"float -10000000000.0 is out of range for s: float16"),
        ("float16", 2049, r"int 2049 has no exact float16 value \(it would become 2048\); pass a float"),
        ("float32", 2**24 + 1, r"int 16777217 has no exact float32 value"),
        ("float64", 2**53 + 1, r"int 9007199254740993 has no exact float64 value"),
        ("float32", 10**400, r"int 1000000000000000000000000000000000000000.* is out of range for s: float32"),
    ],
)  # fmt: skip
def test_scalar_its_dtype_cannot_hold_is_refused(dtype, value, why):
    """Never a silent wrong result: 2**40 + 7 reached an int32 kernel as 7, 300 an uint8 one as 44."""
    f, sig, exe = scalar_kernel(dtype)
    with pytest.raises(ValueError, match=rf"cannot bind parameter 's' \(position 0\): {why}"):
        tvm_partial.partial(f, signature=sig, s=value)
    with pytest.raises(ValueError, match=why):  # by position, with the signature, the same
        tvm_partial.partial(f, {0: value}, signature=sig)
    with pytest.raises(ValueError, match=why):  # a module target the same
        tvm_partial.partial(exe, {0: value}, signature=sig)


def test_a_scalar_wider_than_64_bits_is_held_to_what_the_ffi_passes():
    """An int128 parameter takes what a signed 64-bit int holds, at both ends: -2**100 was bound
    (the lower bound was int128's) and failed only at the call."""
    f, sig, _exe = scalar_kernel("int64")
    wide = [te.var("s", "int128"), sig[1]]
    for value in (2**100, -(2**100), 2**63, -(2**63) - 1):
        with pytest.raises(ValueError, match=rf"int {value} is out of range for s: int128 "
                           r"\(-9223372036854775808 to 9223372036854775807: a scalar travels as a "
                           r"signed 64-bit int"):  # fmt: skip
            tvm_partial.partial(f, signature=wide, s=value)
    for value in (-(2**63), 2**63 - 1):
        assert tvm_partial.bindings(tvm_partial.partial(f, signature=wide, s=value)) == {0: value}


@pytest.mark.parametrize(
    "dtype,value,why",
    [
        ("int32", 2.0, r"float 2.0 does not fit s: int32: bind an int"),
        ("int32", float("nan"), r"float nan does not fit s: int32"),
        ("uint8", True, r"bool True does not fit s: uint8: bind an int"),
        ("bool", 1, r"int 1 does not fit s: bool: bind True or False"),
        ("float32", True, r"bool True does not fit s: float32: bind a float"),
        ("int32", "7", r"str '7' does not fit s: int32"),
    ],
)
def test_scalar_of_another_kind_is_refused(dtype, value, why):
    f, sig, _exe = scalar_kernel(dtype)
    with pytest.raises(TypeError, match=rf"cannot bind parameter 's' \(position 0\): {why}"):
        tvm_partial.partial(f, signature=sig, s=value)


def test_int_past_64_bits_refused_without_a_signature():
    """The FFI carries an int in 64 bits; a larger one would reach the callee as an opaque object."""
    for value in (2**63, -(2**63) - 1, 2**64):
        with pytest.raises(ValueError, match=rf"cannot bind position 1: int {value} does not fit in 64 bits"):
            tvm_partial.partial(echo, {1: value})
    assert list(tvm_partial.partial(echo, {0: 2**63 - 1, 1: -(2**63)})()) == [2**63 - 1, -(2**63)]


def test_numpy_scalars_are_checked_as_their_value():
    f, sig, _exe = scalar_kernel("uint8")
    assert received(tvm_partial.partial(f, signature=sig, s=np.int64(255)), "uint8") == 255
    with pytest.raises(ValueError, match=r"int 256 is out of range for s: uint8"):
        tvm_partial.partial(f, signature=sig, s=np.int64(256))


def test_rebind_checks_scalars_against_the_signature():
    _, [s, out], exe = scalar_kernel("int32")
    pm = tvm_partial.partial(exe, signature=[s, out], s=5)
    assert received(pm, "int32") == 5
    assert received(tvm_partial.rebind(pm, s=-(2**31), signature=[s, out]), "int32") == -(2**31)
    with pytest.raises(
        ValueError,
        match=r"cannot rebind parameter 's' \(position 0\): int 1099511627783 is out of range for s: int32",
    ):
        tvm_partial.rebind(pm, s=2**40 + 7, signature=[s, out])
    with pytest.raises(
        ValueError, match=r"cannot rebind parameter 's' \(position 0\): int 2147483648 is out"
    ):
        tvm_partial.rebind(pm, {"s": 2**31}, signature=[s, out])
    with pytest.raises(
        ValueError, match=r"cannot rebind parameter 's' \(position 0\): int 2147483648 is out"
    ):
        tvm_partial.rebind(pm, {0: 2**31}, signature=[s, out])
    # Without signature= the dtype is unknown (a partial records names only): the int still has
    # to fit in the 64 bits the FFI carries.
    with pytest.raises(
        ValueError,
        match=r"cannot rebind parameter 's' \(position 0\): int 18446744073709551616 does not fit in 64 bits",
    ):
        tvm_partial.rebind(pm, s=2**64)


# -- 3b. parameters named like an option: Relax models and rebind() ----------------------------------------
@pytest.fixture(scope="module")
def relax_option_names():
    """A Relax model main(x, device, function) = x + 2 * device + 3 * function."""
    from tvm.script import relax as R

    @tvm.script.ir_module
    class OptionNames:
        @R.function
        def main(
            x: R.Tensor((2,), "float32"),
            device: R.Tensor((2,), "float32"),
            function: R.Tensor((2,), "float32"),
        ):
            two = R.const(2.0, "float32")
            three = R.const(3.0, "float32")
            return R.add(R.add(x, R.multiply(device, two)), R.multiply(function, three))

    return tvm.compile(OptionNames, target="llvm")


def test_relax_parameter_named_device_binds_through_the_mapping(relax_option_names):
    """Was: AttributeError: 'numpy.ndarray' object has no attribute 'dlpack_device_type'."""
    exe = relax_option_names
    d, f, x = np.full(2, 10, "float32"), np.full(2, 100, "float32"), np.array([1, 2], "float32")
    for option, value in (("device", d), ("function", f), ("device", tvm.cpu(0)), ("function", "main")):
        with pytest.raises(
            TypeError,
            match=rf"^{option} is both a parameter of main\(\) and an option of partial\(\): "
            rf'bind it as partial\(f, \{{"{option}": value\}}, \.\.\.\)',
        ):
            tvm_partial.partial(exe, **{option: value})
    pm = tvm_partial.partial(exe, {"device": d, "function": f})
    assert np.array_equal(pm(tensor(x)).numpy(), x + 2 * d + 3 * f)


def test_rebind_takes_names_in_the_mapping_and_refuses_option_keywords(relax_option_names):
    """rebind() of parameters named device or function failed three ways: AttributeError (device=),
    TypeError: unhashable type (function=), "bound key 'device' is not an integer position"."""
    exe = relax_option_names
    d, f, x = np.full(2, 10, "float32"), np.full(2, 100, "float32"), np.array([1, 2], "float32")
    pm = tvm_partial.partial(exe, {"device": d, "function": f})
    for option in ("device", "function"):
        with pytest.raises(
            TypeError,
            match=rf"^{option} is both a parameter of main\(\) and an option of rebind\(\): "
            rf'rebind it as rebind\(module, \{{"{option}": value\}}, \.\.\.\)',
        ):
            tvm_partial.rebind(pm, **{option: d})
    rebound = tvm_partial.rebind(pm, {"device": d * 2, "function": f * 2})
    assert np.array_equal(rebound(tensor(x)).numpy(), x + 4 * d + 6 * f)
    mixed = tvm_partial.rebind(pm, {1: d * 3, "function": f * 3})
    assert np.array_equal(mixed(tensor(x)).numpy(), x + 6 * d + 9 * f)
    with pytest.raises(
        TypeError, match=r"function is both a parameter of main\(\) and an option of rebind\(\)"
    ):
        tvm_partial.rebind(pm, {"device": d}, function="main")  # never taken as the option
    with pytest.raises(
        TypeError, match=r"parameter 'device' \(position 1\) is bound both by index and by name"
    ):
        tvm_partial.rebind(pm, {1: d, "device": d})
    with pytest.raises(
        TypeError, match=r"parameter 'x' is bound twice: as a key of the mapping and as a keyword"
    ):
        tvm_partial.rebind(pm, {"x": d}, x=d)
    with pytest.raises(IndexError, match=r"rebind: position 0 of main\(\) is not bound"):
        tvm_partial.rebind(pm, {"x": d})
    with pytest.raises(
        TypeError, match=r"main\(\) has no parameter 'devices'; its parameters are x, device, function"
    ):
        tvm_partial.rebind(pm, {"devices": d})


def test_rebind_keys_follow_the_position_rule_of_partial(conv):
    """One rule for keys: rebind() refuses what partial() refuses, with the same words."""
    pm = tvm_partial.partial(conv[0], {1: np.zeros(fixtures.SHAPES["weights"], "float32")})
    for key, kind, message in (
        (-1, ValueError, r"bound index -1 is negative; positions count from 0"),
        (1.5, TypeError, r"bound key 1.5 is not an integer position or a parameter name"),
        (True, TypeError, r"bound key True is not an integer position or a parameter name"),
        (2**31, IndexError, r"bound index 2147483648 cannot be reached"),
    ):
        with pytest.raises(kind, match=message):
            tvm_partial.partial(conv[0], {key: 1})
        with pytest.raises(kind, match=message):
            tvm_partial.rebind(pm, {key: 1})


# -- 4b. arrays numpy will not export, dtypes TVM has not ---------------------------------------------------
def test_read_only_numpy_arrays_are_copied_aligned(scale16, tmp_path):
    """Was: TypeError ... not a usable tensor (Cannot export readonly array since signalling readonly
    is unsupported by DLPack): numpy arrays are copied at bind time, read-only ones too."""
    f, sig = scale16
    w = ints(16, seed=7)
    np.save(tmp_path / "w.npy", w)
    mapped = np.load(tmp_path / "w.npy", mmap_mode="r")
    from_bytes = np.frombuffer(w.tobytes(), "float32")
    strided = np.frombuffer(np.repeat(w, 2).tobytes(), "float32")[::2]
    x = ints(16)
    for source in (mapped, from_bytes, strided):
        assert not source.flags.writeable
        g = tvm_partial.partial(f, signature=sig, w=source)
        held = tvm_partial.bindings(g)[1]
        assert held.data_ptr() % 64 == 0 and held.is_contiguous() and str(held.dtype) == "float32"
        out = tvm.runtime.empty((16,), "float32")
        g(tensor(x), out)
        assert np.array_equal(out.numpy(), x * w)
    with pytest.raises(ValueError, match=r"parameter 'w' \(position 1\): shape \(8,\) does not match"):
        tvm_partial.partial(f, signature=sig, w=from_bytes[:8])
    bf16 = np.frombuffer(
        np.arange(8, dtype="float32").astype(ml_dtypes.bfloat16).tobytes(), ml_dtypes.bfloat16
    )
    held = tvm_partial.bindings(tvm_partial.partial(echo, {0: bf16}))[0]
    assert str(held.dtype) == "bfloat16" and raw_bytes(held) == bf16.tobytes()


def test_complex_tensors_are_refused_naming_the_parameter(scale16):
    """Was: ValueError: DLDataType contains unknown type_code=5, naming no parameter. TVM has no
    complex dtype (tvm_ffi.dtype("complex64") is unknown), so these cannot be bound."""
    torch = pytest.importorskip("torch")
    f, sig = scale16
    message = r"cannot bind parameter 'w' \(position 1\): complex64 tensors cannot be bound: TVM has no complex dtypes"
    with pytest.raises(TypeError, match=message):
        tvm_partial.partial(f, signature=sig, w=torch.zeros(16, dtype=torch.complex64))
    with pytest.raises(TypeError, match=message):
        tvm_partial.partial(f, signature=sig, w=np.zeros(16, np.complex64))
    with pytest.raises(TypeError, match=r"cannot bind position 0: complex128 tensors cannot be bound"):
        tvm_partial.partial(echo, {0: torch.zeros(2, dtype=torch.complex128)})
    with pytest.raises(TypeError, match=r"cannot bind position 0: complex128 tensors cannot be bound"):
        tvm_partial.partial(echo, {0: tvm_ffi.from_dlpack(torch.zeros(2, dtype=torch.complex128))})
    with pytest.raises(TypeError, match=r"cannot bind parameter 'b' \(position 1\): complex64 tensors"):
        tvm_partial.partial(echo, signature=["a", "b"], b=np.zeros(2, np.complex64))


def test_the_same_memory_in_several_places_is_copied_once():
    """Tied values are one tensor (tvm_partial.Hold): the same memory, whoever gives it (numpy,
    torch, a numpy view of it), dtype, shape and strides alike; any of these differing, its own
    copy. Every copy holds the bits given."""
    torch = pytest.importorskip("torch")
    base = np.arange(32, dtype="float32")
    shared = torch.from_numpy(base)  # the same memory, through torch
    places = {
        0: base,
        1: shared,
        2: base[:],  # a numpy view of the whole: same pointer, dtype, shape
        3: base.reshape(4, 8),  # another shape
        4: base[::2],  # other strides (and shape)
        5: base.view("int32"),  # another dtype
        6: np.arange(32, dtype="float32"),  # equal bits, other memory
    }
    held = tvm_partial.bindings(tvm_partial.partial(echo, places))
    handles = {p: held[p].__chandle__() for p in places}
    assert handles[0] == handles[1] == handles[2]
    assert len({handles[p] for p in (0, 3, 4, 5, 6)}) == 5
    for p, value in places.items():
        expected = np.asarray(value)
        assert held[p].data_ptr() != expected.ctypes.data and held[p].data_ptr() % 64 == 0
        assert tuple(held[p].shape) == expected.shape
        assert held[p].numpy().tobytes() == np.ascontiguousarray(expected).tobytes()
