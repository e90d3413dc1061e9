# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The chunked copy of payloads to a device (cpp/storage/device_copy.{h,cc}), driven through
``tvm_partial.CopyFileToDevice``, which maps a file privately as a load does. Without a GPU the
same code runs with a CPU destination: staged through host buffers (the pinned path's pipeline:
two buffers, pieces read by several threads, each copy waited for before its buffer is reused)
or directly, around every piece boundary. The CUDA tests skip where there is no GPU."""

from __future__ import annotations

import importlib.util
import math
import os
import shutil

import numpy as np
import pytest
import tvm
import tvm_ffi

import tvm_partial
from helpers import run_json
from tvm_partial import _ffi_api

CHUNKS = [1000, 4096]  # not a page multiple, and one page
NO_GPU = not tvm.cuda(0).exist
PAGE = os.sysconf("SC_PAGESIZE")


def _sizes(chunk: int) -> list[int]:
    return [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5]


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> tuple[str, np.ndarray]:
    """A file of 4 MiB + 3 random bytes, and its contents."""
    data = np.random.default_rng(0).integers(0, 256, (4 << 20) + 3, dtype=np.uint8)
    path = tmp_path_factory.mktemp("device_copy") / "payload.bin"
    data.tofile(path)
    return str(path), data


def _copy(path: str, offset: int, nbytes: int, dst, **options) -> dict:
    return dict(_ffi_api.CopyFileToDevice(path, offset, nbytes, dst, options))


@pytest.mark.parametrize("staging", ["host", "direct"])
@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("offset", [0, 13])
def test_every_size_around_a_piece_boundary_arrives_bitwise(payload, staging, chunk, threads, offset):
    path, data = payload
    for nbytes in _sizes(chunk):
        dst = tvm.runtime.empty((nbytes,), "uint8")
        report = _copy(
            path,
            offset,
            nbytes,
            dst,
            staging=staging,
            chunk_bytes=chunk,
            fill_threads=threads,
            release_source=True,
        )
        assert np.array_equal(dst.numpy(), data[offset : offset + nbytes]), (staging, chunk, nbytes)
        assert report["pieces"] == math.ceil(nbytes / chunk), report
        assert report["staging"] == (staging if nbytes else "none"), report


def test_pieces_of_megabytes_are_read_by_several_threads(payload):
    """Past 2 MiB a piece is read into staging by several threads, each its own slice."""
    path, data = payload
    nbytes = data.size - 7
    for threads in (1, 2, 4):
        dst = tvm.runtime.empty((nbytes,), "uint8")
        report = _copy(path, 7, nbytes, dst, staging="host", chunk_bytes=3 << 20, fill_threads=threads)
        assert np.array_equal(dst.numpy(), data[7:]), threads
        assert (report["pieces"], report["fill_threads"]) == (2, threads), report


def test_one_piece_when_the_chunk_is_zero_or_larger_than_the_payload(payload):
    path, data = payload
    for chunk in (0, data.size, 10 * data.size):
        dst = tvm.runtime.empty((data.size,), "uint8")
        report = _copy(path, 0, data.size, dst, staging="direct", chunk_bytes=chunk)
        assert report["pieces"] == 1 and np.array_equal(dst.numpy(), data), report


def test_auto_copies_a_cpu_destination_directly(payload):
    """CPU tensors have no pinned memory to stage through; a load never copies them (they view
    the mapping), but the copy must still be right."""
    path, data = payload
    dst = tvm.runtime.empty((data.size,), "uint8")
    report = _copy(path, 0, data.size, dst, staging="auto", chunk_bytes=1 << 20)
    assert report["staging"] == "direct" and np.array_equal(dst.numpy(), data)


def test_the_whole_pages_read_are_released_and_only_those(payload):
    path, data = payload
    for offset, nbytes in ((0, 3 * PAGE), (13, 3 * PAGE), (PAGE - 1, 2 * PAGE + 2), (5, PAGE - 10)):
        for staging in ("host", "direct"):
            dst = tvm.runtime.empty((nbytes,), "uint8")
            report = _copy(path, offset, nbytes, dst, staging=staging, chunk_bytes=1000, release_source=True)
            # Mapped from the page boundary below the offset: whole pages inside [offset, end).
            first, last = -(-offset // PAGE) * PAGE, (offset + nbytes) // PAGE * PAGE
            assert report["released_bytes"] == max(0, last - first), (offset, nbytes, report)
            assert np.array_equal(dst.numpy(), data[offset : offset + nbytes])
        report = _copy(path, offset, nbytes, tvm.runtime.empty((nbytes,), "uint8"), staging="host")
        assert report["released_bytes"] == 0


# argv: path. Peak RSS of a 64 MiB copy into a CPU tensor whose pages are already resident, so
# the peak above it is what the source's pages and the staging add; with release, then without.
_PEAK = """
import json, sys
import numpy as np, tvm, tvm_partial
from tvm_partial import _ffi_api

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))

path, nbytes, out = sys.argv[1], 64 << 20, {}
expected = np.fromfile(path, "uint8")
for release in (True, False):
    dst = tvm.runtime.tensor(np.ones(nbytes, "uint8"))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM restarts from the current RSS
    base = status("VmHWM")
    options = {"staging": "host", "chunk_bytes": 1 << 20, "fill_threads": 2, "release_source": release}
    report = dict(_ffi_api.CopyFileToDevice(path, 0, nbytes, dst, options))
    peak = status("VmHWM") - base
    out[str(release)] = {"peak": peak, "released": report["released_bytes"],
                         "ok": bool(np.array_equal(dst.numpy(), expected))}
    del dst
print(json.dumps(out))
"""


def test_releasing_read_pages_keeps_the_peak_near_one_piece(tmp_path):
    """A 64 MiB payload copied in 1 MiB pieces: with release the source's pages go as soon as
    they are read (peak above the resident destination: a few MiB); without, all 64 MiB of the
    mapping are resident by the end."""
    path = tmp_path / "w.bin"
    np.random.default_rng(1).integers(0, 256, 64 << 20, dtype=np.uint8).tofile(path)
    got = run_json(_PEAK, str(path))
    released, kept = got["True"], got["False"]
    assert released["ok"] and kept["ok"]
    assert (released["released"], kept["released"]) == (64 << 20, 0)
    assert released["peak"] < 16 << 20, released
    assert kept["peak"] > 48 << 20, kept


def test_bad_arguments_are_refused_with_what_is_wrong(payload):
    path, _ = payload
    with pytest.raises(ValueError, match=r"holds 11 bytes, the payload 10"):
        _copy(path, 0, 10, tvm.runtime.empty((11,), "uint8"))
    with pytest.raises(ValueError, match=r"no pinned host memory to stage a copy to cpu:0 through"):
        _copy(path, 0, 10, tvm.runtime.empty((10,), "uint8"), staging="pinned")
    with pytest.raises(ValueError, match=r"option staging is 'fast'; use auto, pinned, direct or host"):
        _copy(path, 0, 10, tvm.runtime.empty((10,), "uint8"), staging="fast")
    with pytest.raises(ValueError, match=r"unknown option 'chunk'"):
        _copy(path, 0, 10, tvm.runtime.empty((10,), "uint8"), chunk=1)
    with pytest.raises(ValueError, match=r"must not be negative"):
        _copy(path, -1, 10, tvm.runtime.empty((10,), "uint8"))
    with pytest.raises(ValueError, match=r"run past the end of the file"):
        _copy(path, 0, 5 << 20, tvm.runtime.empty((5 << 20,), "uint8"))
    strided = tvm.runtime.empty((4, 4), "uint8").numpy()[:, ::2]
    with pytest.raises(ValueError, match=r"not contiguous"):
        _copy(path, 0, 8, tvm_ffi.from_dlpack(strided))


def test_the_environment_sets_the_defaults(payload, monkeypatch):
    """Read at every copy (what a load does), so a benchmark can set them per process."""
    path, _ = payload
    for name, value in (("STAGING", "host"), ("CHUNK_MIB", "1"), ("THREADS", "2")):
        monkeypatch.setenv(f"TVM_PARTIAL_COPY_{name}", value)
    report = _copy(path, 0, 3 << 20, tvm.runtime.empty((3 << 20,), "uint8"))
    assert (report["staging"], report["pieces"], report["chunk_bytes"]) == ("host", 3, 1 << 20), report
    for name, value, message in (
        ("STAGING", "fast", "TVM_PARTIAL_COPY_STAGING is 'fast'; use auto, pinned, direct or host"),
        ("CHUNK_MIB", "16M", "TVM_PARTIAL_COPY_CHUNK_MIB is '16M'; use a whole number from 0"),
        ("THREADS", "0", "TVM_PARTIAL_COPY_THREADS is '0'; use a whole number from 1 to 256"),
    ):
        with monkeypatch.context() as m:
            m.setenv(f"TVM_PARTIAL_COPY_{name}", value)
            with pytest.raises(ValueError, match=message):
                _copy(path, 0, 10, tvm.runtime.empty((10,), "uint8"))


# --- on a GPU -------------------------------------------------------------------------------

cuda = pytest.mark.skipif(NO_GPU, reason="no CUDA device here (tvm.cuda(0).exist is False)")


@cuda
@pytest.mark.parametrize("staging", ["pinned", "direct", "auto"])
def test_cuda_every_size_around_a_piece_boundary_arrives_bitwise(payload, staging):
    path, data = payload
    chunk = 1 << 20
    for nbytes in _sizes(chunk):
        dst = tvm.runtime.empty((nbytes,), "uint8", device=tvm.cuda(0))
        report = _copy(
            path, 13, nbytes, dst, staging=staging, chunk_bytes=chunk, fill_threads=3, release_source=True
        )
        assert np.array_equal(dst.numpy(), data[13 : 13 + nbytes]), (staging, nbytes)
        if staging == "auto" and nbytes:
            assert report["staging"] == ("pinned" if nbytes > chunk else "direct"), report


_CUDA_LOAD = """
import json, sys
import numpy as np, tvm, tvm_partial
m = tvm_partial.load(sys.argv[1])
w = tvm_partial.bindings(m)["main"][1]
expected = np.load(sys.argv[2])
print(json.dumps({"device": str(w.device), "same": bool(np.array_equal(w.numpy(), expected))}))
"""


@cuda
@pytest.mark.parametrize("chunk_mib", ["0", "1", "16"])
@pytest.mark.parametrize("placement", [{"zero_copy": True}, {"weights_file": True}])
def test_cuda_weights_load_through_the_chunked_copy(tmp_path, monkeypatch, chunk_mib, placement):
    """A load of CUDA-bound weights past the zero-copy threshold copies them in pieces from the
    mapping; every piece size gives the exported bytes on cuda:0."""
    from tvm import te

    if importlib.util.find_spec("cuda") is None and shutil.which("nvcc"):
        monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", "nvcc")  # TVM's default, NVRTC, needs cuda-python

    n = (40 << 20) // 4 + 3
    x, w = te.placeholder((1,), "float32", name="x"), te.placeholder((n,), "float32", name="w")
    out = te.compute((1,), lambda i: x[i] * w[n - 1], name="out")
    sch = tvm.s_tir.Schedule(te.create_prim_func([x, w, out]))
    (i,) = sch.get_loops(sch.get_sblock("out"))
    sch.bind(i, "threadIdx.x")
    exe = tvm.compile(sch.mod, target=tvm.target.Target.from_device(tvm.cuda(0)))
    weights = np.random.default_rng(2).integers(-8, 9, n).astype("float32")
    pm = tvm_partial.partial(exe, {1: weights}, device="cuda")
    kwargs = dict(placement)
    if kwargs.get("weights_file"):
        kwargs["weights_file"] = tmp_path / "w.safetensors"
    tvm_partial.export_library(pm, tmp_path / "a.so", **kwargs)
    np.save(tmp_path / "w.npy", weights)
    got = run_json(
        _CUDA_LOAD,
        str(tmp_path / "a.so"),
        str(tmp_path / "w.npy"),
        env={"TVM_PARTIAL_COPY_CHUNK_MIB": chunk_mib},
    )
    assert got == {"device": "cuda:0", "same": True}
