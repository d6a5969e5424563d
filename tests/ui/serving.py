"""The console's real server (waitress, as `trainstack ui` runs it) in this process on
127.0.0.1, and a registry of runs made through its API, for the tests of what one client may
hold of it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainstack.registry import NewRun, Registry, ReplicaExit
from trainstack.ui.server import listen


def home_with_a_log(home: Path, log: bytes) -> str:
    """A registry of one local run whose replica worker-0 wrote `log`; the run's id."""
    with Registry.open(home) as reg:
        rec = reg.create(NewRun(name="big-log", component="c", component_version="1.0.0"))
        reg.mark_running(rec.id, [ReplicaExit("worker", 0, None)])
    logs = home / "runs" / rec.id / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "worker-0.log").write_bytes(log)
    return rec.id


@contextmanager
def serving(home: Path, token: str | None = None, **limits: Any) -> Iterator[tuple[str, int]]:
    """(address, port) of the console serving `home` until the block ends."""
    from waitress import wasyncore

    from trainstack.ui.channel import Limits

    listening = listen(home, None, "127.0.0.1", 0, token, Limits(**limits))
    server: Any = listening.server
    loop = threading.Thread(target=server.run, daemon=True)
    loop.start()
    try:
        yield "127.0.0.1", int(server.effective_port)
    finally:
        # Closing every socket from the loop's own thread ends its loop (its map is empty).
        server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        loop.join(timeout=30)
        server.task_dispatcher.shutdown(timeout=5)


def get(addr: tuple[str, int], path: str = "/", *, timeout: float = 20.0) -> bytes:
    """The response to one GET, its first 1 MiB at most."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{addr[1]}\r\nConnection: close\r\n\r\n"
    got = b""
    with socket.create_connection(addr, timeout=timeout) as sock:
        sock.sendall(head.encode())
        while len(got) < (1 << 20) and (data := sock.recv(65536)):
            got += data
    return got


def connect_from(source: str, addr: tuple[str, int]) -> socket.socket:
    """A connection to `addr` from loopback address `source` (Linux routes all of 127/8 here)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.bind((source, 0))
    sock.connect(addr)
    return sock
