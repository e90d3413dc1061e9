# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Scale-out over TVM RPC (docs/benchmarks.md): N requests of one self-contained artifact spread
over 1, 2 and 4 local rpc_servers behind one tracker, one client thread per session.

    python benchmarks/bench_rpc.py [--requests 256] [--repeats 3] [--servers 1 2 4] [--quick] [--json PATH]
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import tvm
from tvm import rpc, te

import tvm_partial
from _common import Report, machine, median, parser

# The tests' launcher: servers on 127.0.0.1, free ports, bounded waits, killed on exit.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from rpc_helpers import HOST, tracker_with_servers

KEY = "bench"


class Client:
    """One session: the artifact loaded on its server, its input and output there."""

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
    """Seconds for `requests` calls split evenly over `clients`, one thread each."""
    share = [requests // len(clients) + (i < requests % len(clients)) for i in range(len(clients))]
    threads = [threading.Thread(target=c.run, args=(s,)) for c, s in zip(clients, share)]
    start = time.perf_counter_ns()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter_ns() - start) / 1e9


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--requests", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--shape", type=int, nargs=3, default=[64, 256, 256], metavar=("M", "K", "N"))
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    if args.quick:  # 4 requests of a 4x16x16 product, 1 and 2 servers
        args.requests, args.repeats, args.servers, args.shape = 4, 1, [1, 2], [4, 16, 16]
    m, k, n = args.shape
    x, w = te.placeholder((m, k), "float32", name="x"), te.placeholder((k, n), "float32", name="w")
    r = te.reduce_axis((0, k), "r")
    y = te.compute((m, n), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r), name="y")
    rng = np.random.default_rng(0)
    wv, xv = (rng.integers(-4, 5, s).astype("float32") for s in ((k, n), (m, k)))
    exe = tvm.compile(te.create_prim_func([x, w, y]), target="llvm")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.so"
        tvm_partial.export_library(
            tvm_partial.partial(exe, w=wv, signature=[x, w, y]), path, self_contained=True
        )
        artifact = path.read_bytes()
    rows, base = [], None
    with tracker_with_servers(max(args.servers), key=KEY) as port:
        clients = [Client(port, artifact, xv, (m, n)) for _ in range(max(args.servers))]
        for c in clients:  # every server computes the right thing before anything is timed
            c.run(1)
            assert np.array_equal(c.y.numpy(), xv @ wv)
        for count in args.servers:
            seconds = median([timed(clients[:count], args.requests) for _ in range(args.repeats)])
            rate = args.requests / seconds
            base = base or rate
            servers = f"{count} server{'s' if count > 1 else ''}"
            rows.append([servers, f"{seconds * 1e3:.0f} ms", f"{rate:.1f}", f"{rate / base:.2f}x"])
    print(f"# {machine()}")
    title = f"# {args.requests} requests of y = x @ w, x {m}x{k}, w {k}x{n} bound; median of {args.repeats}"
    rep.table("servers", title, "servers|time|requests/s|vs 1 server", rows)
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
