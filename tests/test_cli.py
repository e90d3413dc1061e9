# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The tvm-partial command, run as a user would."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import tvm

import tvm_partial


def cli(*args: str, timeout: int = 300):
    return subprocess.run(
        [sys.executable, "-m", "tvm_partial", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return cli("demo", "--out", str(out), "--calls", "200"), out


def test_demo_passes_and_prints_table(demo_run):
    proc, out = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for row in (
        "direct f(x, w, b, out)",
        "tvm_partial g(x, out)",
        "Python lambda",
        "functools.partial",
        "empty + direct f(...)",
        "tvm_partial out = g(x)",
    ):
        assert re.search(rf"^{re.escape(row)}\s+\d+\.\d+\s+\d+\.\d+x$", proc.stdout, flags=re.M), proc.stdout
    for check in (
        "partial == numpy (bitwise)",
        "partial == direct call (bitwise)",
        "out = conv(data) == numpy (bitwise)",
        "reloaded in a fresh process == numpy (bitwise)",
    ):
        assert f"[ok] {check}" in proc.stdout
    assert "FAIL" not in proc.stdout
    assert (out / "conv2d_bias.so").exists()


@pytest.mark.parametrize("self_contained", [False, True])
def test_demo_relax(tmp_path, self_contained):
    proc = cli("demo", "--relax", "--out", str(tmp_path), *(["--self-contained"] if self_contained else []))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    where = "without tvm-partial" if self_contained else "in a fresh process"
    for check in (
        "Relax partial == numpy (bitwise)",
        "Relax partial == direct VM call (bitwise)",
        f"Relax model reloaded {where} == numpy (bitwise)",
    ):
        assert f"[ok] {check}" in proc.stdout, proc.stdout
    assert "bound 1 fc1.weight: tensor float32[32x16]" in proc.stdout
    assert (
        "Relax model: its VirtualMachine is created at first use on cpu:0 (pooled allocator)" in proc.stdout
    )
    assert (tmp_path / "relax_mlp.so").exists()


def test_demo_self_contained(tmp_path):
    proc = cli("demo", "--self-contained", "--calls", "10", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[ok] reloaded without tvm-partial == numpy (bitwise)" in proc.stdout


def test_inspect_text(demo_run):
    _, out = demo_run
    proc = cli("inspect", str(out / "conv2d_bias.so"))
    assert proc.returncode == 0, proc.stderr
    assert "tvm-partial format version 1, 896 bytes of constants (inline)" in proc.stdout
    assert "function main(data, result)" in proc.stdout
    assert "bound 1 weights: tensor float32[8x3x3x3] on cpu:0, 864 bytes" in proc.stdout
    assert "bound 2 bias: tensor float32[8] on cpu:0, 32 bytes" in proc.stdout


def test_inspect_json(demo_run):
    _, out = demo_run
    proc = cli("inspect", str(out / "conv2d_bias.so"), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["format_version"] == 1 and info["constant_bytes"] == 896 and info["payloads"] == "inline"
    (fn,) = info["functions"]
    assert fn["name"] == "main" and fn["free"] == ["data", "result"]
    assert fn["param_names"] == ["data", "weights", "bias", "result"]
    assert [
        (b["index"], b["name"], b["dtype"], b["shape"], b["device"], b["bytes"]) for b in fn["bindings"]
    ] == [(1, "weights", "float32", [8, 3, 3, 3], "cpu:0", 864), (2, "bias", "float32", [8], "cpu:0", 32)]


def test_inspect_shows_outputs(tmp_path):
    from tvm import te

    n = te.var("n", "int64")
    x = te.placeholder((n, 4), "float32", name="x")
    y = te.compute((n, 4), lambda i, j: x[i, j] * 2.0, name="y")
    pm = tvm_partial.partial(
        tvm.compile(te.create_prim_func([x, y]), target="llvm"), signature=[x, y], outputs="y"
    )
    tvm_partial.export_library(pm, tmp_path / "o.so")
    proc = cli("inspect", str(tmp_path / "o.so"))
    assert "tvm-partial format version 2" in proc.stdout and "function main(x)" in proc.stdout
    assert "output 1 y: tensor float32[x.shape[0]x4], allocated per call and returned" in proc.stdout
    info = json.loads(cli("inspect", str(tmp_path / "o.so"), "--json").stdout)
    assert info["functions"][0]["outputs"] == [
        {"index": 1, "name": "y", "dtype": "float32", "shape": ["x.shape[0]", 4]}
    ]
    assert info["functions"][0]["free"] == ["x"]


def test_inspect_scalars(tmp_path):
    pm = tvm_partial.partial(tvm.compile(_scalar_kernel(), target="llvm"), {1: 2.5})
    tvm_partial.export_library(pm, tmp_path / "s.so")
    proc = cli("inspect", str(tmp_path / "s.so"))
    assert "function main(unknown names)" in proc.stdout and "bound 1: float 2.5" in proc.stdout
    info = json.loads(cli("inspect", str(tmp_path / "s.so"), "--json").stdout)
    assert info["functions"][0]["bindings"] == [{"index": 1, "kind": "float", "value": 2.5}]
    assert info["functions"][0]["param_names"] == [] and info["functions"][0]["free"] == []


def _scalar_kernel():
    from tvm import te

    x = te.placeholder((4,), "float32", name="x")
    s = te.var("s", "float32")
    return te.create_prim_func([x, s, te.compute((4,), lambda i: x[i] * s, name="out")])


def test_inspect_plain_library_refused(affine4, tmp_path):
    exe, _ = affine4
    exe.export_library(str(tmp_path / "plain.so"))
    proc = cli("inspect", str(tmp_path / "plain.so"))
    assert proc.returncode == 2
    assert "is not a tvm-partial artifact" in proc.stderr


def test_inspect_not_a_library(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    proc = cli("inspect", str(tmp_path / "notes.txt"))
    assert proc.returncode == 2
    assert "is not a tvm-partial artifact: not an ELF shared library" in proc.stderr
    proc = cli("inspect", str(tmp_path / "missing.so"))
    assert proc.returncode == 2 and "No such file" in proc.stderr


def test_console_script_installed():
    import shutil

    script = shutil.which("tvm-partial") or str(
        __import__("pathlib").Path(sys.executable).parent / "tvm-partial"
    )
    proc = subprocess.run([script, "--help"], capture_output=True, text=True)
    assert (
        proc.returncode == 0
        and "demo" in proc.stdout
        and "inspect" in proc.stdout
        and "verify" in proc.stdout
    )


def test_verify_and_inspect_say_what_was_checked(demo_run):
    _, out = demo_run
    text = cli("inspect", str(out / "conv2d_bias.so")).stdout
    assert "  payload hashes: not checked (run tvm-partial verify)" in text
    proc = cli("verify", str(out / "conv2d_bias.so"))
    assert (
        proc.returncode == 0 and "intact: 2 payloads, 896 bytes, match their recorded hashes" in proc.stdout
    )


def test_version():
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_partial", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"tvm-partial {tvm_partial.__version__}"
