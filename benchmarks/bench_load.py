# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Export and load with large constants: tvm-partial against TVM's const_loader and numpy.

    python benchmarks/bench_load.py                          # 256 MiB, 1 GiB, 4 GiB of weights
    python benchmarks/bench_load.py --sizes 16MiB 256MiB     # chosen sizes
    python benchmarks/bench_load.py --sizes 4GiB --routes const_loader   # chosen routes
    python benchmarks/bench_load.py --quick                  # a smoke run: 64 KiB, one load
    python benchmarks/bench_load.py --read-all               # 256 MiB, 1 GiB; a kernel reading every weight
    python benchmarks/bench_load.py --json benchmarks/results/load.json   # also the results as JSON

The kernel reads w[n - 1] of a float32 weight vector of n elements (out = x * w[n-1] + b), so the
first call is cheap and the figures are those of getting the constants into a process. Per size
and route, every step runs in a fresh subprocess:

- export: build the module, then time the export alone (and its peak RSS above what the process
  held just before exporting);
- load: import numpy, tvm and tvm_partial, note VmHWM, then time loading the artifact and the
  first call (checked against the expected value); RSS held before the first call is VmRSS right
  after the load minus VmRSS before it; peak RSS is VmHWM after the first call minus VmHWM before.

Routes: tvm-partial's `partial(exe, {1: w, 2: b})` exported with `tvm_partial.export_library`,
with the payloads inline (zero_copy=False), zero-copy in the library (zero_copy=True), and in a
safetensors weights file beside it (weights_file=; its size is shown apart);
TVM's own `ffi.Module.create.const_loader({"w": w, "b": b}, {})` importing the compiled module,
exported with `export_library` (at load, `get_const_var_tensor()` hands the constants back and
the caller passes them); and `numpy.save` / `numpy.load` of the raw weights, the floor for getting
the bytes off disk (no code, no call). The artifact was just written, so loads read it from the
page cache. Disk: one artifact at a time, removed after its load.

A route that fails (TVM's const_loader past 2 GiB, say) is a row saying how, not the end of the
run; a route whose export would need more memory than the machine has available (about 4 x the
weights for inline, 5 x for const_loader, 2 x for zero-copy) is not run, and its row says so.

With --read-all the kernel reads every weight instead (out = x * sum(w) + b, the sum a TE
reduction accumulated in float64, so the result is exact in any summation order: the weights are
small integers, -8..8, a random block of a prime length repeated) and the routes are zero-copy,
inline, const_loader, and numpy as the floor (`numpy.load`, with and without mmap, then
`arr.sum(dtype="float64")`). Each load notes the peak RSS twice, after loading and after the first
call, which is where a zero-copy artifact's pages are read (they count in RSS as file-backed pages
once touched), and times a second call as well. Every result is compared bit for bit with the
value numpy computes at export and with the results of every other route; the first load of each
artifact also hashes (SHA-256) the weights the loaded module holds, after the measurements, and
compares them with the exported ones. The targets of the zero-copy route are printed with their
verdict (nothing is asserted).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import textwrap

from _common import Report, add_json_option, format_size, machine, median, parse_size

DEFAULT_SIZES = ["256MiB", "1GiB", "4GiB"]

_PRELUDE = textwrap.dedent("""
    import json, sys, time

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def reset_peak():
        # Restart VmHWM from the current RSS (Linux >= 4.0), so earlier peaks do not count.
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
""")

# argv: route, nbytes, path, extra (export kwargs as JSON), kernel ("last" or "sum")
_EXPORT = _PRELUDE + textwrap.dedent("""
    import hashlib
    import numpy as np, tvm, tvm_ffi, tvm_partial
    from tvm import te

    route, nbytes, path, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    if extra.get("weights_file"):
        extra["weights_file"] = path[: -len(".so")] + ".safetensors"
    kernel = sys.argv[5]
    count = max(nbytes // 4, 1)
    if kernel == "last":
        host = np.full((count,), 1.5, "float32")
        host[-1] = 3.0
        expected, digest = 7.0, None
    else:
        # Small integers, so a float64 sum is exact in any order; a block of prime length, so
        # no two pages hold the same values at the same offsets.
        block = np.random.default_rng(7).integers(-8, 9, size=1_000_003).astype("float32")
        host = np.empty((count,), "float32")
        for start in range(0, count, block.size):
            host[start:start + block.size] = block[:count - start]
        expected = float(host.sum(dtype="float64")) * 2.0 + 1.0
        digest = hashlib.sha256(memoryview(host).cast("B")).hexdigest()
    if route == "numpy":
        exe = None
    else:
        n = te.var("n")
        x = te.placeholder((1,), "float32", name="x")
        w = te.placeholder((n,), "float32", name="w")
        b = te.placeholder((1,), "float32", name="b")
        if kernel == "last":
            out = te.compute((1,), lambda i: x[i] * w[n - 1] + b[i], name="out")
        else:
            k = te.reduce_axis((0, n), name="k")
            total = te.compute((1,), lambda i: te.sum(w[k].astype("float64"), axis=k), name="total")
            out = te.compute((1,), lambda i: x[i].astype("float64") * total[i] + b[i].astype("float64"),
                             name="out")
        exe = tvm.compile(te.create_prim_func([x, w, b, out]), target="llvm")
        w_t = tvm.runtime.tensor(host)
        b_t = tvm.runtime.tensor(np.ones((1,), "float32"))
        del host
    reset_peak()
    base = status("VmRSS")
    t0 = time.perf_counter_ns()
    if route == "numpy":
        np.save(path, host)
    elif route == "partial":
        pm = tvm_partial.partial(exe, {1: w_t, 2: b_t})
        tvm_partial.export_library(pm, path, **extra)
    elif route == "const_loader":
        cl = tvm_ffi.get_global_func("ffi.Module.create.const_loader")({"w": w_t, "b": b_t}, {})
        cl.import_module(exe.mod)
        cl.export_library(path)
    t1 = time.perf_counter_ns()
    print(json.dumps({"export_ns": t1 - t0, "peak_bytes": max(status("VmHWM") - base, 0),
                      "expected": expected, "weights_sha256": digest}))
""")

# argv: route, path
_LOAD = _PRELUDE + textwrap.dedent("""
    t0 = time.perf_counter_ns()
    import numpy as np, tvm, tvm_partial
    t1 = time.perf_counter_ns()
    route, path = sys.argv[1], sys.argv[2]
    reset_peak()
    base_hwm, base_rss = status("VmHWM"), status("VmRSS")
    x = tvm.runtime.tensor(np.full((1,), 2.0, "float32"))
    out = tvm.runtime.empty((1,), "float32")
    t2 = time.perf_counter_ns()
    if route == "partial":
        m = tvm.runtime.load_module(path)
        t3 = time.perf_counter_ns()
        held, held_peak = status("VmRSS") - base_rss, status("VmHWM") - base_hwm
        m(x, out)
        value = float(out.numpy()[0])
    elif route == "const_loader":
        m = tvm.runtime.load_module(path)
        consts = m["get_const_var_tensor"]()
        f = m["main"]
        t3 = time.perf_counter_ns()
        held, held_peak = status("VmRSS") - base_rss, status("VmHWM") - base_hwm
        f(x, consts["w"], consts["b"], out)
        value = float(out.numpy()[0])
    elif route in ("numpy", "numpy_mmap"):
        arr = np.load(path, mmap_mode="r" if route == "numpy_mmap" else None)
        t3 = time.perf_counter_ns()
        held, held_peak = status("VmRSS") - base_rss, status("VmHWM") - base_hwm
        value = float(arr[-1]) * 2.0 + 1.0
    t4 = time.perf_counter_ns()
    print(json.dumps({"import_ns": t1 - t0, "load_ns": t3 - t2, "first_call_ns": t4 - t3,
                      "held_bytes": max(held, 0), "held_peak_bytes": max(held_peak, 0),
                      "peak_bytes": max(status("VmHWM") - base_hwm, 0),
                      "rss_after_bytes": status("VmRSS") - base_rss, "value": value}))
""")

# --read-all. argv: route, path, hash the weights ("1" or "0")
_LOAD_ALL = _PRELUDE + textwrap.dedent("""
    import hashlib
    import numpy as np, tvm, tvm_partial
    route, path, want_hash = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    x = tvm.runtime.tensor(np.full((1,), 2.0, "float32"))
    out = tvm.runtime.empty((1,), "float64")
    reset_peak()
    base = {k: status(k) for k in ("VmHWM", "VmRSS", "RssAnon", "RssFile")}
    t0 = time.perf_counter_ns()
    if route == "partial":
        m = tvm.runtime.load_module(path)
        f = m["main"]
        call = lambda: f(x, out)
        weights = lambda: tvm_partial.bindings(m)["main"][1]
    elif route == "const_loader":
        m = tvm.runtime.load_module(path)
        consts = m["get_const_var_tensor"]()
        g = m["main"]
        call = lambda: g(x, consts["w"], consts["b"], out)
        weights = lambda: consts["w"]
    else:  # numpy, numpy_mmap: the same arithmetic in numpy
        arr = np.load(path, mmap_mode="r" if route == "numpy_mmap" else None)
        result = np.empty((1,), "float64")
        def call():
            result[0] = 2.0 * arr.sum(dtype="float64") + 1.0
        weights = lambda: arr
    t1 = time.perf_counter_ns()
    load_peak = status("VmHWM") - base["VmHWM"]
    call()
    t2 = time.perf_counter_ns()
    call_peak = status("VmHWM") - base["VmHWM"]
    after = {k: status(k) - base[k] for k in ("VmRSS", "RssAnon", "RssFile")}
    t3 = time.perf_counter_ns()
    call()
    t4 = time.perf_counter_ns()
    value = (result if route.startswith("numpy") else out.numpy()).tobytes()
    digest = None
    if want_hash:  # after the measurements: reads every weight once more
        w = weights()
        w = w if isinstance(w, np.ndarray) else np.from_dlpack(w)
        digest = hashlib.sha256(memoryview(np.ascontiguousarray(w)).cast("B")).hexdigest()
    print(json.dumps({"load_ns": t1 - t0, "first_call_ns": t2 - t1, "second_call_ns": t4 - t3,
                      "load_peak_bytes": max(load_peak, 0), "call_peak_bytes": max(call_peak, 0),
                      "rss_after_bytes": after["VmRSS"], "anon_after_bytes": after["RssAnon"],
                      "file_after_bytes": after["RssFile"], "value_hex": value.hex(),
                      "value": float(np.frombuffer(value, "float64")[0]), "weights_sha256": digest}))
""")


def _run(script: str, *argv, fail_ok: bool = False) -> dict:
    """The JSON the script prints last; with fail_ok, {"error": how it failed} instead of exiting."""
    proc = subprocess.run([sys.executable, "-c", script, *map(str, argv)], capture_output=True, text=True)
    if proc.returncode != 0:
        if not fail_ok:
            raise SystemExit(f"subprocess failed ({argv[0]}):\n{proc.stderr[-3000:]}")
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        # The error's own line (the link step's reason where there is one), not the traceback's end.
        reasons = [line for line in lines if "relocation truncated" in line or "Error" in line]
        how = (reasons or lines or [""])[-1][:300]
        if proc.returncode < 0:
            how = f"killed by signal {-proc.returncode}" + (f" ({how})" if how else "")
        return {"error": how}
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: Memory an export needs, in multiples of the weights (measured: the host array and its copies;
#: const_loader at 4 GiB held more than 4 x the weights, 16 GiB, and was still growing when stopped).
_EXPORT_MEMORY = {"inline": 4.0, "zero_copy": 2.0, "weights_file": 1.3, "const_loader": 5.0, "numpy": 1.3}


def _available_memory() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def routes():
    """[(label, export route, load route, export kwargs, key)]."""
    return [
        ("tvm_partial (zero_copy=False)", "partial", "partial", {"zero_copy": False}, "inline"),
        ("tvm_partial (zero_copy=True)", "partial", "partial", {"zero_copy": True}, "zero_copy"),
        ("tvm_partial (weights_file=)", "partial", "partial", {"weights_file": True}, "weights_file"),
        ("TVM const_loader", "const_loader", "const_loader", {}, "const_loader"),
        ("numpy save / load", "numpy", "numpy", {}, "numpy"),
        ("numpy save / load(mmap_mode='r')", "numpy", "numpy_mmap", {}, "numpy_mmap"),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", help=f"weight sizes (default: {' '.join(DEFAULT_SIZES)})")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 64 KiB (--read-all: 1 MiB), one load: not figures to quote",
    )
    parser.add_argument("--repeats", type=int, help="loads per artifact (median; default 3)")
    parser.add_argument(
        "--routes",
        nargs="+",
        choices=[r[-1] for r in routes()],
        help="routes to run (default: all)",
    )
    parser.add_argument(
        "--read-all",
        action="store_true",
        help="a kernel that reads every weight; peak RSS before and after the first call, "
        "bitwise checks, the zero-copy targets (default sizes: 256 MiB, 1 GiB)",
    )
    add_json_option(parser)
    args = parser.parse_args(argv)
    rep = Report(__file__, argv)
    if args.read_all:
        return main_read_all(args, rep)
    sizes = [parse_size(s) for s in (args.sizes or (["64KiB"] if args.quick else DEFAULT_SIZES))]
    repeats = args.repeats or (1 if args.quick else 3)

    print(machine())
    print(
        f"weights: float32; load figures: median of {repeats} fresh processes; RSS: above the process "
        "after `import numpy, tvm, tvm_partial`",
        flush=True,
    )
    rows, failures = [], []
    chosen = [r for r in routes() if args.routes is None or r[-1] in args.routes]
    with tempfile.TemporaryDirectory(prefix="tvm-partial-bench-") as tmp:
        for nbytes in sizes:
            for label, export_route, load_route, extra, key in chosen:
                path = os.path.join(tmp, "weights.npy" if export_route == "numpy" else "artifact.so")
                weights_path = path[: -len(".so")] + ".safetensors"
                need = _EXPORT_MEMORY[key.replace("_mmap", "")] * nbytes
                if need > _available_memory():
                    failures.append(
                        f"{format_size(nbytes)} {label}: not run: its export needs about "
                        f"{format_size(need)}, {format_size(_available_memory())} available"
                    )
                    print(f"  {failures[-1]}", file=sys.stderr, flush=True)
                    continue
                exported = _run(_EXPORT, export_route, nbytes, path, json.dumps(extra), "last", fail_ok=True)
                loads = []
                if "error" not in exported:
                    size = os.path.getsize(path)
                    wsize = os.path.getsize(weights_path) if os.path.exists(weights_path) else None
                    loads = [_run(_LOAD, load_route, path, fail_ok=True) for _ in range(repeats)]
                for leftover in (path, weights_path):
                    if os.path.exists(leftover):
                        os.remove(leftover)
                failed = [r for r in (exported, *loads) if "error" in r]
                if failed:
                    step = "export" if "error" in exported else "load"
                    failures.append(f"{format_size(nbytes)} {label}: {step} fails: {failed[0]['error']}")
                    print(f"  {failures[-1]}", file=sys.stderr, flush=True)
                    continue
                bad = [r["value"] for r in loads if r["value"] != 7.0]
                if bad:
                    raise SystemExit(
                        f"{label}, {format_size(nbytes)}: first call gave {bad[0]}, expected 7.0"
                    )
                load_ms = median(r["load_ns"] for r in loads) / 1e6
                call_ms = median(r["first_call_ns"] for r in loads) / 1e6
                held = median(r["held_bytes"] for r in loads)
                rows.append(
                    [
                        format_size(nbytes),
                        label,
                        f"{exported['export_ns'] / 1e6:,.0f}",
                        format_size(exported["peak_bytes"]),
                        f"{size / 2**20:,.2f} MiB",
                        "" if wsize is None else f"{wsize / 2**20:,.2f} MiB",
                        f"{load_ms:,.1f}",
                        format_size(held),
                        f"{held / nbytes:.4f}",
                        format_size(median(r["held_peak_bytes"] for r in loads)),
                        f"{call_ms:,.2f}",
                        format_size(median(r["peak_bytes"] for r in loads)),
                        f"{median(r['import_ns'] for r in loads) / 1e6:,.0f}",
                    ]
                )
                print(f"  {format_size(nbytes)} {label}: done", file=sys.stderr, flush=True)
    rep.table(
        "load",
        "",
        [
            "weights",
            "route",
            "export ms",
            "export peak",
            "artifact",
            "weights file",
            "load ms",
            "RSS held before 1st call",
            "/ weights",
            "peak RSS before 1st call",
            "1st call ms",
            "peak RSS after 1st call",
            "imports ms",
        ],
        rows,
        ["<", "<"] + [">"] * 11,
    )
    for failure in failures:
        rep.note("FAILED or NOT RUN: " + failure)
    rep.write(args.json)
    return 0


# ---------------------------------------------------------------------------------------------
# --read-all: every weight is read by the first call

READ_ALL_SIZES = ["256MiB", "1GiB"]
ZERO_COPY, INLINE, CONST_LOADER = (
    "tvm_partial (zero_copy=True)",
    "tvm_partial (zero_copy=False)",
    "TVM const_loader",
)


def read_all_routes():
    """[(label, export route, load route, export kwargs)]: zero-copy first, then what it is against."""
    by_label = {label: row[:-1] for label, *row in routes()}
    order = [ZERO_COPY, INLINE, CONST_LOADER, "numpy save / load", "numpy save / load(mmap_mode='r')"]
    return [(label, *by_label[label]) for label in order]


def measure_read_all(nbytes: int, repeats: int, tmp: str) -> dict:
    """{label: {"export": export figures, "size": artifact bytes, "loads": [load figures]}}."""
    results = {}
    for label, export_route, load_route, extra in read_all_routes():
        path = os.path.join(tmp, "weights.npy" if export_route == "numpy" else "artifact.so")
        exported = _run(_EXPORT, export_route, nbytes, path, json.dumps(extra), "sum")
        size = os.path.getsize(path)
        loads = [_run(_LOAD_ALL, load_route, path, "1" if i == 0 else "0") for i in range(repeats)]
        os.remove(path)
        results[label] = {"export": exported, "size": size, "loads": loads}
        print(f"  {format_size(nbytes)} {label}: done", file=sys.stderr, flush=True)
    return results


def read_all_checks(results: dict) -> dict:
    """Bitwise checks of one size: every result equals numpy's exact value and every other
    route's result; the hashed weights equal the exported ones."""
    expected = next(iter(results.values()))["export"]["expected"]
    expected_hex = struct.pack("<d", expected).hex()
    digest = next(iter(results.values()))["export"]["weights_sha256"]
    per_route = {}
    for label, r in results.items():
        values = {load["value_hex"] for load in r["loads"]}
        hashes = [load["weights_sha256"] for load in r["loads"] if load["weights_sha256"]]
        per_route[label] = {
            "result": values == {expected_hex},
            "weights": bool(hashes) and all(h == digest == r["export"]["weights_sha256"] for h in hashes),
            "values": sorted(float(struct.unpack("<d", bytes.fromhex(v))[0]) for v in values),
        }
    copying = [INLINE, CONST_LOADER]
    all_values = {load["value_hex"] for label in [ZERO_COPY, *copying] for load in results[label]["loads"]}
    return {
        "expected": expected,
        "routes": per_route,
        "identical": len(all_values) == 1
        and all(
            per_route[label]["result"] and per_route[label]["weights"] for label in [ZERO_COPY, *copying]
        ),
    }


def _med(result: dict, key: str) -> float:
    """The median of one figure over the loads of one route."""
    return median(load[key] for load in result["loads"])


def _ratio(value: float) -> str:
    return f"{value:.4f}" if value < 0.01 else f"{value:.3f}" if value < 0.1 else f"{value:.2f}"


def read_all_targets(nbytes: int, results: dict, checks: dict) -> list:
    """(statement, ratio text, holds) for each target of the zero-copy route at one size."""
    zc, cl = results[ZERO_COPY], results[CONST_LOADER]
    med = _med
    rows = [
        (
            "peak RSS added by the load, before the first call <= 0.10 x weights",
            med(zc, "load_peak_bytes") / nbytes,
            0.10,
        ),
        (
            "peak RSS after a first call reading every weight <= 1.10 x weights",
            med(zc, "call_peak_bytes") / nbytes,
            1.10,
        ),
        ("load time <= 0.20 x const_loader's", med(zc, "load_ns") / med(cl, "load_ns"), 0.20),
        ("export time <= 1.00 x const_loader's", zc["export"]["export_ns"] / cl["export"]["export_ns"], 1.00),
        ("artifact size <= 1.01 x weights", zc["size"] / nbytes, 1.01),
    ]
    out = [(text, _ratio(ratio), ratio <= limit) for text, ratio, limit in rows]
    out.append(
        (
            "results bitwise identical to inline and const_loader",
            "yes" if checks["identical"] else "no",
            checks["identical"],
        )
    )
    return out


def read_all_context(results: dict) -> list:
    """(statement, ratio text) without a target: what the first call pays for a zero-copy load."""
    zc, cl = results[ZERO_COPY], results[CONST_LOADER]
    med = _med
    both = (med(zc, "load_ns") + med(zc, "first_call_ns")) / (med(cl, "load_ns") + med(cl, "first_call_ns"))
    return [
        ("load + 1st call, against const_loader's", _ratio(both)),
        (
            "1st call / 2nd call (the 1st maps every page)",
            _ratio(med(zc, "first_call_ns") / med(zc, "second_call_ns")),
        ),
    ]


def main_read_all(args, rep) -> int:
    sizes = [parse_size(s) for s in (args.sizes or (["1MiB"] if args.quick else READ_ALL_SIZES))]
    repeats = args.repeats or (1 if args.quick else 3)
    print(machine())
    print("load average at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(
        f"weights: float32, small integers; kernel: out = x * sum(w) + b (float64 sum, exact); load figures: "
        f"median of {repeats} fresh processes; RSS: above the process after `import numpy, tvm, tvm_partial`",
        flush=True,
    )
    rows, verdicts, context, notes = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="tvm-partial-bench-") as tmp:
        for nbytes in sizes:
            results = measure_read_all(nbytes, repeats, tmp)
            checks = read_all_checks(results)
            for label, r in results.items():

                def med(key, r=r):
                    return _med(r, key)

                ok = checks["routes"][label]
                rows.append(
                    [
                        format_size(nbytes),
                        label,
                        f"{r['export']['export_ns'] / 1e6:,.0f}",
                        format_size(r["export"]["peak_bytes"]),
                        f"{r['size'] / 2**20:,.2f} MiB",
                        f"{med('load_ns') / 1e6:,.1f}",
                        format_size(med("load_peak_bytes")),
                        f"{med('load_peak_bytes') / nbytes:.2f}",
                        f"{med('first_call_ns') / 1e6:,.1f}",
                        f"{med('second_call_ns') / 1e6:,.1f}",
                        format_size(med("call_peak_bytes")),
                        f"{med('call_peak_bytes') / nbytes:.2f}",
                        format_size(max(med("anon_after_bytes"), 0)),
                        format_size(max(med("file_after_bytes"), 0)),
                        "exact" if ok["result"] and ok["weights"] else "MISMATCH",
                    ]
                )
                if not (ok["result"] and ok["weights"]):
                    notes.append(
                        f"{format_size(nbytes)} {label}: results {ok['values']}, expected "
                        f"{checks['expected']!r}; weights hash {'equal' if ok['weights'] else 'differs'}"
                    )
            verdicts.append(read_all_targets(nbytes, results, checks))
            context.append(read_all_context(results))
    rep.table(
        "read_all",
        "",
        [
            "weights",
            "route",
            "export ms",
            "export peak",
            "artifact",
            "load ms",
            "load peak RSS",
            "/ weights",
            "1st call ms",
            "2nd call ms",
            "peak RSS after 1st call",
            "/ weights",
            "anon after",
            "file after",
            "result, weights",
        ],
        rows,
        ["<", "<"] + [">"] * 13,
    )
    print(
        "columns: export peak: the exporting Python process alone (not the compiler, assembler and linker "
        "it runs), above what it held before exporting;\n"
        "peak RSS at load and after the 1st call; anon / file after: RssAnon and RssFile above the start, "
        "after the 1st call;\n"
        "result, weights: 'exact' when every result equals numpy's exact sum bit for bit and the loaded "
        "weights hash as the exported ones"
    )
    for note in notes:
        rep.note("MISMATCH: " + note)
    body = []
    for i, (text, _, _) in enumerate(verdicts[0]):
        cells = [v[i][1] for v in verdicts]
        body.append([text, *cells, "holds" if all(v[i][2] for v in verdicts) else "fails"])
    for i, (text, _) in enumerate(context[0]):
        body.append([f"(no target) {text}", *(c[i][1] for c in context), ""])
    rep.table(
        "targets",
        "\ntargets of the zero-copy route (ratios: zero-copy figure / reference)",
        ["target", *(format_size(n) for n in sizes), ""],
        body,
    )
    if args.quick:
        rep.note("(--quick: one size, one load: a smoke run, not figures to quote)")
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
