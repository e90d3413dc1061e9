# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Kernels that return their outputs: ``partial(..., outputs="result")`` and ``out = conv(data)``."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import te

import tvm_partial
from helpers import compile_te, ints, run_json, tensor


@pytest.fixture(scope="module")
def sum_prod():
    """s = a + b, p = a * b: main(a, b, s, p), four float32 tensors of shape (16,)."""
    a, b = (te.placeholder((16,), "float32", name=n) for n in "ab")
    s = te.compute((16,), lambda i: a[i] + b[i], name="s")
    p = te.compute((16,), lambda i: a[i] * b[i], name="p")
    return compile_te([a, b, s, p]), [a, b, s, p]


@pytest.fixture(scope="module")
def scale_n():
    """y = 2 * x + c with x: (n, 3) and c: (3,), y: (n, 3); n is a TIR shape variable."""
    n = te.var("n", "int64")
    x = te.placeholder((n, 3), "float32", name="x")
    c = te.placeholder((3,), "float32", name="c")
    y = te.compute((n, 3), lambda i, j: x[i, j] * 2.0 + c[j], name="y")
    return compile_te([x, c, y]), [x, c, y]


def _conv_partial(conv, target="function", **extra):
    exe, tensors, inputs, _ = conv
    f = exe["main"] if target == "function" else exe
    return tvm_partial.partial(
        f, signature=tensors, weights=inputs["weights"], bias=inputs["bias"], outputs="result", **extra
    )


@pytest.mark.parametrize("target", ["function", "module"])
def test_forum_conv_returns_its_output(conv, target):
    exe, _tensors, inputs, expected = conv
    g = _conv_partial(conv, target)
    data = tensor(inputs["data"])
    out = g(data)  # the forum's `output = wrapped(data)`
    direct = tvm.runtime.empty(expected.shape, "float32")
    exe["main"](data, tensor(inputs["weights"]), tensor(inputs["bias"]), direct)
    assert isinstance(out, tvm.runtime.Tensor)
    assert out.shape == expected.shape and str(out.dtype) == "float32"
    assert np.array_equal(out.numpy(), expected)
    assert out.numpy().tobytes() == direct.numpy().tobytes()
    names = tvm_partial.param_names(g) if target == "function" else tvm_partial.param_names(g)["main"]
    assert names == ["data", "weights", "bias", "result"]


def test_each_call_returns_a_new_aligned_tensor(conv):
    _, _, inputs, expected = conv
    g = _conv_partial(conv)
    data = tensor(inputs["data"])
    outs = [g(data) for _ in range(4)]
    assert len({o.data_ptr() for o in outs}) == 4
    assert [o.data_ptr() % 64 for o in outs] == [0, 0, 0, 0]
    assert all(np.array_equal(o.numpy(), expected) for o in outs)
    assert all(o.is_contiguous() for o in outs)


def test_count_error_names_only_the_free_parameters(conv):
    _, _, inputs, expected = conv
    g = _conv_partial(conv)
    with pytest.raises(TypeError, match=r"main\(\) takes 1 argument \(data\), 2 given"):
        g(tensor(inputs["data"]), tvm.runtime.empty(expected.shape, "float32"))


@pytest.mark.parametrize("order", [["s", "p"], ["p", "s"], [3, 2]])
def test_two_outputs_in_the_order_given(sum_prod, order):
    exe, tensors = sum_prod
    a, b = ints(16, seed=1), ints(16, seed=2)
    g = tvm_partial.partial(exe["main"], signature=tensors, outputs=order)
    result = g(tensor(a), tensor(b))
    assert len(result) == 2
    first, second = result  # an ffi Array unpacks like a tuple
    want = {"s": a + b, "p": a * b, 2: a + b, 3: a * b}
    assert np.array_equal(first.numpy(), want[order[0]]) and np.array_equal(second.numpy(), want[order[1]])
    assert [o["name"] for o in tvm_partial.outputs(g)] == [
        tensors[i].op.name if isinstance(i, int) else i for i in order
    ]


def test_symbolic_dimension_read_from_the_input(scale_n):
    exe, tensors = scale_n
    c = ints(3, seed=3)
    g = tvm_partial.partial(exe["main"], signature=tensors, c=c, outputs="y")
    assert tvm_partial.outputs(g) == [{"position": 2, "name": "y", "dtype": "float32", "shape": [(0, 0), 3]}]
    for n in (1, 5, 17):
        x = ints((n, 3), seed=n)
        y = g(tensor(x))
        assert y.shape == (n, 3)
        assert np.array_equal(y.numpy(), x * np.float32(2) + c)


def test_symbolic_dimension_with_a_primfunc_signature(scale_n):
    exe, tensors = scale_n
    g = tvm_partial.partial(exe["main"], signature=te.create_prim_func(tensors), outputs="y")
    assert tvm_partial.outputs(g)[0]["shape"] == [(0, 0), 3]
    x, c = ints((7, 3), seed=15), ints(3, seed=16)
    assert np.array_equal(g(tensor(x), tensor(c)).numpy(), x * np.float32(2) + c)


def test_symbolic_dimension_of_a_bound_input_becomes_static(scale_n):
    exe, tensors = scale_n
    x = ints((6, 3), seed=4)
    g = tvm_partial.partial(exe["main"], signature=tensors, x=x, outputs="y")
    assert tvm_partial.outputs(g)[0]["shape"] == [6, 3]
    c = ints(3, seed=5)
    assert np.array_equal(g(tensor(c)).numpy(), x * np.float32(2) + c)


def test_binding_the_source_of_a_symbolic_dimension_later(scale_n):
    exe, tensors = scale_n
    c = ints(3, seed=11)
    g = tvm_partial.partial(exe["main"], signature=tensors, c=c, outputs="y")  # g(x) -> y, n from x
    x = ints((4, 3), seed=12)
    h = tvm_partial.partial(g, {0: x})  # the extent becomes the bound tensor's
    assert tvm_partial.outputs(h)[0]["shape"] == [4, 3]
    assert np.array_equal(h().numpy(), x * np.float32(2) + c)
    pm = tvm_partial.partial(tvm_partial.partial(exe, signature=tensors, c=c, outputs="y"), {0: x})
    assert tvm_partial.outputs(pm)["main"][0]["shape"] == [4, 3]
    assert np.array_equal(pm().numpy(), x * np.float32(2) + c)


def test_a_parameter_named_outputs_is_not_taken_as_the_option():
    x = te.placeholder((4,), "float32", name="x")
    out = te.compute((4,), lambda i: x[i] + 1.0, name="outputs")
    exe = compile_te([x, out])
    with pytest.raises(
        TypeError,
        match=r"outputs is both a parameter of main\(\) and an option of partial\(\): "
        r'bind it as partial\(f, \{"outputs": value\}',
    ):
        tvm_partial.partial(exe["main"], signature=[x, out], outputs=np.zeros(4, "float32"))
    result = tvm.runtime.empty((4,), "float32")
    g = tvm_partial.partial(exe["main"], {"outputs": result}, signature=[x, out])
    g(tensor(np.arange(4, dtype="float32")))
    assert np.array_equal(result.numpy(), np.arange(4, dtype="float32") + np.float32(1))


def test_partial_of_partial_keeps_outputs(conv):
    exe, tensors, inputs, expected = conv
    data = tensor(inputs["data"])
    # Outputs first, then more bindings on top (positions of the first partial: data, bias).
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"], outputs="result")
    h = tvm_partial.partial(g, {1: inputs["bias"]})
    assert sorted(tvm_partial.bindings(h)) == [1, 2]
    assert tvm_partial.outputs(h)[0]["position"] == 3
    assert np.array_equal(h(data).numpy(), expected)
    # Bindings first, outputs on top, named in the original signature.
    g2 = tvm_partial.partial(exe["main"], {1: inputs["weights"], 2: inputs["bias"]})
    h2 = tvm_partial.partial(g2, signature=tensors, outputs="result")
    assert tvm_partial.outputs(h2)[0]["position"] == 3 and np.array_equal(h2(data).numpy(), expected)
    # A third level binding the data: the call takes nothing.
    h3 = tvm_partial.partial(h, {0: inputs["data"]})
    assert np.array_equal(h3().numpy(), expected)
    # Modules too.
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], outputs="result")
    pm2 = tvm_partial.partial(pm, {1: inputs["bias"]})
    assert tvm_partial.outputs(pm2)["main"][0]["position"] == 3
    assert np.array_equal(pm2(data).numpy(), expected)


def test_partial_of_partial_shifts_output_positions(sum_prod):
    exe, tensors = sum_prod
    a, b = ints(16, seed=6), ints(16, seed=7)
    g = tvm_partial.partial(exe["main"], signature=tensors, outputs="s")  # g(a, b, p) -> s
    h = tvm_partial.partial(g, {0: a}, signature=tensors, outputs="p")  # h(b) -> (s, p)
    assert [(o["position"], o["name"]) for o in tvm_partial.outputs(h)] == [(2, "s"), (3, "p")]
    s, p = h(tensor(b))
    assert np.array_equal(s.numpy(), a + b) and np.array_equal(p.numpy(), a * b)
    h2 = tvm_partial.partial(g, {1: b}, signature=tensors, outputs=[2])  # position 2 of g(a, b, p): p
    s2, p2 = h2(tensor(a))
    assert np.array_equal(s2.numpy(), a + b) and np.array_equal(p2.numpy(), a * b)


def test_rebind_keeps_outputs(conv):
    _exe, _tensors, inputs, _ = conv
    pm = _conv_partial(conv, "module")
    weights = inputs["weights"] * 2
    pm2 = tvm_partial.rebind(pm, weights=weights)
    from tvm_partial import _fixtures as fixtures

    assert np.array_equal(
        pm2(tensor(inputs["data"])).numpy(), fixtures.reference(inputs["data"], weights, inputs["bias"])
    )


def test_export_and_load_in_a_fresh_process_returns_the_output(conv, tmp_path):
    _, _, inputs, expected = conv
    pm = _conv_partial(conv, "module")
    tvm_partial.export_library(pm, tmp_path / "conv.so")
    np.save(tmp_path / "data.npy", inputs["data"])
    np.save(tmp_path / "expected.npy", expected)
    result = run_json(
        """
        import json, sys, numpy as np, tvm
        lib = tvm.runtime.load_module(sys.argv[1] + "/conv.so")
        data = tvm.runtime.tensor(np.load(sys.argv[1] + "/data.npy"))
        out = lib(data)
        import tvm_partial
        print(json.dumps({"equal": bool(np.array_equal(out.numpy(), np.load(sys.argv[1] + "/expected.npy"))),
                          "aligned": out.data_ptr() % 64 == 0,
                          "outputs": tvm_partial.outputs(lib)["main"][0]["name"]}))
        """,
        str(tmp_path),
    )
    assert result == {"equal": True, "aligned": True, "outputs": "result"}


def test_zero_copy_export_with_outputs(conv, tmp_path):
    _, _, inputs, expected = conv
    tvm_partial.export_library(_conv_partial(conv, "module"), tmp_path / "zc.so", zero_copy=True)
    np.save(tmp_path / "data.npy", inputs["data"])
    result = run_json(
        """
        import json, sys, numpy as np, tvm, tvm_partial
        lib = tvm_partial.load(sys.argv[1] + "/zc.so")
        out = lib(tvm.runtime.tensor(np.load(sys.argv[1] + "/data.npy")))
        version = tvm_partial.inspect(sys.argv[1] + "/zc.so")["format_version"]
        print(json.dumps({"out": out.numpy().ravel().tolist(), "version": version}))
        """,
        str(tmp_path),
    )
    assert result["version"] == 3
    assert np.array_equal(np.asarray(result["out"], "float32"), expected.ravel())


# ---------------------------------------------------------------------------------------------
# Bad input


def test_output_that_is_not_a_parameter(conv):
    with pytest.raises(TypeError, match=r"main\(\) has no parameter 'out'"):
        tvm_partial.partial(conv[0]["main"], signature=conv[1], outputs="out")


def test_output_that_is_also_bound(conv):
    exe, tensors, inputs, expected = conv
    with pytest.raises(ValueError, match=r"output 'result' \(position 3\) is also bound"):
        tvm_partial.partial(
            exe["main"], signature=tensors, result=np.zeros(expected.shape, "float32"), outputs="result"
        )
    g = tvm_partial.partial(exe["main"], signature=tensors, weights=inputs["weights"])
    with pytest.raises(TypeError, match=r"output 'weights' \(position 1\) is already bound"):
        tvm_partial.partial(g, signature=tensors, outputs="weights")
    h = tvm_partial.partial(exe["main"], signature=tensors, outputs="result")
    with pytest.raises(TypeError, match=r"output 'result' \(position 3\) is already bound or an output"):
        tvm_partial.partial(h, signature=tensors, outputs="result")


def test_outputs_need_dtype_and_shape(conv):
    exe, _, _, _ = conv
    with pytest.raises(TypeError, match=r"outputs= needs a signature with dtypes and shapes"):
        tvm_partial.partial(exe["main"], signature=["data", "weights", "bias", "result"], outputs="result")
    with pytest.raises(TypeError, match=r"outputs= needs a signature"):
        tvm_partial.partial(exe, outputs=3)


def test_compound_dimension_refused_at_bind_time():
    n = te.var("n", "int64")
    x = te.placeholder((n,), "float32", name="x")
    y = te.compute((n * 2,), lambda i: x[i // 2], name="y")
    exe = compile_te([x, y])
    with pytest.raises(ValueError, match=r"output 'y' dimension 0 is n \* (T\.int64\()?2\)?: only static"):
        tvm_partial.partial(exe["main"], signature=[x, y], outputs="y")


def test_dimension_no_input_carries_refused_at_bind_time(scale_n):
    exe, tensors = scale_n
    # x is the only input whose shape has n; as an output too, nothing is left to read n from.
    with pytest.raises(ValueError, match=r"output 'x' dimension 0 is n, which no free input's shape has"):
        tvm_partial.partial(exe["main"], signature=tensors, outputs=["x", "y"])


def test_call_with_a_non_tensor_or_wrong_ndim_at_the_referenced_argument(scale_n):
    exe, tensors = scale_n
    g = tvm_partial.partial(exe["main"], signature=tensors, outputs="y")  # g(x, c) -> y
    with pytest.raises(
        TypeError,
        match=r"output 'y' \(position 2\) dimension 0 \(axis 0 of argument "
        r"'x' \(position 0\)\): the argument is not a tensor",
    ):
        g(5, tensor(ints(3)))
    with pytest.raises(
        ValueError,
        match=r"dimension 0 \(axis 0 of argument 'x' \(position 0\)\): "
        r"the argument has ndim 0",
    ):
        g(tvm.runtime.tensor(np.float32(1.0)), tensor(ints(3)))


def test_overflowing_output_size_refused():
    result = run_json("""
        import json, numpy as np, tvm, tvm_ffi, tvm_partial
        from tvm import te
        n = te.var("n", "int64")
        x = te.placeholder((n,), "float32", name="x")
        y = te.compute((n, n), lambda i, j: x[i] * x[j], name="y")
        f = tvm.compile(te.create_prim_func([x, y]), target="llvm")["main"]
        g = tvm_partial.partial(f, signature=[x, y], outputs="y")
        huge = np.lib.stride_tricks.as_strided(np.zeros(1, "float32"), shape=(2**40,), strides=(0,))
        try:
            g(tvm_ffi.from_dlpack(huge))
            print(json.dumps({"error": None}))
        except Exception as err:
            print(json.dumps({"error": type(err).__name__ + ": " + str(err)}))
        """)
    assert result["error"].startswith(
        "ValueError: main(): output 'y' (position 1) dimension 1 makes the element count overflow 64 bits"
    ), result


#: (elements, dtype, bytes): an output's size counts bytes, sub-byte dtypes packed and rounded up to
#: a whole byte; None: 2**63 bytes or more, which no tensor can hold. int4x3 takes 12 bits an element.
OUTPUT_SIZES = [
    (2**60, "float32", 2**62),
    (2**61 - 1, "float32", 2**63 - 4),
    (2**61, "float32", None),
    (2**63 - 1, "int8", 2**63 - 1),
    (2**62, "int16", None),
    (2**62 - 1, "float32x2", None),
    (2**63 - 1, "int4", 2**62),
    (2**63 - 1, "float4_e2m1fn", 2**62),
    (2**63 // 3 * 2 - 1, "int4x3", 2**63 - 3),
    (2**63 // 3 * 2, "int4x3", 2**63 - 2),
    (2**63 // 3 * 2 + 1, "int4x3", None),  # 2**63 bytes once rounded up
]


def _output_of(numel: int, dtype: str):
    """k(x) -> out: a function of two parameters whose out holds `numel` elements of `dtype`."""
    f = tvm_ffi.convert(lambda *args: None)
    return tvm.get_global_func("runtime.PartialApply")(f, {}, "k", ["x", "out"], [[1, dtype, [[-1, numel]]]])


@pytest.mark.parametrize(("numel", "dtype", "nbytes"), OUTPUT_SIZES)
def test_output_size_counts_bytes_at_bind_time(numel, dtype, nbytes):
    """Checked when binding (a static shape is planned then), never allocated here."""
    if nbytes is None:
        with pytest.raises(
            ValueError,
            match=rf"k\(\): output 'out' \(position 1\) of {numel} elements of {dtype} takes 2\^63 ",
        ):
            _output_of(numel, dtype)
    else:
        g = _output_of(numel, dtype)
        assert tvm_partial.outputs(g)[0]["shape"] == [numel]


def test_output_allocation_asks_for_its_size_in_bytes():
    """A call allocates the bytes the check counted (or fails saying so): never fewer, which a size
    counted in bits and wrapped past 2**64 would give, and then the kernel writes past the end."""
    sizes = [(numel, dtype) for numel, dtype, nbytes in OUTPUT_SIZES if nbytes is not None]
    result = run_json(
        f"""
        import json, tvm_ffi, tvm_partial
        f = tvm_ffi.convert(lambda *args: None)
        apply = tvm_ffi.get_global_func("runtime.PartialApply")
        results = []
        for numel, dtype in {sizes!r}:
            try:
                g = apply(f, {{}}, "k", ["x", "out"], [[1, dtype, [[-1, numel]]]])
                results.append(["returned", list(g(0).shape)])
            except Exception as err:
                results.append([type(err).__name__, str(err)])
        print(json.dumps(results))
        """,
        env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"},
    )
    for (numel, dtype), (kind, message), nbytes in zip(sizes, result, [s[2] for s in OUTPUT_SIZES if s[2]]):
        assert kind == "MemoryError", (numel, dtype, kind, message)
        assert message.startswith(
            f"k(): cannot allocate output 'out' (position 1): out of memory allocating a tensor of {nbytes} bytes"
        ), (numel, dtype, message)


def test_out_of_memory_is_an_error_not_a_crash():
    result = run_json("""
        import json, numpy as np, tvm, tvm_ffi, tvm_partial
        from tvm import te
        n = te.var("n", "int64")
        x = te.placeholder((n,), "float32", name="x")
        y = te.compute((n,), lambda i: x[i] * 2.0, name="y")
        f = tvm.compile(te.create_prim_func([x, y]), target="llvm")["main"]
        g = tvm_partial.partial(f, signature=[x, y], outputs="y")
        huge = np.lib.stride_tricks.as_strided(np.zeros(1, "float32"), shape=(2**55,), strides=(0,))
        try:
            g(tvm_ffi.from_dlpack(huge))
            print(json.dumps({"error": None}))
        except Exception as err:
            print(json.dumps({"error": type(err).__name__ + ": " + str(err)}))
        """)
    assert result["error"].startswith(
        "MemoryError: main(): cannot allocate output 'y' (position 1): out of "
        "memory allocating a tensor of 144115188075855872 bytes"
    ), result


def test_out_of_memory_under_an_address_space_limit_is_a_memory_error():
    """Five outputs of 256 MiB (more than the call holds inline) under a limit that leaves room
    for two: the third fails, a MemoryError naming it; the two allocated are released (a second
    call fails alike); the wrapped function is never called."""
    result = run_json(
        """
        import json, resource, tvm_ffi, tvm_partial
        called = []
        f = tvm_ffi.convert(lambda *args: called.append(len(args)))
        n = 64 << 20  # float32: 256 MiB
        outputs = [[p, "float32", [[-1, n]]] for p in range(1, 6)]
        g = tvm_ffi.get_global_func("runtime.PartialApply")(f, {}, "k", ["x", *"abcde"], outputs)
        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (vm + (640 << 20), resource.RLIM_INFINITY))
        errors = []
        for _ in range(2):
            try:
                g(0)
                errors.append(None)
            except Exception as err:
                errors.append(type(err).__name__ + ": " + str(err))
        print(json.dumps({"errors": errors, "called": called}))
        """,
        env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"},
    )
    expected = (
        "MemoryError: k(): cannot allocate output 'c' (position 3): out of memory allocating a "
        "tensor of 268435456 bytes"
    )
    assert result == {"errors": [expected, expected], "called": []}, result


def test_bad_output_positions_from_the_ffi(conv):
    exe, _, _, _ = conv
    pa = tvm.get_global_func("runtime.PartialApply")
    f32 = "float32"
    with pytest.raises(ValueError, match=r"output position 3 is given twice"):
        pa(exe["main"], {}, "", [], [[3, f32, []], [3, f32, []]])
    with pytest.raises(ValueError, match=r"output position -1 is out of range"):
        pa(exe["main"], {}, "", [], [[-1, f32, []]])
    with pytest.raises(IndexError, match=r"output position 7 is out of range for a function of 4"):
        pa(exe["main"], {}, "", ["a", "b", "c", "d"], [[7, f32, []]])
    with pytest.raises(ValueError, match=r"dimension 0 has the negative extent -2"):
        pa(exe["main"], {}, "", [], [[3, f32, [[-1, -2]]]])
    with pytest.raises(ValueError, match=r"dimension 0 refers to axis 0 of position 3, which is an output"):
        pa(exe["main"], {}, "", [], [[3, f32, [[3, 0]]]])


def test_threads_share_a_returning_partial(sum_prod):
    """Each call's outputs are its own: 8 threads, each checking every result it gets."""
    import threading

    exe, tensors = sum_prod
    a, b = ints(16, seed=13), ints(16, seed=14)
    g = tvm_partial.partial(exe["main"], signature=tensors, b=b, outputs=["p", "s"])
    ta = tensor(a)
    start, failures = threading.Barrier(8), []

    def worker():
        start.wait()
        for _ in range(2000):
            p, s = g(ta)
            if not (np.array_equal(p.numpy(), a * b) and np.array_equal(s.numpy(), a + b)):
                failures.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
def test_on_the_device_outputs_are_allocated_there_per_call(dev, affine_dev):
    exe, sig = affine_dev
    a, b, c = (ints(256, seed=s) for s in range(3))
    g = tvm_partial.partial(exe, signature=sig, b=b, c=c, outputs="out", device=dev.name)
    first, second = g(dev.tensor(a)), g(dev.tensor(a))
    assert str(first.device) == str(second.device) == dev.name
    assert first.data_ptr() != second.data_ptr() and first.data_ptr() % 64 == 0
    assert first.numpy().tobytes() == second.numpy().tobytes() == (a * 2 + b * 3 + c).tobytes()


def test_a_none_bound_beside_outputs_allocates_on_the_cpu():
    """A bound None is no tensor to take the outputs' device from: the bind read it as a null
    tensor and crashed (so: in a fresh process)."""
    from helpers import run_python

    code = """
import tvm, tvm_ffi, tvm_partial
f = tvm_ffi.convert(lambda *args: None)
g = tvm.get_global_func("runtime.PartialApply")(f, {0: None}, "k", ["s", "x", "out"], [[2, "float32", [[-1, 4]]]])
out = g(1)
print(out.shape, out.dtype, out.device)
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["(4,)", "float32", "cpu:0"], proc.stdout
