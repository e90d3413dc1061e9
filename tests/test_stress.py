# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Concurrency and leaks: many threads on one partial, binding while calling, flat memory."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import tvm

import tvm_partial
from helpers import affine4_ref, ints, run_json, tensor

THREADS = 16
CALLS = 10_000


def _hammer(call, expected, make_out):
    start = threading.Barrier(THREADS)
    failures = []

    def worker(seed):
        out = make_out()
        start.wait()
        for i in range(CALLS):
            call(out)
            if i % 97 == seed % 97:  # check often, from every thread, without drowning the calls
                if not np.array_equal(out.numpy(), expected):
                    failures.append(seed)
                out.copyfrom(np.zeros(out.shape, "float32"))
        call(out)
        if not np.array_equal(out.numpy(), expected):
            failures.append(seed)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_threads_on_partial_function_and_module(affine4):
    exe, _ = affine4
    a, b, c = (ints(16, seed=s) for s in range(3))
    expected = affine4_ref(a, b, c)
    ta = tensor(a)
    g = tvm_partial.partial(exe["main"], {1: b, 2: c})
    pm = tvm_partial.partial(exe, {1: b, 2: c})
    empty = lambda: tvm.runtime.empty((16,), "float32")  # noqa: E731
    assert _hammer(lambda out: g(ta, out), expected, empty) == []
    assert _hammer(lambda out: pm["main"](ta, out), expected, empty) == []


def test_binding_and_releasing_while_others_call(affine4):
    exe, _ = affine4
    f = exe["main"]
    a, b, c = (ints(16, seed=s) for s in range(3))
    expected = affine4_ref(a, b, c)
    shared = tvm_partial.partial(f, {1: b, 2: c})
    ta = tensor(a)
    stop = threading.Event()
    failures = []

    def caller():
        out = tvm.runtime.empty((16,), "float32")
        while not stop.is_set():
            shared(ta, out)
            if not np.array_equal(out.numpy(), expected):
                failures.append("shared")
            time.sleep(0)  # let a binder have the GIL: four spinning callers starved them (58 s)

    def binder(seed):
        out = tvm.runtime.empty((16,), "float32")
        for i in range(200):  # 4 x 200 binds under the callers' load
            bound = ints(16, seed=seed + i % 5)
            g = tvm_partial.partial(tvm_partial.partial(f, {1: bound}), {1: c})
            g(ta, out)
            if not np.array_equal(out.numpy(), affine4_ref(a, bound, c)):
                failures.append("binder")
            del g

    callers = [threading.Thread(target=caller) for _ in range(4)]
    binders = [threading.Thread(target=binder, args=(s,)) for s in range(4)]
    for t in callers + binders:
        t.start()
    for t in binders:
        t.join()
    stop.set()
    for t in callers:
        t.join()
    assert failures == []


@pytest.mark.slow  # a scale test: 100k binds and 1k loads in a fresh process, 8 s here
def test_memory_flat_over_100k_partials_and_1k_module_loads():
    """In a fresh process: RSS after warm-up vs after the loops; every bound tensor released."""
    result = run_json(
        """
        import gc, json, weakref
        import numpy as np, tvm, tvm_ffi, tvm_partial
        from tvm import te

        def rss_kib():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

        x = te.placeholder((4,), "float32", name="x"); w = te.placeholder((4,), "float32", name="w")
        exe = tvm.compile(te.create_prim_func([x, w, te.compute((4,), lambda i: x[i] * w[i], name="y")]),
                          target="llvm")
        f = exe["main"]
        w_arr = tvm.runtime.tensor(np.arange(4, dtype="float32"))
        def bind_loop(n):
            for i in range(n):
                g = tvm_partial.partial(f, {1: w_arr, 2: i, 3: "s"})
                tvm_partial.partial(g, {1: 1.5})
        blob = tvm_partial.save_to_bytes(tvm_partial.partial(exe, {1: np.ones(2**18, "float32")}))
        def load_loop(n):
            for _ in range(n):
                m = tvm_partial.load_from_bytes(blob, exe)
                m["main"]
        bind_loop(10_000); load_loop(100); gc.collect()
        before = rss_kib()
        bind_loop(100_000); load_loop(1_000); gc.collect()
        after = rss_kib()

        # Released: a numpy-backed tensor bound by reference dies with the last partial.
        storage = np.zeros(16 + 16, "float32")
        view = storage[(-storage.ctypes.data % 64) // 4:][:16]
        alive = weakref.ref(view)
        t = tvm_ffi.from_dlpack(view); del view
        for _ in range(1000):
            g = tvm_partial.partial(f, {1: t})
        del t, g; gc.collect()
        print(json.dumps({"before_kib": before, "after_kib": after, "released": alive() is None}))
        """
    )
    assert result["released"]
    # 100,000 partials and 1,000 loads of a 1 MiB constant: growth stays under 16 MiB.
    assert result["after_kib"] - result["before_kib"] < 16 * 1024, result
