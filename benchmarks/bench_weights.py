# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Weights in safetensors files beside the code, against re-exporting (issue 13).

Per weight size, side by side in one run: ``np.save`` of the weights (the floor: one write),
``save_weights``, a default (zero-copy) ``export_library``, an export with ``weights_file=`` (and
its load: time, RSS added); in a fresh process ``load`` of the
artifact and ``load(artifact, weights_file=...)`` (the swap), with the RSS each adds before the
first call; and two processes that map the same weights file (``open_weights``) and read all of
it, with Rss and Pss from /proc/PID/smaps_rollup while both hold it (shared pages: Pss about half
of Rss), once through ``open_weights`` and once through ``load(artifact, weights_file=)``. One run per figure (export and save write GiB: no repeats on a shared machine).

    python benchmarks/bench_weights.py --sizes 256MiB 1GiB

``--export-only`` measures just the target "export at the speed of one write": per size, ``np.save``
of the weights and the default export (zero-copy, payloads appended to the library) alternately,
``--repeat`` times each, medians and the ratio side by side:

    python benchmarks/bench_weights.py --export-only --sizes 1GiB,4GiB --repeat 3

``--json PATH`` also writes the results as JSON (for scripts/render_benchmarks.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import Report, add_json_option, machine, parse_size

_LOAD = r"""
import json, sys, time
import tvm, tvm_partial
def rss():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
base = rss(); t = time.perf_counter_ns()
pm = tvm_partial.load(sys.argv[1])
load_s = (time.perf_counter_ns() - t) / 1e9; held = rss() - base
base = rss(); t = time.perf_counter_ns()
swapped = tvm_partial.load(sys.argv[1], weights_file=sys.argv[2])
swap_s = (time.perf_counter_ns() - t) / 1e9; swap_held = rss() - base
base = rss(); t = time.perf_counter_ns()
external = tvm_partial.load(sys.argv[3])
ext_s = (time.perf_counter_ns() - t) / 1e9; ext_held = rss() - base
print(json.dumps({"load_s": load_s, "held": held, "swap_s": swap_s, "swap_held": swap_held,
                  "ext_load_s": ext_s, "ext_held": ext_held}))
"""

_SHARE = r"""
import sys
import numpy as np, tvm_partial
if len(sys.argv) > 2:  # the tensors an artifact binds, loaded with weights_file= (mapped in C++)
    w = tvm_partial.bindings(tvm_partial.load(sys.argv[2], weights_file=sys.argv[1]))["main"]
else:
    w = tvm_partial.open_weights(sys.argv[1])
total = sum(float(np.from_dlpack(t).sum(dtype="float64")) for t in w.values())  # read every page
print("ready", flush=True)
sys.stdin.readline()
import os
rss = pss = 0
mine = False  # sum the mappings of the weights file (smaps: a header line, then its fields)
with open("/proc/self/smaps") as f:
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


_CHECK = r"""
import sys
import numpy as np, tvm, tvm_partial
pm = tvm_partial.load(sys.argv[1])
x = np.arange(4, dtype="float32"); y = tvm.runtime.empty((4,), "float32")
pm(tvm.runtime.tensor(x), y)
print(bool(np.array_equal(y.numpy(), x + np.float32(1.5))))
"""


def _timed(fn) -> float:
    t = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t) / 1e9


def _share(weights: Path, artifact: Path | None = None) -> list:
    """Two processes map `weights` (open_weights, or load(artifact, weights_file=)) and read all of
    it; while both hold it: [[file Rss, file Pss, process Rss, process Pss]] of each."""
    extra = [str(artifact)] if artifact else []
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SHARE, str(weights), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
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
    import tvm

    import tvm_partial

    count = nbytes // 4
    exe, sig = _kernel(count)
    weights = tvm.runtime.empty((count,), "float32")
    view = np.from_dlpack(weights)
    view[:] = np.float32(1.5)
    pm = tvm_partial.partial(exe, weights=weights, signature=sig)
    out = {"np.save": _timed(lambda: np.save(tmp / "w.npy", view))}
    (tmp / "w.npy").unlink()
    out["save_weights"] = _timed(lambda: tvm_partial.save_weights(pm, tmp / "w.safetensors"))
    out["export"] = _timed(lambda: tvm_partial.export_library(pm, tmp / "model.so"))
    out["artifact_bytes"] = (tmp / "model.so").stat().st_size
    out["export_ext"] = _timed(
        lambda: tvm_partial.export_library(pm, tmp / "ext.so", weights_file=tmp / "ext.safetensors")
    )
    out["ext_bytes"] = (tmp / "ext.so").stat().st_size
    out["weights_bytes"] = (tmp / "w.safetensors").stat().st_size
    pm = weights = view = None  # drop the references before the loading subprocess
    proc = subprocess.run(
        [sys.executable, "-c", _LOAD, str(tmp / "model.so"), str(tmp / "w.safetensors"), str(tmp / "ext.so")],
        capture_output=True,
        text=True,
        check=True,
    )
    out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    out["share"] = _share(tmp / "w.safetensors")
    out["share_load"] = _share(tmp / "w.safetensors", tmp / "model.so")
    for name in ("model.so", "w.safetensors", "ext.so", "ext.safetensors"):
        (tmp / name).unlink()
    return out


def _kernel(count: int):
    """A kernel that reads a few of ``count`` float32 weights, and its signature."""
    import tvm
    from tvm import te

    w = te.placeholder((count,), "float32", name="weights")
    x = te.placeholder((4,), "float32", name="x")
    y = te.compute((4,), lambda i: w[i * (count // 4)] + x[i], name="y")
    exe = tvm.compile(
        tvm.IRModule({"main": te.create_prim_func([x, w, y]).with_attr("global_symbol", "main")}),
        target="llvm",
    )
    return exe, [x, w, y]


def measure_export(nbytes: int, tmp: Path, repeat: int) -> dict:
    """np.save and the default export of the same weights, alternately; each file removed after."""
    import tvm

    import tvm_partial

    count = nbytes // 4
    exe, sig = _kernel(count)
    weights = tvm.runtime.empty((count,), "float32")
    view = np.from_dlpack(weights)
    view[:] = np.float32(1.5)
    pm = tvm_partial.partial(exe, weights=weights, signature=sig)
    saves, exports = [], []
    for _ in range(repeat):
        saves.append(_timed(lambda: np.save(tmp / "w.npy", view)))
        (tmp / "w.npy").unlink()
        exports.append(_timed(lambda: tvm_partial.export_library(pm, tmp / "model.so")))
        artifact = (tmp / "model.so").stat().st_size
        if len(exports) == repeat:  # the last artifact: whole, and right in a fresh process
            intact = tvm_partial.verify(tmp / "model.so")["intact"]
            result = subprocess.run(
                [sys.executable, "-c", _CHECK, str(tmp / "model.so")],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            if not intact or result != ["True"]:
                raise SystemExit(f"the {nbytes}-byte artifact is wrong: verify {intact}, load {result}")
        (tmp / "model.so").unlink()
    return {
        "np.save": float(np.median(saves)),
        "export": float(np.median(exports)),
        "saves": saves,
        "exports": exports,
        "artifact_bytes": artifact,
    }


def main_export_only(sizes: list, repeat: int, rep: Report) -> int:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure_export(parse_size(size), Path(tmp), repeat)
        rows.append(
            [
                size,
                f"{r['np.save']:.2f}",
                f"{r['export']:.2f}",
                f"{r['export'] / r['np.save']:.2f}",
                " ".join(f"{v:.2f}" for v in r["saves"]),
                " ".join(f"{v:.2f}" for v in r["exports"]),
                f"{r['artifact_bytes'] / 2**20:.1f}",
            ]
        )
    rep.table(
        "export_only",
        "",
        [
            "weights",
            "np.save s",
            "default export s",
            "export/np.save",
            "np.save runs",
            "export runs",
            "artifact MiB",
        ],
        rows,
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", default=["256MiB", "1GiB"], help="weight sizes")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 64 KiB only")
    parser.add_argument("--export-only", action="store_true", help="np.save against the default export only")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, with --export-only (median)")
    add_json_option(parser)
    args = parser.parse_args(argv)
    rep = Report(__file__, argv)
    sizes = ["64KiB"] if args.quick else [s for arg in args.sizes for s in arg.split(",") if s]
    print(machine())
    if args.export_only:
        status = main_export_only(sizes, args.repeat, rep)
        rep.write(args.json)
        return status
    rows, shares, ext_rows = [], [], []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            r = measure(parse_size(size), Path(tmp))
        mib = 2**20
        rows.append(
            [
                size,
                f"{r['np.save']:.2f}",
                f"{r['save_weights']:.2f}",
                f"{r['save_weights'] / r['np.save']:.2f}",
                f"{r['export']:.2f}",
                f"{r['export'] / r['np.save']:.2f}",
                f"{r['artifact_bytes'] / mib:.1f}",
                f"{r['weights_bytes'] / mib:.1f}",
                f"{r['load_s'] * 1e3:.1f}",
                f"{r['held'] / mib:.1f}",
                f"{r['swap_s'] * 1e3:.1f}",
                f"{r['swap_held'] / mib:.1f}",
                f"{r['swap_s'] / r['export']:.4f}",
            ]
        )
        ext_rows.append(
            [
                size,
                f"{r['export_ext']:.2f}",
                f"{r['export_ext'] / r['np.save']:.2f}",
                f"{r['ext_bytes'] / 1024:.0f}",
                f"{r['ext_load_s'] * 1e3:.1f}",
                f"{r['ext_held'] / mib:.1f}",
            ]
        )
        for how, key in (("open_weights", "share"), ("load(weights_file=)", "share_load")):
            shares.append(
                [size, how]
                + [
                    f"{rss / mib:.0f} / {pss / mib:.0f} ({pss / rss:.2f}); process {trss / mib:.0f} / {tpss / mib:.0f}"
                    for rss, pss, trss, tpss in r[key]
                ]
            )
    rep.table(
        "weights_file",
        "",
        ["weights", "export, weights_file= s", "/np.save", "library KiB", "load ms", "load RSS MiB"],
        ext_rows,
    )
    print()
    rep.table(
        "swap",
        "",
        [
            "weights",
            "np.save s",
            "save_weights s",
            "/np.save",
            "export s",
            "/np.save",
            "artifact MiB",
            "weights file MiB",
            "load ms",
            "load RSS MiB",
            "swap ms",
            "swap RSS MiB",
            "swap/export",
        ],
        rows,
    )
    print()
    rep.table(
        "shared",
        "two processes mapping one weights file, all read: the file's mappings Rss / Pss MiB (Pss/Rss); "
        "the whole process (smaps_rollup) Rss / Pss MiB",
        ["weights", "mapped by", "process 1", "process 2"],
        shares,
    )
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
