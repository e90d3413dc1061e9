# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""runtime.PartialApply and partial() on functions: values, semantics, lifetime, threads."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te

import tvm_partial
from helpers import affine4_ref, compile_te, ints, tensor
from tvm_partial import _fixtures as fixtures


def test_forum_case_bitwise(conv):
    exe, tensors, inputs, expected = conv
    f = exe["main"]
    data, w, b = (tensor(inputs[k]) for k in ("data", "weights", "bias"))
    direct = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    f(data, w, b, direct)
    g = tvm_partial.partial(f, signature=tensors, weights=w, bias=b)
    assert isinstance(g, tvm_ffi.Function)  # the closure itself, no Python wrapper
    g(data, out)
    assert np.array_equal(out.numpy(), expected)
    assert np.array_equal(out.numpy(), direct.numpy())


def test_bound_by_index_equals_by_name(conv):
    exe, _tensors, inputs, expected = conv
    by_index = tvm_partial.partial(exe["main"], {1: inputs["weights"], 2: inputs["bias"]})
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    by_index(tensor(inputs["data"]), out)
    assert np.array_equal(out.numpy(), expected)


@pytest.mark.parametrize(
    "positions", [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2), (3,), (0, 3), (2, 3)]
)
def test_any_positions(affine4, positions):
    exe, _ = affine4
    f = exe["main"]
    arrays = [ints(16, seed=s) for s in range(3)] + [np.zeros(16, "float32")]
    expected = affine4_ref(*arrays[:3])
    tensors = [tensor(a) for a in arrays]
    g = tvm_partial.partial(f, {p: tensors[p] for p in positions})
    g(*[t for i, t in enumerate(tensors) if i not in positions])
    assert np.array_equal(tensors[3].numpy(), expected)


def test_bound_output_buffer(affine4):
    exe, _ = affine4
    a, b, c = (ints(16, seed=s) for s in range(3))
    out = tvm.runtime.empty((16,), "float32")
    g = tvm_partial.partial(exe["main"], {3: out})
    g(tensor(a), tensor(b), tensor(c))
    assert np.array_equal(out.numpy(), affine4_ref(a, b, c))
    assert tvm_partial.bindings(g)[3].same_as(out)  # by reference: the kernel wrote our tensor


@pytest.mark.parametrize("dtype,value", [("float32", 1.5), ("int32", 7)])
def test_scalar_parameter_bound(dtype, value):
    x = te.placeholder((8,), dtype, name="x")
    s = te.var("s", dtype)
    out = te.compute((8,), lambda i: x[i] * s, name="out")
    exe = compile_te([x, s, out])
    g = tvm_partial.partial(exe["main"], signature=[x, s, out], s=value)
    xs = ints(8, dtype)
    result = tvm.runtime.empty((8,), dtype)
    g(tensor(xs), result)
    assert np.array_equal(result.numpy(), (xs * np.array(value, dtype)).astype(dtype))
    assert tvm_partial.bindings(g) == {1: value}


@pytest.mark.parametrize("dtype", ["float16", "int8", "float32", "uint8", "int64"])
def test_dtypes_bound(dtype):
    a = te.placeholder((4, 4), dtype, name="a")
    b = te.placeholder((4, 4), dtype, name="b")
    out = te.compute((4, 4), lambda i, j: a[i, j] + b[i, j], name="out")
    exe = compile_te([a, b, out])
    av, bv = ints((4, 4), dtype, seed=1, low=0, high=9), ints((4, 4), dtype, seed=2, low=0, high=9)
    g = tvm_partial.partial(exe["main"], signature=[a, b, out], b=bv)
    result = tvm.runtime.empty((4, 4), dtype)
    g(tensor(av), result)
    assert np.array_equal(result.numpy(), av + bv)


def test_bool_bound():
    a = te.placeholder((6,), "bool", name="a")
    b = te.placeholder((6,), "bool", name="b")
    out = te.compute((6,), lambda i: tvm.tirx.all(a[i], b[i]), name="out")
    exe = compile_te([a, b, out])
    av = np.array([1, 0, 1, 0, 1, 1], bool)
    bv = np.array([1, 1, 0, 0, 1, 0], bool)
    g = tvm_partial.partial(exe["main"], signature=[a, b, out], b=bv)
    result = tvm.runtime.empty((6,), "bool")
    g(tensor(av), result)
    assert np.array_equal(result.numpy(), av & bv)


def test_zero_dim_tensor_bound():
    x = te.placeholder((5,), "float32", name="x")
    k = te.placeholder((), "float32", name="k")
    out = te.compute((5,), lambda i: x[i] * k[()], name="out")
    exe = compile_te([x, k, out])
    g = tvm_partial.partial(exe["main"], signature=[x, k, out], k=np.array(3.0, "float32"))
    xs = ints(5)
    result = tvm.runtime.empty((5,), "float32")
    g(tensor(xs), result)
    assert np.array_equal(result.numpy(), xs * np.float32(3))


def test_relax_vm_function():
    from tvm import relax
    from tvm.script import relax as R

    @tvm.script.ir_module
    class Affine:
        @R.function
        def main(
            x: R.Tensor((2, 3), "float32"), w: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")
        ):
            return R.add(R.multiply(x, w), b)

    vm = relax.VirtualMachine(tvm.compile(Affine, target="llvm"), tvm.cpu())
    x, w, b = (ints((2, 3), seed=s) for s in range(3))
    direct = vm["main"](tensor(x), tensor(w), tensor(b)).numpy()
    g = tvm_partial.partial(vm["main"], signature=vm, w=w, b=b)
    assert np.array_equal(g(tensor(x)).numpy(), direct)  # the return value passes through
    assert np.array_equal(direct, x * w + b)
    with pytest.raises(TypeError, match=r"main\(\) takes 1 argument \(x\), 2 given"):
        g(tensor(x), tensor(x))
    # The Relax function itself is a signature too, with dtypes and shapes checked.
    with pytest.raises(ValueError, match="shape"):
        tvm_partial.partial(vm["main"], signature=Affine["main"], w=np.zeros((3, 2), "float32"))


def test_partial_of_partial_flattens(affine4):
    exe, _ = affine4
    f = exe["main"]
    a, b, c = (ints(16, seed=s) for s in range(3))
    ta, tb, tc = tensor(a), tensor(b), tensor(c)
    g1 = tvm_partial.partial(f, {1: tb})  # g1(a, c, out)
    g2 = tvm_partial.partial(g1, {1: tc})  # position 1 of g1 is c
    single = tvm_partial.partial(f, {1: tb, 2: tc})
    assert set(tvm_partial.bindings(g2)) == {1, 2}  # one level, positions of f
    assert tvm_partial.bindings(g2)[1].same_as(tb) and tvm_partial.bindings(g2)[2].same_as(tc)
    out2, out1 = tvm.runtime.empty((16,), "float32"), tvm.runtime.empty((16,), "float32")
    g2(ta, out2)
    single(ta, out1)
    assert np.array_equal(out2.numpy(), out1.numpy())
    assert np.array_equal(out2.numpy(), affine4_ref(a, b, c))


def test_partial_of_partial_keeps_names(conv):
    exe, tensors, inputs, expected = conv
    g1 = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"])
    g2 = tvm_partial.partial(g1, bias=inputs["bias"])  # names of g1's free parameters are known
    assert tvm_partial.param_names(g2) == ["data", "weights", "bias", "result"]
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    g2(tensor(inputs["data"]), out)
    assert np.array_equal(out.numpy(), expected)
    with pytest.raises(TypeError, match=r"main\(\) takes 2 arguments \(data, result\), 1 given"):
        g2(out)


def test_errors_pass_through_unchanged():
    def fail(*args):
        raise ValueError(f"kernel refused {len(args)} arguments")

    f = tvm_ffi.convert(fail)
    g = tvm_partial.partial(f, {0: 1, 2: "s"})
    with pytest.raises(ValueError, match=r"^kernel refused 3 arguments$"):
        g(2.5)


def test_compiled_kernel_error_passes_through(affine4):
    exe, _ = affine4
    f = exe["main"]
    bad = tensor(np.zeros(3, "float32"))
    good = tensor(np.zeros(16, "float32"))
    with pytest.raises(Exception) as direct:
        f(bad, good, good, good)
    g = tvm_partial.partial(f, {1: good, 2: good})
    with pytest.raises(Exception) as through:
        g(bad, good)
    assert type(through.value) is type(direct.value)
    assert str(through.value) == str(direct.value)


def test_return_value_passes_through():
    f = tvm_ffi.convert(lambda a, b, c: (a, b, c))
    g = tvm_partial.partial(f, {1: "bound"})
    assert list(g(1, None)) == [1, "bound", None]


def test_scalars_strings_none_bound():
    f = tvm_ffi.convert(lambda *args: list(args))
    g = tvm_partial.partial(f, {0: 3, 1: 2.5, 2: True, 3: "text", 4: None})
    assert list(g("free")) == [3, 2.5, True, "text", None, "free"]
    # Extra caller arguments go after the last bound position.
    assert list(tvm_partial.partial(f, {1: "b"})("a", "c", "d")) == ["a", "b", "c", "d"]


def test_many_arguments_past_inline_buffer():
    f = tvm_ffi.convert(lambda *args: sum(args))
    g = tvm_partial.partial(f, {i: i for i in range(0, 80, 2)})  # 40 bound
    assert g(*range(1, 80, 2)) == sum(range(80))


def test_lifetime_holds_everything(affine4):
    a, b, c = (ints(16, seed=s) for s in range(3))

    def make():
        x, y, z = (te.placeholder((16,), "float32", name=n) for n in "xyz")
        out = te.compute((16,), lambda i: x[i] * 2.0 + y[i] * 3.0 + z[i], name="out")
        exe = compile_te([x, y, z, out])
        g = tvm_partial.partial(exe["main"], {1: tensor(b), 2: tensor(c)})
        return g  # exe, its module and the tensors go out of scope here

    g = make()
    gc.collect()
    out = tvm.runtime.empty((16,), "float32")
    g(tensor(a), out)
    assert np.array_equal(out.numpy(), affine4_ref(a, b, c))


def test_bound_tensor_released_with_partial(affine4):
    exe, _ = affine4
    storage = np.zeros(16 + 64, "float32")
    offset = (-storage.ctypes.data % 64) // 4
    view = storage[offset : offset + 16]  # 64-byte aligned: bound by reference, not copied
    view[:] = ints(16, seed=5)
    alive = weakref.ref(view)
    bound = tvm_ffi.from_dlpack(view)
    del view
    g = tvm_partial.partial(exe["main"], {1: bound, 2: bound})
    assert tvm_partial.bindings(g)[1].same_as(bound)
    del bound
    gc.collect()
    assert alive() is not None  # the partial holds it
    del g
    gc.collect()
    assert alive() is None  # released with the partial


def test_threads_share_one_partial(conv):
    exe, tensors, inputs, expected = conv
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    data = tensor(inputs["data"])
    failures = []

    def worker():
        out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
        for _ in range(1000):
            out.copyfrom(np.zeros(fixtures.SHAPES["result"], "float32"))
            g(data, out)
            if not np.array_equal(out.numpy(), expected):
                failures.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_unaligned_and_strided_inputs_are_copied_aligned(affine4):
    exe, tensors = affine4
    raw = np.zeros(200, "float32")
    misaligned = raw[1:33][::2]  # strided and off the 64-byte grid
    misaligned[:] = ints(16, seed=9)
    g = tvm_partial.partial(exe["main"], signature=tensors, b=misaligned)
    held = tvm_partial.bindings(g)[1]
    assert held.data_ptr() % 64 == 0 and held.is_contiguous()
    a, c = ints(16, seed=1), ints(16, seed=2)
    out = tvm.runtime.empty((16,), "float32")
    g(tensor(a), tensor(c), out)
    assert np.array_equal(out.numpy(), affine4_ref(a, misaligned, c))


def test_misaligned_tvm_tensor_is_copied_aligned(affine4):
    exe, _ = affine4
    raw = np.zeros(64, "float32")
    start = next(i for i in range(16) if (raw.ctypes.data + 4 * i) % 64 != 0)
    view = raw[start : start + 16]
    view[:] = ints(16, seed=4)
    misaligned = tvm_ffi.from_dlpack(view)
    assert misaligned.data_ptr() % 64 != 0
    g = tvm_partial.partial(exe["main"], {1: misaligned})
    held = tvm_partial.bindings(g)[1]
    assert held.data_ptr() % 64 == 0
    assert np.array_equal(np.from_dlpack(held), view)


def test_bindings_show_bound_values(conv):
    exe, tensors, inputs, _ = conv
    w = tensor(inputs["weights"])
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=w, bias=inputs["bias"])
    held = tvm_partial.bindings(g)
    assert sorted(held) == [1, 2]
    assert held[1].same_as(w)  # a tvm Tensor is bound by reference
    assert np.array_equal(held[2].numpy(), inputs["bias"])
    raw = tvm_ffi.get_global_func("runtime.PartialApplyBindings")(g)
    assert list(raw.keys()) == [""]


def test_prim_func_and_names_as_signature(conv):
    exe, tensors, inputs, expected = conv
    prim_func = te.create_prim_func(tensors)
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32")
    for signature in (prim_func, ["data", "weights", "bias", "result"]):
        g = tvm_partial.partial(
            exe["main"], signature=signature, weights=inputs["weights"], bias=inputs["bias"]
        )
        out.copyfrom(np.zeros(fixtures.SHAPES["result"], "float32"))
        g(tensor(inputs["data"]), out)
        assert np.array_equal(out.numpy(), expected)
        assert tvm_partial.param_names(g) == ["data", "weights", "bias", "result"]
    with pytest.raises(ValueError, match=r"parameter 'bias' \(position 2\): shape \(3,\)"):
        tvm_partial.partial(exe["main"], signature=prim_func, bias=np.zeros(3, "float32"))


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
def test_on_the_device_host_arrays_are_bound_there_aligned(dev, affine_dev):
    """numpy arrays bound with device= land there, 64-byte aligned, with their bytes; the partial's
    result equals the direct call's and numpy's, bitwise."""
    exe, _ = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    g = tvm_partial.partial(exe["main"], {1: b, 2: c}, device=dev.name)
    held = tvm_partial.bindings(g)
    assert [str(held[i].device) for i in (1, 2)] == [dev.name] * 2
    assert all(held[i].data_ptr() % 64 == 0 for i in (1, 2))
    assert held[1].numpy().tobytes() == b.tobytes() and held[2].numpy().tobytes() == c.tobytes()
    out, direct = dev.tensor(np.zeros(256, "float32")), dev.tensor(np.zeros(256, "float32"))
    g(dev.tensor(a), out)
    exe["main"](dev.tensor(a), dev.tensor(b), dev.tensor(c), direct)
    assert out.numpy().tobytes() == direct.numpy().tobytes() == affine4_ref(a, b, c).tobytes()


def test_on_the_device_a_misaligned_tensor_is_copied_where_it_is(dev, affine_dev):
    """A tvm Tensor that is not 64-byte aligned is copied aligned on its own device, not on
    device= (the CPU by default); a numpy array of the same bytes goes to device=, its own
    copy. The partial's result equals numpy's, bitwise."""
    exe, _ = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    whole = dev.tensor(np.concatenate([np.zeros(1, "float32"), b]))
    misaligned = whole._create_view((256,), "float32", 4)  # b, 4 bytes into an aligned buffer
    assert misaligned.data_ptr() % 64 == 4
    g = tvm_partial.partial(exe["main"], {1: misaligned, 2: dev.tensor(c)})
    held = tvm_partial.bindings(g)[1]
    assert str(held.device) == dev.name and held.data_ptr() % 64 == 0
    assert held.numpy().tobytes() == b.tobytes()
    out = dev.tensor(np.zeros(256, "float32"))
    g(dev.tensor(a), out)
    assert out.numpy().tobytes() == affine4_ref(a, b, c).tobytes()
    echo = tvm_ffi.convert(lambda *args: list(args))
    on_cpu = tvm_partial.bindings(tvm_partial.partial(echo, {0: misaligned, 1: b}))
    assert str(on_cpu[0].device) == dev.name and str(on_cpu[1].device) == "cpu:0"


def test_on_the_device_a_dlpack_view_binds_by_reference(dev, affine_dev):
    """A torch tensor on the device seen through tvm_ffi.from_dlpack is bound as it is (the kernel
    sees later changes to it); passed itself, it is copied once."""
    torch = pytest.importorskip("torch")
    if dev.kind == "cuda" and not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA here")
    exe, _ = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    tb = torch.tensor(b, device=dev.kind)  # torch's own allocation, 64-byte aligned
    by_reference = tvm_partial.partial(exe["main"], {1: tvm_ffi.from_dlpack(tb), 2: dev.tensor(c)})
    copied = tvm_partial.partial(exe["main"], {1: tb, 2: dev.tensor(c)})
    assert tvm_partial.bindings(by_reference)[1].data_ptr() == tb.data_ptr()
    assert tvm_partial.bindings(copied)[1].data_ptr() != tb.data_ptr()
    tb.mul_(2)
    if dev.kind == "cuda":
        torch.cuda.synchronize()
    out = dev.tensor(np.zeros(256, "float32"))
    by_reference(dev.tensor(a), out)
    assert out.numpy().tobytes() == affine4_ref(a, b * 2, c).tobytes()
    copied(dev.tensor(a), out)
    assert out.numpy().tobytes() == affine4_ref(a, b, c).tobytes()
