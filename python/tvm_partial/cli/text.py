# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The text ``inspect`` and ``verify`` print (``--json``: the reports); demos print ``format_inspect``."""

from __future__ import annotations

from .._progress import format_size


def format_verify(report: dict, quiet: bool = False) -> str:
    """A line per damaged payload, then a summary (with ``quiet``, only the lines about damage)."""
    lines = []
    for p in report["damaged"]:
        name = f" ({p['name']})" if p.get("name") else ""
        if "rank" in p:  # a rank's range of a sharded tensor
            name += f", rank {p['rank']}'s shard"
        where = f" in {p['weights_file']}" if "weights_file" in p else ""
        lines.append(
            f"{report['path']}: DAMAGED: function {p['function']!r} position {p['position']}{name}: "
            f"{format_size(p['bytes'])} at file offset {p['file_offset']}{where} ({p['placement']}) "
            "do not match their recorded hash"
        )
    if not report["intact"]:
        lines.append(
            f"{report['path']}: {len(report['damaged'])} of {report['checked']} payloads damaged; "
            "copy or export the artifact again"
        )
    elif not quiet:
        lines.append(
            f"{report['path']}: intact: {report['checked']} payloads, {format_size(report['bytes'])}, "
            "match their recorded hashes"
        )
    return "\n".join(lines)


def _shape(shape: list) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


#: How many bindings (or tensors of a weights file) ``inspect`` lists before it summarises the rest.
LISTED = 20


def format_inspect(info: dict, listed: int | None = LISTED) -> str:
    """At most ``listed`` bindings per function (None: all), the rest counted with their bytes."""
    if info.get("kind") in ("weights file", "onnx model"):
        return format_weights(info, listed)
    what = "save_to_bytes data" if info.get("kind") == "save_to_bytes" else "tvm-partial"
    lines = [
        f"{info['path']}: {what} format version {info['format_version']}, "
        f"{format_size(info['constant_bytes'])} of constants ({info['payloads']})",
    ]
    if info.get("self_contained") is True:
        lines.append("  self-contained: embeds tvm-partial's loader, loads with TVM alone")
    elif info.get("self_contained") is False:
        lines.append(
            "  needs tvm-partial where it is loaded (not self-contained; export with "
            "self_contained=True to embed the loader)"
        )
    elif info.get("kind") == "save_to_bytes":
        lines.append("  the bindings alone, without code: tvm_partial.load_from_bytes(data, compiled_module)")
    if (region := info.get("region")) is not None:
        where, intact = {
            "appended": ("appended", "header and trailer intact, inside the file"),
            "weights file": ("in its weights file", "header intact, matches this artifact"),
        }.get(region["placement"], ("", "header intact, matches this artifact"))
        lines.append(
            f"  payload region {where} at file offset {region['file_offset']}, "
            f"{format_size(region['bytes'])} ({intact})"
        )
        if (weights := region.get("weights_file")) is not None:
            lines.append(
                f"  weights file {weights['name']} ({weights['path']}): present, matches this artifact"
            )
    lines.append(f"  payload hashes: {info['payload_hashes']}")
    if vm := info.get("relax_vm"):
        places = ", ".join(f"{d} ({a} allocator)" for d, a in zip(vm["devices"], vm["allocators"]))
        lines.append(f"  Relax model: its VirtualMachine is created at first use on {places}")
        for c in vm.get("compiled_in", []):
            what = f"{c['name']} {c['dtype']}[{_shape(c['shape'])}]"
            if c["unused"]:
                lines.append(f"  held by the model, never read by the code: {what} (any value is taken)")
            else:
                lines.append(
                    f"  compiled into the code: {what} (hash {c['hash']}; a weights file may hold it "
                    "only with this value)"
                )
    for fn in info["functions"]:
        free = ", ".join(fn["free"]) if fn["param_names"] else "unknown names"
        lines.append(f"  function {fn['name']}({free})")
        shown = fn["bindings"][:listed]
        for b in shown:
            label = f"{b['position']}" + (f" {b['name']}" if "name" in b else "")
            if b["kind"] == "tensor":
                desc = (
                    f"tensor {b['dtype']}[{_shape(b['shape'])}] on {b['device']}, {format_size(b['bytes'])}"
                )
                if "shared_with" in b:
                    owner = b["shared_with"]
                    desc += (
                        f", the tensor bound at function {owner['function']} position {owner['position']} "
                        "(stored once)"
                    )
                if "shard" in b:
                    sh = b["shard"]
                    blocks = f" in {sh['segments']} blocks" if sh.get("segments", 1) > 1 else ""
                    stored = ", stored rank by rank" if sh["layout"] == "shard-major" else ""
                    desc += (
                        f", split along dim {sh['dim']}{blocks} over {sh['world']} ranks "
                        f"(each rank: [{_shape(sh['shape'])}], {format_size(sh['bytes'])}{stored})"
                    )
            else:
                desc = f"{b['kind']} {b.get('value')!r}"
            lines.append(f"    bound {label}: {desc}")
        lines += _more(fn["bindings"][len(shown) :], "bound values")
        for o in fn.get("outputs", []):
            label = f"{o['position']}" + (f" {o['name']}" if "name" in o else "")
            lines.append(
                f"    output {label}: tensor {o['dtype']}[{_shape(o['shape'])}], allocated per call and returned"
            )
    return "\n".join(lines)


def _more(rest: list, what: str) -> list[str]:
    """The line that counts what was not listed (none when all were)."""
    if not rest:
        return []
    size = format_size(sum(b.get("bytes", 0) for b in rest))
    return [f"    ... and {len(rest)} more {what} ({size}; --all lists them)"]


def format_weights(info: dict, listed: int | None = LISTED) -> str:
    """``inspect`` of a safetensors weights file (or index), or of an ONNX model's initializers."""
    tensors = [b for fn in info["functions"] for b in fn["bindings"]]
    meta = dict(info.get("metadata") or {})
    version = meta.pop("tvm_partial.format", None)
    files = info.get("files")
    if info.get("kind") == "onnx model":
        kind = "ONNX model " + info["format_version"].partition(" ")[2]  # (ir_version N, opsets ...)
        origin = (
            "  initializers by name: bind them with tvm_partial.open_weights(path) (load(..., "
            "weights_file=) reads safetensors files, not ONNX)"
        )
    else:
        kind = "safetensors weights file" if files is None else f"safetensors index of {len(files)} files"
        origin = (
            f"  written by tvm-partial (tvm_partial.format {version}): keys are parameter names "
            "(FUNCTION/PARAMETER where names repeat), each tensor's function and position and hash "
            "recorded"
            if version is not None
            else "  not written by tvm-partial (no tvm_partial metadata): tensors by key only"
        )
    lines = [
        f"{info['path']}: {kind}, {len(tensors)} tensors, "
        f"{format_size(info['constant_bytes'])} of tensors ({'files' if files else 'file'} "
        f"{format_size(info['total_bytes'])})",
        origin,
        f"  payload hashes: {info['payload_hashes']}",
    ]
    lines += [f"  file {f['path']}: {format_size(f['bytes'])}" for f in files or []]
    for fn in info["functions"]:
        shown = fn["bindings"][:listed]
        for t in shown:
            where = (
                f", function {fn['name']} position {t['position']}" if isinstance(t["position"], int) else ""
            )
            at = "inside the model" if t["offset"] is None else f"at file offset {t['offset']}"
            aligned = (
                "" if t["aligned"] or t["offset"] is None else ", NOT 64-byte aligned (copied when loaded)"
            )
            digest = f", hash {t['hash']}" if "hash" in t else ""
            digest += f", in {t['file']}" if "file" in t else ""
            also = "".join(
                f"; also bound as {s['key']}"
                + (f" (function {s['function']} position {s['position']})" if "function" in s else "")
                for s in t.get("shared_by", [])
            )
            lines.append(
                f"  tensor {t['key']}: {t['dtype']}[{_shape(t['shape'])}], {format_size(t['bytes'])} "
                f"{at}{aligned}{where}{digest}{also}"
            )
        lines += [line[2:] for line in _more(fn["bindings"][len(shown) :], "tensors")]
    for key in ("tvm_partial.bindings", "tvm_partial.hashes", "tvm_partial.shared"):
        meta.pop(key, None)  # shown per tensor above
    for key, value in sorted(meta.items()):
        shown = value if len(value) <= 200 else value[:200] + f"... ({len(value)} characters)"
        lines.append(f"  metadata {key}: {shown}")
    return "\n".join(lines)
