# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The tvm-partial command: each command's parsing, reading, formatting and exit codes in this
process (helpers.run_cli), and end to end as a user runs it (the demo, the console script,
``python -m tvm_partial --version``) in a fresh interpreter."""

from __future__ import annotations

import ast
import ctypes
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm

import tvm_partial
from helpers import affine4_ref, compile_te, ints, run_cli, run_json
from tvm_partial import _progress
from tvm_partial._progress import Progress, format_size

cli = run_cli


def cli_process(*args: str, timeout: int = 300):
    """The command as a user runs it: ``python -m tvm_partial ARGS`` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "tvm_partial", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return cli_process("demo", "--out", str(out), "--calls", "200"), out


DEMO_ROWS = (
    'exe["main"](data, w, b, out)',
    "conv(data, out)",
    "lambda x, o: f(x, w, b, o)",
    "functools.partial(f, ...)",
    'empty() + exe["main"](...)',
    "out = conv(data)",
)


def test_demo_leads_with_the_forum_case_and_explains_its_timings(demo_run):
    proc, out = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    code = (Path(tvm_partial.__file__).parent / "cli" / "demo" / "conv2d.py").resolve()
    assert lines[:2] == [
        "tvm-partial demo: the forum's conv2d + bias (data 1x3x32x32, weights 8x3x3x3, bias 8; float32)",
        f"its code, to read and copy: {code}",
    ]
    checks = [re.sub(r"\(\d+ KiB\)$", "(SIZE)", line) for line in lines if line.startswith("[")]
    assert checks == [
        "[ok] out = conv(data) equals numpy's conv2d + bias, bit for bit",
        '[ok] conv(data, out) equals the direct call exe["main"](data, w, b, out), bit for bit',
        f"[ok] one file holds the code, the weights and the bias: {out / 'conv2d_bias.so'} (SIZE)",
        "[ok] a fresh process loaded it (tvm.runtime.load_module) and got the same bits from (data, out)",
    ]
    # The checks come first; the timings last, each row with what it measures and its spread.
    timing = next(i for i, line in enumerate(lines) if line.startswith("what a call costs"))
    assert timing > lines.index(checks[-1])
    assert "microseconds per call, 5 repeats of 200 calls each" in lines[timing]
    assert "median / the direct call's median" in lines[timing + 1]
    assert lines[timing + 2].split() == ["call", "median", "fastest", "slowest", "vs", "direct", "what"]
    for row in DEMO_ROWS:
        assert re.search(
            rf"^  {re.escape(row)}\s+(\d+\.\d+\s+){{3}}\d+\.\d+x  \w", proc.stdout, flags=re.M
        ), row
    assert "function main(data, result)" in proc.stdout  # what the file binds
    assert (out / "conv2d_bias.so").exists() and "temporary folder" not in proc.stdout


def test_demo_code_path_is_the_module_that_ran():
    from tvm_partial.cli.demo import conv2d

    proc = cli("demo", "--calls", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"its code, to read and copy: {Path(conv2d.__file__).resolve()}" in proc.stdout
    assert "what a call costs" not in proc.stdout  # --calls 0: no timing
    assert "(the file was written to a temporary folder, removed now: keep it with --out DIR)" in proc.stdout


@pytest.mark.parametrize("relax", [False, True])
def test_demo_out_that_cannot_be_written_is_one_clean_line(tmp_path, relax):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    cases = {
        a_file: "is a file, not a folder (give a folder to export into)",
        a_file / "sub": "cannot write there: Not a directory",
        locked: "cannot write there: Permission denied",
        locked / "new": "cannot write there: Permission denied",
    }
    for path, reason in cases.items():
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tvm_partial",
                "demo",
                *(["--relax"] if relax else []),
                "--out",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=_without_file_capabilities if os.geteuid() == 0 else None,
        )
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        assert proc.stderr == f"tvm-partial demo: --out {path}: {reason}\n"
    assert a_file.read_text() == "hello" and list(locked.iterdir()) == []


CLI_PACKAGE = Path(tvm_partial.__file__).parent / "cli"


def _package_modules() -> dict[str, Path]:
    found = {}
    for path in sorted(CLI_PACKAGE.parent.rglob("*.py")):
        parts = ("tvm_partial", *path.relative_to(CLI_PACKAGE.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that the module ``name`` (at ``path``) names in an import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{alias.name}" for alias in node.names]
            if node.module:  # from X import name: X itself runs
                targets.append(module)
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def test_the_package_imports_no_circle():
    """No module of tvm_partial reaches itself through its imports, those inside functions
    included (``cli`` <-> ``demo``, ``artifact.export`` <-> ``artifact.reexport`` and
    ``artifact.inspect`` <-> ``weights`` were such circles). An import of an ancestor package
    (``from .. import _ffi_api`` runs ``tvm_partial/__init__.py`` first) is Python's own order,
    not a dependency. And each command module imports first in a fresh interpreter."""
    modules = _package_modules()
    assert {"tvm_partial.cli.main", "tvm_partial.artifact.export", "tvm_partial.weights"} <= set(modules)
    graph = {
        name: {t for t in _imports(name, path, set(modules)) if not name.startswith(t + ".")}
        for name, path in modules.items()
    }
    assert "tvm_partial.cli.text" in graph["tvm_partial.cli.demo.conv2d"]  # the check sees imports

    def circle(start: str, seen: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(graph[start]):
            if nxt in seen:
                return (*seen[seen.index(nxt) :], nxt)
            found = circle(nxt, (*seen, nxt))
            if found:
                return found
        return None

    assert [c for name in graph if name != "tvm_partial" and (c := circle(name, (name,)))] == []
    for name in (n for n in modules if n.startswith("tvm_partial.cli")):
        proc = subprocess.run(
            [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, (name, proc.stderr[-2000:])


def test_demo_calls_must_be_a_count():
    proc = cli("demo", "--calls", "-3")
    assert proc.returncode == 2 and "'-3' is not a whole number of calls (0 or more)" in proc.stderr


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
    assert (
        "[ok] a fresh process without tvm-partial loaded it (tvm.runtime.load_module) and got the same bits "
        "from (data, out)"
    ) in proc.stdout


def test_inspect_text(demo_run):
    _, out = demo_run
    proc = cli("inspect", str(out / "conv2d_bias.so"))
    assert proc.returncode == 0, proc.stderr
    assert "tvm-partial format version 3, 896 B of constants (inline)" in proc.stdout
    assert "function main(data, result)" in proc.stdout
    assert "bound 1 weights: tensor float32[8x3x3x3] on cpu:0, 864 B" in proc.stdout
    assert "bound 2 bias: tensor float32[8] on cpu:0, 32 B" in proc.stdout


def test_inspect_json(demo_run):
    _, out = demo_run
    proc = cli("inspect", str(out / "conv2d_bias.so"), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["format_version"] == 3 and info["constant_bytes"] == 896 and info["payloads"] == "inline"
    (fn,) = info["functions"]
    assert fn["name"] == "main" and fn["free"] == ["data", "result"]
    assert fn["param_names"] == ["data", "weights", "bias", "result"]
    assert [
        (b["position"], b["name"], b["dtype"], b["shape"], b["device"], b["bytes"]) for b in fn["bindings"]
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
    assert "tvm-partial format version 3" in proc.stdout and "function main(x)" in proc.stdout
    assert "output 1 y: tensor float32[x.shape[0]x4], allocated per call and returned" in proc.stdout
    info = json.loads(cli("inspect", str(tmp_path / "o.so"), "--json").stdout)
    assert info["functions"][0]["outputs"] == [
        {"position": 1, "name": "y", "dtype": "float32", "shape": ["x.shape[0]", 4]}
    ]
    assert info["functions"][0]["free"] == ["x"]


def test_inspect_scalars(tmp_path):
    pm = tvm_partial.partial(tvm.compile(_scalar_kernel(), target="llvm"), {1: 2.5})
    tvm_partial.export_library(pm, tmp_path / "s.so")
    proc = cli("inspect", str(tmp_path / "s.so"))
    assert "function main(unknown names)" in proc.stdout and "bound 1: float 2.5" in proc.stdout
    info = json.loads(cli("inspect", str(tmp_path / "s.so"), "--json").stdout)
    assert info["functions"][0]["bindings"] == [{"position": 1, "kind": "float", "value": 2.5}]
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
    assert proc.returncode == 0 and "intact: 2 payloads, 896 B, match their recorded hashes" in proc.stdout


def test_version():
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_partial", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"tvm-partial {tvm_partial.__version__}"


# -- sizes, progress -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "nbytes, shown",
    [
        (0, "0 B"),
        (12, "12 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1535, "1 KiB"),
        (19 * 1024, "19 KiB"),
        (2**20 - 513, "1023 KiB"),
        (2**20 - 1, "1.0 MiB"),  # would round to 1024 KiB: shown in the next unit
        (2**20, "1.0 MiB"),
        (256 * 2**20, "256.0 MiB"),
        (2**30 - 1, "1.0 GiB"),
        (2**30, "1.0 GiB"),
        (int(1.5 * 2**30), "1.5 GiB"),
        (2**40, "1.0 TiB"),
        (2**60, "1024.0 PiB"),
    ],
)
def test_format_size_at_the_unit_boundaries(nbytes, shown):
    assert format_size(nbytes) == shown


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_one_updating_line_on_a_terminal(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(_progress.time, "monotonic", lambda: clock[0])
    stream, total = FakeTTY(), 2**30
    with Progress("verify x.so", total, stream=stream) as progress:
        progress(0, total)
        clock[0] += 0.05
        progress(2**28, total)  # within 0.1 s of the last draw: throttled
        clock[0] += 0.2
        progress(2**29, total)
        clock[0] += 0.2
        progress(total, total)
    assert stream.getvalue() == (
        "\rverify x.so:   0% (0 B of 1.0 GiB)"
        "\rverify x.so:  50% (512.0 MiB of 1.0 GiB)"
        "\rverify x.so: 100% (1.0 GiB of 1.0 GiB)"
        "\rverify x.so: 100% (1.0 GiB of 1.0 GiB)\n"
    )


@pytest.mark.parametrize(
    "stream, quiet, total",
    [
        (io.StringIO(), None, 2**30),  # not a terminal
        (FakeTTY(), True, 2**30),  # --quiet
        (FakeTTY(), None, 64 * 2**20 - 1),  # too small to be worth a line
    ],
)
def test_progress_silent_off_a_terminal_quiet_or_small(stream, quiet, total):
    progress = Progress("verify x.so", total, quiet=quiet, stream=stream)
    for done in (0, total // 2, total):
        progress(done, total)
    progress.close()
    assert stream.getvalue() == ""


def test_progress_learns_the_total_from_its_calls():
    stream = FakeTTY()
    with Progress("verify", 0, stream=stream) as progress:
        progress(64 * 2**20, 64 * 2**20)
    assert stream.getvalue().endswith("\rverify: 100% (64.0 MiB of 64.0 MiB)\n")


def test_verify_reports_progress_in_chunks(tmp_path):
    """verify(path, progress=) counts over all payloads, 1 MiB at a time, ending at the total."""
    exe = _kernel16()
    big = np.arange(3 * 2**18 + 5, dtype="float32")  # 3 MiB + 20 bytes: four chunks
    pm = tvm_partial.partial(exe, {1: big, 2: np.ones(16, "float32")})
    tvm_partial.export_library(pm, tmp_path / "big.so")
    tvm_partial.save_weights(pm, tmp_path / "big.safetensors")
    for path in (tmp_path / "big.so", tmp_path / "big.safetensors"):
        calls = []
        report = tvm_partial.verify(path, progress=lambda done, total, seen=calls: seen.append((done, total)))
        total = big.nbytes + 64
        assert report["intact"] and report["bytes"] == total
        assert [done for done, _ in calls] == [2**20, 2 * 2**20, 3 * 2**20, big.nbytes, total, total]
        assert {t for _, t in calls} == {total}
        assert report == tvm_partial.verify(path)  # the same report without a callback


def _kernel16():
    from tvm import te

    x = te.placeholder((16,), "float32", name="x")
    w = te.placeholder((16,), "float32", name="w")
    b = te.placeholder((16,), "float32", name="b")
    return compile_te([x, w, b, te.compute((16,), lambda i: x[i] * w[i] + b[i], name="out")])


def test_verify_shows_progress_on_a_terminal_and_not_with_quiet(tmp_path):
    """The command itself: stderr a pseudo-terminal, a 64 MiB weights file; --quiet silences it."""
    import pty

    pm = tvm_partial.partial(_kernel16(), {1: np.zeros(2**24, "float32"), 2: np.ones(16, "float32")})
    tvm_partial.save_weights(pm, tmp_path / "w.safetensors")
    for quiet in (False, True):
        leader, follower = pty.openpty()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "tvm_partial", "verify", str(tmp_path / "w.safetensors")]
                + (["--quiet"] if quiet else []),
                stdout=subprocess.PIPE,
                stderr=follower,
                text=True,
                timeout=300,
            )
            os.close(follower)
            shown = b""
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # EIO: the terminal has no writer left
                    break
                if not chunk:
                    break
                shown += chunk
        finally:
            os.close(leader)
        assert proc.returncode == 0
        if quiet:
            assert shown == b"" and proc.stdout == ""
        else:
            assert shown.endswith(b": 100% (64.0 MiB of 64.0 MiB)\r\n") and shown.startswith(b"\rverify "), (
                shown
            )
            assert proc.stdout.strip().endswith("intact: 2 payloads, 64.0 MiB, match their recorded hashes")


def test_verify_quiet_still_names_damage(tmp_path):
    pm = tvm_partial.partial(_kernel16(), {1: np.arange(16, dtype="float32"), 2: np.ones(16, "float32")})
    tvm_partial.export_library(pm, tmp_path / "k.so")
    proc = cli("verify", "--quiet", str(tmp_path / "k.so"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    at = tvm_partial.verify(tmp_path / "k.so")["payloads"][0]["file_offset"]
    data = bytearray((tmp_path / "k.so").read_bytes())
    data[at + 4] ^= 1
    (tmp_path / "bad.so").write_bytes(bytes(data))
    proc = cli("verify", "-q", str(tmp_path / "bad.so"))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{tmp_path / 'bad.so'}: DAMAGED: function 'main' position 1: 64 B at file offset {at} (inline) "
        "do not match their recorded hash",
        f"{tmp_path / 'bad.so'}: 1 of 2 payloads damaged; copy or export the artifact again",
    ]


# -- what inspect reads --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """One partial module (out = 2a + 3b + c, b and c bound) as every kind of file inspect reads:
    a default and a self-contained library, save_to_bytes output, save_weights' file, and a
    library whose weights live in a file beside it. Names do not say the kind."""
    folder = tmp_path_factory.mktemp("kinds")
    a, b, c = (ints(16, seed=s) for s in (1, 2, 3))
    exe, sig = _affine()
    pm = tvm_partial.partial(exe, signature=sig, b=b, c=c)
    tvm_partial.export_library(pm, folder / "plain.so")
    tvm_partial.export_library(pm, folder / "sc.so", self_contained=True)
    tvm_partial.export_library(pm, folder / "ext.so", weights_file=folder / "ext.safetensors")
    (folder / "blob.so").write_bytes(tvm_partial.save_to_bytes(pm))  # not a library, whatever its name
    tvm_partial.save_weights(pm, folder / "weights.bin")
    np.save(folder / "a.npy", a)
    np.save(folder / "expected.npy", affine4_ref(a, b, c))
    return folder


def _affine():
    from tvm import te

    a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
    out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    return compile_te([a, b, c, out]), [a, b, c, out]


_LOAD_WITHOUT_TVM_PARTIAL = """
import json, os, sys
sys.modules["tvm_partial"] = None   # not importable: an import would raise
import numpy as np
import tvm
folder, result = sys.argv[1], {}
for name in ("plain.so", "sc.so"):
    try:
        lib = tvm.runtime.load_module(os.path.join(folder, name))
        out = tvm.runtime.empty((16,), "float32")
        lib(tvm.runtime.tensor(np.load(os.path.join(folder, "a.npy"))), out)
        result[name] = bool(np.array_equal(out.numpy(), np.load(os.path.join(folder, "expected.npy"))))
    except Exception as err:
        result[name] = type(err).__name__ + ": " + str(err)
with open("/proc/self/maps") as maps:
    result["extension_mapped"] = "libtvm_partial.so" in maps.read()
print(json.dumps(result))
"""


def test_inspect_says_whether_an_artifact_is_self_contained_and_is_right(kinds):
    plain, sc = (json.loads(cli("inspect", "--json", str(kinds / n)).stdout) for n in ("plain.so", "sc.so"))
    assert (plain["kind"], plain["self_contained"], sc["kind"], sc["self_contained"]) == (
        "library",
        False,
        "library",
        True,
    )
    assert (
        "  self-contained: embeds tvm-partial's loader, loads with TVM alone"
        in cli("inspect", str(kinds / "sc.so")).stdout.splitlines()
    )
    assert (
        "  needs tvm-partial where it is loaded (not self-contained; export with"
        in cli("inspect", str(kinds / "plain.so")).stdout
    )
    # The claims, checked: TVM alone (no backend autoload, tvm_partial not importable) loads and
    # runs the self-contained one, bitwise right, and cannot load the other.
    result = run_json(_LOAD_WITHOUT_TVM_PARTIAL, str(kinds), env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result["sc.so"] is True and result["extension_mapped"] is False
    assert result["plain.so"].startswith("RuntimeError: Library binary was created using {partial_apply}")


def test_inspect_reads_save_to_bytes_output(kinds):
    info = json.loads(cli("inspect", "--json", str(kinds / "blob.so")).stdout)
    lib = json.loads(cli("inspect", "--json", str(kinds / "plain.so")).stdout)
    assert (info["kind"], info["self_contained"], info["payloads"]) == ("save_to_bytes", None, "inline")
    assert info["functions"] == lib["functions"] and info["constant_bytes"] == lib["constant_bytes"] == 128
    assert info["total_bytes"] == (kinds / "blob.so").stat().st_size
    text = cli("inspect", str(kinds / "blob.so")).stdout.splitlines()
    assert text[0] == f"{kinds / 'blob.so'}: save_to_bytes data format version 3, 128 B of constants (inline)"
    assert "  function main(a, out)" in text and "    bound 1 b: tensor float32[16] on cpu:0, 64 B" in text
    # verify reads its payloads too: a flipped payload byte is named.
    report = tvm_partial.verify(kinds / "blob.so")
    assert report["intact"] and [p["name"] for p in report["payloads"]] == ["b", "c"]
    data = bytearray((kinds / "blob.so").read_bytes())
    data[report["payloads"][1]["file_offset"]] ^= 0x80
    bad = kinds.parent / "blob_bad.bin"
    bad.write_bytes(bytes(data))
    assert [p["name"] for p in tvm_partial.verify(bad)["damaged"]] == ["c"]
    assert cli("verify", str(bad)).returncode == 1


def test_inspect_reads_weights_files(kinds):
    """save_weights' file (named .bin: the kind comes from the bytes) and export's weights file:
    tensors, dtypes, shapes, sizes, and what tvm-partial recorded in __metadata__. The expected
    offsets and hashes are computed here from the file's bytes (its safetensors header read with
    json, the payloads hashed with the test's own copy of the format's hash), not taken from the
    reader under test."""
    import struct

    from helpers import format_hash

    raw = (kinds / "weights.bin").read_bytes()
    (length,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8 : 8 + length])
    expected = {}
    for key in ("b", "c"):
        begin, end = header[key]["data_offsets"]
        expected[key] = {
            "file_offset": 8 + length + begin,
            "hash": f"{format_hash(raw[8 + length + begin : 8 + length + end]):016x}",
        }
    hashes = {p["key"]: p for p in tvm_partial.verify(kinds / "weights.bin")["payloads"]}
    assert {k: p["file_offset"] for k, p in hashes.items()} == {
        k: e["file_offset"] for k, e in expected.items()
    }
    info = json.loads(cli("inspect", "--json", str(kinds / "weights.bin")).stdout)
    assert info["kind"] == "weights file" and info["self_contained"] is None
    assert info["metadata"]["tvm_partial.format"] == "1"
    assert json.loads(info["metadata"]["tvm_partial.bindings"]) == {
        "b": ["main", 1],
        "c": ["main", 2],
    }
    assert [
        (t["key"], t["dtype"], t["shape"], t["bytes"], t["offset"]) for t in info["functions"][0]["bindings"]
    ] == [(k, "float32", [16], 64, hashes[k]["file_offset"]) for k in ("b", "c")]
    recorded = json.loads(info["metadata"]["tvm_partial.hashes"])
    assert recorded == {k: e["hash"] for k, e in expected.items()}
    assert {t["key"]: t["hash"] for t in info["functions"][0]["bindings"]} == recorded
    text = cli("inspect", str(kinds / "weights.bin")).stdout.splitlines()
    assert text[0] == (
        f"{kinds / 'weights.bin'}: safetensors weights file, 2 tensors, 128 B of tensors "
        f"(file {format_size((kinds / 'weights.bin').stat().st_size)})"
    )
    assert text[1].startswith("  written by tvm-partial (tvm_partial.format 1)")
    assert (
        f"  tensor c: float32[16], 64 B at file offset {hashes['c']['file_offset']}, "
        f"function main position 2, hash {recorded['c']}"
    ) in text
    ext = cli("inspect", str(kinds / "ext.safetensors")).stdout
    assert "2 tensors, 128 B of tensors" in ext and "tensor b: float32[16], 64 B" in ext


def test_inspect_json_sizes_are_integer_bytes(kinds):
    def sizes(node, key=""):
        if isinstance(node, dict):
            return [s for k, v in node.items() for s in sizes(v, k)]
        if isinstance(node, list):
            return [s for v in node for s in sizes(v, key)]
        return [(key, node)] if key.endswith("bytes") else []

    for name in ("plain.so", "ext.so", "blob.so", "weights.bin"):
        found = sizes(json.loads(cli("inspect", "--json", str(kinds / name)).stdout))
        assert found and all(type(v) is int for _, v in found), (name, found)


# -- errors and help -----------------------------------------------------------------------------
def _without_file_capabilities():
    """In the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so that
    root, after exec, is refused a file without read permission like anyone else."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_unreadable_paths_one_clean_line(tmp_path, command):
    secret = tmp_path / "secret.so"
    secret.write_bytes(b"\x7fELF" + bytes(100))
    secret.chmod(0)
    cases = {
        tmp_path / "missing.so": "No such file or directory",
        tmp_path: "is a folder, not a file",
        secret: "Permission denied",
    }
    for path, reason in cases.items():
        proc = subprocess.run(
            [sys.executable, "-m", "tvm_partial", command, str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=_without_file_capabilities if os.geteuid() == 0 else None,
        )
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
        assert proc.stderr == f"tvm-partial {command}: cannot read {path}: {reason}\n"


@pytest.mark.parametrize("command", [[], ["demo"], ["inspect"], ["verify"]])
def test_help_is_plain_text(command):
    proc = cli(*command, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: tvm-partial")
    for markup in ("``", ":func:", ":class:", ".. "):
        assert markup not in proc.stdout, (command, proc.stdout)


def test_a_reader_that_stops_early_is_no_error(kinds):
    """`tvm-partial inspect x | head -1`: the pipe closes before the output is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tvm_partial", "inspect", "--json", str(kinds / "plain.so")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # nobody reads: writing raises EPIPE
    _, err = proc.communicate(timeout=300)
    assert (proc.returncode, err) == (0, b"")


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_json_output_says_why_a_file_cannot_be_read(tmp_path, command):
    """With --json the verdict is on stdout too (a reader of stdout alone is not left with
    nothing): the path, the reason and the exit code."""
    missing = tmp_path / "missing.so"
    proc = cli(command, str(missing), "--json")
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report == {
        "path": str(missing),
        "error": f"cannot read {missing}: No such file or directory",
        "exit_code": 2,
    }


def test_load_of_a_file_that_is_not_an_artifact_says_so(tmp_path):
    """tvm_partial.load of a Python file: not TVM's "Loader for .py files is not registered"."""
    notes = tmp_path / "notes.py"
    notes.write_text("print('hello')\n")
    with pytest.raises(
        ValueError, match=r"notes\.py is not a tvm-partial artifact: not an ELF shared library"
    ):
        tvm_partial.load(notes)


def test_inspect_of_a_large_model_summarises_and_lists_all_on_request(tmp_path):
    """A model of 60 tensors: the first 20 listed, the rest counted with their bytes; --all lists
    every one; --json always has them all."""
    pm = tvm_partial.partial(lambda *args: None, {i: np.full(16, i, "float32") for i in range(60)})
    tvm_partial.save_weights(pm, tmp_path / "big.safetensors")
    text = cli("inspect", str(tmp_path / "big.safetensors")).stdout.splitlines()
    assert sum(line.startswith("  tensor ") for line in text) == 20
    assert text[-1] == "  ... and 40 more tensors (2 KiB; --all lists them)"
    every = cli("inspect", "--all", str(tmp_path / "big.safetensors")).stdout.splitlines()
    assert sum(line.startswith("  tensor ") for line in every) == 60 and not every[-1].startswith("  ...")
    info = json.loads(cli("inspect", "--json", str(tmp_path / "big.safetensors")).stdout)
    assert len(info["functions"][0]["bindings"]) == 60
