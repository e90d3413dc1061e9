# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Fuzzing: the regression inputs stay refused, and the loader fuzzer runs clean for a minute.

The regression inputs load in one interpreter (helpers.run_cases: an input that crashes it fails
naming that input, and the others go on in a new one). The fuzzer's minute is `slow`; where
clang++ or its libFuzzer runtime is missing it is skipped, except under CI (the CI environment
variable, which .ci/run sets), where a fuzzer that cannot run is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Crash, run_cases

ROOT = Path(__file__).resolve().parent.parent
REGRESSIONS = sorted((ROOT / "tests" / "fuzz_regressions").glob("*.bin"))


def _libfuzzer_missing() -> str | None:
    """Why the fuzzer cannot be built here, or None."""
    if shutil.which("clang++") is None:
        return "clang++ is not installed"
    probe = subprocess.run(
        ["clang++", "-print-file-name=libclang_rt.fuzzer-x86_64.a"], capture_output=True, text=True
    )
    if Path(probe.stdout.strip()).is_file():
        return None
    probe = subprocess.run(["clang++", "--print-runtime-dir"], capture_output=True, text=True)
    if any(Path(probe.stdout.strip()).glob("libclang_rt.fuzzer*.a")):
        return None
    return "clang++ has no libFuzzer runtime (libclang-rt-dev is not installed)"


@pytest.fixture(scope="module")
def loaded():
    """{input name: the error loading it gave, "accepted", or a Crash}."""
    results = run_cases(
        """
        import tvm_ffi, tvm_partial
        load = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")
        def run_case(path):
            try:
                load(open(path, "rb").read())
                return "accepted"
            except Exception as err:
                return f"{type(err).__name__}: {err}"
        """,
        [str(p) for p in REGRESSIONS],
    )
    return dict(zip((p.name for p in REGRESSIONS), results))


def test_regression_inputs_are_there():
    assert len(REGRESSIONS) >= 23, REGRESSIONS


@pytest.mark.parametrize("name", [p.name for p in REGRESSIONS])
def test_regression_input_refused(loaded, name):
    result = loaded[name]
    assert not isinstance(result, Crash), str(result)
    assert result.startswith(
        ("ValueError: corrupted partial_apply data", "ValueError: not partial_apply data")
    ), result


@pytest.mark.slow
def test_fuzzer_runs_clean_for_a_minute():
    missing = _libfuzzer_missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(
                f"CI: the loader fuzzer cannot run: {missing} (apt-get install clang libclang-rt-14-dev)"
            )
        pytest.skip(f"{missing}: the loader fuzzer cannot be built (CI fails here instead)")
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fuzz.sh"), "60", sys.executable],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "Done " in tail and "ERROR: AddressSanitizer" not in tail and "runtime error" not in tail, tail
