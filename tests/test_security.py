# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights files are data, artifacts are code (docs/security.md).

Artifacts that carry code of their own, linked through ``export_library(addons=[obj])``: a
constructor (``__attribute__((constructor))``) and an ``.init_array`` entry, each compiled with the
system's C compiler, each appending its name to the file named by TVM_PARTIAL_TEST_MARKER when it
runs. ``inspect``, ``verify`` (of the library and of its weights file), ``open_weights`` and the
command line read them without running them: no marker. ``tvm_partial.load`` and
``tvm.runtime.load_module`` run them: the marker appears, which proves the code works and that the
readers' silence means something. Each in a fresh interpreter (code that ran stays run).

And which file a recorded weights-file name leads to: relative to the folder of the artifact's
real file (symlinks resolved, ``../`` followed), an absolute name as it is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from tvm import te

import tvm_partial
from helpers import compile_te, export_recording, run_json, run_python

MARKER = "TVM_PARTIAL_TEST_MARKER"

_MARK = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void mark(void) {
  const char* path = getenv("TVM_PARTIAL_TEST_MARKER");
  if (path == NULL) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  if (write(fd, TAG "\n", strlen(TAG) + 1) < 0) {}
  close(fd);
}
"""

SOURCES = {
    "constructor": _MARK + "__attribute__((constructor)) static void at_load(void) { mark(); }\n",
    "init_array": _MARK + '__attribute__((section(".init_array"), used)) static void (*at)(void) = mark;\n',
}

WEIGHT = np.arange(8, dtype="float32") - 3


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """{mechanism: {"inline": library, "weights_file": library, "weights": its weights file}}:
    y = x * weight, weight bound, the library carrying the mechanism's code."""
    folder = tmp_path_factory.mktemp("security")
    x = te.placeholder((8,), "float32", name="x")
    w = te.placeholder((8,), "float32", name="weight")
    y = te.compute((8,), lambda i: x[i] * w[i], name="y")
    exe = compile_te([x, w, y])
    pm = tvm_partial.partial(exe, signature=[x, w, y], weight=WEIGHT)
    out = {}
    for mechanism, source in SOURCES.items():
        c_file, obj = folder / f"{mechanism}.c", folder / f"{mechanism}.o"
        c_file.write_text(source)
        subprocess.run(
            ["cc", "-c", "-fPIC", f'-DTAG="{mechanism}"', str(c_file), "-o", str(obj)],
            check=True,
            capture_output=True,
        )
        inline, external = folder / f"{mechanism}.so", folder / f"{mechanism}_w.so"
        weights = folder / f"{mechanism}.safetensors"
        tvm_partial.export_library(pm, inline, addons=[str(obj)])
        tvm_partial.export_library(pm, external, addons=[str(obj)], weights_file=weights)
        out[mechanism] = {"inline": str(inline), "weights_file": str(external), "weights": str(weights)}
    return out


def _marker(tmp_path, name="marker"):
    path = tmp_path / name
    return path, {MARKER: str(path)}


_READ = r"""
import json, sys
import numpy as np
import tvm_partial
libraries, weights_files = json.loads(sys.argv[1])
out = {}
for lib in libraries:
    info = tvm_partial.inspect(lib)
    report = tvm_partial.verify(lib)
    bound = info["functions"][0]["bindings"]
    out[lib] = [info["kind"], [b.get("name") for b in bound], report["intact"], report["checked"]]
for path in weights_files:
    info = tvm_partial.inspect(path)
    report = tvm_partial.verify(path)
    opened = tvm_partial.open_weights(path)
    out[path] = [info["kind"], report["intact"], {k: np.from_dlpack(v).tolist() for k, v in opened.items()}]
print(json.dumps(out))
"""


def test_inspect_verify_and_open_weights_run_no_code_of_the_file(artifacts, tmp_path):
    marker, env = _marker(tmp_path)
    libraries = [a[k] for a in artifacts.values() for k in ("inline", "weights_file")]
    weights_files = [a["weights"] for a in artifacts.values()]
    got = run_json(_READ, json.dumps([libraries, weights_files]), env=env)
    for lib in libraries:
        assert got[lib] == ["library", ["weight"], True, 1], lib
    for path in weights_files:
        assert got[path] == ["weights file", True, {"weight": WEIGHT.tolist()}], path
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_the_command_line_runs_no_code_of_the_file(artifacts, tmp_path, command):
    """The command on every file, in one fresh interpreter (the first through ``python -m``'s
    entry, the rest through the same ``main``): no constructor of any file ran."""
    marker, env = _marker(tmp_path)
    paths = [p for a in artifacts.values() for p in a.values()]
    proc = subprocess.run(
        [sys.executable, "-m", "tvm_partial", command, paths[0]],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    codes = run_json(
        "import json, sys\nfrom tvm_partial.cli import main\n"
        "print(json.dumps([main([sys.argv[1], p]) for p in sys.argv[2:]]))",
        command,
        *paths[1:],
        env=env,
    )
    assert codes == [0] * (len(paths) - 1), codes
    assert not marker.exists(), marker.read_text()


_LOAD = r"""
import sys
import numpy as np
import tvm
import tvm_partial
how, lib = sys.argv[1], sys.argv[2]
if how == "tvm_partial.load":
    m = tvm_partial.load(lib)
elif how == "tvm.runtime.load_module":
    m = tvm.runtime.load_module(lib)
else:
    m = tvm_partial.load(lib, weights_file=sys.argv[3])
out = tvm.runtime.empty((8,), "float32")
m(tvm.runtime.tensor(np.full(8, 2, "float32")), out)
print(out.numpy().tolist())
"""


@pytest.mark.parametrize("mechanism", sorted(SOURCES))
@pytest.mark.parametrize(
    ("placement", "how"),
    [
        ("inline", "tvm_partial.load"),
        ("weights_file", "tvm_partial.load"),
        ("inline", "tvm.runtime.load_module"),
        ("weights_file", "load(weights_file=)"),
    ],
)
def test_loading_runs_the_artifact_s_code(artifacts, tmp_path, mechanism, placement, how):
    """The positive control: the same code, the same marker, and loading runs it once."""
    marker, env = _marker(tmp_path)
    art = artifacts[mechanism]
    proc = run_python(_LOAD, how, art[placement], art["weights"], env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == (2 * WEIGHT).tolist()
    assert marker.read_text() == f"{mechanism}\n"


# ---------------------------------------------------------------------------------------------
# Which file a recorded weights-file name leads to.


@pytest.fixture(scope="module")
def module():
    x = te.placeholder((8,), "float32", name="x")
    w = te.placeholder((8,), "float32", name="weight")
    exe = compile_te([x, w, te.compute((8,), lambda i: x[i] * w[i], name="y")])
    return tvm_partial.partial(exe, signature=[x, w, "y"], weight=WEIGHT)


_COMPUTE = r"""
import sys
import numpy as np
import tvm
import tvm_partial
out = tvm.runtime.empty((8,), "float32")
tvm_partial.load(sys.argv[1])(tvm.runtime.tensor(np.ones(8, "float32")), out)
print(out.numpy().tolist())
"""


def _opened(lib) -> dict:
    """What inspect says it followed, what verify read, and what a fresh process computes."""
    region = tvm_partial.inspect(lib)["region"]["weights_file"]
    files = {p["weights_file"] for p in tvm_partial.verify(lib)["payloads"]}
    return {"inspect": region, "verify": files, "load": run_json(_COMPUTE, str(lib))}


def test_a_relative_name_is_resolved_beside_the_real_file(module, tmp_path):
    """export_library records the weights file relative to the library's folder (``../w/...``
    for a sibling folder); a symlink to the library elsewhere still leads there, not beside the
    symlink, and a decoy beside the symlink is never read."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "w").mkdir()
    (tmp_path / "elsewhere" / "w").mkdir(parents=True)
    lib, weights = tmp_path / "lib" / "model.so", tmp_path / "w" / "model.safetensors"
    tvm_partial.export_library(module, lib, weights_file=weights)
    decoy = tvm_partial.rebind(module, weight=np.zeros(8, "float32"))
    tvm_partial.save_weights(decoy, tmp_path / "elsewhere" / "w" / "model.safetensors")
    link = tmp_path / "elsewhere" / "link.so"
    link.symlink_to(lib)
    # The folder of the real file (symlinks resolved), joined with the name as recorded.
    opened = os.path.join(os.path.realpath(tmp_path / "lib"), "../w/model.safetensors")
    assert os.path.samefile(opened, weights)
    for path in (lib, link):
        assert _opened(path) == {
            "inspect": {"name": "../w/model.safetensors", "path": opened},
            "verify": {opened},
            "load": WEIGHT.tolist(),
        }


def test_an_absolute_name_is_opened_as_it_is(module, tmp_path):
    """export_library never records one; an artifact built to record one (the format allows it)
    opens that very path, wherever the library lies."""
    weights = tmp_path / "fixed" / "model.safetensors"
    weights.parent.mkdir()
    lib = tmp_path / "model.so"
    export_recording(module, lib, weights, str(weights))
    moved = tmp_path / "moved"
    moved.mkdir()
    lib = lib.rename(moved / "model.so")
    assert _opened(lib) == {
        "inspect": {"name": str(weights), "path": str(weights)},
        "verify": {str(weights)},
        "load": WEIGHT.tolist(),
    }


def test_a_recorded_name_that_is_no_weights_file_is_read_as_data_and_refused(module, tmp_path):
    """inspect and verify follow the recorded name too (a reader cannot tell the payloads are
    there otherwise): what it leads to is read as a weights file, a text file refused by its
    first 8 bytes, a device refused before it is opened (so nothing blocks)."""
    text = tmp_path / "notes.txt"
    text.write_text("not a weights file, but some bytes a user keeps\n")
    for target, reason in [(str(text), r"its JSON header claims \d+ bytes"), ("/dev/zero", "is a device")]:
        lib = tmp_path / f"{os.path.basename(target)}.so"
        scratch = tmp_path / "scratch.safetensors"
        export_recording(module, lib, scratch, target)
        for read in (tvm_partial.inspect, tvm_partial.verify):
            with pytest.raises(ValueError, match=rf"weights file {re.escape(target)}:? {reason}"):
                read(lib)
        proc = run_python("import sys, tvm_partial\ntvm_partial.load(sys.argv[1])", str(lib))
        tail = proc.stderr[-2000:]
        assert proc.returncode == 1 and f"ValueError: weights file {target}" in proc.stderr, tail


def test_tvm_runtime_load_module_alone_computes_with_the_absolute_file(module, tmp_path):
    """The recorded name is the library's own business: TVM's loader, with tvm-partial
    registered by `import tvm`, reads the same file."""
    weights = tmp_path / "abs.safetensors"
    lib = tmp_path / "sub" / "model.so"
    lib.parent.mkdir()
    export_recording(module, lib, weights, str(weights))
    code = (
        "import sys, numpy as np, tvm\n"
        "out = tvm.runtime.empty((8,), 'float32')\n"
        "tvm.runtime.load_module(sys.argv[1])(tvm.runtime.tensor(np.ones(8, 'float32')), out)\n"
        "print(out.numpy().tolist())"
    )
    assert run_json(code, str(lib)) == WEIGHT.tolist()
