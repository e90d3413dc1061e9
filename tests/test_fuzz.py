# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Fuzzing: the regression inputs stay refused, and the loader fuzzer runs clean for a minute."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_json

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = sorted((ROOT / "tests" / "fuzz_regressions").glob("*.bin"))


def _libfuzzer_available() -> bool:
    if shutil.which("clang++") is None:
        return False
    probe = subprocess.run(
        ["clang++", "-print-file-name=libclang_rt.fuzzer-x86_64.a"], capture_output=True, text=True
    )
    runtime = probe.stdout.strip()
    if Path(runtime).is_file():
        return True
    probe = subprocess.run(["clang++", "--print-runtime-dir"], capture_output=True, text=True)
    return any(Path(probe.stdout.strip()).glob("libclang_rt.fuzzer*.a"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.name for p in REGRESSIONS])
def test_regression_input_refused(path):
    result = run_json(
        """
        import json, sys, tvm_ffi, tvm_partial
        data = open(sys.argv[1], "rb").read()
        try:
            tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")(data)
            print(json.dumps("accepted"))
        except ValueError as err:
            print(json.dumps(str(err)))
        """,
        str(path),
    )
    assert result.startswith("corrupted partial_apply data") or result.startswith("not partial_apply data"), (
        result
    )


@pytest.mark.skipif(
    not _libfuzzer_available(), reason="clang++ with libFuzzer (libclang-rt-dev) is not installed"
)
def test_fuzzer_runs_clean_for_a_minute():
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fuzz.sh"), "60", sys.executable],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "Done " in tail and "ERROR: AddressSanitizer" not in tail and "runtime error" not in tail, tail
