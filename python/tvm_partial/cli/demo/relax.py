# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``tvm-partial demo --relax``: a small ``frontend.nn`` model bound by parameter names, exported as one
library, reloaded in a fresh process, checked against numpy and the direct VM call. Meant to be copied."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

import tvm_partial
from tvm_partial.cli.demo import report
from tvm_partial.cli.text import format_inspect

_RELOAD = """
import sys, numpy as np, tvm
m = tvm.runtime.load_module(sys.argv[1])
np.save(sys.argv[3], m["forward"](tvm.runtime.tensor(np.load(sys.argv[2]))).numpy())
"""


def build() -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    """-> (executable, {dotted name: weights}, x): a two-layer MLP from frontend.nn."""
    import tvm
    from tvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.fc1 = nn.Linear(16, 32, bias=True)
            self.fc2 = nn.Linear(32, 4, bias=True)

        def forward(self, x: Any) -> Any:
            return self.fc2(nn.relu(self.fc1(x)))

    mod, specs = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 16), "float32")}})
    rng = np.random.default_rng(0)  # small integers: float sums are exact, results compare bitwise
    params = {name: rng.integers(-3, 4, size=[int(d) for d in p.shape]).astype(p.dtype) for name, p in specs}
    x = rng.integers(-3, 4, size=(2, 16)).astype("float32")
    return tvm.compile(mod, target="llvm"), params, x


def run(
    out_dir: str | None = None, self_contained: bool = False, echo: Callable[[str], object] = print
) -> int:
    """The journey for a Relax model; returns the exit status (0 when every check passed)."""
    import tvm
    from tvm import relax

    echo("tvm-partial demo --relax: a two-layer MLP from frontend.nn, its weights bound by name")
    echo(f"its code, to read and copy: {os.path.abspath(__file__)}")
    echo("")
    exe, params, x = build()
    hidden = np.maximum(x @ params["fc1.weight"].T + params["fc1.bias"], 0)
    expected = hidden @ params["fc2.weight"].T + params["fc2.bias"]  # numpy's answer
    direct = relax.VirtualMachine(exe, tvm.cpu())["forward"](
        tvm.runtime.tensor(x), *(tvm.runtime.tensor(v) for v in params.values())
    ).numpy()
    pm = tvm_partial.partial(exe, function="forward", device=tvm.cpu(), **params)
    echo(f"bound forward({', '.join(tvm_partial.param_names(pm)['forward'])}): free x")
    out = pm["forward"](tvm.runtime.tensor(x)).numpy()
    checks = {
        "Relax partial == numpy (bitwise)": np.array_equal(out, expected),
        "Relax partial == direct VM call (bitwise)": np.array_equal(out, direct),
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = out_dir or tmp
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "relax_mlp.so")
        tvm_partial.export_library(pm, path, self_contained=self_contained)
        np.save(os.path.join(folder, "x.npy"), x)
        result = os.path.join(folder, "relax_out.npy")
        env = dict(os.environ)
        if self_contained:
            env["TVM_DEVICE_BACKEND_AUTOLOAD"] = "0"
        proc = subprocess.run(
            [sys.executable, "-c", _RELOAD, path, os.path.join(folder, "x.npy"), result],
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode != 0:
            echo(proc.stderr.strip())
        where = "without tvm-partial" if self_contained else "in a fresh process"
        checks[f"Relax model reloaded {where} == numpy (bitwise)"] = proc.returncode == 0 and np.array_equal(
            np.load(result), expected
        )
        status = report(checks, echo)
        echo("")
        kept = "" if out_dir else " (a temporary folder; keep the file with --out DIR)"
        echo(f"exported {path}{kept}; what it binds (tvm-partial inspect):")
        echo(format_inspect(tvm_partial.inspect(path)))
    return status
