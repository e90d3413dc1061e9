# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Session fixtures: kernels compile once (TVM's CPU LLVM target)."""

from __future__ import annotations

import pytest
from tvm import te

from helpers import compile_te
from tvm_partial import _fixtures as fixtures


@pytest.fixture(scope="session")
def conv():
    """The forum case: (executable, signature tensors, numpy inputs, numpy expected)."""
    exe, tensors = fixtures.build_conv2d_bias()
    inputs = fixtures.sample_inputs()
    return exe, tensors, inputs, fixtures.reference(**inputs)


@pytest.fixture(scope="session")
def affine4():
    """out = 2*a + 3*b + c, four float32 tensors of shape (16,): any position can be bound."""
    a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
    out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    return compile_te([a, b, c, out]), [a, b, c, out]
