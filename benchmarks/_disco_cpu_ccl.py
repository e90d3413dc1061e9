# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""A CPU stand-in for the scatter TVM's ShardLoaderLoadAll needs (TVM has collectives only for
NCCL and RCCL): the global TVM 0.27 looks up for a CPU worker, whose ccl is "". Worker 0 writes each
rank's chunk to a file in a tmpfs folder; each rank reads its own into its tensor. bench_disco.py
starts its LoadAll workers with this module as their entrypoint; worker 0, the driver, imports it.
"""

from __future__ import annotations

import os
import time

import numpy as np
import tvm_ffi

TIMEOUT_S = 300.0
_state: dict = {"folder": None, "calls": 0}


@tvm_ffi.register_global_func("bench_disco.cpu_ccl_init", override=True)
def _init(folder: str) -> None:
    """A session's collectives start: the folder the chunks go through, the call counter at 0."""
    _state.update(folder=folder, calls=0)


@tvm_ffi.register_global_func("runtime.disco..scatter_from_worker0", override=True)
def _scatter_from_worker0(send, in_group: bool, recv) -> None:
    if _state["folder"] is None or in_group:
        raise RuntimeError("cpu_ccl: call bench_disco.cpu_ccl_init(folder) first; one group only")
    rank = int(tvm_ffi.get_global_func("runtime.disco.worker_rank")())
    world = int(tvm_ffi.get_global_func("runtime.disco.world_size")())
    call, _state["calls"] = _state["calls"], _state["calls"] + 1
    out = np.from_dlpack(recv)  # a writable view of this rank's tensor: read into it, no copy
    target = memoryview(out).cast("B")  # (fails unless contiguous)
    path = os.path.join(_state["folder"], f"{call}_{{}}")
    if rank == 0:
        src = np.from_dlpack(send).reshape(world, out.size)  # fails unless it holds world x recv
        for r in range(1, world):
            with open(path.format(r) + ".part", "wb") as f:
                f.write(memoryview(src[r]).cast("B"))
            os.rename(path.format(r) + ".part", path.format(r))
        target[:] = memoryview(src[0]).cast("B")
        return
    deadline = time.monotonic() + TIMEOUT_S
    while not os.path.exists(path.format(rank)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"cpu_ccl: rank {rank} waited {TIMEOUT_S:.0f} s for scatter {call}")
        time.sleep(0.001)
    got = 0
    with open(path.format(rank), "rb", buffering=0) as f:
        while got < len(target) and (n := f.readinto(target[got:])):  # at most about 2 GiB a read
            got += n
    os.remove(path.format(rank))
    if got != len(target):
        raise ValueError(f"cpu_ccl: rank {rank} got {got} bytes of scatter {call}, expected {len(target)}")


if __name__ == "__main__":  # a disco worker: python -m _disco_cpu_ccl WORKER_ID NUM_WORKERS ...
    from tvm.exec.disco_worker import main

    main()
