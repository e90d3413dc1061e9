# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Many artifacts in one process: each loaded artifact reads only its own file.

Which file, which version, which pages are answered by the artifact being decoded (the library
module the loader returned, and the file proven to be the one it was mapped from), never by
process-wide state. Each test loads into this process, as a server does, under paths of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tvm

import tvm_partial
from helpers import affine4_ref, ints, run_json

PLACEMENTS = ["inline", "zero_copy", "weights_file"]


def _export(pm, path, placement):
    if placement == "weights_file":
        tvm_partial.export_library(pm, path, weights_file=str(path) + ".safetensors")
    else:
        tvm_partial.export_library(pm, path, zero_copy=placement == "zero_copy")


def _call(mod, a):
    out = tvm.runtime.empty((16,), "float32")
    mod(tvm.runtime.tensor(a), out)
    return out.numpy()


@pytest.fixture
def bound(affine4):
    """(executable, b, c): affine4 with b and c bound by position."""
    exe, _ = affine4
    return exe, ints(16, seed=1), ints(16, seed=2)


@pytest.mark.parametrize("placement", ["inline", "zero_copy"])
def test_two_versions_compute_with_their_own_weights(bound, tmp_path, placement):
    """The documented update flow: A exported and loaded, rebind(load(A)) exported to B and
    loaded, then A loaded again: each computes with its own file's weights, bindings() and
    verify() say so. (Both files define the same region symbol: B is a copy of A's file.)"""
    exe, b, c = bound
    a = ints(16, seed=3)
    first, second = tmp_path / "A.so", tmp_path / "B.so"
    _export(tvm_partial.partial(exe, {1: b, 2: c}), first, placement)
    loaded_a = tvm_partial.load(first)
    new_b = (b * 5 - 2).astype("float32")
    tvm_partial.export_library(tvm_partial.rebind(loaded_a, {1: new_b}), second)
    loaded_b = tvm_partial.load(second)
    again = tvm_partial.load(first)
    assert np.array_equal(_call(loaded_a, a), affine4_ref(a, b, c))
    assert np.array_equal(_call(loaded_b, a), affine4_ref(a, new_b, c))
    assert np.array_equal(_call(again, a), affine4_ref(a, b, c))
    assert np.array_equal(tvm_partial.bindings(again)["main"][1].numpy(), b)
    assert np.array_equal(tvm_partial.bindings(loaded_b)["main"][1].numpy(), new_b)
    assert tvm_partial.verify(first)["intact"] and tvm_partial.verify(second)["intact"]


@pytest.mark.parametrize("placement", ["inline", "zero_copy", "save_weights"])
def test_inspect_and_verify_read_the_file_they_opened(bound, tmp_path, placement):
    """inspect and verify open the path once and read everything through that descriptor: an
    update renamed over the path meanwhile (the same layout, which a reopen by name would read
    at the first file's offsets without noticing) is not what they describe. For a safetensors
    file too, whose contents C++ once read by opening the path again."""
    from tvm_partial import _ffi_api

    exe, b, c = bound
    pm = tvm_partial.partial(exe, {1: b, 2: c})
    b2 = (b * 5 - 2).astype("float32")
    if placement == "save_weights":
        path, update = tmp_path / "w.safetensors", tmp_path / "update.safetensors"
        tvm_partial.save_weights(pm, path)
        tvm_partial.save_weights(tvm_partial.rebind(pm, {1: b2}), update)
    else:
        path, update = tmp_path / "model.so", tmp_path / "update.so"
        _export(pm, path, placement)
        tvm_partial.export_library(tvm_partial.rebind(tvm_partial.load(path), {1: b2}), update)

    def hashes(info):
        return [str(x["hash"]) for fn in info["functions"] for x in fn["bindings"] if "hash" in x]

    of_update = hashes(tvm_partial.inspect(update))
    fd = os.open(path, os.O_RDONLY)
    try:  # the very calls inspect and verify make, with the descriptor they opened
        first = hashes(_ffi_api.Inspect(str(path), fd, False))
        os.replace(update, path)
        after = hashes(_ffi_api.Inspect(str(path), fd, False))
        checked = _ffi_api.Verify(str(path), fd, None, None, False)
    finally:
        os.close(fd)
    assert len(first) == 2 and first != of_update and after == first
    assert len(checked["payloads"]) == 2 and checked["intact"]


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_a_replaced_file_reloads_and_a_renamed_one_rolls_back(bound, tmp_path, placement):
    """Hot reload the documented way (export to a new file, rename over the old): loading the path
    again in the same process loads what it holds now, while the first load keeps its own code and
    tensors. A rollback moves files (model.so -> model.prev.so, the old version back onto
    model.so): each path loads what it holds, the renamed inode being the object the process has."""
    exe, b, c = bound
    a = ints(16, seed=4)
    path = tmp_path / "model.so"
    _export(tvm_partial.partial(exe, {1: b, 2: c}), path, placement)
    first = tvm_partial.load(path)
    staged = tmp_path / "staged.so"
    _export(tvm_partial.partial(exe, {1: c, 2: b}), staged, placement)
    os.replace(staged, path)
    if placement == "weights_file":  # the new library names its own weights file
        assert tvm_partial.inspect(path)["weights_file"] == "staged.so.safetensors"
    second = tvm_partial.load(path)
    assert np.array_equal(_call(second, a), affine4_ref(a, c, b))
    assert np.array_equal(_call(first, a), affine4_ref(a, b, c))  # the first load is untouched
    # Rollback: the new version moves aside, a copy of the first comes back onto the path.
    os.replace(path, tmp_path / "model.prev.so")
    _export(tvm_partial.partial(exe, {1: b, 2: c}), tmp_path / "back.so", placement)
    os.replace(tmp_path / "back.so", path)
    assert np.array_equal(_call(tvm_partial.load(path), a), affine4_ref(a, b, c))
    moved = tvm_partial.load(tmp_path / "model.prev.so")  # the inode `second` maps, renamed
    assert np.array_equal(_call(moved, a), affine4_ref(a, c, b))
    assert np.array_equal(_call(second, a), affine4_ref(a, c, b))


def test_tvm_loader_refuses_a_replaced_path_that_tvm_partial_reloads(bound, tmp_path):
    """TVM's own loader answers a path it has loaded with the object it has: after the file is
    replaced it would return the old version, so that load is refused (saying to use
    tvm_partial.load), where tvm_partial.load loads the file the path holds now."""
    exe, b, c = bound
    a = ints(16, seed=10)
    path = tmp_path / "m.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: b, 2: c}), path)
    first = tvm.runtime.load_module(str(path))
    assert np.array_equal(_call(first, a), affine4_ref(a, b, c))
    tvm_partial.export_library(tvm_partial.partial(exe, {1: c, 2: b}), path)
    assert tvm_partial.verify(path)["intact"]  # the new file is whole
    with pytest.raises(ValueError, match="was replaced after this process first loaded it"):
        _call(tvm.runtime.load_module(str(path)), a)
    assert np.array_equal(_call(tvm_partial.load(path), a), affine4_ref(a, c, b))
    assert np.array_equal(_call(first, a), affine4_ref(a, b, c))


@pytest.mark.parametrize("placement", ["zero_copy", "weights_file"])
def test_a_deleted_copy_does_not_shadow_the_original(bound, tmp_path, placement):
    """Load a copy, delete the copy, load the original: the original's own file is read."""
    exe, b, c = bound
    a = ints(16, seed=5)
    original = tmp_path / "C.so"
    _export(tvm_partial.partial(exe, {1: b, 2: c}), original, placement)
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    shutil.copyfile(original, copy_dir / "C.so")
    if placement == "weights_file":
        shutil.copyfile(str(original) + ".safetensors", copy_dir / "C.so.safetensors")
    copy = tvm_partial.load(copy_dir / "C.so")
    shutil.rmtree(copy_dir)
    assert np.array_equal(_call(tvm_partial.load(original), a), affine4_ref(a, b, c))
    assert np.array_equal(_call(copy, a), affine4_ref(a, b, c))  # its pages are its own


def test_each_load_has_its_own_pages(bound, tmp_path):
    """Copy-on-write holds per load: writing into one load's bound tensor reaches neither another
    load of the same file in this process nor the file."""
    exe, b, c = bound
    path = tmp_path / "cow.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: b, 2: c}), path, zero_copy=True)
    before = path.read_bytes()
    one, two = tvm_partial.load(path), tvm_partial.load(path)
    tvm_partial.bindings(one)["main"][1].copyfrom(np.full(16, 9, "float32"))
    assert np.array_equal(tvm_partial.bindings(two)["main"][1].numpy(), b)
    assert np.array_equal(tvm_partial.bindings(tvm_partial.load(path))["main"][1].numpy(), b)
    assert path.read_bytes() == before


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_export_keeps_imported_modules(affine4, tmp_path, placement):
    """A partial module with another module imported into it keeps it in every placement."""
    exe, _ = affine4
    b, c = ints(16, seed=6), ints(16, seed=7)
    pa = tvm_partial.partial(exe, {1: b, 2: c})
    pb = tvm_partial.partial(exe, {1: c, 2: b})
    pa.import_module(pb)
    path = tmp_path / "both.so"
    _export(pa, path, placement)
    loaded = tvm_partial.load(path)
    kinds = [m.kind for m in loaded.imports]
    assert kinds.count("partial_apply") == 1, kinds
    inner = next(m for m in loaded.imports if m.kind == "partial_apply")
    a = ints(16, seed=8)
    assert np.array_equal(_call(inner, a), affine4_ref(a, c, b))
    assert np.array_equal(_call(loaded, a), affine4_ref(a, b, c))


@pytest.mark.parametrize("placement", ["inline", "zero_copy"])
def test_rebind_reaches_the_code_when_another_partial_is_imported_first(affine4, tmp_path, placement):
    """The loader lists the imported partial module before the code (['partial_apply',
    'library']): rebind binds over the code (C++'s WrappedCode), never over the other partial,
    and an export of the update loads and computes with the new values."""
    exe, _ = affine4
    b, c, d = ints(16, seed=10), ints(16, seed=11), ints(16, seed=12)
    pa = tvm_partial.partial(exe, {1: b, 2: c})
    pa.import_module(tvm_partial.partial(exe, {1: c, 2: b}))
    path = tmp_path / "both.so"
    _export(pa, path, placement)
    loaded = tvm_partial.load(path)
    assert loaded.imports[0].kind == "partial_apply"  # the case this test is about
    a = ints(16, seed=13)
    updated = tvm_partial.rebind(loaded, {1: d})
    assert np.array_equal(_call(updated, a), affine4_ref(a, d, c))
    again = tmp_path / "again.so"
    tvm_partial.export_library(updated, again)
    assert np.array_equal(_call(tvm_partial.load(again), a), affine4_ref(a, d, c))


def test_weights_file_reached_through_a_symlink(bound, tmp_path):
    """current.so -> v1/model.so: the recorded weights file is looked for beside the real file
    (v1/), by load, verify and inspect alike."""
    exe, b, c = bound
    a = ints(16, seed=9)
    (tmp_path / "v1").mkdir()
    real = tmp_path / "v1" / "model.so"
    tvm_partial.export_library(
        tvm_partial.partial(exe, {1: b, 2: c}), real, weights_file=tmp_path / "v1" / "model.safetensors"
    )
    link = tmp_path / "current.so"
    link.symlink_to("v1/model.so")
    assert np.array_equal(_call(tvm_partial.load(link), a), affine4_ref(a, b, c))
    assert tvm_partial.verify(link)["intact"]
    region = tvm_partial.inspect(link)["region"]
    assert region["weights_file"] == {
        "name": "model.safetensors",
        "path": str((tmp_path / "v1" / "model.safetensors").resolve()),
    }
    proc = subprocess.run([sys.executable, "-m", "tvm_partial", "verify", str(link)], capture_output=True)
    assert proc.returncode == 0, proc.stderr


_FIFO = """
import os, sys, tvm_partial
path = sys.argv[1]
os.mkfifo(path)
for name, call in [
    ("inspect", lambda: tvm_partial.inspect(path)),
    ("verify", lambda: tvm_partial.verify(path)),
    ("load", lambda: tvm_partial.load(path)),
    ("open_weights", lambda: tvm_partial.open_weights(path)),
    ("load weights_file", lambda: tvm_partial.load(sys.argv[2], weights_file=path)),
]:
    try:
        call()
        print(name, "LOADED")
    except ValueError as err:
        print(name, "ValueError", "FIFO" in str(err) and path in str(err))
"""


def test_a_fifo_is_refused_not_waited_on(bound, tmp_path):
    """Nothing opens a FIFO for reading (it would block until a writer comes): each reader says
    it is not a regular file, naming it. In a subprocess with a timeout: a hang fails the test."""
    exe, b, c = bound
    lib = tmp_path / "ok.so"
    tvm_partial.export_library(tvm_partial.partial(exe, {1: b, 2: c}), lib)
    proc = subprocess.run(
        [sys.executable, "-c", _FIFO, str(tmp_path / "pipe"), str(lib)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert [line for line in lines if line] == [
        f"{name} ValueError True"
        for name in ("inspect", "verify", "load", "open_weights", "load weights_file")
    ], proc.stdout


def test_two_loads_of_one_file_outlive_each_other(tmp_path):
    """The system's loader gives a second load of one file the same object, whose code caches each
    function it looks up (a GPU kernel, a global) from the library module TVM's loader made last.
    Freeing the first load must leave the second's calls valid, in either order of first calls;
    the first function stays alive (a weak reference says so) and the second computes; so does a
    self-contained artifact's (never unloaded) loaded again after every load of it was freed. On a GPU
    the kernels are such functions: freeing one load crashed the other's calls. (Modules that
    tvm.runtime.load_module loads are kept for the life of the process: none is freed.)"""
    code = """
import gc, json, sys, weakref
import numpy as np, tvm, tvm_ffi
from tvm import te
import tvm_partial
tir = getattr(tvm, "tirx", None) or tvm.tir
b = te.placeholder((4,), "float32", name="b")
out = te.extern((4,), [b], lambda i, o: tir.call_packed("tvm_partial_test.copy", i[0], o[0]),
                name="out", dtype="float32")
exe = tvm.compile(te.create_prim_func([b, out]), target="llvm")
path = sys.argv[1]
tvm_partial.export_library(tvm_partial.partial(exe, signature=[b, out], b=np.arange(4, dtype="float32")), path)
def call(m):
    o = tvm.runtime.empty((4,), "float32")
    m(o)
    return o.numpy().tolist()
result = {}
for first_call in ("first", "second"):
    def copy(x, y):
        y.copyfrom(x)
    tvm_ffi.register_global_func("tvm_partial_test.copy", copy, override=True)
    alive = weakref.ref(copy)
    one = tvm_partial.load(path)
    if first_call == "first":
        call(one)  # the code looks the function up now and caches it
    two = tvm_partial.load(path)
    if first_call == "second":
        call(two)
    # Only the cache holds it now: a new global under its name, and no name of ours.
    tvm_ffi.register_global_func("tvm_partial_test.copy", lambda x, y: None, override=True)
    del copy
    del one
    gc.collect()
    result[first_call] = [alive() is not None, call(two)]
    del two
    gc.collect()
# A self-contained artifact is never unloaded (-z nodelete): its code keeps what it cached after
# every load of it is freed, and the next load of the file calls that.
tvm_partial.export_library(tvm_partial.partial(exe, signature=[b, out], b=np.arange(4, dtype="float32")),
                           path + ".sc.so", self_contained=True)
def copy(x, y):
    y.copyfrom(x)
tvm_ffi.register_global_func("tvm_partial_test.copy", copy, override=True)
alive = weakref.ref(copy)
one = tvm_partial.load(path + ".sc.so")
call(one)
tvm_ffi.register_global_func("tvm_partial_test.copy", lambda x, y: None, override=True)
del copy, one
gc.collect()
result["again"] = [alive() is not None, call(tvm_partial.load(path + ".sc.so"))]
print(json.dumps(result))
"""
    got = run_json(code, str(tmp_path / "m.so"))
    assert got == {k: [True, [0.0, 1.0, 2.0, 3.0]] for k in ("first", "second", "again")}


@pytest.mark.slow  # 200 loads in a fresh process: 20 s here
def test_200_reloads_free_each_version(bound, tmp_path):
    """A server reloading in place: 200 versions exported onto one path (each a new file renamed
    over it), each loaded, called and dropped: every version computes with its own weights, and
    the process's mappings and resident memory do not grow with the versions (each is freed when
    its last reference goes). In a fresh process: the system's loader is process-wide."""
    exe, b, c = bound
    for name, (x, y) in {"v0.so": (b, c), "v1.so": (c, b)}.items():
        tvm_partial.export_library(tvm_partial.partial(exe, {1: x, 2: y}), tmp_path / name, zero_copy=True)
    a = ints(16, seed=12)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "want0.npy", affine4_ref(a, b, c))
    np.save(tmp_path / "want1.npy", affine4_ref(a, c, b))
    got = run_json(
        """
        import gc, json, os, shutil, sys
        import numpy as np, tvm, tvm_partial
        folder = sys.argv[1]
        a = tvm.runtime.tensor(np.load(os.path.join(folder, "a.npy")))
        want = [np.load(os.path.join(folder, f"want{i}.npy")) for i in (0, 1)]
        path = os.path.join(folder, "model.so")
        def counts():
            maps = sum(1 for _ in open("/proc/self/maps"))
            rss = int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS:")).split()[1])
            return maps, rss * 1024
        wrong, samples, previous = 0, [], None
        for version in range(200):
            staged = os.path.join(folder, "staged.so")
            shutil.copyfile(os.path.join(folder, f"v{version % 2}.so"), staged)
            os.replace(staged, path)  # a new file at the path, as an export writes it
            current = tvm_partial.load(path)
            out = tvm.runtime.empty((16,), "float32")
            current(a, out)
            wrong += not np.array_equal(out.numpy(), want[version % 2])
            if previous is not None:  # the version before keeps its own weights until dropped
                previous(a, out)
                wrong += not np.array_equal(out.numpy(), want[(version - 1) % 2])
            previous = current
            del current
            gc.collect()
            if version in (20, 199):
                samples.append(counts())
        print(json.dumps({"wrong": wrong, "samples": samples}))
        """,
        str(tmp_path),
    )
    assert got["wrong"] == 0
    (maps_20, rss_20), (maps_199, rss_199) = got["samples"]
    assert maps_199 <= maps_20 + 8, (maps_20, maps_199)  # not one per version
    assert rss_199 - rss_20 < 16 * 2**20, (rss_20, rss_199)  # 180 versions: far less than one each


# -- on the device `pytest --device` names (conftest.py) -------------------------------------------------
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_on_the_device_two_versions_of_one_artifact_keep_their_weights(dev, affine_dev, tmp_path, placement):
    """version1/model.so and version2/model.so (other weights) loaded in one process, called
    alternately: each computes with its own weights, on the device."""
    exe, sig = affine_dev
    a = ints(256, seed=0)
    weights = [(ints(256, seed=2 * v + 1), ints(256, seed=2 * v + 2)) for v in range(2)]
    modules = []
    for v, (b, c) in enumerate(weights):
        (tmp_path / f"version{v + 1}").mkdir()
        path = tmp_path / f"version{v + 1}" / "model.so"
        _export(tvm_partial.partial(exe, signature=sig, b=b, c=c, device=dev.name), path, placement)
        modules.append(tvm_partial.load(path))
    for v in (0, 1, 0):
        out = dev.tensor(np.zeros(256, "float32"))
        modules[v](dev.tensor(a), out)
        assert out.numpy().tobytes() == affine4_ref(a, *weights[v]).tobytes(), v
