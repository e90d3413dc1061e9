# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Tensor-parallel weights on a CPU disco ProcessSession, four ways side by side (docs/benchmarks.md):
TVM's ShardLoaderLoadAll and LoadAllPresharded, tvm-partial's LoadShard with row and column shards.
Per worker: RSS above its RSS before the load, peak during it and after the first call; every
rank's shard and result bitwise against numpy; medians of --repeat fresh sessions.

    python benchmarks/bench_disco.py [--sizes 256MiB] [--workers 2 4] [--repeat 3] [--quick] [--json PATH]
"""

from __future__ import annotations

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

# TVM 0.27 imports tvm.runtime.disco only when libtvm_runtime_extra is loaded first (docs/rpc.md).
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
from _common import Report, format_size, median, parse_size, parser, reset_peak, status  # noqa: E402

MIB = 1 << 20
ROUTES = ("LoadAll", "LoadAllPresharded", "tvm_partial.LoadShard", "tvm_partial.LoadShard (columns)")
LOAD_ALL, PRESHARDED, ROWS, COLUMNS = ROUTES
DIM = {ROWS: 0, COLUMNS: 1}  # tvm-partial's routes: the dim bound in shards={"w": dim}


def _children() -> list[int]:
    """This process's children: the session's workers 1..n-1."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{entry}/stat") as f:
            if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                out.append(int(entry))
    return sorted(out)


def _trim() -> None:
    """Free heap back to the system, so worker 0, in this process, gets fresh pages as the others do."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _kill(pids) -> None:
    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)


def _stop(pids: list[int], grace_s: float = 15.0) -> None:
    """Wait for a released session's workers to exit; kill those still there after `grace_s`."""

    def alive(pid):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        return False

    deadline = time.monotonic() + grace_s
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    _kill([p for p in pids if alive(p)])


def _watchdog(seconds: float, what: str, folders: list) -> threading.Timer:
    """After `seconds` of a hung session (waiting in C++), kill the workers, remove the folders, exit."""

    def fire():
        print(f"bench_disco: {what} took over {seconds:.0f} s; stopping", file=sys.stderr, flush=True)
        _kill(_children())
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        os._exit(3)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def _prepare(folder: str, size: int, world: int) -> dict:
    """The weight, each route's files, what each rank must hold, and the two exports' figures."""
    n = math.isqrt(size // 4)
    if n % world or (n // world) * n * 4 % 64:
        raise SystemExit(f"--sizes {format_size(size)}: [{n}, {n}] does not split into {world} row shards")
    rows = n // world
    weight = np.random.default_rng(world).integers(0, 16, (n, n), dtype=np.int8).astype("float32")
    # TVM's routes: one library with the row-sum kernel and the shard function ([world, rows, n])
    w, full = te.placeholder((rows, n), "float32", name="w"), te.placeholder((n, n), "float32", name="full")
    k = te.reduce_axis((0, n), "k")
    out = te.compute((rows,), lambda i: te.sum(w[i, k], axis=k), name="out")
    sharded = te.compute((world, rows, n), lambda r, i, j: full[r * rows + i, j], name="sharded")
    funcs = {"main": te.create_prim_func([w, out]), "shard_rows": te.create_prim_func([full, sharded])}
    lib = f"{folder}/kernels.so"
    mod = tvm.IRModule({k: f.with_attr("global_symbol", k) for k, f in funcs.items()})
    tvm.compile(mod, target="llvm").export_library(lib)
    # the columns route's kernel: the same row sum over a rank's [n, n / world] columns
    wc = te.placeholder((n, rows), "float32", name="w")
    kc = te.reduce_axis((0, rows), "k")
    outc = te.compute((n,), lambda i: te.sum(wc[i, kc], axis=kc), name="out")
    kernels = {
        ROWS: ([w, out], tvm.compile(te.create_prim_func([w, out]), target="llvm")),
        COLUMNS: ([wc, outc], tvm.compile(te.create_prim_func([wc, outc]), target="llvm")),
    }
    tp, exports = {}, {}
    for route, (sig, exe) in kernels.items():
        pm = tvm_partial.partial(exe, signature=sig, w=weight, shards={"w": DIM[route]}, world=world)
        tp[route] = os.path.join(folder, f"tp_dim{DIM[route]}.so")
        weights = tp[route][: -len(".so")] + ".safetensors"
        gc.collect()
        _trim()
        base = status("VmRSS", os.getpid())
        reset_peak(os.getpid())
        start = time.perf_counter_ns()
        tvm_partial.export_library(pm, tp[route], weights_file=weights)
        took = time.perf_counter_ns() - start
        exports[route] = {"export_ns": took, "export_peak_added": status("VmHWM", os.getpid()) - base}
        del pm
    with contextlib.redirect_stdout(io.StringIO()):  # dump_tensor_cache prints its progress
        tvmjs.dump_tensor_cache({"param_0": weight}, os.path.join(folder, "all"), encode_format="raw")
        shards = dict(
            zip((f"param_0_shard-{r + 1}-of-{world}" for r in range(world)), np.split(weight, world))
        )
        # shard_cap_mb=1: a shard of at least 512 KiB goes to a file of its own
        tvmjs.dump_tensor_cache(shards, os.path.join(folder, "pre"), encode_format="raw", shard_cap_mb=1)
    caches = {
        r: os.path.join(folder, sub, "tensor-cache.json")
        for r, sub in ((LOAD_ALL, "all"), (PRESHARDED, "pre"))
    }
    for route, files in ((LOAD_ALL, 1), (PRESHARDED, world)):
        with open(caches[route]) as f:
            records = json.load(f)["records"]
        assert len(records) == files and all(len(r["records"]) == 1 for r in records), records
    expected = {route: np.split(weight, world, axis=int(route == COLUMNS)) for route in ROUTES}  # views
    sums = {
        route: [e.sum(axis=1, dtype=np.float64).astype("float32") for e in shards]
        for route, shards in expected.items()
    }
    info = json.dumps({"param_0": [["shard_rows", [[world, rows, n], "float32"]]]})
    prep = {"shard": rows * n * 4, "lib": lib, "tp": tp, "exports": exports, "caches": caches}
    return {**prep, "expected": expected, "sums": sums, "shard_info": info}


def _load(route: str, sess, prep: dict):
    """(the function to call, its weight argument or None, the rank's weight, what to keep alive)."""
    if route in DIM:
        module = disco.DModule(sess.get_global_func("tvm_partial.LoadShard")(prep["tp"][route]), sess)
        get, bindings = (
            sess.get_global_func("ffi.MapGetItem"),
            sess.get_global_func("runtime.PartialApplyBindings"),
        )
        bound = get(get(bindings(module), "main"), 0)  # w of main(w, out)
        return module["main"], None, bound, [module]
    module = sess.load_vm_module(prep["lib"])  # a plain library: the module itself
    with open(prep["caches"][route]) as f:
        metadata = f.read()
    info = prep["shard_info"] if route == LOAD_ALL else "{}"
    loader = sess.get_global_func("runtime.disco.ShardLoader")(prep["caches"][route], metadata, info, module)
    params = sess.get_global_func(f"runtime.disco.ShardLoader{route}")(loader)
    weight = sess.get_global_func("ffi.ArrayGetItem")(params, 0)
    del loader, params  # freed on the workers, as MLC-LLM's LoadParams drops its loader
    return module["main"], weight, weight, [module]


def _run(route: str, prep: dict, world: int, ccl_root: str, timeout: float, folders: list) -> dict:
    earlier = set(_children())  # workers of earlier sessions may still be exiting
    timer = _watchdog(timeout, f"{route} with {world} workers", folders)
    entry = "_disco_cpu_ccl" if route == LOAD_ALL else "tvm.exec.disco_worker"
    sess = disco.ProcessSession(num_workers=world, entrypoint=entry)
    workers = [p for p in _children() if p not in earlier]
    try:
        if route == LOAD_ALL:
            sess.get_global_func("bench_disco.cpu_ccl_init")(tempfile.mkdtemp(dir=ccl_root))
        sess._sync_all()
        pids = [os.getpid(), *workers]
        _trim()  # worker 0 lives here: earlier sessions' freed heap must not serve it
        base = [status("VmRSS", p) for p in pids]
        for p in pids:
            reset_peak(p)
        start = time.perf_counter_ns()
        func, arg, loaded, keep = _load(route, sess, prep)
        sess._sync_all()
        load_ns = time.perf_counter_ns() - start
        peak = [status("VmHWM", p) - b for p, b in zip(pids, base)]
        result = sess.empty((prep["expected"][route][0].shape[0],), "float32")
        func(*([] if arg is None else [arg]), result)
        sess._sync_all()
        called = [status("VmRSS", p) - b for p, b in zip(pids, base)]
        ok = all(
            np.array_equal(loaded.debug_get_from_remote(r).numpy().view(np.uint32), e.view(np.uint32))
            and result.debug_get_from_remote(r).numpy().tobytes() == s.tobytes()
            for r, (e, s) in enumerate(zip(prep["expected"][route], prep["sums"][route]))
        )
        del func, arg, loaded, keep, result
    finally:
        del sess  # released, not sess.shutdown() (tests/test_disco.py)
        gc.collect()  # a session is in a cycle with its cached functions (Session._cache)
        _stop(workers)
        timer.cancel()
    return {"load_ns": load_ns, "peak_added": peak, "call_added": called, "workers_seen": len(pids), "ok": ok}


CELLS = [  # (header, the cell of a route's figures f: medians over its sessions)
    ("load ms", lambda f: f"{f['load_ns'] / 1e6:.2f}"),
    ("load / LoadAll", lambda f: f"{f['vs_load_all']:.4f}"),
    ("peak during load MiB per worker", lambda f: " / ".join(f"{v / MIB:.1f}" for v in f["peak_added"])),
    ("after first call MiB per worker", lambda f: " / ".join(f"{v / MIB:.1f}" for v in f["call_added"])),
    ("after/shard (max)", lambda f: f"{f['worst']:.3f}"),
    ("bitwise", lambda f: "yes" if f["ok"] else "NO"),
]


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--sizes", nargs="+", default=["256MiB"], help="whole weight sizes (square float32)")
    p.add_argument("--workers", nargs="+", type=int, default=[2], help="session sizes (the world)")
    p.add_argument("--repeat", type=int, default=3, help="fresh sessions per route and figure (medians)")
    p.add_argument("--timeout", type=float, default=300, help="seconds one session may take")
    args = p.parse_args(argv)
    sizes = [parse_size(s) for s in " ".join(args.sizes).replace(",", " ").split()]
    sizes, worlds, repeat = ([4 * MIB], [2], 1) if args.quick else (sizes, args.workers, args.repeat)
    if min(worlds) < 2:
        raise SystemExit("--workers: LoadAllPresharded needs at least 2 (TVM checks num_shards > 1)")
    # the LoadAll workers import _disco_cpu_ccl, their entrypoint, from here
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (here, os.environ.get("PYTHONPATH"))))
    rep = Report(__file__, argv)
    rows, values, ours = [], [], []
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # the stand-in's chunks: tmpfs if any
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory(dir=shm) as ccl:
        for size, world in ((size, world) for size in sizes for world in worlds):
            case = tempfile.mkdtemp(dir=folder)
            prep = _prepare(case, size, world)
            runs: dict = {route: [] for route in ROUTES}
            for _ in range(repeat):
                for route in ROUTES:
                    runs[route].append(_run(route, prep, world, ccl, args.timeout, [folder, ccl]))
            shutil.rmtree(case)  # the disk and the page cache
            values.append({"size": size, "world": world, "runs": runs, "exports": prep["exports"]})
            load_all = median(r["load_ns"] for r in runs[LOAD_ALL])
            for route, got in runs.items():
                assert all(r["workers_seen"] == world for r in got), "a worker process was not found"
                f = {
                    k: [median(r[k][w] for r in got) for w in range(world)]
                    for k in ("peak_added", "call_added")
                }
                f.update(load_ns=median(r["load_ns"] for r in got), ok=all(r["ok"] for r in got))
                f.update(vs_load_all=f["load_ns"] / load_all, worst=max(f["call_added"]) / prep["shard"])
                rows.append(
                    [route, format_size(size), world, format_size(prep["shard"]), *(c(f) for _, c in CELLS)]
                )
                if route in DIM:
                    ours.append((route, world, f["vs_load_all"], f["worst"]))
    title = (
        f"# Loading a sharded float32 weight on a CPU ProcessSession (row shards; the columns route: column "
        f"shards), medians of {repeat}: load (from nothing on the workers to every rank's shard in place, then "
        "a sync), each worker's RSS above its RSS before the load: peak during the load and after the first call"
    )
    header = "|".join(["route", "weight", "workers", "shard", *(h for h, _ in CELLS)])
    rep.table("disco", title, header, rows, values=values)
    met = {True: "holds", False: "MISSED"}
    for route, world, ratio, worst in ours:
        rep.note(
            f"{world} workers: {route}'s load / LoadAll's = {ratio:.4f} (target <= 0.01: {met[ratio <= 0.01]}), "
            f"its RSS after the first call / shard = {worst:.3f} (target <= 1.05: {met[worst <= 1.05]})"
        )
    fast, held = (all(v[i] <= limit for v in ours) for i, limit in ((2, 0.01), (3, 1.05)))
    rep.note(
        f"target per-worker RSS after the first call <= 1.05x its shard: {met[held]}; "
        f"target load <= 0.01x LoadAll's: {met[fast]} (both tvm_partial routes)"
    )
    for v in values:
        each = "; ".join(
            f"{'rows' if route == ROWS else 'columns'} {e['export_ns'] / 1e6:.0f} ms, peak "
            f"{e['export_peak_added'] / MIB:.1f} MiB above the RSS before it"
            for route, e in v["exports"].items()
        )
        where = "the export in the driver (export_library with weights_file=, one each, not a median)"
        rep.note(f"{v['world']} workers, {where}: {each}")
    rep.write(args.json)
    return 0 if all(row[-1] == "yes" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
