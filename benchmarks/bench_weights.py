# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights files (docs/benchmarks.md): save_weights against np.save; another weight set loaded with
the code (load(artifact, weights_file=)) against exporting again; two processes sharing one file.

    python benchmarks/bench_weights.py [--sizes 256MiB 1GiB] [--quick] [--json PATH]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import Report, child, machine, parse_size, parser

# argv: an artifact, another weights file: the swap's time and the RSS it adds
_SWAP = """
import tvm, tvm_partial
base, t = status("VmRSS"), time.perf_counter_ns()
m = tvm_partial.load(sys.argv[1], weights_file=sys.argv[2])
print(json.dumps({"swap_s": (time.perf_counter_ns() - t) / 1e9, "swap_held": status("VmRSS") - base}))
"""

# argv: the weights file[, an artifact to load with it]. Reads all of it, waits for a line, then
# prints the Rss and Pss of the file's mappings (/proc/self/smaps) and of the whole process.
_SHARE = r"""
import os, sys
import numpy as np, tvm_partial
if len(sys.argv) > 2:  # the tensors an artifact binds, loaded with weights_file= (mapped in C++)
    w = tvm_partial.bindings(tvm_partial.load(sys.argv[2], weights_file=sys.argv[1]))["main"]
else:
    w = tvm_partial.open_weights(sys.argv[1])
total = sum(float(np.from_dlpack(t).sum(dtype="float64")) for t in w.values())  # read every page
print("ready", flush=True)
sys.stdin.readline()
rss = pss = 0
mine = False
with open("/proc/self/smaps") as f:  # a header line per mapping, then its fields
    for line in f:
        parts = line.split()
        if not line[0].isupper() or "-" in parts[0]:
            mine = parts[-1] == os.path.realpath(sys.argv[1])
        elif mine and parts[0] in ("Rss:", "Pss:"):
            rss += int(parts[1]) * 1024 if parts[0] == "Rss:" else 0
            pss += int(parts[1]) * 1024 if parts[0] == "Pss:" else 0
with open("/proc/self/smaps_rollup") as f:
    fields = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in f if l.split()[-1] == "kB"}
print(rss, pss, fields["Rss"], fields["Pss"], flush=True)
"""


def _timed(fn) -> float:
    t = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t) / 1e9


def _share(*files: Path) -> list:
    """Two processes map the file and read all of it: [file Rss, Pss, process Rss, Pss] of each."""
    command = [sys.executable, "-c", _SHARE, *map(str, files)]
    procs = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in "12"
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    shares = []
    for p in procs:
        p.stdin.write("\n")
        p.stdin.flush()
        shares.append([int(v) for v in p.stdout.readline().split()])
    for p in procs:
        p.wait()
    return shares


def measure(nbytes: int, tmp: Path) -> dict:
    """float32 weights of all 1.5, bound to y = x + w[i * (n // 4)], saved and exported."""
    import tvm
    from tvm import te

    import tvm_partial

    count = nbytes // 4
    w, x = te.placeholder((count,), "float32", name="weights"), te.placeholder((4,), "float32", name="x")
    y = te.compute((4,), lambda i: w[i * (count // 4)] + x[i], name="y")
    exe = tvm.compile(te.create_prim_func([x, w, y]), target="llvm")
    weights = tvm.runtime.tensor(np.full((count,), 1.5, "float32"))
    pm = tvm_partial.partial(exe, weights=weights, signature=[x, w, y])
    out = {"np.save": _timed(lambda: np.save(tmp / "w.npy", np.from_dlpack(weights)))}
    out["save_weights"] = _timed(lambda: tvm_partial.save_weights(pm, tmp / "w.safetensors"))
    out["export"] = _timed(lambda: tvm_partial.export_library(pm, tmp / "model.so"))
    pm = weights = None  # no references left while the fresh processes load
    out.update(child(_SWAP, tmp / "model.so", tmp / "w.safetensors"))
    out["share"] = _share(tmp / "w.safetensors")
    out["share_load"] = _share(tmp / "w.safetensors", tmp / "model.so")
    return out


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--sizes", nargs="+", default=["256MiB", "1GiB"], help="weight sizes")
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    print(machine())
    rows, shares, mib = [], [], 2**20
    for size in ["64KiB"] if args.quick else args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(parse_size(size), Path(tmp))
        saves = [f"{r['np.save']:.2f}", f"{r['save_weights']:.2f}", f"{r['save_weights'] / r['np.save']:.2f}"]
        swap = [f"{r['swap_s'] * 1e3:.1f}", f"{r['swap_held'] / mib:.1f}", f"{r['swap_s'] / r['export']:.4f}"]
        rows.append([size, *saves, f"{r['export']:.2f}", *swap])
        for how, key in (("open_weights", "share"), ("load(weights_file=)", "share_load")):
            cells = [
                f"{a / mib:.0f} / {b / mib:.0f} ({b / a:.2f}); process {c / mib:.0f} / {d / mib:.0f}"
                for a, b, c, d in r[key]
            ]
            shares.append([size, how, *cells])
    header = "weights|np.save s|save_weights s|/np.save|export s|swap ms|swap RSS MiB|swap/export"
    rep.table("swap", "", header, rows)
    title = (
        "\ntwo processes mapping one weights file, all read: the file's mappings Rss / Pss MiB (Pss/Rss); "
        "the whole process (smaps_rollup) Rss / Pss MiB"
    )
    rep.table("shared", title, "weights|mapped by|process 1|process 2", shares)
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
