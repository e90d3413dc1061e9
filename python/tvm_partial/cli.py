# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The ``tvm-partial`` command: ``demo`` (the forum case end to end), ``inspect`` and ``verify``
(artifacts).

Exit codes: 0 success (``verify``: every payload matches its recorded hash); 1 ``verify`` found
payloads that do not match (each is named on stdout); 2 the file cannot be read, is not a
tvm-partial artifact, or is damaged or truncated (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata

#: Exit codes of ``inspect`` and ``verify``.
EXIT_OK, EXIT_DAMAGED, EXIT_UNREADABLE = 0, 1, 2


def format_verify(report: dict) -> str:
    """Human-readable ``verify`` output: one line per payload that does not match."""
    lines = []
    for p in report["damaged"]:
        name = f" ({p['name']})" if "name" in p else ""
        lines.append(
            f"{report['path']}: DAMAGED: function {p['function']!r} position {p['index']}{name}: "
            f"{p['bytes']} bytes at file offset {p['file_offset']} ({p['placement']}) do not "
            "match their recorded hash"
        )
    if report["intact"]:
        lines.append(
            f"{report['path']}: intact: {report['checked']} payloads, {report['bytes']} bytes, "
            "match their recorded hashes"
        )
    else:
        lines.append(
            f"{report['path']}: {len(report['damaged'])} of {report['checked']} payloads damaged; "
            "copy or export the artifact again"
        )
    return "\n".join(lines)


def format_inspect(info: dict) -> str:
    """Human-readable ``inspect`` output."""
    lines = [
        f"{info['path']}: tvm-partial format version {info['format_version']}, "
        f"{info['constant_bytes']} bytes of constants ({info['payloads']})",
    ]
    region = info.get("region")
    if region is not None:
        if not region["present"]:
            lines.append(
                f"  payload region {region['symbol']}: MISSING from the file"
                + (
                    " (it is appended after the code; the file was cut short, or rewritten by a "
                    "tool such as strip)"
                    if region.get("appended")
                    else ""
                )
            )
        else:
            state = (
                "present, header intact, inside the file" if region["complete"] else "TRUNCATED OR DAMAGED"
            )
            lines.append(
                f"  payload region at file offset {region['file_offset']}, {region['bytes']} bytes ({state})"
            )
        weights = region.get("weights_file")
        if weights is not None:
            state = (
                "MISSING"
                if not weights["present"]
                else "present, matches this artifact"
                if weights["complete"]
                else "TRUNCATED OR NOT WRITTEN WITH THIS ARTIFACT"
            )
            lines.append(f"  weights file {weights['name']} ({weights['path']}): {state}")
    lines.append(f"  payload hashes: {info['payload_hashes']}")
    if info.get("relax_vm"):
        vm = info["relax_vm"]
        places = ", ".join(f"{d} ({a} allocator)" for d, a in zip(vm["devices"], vm["allocators"]))
        lines.append(f"  Relax model: its VirtualMachine is created at first use on {places}")
    for fn in info["functions"]:
        free = ", ".join(fn["free"]) if fn["param_names"] else "unknown names"
        lines.append(f"  function {fn['name']}({free})")
        for b in fn["bindings"]:
            label = f"{b['index']}" + (f" {b['name']}" if "name" in b else "")
            if b["kind"] == "tensor":
                shape = "x".join(str(d) for d in b["shape"]) or "scalar"
                desc = f"tensor {b['dtype']}[{shape}] on {b['device']}, {b['bytes']} bytes"
            else:
                desc = f"{b['kind']} {b.get('value')!r}"
            lines.append(f"    bound {label}: {desc}")
        for o in fn.get("outputs", []):
            label = f"{o['index']}" + (f" {o['name']}" if "name" in o else "")
            shape = "x".join(str(d) for d in o["shape"]) or "scalar"
            lines.append(f"    output {label}: tensor {o['dtype']}[{shape}], allocated per call and returned")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tvm-partial", description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"tvm-partial {metadata.version('tvm-partial')}"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="bind, call, time, export and reload the forum's conv2d + bias")
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
    inspect = sub.add_parser("inspect", help="show what an exported artifact binds")
    inspect.add_argument("path", help="an exported library (.so)")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")
    verify = sub.add_parser(
        "verify",
        help="check every payload of an artifact against its recorded hash "
        "(exit 0: intact, 1: payloads changed, 2: unreadable or damaged)",
    )
    verify.add_argument("path", help="an exported library (.so)")
    verify.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)

    if args.command == "demo" and args.relax:
        from .demo_relax import run as run_relax

        return run_relax(out_dir=args.out, self_contained=args.self_contained)
    if args.command == "demo":
        from .demo import run

        return run(out_dir=args.out, calls=args.calls, self_contained=args.self_contained)

    from .export import inspect as inspect_artifact
    from .export import verify as verify_artifact

    try:
        if args.command == "verify":
            report = verify_artifact(args.path)
        else:
            info = inspect_artifact(args.path)
    except OSError as err:  # one line, without the errno
        print(f"tvm-partial {args.command}: cannot read {args.path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_UNREADABLE
    except (ValueError, RuntimeError) as err:  # not an artifact, damaged, cut short
        print(f"tvm-partial {args.command}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    if args.command == "verify":
        print(json.dumps(report, indent=2) if args.json else format_verify(report))
        return EXIT_OK if report["intact"] else EXIT_DAMAGED
    print(json.dumps(info, indent=2) if args.json else format_inspect(info))
    return EXIT_OK
