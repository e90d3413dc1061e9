# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""What C++ says about a partial, in one answer (``tvm_partial.Describe``), as plain Python."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, overload

import tvm_ffi

from . import _ffi_api


@dataclass(frozen=True)
class Facts:
    """A partial function's (key ``""``) or partial module's records."""

    #: The compiled module a partial module binds (None for a function, or bytes alone).
    code: tvm_ffi.Module | None
    #: {function: {position: value}}: the bound objects themselves (runtime.PartialApplyBindings).
    bindings: dict[str, dict[int, Any]]
    #: {function: [every parameter name]} where recorded.
    names: dict[str, list[str]]
    #: {function: [{"position", "dtype", "shape"}]}: outputs allocated per call.
    outputs: dict[str, list[Any]]
    #: {function: [[position, dim, world, segments]]}: tensors split for tensor parallelism.
    shards: dict[str, list[list[int]]]
    #: The rank whose view of sharded tensors it holds (load(path, shard=)), else -1.
    shard_rank: int
    #: {function: {position: n}}: n numbers distinct tensors (one bound in several places is stored once).
    payloads: dict[str, dict[int, int]]
    #: Bytes of those tensors as the format stores them (what decides a zero-copy export).
    constant_bytes: int

    @property
    def code_kind(self) -> str | None:
        return None if self.code is None else str(self.code.kind)


@overload
def of(obj: Any) -> Facts | None: ...
@overload
def of(obj: Any, who: str) -> Facts: ...
def of(obj: Any, who: str = "") -> Facts | None:
    """The facts of ``obj``; if no partial of this copy: None, or with ``who`` (caller) C++'s TypeError."""
    if isinstance(obj, (bytes, bytearray)) and not who:
        return None  # Describe gives the format's description of bytes, which are no partial
    found = _ffi_api.Describe(obj, who)
    if found is None:
        return None
    return Facts(
        found["code"],
        {
            str(f): {int(i): str(v) if isinstance(v, str) else v for i, v in b.items()}
            for f, b in found["bindings"].items()
        },
        {str(f): [str(n) for n in ns] for f, ns in found["names"].items()},
        {str(f): list(specs) for f, specs in found["outputs"].items()},
        {str(f): [[int(v) for v in s] for s in ss] for f, ss in found["shards"].items()},
        int(found["shard_rank"]),
        {str(f): {int(p): int(n) for p, n in b.items()} for f, b in found["payloads"].items()},
        int(found["constant_bytes"]),
    )
