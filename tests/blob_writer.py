# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A writer of the partial_apply layout as cpp/format/format.h documents it, independent of the
C++ one: the tests craft blobs with it (valid ones it must agree on, damaged ones the loader must
refuse)."""

from __future__ import annotations

import struct

import numpy as np

from helpers import reseal


def _s(text: str | bytes) -> bytes:
    """A length-prefixed string."""
    data = text if isinstance(text, bytes) else text.encode()
    return struct.pack("<I", len(data)) + data


def tensor_entry(index, dtype="float32", shape=(4,), nbytes=None, offset=None, device=(1, 0), hash_=0):
    """A tensor binding (kind 5)."""
    nbytes = 4 * int(np.prod(shape)) if nbytes is None else nbytes
    return (
        struct.pack("<qB", index, 5)
        + _s(dtype)
        + struct.pack("<iiI", *device, len(shape))
        + b"".join(struct.pack("<q", d) for d in shape)
        + struct.pack("<QQQ", nbytes, offset or 0, hash_)
    )


def shared_entry(index, payload):
    """A binding of the tensor whose payload is number ``payload`` (kind 6)."""
    return struct.pack("<qBQ", index, 6, payload)


def int_entry(position, value=7):
    """An int binding (kind 1)."""
    return struct.pack("<qBq", position, 1, value)


def output_entry(position, dtype="float32", dims=((-1, 16),)):
    """An output. dims: (source, value): source -1 for a static extent, else
    (argument position, axis)."""
    return (
        struct.pack("<q", position)
        + _s(dtype)
        + struct.pack("<I", len(dims))
        + b"".join(struct.pack("<qq", source, value) for source, value in dims)
    )


def make_blob(functions, version=3, flags=0, payload=b"", meta_extra=b"", count=None, output_count=None):
    """functions: [(name, [param names], [binding entries][, [output entries]])], resealed so the
    hash is valid. Each function carries its outputs (``output_count`` overrides their count) and
    a shard count of 0 (no shards). ``version`` only changes the header's field (the layout is the
    one version 3 has: a test of refusal sets another)."""
    parts = [struct.pack("<I", len(functions) if count is None else count)]
    for name, names, entries, *rest in functions:
        outputs = rest[0] if rest else []
        parts += [_s(name), struct.pack("<I", len(names)), *(_s(n) for n in names)]
        parts += [struct.pack("<I", len(entries)), *entries]
        parts.append(struct.pack("<I", len(outputs) if output_count is None else output_count))
        parts += outputs
        parts.append(struct.pack("<I", 0))
    meta = b"".join(parts) + meta_extra
    body = meta + payload
    header = b"TVMPARTL" + struct.pack("<IIQQQ", version, flags, 40 + len(body), len(meta), 0)
    return bytes(reseal(header + body))


def blob_with_payload(functions, payload: bytes) -> bytes:
    """``functions(offset)`` -> the functions whose one tensor payload lies at ``offset``: a blob
    with ``payload`` at the first multiple of 64 after the metadata (the canonical layout)."""
    probe = make_blob(functions(0))
    offset = len(probe) + (-len(probe)) % 64
    return make_blob(functions(offset), payload=b"\0" * (offset - len(probe)) + payload)
