# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Write seed inputs for the weights-file fuzzer (fuzz/fuzz_weights.cc) and the fixed artifact
it decodes them against.

    python fuzz/make_weights_seeds.py SEEDS_FOLDER ARTIFACT_BYTES

Seeds are real safetensors files: written by the safetensors package (every dtype tvm-partial
reads, bf16 and float8 through ml_dtypes, a complex one it does not, empty and 0-d tensors,
``__metadata__``, bare names as a state_dict has them) and by tvm-partial (``save_weights`` with
names and with positions, the weights file of a ``weights_file=`` export). ARTIFACT_BYTES gets
the partial module of that export (tests/helpers.py ``weights_fuzz_artifact``), which the fuzzer
reads from the file named by TVM_PARTIAL_FUZZ_ARTIFACT.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import safetensors.numpy as st
import tvm
from tvm import te

import tvm_partial

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import weights_fuzz_artifact  # noqa: E402


def main(folder: str, artifact_out: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fuzz_weights_") as work:
        fixed = weights_fuzz_artifact(work)
        Path(artifact_out).write_bytes(fixed["blob"])
        # Passes CheckRegionFile and loads as the artifact's own weights file.
        shutil.copy(fixed["weights"], out / "export_weights_file.safetensors")
        # Keys main/weight, main/bias, hashes and bindings recorded: loads as weights_file=.
        tvm_partial.save_weights(fixed["module"], out / "save_weights.safetensors")
    weight = np.arange(12, dtype="float32").reshape(4, 3)
    bias = np.array([0.5, -1, 2], "float16")
    # A state_dict's bare names (binds the fixed artifact; ambiguous for the fuzzer's set).
    st.save_file({"weight": weight, "bias": bias}, str(out / "bare_names.safetensors"))
    # The fuzzer's fixed set of wanted bindings, supplied exactly.
    st.save_file(
        {"main/weight": weight, "main/bias": bias, "other/weight": weight, "other/5": np.zeros(0, "int8")},
        str(out / "wanted_set.safetensors"),
    )
    dtypes = {
        "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
        "i64": np.int64, "u64": np.uint64, "i32": np.int32, "u32": np.uint32, "i16": np.int16,
        "u16": np.uint16, "i8": np.int8, "u8": np.uint8, "bool": np.bool_,
        "f8_e4m3": ml_dtypes.float8_e4m3fn, "f8_e5m2": ml_dtypes.float8_e5m2,
        "f8_e8m0": ml_dtypes.float8_e8m0fnu,
    }  # fmt: skip
    every = {name: np.arange(6).reshape(2, 3).astype(dt) for name, dt in dtypes.items()}
    st.save_file(every, str(out / "every_dtype.safetensors"), metadata={"format": "np", "note": "seed"})
    st.save_file(
        {"empty": np.zeros((0, 3), "float32"), "scalar": np.array(7, "int32"), "none": np.zeros(0, "uint8")},
        str(out / "empty_and_scalar.safetensors"),
    )
    st.save_file({"z": np.ones(2, np.complex64)}, str(out / "complex_unread.safetensors"))
    st.save_file({}, str(out / "no_tensors.safetensors"), metadata={"only": "metadata"})
    # save_weights without a signature: FUNCTION/POSITION keys, several dtypes, padding entries.
    x = te.placeholder((3,), "float32", name="x")
    exe = tvm.compile(te.create_prim_func([x, te.compute((3,), lambda i: x[i] * 2, name="y")]), target="llvm")
    positional = tvm_partial.partial(
        exe, {2: np.arange(5, dtype="int8"), 3: np.ones((2, 2), ml_dtypes.bfloat16), 4: np.array([True])}
    )
    tvm_partial.save_weights(positional, out / "save_weights_positions.safetensors")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
