# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""CUDA checks, for a machine with an NVIDIA GPU (CI has none; run by hand, results in the notes).

    python scripts/cuda_check.py [FOLDER]

FOLDER holds `cuda_affine.so` (out = 2a + 3b + c over 1024 float32, compiled for CUDA with
`scripts/make_cuda_artifacts.py`) and, where the full `tvm` package is not installed, TVM's
`libtvm_runtime.so` and `libtvm_runtime_cuda.so`. Checks: binding host arrays onto the GPU,
binding a CUDA DLPack tensor by reference, a real kernel called through a partial function and a
partial module, and CUDA-bound constants through save/load (they come back on cuda:0).
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys

import numpy as np
import tvm_ffi

FOLDER = sys.argv[1] if len(sys.argv) > 1 else "gpu"


def _load_runtime() -> None:
    try:
        import tvm  # noqa: F401  (the full package brings its CUDA runtime)

        return
    except ImportError:
        pass
    for pattern in (
        "/usr/local/cuda/lib64/libcudart.so.13*",
        "/usr/local/cuda*/lib*/libcudart.so.13*",
        *[p + "/nvidia/*/lib/libcudart.so.13*" for p in sys.path if p],
    ):
        found = sorted(glob.glob(pattern))
        if found:
            ctypes.CDLL(found[0], ctypes.RTLD_GLOBAL)
            break
    for name in ("libtvm_runtime.so", "libtvm_runtime_cuda.so"):
        ctypes.CDLL(os.path.join(FOLDER, name), ctypes.RTLD_GLOBAL)


_load_runtime()


def _register_cuda_compiler() -> None:
    """TVM keeps CUDA kernels as source and compiles them when the library loads; without the
    tvm package, register that compiler hook with nvcc."""
    if tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True) is not None:
        return
    import subprocess
    import tempfile

    @tvm_ffi.register_global_func("tvm_callback_cuda_compile")
    def _compile(code, *_):
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.fatbin")
            with open(src, "w") as f:
                f.write(code)
            subprocess.run(["nvcc", "--fatbin", "-O3", "-arch=sm_90", "-o", out, src], check=True)
            with open(out, "rb") as f:
                return bytearray(f.read())


_register_cuda_compiler()
import tvm_partial  # noqa: E402
from tvm_partial import _lib  # noqa: E402

CUDA = tvm_ffi.device("cuda", 0)
copy_to_bytes = tvm_ffi.get_global_func("runtime.TVMTensorCopyToBytes")
results = {}


def host(t) -> np.ndarray:
    out = np.empty(tuple(t.shape), str(t.dtype))
    copy_to_bytes(t, ctypes.c_void_p(out.ctypes.data), out.nbytes)
    return out


def check(name, ok) -> None:
    results[name] = bool(ok)
    print(f"[{'ok' if ok else 'FAIL'}] {name}", flush=True)


exists = tvm_ffi.get_global_func("runtime.GetDeviceAttr")(2, 0, 0)
check("cuda:0 exists", exists)
rng = np.random.default_rng(0)
a, b, c = (rng.integers(-8, 9, 1024).astype("float32") for _ in range(3))
expected = a * 2 + b * 3 + c

echo = tvm_ffi.convert(lambda *args: args[1])
g = tvm_partial.partial(echo, {1: b}, device="cuda")
held = tvm_partial.bindings(g)[1]
check("numpy bound on cuda:0", str(held.device) == "cuda:0" and np.array_equal(host(held), b))
check("bound CUDA tensor 64-byte aligned", held.data_ptr() % 64 == 0)

try:
    import torch

    w = torch.arange(1024, dtype=torch.float32, device="cuda")
    by_ref = tvm_ffi.from_dlpack(w)
    g2 = tvm_partial.partial(echo, {1: by_ref})
    check("CUDA DLPack tensor bound by reference", tvm_partial.bindings(g2)[1].data_ptr() == w.data_ptr())
except ImportError:
    print("torch not installed: by-reference check skipped")

lib = tvm_ffi.load_module(os.path.join(FOLDER, "cuda_affine.so"))
da, out = (_lib.aligned_copy(x, CUDA) for x in (a, np.zeros(1024, "float32")))
f = lib["main"]
pf = tvm_partial.partial(f, {1: b, 2: c}, device="cuda")
pf(da, out)
check("CUDA kernel through a partial function == numpy (bitwise)", np.array_equal(host(out), expected))

pm = tvm_partial.partial(lib, {1: b, 2: c}, device="cuda")
out2 = _lib.aligned_copy(np.zeros(1024, "float32"), CUDA)
pm(da, out2)
check("CUDA kernel through a partial module == numpy (bitwise)", np.array_equal(host(out2), expected))

blob = tvm_partial.save_to_bytes(pm)
info = _lib.describe_bytes(blob)
check(
    "saved bindings record cuda:0",
    [str(x["device"]) for x in info["functions"][0]["bindings"]] == ["cuda:0", "cuda:0"],
)
loaded = tvm_partial.load_from_bytes(blob, lib)
back = tvm_partial.bindings(loaded)["main"]
check(
    "loaded constants back on cuda:0 with the same bytes",
    all(str(back[i].device) == "cuda:0" and np.array_equal(host(back[i]), v) for i, v in ((1, b), (2, c))),
)
out3 = _lib.aligned_copy(np.zeros(1024, "float32"), CUDA)
loaded(da, out3)
check("reloaded partial module == numpy (bitwise)", np.array_equal(host(out3), expected))
check("re-saving gives identical bytes", tvm_partial.save_to_bytes(loaded) == blob)

print(f"{sum(results.values())} passed, {len(results) - sum(results.values())} failed")
sys.exit(0 if all(results.values()) else 1)
