# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""docs/errors.md, row by row: each bad input gives the documented error type and message."""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tvm_ffi
from tvm import te

import tvm_partial
import tvm_partial.remote
from helpers import compile_te, library_modules, reseal, run_cli, run_json, tensor
from tvm_partial import _fixtures as fixtures

ROOT = Path(__file__).resolve().parent.parent
ROWS = re.findall(
    r"^\| (\w+) \| ([^|]+?) \| `([^`]+)`[^|]*\| [^|]+ \|$",
    (ROOT / "docs" / "errors.md").read_text(),
    flags=re.M,
)
W = np.zeros(fixtures.SHAPES["weights"], "float32")
B = np.zeros(fixtures.SHAPES["bias"], "float32")
X = np.zeros(fixtures.SHAPES["data"], "float32")
W16 = np.zeros((16, 16), "float32")  # the whole weight of the tensor-parallel kernel (ctx "tp")
load_from_bytes = tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply")


def _blob(ctx):
    return tvm_partial.save_to_bytes(tvm_partial.partial(ctx["exe"], {1: B}))


def _in_subprocess(code: str, *args: str, env: dict | None = None) -> None:
    """Run `code` in a fresh process; re-raise its error here (type and message)."""
    result = run_json(
        f"""
        import json, sys
        try:
{"".join("            " + line + chr(10) for line in code.strip().splitlines())}
            print(json.dumps(None))
        except Exception as err:
            print(json.dumps([type(err).__name__, str(err)]))
        """,
        *args,
        env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0", **(env or {})},
    )
    if result is not None:
        raise {
            "RuntimeError": RuntimeError,
            "ValueError": ValueError,
            "MemoryError": MemoryError,
            "FileNotFoundError": FileNotFoundError,
        }.get(result[0], Exception)(result[1])


def _with_device(ctx, device_type: int) -> bytes:
    blob = _blob(ctx)
    at = blob.find(b"float32") + len(b"float32")
    moved = blob[:at] + struct.pack("<i", device_type) + blob[at + 4 :]
    return reseal(moved)


def _blob_file(ctx, name: str, data: bytes) -> str:
    path = Path(ctx["artifact"]).parent / name
    path.write_bytes(data)
    return str(path)


def _replaced(ctx) -> None:
    """Load a path with TVM's loader, replace the file there with another export, load the path
    again with it (TVM's loader answers the name with the object it has) and use the module."""
    import shutil

    import tvm

    folder = Path(ctx["artifact"]).parent
    path = folder / "replaced.so"
    shutil.copyfile(ctx["artifact"], path)
    ctx["kept"] = tvm.runtime.load_module(str(path))  # the first load stays alive
    shutil.copyfile(ctx["artifact_wb"], folder / "replaced.new.so")
    os.replace(folder / "replaced.new.so", path)
    tvm_partial.bindings(tvm.runtime.load_module(str(path)))


def _fifo(ctx) -> str:
    path = Path(ctx["artifact"]).parent / "pipe.so"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _cli(*args):
    proc = run_cli(*args)
    assert proc.returncode == 2
    raise SystemExit(proc.stderr.strip())


CASES = {
    "negative position": lambda c: tvm_partial.partial(c["f"], {-1: W}),
    # The next two are type errors too (the checker flags them; here they run to the runtime error).
    "position that is not an int": lambda c: tvm_partial.partial(c["f"], {1.5: W}),  # type: ignore[arg-type]
    "position past the signature": lambda c: tvm_partial.partial(c["f"], {4: W}, signature=c["sig"]),
    "one parameter bound by index and by name": lambda c: tvm_partial.partial(
        c["f"], {1: W}, signature=c["sig"], weights=W
    ),
    "name that is not a parameter": lambda c: tvm_partial.partial(c["f"], signature=c["sig"], bais=B),
    "by name without a signature": lambda c: tvm_partial.partial(c["f"], weights=W),
    "tensor of the wrong dtype": lambda c: tvm_partial.partial(
        c["f"], signature=c["sig"], weights=W.astype("float64")
    ),
    "tensor of the wrong static shape": lambda c: tvm_partial.partial(
        c["f"], signature=c["sig"], bias=np.zeros(4, "float32")
    ),
    "scalar for a tensor parameter": lambda c: tvm_partial.partial(c["f"], signature=c["sig"], bias=1.0),
    "value of an unsupported type": lambda c: tvm_partial.partial(c["f"], {1: {"a": 1}}),
    "target that is not callable": lambda c: tvm_partial.partial(42, {0: 1}),  # type: ignore[call-overload]
    "module function that does not exist": lambda c: tvm_partial.partial(c["exe"], {1: 1.0}, function="nope"),
    "a tensor sharded along a dim not divisible by the world (times the segments)": lambda c: (
        tvm_partial.partial(c["tp"][0], signature=c["tp"][1], w=W16, shards={"w": (0, 3)}, world=2)
    ),
    "a sharded tensor whose rank's shard is not the parameter's shape": lambda c: tvm_partial.partial(
        c["tp"][0], signature=c["tp"][1], w=W16, shards={"w": 0}, world=2
    ),
    "`shards=` naming a weight of a frontend.nn model, without `signature=`": lambda c: tvm_partial.partial(
        c["nn"], function="forward", **{"fc.weight": W16[:8]}, shards={"fc.weight": 0}, world=2
    ),
    "`shards=` on a `relax.VirtualMachine`": lambda c: tvm_partial.partial(
        c["nn_vm"], function="forward", **{"fc.weight": W16[:8]}, shards={"fc.weight": 0}, world=2
    ),
    "too few arguments for a bound position": lambda c: tvm_partial.partial(c["f"], {2: B, 3: W})(tensor(X)),
    "wrong argument count, signature known": lambda c: tvm_partial.partial(
        c["f"], signature=c["sig"], weights=W, bias=B
    )(tensor(X), tensor(X), tensor(X)),
    "wrong argument count, bound by position without `signature=`": lambda c: tvm_partial.partial(
        c["f"], {1: W, 2: B}
    )(tensor(X)),
    "data of the wrong shape": lambda c: tvm_partial.partial(c["f"], {1: W, 2: B})(
        tensor(np.zeros((1, 3, 31, 32), "float32")), tensor(np.zeros(fixtures.SHAPES["result"], "float32"))
    ),
    "a module bound with `shards=`, called before a rank loads it": lambda c: tvm_partial.partial(
        c["tp"][0], signature=c["tp"][1], w=W16, shards={"w": 0}, world=4
    )(tensor(np.zeros((4, 16), "float32"))),
    "a bound value that cannot be serialised": lambda c: tvm_partial.save_to_bytes(
        tvm_partial.partial(c["exe"], {1: tvm_ffi.convert(lambda: 0)})
    ),
    "bytes that are not partial_apply data": lambda c: load_from_bytes(b"\0" * 64),
    "truncated data": lambda c: load_from_bytes(_blob(c)[:-1]),
    "corrupted data": lambda c: load_from_bytes(_blob(c)[:60] + b"\x55" + _blob(c)[61:]),
    "data from a newer tvm-partial": lambda c: load_from_bytes(
        _blob(c)[:8] + struct.pack("<I", 4) + _blob(c)[12:]
    ),
    "data from a development build (format version 1 or 2)": lambda c: load_from_bytes(
        _blob(c)[:8] + struct.pack("<I", 1) + _blob(c)[12:]
    ),
    "a sharded artifact loaded for another world": lambda c: tvm_partial.load(c["sharded"], shard=(0, 2)),
    "`shard=` for an artifact without shards": lambda c: tvm_partial.load(c["artifact"], shard=(0, 2)),
    "a tensor's device is missing": lambda c: _in_subprocess(
        "import tvm, tvm_partial, tvm_ffi\n"
        "tvm_ffi.get_global_func('ffi.Module.load_from_bytes.partial_apply')(bytes.fromhex(sys.argv[1]))",
        _with_device(c, 8).hex(),
    ),
    "a normal artifact where the extension is not registered": lambda c: _in_subprocess(
        "import tvm\ntvm.runtime.load_module(sys.argv[1])", c["artifact"]
    ),
    "a library cut short (an interrupted copy)": lambda c: tvm_partial.load(c["truncated"]),
    "an artifact whose embedded module tree is damaged (a count, a length or an import index)": (
        lambda c: _in_subprocess("import tvm_partial\ntvm_partial.load(sys.argv[1])", c["bad_tree"])
    ),
    "a zero-copy payload region altered": lambda c: _in_subprocess(
        "import tvm, tvm_partial\ntvm_partial.load(sys.argv[1])", c["altered"]
    ),
    "zero-copy metadata without its library": lambda c: tvm_partial.load_from_bytes(c["external_blob"]),
    "`tvm.runtime.load_module` of a file replaced at its path after this process loaded it": lambda c: (
        _replaced(c)
    ),
    "a FIFO (or a device, a socket) where a file is expected": lambda c: tvm_partial.load(_fifo(c)),
    "a file that is not an artifact": lambda c: tvm_partial.load(c["text"]),
    "two keys that name one parameter": lambda c: tvm_partial.open_weights(c["colliding_weights"]),
    "a header nested deeper than any safetensors header": lambda c: tvm_partial.open_weights(
        c["deep_weights"]
    ),
    "a position that is not bound": lambda c: tvm_partial.rebind(c["pm"], {0: X}),
    "a function without bindings": lambda c: tvm_partial.rebind(c["pm"], {1: W}, function="other"),
    "a bound module restored without its code": lambda c: tvm_partial.load_from_bytes(_blob(c))["main"],
    "`tvm-partial inspect` on a library without bindings": lambda c: _cli("inspect", c["plain"]),
    "`tvm-partial inspect` on a file that is not a library": lambda c: _cli("inspect", c["text"]),
    "a value of another kind than the one bound": lambda c: tvm_partial.rebind(
        tvm_partial.partial(c["exe"], {1: W}), {1: 1.0}
    ),
    "a module restored from bytes without its code": lambda c: tvm_partial.rebind(
        tvm_partial.load_from_bytes(_blob(c)), {1: B}
    ),
    "a loaded artifact rebound with values that no longer fit its file": lambda c: _export_longer_string(c),
    "`tvm-partial verify` on a file cut short": lambda c: _cli("verify", c["truncated"]),
    "an output that is also bound": lambda c: tvm_partial.partial(
        c["f"], signature=c["sig"], result=np.zeros(fixtures.SHAPES["result"], "float32"), outputs="result"
    ),
    "outputs without dtypes and shapes": lambda c: tvm_partial.partial(
        c["f"], signature=["data", "weights", "bias", "result"], outputs="result"
    ),
    "an output dimension no input gives": lambda c: tvm_partial.partial(
        c["sym"]["free_m"], signature=c["sym"]["free_m_sig"], outputs="y"
    ),
    "an output dimension that is an expression": lambda c: tvm_partial.partial(
        c["sym"]["twice"], signature=c["sym"]["twice_sig"], outputs="y"
    ),
    "inputs that make an output's size overflow": lambda c: tvm_partial.partial(
        c["sym"]["outer"], signature=c["sym"]["outer_sig"], outputs="y"
    )(_huge(2**40)),
    "an output too large for memory": lambda c: _in_subprocess(
        "import numpy as np, tvm, tvm_ffi, tvm_partial\n"
        "from tvm import te\n"
        "n = te.var('n', 'int64')\n"
        "x = te.placeholder((n,), 'float32', name='x')\n"
        "y = te.compute((n,), lambda i: x[i], name='y')\n"
        "g = tvm_partial.partial(tvm.compile(te.create_prim_func([x, y]), target='llvm')['main'], signature=[x, y], "
        "outputs='y')\n"
        "g(tvm_ffi.from_dlpack(np.lib.stride_tricks.as_strided(np.zeros(1, 'float32'), shape=(2**55,), strides=(0,))))"
    ),
    "a non-tensor where an output's extent is read": lambda c: tvm_partial.partial(
        c["sym"]["outer"], signature=c["sym"]["outer_sig"], outputs="y"
    )(3),
    "a name that two parameters share": lambda c: tvm_partial.partial(
        c["f"], signature=[te.placeholder((1,)), te.placeholder((1,))], placeholder=W
    ),
    "a keyword that is also an option of partial()": lambda c: tvm_partial.partial(
        c["f"], signature=["x", "device", "y"], device=W
    ),
    "a name the partial already binds": lambda c: tvm_partial.partial(
        tvm_partial.partial(c["f"], signature=c["sig"], weights=W), weights=W
    ),
    "`signature=` on a partial that is not the original's full list": lambda c: tvm_partial.partial(
        tvm_partial.partial(c["f"], signature=c["sig"], weights=W),
        signature=["data", "bias", "result"],
        bias=B,
    ),
    "a tensor whose aligned copy cannot be allocated": lambda c: _in_subprocess(
        "import resource, numpy as np, tvm_ffi, tvm_partial\n"
        "vm = next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize:'))\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))\n"
        "huge = np.lib.stride_tricks.as_strided(np.ones(1, 'float32'), shape=(1 << 34,), strides=(0,))\n"
        "tvm_partial.partial(tvm_ffi.convert(lambda *a: 0), {0: huge}, signature=['w', 'x'])",
        # under AddressSanitizer (scripts/sanitize.sh) a failed allocation aborts unless told not to
        env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1"},
    ),
    "position that no call can reach": lambda c: tvm_partial.partial(c["f"], {2**31: B}),
    "partial of a partial whose position lands past any call": lambda c: tvm_partial.partial(
        tvm_partial.partial(c["f"], {0: X}), {2**31 - 2: B}
    ),
    "a tensor the format cannot hold": lambda c: tvm_partial.save_to_bytes(
        tvm_partial.partial(c["exe"], {1: c["int3"]})
    ),
    "data the writer never writes (crafted or damaged)": lambda c: load_from_bytes(_with_device_id(c, 1)),
    # device type 1 + (session 0 + 1) * 128: the CPU of RPC session 0 (no server needed to refuse it)
    "`device=` of an RPC session for a module of this process": lambda c: tvm_partial.partial(
        c["exe"], {1: W}, device=tvm_ffi.device(129, 0)
    ),
    # the server's error as TVM's RPC layer re-raises it (tests/test_rpc.py runs a real server)
    "a default artifact on an RPC server without tvm-partial (`tvm_partial.remote.load_module`)": lambda c: (
        tvm_partial.remote.load_module(_ServerWithoutTvmPartial(), "model.so")
    ),
    "a Relax signature= of another function": lambda c: tvm_partial.partial(
        c["relax_exe"], signature=["x", "y"], y=1.0
    ),
    "a bound relax.VirtualMachine exported": lambda c: tvm_partial.export_library(
        tvm_partial.partial(__import__("tvm").relax.VirtualMachine(c["relax_exe"], __import__("tvm").cpu())),
        "never-written.so",
    ),
    "a Relax model whose device is not present": lambda c: tvm_ffi.get_global_func("tvm_partial.BindModel")(
        c["relax_exe"].mod, [[2, 99, 2], [1, 0, 2]], None, [], {}
    )["module"]["main"],
    "a Relax executable compiled for another device": lambda c: tvm_partial.partial(
        c["relax_exe"], device=tvm_ffi.device("cuda", 0)
    ),
    "an int scalar its parameter's dtype cannot hold": lambda c: _bind_scalar("int32", 2**40 + 7),
    "a float scalar past its parameter's dtype, or an int it cannot hold exactly": lambda c: _bind_scalar(
        "float32", 2**24 + 1
    ),
    "an int past 64 bits": lambda c: tvm_partial.partial(c["f"], {1: 2**64}),
    "`device=` a device this process does not have": lambda c: tvm_partial.partial(
        c["exe"], {1: W}, device=tvm_ffi.device("cuda", 99)
    ),
    "`device=` that is not a device": lambda c: tvm_partial.partial(c["exe"], {1: W}, device=1000),
    "a Relax parameter named like an option, given as a keyword": lambda c: tvm_partial.partial(
        _relax_option_names(), device=np.zeros(2, "float32")
    ),
    "a keyword that is also an option of rebind()": lambda c: tvm_partial.rebind(
        tvm_partial.partial(_relax_option_names(), {"device": np.zeros(2, "float32")}),
        device=np.zeros(2, "float32"),
    ),
    "a complex tensor (torch, numpy)": lambda c: tvm_partial.partial(
        c["f"], signature=c["sig"], weights=np.zeros(fixtures.SHAPES["weights"], np.complex64)
    ),
    "an int4 or uint4 numpy array (ml_dtypes)": lambda c: tvm_partial.partial(
        c["f"], {1: np.zeros(4, ml_dtypes.int4)}
    ),
    "a dtype safetensors has no code for, exported with `weights_file=`": lambda c: (
        tvm_partial.export_library(
            tvm_partial.partial(c["exe"], {1: np.zeros(4, ml_dtypes.float8_e4m3)}),
            Path(c["artifact"]).parent / "float8_e4m3.so",
            weights_file=Path(c["artifact"]).parent / "float8_e4m3.safetensors",
        )
    ),
    "a weights file that does not exist": lambda c: tvm_partial.open_weights(
        Path(c["artifact"]).parent / "none.safetensors"
    ),
    "a weights file cut short": lambda c: tvm_partial.open_weights(_weights_file(c, "cut")),
    "a weights file of another model": lambda c: tvm_partial.load(
        c["artifact_wb"], weights_file=_weights_file(c, "partial")
    ),
    "a tensor of another dtype or shape in the weights file": lambda c: tvm_partial.load(
        c["artifact_wb"], weights_file=_weights_file(c, "float64")
    ),
    "a weights file whose JSON header is malformed": lambda c: tvm_partial.open_weights(
        _weights_file(c, "json")
    ),
    "a weights file whose tensors overlap": lambda c: tvm_partial.open_weights(_weights_file(c, "overlap")),
    "`verify` of a weights file that records no hashes": lambda c: tvm_partial.verify(
        _weights_file(c, "foreign")
    ),
    "an artifact whose weights file is missing": lambda c: _in_subprocess(
        "import tvm_partial\ntvm_partial.load(sys.argv[1])", _external_artifact(c, "missing")
    ),
    "the weights file of another export beside an artifact": lambda c: _in_subprocess(
        "import tvm_partial\ntvm_partial.load(sys.argv[1])", _external_artifact(c, "other")
    ),
    "`load(path, weights_file=...)` of a library that binds nothing (plain compiled code)": lambda c: (
        _plain_with_weights(c)
    ),
    "`tvm-partial inspect` on a file that does not exist": lambda c: _cli(
        "inspect", c["artifact"] + ".missing"
    ),
    "`tvm-partial inspect` on a folder": lambda c: _cli("inspect", str(Path(c["artifact"]).parent)),
    "`tvm-partial verify` on save_to_bytes data whose payloads lie elsewhere": lambda c: _cli(
        "verify", _blob_file(c, "external.bin", c["external_blob"])
    ),
    "a zero-copy artifact whose appended payloads were cut off or stripped": lambda c: _in_subprocess(
        "import tvm_partial\ntvm_partial.load(sys.argv[1])", c["cut_appended"]
    ),
    "`tvm-partial verify` on a zero-copy artifact whose appended payloads are gone": lambda c: _cli(
        "verify", c["cut_appended"]
    ),
    "a zero-copy export to a `.tar`": lambda c: tvm_partial.export_library(
        c["pm"], Path(c["truncated"]).with_name("zero.tar"), zero_copy=True
    ),
    "a library cut short where only its section headers lay (the system's loader would map the rest)": (
        lambda c: _in_subprocess(
            "import tvm_partial\ntvm_partial.load(sys.argv[1])",
            _blob_file(c, "cut_1_byte.so", Path(c["artifact"]).read_bytes()[:-1]),
        )
    ),
    "a checkpoint index whose `weight_map` is empty": lambda c: _in_subprocess(
        "import tvm_partial\ntvm_partial.load(sys.argv[1], weights_file=sys.argv[2])",
        c["artifact_wb"],
        _blob_file(c, "empty.index.json", b'{"weight_map": {}}'),
    ),
    "an ONNX model given to `load(path, weights_file=)`": lambda c: tvm_partial.load(
        c["artifact_wb"], weights_file=_onnx_model(c)
    ),
    "an ONNX external data offset or length that no file can hold": lambda c: tvm_partial.open_weights(
        _onnx_model(c, offset=str(2**63))
    ),
    "both names of a tied tensor in a weights file, holding different values": lambda c: _tied_pair(c),
    "`tvm-partial verify` on an ONNX model": lambda c: _cli("verify", _onnx_model(c)),
}


def _onnx_model(ctx, offset: str | None = None) -> str:
    """An ONNX model whose initializer w lies in external data (at ``offset``, when given)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    init = numpy_helper.from_array(np.ones(16, "float32"), "w")
    out = helper.make_tensor_value_info("w", TensorProto.FLOAT, [16])
    path = str(Path(ctx["artifact"]).parent / "model.onnx")
    graph = helper.make_graph([], "g", [], [out], [init])
    onnx.save_model(helper.make_model(graph), path, save_as_external_data=True, size_threshold=0)
    if offset is not None:
        model = onnx.load(path, load_external_data=False)
        tensor = model.graph.initializer[0]
        entry = {e.key: e for e in tensor.external_data}.get("offset") or tensor.external_data.add(
            key="offset"
        )
        entry.value = offset
        onnx.save_model(model, path)
    return path


def _tied_pair(ctx) -> None:
    """b and c bound to one tensor; a weights file holding both names with different values."""
    import safetensors.numpy

    a, b, c = (te.placeholder((4,), "float32", name=n) for n in "abc")
    out = te.compute((4,), lambda i: a[i] + b[i] + c[i], name="out")
    w = np.zeros(4, "float32")
    folder = Path(ctx["artifact"]).parent
    tvm_partial.export_library(
        tvm_partial.partial(compile_te([a, b, c, out]), signature=[a, b, c, out], b=w, c=w),
        folder / "tied.so",
    )
    safetensors.numpy.save_file({"b": w, "c": w + 1}, str(folder / "tied.safetensors"))
    tvm_partial.load(folder / "tied.so", weights_file=folder / "tied.safetensors")


def _bind_scalar(dtype: str, value) -> None:
    """Bind ``value`` to the scalar parameter s of main(x, s, out): out = x + s, s of ``dtype``."""
    from helpers import compile_te

    x = te.placeholder((1,), dtype, name="x")
    s = te.var("s", dtype)
    out = te.compute((1,), lambda i: x[i] + s, name="out")
    tvm_partial.partial(compile_te([x, s, out])["main"], signature=[x, s, out], s=value)


def _relax_option_names():
    """A Relax model whose main has a parameter named device."""
    import tvm
    from tvm.script import relax as R

    @tvm.script.ir_module
    class OptionName:
        @R.function
        def main(x: R.Tensor((2,), "float32"), device: R.Tensor((2,), "float32")):
            return R.add(x, device)

    return tvm.compile(OptionName, target="llvm")


class _ServerWithoutTvmPartial:
    def load_module(self, path):
        raise RuntimeError(
            "Library binary was created using {partial_apply} but a loader of that name is not registered."
        )


def _external_artifact(ctx, kind: str) -> str:
    """An artifact exported with weights_file=, its weights file removed or another export's."""
    folder = Path(ctx["artifact"]).parent / f"external_{kind}"
    folder.mkdir(exist_ok=True)
    lib, weights = folder / "model.so", folder / "model.safetensors"
    tvm_partial.export_library(ctx["pm"], lib, weights_file=weights)
    if kind == "missing":
        weights.unlink()
    else:
        tvm_partial.export_library(ctx["pm"], folder / "again.so", weights_file=weights)
    return str(lib)


def _plain_with_weights(ctx) -> None:
    folder = Path(ctx["artifact"]).parent
    ctx["exe"].export_library(str(folder / "plain_code.so"))
    tvm_partial.load(folder / "plain_code.so", weights_file=_weights_file(ctx, "good"))


def _weights_file(ctx, kind: str) -> Path:
    """A safetensors file of the model in ctx["pm"] (weights and bias), spoilt as `kind` says."""
    import json

    path = Path(ctx["artifact"]).parent / f"{kind}.safetensors"
    good = Path(ctx["artifact"]).parent / "good.safetensors"
    tvm_partial.save_weights(ctx["pm"], good)
    raw = good.read_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8 : 8 + n])
    if kind == "cut":
        path.write_bytes(raw[:-50])
    elif kind == "partial":
        tvm_partial.save_weights(tvm_partial.partial(ctx["exe"], signature=ctx["sig"], weights=W), path)
    elif kind == "float64":
        tvm_partial.save_weights(
            tvm_partial.partial(
                ctx["exe"], {1: W, 2: B.astype("float64")}, signature=["data", "weights", "bias", "result"]
            ),
            path,
        )
    elif kind == "json":
        path.write_bytes(raw[:8] + b"[" + raw[9:])  # the header no longer parses
    elif kind == "overlap":
        header["bias"]["data_offsets"] = [0, 32]
        text = json.dumps(header).encode()
        path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    elif kind == "foreign":
        text = json.dumps({k: v for k, v in header.items() if k != "__metadata__"}).encode()
        path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    return path


def _export_longer_string(ctx) -> None:
    folder = Path(ctx["artifact"]).parent
    tvm_partial.export_library(tvm_partial.partial(ctx["exe"], {1: W, 3: "s"}), folder / "string.so")
    loaded = tvm_partial.load(folder / "string.so")
    tvm_partial.export_library(tvm_partial.rebind(loaded, {3: "s" * 200}), folder / "string2.so")


def _huge(n: int):
    """A tensor of n float32 elements that takes 4 bytes (stride 0): a shape, no memory."""
    return tvm_ffi.from_dlpack(
        np.lib.stride_tricks.as_strided(np.zeros(1, "float32"), shape=(n,), strides=(0,))
    )


def _symbolic_kernels() -> dict:
    import tvm
    from tvm import te

    n, m = te.var("n", "int64"), te.var("m", "int64")
    x = te.placeholder((n,), "float32", name="x")
    kernels = {
        "free_m": [x, te.compute((m,), lambda i: x[0], name="y")],
        "twice": [
            x32 := te.placeholder((te.var("n"),), "float32", name="x"),
            te.compute((x32.shape[0] * 2,), lambda i: x32[i // 2], name="y"),
        ],
        "outer": [x, te.compute((n, n), lambda i, j: x[i] * x[j], name="y")],
    }
    out = {}
    for name, tensors in kernels.items():
        out[name] = tvm.compile(te.create_prim_func(tensors), target="llvm")["main"]
        out[name + "_sig"] = tensors
    return out


def _with_device_id(ctx, device_id: int) -> bytes:
    blob = _blob(ctx)
    at = blob.find(b"float32") + len(b"float32") + 4
    moved = blob[:at] + struct.pack("<i", device_id) + blob[at + 4 :]
    return reseal(moved)


@pytest.fixture(scope="module")
def ctx(conv, tmp_path_factory):
    import tvm
    from tvm.relax.frontend import nn
    from tvm.script import relax as R

    @tvm.script.ir_module
    class Identity:
        @R.function
        def main(x: R.Tensor((2,), "float32")):
            return x

    class Linear(nn.Module):  # frontend.nn: its executable records the shapes of its inputs only
        def __init__(self):
            self.fc = nn.Linear(16, 8, bias=False)

        def forward(self, x):
            return self.fc(x)

    nn_mod, _ = Linear().export_tvm(spec={"forward": {"x": nn.spec.Tensor((2, 16), "float32")}})
    nn_exe = tvm.compile(nn_mod, target="llvm")
    exe, tensors, inputs, _ = conv
    folder = tmp_path_factory.mktemp("errors")
    artifact, plain, text = folder / "partial.so", folder / "plain.so", folder / "notes.txt"
    tvm_partial.export_library(
        tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"]), artifact
    )
    exe.export_library(str(plain))
    text.write_text("not a library")
    pm = tvm_partial.partial(exe, signature=tensors, weights=inputs["weights"], bias=inputs["bias"])
    zero = folder / "zero.so"
    tvm_partial.export_library(pm, zero, zero_copy=True)
    data = zero.read_bytes()
    found = library_modules(zero)
    (folder / "truncated.so").write_bytes(data[: found.blob_at + 32])  # inside its loaded segments
    region = data.find(b"TVMPREGN")  # the appended region's header
    (folder / "altered.so").write_bytes(data[:region] + b"X" + data[region + 1 :])
    # The payloads are appended after the library's code: cut them off, as strip does (it keeps
    # only what the ELF sections cover).
    (folder / "cut_appended.so").write_bytes(data[:region])
    # The partial module's bytes as zero.so embeds them: they leave the payloads to its region.
    part = next(m for m in tvm_partial.inspect(zero)["embedded"]["modules"] if m["kind"] == "partial_apply")
    external_blob = data[part["file_offset"] : part["file_offset"] + part["bytes"]]
    blob_at = found.blob_at
    tree = data[: blob_at + 8] + (2**62).to_bytes(8, "little") + data[blob_at + 16 :]  # a count past its end
    (folder / "bad_tree.so").write_bytes(tree)
    import safetensors.numpy

    safetensors.numpy.save_file({"main/weights": W, "weights": W}, str(folder / "colliding.safetensors"))
    deep = b'{"x":' + b"[" * 1000 + b"]" * 1000 + b"}"
    (folder / "deep.safetensors").write_bytes(struct.pack("<Q", len(deep)) + deep)
    tvm_partial.export_library(pm, folder / "partial_wb.so")
    w = te.placeholder((4, 16), "float32", name="w")  # one rank's shard of a [16, 16] weight
    out = te.compute((4, 16), lambda i, j: w[i, j] * 2.0, name="out")
    tp = (compile_te([w, out]), [w, out])
    sharded = tvm_partial.partial(tp[0], signature=tp[1], w=W16, shards={"w": 0}, world=4)
    tvm_partial.export_library(sharded, folder / "sharded.so")
    return {
        "tp": tp,
        "sharded": str(folder / "sharded.so"),
        "artifact_wb": str(folder / "partial_wb.so"),
        "pm": pm,
        "truncated": str(folder / "truncated.so"),
        "altered": str(folder / "altered.so"),
        "colliding_weights": str(folder / "colliding.safetensors"),
        "deep_weights": str(folder / "deep.safetensors"),
        "cut_appended": str(folder / "cut_appended.so"),
        "bad_tree": str(folder / "bad_tree.so"),
        "external_blob": external_blob,
        "exe": exe,
        "f": exe["main"],
        "sig": tensors,
        "relax_exe": tvm.compile(Identity, target="llvm"),
        "nn": nn_exe,
        "nn_vm": tvm.relax.VirtualMachine(nn_exe, tvm.cpu()),
        "artifact": str(artifact),
        "plain": str(plain),
        "text": str(text),
        "sym": _symbolic_kernels(),
        "int3": tvm.runtime.empty((4,), "int3"),
    }


def test_every_documented_row_has_a_case():
    assert [r[1] for r in ROWS] == list(CASES)


@pytest.mark.parametrize("where,bad_input,error", ROWS, ids=[r[1] for r in ROWS])
def test_documented_error(ctx, where, bad_input, error):
    with pytest.raises(BaseException) as info:
        CASES[bad_input](ctx)
    if where == "CLI":  # the message on stderr, with the file's path where the table says PATH
        head, _, tail = error.partition("PATH")
        assert str(info.value).startswith(head) and tail in str(info.value), str(info.value)
        return
    kind, _, message = error.partition(": ")
    assert type(info.value).__name__ == kind, f"{type(info.value).__name__}: {info.value}"
    for fragment in message.split("PATH"):  # PATH stands for what varies: a file name, a symbol, an offset
        assert fragment in str(info.value), str(info.value)
