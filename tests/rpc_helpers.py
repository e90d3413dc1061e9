# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Local TVM RPC servers and trackers for the tests: 127.0.0.1 only, free ports, bounded waits,
stopped in every case (each runs in its own process group, killed with it)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
START_TIMEOUT = 120  # seconds: importing tvm in a new process is slow on a loaded machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _start(module: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=full_env,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    """Kill the process and the session workers it started (its process group)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _wait_until(ready, what: str, procs) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"{what}: a process exited while starting")
        with contextlib.suppress(Exception):
            if ready():
                return
        time.sleep(0.25)
    raise TimeoutError(f"{what} did not come up within {START_TIMEOUT} s")


def _listening(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1):
        return True


@contextlib.contextmanager
def rpc_server(env: dict | None = None):
    """-> the port of a running ``tvm.exec.rpc_server`` (no tracker)."""
    port = free_port()
    proc = _start(
        "tvm.exec.rpc_server", "--host", HOST, "--port", str(port), "--port-end", str(port + 1), env=env
    )
    try:
        _wait_until(lambda: _listening(port), "rpc_server", [proc])
        yield port
    finally:
        stop(proc)


@contextlib.contextmanager
def tracker_with_servers(count: int, key: str = "partial", env: dict | None = None):
    """-> the port of a ``tvm.exec.rpc_tracker`` with ``count`` servers registered under ``key``."""
    from tvm import rpc

    port = free_port()
    procs = [_start("tvm.exec.rpc_tracker", "--host", HOST, "--port", str(port), "--port-end", str(port + 1))]
    try:
        _wait_until(lambda: _listening(port), "rpc_tracker", procs)
        for _ in range(count):
            server_port = free_port()
            procs.append(
                _start(
                    "tvm.exec.rpc_server",
                    "--host",
                    HOST,
                    "--port",
                    str(server_port),
                    "--port-end",
                    str(server_port + 1),
                    "--tracker",
                    f"{HOST}:{port}",
                    "--key",
                    key,
                    "--custom-addr",
                    HOST,
                    env=env,
                )
            )

        def registered():
            info = rpc.connect_tracker(HOST, port).summary()["queue_info"]
            return info.get(key, {}).get("free", 0) >= count

        _wait_until(registered, f"{count} rpc_servers on the tracker", procs)
        yield port
    finally:
        for proc in reversed(procs):
            stop(proc)
