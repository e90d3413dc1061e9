# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Tensor-parallel weights on disco (issue 26): each worker binds a view of its own row shard of
one safetensors file, ``tvm_partial.LoadShard(path)``.

A float32 weight of ``--sizes`` (square, 256 MiB: [8192, 8192]) is bound whole with
``shards={"w": 0}`` and exported with ``weights_file=``; a ``ProcessSession`` of ``--workers``
workers loads it (``disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(path), sess)``)
and calls a row-sum kernel, which reads every byte of the rank's shard once. Per run, a fresh
session: the load's time as the driver sees it (one call on every worker, then a sync), and each
worker's RSS (``/proc/PID/status``; worker 0 runs in the driver's process) added by the load and
by the first call, against the shard's size. Medians of ``--repeat`` runs; the results are
checked bitwise against numpy. TVM's own loaders (``ShardLoaderLoadAll``, which scatters through
a CCL that only NCCL/RCCL provide, and ``LoadAllPresharded``) are not run here yet.

    python benchmarks/bench_disco.py --sizes 256MiB --workers 2 4 --repeat 3

TVM 0.27 imports ``tvm.runtime.disco`` before ``libtvm_runtime_extra`` is loaded, so this script
loads that library before ``import tvm`` (docs/rpc.md).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import math
import os
import sys
import tempfile
import time

import tvm_ffi  # noqa: F401  (libtvm_ffi, which the TVM libraries below link to)

_LIB = os.path.join(os.path.dirname(importlib.util.find_spec("tvm").origin), "lib")  # type: ignore[union-attr, arg-type]
for _name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):
    ctypes.CDLL(os.path.join(_LIB, _name), ctypes.RTLD_GLOBAL)

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import te  # noqa: E402
from tvm.runtime import disco  # noqa: E402

import tvm_partial  # noqa: E402
from _common import Report, add_json_option, format_size, median, parse_size  # noqa: E402

MIB = 1 << 20


def _children() -> list[int]:
    """The driver's child processes: the session's workers 1..n-1."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return sorted(out)


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def _export(folder: str, size: int, world: int):
    """The artifact for one size and world, and the numpy sums each rank must return."""
    n = math.isqrt(size // 4)
    w = te.placeholder((n // world, n), "float32", name="w")
    k = te.reduce_axis((0, n), "k")
    out = te.compute((n // world,), lambda i: te.sum(w[i, k], axis=k), name="out")
    exe = tvm.compile(te.create_prim_func([w, out]), target="llvm")
    weight = np.empty((n, n), "float32")
    for r in range(world):  # small integers per rank: sums are exact, ranks differ
        weight[r * (n // world) : (r + 1) * (n // world)] = r + 1
    path = os.path.join(folder, f"tp_{size}_{world}.so")
    pm = tvm_partial.partial(exe, signature=[w, out], w=weight, shards={"w": 0}, world=world)
    tvm_partial.export_library(pm, path, weights_file=path[: -len(".so")] + ".safetensors")
    expected = [np.full(n // world, (r + 1) * n, "float32") for r in range(world)]
    return path, n, weight.nbytes // world, expected


def _run(path: str, n: int, world: int, expected) -> dict:
    earlier = set(_children())  # workers of earlier sessions may still be exiting
    sess = disco.ProcessSession(num_workers=world)
    sess._sync_all()
    pids = [os.getpid(), *(p for p in _children() if p not in earlier)]
    base = [_rss(p) for p in pids]
    start = time.perf_counter_ns()
    module = disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(path), sess)
    sess._sync_all()
    load_ns = time.perf_counter_ns() - start
    loaded = [_rss(p) for p in pids]
    result = sess.empty((n // world,), "float32")
    module["main"](result)
    sess._sync_all()
    called = [_rss(p) for p in pids]
    got = [result.debug_get_from_remote(r).numpy() for r in range(world)]
    ok = all(g.tobytes() == e.tobytes() for g, e in zip(got, expected))
    del module, result, sess  # released, not sess.shutdown() (tests/test_disco.py)
    return {
        "load_ns": load_ns,
        "load_added": [a - b for a, b in zip(loaded, base)],
        "call_added": [c - b for c, b in zip(called, base)],
        "workers_seen": len(pids),
        "ok": ok,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["256MiB"], help="whole weight sizes (square float32)")
    parser.add_argument("--workers", nargs="+", type=int, default=[2], help="session sizes (the world)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh sessions per figure (medians)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 MiB, 2 workers, once")
    add_json_option(parser)
    args = parser.parse_args()
    sizes = (
        [4 * MIB] if args.quick else [parse_size(s) for s in " ".join(args.sizes).replace(",", " ").split()]
    )
    worlds = [2] if args.quick else args.workers
    repeat = 1 if args.quick else args.repeat
    report = Report(__file__)
    rows, values = [], []
    with tempfile.TemporaryDirectory(prefix="bench_disco_") as folder:
        for size in sizes:
            for world in worlds:
                path, n, shard, expected = _export(folder, size, world)
                runs = [_run(path, n, world, expected) for _ in range(repeat)]
                assert all(r["workers_seen"] == world for r in runs), "a worker process was not found"
                load_ns = median([r["load_ns"] for r in runs])
                load_mib = median([max(r["load_added"]) for r in runs]) / MIB
                call = [median([r["call_added"][w] for r in runs]) for w in range(world)]
                worst = max(call) / shard
                ok = all(r["ok"] for r in runs)
                rows.append(
                    [
                        format_size(size),
                        str(world),
                        format_size(shard),
                        f"{load_ns / 1e6:.2f}",
                        f"{load_mib:.1f}",
                        " / ".join(f"{c / MIB:.1f}" for c in call),
                        f"{worst:.3f}",
                        "yes" if ok else "NO",
                    ]
                )
                values.append(
                    {"size": size, "world": world, "load_ns": load_ns, "call_added": call, "worst": worst}
                )
                os.remove(path)
                os.remove(path[: -len(".so")] + ".safetensors")
    report.table(
        "disco",
        f"# tvm_partial.LoadShard on a ProcessSession, medians of {repeat}: load (one call on every "
        "worker, then a sync) and RSS each worker adds",
        [
            "weight",
            "workers",
            "shard",
            "load ms",
            "load RSS MiB (max)",
            "first call RSS MiB per worker",
            "call RSS/shard (max)",
            "bitwise",
        ],
        rows,
        values=values,
    )
    held = all(v["worst"] <= 1.05 for v in values)
    report.note(
        f"target per-worker RSS after the first call <= 1.05x its shard: {'holds' if held else 'MISSED'}"
    )
    report.write(args.json)
    if not all(row[-1] == "yes" for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
