# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The chunked copy of payloads to a device (cpp/storage/device_copy.{h,cc}), through what a user
calls: `load` of weights bound on the device `pytest --device` names, with the copy's settings
(TVM_PARTIAL_COPY_STAGING, _CHUNK_MIB, _THREADS, read at every load). On a GPU a load copies each
payload from the mapping in pieces (staged through pinned buffers, or directly); CPU tensors view
the mapping, so there the same loads check the bytes and the tests of the copy itself skip."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from tvm import te

import tvm_partial
from helpers import ints, run_json

N = (3 << 20) // 4 + 3  # float32 weights: 3 MiB and 12 bytes, 4 pieces of 1 MiB
SETTINGS = [  # (staging, piece MiB, threads): one piece, pieces with an odd tail, each staging
    ("auto", "0", "4"),
    ("auto", "1", "3"),
    ("pinned", "1", "1"),
    ("direct", "1", "4"),
    ("host", "1", "2"),
]


@pytest.fixture(scope="module")
def exported(dev, tmp_path_factory):
    """out[0] = x[0] * w[N - 1] with w bound on `dev`, exported with the payload appended to the
    library and in a weights file: (the weights, {placement: (artifact, weights file or None)})."""
    x, w = te.placeholder((1,), "float32", name="x"), te.placeholder((N,), "float32", name="w")
    out = te.compute((1,), lambda i: x[i] * w[N - 1], name="out")
    weights = ints(N, seed=2)
    pm = tvm_partial.partial(dev.compile([x, w, out]), signature=[x, w, out], w=weights, device=dev.name)
    folder = tmp_path_factory.mktemp("device_copy")
    tvm_partial.export_library(pm, folder / "appended.so", zero_copy=True)
    tvm_partial.export_library(pm, folder / "file.so", weights_file=folder / "w.safetensors")
    return weights, {
        "appended": (folder / "appended.so", None),
        "file": (folder / "file.so", folder / "w.safetensors"),
    }


@pytest.mark.parametrize("placement", ["appended", "file"])
def test_every_staging_and_piece_size_loads_the_exported_bytes(
    dev, exported, tmp_path, monkeypatch, placement
):
    """Each load of a fresh copy of the files (a file this process maps is not read again) puts the
    exported bytes on the device, and the kernel's first result reads the last piece's tail."""
    weights, files = exported
    for i, (staging, chunk, threads) in enumerate(SETTINGS):
        for name, value in (("STAGING", staging), ("CHUNK_MIB", chunk), ("THREADS", threads)):
            monkeypatch.setenv(f"TVM_PARTIAL_COPY_{name}", value)
        artifact, weights_file = (
            shutil.copy(f, tmp_path / f"{i}_{f.name}") if f else None for f in files[placement]
        )
        m = tvm_partial.load(artifact, **({"weights_file": weights_file} if weights_file else {}))
        w = tvm_partial.bindings(m)["main"][1]
        assert str(w.device) == dev.name and w.numpy().tobytes() == weights.tobytes(), (staging, chunk)
        out = dev.tensor(np.zeros(1, "float32"))
        m(dev.tensor(np.full(1, 2, "float32")), out)
        assert out.numpy()[0] == 2 * weights[-1]


def _copies(dev):
    if dev.kind == "cpu":
        pytest.skip("CPU tensors view the mapping: a load copies nothing")


def test_copy_settings_are_checked_at_load(dev, exported, tmp_path, monkeypatch):
    _copies(dev)
    _, files = exported
    for i, (name, value, message) in enumerate(
        (
            ("STAGING", "fast", "TVM_PARTIAL_COPY_STAGING is 'fast'; use auto, pinned, direct or host"),
            ("CHUNK_MIB", "16M", "TVM_PARTIAL_COPY_CHUNK_MIB is '16M'; use a whole number from 0"),
            ("THREADS", "0", "TVM_PARTIAL_COPY_THREADS is '0'; use a whole number from 1 to 256"),
        )
    ):
        with monkeypatch.context() as env:
            env.setenv(f"TVM_PARTIAL_COPY_{name}", value)
            with pytest.raises(ValueError, match=message):
                tvm_partial.load(shutil.copy(files["appended"][0], tmp_path / f"{i}.so"))


# argv: the artifact, the device. Peak RSS of its load, above the process with the device's context.
_PEAK = """
import json, sys
import numpy as np, tvm, tvm_partial

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key + ":"))

tvm.runtime.tensor(np.zeros(1, "float32"), device=tvm.device(sys.argv[2])).numpy()  # the context
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM restarts from the current RSS
base = status("VmHWM")
m = tvm_partial.load(sys.argv[1])
print(json.dumps({"peak": status("VmHWM") - base, "rss": status("VmRSS") - base}))
"""


def test_a_load_holds_a_few_pieces_of_the_mapping_not_the_payload(dev, tmp_path):
    """64 MiB of weights copied in 1 MiB pieces: the mapping's pages are released once read, so the
    host holds a few pieces at the peak, and after the load the pinned buffers (2 x 1 MiB)."""
    _copies(dev)
    n = (64 << 20) // 4
    x, w = te.placeholder((1,), "float32", name="x"), te.placeholder((n,), "float32", name="w")
    out = te.compute((1,), lambda i: x[i] * w[n - 1], name="out")
    pm = tvm_partial.partial(dev.compile([x, w, out]), {1: ints(n, seed=4)}, device=dev.name)
    tvm_partial.export_library(pm, tmp_path / "big.so", zero_copy=True)
    got = run_json(_PEAK, str(tmp_path / "big.so"), dev.name, env={"TVM_PARTIAL_COPY_CHUNK_MIB": "1"})
    assert got["peak"] < 24 << 20 and got["rss"] < 16 << 20, got  # all of it read and kept: 64 MiB
