# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A model's weights shipped three ways (docs/benchmarks.md): BindParams (one .so), TVM's tutorial
way (a .so and an .npz) and tvm-partial (one .so), for a Relax model (main(x, w) = w @ x) and a
PyTorch MLP with batch norm (imported with tvm_partial.from_exported_program: its statistics are
parameters too, and the new set is a fine-tune that changes them); every step in a fresh
process, results bitwise against the VM's.

    python benchmarks/bench_models.py [--models relax torch] [--size 256MiB] [--width 2048] [--repeats 3]
"""

from __future__ import annotations

import os
import sys
import tempfile

from _common import Report, child, format_size, median, parse_size, parser, verdict

# argv: the steps (one process each, but with --quick), the model, the work folder, its size (relax: weight bytes; torch: the MLP's width)
_STEP = """
steps, model, folder, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import os
import numpy as np, tvm, tvm_partial
from tvm import relax
if model == "torch":
    import torch
    from safetensors.torch import save_file

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(size, size) for _ in range(4))
            self.norms = torch.nn.ModuleList(torch.nn.BatchNorm1d(size) for _ in range(4))

        def forward(self, x):
            for layer, norm in zip(self.layers, self.norms):
                x = torch.relu(norm(layer(x)))
            return x

    def make(v2):  # -> the module with the state as inputs, it in their order, by name
        torch.manual_seed(0)
        m = MLP().eval()
        with torch.no_grad():
            for norm in m.norms:
                norm.running_mean.copy_(torch.rand(size) * 0.1)
                norm.running_var.copy_(torch.rand(size) + 0.5)
            for layer, norm in zip(m.layers, m.norms) if v2 else []:  # v2: fine-tuned, statistics too
                layer.weight.mul_(0.5)
                norm.running_var.mul_(1.1)
        mod = tvm_partial.from_exported_program(torch.export.export(m, (torch.ones(1, size),)))
        state = m.state_dict()
        ordered = [state[p.name].numpy() for p in mod["main"].params[1:]]
        return mod, ordered, dict(state)

    x = np.ones((1, size), "float32")
    save = lambda named, path: save_file({k: v.contiguous() for k, v in named.items()}, path)
else:
    from safetensors.numpy import save_file
    from tvm.script import relax as R

    rows, cols = size // (4 * 4096), 4096
    bb = relax.BlockBuilder()
    xv, wv = relax.Var("x", R.Tensor((cols, 1), "float32")), relax.Var("w", R.Tensor((rows, cols), "float32"))
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.matmul(wv, xv))
        bb.emit_func_output(y)
    rng = np.random.default_rng(0)
    w1, x = rng.integers(-2, 3, size=(rows, cols)).astype("float32"), rng.integers(-2, 3, size=(cols, 1)).astype("float32")
    make = lambda v2: (bb.get(), [w1 * 2 if v2 else w1], {"device": tvm.cpu(), "w": w1 * 2 if v2 else w1})
    save = lambda named, path: save_file({"w": named["w"]}, path)
first = lambda out: (out if hasattr(out, "numpy") else out[0]).numpy()
def figures(step):  # one step's figures
    kind, _, rest = step.partition(":")
    name, *weights = rest.split(":")
    base = status("VmRSS")
    reset_peak()
    t0 = time.perf_counter()
    out = {}
    if kind == "refs":  # what the direct VM call gives; another weight set, as a training run saves it
        for v2, ref in ((False, "ref"), (True, "ref-v2")):
            mod, ordered, named = make(v2)
            vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
            np.save(f"{folder}/{ref}.npy", first(vm["main"](tvm.runtime.tensor(x), *map(tvm.runtime.tensor, ordered))))
        np.save(f"{folder}/x.npy", x)
        np.savez(f"{folder}/v2.npz", *ordered)
        save(named, f"{folder}/v2.safetensors")
    elif kind == "build":
        mod, ordered, named = make(name.endswith("-v2"))
        path = f"{folder}/{name}.so"
        if name.startswith("bindparams"):
            free = mod["main"].params[len(mod["main"].params) - len(ordered):]
            mod = relax.transform.BindParams("main", dict(zip(free, map(tvm.runtime.tensor, ordered))))(mod)
            tvm.compile(mod, target="llvm").export_library(path)
        elif name == "tutorial":
            tvm.compile(mod, target="llvm").export_library(path)
            np.savez(path + ".npz", *ordered)
        else:
            tvm_partial.export_library(tvm_partial.partial(tvm.compile(mod, target="llvm"), **named), path)
        out["bytes"] = os.path.getsize(path)
    else:  # load:ARTIFACT[:WEIGHTS], to the first result
        xt = tvm.runtime.tensor(np.load(f"{folder}/x.npy"))
        base = status("VmRSS")
        reset_peak()
        t0 = time.perf_counter()
        if name.startswith("tvm-partial"):
            m = tvm_partial.load(f"{folder}/{name}.so", **({"weights_file": f"{folder}/{weights[0]}"} if weights else {}))
            out["held"] = status("VmRSS") - base
            result = m(xt)
        else:
            vm = relax.VirtualMachine(tvm.runtime.load_module(f"{folder}/{name}.so"), tvm.cpu())
            npz = f"{folder}/{weights[0] if weights else name + '.so.npz'}"
            params = [tvm.runtime.tensor(v) for v in np.load(npz).values()] if name == "tutorial" else []
            out["held"] = status("VmRSS") - base
            result = vm["main"](xt, *params)
        v2 = name.endswith("-v2") or bool(weights)
        out["equal"] = first(result).tobytes() == np.load(f"{folder}/{'ref-v2' if v2 else 'ref'}.npy").tobytes()
    out["seconds"] = time.perf_counter() - t0
    out["peak"] = status("VmHWM") - base
    return out


print(json.dumps([figures(step) for step in steps.split(",")]))
"""

WAYS = ["bindparams", "tutorial", "tvm-partial"]
NEW_SET = {  # another weight set for the same code: the steps to its first result
    "bindparams": ["build:bindparams-v2", "load:bindparams-v2"],
    "tutorial": ["load:tutorial:v2.npz"],
    "tvm-partial": ["load:tvm-partial:v2.safetensors"],
}
STEPS = [*(f"build:{w}" for w in WAYS), *(f"load:{w}" for w in WAYS), *(s for w in WAYS for s in NEW_SET[w])]


def run(rep, model: str, size: int, repeats: int, quick: bool) -> None:
    mib = 2**20
    samples: dict = {step: [] for step in STEPS}
    with tempfile.TemporaryDirectory(prefix="bench_models_") as folder:
        if quick:  # every step in one process: a smoke run
            got = child(_STEP, ",".join(["refs", *STEPS]), model, folder, size)
            samples = {step: [figures] for step, figures in zip(STEPS, got[1:])}
        else:
            child(_STEP, "refs", model, folder, size)
            for _ in range(repeats):
                for step in STEPS:
                    samples[step] += child(_STEP, step, model, folder, size)
        weights = os.path.getsize(f"{folder}/v2.safetensors")
    r = {
        step: {k: median(s[k] for s in got) for k in got[0] if k != "equal"} for step, got in samples.items()
    }
    for step, got in samples.items():
        r[step]["equal"] = all(s.get("equal", True) for s in got)
    rows, new = [], {}
    for w in WAYS:
        build, load, steps = r[f"build:{w}"], r[f"load:{w}"], [r[s] for s in NEW_SET[w]]
        new[w] = sum(s["seconds"] for s in steps)
        cells = [f"{build['seconds']:.2f}", f"{build['peak'] / mib:.0f}", f"{build['bytes'] / mib:.1f}"]
        cells += [f"{load['seconds']:.3f}", f"{load['held'] / mib:.1f}", f"{load['peak'] / mib:.0f}"]
        cells += [f"{new[w]:.2f}", f"{max(s['peak'] for s in steps) / mib:.0f}"]
        rows.append([w, *cells, "yes" if load["equal"] and all(s["equal"] for s in steps) else "NO"])
    title = f"main(x, w) = w @ x, w {format_size(size)}"
    if model == "torch":
        title = f"a 4-layer MLP with batch norm, width {size} ({weights / mib:.1f} MiB of state_dict)"
    header = "way|build s|build peak MiB|artifact MiB|load->1st s|held MiB|peak MiB|new set s|new set peak MiB|equal"
    rep.table(f"{model}-ways", f"\n{title}, medians of {repeats}:", header, rows, values=r)
    tp, others = r["load:tvm-partial"], [r[f"load:{w}"] for w in WAYS[:2]]
    load, peak = (
        tp["seconds"] / min(o["seconds"] for o in others),
        tp["peak"] / min(o["peak"] for o in others),
    )
    held, recompile = tp["held"] / weights, new["bindparams"] / new["tvm-partial"]
    body = [
        ["load->1st, tvm-partial / the better other way <= 0.5x", f"{load:.2f}x", verdict(load <= 0.5)],
        ["peak RSS, tvm-partial / the better other way <= 0.6x", f"{peak:.2f}x", verdict(peak <= 0.6)],
        ["RSS held before the first call, of the weights <= 5%", f"{held:.1%}", verdict(held <= 0.05)],
        ["new weight set, BindParams / tvm-partial >= 10x", f"{recompile:.1f}x", verdict(recompile >= 10)],
    ]
    rep.table(f"{model}-targets", "", "target|value|", body)


def main(argv=None) -> int:
    p = parser(__doc__)
    p.add_argument("--models", nargs="+", choices=["relax", "torch"], default=["relax", "torch"])
    p.add_argument("--size", default="256MiB", help="the Relax model's weight")
    p.add_argument("--width", type=int, default=2048, help="the MLP's width (4 layers of width^2)")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    rep = Report(__file__, argv)
    sizes = {
        "relax": parse_size("64KiB" if args.quick else args.size),
        "torch": 64 if args.quick else args.width,
    }
    for model in args.models:
        run(rep, model, sizes[model], 1 if args.quick else args.repeats, args.quick)
    rep.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
