# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the tests: kernels, numpy data, subprocess runners."""

from __future__ import annotations

import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

import numpy as np
import tvm
import tvm_ffi
from tvm import te


def compile_te(tensors, name: str = "main"):
    """tvm.compile of te.create_prim_func(tensors) for the CPU."""
    func = te.create_prim_func(tensors).with_attr("global_symbol", name)
    return tvm.compile(tvm.IRModule({name: func}), target="llvm")


@dataclass(frozen=True)
class Device:
    """Where a device test runs (conftest.py's `dev`, ``pytest --device``): cpu:0, or cuda:0."""

    kind: str

    @property
    def name(self) -> str:
        return f"{self.kind}:0"

    @property
    def tvm(self):
        return tvm.device(self.kind, 0)

    @property
    def target(self):
        """llvm, or cuda:0's own CUDA target (where there is none, sm_90: code generation only)."""
        if self.kind == "cpu":
            return tvm.target.Target("llvm")
        if tvm.cuda(0).exist:
            return tvm.target.Target.from_device(tvm.cuda(0))
        return tvm.target.Target({"kind": "cuda", "arch": "sm_90"})

    def tensor(self, array):
        return tvm.runtime.tensor(np.asarray(array), device=self.tvm)

    def compile(self, tensors, name: str = "main"):
        """tvm.compile of te.create_prim_func(tensors) for the device. On CUDA the output's loops are
        fused and bound to GPU blocks and threads (elementwise kernels: no reduction)."""
        func = te.create_prim_func(tensors).with_attr("global_symbol", name)
        if self.kind == "cuda":
            sch = tvm.s_tir.Schedule(func)
            loops = sch.get_loops(sch.get_sblock(tensors[-1].op.name))
            blocks, threads = sch.split(sch.fuse(*loops), factors=[None, 64])
            sch.bind(blocks, "blockIdx.x")
            sch.bind(threads, "threadIdx.x")
            func = sch.mod["main"]
        return tvm.compile(tvm.IRModule({name: func}), target=self.target)


def affine4_ref(a, b, c):
    return (a * np.float32(2) + b * np.float32(3) + c).astype("float32")


def convnet_class(torch):
    """Convolution + batch norm + linear (torch passed in: the helpers never import it)."""

    class ConvNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))

    return ConvNet


def raw_bytes(t) -> bytes:
    """The bytes of a contiguous host tvm tensor, whatever its dtype (bfloat16, bool, vectors;
    sub-byte dtypes packed as they are held)."""
    dtype = tvm_ffi.dtype(str(t.dtype))
    nbytes = (int(np.prod(t.shape, dtype=np.int64)) * dtype.bits * dtype.lanes + 7) // 8
    return np.from_dlpack(_TENSOR_VIEW(t, tvm_ffi.Shape((nbytes,)), "uint8", 0)).tobytes()


_TENSOR_VIEW = tvm_ffi.get_global_func("runtime.TVMTensorCreateView")


def ints(shape, dtype="float32", seed=0, low=-8, high=9):
    """Small integers, so float sums are exact and results compare bitwise."""
    return np.random.default_rng(seed).integers(low, high, size=shape).astype(dtype)


def tensor(array):
    return tvm.runtime.tensor(np.asarray(array))


#: Whether this is the sanitizer run's interpreter: scripts/sanitize.sh preloads gcc's ASan runtime
#: into Python and every process the tests start.
SANITIZED = "libasan" in os.environ.get("LD_PRELOAD", "")


def without_sanitizer() -> dict:
    """The environment for a program that is not ours (a compiler): without the preloaded
    sanitizer runtimes, which it was not built for."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def cmake_package_dirs() -> list[str]:
    """``-Dtvm_partial_DIR=...`` and ``-Dtvm_ffi_DIR=...`` for a CMake project that does
    ``find_package(tvm_partial)``, as the installed packages report them (in a subprocess: the
    config modules are what a user runs)."""
    dirs = []
    for package, name in (("tvm_partial", "tvm_partial_DIR"), ("tvm_ffi", "tvm_ffi_DIR")):
        found = subprocess.run(
            [sys.executable, "-m", f"{package}.config", "--cmakedir"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirs.append(f"-D{name}={found}")
    return dirs


@dataclass(frozen=True)
class Embedded:
    """One module TVM embedded in a library: its kind, where its bytes lie in the file."""

    kind: str
    offset: int
    size: int


@dataclass(frozen=True)
class LibraryModules:
    """What TVM embedded in a library's file, as ``inspect`` reads it."""

    blob_at: int  # TVM's embedded blob: its u64 length here, then the module tree
    blob_end: int
    modules: list
    partial: Embedded  # the partial module's bytes (the tree's root)


def library_modules(path) -> LibraryModules:
    import tvm_partial

    embedded = tvm_partial.inspect(path)["embedded"]
    modules = [Embedded(m["kind"], m["file_offset"], m["bytes"]) for m in embedded["modules"]]
    partial = next(m for m in modules if m.kind == "partial_apply")
    at = embedded["file_offset"]
    return LibraryModules(at, at + embedded["bytes"], modules, partial)


def mapped_file(address: int) -> str | None:
    """The file of this process's mapping that holds ``address`` (None: anonymous memory)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            lo, hi = (int(v, 16) for v in fields[0].split("-"))
            if lo <= address < hi:
                return fields[5] if len(fields) > 5 else None
    return None


def torch_env() -> dict:
    """The environment of a fresh interpreter that imports the real torch (tests/conftest.py hides
    it from the others)."""
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return {"PYTHONPATH": os.pathsep.join(p for p in parts if "tvm_partial_no_torch_" not in p)}


def run_python(code: str, *args: str, env: dict | None = None, timeout: int = 300):
    """Run code in a fresh interpreter (what could crash the process runs there)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The ``tvm-partial`` command with ``args``, run in this process (its parsing, reading and
    formatting; what the tests of one command check), as ``subprocess.run`` would report it. The
    command's readers are the Python API's, whose damaged inputs the tests also read in-process;
    the few end-to-end runs of the installed command (tests/test_cli.py) start an interpreter."""
    import contextlib
    import io

    from tvm_partial.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as stop:  # argparse: --help, --version, a bad argument
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
    return subprocess.CompletedProcess(["tvm-partial", *args], code, out.getvalue(), err.getvalue())


def run_json(code: str, *args: str, env: dict | None = None):
    """Run code that prints one JSON document last; a crash or error fails the test."""
    proc = run_python(code, *args, env=env)
    assert proc.returncode == 0, f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Crash:
    """What ``run_cases`` reports for a case that ended its interpreter instead of returning."""

    how: str  # "killed by SIGSEGV", "exited with 1", "no result within 300 s"
    output: str  # the end of the interpreter's stderr

    def __str__(self) -> str:
        return f"the case crashed its interpreter ({self.how}):\n{self.output}"


# The worker's lines that carry a result, and the line that says its setup code ran.
_CASE_MARK = "@@run_cases "
_READY = "@@run_cases ready"

# argv: the setup code's file, the JSON file of the cases, the index of the first case to run.
_CASE_DRIVER = """
import json, sys
namespace = {"__name__": "__run_cases__"}
exec(compile(open(sys.argv[1]).read(), "run_cases setup", "exec"), namespace)
run_case = namespace["run_case"]
cases = json.load(open(sys.argv[2]))
print("@@run_cases ready", flush=True)
for index in range(int(sys.argv[3]), len(cases)):
    result = run_case(cases[index])
    print("@@run_cases " + json.dumps([index, result]), flush=True)
"""


def run_cases(code: str, cases: list, env: dict | None = None, timeout: int = 300) -> list:
    """Run ``code``'s ``run_case(case)`` on every case (JSON values) in one fresh interpreter and
    return the results in order. A case that crashes the interpreter, exits it or runs past
    ``timeout`` seconds gives a ``Crash`` in its place, and the cases after it go on in a new
    interpreter: one interpreter start-up for the whole family, and a crash still names its case.
    Setup code that fails (before the first case) raises ``RuntimeError``."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    results: list = [None] * len(cases)
    with tempfile.TemporaryDirectory(prefix="run_cases_") as folder:
        setup, todo, err_path = (os.path.join(folder, n) for n in ("setup.py", "cases.json", "stderr"))
        with open(setup, "w") as f:
            f.write(textwrap.dedent(code))
        with open(todo, "w") as f:
            json.dump(cases, f)
        start = 0
        while start < len(cases):  # each round reports one case at least, or raises
            argv = [sys.executable, "-X", "faulthandler", "-c", _CASE_DRIVER, setup, todo, str(start)]
            with open(err_path, "w+") as err:
                ready, done, how = _run_case_worker(argv, full_env, err, timeout)
                err.seek(0)
                output = err.read()[-3000:]
            if not ready:
                raise RuntimeError(f"run_cases: the setup code failed ({how}):\n{output}")
            for index, result in done:
                results[index] = result
            start = done[-1][0] + 1 if done else start
            if start < len(cases):  # the interpreter ended without a result for this case
                results[start] = Crash(how, output)
                start += 1
    return results


def _run_case_worker(argv: list, env: dict, err, timeout: int) -> tuple:
    """Run one worker: (whether its setup ran, [(index, result)] it reported, how it ended)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    ready, pending = False, b""
    done: list = []
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while True:
            if not sel.select(timeout=max(deadline - time.monotonic(), 0)):
                proc.kill()
                proc.wait()
                proc.stdout.close()
                return ready, done, f"no result within {timeout} s"
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                text = line.decode(errors="replace")
                if text == _READY:
                    ready = True
                elif text.startswith(_CASE_MARK):
                    done.append(tuple(json.loads(text[len(_CASE_MARK) :])))
                else:
                    continue
                deadline = time.monotonic() + timeout  # each case has its own time
    proc.stdout.close()
    code = proc.wait()
    return ready, done, f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"


# The format's 64-bit hash (cpp/hash.{h,cc}), written again here, independently of the C++ one:
# tests reseal deliberately altered blobs with it, and check it against what the library records.
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_M64 = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _lane(acc: int, word: int) -> int:
    return _rotl((acc + word * _P2) & _M64, 31) * _P1 & _M64


def format_hash(data: bytes) -> int:
    """The payload and metadata hash of the partial_apply format, as an unsigned 64-bit int."""
    data = bytes(data)
    acc = [(_P1 + _P2) & _M64, _P2, 0, -_P1 & _M64]
    whole = len(data) - len(data) % 32
    for at in range(0, whole, 32):
        for k in range(4):
            acc[k] = _lane(acc[k], int.from_bytes(data[at + 8 * k : at + 8 * k + 8], "little"))
    h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _M64
    h ^= len(data) * _P3 & _M64
    tail = data[whole:]
    for i in range(0, len(tail) - 7, 8):
        h = (_rotl(h ^ _lane(0, int.from_bytes(tail[i : i + 8], "little")), 27) * _P1 + _P3) & _M64
    for byte in tail[len(tail) - len(tail) % 8 :]:
        h = _rotl(h ^ (byte * _P3 & _M64), 11) * _P1 & _M64
    h ^= h >> 33
    h = h * _P2 & _M64
    h ^= h >> 29
    h = h * _P3 & _M64
    h ^= h >> 32
    return h


def reseal(blob: bytes) -> bytes:
    """A blob with its metadata hash recomputed (over the first 32 header bytes and the metadata),
    so a test can reach the structural checks behind the checksum."""
    blob = bytes(blob)
    if len(blob) < 40:
        raise ValueError("too short to reseal")
    (meta_size,) = struct.unpack_from("<Q", blob, 24)
    if meta_size > len(blob) - 40:
        raise ValueError("metadata size past the end; cannot reseal")
    digest = format_hash(blob[:32] + blob[40 : 40 + meta_size])
    return blob[:32] + struct.pack("<Q", digest) + blob[40:]


def trailer_hash(data: bytes) -> int:
    """The format's hash of ``data`` (what a zero-copy trailer records over its first 40 bytes)."""
    return format_hash(data)


# The region symbol and link of the artifacts export_recording writes (export_library draws both
# at random): fixed, so that a weights file written against one such artifact (a fuzz input)
# replays against another built the same way.
FIXED_SYMBOL = "__tvm_partial_payload_f022ed5eed000000"
FIXED_LINK = 0x5EEDF022


def export_recording(module, lib, weights, recorded: str, symbol: str = FIXED_SYMBOL, link: int = FIXED_LINK):
    """Export the partial ``module`` as ``export_library(module, lib, weights_file=weights)`` does,
    except that the artifact records ``recorded`` as its weights file's name (export_library
    records the path relative to the library's folder) and the region ``symbol`` and ``link`` are
    the ones given. Returns the module as exported (its bytes are what the library embeds)."""
    from tvm_partial import _ffi_api

    linked = []

    def link_it(external, file):
        linked.append(external)
        external.export_library(file)

    options = {"weights_file": recorded, "weights_path": os.fspath(weights), "symbol": symbol, "link": link}
    _ffi_api.Export(module, os.fspath(lib), os.fspath(lib), link_it, options)
    return linked[0]


def weights_fuzz_artifact(folder) -> dict:
    """The small fixed artifact the weights-file fuzzer (fuzz/fuzz_weights.cc) decodes its inputs
    against: y = x * weight + bias, ``weight`` float32 (4, 3) and ``bias`` float16 (3,) bound,
    exported with its weights in ``model.safetensors`` beside ``model.so`` (fixed symbol and link).
    Returns {"module": the partial module, "exported": its exported form, "lib", "weights",
    "blob": the partial module's bytes as the library embeds them}."""
    import tvm_partial

    x = te.placeholder((4, 3), "float32", name="x")
    weight = te.placeholder((4, 3), "float32", name="weight")
    bias = te.placeholder((3,), "float16", name="bias")
    y = te.compute((4, 3), lambda i, j: x[i, j] * weight[i, j] + bias[j].astype("float32"), name="y")
    exe = compile_te([x, weight, bias, y])
    pm = tvm_partial.partial(
        exe,
        signature=[x, weight, bias, y],
        weight=np.arange(12, dtype="float32").reshape(4, 3),
        bias=np.array([0.5, -1, 2], "float16"),
    )
    lib, weights = os.path.join(folder, "model.so"), os.path.join(folder, "model.safetensors")
    exported = export_recording(pm, lib, weights, "model.safetensors")
    return {
        "module": pm,
        "exported": exported,
        "lib": lib,
        "weights": weights,
        "blob": tvm_partial.save_to_bytes(exported),
    }
