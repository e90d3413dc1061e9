# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The forum's conv2d + bias kernel, its inputs and its numpy reference: what ``tvm-partial demo``
runs, and what the tests, benchmarks and the C++ deployment example compile."""

from __future__ import annotations

from typing import Any

import numpy as np

# Small integers keep float32 sums exact: results compare bitwise whatever the accumulation order.
SHAPES = {"data": (1, 3, 32, 32), "weights": (8, 3, 3, 3), "bias": (8,), "result": (1, 8, 30, 30)}


def conv2d_bias_tensors(dtype: str = "float32") -> list[Any]:
    """TE placeholders for input, weights and bias, and the conv2d + bias result."""
    from tvm import te

    data, weights, bias = (te.placeholder(SHAPES[n], dtype, name=n) for n in ("data", "weights", "bias"))
    _, c, kh, kw = SHAPES["weights"]
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    conv = te.compute(
        SHAPES["result"],  # valid padding, stride 1
        lambda b, o, y, x: te.sum(data[b, rc, y + ry, x + rx] * weights[o, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv",
    )
    result = te.compute(conv.shape, lambda b, o, y, x: conv[b, o, y, x] + bias[o], name="result")
    return [data, weights, bias, result]


def build_conv2d_bias(dtype: str = "float32") -> tuple[Any, list[Any]]:
    """-> (executable, signature tensors)."""
    import tvm
    from tvm import te

    tensors = conv2d_bias_tensors(dtype)
    return tvm.compile(te.create_prim_func(tensors), target="llvm"), tensors


def sample_inputs(seed: int = 0, dtype: str = "float32") -> dict:
    rng = np.random.default_rng(seed)
    return {
        name: rng.integers(-4, 5, size=SHAPES[name]).astype(dtype) for name in ("data", "weights", "bias")
    }


def reference(data: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """numpy conv2d (valid padding, stride 1) + bias."""
    windows = np.lib.stride_tricks.sliding_window_view(data, weights.shape[2:], axis=(2, 3))
    out = np.einsum("ncyxij,kcij->nkyx", windows.astype(np.float64), weights.astype(np.float64))
    return (out + bias.astype(np.float64)[None, :, None, None]).astype(data.dtype)
