# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Scale-out over TVM RPC: N requests spread over 1, 2 and 4 local rpc_servers behind one tracker,
all running the same self-contained tvm-partial artifact (weights inside).

Each server gets one session (one client thread) that uploads the artifact and loads it once;
then the N requests are split evenly over the sessions and timed together. Servers, tracker and
clients all run on this machine (127.0.0.1), so the curve shows how the work spreads over its
cores, not over machines: it flattens once the servers outnumber the cores.

    python benchmarks/bench_rpc.py             # --requests 256 --repeats 3; --quick: a smoke run (tiny)
    python benchmarks/bench_rpc.py --json benchmarks/results/rpc.json   # also the results as JSON
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import tvm
from tvm import rpc, te

import tvm_partial
from _common import Report, add_json_option, machine, median

# The tests' launcher: servers on 127.0.0.1, free ports, bounded waits, killed on exit.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from rpc_helpers import HOST, tracker_with_servers

KEY = "bench"


def build(folder: Path, m: int, k: int, n: int) -> tuple:
    """y = x @ w with w bound: the artifact's path, x and the expected y."""
    x = te.placeholder((m, k), "float32", name="x")
    w = te.placeholder((k, n), "float32", name="w")
    r = te.reduce_axis((0, k), "r")
    y = te.compute((m, n), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="y")
    exe = tvm.compile(te.create_prim_func([x, w, y]), target="llvm")
    rng = np.random.default_rng(0)
    wv, xv = (rng.integers(-4, 5, s).astype("float32") for s in ((k, n), (m, k)))
    path = folder / "model.so"
    tvm_partial.export_library(tvm_partial.partial(exe, w=wv, signature=[x, w, y]), path, self_contained=True)
    return path, xv, xv @ wv


class Client:
    """One session: the artifact loaded on its server, input and output tensors there."""

    def __init__(self, tracker_port: int, artifact: bytes, x: np.ndarray, shape: tuple):
        self.session = rpc.connect_tracker(HOST, tracker_port).request(KEY, session_timeout=600)
        self.session.upload(bytearray(artifact), target="model.so")
        self.main = self.session.load_module("model.so")["main"]
        self.x = tvm.runtime.tensor(x, self.session.cpu())
        self.y = tvm.runtime.empty(shape, "float32", self.session.cpu())

    def run(self, count: int) -> None:
        for _ in range(count):
            self.main(self.x, self.y)


def timed(clients: list, requests: int) -> float:
    """Seconds for ``requests`` calls split evenly over ``clients``, one thread each."""
    share = [requests // len(clients) + (i < requests % len(clients)) for i in range(len(clients))]
    threads = [threading.Thread(target=c.run, args=(s,)) for c, s in zip(clients, share)]
    start = time.perf_counter_ns()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter_ns() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--shape", type=int, nargs=3, default=[64, 256, 256], metavar=("M", "K", "N"))
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 4 requests of a 4x16x16 product, 1 and 2 servers"
    )
    add_json_option(parser)
    args = parser.parse_args()
    rep = Report(__file__)
    if args.quick:
        args.requests, args.repeats, args.servers, args.shape = 4, 1, [1, 2], [4, 16, 16]
    m, k, n = args.shape
    with tempfile.TemporaryDirectory(prefix="bench_rpc_") as folder:
        path, x, expected = build(Path(folder), m, k, n)
        artifact = path.read_bytes()
        with tracker_with_servers(max(args.servers), key=KEY) as port:
            clients = [Client(port, artifact, x, (m, n)) for _ in range(max(args.servers))]
            for c in clients:  # every server computes the right thing before anything is timed
                c.run(1)
                assert np.array_equal(c.y.numpy(), expected)
            rows, base = [], None
            for count in args.servers:
                seconds = median([timed(clients[:count], args.requests) for _ in range(args.repeats)])
                rate = args.requests / seconds
                base = base or rate
                rows.append(
                    [
                        f"{count} server{'s' if count > 1 else ''}",
                        f"{seconds * 1e3:.0f} ms",
                        f"{rate:.1f}",
                        f"{rate / base:.2f}x",
                    ]
                )
    print(f"# {machine()}")
    rep.table(
        "servers",
        f"# {args.requests} requests of y = x @ w, x {m}x{k}, w {k}x{n} bound; median of {args.repeats}",
        ["servers", "time", "requests/s", "vs 1 server"],
        rows,
    )
    rep.write(args.json)


if __name__ == "__main__":
    main()
