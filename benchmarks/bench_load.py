"""Export and load with large constants: tvm-partial against TVM's const_loader and numpy.

    python benchmarks/bench_load.py                          # 16 MiB, 256 MiB, 1 GiB of weights
    python benchmarks/bench_load.py --sizes 16MiB 256MiB     # chosen sizes
    python benchmarks/bench_load.py --quick                  # 16 MiB only

The kernel reads w[n - 1] of a float32 weight vector of n elements (out = x * w[n-1] + b), so the
first call is cheap and the figures are those of getting the constants into a process. Per size
and route, every step runs in a fresh subprocess:

- export: build the module, then time the export alone (and its peak RSS above what the process
  held just before exporting);
- load: import numpy, tvm and tvm_partial, note VmHWM, then time loading the artifact and the
  first call (checked against the expected value); peak RSS is VmHWM after minus VmHWM before.

Routes: tvm-partial's `partial(exe, {1: w, 2: b})` exported with `tvm_partial.export_library`,
once with the payloads inline (zero_copy=False) and once zero-copy (zero_copy=True);
TVM's own `ffi.Module.create.const_loader({"w": w, "b": b}, {})` importing the compiled module,
exported with `export_library` (at load, `get_const_var_tensor()` hands the constants back and
the caller passes them); and `numpy.save` / `numpy.load` of the raw weights, the floor for getting
the bytes off disk (no code, no call). The artifact was just written, so loads read it from the
page cache. Disk: one artifact at a time, removed after its load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

from _common import format_size, machine, median, parse_size, table

DEFAULT_SIZES = ["16MiB", "256MiB", "1GiB"]

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

# argv: route, nbytes, path, extra (export kwargs as JSON)
_EXPORT = _PRELUDE + textwrap.dedent("""
    import numpy as np, tvm, tvm_ffi, tvm_partial
    from tvm import te

    route, nbytes, path, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
    count = max(nbytes // 4, 1)
    host = np.full((count,), 1.5, "float32")
    host[-1] = 3.0
    if route == "numpy":
        exe = None
    else:
        n = te.var("n")
        x = te.placeholder((1,), "float32", name="x")
        w = te.placeholder((n,), "float32", name="w")
        b = te.placeholder((1,), "float32", name="b")
        out = te.compute((1,), lambda i: x[i] * w[n - 1] + b[i], name="out")
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
    print(json.dumps({"export_ns": t1 - t0, "peak_bytes": max(status("VmHWM") - base, 0)}))
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
        m(x, out)
        value = float(out.numpy()[0])
    elif route == "const_loader":
        m = tvm.runtime.load_module(path)
        consts = m["get_const_var_tensor"]()
        f = m["main"]
        t3 = time.perf_counter_ns()
        f(x, consts["w"], consts["b"], out)
        value = float(out.numpy()[0])
    elif route in ("numpy", "numpy_mmap"):
        arr = np.load(path, mmap_mode="r" if route == "numpy_mmap" else None)
        t3 = time.perf_counter_ns()
        value = float(arr[-1]) * 2.0 + 1.0
    t4 = time.perf_counter_ns()
    print(json.dumps({"import_ns": t1 - t0, "load_ns": t3 - t2, "first_call_ns": t4 - t3,
                      "peak_bytes": max(status("VmHWM") - base_hwm, 0),
                      "rss_after_bytes": status("VmRSS") - base_rss, "value": value}))
""")


def _run(script: str, *argv) -> dict:
    proc = subprocess.run([sys.executable, "-c", script, *map(str, argv)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"subprocess failed ({argv[0]}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def routes():
    """[(label, export route, load route, export kwargs)]."""
    return [
        ("tvm_partial (zero_copy=False)", "partial", "partial", {"zero_copy": False}),
        ("tvm_partial (zero_copy=True)", "partial", "partial", {"zero_copy": True}),
        ("TVM const_loader", "const_loader", "const_loader", {}),
        ("numpy save / load", "numpy", "numpy", {}),
        ("numpy save / load(mmap_mode='r')", "numpy", "numpy_mmap", {}),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", help=f"weight sizes (default: {' '.join(DEFAULT_SIZES)})")
    parser.add_argument("--quick", action="store_true", help="16 MiB only, one repeat")
    parser.add_argument("--repeats", type=int, help="loads per artifact (median; default 3)")
    args = parser.parse_args(argv)
    sizes = [parse_size(s) for s in (args.sizes or (DEFAULT_SIZES[:1] if args.quick else DEFAULT_SIZES))]
    repeats = args.repeats or (1 if args.quick else 3)

    print(machine())
    print(f"weights: float32; load figures: median of {repeats} fresh processes; RSS: above the process "
          "after `import numpy, tvm, tvm_partial`", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tvm-partial-bench-") as tmp:
        for nbytes in sizes:
            for label, export_route, load_route, extra in routes():
                path = os.path.join(tmp, "weights.npy" if export_route == "numpy" else "artifact.so")
                exported = _run(_EXPORT, export_route, nbytes, path, json.dumps(extra))
                size = os.path.getsize(path)
                loads = [_run(_LOAD, load_route, path) for _ in range(repeats)]
                os.remove(path)
                bad = [r["value"] for r in loads if r["value"] != 7.0]
                if bad:
                    raise SystemExit(f"{label}, {format_size(nbytes)}: first call gave {bad[0]}, expected 7.0")
                load_ms = median(r["load_ns"] for r in loads) / 1e6
                call_ms = median(r["first_call_ns"] for r in loads) / 1e6
                rows.append([
                    format_size(nbytes), label,
                    f"{exported['export_ns'] / 1e6:,.0f}",
                    format_size(exported["peak_bytes"]),
                    f"{size / 2**20:,.2f} MiB",
                    f"{load_ms:,.1f}",
                    f"{call_ms:,.2f}",
                    format_size(median(r["peak_bytes"] for r in loads)),
                    f"{median(r['peak_bytes'] for r in loads) / nbytes:.2f}",
                    f"{median(r['import_ns'] for r in loads) / 1e6:,.0f}",
                ])
                print(f"  {format_size(nbytes)} {label}: done", file=sys.stderr, flush=True)
    print(table(
        ["weights", "route", "export ms", "export peak", "artifact", "load ms", "1st call ms",
         "load peak RSS", "RSS / weights", "imports ms"],
        rows,
        ["<", "<"] + [">"] * 8,
    ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
