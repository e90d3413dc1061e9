# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Disco: a ProcessSession whose workers load the same partial artifact and call it (docs/rpc.md).

TVM 0.27 imports ``tvm.runtime.disco`` before ``libtvm_runtime_extra`` (disco's C++ runtime) is
loaded, so after a plain ``import tvm`` it is None. Loading that library first works around it;
that must happen before ``import tvm``, hence a fresh interpreter. Skipped where the wheel has no
``libtvm_runtime_extra``.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from helpers import run_json

LIB = os.path.join(os.path.dirname(importlib.util.find_spec("tvm").origin), "lib")  # type: ignore[union-attr, arg-type]


@pytest.mark.skipif(
    not os.path.exists(os.path.join(LIB, "libtvm_runtime_extra.so")),
    reason="this TVM wheel has no libtvm_runtime_extra (no disco)",
)
def test_two_disco_workers_load_and_call_one_artifact(tmp_path):
    result = run_json(
        """
        import ctypes, json, os, sys
        import tvm_ffi  # loads libtvm_ffi, which the TVM libraries below link to
        for name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):  # before import tvm
            ctypes.CDLL(os.path.join(sys.argv[2], name), ctypes.RTLD_GLOBAL)
        import numpy as np, tvm, tvm_partial
        from tvm import te
        from tvm.runtime import disco

        a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
        out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
        exe = tvm.compile(te.create_prim_func([a, b, c, out]), target="llvm")
        A, B, C = (np.random.default_rng(k).integers(-8, 9, 16).astype("float32") for k in range(3))
        path = os.path.join(sys.argv[1], "disco.so")
        tvm_partial.export_library(tvm_partial.partial(exe, a=A, b=B, c=C, signature=[a, b, c, out]),
                                   path, self_contained=True)
        local = tvm.runtime.empty((16,), "float32")
        tvm_partial.load(path)["main"](local)

        sess = disco.ProcessSession(num_workers=2)
        load = sess.get_global_func("ffi.ModuleLoadFromFile")
        module = disco.DModule(load(path), sess)  # on every worker
        result = sess.empty((16,), "float32")    # one tensor per worker
        module["main"](result)
        worker0 = tvm.runtime.empty((16,), "float32")
        sess.copy_from_worker_0(worker0, result)
        sess._sync_all()
        worker1 = result.debug_get_from_remote(1)
        print(json.dumps({"local": local.numpy().tobytes().hex(),
                          "expected": (A * 2 + B * 3 + C).tobytes().hex(),
                          "worker0": worker0.numpy().tobytes().hex(),
                          "worker1": worker1.numpy().tobytes().hex()}))
        # Released, the session shuts its workers down once. Not sess.shutdown(): the session's
        # destructor writes to them again, and once they have exited that throws (Broken pipe)
        # and aborts the process at exit, as often as the workers win the race (TVM 0.27).
        del load, module, result, sess
        """,
        str(tmp_path),
        LIB,
    )
    assert result["local"] == result["expected"]
    assert result["worker0"] == result["local"]
    assert result["worker1"] == result["local"]
