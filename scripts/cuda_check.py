# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The GPU acceptance run: every feature of tvm-partial on CUDA, each result compared bit for bit
with numpy's (small integer values keep every float sum exact). One line per check, a summary,
and with --json the same as a JSON document. Exit status 0 when no check failed.

On a lent GPU machine, from the repository root, one command builds and installs tvm-partial
(offline, into the Python there), runs these checks, the chunked copy's tests and the load
benchmark (1 GiB and 8 GiB), and leaves logs and JSON under OUT: about 6 minutes expected, each
step time-limited so that the whole stays under 10 (see the script):

    scripts/gpu_acceptance.sh OUT

By hand:

    python scripts/cuda_check.py                    # every check on cuda:0 (--device cuda)
    python scripts/cuda_check.py --cpu-dry-run      # the same code on llvm / cpu:0 (= --device cpu)
    python scripts/cuda_check.py --only export_weights_file --json out.json
    python scripts/cuda_check.py --list             # the checks, and which run in the dry run

The dry run runs every check that can run on a CPU through the same code, with target llvm and
device cpu:0: what CI can test without a GPU (tests/test_cuda_check.py). It says nothing about
CUDA, and its output says so on every line. A check that cannot run on a CPU (a missing device
ordinal) is listed as not run. A check whose tool is missing (torch for the by-reference binding)
is skipped with the reason. Each check runs on its own: an exception is reported as that check's
error and the run goes on.

TVM compiles CUDA kernels when they are built, with NVRTC through cuda-python by default; where
cuda-python is missing and nvcc is on PATH this script (and every process it starts) uses nvcc
(TVM_CUDA_COMPILE_MODE=nvcc).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import te

import tvm_partial

ROOT = Path(__file__).resolve().parent.parent
N = 1024  # elements of the affine kernel's vectors
MISSING_ORDINAL = 7  # a device that a one-GPU machine does not have


class Failed(AssertionError):
    """A result that differs from what it must be: the check fails, with this message."""


class Skipped(Exception):
    """The check cannot run here (a tool is missing): skipped, with this reason."""


@dataclass
class Platform:
    """Where the checks run: cuda:0 with a CUDA target, or cpu:0 with llvm (the dry run)."""

    kind: str  # "cuda" or "cpu"
    dev: Any
    target: Any
    work: Path

    @property
    def dry_run(self) -> bool:
        return self.kind == "cpu"

    @property
    def name(self) -> str:
        return str(self.dev)  # "cuda:0"

    def tensor(self, array: np.ndarray) -> Any:
        return tvm.runtime.tensor(array, device=self.dev)

    def zeros(self, shape, dtype: str = "float32") -> Any:
        return self.tensor(np.zeros(shape, dtype))


@dataclass
class Check:
    name: str
    run: Callable[[Platform], str]
    doc: str
    on_cpu: str | None  # None: runs in the dry run; else why not


CHECKS: list[Check] = []


def check(name: str, on_cpu: str | None = None) -> Callable:
    """Register the decorated function as check `name`, run in the order registered. It returns
    a detail line on success, raises Failed or Skipped; any other exception is its error."""

    def register(fn: Callable[[Platform], str]) -> Callable[[Platform], str]:
        summary = " ".join((fn.__doc__ or "").split()).split(". ")[0].rstrip(".")  # its first sentence
        CHECKS.append(Check(name, fn, summary, on_cpu))
        return fn

    return register


def expect(ok: Any, message: str) -> None:
    if not ok:
        raise Failed(message)


def equal(got: Any, want: np.ndarray, what: str) -> None:
    """`got` (a tensor anywhere, or an array) equals `want` bit for bit: same dtype and shape."""
    array = got if isinstance(got, np.ndarray) else got.numpy()
    expect(array.dtype == want.dtype and array.shape == want.shape, f"{what}: {array.dtype}{array.shape}")
    if array.tobytes() != want.tobytes():
        bad = int(np.count_nonzero(array.view(np.uint8) != want.view(np.uint8)))
        raise Failed(f"{what} differs from numpy's ({bad} bytes differ)")


def on_device(tensor: Any, p: Platform, what: str) -> None:
    expect(str(tensor.device) == p.name, f"{what} is on {tensor.device}, not {p.name}")


# --- what the checks compute ------------------------------------------------------------------


def ints(shape, seed: int, low: int = -8, high: int = 9, dtype: str = "float32") -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, shape).astype(dtype)


def affine_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    a, b, c = ints(N, seed), ints(N, seed + 100), ints(N, seed + 200)
    return {"a": a, "b": b, "c": c, "out": a * 2 + b * 3 + c}


def _schedule_1d(p: Platform, func: Any, block: str, split: int) -> Any:
    """One loop split in two: on CUDA bound to blockIdx.x / threadIdx.x (TVM's CUDA codegen needs
    every loop bound), on the CPU the outer loop parallel."""
    sch = tvm.s_tir.Schedule(func)
    get = sch.get_sblock if hasattr(sch, "get_sblock") else sch.get_block
    (loop,) = sch.get_loops(get(block))
    outer, inner = sch.split(loop, factors=[None, split])
    if p.kind == "cuda":
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")
    else:
        sch.parallel(outer)
    return sch.mod


def build_affine(p: Platform) -> tuple[Any, list[Any]]:
    """out = 2a + 3b + c over N float32, compiled for the platform -> (executable, TE tensors)."""
    a, b, c = (te.placeholder((N,), "float32", name=x) for x in "abc")
    out = te.compute((N,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    tensors = [a, b, c, out]
    return tvm.compile(_schedule_1d(p, te.create_prim_func(tensors), "out", 128), target=p.target), tensors


def build_last(p: Platform, n: int) -> Any:
    """out[0] = x[0] * w[n - 1] + b[0]: a first result that reads one weight of n."""
    x, w, b = (te.placeholder(s, "float32", name=k) for k, s in (("x", (1,)), ("w", (n,)), ("b", (1,))))
    out = te.compute((1,), lambda i: x[i] * w[n - 1] + b[i], name="out")
    return tvm.compile(_schedule_1d(p, te.create_prim_func([x, w, b, out]), "out", 1), target=p.target)


def build_mlp(p: Platform) -> tuple[Any, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """A frontend.nn MLP compiled for the platform -> (executable, weights, x, numpy's y)."""
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 4, bias=False)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    mod, _ = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    params = {
        "fc1.weight": ints((16, 8), 1, -3, 4),
        "fc1.bias": ints(16, 2, -3, 4),
        "fc2.weight": ints((4, 16), 3, -3, 4),
    }
    x = ints((2, 8), 4, -3, 4)
    y = np.maximum(x @ params["fc1.weight"].T + params["fc1.bias"], 0) @ params["fc2.weight"].T
    return tvm.compile(mod, target=p.target), params, x, y.astype("float32")


def save_arrays(p: Platform, name: str, **arrays: np.ndarray) -> str:
    path = p.work / f"{name}.npz"
    np.savez(path, **arrays)
    return str(path)


# A fresh process: loads what the parent exported and reports as JSON (argv[1]: the device).
_CHILD = """
import json, sys
import numpy as np, tvm, tvm_ffi, tvm_partial
dev = tvm_ffi.device(sys.argv[1])

def same(t, want):
    return bool(np.array_equal(t.numpy(), want) and t.numpy().dtype == want.dtype)

def put(array):
    return tvm.runtime.tensor(array, device=dev)
"""


def fresh_process(p: Platform, code: str, *args: Any, timeout: int = 300) -> Any:
    """Run `code` after _CHILD in a new interpreter; -> the JSON it prints last."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD + textwrap.dedent(code), p.name, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise Failed(f"the fresh process failed ({proc.returncode}): {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- the checks, in order ---------------------------------------------------------------------


@check("device")
def device_present(p: Platform) -> str:
    """The device exists; its name, compute capability and memory."""
    expect(p.dev.exist, f"{p.name} does not exist here")
    if p.kind == "cuda":
        return f"{p.name}: {p.dev.device_name}, sm_{p.dev.compute_version.replace('.', '')}, {p.dev.total_global_memory / 2**30:.0f} GiB"
    return f"{p.name}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores"


@check("bind_host_arrays")
def bind_host_arrays(p: Platform) -> str:
    """numpy arrays bound with device= land there, 64-byte aligned, with their bytes."""
    echo = tvm_ffi.convert(lambda *args: args[1])
    x = affine_inputs()
    g = tvm_partial.partial(echo, {1: x["b"]}, device=p.name)
    held = tvm_partial.bindings(g)[1]
    on_device(held, p, "the bound array")
    expect(held.data_ptr() % 64 == 0, f"the bound tensor is at {held.data_ptr():#x}, not 64-byte aligned")
    equal(held, x["b"], "the bound tensor")
    equal(g(0), x["b"], "what the partial passes on")
    return f"numpy -> {held.device}, aligned, bytes equal"


@check("bind_dlpack_by_reference")
def bind_dlpack_by_reference(p: Platform) -> str:
    """A torch tensor on the device, seen through DLPack (tvm_ffi.from_dlpack), binds by
    reference (no copy) and the kernel reads it; passed as is, it is copied onto the device."""
    try:
        import torch
    except ImportError:
        raise Skipped("torch is not installed") from None
    if p.kind == "cuda" and not torch.cuda.is_available():
        raise Skipped(f"torch {torch.__version__} has no CUDA here")
    x = affine_inputs()
    b = torch.tensor(x["b"], device="cuda" if p.kind == "cuda" else "cpu")  # torch's own allocation
    expect(b.data_ptr() % 64 == 0, "torch gave a tensor that is not 64-byte aligned (it would be copied)")
    exe, _ = build_affine(p)
    pf = tvm_partial.partial(exe["main"], {1: tvm_ffi.from_dlpack(b), 2: p.tensor(x["c"])})
    held = tvm_partial.bindings(pf)[1]
    expect(held.data_ptr() == b.data_ptr(), "the DLPack view of the torch tensor was copied, not bound")
    on_device(held, p, "the bound torch tensor")
    out = p.zeros(N)
    pf(p.tensor(x["a"]), out)
    equal(out, x["out"], "the kernel's result")
    copied = tvm_partial.partial(exe["main"], {1: b, 2: p.tensor(x["c"])})  # a foreign tensor: a copy
    b.mul_(2)  # by reference: the kernel sees the change; the copy does not
    if p.kind == "cuda":
        torch.cuda.synchronize()
    pf(p.tensor(x["a"]), out)
    equal(out, x["a"] * 2 + x["b"] * 6 + x["c"], "the result after changing the torch tensor in place")
    copied(p.tensor(x["a"]), out)
    equal(out, x["out"], "the result of the partial that bound a copy")
    return f"torch {torch.__version__} on {b.device}: same pointer; the kernel sees in-place changes"


@check("kernel_partial_function")
def kernel_partial_function(p: Platform) -> str:
    """A compiled kernel (TE, thread-bound on CUDA) through a partial function."""
    x = affine_inputs()
    exe, _ = build_affine(p)
    direct = p.zeros(N)
    exe["main"](p.tensor(x["a"]), p.tensor(x["b"]), p.tensor(x["c"]), direct)
    equal(direct, x["out"], "the direct call")
    pf = tvm_partial.partial(exe["main"], {1: x["b"], 2: x["c"]}, device=p.name)
    out = p.zeros(N)
    pf(p.tensor(x["a"]), out)
    equal(out, x["out"], "the partial function's result")
    return f"partial(main, {{1: b, 2: c}}) on {p.name} == direct call == numpy"


@check("kernel_partial_module")
def kernel_partial_module(p: Platform) -> str:
    """The same kernel through a partial module, bound by name."""
    x = affine_inputs()
    exe, tensors = build_affine(p)
    pm = tvm_partial.partial(exe, signature=tensors, b=x["b"], c=x["c"], device=p.name)
    for name, call in (("pm(a, out)", pm), ("pm['main'](a, out)", pm["main"])):
        out = p.zeros(N)
        call(p.tensor(x["a"]), out)
        equal(out, x["out"], name)
    return "pm(a, out) and pm['main'](a, out) == numpy"


@check("outputs_on_device")
def outputs_on_device(p: Platform) -> str:
    """outputs= allocates the result on the device of the bound tensors, per call."""
    x = affine_inputs()
    exe, tensors = build_affine(p)
    g = tvm_partial.partial(exe, signature=tensors, b=x["b"], c=x["c"], outputs="out", device=p.name)
    first, second = g(p.tensor(x["a"])), g(p.tensor(x["a"]))
    on_device(first, p, "the returned output")
    expect(first.data_ptr() != second.data_ptr(), "two calls returned the same allocation")
    expect(first.data_ptr() % 64 == 0, "the returned output is not 64-byte aligned")
    equal(first, x["out"], "the returned output")
    return f"out = g(a) allocated on {first.device}, a new one per call"


@check("save_to_bytes_roundtrip")
def save_to_bytes_roundtrip(p: Platform) -> str:
    """save_to_bytes records the device; load_from_bytes puts the tensors back there."""
    x = affine_inputs()
    exe, tensors = build_affine(p)
    pm = tvm_partial.partial(exe, signature=tensors, b=x["b"], c=x["c"], device=p.name)
    blob = tvm_partial.save_to_bytes(pm)
    recorded = [
        str(b["device"]) for b in tvm_partial._ffi_api.DescribeBytes(blob)["functions"][0]["bindings"]
    ]
    expect(recorded == [p.name, p.name], f"the bytes record {recorded}")
    loaded = tvm_partial.load_from_bytes(blob, exe.mod)
    back = tvm_partial.bindings(loaded)["main"]
    for i, want in ((1, x["b"]), (2, x["c"])):
        on_device(back[i], p, f"loaded tensor {i}")
        equal(back[i], want, f"loaded tensor {i}")
    out = p.zeros(N)
    loaded(p.tensor(x["a"]), out)
    equal(out, x["out"], "the reloaded module's result")
    expect(tvm_partial.save_to_bytes(loaded) == blob, "re-saving gave other bytes")
    return f"{len(blob)} bytes record {p.name}; reloaded there; re-saved identically"


# argv[2]: the artifact; then pairs of (arrays, weights file to load in place of its own or "").
_RELOAD = """
path, runs = sys.argv[2], []
for npz, weights_file in zip(sys.argv[3::2], sys.argv[4::2]):
    arrays = np.load(npz)
    m = tvm_partial.load(path, **({"weights_file": weights_file} if weights_file else {}))
    bound = tvm_partial.bindings(m)["main"]
    out = put(np.zeros_like(arrays["out"]))
    m(put(arrays["a"]), out)
    runs.append({"devices": sorted({str(t.device) for t in bound.values()}),
                 "bound_same": same(bound[1], arrays["b"]) and same(bound[2], arrays["c"]),
                 "result_same": same(out, arrays["out"])})
print(json.dumps(runs))
"""


def _export_and_reload(p: Platform, name: str, swap: bool = False, **export: Any) -> str:
    x = affine_inputs()
    exe, tensors = build_affine(p)
    pm = tvm_partial.partial(exe, signature=tensors, b=x["b"], c=x["c"], device=p.name)
    folder = p.work / name
    folder.mkdir()
    if export.get("weights_file"):
        export["weights_file"] = folder / "weights.safetensors"
    path = folder / f"{name}.so"
    tvm_partial.export_library(pm, path, **export)
    report = tvm_partial.verify(path)
    expect(report["intact"], f"verify says the artifact is damaged: {report}")
    devices = {str(b["device"]) for f in tvm_partial.inspect(path)["functions"] for b in f["bindings"]}
    expect(devices == {p.name}, f"inspect names devices {devices}")
    runs = [("its own weights", save_arrays(p, name, **x), "")]
    if swap:  # another weight set for the same code, bound at load
        y = affine_inputs(seed=1)
        other = folder / "v2.safetensors"
        tvm_partial.save_weights(tvm_partial.rebind(pm, b=y["b"], c=y["c"]), other)
        arrays = {**y, "a": x["a"], "out": x["a"] * 2 + y["b"] * 3 + y["c"]}
        runs.append(
            ("weights_file=v2.safetensors at load", save_arrays(p, f"{name}_v2", **arrays), str(other))
        )
    got = fresh_process(p, _RELOAD, path, *(arg for _, npz, weights in runs for arg in (npz, weights)))
    expect(len(got) == len(runs), f"the fresh process loaded {len(got)} times, not {len(runs)}")
    for (label, _, _), run in zip(runs, got):
        expect(run["devices"] == [p.name], f"{label}: the loaded tensors are on {run['devices']}")
        expect(run["bound_same"], f"{label}: the loaded tensors differ from the exported ones")
        expect(run["result_same"], f"{label}: the reloaded artifact's result differs from numpy's")
    size = path.stat().st_size + sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    return (
        f"{size} bytes; verify intact; a fresh process loads the tensors onto {p.name}; result == numpy"
        + ("; another weights file swapped in at load" if swap else "")
    )


@check("export_inline")
def export_inline(p: Platform) -> str:
    """export_library(zero_copy=False), loaded in a fresh process."""
    return _export_and_reload(p, "inline", zero_copy=False)


@check("export_zero_copy")
def export_zero_copy(p: Platform) -> str:
    """export_library(zero_copy=True) (payloads appended to the library), in a fresh process."""
    return _export_and_reload(p, "zero_copy", zero_copy=True)


@check("export_weights_file")
def export_weights_file(p: Platform) -> str:
    """export_library(weights_file=...) and load(path, weights_file=other), in a fresh process."""
    return _export_and_reload(p, "weights_file", swap=True, weights_file=True)


_LOAD_LARGE = """
import hashlib, time
path, n, digest = sys.argv[2], int(sys.argv[3]), sys.argv[4]
x, out = put(np.full((1,), 2.0, "float32")), put(np.zeros((1,), "float32"))
t0 = time.perf_counter()
m = tvm.runtime.load_module(path)
m(x, out)
value = float(out.numpy()[0])
seconds = time.perf_counter() - t0
w = tvm_partial.bindings(m)["main"][1]
print(json.dumps({"device": str(w.device), "value": value, "seconds": seconds,
                  "sha256": hashlib.sha256(w.numpy().tobytes()).hexdigest()}))
"""


@check("load_large_weights")
def load_large_weights(p: Platform) -> str:
    """96 MiB + 12 bytes of weights (several pieces of the chunked copy), zero-copy and in a
    weights file, loaded in a fresh process: the same bytes on the device, and the first result."""
    import hashlib

    n = (96 << 20) // 4 + 3
    w = np.tile(ints(1_000_003, 5), n // 1_000_003 + 1)[:n]
    w[-1] = 3.0
    digest = hashlib.sha256(w.tobytes()).hexdigest()
    pm = tvm_partial.partial(build_last(p, n), {1: w, 2: np.ones(1, "float32")}, device=p.name)
    del w
    details = []
    for label, export in (("zero-copy", {"zero_copy": True}), ("weights file", {"weights_file": True})):
        folder = p.work / f"large_{label.replace(' ', '_')}"
        folder.mkdir()
        if export.get("weights_file"):
            export = {"weights_file": folder / "w.safetensors"}
        path = folder / "large.so"
        tvm_partial.export_library(pm, path, **export)
        got = fresh_process(p, _LOAD_LARGE, path, n, digest)
        expect(got["device"] == p.name, f"{label}: the weights were loaded onto {got['device']}")
        expect(got["sha256"] == digest, f"{label}: the loaded weights differ from the exported ones")
        expect(got["value"] == 7.0, f"{label}: the first result is {got['value']}, not 7.0")
        details.append(f"{label} {got['seconds'] * 1e3:.0f} ms to first result")
        shutil.rmtree(folder)
    return "; ".join(details) + " (timed for information; benchmarks/bench_gpu_load.py measures)"


_RELAX = """
path, arrays = sys.argv[2], np.load(sys.argv[3])
m = tvm.runtime.load_module(path)
y = m["forward"](put(arrays["x"]))
print(json.dumps({"device": str(y.device), "same": same(y, arrays["y"])}))
"""


@check("relax_nn_model")
def relax_nn_model(p: Platform) -> str:
    """A frontend.nn model bound with device=, == the direct VM call and numpy, exported and
    reloaded in a fresh process."""
    from tvm import relax

    exe, params, x, y = build_mlp(p)
    vm = relax.VirtualMachine(exe, p.dev)
    direct = vm["forward"](p.tensor(x), *(p.tensor(v) for v in params.values()))
    equal(direct, y, "the direct VM call")
    pm = tvm_partial.partial(exe, function="forward", device=p.dev, **params)
    got = pm["forward"](p.tensor(x))
    on_device(got, p, "the partial's result")
    equal(got, y, "the partial's result")
    path = p.work / "mlp.so"
    tvm_partial.export_library(pm, path)
    reloaded = fresh_process(p, _RELAX, path, save_arrays(p, "mlp", x=x, y=y))
    expect(reloaded["device"] == p.name, f"the reloaded model computes on {reloaded['device']}")
    expect(reloaded["same"], "the reloaded model's result differs from numpy's")
    return f"bound on {p.name}: == VM call == numpy; reloaded in a fresh process, same result"


@check("cpp_deploy")
def cpp_deploy(p: Platform) -> str:
    """examples/cpp_deploy (run.py --device): every C++ mode against numpy's result."""
    if shutil.which("cmake") is None:
        raise Skipped("cmake is not on PATH")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "cpp_deploy" / "run.py"),
            "--device",
            p.kind,
            "--build-dir",
            str(p.work / "cpp_deploy"),
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("[ok]", "[FAIL]"))]
    failed = [line[len("[FAIL] ") :] for line in lines if line.startswith("[FAIL]")]
    if proc.returncode != 0 or failed or not lines:
        reason = "; ".join(failed) or (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise Failed(f"run.py exited {proc.returncode}: {reason}")
    return f"{len(lines)} C++ checks passed (deploy and deploy_ffi_only, every mode)"


_TWO = """
one, two, arrays = sys.argv[2], sys.argv[3], np.load(sys.argv[4])
a = put(arrays["a"])
first, second = tvm.runtime.load_module(one), tvm.runtime.load_module(two)
results = []
for m, want in ((first, "out1"), (second, "out2"), (first, "out1")):  # alternately
    out = put(np.zeros_like(arrays["a"]))
    m(a, out)
    results.append(same(out, arrays[want]))
print(json.dumps({"first": [results[0], results[2]], "second": results[1]}))
"""


@check("two_artifacts")
def two_artifacts(p: Platform) -> str:
    """Two versions of one artifact (same file name, other weights) in one process: each
    computes with its own weights."""
    x, y = affine_inputs(0), affine_inputs(1)
    exe, tensors = build_affine(p)
    paths = []
    for i, (arrays, export) in enumerate(((x, {"zero_copy": True}), (y, {"zero_copy": False}))):
        folder = p.work / f"version{i + 1}"
        folder.mkdir()
        pm = tvm_partial.partial(exe, signature=tensors, b=arrays["b"], c=arrays["c"], device=p.name)
        tvm_partial.export_library(pm, folder / "model.so", **export)
        paths.append(folder / "model.so")
    out2 = x["a"] * 2 + y["b"] * 3 + y["c"]
    got = fresh_process(p, _TWO, *paths, save_arrays(p, "two", a=x["a"], out1=x["out"], out2=out2))
    expect(all(got["first"]), "the first artifact computed with other weights than its own")
    expect(got["second"], "the second artifact computed with other weights than its own")
    return "version1/model.so and version2/model.so loaded together: each result == numpy's with its weights"


@check("missing_device", on_cpu="a CPU has no device ordinal to be missing")
def missing_device(p: Platform) -> str:
    """Binding onto a device this machine lacks (cuda:7 on a one-GPU machine) is refused with an
    error that names it, for a kernel and for a Relax model."""
    ordinal = MISSING_ORDINAL
    while tvm.device(p.kind, ordinal).exist:
        ordinal += 1
    missing = f"{p.kind}:{ordinal}"
    echo = tvm_ffi.convert(lambda *args: args[1])
    exe, params, _, _ = build_mlp(p)
    attempts = {
        "kernel": lambda: tvm_partial.partial(echo, {1: np.ones(4, "float32")}, device=missing),
        "relax": lambda: tvm_partial.partial(
            exe, function="forward", device=tvm.device(p.kind, ordinal), **params
        ),
    }
    messages = []
    for what, attempt in attempts.items():
        try:
            attempt()
        except Exception as err:  # any kind of error, as long as it names the device
            text = f"{type(err).__name__}: {err}".splitlines()[0][:300]
            expect(missing in text, f"{what}: the error does not name {missing}: {text}")
            messages.append(f"{what}: {text}")
        else:
            raise Failed(f"{what}: binding onto {missing} was not refused")
    return " | ".join(messages)


# --- running them -----------------------------------------------------------------------------


def make_platform(kind: str, work: Path) -> Platform:
    if kind == "cpu":
        return Platform("cpu", tvm.cpu(0), tvm.target.Target("llvm"), work)
    dev = tvm.device(kind, 0)
    if not dev.exist:
        target = (
            tvm.target.Target({"kind": kind, "arch": "sm_90"}) if kind == "cuda" else tvm.target.Target(kind)
        )
    else:
        target = tvm.target.Target.from_device(dev)
    return Platform(kind, dev, target, work)


def run_checks(p: Platform, selected: list[Check]) -> list[dict]:
    label = "cpu-dry-run" if p.dry_run else p.kind
    results = []
    for c in selected:
        t0 = time.perf_counter()
        if p.dry_run and c.on_cpu:
            status, detail = "not run", c.on_cpu
        else:
            try:
                status, detail = "ok", c.run(p)
            except Failed as err:
                status, detail = "FAIL", str(err)
            except Skipped as err:
                status, detail = "skip", str(err)
            except Exception as err:  # one check's error never stops the run
                status = "ERROR"
                frames = traceback.extract_tb(err.__traceback__)
                where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
                detail = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}{where}"
        seconds = time.perf_counter() - t0
        results.append({"name": c.name, "status": status, "detail": detail, "seconds": round(seconds, 3)})
        print(f"[{label}] {status:>7}  {c.name}: {detail} ({seconds:.1f} s)", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--device", default="cuda", choices=["cuda", "cpu"], help="where to run (default: cuda)"
    )
    parser.add_argument("--cpu-dry-run", action="store_true", help="the same as --device cpu")
    parser.add_argument("--only", action="append", metavar="NAME", help="run this check only (repeatable)")
    parser.add_argument("--skip", action="append", metavar="NAME", default=[], help="leave this check out")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results there as JSON")
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    args = parser.parse_args(argv)
    kind = "cpu" if args.cpu_dry_run else args.device
    names = [c.name for c in CHECKS]
    if args.list:
        for c in CHECKS:
            print(f"{c.name:26} {c.doc}" + (f" [not in the CPU dry run: {c.on_cpu}]" if c.on_cpu else ""))
        return 0
    unknown = sorted((set(args.only or []) | set(args.skip)) - set(names))
    if unknown:
        parser.error(f"no check named {', '.join(unknown)}; the checks: {', '.join(names)}")
    selected = [c for c in CHECKS if (not args.only or c.name in args.only) and c.name not in args.skip]

    if kind == "cuda" and importlib.util.find_spec("cuda") is None and shutil.which("nvcc"):
        os.environ.setdefault(
            "TVM_CUDA_COMPILE_MODE", "nvcc"
        )  # before anything compiles; children inherit it
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cuda_check_") as work:
        p = make_platform(kind, Path(work))
        mode = "cpu-dry-run" if p.dry_run else "device"
        if p.dry_run:
            print(
                "CPU DRY RUN: the checks' code on cpu:0 with target llvm, as on CUDA; this says nothing about CUDA.",
                flush=True,
            )
        print(
            f"tvm {tvm.__version__}, tvm-ffi {tvm_ffi.__version__}, tvm-partial {tvm_partial.__version__}, "
            f"Python {platform.python_version()}; device {p.name}, target {p.target.kind.name}"
            + (
                f", CUDA compiler {os.environ.get('TVM_CUDA_COMPILE_MODE', 'nvrtc')}"
                if kind == "cuda"
                else ""
            ),
            flush=True,
        )
        results = run_checks(p, selected)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "FAIL", "ERROR", "skip", "not run")}
    seconds = time.perf_counter() - t0
    summary = (
        f"{'CPU dry run' if p.dry_run else p.name}: {counts['ok']} passed, {counts['FAIL']} failed, "
        f"{counts['ERROR']} errors, {counts['skip']} skipped, {counts['not run']} not run on a CPU "
        f"({seconds:.0f} s)"
    )
    print(summary)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "mode": mode,
            "device": p.name,
            "target": str(p.target),
            "versions": {
                "tvm": tvm.__version__,
                "tvm_ffi": tvm_ffi.__version__,
                "tvm_partial": tvm_partial.__version__,
            },
            "checks": results,
            "counts": counts,
            "seconds": round(seconds, 1),
            "summary": summary,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0 if counts["FAIL"] == counts["ERROR"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
