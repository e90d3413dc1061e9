# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""The tvm-partial command: demo (the forum case end to end), inspect and verify (artifacts,
save_to_bytes files, weights files and their indexes, ONNX models' initializers).

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
import tempfile
from importlib import metadata

from .._progress import Progress
from .text import LISTED, format_inspect, format_verify

#: Exit codes of ``inspect``/``verify`` (``demo``: 0 all checks passed, 1 one failed, 2 ``--out`` unwritable).
EXIT_OK, EXIT_DAMAGED, EXIT_UNREADABLE = 0, 1, 2


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of calls (0 or more)")
    return value


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
        help="the forum's conv2d + bias: bound once, called, exported as one file, reloaded",
        description="The forum's conv2d + bias: weights and bias bound once, out = conv(data), code and "
        "constants exported as one file, loaded in a fresh process that gets the same bits; each "
        "check prints [ok]. Then the cost per call beside the direct call. It prints where its code "
        "is, to copy from. Exit 0: every check passed; 1: a check failed; 2: the --out folder "
        "cannot be written.",
    )
    demo.add_argument(
        "--out",
        metavar="DIR",
        help="folder to export the artifact to, made if missing (default: a temporary one)",
    )
    demo.add_argument(
        "--calls",
        type=_count,
        default=2000,
        help="calls per timing repeat (default 2000; 0 leaves the timing out)",
    )
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
        "an exported library (.so), a file holding save_to_bytes output, a safetensors weights "
        "file (the kind is read from the file's first bytes), a checkpoint's index (*.json) or an "
        "ONNX model (*.onnx)"
    )
    inspect = sub.add_parser(
        "inspect",
        help="show what an artifact binds, its sizes, and whether it loads without tvm-partial",
        description="Show what an artifact binds (functions, tensors, dtypes, shapes, sizes), where its "
        "payloads lie and whether it is self-contained, without loading it. Payload bytes are not "
        "read: run verify for that.",
    )
    verify = sub.add_parser(
        "verify",
        help="check every payload of an artifact against its recorded hash "
        "(exit 0: intact, 1: payloads changed, 2: unreadable or damaged)",
        description="Read every payload (inline, in the zero-copy region, in the weights file) and check "
        "it against its recorded hash. Exit 0: intact; 1: payloads changed (each is named); 2: "
        "unreadable, not an artifact, damaged or truncated. On a terminal, work of 64 MiB or more "
        "shows a progress line on stderr.",
    )
    for p in (inspect, verify):
        p.add_argument("path", help=what)
        p.add_argument("--json", action="store_true", help="print JSON (sizes in bytes) instead of text")
    inspect.add_argument(
        "--all",
        action="store_true",
        help=f"list every binding (text lists the first {LISTED} of each function, then counts the rest)",
    )
    verify.add_argument(
        "--shard",
        metavar="RANK/WORLD",
        type=_rank_world,
        help="only what one rank of a tensor-parallel artifact maps: its range of each sharded tensor "
        "(shards=), the replicated tensors whole",
    )
    verify.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress line and no summary when intact: only damage is printed (the exit code tells)",
    )
    return parser


def _rank_world(text: str) -> tuple[int, int] | None:
    from ..artifact.files import rank_world_of

    rank, sep, world = text.partition("/")
    if not sep or not rank.isdigit() or not world.isdigit():
        raise argparse.ArgumentTypeError(f"--shard takes RANK/WORLD (such as 0/2), got {text!r}")
    try:
        return rank_world_of((int(rank), int(world)))  # a pair, never None
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"--shard {text}: {err}") from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        return _demo(args)

    from ..artifact.inspect import inspect as inspect_artifact
    from ..artifact.inspect import verify as verify_artifact

    try:
        if args.command == "verify":
            with Progress(f"verify {args.path}", 0, quiet=args.quiet) as progress:
                report = verify_artifact(args.path, progress=progress, shard=args.shard)
        else:
            info = inspect_artifact(args.path)
    except (OSError, ValueError, RuntimeError) as err:  # unreadable, not an artifact, damaged, cut short
        if isinstance(err, OSError) and err.strerror:  # one line, without the errno
            message = f"cannot read {args.path}: {err.strerror}"
        else:
            message = str(err)
        print(f"tvm-partial {args.command}: {message}", file=sys.stderr)
        if args.json:  # a reader of stdout gets the verdict too
            _emit(json.dumps({"path": args.path, "error": message, "exit_code": EXIT_UNREADABLE}, indent=2))
        return EXIT_UNREADABLE
    if args.command == "verify":
        _emit(json.dumps(report, indent=2) if args.json else format_verify(report, quiet=args.quiet))
        return EXIT_OK if report["intact"] else EXIT_DAMAGED
    _emit(json.dumps(info, indent=2) if args.json else format_inspect(info, None if args.all else LISTED))
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    if args.out is not None and (problem := _unwritable_folder(args.out)):
        print(f"tvm-partial demo: --out {args.out}: {problem}", file=sys.stderr)
        return EXIT_UNREADABLE
    if args.relax:
        from .demo import relax

        return relax.run(out_dir=args.out, self_contained=args.self_contained)
    from .demo import conv2d

    return conv2d.run(out_dir=args.out, calls=args.calls, self_contained=args.self_contained)


def _unwritable_folder(path: str) -> str | None:
    """Why the demo cannot export into ``path`` (made if missing), or None; tested by writing there
    (a permission bit says nothing to root)."""
    if os.path.exists(path) and not os.path.isdir(path):
        return "is a file, not a folder (give a folder to export into)"
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        return f"cannot write there: {err.strerror or err}"
    return None


def _emit(text: str) -> None:
    """Print ``text`` (if any); a reader that stops early (``| head``) is not an error."""
    if not text:
        return
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
