# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``partial(..., shards={name: dim}, world=W)`` read into positions. The split's rule and each
rank's shard against its parameter are C++'s (``runtime.PartialApplyModule``, ``tvm_partial.Hold``)."""

from __future__ import annotations

from typing import Any

from . import _target
from . import relax_vm as _relax


def positions(
    shards: Any, world: Any, target: _target.Target, view: _target.TargetView, bound_positions: Any
) -> dict[int, tuple[int, int, int]]:
    """``shards=``/``world=`` checked: {position: (dim, segments, world)} of the tensors split."""
    if shards is _target.UNSET or shards is None:
        if world is not _target.UNSET and world is not None:
            raise TypeError("world= without shards=: name the tensors split, shards={name: dim}")
        return {}
    if not isinstance(shards, dict) or not shards:
        raise TypeError(f"shards= must be a non-empty dict {{parameter name: dim}}, got {shards!r}")
    if world is _target.UNSET or world is None:
        raise TypeError("shards= needs world=, the number of ranks the tensors are split over")
    if isinstance(world, bool) or not isinstance(world, int):
        raise TypeError(f"world= must be the number of ranks (an int), got {world!r}")
    if not -(2**63) <= world < 2**63:  # what the call into C++ carries; C++ says which are sane
        raise ValueError(f"world={world}: out of range")
    if target.kind != "module":
        raise TypeError(
            "shards= needs a compiled module as the target (partial(exe, ..., shards=..., world=...)): "
            "a function cannot be exported for each rank to load"
        )
    if target.names is not None and target.executable is None and not _relax.runs_relax(target.obj):
        raise TypeError(
            "shards= needs a Relax executable, not a relax.VirtualMachine, which cannot be exported "
            "for each rank to load: bind the executable (partial(exe, ..., shards=..., world=...))"
        )
    if view.bound:
        raise TypeError(
            "shards= on top of a partial is not supported: bind every value in one partial() call"
        )
    if view.sig is None:
        raise TypeError("shards= needs signature= (the kernel's parameters, with their shard shapes)")
    out = {}
    for name, split in shards.items():
        if not isinstance(name, str):
            raise TypeError(f"shards= keys are parameter names, got {name!r}")
        position = view.sig.index_of(name)  # the target is no partial: positions are its own
        if position not in bound_positions:
            raise ValueError(f"shards= names {name!r}, which this partial() does not bind")
        if target.names is not None and view.sig.params[position].shape is None:
            # frontend.nn's num_input: only inputs annotated, so no rank's slice could be checked.
            raise TypeError(
                f"shards= names {name!r}, whose shape the Relax executable does not record (a "
                "frontend.nn model annotates only its inputs): pass signature=irmodule so that "
                "each rank's shard is checked against the parameter"
            )
        # A dim, or (dim, segments) for a dim of fused blocks.
        dim, segments = split if isinstance(split, tuple) and len(split) == 2 else (split, 1)
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (dim, segments)):
            raise TypeError(
                f"shards={{{name!r}: ...}}: give the dim (an int), or (dim, segments) for a dim that "
                f"holds several fused blocks split alike (QKV: (0, 3)); got {split!r}"
            )
        if any(not -(2**63) <= v < 2**63 for v in (dim, segments)):
            raise ValueError(f"shards={{{name!r}: {split!r}}}: out of range")
        out[position] = (dim, segments, world)
    return out
