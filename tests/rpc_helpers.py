# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Local TVM RPC servers and trackers for the tests: 127.0.0.1 only, bounded waits, stopped in
every case (each runs in its own process group, killed with it).

No port is chosen here and then handed over (another process could bind it in between): each
server and tracker is given a range of ports, binds the first free one itself and logs
``bind to 127.0.0.1:PORT`` (TVM's rpc.Server and rpc.Tracker), which is read from its log. A
range with no free port makes it exit; it is started again on another range, a bounded number of
times.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOST = "127.0.0.1"
START_TIMEOUT = 120  # seconds: importing tvm in a new process is slow on a loaded machine
POLL = 0.05  # seconds between two looks at a starting process
# Below Linux's ephemeral ports (32768 and up), where the kernel picks the local ports of
# outgoing connections; each start tries a random range of RANGE ports there.
PORTS = (10000, 32000)
RANGE = 64
STARTS = 5  # ranges tried before giving up

_BOUND = re.compile(rf"bind to {re.escape(HOST)}:(\d+)")


class _Started:
    """A started server or tracker: its process, the port it bound, its log."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path):
        self.proc, self.port, self.log = proc, port, log


def stop(proc: subprocess.Popen) -> None:
    """Kill the process and the session workers it started (its process group)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-2000:]
    return ""


def _wait_until(ready, what: str, procs, logs=()) -> None:
    """Poll ``ready()`` until it is true; fail early when a process exits, late after the timeout."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"{what}: a process exited while starting:\n" + "\n".join(map(_tail, logs)))
        with contextlib.suppress(Exception):
            if ready():
                return
        time.sleep(POLL)
    raise TimeoutError(f"{what} did not come up within {START_TIMEOUT} s:\n" + "\n".join(map(_tail, logs)))


def _launch(module: str, args: list, folder: str, env: dict | None) -> tuple:
    """Start ``python -m module --host HOST --port A --port-end B *args`` on a random range of
    ports: -> (process, log)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    first = random.randrange(PORTS[0], PORTS[1] - RANGE)
    fd, name = tempfile.mkstemp(prefix=module.rsplit(".", 1)[-1] + "-", suffix=".log", dir=folder)
    os.close(fd)
    log = Path(name)
    with open(log, "wb") as out:
        ports = ["--host", HOST, "--port", str(first), "--port-end", str(first + RANGE)]
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *ports, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            start_new_session=True,
        )
    return proc, log


def _bound_port(proc: subprocess.Popen, log: Path, what: str) -> int | None:
    """The port the process logged it bound; None when it exited because its range was full."""
    found: list[int] = []

    def bound() -> bool:
        m = _BOUND.search(log.read_text(errors="replace"))
        if m:
            found.append(int(m[1]))
        return bool(m)

    try:
        _wait_until(bound, what, [proc], [log])
    except RuntimeError:
        if "cannot bind to any port" in _tail(log):
            return None
        raise
    return found[0]


def _start(module: str, *args: str, folder: str, count: int = 1, env: dict | None = None) -> list:
    """Start ``count`` processes of ``module`` at once; each binds a port of its own range (another
    range where that one is full, up to STARTS times): -> [_Started]."""
    launched = [_launch(module, list(args), folder, env) for _ in range(count)]
    started = []
    try:
        for i in range(count):
            for _ in range(STARTS):
                proc, log = launched[i]
                port = _bound_port(proc, log, module)
                if port is not None:
                    started.append(_Started(proc, port, log))
                    break
                stop(proc)
                launched[i] = _launch(module, list(args), folder, env)
            else:
                raise RuntimeError(f"{module}: no free port in {STARTS} ranges of {RANGE} ports")
    except BaseException:
        for proc, _ in launched:
            stop(proc)
        raise
    return started


def _listening(port: int) -> bool:
    with socket.create_connection((HOST, port), timeout=1):
        return True


@contextlib.contextmanager
def rpc_server(env: dict | None = None):
    """-> the port of a running ``tvm.exec.rpc_server`` (no tracker)."""
    with tempfile.TemporaryDirectory(prefix="rpc_server_") as folder:
        (server,) = _start("tvm.exec.rpc_server", folder=folder, env=env)
        try:
            _wait_until(lambda: _listening(server.port), "rpc_server", [server.proc], [server.log])
            yield server.port
        finally:
            stop(server.proc)


@contextlib.contextmanager
def tracker_with_servers(count: int, key: str = "partial", env: dict | None = None):
    """-> the port of a ``tvm.exec.rpc_tracker`` with ``count`` servers registered under ``key``."""
    from tvm import rpc

    with tempfile.TemporaryDirectory(prefix="rpc_tracker_") as folder:
        started: list[_Started] = []
        try:
            started += _start("tvm.exec.rpc_tracker", folder=folder)
            tracker = started[0]
            _wait_until(lambda: _listening(tracker.port), "rpc_tracker", [tracker.proc], [tracker.log])
            server_args = ["--tracker", f"{HOST}:{tracker.port}", "--key", key, "--custom-addr", HOST]
            started += _start("tvm.exec.rpc_server", *server_args, folder=folder, count=count, env=env)

            def registered():
                info = rpc.connect_tracker(HOST, tracker.port).summary()["queue_info"]
                return info.get(key, {}).get("free", 0) >= count

            _wait_until(
                registered,
                f"{count} rpc_servers on the tracker",
                [s.proc for s in started],
                [s.log for s in started],
            )
            yield tracker.port
        finally:
            for s in reversed(started):
                stop(s.proc)
