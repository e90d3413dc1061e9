# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Export and load with large constants (docs/benchmarks.md): tvm-partial inline, zero-copy and
with a weights file, against TVM's const_loader and numpy's save/load; each export and load in a
fresh process. The kernel reads w[n - 1]; with --read-all it sums every weight, checked bitwise.

    python benchmarks/bench_load.py [--sizes 256MiB 1GiB 4GiB] [--routes ...] [--repeats 3] [--json PATH]
    python benchmarks/bench_load.py --read-all [--sizes 256MiB 1GiB]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from _common import Report, child, format_size, machine, median, parse_size, parser

MIB = 2**20

# argv: route, nbytes, path, export kwargs (JSON), kernel ("last": out = x * w[n-1] + b, or "sum")
_EXPORT = """
import hashlib
import numpy as np, tvm, tvm_ffi, tvm_partial
from tvm import te
route, nbytes, path, extra, kernel = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
if extra.get("weights_file"):
    extra["weights_file"] = path[: -len(".so")] + ".safetensors"
count = max(nbytes // 4, 1)
if kernel == "last":
    host = np.full((count,), 1.5, "float32")
    host[-1] = 3.0
    expected, digest = 7.0, None
else:  # small integers, a block of prime length repeated: no two pages alike, the sum exact
    block = np.random.default_rng(7).integers(-8, 9, size=1_000_003).astype("float32")
    host = np.resize(block, count)
    expected = float(host.sum(dtype="float64")) * 2.0 + 1.0
    digest = hashlib.sha256(memoryview(host).cast("B")).hexdigest()
if route != "numpy":
    n = te.var("n")
    x, w, b = (te.placeholder(s, "float32", name=k) for k, s in (("x", (1,)), ("w", (n,)), ("b", (1,))))
    if kernel == "last":
        out = te.compute((1,), lambda i: x[i] * w[n - 1] + b[i], name="out")
    else:
        k = te.reduce_axis((0, n), name="k")
        total = te.compute((1,), lambda i: te.sum(w[k].astype("float64"), axis=k), name="total")
        out = te.compute((1,), lambda i: x[i].astype("float64") * total[i] + b[i].astype("float64"), name="out")
    exe = tvm.compile(te.create_prim_func([x, w, b, out]), target="llvm")
    w_t, b_t = tvm.runtime.tensor(host), tvm.runtime.tensor(np.ones((1,), "float32"))
    del host
reset_peak()
base = status("VmRSS")
t0 = time.perf_counter_ns()
if route == "numpy":
    np.save(path, host)
elif route == "partial":
    tvm_partial.export_library(tvm_partial.partial(exe, {1: w_t, 2: b_t}), path, **extra)
else:
    cl = tvm_ffi.get_global_func("ffi.Module.create.const_loader")({"w": w_t, "b": b_t}, {})
    cl.import_module(exe.mod)
    cl.export_library(path)
print(json.dumps({"export_ns": time.perf_counter_ns() - t0, "export_peak_bytes": max(status("VmHWM") - base, 0),
                  "expected": expected, "weights_sha256": digest}))
"""

# argv: route, path, kernel, hash the loaded weights after the measurements ("1" or "0")
_LOAD = """
t0 = time.perf_counter_ns()
import hashlib
import numpy as np, tvm, tvm_partial
t1 = time.perf_counter_ns()
route, path, kernel, want_hash = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
x = tvm.runtime.tensor(np.full((1,), 2.0, "float32"))
dtype = "float32" if kernel == "last" else "float64"
out = tvm.runtime.empty((1,), dtype)
reset_peak()
base = {k: status(k) for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}
t2 = time.perf_counter_ns()
if route == "partial":
    m = tvm.runtime.load_module(path)
    # the default run times the lookup of main (where an inline artifact builds its tensors) in the 1st call
    call = (lambda: m(x, out)) if kernel == "last" else (lambda f=m["main"]: f(x, out))
    weights = lambda: tvm_partial.bindings(m)["main"][1]
elif route == "const_loader":
    m = tvm.runtime.load_module(path)
    consts, g = m["get_const_var_tensor"](), m["main"]
    call = lambda: g(x, consts["w"], consts["b"], out)
    weights = lambda: consts["w"]
else:  # numpy, numpy_mmap: the same arithmetic in numpy
    arr = np.load(path, mmap_mode="r" if route == "numpy_mmap" else None)
    out = np.empty((1,), dtype)
    def call():
        out[0] = 2.0 * (arr[-1] if kernel == "last" else arr.sum(dtype="float64")) + 1.0
    weights = lambda: arr
t3 = time.perf_counter_ns()
held, held_peak = status("VmRSS") - base["VmRSS"], status("VmHWM") - base["VmHWM"]
call()
t4 = time.perf_counter_ns()
peak = status("VmHWM") - base["VmHWM"]
after = {k: status(k) - base[k] for k in ("RssAnon", "RssFile")}
call()
t5 = time.perf_counter_ns()
value = (out if isinstance(out, np.ndarray) else out.numpy()).tobytes()
digest = None
if want_hash:  # reads every weight once more
    w = weights()
    w = np.ascontiguousarray(w if isinstance(w, np.ndarray) else np.from_dlpack(w))
    digest = hashlib.sha256(memoryview(w).cast("B")).hexdigest()
print(json.dumps({"import_ns": t1 - t0, "load_ns": t3 - t2, "first_call_ns": t4 - t3, "second_call_ns": t5 - t4,
                  "held_bytes": max(held, 0), "held_peak_bytes": max(held_peak, 0), "peak_bytes": max(peak, 0),
                  "anon_after_bytes": max(after["RssAnon"], 0), "file_after_bytes": max(after["RssFile"], 0),
                  "value": float(np.frombuffer(value, dtype)[0]), "weights_sha256": digest}))
"""

ROUTES = {  # key: (label, export route, load route, export kwargs, the export's memory / the weights)
    "inline": ("tvm_partial (zero_copy=False)", "partial", "partial", {"zero_copy": False}, 4.0),
    "zero_copy": ("tvm_partial (zero_copy=True)", "partial", "partial", {"zero_copy": True}, 2.0),
    "weights_file": ("tvm_partial (weights_file=)", "partial", "partial", {"weights_file": True}, 1.3),
    "const_loader": (
        "TVM const_loader",
        "const_loader",
        "const_loader",
        {},
        5.0,
    ),  # at 4 GiB, > 16 GiB and growing
    "numpy": ("numpy save / load", "numpy", "numpy", {}, 1.3),
    "numpy_mmap": ("numpy save / load(mmap_mode='r')", "numpy", "numpy_mmap", {}, 1.3),
}
READ_ALL = ["zero_copy", "inline", "const_loader", "numpy", "numpy_mmap"]
COLUMNS = [  # (header, the cell of a route's figures f at n bytes of weights)
    ("export ms", lambda f, n: f"{f['export_ns'] / 1e6:,.0f}"),
    ("export peak", lambda f, n: format_size(f["export_peak_bytes"])),
    ("artifact", lambda f, n: f"{f['size'] / MIB:,.2f} MiB"),
    ("weights file", lambda f, n: f"{f['weights_size'] / MIB:,.2f} MiB" if f["weights_size"] else ""),
    ("load ms", lambda f, n: f"{f['load_ns'] / 1e6:,.1f}"),
    ("RSS held before 1st call", lambda f, n: format_size(f["held_bytes"])),
    ("/ weights", lambda f, n: f"{f['held_bytes'] / n:.4f}"),
    ("peak RSS before 1st call", lambda f, n: format_size(f["held_peak_bytes"])),
    ("1st call ms", lambda f, n: f"{f['first_call_ns'] / 1e6:,.2f}"),
    ("peak RSS after 1st call", lambda f, n: format_size(f["peak_bytes"])),
    ("imports ms", lambda f, n: f"{f['import_ns'] / 1e6:,.0f}"),
]
READ_ALL_COLUMNS = [
    *COLUMNS[:3],
    COLUMNS[4],
    ("load peak RSS", lambda f, n: format_size(f["held_peak_bytes"])),
    ("/ weights", lambda f, n: f"{f['held_peak_bytes'] / n:.2f}"),
    ("1st call ms", lambda f, n: f"{f['first_call_ns'] / 1e6:,.1f}"),
    ("2nd call ms", lambda f, n: f"{f['second_call_ns'] / 1e6:,.1f}"),
    COLUMNS[9],
    ("/ weights", lambda f, n: f"{f['peak_bytes'] / n:.2f}"),
    ("anon after", lambda f, n: format_size(f["anon_after_bytes"])),
    ("file after", lambda f, n: format_size(f["file_after_bytes"])),
    ("result, weights", lambda f, n: "exact" if f["exact"] else "MISMATCH"),
]


def _available() -> int:
    with open("/proc/meminfo") as f:
        return next((int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")), 0)


def measure(key: str, nbytes: int, repeats: int, tmp: str, kernel: str) -> dict:
    """One route's figures (the export's, the loads' medians), its "loads", or {"error": why not}."""
    label, export_route, load_route, extra, memory = ROUTES[key]
    if kernel == "last" and memory * nbytes > _available():
        need, have = format_size(memory * nbytes), format_size(_available())
        return {"error": f"not run: its export needs about {need}, {have} available"}
    path = os.path.join(tmp, "weights.npy" if export_route == "numpy" else "artifact.so")
    weights = path[: -len(".so")] + ".safetensors"
    strict = kernel == "sum"  # --read-all compares every route: a failure ends the run
    export = child(_EXPORT, export_route, nbytes, path, json.dumps(extra), kernel, fail_ok=not strict)
    loads = []
    if "error" not in export:
        export["size"] = os.path.getsize(path)
        export["weights_size"] = os.path.getsize(weights) if os.path.exists(weights) else None
        for i in range(repeats):  # the first load of --read-all hashes the weights it loaded
            loads.append(child(_LOAD, load_route, path, kernel, int(strict and i == 0), fail_ok=not strict))
    for leftover in (path, weights):
        if os.path.exists(leftover):
            os.remove(leftover)
    failed = [r for r in (export, *loads) if "error" in r]
    if failed:
        return {"error": f"{'export' if 'error' in export else 'load'} fails: {failed[0]['error']}"}
    print(f"  {format_size(nbytes)} {label}: done", file=sys.stderr, flush=True)
    medians = {k: median(load[k] for load in loads) for k in loads[0] if k.endswith(("_ns", "_bytes"))}
    return {**export, **medians, "loads": loads}


def _ratio(value: float) -> str:
    return f"{value:.4f}" if value < 0.01 else f"{value:.3f}" if value < 0.1 else f"{value:.2f}"


def targets(r: dict, n: int) -> list:
    """(statement, value, the most it may be) of the zero-copy route at n bytes; r: every route's figures."""
    z, c = r["zero_copy"], r["const_loader"]
    identical = all(r[k]["exact"] for k in ("zero_copy", "inline", "const_loader"))
    held = z["held_peak_bytes"] / n
    both = (z["load_ns"] + z["first_call_ns"]) / (c["load_ns"] + c["first_call_ns"])
    first = z["first_call_ns"] / z["second_call_ns"]
    return [
        ("peak RSS added by the load, before the first call <= 0.10 x weights", held, 0.1),
        ("peak RSS after a first call reading every weight <= 1.10 x weights", z["peak_bytes"] / n, 1.1),
        ("load time <= 0.20 x const_loader's", z["load_ns"] / c["load_ns"], 0.20),
        ("export time <= 1.00 x const_loader's", z["export_ns"] / c["export_ns"], 1.00),
        ("artifact size <= 1.01 x weights", z["size"] / n, 1.01),
        ("results bitwise identical to inline and const_loader", identical, True),
        ("(no target) load + 1st call, against const_loader's", both, None),
        ("(no target) 1st call / 2nd call (the 1st maps every page)", first, None),
    ]


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument(
        "--sizes", nargs="+", help="weight sizes (default: 256MiB 1GiB 4GiB; --read-all: 256MiB 1GiB)"
    )
    p.add_argument("--repeats", type=int, help="loads per artifact, each a fresh process (median; default 3)")
    p.add_argument("--routes", nargs="+", choices=list(ROUTES), help="routes (default: all)")
    p.add_argument("--read-all", action="store_true", help="a kernel that reads every weight, bitwise checks")
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    default = ["256MiB", "1GiB"] if args.read_all else ["256MiB", "1GiB", "4GiB"]
    quick = ["1MiB"] if args.read_all else ["64KiB"]
    sizes = [parse_size(s) for s in (args.sizes or (quick if args.quick else default))]
    repeats = args.repeats or (1 if args.quick else 3)
    kernel, columns = ("sum", READ_ALL_COLUMNS) if args.read_all else ("last", COLUMNS)
    keys = READ_ALL if args.read_all else args.routes or list(ROUTES)
    print(machine())
    print(
        f"float32 weights; loads: medians of {repeats} fresh processes; RSS above the process after its imports"
    )
    rows, notes, goals = [], [], []
    with tempfile.TemporaryDirectory(prefix="tvm-partial-bench-") as tmp:
        for nbytes in sizes:
            results = {key: measure(key, nbytes, repeats, tmp, kernel) for key in keys}
            digest = results[keys[0]].get("weights_sha256")  # --read-all: what the loads must hold
            for key, f in results.items():
                label = ROUTES[key][0]
                if "error" in f:
                    notes.append(f"FAILED or NOT RUN: {format_size(nbytes)} {label}: {f['error']}")
                    continue
                got = sorted({load["value"] for load in f["loads"]})
                f["exact"] = got == [f["expected"]] and f["loads"][0]["weights_sha256"] == digest
                if not f["exact"]:
                    notes.append(
                        f"MISMATCH: {format_size(nbytes)} {label}: results {got}, expected {f['expected']!r}"
                    )
                rows.append([format_size(nbytes), label, *(cell(f, nbytes) for _, cell in columns)])
            if args.read_all:
                goals.append(targets(results, nbytes))
    header = "|".join(["weights", "route", *(h for h, _ in columns)])
    rep.table("read_all" if args.read_all else "load", "", header, rows, ["<", "<"] + [">"] * len(columns))
    for note in notes:
        rep.note(note)
    if args.read_all:  # the zero-copy route's targets, at every size
        body = []
        for i, (text, _, limit) in enumerate(goals[0]):
            got = [size[i][1] for size in goals]
            cells = [("yes" if v else "no") if limit is True else _ratio(v) for v in got]
            holds = all(got) if limit is True else all(v <= limit for v in got) if limit else None
            body.append([text, *cells, "" if holds is None else "holds" if holds else "fails"])
        title = "\ntargets of the zero-copy route (ratios: zero-copy figure / reference)"
        rep.table("targets", title, "|".join(["target", *map(format_size, sizes), ""]), body)
    if args.quick:
        rep.note("(--quick: one size, one load: a smoke run, not figures to quote)")
    rep.write(args.json)
    return 1 if any(note.startswith("MISMATCH") for note in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
