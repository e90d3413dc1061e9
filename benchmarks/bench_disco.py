# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Tensor-parallel weights on disco (issue 26): tvm-partial's ``tvm_partial.LoadShard(path)``, each
worker binding a view of its own shard (rows, or columns) of one safetensors file, side by side with
TVM's own loaders in the same run:

- ``LoadAll``: ``runtime.disco.ShardLoaderLoadAll`` on one ``tensor-cache.json`` parameter (written
  by ``tvm.contrib.tvmjs.dump_tensor_cache``, raw): worker 0 reads the whole file, runs the shard
  function (a compiled kernel, ``[n, n] -> [world, n / world, n]``) and scatters the chunks;
- ``LoadAllPresharded``: ``runtime.disco.ShardLoaderLoadAllPresharded`` on one file per shard
  (``param_0_shard-R-of-W``, MLC-LLM's names), each worker reading and copying its own;
- ``tvm_partial.LoadShard``: the whole weight bound with ``shards={"w": 0}``, exported with
  ``weights_file=``; ``disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(path), sess)``;
- ``tvm_partial.LoadShard (columns)``: the same weight bound with ``shards={"w": 1}`` (each rank's
  [n, n / world] columns, for a kernel compiled with that shape), exported with ``weights_file=``
  (a column split is stored rank by rank, shard-major, so each rank's shard is again one contiguous,
  64-byte-aligned range of the file) and loaded the same way.

Scatter goes through a CCL, and TVM provides one only for NCCL/RCCL: on a CPU session the
``LoadAll`` route runs with a stand-in, ``benchmarks/_disco_cpu_ccl.py`` (worker 0 writes each
rank's chunk to a file in a tmpfs folder, each other rank waits for its file, bounded, and reads
it into its tensor; see that module for how TVM finds it). Its workers start from that module
(which then runs TVM's worker); the other three routes use TVM's stock worker.

A float32 weight of ``--sizes`` (square, 256 MiB: [8192, 8192]; small integers, so row sums are
exact) and ``--workers`` ranks. Per run, a fresh ``ProcessSession`` (worker 0 runs in the driver's
process, 1.. are its child processes): the load as the driver sees it (from nothing on the workers
to every rank's weight in place, then a sync: the kernel library's load included for TVM's routes,
as ``LoadShard`` loads its own, and the loader freed afterwards, as MLC-LLM's ``LoadParams`` drops
it); each worker's peak RSS during the load (``VmHWM`` after ``clear_refs``) and RSS after the first
call of a row-sum kernel that reads every byte of its shard once, both above the worker's RSS before
the load (``/proc/PID/status``). Medians of ``--repeat`` runs, routes alternated within each repeat.
Every rank's loaded shard (for ``LoadShard`` the bound view itself, through
``runtime.PartialApplyBindings``; for the columns route against ``np.split(W, world, axis=1)[rank]``)
and its row sums are checked bitwise against numpy. All files are in the page cache when loaded
(just written): warm-cache loads, alike for the four routes. Each of the two ``tvm_partial`` exports
runs once per figure, in the driver before any session, and its time and peak RSS above the driver's
RSS before it are printed too (one sample each, not a median: the column export writes the weight
rank by rank); then the weights file's header is checked (``w`` stored ``[n, n]`` for rows,
``[world, n, n / world]`` for columns, from a 64-byte-aligned offset) and its bytes, rank by rank,
against numpy's shards.

    python benchmarks/bench_disco.py --sizes 256MiB --workers 2 4 --repeat 3

TVM 0.27 imports ``tvm.runtime.disco`` before ``libtvm_runtime_extra`` is loaded, so this script
loads that library before ``import tvm`` (docs/rpc.md).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib.util
import io
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import tvm_ffi  # noqa: F401  (libtvm_ffi, which the TVM libraries below link to)

_LIB = os.path.join(os.path.dirname(importlib.util.find_spec("tvm").origin), "lib")  # type: ignore[union-attr, arg-type]
for _name in ("libtvm_runtime.so", "libtvm_runtime_extra.so"):
    ctypes.CDLL(os.path.join(_LIB, _name), ctypes.RTLD_GLOBAL)

import _disco_cpu_ccl  # noqa: E402, F401  (worker 0, in this process: the scatter stand-in)
import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm import te  # noqa: E402
from tvm.contrib import tvmjs  # noqa: E402
from tvm.runtime import disco  # noqa: E402

import tvm_partial  # noqa: E402
from _common import Report, add_json_option, format_size, median, parse_size  # noqa: E402

MIB = 1 << 20
LOAD_ALL, PRESHARDED, LOAD_SHARD = "LoadAll", "LoadAllPresharded", "tvm_partial.LoadShard"
LOAD_SHARD_COLUMNS = "tvm_partial.LoadShard (columns)"
ROUTES = (LOAD_ALL, PRESHARDED, LOAD_SHARD, LOAD_SHARD_COLUMNS)
PARTIAL_ROUTES = {LOAD_SHARD: 0, LOAD_SHARD_COLUMNS: 1}  # route: the dim bound in shards={"w": dim}
HERE = os.path.dirname(os.path.abspath(__file__))


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


def _status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))


def _reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS (proc(5))


def _trim() -> None:
    """Give this process's free heap back to the system (glibc ``malloc_trim``), so that worker 0,
    which runs here, allocates fresh pages as the other workers do."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop(pids: list[int], grace_s: float = 15.0) -> None:
    """Wait for a released session's worker processes to exit; kill those still there after
    `grace_s` (only these pids: the processes this script started)."""
    deadline = time.monotonic() + grace_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for p in pids:
        if _alive(p):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)


class _Watchdog:
    """Ends the run if a session hangs (a worker that died mid-collective leaves the driver
    waiting in C++): kills the session's workers, removes this run's temporary folders (``os._exit``
    skips their ``TemporaryDirectory`` cleanup), then ends this process."""

    def __init__(self, seconds: float):
        self.seconds, self.pids, self.folders, self._timer = seconds, [], [], None

    def arm(self, what: str) -> None:
        self.disarm()

        def fire():
            print(
                f"bench_disco: {what} took over {self.seconds:.0f} s; stopping", file=sys.stderr, flush=True
            )
            for p in {*self.pids, *_children()}:  # the session's workers, started by this script
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            for folder in self.folders:
                shutil.rmtree(folder, ignore_errors=True)
            os._exit(3)

        self._timer = threading.Timer(self.seconds, fire)
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _export(pm, path: str, weights: str) -> dict:
    """``export_library(pm, path, weights_file=weights)`` in this process: its time and its peak RSS
    above the RSS before it (one sample)."""
    me = os.getpid()
    gc.collect()
    _trim()
    base = _status(me, "VmRSS")
    _reset_peak(me)
    start = time.perf_counter_ns()
    tvm_partial.export_library(pm, path, weights_file=weights)
    export_ns = time.perf_counter_ns() - start
    return {"export_ns": export_ns, "export_peak_added": _status(me, "VmHWM") - base}


def _check_stored(path: str, weight: np.ndarray, dim: int, world: int) -> None:
    """The weights file stores ``w`` as each route's rank expects to map it: rows as bound ([n, n]),
    columns shard-major ([world, n, n / world], rank r's shard ``stored[r]``), from a 64-byte-aligned
    offset, bitwise the shards numpy cuts (read through a mapping of the file)."""
    with open(path, "rb") as f:
        (length,) = np.frombuffer(f.read(8), "<u8")
        entry = json.loads(f.read(int(length)))["w"]
    begin = 8 + int(length) + entry["data_offsets"][0]
    shards = np.split(weight, world, axis=dim)
    shape = list(weight.shape) if dim == 0 else [world, *shards[0].shape]
    assert entry["dtype"] == "F32" and entry["shape"] == shape and begin % 64 == 0, (path, entry, begin)
    stored = np.memmap(path, "float32", "r", offset=begin, shape=(world, *shards[0].shape))
    assert all(np.array_equal(stored[r], shards[r]) for r in range(world)), path
    del stored


def _prepare(folder: str, size: int, world: int) -> dict:
    """One weight, the files of the four routes, and what each rank must hold."""
    n = math.isqrt(size // 4)
    if n % world or (n // world) * n * 4 % 64:
        raise SystemExit(f"--sizes {format_size(size)}: [{n}, {n}] does not split into {world} row shards")
    rows = cols = n // world
    weight = np.random.default_rng(world).integers(0, 16, (n, n), dtype=np.int8).astype("float32")

    # One library for TVM's routes: the row-sum kernel and the shard function (row shards, as a
    # [world, rows, n] tensor; MLC-LLM compiles its shard functions into the model library too).
    w = te.placeholder((rows, n), "float32", name="w")
    k = te.reduce_axis((0, n), "k")
    out = te.compute((rows,), lambda i: te.sum(w[i, k], axis=k), name="out")
    full = te.placeholder((n, n), "float32", name="full")
    sharded = te.compute((world, rows, n), lambda r, i, j: full[r * rows + i, j], name="sharded")
    mod = tvm.IRModule(
        {
            "main": te.create_prim_func([w, out]).with_attr("global_symbol", "main"),
            "shard_rows": te.create_prim_func([full, sharded]).with_attr("global_symbol", "shard_rows"),
        }
    )
    exe = tvm.compile(mod, target="llvm")
    lib = os.path.join(folder, "kernels.so")
    exe.export_library(lib)
    # The columns route's kernel: the same row sum, over a rank's [n, cols] column shard.
    wc = te.placeholder((n, cols), "float32", name="w")
    kc = te.reduce_axis((0, cols), "k")
    outc = te.compute((n,), lambda i: te.sum(wc[i, kc], axis=kc), name="out")
    exe_columns = tvm.compile(te.create_prim_func([wc, outc]), target="llvm")

    tp, exports = {}, {}
    for route, (kernel, sig) in (
        (LOAD_SHARD, (exe, [w, out])),
        (LOAD_SHARD_COLUMNS, (exe_columns, [wc, outc])),
    ):
        dim = PARTIAL_ROUTES[route]
        pm = tvm_partial.partial(kernel, signature=sig, w=weight, shards={"w": dim}, world=world)
        tp[route] = os.path.join(folder, f"tp_dim{dim}.so")
        weights = os.path.join(folder, f"tp_dim{dim}.safetensors")
        exports[route] = _export(pm, tp[route], weights)
        del pm
        _check_stored(weights, weight, dim, world)

    with contextlib.redirect_stdout(io.StringIO()):  # dump_tensor_cache prints its progress
        tvmjs.dump_tensor_cache({"param_0": weight}, os.path.join(folder, "all"), encode_format="raw")
        # shard_cap_mb=1: a shard of at least 512 KiB goes to a file of its own
        tvmjs.dump_tensor_cache(
            {f"param_0_shard-{r + 1}-of-{world}": weight[r * rows : (r + 1) * rows] for r in range(world)},
            os.path.join(folder, "pre"),
            encode_format="raw",
            shard_cap_mb=1,
        )
    caches = {}
    for route, sub, files in ((LOAD_ALL, "all", 1), (PRESHARDED, "pre", world)):
        path = os.path.join(folder, sub, "tensor-cache.json")
        with open(path) as f:
            records = json.load(f)["records"]
        assert len(records) == files and all(len(r["records"]) == 1 for r in records), records
        caches[route] = path
    by_rows = np.split(weight, world, axis=0)  # views: nothing copied
    by_columns = np.split(weight, world, axis=1)  # views, rows strided: compared as they are
    expected = {route: by_columns if route == LOAD_SHARD_COLUMNS else by_rows for route in ROUTES}
    sums = {
        route: [e.sum(axis=1, dtype=np.float64).astype("float32") for e in shards]
        for route, shards in expected.items()
    }
    return {
        "n": n,
        "shard": rows * n * 4,
        "out_len": {route: n if route == LOAD_SHARD_COLUMNS else rows for route in ROUTES},
        "lib": lib,
        "tp": tp,
        "exports": exports,
        "caches": caches,
        "weight": weight,
        "expected": expected,
        "sums": sums,
        "shard_info": json.dumps({"param_0": [["shard_rows", [[world, rows, n], "float32"]]]}),
    }


def _load(route: str, sess, prep: dict):
    """Load the route's weight on every worker: (the function to call, its weight argument or
    None, the rank's weight as a DRef, objects to keep alive)."""
    if route in PARTIAL_ROUTES:
        module = disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(prep["tp"][route]), sess)
        bound = sess.get_global_func("runtime.PartialApplyBindings")(module)
        main_bound = sess.get_global_func("ffi.MapGetItem")(bound, "main")
        view = sess.get_global_func("ffi.MapGetItem")(main_bound, 0)  # w: position 0 of main(w, out)
        return module["main"], None, view, [module]
    module = sess.load_vm_module(prep["lib"])  # a plain library: the module itself
    cache = prep["caches"][route]
    with open(cache) as f:
        metadata = f.read()
    info = prep["shard_info"] if route == LOAD_ALL else "{}"
    loader = sess.get_global_func("runtime.disco.ShardLoader")(cache, metadata, info, module)
    load = (
        "runtime.disco.ShardLoaderLoadAll"
        if route == LOAD_ALL
        else "runtime.disco.ShardLoaderLoadAllPresharded"
    )
    params = sess.get_global_func(load)(loader)
    weight = sess.get_global_func("ffi.ArrayGetItem")(params, 0)
    del loader, params  # freed on the workers, as MLC-LLM's LoadParams drops its loader
    return module["main"], weight, weight, [module]


def _run(route: str, prep: dict, world: int, ccl_root: str, watchdog: _Watchdog) -> dict:
    earlier = set(_children())  # workers of earlier sessions may still be exiting
    watchdog.arm(f"{route} with {world} workers")
    entry = "_disco_cpu_ccl" if route == LOAD_ALL else "tvm.exec.disco_worker"
    sess = disco.ProcessSession(num_workers=world, entrypoint=entry)
    workers = [p for p in _children() if p not in earlier]
    watchdog.pids = workers
    try:
        if route == LOAD_ALL:
            sess.get_global_func("bench_disco.cpu_ccl_init")(tempfile.mkdtemp(dir=ccl_root))
        sess._sync_all()
        pids = [os.getpid(), *workers]
        _trim()  # worker 0 lives in this process: earlier sessions' freed heap must not serve it
        base = [_status(p, "VmRSS") for p in pids]
        for p in pids:
            _reset_peak(p)
        start = time.perf_counter_ns()
        func, arg, loaded, keep = _load(route, sess, prep)
        sess._sync_all()
        load_ns = time.perf_counter_ns() - start
        peak = [_status(p, "VmHWM") for p in pids]
        result = sess.empty((prep["out_len"][route],), "float32")
        func(*([] if arg is None else [arg]), result)
        sess._sync_all()
        called = [_status(p, "VmRSS") for p in pids]
        shards_ok = [
            np.array_equal(loaded.debug_get_from_remote(r).numpy().view(np.uint32), e.view(np.uint32))
            for r, e in enumerate(prep["expected"][route])
        ]
        sums_ok = [
            result.debug_get_from_remote(r).numpy().tobytes() == s.tobytes()
            for r, s in enumerate(prep["sums"][route])
        ]
        del func, arg, loaded, keep, result
    finally:
        del sess  # released, not sess.shutdown() (tests/test_disco.py)
        gc.collect()  # a session is in a cycle with its cached functions (Session._cache)
        _stop(workers)
        watchdog.disarm()
    return {
        "load_ns": load_ns,
        "peak_added": [a - b for a, b in zip(peak, base)],
        "call_added": [c - b for c, b in zip(called, base)],
        "workers_seen": len(pids),
        "ok": all(shards_ok) and all(sums_ok),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["256MiB"], help="whole weight sizes (square float32)")
    parser.add_argument("--workers", nargs="+", type=int, default=[2], help="session sizes (the world)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh sessions per route and figure (medians)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 MiB, 2 workers, once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one session may take")
    add_json_option(parser)
    args = parser.parse_args()
    sizes = (
        [4 * MIB] if args.quick else [parse_size(s) for s in " ".join(args.sizes).replace(",", " ").split()]
    )
    worlds = [2] if args.quick else args.workers
    repeat = 1 if args.quick else args.repeat
    if min(worlds) < 2:
        raise SystemExit("--workers: LoadAllPresharded needs at least 2 (TVM checks num_shards > 1)")
    # the LoadAll workers import _disco_cpu_ccl (their entrypoint) and _common's neighbours from here
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p)
    report = Report(__file__)
    watchdog = _Watchdog(args.timeout)
    rows, values, verdicts, exports = [], [], [], []
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # the stand-in's chunks: tmpfs if any
    with (
        tempfile.TemporaryDirectory(prefix="bench_disco_") as folder,
        tempfile.TemporaryDirectory(prefix="bench_disco_ccl_", dir=shm) as ccl_root,
    ):
        watchdog.folders = [folder, ccl_root]
        for size in sizes:
            for world in worlds:
                case = os.path.join(folder, f"{size}_{world}")
                os.mkdir(case)
                prep = _prepare(case, size, world)
                runs = {route: [] for route in ROUTES}
                for _ in range(repeat):
                    for route in ROUTES:
                        runs[route].append(_run(route, prep, world, ccl_root, watchdog))
                shard = prep["shard"]
                load_all_ns = median([r["load_ns"] for r in runs[LOAD_ALL]])
                for route in ROUTES:
                    got = runs[route]
                    assert all(r["workers_seen"] == world for r in got), "a worker process was not found"
                    load_ns = median([r["load_ns"] for r in got])
                    peak = [median([r["peak_added"][w] for r in got]) for w in range(world)]
                    call = [median([r["call_added"][w] for r in got]) for w in range(world)]
                    worst = max(call) / shard
                    ok = all(r["ok"] for r in got)
                    rows.append(
                        [
                            route,
                            format_size(size),
                            str(world),
                            format_size(shard),
                            f"{load_ns / 1e6:.2f}",
                            f"{load_ns / load_all_ns:.4f}",
                            " / ".join(f"{p / MIB:.1f}" for p in peak),
                            " / ".join(f"{c / MIB:.1f}" for c in call),
                            f"{worst:.3f}",
                            "yes" if ok else "NO",
                        ]
                    )
                    values.append(
                        {
                            "route": route,
                            "size": size,
                            "world": world,
                            "shard": shard,
                            "load_ns": load_ns,
                            "load_vs_load_all": load_ns / load_all_ns,
                            "peak_added": peak,
                            "call_added": call,
                            "worst": worst,
                            "ok": ok,
                        }
                    )
                    if route in PARTIAL_ROUTES:
                        values[-1].update(prep["exports"][route])
                        verdicts.append((route, world, worst, load_ns / load_all_ns))
                exports.append((world, prep["exports"]))
                del prep
                for sub, _, files in os.walk(case, topdown=False):  # free the disk and page cache
                    for name in files:
                        os.remove(os.path.join(sub, name))
                    os.rmdir(sub)
    report.table(
        "disco",
        f"# Loading a sharded float32 weight on a CPU ProcessSession (row shards; the columns route: column "
        f"shards), medians of {repeat}: load (from nothing on the workers to every rank's shard in place, then "
        "a sync), each worker's RSS above its RSS before the load: peak during the load and after the first call",
        [
            "route",
            "weight",
            "workers",
            "shard",
            "load ms",
            "load / LoadAll",
            "peak during load MiB per worker",
            "after first call MiB per worker",
            "after/shard (max)",
            "bitwise",
        ],
        rows,
        values=values,
    )
    for route, world, worst, ratio in verdicts:
        report.note(
            f"{world} workers: {route}'s load / LoadAll's = {ratio:.4f} "
            f"(target <= 0.01: {'holds' if ratio <= 0.01 else 'MISSED'}), "
            f"its RSS after the first call / shard = {worst:.3f} (target <= 1.05: {'holds' if worst <= 1.05 else 'MISSED'})"
        )
    held = all(worst <= 1.05 for _, _, worst, _ in verdicts)
    fast = all(ratio <= 0.01 for _, _, _, ratio in verdicts)
    report.note(
        f"target per-worker RSS after the first call <= 1.05x its shard: {'holds' if held else 'MISSED'}; "
        f"target load <= 0.01x LoadAll's: {'holds' if fast else 'MISSED'} (both tvm_partial routes)"
    )
    for world, got in exports:
        report.note(
            f"{world} workers, the export in the driver (export_library with weights_file=, one each, not a "
            "median): "
            + "; ".join(
                f"{'rows' if route == LOAD_SHARD else 'columns'} {e['export_ns'] / 1e6:.0f} ms, "
                f"peak {e['export_peak_added'] / MIB:.1f} MiB above the RSS before it"
                for route, e in got.items()
            )
        )
    report.write(args.json)
    if not all(row[-1] == "yes" for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
