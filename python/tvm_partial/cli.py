# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The tvm-partial command: demo (the forum case end to end), inspect and verify (artifacts,
save_to_bytes files, weights files).

Exit codes: 0 success (verify: every payload matches its recorded hash); 1 verify found
payloads that do not match (each is named on stdout); 2 the file cannot be read, is not a
tvm-partial artifact, or is damaged or truncated (one line on stderr).

Text output gives sizes in binary units (1.0 GiB); --json gives them in bytes, as integers in
keys ending in "bytes".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata

from ._progress import Progress, format_size

#: Exit codes of ``inspect`` and ``verify``.
EXIT_OK, EXIT_DAMAGED, EXIT_UNREADABLE = 0, 1, 2


def format_verify(report: dict, quiet: bool = False) -> str:
    """Human-readable ``verify`` output: one line per payload that does not match, then a summary
    (with ``quiet``, only the lines about damage)."""
    lines = []
    for p in report["damaged"]:
        name = f" ({p['name']})" if p.get("name") else ""
        where = f" in {p['weights_file']}" if "weights_file" in p else ""
        lines.append(
            f"{report['path']}: DAMAGED: function {p['function']!r} position {p['position']}{name}: "
            f"{format_size(p['bytes'])} at file offset {p['file_offset']}{where} ({p['placement']}) "
            "do not match their recorded hash"
        )
    if report["intact"]:
        if not quiet:
            lines.append(
                f"{report['path']}: intact: {report['checked']} payloads, {format_size(report['bytes'])}, "
                "match their recorded hashes"
            )
    else:
        lines.append(
            f"{report['path']}: {len(report['damaged'])} of {report['checked']} payloads damaged; "
            "copy or export the artifact again"
        )
    return "\n".join(lines)


def _shape(shape: list) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def format_inspect(info: dict) -> str:
    """Human-readable ``inspect`` output."""
    if info.get("kind") == "weights file":
        return format_weights(info)
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
    region = info.get("region")
    if region is not None:
        where = {"appended": "appended", "weights file": "in its weights file"}.get(region["placement"], "")
        intact = (
            "header and trailer intact, inside the file"
            if region["placement"] == "appended"
            else "header intact, matches this artifact"
        )
        lines.append(
            f"  payload region {where} at file offset {region['file_offset']}, "
            f"{format_size(region['bytes'])} ({intact})"
        )
        weights = region.get("weights_file")
        if weights is not None:
            lines.append(
                f"  weights file {weights['name']} ({weights['path']}): present, matches this artifact"
            )
    lines.append(f"  payload hashes: {info['payload_hashes']}")
    if info.get("relax_vm"):
        vm = info["relax_vm"]
        places = ", ".join(f"{d} ({a} allocator)" for d, a in zip(vm["devices"], vm["allocators"]))
        lines.append(f"  Relax model: its VirtualMachine is created at first use on {places}")
    for fn in info["functions"]:
        free = ", ".join(fn["free"]) if fn["param_names"] else "unknown names"
        lines.append(f"  function {fn['name']}({free})")
        for b in fn["bindings"]:
            label = f"{b['position']}" + (f" {b['name']}" if "name" in b else "")
            if b["kind"] == "tensor":
                desc = (
                    f"tensor {b['dtype']}[{_shape(b['shape'])}] on {b['device']}, {format_size(b['bytes'])}"
                )
            else:
                desc = f"{b['kind']} {b.get('value')!r}"
            lines.append(f"    bound {label}: {desc}")
        for o in fn.get("outputs", []):
            label = f"{o['position']}" + (f" {o['name']}" if "name" in o else "")
            lines.append(
                f"    output {label}: tensor {o['dtype']}[{_shape(o['shape'])}], allocated per call and returned"
            )
    return "\n".join(lines)


def format_weights(info: dict) -> str:
    """Human-readable ``inspect`` output of a safetensors weights file."""
    tensors = [b for fn in info["functions"] for b in fn["bindings"]]
    meta = dict(info.get("metadata") or {})
    version = meta.pop("tvm_partial.format", None)
    lines = [
        f"{info['path']}: safetensors weights file, {len(tensors)} tensors, "
        f"{format_size(info['constant_bytes'])} of tensors (file {format_size(info['total_bytes'])})",
        (
            f"  written by tvm-partial (tvm_partial.format {version}): keys FUNCTION/PARAMETER, "
            "each tensor's function and position and hash recorded"
            if version is not None
            else "  not written by tvm-partial (no tvm_partial metadata): tensors by key only"
        ),
        f"  payload hashes: {info['payload_hashes']}",
    ]
    for fn in info["functions"]:
        for t in fn["bindings"]:
            where = (
                f", function {fn['name']} position {t['position']}" if isinstance(t["position"], int) else ""
            )
            aligned = "" if t["aligned"] else ", NOT 64-byte aligned (copied when loaded)"
            digest = f", hash {t['hash']}" if "hash" in t else ""
            lines.append(
                f"  tensor {t['key']}: {t['dtype']}[{_shape(t['shape'])}], {format_size(t['bytes'])} "
                f"at file offset {t['offset']}{aligned}{where}{digest}"
            )
    for key in ("tvm_partial.bindings", "tvm_partial.hashes"):
        meta.pop(key, None)  # shown per tensor above
    for key, value in sorted(meta.items()):
        shown = value if len(value) <= 200 else value[:200] + f"... ({len(value)} characters)"
        lines.append(f"  metadata {key}: {shown}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tvm-partial", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--version", action="version", version=f"tvm-partial {metadata.version('tvm-partial')}"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="bind, call, time, export and reload the forum's conv2d + bias",
        description="Bind, call, time, export and reload the forum's conv2d + bias; each check prints [ok].",
    )
    demo.add_argument("--out", help="folder to export the artifact to (default: a temporary one)")
    demo.add_argument("--calls", type=int, default=2000, help="calls per timing repeat (default 2000)")
    demo.add_argument(
        "--relax",
        action="store_true",
        help="a frontend.nn Relax model instead: bound by name, exported, reloaded",
    )
    demo.add_argument(
        "--self-contained",
        action="store_true",
        help="link tvm-partial's loader into the artifact and reload it without the extension",
    )
    what = (
        "an exported library (.so), a file holding save_to_bytes output, or a safetensors weights "
        "file (the kind is read from the file's first bytes)"
    )
    inspect = sub.add_parser(
        "inspect",
        help="show what an artifact binds, its sizes, and whether it loads without tvm-partial",
        description="Show what an artifact binds (functions, tensors, dtypes, shapes, sizes), where its "
        "payloads lie and whether it is self-contained, without loading it. Payload bytes are not "
        "read: run verify for that.",
    )
    inspect.add_argument("path", help=what)
    inspect.add_argument("--json", action="store_true", help="print JSON (sizes in bytes) instead of text")
    verify = sub.add_parser(
        "verify",
        help="check every payload of an artifact against its recorded hash "
        "(exit 0: intact, 1: payloads changed, 2: unreadable or damaged)",
        description="Read every payload (inline, in the zero-copy region, in the weights file) and check "
        "it against its recorded hash. Exit 0: intact; 1: payloads changed (each is named); 2: "
        "unreadable, not an artifact, damaged or truncated. On a terminal, work of 64 MiB or more "
        "shows a progress line on stderr.",
    )
    verify.add_argument("path", help=what)
    verify.add_argument("--json", action="store_true", help="print JSON (sizes in bytes) instead of text")
    verify.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line and no summary when intact: only damage is printed (the exit code tells)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    if args.command == "demo" and args.relax:
        from .demo_relax import run as run_relax

        return run_relax(out_dir=args.out, self_contained=args.self_contained)
    if args.command == "demo":
        from .demo import run

        return run(out_dir=args.out, calls=args.calls, self_contained=args.self_contained)

    from .artifact.inspect import inspect as inspect_artifact
    from .artifact.inspect import verify as verify_artifact

    try:
        if args.command == "verify":
            with Progress(f"verify {args.path}", 0, quiet=args.quiet) as progress:
                report = verify_artifact(args.path, progress=progress)
        else:
            info = inspect_artifact(args.path)
    except OSError as err:  # one line, without the errno
        reason = err.strerror or str(err)
        print(f"tvm-partial {args.command}: cannot read {args.path}: {reason}", file=sys.stderr)
        return EXIT_UNREADABLE
    except (ValueError, RuntimeError) as err:  # not an artifact, damaged, cut short
        print(f"tvm-partial {args.command}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    if args.command == "verify":
        text = json.dumps(report, indent=2) if args.json else format_verify(report, quiet=args.quiet)
        _emit(text)
        return EXIT_OK if report["intact"] else EXIT_DAMAGED
    _emit(json.dumps(info, indent=2) if args.json else format_inspect(info))
    return EXIT_OK


def _emit(text: str) -> None:
    """Print ``text`` (if any); a reader that stops early (``| head``) is not an error."""
    if not text:
        return
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
