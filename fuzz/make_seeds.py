# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Write seed inputs for the loader fuzzer: real partial_apply blobs of every value kind."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tvm
from tvm import te

import tvm_partial


def main(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    x = te.placeholder((4,), "float32", name="x")
    w = te.placeholder((4,), "float32", name="w")
    exe = tvm.compile(te.create_prim_func([x, w, te.compute((4,), lambda i: x[i] * w[i], name="y")]),
                      target="llvm")
    seeds = {
        "tensors": {1: np.arange(4, dtype="float32"), 3: np.arange(6, dtype="int8").reshape(2, 3),
                    4: np.array(True), 5: np.zeros((0, 3), "float16"), 6: np.arange(3, dtype="uint8"),
                    7: np.array([1, -2], "int64")},
        "scalars": {0: 7, 1: 2.5, 2: True, 3: "text", 4: None},
        "mixed": {1: np.ones((2, 2), "float32"), 2: -(2**40), 5: "s"},
        "empty": {},
    }
    for name, bound in seeds.items():
        pm = tvm_partial.partial(exe, bound, signature=None)
        (out / f"{name}.bin").write_bytes(tvm_partial.save_to_bytes(pm))
    named = tvm_partial.partial(exe, signature=[x, w, "y"], w=np.ones(4, "float32"))
    (out / "named.bin").write_bytes(tvm_partial.save_to_bytes(named))
    two = tvm_partial.partial(tvm_partial.partial(exe, {1: 1.0}), {2: np.ones(2, "float32")}, function="main")
    (out / "merged.bin").write_bytes(tvm_partial.save_to_bytes(two))
    # Outputs with a static and a symbolic dimension.
    n = te.var("n", "int64")
    xs = te.placeholder((n, 4), "float32", name="xs")
    c = te.placeholder((4,), "float32", name="c")
    ys = te.compute((n, 4), lambda i, j: xs[i, j] + c[j], name="ys")
    zs = te.compute((4,), lambda j: c[j] * 2.0, name="zs")
    sym = tvm.compile(te.create_prim_func([xs, c, ys, zs]), target="llvm")
    returning = tvm_partial.partial(sym, signature=[xs, c, ys, zs], c=np.ones(4, "float32"), outputs=["zs", "ys"])
    (out / "outputs.bin").write_bytes(tvm_partial.save_to_bytes(returning))
    # A row shard (w bound whole, [8, 4] float32 over 2 ranks).
    ws = te.placeholder((4, 4), "float32", name="ws")
    tp = tvm.compile(te.create_prim_func([ws, te.compute((4, 4), lambda i, j: ws[i, j] * 2.0, name="o")]),
                     target="llvm")
    sharded = tvm_partial.partial(tp, signature=[ws, "o"], ws=np.ones((8, 4), "float32"), shards={"ws": 0}, world=2)
    (out / "shards.bin").write_bytes(tvm_partial.save_to_bytes(sharded))


if __name__ == "__main__":
    main(sys.argv[1])
