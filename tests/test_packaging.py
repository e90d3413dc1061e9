# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The wheel users install (scripts/build_wheel.sh), the command line's version, and the build's
refusal of systems other than Linux.

The wheel tests are `slow`: .ci/run builds the wheel once and names it in TVM_PARTIAL_WHEEL, which
they read; without it the fixture builds one (about a minute, once per session)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
assert _VERSION is not None, "pyproject.toml names no version"
PYPROJECT_VERSION = _VERSION.group(1)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """(path, file names, dist-info folder) of the repaired wheel: TVM_PARTIAL_WHEEL's, or built."""
    given = os.environ.get("TVM_PARTIAL_WHEEL")
    if given:
        path = Path(given)
        assert path.is_file(), f"TVM_PARTIAL_WHEEL={given}: no such file"
    else:
        path = _build_wheel(tmp_path_factory.mktemp("dist"))
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
    dist_info = f"tvm_partial-{PYPROJECT_VERSION}.dist-info"
    return path, names, dist_info


def _build_wheel(out: Path) -> Path:
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_wheel.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    path = Path(proc.stdout.strip().splitlines()[-1])
    assert path.parent == out and path.is_file()
    return path


@pytest.mark.slow
def test_wheel_is_manylinux_without_a_copy_of_libtvm_ffi(wheel):
    path, names, _ = wheel
    # manylinux_2_28, the tag of the apache-tvm and apache-tvm-ffi wheels: it installs wherever they do.
    assert path.name == f"tvm_partial-{PYPROJECT_VERSION}-py3-none-manylinux_2_28_x86_64.whl"
    assert {
        "tvm_partial/lib/libtvm_partial.so",
        "tvm_partial/lib/tvm_partial_embed.o",
        "tvm_partial/include/tvm_partial/partial_apply.h",
        "tvm_partial/lib/cmake/tvm_partial/tvm_partial-config.cmake",
        "tvm_partial/__init__.py",
        "tvm_partial/cli/main.py",
        "tvm_partial/cli/text.py",
        "tvm_partial/cli/demo/conv2d.py",
        "tvm_partial/cli/demo/relax.py",
    } <= names
    # libtvm_ffi comes from the apache-tvm-ffi wheel; nothing is grafted into tvm_partial.libs/.
    assert not [n for n in names if "libtvm_ffi" in n or n.startswith("tvm_partial.libs/")]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_wheel_library_and_loader_object_need_nothing_newer_than_glibc_2_28(wheel, tmp_path):
    """No libstdc++ of the system's (it is linked in, hidden) and no glibc symbol version past
    2.28, in the library and in the object that self-contained artifacts link."""
    path, _, _ = wheel
    with zipfile.ZipFile(path) as whl:
        whl.extractall(
            tmp_path, members=["tvm_partial/lib/libtvm_partial.so", "tvm_partial/lib/tvm_partial_embed.o"]
        )
    lib, obj = (
        tmp_path / "tvm_partial/lib/libtvm_partial.so",
        tmp_path / "tvm_partial/lib/tvm_partial_embed.o",
    )
    dynamic = subprocess.run(
        ["objdump", "-T", "-p", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    glibc = {tuple(map(int, v.split("."))) for v in re.findall(r"\(GLIBC_([\d.]+)\)", dynamic)}
    assert glibc and max(glibc) <= (2, 28), sorted(glibc)
    assert "GLIBCXX_" not in dynamic and "CXXABI_" not in dynamic and "libstdc++" not in dynamic
    # The object's undefined symbols: none of libstdc++'s (std::, the C++ runtime's __cxa_*).
    undefined = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in undefined.splitlines() if "*UND*" in line}
    from_libstdcxx = {n for n in names if n.startswith(("_ZNSt", "_ZNKSt", "_ZSt", "__cxa_throw", "__gxx_"))}
    assert names and not from_libstdcxx, sorted(from_libstdcxx)[:10]


@pytest.mark.slow
def test_wheel_metadata_declares_version_and_dependencies(wheel):
    path, _, dist_info = wheel
    with zipfile.ZipFile(path) as whl:
        meta = whl.read(f"{dist_info}/METADATA").decode()
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    assert f"\nVersion: {PYPROJECT_VERSION}\n" in meta
    requires = re.findall(r"^Requires-Dist: ([\w.-]+)", meta, re.M)
    assert {"apache-tvm", "apache-tvm-ffi", "numpy"} <= set(requires)
    assert "tvm-partial = tvm_partial.cli:main" in entry_points


@pytest.mark.slow
def test_wheel_has_license(wheel):
    path, names, dist_info = wheel
    found = [n for n in (f"{dist_info}/licenses/LICENSE", f"{dist_info}/LICENSE") if n in names]
    assert found, sorted(n for n in names if n.startswith(dist_info))
    with zipfile.ZipFile(path) as whl:
        assert whl.read(found[0]) == (ROOT / "LICENSE").read_bytes()


@pytest.mark.slow
def test_wheel_has_py_typed(wheel):
    assert "tvm_partial/py.typed" in wheel[1]


def test_build_wheel_needs_outdir():
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_wheel.sh")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "usage: scripts/build_wheel.sh OUTDIR" in proc.stderr


def test_console_script_prints_the_package_version():
    # The [project.scripts] entry users run, next to this interpreter (venvs put both in bin/).
    script = Path(sys.executable).parent / "tvm-partial"
    if not script.exists():
        pytest.skip("the tvm-partial script is not installed beside this interpreter")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"tvm-partial {PYPROJECT_VERSION}\n"
    assert metadata.version("tvm-partial") == PYPROJECT_VERSION


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_cmake_refuses_systems_other_than_linux(tmp_path, system):
    # The project's own CMakeLists.txt, configured for another system: refused before the
    # compilers are tried, with the reason and what to do.
    proc = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(tmp_path), f"-DCMAKE_SYSTEM_NAME={system}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert f"tvm-partial builds only for Linux (ELF), not for {system}:" in message
    assert "dl_iterate_phdr" in message and "Build and deploy it on Linux." in message
    assert not list(tmp_path.glob("CMakeFiles/*/CMakeCXXCompiler.cmake"))
