# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Deployment: self-contained artifacts, loading where the extension is not registered, and the
C++ example (examples/cpp_deploy/run.py). Whatever loads an artifact runs in a fresh process."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import te
from tvm.support import cc

import tvm_partial
from helpers import Device, ints, run_json, without_sanitizer
from tvm_partial import _fixtures as fixtures
from tvm_partial import config
from tvm_partial.artifact import export

ROOT = Path(__file__).resolve().parent.parent
NO_AUTOLOAD = {"TVM_DEVICE_BACKEND_AUTOLOAD": "0"}
LOADER_MISSING = (
    "Library binary was created using {partial_apply} but a loader of that name is not registered. "
    "Make sure to have runtime that registers ffi.Module.load_from_bytes.partial_apply"
)

# Loads artifacts from the folder in argv[1] and compares each result with numpy's, bitwise.
PRELUDE = """
import json, os, sys
import numpy as np
import tvm
folder = sys.argv[1]
data = tvm.runtime.tensor(np.load(os.path.join(folder, "data.npy")))

def call(fn, expected):
    out = tvm.runtime.empty((1, 8, 30, 30), "float32")
    fn(data, out)
    return bool(np.array_equal(out.numpy(), np.load(os.path.join(folder, expected))))

def load(name):
    return tvm.runtime.load_module(os.path.join(folder, name))
"""


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    """The demo's conv2d + bias with a parallel loop, exported with the weights of seed 0 (a.so,
    a_sc.so self-contained) and of seed 1 (b_sc.so), with the data and both results as .npy."""
    folder = tmp_path_factory.mktemp("deploy")
    tensors = fixtures.conv2d_bias_tensors()
    sch = tvm.s_tir.Schedule(te.create_prim_func(tensors))
    sch.parallel(sch.get_loops(sch.get_sblock("conv"))[1])
    exe = tvm.compile(sch.mod, target="llvm")
    a, b = fixtures.sample_inputs(0), fixtures.sample_inputs(1)
    pm_a = tvm_partial.partial(exe, signature=tensors, weights=a["weights"], bias=a["bias"])
    pm_b = tvm_partial.partial(exe, signature=tensors, weights=b["weights"], bias=b["bias"])
    tvm_partial.export_library(pm_a, folder / "a.so")
    tvm_partial.export_library(pm_a, folder / "a_sc.so", self_contained=True)
    tvm_partial.export_library(pm_b, folder / "b_sc.so", self_contained=True)
    np.save(folder / "data.npy", a["data"])
    np.save(folder / "expected_a.npy", fixtures.reference(**a))
    np.save(folder / "expected_b.npy", fixtures.reference(a["data"], b["weights"], b["bias"]))
    return folder


def test_embed_object_comes_from_the_installed_distribution():
    obj = export.embed_object()
    assert obj.name == "tvm_partial_embed.o" and obj.parent == config.libdir()
    assert obj.read_bytes()[:4] == b"\x7fELF"


def test_default_export_stays_lean(artifacts):
    loader_name = b"ffi.Module.load_from_bytes.partial_apply"
    default, self_contained = (artifacts / "a.so").read_bytes(), (artifacts / "a_sc.so").read_bytes()
    assert loader_name not in default
    assert loader_name in self_contained
    assert len(default) < 100_000 < len(self_contained)


def test_self_contained_artifact_inspects_like_the_default(artifacts):
    plain, contained = tvm_partial.inspect(artifacts / "a.so"), tvm_partial.inspect(artifacts / "a_sc.so")
    assert (contained["self_contained"], plain["self_contained"]) == (True, False)
    # The same modules embedded, at other offsets (the self-contained library links more code).
    kinds = [[m["kind"] for m in info["embedded"]["modules"]] for info in (plain, contained)]
    assert kinds[0] == kinds[1] == ["partial_apply", "_lib"], kinds
    same = {"path": "", "self_contained": None, "embedded": None}
    assert {**contained, **same} == {**plain, **same}


def test_self_contained_loads_with_tvm_alone(artifacts):
    result = run_json(
        PRELUDE
        + """
lib = load("a_sc.so")
print(json.dumps({"kind": lib.kind, "ok": call(lib, "expected_a.npy"),
                  "imported": sorted(m for m in sys.modules if m.startswith("tvm_partial"))}))
""",
        str(artifacts),
        env=NO_AUTOLOAD,
    )
    assert result == {"kind": "partial_apply", "ok": True, "imported": []}


def test_default_artifact_without_the_extension_names_the_missing_loader(artifacts):
    result = run_json(
        PRELUDE
        + """
try:
    load("a.so")
    print(json.dumps({"error": None}))
except Exception as err:
    print(json.dumps({"type": type(err).__name__, "error": str(err)}))
""",
        str(artifacts),
        env=NO_AUTOLOAD,
    )
    assert result == {"type": "RuntimeError", "error": LOADER_MISSING}
    # docs/deploy.md quotes the message and says what to do about it.
    assert LOADER_MISSING in (ROOT / "docs" / "deploy.md").read_text()


def test_extension_first_then_self_contained_artifacts(artifacts):
    result = run_json(
        PRELUDE
        + """
import tvm_partial
a_sc, b_sc, a = load("a_sc.so"), load("b_sc.so"), load("a.so")
print(json.dumps({"ok": [call(a_sc, "expected_a.npy"), call(b_sc, "expected_b.npy"), call(a, "expected_a.npy")],
                  "bound": sorted(int(i) for i in tvm_partial.bindings(a_sc)["main"])}))
""",
        str(artifacts),
    )
    assert result == {"ok": [True, True, True], "bound": [1, 2]}


def test_self_contained_first_then_the_extension(artifacts):
    # The artifact's copy registered the globals first; importing tvm_partial takes them over
    # (cpp/registry.h), and what the artifact's copy made keeps working.
    result = run_json(
        PRELUDE
        + """
a_sc = load("a_sc.so")
first = call(a_sc, "expected_a.npy")
import tvm_partial
a, b_sc = load("a.so"), load("b_sc.so")
out = tvm.runtime.empty((1, 8, 30, 30), "float32")
g = tvm_partial.partial(a_sc["main"], {1: out})   # wraps the artifact's closure (another copy's)
g(data)
try:
    tvm_partial.bindings(a_sc)
    foreign = None
except TypeError as err:
    foreign = str(err)
print(json.dumps({"ok": [first, call(a, "expected_a.npy"), call(b_sc, "expected_b.npy"),
                         bool(np.array_equal(out.numpy(), np.load(os.path.join(folder, "expected_a.npy"))))],
                  "wrapped": sorted(int(i) for i in tvm_partial.bindings(g)),
                  "module_bound": sorted(int(i) for i in tvm_partial.bindings(a)["main"]),
                  "foreign": foreign}))
""",
        str(artifacts),
        env=NO_AUTOLOAD,
    )
    assert result["foreign"].endswith(
        "made by another copy of tvm-partial, such as the one inside a "
        "self-contained artifact, whose bindings this copy cannot read)"
    )
    del result["foreign"]
    assert result == {"ok": [True, True, True, True], "wrapped": [1], "module_bound": [1, 2]}


def test_two_self_contained_artifacts_in_one_process(artifacts):
    result = run_json(
        PRELUDE
        + """
a_sc, b_sc = load("a_sc.so"), load("b_sc.so")
ok = [call(a_sc, "expected_a.npy"), call(b_sc, "expected_b.npy"), call(a_sc, "expected_a.npy")]
ok.append(call(load("a.so"), "expected_a.npy"))   # the loader an artifact registered serves all
print(json.dumps({"ok": ok, "imported": sorted(m for m in sys.modules if m.startswith("tvm_partial"))}))
""",
        str(artifacts),
        env=NO_AUTOLOAD,
    )
    assert result == {"ok": [True, True, True, True], "imported": []}


def test_self_contained_link_options(tmp_path):
    exe = tvm.compile(te.create_prim_func(fixtures.conv2d_bias_tensors()), target="llvm")
    pm = tvm_partial.partial(exe, {1: np.zeros((8, 3, 3, 3), "float32"), 2: np.zeros(8, "float32")})
    seen = {}

    def fcompile(output, objects, **kwargs):
        seen.update(objects=list(objects), **kwargs)
        cc.create_shared(output, objects, **kwargs)

    addons = []
    tvm_partial.export_library(
        pm, tmp_path / "x.so", self_contained=True, fcompile=fcompile, addons=addons, options="-O2"
    )
    assert str(export.embed_object()) in seen["objects"]
    assert seen["options"] == ["-O2", "-Wl,-z,nodelete"]
    assert addons == []  # TVM appends to the list it gets: the caller's stays untouched
    seen.clear()
    tvm_partial.export_library(pm, tmp_path / "y.so", fcompile=fcompile)
    assert str(export.embed_object()) not in seen["objects"] and "options" not in seen
    with pytest.raises(ValueError, match=r"self_contained=True needs a shared library path \(\.so\)"):
        tvm_partial.export_library(pm, tmp_path / "z.tar", self_contained=True)
    assert not (tmp_path / "z.tar").exists()


def _missing_cpp_tools() -> str | None:
    if shutil.which("cmake") is None:
        return "cmake is not on PATH"
    compilers = [os.environ["CXX"]] if os.environ.get("CXX") else ["c++", "g++", "clang++"]
    if not any(shutil.which(c) for c in compilers):
        return f"no C++ compiler on PATH ({', '.join(compilers)})"
    return None


@pytest.mark.slow  # a CMake configure and build of the C++ example
@pytest.mark.skipif(_missing_cpp_tools() is not None, reason=f"C++ example: {_missing_cpp_tools()}")
def test_cpp_deploy_example_configures_quietly_without_cuda(tmp_path):
    """A CPU-only configure of the example prints nothing about CUDA (tvm-ffi's CMake package
    announces CMAKE_CUDA_RUNTIME_LIBRARY unless it is set), and warns of nothing."""
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT / "examples" / "cpp_deploy"),
            "-B",
            str(tmp_path),
            f"-Dtvm_partial_DIR={config.cmakedir()}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "-- Configuring done" in proc.stdout
    assert "CUDA" not in proc.stdout + proc.stderr
    assert "Warning" not in proc.stdout + proc.stderr


@pytest.mark.slow  # a CMake configure and build of the C++ example
@pytest.mark.skipif(_missing_cpp_tools() is not None, reason=f"C++ example: {_missing_cpp_tools()}")
def test_cpp_deploy_example(dev, tmp_path):
    """examples/cpp_deploy/run.py --device: every C++ program and mode, bound on the device."""
    run = [sys.executable, str(ROOT / "examples" / "cpp_deploy" / "run.py"), "--device", dev.kind]
    proc = subprocess.run([*run, "--build-dir", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    kernel = "the CUDA kernel" if dev.kind == "cuda" else "the parallel kernel"
    assert [line for line in lines if line.startswith("[")] == [
        f"[ok] Python: {kernel} == numpy (bitwise)",
        "[ok] Python: the Relax MLP partial == the direct VM call (bitwise)",
        "[ok] Python: a frontend.nn model's pm(x) == its direct forward call (bitwise)",
        "[ok] deploy: artifact, loader from libtvm_partial",
        "[ok] deploy: self-contained artifact",
        "[ok] deploy --bind: plain library, bound in C++",
        "[ok] deploy_ffi_only: self-contained artifact, no tvm-partial",
        "[ok] deploy: zero-copy self-contained artifact",
        "[ok] deploy_ffi_only: zero-copy self-contained artifact, no tvm-partial",
        "[ok] deploy: artifact with a safetensors weights file",
        "[ok] deploy_ffi_only: artifact with a safetensors weights file, no tvm-partial",
        "[ok] deploy --weights: artifact with another weights file",
        "[ok] deploy --weights: its own weights file gone, another bound",
        "[ok] deploy --rebind: verified, rebound to another weights file by name, in C++",
        "[ok] deploy --weights: weights of another model refused",
        "[ok] deploy --returns: artifact with outputs, out = main(data)",
        "[ok] deploy --bind-returns: plain library, bound with an output in C++",
        "[ok] deploy_ffi_only --returns: self-contained artifact with outputs",
        "[ok] deploy --relax: Relax model with its weights, y = main(x)",
        '[ok] deploy --relax: frontend.nn model, GetFunction("main") reaches its one function, forward',
        "[ok] deploy_ffi_only --relax: self-contained Relax model, no tvm-partial",
        "[ok] deploy_ffi_only: plain artifact refused, loader not registered",
    ]
    assert sum("float32 values equal" in line and "bitwise" in line for line in lines) == 17
    assert "verify: 2 payloads intact" in proc.stdout
    assert "expected_v2.bin bitwise" in proc.stdout
    assert LOADER_MISSING in proc.stdout


@pytest.mark.slow  # a CMake configure and build of the C++ example
@pytest.mark.skipif(_missing_cpp_tools() is not None, reason=f"C++ example: {_missing_cpp_tools()}")
def test_getting_started_cpp_program(tmp_path):
    """getting-started.md's C++ program, as printed, built with deploy.md's CMakeLists.txt and its
    configure line, run on the artifact the page exports (out = conv(data)): the result equals
    numpy's for the input the program writes, and the configure says nothing of CUDA."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_docs import blocks

    (program,) = [b["code"] for b in blocks(ROOT / "docs" / "getting-started.md") if b["lang"] == "cpp"]
    (cmake,) = [b["code"] for b in blocks(ROOT / "docs" / "deploy.md") if b["lang"] == "cmake"]
    (tmp_path / "deploy.cc").write_text(program)
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    exe, tensors = fixtures.build_conv2d_bias()
    inputs = fixtures.sample_inputs()
    pm = tvm_partial.partial(
        exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"], outputs="result"
    )
    tvm_partial.export_library(pm, tmp_path / "conv2d_bias.so")
    configure = subprocess.run(
        [
            "cmake",
            "-B",
            "build",
            f"-Dtvm_partial_DIR={config.cmakedir()}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert "CUDA" not in configure.stdout + configure.stderr
    build = subprocess.run(
        ["cmake", "--build", "build"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run(["./build/deploy"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    data = (np.arange(1 * 3 * 32 * 32) % 7 - 3).astype("float32").reshape(1, 3, 32, 32)
    expected = fixtures.reference(data, inputs["weights"], inputs["bias"])
    assert (
        run.stdout
        == f"out: 1 x 8 x 30 x 30, out[0] = {expected.flat[0]:g}, out[last] = {expected.flat[-1]:g}\n"
    )


@pytest.mark.slow  # a CMake configure and build
@pytest.mark.skipif(_missing_cpp_tools() is not None, reason=f"C++ program: {_missing_cpp_tools()}")
def test_the_cpp_verbs_answer_and_refuse_as_python_does(affine4, tmp_path):
    """tests/cpp/verbs.cc, built with deploy.md's CMakeLists.txt: tvm_partial::Inspect, Verify,
    OpenWeights and Rebind (by name, a misaligned tensor copied), and each refusal in its words."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_docs import blocks

    (cmake,) = [b["code"] for b in blocks(ROOT / "docs" / "deploy.md") if b["lang"] == "cmake"]
    (tmp_path / "deploy.cc").write_text((ROOT / "tests" / "cpp" / "verbs.cc").read_text())
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    exe, tensors = affine4
    b, c = ints(16, seed=1), ints(16, seed=2)
    pm = tvm_partial.partial(exe, signature=tensors, b=b, c=c)
    tvm_partial.export_library(pm, tmp_path / "model.so")
    tvm_partial.save_weights(tvm_partial.rebind(pm, b=b * 2, c=c * 2), tmp_path / "v2.safetensors")
    (tmp_path / "m.onnx").write_bytes(b"not read")
    exe.export_library(str(tmp_path / "plain.so"))
    for cmd in (
        [
            "cmake",
            "-B",
            "build",
            f"-Dtvm_partial_DIR={config.cmakedir()}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        ["cmake", "--build", "build"],
    ):
        proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    run = subprocess.run(
        ["./build/deploy", "model.so", "v2.safetensors", "m.onnx", "plain.so"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    model = tmp_path / "model.so"
    assert run.stdout.splitlines() == [
        "inspect: library",
        "verify: intact true",
        "rebound by name, b held as given: true",
        "misaligned b copied, aligned: true",
        "unknown name: KeyError: rebind: main() records no parameter named 'z'; give its position",
        "twice: ValueError: rebind: position 1 of main() is given twice",
        "not bound: IndexError: rebind: position 0 of main() is not bound (bound: [1, 2]); rebind "
        "replaces bound values",
        "other function: KeyError: rebind: function 'other' has no bindings (bound: main)",
        "plain: TypeError: rebind: expected a partial function or a partial_apply module, got ffi.Module",
        "onnx: ValueError: inspect: m.onnx is an ONNX model, whose protobuf Python's "
        "tvm_partial.inspect reads (with onnx)",
        f"missing: FileNotFoundError: {run.stdout.split('missing: FileNotFoundError: ')[-1].strip()}",
    ]
    assert f"{model}.gone" in run.stdout


def _cuda_sources(module) -> list[str]:
    found = [m.inspect_source("cuda") for m in module.imports if m.kind == "cuda"]
    return found + [s for m in module.imports for s in _cuda_sources(m)]


@pytest.mark.device
def test_the_cuda_kernels_compile_without_a_gpu(tmp_path):
    """TVM's CUDA code generation needs no GPU: the kernels the device tests (tests/helpers.py's
    Device) and the C++ example build for CUDA compile here, every loop bound to GPU threads (or the
    build would refuse them), and export; where nvcc is installed it compiles one for sm_90. That
    they run right is for `pytest --device cuda` on a GPU."""
    if tvm.cuda(0).exist:
        pytest.skip("a GPU is here: pytest --device cuda runs these kernels")
    spec = importlib.util.spec_from_file_location(
        "cpp_deploy_run", ROOT / "examples" / "cpp_deploy" / "run.py"
    )
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    cuda = Device("cuda")
    a, b = te.placeholder((256,), "float32", name="a"), te.placeholder((4, 16), "float32", name="b")
    kernels = {
        "elementwise": cuda.compile([a, te.compute((256,), lambda i: a[i] * 2.0, name="out")]),
        "two dims": cuda.compile([b, te.compute((4, 16), lambda i, j: b[i, j] + 1.0, name="out")]),
        "conv2d_bias": run.build_cuda_conv2d_bias(cuda.target)[0],
    }
    sources = {name: _cuda_sources(exe.mod) for name, exe in kernels.items()}
    assert all(s and all("__global__" in k and "threadIdx.x" in k for k in s) for s in sources.values()), (
        sources
    )
    kernels["elementwise"].export_library(str(tmp_path / "elementwise.so"))  # a CUDA module exports too
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the CUDA sources were generated, not compiled")
    (tmp_path / "k.cu").write_text(sources["elementwise"][0])
    nvcc = ["nvcc", "--fatbin", "-arch=sm_90", "-o", str(tmp_path / "k.fatbin"), str(tmp_path / "k.cu")]
    proc = subprocess.run(nvcc, capture_output=True, text=True, timeout=300, env=without_sanitizer())
    assert proc.returncode == 0, proc.stderr
