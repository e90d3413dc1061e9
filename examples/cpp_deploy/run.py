# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Build and run the C++ deployment example; the exit status is 0 when every check passed.

    python examples/cpp_deploy/run.py [--build-dir DIR] [--device cuda]

1. compiles the demo's conv2d + bias (tvm_partial._fixtures) with its output channels in a
   parallel loop, so the kernel runs on TVM's thread pool (which a C++ program gets from
   libtvm_runtime); with --device cuda, for CUDA (its output elements bound to GPU threads),
   with everything below bound on cuda:0 and every program run with `--device cuda`;
2. exports it five ways: a tvm-partial artifact, the same self-contained (also zero-copy, and
   with its weights in a safetensors file beside it), one that returns its result
   (`outputs="result"`), and the plain library; and writes a second weight set with
   `save_weights`, which `deploy --weights` binds in place of an artifact's (and `deploy --rebind`
   rebinds by name, after verifying the artifact);
3. writes the data, weights, bias and numpy's result as raw float32 .bin files;
   and a Relax MLP (`tvm.compile` of a Relax IRModule) bound by parameter name, also self-contained;
4. builds deploy.cc (`cmake -B build && cmake --build build`) and runs every mode, each comparing
   its result with numpy's bit for bit. Everything lands in the build folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import tvm
import tvm.libinfo
from tvm import te

import tvm_partial
from tvm_partial import _fixtures as fixtures
from tvm_partial import config

HERE = Path(__file__).resolve().parent
LOADER_MISSING = "a loader of that name is not registered"


def build_parallel_conv2d_bias():
    """-> (executable, signature tensors): the demo kernel, output channels in parallel."""
    tensors = fixtures.conv2d_bias_tensors()
    sch = tvm.s_tir.Schedule(te.create_prim_func(tensors))
    sch.parallel(sch.get_loops(sch.get_sblock("conv"))[1])  # loops: batch, channel, y, x, ...
    assert "T.parallel" in sch.mod.script(), "the schedule has no parallel loop"
    return tvm.compile(sch.mod, target="llvm"), tensors


def build_cuda_conv2d_bias(target):
    """-> (executable, signature tensors): the demo kernel compiled for the CUDA `target`, each
    output element of the convolution and of the bias addition one GPU thread (TVM's CUDA
    codegen needs every loop bound)."""
    tensors = fixtures.conv2d_bias_tensors()
    sch = tvm.s_tir.Schedule(te.create_prim_func(tensors))
    for block in ("conv", "result"):
        spatial = sch.get_loops(sch.get_sblock(block))[:4]  # batch, channel, y, x (then rc, ry, rx)
        outer, inner = sch.split(sch.fuse(*spatial), factors=[None, 128])
        sch.bind(outer, "blockIdx.x")
        sch.bind(inner, "threadIdx.x")
    return tvm.compile(sch.mod, target=target), tensors


def export_relax_mlp(build: Path, dev, target) -> bool:
    """A Relax MLP compiled for `target`, bound by name on `dev` and exported (plain and
    self-contained); writes x and the direct VM call's result as .bin files; -> whether the
    partial equals the direct VM call."""
    from tvm import relax
    from tvm.script import relax as R

    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((2, 8), "float32"))
    w1 = relax.Var("w1", R.Tensor((8, 16), "float32"))
    w2 = relax.Var("w2", R.Tensor((16, 4), "float32"))
    with bb.function("main", [x, w1, w2]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.matmul(relax.op.nn.relu(relax.op.matmul(x, w1)), w2))
        bb.emit_func_output(y)
    exe = tvm.compile(bb.get(), target=target)
    rng = np.random.default_rng(0)
    arrays = {
        n: rng.integers(-3, 4, size=s).astype("float32")
        for n, s in (("x", (2, 8)), ("w1", (8, 16)), ("w2", (16, 4)))
    }
    direct = relax.VirtualMachine(exe, dev)["main"](
        *(tvm.runtime.tensor(a, device=dev) for a in arrays.values())
    )
    pm = tvm_partial.partial(exe, device=dev, w1=arrays["w1"], w2=arrays["w2"])
    tvm_partial.export_library(pm, build / "relax_mlp.so")
    tvm_partial.export_library(pm, build / "relax_mlp_self_contained.so", self_contained=True)
    arrays["x"].tofile(build / "relax_x.bin")
    direct.numpy().tofile(build / "relax_expected.bin")
    return bool(np.array_equal(pm(tvm.runtime.tensor(arrays["x"], device=dev)).numpy(), direct.numpy()))


def export_relax_forward(build: Path) -> bool:
    """A frontend.nn model, whose one function is forward (no main), bound and exported; C++
    calls it through GetFunction("main"), which reaches the one bound function. Writes its
    expected result; -> whether pm(x) equals the direct VM call of forward."""
    from tvm import relax
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(8, 16, bias=False)
            self.fc2 = nn.Linear(16, 4, bias=False)

        def forward(self, x):
            return self.fc2(nn.relu(self.fc1(x)))

    mod, specs = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 8), "float32")}})
    exe = tvm.compile(mod, target="llvm")
    rng = np.random.default_rng(1)
    weights = {
        name: rng.integers(-3, 4, size=[int(d) for d in p.shape]).astype("float32") for name, p in specs
    }
    x = np.fromfile(build / "relax_x.bin", "float32").reshape(2, 8)
    direct = relax.VirtualMachine(exe, tvm.cpu())["forward"](
        *(tvm.runtime.tensor(a) for a in (x, *weights.values()))
    )
    pm = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **weights)
    tvm_partial.export_library(pm, build / "relax_forward.so")
    direct.numpy().tofile(build / "relax_forward_expected.bin")
    return bool(np.array_equal(pm(tvm.runtime.tensor(x)).numpy(), direct.numpy()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--build-dir",
        type=Path,
        default=HERE / "build",
        help="CMake build folder, also holding the artifacts (default: build/ here)",
    )
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="where the kernels run and the weights are bound (default: cpu; cuda: cuda:0)",
    )
    args = parser.parse_args(argv)
    build = args.build_dir.resolve()
    build.mkdir(parents=True, exist_ok=True)
    dev = tvm.device(args.device, 0)
    target = tvm.target.Target.from_device(dev) if args.device == "cuda" else "llvm"
    on_device = ["--device", "cuda"] if args.device == "cuda" else []  # deploy's option
    # TVM's CUDA runtime, which the programs link for --device cuda (CMakeLists.txt).
    runtime_cuda = (
        Path(tvm.libinfo.find_libtvm_runtime()).with_name("libtvm_runtime_cuda.so") if on_device else ""
    )

    exe, tensors = build_cuda_conv2d_bias(target) if args.device == "cuda" else build_parallel_conv2d_bias()
    inputs = fixtures.sample_inputs()
    expected = fixtures.reference(**inputs)
    out = tvm.runtime.empty(fixtures.SHAPES["result"], "float32", device=dev)
    exe["main"](*(tvm.runtime.tensor(inputs[k], device=dev) for k in ("data", "weights", "bias")), out)
    kernel = "the CUDA kernel" if args.device == "cuda" else "the parallel kernel"
    checks = {f"Python: {kernel} == numpy (bitwise)": np.array_equal(out.numpy(), expected)}

    pm = tvm_partial.partial(
        exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"], device=dev
    )
    tvm_partial.export_library(pm, build / "conv2d_bias.so")
    tvm_partial.export_library(pm, build / "conv2d_bias_self_contained.so", self_contained=True)
    # Zero-copy (payloads mapped from the library file), forced here: these weights are small.
    tvm_partial.export_library(pm, build / "conv2d_bias_zero_copy.so", self_contained=True, zero_copy=True)
    # External weights: the code in the library, the weights in a safetensors file beside it.
    tvm_partial.export_library(
        pm,
        build / "conv2d_bias_weights.so",
        self_contained=True,
        weights_file=build / "conv2d_bias_weights.safetensors",
    )
    # New weights for the same code: a safetensors file of the seed-1 weights, bound in C++ in
    # place of an artifact's (deploy --weights), here one whose own weights file is gone.
    other = fixtures.sample_inputs(1)
    tvm_partial.save_weights(
        tvm_partial.rebind(pm, weights=other["weights"], bias=other["bias"], device=dev),
        build / "v2.safetensors",
    )
    fixtures.reference(inputs["data"], other["weights"], other["bias"]).tofile(build / "expected_v2.bin")
    tvm_partial.export_library(pm, build / "conv2d_bias_gone.so", weights_file=build / "gone.safetensors")
    (build / "gone.safetensors").unlink()
    tvm_partial.save_weights(
        tvm_partial.partial(exe, signature=tensors, weights=other["weights"], device=dev),
        build / "partial.safetensors",
    )
    exe.export_library(str(build / "conv2d_bias_plain.so"))
    # The forum's calling convention: `out = main(data)`, the result allocated by each call.
    returning = tvm_partial.partial(
        exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"], outputs="result", device=dev
    )
    tvm_partial.export_library(returning, build / "conv2d_bias_returns.so", self_contained=True)
    for name, array in [*inputs.items(), ("expected", expected)]:
        array.tofile(build / f"{name}.bin")
    checks["Python: the Relax MLP partial == the direct VM call (bitwise)"] = export_relax_mlp(
        build, dev, target
    )
    checks["Python: a frontend.nn model's pm(x) == its direct forward call (bitwise)"] = export_relax_forward(
        build
    )

    for cmake in (
        [
            "cmake",
            "-S",
            str(HERE),
            "-B",
            str(build),
            f"-Dtvm_partial_DIR={config.cmakedir()}",
            f"-DTVM_RUNTIME_LIBRARY={tvm.libinfo.find_libtvm_runtime()}",
            f"-DTVM_RUNTIME_CUDA_LIBRARY={runtime_cuda}",
            f"-DPython_EXECUTABLE={sys.executable}",
        ],
        ["cmake", "--build", str(build)],
    ):
        proc = subprocess.run(cmake, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"$ {' '.join(cmake)}\n{proc.stdout}{proc.stderr}", file=sys.stderr)
            return 1

    # The programs find the wheels' libraries through their rpath alone.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    data = [str(build / "data.bin"), str(build / "expected.bin")]

    def run(program: str, *args: str) -> subprocess.CompletedProcess:
        cmd = [str(build / program), *on_device, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        print(f"$ {' '.join(Path(c).name for c in cmd)}\n{(proc.stdout + proc.stderr).strip()}")
        return proc

    artifact, self_contained = str(build / "conv2d_bias.so"), str(build / "conv2d_bias_self_contained.so")
    weights, bias = str(build / "weights.bin"), str(build / "bias.bin")
    checks["deploy: artifact, loader from libtvm_partial"] = run("deploy", artifact, *data).returncode == 0
    checks["deploy: self-contained artifact"] = run("deploy", self_contained, *data).returncode == 0
    checks["deploy --bind: plain library, bound in C++"] = (
        run("deploy", "--bind", str(build / "conv2d_bias_plain.so"), weights, bias, *data).returncode == 0
    )
    checks["deploy_ffi_only: self-contained artifact, no tvm-partial"] = (
        run("deploy_ffi_only", self_contained, *data).returncode == 0
    )
    zero_copy = str(build / "conv2d_bias_zero_copy.so")
    checks["deploy: zero-copy self-contained artifact"] = run("deploy", zero_copy, *data).returncode == 0
    checks["deploy_ffi_only: zero-copy self-contained artifact, no tvm-partial"] = (
        run("deploy_ffi_only", zero_copy, *data).returncode == 0
    )
    external = str(build / "conv2d_bias_weights.so")
    checks["deploy: artifact with a safetensors weights file"] = (
        run("deploy", external, *data).returncode == 0
    )
    checks["deploy_ffi_only: artifact with a safetensors weights file, no tvm-partial"] = (
        run("deploy_ffi_only", external, *data).returncode == 0
    )
    data_v2 = [str(build / "data.bin"), str(build / "expected_v2.bin")]
    v2 = str(build / "v2.safetensors")
    checks["deploy --weights: artifact with another weights file"] = (
        run("deploy", "--weights", artifact, v2, *data_v2).returncode == 0
    )
    checks["deploy --weights: its own weights file gone, another bound"] = (
        run("deploy", "--weights", str(build / "conv2d_bias_gone.so"), v2, *data_v2).returncode == 0
    )
    checks["deploy --rebind: verified, rebound to another weights file by name, in C++"] = (
        run("deploy", "--rebind", artifact, v2, *data_v2).returncode == 0
    )
    mismatched = run("deploy", "--weights", artifact, str(build / "partial.safetensors"), *data_v2)
    checks["deploy --weights: weights of another model refused"] = (
        mismatched.returncode == 2 and "lacks tensor 'bias' that the module binds" in mismatched.stderr
    )
    returns = str(build / "conv2d_bias_returns.so")
    checks["deploy --returns: artifact with outputs, out = main(data)"] = (
        run("deploy", "--returns", returns, *data).returncode == 0
    )
    checks["deploy --bind-returns: plain library, bound with an output in C++"] = (
        run("deploy", "--bind-returns", str(build / "conv2d_bias_plain.so"), weights, bias, *data).returncode
        == 0
    )
    checks["deploy_ffi_only --returns: self-contained artifact with outputs"] = (
        run("deploy_ffi_only", "--returns", returns, *data).returncode == 0
    )
    relax_data = [str(build / "relax_x.bin"), str(build / "relax_expected.bin")]
    checks["deploy --relax: Relax model with its weights, y = main(x)"] = (
        run("deploy", "--relax", str(build / "relax_mlp.so"), *relax_data).returncode == 0
    )
    checks['deploy --relax: frontend.nn model, GetFunction("main") reaches its one function, forward'] = (
        run(
            "deploy",
            "--relax",
            str(build / "relax_forward.so"),
            relax_data[0],
            str(build / "relax_forward_expected.bin"),
        ).returncode
        == 0
    )
    checks["deploy_ffi_only --relax: self-contained Relax model, no tvm-partial"] = (
        run("deploy_ffi_only", "--relax", str(build / "relax_mlp_self_contained.so"), *relax_data).returncode
        == 0
    )
    refused = run("deploy_ffi_only", artifact, *data)
    checks["deploy_ffi_only: plain artifact refused, loader not registered"] = (
        refused.returncode == 2 and LOADER_MISSING in refused.stderr
    )

    print()
    for label, ok in checks.items():
        print(f"[{'ok' if ok else 'FAIL'}] {label}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
