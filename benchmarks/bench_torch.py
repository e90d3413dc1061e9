# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A PyTorch model through torch.export and TVM's torch frontend, shipped two ways, side by side
(docs/benchmarks.md):

- BindParams: the state_dict folded into the code (`from_exported_program(ep,
  keep_params_as_input=True)`, `relax.transform.BindParams`, `tvm.compile`, `export_library`);
- tvm-partial: the same module compiled once with the parameters as inputs, bound by the
  state_dict's names (`partial(exe, signature=ep, **state_dict)`), exported as one .so.

For each: the time to build the artifact from the model and its peak RSS (a fresh process each,
above its RSS after the imports), the artifact's size, load-to-first-result in a fresh process;
and the time to ship a new state_dict for the same model: BindParams compiles and exports again,
tvm-partial loads the artifact with the new file (`load(path, weights_file=v2.safetensors)`,
a state_dict torch saved) to its first result. Every result is compared bitwise with the direct
VirtualMachine call on the same weights. Medians of --repeats.

    python benchmarks/bench_torch.py [--width 2048] [--repeats 3] [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import Report, add_json_option, median

# Runs in a fresh process: argv[1] a step, argv[2] the work folder, argv[3] the model's width.
_CHILD = r"""
import json, sys, time
def status(field):
    return int(next(l for l in open("/proc/self/status") if l.startswith(field)).split()[1]) * 1024
step, folder, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
import numpy as np, torch, tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program
import tvm_partial
from safetensors.torch import save_file


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(4))
        self.norms = torch.nn.ModuleList(torch.nn.BatchNorm1d(width) for _ in range(4))

    def forward(self, x):
        for layer, norm in zip(self.layers, self.norms):
            x = torch.relu(norm(layer(x)))
        return x


def model(seed):
    torch.manual_seed(seed)
    m = MLP().eval()
    with torch.no_grad():
        for norm in m.norms:
            norm.running_mean.copy_(torch.rand(width) * 0.1)
            norm.running_var.copy_(torch.rand(width) + 0.5)
    return m


x = torch.ones(1, width)
base = status("VmRSS:")
t0 = time.perf_counter()
out = {}
if step in ("bindparams", "bindparams-v2"):
    m = model(0)
    if step == "bindparams-v2":  # the same model, other weights: new parameters, same statistics
        with torch.no_grad():
            for layer in m.layers:
                layer.weight.mul_(0.5)
    ep = torch.export.export(m, (x,))
    mod = from_exported_program(ep, keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)
    inputs = int(mod["main"].attrs["num_input"])
    bound = relax.transform.BindParams("main", dict(zip(mod["main"].params[inputs:], params["main"])))(mod)
    tvm.compile(bound, target="llvm").export_library(f"{folder}/{step}.so")
elif step == "tvm-partial":
    m = model(0)
    ep = torch.export.export(m, (x,))
    exe = tvm.compile(from_exported_program(ep, keep_params_as_input=True), target="llvm")
    tvm_partial.export_library(tvm_partial.partial(exe, signature=ep, **m.state_dict()), f"{folder}/{step}.so")
elif step == "v2-file":  # what a training run writes: torch's own save_file of its state_dict
    m = model(0)
    with torch.no_grad():
        for layer in m.layers:
            layer.weight.mul_(0.5)
    save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{folder}/v2.safetensors")
    exe = tvm.compile(from_exported_program(torch.export.export(m, (x,)), keep_params_as_input=True), target="llvm")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    ref = vm["main"](tvm.runtime.tensor(x.numpy()), *[tvm.runtime.tensor(p.detach().numpy()) for p in m.parameters()])
    np.save(f"{folder}/ref-v2.npy", ref[0].numpy())
    m = model(0)
    exe = tvm.compile(from_exported_program(torch.export.export(m, (x,)), keep_params_as_input=True), target="llvm")
    vm = relax.VirtualMachine(exe, tvm.cpu())
    ref = vm["main"](tvm.runtime.tensor(x.numpy()), *[tvm.runtime.tensor(p.detach().numpy()) for p in m.parameters()])
    np.save(f"{folder}/ref.npy", ref[0].numpy())
else:  # load:ARTIFACT[:WEIGHTS]: load in this fresh process, first result
    _, so, *weights = step.split(":")
    kwargs = {"weights_file": f"{folder}/{weights[0]}"} if weights else {}
    if so.startswith("bindparams"):
        result = relax.VirtualMachine(tvm.runtime.load_module(f"{folder}/{so}"), tvm.cpu())["main"](tvm.runtime.tensor(x.numpy()))
    else:
        result = tvm_partial.load(f"{folder}/{so}", **kwargs)(tvm.runtime.tensor(x.numpy()))
    got = result[0].numpy()
    out["equal"] = got.tobytes() == np.load(f"{folder}/{'ref-v2' if weights or 'v2' in so else 'ref'}.npy").tobytes()
out["seconds"] = time.perf_counter() - t0
out["peak"] = status("VmHWM:") - base
print(json.dumps(out))
"""


def _step(step: str, folder: str, width: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, step, folder, str(width)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench_torch: step {step} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(width: int, repeats: int, folder: str) -> dict:
    _step("v2-file", folder, width)
    samples: dict[str, list[dict]] = {}
    steps = [
        "bindparams",
        "tvm-partial",
        "load:bindparams.so",
        "load:tvm-partial.so",
        "bindparams-v2",  # a new state_dict: compile and export again
        "load:bindparams-v2.so",
        "load:tvm-partial.so:v2.safetensors",  # a new state_dict: the file torch saved
    ]
    for _ in range(repeats):
        for step in steps:
            samples.setdefault(step, []).append(_step(step, folder, width))
    out = {
        step: {
            "seconds": median([s["seconds"] for s in got]),
            "peak": median([s["peak"] for s in got]),
            **({"equal": all(s["equal"] for s in got)} if "equal" in got[0] else {}),
        }
        for step, got in samples.items()
    }
    for kind in ("bindparams", "tvm-partial"):
        out[kind]["bytes"] = os.path.getsize(f"{folder}/{kind}.so")
    out["weights_bytes"] = os.path.getsize(f"{folder}/v2.safetensors")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=2048, help="the MLP's width (4 layers of width^2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: width 64, 1 repeat")
    add_json_option(parser)
    args = parser.parse_args()
    width, repeats = (64, 1) if args.quick else (args.width, args.repeats)
    rep = Report(__file__)
    with tempfile.TemporaryDirectory(prefix="bench_torch_") as folder:
        r = run(width, repeats, folder)
    mib = 2**20
    weights = f"{r['weights_bytes'] / mib:.1f} MiB"
    rows = []
    for kind in ("bindparams", "tvm-partial"):
        load = r[f"load:{kind}.so"]
        rows.append(
            [
                kind,
                f"{r[kind]['seconds']:.2f}",
                f"{r[kind]['peak'] / mib:.0f}",
                f"{r[kind]['bytes'] / mib:.1f}",
                f"{load['seconds']:.3f}",
                f"{load['peak'] / mib:.0f}",
                "yes" if load["equal"] else "NO",
            ]
        )
    rep.table(
        "ways",
        f"a 4-layer MLP with batch norm, width {width} ({weights} of state_dict), medians of {repeats}:",
        ["way", "build s", "build peak MiB", "artifact MiB", "load->1st s", "load peak MiB", "equal"],
        rows,
        ["<"] + [">"] * 6,
        values=r,
    )
    new_bp = r["bindparams-v2"]["seconds"] + r["load:bindparams-v2.so"]["seconds"]
    new_tp = r["load:tvm-partial.so:v2.safetensors"]["seconds"]
    print()
    rep.table(
        "new-state-dict",
        "a new state_dict for the same model, to its first result:",
        ["way", "seconds", "peak MiB", "equal", "vs tvm-partial"],
        [
            [
                "BindParams: compile and export again, load",
                f"{new_bp:.2f}",
                f"{max(r['bindparams-v2']['peak'], r['load:bindparams-v2.so']['peak']) / mib:.0f}",
                "yes" if r["load:bindparams-v2.so"]["equal"] else "NO",
                f"{new_bp / new_tp:.1f}x",
            ],
            [
                "tvm-partial: load(path, weights_file=v2.safetensors)",
                f"{new_tp:.2f}",
                f"{r['load:tvm-partial.so:v2.safetensors']['peak'] / mib:.0f}",
                "yes" if r["load:tvm-partial.so:v2.safetensors"]["equal"] else "NO",
                "1.0x",
            ],
        ],
        ["<", ">", ">", ">", ">"],
    )
    rep.write(args.json)


if __name__ == "__main__":
    main()
