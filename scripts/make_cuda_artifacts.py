# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Build what scripts/cuda_check.py needs into FOLDER (default gpu/): a CUDA kernel library and
TVM's runtime libraries (for a GPU machine without the full tvm package). Needs nvcc here.

    python scripts/make_cuda_artifacts.py [FOLDER]
"""

import os
import shutil
import sys

import tvm
import tvm.support.nvcc
from tvm import te

FOLDER = sys.argv[1] if len(sys.argv) > 1 else "gpu"
os.makedirs(FOLDER, exist_ok=True)
n = 1024
a, b, c = (te.placeholder((n,), "float32", name=x) for x in "abc")
out = te.compute((n,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
sch = tvm.s_tir.Schedule(te.create_prim_func([a, b, c, out]))
(i,) = sch.get_loops(sch.get_sblock("out") if hasattr(sch, "get_sblock") else sch.get_block("out"))
bx, tx = sch.split(i, factors=[None, 128])
sch.bind(bx, "blockIdx.x")
sch.bind(tx, "threadIdx.x")
exe = tvm.compile(sch.mod, target=tvm.target.Target({"kind": "cuda", "arch": "sm_90"}))
exe.export_library(os.path.join(FOLDER, "cuda_affine.so"))
lib_dir = os.path.dirname(tvm.libinfo.find_libtvm_runtime())
for name in ("libtvm_runtime.so", "libtvm_runtime_cuda.so"):
    shutil.copy(os.path.join(lib_dir, name), os.path.join(FOLDER, name))
