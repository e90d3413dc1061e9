# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Fuzzing: the regression inputs stay refused, and each fuzzer (the loader, the weights-file
reader) runs clean for a minute.

The regression inputs of each target are read in one interpreter (helpers.run_cases: an input
that crashes it fails naming that input, and the others go on in a new one). The weights-file
inputs (tests/fuzz_regressions/weights/) go through every reader of a weights file, against the
fixed artifact the fuzzer uses (helpers.weights_fuzz_artifact). The fuzzers' minutes are `slow`;
where clang++ or its libFuzzer runtime is missing they are skipped, except under CI (the CI
environment variable, which .ci/run sets), where a fuzzer that cannot run is a failure.
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
WEIGHTS_REGRESSIONS = sorted((ROOT / "tests" / "fuzz_regressions" / "weights").glob("*.bin"))


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


# Each reader of a weights file, as fuzz/fuzz_weights.cc reaches it: open_weights, inspect and
# verify of the file; load(model.so, weights_file=it); and the file as the fixed artifact's own
# weights file (model.safetensors), which load, inspect and verify of the artifact read.
_WEIGHTS_READERS = f"""
import os, sys, tempfile
sys.path.insert(0, {str(ROOT / "tests")!r})
import tvm_partial
from tvm_partial import weights
from helpers import weights_fuzz_artifact
work = tempfile.TemporaryDirectory(prefix="weights_regressions_")  # removed at exit
art = weights_fuzz_artifact(work.name)
lib, own = art["lib"], art["weights"]
def run_case(path):
    staged = own + ".new"
    with open(path, "rb") as src, open(staged, "wb") as dst:
        dst.write(src.read())
    os.replace(staged, own)  # a new file: an earlier load's mapping keeps the old one
    readers = [
        ("open_weights", lambda: tvm_partial.open_weights(path)),
        ("inspect_weights", lambda: weights.inspect_weights(path)),
        ("verify_weights", lambda: weights.verify_weights(path)),
        ("load(weights_file=)", lambda: tvm_partial.load(lib, weights_file=path)),
        ("load", lambda: tvm_partial.load(lib)),
        ("inspect", lambda: tvm_partial.inspect(lib)),
        ("verify", lambda: tvm_partial.verify(lib)),
    ]
    out = {{}}
    for name, read in readers:
        try:
            read()
            out[name] = "accepted"
        except Exception as err:
            out[name] = f"{{type(err).__name__}}: {{err}}"
    return out
"""

# The crafted inputs and the check of the reader each one must meet (inspect_weights' message).
WEIGHTS_CHECKS = {
    "data_offsets_past_2_64": "data_offsets is not [begin, end]",
    "data_offsets_past_the_data": "its data ends at byte 4 of the data, which has 2",
    "data_offsets_reversed": "data_offsets is not [begin, end]",
    "dtype_unread_complex": "dtype 'C64' is not one tvm-partial reads",
    "header_claims_over_100_mib": "its JSON header claims 104857601 bytes, more than the 104857600 read",
    "header_length_past_the_file": "is truncated: its JSON header needs 72 bytes, the file has 16",
    "header_nested_past_the_bound": "JSON header nests deeper than 8 levels",
    "header_not_an_object": "malformed JSON header (not an object)",
    "header_not_utf_8": "JSON header is not UTF-8",
    "key_position_no_call_reaches": "names position 9223372036854775807, which no call can reach",
    "metadata_record_nested_past_the_bound": "tvm_partial.hashes record nests deeper than 1 levels",
    "metadata_value_not_a_string": "__metadata__ holds a value that is not a string",
    "shape_65_dimensions": "shape is not a list of at most 64 non-negative ints",
    "shape_negative_dimension_beside_a_zero": "shape is not a list of at most 64 non-negative ints",
    "shape_product_past_2_64": "the shape's element count overflows",
    "shape_zero_beside_a_product_past_int64": "shape [0, 4611686018427387904, 16]: the shape's element count overflows",
    "tensors_overlap": "tensors 'a' and 'b' overlap in the file",
}


@pytest.fixture(scope="module")
def weights_read():
    """{input name: {reader: "accepted" or "KIND: message"}, or a Crash}."""
    results = run_cases(_WEIGHTS_READERS, [str(p) for p in WEIGHTS_REGRESSIONS])
    return dict(zip((p.stem for p in WEIGHTS_REGRESSIONS), results))


def test_weights_regression_inputs_are_there():
    assert {p.stem for p in WEIGHTS_REGRESSIONS} >= set(WEIGHTS_CHECKS)


@pytest.mark.parametrize("name", [p.stem for p in WEIGHTS_REGRESSIONS])
def test_weights_regression_input_read_safely(weights_read, name):
    """No reader crashes; each accepts or refuses with a ValueError; load, inspect and verify of
    the artifact whose weights file it is give one verdict (the one reader behind them)."""
    result = weights_read[name]
    assert not isinstance(result, Crash), str(result)
    for reader, outcome in result.items():
        assert outcome == "accepted" or outcome.startswith("ValueError: "), (reader, outcome)
    verdicts = {result[r] == "accepted" for r in ("load", "inspect", "verify")}
    assert len(verdicts) == 1, result
    if name in WEIGHTS_CHECKS:  # crafted: refused by the very check it was made for
        assert WEIGHTS_CHECKS[name] in result["inspect_weights"], result["inspect_weights"]
        assert result["open_weights"] != "accepted" and result["load"] != "accepted", result


@pytest.mark.slow
@pytest.mark.parametrize("target", ["loader", "weights"])
def test_fuzzer_runs_clean_for_a_minute(target):
    missing = _libfuzzer_missing()
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(
                f"CI: the {target} fuzzer cannot run: {missing} (apt-get install clang libclang-rt-14-dev)"
            )
        pytest.skip(f"{missing}: the {target} fuzzer cannot be built (CI fails here instead)")
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fuzz.sh"), "60", sys.executable, target],
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, tail
    assert "Done " in tail and "ERROR: AddressSanitizer" not in tail and "runtime error" not in tail, tail
