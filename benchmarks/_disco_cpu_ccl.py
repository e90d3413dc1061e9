# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A CPU stand-in for the one collective that TVM's ``ShardLoaderLoadAll`` needs: scatter from
worker 0. ``bench_disco.py`` starts the workers of its ``LoadAll`` sessions with this module as
their entrypoint (``disco.ProcessSession(n, entrypoint="_disco_cpu_ccl")``, ``benchmarks/`` on the
workers' ``PYTHONPATH``): it registers the globals below, then runs TVM's own worker
(``tvm.exec.disco_worker.main``). Worker 0 runs in the driver's process, which imports it. (TVM's
``Session.import_python_module`` cannot do this on 0.27: its global
``runtime.disco._import_python_module`` is registered by ``tvm.runtime.disco.session``, which a
worker never imports, because ``import tvm`` skips ``tvm.runtime.disco`` before
``libtvm_runtime_extra`` is loaded; the call fails with "Cannot find global function".)

How TVM 0.27 finds a collective (``src/runtime/extra/disco/builtin.cc``): ``ScatterFromWorker0``
calls the global ``"runtime.disco." + ccl + ".scatter_from_worker0"`` with ``(send, in_group,
recv)``, where ``ccl`` is the worker's ``DiscoWorker::ccl`` field. Only C++ sets that field (NCCL's
and RCCL's ``init_ccl_per_worker``; ``Session.init_ccl`` accepts only ``"nccl"`` and ``"rccl"``), so
on a CPU session it stays empty and the name looked up is ``runtime.disco..scatter_from_worker0``.
This module registers that name: the stand-in is the CCL of the empty name. ``SyncWorker`` does
nothing when the name is empty, and no other collective is provided (a ``LoadAll`` of an unsharded
parameter, which broadcasts, fails with TVM's own "Cannot find the `broadcast_from_worker0`
function" error).

The bytes really move, through files in a folder given by ``bench_disco.cpu_ccl_init(folder)``
(called on every worker once per session, like an ``init_ccl``; a tmpfs folder such as
``/dev/shm`` makes them shared memory): on each scatter, worker 0 writes rank ``r``'s chunk of
``send`` (``[world, *shard]``) to ``CALL_r`` (written as ``CALL_r.part``, then renamed, so a reader
never sees half a chunk) and copies its own chunk into its ``recv``; every other rank waits for
its file (polling, bounded by ``TIMEOUT_S``: past it the worker raises, which ends the session),
reads it straight into its ``recv`` tensor's memory and removes it. Nothing is kept between calls
but a call counter. The staging files live in the folder's file system (tmpfs memory or page
cache), in no worker's RSS, until the rank reads them.
"""

from __future__ import annotations

import os
import time

import numpy as np
import tvm_ffi

TIMEOUT_S = 300.0
_state: dict = {"folder": None, "calls": 0}


def _rank_world() -> tuple[int, int]:
    rank = tvm_ffi.get_global_func("runtime.disco.worker_rank")()
    world = tvm_ffi.get_global_func("runtime.disco.world_size")()
    return int(rank), int(world)


@tvm_ffi.register_global_func("bench_disco.cpu_ccl_init", override=True)
def _init(folder: str) -> None:
    """Start a session's collectives: the folder the chunks go through, the call counter at 0."""
    if not os.path.isdir(folder):
        raise ValueError(f"cpu_ccl: not a folder: {folder}")
    _state["folder"] = folder
    _state["calls"] = 0


@tvm_ffi.register_global_func("runtime.disco..scatter_from_worker0", override=True)
def _scatter_from_worker0(send, in_group: bool, recv) -> None:
    if _state["folder"] is None:
        raise RuntimeError("cpu_ccl: bench_disco.cpu_ccl_init(folder) was not called on this worker")
    if in_group:
        raise ValueError("cpu_ccl: scatter within groups is not provided (one group only)")
    rank, world = _rank_world()
    call = _state["calls"]
    _state["calls"] += 1
    out = np.from_dlpack(recv)  # a writable view of this rank's tensor: read into it, no copy
    if not out.flags.c_contiguous:
        raise ValueError("cpu_ccl: recv is not contiguous")
    target = memoryview(out).cast("B")

    def chunk_path(r: int) -> str:
        return os.path.join(_state["folder"], f"{call}_{r}")

    if rank == 0:
        src = np.from_dlpack(send)
        if src.shape != (world, *out.shape) or src.dtype != out.dtype or not src.flags.c_contiguous:
            raise ValueError(
                f"cpu_ccl: send {src.dtype}{list(src.shape)} does not hold {world} chunks of "
                f"recv {out.dtype}{list(out.shape)}"
            )
        for r in range(1, world):
            with open(chunk_path(r) + ".part", "wb") as f:
                f.write(memoryview(src[r]).cast("B"))
            os.rename(chunk_path(r) + ".part", chunk_path(r))
        target[:] = memoryview(src[0]).cast("B")
        return
    path = chunk_path(rank)
    deadline = time.monotonic() + TIMEOUT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"cpu_ccl: rank {rank} waited {TIMEOUT_S:.0f} s for scatter {call}")
        time.sleep(0.001)
    got = 0
    with open(path, "rb", buffering=0) as f:
        while got < len(target):  # one read per call returns at most about 2 GiB
            n = f.readinto(target[got:])
            if not n:
                break
            got += n
        extra = f.read(1)
    os.remove(path)
    if got != len(target) or extra:
        raise ValueError(f"cpu_ccl: rank {rank} got {got} bytes of scatter {call}, expected {len(target)}")


if __name__ == "__main__":  # a disco worker: python -m _disco_cpu_ccl WORKER_ID NUM_WORKERS ...
    from tvm.exec.disco_worker import main

    main()
